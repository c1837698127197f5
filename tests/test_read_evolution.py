"""Reading Parquet files by field id across schema evolution (hand-built files)."""

from __future__ import annotations

import datetime as dt
import pickle
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.arrow_schema import schema_to_arrow
from icefloe.exceptions import CorruptFileError, FileIOError, ValidationError
from icefloe.expressions.binding import bind
from icefloe.expressions.builder import col
from icefloe.name_mapping import create_mapping
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.scan import DataFileRef, FileScanTask, ReadOptions
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import (
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    UnknownType,
)
from support.read_util import read, write_data

OLD = Schema(
    NestedField(1, "id", IntegerType(), True),
    NestedField(2, "name", StringType()),
    NestedField(3, "score", FloatType()),
    NestedField(4, "gone", StringType()),
)
ROWS = [{"id": i, "name": f"n{i}", "score": i / 4, "gone": "x"} for i in range(10)]


def test_renamed_reordered_added_dropped_promoted(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", OLD, ROWS)
    new = Schema(
        NestedField(3, "points", DoubleType()),
        NestedField(1, "key", LongType(), True),
        NestedField(2, "label", StringType()),
        NestedField(5, "with_default", IntegerType(), initial_default=42),
        NestedField(6, "plain_new", StringType()),
    )
    out = read(FileScanTask(df), ReadOptions(new))
    assert out.schema == schema_to_arrow(new)
    assert out.schema.equals(schema_to_arrow(new), check_metadata=True)
    assert out.column("key").to_pylist() == list(range(10))
    assert out.column("points").to_pylist() == [i / 4 for i in range(10)]
    assert out.column("label").to_pylist() == [f"n{i}" for i in range(10)]
    assert out.column("with_default").to_pylist() == [42] * 10
    assert out.column("plain_new").null_count == 10
    assert "gone" not in out.column_names


def test_invalid_default_names_its_column(tmp_path: Path) -> None:
    """An ``initial-default`` another writer stored in the wrong JSON kind fails the read of a
    file that lacks the column with an error naming the column, not only the bad value."""
    df = write_data(tmp_path / "d.parquet", OLD, ROWS)
    new = Schema(
        NestedField(1, "id", IntegerType(), True),
        NestedField(5, "level", IntegerType(), initial_default="high"),
    )
    with pytest.raises(ValidationError, match=r"column 'level' \(id 5\), initial-default"):
        read(FileScanTask(df), ReadOptions(new))


def test_projection_subset_by_id(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", OLD, ROWS)
    out = read(FileScanTask(df), ReadOptions(OLD, projected_field_ids=(3, 1)))
    assert out.column_names == ["id", "score"]  # schema order, not request order


def test_decimal_widening_and_date_to_timestamp(tmp_path: Path) -> None:
    s = Schema(NestedField(1, "d", DecimalType(9, 2)), NestedField(2, "day", DateType()))
    rows = [{"d": Decimal("1.25"), "day": dt.date(2024, 1, 2)}, {"d": None, "day": None}]
    df = write_data(tmp_path / "d.parquet", s, rows)
    new = Schema(NestedField(1, "d", DecimalType(18, 2)), NestedField(2, "day", TimestampType()))
    out = read(FileScanTask(df), ReadOptions(new, format_version=3))
    assert out.schema == schema_to_arrow(new)
    assert out.column("d").to_pylist() == [Decimal("1.25"), None]
    assert out.column("day").to_pylist() == [dt.datetime(2024, 1, 2), None]
    ns = Schema(NestedField(2, "day", TimestampNanoType()))
    out = read(FileScanTask(df), ReadOptions(ns, format_version=3))
    assert out.column("day").cast(pa.int64()).to_pylist()[0] == 1704153600 * 10**9


def test_incompatible_type_raises_naming_file(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", OLD, ROWS)
    bad = Schema(NestedField(2, "name", StructType(NestedField(9, "a", IntegerType()))))
    with pytest.raises(ValidationError, match=r"d\.parquet"):
        read(FileScanTask(df), ReadOptions(bad))


NESTED = Schema(
    NestedField(1, "id", IntegerType(), True),
    NestedField(
        2,
        "loc",
        StructType(NestedField(3, "lat", FloatType()), NestedField(4, "lon", FloatType())),
    ),
    NestedField(5, "tags", ListType(6, IntegerType(), False)),
    NestedField(7, "props", MapType(8, StringType(), 9, IntegerType(), False)),
)
NESTED_ROWS = [
    {"id": 0, "loc": {"lat": 1.0, "lon": 2.0}, "tags": [1, 2], "props": [("a", 1)]},
    {"id": 1, "loc": None, "tags": None, "props": None},
    {"id": 2, "loc": {"lat": None, "lon": 4.0}, "tags": [], "props": [("b", 2), ("c", None)]},
]


def test_nested_struct_list_map_evolution(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", NESTED, NESTED_ROWS)
    new = Schema(
        NestedField(
            2,
            "where",
            StructType(
                NestedField(4, "longitude", DoubleType()),
                NestedField(10, "alt", IntegerType(), initial_default=5),
            ),
        ),
        NestedField(5, "tags", ListType(6, LongType(), False)),
        NestedField(7, "props", MapType(8, StringType(), 9, LongType(), False)),
    )
    out = read(FileScanTask(df), ReadOptions(new))
    assert out.schema == schema_to_arrow(new)
    assert out.column("where").to_pylist() == [
        {"longitude": 2.0, "alt": 5},
        None,
        {"longitude": 4.0, "alt": 5},
    ]
    assert out.column("tags").to_pylist() == [[1, 2], None, []]
    assert out.column("props").to_pylist() == [[("a", 1)], None, [("b", 2), ("c", None)]]


def test_nested_projection_of_one_child(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", NESTED, NESTED_ROWS)
    out = read(FileScanTask(df), ReadOptions(NESTED, projected_field_ids=(3,)))
    assert out.column_names == ["loc"]
    assert out.column("loc").to_pylist() == [{"lat": 1.0}, None, {"lat": None}]


def test_sliced_batches_keep_nested_values(tmp_path: Path) -> None:
    rows = NESTED_ROWS * 5000
    df = write_data(tmp_path / "d.parquet", NESTED, rows, row_group_size=7000)
    out = read(FileScanTask(df), ReadOptions(NESTED))
    assert (
        out.to_pylist()[: len(rows)]
        == pa.Table.from_pylist(rows, schema=schema_to_arrow(NESTED)).to_pylist()
    )


def test_unknown_column_reads_as_nulls(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", OLD, ROWS)
    new = Schema(NestedField(1, "id", IntegerType(), True), NestedField(2, "u", UnknownType()))
    out = read(FileScanTask(df), ReadOptions(new, format_version=3))
    assert out.column("u").type == pa.null()
    assert out.column("u").null_count == 10


def test_identity_partition_fills_missing_column(tmp_path: Path) -> None:
    data_schema = Schema(NestedField(1, "id", IntegerType(), True))
    table_schema = Schema(
        NestedField(1, "id", IntegerType(), True),
        NestedField(2, "region", StringType()),
        NestedField(3, "day", DateType()),
    )
    spec = PartitionSpec(
        PartitionField(2, 1000, parse_transform("identity"), "region"),
        PartitionField(3, 1001, parse_transform("identity"), "day"),
        spec_id=1,
    )
    df = write_data(tmp_path / "d.parquet", data_schema, [{"id": 1}, {"id": 2}])
    df = DataFileRef(df.file_path, record_count=2, spec_id=1, partition=("eu", 19000))
    opts = ReadOptions(table_schema, specs={1: spec}, metadata_columns=("_spec_id", "_partition"))
    out = read(FileScanTask(df), opts)
    assert out.column("region").to_pylist() == ["eu", "eu"]
    assert out.column("day").to_pylist() == [dt.date(2022, 1, 8)] * 2
    assert out.column("_spec_id").to_pylist() == [1, 1]
    assert (
        out.column("_partition").to_pylist() == [{"region": "eu", "day": dt.date(2022, 1, 8)}] * 2
    )


def test_name_mapping_for_files_without_ids(tmp_path: Path) -> None:
    path = tmp_path / "imported.parquet"
    pq.write_table(pa.table({"name": ["a", "b"], "id": pa.array([1, 2], pa.int32())}), path)
    df = DataFileRef(str(path), record_count=2)
    with pytest.raises(ValidationError, match=r"imported\.parquet"):
        read(FileScanTask(df), ReadOptions(OLD))
    out = read(FileScanTask(df), ReadOptions(OLD, name_mapping=create_mapping(OLD)))
    assert out.column("id").to_pylist() == [1, 2]
    assert out.column("name").to_pylist() == ["a", "b"]
    assert out.column("score").null_count == 2


def test_missing_file_and_wrong_record_count(tmp_path: Path) -> None:
    with pytest.raises(FileIOError, match=r"nope\.parquet"):
        read(FileScanTask(DataFileRef(str(tmp_path / "nope.parquet"))), ReadOptions(OLD))
    df = write_data(tmp_path / "d.parquet", OLD, ROWS)
    wrong = DataFileRef(df.file_path, record_count=11)
    with pytest.raises(CorruptFileError, match=r"d\.parquet"):
        read(FileScanTask(wrong), ReadOptions(OLD))
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(CorruptFileError, match=r"junk\.parquet"):
        read(FileScanTask(DataFileRef(str(tmp_path / "junk.parquet"))), ReadOptions(OLD))


def test_residual_filter_on_unprojected_column(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", OLD, ROWS)
    task = FileScanTask(df, residual=bind(OLD, col("score") >= 1.0))
    out = read(task, ReadOptions(OLD, projected_field_ids=(1,), metadata_columns=("_pos",)))
    assert out.column_names == ["id", "_pos"]
    assert out.column("id").to_pylist() == [4, 5, 6, 7, 8, 9]
    assert out.column("_pos").to_pylist() == [4, 5, 6, 7, 8, 9]


def test_splits_cover_each_row_group_once(tmp_path: Path) -> None:
    rows = [{"id": i, "name": None, "score": None, "gone": None} for i in range(1000)]
    df = write_data(tmp_path / "d.parquet", OLD, rows, row_group_size=100)
    meta = pq.ParquetFile(df.file_path).metadata
    offsets = [meta.row_group(i).column(0).data_page_offset for i in range(meta.num_row_groups)]
    offsets = [
        min(o, meta.row_group(i).column(0).dictionary_page_offset or o)
        for i, o in enumerate(offsets)
    ]
    cut = offsets[4]
    opts = ReadOptions(OLD, projected_field_ids=(1,), metadata_columns=("_pos",))
    a = read(FileScanTask(df, start=0, length=cut), opts)
    b = read(FileScanTask(df, start=cut, length=df.file_size_in_bytes - cut), opts)
    assert a.column("id").to_pylist() == list(range(400))
    assert b.column("id").to_pylist() == list(range(400, 1000))
    assert b.column("_pos").to_pylist() == list(range(400, 1000))


def test_tasks_pickle() -> None:
    task = FileScanTask(
        DataFileRef("s3://b/f.parquet", record_count=3, partition=(1, "x")),
        residual=bind(OLD, col("id") == 3),
    )
    assert pickle.loads(pickle.dumps(task)) == task
    opts = ReadOptions(OLD, projected_field_ids=(1,))
    assert pickle.loads(pickle.dumps(opts)).projected_field_ids == (1,)
