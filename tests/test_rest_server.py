"""``icefloe serve`` as a server: auth on every route, OAuth2 tokens, secrets kept out of logs
and errors, many processes appending through it, and its command line."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest.errors import exception_for_error
from icefloe.exceptions import (
    FileIOError,
    ForbiddenError,
    IcebergError,
    NotFoundError,
    UnauthorizedError,
    ValidationError,
)
from support.rest import (
    CLIENT_SECRET,
    PYTHONPATH,
    TOKEN,
    RestServer,
    new_warehouse,
    start_rest_server,
)
from support.s3 import S3Server

pytestmark = pytest.mark.rest

ROWS = pa.schema([pa.field("id", pa.int64())])


def _raw(
    server: RestServer, method: str, path: str, body: object = None, token: str | None = None
) -> int:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(server.url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def _state(c: RestCatalog, root: Path) -> tuple[object, ...]:
    namespaces = c.list_namespaces()
    props = {ns: c.load_namespace_properties(ns) for ns in namespaces}
    tables = {ns: c.list_tables(ns) for ns in namespaces}
    pointers = {t: c.load_table(t).metadata_location for ts in tables.values() for t in ts}
    files = sorted(str(p) for p in root.rglob("*") if p.is_file() and p.suffix != ".log")
    return namespaces, props, tables, pointers, files


def test_without_a_token_every_route_is_refused_and_nothing_changes(
    rest_auth_server: RestServer,
) -> None:
    c = RestCatalog("a", uri=rest_auth_server.url, token=TOKEN)
    c.create_namespace("db", {"k": "v"})
    t = c.create_table("db.t", ROWS)
    t.append(pa.table({"id": [1]}, schema=ROWS))
    c.create_table("db.u", ROWS)
    before = _state(c, rest_auth_server.base)
    schema = t.schema().to_json()
    commit = {
        "requirements": [],
        "updates": [{"action": "set-properties", "updates": {"x": "1"}}],
    }
    ident = {"namespace": ["db"], "name": "t"}
    routes = [
        ("POST", "/v1/namespaces", {"namespace": ["new"]}),
        ("DELETE", "/v1/namespaces/db", None),
        ("POST", "/v1/namespaces/db/properties", {"removals": ["k"], "updates": {"a": "b"}}),
        ("POST", "/v1/namespaces/db/tables", {"name": "n", "schema": schema}),
        ("POST", "/v1/namespaces/db/tables", {"name": "s", "schema": schema, "stage-create": True}),
        (
            "POST",
            "/v1/namespaces/db/register",
            {"name": "r", "metadata-location": t.metadata_location},
        ),
        ("POST", "/v1/namespaces/db/tables/t", commit),
        ("DELETE", "/v1/namespaces/db/tables/t?purgeRequested=true", None),
        ("DELETE", "/v1/namespaces/db/tables/u", None),
        (
            "POST",
            "/v1/tables/rename",
            {"source": ident, "destination": {"namespace": ["db"], "name": "z"}},
        ),
        ("POST", "/v1/transactions/commit", {"table-changes": [{"identifier": ident, **commit}]}),
        ("POST", "/v1/namespaces/db/tables/t/metrics", {"report-type": "scan-report"}),
        ("GET", "/v1/config", None),
        ("GET", "/v1/namespaces", None),
        ("GET", "/v1/namespaces/db/tables/t", None),
        ("HEAD", "/v1/namespaces/db/tables/t", None),
    ]
    for method, path, body in routes:
        assert _raw(rest_auth_server, method, path, body) == 401, (method, path)
        assert _raw(rest_auth_server, method, path, body, token="wrong") == 401, (method, path)
    assert _state(c, rest_auth_server.base) == before
    # a body beyond the limit is refused before it is parsed
    huge = {"namespace": ["x"], "properties": {"pad": "x" * (65 << 20)}}
    assert _raw(rest_auth_server, "POST", "/v1/namespaces", huge, TOKEN) == 413
    # the same requests with the token do act (so the list above can detect a leak)
    assert _raw(rest_auth_server, "POST", "/v1/namespaces/db/tables/t", commit, TOKEN) == 200
    assert c.load_table("db.t").properties["x"] == "1"
    c.drop_table("db.t", purge=True)
    c.drop_table("db.u")
    c.drop_namespace("db")


def test_oauth2_client_credentials_refresh_and_retry(rest_auth_server: RestServer) -> None:
    c = RestCatalog("o", uri=rest_auth_server.url, credential=f"app:{CLIENT_SECRET}")
    c.create_namespace("oauth")
    grants = lambda: rest_auth_server.log_text().count('"POST /v1/oauth/tokens" 200')  # noqa: E731
    first = grants()
    time.sleep(2.2)  # past the refresh point (lifetime 3 s, refreshed 1 s early)
    assert c.namespace_exists("oauth")
    assert grants() == first + 1
    # a client that believes its token is still valid gets 401, fetches a new one, retries once
    c._auth._refresh_at = float("inf")  # type: ignore[attr-defined]
    time.sleep(3.2)
    assert c.load_namespace_properties("oauth") == {}
    assert grants() == first + 2
    c.drop_namespace("oauth")
    with pytest.raises(UnauthorizedError):
        RestCatalog("bad", uri=rest_auth_server.url, credential="app:wrong")
    with pytest.raises(UnauthorizedError):
        RestCatalog("none", uri=rest_auth_server.url)


def test_token_endpoint_grants(rest_auth_server: RestServer) -> None:
    """client_credentials (form or HTTP Basic) and token exchange of a valid token, as Java
    clients refresh; anything else is refused."""
    import base64
    from urllib.parse import urlencode

    def grant(form: dict[str, str], basic: str | None = None) -> tuple[int, dict[str, object]]:
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if basic:
            headers["Authorization"] = "Basic " + base64.b64encode(basic.encode()).decode()
        req = urllib.request.Request(
            f"{rest_auth_server.url}/v1/oauth/tokens",
            data=urlencode(form).encode(),
            method="POST",
            headers=headers,
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return int(resp.status), json.load(resp)
        except urllib.error.HTTPError as exc:
            return int(exc.code), json.load(exc)

    cc = {"grant_type": "client_credentials", "scope": "catalog"}
    status, body = grant({**cc, "client_id": "app", "client_secret": CLIENT_SECRET})
    assert status == 200 and body["token_type"] == "bearer" and body["expires_in"] == 3
    token = str(body["access_token"])
    assert grant(cc, basic=f"app:{CLIENT_SECRET}")[0] == 200
    assert grant({**cc, "client_id": "app", "client_secret": "nope"})[0] == 401
    assert grant(cc, basic="app:nope")[0] == 401
    exchange = {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
    }
    status, body = grant({**exchange, "subject_token": token})
    assert status == 200 and body["access_token"] != token
    assert _raw(rest_auth_server, "GET", "/v1/namespaces", token=str(body["access_token"])) == 200
    assert grant({**exchange, "subject_token": "forged"})[0] == 401
    assert grant({"grant_type": "password", "username": "u", "password": "p"})[0] == 400
    time.sleep(3.2)  # issued tokens expire
    assert _raw(rest_auth_server, "GET", "/v1/namespaces", token=token) == 401
    assert grant({**exchange, "subject_token": token})[0] == 401


def test_token_endpoint_errors_follow_rfc_6749(rest_auth_server: RestServer) -> None:
    """RFC 6749 5.2: a client that failed HTTP Basic authentication gets a 401 with a
    ``WWW-Authenticate: Basic`` challenge (there was none), one that failed in the form gets
    no challenge, and a request without ``grant_type`` (a JSON body, say) is
    ``invalid_request`` (it was ``unsupported_grant_type`` for the grant type ``''``)."""
    import base64

    def post(data: bytes, headers: dict[str, str]) -> tuple[int, Any, dict[str, Any]]:
        req = urllib.request.Request(
            f"{rest_auth_server.url}/v1/oauth/tokens", data=data, method="POST", headers=headers
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return int(resp.status), resp.headers, json.load(resp)
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.headers, json.load(exc)

    form = {"Content-Type": "application/x-www-form-urlencoded"}
    basic = "Basic " + base64.b64encode(b"app:wrong").decode()
    status, headers, body = post(b"grant_type=client_credentials", {**form, "Authorization": basic})
    assert (status, body["error"]) == (401, "invalid_client")
    assert headers.get("WWW-Authenticate", "").lower().startswith("basic")
    status, headers, body = post(
        b"grant_type=client_credentials&client_id=app&client_secret=wrong", form
    )
    assert (status, body["error"]) == (401, "invalid_client")
    assert headers.get("WWW-Authenticate") is None
    as_json = {"grant_type": "client_credentials", "client_id": "app", "client_secret": "x"}
    status, _, body = post(json.dumps(as_json).encode(), {"Content-Type": "application/json"})
    assert (status, body["error"]) == (400, "invalid_request")


def test_secrets_never_reach_reprs_errors_or_logs(
    rest_auth_server: RestServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong_secret = "wr0ng-" + CLIENT_SECRET
    wrong_token = "bad-" + TOKEN
    texts: list[str] = []
    for props in ({"credential": f"app:{wrong_secret}"}, {"token": wrong_token}):
        with pytest.raises(UnauthorizedError) as info:
            RestCatalog("x", uri=rest_auth_server.url, **props)
        texts += [str(info.value), repr(info.value)]
    c = RestCatalog(
        "ok", uri=rest_auth_server.url, credential=f"app:{CLIENT_SECRET}", **{"header.X-Key": TOKEN}
    )
    c.create_namespace("sec")
    t = c.create_table("sec.t", ROWS)
    texts += [repr(c), repr(c._auth), repr(c._session), repr(t), repr(t.io.properties)]
    c.drop_table("sec.t")
    c.drop_namespace("sec")
    texts.append(caplog.text)
    texts.append(rest_auth_server.log_text())
    for secret in (TOKEN, CLIENT_SECRET, wrong_secret, wrong_token):
        for text in texts:
            assert secret not in text


def test_secrets_echoed_by_a_token_endpoint_or_in_a_uri_stay_out_of_errors(
    rest_auth_server: RestServer,
) -> None:
    """A token endpoint that answers with what it was sent, and catalog URIs with a password
    in them: the errors never show the secret."""
    import http.server
    import threading
    from urllib.parse import parse_qs

    class Echo(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            payload = json.dumps(
                {"error": "invalid_client", "error_description": f"unknown {form}"}
            ).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        token_url = f"http://127.0.0.1:{server.server_address[1]}/token"
        with pytest.raises(UnauthorizedError, match="invalid_client") as info:
            RestCatalog(
                "x",
                uri=rest_auth_server.url,
                credential=f"app:{CLIENT_SECRET}",
                **{"oauth2-server-uri": token_url},
            )
        assert CLIENT_SECRET not in str(info.value) and "***" in str(info.value)
    finally:
        server.shutdown()
        server.server_close()
    for uri in (
        "ftp://alice:Pa55word-in-uri@example.com/",
        "http://alice:Pa55word-in-uri@h:99999/",
    ):
        with pytest.raises(ValidationError) as bad:
            RestCatalog("x", uri=uri)
        assert "Pa55word-in-uri" not in str(bad.value) and "alice:***@" in str(bad.value)


class _Echoing:
    """A server that quotes the request in its error answers, as some token endpoints and
    gateways do (``icefloe serve`` never does): a ``POST`` (a token request) is answered with
    its form body in JSON, or with an HTML page naming ``secret`` at byte 190 (cut at 200 in
    the message), or with a token; a ``GET`` with its ``Authorization`` header, in a 401 JSON
    error or a 403 HTML page."""

    def __init__(self, secret: str = "") -> None:
        import http.server
        import threading

        self.mode = "echo"
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _reply(self, status: int, body: str, ctype: str) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                form = self.rfile.read(int(self.headers["Content-Length"])).decode()
                if outer.mode == "echo":
                    error = {"error": "invalid_request", "error_description": f"bad: {form}"}
                    self._reply(400, json.dumps(error), "application/json")
                elif outer.mode == "html":
                    page = f"<html><body>{'x' * 170} secret {secret} rejected</body></html>"
                    self._reply(400, page, "text/html")
                else:
                    token = {"access_token": ISSUED, "token_type": "bearer", "expires_in": 3600}
                    self._reply(200, json.dumps(token), "application/json")

            def do_GET(self) -> None:
                auth = self.headers.get("Authorization", "")
                if self.path.startswith("/json/"):
                    message = f"token {auth} is not valid"
                    error = {"error": {"message": message, "type": "NotAuthorizedException"}}
                    self._reply(401, json.dumps(error), "application/json")
                else:
                    self._reply(403, f"<html><pre>Authorization: {auth}</pre></html>", "text/html")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


ISSUED = "issued-access-token-0f3a9c"


def test_a_client_secret_echoed_encoded_or_cut_stays_out_of_token_errors() -> None:
    """A token endpoint (or a proxy) that echoes the form body shows the client secret
    URL-encoded (``Zk8%2Bq%2FWd3s%3D...``), and an HTML error page is quoted up to 200
    characters, which can cut the secret: neither showed in the error, which removed only
    the secret as written."""
    secret = "Zk8+q/Wd3s=r0tate-me"  # base64-like, as many identity providers issue
    server = _Echoing(secret)
    try:
        for mode in ("echo", "html"):
            server.mode = mode
            with pytest.raises(UnauthorizedError) as info:
                RestCatalog("x", uri=server.url, credential=f"app:{secret}")
            text = str(info.value)
            assert "***" in text and "HTTP 400" in text
            assert "Zk8" not in text and "Wd3s" not in text, text
    finally:
        server.close()


def test_bearer_tokens_quoted_by_a_server_stay_out_of_errors() -> None:
    """A server or gateway whose 401/403 answer quotes the ``Authorization`` header: neither
    the configured ``token`` nor an OAuth2 access token shows in the error (they did, in
    ``UnauthorizedError``/``ForbiddenError`` messages)."""
    token = "eyJhbGciOi.static-bearer-5e1f.sig"
    server = _Echoing()
    server.mode = "token"
    try:
        for path, props in (
            ("/json", {"token": token}),
            ("/html", {"token": token}),
            ("/json", {"credential": "app:client-secret-77"}),
            ("/html", {"credential": "app:client-secret-77"}),
        ):
            with pytest.raises((UnauthorizedError, ForbiddenError)) as info:
                RestCatalog("x", uri=server.url + path, **props)
            text = str(info.value)
            assert "Bearer ***" in text, text
            assert token not in text and ISSUED not in text
    finally:
        server.close()


LOAD_SCRIPT = textwrap.dedent(
    """
    import sys
    import pyarrow as pa
    from icefloe.catalog.rest import RestCatalog
    url, warehouse, k, m = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    c = RestCatalog("load", uri=url, warehouse=warehouse)
    t = c.load_table("db.t")
    for j in range(m):
        t.append(pa.table({"id": pa.array([k * 100000 + j], pa.int64())}))
    """
)


def test_many_processes_append_through_one_server(rest_server: RestServer, tmp_path: Path) -> None:
    """N processes x M appends to one table: every row exactly once, N*M snapshots."""
    n, m = (int(x) for x in os.environ.get("ICEFLOE_REST_LOAD", "4x20").split("x"))
    warehouse = new_warehouse()
    c = RestCatalog("load", uri=rest_server.url, warehouse=warehouse)
    c.create_namespace("db")
    c.create_table(
        "db.t",
        ROWS,
        properties={"commit.retry.min-wait-ms": "5", "commit.retry.max-wait-ms": "200"},
    )
    script = tmp_path / "append.py"
    script.write_text(LOAD_SCRIPT)
    env = {**os.environ, "PYTHONPATH": PYTHONPATH}
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), rest_server.url, warehouse, str(k), str(m)],
            env=env,
            stderr=subprocess.PIPE,
        )
        for k in range(n)
    ]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err.decode()
    elapsed = time.perf_counter() - started
    t = c.load_table("db.t")
    ids = t.scan().to_arrow()["id"].to_pylist()
    expected = [k * 100000 + j for k in range(n) for j in range(m)]
    assert sorted(ids) == sorted(expected)  # none lost, none twice
    assert len(t.snapshots()) == n * m
    print(f"{n} processes x {m} appends: {elapsed:.1f} s, {n * m / elapsed:.1f} commits/s")


def test_one_log_line_per_request_and_clean_shutdown(tmp_path: Path) -> None:
    server = start_rest_server(tmp_path / "srv")
    try:
        c = RestCatalog("l", uri=server.url)  # GET /v1/config
        c.create_namespace("db")  # POST /v1/namespaces
        assert not c.table_exists("db.t")  # HEAD .../tables/t -> 404
        lines = [line for line in server.log_text().splitlines() if '"' in line]
        assert [line.split('"')[1] for line in lines[-3:]] == [
            "GET /v1/config",
            "POST /v1/namespaces",
            "HEAD /v1/namespaces/db/tables/t",
        ]
        assert all(" INFO icefloe.rest: " in line for line in lines[-3:])
        assert lines[-1].split('"')[2].split()[0] == "404"
    finally:
        server.stop()
    # SIGTERM: uvicorn finishes the requests in flight and shuts down; the stop is no failure
    assert server.process.returncode == 0
    assert "Finished server process" in server.log_text()


def test_command_line_reports_bad_configuration(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "ICEFLOE_CONFIG": str(tmp_path / "none.yaml")}
    (tmp_path / "none.yaml").write_text("{}\n")
    bad = subprocess.run(
        [sys.executable, "-m", "icefloe.rest", "-p", "type=nosuch"],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert b"unsupported catalog type 'nosuch'" in bad.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "icefloe.rest", "--token-env", "ICEFLOE_NO_SUCH_VAR"],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert missing.returncode == 2
    assert b"ICEFLOE_NO_SUCH_VAR" in missing.stderr
    for lifetime in ("0", "-5"):  # tokens that expire when issued: every client got 401
        never = subprocess.run(
            [sys.executable, "-m", "icefloe.rest", "--token-lifetime", lifetime],
            env=env,
            capture_output=True,
            timeout=60,
        )
        assert never.returncode == 2
        assert b"not a number of seconds above zero" in never.stderr
    nodb = subprocess.run(
        [
            sys.executable,
            "-m",
            "icefloe.rest",
            "-p",
            "type=sql",
            "-p",
            f"uri=sqlite:///{tmp_path}/no/such/dir/c.db",
            "-p",
            f"warehouse={tmp_path}",
        ],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert nodb.returncode == 2
    assert b"python -m icefloe.rest: SQL catalog" in nodb.stderr
    assert b"the catalog database failed: unable to open database file" in nodb.stderr
    assert b"Traceback" not in nodb.stderr


def test_icefloe_serve_command(tmp_path: Path) -> None:
    """``icefloe serve`` (the CLI's command) serves a catalog that the REST client writes and
    reads, and stops cleanly on SIGTERM; its usage errors exit 2 with one line."""
    server = start_rest_server(tmp_path, command=("icefloe.cli", "serve"))
    try:
        client = RestCatalog("served", uri=server.url)
        client.create_namespace("db")
        t = client.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
        t.append(pa.table({"id": [1, 2, 3]}))
        rows = client.load_table("db.t").scan().to_arrow().column("id").to_pylist()
        assert sorted(rows) == [1, 2, 3]
        client.close()
    finally:
        server.stop()
    assert server.process.returncode == 0
    assert "/v1/config" in server.log_text()  # one log line per request
    # Ctrl-C stops it cleanly too: exit 0, no "Aborted!" or traceback
    stopped = start_rest_server(tmp_path / "int", command=("icefloe.cli", "serve"))
    stopped.process.send_signal(signal.SIGINT)
    stopped.process.wait(timeout=30)
    assert stopped.process.returncode == 0
    assert "Aborted" not in stopped.log_text() and "Traceback" not in stopped.log_text()
    assert "Finished server process" in stopped.log_text()
    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "ICEFLOE_CONFIG": str(tmp_path / "none.yaml")}
    bad = subprocess.run(
        [sys.executable, "-m", "icefloe.cli", "serve", "--port", "not-a-port"],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert bad.returncode == 2 and b"icefloe serve" in bad.stderr


def test_idempotency_keys_outlive_a_restart_until_they_expire(tmp_path: Path) -> None:
    """Replies to Idempotency-Key requests are kept in the SQL catalog's database: a retry
    sent to the restarted server gets the first answer, and nothing is committed twice; once
    the key's lifetime has passed, the same key runs again."""
    import sqlite3

    base = tmp_path / "srv"
    # a commit without requirements: run twice, it would commit twice
    commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"x": "1"}}]}

    def post(server: RestServer, key: str) -> tuple[int, bytes]:
        req = urllib.request.Request(
            f"{server.url}/v1/namespaces/db/tables/t",
            data=json.dumps(commit).encode(),
            method="POST",
            headers={"Content-Type": "application/json", "Idempotency-Key": key},
        )
        with urllib.request.urlopen(req) as resp:
            return resp.status, resp.read()

    key = "0190b0e4-6f6e-7c3a-9b1e-2f1a3c4d5e6f"
    server = start_rest_server(base)
    try:
        c = RestCatalog("c", uri=server.url)
        c.create_namespace("db")
        c.create_table("db.t", ROWS)
        first = post(server, key)
        assert first[0] == 200
        c.load_table("db.t").set_properties(x="2")  # run again, the request would undo it
    finally:
        server.stop()
    server = start_rest_server(base)  # the same database, a new process
    try:
        assert post(server, key) == first  # replayed, not run again
        c = RestCatalog("c", uri=server.url)
        t = c.load_table("db.t")
        assert len(t.metadata_log()) == 2 and t.properties["x"] == "2"
    finally:
        server.stop()
    rows = sqlite3.connect(base / "catalog.db").execute(
        "SELECT idempotency_key, status FROM icefloe_rest_idempotency"
    )
    assert (key, 200) in set(rows)  # beside the client's own commit's key
    server = start_rest_server(base, ["--idempotency-lifetime", "PT1S"])
    try:
        other = "0190b0e4-6f6e-7c3a-9b1e-2f1a3c4d5e70"
        second = post(server, other)
        assert post(server, other) == second
        time.sleep(1.5)  # past the lifetime: the key is forgotten, the request runs again
        c = RestCatalog("c", uri=server.url)
        c.load_table("db.t").set_properties(x="2")
        third = post(server, other)
        location = lambda reply: json.loads(reply[1])["metadata-location"]  # noqa: E731
        assert location(third) not in (location(first), location(second))
        assert c.load_table("db.t").properties["x"] == "1"
        assert len(c.load_table("db.t").metadata_log()) == 5
        assert c.idempotency_lifetime == "PT1S"
    finally:
        server.stop()


