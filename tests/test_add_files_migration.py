"""``add_files`` of Parquet files a lake already holds: partition values are proven from the
statistics or the file is refused, paths are stored as every engine opens them, types in other
units or widths are accepted when the table's type holds every value, and files without field
ids keep resolving through the name mapping as the schema changes."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.exceptions import CorruptFileError, ValidationError
from icefloe.name_mapping import create_mapping
from icefloe.types import DoubleType
from support.write_util import catalog, pyiceberg_read, set_properties_elsewhere

MAPPING = "schema.name-mapping.default"


def _mapped_table(tmp_path: Path, schema: pa.Schema, name: str = "ns.t") -> object:
    t = catalog(tmp_path).create_table(name, schema)
    t.set_properties({MAPPING: create_mapping(t.schema()).to_json_string()})
    return t


def test_partitions_that_statistics_cannot_prove_are_refused(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.string())])
    t = _mapped_table(tmp_path, schema)
    with t.update_spec() as u:
        u.add_field("p", "identity").add_field("id", "bucket[4]")
    src = tmp_path / "src"
    src.mkdir()
    # nulls and a value: two partitions
    pq.write_table(pa.table({"id": [1, 1], "p": ["a", None]}), src / "nulls.parquet")
    # ids 1 and 10 fall in bucket 0, 3 in bucket 3: a range proves nothing for a hash
    pq.write_table(pa.table({"id": [1, 3, 10], "p": ["a"] * 3}), src / "buckets.parquet")
    # a Hive-style file: the partition column only in the directory name
    (src / "p=a").mkdir()
    pq.write_table(pa.table({"id": [1]}), src / "p=a" / "hive.parquet")
    for name, match in [
        ("nulls.parquet", "nulls and values"),
        ("buckets.parquet", "does not keep order"),
        ("p=a/hive.parquet", "no column 'p'"),
    ]:
        with pytest.raises(ValidationError, match=match):
            t.add_files([str(src / name)])
    assert t.current_snapshot() is None
    pq.write_table(pa.table({"id": [10, 10], "p": ["a", "a"]}), src / "one.parquet")
    t.add_files([str(src / "one.parquet")])
    assert t.scan(row_filter="id = 10 and p = 'a'").to_arrow().num_rows == 2


def test_paths_are_stored_plain_and_compared_as_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = pa.schema([pa.field("id", pa.int64())])
    t = _mapped_table(tmp_path, schema)
    (tmp_path / "src").mkdir()
    pq.write_table(pa.table({"id": [1]}), tmp_path / "src" / "f.parquet")
    monkeypatch.chdir(tmp_path / "src")
    t.add_files(["f.parquet"])
    (task,) = t.scan().plan_files()
    assert task.data_file.file_path == str(tmp_path / "src" / "f.parquet")
    monkeypatch.chdir(tmp_path)
    assert t.scan().to_arrow()["id"].to_pylist() == [1]
    for spelling in [
        (tmp_path / "src" / "f.parquet").as_uri(),
        f"{tmp_path}/src//f.parquet",
        f"{tmp_path}/src/./f.parquet",
        "src/f.parquet",
    ]:
        with pytest.raises(ValidationError, match="already a data file"):
            t.add_files([spelling])
    with pytest.raises(ValidationError, match="more than once"):
        t.add_files([str(tmp_path / "src" / "g.parquet"), "src/../src/g.parquet"])
    assert t.scan().to_arrow().num_rows == 1
    assert pyiceberg_read(t).num_rows == 1


def test_damaged_files_and_a_bad_mapping_are_typed_errors(tmp_path: Path) -> None:
    t = _mapped_table(tmp_path, pa.schema([pa.field("id", pa.int64())]))
    (tmp_path / "empty.parquet").write_bytes(b"")
    (tmp_path / "text.parquet").write_bytes(b"id\n1\n")
    pq.write_table(pa.table({"id": [1]}), tmp_path / "cut.parquet")
    raw = (tmp_path / "cut.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(raw[: len(raw) // 2])
    for name in ("empty.parquet", "text.parquet", "cut.parquet"):
        with pytest.raises(CorruptFileError, match=name):
            t.add_files([str(tmp_path / name)])
    pq.write_table(pa.table({"id": [1]}), tmp_path / "ok.parquet")
    t.add_files([str(tmp_path / "ok.parquet")])
    with pytest.raises(ValidationError, match="not a name mapping"):
        t.set_properties({MAPPING: "[{not json"})  # refused when set here
    set_properties_elsewhere(tmp_path, "ns.t", {MAPPING: "[{not json"})  # another engine stores it
    t.refresh()
    with pytest.raises(ValidationError, match="not a name mapping"):
        t.add_files([str(tmp_path / "ok.parquet")])
    with pytest.raises(ValidationError, match="not a name mapping"):
        t.scan().to_arrow()


def test_other_units_and_widths_are_read_as_the_table_types(tmp_path: Path) -> None:
    schema = pa.schema(
        [
            pa.field("a", pa.int32()),
            pa.field("c", pa.string()),
            pa.field("t", pa.time64("us")),
            pa.field("ts", pa.timestamp("us")),
        ]
    )
    t = _mapped_table(tmp_path, schema)
    exact = pa.table(
        {
            "a": pa.array([1, -2], pa.int8()),
            "c": pa.array(["x", "y"]).dictionary_encode(),
            "t": pa.array([3_723_000, 1_000], pa.time32("ms")),
            "ts": pa.array([1_000_000_000, 2_000_000_000], pa.timestamp("ns")),
        }
    )
    pq.write_table(exact, tmp_path / "exact.parquet")
    t.add_files([str(tmp_path / "exact.parquet")])
    got = t.scan().to_arrow().sort_by("a").to_pylist()
    assert got == [
        {"a": -2, "c": "y", "t": dt.time(0, 0, 1), "ts": dt.datetime(1970, 1, 1, 0, 0, 2)},
        {"a": 1, "c": "x", "t": dt.time(1, 2, 3), "ts": dt.datetime(1970, 1, 1, 0, 0, 1)},
    ]
    fine = exact.set_column(3, "ts", pa.array([1_000_000_001, 5], pa.timestamp("ns")))
    pq.write_table(fine, tmp_path / "fine.parquet")
    with pytest.raises(ValidationError, match="without rounding"):
        t.add_files([str(tmp_path / "fine.parquet")])
    assert t.scan().to_arrow().num_rows == 2  # still readable
    other = exact.set_column(3, "ts", pa.array([1, 2], pa.time64("ns")))
    pq.write_table(other, tmp_path / "other.parquet")
    with pytest.raises(ValidationError, match="cannot be read as timestamp"):
        t.add_files([str(tmp_path / "other.parquet")])


def test_unsigned_integers_are_read_as_iceberg_java_maps_them(tmp_path: Path) -> None:
    """UINT_8 and UINT_16 as int or long, UINT_32 as long only, UINT_64 refused; the bounds
    are the unsigned values, so filters prune by them."""
    schema = pa.schema([("a", pa.int32()), ("b", pa.int32()), ("c", pa.int64())])
    t = _mapped_table(tmp_path, schema)
    top = 2**32 - 1
    unsigned = pa.table(
        {
            "a": pa.array([1, 255], pa.uint8()),
            "b": pa.array([1, 65535], pa.uint16()),
            "c": pa.array([1, top], pa.uint32()),
        }
    )
    pq.write_table(unsigned, tmp_path / "u.parquet")
    t.add_files([str(tmp_path / "u.parquet")])
    want = {"a": [1, 255], "b": [1, 65535], "c": [1, top]}
    assert t.scan().to_arrow().sort_by("a").to_pydict() == want
    assert pyiceberg_read(t).sort_by("a").to_pydict() == want
    assert t.scan(row_filter=f"c = {top} and a > 200 and b > 60000").to_arrow().num_rows == 1
    assert t.scan(row_filter="c < 0").plan_files() == []  # pruned by the unsigned bounds
    for column, kind, match in [
        ("a", pa.uint32(), "cannot be read as int32"),
        ("c", pa.uint64(), "cannot be read as int64"),
    ]:
        bad = unsigned.set_column(
            unsigned.schema.get_field_index(column), column, pa.array([1, 2], kind)
        )
        pq.write_table(bad, tmp_path / "bad.parquet")
        with pytest.raises(ValidationError, match=match):
            t.add_files([str(tmp_path / "bad.parquet")])
    assert t.scan().to_arrow().num_rows == 2


def test_files_without_ids_follow_renames_and_added_columns(tmp_path: Path) -> None:
    """Schema changes extend the name mapping (new names join, old ones stay as aliases), so
    files written before and after a rename resolve; compaction reads them through it."""
    t = _mapped_table(tmp_path, pa.schema([pa.field("id", pa.int64()), ("name", pa.string())]))
    pq.write_table(pa.table({"id": [1], "name": ["old"]}), tmp_path / "before.parquet")
    t.add_files([str(tmp_path / "before.parquet")])
    with t.update_schema() as u:
        u.rename_column("name", "label")
        u.add_column("score", DoubleType())
    pq.write_table(
        pa.table({"id": [2], "label": ["new"], "score": [9.5]}), tmp_path / "after.parquet"
    )
    t.add_files([str(tmp_path / "after.parquet")])
    want = [
        {"id": 1, "label": "old", "score": None},
        {"id": 2, "label": "new", "score": 9.5},
    ]
    assert t.scan().to_arrow().sort_by("id").to_pylist() == want
    assert t.scan(row_filter="label = 'new'").to_arrow()["id"].to_pylist() == [2]
    t.rewrite_data_files(min_input_files=1)
    assert t.scan().to_arrow().sort_by("id").to_pylist() == want
    assert os.path.exists(tmp_path / "before.parquet")  # compaction never deletes inputs


@pytest.mark.parametrize("zone", [None, "UTC"], ids=["timestamp", "timestamptz"])
def test_int96_timestamps_of_old_spark_and_hive_files(tmp_path: Path, zone: str | None) -> None:
    """INT96 timestamps (Spark, Hive and Impala wrote them) are instants in UTC, read into
    either timestamp type as Iceberg Java reads them, in microseconds, so the sentinels
    0001-01-01 and 9999-12-31 (outside nanoseconds' 1677-2262) keep their values."""
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("ts", pa.timestamp("us", zone))]
    )
    t = _mapped_table(tmp_path, schema)
    values = [
        dt.datetime(1, 1, 1),
        dt.datetime(2024, 1, 1, 12, 30, 0, 123456),
        dt.datetime(9999, 12, 31, 23, 59, 59),
    ]
    rows = pa.table({"id": [1, 2, 3], "ts": pa.array(values, pa.timestamp("us"))})
    path = tmp_path / "int96.parquet"
    pq.write_table(rows, path, use_deprecated_int96_timestamps=True)
    assert pq.ParquetFile(path).schema.column(1).physical_type == "INT96"
    t.add_files([str(path)])
    got = t.scan().to_arrow().sort_by("id")
    want = [v.replace(tzinfo=dt.timezone.utc) if zone else v for v in values]
    assert got["ts"].to_pylist() == want  # aware datetimes compare as instants
    literal = "2024-01-01T00:00:00" + ("+00:00" if zone else "")
    assert t.scan(row_filter=f"ts > '{literal}'").to_arrow()["id"].to_pylist() == [2, 3]


