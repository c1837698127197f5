"""``icefloe serve`` refuses what a web page can make a browser send: a page the user visits
must neither change nor read a catalog served without auth on their machine (a POST of
``text/plain`` JSON needs no CORS preflight; a page rebinding its DNS name to the server's
address reads same-origin). API clients send no ``Origin`` nor ``Sec-Fetch-Site``."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from support.rest import RestServer, new_warehouse

pytestmark = pytest.mark.rest


def _call(
    server: RestServer, method: str, path: str, body: object, headers: Mapping[str, str]
) -> tuple[int, dict[str, object]]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            raw = resp.read()
            return int(resp.status), json.loads(raw) if raw else {}
    except urllib.error.HTTPError as exc:
        return int(exc.code), json.loads(exc.read())


def test_web_pages_cannot_change_or_read_the_catalog(rest_server: RestServer) -> None:
    warehouse = new_warehouse()
    cat = RestCatalog("c", uri=rest_server.url, warehouse=warehouse)
    cat.create_namespace("sales")
    t = cat.create_table("sales.orders", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1, 2, 3]}))
    rename = {
        "source": {"namespace": ["sales"], "name": "orders"},
        "destination": {"namespace": ["sales"], "name": "gone"},
    }
    path = f"/v1/{warehouse}/tables/rename"
    page = "https://evil.example"
    forged = [
        # a cross-site form or fetch: no preflight for text/plain
        {"Content-Type": "text/plain;charset=UTF-8", "Origin": page},
        # a page whose DNS name now points here: same-origin JSON
        {"Content-Type": "application/json", "Origin": "http://rebound.example:8181"},
        {"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin"},
    ]
    for headers in forged:
        status, body = _call(rest_server, "POST", path, rename, headers)
        assert status == 403, (headers, body)
        assert body["error"]["type"] == "ForbiddenException"  # type: ignore[index]
    # a body that is not declared JSON, even without browser headers
    status, body = _call(rest_server, "POST", path, rename, {"Content-Type": "text/plain"})
    assert status == 415 and "application/json" in str(body), body
    # reads too: the page would see the table's metadata (and any vended credentials)
    table_path = f"/v1/{warehouse}/namespaces/sales/tables/orders"
    status, _ = _call(rest_server, "GET", table_path, None, {"Sec-Fetch-Site": "same-origin"})
    assert status == 403
    # a URL typed into the address bar is served, and API clients are untouched
    status, loaded = _call(rest_server, "GET", table_path, None, {"Sec-Fetch-Site": "none"})
    assert status == 200 and "metadata" in loaded
    assert cat.load_table("sales.orders").scan().to_arrow().num_rows == 3
    assert cat.list_tables("sales") == [("sales", "orders")]
    assert "403" in rest_server.log_text() and "415" in rest_server.log_text()


def test_api_clients_with_a_second_content_type_are_served() -> None:
    """Older DuckDB httpfs sends an octet-stream Content-Type after the iceberg extension's
    JSON one; the token endpoint takes its form with or without a trailing slash."""
    from icefloe.rest.browsers import browser_refusal

    def scope(path: str, *types: bytes) -> dict[str, object]:
        headers = [(b"content-type", t) for t in types]
        return {"type": "http", "method": "POST", "path": path, "headers": headers}

    json_then_bytes = scope("/v1/namespaces", b"application/json", b"application/octet-stream")
    assert browser_refusal(json_then_bytes) is None
    refused = browser_refusal(scope("/v1/namespaces", b"text/plain", b"text/plain"))
    assert refused is not None and refused[0] == 415
    form = b"application/x-www-form-urlencoded"
    assert browser_refusal(scope("/v1/oauth/tokens/", form)) is None


def test_a_rebound_host_name_is_refused_on_a_loopback_server(rest_server: RestServer) -> None:
    """A page whose DNS name now points at 127.0.0.1 names itself in ``Host``; browsers that
    send neither ``Origin`` nor ``Sec-Fetch-Site`` on same-origin reads (Safari before 16.4)
    are refused by that. Loopback names and addresses are served."""
    warehouse = new_warehouse()
    RestCatalog("c", uri=rest_server.url, warehouse=warehouse).create_namespace("ns")
    path = f"/v1/{warehouse}/namespaces"
    port = rest_server.url.rsplit(":", 1)[1].split("/")[0]
    for host in ("rebound.example", f"rebound.example:{port}", "10.0.0.7", "127.0.0.1.nip.io"):
        status, body = _call(rest_server, "GET", path, None, {"Host": host})
        assert status == 403, (host, body)
        assert "does not answer to the name" in body["error"]["message"]  # type: ignore[index]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "127.0.0.2", f"[::1]:{port}"):
        status, body = _call(rest_server, "GET", path, None, {"Host": host})
        assert status == 200 and body["namespaces"] == [["ns"]], (host, body)


def test_allowed_host_names() -> None:
    from icefloe.rest.browsers import allowed_hosts_for, browser_refusal, host_name

    def refused(host: bytes, allowed: frozenset[str] | None) -> bool:
        scope = {"type": "http", "method": "GET", "path": "/v1/config", "headers": []}
        scope["headers"] = [(b"host", host)]
        return browser_refusal(scope, allowed) is not None

    assert host_name("[::1]:8181") == "::1" and host_name("Example.COM.:80") == "example.com"
    loopback = allowed_hosts_for("127.0.0.1", ["catalog.internal"])
    assert loopback is not None
    assert not refused(b"catalog.internal:443", loopback) and not refused(b"localhost", loopback)
    assert refused(b"other.internal", loopback)
    assert allowed_hosts_for("0.0.0.0") is None  # any name, as before
    assert not refused(b"anything.example", None)
    named = allowed_hosts_for("0.0.0.0", ["catalog.internal"])
    assert named is not None and refused(b"anything.example", named)
    assert not refused(b"catalog.internal", named) and refused(b"localhost", named)