def test_bad_namespace_properties_and_damaged_metadata(rest_server: RestServer) -> None:
    """Namespace property values must be strings (400, nothing stored); a metadata file
    damaged on the server's storage is the server's failure (500 naming the file), not a bad
    request."""
    warehouse = new_warehouse()  # the session's server names each warehouse's paths by it
    c = RestCatalog("c", uri=rest_server.url, warehouse=warehouse)
    base = f"/v1/{warehouse}/namespaces"
    ns = {"namespace": ["badprops"], "properties": {"k": 5}}
    assert _raw(rest_server, "POST", base, ns) == 400
    assert ("badprops",) not in c.list_namespaces()
    c.create_namespace("dmg", {"k": "v"})
    assert _raw(rest_server, "POST", f"{base}/dmg/properties", {"updates": {"k": 1}}) == 400
    assert c.load_namespace_properties("dmg")["k"] == "v"
    t = c.create_table("dmg.t", ROWS)
    path = Path(t.metadata_location.removeprefix("file://"))
    path.write_bytes(b'{"format-version": 2}')
    assert _raw(rest_server, "GET", f"{base}/dmg/tables/t") == 500
    with pytest.raises(IcebergError, match=path.name) as caught:
        c.load_table("dmg.t")
    assert not isinstance(caught.value, ValidationError)


