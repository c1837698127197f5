"""``icefloe serve`` answers hostile and mistaken requests as the REST spec and Iceberg Java do:
a bounded token endpoint, Idempotency-Key reuse refused, registration of files that are not
table metadata, JSON errors on every route; and S3 PUTs a server refused outright."""

from __future__ import annotations

import hashlib
import http.client
import http.server
import json
import socket
import sqlite3
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from email.message import Message
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.exceptions import FileIOError, UnknownWriteStateError, ValidationError
from icefloe.s3client import S3Client
from icefloe.sigv4 import Credentials
from support.rest import (
    CLIENT_ID,
    CLIENT_SECRET,
    TOKEN,
    RestServer,
    new_warehouse,
    start_rest_server,
    view_body,
)
from support.s3 import S3Server

ROWS = pa.schema([pa.field("id", pa.int64())])

Reply = tuple[int, "Message[str, str]", bytes]  # status, headers, body


def _call(
    server: RestServer,
    method: str,
    path: str,
    body: object = None,
    headers: Mapping[str, str] | None = None,
    raw: bytes | None = None,
) -> Reply:
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        server.url + path,
        data=data,
        method=method,
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return int(resp.status), resp.headers, resp.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.headers, exc.read()


def _error(reply: Reply) -> dict[str, Any]:
    """The ``error`` object of an IcebergErrorResponse (checks the shape)."""
    status, headers, body = reply
    assert headers["Content-Type"].startswith("application/json"), headers
    err = json.loads(body)["error"]
    assert err["code"] == status and err["type"] and err["message"], err
    return dict(err)


# -- the token endpoint ---------------------------------------------------------------------------


def _token_request(server: RestServer, form: Mapping[str, str]) -> Reply:
    return _call(
        server,
        "POST",
        "/v1/oauth/tokens",
        raw=urlencode(form).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )


@pytest.mark.rest
def test_token_endpoint_refuses_a_large_body_without_reading_it(
    rest_auth_server: RestServer,
) -> None:
    """A body beyond the cap is answered 413 at once: the server does not wait for (or keep) the
    400 MiB a client announces, and a chunked body is cut off at the cap too."""
    host, port = urlsplit(rest_auth_server.url).netloc.split(":")
    with socket.create_connection((host, int(port)), timeout=20) as s:
        s.sendall(
            b"POST /v1/oauth/tokens HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n"
            + f"Content-Length: {400 << 20}\r\n\r\n".encode()
            + b"grant_type=client_credentials&pad="
            + b"a" * (128 << 10)
        )
        head = s.recv(4096).decode("latin-1")
    assert head.startswith("HTTP/1.1 413 "), head[:200]
    assert "cache-control: no-store" in head.lower()

    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        chunks = (
            b"grant_type=client_credentials&pad=" if i == 0 else b"a" * 4096 for i in range(256)
        )
        conn.request(
            "POST",
            "/v1/oauth/tokens",
            body=chunks,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            encode_chunked=True,
        )
        resp = conn.getresponse()
        body = json.loads(resp.read())
    finally:
        conn.close()
    assert resp.status == 413
    assert body["error"] == "invalid_request"  # an OAuth2 error, as the endpoint's others
    # an ordinary form still works
    ok = {"grant_type": "client_credentials", "client_id": CLIENT_ID}
    assert _token_request(rest_auth_server, {**ok, "client_secret": CLIENT_SECRET})[0] == 200


@pytest.mark.rest
def test_token_responses_are_not_cached(rest_auth_server: RestServer) -> None:
    """RFC 6749 5.1: answers of the token endpoint (tokens or errors) carry ``no-store``."""
    form = {"grant_type": "client_credentials", "client_id": CLIENT_ID}
    for secret, status in ((CLIENT_SECRET, 200), ("wrong", 401)):
        got, headers, _ = _token_request(rest_auth_server, {**form, "client_secret": secret})
        assert got == status
        assert headers["Cache-Control"] == "no-store"
        assert headers["Pragma"] == "no-cache"


