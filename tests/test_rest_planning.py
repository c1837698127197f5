"""Server-side scan planning of ``icefloe serve`` (``POST .../plan``), over HTTP: the answer
names exactly the files icefloe's own planner reads, each with its delete files and residual,
in the JSON Iceberg Java parses; bad requests are 400s. Iceberg Java planning through it is in
``tests/test_rest_spark.py::test_spark_plans_scans_on_the_server``."""

from __future__ import annotations

import datetime
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe import rest
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest import config as ep
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import ValidationError
from icefloe.expressions.base import AlwaysFalse, AlwaysTrue, And, Not, Op, Or, UnboundPredicate
from icefloe.expressions.rest_json import expression_from_json, expression_to_json
from icefloe.expressions.serde import literal_to_json
from icefloe.types import LongType

pytestmark = pytest.mark.rest

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("d", pa.date32()),
        pa.field("s", pa.string()),
        pa.field("b", pa.binary()),
    ]
)


def _rows(ids: range) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "d": pa.array([datetime.date(2024, 3, 1 + i % 3) for i in ids], pa.date32()),
            "s": [f"s{i}" for i in ids],
            "b": [bytes([i % 7, 0xFF]) for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, RestCatalog]]:
    pytest.importorskip("uvicorn", reason="icefloe serve needs the 'server' extra")
    backing = SqlCatalog(
        "b", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri()
    )
    try:
        with rest.start(backing) as server:
            yield server.url, RestCatalog("client", uri=server.url)
    finally:
        backing.close()


