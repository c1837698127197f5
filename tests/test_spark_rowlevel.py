"""icefloe.spark.delete / merge: positions on executors, DVs (v3) or position deletes (v2),
read back identically by icefloe and by Spark + Iceberg Java."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.spark import JavaCatalog
from support.spark_util import (
    SPEC,
    all_types_rows,
    all_types_schema,
    arrow_rows,
    icefloe_catalog,
    single_process,
)
from support.spark_util import spark_rows as rows_of

pytest.importorskip("pyspark")

import icefloe.spark as ispark
from icefloe.arrow_schema import schema_to_arrow
from icefloe.exceptions import ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.spark.schema import arrow_for_spark, spark_schema, to_spark_batch
from icefloe.transforms import IdentityTransform
from icefloe.types import LongType, NestedField

pytestmark = pytest.mark.spark


def _frame(spark: Any, table: pa.Table, schema: Any) -> Any:
    fields = list(schema.fields)
    batch = to_spark_batch(table.combine_chunks().to_batches()[0], fields, arrow_for_spark(fields))
    return spark.createDataFrame(pa.Table.from_batches([batch]), schema=spark_schema(schema))


def _delete_files(table: Any) -> list[Any]:
    return [d for t in table.scan().plan_files() for d in t.delete_files]


@pytest.mark.parametrize("version", [2, 3])
def test_delete_and_merge_read_back_by_java(
    spark: Any, iceberg_spark: JavaCatalog, version: int
) -> None:
    cat = iceberg_spark.icefloe()
    cat.create_namespace("db")
    schema = all_types_schema(with_time=False)
    t = cat.create_table("db.r", schema, partition_spec=SPEC, format_version=version)
    ispark.write(_frame(spark, all_types_rows(0, 300, schema), schema), t)
    files_before = {task.data_file.file_path for task in t.scan().plan_files()}

    ispark.delete(spark, t, f"id in ({', '.join(str(i) for i in range(3, 300, 10))})")
    ids = [r["id"] for r in single_process(t)]
    assert ids == [i for i in range(300) if i % 10 != 3]
    # Merge-on-read: no data file rewritten, delete files of the version's kind added.
    assert {task.data_file.file_path for task in t.scan().plan_files()} == files_before
    kinds = {d.file_format for d in _delete_files(t)}
    assert kinds == ({"puffin"} if version == 3 else {"parquet"})

    # Upsert: ids 290..309 (290..299 exist, except 293) updated or inserted.
    src = all_types_rows(290, 20, schema)
    src = src.set_column(src.schema.get_field_index("s"), "s", pa.array(["new"] * 20))
    ispark.merge(_frame(spark, src, schema), t, on=["id"])
    ours = arrow_rows(single_process(t))
    assert [r["id"] for r in ours] == sorted(
        [i for i in range(290) if i % 10 != 3] + list(range(290, 310))
    )
    assert all(r["s"] == "new" for r in ours if r["id"] >= 290)
    java = rows_of(iceberg_spark.sql("SELECT * FROM {c}.db.r"))
    assert java == ours
    assert rows_of(ispark.read(spark, t)) == ours

    # when_matched="delete", no inserts.
    gone = all_types_rows(0, 5, schema)
    ispark.merge(
        _frame(spark, gone, schema), t, on=["id"], when_matched="delete", when_not_matched=None
    )
    java_ids = sorted(r["id"] for r in iceberg_spark.sql("SELECT id FROM {c}.db.r").collect())
    assert java_ids[:3] == [5, 6, 7]
    assert java_ids == [r["id"] for r in single_process(t)]


def test_merge_rejects_duplicate_source_keys(spark: Any, iceberg_spark: JavaCatalog) -> None:
    cat = iceberg_spark.icefloe()
    cat.create_namespace("db")
    schema = all_types_schema(with_time=False)
    t = cat.create_table("db.d", schema, format_version=3)
    ispark.write(_frame(spark, all_types_rows(0, 20, schema), schema), t)
    dup = pa.concat_tables([all_types_rows(3, 1, schema), all_types_rows(3, 1, schema)])
    snapshot = t.current_snapshot()
    with pytest.raises(ValidationError, match="more than one source row"):
        ispark.merge(_frame(spark, dup, schema), t, on=["id"])
    assert t.refresh().current_snapshot() == snapshot
    # a source without every column would wipe the missing ones in updated rows
    partial = _frame(spark, all_types_rows(3, 2, schema), schema).select("id")
    with pytest.raises(ValidationError, match="lacks the columns"):
        ispark.merge(partial, t, on=["id"])
    assert t.refresh().current_snapshot() == snapshot


def _by_part(tmp_path: Path, version: int) -> tuple[Any, Any]:
    """A catalog and its table ``db.t`` (``id``, ``part``), partitioned by ``part``."""
    cat = icefloe_catalog(tmp_path)
    cat.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "part", LongType(), required=True),
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "part"))
    return cat, cat.create_table("db.t", schema, partition_spec=spec, format_version=version)


@pytest.mark.spark
@pytest.mark.parametrize("version", [2, 3])
def test_delete_drops_wholly_matching_files(spark: Any, tmp_path: Path, version: int) -> None:
    """Files whose every live row matches are removed whole (no delete file for them); the
    others get position deletes or DVs for their matching rows only."""
    _, t = _by_part(tmp_path, version)
    ispark.write(spark.range(0, 1000, 1, 3).selectExpr("id", "id % 4 AS part"), t)
    whole = {task.data_file.file_path for task in t.scan(row_filter="part = 1").plan_files()}
    ispark.delete(spark, t, "part = 1 or id = 2")
    snap = t.current_snapshot()
    assert snap is not None and snap.summary is not None
    assert snap.summary.get_int("deleted-data-files") == len(whole) > 0
    assert snap.summary.get_int("added-position-deletes") == 1
    tasks = t.scan().plan_files()
    assert not whole & {task.data_file.file_path for task in tasks}
    assert sum(len(task.delete_files) for task in tasks) == 1
    got = sorted(r["id"] for r in single_process(t))
    assert got == [i for i in range(1000) if i % 4 != 1 and i != 2]


@pytest.mark.spark
def test_delete_drops_files_the_metrics_prove_without_a_job(spark: Any, tmp_path: Path) -> None:
    """A retention delete on ids: the files whose ``id`` bounds lie under the bound are dropped
    from their metrics (their data files are gone from storage here, so a task reading them
    would fail); the file across the bound gets DVs."""
    cat = icefloe_catalog(tmp_path)
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    t = cat.create_table("db.m", schema, format_version=3)
    for lo, hi in [(0, 50), (50, 100), (90, 140)]:
        t.append(pa.table({"id": pa.array(range(lo, hi), pa.int64())}))
    old = [
        task.data_file.file_path
        for task in t.scan(row_filter="id < 90").plan_files()
        if task.data_file.record_count == 50
    ]
    assert len(old) == 2
    for path in old:
        Path(path.removeprefix("file://")).unlink()
    ispark.delete(spark, t, "id < 100")
    snap = t.current_snapshot()
    assert snap is not None and snap.summary is not None
    assert snap.summary.get_int("deleted-data-files") == 2
    assert sorted(r["id"] for r in single_process(t)) == list(range(100, 140))


@pytest.mark.spark
def test_overwrite_by_filter_replaces_rows_added_while_the_job_ran(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``write(mode='overwrite', overwrite_filter=...)`` replaces the rows the filter matches
    in the table as it is after its Spark job: rows another writer appended meanwhile go too;
    rows appended after the overwrite planned make its commit fail (serializable), never stay
    beside the new rows."""
    import icefloe.spark.writing as writing
    from icefloe.exceptions import CommitConflictError

    cat, t = _by_part(tmp_path, 2)
    arrow = schema_to_arrow(t.schema())
    t.append(pa.table({"id": [0, 1, 5], "part": [1, 1, 2]}, schema=arrow))
    other = cat.load_table("db.t")
    real_write, real_plan = writing.write_files, writing._overwrite_plan

    def write_then_append(*args: Any) -> Any:
        out = real_write(*args)
        other.refresh().append(pa.table({"id": [100, 101], "part": [1, 2]}, schema=arrow))
        return out

    monkeypatch.setattr(writing, "write_files", write_then_append)
    source = spark.createDataFrame([(7, 1)], "id long, part long")
    ispark.write(source, cat.load_table("db.t"), mode="overwrite", overwrite_filter="part = 1")
    got = sorted((r["id"], r["part"]) for r in single_process(cat.load_table("db.t")))
    assert got == [(5, 2), (7, 1), (101, 2)]

    def plan_then_append(*args: Any) -> Any:
        out = real_plan(*args)
        other.refresh().append(pa.table({"id": [200], "part": [1]}, schema=arrow))
        return out

    monkeypatch.setattr(writing, "write_files", real_write)
    monkeypatch.setattr(writing, "_overwrite_plan", plan_then_append)
    with pytest.raises(CommitConflictError, match="may hold rows"):
        ispark.write(source, cat.load_table("db.t"), mode="overwrite", overwrite_filter="part = 1")
    got = sorted((r["id"], r["part"]) for r in single_process(cat.load_table("db.t")))
    assert got == [(5, 2), (7, 1), (101, 2), (200, 1)]