@pytest.mark.rest
def test_401_names_the_bearer_scheme(rest_auth_server: RestServer) -> None:
    """RFC 6750 3: a 401 carries ``WWW-Authenticate: Bearer`` (``invalid_token`` for a bad one),
    and its body is an IcebergErrorResponse."""
    reply = _call(rest_auth_server, "GET", "/v1/namespaces")
    assert reply[0] == 401
    assert reply[1]["WWW-Authenticate"].startswith("Bearer")
    assert _error(reply)["type"] == "NotAuthorizedException"
    bad = _call(rest_auth_server, "GET", "/v1/namespaces", headers={"Authorization": "Bearer x"})
    assert bad[0] == 401
    assert 'error="invalid_token"' in bad[1]["WWW-Authenticate"]
    ok = {"Authorization": f"Bearer {TOKEN}"}
    assert "WWW-Authenticate" not in _call(rest_auth_server, "GET", "/v1/namespaces", None, ok)[1]


# -- Idempotency-Key ------------------------------------------------------------------------------


@pytest.mark.rest
def test_idempotency_key_reused_for_another_request_is_refused(rest_server: RestServer) -> None:
    """A key belongs to one request: its retry (the same JSON, in any key order) is replayed; the
    key with another body or on another route is 422 and runs nothing."""
    base = f"/v1/{new_warehouse()}/namespaces"
    key = {"Idempotency-Key": str(uuid.uuid4())}
    first = _call(
        rest_server, "POST", base, {"namespace": ["idem1"], "properties": {"a": "1"}}, key
    )
    assert first[0] == 200
    retry = b'{ "properties": {"a": "1"},\n "namespace": ["idem1"] }'
    assert _call(rest_server, "POST", base, headers=key, raw=retry)[::2] == first[::2]
    other = _call(rest_server, "POST", base, {"namespace": ["idem2"]}, key)
    assert other[0] == 422
    err = _error(other)
    assert err["type"] == "UnprocessableEntityException" and "Idempotency-Key" in err["message"]
    assert _call(rest_server, "HEAD", f"{base}/idem2")[0] == 404  # not created
    assert _call(rest_server, "DELETE", f"{base}/idem1", headers=key)[0] == 422
    assert _call(rest_server, "HEAD", f"{base}/idem1")[0] == 204  # not dropped
    # the original request is still replayed, and a new key runs the other request
    assert _call(rest_server, "POST", base, headers=key, raw=retry)[::2] == first[::2]
    fresh = {"Idempotency-Key": str(uuid.uuid4())}
    assert _call(rest_server, "POST", base, {"namespace": ["idem2"]}, fresh)[0] == 200


@pytest.mark.rest
def test_idempotency_key_belongs_to_its_principal(rest_auth_server: RestServer) -> None:
    """With auth on, another principal's request under the same key is 422 (it must not get the
    first caller's answer); the same client after refreshing its token is replayed."""
    form = {"grant_type": "client_credentials", "client_id": CLIENT_ID}
    status, _, body = _token_request(rest_auth_server, {**form, "client_secret": CLIENT_SECRET})
    assert status == 200
    client_token = json.loads(body)["access_token"]
    ns = f"p{uuid.uuid4().hex[:8]}"
    req = {"namespace": [ns]}
    key = str(uuid.uuid4())

    def post(token: str) -> Reply:
        headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": key}
        return _call(rest_auth_server, "POST", "/v1/namespaces", req, headers)

    first = post(client_token)
    assert first[0] == 200
    exchange = {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "subject_token": client_token,
        "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
    }
    status, _, body = _token_request(rest_auth_server, exchange)
    assert status == 200
    refreshed = json.loads(body)["access_token"]
    assert post(refreshed)[::2] == first[::2]  # the same client: replayed
    assert post(TOKEN)[0] == 422  # another principal
    drop = {"Authorization": f"Bearer {TOKEN}"}
    assert _call(rest_auth_server, "DELETE", f"/v1/namespaces/{ns}", headers=drop)[0] == 204


