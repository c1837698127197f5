"""icefloe's REST client against Iceberg Java's own REST server (``RESTCatalogAdapter`` over a
``JdbcCatalog`` on SQLite; see ``java_rest_server`` in tests/support/rest.py): namespaces, tables,
commits, rename, register, purge, a multi-table commit, concurrent committers and views."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import date, datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.exceptions import (
    CommitFailedError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
    ValidationError,
    ViewAlreadyExistsError,
)
from icefloe.types import LongType
from support.rest import RestServer

pytestmark = [pytest.mark.rest, pytest.mark.interop]

ROWS = pa.schema([pa.field("id", pa.int64())])


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def _ns() -> str:
    return f"n{uuid.uuid4().hex[:8]}"


def _ids(c: RestCatalog, name: str) -> list[int]:
    return sorted(c.load_table(name).scan().to_arrow()["id"].to_pylist())


def test_namespaces_tables_commits(java_rest_server: RestServer) -> None:
    c = RestCatalog("j", uri=java_rest_server.url)
    ns = _ns()
    c.create_namespace(ns, {"owner": "me"})
    c.create_namespace((ns, "child"))
    with pytest.raises(NamespaceAlreadyExistsError):
        c.create_namespace(ns)
    assert (ns,) in c.list_namespaces()
    assert c.list_namespaces(ns) == [(ns, "child")]
    assert c.load_namespace_properties(ns)["owner"] == "me"
    summary = c.update_namespace_properties(ns, removals={"owner"}, updates={"k": "v"})
    assert summary.removed == ["owner"] and summary.updated == ["k"]
    t = c.create_table(f"{ns}.t", ROWS, properties={"format-version": "3"})
    assert t.format_version == 3
    t.append(_rows([1, 2]))
    t.append(_rows([3]))
    assert _ids(c, f"{ns}.t") == [1, 2, 3]
    # Java parses each report strictly (a malformed one is a 400, counted as failed): two
    # commit reports and the scan report of the read
    assert c.flush_reports()  # reports go out from a background thread
    assert c.metrics_reports_sent == 3 and c.metrics_reports_failed == 0
    bad = urllib.request.Request(
        f"{java_rest_server.url}/v1/namespaces/{ns}/tables/t/metrics",
        data=b'{"report-type": "commit-report", "table-name": "t"}',
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(bad)
    assert refused.value.code >= 400  # the oracle is strict: an incomplete report is refused
    t.update_schema().add_column("extra", LongType()).commit()
    assert [f.name for f in c.load_table(f"{ns}.t").schema().fields] == ["id", "extra"]
    assert c.table_exists(f"{ns}.t") and not c.table_exists(f"{ns}.nope")
    with pytest.raises(NamespaceNotEmptyError):
        c.drop_namespace(ns)
    renamed = c.rename_table(f"{ns}.t", f"{ns}.child.r")
    assert renamed.identifier == (ns, "child", "r")
    assert _ids(c, f"{ns}.child.r") == [1, 2, 3]
    reg = c.register_table(f"{ns}.copy", renamed.metadata_location)
    assert reg.metadata.table_uuid == renamed.metadata.table_uuid
    with pytest.raises(TableAlreadyExistsError):
        c.register_table(f"{ns}.copy", renamed.metadata_location)
    c.drop_table(f"{ns}.copy")
    location = Path(renamed.location.removeprefix("file:"))
    assert location.exists()
    c.drop_table(f"{ns}.child.r", purge=True)
    with pytest.raises(NoSuchTableError):
        c.load_table(f"{ns}.child.r")
    # a staged create: nothing exists until the commit, which carries the first append
    tx = c.create_table_transaction(f"{ns}.staged", ROWS)
    tx.append(_rows([7]))
    assert not c.table_exists(f"{ns}.staged")
    tx.commit_transaction()
    assert _ids(c, f"{ns}.staged") == [7]
    # with no other change, the commit still creates the table (as Java's own staged create)
    bare = c.create_table_transaction(f"{ns}.bare", ROWS).commit_transaction()
    assert c.load_table(f"{ns}.bare").metadata_location == bare.metadata_location


def test_names_java_would_take_are_refused_before_any_request(
    java_rest_server: RestServer,
) -> None:
    """Java's server takes ``..`` (a table at the warehouse root), ``a/b`` (a table nothing can
    load) and control characters: the client refuses new names as every catalog does."""
    c = RestCatalog("j", uri=java_rest_server.url)
    ns = _ns()
    c.create_namespace(ns)
    c.create_table((ns, "t"), ROWS)
    metadata = c.load_table((ns, "t")).metadata_location
    for bad in ["..", "a/b", "a\x01b", "x" * 300]:
        with pytest.raises(ValidationError, match="invalid table name"):
            c.create_table((ns, bad), ROWS)
        with pytest.raises(ValidationError, match="invalid table name"):
            c.create_table_transaction((ns, bad), ROWS)
        with pytest.raises(ValidationError, match="invalid table name"):
            c.register_table((ns, bad), metadata)
        with pytest.raises(ValidationError, match="invalid table name"):
            c.rename_table((ns, "t"), (ns, bad))
        with pytest.raises(ValidationError, match="invalid namespace level"):
            c.create_namespace((ns, bad))
    assert c.list_tables(ns) == [(ns, "t")]
    assert c.list_namespaces(ns) == []


def test_scan_reports_parse_in_java(java_rest_server: RestServer) -> None:
    """Scan reports of filters of every kind pass Iceberg Java's strict ScanReport parser."""
    c = RestCatalog("j", uri=java_rest_server.url)
    ns = _ns()
    c.create_namespace(ns)
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("s", pa.string()),
            pa.field("d", pa.date32()),
            pa.field("x", pa.float64()),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
        ]
    )
    t = c.create_table(f"{ns}.t", schema)
    row = pa.table(
        {
            "id": [1],
            "s": ["a"],
            "d": [date(2024, 1, 2)],
            "x": [1.5],
            "ts": [datetime(2024, 1, 2, tzinfo=timezone.utc)],
        },
        schema=schema,
    )
    t.append(row)
    filters = [
        "id in (1, 2, 3) and s is not null",
        "not (s like 'ab%') or x is nan",
        "d >= '2024-01-01' and ts < '2025-01-01T00:00:00+00:00' and id not in (7, 8)",
        "s != 'secret' or id <= 10",
    ]
    for text in filters:
        c.load_table(f"{ns}.t").scan(row_filter=text, selected_fields=("id", "s")).plan_files()
    c.load_table(f"{ns}.t").scan().to_arrow()
    assert c.flush_reports()
    assert c.metrics_reports_failed == 0
    assert c.metrics_reports_sent == 1 + len(filters) + 1  # the append's commit report too
    # the oracle is strict: a filter it cannot parse is refused
    from icefloe.catalog.rest.metrics import scan_report
    from icefloe.expressions import parse
    from icefloe.scan.metrics import ScanReport

    good = scan_report(f"{ns}.t", ScanReport(1, 0, parse("id = 1"), (1,), ("id",), 5, {}))

    def post(body: dict) -> int:
        req = urllib.request.Request(
            f"{java_rest_server.url}/v1/namespaces/{ns}/tables/t/metrics",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    assert post(good) == 204
    assert post({**good, "filter": {"type": "bogus"}}) >= 400
    assert post({**good, "projected-field-ids": None}) >= 400


def test_multi_table_commit(java_rest_server: RestServer) -> None:
    c = RestCatalog("j", uri=java_rest_server.url)
    ns = _ns()
    c.create_namespace(ns)
    c.create_table(f"{ns}.a", ROWS)
    c.create_table(f"{ns}.b", ROWS)
    with c.transaction() as tx:
        tx.table(f"{ns}.a").append(_rows([1]))
        tx.table(f"{ns}.b").append(_rows([2]))
    assert _ids(c, f"{ns}.a") == [1] and _ids(c, f"{ns}.b") == [2]
    tx = c.transaction()
    tx.table(f"{ns}.a").append(_rows([3]))
    tx.table(f"{ns}.b").update_schema().add_column("x", LongType()).commit()
    c.load_table(f"{ns}.b").update_schema().add_column("y", LongType()).commit()
    with pytest.raises(CommitFailedError):
        tx.commit()
    assert _ids(c, f"{ns}.a") == [1]  # all or nothing


def test_concurrent_committers(java_rest_server: RestServer) -> None:
    c = RestCatalog("j", uri=java_rest_server.url)
    ns = _ns()
    c.create_namespace(ns)
    c.create_table(
        f"{ns}.t",
        ROWS,
        properties={"commit.retry.min-wait-ms": "5", "commit.retry.max-wait-ms": "100"},
    )
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        w = RestCatalog(f"w{k}", uri=java_rest_server.url)
        try:
            for j in range(5):
                w.load_table(f"{ns}.t").append(_rows([k * 100 + j]))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert _ids(c, f"{ns}.t") == sorted(k * 100 + j for k in range(4) for j in range(5))
    assert len(c.load_table(f"{ns}.t").snapshots()) == 20


def test_views_against_javas_server(java_rest_server: RestServer) -> None:
    """icefloe's REST client on Iceberg Java's server: a view Java's server stores from a raw
    request is loaded; icefloe creates, replaces (the server applies the updates with Java's
    rules), changes properties, renames, registers and drops views."""
    c = RestCatalog("j", uri=java_rest_server.url)
    ns = _ns()
    c.create_namespace(ns)
    view = {
        "name": "v",
        "schema": {
            "type": "struct",
            "schema-id": 0,
            "fields": [{"id": 1, "name": "one", "required": False, "type": "int"}],
        },
        "view-version": {
            "version-id": 1,
            "timestamp-ms": int(time.time() * 1000),
            "schema-id": 0,
            "summary": {"engine-name": "test"},
            "representations": [{"type": "sql", "sql": "SELECT 1 AS one", "dialect": "spark"}],
            "default-namespace": [ns],
        },
        "properties": {},
    }
    req = urllib.request.Request(
        f"{java_rest_server.url}/v1/namespaces/{ns}/views",
        data=json.dumps(view).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 200
    assert c.list_views(ns) == [(ns, "v")]
    loaded = c.load_view(f"{ns}.v")
    assert loaded.sql("spark") == "SELECT 1 AS one" and loaded.metadata_location
    assert c.view_exists(f"{ns}.v")
    # icefloe's own view, replaced with a second dialect, then given properties
    schema = pa.schema([pa.field("two", pa.int32())])
    made = c.create_view(f"{ns}.w", "SELECT 2 AS two", schema, dialect="spark")
    assert made.current_version.version_id == 1 and made.schema.fields[0].name == "two"
    queries = {"spark": "SELECT 2 AS two", "trino": "SELECT 2 AS two"}
    replaced = c.replace_view(f"{ns}.w", queries, schema)
    assert replaced.dialects == ["spark", "trino"]
    assert [v.version_id for v in replaced.versions] == [1, 2]
    assert [e.version_id for e in replaced.history] == [1, 2]
    with pytest.raises(ValidationError, match="lose the dialects"):
        c.replace_view(f"{ns}.w", "SELECT 3 AS two", schema, dialect="spark")
    # kept when dropped (Java's server deletes a dropped view's metadata file otherwise)
    kept = replaced.update_properties({"k": "v", "gc.enabled": "false"})
    assert kept.properties["k"] == "v"
    with pytest.raises(ViewAlreadyExistsError):
        c.create_view(f"{ns}.w", "SELECT 1", schema, dialect="spark")
    moved = c.rename_view(f"{ns}.w", f"{ns}.x")
    assert moved.metadata.view_uuid == replaced.metadata.view_uuid
    c.drop_view(f"{ns}.x")
    back = c.register_view(f"{ns}.y", moved.metadata_location)
    assert back.sql("trino") == "SELECT 2 AS two"
    for name in ("v", "y"):
        c.drop_view(f"{ns}.{name}")
    assert not c.view_exists(f"{ns}.v") and c.list_views(ns) == []
    with pytest.raises(NoSuchViewError):
        c.drop_view(f"{ns}.v")
