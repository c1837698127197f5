"""Spark + Iceberg Java (the reference) reads what icefloe wrote with the same rows:
equality deletes, deletion vectors, evolved schemas (rename, widen, drop, add), v3 default
values and v3 row lineage (``_row_id``, ``_last_updated_sequence_number``); and a failed
``icefloe.spark.write`` / ``merge`` commits nothing, leaves no files and raises the executor's
icefloe error on the driver."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.spark import JavaCatalog
from support.spark_util import spark_rows as rows_of

pytest.importorskip("pyspark")

import icefloe.spark as ispark
from icefloe.arrow_schema import schema_to_arrow
from icefloe.exceptions import CorruptFileError, ValidationError
from icefloe.read.scan_output import to_arrow
from icefloe.schema import Schema
from icefloe.types import IntegerType, LongType, NestedField, StringType

pytestmark = [pytest.mark.spark, pytest.mark.interop]


def _icefloe_rows(table: Any, columns: list[str]) -> list[dict[str, Any]]:
    scan = table.scan(selected_fields=tuple(columns))
    out = to_arrow(table.io, scan.plan_files(), scan.read_options())
    return sorted(out.select(columns).to_pylist(), key=lambda r: r["id"])


def _evolved_table(cat: Any, version: int) -> Any:
    """A table with history: appends, schema changes, a merge-on-read upsert (DVs or position
    deletes) and equality deletes."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "amount", IntegerType()),
        NestedField(4, "tmp", StringType()),
    )
    t = cat.create_table("db.e", schema, format_version=version)
    t.set_properties({"write.delete.mode": "merge-on-read", "write.merge.mode": "merge-on-read"})
    n = 100
    t.append(
        pa.table(
            {
                "id": pa.array(range(n), pa.int64()),
                "name": [f"n{i}" for i in range(n)],
                "amount": pa.array([i * 3 for i in range(n)], pa.int32()),
                "tmp": ["x"] * n,
            }
        )
    )
    with t.update_schema() as u:
        u.rename_column("name", "label")
        u.update_column("amount", LongType())
        u.delete_column("tmp")
        if version >= 3:
            u.add_column("region", StringType(), initial_default="eu", write_default="us")
            u.add_column("score", IntegerType(), required=True, initial_default=7)
        else:
            u.add_column("region", StringType())
    more = {
        "id": pa.array(range(n, n + 50), pa.int64()),
        "label": [f"m{i}" for i in range(50)],
        "amount": pa.array([2**40 + i for i in range(50)], pa.int64()),
    }
    if version < 3:
        more["region"] = ["ap"] * 50
    t.append(pa.table(more))  # v3: region takes its write default, score its default
    changes = _icefloe_rows(t, [f.name for f in t.schema().fields])
    upd = pa.Table.from_pylist(
        [dict(r, label="upd") for r in changes if 10 <= r["id"] < 20],
        schema=schema_to_arrow(t.schema()),
    )
    t.upsert(upd, ["id"])
    t.delete_by_keys(pa.table({"id": pa.array(range(120, 130), pa.int64())}), ["id"])
    return t


@pytest.mark.parametrize("version", [2, 3])
def test_java_reads_evolved_tables_with_equality_deletes(
    iceberg_spark: JavaCatalog, version: int
) -> None:
    cat = iceberg_spark.icefloe()
    cat.create_namespace("db")
    t = _evolved_table(cat, version)
    kinds = {d.content for task in t.scan().plan_files() for d in task.delete_files}
    assert len(kinds) == 2, "the table should have position (or DV) and equality deletes"
    columns = [f.name for f in t.schema().fields]
    ours = _icefloe_rows(t, columns)
    java = rows_of(iceberg_spark.sql(f"SELECT {', '.join(columns)} FROM {{c}}.db.e"))
    assert java == ours
    ids = [r["id"] for r in ours]
    assert ids == [i for i in range(150) if not 120 <= i < 130]
    by_id = {r["id"]: r for r in ours}
    assert by_id[15]["label"] == "upd" and by_id[5]["label"] == "n5"
    assert by_id[140]["amount"] == 2**40 + 40
    if version >= 3:
        # initial-default for rows written before the column existed, write-default after
        assert by_id[5]["region"] == "eu" and by_id[140]["region"] == "us"
        assert by_id[5]["score"] == 7 and by_id[140]["score"] == 7


def test_java_reads_row_lineage(iceberg_spark: JavaCatalog) -> None:
    cat = iceberg_spark.icefloe()
    cat.create_namespace("db")
    t = _evolved_table(cat, 3)
    meta = ["id", "_row_id", "_last_updated_sequence_number"]
    ours = _icefloe_rows(t, meta)
    java = rows_of(
        iceberg_spark.sql("SELECT id, _row_id, _last_updated_sequence_number FROM {c}.db.e")
    )
    assert java == ours
    by_id = {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in ours}
    # first append: ids 0..99, sequence 1; the upsert (sequence 3) kept the updated rows' ids
    assert by_id[5] == (5, 1) and by_id[15] == (15, 3)
    assert by_id[140] == (140, 2)