def test_int96_timestamps_keep_their_nanoseconds_in_a_nanosecond_table(tmp_path: Path) -> None:
    """INT96 holds nanoseconds: a table with a nanosecond timestamp column reads them as such,
    its sub-microsecond digits kept."""
    from icefloe.schema import Schema
    from icefloe.types import LongType, NestedField, TimestampNanoType

    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "ts", TimestampNanoType()))
    t = catalog(tmp_path).create_table("ns.t", schema, format_version=3)
    t.set_properties({MAPPING: create_mapping(t.schema()).to_json_string()})
    nanos = 1_600_000_000_123_456_789
    rows = pa.table({"id": [1], "ts": pa.array([nanos], pa.timestamp("ns"))})
    path = tmp_path / "int96.parquet"
    pq.write_table(rows, path, use_deprecated_int96_timestamps=True)
    t.add_files([str(path)])
    assert t.scan().to_arrow()["ts"].cast(pa.int64()).to_pylist() == [nanos]


def _nano_table(tmp_path: Path, *fields: object) -> Any:
    from icefloe.schema import Schema
    from icefloe.types import LongType, NestedField

    schema = Schema(NestedField(1, "id", LongType()), *fields)  # type: ignore[arg-type]
    return catalog(tmp_path).create_table("ns.t", schema, format_version=3)


