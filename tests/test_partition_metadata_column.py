"""The ``_partition`` metadata column over partition specs whose fields share a name (a v2 table
that removed a field and gave a new field its name): one struct over every spec's fields, named
as Iceberg Java's ``Partitioning.partitionType`` names them (each field as in the newest spec
having it; of fields sharing a name the newest keeps it, the others are ``<name>_<field id>``),
with the same names as ``inspect.files()`` and ``inspect.partitions()``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.scan.tasks import partition_field_names, union_partition_type
from icefloe.schema import Schema
from icefloe.table.table import Table
from icefloe.transforms import parse_transform
from icefloe.types import IntegerType, LongType, NestedField, StringType
from support.write_util import catalog


def _bucket(n: int, v: int) -> int:
    out: int = parse_transform(f"bucket[{n}]").apply(pa.array([v], pa.int64()))[0].as_py()
    return out


@dataclass
class Case:
    table: Table
    #: ``_partition``'s fields of a scan of the current snapshot: (field id, name, Arrow type)
    fields: list[tuple[int, str, pa.DataType]]
    #: ``_partition`` by ``id`` in a scan of the current snapshot
    expected: dict[int, dict[str, Any]]
    #: inspect's partition struct names (fields whose source column is gone are left out)
    inspect_names: list[str]


def _rebucketed(tmp_path: Path) -> Case:
    """``bucket[4](id)`` named ``shard``, removed, then ``bucket[8](id)`` named ``shard``."""
    t = catalog(tmp_path).create_table(
        "ns.t", pa.schema([pa.field("id", pa.int64())]), format_version=2
    )
    with t.update_spec() as s:
        s.add_field("id", "bucket[4]", "shard")
    t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    with t.update_spec() as s:
        s.remove_field("shard")
    with t.update_spec() as s:
        s.add_field("id", "bucket[8]", "shard")
    t.append(pa.table({"id": pa.array([4, 5], pa.int64())}))
    t.refresh()
    expected = {i: {"shard_1000": _bucket(4, i), "shard": None} for i in (1, 2, 3)}
    expected |= {i: {"shard_1000": None, "shard": _bucket(8, i)} for i in (4, 5)}
    return Case(
        t,
        [(1000, "shard_1000", pa.int32()), (1001, "shard", pa.int32())],
        expected,
        ["shard_1000", "shard"],
    )


def _readded_source(tmp_path: Path) -> Case:
    """``identity(cat)`` named ``cat``, removed; column ``cat`` dropped and added again (a new
    field id); then ``identity(cat)`` named ``cat`` on the new column."""
    t = catalog(tmp_path).create_table(
        "ns.t",
        pa.schema([pa.field("id", pa.int64()), pa.field("cat", pa.string())]),
        format_version=2,
    )
    with t.update_spec() as s:
        s.add_field("cat", "identity", "cat")
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "cat": ["a", "b"]}))
    with t.update_spec() as s:
        s.remove_field("cat")
    with t.update_schema() as u:
        u.delete_column("cat")
    with t.update_schema() as u:
        u.add_column("cat", StringType())
    with t.update_spec() as s:
        s.add_field("cat", "identity", "cat")
    t.append(pa.table({"id": pa.array([3], pa.int64()), "cat": ["c"]}))
    t.refresh()
    # The scan's (current) schema lacks field 1000's source column, so the field is typed
    # ``unknown`` and its values are null (Java's partitionType leaves such a field out;
    # inspect does too). Only its name matters here: a scan of the first snapshot, whose
    # schema has the column, shows the values (test_time_travel_...).
    return Case(
        t,
        [(1000, "cat_1000", pa.null()), (1001, "cat", pa.string())],
        {
            1: {"cat_1000": None, "cat": None},
            2: {"cat_1000": None, "cat": None},
            3: {"cat_1000": None, "cat": "c"},
        },
        ["cat"],
    )


CASES: dict[str, Callable[[Path], Case]] = {
    "rebucketed": _rebucketed,
    "readded_source": _readded_source,
}


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    build: Callable[[Path], Case] = CASES[request.param]
    return build(tmp_path)


def _by_id(t: pa.Table) -> dict[int, dict[str, Any]]:
    return {r["id"]: r["_partition"] for r in t.to_pylist()}


def _check_type(t: pa.Table, fields: list[tuple[int, str, pa.DataType]]) -> None:
    ptype = t.schema.field("_partition").type
    assert [(f.name, f.type) for f in ptype] == [(n, at) for _, n, at in fields]
    ids = [int((f.metadata or {}).get(b"PARQUET:field_id", b"-1")) for f in ptype]
    assert ids == [fid for fid, _, _ in fields]


def test_scan_partition_column_names_and_values(case: Case) -> None:
    out = case.table.scan(selected_fields=["id", "_partition"]).to_arrow()
    _check_type(out, case.fields)
    assert _by_id(out) == case.expected


def test_scan_partition_column_with_filter(case: Case) -> None:
    out = case.table.scan(row_filter="id >= 2", selected_fields=["id", "_partition"]).to_arrow()
    _check_type(out, case.fields)
    assert _by_id(out) == {i: p for i, p in case.expected.items() if i >= 2}


def test_scan_partition_column_through_batches(case: Case) -> None:
    reader = case.table.scan(selected_fields=["id", "_partition"]).to_batches()
    out = reader.read_all()
    _check_type(out, case.fields)
    assert _by_id(out) == case.expected


def test_inspect_names_agree_with_partition_column(case: Case) -> None:
    scan_names = {fid: name for fid, name, _ in case.fields}
    for inspected in (case.table.inspect.files(), case.table.inspect.partitions()):
        ptype = inspected.schema.field("partition").type
        assert [f.name for f in ptype] == case.inspect_names
        for f in ptype:
            fid = int((f.metadata or {})[b"PARQUET:field_id"])
            assert f.name == scan_names[fid]


def test_inspect_files_values_per_spec(case: Case) -> None:
    # every file's partition has its own spec's field set and the other spec's field null
    rows = case.table.inspect.files().to_pylist()
    got = {tuple(sorted(r["partition"].items())) for r in rows}
    scan = case.table.scan(selected_fields=["id", "_partition"]).to_arrow().to_pylist()
    names = set(case.inspect_names)
    want = {tuple(sorted((k, v) for k, v in r["_partition"].items() if k in names)) for r in scan}
    assert got == want


def test_time_travel_to_the_first_spec_keeps_the_names(tmp_path: Path) -> None:
    # the snapshot's schema still has the old source column: its values are there, named as
    # in the newer snapshots
    case = _readded_source(tmp_path)
    first = case.table.metadata.snapshots[0].snapshot_id
    out = case.table.scan(snapshot_id=first, selected_fields=["id", "_partition"]).to_arrow()
    assert [f.name for f in out.schema.field("_partition").type] == ["cat_1000", "cat"]
    assert _by_id(out) == {1: {"cat_1000": "a", "cat": None}, 2: {"cat_1000": "b", "cat": None}}


def test_renamed_field_takes_the_newest_name(tmp_path: Path) -> None:
    # Java names each field as in the newest spec having it
    t = catalog(tmp_path).create_table(
        "ns.t", pa.schema([pa.field("id", pa.int64())]), format_version=2
    )
    with t.update_spec() as s:
        s.add_field("id", "bucket[4]", "b")
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    with t.update_spec() as s:
        s.rename_field("b", "b2")
    t.refresh()
    out = t.scan(selected_fields=["id", "_partition"]).to_arrow()
    assert [f.name for f in out.schema.field("_partition").type] == ["b2"]
    assert out.to_pylist() == [{"id": 1, "_partition": {"b2": _bucket(4, 1)}}]
    assert [f.name for f in t.inspect.files().schema.field("partition").type] == ["b2"]


def test_union_partition_type_unit() -> None:
    schema = Schema(NestedField(1, "id", LongType(), required=False))
    b4 = PartitionField(1, 1000, parse_transform("bucket[4]"), "shard")
    b8 = PartitionField(1, 1001, parse_transform("bucket[8]"), "shard")
    # a third field whose plain name is what the suffix would be: the suffix repeats
    other = PartitionField(1, 1002, parse_transform("bucket[2]"), "shard_1000")
    specs = {
        1: PartitionSpec(b4, spec_id=1),
        2: PartitionSpec(b8, spec_id=2),
        3: PartitionSpec(b8, other, spec_id=3),
    }
    got = union_partition_type(schema, specs)
    assert [(f.field_id, f.name, f.field_type, f.required) for f in got.fields] == [
        (1000, "shard_1000_1000", IntegerType(), False),
        (1001, "shard", IntegerType(), False),
        (1002, "shard_1000", IntegerType(), False),
    ]
    assert partition_field_names(specs.values()) == {f.field_id: f.name for f in got.fields}
    assert partition_field_names(specs.values(), {1000}) == {1000: "shard"}
