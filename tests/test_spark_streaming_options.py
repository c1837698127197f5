"""Streaming through the ``icefloe`` format: Iceberg Java's names of the stream source's
options are taken as icefloe's (or refused where it has no equivalent), not ignored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.spark_format import catalog_options
from support.spark_util import icefloe_catalog

pytest.importorskip("pyspark")

import icefloe.spark as ispark
from icefloe.schema import Schema
from icefloe.types import LongType, NestedField

pytestmark = pytest.mark.spark

IDS = Schema(NestedField(1, "id", LongType()))


def _ids(values: range) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


def _source(spark: Any, tmp_path: Path, name: str) -> tuple[Any, Any]:
    """A catalog whose table ``db.src`` had three appends of one file each."""
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name=name)
    cat.create_namespace("db")
    src = cat.create_table("db.src", IDS, format_version=2)
    for k in range(3):
        src = src.refresh()
        src.append(_ids(range(10 * k, 10 * k + 5)))
    return cat, src


def _batches(spark: Any, cat: Any, ck: Path, **options: str) -> tuple[list[int], list[int]]:
    """Streams ``db.src`` into a memory table until nothing is left; returns the rows of
    each micro-batch and the ids read."""
    name = f"mem_{ck.name}"
    q = (
        spark.readStream.format("icefloe")
        .options(**catalog_options(cat))
        .options(**options)
        .load("db.src")
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(ck))
        .start()
    )
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    rows = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    return rows, sorted(r[0] for r in spark.table(name).collect())


def test_java_max_files_per_micro_batch_limits_batches(spark: Any, tmp_path: Path) -> None:
    cat, _ = _source(spark, tmp_path, "maxfiles")
    rows, ids = _batches(
        spark, cat, tmp_path / "java", **{"streaming-max-files-per-micro-batch": "1"}
    )
    assert rows == [5, 5, 5]
    assert ids == [*range(0, 5), *range(10, 15), *range(20, 25)]


def test_java_skip_delete_snapshots_skips_them(spark: Any, tmp_path: Path) -> None:
    cat, src = _source(spark, tmp_path, "skipdel")
    src.refresh().delete("id < 5")  # a whole file: a delete snapshot
    assert src.refresh().current_snapshot().operation == "delete"
    src.refresh().append(_ids(range(30, 32)))
    _, ids = _batches(spark, cat, tmp_path / "java", **{"streaming-skip-delete-snapshots": "true"})
    assert ids == [*range(0, 5), *range(10, 15), *range(20, 25), 30, 31]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"streaming-max-rows-per-micro-batch": "3"},
            "'streaming-max-rows-per-micro-batch' is not supported",
        ),
        (
            {"streaming-skip-delete-snapshots": "true", "skip-delete-snapshots": "false"},
            "name the same setting with different values",
        ),
        ({"max-files-per-micro-batch": "0"}, "must be positive, got 0"),
        ({"branch": "b"}, "a stream reads the appends of the main branch"),
    ],
)
def test_java_options_without_a_meaning_here_are_refused(
    spark: Any, tmp_path: Path, options: dict[str, str], message: str
) -> None:
    cat, _ = _source(spark, tmp_path, "refused")
    with pytest.raises(Exception, match="ValidationError") as info:
        _batches(spark, cat, tmp_path / "ck", **options)
    assert message in str(info.value)
    # the refusal is the error reported, not PySpark's stream runner failing after it
    assert "UnboundLocalError" not in str(info.value)


@pytest.mark.parametrize("empty", [False, True])
def test_a_future_stream_from_timestamp_skips_what_was_committed_before_it(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty: bool
) -> None:
    """Snapshots committed before ``stream-from-timestamp`` are never streamed, also those
    committed after the query started when the timestamp was still ahead (as in Java)."""
    import time
    from types import SimpleNamespace

    import icefloe.metadata._builder as builder
    import icefloe.table.producer as producer

    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name=f"future{int(empty)}")
    cat.create_namespace("db")
    src = cat.create_table("db.src", IDS, format_version=2)
    if not empty:
        src.append(_ids(range(0, 3)))
    start = int(time.time() * 1000) + 3_600_000  # an hour ahead
    ck = tmp_path / f"ck{int(empty)}"

    def run() -> list[int]:  # one availableNow run of the query, from its checkpoint
        got: list[int] = []
        q = (
            spark.readStream.format("icefloe")
            .options(**catalog_options(cat))
            .option("stream-from-timestamp", str(start))
            .load("db.src")
            .writeStream.foreachBatch(lambda df, _: got.extend(r[0] for r in df.collect()))
            .option("checkpointLocation", str(ck))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        return sorted(got)

    assert run() == []
    src.refresh().append(_ids(range(10, 13)))  # before the timestamp
    assert run() == []
    # the next commit's clock reads the timestamp (snapshots take the committer's clock)
    clock = SimpleNamespace(time=lambda: start / 1000, time_ns=lambda: start * 1_000_000)
    monkeypatch.setattr(producer, "time", clock)
    monkeypatch.setattr(builder, "time", clock)
    src.refresh().append(_ids(range(20, 23)))
    assert src.refresh().current_snapshot().timestamp_ms == start
    assert run() == [20, 21, 22]
