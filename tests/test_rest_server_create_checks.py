"""``icefloe serve`` checks a create made of a stage-create and an ``assert-create`` commit (the
path of PyIceberg's ``create_table_transaction`` and DuckDB's CTAS) as it checks a plain
create; it makes the metadata directory of a staged table on a local file system (DuckDB writes
its manifests there before the create commits); it refuses to re-assign a table's UUID; and
its request log writes out control characters of the request path."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit
from urllib.request import url2pathname

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from support.rest import RestServer, new_warehouse, view_body

pytestmark = [pytest.mark.rest]

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "a", "type": "long", "required": False}],
}
BAD_NAMES = ["a%b", "h#t", "y" * 300, "..", "."]

Reply = tuple[int, Any]


def _call(server: RestServer, method: str, path: str, body: object = None) -> Reply:
    req = urllib.request.Request(
        server.url + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            raw = resp.read()
            return int(resp.status), json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return int(exc.code), json.loads(raw) if raw else None


def _error(reply: Reply, status: int = 400) -> tuple[str, str]:
    """The type and message of an IcebergErrorResponse with ``status``."""
    got, body = reply
    assert got == status, reply
    err = body["error"]
    assert err["code"] == status, err
    return err["type"], err["message"]


def _creation_updates(table_uuid: str, *extra: dict[str, Any]) -> list[dict[str, Any]]:
    """What PyIceberg sends with ``assert-create``."""
    return [
        {"action": "assign-uuid", "uuid": table_uuid},
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": SCHEMA},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        *extra,
    ]


def _create_by_commit(
    server: RestServer, base: str, name: str, *extra: dict[str, Any], table_uuid: str = ""
) -> Reply:
    body = {
        "requirements": [{"type": "assert-create"}],
        "updates": _creation_updates(table_uuid or str(uuid.uuid4()), *extra),
    }
    return _call(server, "POST", f"{base}/tables/{quote(name, safe='')}", body)


def _local(location: str) -> Path:
    """The local path of a table location (a plain path or a ``file:`` URI)."""
    return Path(url2pathname(urlsplit(location).path)) if "://" in location else Path(location)


@pytest.fixture
def served(rest_server: RestServer) -> tuple[RestServer, str, str]:
    """The session's server, a fresh warehouse with namespace ``db``, and its ``db`` path."""
    warehouse = new_warehouse()
    RestCatalog("c", uri=rest_server.url, warehouse=warehouse).create_namespace("db")
    return rest_server, warehouse, f"/v1/{warehouse}/namespaces/db"


# -- names ----------------------------------------------------------------------------------------


def test_staged_and_commit_creates_refuse_the_names_a_plain_create_refuses(
    served: tuple[RestServer, str, str],
) -> None:
    server, warehouse, base = served
    for name in BAD_NAMES:
        plain = _error(_call(server, "POST", f"{base}/tables", {"name": name, "schema": SCHEMA}))
        assert plain[0] == "BadRequestException" and "invalid table name" in plain[1], plain
        staged = {"name": name, "schema": SCHEMA, "stage-create": True}
        assert _error(_call(server, "POST", f"{base}/tables", staged)) == plain, name
        assert _error(_create_by_commit(server, base, name)) == plain, name
    assert _call(server, "GET", f"{base}/tables")[1]["identifiers"] == []
    # nothing was written at the warehouse root (where table '..' of 'db' would live) nor in
    # the namespace's directory (table '.')
    wh_root = server.base / "warehouse" / warehouse
    assert not (wh_root / "metadata").exists()
    assert not (wh_root / "db" / "metadata").exists()


def test_pyiceberg_create_table_transaction_refuses_bad_names(
    served: tuple[RestServer, str, str],
) -> None:
    from pyiceberg.catalog.rest import RestCatalog as PyRestCatalog
    from pyiceberg.exceptions import BadRequestError

    server, warehouse, _ = served
    py = PyRestCatalog("py", uri=server.url, warehouse=warehouse)
    schema = pa.schema([("id", pa.int64())])
    for name in ["a%b", "h#t", "y" * 300]:
        with pytest.raises(BadRequestError, match="invalid table name"):
            py.create_table_transaction(("db", name), schema).commit_transaction()
    assert py.list_tables("db") == []
    # a good name still goes through the same path
    with py.create_table_transaction(("db", "ok"), schema) as tx:
        tx.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    ours = RestCatalog("c", uri=server.url, warehouse=warehouse)
    assert sorted(ours.load_table("db.ok").scan().to_arrow()["id"].to_pylist()) == [1, 2]


# -- locations ------------------------------------------------------------------------------------