def _int96_file(path: Path, columns: dict[str, pa.Array]) -> str:
    """A Parquet file of INT96 timestamps with field ids (1 for id, then 2, 3, ...) and no
    Arrow schema hint, as Hive and Impala write them."""
    ids = {name: i for i, name in enumerate(columns, start=1)}
    schema = pa.schema(
        [pa.field(n, a.type, True, {b"PARQUET:field_id": str(ids[n])}) for n, a in columns.items()]
    )
    pq.write_table(
        pa.table(columns, schema=schema),
        path,
        use_deprecated_int96_timestamps=True,
        store_schema=False,
    )
    return str(path)


@pytest.mark.parametrize("native", [True, False], ids=["native", "general"])
def test_int96_timestamps_a_nanosecond_column_cannot_hold_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    """An INT96 timestamp outside 1677-2262 headed for a nanosecond timestamp column was
    accepted by add_files and read as another instant (year 1000 read as 2169, missed by
    filters); it is refused when the file is added, and a file registered without that check
    fails to read instead of giving the wrong instant."""
    from icefloe.read import native_files
    from icefloe.types import NestedField, TimestampNanoType
    from icefloe.write import add_files

    monkeypatch.setattr(native_files, "ENABLED", native)
    t = _nano_table(tmp_path, NestedField(2, "n", TimestampNanoType()))
    old = [dt.datetime(1000, 1, 1), dt.datetime(2020, 1, 1)]
    path = _int96_file(
        tmp_path / "old.parquet",
        {"id": pa.array([0, 1]), "n": pa.array(old, pa.timestamp("us"))},
    )
    with pytest.raises(ValidationError, match="'n' holds INT96 timestamps from 1000-01-01"):
        t.add_files([path])
    assert t.current_snapshot() is None
    # as a file another engine registered: the read refuses it rather than wrap the value
    monkeypatch.setattr(add_files, "int96_unit", lambda *args: "us")
    t.add_files([path])
    for scan in (t.scan(), t.scan(row_filter=f"n < '{dt.datetime(1900, 1, 1).isoformat()}'")):
        with pytest.raises(ValidationError, match="nanosecond timestamp cannot hold"):
            scan.to_arrow()
    assert sorted(t.scan(selected_fields=("id",)).to_arrow()["id"].to_pylist()) == [0, 1]


