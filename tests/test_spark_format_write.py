"""Batch writes through the ``icefloe`` format: one snapshot per job, the same rows as
``icefloe.spark.write`` and icefloe's single-process operations, read back by Iceberg Java;
a failed task, an aborted job and a commit that loses a race leave the table and its storage
as they should be."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.spark import JavaCatalog
from support.spark_format import catalog_options, fmt_read
from support.spark_util import SPEC, all_types_rows, all_types_schema, icefloe_catalog, spark_rows

pytest.importorskip("pyspark")

import icefloe.spark as ispark
from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.spark.errors import icefloe_errors
from icefloe.transforms import IdentityTransform
from icefloe.types import LongType, NestedField, StringType

pytestmark = pytest.mark.spark


def _save(df: Any, catalog: Any, table: str, mode: str = "append", **options: str) -> None:
    w = df.write.format("icefloe").options(**catalog_options(catalog)).mode(mode)
    for k, v in options.items():
        w = w.option(k.replace("_", "-"), v)
    w.save(table)


def _files_on_disk(table: Any) -> list[str]:
    root = Path(table.location.removeprefix("file://")) / "data"
    return sorted(str(p) for p in root.rglob("*") if p.is_file()) if root.exists() else []


KV = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "k", StringType()),
)
BY_K = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "k"))


def _kv(ids: range, k: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "k": [k] * len(ids)})


@pytest.mark.parametrize("version", [2, 3])
def test_append_equals_function_write_and_java_reads_it(
    spark: Any, iceberg_spark: JavaCatalog, version: int
) -> None:
    from pyspark.sql import functions as F

    ispark.register(spark)
    cat = iceberg_spark.icefloe()
    cat.create_namespace("db")
    schema = all_types_schema(with_time=False)  # Spark has no type for Iceberg's time
    a = cat.create_table("db.a", schema, partition_spec=SPEC, format_version=version)
    b = cat.create_table("db.b", schema, partition_spec=SPEC, format_version=version)
    a.append(all_types_rows(0, 30, schema))
    b.append(all_types_rows(0, 30, schema))
    rows = ispark.read(spark, a).where("id < 20").withColumn("id", F.col("id") + 100)
    _save(rows.repartition(2), cat, "db.a")
    ispark.write(rows.repartition(2), b)
    a, b = a.refresh(), b.refresh()
    assert len(a.snapshots()) == 2 and a.current_snapshot().operation == "append"
    ours = spark_rows(fmt_read(spark, cat, "db.a"))
    assert ours == spark_rows(ispark.read(spark, b))
    assert [r["id"] for r in ours] == list(range(30)) + list(range(100, 120))
    java = spark_rows(iceberg_spark.sql("SELECT * FROM {c}.db.a"))
    assert java == ours
    # Written files carry metrics: a selective scan prunes by them.
    added = a.current_snapshot().summary.get_int("added-data-files")
    assert added is not None and added >= 1
    assert len(a.scan(row_filter="id = 105").plan_files()) < len(a.scan().plan_files())


def test_overwrite_modes_equal_single_process_operations(spark: Any, tmp_path: Path) -> None:
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name="ow")
    cat.create_namespace("db")
    new = _kv(range(100, 104), "b")
    for name in ("full", "filter", "dynamic"):
        for suffix in ("", "_oracle"):
            t = cat.create_table(f"db.{name}{suffix}", KV, partition_spec=BY_K, format_version=2)
            t.append(_kv(range(0, 10), "a"))
            t.append(_kv(range(10, 20), "b"))
            t.append(_kv(range(20, 30), "c"))
    df = spark.createDataFrame(new.to_pandas()).selectExpr("CAST(id AS bigint) id", "k")

    _save(df, cat, "db.full", "overwrite")
    cat.load_table("db.full_oracle").overwrite(new)
    _save(df, cat, "db.filter", "overwrite", overwrite_filter="id >= 5 and id < 25")
    cat.load_table("db.filter_oracle").overwrite(new, "id >= 5 and id < 25")
    _save(df, cat, "db.dynamic", "overwrite", overwrite_mode="dynamic")
    cat.load_table("db.dynamic_oracle").dynamic_partition_overwrite(new)

    for name in ("full", "filter", "dynamic"):
        t = cat.load_table(f"db.{name}")
        oracle = cat.load_table(f"db.{name}_oracle")
        got = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
        want = sorted(oracle.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
        assert got == want, name
        assert len(t.snapshots()) == 4, name  # one snapshot for the job
    ids = {r["id"] for r in cat.load_table("db.dynamic").scan().to_arrow().to_pylist()}
    assert ids == set(range(10)) | set(range(20, 30)) | set(range(100, 104))
    with pytest.raises(Exception, match="need mode overwrite"):
        _save(df, cat, "db.full", "append", overwrite_mode="dynamic")


def _failing_rows(spark: Any) -> Any:
    # 4 tasks on 2 cores: the first ones finish (and write files) before the last one fails
    # on its executor (a null in the required column).
    return spark.range(0, 400, 1, 4).selectExpr(
        "CASE WHEN id = 399 THEN NULL ELSE id END AS id", "'x' AS k"
    )


def test_failed_task_commits_nothing_and_leaves_no_files(spark: Any, tmp_path: Path) -> None:
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name="fail")
    cat.create_namespace("db")
    t = cat.create_table("db.t", KV, format_version=3)
    t.append(_kv(range(10), "a"))
    before, files = t.current_snapshot(), _files_on_disk(t)
    with pytest.raises(ValidationError, match="required column 'id' has 1 null"), icefloe_errors():
        _save(_failing_rows(spark), cat, "db.t")
    t = t.refresh()
    assert t.current_snapshot() == before
    assert _files_on_disk(t) == files  # abort deleted every file the job wrote
    assert t.scan().to_arrow().num_rows == 10


def _append_once(warehouse: str, marker: str) -> Any:
    """A mapInArrow function that, on the first batch it sees anywhere, commits an append of
    its own to ``db.t`` (a concurrent writer, while the Spark job runs)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import os

        from icefloe.catalog.hadoop import HadoopCatalog

        for b in batches:
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                t = HadoopCatalog("race", warehouse=warehouse).load_table("db.t")
                extra = {"id": pa.array(range(1000, 1005), pa.int64()), "k": ["a"] * 5}
                t.append(pa.table(extra))
            yield b

    return run


