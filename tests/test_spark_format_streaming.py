"""Structured Streaming through the ``icefloe`` format: the source streams the appended
snapshots once each, the sink commits each micro-batch once, across restarts from the
checkpoint (also when the last batch was committed to the table but not to Spark's log)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.spark_format import KV, catalog_options, kv, src_dst
from support.spark_util import icefloe_catalog

pytest.importorskip("pyspark")

import icefloe.spark as ispark
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.spark.format_write import BATCH_ID, QUERY, checkpoint_location
from icefloe.transforms import IdentityTransform
from icefloe.types import LongType, NestedField, StringType

pytestmark = pytest.mark.spark

BY_K = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "k"))
COUNTS = Schema(NestedField(1, "k", StringType()), NestedField(2, "n", LongType()))


def _stream(spark: Any, cat: Any, src: str, **options: str) -> Any:
    r = spark.readStream.format("icefloe").options(**catalog_options(cat))
    for k, v in options.items():
        r = r.option(k.replace("_", "-"), v)
    return r.load(src)


def _start(df: Any, cat: Any, dst: str, checkpoint: Path, mode: str = "append") -> Any:
    """The query writing ``df`` into ``dst`` through the format, started."""
    return (
        df.writeStream.format("icefloe")
        .options(**catalog_options(cat))
        .option("checkpointLocation", str(checkpoint))
        .outputMode(mode)
        .start(dst)
    )


def _run(df: Any, cat: Any, dst: str, checkpoint: Path, mode: str = "append") -> list[int]:
    """Runs the query until the source has nothing more, then stops it; returns the rows of
    each micro-batch it ran."""
    q = _start(df, cat, dst, checkpoint, mode)
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]


def test_restarted_query_commits_each_batch_once(spark: Any, tmp_path: Path) -> None:
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name="stream")
    cat.create_namespace("db")
    src = cat.create_table("db.src", KV, partition_spec=BY_K, format_version=2)
    dst = cat.create_table("db.dst", KV, format_version=2)
    src.append(kv(range(0, 10)))
    src.append(kv(range(10, 20)))
    # one snapshot of three files (one per partition)
    src.append(pa.concat_tables([kv(range(20 + 5 * i, 25 + 5 * i), "xyz"[i]) for i in range(3)]))
    three = src.refresh().current_snapshot()
    ck = tmp_path / "ck"
    stream = _stream(spark, cat, "db.src", max_files_per_micro_batch="2")
    # 5 files, at most 2 per batch: 10+10 | 5+5 | 5 rows
    assert _run(stream, cat, "db.dst", ck) == [20, 10, 5]
    dst = dst.refresh()
    assert sorted(r["id"] for r in dst.scan().to_arrow().to_pylist()) == list(range(35))
    assert [s.summary.get(BATCH_ID) for s in dst.snapshots()] == ["0", "1", "2"]
    assert {s.summary.get(QUERY) for s in dst.snapshots()} == {checkpoint_location(str(ck))}
    assert three.summary.get_int("added-data-files") == 3

    # A crash after the table commit of batch 2 but before Spark logged it: Spark replays
    # batch 2 on restart, and the sink must not commit it again.
    (ck / "commits" / "2").unlink()
    (ck / "commits" / ".2.crc").unlink(missing_ok=True)
    src = src.refresh()
    src.append(kv(range(100, 110)))
    src.append(kv(range(110, 115)))
    _run(_stream(spark, cat, "db.src", max_files_per_micro_batch="2"), cat, "db.dst", ck)
    dst = dst.refresh()
    ids = sorted(r["id"] for r in dst.scan().to_arrow().to_pylist())
    assert ids == list(range(35)) + list(range(100, 115))  # nothing twice, nothing lost
    batches = [s.summary.get(BATCH_ID) for s in dst.snapshots()]
    assert batches == ["0", "1", "2", "3"]


def test_complete_mode_replaces_rows_each_batch(spark: Any, tmp_path: Path) -> None:
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name="complete")
    cat.create_namespace("db")
    src = cat.create_table("db.src", KV, format_version=2)
    out = cat.create_table("db.counts", COUNTS, format_version=2)
    src.append(kv(range(0, 6), "a"))
    src.append(kv(range(6, 10), "b"))
    counts = _stream(spark, cat, "db.src").groupBy("k").count().withColumnRenamed("count", "n")
    ck = tmp_path / "ck"
    _run(counts, cat, "db.counts", ck, mode="complete")
    src.refresh().append(kv(range(10, 13), "a"))
    _run(
        _stream(spark, cat, "db.src").groupBy("k").count().withColumnRenamed("count", "n"),
        cat,
        "db.counts",
        ck,
        mode="complete",
    )
    rows = sorted(out.refresh().scan().to_arrow().to_pylist(), key=lambda r: r["k"])
    assert rows == [{"k": "a", "n": 9}, {"k": "b", "n": 4}]
    ops = [s.operation for s in out.snapshots()]
    assert len(ops) == 2 and ops[-1] == "overwrite"


def test_source_fails_on_deletes_unless_told_to_skip(spark: Any, tmp_path: Path) -> None:
    cat, src = src_dst(spark, tmp_path, "nonappend")
    src.append(kv(range(100, 105)))
    src.delete("id >= 100")  # a whole file: a delete snapshot
    assert src.current_snapshot().operation == "delete"
    src.append(kv(range(10, 15)))
    with pytest.raises(Exception, match=r"operation is 'delete'.*skip-delete-snapshots"):
        _run(_stream(spark, cat, "db.src"), cat, "db.dst", tmp_path / "ck1")
    _run(
        _stream(spark, cat, "db.src", skip_delete_snapshots="true"), cat, "db.dst", tmp_path / "ck2"
    )
    ids = sorted(r["id"] for r in cat.load_table("db.dst").scan().to_arrow().to_pylist())
    # every appended row once, in commit order; the delete is not streamed
    assert ids == list(range(15)) + list(range(100, 105))


def test_empty_micro_batch_is_recorded_and_replayed_once(spark: Any, tmp_path: Path) -> None:
    """A micro-batch whose rows are all filtered out still commits its (empty) snapshot with
    its batch id (the user-facing append of zero rows commits nothing; the sink commits
    explicitly), and a restart that replays it commits neither it nor anything twice."""
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name="empty")
    cat.create_namespace("db")
    src = cat.create_table("db.src", KV, format_version=2)
    dst = cat.create_table("db.dst", KV, format_version=2)
    ck = tmp_path / "ck"

    def only_a() -> Any:
        return _stream(spark, cat, "db.src").where("k = 'a'")

    src.append(kv(range(0, 5), "a"))
    _run(only_a(), cat, "db.dst", ck)
    src.refresh().append(kv(range(5, 10), "b"))  # nothing of it passes the filter
    _run(only_a(), cat, "db.dst", ck)
    dst = dst.refresh()
    snaps = dst.snapshots()
    assert [s.summary.get(BATCH_ID) for s in snaps] == ["0", "1"]
    assert snaps[-1].summary.get_int("added-records") in (None, 0)
    assert (ck / "commits" / "1").exists()
    # a crash after the empty batch's table commit, before Spark logged it: replayed on restart
    (ck / "commits" / "1").unlink()
    (ck / "commits" / ".1.crc").unlink(missing_ok=True)
    src.refresh().append(kv(range(10, 13), "a"))
    _run(only_a(), cat, "db.dst", ck)
    dst = dst.refresh()
    ids = sorted(r["id"] for r in dst.scan().to_arrow().to_pylist())
    assert ids == [*range(0, 5), *range(10, 13)]
    assert [s.summary.get(BATCH_ID) for s in dst.snapshots()] == ["0", "1", "2"]


def test_a_fresh_checkpoint_at_the_same_location_commits_its_batches(
    spark: Any, tmp_path: Path
) -> None:
    # deleting a checkpoint and starting again there is a new run of the query: its batch ids
    # start at 0 again and must not be taken for replays of the old run's
    import shutil

    cat, _ = src_dst(spark, tmp_path, "fresh")
    ck = tmp_path / "ck"
    _run(_stream(spark, cat, "db.src"), cat, "db.dst", ck)
    shutil.rmtree(ck)
    other = cat.create_table("db.src2", KV, format_version=2)
    other.append(kv(range(100, 110)))
    _run(_stream(spark, cat, "db.src2"), cat, "db.dst", ck)
    dst = cat.load_table("db.dst")
    ids = sorted(r["id"] for r in dst.scan().to_arrow().to_pylist())
    assert ids == list(range(10)) + list(range(100, 110))
    runs = {s.summary.get("icefloe.streaming.query-run") for s in dst.snapshots()}
    assert len(runs) == 2 and None not in runs


def test_a_stream_with_a_given_schema_reads_its_columns(spark: Any, tmp_path: Path) -> None:
    """``readStream.schema("id bigint")`` streams that column, as a batch read does (every
    batch stopped with "the table's schema changed", which it had not)."""
    cat, src = src_dst(spark, tmp_path, "given")
    df = (
        spark.readStream.format("icefloe")
        .options(**catalog_options(cat))
        .schema("id bigint")
        .load("db.src")
    )
    q = df.writeStream.format("memory").queryName("given_schema").start()
    try:
        q.processAllAvailable()
        src.refresh().append(kv(range(10, 12)))
        q.processAllAvailable()
    finally:
        q.stop()
    rows = spark.sql("SELECT * FROM given_schema").collect()
    assert [tuple(r) for r in sorted(rows)] == [(i,) for i in range(12)]


def test_a_given_schema_that_does_not_fit_says_so(spark: Any, tmp_path: Path) -> None:
    """A schema given to a read or a stream that does not fit the table is reported as such:
    it was reported as the table's schema having changed, with advice (restart, read again)
    that could never help."""
    cat, _ = src_dst(spark, tmp_path, "misfit")
    for given, problem in [
        ("nope bigint", "column 'nope' is not in it"),
        ("id int", "column 'id' is bigint in it, not int"),
    ]:
        message = f"schema given to the read does not fit the table: {problem}"
        reader = spark.read.format("icefloe").options(**catalog_options(cat)).schema(given)
        with pytest.raises(Exception, match=message):
            reader.load("db.src").collect()
        df = (
            spark.readStream.format("icefloe")
            .options(**catalog_options(cat))
            .schema(given)
            .load("db.src")
        )
        q = df.writeStream.format("memory").queryName(f"misfit_{given.split()[0]}").start()
        try:
            with pytest.raises(Exception, match=message):
                q.processAllAvailable()
        finally:
            q.stop()


def test_a_column_made_optional_while_streaming_stops_the_query(spark: Any, tmp_path: Path) -> None:
    """Spark analysed the column as NOT NULL: once it is optional (and a null arrives), the
    query stops with the stream's error, not Spark's "Value at index is null"."""
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "optional", name="optional")
    cat.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    src = cat.create_table("db.src", schema)
    src.append(pa.table({"id": pa.array([1, 2], pa.int64())}, schema=schema))
    q = _stream(spark, cat, "db.src").writeStream.format("memory").queryName("optional").start()
    try:
        q.processAllAvailable()
        with src.refresh().update_schema() as u:
            u.make_column_optional("id")
        src.refresh().append(pa.table({"id": pa.array([None], pa.int64())}))
        with pytest.raises(Exception, match="schema changed while the query ran: column 'id'"):
            q.processAllAvailable()
    finally:
        q.stop()


def test_streams_refuse_refs_and_stop_on_schema_changes(spark: Any, tmp_path: Path) -> None:
    cat, src = src_dst(spark, tmp_path, "refuse")
    with pytest.raises(Exception, match="a stream reads the appends of the main branch"):
        _run(_stream(spark, cat, "db.src", branch="main"), cat, "db.dst", tmp_path / "ck1")
    q = _start(_stream(spark, cat, "db.src"), cat, "db.dst", tmp_path / "ck2")
    try:
        q.processAllAvailable()
        with src.refresh().update_schema() as u:
            u.rename_column("k", "kind")
        src.refresh().append(pa.table({"id": pa.array([10], pa.int64()), "kind": ["b"]}))
        with pytest.raises(Exception, match="schema changed while the query ran"):
            q.processAllAvailable()
    finally:
        q.stop()