def test_unknown_columns_are_not_stored(iceberg_spark: JavaCatalog) -> None:
    """``unknown`` columns (top level and in a struct) stay out of data files, as the spec
    says: after they become strings Java reads the old rows with nulls there."""
    import pyarrow.parquet as pq

    from icefloe.types import StructType, UnknownType

    cat = iceberg_spark.icefloe()
    cat.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", IntegerType(), True),
        NestedField(2, "u", UnknownType()),
        NestedField(
            3, "s", StructType(NestedField(4, "a", LongType()), NestedField(5, "v", UnknownType()))
        ),
    )
    t = cat.create_table("db.unknown", schema, format_version=3)
    t.append(pa.table({"id": pa.array([1, 2], pa.int32()), "s": [{"a": 7}, None]}))
    (task,) = t.scan().plan_files()
    stored = pq.read_schema(task.data_file.file_path.removeprefix("file://"))
    assert stored.names == ["id", "s"] and stored.field("s").type.num_fields == 1
    assert t.scan().to_arrow().to_pylist() == [
        {"id": 1, "u": None, "s": {"a": 7, "v": None}},
        {"id": 2, "u": None, "s": None},
    ]
    t.update_schema().update_column("u", StringType()).update_column("s.v", StringType()).commit()
    t.append(pa.table({"id": pa.array([3], pa.int32()), "u": ["x"], "s": [{"a": 8, "v": "y"}]}))
    java = rows_of(iceberg_spark.sql("SELECT id, u, s.a AS a, s.v AS v FROM {c}.db.unknown"))
    assert java == [
        {"id": 1, "u": None, "a": 7, "v": None},
        {"id": 2, "u": None, "a": None, "v": None},
        {"id": 3, "u": "x", "a": 8, "v": "y"},
    ]


def test_identity_partition_of_an_unknown_column(iceberg_spark: JavaCatalog) -> None:
    """Java accepts ``identity`` of an ``unknown`` column (its values, and so the partition
    values, are all null): icefloe writes such a table, and Java reads it."""
    from icefloe.types import UnknownType

    cat = iceberg_spark.icefloe()
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", IntegerType(), True), NestedField(2, "u", UnknownType()))
    t = cat.create_table("db.unknown_part", schema, format_version=3)
    with t.update_spec() as spec:
        spec.add_field("u", "identity")
    t.append(pa.table({"id": pa.array([1, 2], pa.int32()), "u": pa.nulls(2)}))
    t.append(pa.table({"id": pa.array([3], pa.int32())}))
    t.delete("id = 2")
    assert [f["partition"] for f in t.inspect.files().to_pylist()] == [{"u": None}] * 2
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1, 3]
    java = rows_of(iceberg_spark.sql("SELECT id FROM {c}.db.unknown_part ORDER BY id"))
    assert java == [{"id": 1}, {"id": 3}]


def _data_files_on_disk(table: Any) -> list[str]:
    root = Path(table.location.removeprefix("file://")) / "data"
    return sorted(str(p) for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_failed_write_commits_nothing_and_cleans_up(spark: Any, iceberg_spark: JavaCatalog) -> None:
    cat = iceberg_spark.icefloe()
    cat.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "v", LongType())
    )
    t = cat.create_table("db.f", schema, format_version=3)
    ispark.write(spark.range(0, 10, 1, 1).selectExpr("id", "id AS v"), t)
    before = t.current_snapshot()
    files_before = _data_files_on_disk(t)
    # 4 tasks on 2 cores: the first two finish (and write files) before the last one, whose
    # rows include a null in the required column, fails on its executor.
    bad = spark.range(0, 400, 1, 4).selectExpr(
        "CASE WHEN id = 399 THEN NULL ELSE id END AS id", "id AS v"
    )
    with pytest.raises(ValidationError, match="required column 'id' has 1 null"):
        ispark.write(bad, t)
    assert t.refresh().current_snapshot() == before
    assert _data_files_on_disk(t) == files_before
    assert rows_of(iceberg_spark.sql("SELECT id FROM {c}.db.f")) == [{"id": i} for i in range(10)]


def test_merge_surfaces_executor_error_and_commits_nothing(
    spark: Any, iceberg_spark: JavaCatalog
) -> None:
    cat = iceberg_spark.icefloe()
    cat.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "v", LongType())
    )
    t = cat.create_table("db.m", schema, format_version=3)
    ispark.write(spark.range(0, 10, 1, 1).selectExpr("id", "id AS v"), t)
    before = t.current_snapshot()
    (task,) = t.scan().plan_files()
    path = task.data_file.file_path.removeprefix("file://")
    with open(path, "r+b") as f:  # damage the Parquet footer
        f.seek(os.path.getsize(path) - 8)
        f.write(b"\0" * 8)
    files_before = _data_files_on_disk(t)
    source = spark.range(5, 15, 1, 2).selectExpr("id", "id * 10 AS v")
    with pytest.raises(CorruptFileError):
        ispark.merge(source, t, on=["id"])
    assert t.refresh().current_snapshot() == before
    assert _data_files_on_disk(t) == files_before