def _storage_error(server: RestServer, path: str) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(server.url + path)
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(req, timeout=60)
    return answer.value.code, json.loads(answer.value.read())["error"]


def test_a_storage_failure_of_the_server_is_a_file_io_error_of_the_client(
    rest_server: RestServer,
) -> None:
    """A metadata file the server cannot read (a directory in its place): a 500 of type
    ``RuntimeIOException`` (Iceberg Java's type) saying the server's storage failed and
    naming the file, which the client raises as ``FileIOError`` (it was a plain
    ``IcebergError`` of type ``ServerError``). A file that is gone stays ``NotFoundError``."""
    warehouse = new_warehouse()
    c = RestCatalog("c", uri=rest_server.url, warehouse=warehouse)
    c.create_namespace("db")
    t = c.create_table("db.t", ROWS)
    path = Path(t.metadata_location.removeprefix("file://"))
    path.unlink()
    path.mkdir()
    try:
        status, error = _storage_error(rest_server, f"/v1/{warehouse}/namespaces/db/tables/t")
        assert (status, error["code"], error["type"]) == (500, 500, "RuntimeIOException")
        assert error["message"].startswith("the server's storage failed: ")
        with pytest.raises(FileIOError, match=r"the server's storage failed: .*" + path.name) as e:
            c.load_table("db.t")
        assert not isinstance(e.value, NotFoundError)
    finally:
        path.rmdir()
    with pytest.raises(NotFoundError):
        c.load_table("db.t")
    c.close()