@pytest.mark.rest
def test_idempotency_rows_of_the_earlier_format_are_still_replayed(tmp_path: Path) -> None:
    """A reply stored before request bodies were fingerprinted (keyed by method and path) is
    replayed to its retry after an upgrade, not refused: a commit that happened must not be
    reported as failed."""
    base = tmp_path / "srv"
    server = start_rest_server(base)
    try:
        c = RestCatalog("c", uri=server.url)
        c.create_namespace("db")
        key = str(uuid.uuid4())
        stored = b'{"namespace":["legacy"],"properties":{}}'
        legacy = hashlib.sha256(b"POST /v1/namespaces").hexdigest()
        with sqlite3.connect(base / "catalog.db") as db:
            db.execute(
                "INSERT INTO icefloe_rest_idempotency VALUES (?, ?, ?, 200, ?, '[]', ?)",
                (key, legacy, 2**62, "application/json", stored),
            )
        reply = _call(
            server, "POST", "/v1/namespaces", {"namespace": ["legacy"]}, {"Idempotency-Key": key}
        )
        assert reply[::2] == (200, stored)
        assert ("legacy",) not in c.list_namespaces()  # replayed, not run
    finally:
        server.stop()


@pytest.mark.rest
def test_idempotency_store_keeps_no_table_credentials(tmp_path: Path) -> None:
    """A createTable with an Idempotency-Key was stored whole in the catalog's database,
    its ``config`` (``--table-config`` secret keys) and vended ``storage-credentials`` in
    plain text: the stored answer now has neither, and its replay gets the table's config
    anew, as a load gives it."""
    secret = "idem-table-config-secret-7c1d"
    base = tmp_path / "srv"
    server = start_rest_server(base, ["--table-config", f"s3.secret-access-key={secret}"])
    try:
        assert _call(server, "POST", "/v1/namespaces", {"namespace": ["db"]})[0] == 200
        schema = {"type": "struct", "schema-id": 0, "fields": []}
        headers = {
            "Idempotency-Key": str(uuid.uuid4()),
            "X-Iceberg-Access-Delegation": "vended-credentials",
        }
        create = {"name": "t", "schema": schema}
        path = "/v1/namespaces/db/tables"
        first = _call(server, "POST", path, create, headers)
        assert first[0] == 200
        assert json.loads(first[2])["config"] == {"s3.secret-access-key": secret}
        with sqlite3.connect(base / "catalog.db") as db:
            stored = [bytes(r[0]) for r in db.execute("SELECT body FROM icefloe_rest_idempotency")]
        assert len(stored) == 1 and secret.encode() not in stored[0]
        assert "config" not in json.loads(stored[0])
        replay = _call(server, "POST", path, create, headers)
        assert replay[0] == 200 and json.loads(replay[2]) == json.loads(first[2])
        loaded = _call(server, "GET", f"{path}/t", headers=headers)
        assert json.loads(loaded[2])["config"] == json.loads(replay[2])["config"]
    finally:
        server.stop()


def test_memory_replies_refuse_a_reused_key_until_it_expires() -> None:
    """The in-memory store (catalogs other than SQL) keeps one request per key, as the SQL one."""
    from icefloe.rest.idempotency import (  # here: the other checks run against any version
        IdempotencyKeyReused,
        IdempotencyStore,
        MemoryReplies,
        StoredReply,
        fingerprint,
    )

    store = IdempotencyStore(0.3, MemoryReplies())
    runs: list[str] = []

    def op(name: str) -> StoredReply:
        runs.append(name)
        return StoredReply(200, name.encode(), "application/json")

    a = fingerprint("POST", "/v1/namespaces", "", "", {"namespace": ["a"], "properties": {}})
    same = fingerprint("POST", "/v1/namespaces", "", "", {"properties": {}, "namespace": ["a"]})
    b = fingerprint("POST", "/v1/namespaces", "", "", {"namespace": ["b"]})
    assert store.run("k", a, lambda: op("a")) == (StoredReply(200, b"a", "application/json"), False)
    assert store.run("k", same, lambda: op("a"))[1] is True  # key order does not count
    with pytest.raises(IdempotencyKeyReused):
        store.run("k", b, lambda: op("b"))
    other = fingerprint("POST", "/v1/namespaces", "", "client:x", {"namespace": ["a"]})
    with pytest.raises(IdempotencyKeyReused):
        store.run("k", other, lambda: op("a"))
    assert runs == ["a"]
    time.sleep(0.4)  # expired: the key is free again
    assert store.run("k", b, lambda: op("b"))[1] is False
    assert runs == ["a", "b"]