@pytest.mark.spark
def test_merge_matches_names_that_differ_in_case_as_spark_does(spark: Any, tmp_path: Path) -> None:
    """Under Spark's default ``spark.sql.caseSensitive=false`` a merge source's columns and
    keys may differ in case from the table's, as with Java's ``MERGE INTO``; with the setting
    true they must match exactly."""
    cat = icefloe_catalog(tmp_path)
    cat.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "part", LongType(), required=True),
    )
    t = cat.create_table("db.t", schema, format_version=3)
    t.append(pa.table({"id": [1, 2], "part": [10, 20]}, schema=schema_to_arrow(t.schema())))
    source = spark.createDataFrame([(2, 22), (3, 33)], "ID long, Part long")
    for key in ("id", "ID"):
        ispark.merge(source, cat.load_table("db.t"), on=[key])
    got = sorted((r["id"], r["part"]) for r in single_process(cat.load_table("db.t")))
    assert got == [(1, 10), (2, 22), (3, 33)]
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        with pytest.raises(ValidationError, match="not a column of the source"):
            ispark.merge(source, cat.load_table("db.t"), on=["id"])
    finally:
        spark.conf.set("spark.sql.caseSensitive", "false")


@pytest.mark.spark
def test_merge_fails_on_data_added_while_it_ran(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merge reads every row; data another writer adds while its job runs may hold keys it
    should have matched: the commit fails (serializable, the default, as Java's ``MERGE
    INTO``), never leaving two rows of one key. Under ``snapshot`` isolation it commits."""
    import icefloe.spark.rowlevel as rowlevel
    from icefloe.exceptions import CommitConflictError

    cat, t = _by_part(tmp_path, 3)
    arrow = schema_to_arrow(t.schema())
    t.append(pa.table({"id": [1, 2], "part": [1, 2]}, schema=arrow))
    other = cat.load_table("db.t")
    real_write = rowlevel.write_files

    def write_then_append(*args: Any, **kwargs: Any) -> Any:
        out = real_write(*args, **kwargs)
        other.refresh().append(pa.table({"id": [500], "part": [0]}, schema=arrow))
        return out

    monkeypatch.setattr(rowlevel, "write_files", write_then_append)
    source = spark.createDataFrame([(500, 5), (1, 11)], "id long, part long")
    with pytest.raises(CommitConflictError, match="may hold rows"):
        ispark.merge(source, cat.load_table("db.t"), on=["id"])
    got = sorted((r["id"], r["part"]) for r in single_process(cat.load_table("db.t")))
    assert got == [(1, 1), (2, 2), (500, 0)]

    cat.load_table("db.t").set_properties(**{"write.merge.isolation-level": "snapshot"})
    ispark.merge(source, cat.load_table("db.t"), on=["id"])  # another (500, 0) lands meanwhile
    got = sorted((r["id"], r["part"]) for r in single_process(cat.load_table("db.t")))
    assert got == [(1, 11), (2, 2), (500, 0), (500, 5)]