def test_an_object_store_the_server_cannot_reach_is_a_file_io_error_of_the_client(
    tmp_path: Path,
) -> None:
    """``icefloe serve`` over an S3 warehouse whose endpoint does not answer: creating a table
    (its metadata file cannot be written) and loading one (it cannot be read) are the
    client's ``FileIOError`` saying the server's storage failed, with the server's storage
    secret in neither the error nor the server's log."""
    from support.rest import free_port

    secret = "srv-s3-secret-4d9f7e2a1b"
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    server = start_rest_server(
        tmp_path,
        [
            *("-p", "warehouse=s3://bucket/wh"),
            *("-p", f"s3.endpoint={endpoint}", "-p", "s3.region=us-east-1"),
            *("-p", "s3.access-key-id=AKIASERVERKEY", "-p", f"s3.secret-access-key={secret}"),
        ],
    )
    try:
        c = RestCatalog("c", uri=server.url)
        c.create_namespace("db")
        with pytest.raises(FileIOError, match="the server's storage failed") as created:
            c.create_table("db.t", ROWS)
        assert "s3://bucket/wh/db/t/metadata/" in str(created.value)
        with sqlite3.connect(tmp_path / "catalog.db") as db:  # a table whose file is there
            (name,) = db.execute("SELECT catalog_name FROM iceberg_namespace_properties").fetchone()
            db.execute(
                "INSERT INTO iceberg_tables VALUES (?, 'db', 'u', "
                "'s3://bucket/wh/db/u/metadata/00001-a.metadata.json', NULL, 'TABLE')",
                (name,),
            )
        with pytest.raises(FileIOError, match="the server's storage failed") as loaded:
            c.load_table("db.u")
        assert not isinstance(loaded.value, NotFoundError)
        assert "00001-a.metadata.json" in str(loaded.value)
        for text in (str(created.value), str(loaded.value), server.log_text()):
            assert secret not in text
        c.close()
    finally:
        server.stop()
    assert "the server's storage failed" in server.log_text()