# -- registration, namespaces, routes -------------------------------------------------------------


@pytest.mark.rest
def test_register_of_a_file_that_is_not_table_metadata_is_a_bad_request(
    rest_server: RestServer, tmp_path: Path
) -> None:
    """The metadata location of a register request is the client's input: a file that is not
    table metadata (JSON without ``format-version``, not JSON at all, a directory) is 400; a
    missing file is 404 NotFoundException, as Iceberg Java answers; nothing is registered."""
    warehouse = new_warehouse()
    c = RestCatalog("c", uri=rest_server.url, warehouse=warehouse)
    c.create_namespace("reg")
    not_metadata = tmp_path / "a.metadata.json"
    not_metadata.write_text('{"hello": 1}')
    not_json = tmp_path / "b.metadata.json"
    not_json.write_text("root:x:0:0:root:/root:/bin/bash\n")
    directory = tmp_path / "c.metadata.json"
    directory.mkdir()
    path = f"/v1/{warehouse}/namespaces/reg/register"
    for location in (not_metadata, not_json, directory):
        reply = _call(rest_server, "POST", path, {"name": "r", "metadata-location": str(location)})
        assert reply[0] == 400, (location, reply)
        err = _error(reply)
        assert err["type"] == "BadRequestException" and str(location) in err["message"]
    missing = _call(
        rest_server, "POST", path, {"name": "r", "metadata-location": str(tmp_path / "no.json")}
    )
    assert missing[0] == 404 and _error(missing)["type"] == "NotFoundException"
    assert c.list_tables("reg") == []
    # the same for views (a directory was a 500)
    views = f"/v1/{warehouse}/namespaces/reg/register-view"
    for location in (not_metadata, not_json, directory):
        reply = _call(rest_server, "POST", views, {"name": "v", "metadata-location": str(location)})
        assert reply[0] == 400, (location, reply)
        assert _error(reply)["type"] == "BadRequestException"
    assert c.list_views("reg") == []
    # a NUL in the location was a 500 naming the server's working directory
    for route, name in ((path, "r"), (views, "v")):
        reply = _call(rest_server, "POST", route, {"name": name, "metadata-location": "x\x00.json"})
        assert reply[0] == 400, reply
        assert _error(reply)["type"] == "BadRequestException"
        assert "NUL" in _error(reply)["message"]
    # a real metadata file still registers
    t = c.create_table("reg.t", ROWS)
    # not while it is the current metadata of reg.t (two entries of one table)
    taken = _call(
        rest_server, "POST", path, {"name": "r", "metadata-location": t.metadata_location}
    )
    assert taken[0] == 409 and _error(taken)["type"] == "AlreadyExistsException", taken
    assert "reg.t" in _error(taken)["message"]
    c.drop_table("reg.t")
    ok = _call(rest_server, "POST", path, {"name": "r", "metadata-location": t.metadata_location})
    assert ok[0] == 200
    assert c.list_tables("reg") == [("reg", "r")]


@pytest.mark.rest
def test_creating_the_empty_namespace_is_a_bad_request(rest_server: RestServer) -> None:
    reply = _call(rest_server, "POST", f"/v1/{new_warehouse()}/namespaces", {"namespace": []})
    assert reply[0] == 400
    assert _error(reply)["type"] == "BadRequestException"


@pytest.mark.rest
def test_unknown_routes_and_methods_answer_iceberg_json_errors(rest_server: RestServer) -> None:
    unknown = _call(rest_server, "GET", "/v1/nope")
    assert unknown[0] == 404
    assert _error(unknown)["type"] == "NotFoundException"
    wrong = _call(rest_server, "PUT", f"/v1/{new_warehouse()}/namespaces", {})
    assert wrong[0] == 405
    assert _error(wrong)["type"] == "MethodNotAllowedException"
    assert set(wrong[1]["Allow"].replace(" ", "").split(",")) >= {"GET", "POST"}
    # the request is logged like every other
    assert '"GET /v1/nope" 404' in rest_server.log_text()


