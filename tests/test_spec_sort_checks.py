"""Partition spec and sort order checks: v1 ``void`` fields in the metadata tables, bucket counts
and truncate widths that must fit an int, the spec's order of floating point values (NaN,
signed zeros) in written files, sort fields inside lists or maps, and partition field renames
that clash with column names."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.exceptions import CorruptFileError, ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.sorting import NullOrder, SortDirection, SortField, SortOrder
from icefloe.table.static import StaticTable
from icefloe.transforms import BucketTransform, TruncateTransform, parse_transform
from icefloe.types import (
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)
from support.write_util import catalog

UTC = dt.timezone.utc
INT_MAX = 2**31 - 1

# ---------------------------------------------------------------------- A: v1 void fields

TS = dt.datetime(2024, 1, 1, 5, tzinfo=UTC)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
#: A removed time field's values in the older files: (transform, Arrow type, value of ``TS``).
_TIME_FIELDS = [
    ("hour", pa.int32(), (TS - _EPOCH) // dt.timedelta(hours=1)),
    ("day", pa.date32(), TS.date()),
    ("month", pa.int32(), (2024 - 1970) * 12),
    ("year", pa.int32(), 2024 - 1970),
]


@pytest.mark.parametrize(("transform", "arrow_type", "value"), _TIME_FIELDS)
def test_v1_removed_time_field_keeps_its_type_in_metadata_tables(
    tmp_path: Path, transform: str, arrow_type: pa.DataType, value: Any
) -> None:
    """A v1 table keeps a removed field as ``void(ts)``, whose own result type is the source
    type: the metadata tables show the field with the type it had when it held values."""
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "ts", TimestamptzType()))
    t = catalog(tmp_path).create_table("ns.t", schema, format_version=1)
    with t.update_spec() as u:
        u.add_field("ts", transform)
    rows = pa.table(
        {"id": pa.array([1], pa.int64()), "ts": pa.array([TS], pa.timestamp("us", "UTC"))}
    )
    t.append(rows)
    name = f"ts_{transform}"
    with t.update_spec() as u:
        u.remove_field(name)
    assert str(t.spec().fields[0].transform) == "void"
    t.append(rows)

    files = t.inspect.files()
    assert files.schema.field("partition").type == pa.struct(
        [pa.field(name, arrow_type, metadata={b"PARQUET:field_id": b"1000"})]
    )
    assert sorted(files.column("partition").to_pylist(), key=str) == sorted(
        [{name: value}, {name: None}], key=str
    )
    assert t.inspect.data_files().num_rows == 2
    entries = t.inspect.entries()
    assert entries.schema.field("data_file").type.field("partition").type.field(0).type == (
        arrow_type
    )
    parts = t.inspect.partitions(use_statistics=False)
    assert sorted(parts.column("partition").to_pylist(), key=str) == sorted(
        [{name: value}, {name: None}], key=str
    )
    assert parts.column("record_count").to_pylist() == [1, 1]


# ---------------------------------------------------------------------- B: bucket[N] fits an int


@pytest.mark.parametrize("name", ["bucket", "truncate"])
def test_bucket_count_and_truncate_width_must_fit_an_int(name: str) -> None:
    assert str(parse_transform(f"{name}[{INT_MAX}]")) == f"{name}[{INT_MAX}]"
    for n in (INT_MAX + 1, 2**40, 0, -1):
        with pytest.raises(ValidationError, match=name):
            parse_transform(f"{name}[{n}]")
    cls = BucketTransform if name == "bucket" else TruncateTransform
    with pytest.raises(ValidationError, match=str(2**31)):
        cls(2**31)


def test_update_spec_refuses_a_bucket_count_above_int_max(tmp_path: Path) -> None:
    t = catalog(tmp_path).create_table(
        "ns.t", Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType()))
    )
    with pytest.raises(ValidationError, match="bucket"), t.update_spec() as u:
        u.add_field("id", f"bucket[{2**40}]")
    with pytest.raises(ValidationError, match="truncate"), t.update_spec() as u:
        u.add_field("s", f"truncate[{2**31}]")
    with pytest.raises(ValidationError, match="bucket"), t.replace_sort_order() as o:
        o.asc("id", f"bucket[{2**31}]")
    assert t.refresh().spec().is_unpartitioned
    assert t.sort_order().is_unsorted


@pytest.mark.parametrize(
    ("old", "new"), [("bucket[16]", f"bucket[{2**40}]"), ("truncate[3]", f"truncate[{2**31}]")]
)
def test_loading_metadata_with_a_bucket_count_above_int_max_is_refused(
    tmp_path: Path, old: str, new: str
) -> None:
    """A metadata file written elsewhere with ``bucket[2**40]`` in a spec (or ``truncate[2**31]``
    in a sort order) does not load, as in the reference, which parses the number as an int: a
    typed error naming the file and the number."""
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType()))
    spec = PartitionSpec(PartitionField(1, 1000, BucketTransform(16), "id_bucket"))
    order = SortOrder(SortField(2, TruncateTransform(3)))
    t = catalog(tmp_path).create_table("ns.t", schema, partition_spec=spec, sort_order=order)
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}))
    src = Path(t.metadata_location.removeprefix("file://"))
    text = src.read_text()
    assert StaticTable.from_metadata(str(src)).scan().to_arrow().num_rows == 2
    assert old in text
    bad = src.with_name("00002-bad.metadata.json")
    bad.write_text(text.replace(old, new))
    number = new[new.index("[") + 1 : -1]
    with pytest.raises(CorruptFileError, match=f"00002-bad.metadata.json: .* got {number}"):
        StaticTable.from_metadata(str(bad))


# ---------------------------------------------------------------------- C: float sort order

NAN = float("nan")
NEG_NAN = -float("nan")
INF = float("inf")


def _key(v: float | None) -> tuple[Any, ...]:
    """How a written value shows up in the comparisons: NaN and the zeros with their sign."""
    if v is None:
        return ("null",)
    if math.isnan(v):
        return ("nan", math.copysign(1.0, v))
    if v == 0:
        return ("zero", math.copysign(1.0, v))
    return ("v", v)


#: Ascending per the spec: -NaN < -Infinity < -value < -0 < 0 < value < Infinity < NaN.
_ASCENDING = [NEG_NAN, -INF, -2.5, -1.0, -0.0, 0.0, 1.0, 2.5, INF, NAN]


@pytest.mark.parametrize("arrow_type", [pa.float64(), pa.float32()])
@pytest.mark.parametrize("direction", [SortDirection.ASC, SortDirection.DESC])
@pytest.mark.parametrize("null_order", [NullOrder.NULLS_FIRST, NullOrder.NULLS_LAST])
def test_float_sort_order_places_nan_and_signed_zeros_as_the_spec_says(
    tmp_path: Path, arrow_type: pa.DataType, direction: SortDirection, null_order: NullOrder
) -> None:
    ftype = DoubleType() if arrow_type == pa.float64() else FloatType()
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "f", ftype))
    t = catalog(tmp_path).create_table("ns.t", schema)
    with t.replace_sort_order() as o:
        (o.asc if direction is SortDirection.ASC else o.desc)("f", null_order=null_order)
    # shuffled, with both zeros in each order so a stable sort cannot pass by luck
    vals = [1.0, NAN, None, 0.0, -0.0, INF, NEG_NAN, -1.0, 2.5, -INF, -0.0, -2.5, 0.0]
    t.append(
        pa.table({"id": pa.array(range(len(vals)), pa.int64()), "f": pa.array(vals, arrow_type)})
    )
    (row,) = t.inspect.data_files().to_pylist()
    assert row["sort_order_id"] == t.sort_order().order_id
    got = pq.read_table(row["file_path"].removeprefix("file://")).column("f").to_pylist()
    values = sorted([v for v in vals if v is not None], key=_order)
    if direction is SortDirection.DESC:
        values.reverse()
    nulls = [None]
    want = nulls + values if null_order is NullOrder.NULLS_FIRST else values + nulls
    assert [_key(v) for v in got] == [_key(v) for v in want]


def _order(v: float) -> int:
    return next(i for i, a in enumerate(_ASCENDING) if _key(a) == _key(v))


# ---------------------------------------------------------------------- D: sort inside list/map


def _nested_schema() -> Schema:
    return Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "ls", ListType(3, IntegerType())),
        NestedField(4, "l", ListType(5, StructType(NestedField(6, "x", IntegerType())), False)),
        NestedField(7, "m", MapType(8, StringType(), 9, IntegerType())),
        NestedField(10, "st", StructType(NestedField(11, "a", IntegerType()))),
    )


@pytest.mark.parametrize("column", ["ls.element", "l.element.x", "m.key", "m.value"])
def test_sort_by_a_field_inside_a_list_or_map_is_refused(tmp_path: Path, column: str) -> None:
    t = catalog(tmp_path).create_table("ns.t", _nested_schema())
    with pytest.raises(ValidationError, match="sort") as e, t.replace_sort_order() as o:
        o.desc(column)
    assert "partition" not in str(e.value)
    assert t.refresh().sort_order().is_unsorted
    fid = t.schema().find_field_id(column)
    assert fid is not None
    with pytest.raises(ValidationError, match="sort"):
        catalog(tmp_path / "other").create_table(
            "ns.t", _nested_schema(), sort_order=SortOrder(SortField(fid))
        )


def test_sort_by_a_field_inside_a_struct_is_allowed(tmp_path: Path) -> None:
    t = catalog(tmp_path).create_table("ns.t", _nested_schema())
    with t.replace_sort_order() as o:
        o.desc("st.a")
    assert [f.source_id for f in t.sort_order().fields] == [11]


@pytest.mark.parametrize(
    ("column", "message"),
    [
        ("ls.element", "cannot sort by column 'ls.element': it is inside a list or map"),
        ("l", "cannot sort by non-primitive column 'l'"),
    ],
)
def test_writing_under_a_foreign_sort_order_the_writer_cannot_follow_is_refused(
    tmp_path: Path, column: str, message: str
) -> None:
    """A table whose metadata (written elsewhere) sorts by a list element, or by a list: a
    write says the sort order is the problem (not a partition source, nor an Arrow error)."""
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", _nested_schema())
    src = Path(t.metadata_location.removeprefix("file://"))
    meta = json.loads(src.read_text())
    field = {
        "transform": "identity",
        "source-id": t.schema().find_field_id(column),
        "direction": "asc",
        "null-order": "nulls-first",
    }
    meta["sort-orders"].append({"order-id": 1, "fields": [field]})
    meta["default-sort-order-id"] = 1
    foreign = src.with_name("00001-foreign.metadata.json")
    foreign.write_text(json.dumps(meta))
    other = cat.register_table("ns.other", foreign.as_uri())
    data = pa.table(
        {"id": pa.array([1], pa.int64()), "ls": pa.array([[2, 1]], pa.list_(pa.int32()))}
    )
    with pytest.raises(ValidationError, match=re.escape(message)) as e:
        other.append(data)
    assert "partition" not in str(e.value)


# ---------------------------------------------------------------------- E: rename clashes


def test_rename_partition_field_to_another_columns_name_is_refused(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType()))
    t = catalog(tmp_path).create_table("ns.t", schema)
    with t.update_spec() as u:
        u.add_field("s", "truncate[1]")
        u.add_field("s", "identity", "s_part")
    clash = "'id': it is the name of another column"
    with pytest.raises(ValidationError, match=clash), t.update_spec() as u:
        u.rename_field("s_trunc_1", "id")
    with pytest.raises(ValidationError, match=clash), t.update_spec() as u:
        u.rename_field("s_part", "id")
    assert [f.name for f in t.refresh().spec().fields] == ["s_trunc_1", "s_part"]
    with t.update_spec() as u:  # an identity field may take its source column's name
        u.rename_field("s_part", "s")
    assert [f.name for f in t.refresh().spec().fields] == ["s_trunc_1", "s"]


def test_a_field_of_any_transform_may_take_its_source_columns_name(tmp_path: Path) -> None:
    """``truncate[2](cat) AS cat``: Iceberg Java's spec updates check a name against the
    field's source column only (``ALTER TABLE ... ADD PARTITION FIELD truncate(2, cat) AS
    cat`` works there); icefloe refused any but an identity field."""
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "cat", StringType()))
    t = catalog(tmp_path).create_table("ns.t", schema)
    with t.update_spec() as u:
        u.add_field("cat", "truncate[2]", "cat")
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "cat": ["abc", "xyz"]}))
    (f,) = t.refresh().spec().fields
    assert (f.name, str(f.transform)) == ("cat", "truncate[2]")
    assert t.scan(row_filter="cat = 'abc'").to_arrow().column("id").to_pylist() == [1]
    with t.update_spec() as u:
        u.rename_field("cat", "cat_prefix")
    with pytest.raises(ValidationError, match="another column"), t.update_spec() as u:
        u.add_field("cat", "bucket[4]", "id")


def test_rename_v1_void_field_to_its_source_name_is_allowed(tmp_path: Path) -> None:
    """A v1 removed field (void) may take its own source column's name, as in the reference;
    another column's name stays refused."""
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType()))
    t = catalog(tmp_path).create_table("ns.t", schema, format_version=1)
    with t.update_spec() as u:
        u.add_field("s", "truncate[2]")
    with t.update_spec() as u:
        u.remove_field("s_trunc_2")
    with pytest.raises(ValidationError, match="another column"), t.update_spec() as u:
        u.rename_field("s_trunc_2", "id")
    with t.update_spec() as u:
        u.rename_field("s_trunc_2", "s")
    (f,) = t.refresh().spec().fields
    assert (f.name, str(f.transform)) == ("s", "void")


@pytest.mark.parametrize("format_version", [1, 2])
def test_a_second_void_field_of_one_column_is_a_conflict(
    tmp_path: Path, format_version: int
) -> None:
    """As in the reference, a void field of a column the spec already has a void field of is
    a duplicate, whatever its name (it used to recycle the old field's id into the new spec)."""
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType()))
    t = catalog(tmp_path).create_table("ns.t", schema, format_version=format_version)
    with t.update_spec() as u:
        u.add_field("id", "void", "v1")
    for name in ("v1", "v2", None):
        conflict = pytest.raises(ValidationError, match="conflicts with existing field 'v1'")
        with conflict, t.update_spec() as u:
            u.add_field("id", "void", name)
    assert [f.name for f in t.refresh().spec().fields] == ["v1"]