def test_a_namespace_property_both_removed_and_set_is_unprocessable(
    rest_server: RestServer,
) -> None:
    """A namespace property update naming a key in both ``removals`` and ``updates`` is
    answered 422 ``UnprocessableEntityException``, as the REST spec and Iceberg Java's server
    answer it (it was a 400), whether or not the namespace exists, and changes nothing; the
    REST client raises ``ValidationError`` for that answer."""
    warehouse = new_warehouse()
    c = RestCatalog("c", uri=rest_server.url, warehouse=warehouse)
    c.create_namespace("both", {"k": "v"})
    body = json.dumps({"removals": ["k"], "updates": {"k": "w", "other": "x"}}).encode()
    for ns in ("both", "nowhere"):
        req = urllib.request.Request(
            f"{rest_server.url}/v1/{warehouse}/namespaces/{ns}/properties",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(req, timeout=30)
        status, raw = answer.value.code, answer.value.read()
        error = json.loads(raw)["error"]
        assert (status, error["code"], error["type"]) == (422, 422, "UnprocessableEntityException")
        assert "'k'" in error["message"] and "'other'" not in error["message"]
        assert isinstance(exception_for_error(status, raw, "update"), ValidationError)
    assert c.load_namespace_properties("both") == {"k": "v"}


def test_catalog_storage_credentials_are_picked_by_file_system() -> None:
    """``--vend-storage-credentials`` vends the credential properties of each file system
    under the location prefixes of that file system; other settings stay out."""
    from icefloe.rest.__main__ import catalog_storage_credentials

    found = dict(
        catalog_storage_credentials(
            {
                "warehouse": "s3://b/wh",
                "s3.endpoint": "http://127.0.0.1:9000",
                "s3.access-key-id": "AK",
                "s3.secret-access-key": "SK",
                "gcs.project-id": "p",
                "gcs.oauth2.token": "ya29",
                "adls.sas-token.acct.dfs.core.windows.net": "sv=1",
                "adls.connection-string.other": "AccountName=other;AccountKey=a2V5",
                "adls.blob-storage-authority": "127.0.0.1:10000",
            }
        )
    )
    assert (
        found["s3://"]
        == found["s3a://"]
        == {"s3.access-key-id": "AK", "s3.secret-access-key": "SK"}
    )
    assert found["gs://"] == {"gcs.oauth2.token": "ya29"}
    assert found["abfss://"] == {
        "adls.sas-token.acct.dfs.core.windows.net": "sv=1",
        "adls.connection-string.other": "AccountName=other;AccountKey=a2V5",
    }
    assert catalog_storage_credentials({"s3.endpoint": "http://x", "warehouse": "/w"}) == []


def test_icefloe_serve_gives_clients_storage_settings_when_asked(
    tmp_path: Path, s3_server: S3Server
) -> None:
    """``icefloe serve --table-config ... --vend-storage-credentials`` over an S3 warehouse:
    PyIceberg and icefloe's REST client, with no storage settings of their own, append and read
    through the table config and the vended keys; the secret never reaches the server's output.
    Without the flags a table load carries neither (clients bring their own settings)."""
    pytest.importorskip("pyiceberg.catalog.rest")
    from pyiceberg.catalog.rest import RestCatalog as PyRestCatalog

    s3 = s3_server  # s3proxy checks the signatures: the vended keys are the ones used
    if s3.name == "moto":  # moto takes any key: one that cannot appear by chance
        s3 = dataclasses.replace(s3, secret_key="vend-me-0a9f3c-secret")
    s3_args = [a for k, v in s3.properties().items() for a in ("-p", f"{k}={v}")]
    settings = {
        "s3.endpoint": s3.endpoint,
        "s3.region": "us-east-1",
        "s3.path-style-access": "true",
    }
    flags = [a for k, v in settings.items() for a in ("--table-config", f"{k}={v}")]
    warehouse = ["-p", f"warehouse={s3.fresh_location()}"]
    server = start_rest_server(
        tmp_path / "vend",
        [*warehouse, *s3_args, *flags, "--vend-storage-credentials"],
        command=("icefloe.cli", "serve"),
    )
    delegation = {"X-Iceberg-Access-Delegation": "vended-credentials"}

    def load(srv: RestServer, headers: dict[str, str]) -> dict[str, Any]:
        req = urllib.request.Request(f"{srv.url}/v1/namespaces/db/tables/t", headers=headers)
        with urllib.request.urlopen(req, timeout=30) as resp:
            body: dict[str, Any] = json.load(resp)
        return body

    try:
        py = PyRestCatalog(
            "py", uri=server.url, **{f"header.{k}": v for k, v in delegation.items()}
        )
        py.create_namespace("db")
        py.create_table("db.t", ROWS).append(pa.table({"id": [1, 2]}))
        assert py.load_table("db.t").scan().to_arrow().num_rows == 2

        ours = RestCatalog("ours", uri=server.url)  # asks for vended credentials by default
        ours.load_table("db.t").append(pa.table({"id": [3]}))
        assert sorted(ours.load_table("db.t").scan().to_arrow().column("id").to_pylist()) == [
            1,
            2,
            3,
        ]
        assert py.load_table("db.t").scan().to_arrow().num_rows == 3
        ours.close()

        body = load(server, delegation)
        assert body["config"] == settings
        creds = {c["prefix"]: c["config"] for c in body["storage-credentials"]}
        assert creds["s3://"]["s3.secret-access-key"] == s3.secret_key
        plain = load(server, {})  # no vended credentials unless asked for
        assert plain["config"] == settings and not plain.get("storage-credentials")
    finally:
        server.stop()
    assert s3.secret_key not in server.log_text()

    # without the flags (the same catalog database): no storage settings for clients
    bare = start_rest_server(
        tmp_path / "bare",
        [*warehouse, *s3_args, "-p", f"uri=sqlite:///{tmp_path / 'vend' / 'catalog.db'}"],
        command=("icefloe.cli", "serve"),
    )
    try:
        body = load(bare, delegation)
        assert not body.get("config") and not body.get("storage-credentials")
    finally:
        bare.stop()
    assert s3.secret_key not in bare.log_text()

    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "ICEFLOE_CONFIG": str(tmp_path / "none.yaml")}
    (tmp_path / "none.yaml").write_text("{}\n")
    nothing = subprocess.run(
        [sys.executable, "-m", "icefloe.rest", "--vend-storage-credentials", "-p", "type=sql",
         "-p", "uri=sqlite://", "-p", f"warehouse={tmp_path / 'w'}", "--table-config", "x"],
        env=env, capture_output=True, timeout=60,
    )  # fmt: skip
    assert nothing.returncode == 2 and b"--table-config expects KEY=VALUE" in nothing.stderr
    nothing = subprocess.run(
        [sys.executable, "-m", "icefloe.rest", "--vend-storage-credentials", "-p", "type=sql",
         "-p", "uri=sqlite://", "-p", f"warehouse={tmp_path / 'w'}"],
        env=env, capture_output=True, timeout=60,
    )  # fmt: skip
    assert nothing.returncode == 2 and b"no s3.*, gcs.* or adls.* credential" in nothing.stderr


def test_port_zero_announces_the_port_it_got(tmp_path: Path) -> None:
    """``--port 0`` (any free port): the start-up line said ``http://127.0.0.1:0``."""
    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "ICEFLOE_CONFIG": str(tmp_path / "none.yaml")}
    (tmp_path / "none.yaml").write_text("{}\n")
    p = subprocess.Popen(
        [sys.executable, "-m", "icefloe.rest", "--port", "0", "-p", f"warehouse={tmp_path}"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stderr is not None
        line = ""
        deadline = time.monotonic() + 60
        while "serving catalog" not in line and time.monotonic() < deadline:
            line = p.stderr.readline()
        url = line.rsplit(" on ", 1)[1].split()[0]
        port = int(url.rsplit(":", 1)[1])
        assert port > 0
        with urllib.request.urlopen(f"{url}/v1/config", timeout=30) as reply:
            assert reply.status == 200
    finally:
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=30)
    assert p.returncode == 0