def test_commit_that_loses_a_race_is_retried(spark: Any, tmp_path: Path) -> None:
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name="race")
    cat.create_namespace("db")
    t = cat.create_table("db.t", KV, partition_spec=BY_K, format_version=2)
    t.append(_kv(range(10), "a"))
    rows = spark.range(100, 110, 1, 2).selectExpr("id", "'a' AS k")
    racing = rows.mapInArrow(_append_once(str(cat.warehouse), str(tmp_path / "m1")), rows.schema)
    _save(racing, cat, "db.t")
    t = t.refresh()
    # the job's snapshot was rebuilt on the concurrent one: both appends are there
    ids = sorted(r["id"] for r in t.scan().to_arrow().to_pylist())
    assert ids == list(range(10)) + list(range(100, 110)) + list(range(1000, 1005))
    assert [s.operation for s in t.snapshots()] == ["append"] * 3
    # A dynamic overwrite of partition 'a' conflicts with a concurrent append to 'a':
    # nothing is committed and the job's files are deleted.
    before, files = t.current_snapshot(), set(_files_on_disk(t))
    racing = rows.mapInArrow(_append_once(str(cat.warehouse), str(tmp_path / "m2")), rows.schema)
    with pytest.raises(CommitConflictError), icefloe_errors():
        _save(racing, cat, "db.t", "overwrite", overwrite_mode="dynamic")
    t = t.refresh()
    assert t.current_snapshot().parent_snapshot_id == before.snapshot_id  # only the racer
    assert t.scan().to_arrow().num_rows == 25 + 5
    leftover = set(_files_on_disk(t)) - files
    live = {task.data_file.file_path.removeprefix("file://") for task in t.scan().plan_files()}
    assert leftover <= live  # only the racer's file is new on disk