def test_create_by_commit_stores_locations_as_a_plain_create_does(
    served: tuple[RestServer, str, str],
) -> None:
    """Relative data and metadata paths are resolved under the table location, and ``..`` in
    them is refused, as for a plain create. A relative table location is refused by every kind
    of create: the server would resolve it against its own working directory."""
    server, _, base = served
    sub = server.base / f"rel-{uuid.uuid4().hex[:8]}"
    ok, body = _create_by_commit(
        server,
        base,
        "rel",
        {"action": "set-location", "location": f"{sub}/x/../commit"},
        {"action": "set-properties", "updates": {"write.data.path": "d2"}},
    )
    assert ok == 200, body
    location = body["metadata"]["location"]
    assert location == str(sub / "commit")
    assert body["metadata"]["properties"]["write.data.path"] == f"{location}/d2"
    assert body["metadata-location"].startswith(f"{location}/metadata/")
    assert _local(body["metadata-location"]).is_file()
    relative = f"rel-{uuid.uuid4().hex[:8]}"
    kind, message = _error(
        _create_by_commit(
            server, base, "relc", {"action": "set-location", "location": f"{relative}/c"}
        )
    )
    assert kind == "BadRequestException" and "relative path" in message
    for name, extra in [("p", {}), ("s", {"stage-create": True})]:
        body = {"name": name, "schema": SCHEMA, "location": f"{relative}/{name}", **extra}
        kind, message = _error(_call(server, "POST", f"{base}/tables", body))
        assert kind == "BadRequestException" and "relative path" in message
        assert _call(server, "HEAD", f"{base}/tables/{name}")[0] == 404
    assert _call(server, "HEAD", f"{base}/tables/relc")[0] == 404
    assert not (server.base / relative).exists()
    escape = {"action": "set-properties", "updates": {"write.data.path": "../../elsewhere"}}
    kind, message = _error(_create_by_commit(server, base, "esc", escape))
    assert kind == "BadRequestException" and "write.data.path" in message
    assert _call(server, "HEAD", f"{base}/tables/esc")[0] == 404


def test_stage_create_makes_the_metadata_directory_on_a_local_file_system(
    served: tuple[RestServer, str, str],
) -> None:
    server, _, base = served
    status, body = _call(
        server, "POST", f"{base}/tables", {"name": "st", "schema": SCHEMA, "stage-create": True}
    )
    assert status == 200 and body["metadata-location"] is None
    table_dir = _local(body["metadata"]["location"])
    assert (table_dir / "metadata").is_dir()
    assert _call(server, "HEAD", f"{base}/tables/st")[0] == 404  # still only staged
    # an object store has no directories: nothing is made there (nor contacted)
    s3 = {
        "name": "s3",
        "schema": SCHEMA,
        "stage-create": True,
        "location": "s3://no-such-bucket-icefloe/t",
    }
    status, body = _call(server, "POST", f"{base}/tables", s3)
    assert status == 200 and body["metadata"]["location"] == "s3://no-such-bucket-icefloe/t"


def test_duckdb_ctas_through_the_server_on_a_local_warehouse(
    served: tuple[RestServer, str, str],
) -> None:
    from support.peers import duckdb_connect, duckdb_extension_path

    server, warehouse, _ = served
    con = duckdb_connect()  # avro and iceberg loaded by path, autoinstall/autoload off
    con.execute(f"LOAD '{duckdb_extension_path('httpfs')}'")
    con.execute(
        f"ATTACH '{warehouse}' AS ice "
        f"(TYPE iceberg, ENDPOINT '{server.url}', AUTHORIZATION_TYPE 'none')"
    )
    con.execute("CREATE TABLE ice.db.ctas AS SELECT range AS x FROM range(3)")
    con.execute("BEGIN")
    con.execute("CREATE TABLE ice.db.tx (x INTEGER)")
    con.execute("INSERT INTO ice.db.tx VALUES (7), (8)")
    con.execute("COMMIT")
    con.close()
    ours = RestCatalog("c", uri=server.url, warehouse=warehouse)
    assert sorted(ours.load_table("db.ctas").scan().to_arrow()["x"].to_pylist()) == [0, 1, 2]
    assert sorted(ours.load_table("db.tx").scan().to_arrow()["x"].to_pylist()) == [7, 8]


# -- table UUIDs ----------------------------------------------------------------------------------


def _assign(server: RestServer, base: str, name: str, value: str) -> Reply:
    body = {"requirements": [], "updates": [{"action": "assign-uuid", "uuid": value}]}
    return _call(server, "POST", f"{base}/tables/{name}", body)


