"""Regressions of user input: repeated join columns, upserts keyed by the identifier fields,
dates after 9999-12-31 in ``to_pandas()``, partition directory names of uuid, double and
float identity partitions as Iceberg Java names them, and the fix a float column refused by an
integer column is told (pandas' only for data from pandas)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from icefloe.exceptions import ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import (
    DateType,
    DoubleType,
    FixedType,
    FloatType,
    LongType,
    NestedField,
    StringType,
    StructType,
    UUIDType,
)
from icefloe.write.partition_names import human_partition_value
from support.write_util import catalog

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "v", StringType()))

MODES = {
    "copy-on-write": {},
    "merge-on-read": {"write.merge.mode": "merge-on-read"},
    "equality": {"write.upsert.mode": "equality"},
}


def _table(tmp_path: Path, props: dict[str, str] | None = None, schema: Schema = SCHEMA) -> Any:
    t = catalog(tmp_path).create_table(
        "ns.t", schema, properties={"format-version": "2", **(props or {})}
    )
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    return t


def _source(ids: list[int], v: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{v}{i}" for i in ids]})


def _rows(t: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = t.scan().to_arrow().sort_by("id").to_pylist()
    return rows


# --- repeated join columns -------------------------------------------------------------------


@pytest.mark.parametrize("mode", sorted(MODES))
def test_upsert_refuses_a_join_column_given_twice(tmp_path: Path, mode: str) -> None:
    t = _table(tmp_path, MODES[mode])
    before = t.current_snapshot().snapshot_id
    with pytest.raises(ValidationError, match="join column 'id' is given twice"):
        t.upsert(_source([1, 3], "u"), ["id", "id"])
    assert t.current_snapshot().snapshot_id == before


def test_delete_by_keys_refuses_a_join_column_given_twice(tmp_path: Path) -> None:
    t = _table(tmp_path)
    before = t.current_snapshot().snapshot_id
    with pytest.raises(ValidationError, match="join column 'id' is given twice"):
        t.delete_by_keys(pa.table({"id": [1]}), ["id", "id"])
    twice = pa.table([pa.array([1]), pa.array([1])], names=["id", "id"])
    with pytest.raises(ValidationError, match="keys have the join column 'id' twice"):
        t.delete_by_keys(twice, ["id"])
    with pytest.raises(ValidationError, match="at least one join column"):
        t.delete_by_keys(pa.table({"id": [1]}), [])
    assert t.current_snapshot().snapshot_id == before
    assert _rows(t) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]


@pytest.mark.parametrize(
    "keys",
    [
        {"id": [2**63]},  # beyond a long
        {"id": [1, "x"]},  # mixed Python types
        {"id": 1},  # not a list
        {"id": [1, 2], "v": ["a"]},  # ragged columns
    ],
)
def test_delete_by_keys_refuses_bad_python_keys_with_a_validation_error(
    tmp_path: Path, keys: dict[str, Any]
) -> None:
    t = _table(tmp_path)
    before = t.current_snapshot().snapshot_id
    with pytest.raises(ValidationError, match=r"column 'id'|cannot make a table of the input"):
        t.delete_by_keys(keys, ["id"])
    assert t.current_snapshot().snapshot_id == before


def test_delete_by_keys_takes_python_keys(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.delete_by_keys({"id": [2, 7]}, ["id"])
    assert _rows(t) == [{"id": 1, "v": "a"}]


def test_equality_deletes_refuse_floating_point_keys(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "f", DoubleType())
    )
    t = catalog(tmp_path).create_table("ns.t", schema, properties={"format-version": "2"})
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "f": [1.5, 2.5]}))
    before = t.current_snapshot().snapshot_id
    with pytest.raises(ValidationError, match="'f' of type double cannot be an equality delete"):
        t.delete_by_keys({"f": [1.5]}, ["f"])
    t.set_properties({"write.upsert.mode": "equality"})
    source = pa.table({"id": pa.array([9], pa.int64()), "f": [1.5]})
    with pytest.raises(ValidationError, match="cannot be an equality delete"):
        t.upsert(source, ["f"])
    assert t.current_snapshot().snapshot_id == before
    t.set_properties({"write.upsert.mode": "merge-on-read"})  # reads the table: takes them
    t.upsert(source, ["f"])
    assert sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 2, "f": 2.5},
        {"id": 9, "f": 1.5},
    ]


def test_upsert_refuses_a_source_with_a_column_twice(tmp_path: Path) -> None:
    t = _table(tmp_path)
    source = pa.table(
        [pa.array([1], pa.int64()), pa.array([1], pa.int64()), pa.array(["x"])],
        names=["id", "id", "v"],
    )
    with pytest.raises(ValidationError, match="duplicate column names"):
        t.upsert(source, ["id"])


def test_key_columns_fold_case_when_lookups_ignore_it() -> None:
    from icefloe.table.key_columns import key_columns

    assert key_columns(["id", "ID"]) == ["id", "ID"]
    assert key_columns("id") == ["id"]
    with pytest.raises(ValidationError, match="join column 'ID' is given twice"):
        key_columns(["id", "ID"], case_sensitive=False)
    with pytest.raises(ValidationError, match="column names"):
        key_columns(["id", 3])  # type: ignore[list-item]


# --- join columns from the identifier fields -------------------------------------------------


@pytest.mark.parametrize("mode", sorted(MODES))
def test_upsert_without_join_cols_uses_the_identifier_fields(tmp_path: Path, mode: str) -> None:
    t = _table(tmp_path, MODES[mode])
    with t.update_schema() as u:
        u.set_identifier_fields("id")
    t.upsert(_source([2, 3], "u"))
    assert _rows(t) == [{"id": 1, "v": "a"}, {"id": 2, "v": "u2"}, {"id": 3, "v": "u3"}]
    t.upsert(_source([1], "w"), None)
    with t.transaction() as tx:
        tx.upsert(_source([3, 4], "x"))
    assert _rows(t) == [
        {"id": 1, "v": "w1"},
        {"id": 2, "v": "u2"},
        {"id": 3, "v": "x3"},
        {"id": 4, "v": "x4"},
    ]
    t.delete_by_keys(pa.table({"id": pa.array([2, 4], pa.int64())}))
    assert [r["id"] for r in _rows(t)] == [1, 3]


def test_upsert_without_join_cols_or_identifier_fields_is_refused(tmp_path: Path) -> None:
    t = _table(tmp_path)
    before = t.current_snapshot().snapshot_id
    with pytest.raises(ValidationError, match="pass join_cols, or set the table's identifier"):
        t.upsert(_source([3], "u"))
    with pytest.raises(ValidationError, match="pass join_cols, or set the table's identifier"):
        t.delete_by_keys(pa.table({"id": [1]}))
    assert t.current_snapshot().snapshot_id == before


# --- dates after 9999-12-31 in to_pandas -----------------------------------------------------

FAR = 3_000_000  # days since 1970-01-01: 10183-09-21


def test_to_pandas_names_the_columns_of_dates_after_9999(tmp_path: Path) -> None:
    inner = pa.struct([pa.field("dd", pa.date32())])
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "d", DateType()),
        NestedField(3, "s", StructType(NestedField(4, "dd", DateType()))),
    )
    t = catalog(tmp_path).create_table("ns.d", schema, properties={"format-version": "2"})
    rows = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "d": pa.array([FAR, 1], pa.date32()),
            "s": pa.array([{"dd": 1}, {"dd": FAR}], inner),
        }
    )
    t.append(rows)
    read = t.scan().to_arrow().sort_by("id")
    assert read.column("d").cast(pa.int32()).to_pylist() == [FAR, 1]  # to_arrow reads them

    with pytest.raises(ValidationError, match=r"columns 'd', 's\.dd'.*date_as_object=False"):
        t.scan().to_pandas()
    with pytest.raises(ValidationError, match=r"column 'd':.*date_as_object=False"):
        t.scan(selected_fields=("id", "d")).to_pandas()
    frame = t.scan(selected_fields=("id", "d")).to_pandas(date_as_object=False)
    assert frame["d"].dtype.kind == "M"
    days = frame.sort_values("id")["d"].to_numpy().astype("datetime64[D]").astype(np.int64)
    assert days.tolist() == [FAR, 1]
    assert len(t.scan(selected_fields=("id",)).to_pandas()) == 2  # other columns convert

    with pytest.raises(ValidationError, match=r"columns 'd', 's\.dd'"):
        t.changelog_scan().to_pandas()


def test_arrow_to_pandas_finds_far_dates_and_timestamps_at_any_depth() -> None:
    from icefloe.read.scan_output import arrow_to_pandas

    table = pa.table(
        {
            "ts": pa.array([FAR * 86_400_000_000], pa.timestamp("us")),
            "m": pa.array([[(FAR, 1)]], pa.map_(pa.date32(), pa.int32())),
            "l": pa.array([[1, -800_000]], pa.list_(pa.date32())),
            "ok": pa.array([1], pa.date32()),
        }
    )
    with pytest.raises(ValidationError) as info:
        arrow_to_pandas(table)
    assert "columns 'm.key', 'l.element':" in str(info.value)
    with pytest.raises(ValidationError) as info:
        arrow_to_pandas(table, timestamp_as_object=True)
    assert "columns 'ts', 'm.key', 'l.element':" in str(info.value)
    assert len(arrow_to_pandas(table.select(["ts", "ok"]))) == 1


# --- partition directory names as Iceberg Java's ---------------------------------------------


def _identity(source_id: int, name: str) -> PartitionField:
    return PartitionField(source_id, 999 + source_id, parse_transform("identity"), name)


# Java's String.valueOf(double) (Double.toString, Java 19+) and Float.toString
DOUBLES = [
    (1e20, "1.0E20"),
    (float("nan"), "NaN"),
    (float("inf"), "Infinity"),
    (float("-inf"), "-Infinity"),
    (-0.0, "-0.0"),
    (0.0, "0.0"),
    (1.0, "1.0"),
    (0.001, "0.001"),
    (1e-4, "1.0E-4"),
    (1e7, "1.0E7"),
    (9999999.0, "9999999.0"),
    (-123.456, "-123.456"),
    (0.1 + 0.2, "0.30000000000000004"),
    (5e-324, "4.9E-324"),
    (1.7976931348623157e308, "1.7976931348623157E308"),
]
FLOATS = [
    (1.1, "1.1"),
    (1e20, "1.0E20"),
    (0.1, "0.1"),
    (1e-4, "1.0E-4"),
    (16777216.0, "1.6777216E7"),
    (-2.5, "-2.5"),
    (3.4028235e38, "3.4028235E38"),
    (1.4e-45, "1.4E-45"),
    (float("nan"), "NaN"),
    (-0.0, "-0.0"),
]


@pytest.mark.parametrize(("value", "java"), DOUBLES)
def test_double_partition_values_print_as_java_doubles(value: float, java: str) -> None:
    pf = _identity(2, "x")
    assert human_partition_value(pf, value) == java
    assert human_partition_value(pf, value, DoubleType()) == java


@pytest.mark.parametrize(("value", "java"), FLOATS)
def test_float_partition_values_print_as_java_floats(value: float, java: str) -> None:
    pf = _identity(3, "f")
    as_float32 = float(np.float32(value))  # what a float column's values read as
    assert human_partition_value(pf, as_float32, FloatType()) == java
    assert human_partition_value(pf, np.float32(value)) == java


def test_uuid_partition_values_print_as_java_uuids() -> None:
    pf = _identity(1, "u")
    u = uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")
    assert human_partition_value(pf, u.bytes, UUIDType()) == str(u)
    assert human_partition_value(pf, u) == str(u)


def _partitioned(tmp_path: Path) -> tuple[Any, pa.Table]:
    schema = Schema(
        NestedField(1, "u", UUIDType()),
        NestedField(2, "x", DoubleType()),
        NestedField(3, "f", FloatType()),
    )
    spec = PartitionSpec(_identity(1, "u"), _identity(2, "x"), _identity(3, "f"))
    t = catalog(tmp_path).create_table(
        "ns.p",
        schema,
        partition_spec=spec,
        properties={"format-version": "2", "write.summary.partition-limit": "10"},
    )
    u = uuid.UUID(int=1)
    rows = pa.table(
        {
            "u": pa.array([u.bytes, None, None, None], pa.uuid()),
            "x": [1e20, float("nan"), -0.0, 0.001],
            "f": pa.array([1.1, float("inf"), 1e-4, None], pa.float32()),
        }
    )
    t.append(rows)
    return t, rows


def _directories(t: Any, column: str) -> set[str]:
    part = {"u": 0, "x": 1, "f": 2}[column]
    return {
        f.data_file.file_path.split("/data/", 1)[1].split("/")[part] for f in t.scan().plan_files()
    }


def test_double_partition_directories_are_named_as_java_names_them(tmp_path: Path) -> None:
    t, rows = _partitioned(tmp_path)
    assert _directories(t, "x") == {"x=1.0E20", "x=NaN", "x=-0.0", "x=0.001"}
    got = t.scan().to_arrow()
    assert got.num_rows == 4
    assert sorted(map(str, got.column("x").to_pylist())) == sorted(
        map(str, rows.column("x").to_pylist())
    )


def test_uuid_and_float_partition_directories_are_named_as_java_names_them(
    tmp_path: Path,
) -> None:
    t, _ = _partitioned(tmp_path)
    assert _directories(t, "u") == {"u=00000000-0000-0000-0000-000000000001", "u=null"}
    assert _directories(t, "f") == {"f=1.1", "f=Infinity", "f=1.0E-4", "f=null"}
    # the snapshot summary's partition keys name them the same way
    snapshot = t.current_snapshot()
    assert snapshot is not None
    keys = {k for k in snapshot.summary.properties if k.startswith("partitions.")}
    assert "partitions.u=00000000-0000-0000-0000-000000000001/x=1.0E20/f=1.1" in keys


def test_pandas_integers_with_missing_values_say_to_use_int64(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog(tmp_path).create_table("ns.pandas_ints", schema)
    frame = pd.DataFrame({"id": [1, None], "v": ["a", "b"]})  # pandas makes id float64
    for data in (frame, pa.Table.from_pandas(frame)):  # a DataFrame, or Arrow made from one
        with pytest.raises(ValidationError, match=r"column 'id' has type double.*'Int64'"):
            t.append(data)
    t.append(frame.astype({"id": "Int64"}))  # what the message says to do
    assert t.scan().to_arrow().column("id").to_pylist() == [1, None]


def test_plain_arrow_doubles_for_an_integer_column_get_no_pandas_hint(tmp_path: Path) -> None:
    t = catalog(tmp_path).create_table("ns.arrow_ints", pa.schema([("id", pa.int64())]))
    for data in (pa.table({"id": pa.array([1.5, 2.0])}), {"id": [1.5, 2.0]}):
        with pytest.raises(ValidationError) as info:
            t.append(data)
        message = str(info.value)
        assert "column 'id' has type double, which cannot be written as int64" in message
        assert "pandas" not in message and "pyarrow.compute.cast" in message
    assert t.current_snapshot() is None


def test_near_miss_arrow_types_say_how_to_convert(tmp_path: Path) -> None:
    """Doubles for a float column, text for a uuid column and variable-length binary for a
    fixed column are refused with the conversion that makes them fit, and that conversion
    then appends."""
    import pyarrow.compute as pc

    schema = Schema(
        NestedField(1, "x", FloatType()),
        NestedField(2, "u", UUIDType()),
        NestedField(3, "f", FixedType(4)),
    )
    t = catalog(tmp_path).create_table("ns.near", schema)
    key = uuid.UUID(int=7)
    good = {
        "x": pa.array([0.5], pa.float32()),
        "u": pa.array([key], pa.uuid()),
        "f": pa.array([b"abcd"], pa.binary(4)),
    }
    cases = [
        ("x", pa.array([0.1]), r"'x' has type double.*as float32", "float32"),
        ("u", pa.array([str(key)]), r"'u' has type string.*uuid\.UUID", None),
        ("u", pa.array([key.bytes]), r"'u' has type binary.*pyarrow\.binary\(16\)", pa.binary(16)),
        ("f", pa.array([b"abcd"]), r"'f' has type binary.*pyarrow\.binary\(4\)", pa.binary(4)),
    ]
    for name, values, message, target in cases:
        with pytest.raises(ValidationError, match=message):
            t.append(pa.table({**good, name: values}))
        fixed = (
            pa.array([uuid.UUID(s) for s in values.to_pylist()], pa.uuid())
            if target is None
            else pc.cast(values, target)
        )
        t.append(pa.table({**good, name: fixed}))
    got = t.scan().to_arrow()
    assert got.num_rows == 4
    assert sorted(got["f"].to_pylist()) == [b"abcd"] * 4
    assert set(got["u"].to_pylist()) == {key}