# -- S3 PUTs refused outright ---------------------------------------------------------------------

SESSION_TOKEN = "sess-7d1e2f3a4b5c-very-secret"


@pytest.mark.s3
def test_put_refused_with_501_is_a_definite_failure(s3proxy: S3Server) -> None:
    """s3proxy answers 501 NotImplemented to a request with ``X-Amz-Security-Token``: nothing was
    written, so the error is a plain FileIOError naming the location and the server's code
    (not "cannot tell whether it was written"), without the credentials."""
    bucket = s3proxy.bucket()
    creds = Credentials(s3proxy.access_key, s3proxy.secret_key, SESSION_TOKEN)
    client = S3Client(region="us-east-1", credentials=creds, endpoint=s3proxy.endpoint)
    key = f"{uuid.uuid4().hex}/v1.metadata.json"
    for if_absent in (False, True):
        with pytest.raises(FileIOError) as info:
            client.put_object(bucket, key, b"{}", if_absent=if_absent)
        assert not isinstance(info.value, UnknownWriteStateError)
        text = str(info.value)
        assert f"s3://{bucket}/{key}" in text and "501" in text and "NotImplemented" in text
        for secret in (SESSION_TOKEN, s3proxy.secret_key):
            assert secret not in text and secret not in repr(info.value)


class _ScriptedS3:
    """A loopback HTTP server answering each PUT by the next step of ``script``: a status code,
    or ``"drop"`` (close the connection without answering)."""

    def __init__(self, script: list[int | str]) -> None:
        self.script = list(script)
        self.puts = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_PUT(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.puts += 1
                step = owner.script.pop(0) if owner.script else 500
                if step == "drop":
                    self.close_connection = True
                    return
                body = b"<Error><Code>Scripted</Code><Message>refused</Message></Error>"
                self.send_response(int(step))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def scripted_s3() -> Iterator[type[_ScriptedS3]]:
    made: list[_ScriptedS3] = []

    class Make(_ScriptedS3):
        def __init__(self, script: list[int | str]) -> None:
            super().__init__(script)
            made.append(self)

    yield Make
    for server in made:
        server.close()


def test_put_refused_with_505_is_not_retried(scripted_s3: type[_ScriptedS3]) -> None:
    server = scripted_s3([505])
    client = S3Client(
        region="us-east-1", credentials=Credentials("k", "s"), endpoint=server.endpoint
    )
    with pytest.raises(FileIOError, match=r"s3://b/k: 505 Scripted: refused") as info:
        client.put_object("b", "k", b"x")
    assert not isinstance(info.value, UnknownWriteStateError)
    assert server.puts == 1


def test_put_refused_after_an_unanswered_attempt_stays_unknown(
    scripted_s3: type[_ScriptedS3],
) -> None:
    """A 501 says nothing of an earlier attempt that got no answer: it may have written."""
    server = scripted_s3(["drop", 501])
    client = S3Client(
        region="us-east-1", credentials=Credentials("k", "s"), endpoint=server.endpoint
    )
    with pytest.raises(UnknownWriteStateError, match=r"s3://b/k"):
        client.put_object("b", "k", b"x")
    assert server.puts == 2
    still_unknown = scripted_s3([502, 501])  # a 5xx that may have written, then a refusal
    client = S3Client(
        region="us-east-1", credentials=Credentials("k", "s"), endpoint=still_unknown.endpoint
    )
    with pytest.raises(UnknownWriteStateError):
        client.put_object("b", "k", b"x")


def test_a_file_system_backed_server_lists_no_rename_register_or_views(tmp_path: Path) -> None:
    """A file-system catalog finds tables by their directory and keeps no views: its server
    leaves the rename, register and view endpoints out of its config, the client refuses them
    before any request, and the view routes answer 406."""
    import urllib.error
    import urllib.request

    from icefloe import rest
    from icefloe.catalog import load_catalog
    from icefloe.catalog.rest.config import LIST_VIEWS, REGISTER_TABLE, RENAME_TABLE
    from icefloe.exceptions import UnsupportedFeatureError

    backing = load_catalog("h", type="hadoop", warehouse=(tmp_path / "wh").as_uri())
    with rest.start(backing) as server:
        cat = RestCatalog("c", uri=server.url)
        assert RENAME_TABLE not in cat.endpoints and REGISTER_TABLE not in cat.endpoints
        assert LIST_VIEWS not in cat.endpoints
        cat.create_namespace("db")
        # as Iceberg Java's REST catalog: no views listed, none exists; creating one is refused
        assert cat.list_views("db") == [] and not cat.view_exists("db.v")
        with pytest.raises(UnsupportedFeatureError):
            cat.create_view(
                "db.v", "SELECT 1", pa.schema([pa.field("id", pa.int64())]), dialect="x"
            )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{server.url}/v1/namespaces/db/views")
        assert refused.value.code == 406
        t = cat.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
        with pytest.raises(UnsupportedFeatureError):
            cat.rename_table("db.t", "db.u")
        with pytest.raises(UnsupportedFeatureError):
            cat.register_table("db.v", t.metadata_location)
        cat.close()


def test_a_client_gone_mid_body_is_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A client that disconnects before its body arrives was an 'Exception in ASGI
    application' with a 48-line traceback per connection."""
    import logging

    from icefloe import rest
    from icefloe.catalog import load_catalog

    backing = load_catalog(
        "g", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path)
    )
    caplog.set_level(logging.INFO)
    with rest.start(backing) as server:
        host, port = urlsplit(server.url).hostname, urlsplit(server.url).port
        for _ in range(3):
            with socket.create_connection((host, port)) as s:
                s.sendall(
                    b"POST /v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    b"Content-Type: application/json\r\n"
                    b'Content-Length: 100\r\n\r\n{"namespace"'
                )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and caplog.text.count("disconnected before") < 3:
            time.sleep(0.05)
        assert urllib.request.urlopen(f"{server.url}/v1/config").status == 200
    assert caplog.text.count("disconnected before sending POST /v1/namespaces") == 3
    assert "Exception in ASGI application" not in caplog.text
    assert "Traceback" not in caplog.text