def test_abort_after_an_interrupted_commit_keeps_what_the_table_references(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark calls ``abort`` after ``commit`` raised. A commit interrupted after the catalog
    swap may have happened: neither the commit's error path nor ``abort`` may delete the files
    the table now references. A job that never committed is cleaned up by ``abort``."""
    from pyspark.sql.types import LongType as SparkLong
    from pyspark.sql.types import StringType as SparkString
    from pyspark.sql.types import StructField, StructType

    from icefloe.catalog.hadoop import HadoopCatalog
    from icefloe.spark.format_write import IcefloeWriter

    catalog = icefloe_catalog(tmp_path / "wh")
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", KV, partition_spec=BY_K)
    options = {**catalog_options(catalog), "path": "db.t"}
    spark_schema = StructType([StructField("id", SparkLong()), StructField("k", SparkString())])

    # a job whose commit is interrupted just after the pointer moved
    job = IcefloeWriter(options, spark_schema, overwrite=False)
    messages = [job.write(iter(_kv(range(3), "a").to_batches()))]
    swap = HadoopCatalog.commit_table

    def swap_then_interrupt(self: Any, *args: Any, **kwargs: Any) -> Any:
        swap(self, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(HadoopCatalog, "commit_table", swap_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        job.commit(messages)
    monkeypatch.setattr(HadoopCatalog, "commit_table", swap)
    job.abort(messages)  # what Spark does next
    after = catalog.load_table("db.t")
    assert sorted(after.scan().to_arrow()["id"].to_pylist()) == [0, 1, 2]
    assert len(_files_on_disk(after)) == 1

    # a job that fails before committing leaves nothing behind
    failed = IcefloeWriter(options, spark_schema, overwrite=False)
    failed_messages = [failed.write(iter(_kv(range(10, 13), "b").to_batches()))]
    assert len(_files_on_disk(after)) == 2
    failed.abort(failed_messages)
    assert len(_files_on_disk(catalog.load_table("db.t"))) == 1
    assert table.metadata_location != catalog.load_table("db.t").metadata_location


def test_every_planner_step_prepares_its_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark runs each data source step on the driver in a reused Python worker that calls
    ``importlib.invalidate_caches`` first: every icefloe step runs ``prepare_worker`` so that
    the worker's later steps skip re-reading Spark's archives."""
    from pyspark.sql.types import LongType as SparkLong
    from pyspark.sql.types import StringType as SparkString
    from pyspark.sql.types import StructField, StructType

    import icefloe.spark.worker as worker
    from icefloe.spark.source import IcefloeDataSource

    catalog = icefloe_catalog(tmp_path / "wh")
    catalog.create_namespace("db")
    catalog.create_table("db.t", KV, partition_spec=BY_K).append(_kv(range(3), "a"))
    options = {**catalog_options(catalog), "path": "db.t"}
    spark_schema = StructType([StructField("id", SparkLong()), StructField("k", SparkString())])
    calls: list[str] = []
    monkeypatch.setattr(worker, "prepare_worker", lambda: calls.append("prepared") or 0)

    def step(name: str, fn: Any) -> Any:
        before = len(calls)
        out = fn()
        assert len(calls) > before, f"{name} did not prepare its worker"
        return out

    source = IcefloeDataSource({**options, "filter-pushdown": "true"})
    step("schema", source.schema)
    reader = step("reader", lambda: source.reader(spark_schema))
    step("pushFilters", lambda: list(reader.pushFilters([])))
    step("partitions", reader.partitions)
    job = step("writer", lambda: source.writer(spark_schema, False))
    messages = [job.write(iter(_kv(range(3, 5), "b").to_batches()))]
    step("commit", lambda: job.commit(messages))
    failed = step("writer", lambda: source.writer(spark_schema, False))
    failed_messages = [failed.write(iter(_kv(range(9, 10), "c").to_batches()))]
    step("abort", lambda: failed.abort(failed_messages))
    sink = IcefloeDataSource({**options, "query-id": "q"})
    stream = step("streamWriter", lambda: sink.streamWriter(spark_schema, False))
    step("stream commit", lambda: stream.commit([], 0))
    step("stream abort", lambda: stream.abort([], 1))
    stream_reader = step("streamReader", lambda: source.streamReader(spark_schema))
    start = step("initialOffset", stream_reader.initialOffset)
    end = step("latestOffset", stream_reader.latestOffset)
    step("stream partitions", lambda: stream_reader.partitions(start, end))
    ids = catalog.load_table("db.t").scan().to_arrow()["id"].to_pylist()
    assert sorted(ids) == [0, 1, 2, 3, 4]


def test_column_types_are_checked_when_the_write_is_planned(spark: Any, tmp_path: Path) -> None:
    """A DataFrame column whose type cannot be written to the table's (by the rules the tasks
    apply) is refused on the driver before any task runs, naming the column and Spark's cast
    that fixes it; nothing is committed. Value checks stay with the tasks."""
    from icefloe.types import FloatType, TimestampType

    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name="types")
    cat.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "ts", TimestampType()),
        NestedField(3, "f", FloatType()),
    )
    t = cat.create_table("db.t", schema, format_version=2)
    ts = "timestamp_ntz'2024-01-01 12:00:00'"
    group = "icefloe-type-check"
    spark.sparkContext.setJobGroup(group, "writes refused when planned")
    try:
        for sql, match in (
            (
                "1L id, timestamp'2024-01-01 12:00:00' ts",
                r'"ts", col\("ts"\).cast\("timestamp_ntz"\)',
            ),
            (f"1L id, {ts} ts, 1.5D f", r"'f' has Spark type double.*cast\(\"float\"\)"),
            (f"1L id, {ts} ts, 1 F", r"'F' has Spark type int.*col\(\"F\"\).cast\(\"float\"\)"),
            ("'1' id", r"'id' has Spark type string.*cast\(\"bigint\"\)"),
            (f"{ts} ts", "required column 'id' is missing"),
        ):
            with pytest.raises(ValidationError, match=match), icefloe_errors():
                _save(spark.sql(f"SELECT {sql}"), cat, "db.t")
        assert list(spark.sparkContext.statusTracker().getJobIdsForGroup(group)) == []
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert t.refresh().current_snapshot() is None and _files_on_disk(t) == []
    df = spark.sql("SELECT 1L id, timestamp'2024-01-01 12:00:00' ts, 1.5D f")
    _save(df.selectExpr("id", "CAST(ts AS timestamp_ntz) ts", "CAST(f AS float) f"), cat, "db.t")
    assert t.refresh().scan().to_arrow().to_pylist()[0]["f"] == 1.5


def test_the_stream_sink_checks_column_types_when_it_starts(tmp_path: Path) -> None:
    """The streaming sink's writer (made when the query starts) refuses the same types."""
    from pyspark.sql.types import DoubleType, StructField, StructType

    from icefloe.spark.format_write import IcefloeStreamWriter

    catalog = icefloe_catalog(tmp_path / "wh")
    catalog.create_namespace("db")
    catalog.create_table("db.t", KV)
    options = {**catalog_options(catalog), "path": "db.t", "checkpointlocation": str(tmp_path)}
    spark_schema = StructType([StructField("id", DoubleType())])
    with pytest.raises(ValidationError, match=r"'id' has Spark type double.*cast\(\"bigint\"\)"):
        IcefloeStreamWriter(options, spark_schema, overwrite=False)