def _plan(url: str, body: Any, table: str = "t") -> tuple[int, Any]:
    req = urllib.request.Request(
        f"{url}/v1/namespaces/db/tables/{table}/plan",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def _table(c: RestCatalog, version: int) -> Any:
    c.create_namespace("db")
    props = {"format-version": str(version), "write.delete.mode": "merge-on-read"}
    t = c.create_table("db.t", SCHEMA, properties=props)
    t.update_spec().add_field("d", "day").commit()
    t = c.load_table("db.t")
    t.append(_rows(range(0, 60)))
    t.append(_rows(range(60, 90)))
    t.delete("id in (4, 5, 61, 62)")  # merge-on-read: DVs in v3, position deletes in v2
    return c.load_table("db.t")


@pytest.mark.parametrize("version", [2, 3])
def test_the_plan_names_the_files_icefloe_reads(
    served: tuple[str, RestCatalog], version: int
) -> None:
    url, c = served
    t = _table(c, version)
    assert ep.PLAN_TABLE_SCAN in c.endpoints
    body = {"filter": {"type": "lt", "term": "id", "value": 70}, "select": ["id", "s"]}
    status, out = _plan(url, body)
    assert status == 200 and out["status"] == "completed" and "plan-id" not in out
    expected = {
        task.data_file.file_path: task for task in t.scan(row_filter="id < 70").plan_files()
    }
    tasks = out["file-scan-tasks"]
    assert {x["data-file"]["file-path"] for x in tasks} == set(expected)
    deletes = out["delete-files"]
    referenced: set[int] = set()
    spec = t.metadata.spec()
    types = [f.field_type for f in spec.partition_type(t.schema()).fields]
    for x in tasks:
        f = x["data-file"]
        ours = expected[f["file-path"]]
        assert f["content"] == "data" and f["file-format"] == "parquet"
        assert f["spec-id"] == spec.spec_id and f["record-count"] == ours.data_file.record_count
        assert f["file-size-in-bytes"] == ours.data_file.file_size_in_bytes
        assert f["partition"] == [
            literal_to_json(v, ty) for v, ty in zip(ours.data_file.partition, types, strict=True)
        ]
        assert f["partition"][0].startswith("2024-03-0")  # a date in its JSON single-value form
        if version == 3:
            assert f["first-row-id"] == ours.data_file.first_row_id
        refs = x.get("delete-file-references", [])
        assert sorted(deletes[i]["file-path"] for i in refs) == sorted(
            d.file_path for d in ours.delete_files
        )
        referenced.update(refs)
        assert x["residual-filter"] == {"type": "lt", "term": "id", "value": 70}
    assert referenced == set(range(len(deletes)))  # each delete file once, each referenced
    for d in deletes:
        assert d["content"] == "position-deletes"
        if version == 3:  # deletion vectors: the blob and the file it deletes from
            assert d["file-format"] == "puffin"
            assert {"referenced-data-file", "content-offset", "content-size-in-bytes"} <= set(d)


def test_binary_literals_are_hex_as_java_writes_them(served: tuple[str, RestCatalog]) -> None:
    url, c = served
    t = _table(c, 2)
    status, out = _plan(url, {"filter": {"type": "eq", "term": "b", "value": "03FF"}})
    assert status == 200
    expected = {x.data_file.file_path for x in t.scan(row_filter=_eq_b(b"\x03\xff")).plan_files()}
    assert {x["data-file"]["file-path"] for x in out["file-scan-tasks"]} == expected
    assert {x["residual-filter"]["value"] for x in out["file-scan-tasks"]} == {"03ff"}


def _eq_b(value: bytes) -> Any:
    return UnboundPredicate(Op.EQ, "b", value)


def test_time_travel_and_appends_between_snapshots(served: tuple[str, RestCatalog]) -> None:
    url, c = served
    t = _table(c, 3)
    snaps = [s.snapshot_id for s in t.snapshots()]
    status, out = _plan(url, {"snapshot-id": snaps[0]})
    assert status == 200
    first = {task.data_file.file_path for task in t.scan(snapshot_id=snaps[0]).plan_files()}
    assert {x["data-file"]["file-path"] for x in out["file-scan-tasks"]} == first
    assert "delete-files" not in out
    status, out = _plan(url, {"start-snapshot-id": snaps[0], "end-snapshot-id": snaps[1]})
    assert status == 200
    added = {
        task.data_file.file_path
        for task in t.incremental_append_scan(snaps[0], snaps[1]).plan_files()
    }
    assert {x["data-file"]["file-path"] for x in out["file-scan-tasks"]} == added
    assert added and not (added & first)


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"filter": {"type": "eq", "term": "nope", "value": 1}}, 400, "nope"),
        ({"filter": {"type": "eq", "term": "id"}}, 400, "needs one value"),
        (
            {
                "filter": {
                    "type": "eq",
                    "term": {"type": "transform", "transform": "day", "term": "d"},
                    "value": 1,
                }
            },
            400,
            "transform",
        ),
        ({"filter": {"type": "lt", "term": "d", "value": "not a date"}}, 400, "not a date"),
        ({"select": ["id", "missing"]}, 400, "missing"),
        ({"filter": {"type": "eq", "term": "b", "value": "zz"}}, 400, "not hex-encoded"),
        ({"start-snapshot-id": 1}, 400, "go together"),
        ({"snapshot-id": "1"}, 400, "snapshot-id"),
        ({"snapshot-id": 12345}, 400, "12345"),
        ({"surprise": 1}, 400, "surprise"),
        ([], 400, "PlanTableScanRequest"),
    ],
)
def test_bad_requests_are_refused(
    served: tuple[str, RestCatalog], body: Any, status: int, message: str
) -> None:
    url, c = served
    _table(c, 2)
    got, out = _plan(url, body)
    assert got == status, out
    assert message in out["error"]["message"]


def test_a_missing_table_is_404(served: tuple[str, RestCatalog]) -> None:
    url, c = served
    c.create_namespace("db")
    status, out = _plan(url, {}, table="absent")
    assert status == 404 and out["error"]["type"] == "NoSuchTableException"


