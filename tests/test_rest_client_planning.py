"""icefloe's REST client with scans planned by the server (``scan-planning-mode=server``):
against ``icefloe serve`` (plans completed at once) and Iceberg Java's REST server (plans
submitted, polled, and delivered in plan tasks of ten files), the rows read equal those the
client's own planning reads."""

from __future__ import annotations

import datetime
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe import rest
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest import config as ep
from icefloe.catalog.rest.scan_planning import without_spatial
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import (
    IcebergError,
    ScanPlanningError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.expressions import BoundingBox, col, st_disjoint, st_intersects
from icefloe.expressions.base import (
    AlwaysTrue,
    And,
    BoundPredicate,
    BoundReference,
    Not,
    Op,
    Or,
)
from icefloe.schema import Schema
from icefloe.types import GeometryType, LongType, NestedField
from support.rest import RestServer

pytestmark = pytest.mark.rest

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("d", pa.date32()),
        pa.field("s", pa.string()),
    ]
)


def _rows(ids: range) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "d": pa.array([datetime.date(2024, 3, 1 + i % 4) for i in ids], pa.date32()),
            "s": [f"s{i % 13}" for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.fixture
def backing(tmp_path: Path) -> Iterator[SqlCatalog]:
    pytest.importorskip("uvicorn", reason="icefloe serve needs the 'server' extra")
    cat = SqlCatalog("b", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    yield cat
    cat.close()


def _history(c: RestCatalog, version: int) -> Any:
    """A partitioned table with three appends, deletes of every kind its version writes, a
    tag on the first snapshot and a branch."""
    c.create_namespace("db")
    props = {"format-version": str(version), "write.delete.mode": "merge-on-read"}
    t = c.create_table("db.t", pa.schema(SCHEMA), properties=props)
    t.update_spec().add_field("d", "day").add_field("id", "bucket[4]").commit()
    t = c.load_table("db.t")
    t.append(_rows(range(0, 300)))
    t.manage_snapshots().create_tag("first", t.current_snapshot().snapshot_id).commit()
    t.append(_rows(range(300, 400)))
    t.delete("id in (5, 6, 7, 150, 301)")  # DVs (v3) or position deletes (v2)
    if version == 2:
        t.delete_by_keys(pa.table({"id": pa.array([10, 11, 320], pa.int64())}), ["id"])
    t.manage_snapshots().create_branch("side", t.current_snapshot().snapshot_id).commit()
    t.append(_rows(range(400, 420)))
    return c.load_table("db.t")


QUERIES: list[dict[str, Any]] = [
    {},
    {"row_filter": "id >= 100 and s != 's3'"},
    {"row_filter": "d = '2024-03-02'", "selected_fields": ("id", "s")},
    {"row_filter": "s in ('s1', 's2') or id < 20"},
    {"snapshot_id": "FIRST"},
    {"ref": "first", "row_filter": "id < 50"},
    {"ref": "side"},
]


def _ids(scan: Any) -> list[int]:
    return sorted(scan.to_arrow()["id"].to_pylist())


@pytest.mark.parametrize("version", [2, 3])
def test_scans_planned_by_icefloe_serve_read_what_local_planning_reads(
    backing: SqlCatalog, version: int
) -> None:
    with rest.start(backing) as server:
        local = RestCatalog("local", uri=server.url)
        remote = RestCatalog("remote", uri=server.url, **{"scan-planning-mode": "server"})
        t = _history(local, version)
        first = t.snapshots()[0].snapshot_id
        rt = remote.load_table("db.t")
        for q in QUERIES:
            kwargs = {k: (first if v == "FIRST" else v) for k, v in q.items()}
            want, scan = t.scan(**kwargs), rt.scan(**kwargs)
            assert scan.server_plan() is not None and want.server_plan() is None
            assert _ids(scan) == _ids(want) and _ids(want), q
            assert scan.count() == want.count()
            got = pa.Table.from_batches(list(scan.to_batches()))
            assert sorted(got["id"].to_pylist()) == _ids(want)
        # a small split size splits the server's files into byte ranges; the rows stay
        split = rt.scan(options={"read.split.target-size": "600"})
        assert len(split.plan_tasks()) > len(split.plan_files())
        assert _ids(split) == _ids(t.scan())
        # the columnar plan is the client's own
        with pytest.raises(UnsupportedFeatureError, match="planned by its catalog's server"):
            rt.scan().plan()
        with pytest.raises(UnsupportedFeatureError, match="planned by its catalog's server"):
            rt.scan().plan_table()
        # incremental reads are planned here
        inc = rt.incremental_append_scan(first)
        assert inc.server_plan() is None and len(inc.to_arrow()) == 120


def test_the_servers_table_config_decides(backing: SqlCatalog) -> None:
    """``scan-planning-mode`` in a table's load config wins over the catalog property."""
    with rest.start(backing, table_config={"scan-planning-mode": "server"}) as server:
        c = RestCatalog("plain", uri=server.url)
        t = _history(c, 3)
        assert t.scan().server_plan() is not None
        assert _ids(t.scan(row_filter="id < 30")) == [i for i in range(30) if i not in (5, 6, 7)]
    with rest.start(backing, table_config={"scan-planning-mode": "client"}) as server:
        c = RestCatalog("asks", uri=server.url, **{"scan-planning-mode": "server"})
        assert c.load_table("db.t").scan().server_plan() is None
    with rest.start(backing, table_config={"scan-planning-mode": "sometimes"}) as server:
        c = RestCatalog("bad", uri=server.url)
        with pytest.raises(ValidationError, match="'client' or 'server'"):
            c.load_table("db.t")


def test_nan_partitions_and_inherited_sequence_numbers(backing: SqlCatalog) -> None:
    """A NaN partition value travels as ``"NaN"``; a scan reading
    ``_last_updated_sequence_number`` (inherited from the data file's sequence number, which
    the protocol's content files do not carry) is planned by the client, with the values a
    local plan gives."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("f", pa.float64())])
    with rest.start(backing) as server:
        c = RestCatalog("r", uri=server.url, **{"scan-planning-mode": "server"})
        c.create_namespace("db")
        t = c.create_table("db.t", schema, format_version=3)
        with t.update_spec() as u:
            u.add_field("f", "identity")
        t.append(pa.table({"id": [1, 2, 3], "f": [float("nan"), 1.0, float("inf")]}, schema))
        t.append(pa.table({"id": [4], "f": [float("nan")]}, schema))
        scan = t.scan(row_filter="id > 0")
        assert scan.server_plan() is not None
        assert sorted(scan.to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]
        nan_files = [
            f for f in scan.plan_files() if f.data_file.partition[0] != f.data_file.partition[0]
        ]
        assert len(nan_files) == 2
        cols = ("id", "_row_id", "_last_updated_sequence_number")
        lineage = t.scan(selected_fields=cols)
        assert lineage.server_plan() is None
        got = lineage.to_arrow().sort_by("id").to_pylist()
        seqs = [r["_last_updated_sequence_number"] for r in got]
        assert seqs == [1, 1, 1, 2] and [r["_row_id"] for r in got] == [0, 1, 2, 3]


def test_a_server_without_planning_is_refused_clearly(backing: SqlCatalog) -> None:
    with rest.start(backing) as server:
        c = RestCatalog("r", uri=server.url, **{"scan-planning-mode": "server"})
        c.create_namespace("db")
        t = c.create_table("db.t", pa.schema(SCHEMA))
        t.append(_rows(range(3)))
        c.endpoints = c.endpoints - {ep.PLAN_TABLE_SCAN}
        with pytest.raises(UnsupportedFeatureError, match="does not offer"):
            c.load_table("db.t").scan().to_arrow()
        with pytest.raises(ValidationError, match="'client' or 'server'"):
            RestCatalog("x", uri=server.url, **{"scan-planning-mode": "maybe"}).load_table(
                "db.t"
            ).scan().to_arrow()


SPATIAL_QUERIES = [
    st_intersects("g", (0, 0, 10, 10)),
    And(st_intersects("g", (0, 0, 10, 10)), col("id") > 0),
    Or(st_disjoint("g", (0, 0, 10, 10)), col("id") == 1),
    Not(And(st_intersects("g", (40, 40, 60, 60)), col("id") < 3)),
]


def test_spatial_filters_are_planned_without_their_spatial_part(backing: SqlCatalog) -> None:
    """The REST expression JSON has no spatial predicates: the server plans the rest of the
    filter and the client applies the whole filter to the rows."""
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "g", GeometryType()))

    def rows(points: list[tuple[int, float]]) -> pa.Table:
        wkb = [struct.pack("<BIdd", 1, 1, x, x) for _, x in points]
        ids = pa.array([i for i, _ in points], pa.int64())
        return pa.table({"id": ids, "g": pa.array(wkb, pa.binary())})

    with rest.start(backing) as server:
        local = RestCatalog("local", uri=server.url)
        local.create_namespace("db")
        t = local.create_table("db.t", schema, format_version=3)
        t.append(rows([(0, 1.0), (1, 50.0)]))
        t.append(rows([(2, 5.0), (3, 55.0)]))
        rt = RestCatalog("remote", uri=server.url, **{"scan-planning-mode": "server"})
        rt_table = rt.load_table("db.t")
        for q in SPATIAL_QUERIES:
            scan = rt_table.scan(row_filter=q)
            assert scan.server_plan() is not None
            assert _ids(scan) == _ids(t.scan(row_filter=q)), q
        assert _ids(rt_table.scan(row_filter=SPATIAL_QUERIES[1])) == [2]
    g = BoundReference(2, "g", GeometryType())
    near = BoundPredicate(Op.ST_INTERSECTS, g, BoundingBox(0, 0, 1, 1))
    ident = BoundPredicate(Op.GT, BoundReference(1, "id", LongType()), 3)
    assert without_spatial(And(near, ident)) == ident
    assert without_spatial(Or(near, ident)) == AlwaysTrue()
    assert without_spatial(Not(near)) == AlwaysTrue()
    assert without_spatial(ident) is ident


def test_storage_credentials_of_the_plan_serve_its_reads(backing: SqlCatalog) -> None:
    """The server's plan answer carries the vended storage credentials; the scan reads with
    a FileIO holding them."""
    wh = backing.properties["warehouse"]
    creds = [(f"{wh}/db", {"s3.access-key-id": "plan-key", "s3.secret-access-key": "x"})]
    with rest.start(backing, storage_credentials=creds) as server:
        c = RestCatalog("r", uri=server.url, **{"scan-planning-mode": "server"})
        c.create_namespace("db")
        t = c.create_table("db.t", pa.schema(SCHEMA))
        t.append(_rows(range(5)))
        scan = c.load_table("db.t").scan()
        plan = scan.server_plan()
        assert plan is not None and plan.io is not None
        assert plan.io.storage_credentials == creds
        assert _ids(scan) == [0, 1, 2, 3, 4]


def test_java_plans_asynchronously_in_plan_tasks(
    java_rest_server: RestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Iceberg Java's REST server (this suite's launcher plans every scan asynchronously, ten
    files per plan task): the client polls the plan, fetches every plan task and reads the
    rows its own planning reads; each plan, read or abandoned, is cancelled."""
    local = RestCatalog("local", uri=java_rest_server.url)
    remote = RestCatalog("remote", uri=java_rest_server.url, **{"scan-planning-mode": "server"})
    ns = f"plan{datetime.datetime.now().strftime('%H%M%S%f')}"
    local.create_namespace(ns)
    props = {"format-version": "2", "write.delete.mode": "merge-on-read"}
    t = local.create_table(f"{ns}.t", pa.schema(SCHEMA), properties=props)
    t.update_spec().add_field("id", "bucket[40]").commit()
    t = local.load_table(f"{ns}.t")
    t.append(_rows(range(0, 800)))
    t.delete("id in (1, 2, 3, 400, 799)")
    calls: list[tuple[str, str]] = []
    call = remote._call

    def counted(method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        calls.append((method, path.rsplit("/", 1)[-1]))
        return call(method, path, *args, **kwargs)

    deleted: list[str] = []
    send = remote._send

    def recording(method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        if method == "DELETE":
            deleted.append(path)
        return send(method, path, *args, **kwargs)

    monkeypatch.setattr(remote, "_call", counted)
    monkeypatch.setattr(remote, "_send", recording)
    for q in ({}, {"row_filter": "s = 's4' or d = '2024-03-01'"}):
        want = t.scan(**q)
        got = remote.load_table(f"{ns}.t").scan(**q)
        assert _ids(got) == _ids(want) and _ids(want)
    kinds = [k for _, k in calls]
    assert kinds.count("plan") == 2  # one submission per scan
    assert any(k.startswith("async-") for k in kinds)  # polled
    assert kinds.count("tasks") >= 6  # 40 files, ten per plan task, per scan
    # each plan read is cancelled, so the server can drop its state
    assert len(deleted) == 2 and all("/plan/async-" in p for p in deleted)
    # so is a plan abandoned on an error while following it

    def failing(method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        if path.endswith("/tasks"):
            raise ConnectionError("network down")
        return call(method, path, *args, **kwargs)

    monkeypatch.setattr(remote, "_call", failing)
    with pytest.raises(ConnectionError):
        remote.load_table(f"{ns}.t").scan().plan_files()
    assert len(deleted) == 3 and "/plan/async-" in deleted[2]


@pytest.mark.spark
def test_the_spark_format_reads_a_server_planned_table(spark: Any, rest_server: RestServer) -> None:
    """``spark.read.format("icefloe")`` on a REST catalog whose server plans: the driver gets
    the tasks from the server, the executors read them."""
    from icefloe import spark as ispark
    from support.rest import new_warehouse

    ispark.register(spark)
    warehouse = new_warehouse()
    ours = RestCatalog("ours", uri=rest_server.url, warehouse=warehouse)
    t = _history(ours, 3)
    before = rest_server.log_text().count(f"/v1/{warehouse}/namespaces/db/tables/t/plan")
    df = (
        spark.read.format("icefloe")
        .option("catalog", "srv")
        .option("catalog.type", "rest")
        .option("catalog.uri", rest_server.url)
        .option("catalog.warehouse", warehouse)
        .option("catalog.scan-planning-mode", "server")
        .option("split-size", "2000")
        .load("db.t")
    )
    got = sorted(r[0] for r in df.where("id < 200").select("id").collect())
    assert got == _ids(t.scan(row_filter="id < 200"))
    assert rest_server.log_text().count(f"/v1/{warehouse}/namespaces/db/tables/t/plan") > before


@pytest.mark.parametrize(
    ("answer", "error", "message"),
    [
        (
            {
                "status": "failed",
                "error": {"message": "out of memory", "type": "ServerError", "code": 500},
            },
            IcebergError,
            "out of memory",
        ),
        ({"status": "cancelled", "plan-id": "p1"}, ScanPlanningError, "cancelled"),
        ({"status": "submitted", "plan-id": "p1"}, ScanPlanningError, "did not complete"),
        ({"status": "whatever"}, ValidationError, "unexpected plan status"),
        (
            {"status": "completed", "file-scan-tasks": [{"data-file": {}}]},
            ValidationError,
            "spec-id",
        ),
        (
            {
                "status": "completed",
                "file-scan-tasks": [{"data-file": "x", "delete-file-references": [3]}],
            },
            ValidationError,
            "content file",
        ),
        ([], ValidationError, "not a JSON object"),
    ],
)
def test_bad_plan_answers_are_typed_errors(
    backing: SqlCatalog,
    monkeypatch: pytest.MonkeyPatch,
    answer: Any,
    error: type[Exception],
    message: str,
) -> None:
    """What a server answers to a plan, however wrong, ends in a typed error (a plan that
    stays ``submitted`` past ``rest-scan-planning.poll-timeout-ms`` too), never a hang."""
    from icefloe.catalog.rest.http import HttpResponse

    with rest.start(backing) as server:
        props = {"scan-planning-mode": "server", "rest-scan-planning.poll-timeout-ms": "1500"}
        c = RestCatalog("r", uri=server.url, **props)
        c.endpoints = c.endpoints | {ep.FETCH_PLAN}  # as a server planning asynchronously
        c.create_namespace("db")
        c.create_table("db.t", pa.schema(SCHEMA)).append(_rows(range(3)))
        call = c._call

        def fake(method: str, path: str, *args: Any, **kwargs: Any) -> Any:
            if path.endswith("/plan") or "/plan/" in path:
                return HttpResponse(200, {}, json.dumps(answer).encode())
            return call(method, path, *args, **kwargs)

        monkeypatch.setattr(c, "_call", fake)
        with pytest.raises(error, match=message):
            c.load_table("db.t").scan().to_arrow()