def test_the_table_etag_covers_config_and_static_credentials(tmp_path: Path) -> None:
    """A server restarted with another ``--table-config`` (or rotated static keys) answered
    304 to a client holding the old ETag, which kept the old settings."""
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.rest.service import RestService

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    cat.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
    ident = ("db", "t")

    def load(service: RestService, etag: str | None, delegation: str | None = None) -> Any:
        return service.load_table(ident, {}, etag, delegation)

    first = RestService(cat, table_config={"s3.region": "eu-west-1"})
    status, _, headers = load(first, None)
    assert status == 200
    assert load(first, headers["ETag"])[0] == 304  # unchanged: the cache still works
    moved = RestService(cat, table_config={"s3.region": "us-west-2"})
    status, body, _ = load(moved, headers["ETag"])
    assert status == 200 and body["config"]["s3.region"] == "us-west-2"
    keys = [((tmp_path / "wh").as_uri(), {"s3.access-key-id": "old", "s3.secret-access-key": "s"})]
    rotated = [
        ((tmp_path / "wh").as_uri(), {"s3.access-key-id": "new", "s3.secret-access-key": "s"})
    ]
    delegation = "vended-credentials"
    status, _, headers = load(RestService(cat, storage_credentials=keys), None, delegation)
    assert status == 200
    status, body, _ = load(
        RestService(cat, storage_credentials=rotated), headers["ETag"], delegation
    )
    assert status == 200