def test_deep_filters_are_planned(served: tuple[str, RestCatalog]) -> None:
    """A filter of hundreds of ``or`` terms, folded to the left as Java's ``Expressions.or``
    builds it, is planned (it was a 500 from Python's recursion limit); icefloe's client
    writes such a chain balanced, well within JSON parsers' nesting limits."""
    url, c = served
    t = _table(c, 3)
    node: Any = {"type": "eq", "term": "id", "value": 0}
    for i in range(1, 900):
        node = {"type": "or", "left": node, "right": {"type": "eq", "term": "id", "value": i}}
    status, out = _plan(url, {"filter": node})
    assert status == 200, out
    planned = {task.data_file.file_path for task in t.scan().plan_files()}
    assert {x["data-file"]["file-path"] for x in out["file-scan-tasks"]} == planned
    chain = expression_from_json(node)
    written = json.dumps(expression_to_json(chain))
    assert written.count("{") < 10_000 and written.count('"or"') == 899
    depth = deepest = 0
    for ch in written:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        deepest = max(deepest, depth)
    assert deepest <= 12  # balanced: log2(900) levels of or, not 900
    assert set(
        t.scan(row_filter=expression_from_json(json.loads(written))).to_arrow()["id"].to_pylist()
    ) == (set(range(90)) - {4, 5, 61, 62})


@pytest.mark.parametrize(
    "expr",
    [
        AlwaysTrue(),
        AlwaysFalse(),
        UnboundPredicate(Op.IS_NULL, "a"),
        UnboundPredicate(Op.NOT_NAN, "x"),
        UnboundPredicate(Op.EQ, "a.b", "v"),
        UnboundPredicate(Op.IN, "a", [1, 2, 3]),
        UnboundPredicate(Op.STARTS_WITH, "s", "ab"),
        And(UnboundPredicate(Op.GT, "a", 1.5), Not(UnboundPredicate(Op.LT_EQ, "b", 2))),
        Or(UnboundPredicate(Op.NOT_IN, "a", ["x", "y"]), UnboundPredicate(Op.NOT_NULL, "c")),
    ],
)
def test_expressions_round_trip_through_the_rest_json(expr: Any) -> None:
    assert expression_from_json(json.loads(json.dumps(expression_to_json(expr)))) == expr


def test_java_expression_forms_parse() -> None:
    """The forms Java's ``ExpressionParser`` also reads: literal booleans, reference objects,
    literal-wrapped values."""
    assert expression_from_json({"type": "literal", "value": False}) == AlwaysFalse()
    got = expression_from_json(
        {
            "type": "eq",
            "term": {"type": "reference", "term": "a"},
            "value": {"type": "literal", "value": 3},
        }
    )
    assert got == UnboundPredicate(Op.EQ, "a", 3)
    for bad in ({"type": "what", "term": "a"}, {"type": "is-null", "term": "a", "value": 1}, "x"):
        with pytest.raises(ValidationError):
            expression_from_json(bad)


def test_a_branch_head_binds_to_the_current_schema(served: tuple[str, RestCatalog]) -> None:
    """Java reads a branch with its head's snapshot id and ``use-snapshot-schema`` false (the
    table's schema), a snapshot or tag with true (the snapshot's schema)."""
    url, c = served
    t = _table(c, 2)
    head = t.current_snapshot().snapshot_id
    t.update_schema().add_column("extra", LongType()).commit()
    body = {"snapshot-id": head, "filter": {"type": "is-null", "term": "extra"}}
    status, out = _plan(url, {**body, "use-snapshot-schema": False})
    assert status == 200 and len(out["file-scan-tasks"]) == len(
        t.scan(snapshot_id=head).plan_files()
    )
    status, out = _plan(url, {**body, "use-snapshot-schema": True})
    assert status == 400 and "extra" in out["error"]["message"]


@pytest.mark.parametrize(
    "bad",
    [
        None,
        {"spec-id": 9},
        {"spec-id": "0"},
        {"record-count": -1},
        {"file-size-in-bytes": True},
        {"partition": [1]},
        {"partition": "x"},
        {"content": "position-deletes"},
        {"first-row-id": "x"},
    ],
)
def test_malformed_content_files_are_typed_errors(bad: Any) -> None:
    """A server's malformed data file JSON is a ValidationError naming the field, never a
    KeyError or TypeError."""
    from icefloe.scan.content_json import data_file_from_json

    good = {
        "spec-id": 0,
        "content": "data",
        "file-path": "file:///x.parquet",
        "file-format": "parquet",
        "partition": [],
        "file-size-in-bytes": 10,
        "record-count": 2,
    }
    assert data_file_from_json(good, {0: []}).record_count == 2
    with pytest.raises(ValidationError):
        data_file_from_json(None if bad is None else {**good, **bad}, {0: []})
