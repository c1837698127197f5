"""``icefloe serve`` on hostile and malformed input, at the wire level (raw HTTP, so paths go
out exactly as written): encoded ``/`` in paths refused before routing (it used to drop a
table), non-ASCII tokens and secrets, paging only when ``pageToken`` is sent, request bodies of
the wrong types and NUL characters answered 400, and the spec's routes the server does not
implement answered 406.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pyarrow as pa
import pytest

from icefloe import rest
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import ValidationError
from icefloe.rest import BackgroundServer
from icefloe.rest.security import Authenticator
from support.rest import TOKEN, RestServer, new_warehouse

pytestmark = pytest.mark.rest

ROWS = pa.schema([pa.field("id", pa.int64())])
SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
}

Reply = tuple[int, dict[str, str], bytes]  # status, headers (lower-case names), body


def _call(
    url: str,
    method: str,
    path: str,
    body: object = None,
    headers: Mapping[str, str | bytes] | None = None,
    raw: bytes | None = None,
) -> Reply:
    """One request with ``path`` sent byte for byte (no re-encoding)."""
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=60)
    try:
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        conn.putrequest(method, path, skip_accept_encoding=True)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            conn.putheader(name, value)
        if data is not None:
            conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _error(reply: Reply, status: int, type_: str) -> str:
    """The message of an ``IcebergErrorResponse`` with ``status`` and ``type_``."""
    code, headers, body = reply
    assert code == status, reply
    assert headers["content-type"].startswith("application/json"), headers
    err = json.loads(body)["error"]
    assert err["code"] == status and err["type"] == type_, err
    return str(err["message"])


@pytest.fixture
def sql(tmp_path: Path) -> Iterator[SqlCatalog]:
    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    yield cat
    cat.close()


@pytest.fixture
def served(sql: SqlCatalog) -> Iterator[BackgroundServer]:
    """``icefloe serve`` over ``sql`` in this process, without auth."""
    pytest.importorskip("uvicorn", reason="icefloe serve needs the 'server' extra")
    with rest.start(sql) as server:
        yield server


# -- encoded slashes ---------------------------------------------------------------------------


def test_an_encoded_slash_is_refused_before_routing(rest_server: RestServer) -> None:
    """``DELETE .../namespaces/victim%2Ftables%2Forders`` used to match the drop-table route
    (routes match the decoded path) and drop table ``victim.orders``."""
    wh = new_warehouse()
    c = RestCatalog("r", uri=rest_server.url, warehouse=wh)
    c.create_namespace("victim")
    c.create_namespace(("victim", "inner"))
    c.create_table("victim.orders", ROWS).append(pa.table({"id": [1, 2]}))
    base = f"/v1/{wh}/namespaces"
    for method, path in [
        ("DELETE", f"{base}/victim%2Ftables%2Forders"),
        ("GET", f"{base}/victim%2ftables%2forders"),
        ("DELETE", f"{base}/victim/tables/orders%2F"),
        ("GET", f"{base}/victim%5Ctables"),
        ("POST", f"{base}/victim%2Ftables%2Forders/properties"),
    ]:
        reply = _call(rest_server.url, method, path, {"updates": {}} if method == "POST" else None)
        assert "encoded '/'" in _error(reply, 400, "BadRequestException")
    head = _call(rest_server.url, "HEAD", f"{base}/victim%2Ftables%2Forders")
    assert head[0] == 400
    assert c.list_tables("victim") == [("victim", "orders")]
    assert c.load_table("victim.orders").scan().to_arrow().num_rows == 2
    # the 0x1F separator of multi-level namespaces still works, in either case
    for sep in ("%1F", "%1f"):
        ok = _call(rest_server.url, "GET", f"{base}/victim{sep}inner")
        assert ok[0] == 200 and json.loads(ok[2])["namespace"] == ["victim", "inner"]
    assert _call(rest_server.url, "HEAD", f"{base}/victim%1Finner")[0] == 204
    # %2F in the query string is fine (a pageToken may hold one)
    listed = _call(rest_server.url, "GET", f"{base}/victim/tables?pageToken=&x=a%2Fb")
    assert listed[0] == 200
    assert '/namespaces/victim%2Ftables%2Forders" 400' in rest_server.log_text()


def test_the_client_refuses_a_slash_in_a_path_segment(rest_server: RestServer) -> None:
    c = RestCatalog("r", uri=rest_server.url, warehouse=new_warehouse())
    c.create_namespace("victim")
    c.create_table("victim.orders", ROWS)
    for call in (
        lambda: c.namespace_exists(("victim/tables/orders",)),
        lambda: c.load_namespace_properties(("victim/tables/orders",)),
        lambda: c.drop_namespace(("victim/tables/orders",)),
        lambda: c.table_exists(("victim", "a/b")),
        lambda: c.drop_table(("victim", "a/b")),
        lambda: c.list_tables(("victim", "x/y")),
    ):
        with pytest.raises(ValidationError, match="must not contain '/'"):
            call()
    assert c.list_tables("victim") == [("victim", "orders")]


# -- non-ASCII tokens and secrets --------------------------------------------------------------

STATIC = "t\u00f6k-\u2603-9f8e7d"  # "tök-☃-..."
SECRET = "s\u00e9cr\u00eat-\u4e2d-1a2b3c"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


@pytest.fixture
def auth_served(sql: SqlCatalog) -> Iterator[BackgroundServer]:
    pytest.importorskip("uvicorn", reason="icefloe serve needs the 'server' extra")
    with rest.start(sql, tokens=[STATIC], clients={"app": SECRET}) as server:
        yield server


def _token(url: str, form: Mapping[str, str], basic: bytes | None = None) -> tuple[int, Any]:
    headers: dict[str, str | bytes] = {"Content-Type": "application/x-www-form-urlencoded"}
    if basic is not None:
        headers["Authorization"] = b"Basic " + basic
    status, hdrs, body = _call(
        url, "POST", "/v1/oauth/tokens", raw=urlencode(form).encode(), headers=headers
    )
    assert hdrs["content-type"].startswith("application/json")
    return status, json.loads(body)


def test_non_ascii_tokens_and_secrets(
    auth_served: BackgroundServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = auth_served.url

    def bearer(token: bytes) -> Reply:
        return _call(url, "GET", "/v1/namespaces", headers={"Authorization": b"Bearer " + token})

    # a wrong non-ASCII token is a 401, the configured one (sent as UTF-8) is accepted
    _error(bearer("caf\u00e9".encode()), 401, "NotAuthorizedException")
    _error(bearer(b"\xff\xfe"), 401, "NotAuthorizedException")
    assert bearer(STATIC.encode())[0] == 200
    # client credentials with a non-ASCII secret: in the form, or in a Basic header
    grant = {"grant_type": "client_credentials", "client_id": "app"}
    status, body = _token(url, {**grant, "client_secret": SECRET})
    assert status == 200, body
    assert bearer(body["access_token"].encode())[0] == 200
    status, body = _token(url, {**grant, "client_secret": SECRET + "x"})
    assert (status, body["error"]) == (401, "invalid_client")
    basic = base64.b64encode(f"app:{SECRET}".encode())
    assert _token(url, {"grant_type": "client_credentials"}, basic)[0] == 200
    for broken in ("caf\u00e9".encode(), b"\xc3\xa9\xff=="):  # not base64 / not ASCII
        status, body = _token(url, {"grant_type": "client_credentials"}, broken)
        assert (status, body["error"]) == (401, "invalid_client")
    status, body = _token(url, {"grant_type": TOKEN_EXCHANGE, "subject_token": "\u00e9\u2603"})
    assert (status, body["error"]) == (401, "invalid_grant")
    # icefloe's client with that credential
    c = RestCatalog("c", uri=url, credential=f"app:{SECRET}")
    c.create_namespace("ok")
    assert c.list_namespaces() == [("ok",)]
    c.close()
    assert SECRET not in caplog.text and STATIC not in caplog.text


def test_an_unexpected_failure_in_auth_is_a_401_not_a_500(
    sql: SqlCatalog, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("uvicorn", reason="icefloe serve needs the 'server' extra")
    caplog.set_level(logging.DEBUG)

    def boom(self: Authenticator, *args: object) -> Any:
        raise RuntimeError(f"leaked {SECRET}")

    monkeypatch.setattr(Authenticator, "principal", boom)
    monkeypatch.setattr(Authenticator, "grant", boom)
    with rest.start(sql, tokens=[STATIC], clients={"app": SECRET}) as server:
        reply = _call(
            server.url, "GET", "/v1/namespaces", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        _error(reply, 401, "NotAuthorizedException")
        form = {"grant_type": "client_credentials", "client_id": "app", "client_secret": SECRET}
        status, body = _token(server.url, form)
        assert (status, body["error"]) == (401, "invalid_client")
        assert SECRET not in json.dumps(body)
    assert "RuntimeError" in caplog.text and SECRET not in caplog.text


# -- paging ------------------------------------------------------------------------------------


def test_lists_are_paged_only_when_a_page_token_is_sent(
    sql: SqlCatalog, served: BackgroundServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spec: without ``pageToken`` a server answers everything, ``next-page-token`` null;
    an empty ``pageToken`` asks for the first page."""
    monkeypatch.setattr("icefloe.rest.paging.DEFAULT_PAGE_SIZE", 3)
    names = [f"n{i}" for i in range(7)]
    for n in names:
        sql.create_namespace(n)
        sql.create_table(("n0", f"t{n}"), ROWS)

    def get(path: str) -> dict[str, Any]:
        status, _, body = _call(served.url, "GET", path)
        assert status == 200, body
        return dict(json.loads(body))

    for path, key in (
        ("/v1/namespaces", "namespaces"),
        ("/v1/namespaces/n0/tables", "identifiers"),
    ):
        everything = get(path)
        assert len(everything[key]) == 7 and everything["next-page-token"] is None
        sized = get(f"{path}?pageSize=2")  # a page size alone asks for no paging
        assert len(sized[key]) == 7 and sized["next-page-token"] is None
        first = get(f"{path}?pageToken=")
        assert len(first[key]) == 3 and first["next-page-token"]
        seen = list(first[key])
        token = first["next-page-token"]
        while token:
            page = get(f"{path}?pageToken={token}&pageSize=2")
            seen += page[key]
            token = page["next-page-token"]
        assert seen == everything[key]
    # icefloe's client pages against it, with and without a page size of its own
    for props in ({}, {"rest-page-size": "2"}):
        c = RestCatalog("c", uri=served.url, **props)
        assert c.list_namespaces() == [(n,) for n in names]
        assert c.list_tables("n0") == sorted(("n0", f"t{n}") for n in names)
        c.close()