@pytest.mark.rest
def test_commits_check_locations_as_creates_do(rest_server: RestServer) -> None:
    """A ``set-location`` or a path property in a commit is checked and stored as a create
    stores it: an object-store location with ``..`` was written as such a key and the table
    never loaded again; ``write.data.path`` was stored raw (relative, or escaping the
    table)."""
    warehouse = new_warehouse()
    c = RestCatalog("c", uri=rest_server.url, warehouse=warehouse)
    c.create_namespace("ns")
    t = c.create_table("ns.t", ROWS)
    path = f"/v1/{warehouse}/namespaces/ns/tables/t"
    views = f"/v1/{warehouse}/namespaces/ns/views"

    def commit(update: dict[str, Any], route: str = path) -> Reply:
        return _call(rest_server, "POST", route, {"requirements": [], "updates": [update]})

    bad = [
        {"action": "set-location", "location": "s3://bkt/wh/ns/x/../moved"},
        # the root of a file system: stored empty, the next metadata file went to /metadata
        {"action": "set-location", "location": "/"},
        {"action": "set-location", "location": "file:///"},
        # relative: the server resolved it against its own working directory
        {"action": "set-location", "location": "moved/elsewhere"},
        {"action": "set-location", "location": "~/moved"},
        {"action": "set-location", "location": "file:moved/elsewhere"},
        {"action": "set-properties", "updates": {"write.data.path": "../x"}},
        {"action": "set-properties", "updates": {"write.data.path": "s3://bkt/a/../x"}},
    ]
    for update in bad:
        reply = commit(update)
        assert reply[0] == 400 and _error(reply)["type"] == "BadRequestException", update
    ok = commit({"action": "set-properties", "updates": {"write.data.path": "rel/x"}})
    assert ok[0] == 200, ok
    loaded = c.load_table("ns.t")
    assert loaded.metadata_location != t.metadata_location
    assert loaded.properties["write.data.path"] == f"{t.location}/rel/x"
    view = view_body("v", ["ns"])
    assert _call(rest_server, "POST", views, view)[0] == 200
    reply = commit({"action": "set-location", "location": "s3://bkt/wh/v/../w"}, route=f"{views}/v")
    assert reply[0] == 400 and _error(reply)["type"] == "BadRequestException"
    tables = f"/v1/{warehouse}/namespaces/ns/tables"
    root = {"type": "struct", "schema-id": 0, "fields": []}
    for at in ("/", "file:///"):
        reply = _call(rest_server, "POST", tables, {"name": "r", "schema": root, "location": at})
        assert reply[0] == 400 and "root of a file system" in _error(reply)["message"], reply
        staged = {
            "requirements": [{"type": "assert-create"}],
            "updates": [
                {"action": "assign-uuid", "uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1"},
                {"action": "upgrade-format-version", "format-version": 2},
                {"action": "add-schema", "schema": root},
                {"action": "set-current-schema", "schema-id": -1},
                {"action": "set-location", "location": at},
            ],
        }
        reply = _call(rest_server, "POST", f"{tables}/staged", staged)
        assert reply[0] == 400 and "root of a file system" in _error(reply)["message"], reply


def test_property_changes_of_a_table_at_an_odd_location_are_not_refused() -> None:
    """Only path properties are resolved under the location: any other property change of
    a table registered at a location the newer checks refuse (``//`` on S3) goes through."""
    from icefloe.metadata import SetProperties
    from icefloe.rest.bodies import checked_locations

    ups = [SetProperties({"comment": "x"})]
    assert checked_locations("s3://bucket/wh//db/t", ups) == ups
    with pytest.raises(ValidationError, match="empty path segment"):
        checked_locations("s3://bucket/wh//db/t", [SetProperties({"write.data.path": "d"})])


def test_a_snapshot_without_an_operation_is_a_bad_request(rest_server: RestServer) -> None:
    """Java's server stores such a snapshot, after which PyIceberg cannot load the table."""
    warehouse = new_warehouse()
    c = RestCatalog("c", uri=rest_server.url, warehouse=warehouse)
    c.create_namespace("ns")
    t = c.create_table("ns.t", ROWS)
    snapshot = {
        "snapshot-id": 7,
        "sequence-number": 1,
        "timestamp-ms": 1_700_000_000_000,
        "manifest-list": f"{t.location}/metadata/snap-7.avro",
        "summary": {"added-data-files": "0"},
        "schema-id": 0,
    }
    body = {"requirements": [], "updates": [{"action": "add-snapshot", "snapshot": snapshot}]}
    reply = _call(rest_server, "POST", f"/v1/{warehouse}/namespaces/ns/tables/t", body)
    assert reply[0] == 400 and "needs an 'operation'" in _error(reply)["message"]
    assert c.load_table("ns.t").metadata_location == t.metadata_location