@pytest.mark.parametrize("native", [True, False], ids=["native", "general"])
def test_int96_timestamps_in_a_nanosecond_column_keep_their_nanoseconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    """INT96 values inside 1677-2262 read into a nanosecond timestamp column keep their
    sub-microsecond digits; a microsecond column read from the same file gets them cut to
    microseconds, as Iceberg Java reads them."""
    from icefloe.read import native_files
    from icefloe.types import NestedField, TimestampNanoType, TimestampType

    monkeypatch.setattr(native_files, "ENABLED", native)
    nanos = [1_600_000_000_123_456_789, -1_000_000_001]
    t = _nano_table(tmp_path, NestedField(2, "n", TimestampNanoType()))
    path = _int96_file(
        tmp_path / "ns.parquet",
        {"id": pa.array([0, 1]), "n": pa.array(nanos, pa.timestamp("ns"))},
    )
    t.add_files([path])
    assert t.scan().to_arrow().sort_by("id")["n"].cast(pa.int64()).to_pylist() == nanos
    # one file, an INT96 column for each unit: read in microseconds, none refused
    t = _nano_table(
        tmp_path / "both",
        NestedField(2, "n", TimestampNanoType()),
        NestedField(3, "u", TimestampType()),
    )
    both = {"id": pa.array([0, 1]), "n": pa.array(nanos, pa.timestamp("ns"))}
    both["u"] = both["n"]
    t.add_files([_int96_file(tmp_path / "both.parquet", both)])
    got = t.scan().to_arrow().sort_by("id")
    assert got["u"].cast(pa.int64()).to_pylist() == [n // 1000 for n in nanos]
    assert got["n"].cast(pa.int64()).to_pylist() == [n // 1000 * 1000 for n in nanos]


def test_int96_timestamps_read_the_same_after_a_nanosecond_column_is_added(
    tmp_path: Path,
) -> None:
    """Adding an unrelated nanosecond timestamp column made the microsecond INT96 column of
    existing files unreadable (read in nanoseconds, year 1000 overflowed them); a column's
    values do not depend on the other columns of the table."""
    from icefloe.types import NestedField, TimestampNanoType, TimestampType

    t = _nano_table(tmp_path, NestedField(2, "ts", TimestampType()))
    values = [dt.datetime(1000, 1, 1), dt.datetime(2020, 1, 1, 0, 0, 0, 5)]
    path = _int96_file(
        tmp_path / "old.parquet",
        {"id": pa.array([0, 1]), "ts": pa.array(values, pa.timestamp("us"))},
    )
    t.add_files([path])
    assert t.scan().to_arrow().sort_by("id")["ts"].to_pylist() == values
    with t.update_schema() as u:
        u.add_column("n", TimestampNanoType())
    got = t.scan().to_arrow().sort_by("id")
    assert got["ts"].to_pylist() == values
    assert got["n"].to_pylist() == [None, None]