def test_a_table_uuid_cannot_be_reassigned(served: tuple[RestServer, str, str]) -> None:
    from pyiceberg.catalog.rest import RestCatalog as PyRestCatalog

    server, warehouse, base = served
    ours = RestCatalog("c", uri=server.url, warehouse=warehouse)
    t = ours.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    own = t.metadata.table_uuid
    before = ours.load_table("db.t").metadata_location
    for value in (str(uuid.uuid4()), "not-a-uuid", "", own.replace("-", ""), f"{{{own}}}"):
        kind, message = _error(_assign(server, base, "t", value))
        assert kind == "BadRequestException", message
        assert re.search(r"not a UUID|reassign", message), message
    assert ours.load_table("db.t").metadata_location == before
    # the table's own UUID: a no-op that succeeds
    status, body = _assign(server, base, "t", own)
    assert status == 200 and body["metadata"]["table-uuid"] == own
    # in a multi-table commit too
    ours.create_table("db.u", pa.schema([("id", pa.int64())]))
    changes = {
        "table-changes": [
            {
                "identifier": {"namespace": ["db"], "name": "u"},
                "requirements": [],
                "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
            },
            {
                "identifier": {"namespace": ["db"], "name": "t"},
                "requirements": [],
                "updates": [{"action": "assign-uuid", "uuid": str(uuid.uuid4())}],
            },
        ]
    }
    _error(_call(server, "POST", f"/v1/{warehouse}/transactions/commit", changes))
    assert "k" not in ours.load_table("db.u").metadata.properties  # all or nothing
    # the handle loaded before still appends, and PyIceberg still loads the table
    t.append(pa.table({"id": pa.array([2], pa.int64())}))
    py = PyRestCatalog("py", uri=server.url, warehouse=warehouse)
    loaded = py.load_table(("db", "t"))
    assert str(loaded.metadata.table_uuid) == own
    assert sorted(loaded.scan().to_arrow()["id"].to_pylist()) == [1, 2]


def test_a_create_commit_takes_one_valid_uuid(served: tuple[RestServer, str, str]) -> None:
    server, _, base = served
    kind, message = _error(_create_by_commit(server, base, "n", table_uuid="not-a-uuid"))
    assert kind == "BadRequestException" and "not a UUID" in message
    second = {"action": "assign-uuid", "uuid": str(uuid.uuid4())}
    assert "reassign" in _error(_create_by_commit(server, base, "n", second))[1]
    assert _call(server, "HEAD", f"{base}/tables/n")[0] == 404
    same = str(uuid.uuid4())
    status, body = _create_by_commit(
        server, base, "n", {"action": "assign-uuid", "uuid": same}, table_uuid=same
    )
    assert status == 200 and body["metadata"]["table-uuid"] == same


def test_an_upgrade_to_an_unknown_format_version_is_a_bad_request(
    served: tuple[RestServer, str, str],
) -> None:
    """As Iceberg Java's server: 400, not 406 (which says the server lacks a feature)."""
    server, warehouse, base = served
    RestCatalog("c", uri=server.url, warehouse=warehouse).create_table(
        "db.t", pa.schema([("id", pa.int64())])
    )
    body = {
        "requirements": [],
        "updates": [{"action": "upgrade-format-version", "format-version": 99}],
    }
    kind, message = _error(_call(server, "POST", f"{base}/tables/t", body))
    assert kind == "BadRequestException" and "unsupported format version: v99" in message


# -- the request log ------------------------------------------------------------------------------


def test_the_request_log_writes_out_control_characters(rest_server: RestServer) -> None:
    marker = uuid.uuid4().hex[:10]
    path = f"/v1/{new_warehouse()}/namespaces/a{marker}%1B%5B31mRED%0Afake%09line%7F"
    assert _error(_call(rest_server, "GET", path), 404)[0] == "NoSuchNamespaceException"
    lines = [line for line in rest_server.log_text().splitlines() if marker in line]
    assert len(lines) == 1, lines
    assert f'a{marker}\\x1b[31mRED\\nfake\\tline\\x7f" 404' in lines[0]
    assert not re.search(r"[\x00-\x1f\x7f]", lines[0])
    assert not any(line.startswith("fake") for line in rest_server.log_text().splitlines())


def test_registers_and_views_refuse_relative_locations(
    served: tuple[RestServer, str, str],
) -> None:
    """A relative metadata file to register or view location names a path in the server's
    working directory, not the client's: refused, nothing created."""
    server, _, base = served
    for route in ("register", "register-view"):
        body = {"name": "r", "metadata-location": "metadata/00000-x.metadata.json"}
        kind, message = _error(_call(server, "POST", f"{base}/{route}", body))
        assert kind == "BadRequestException" and "relative path" in message, route
    view = view_body("v", ["db"], location="views/v")
    kind, message = _error(_call(server, "POST", f"{base}/views", view))
    assert kind == "BadRequestException" and "relative path" in message
    assert _call(server, "HEAD", f"{base}/views/v")[0] == 404
    assert _call(server, "HEAD", f"{base}/tables/r")[0] == 404