# -- malformed bodies --------------------------------------------------------------------------


def _b64(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


BAD_REQUESTS: list[tuple[str, str, object]] = [
    ("POST", "/namespaces", {"namespace": ["x1"], "properties": ["a"]}),
    ("POST", "/namespaces", {"namespace": ["x2"], "properties": {"k\x00": "v"}}),
    ("POST", "/namespaces", {"namespace": ["x3"], "properties": {"k": "v\x00w"}}),
    ("POST", "/namespaces/m1/properties", {"updates": {"k\x00": "v"}}),
    ("POST", "/namespaces/m1/properties", {"updates": {"k": "\x00"}}),
    ("POST", "/namespaces/m1/properties", {"updates": ["k"]}),
    ("POST", "/namespaces/m1/properties", {"removals": "k"}),
    ("POST", "/namespaces/m1/tables", {"name": "x4", "schema": SCHEMA, "properties": ["a"]}),
    ("POST", "/namespaces/m1/tables", {"name": "x5", "schema": SCHEMA, "properties": {"k": 1}}),
    (
        "POST",
        "/namespaces/m1/tables",
        {"name": "x6", "schema": SCHEMA, "properties": {"k\x00": "v"}},
    ),
    ("POST", "/namespaces/m1/tables", {"name": "x7", "schema": SCHEMA, "location": 5}),
    ("POST", "/namespaces/m1/tables", {"name": ["x"], "schema": SCHEMA}),
    ("POST", "/namespaces/m1/tables", {"name": 8, "schema": SCHEMA}),
    ("POST", "/namespaces/m1/tables", {"name": "x9", "schema": SCHEMA, "stage-create": "yes"}),
    ("POST", "/namespaces/m1/tables", {"name": "x10", "schema": SCHEMA, "write-order": "x"}),
    ("POST", "/namespaces/m1/tables", {"name": "x11", "schema": SCHEMA, "partition-spec": [1]}),
    ("POST", "/namespaces/m1/register", {"name": "r1", "metadata-location": 7}),
    ("POST", "/namespaces/m1/register", {"name": ["r2"], "metadata-location": "x.json"}),
    ("POST", "/namespaces/m1/tables/t", {"requirements": {}, "updates": []}),
    ("POST", "/namespaces/m1/tables/t", {"requirements": [], "updates": [1]}),
    ("POST", "/namespaces/m1/tables/t", {"requirements": ["x"], "updates": []}),
    (
        "POST",
        "/namespaces/m1/tables/t",
        {"updates": [{"action": "set-properties", "updates": {"k\x00": "v"}}]},
    ),
    (
        "POST",
        "/tables/rename",
        {"source": ["m1", "t"], "destination": {"namespace": ["m1"], "name": "u"}},
    ),
    ("POST", "/transactions/commit", {"table-changes": [1]}),
    (
        "POST",
        "/transactions/commit",
        {"table-changes": [{"identifier": {"namespace": ["m1"], "name": "t"}, "updates": {}}]},
    ),
    (
        "POST",
        "/namespaces/m1/tables/t/metrics",
        {"report-type": ["scan-report"], "table-name": "t"},
    ),
    ("GET", "/namespaces?pageToken=" + _b64([1]), None),
    ("GET", "/namespaces?pageToken=" + _b64("m1"), None),
    ("GET", "/namespaces?pageToken=" + _b64({"a": 1}), None),
    ("GET", "/namespaces?pageToken=" + _b64([[[[]]]]), None),
    ("GET", "/namespaces/m1/tables?pageToken=" + _b64(None), None),
    ("GET", "/namespaces?pageToken=%25%25", None),
]


def test_malformed_requests_are_400_and_change_nothing(rest_server: RestServer) -> None:
    wh = new_warehouse()
    c = RestCatalog("r", uri=rest_server.url, warehouse=wh)
    c.create_namespace("m1", {"p": "1"})
    t = c.create_table("m1.t", ROWS, properties={"a": "b"})
    failures = []
    for method, path, body in BAD_REQUESTS:
        status, _, out = _call(rest_server.url, method, f"/v1/{wh}{path}", body)
        err = json.loads(out).get("error", {}) if out.startswith(b"{") else {}
        if status != 400 or err.get("type") != "BadRequestException":
            failures.append((method, path, json.dumps(body)[:80], status, out[:120]))
    assert failures == []
    assert c.list_namespaces() == [("m1",)]
    assert c.load_namespace_properties("m1") == {"p": "1"}
    assert c.list_tables("m1") == [("m1", "t")]
    assert c.load_table("m1.t").metadata_location == t.metadata_location
    # a page token the server made is still fine, and a bad one is named
    reply = _call(rest_server.url, "GET", f"/v1/{wh}/namespaces?pageToken=" + _b64([1]))
    assert _error(reply, 400, "BadRequestException") == "invalid pageToken"


def test_a_commit_that_changes_nothing_keeps_the_version(served: BackgroundServer) -> None:
    """A commit whose updates are none, or all already true, answers the current metadata
    without writing a version (Java's ``CatalogHandlers.commit``): the ETag readers cache by
    stays, and the metadata log keeps its real entries."""
    c = RestCatalog("r", uri=served.url)
    c.create_namespace("n")
    c.create_table("n.t", ROWS)
    path = "/v1/namespaces/n/tables/t"
    status, headers, body = _call(served.url, "GET", path)
    before = json.loads(body)
    for updates in (
        [],
        [
            {"action": "set-current-schema", "schema-id": 0},
            {"action": "set-default-spec", "spec-id": 0},
        ],
    ):
        reply = _call(served.url, "POST", path, {"requirements": [], "updates": updates})
        assert reply[0] == 200, reply
        assert json.loads(reply[2])["metadata-location"] == before["metadata-location"]
    status, again, body = _call(served.url, "GET", path)
    assert status == 200 and again["etag"] == headers["etag"]
    assert json.loads(body)["metadata"]["metadata-log"] == []


def test_unpaired_surrogates_are_400_and_pairs_are_text(rest_server: RestServer) -> None:
    """Python's JSON parser accepts an escaped surrogate alone, which nothing can store or
    answer: a 500 (commit state unknown to Java's client) before."""
    wh = new_warehouse()
    c = RestCatalog("r", uri=rest_server.url, warehouse=wh)
    c.create_namespace("s1")
    t = c.create_table("s1.t", ROWS)
    lone = b'{"updates": {"k": "\\ud800"}}'
    reply = _call(rest_server.url, "POST", f"/v1/{wh}/namespaces/s1/properties", raw=lone)
    assert "surrogate" in _error(reply, 400, "BadRequestException")
    commit = b'{"updates": [{"action": "set-properties", "updates": {"k": "\\udfff x"}}]}'
    reply = _call(rest_server.url, "POST", f"/v1/{wh}/namespaces/s1/tables/t", raw=commit)
    assert "surrogate" in _error(reply, 400, "BadRequestException")
    paired = b'{"updates": {"k": "\\ud83d\\ude00"}}'
    status, _, _ = _call(rest_server.url, "POST", f"/v1/{wh}/namespaces/s1/properties", raw=paired)
    assert status == 200 and c.load_namespace_properties("s1") == {"k": "\U0001f600"}
    assert c.load_table("s1.t").metadata_location == t.metadata_location


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "Infinity", "-Infinity"])
def test_numbers_json_cannot_hold_are_400(rest_server: RestServer, number: str) -> None:
    """Python's JSON parser reads ``1e400`` as infinity and takes the bare ``NaN`` and
    ``Infinity`` tokens: a double column's default of one was written into the table's
    metadata, which strict JSON readers cannot parse."""
    wh = new_warehouse()
    c = RestCatalog("r", uri=rest_server.url, warehouse=wh)
    c.create_namespace("s1")
    field = '{"id": 1, "name": "d", "type": "double", "required": false, "initial-default": %s}'
    raw = (
        '{"name": "t", "schema": {"type": "struct", "schema-id": 0, "fields": [%s]}, '
        '"properties": {"format-version": "3"}}' % (field % number)
    ).encode()
    reply = _call(rest_server.url, "POST", f"/v1/{wh}/namespaces/s1/tables", raw=raw)
    assert "JSON cannot" in _error(reply, 400, "BadRequestException")
    assert not c.table_exists("s1.t")
    # a finite default is taken
    ok = raw.replace(number.encode(), b"1.5e300")
    status, _, body = _call(rest_server.url, "POST", f"/v1/{wh}/namespaces/s1/tables", raw=ok)
    assert status == 200, body
    assert c.load_table("s1.t").schema().find_field("d").initial_default == 1.5e300


def test_defaults_json_cannot_hold_are_refused() -> None:
    from icefloe.schema_rules import check_default_value
    from icefloe.types import DoubleType, FloatType, NestedField

    for value in (float("nan"), float("inf"), -float("inf")):
        for t in (DoubleType(), FloatType()):
            with pytest.raises(ValidationError, match="no JSON form"):
                check_default_value(NestedField(1, "d", t, initial_default=value))


# -- routes of the spec the server does not implement ------------------------------------------


UNSUPPORTED = [
    ("GET", "/namespaces/m1/tables/t/plan/p-1"),
    ("DELETE", "/namespaces/m1/tables/t/plan/p-1"),
    ("POST", "/namespaces/m1/tables/t/tasks"),
    ("GET", "/namespaces/m1/functions"),
]


def test_unimplemented_spec_routes_answer_406(
    rest_server: RestServer, rest_auth_server: RestServer
) -> None:
    wh = new_warehouse()
    RestCatalog("r", uri=rest_server.url, warehouse=wh).create_namespace("m1")
    for method, path in UNSUPPORTED:
        reply = _call(rest_server.url, method, f"/v1/{wh}{path}", {} if method == "POST" else None)
        message = _error(reply, 406, "UnsupportedOperationException")
        assert "does not support" in message and path in message
    assert _call(rest_server.url, "HEAD", f"/v1/{wh}/namespaces/m1/tables/t/plan/p")[0] == 406
    assert _call(rest_server.url, "HEAD", f"/v1/{wh}/namespaces/m1/views/v")[0] == 404
    # unknown paths stay 404, a wrong method 405
    _error(_call(rest_server.url, "GET", f"/v1/{wh}/namespaces/m1/nope"), 404, "NotFoundException")
    reply = _call(rest_server.url, "PUT", f"/v1/{wh}/namespaces/m1/views", {})
    _error(reply, 405, "MethodNotAllowedException")
    # auth comes first
    functions = "/v1/namespaces/m1/functions"
    _error(_call(rest_auth_server.url, "GET", functions), 401, "NotAuthorizedException")
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    reply = _call(rest_auth_server.url, "GET", functions, headers=bearer)
    _error(reply, 406, "UnsupportedOperationException")
