"""Live checks with Java: Iceberg's Java runtime (Spark) reads the converted tables as Delta
read them, and Delta Lake itself regenerates a fixture that the converter then follows.

The shared test session carries Delta's jars, extension and catalog next to Iceberg's, which
DeltaSync's test writes through. Regeneration runs ``tests/gen_delta_fixtures.py``
in a subprocess with its own Spark session (the fixtures' warehouse and settings, without the
Iceberg runtime). ``ICEFLOE_DELTA_REGENERATE`` names the scenarios to regenerate (default
``dml``: deletion vectors, UPDATE/MERGE and row tracking; ``all`` for every one).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from icefloe.delta import DeltaLog, convert
from support.delta import CONVERTIBLE, UNCHECKED, fixture
from support.spark import JavaCatalog

pytestmark = pytest.mark.spark

SCENARIOS = CONVERTIBLE


def _naive(v: Any) -> Any:
    """Spark gives timestamptz values as naive datetimes in the (UTC) session zone."""
    if isinstance(v, datetime.datetime) and v.tzinfo is not None:
        return v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return v


def data_rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    cols = sorted(c for c in rows[0] if not c.startswith("_")) if rows else []
    return sorted((tuple(_naive(r[c]) for c in cols) for r in rows), key=repr)


def lineage(rows: list[dict[str, Any]], row_id: str, version: str) -> list[tuple[Any, ...]]:
    return sorted(((r["id"], r[row_id], r[version]) for r in rows), key=repr)


def _plain(v: Any) -> Any:
    """Spark Row values as the Python values pyarrow gives (Rows and lists recursively)."""
    if type(v).__name__ == "VariantVal":  # as the fixtures keep variants: their two binaries
        return {"metadata": bytes(v.metadata), "value": bytes(v.value)}
    if hasattr(v, "asDict"):
        return {k: _plain(x) for k, x in v.asDict().items()}
    if isinstance(v, dict):
        return [(k, _plain(x)) for k, x in v.items()]
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, bytearray):
        return bytes(v)
    return v


def test_iceberg_java_reads_every_converted_table(
    iceberg_spark: JavaCatalog, tmp_path: Path
) -> None:
    spark = iceberg_spark.spark
    spark.conf.set("spark.sql.iceberg.aggregate-push-down.enabled", "false")
    for scenario in SCENARIOS:
        root = fixture(scenario, tmp_path)
        table = convert(str(root), check=scenario not in UNCHECKED).table
        latest = DeltaLog(str(root)).latest_version()
        want = pq.read_table(root.parent / "expected" / f"v{latest}.parquet").to_pylist()
        df = spark.read.format("iceberg").load(table.metadata_location)
        got = [{k: _plain(v) for k, v in r.asDict().items()} for r in df.collect()]
        assert data_rows(got) == data_rows(want), scenario
        meta = df.select("id", "_row_id", "_last_updated_sequence_number").collect()
        got_lineage = [r.asDict() for r in meta]
        assert lineage(got_lineage, "_row_id", "_last_updated_sequence_number") == lineage(
            want, "_row_id", "_row_commit_version"
        ), scenario


def _java_problem() -> str | None:
    from support.spark import java_problem

    return java_problem()


def test_delta_regenerates_fixtures_the_converter_follows(tmp_path: Path) -> None:
    problem = _java_problem()
    if problem:
        pytest.skip(problem)
    wanted = os.environ.get("ICEFLOE_DELTA_REGENERATE", "dml")
    names = SCENARIOS if wanted == "all" else wanted.split(",")
    out = tmp_path / "gen"
    script = Path(__file__).parent / "gen_delta_fixtures.py"
    done = subprocess.run(
        [sys.executable, str(script), str(out), *names],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0 and "could not be fetched" in done.stderr:
        pytest.skip("Delta's jars could not be fetched from Maven Central")
    assert done.returncode == 0, done.stderr[-3000:]
    for name in names:
        root = out / name / "table"
        latest = DeltaLog(str(root)).latest_version()
        convert(str(root), up_to_version=0)
        for v in range(1, latest + 1):
            table = convert(str(root), up_to_version=v).table
            got = table.scan(
                selected_fields=("*", "_row_id", "_last_updated_sequence_number")
            ).to_arrow()
            want = pq.read_table(out / name / "expected" / f"v{v}.parquet").to_pylist()
            rows = got.to_pylist()
            assert data_rows(rows) == data_rows(want), (name, v)
            assert lineage(rows, "_row_id", "_last_updated_sequence_number") == lineage(
                want, "_row_id", "_row_commit_version"
            ), (name, v)


@contextlib.contextmanager
def delta_v3_defaults(spark: Any) -> Iterator[None]:
    """New Delta tables written by path get IcebergCompatV3 (session defaults, then unset)."""
    confs = {
        "enableIcebergCompatV3": "true",
        "columnMapping.mode": "name",
        "enableDeletionVectors": "true",
    }
    for k, v in confs.items():
        spark.conf.set(f"spark.databricks.delta.properties.defaults.{k}", v)
    try:
        yield
    finally:
        for k in confs:
            spark.conf.unset(f"spark.databricks.delta.properties.defaults.{k}")


def _delta_read(spark: Any, path: Path) -> list[dict[str, Any]]:
    df = spark.read.format("delta").load(str(path))
    df = df.selectExpr("*", "_metadata.row_id AS _row_id", "_metadata.row_commit_version AS _rcv")
    return [r.asDict() for r in df.collect()]


def _agree(spark: Any, path: Path, result: Any) -> None:
    """icefloe and Iceberg Java read the synced table as Delta reads the Delta table."""
    want = _delta_read(spark, path)
    ours = result.table.scan(selected_fields=("*", "_row_id", "_last_updated_sequence_number"))
    got = ours.to_arrow().to_pylist()
    assert data_rows(got) == data_rows(want)
    assert lineage(got, "_row_id", "_last_updated_sequence_number") == lineage(
        want, "_row_id", "_rcv"
    )
    java = spark.read.format("iceberg").load(result.table.metadata_location)
    java_rows = [r.asDict() for r in java.collect()]
    assert data_rows(java_rows) == data_rows(want)
    assert result.delta_version == DeltaLog(str(path)).latest_version()


def test_delta_sync_follows_spark_delta_writes(iceberg_spark: JavaCatalog, tmp_path: Path) -> None:
    from icefloe.spark.delta_sync import DeltaSync
    from support.spark import delta_jars

    jars, why = delta_jars()
    if not jars:
        pytest.skip(why)
    spark = iceberg_spark.spark
    path = tmp_path / "events"
    catalog = iceberg_spark.icefloe()
    catalog.create_namespace("db")
    sync = DeltaSync(str(path), catalog=catalog, identifier="db.events")

    def rows(start: int, n: int) -> Any:
        return spark.range(start, start + n, 1, 1).selectExpr(
            "CAST(id AS INT) AS id", "CONCAT('v', CAST(id AS STRING)) AS v"
        )

    with delta_v3_defaults(spark):
        first = sync.write(rows(0, 5))
        assert first.mode == "full" and first.delta_version == 0
        second = sync.write(rows(5, 3))
        assert (second.mode, second.snapshots, second.delta_version) == ("incremental", 1, 1)
        _agree(spark, path, second)

        # A streaming pipeline: foreachBatch writes each micro-batch to Delta and syncs; a
        # replayed batch id is not written twice.
        source = tmp_path / "incoming"
        source.mkdir()
        rows(100, 4).write.parquet(str(source / "a"))
        stream = spark.readStream.schema("id INT, v STRING").parquet(str(source / "a"))
        query = (
            stream.writeStream.foreachBatch(sync.foreach_batch(app_id="pipeline"))
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        assert sync.last_result is not None
        assert sync.last_result.delta_version == 2
        sync.foreach_batch(app_id="pipeline")(rows(100, 4), 0)  # the same batch again
        assert DeltaLog(str(path)).latest_version() == 2  # Delta skipped it: same txn version
        _agree(spark, path, sync.last_result)

        # A query writing Delta itself: the registered listener syncs after its micro-batches.
        rows(200, 2).write.parquet(str(source / "b"))
        listener = sync.register(spark)
        try:
            query = (
                spark.readStream.schema("id INT, v STRING")
                .parquet(str(source / "b"))
                .writeStream.format("delta")
                .option("checkpointLocation", str(tmp_path / "ckpt2"))
                .trigger(availableNow=True)
                .start(str(path))
            )
            query.awaitTermination()
            deadline = time.monotonic() + 60  # the listener bus delivers events asynchronously
            while time.monotonic() < deadline:
                res = sync.last_result
                if res is not None and res.delta_version == 3:
                    break
                time.sleep(0.2)
        finally:
            spark.streams.removeListener(listener)
        assert sync.last_error is None
        assert sync.last_result is not None and sync.last_result.delta_version == 3
        current = sync.last_result.table.metadata.current_snapshot()
        assert current is not None and current.summary.properties["delta-version"] == "3"
        assert current.sequence_number == 3  # one snapshot per Delta commit, in order
        _agree(spark, path, sync.last_result)


def test_delta_sync_knows_its_table_however_the_path_is_spelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark describes a Delta sink by its absolute path: a sync made with ``file:`` URIs or
    a relative path (from the working directory, as Spark resolves it) must recognise it, or
    its listener never syncs."""
    from icefloe.spark.delta_sync import DeltaSync

    monkeypatch.chdir(tmp_path)
    table = f"{tmp_path}/lake/events"
    spellings = [
        table,
        f"{table}/",
        f"file://{table}",
        f"file:{table}",
        "lake/events",
        "lake/./events/",
    ]
    for spelling in spellings:
        sync = DeltaSync(spelling, metadata_location=f"{table}/_icefloe")
        for sink in (
            f"DeltaSink[{table}]",
            f"DeltaSink[file:{table}]",
            f"DeltaSink[file://{table}/]",
        ):
            assert sync._writes_here(sink), (spelling, sink)
        assert not sync._writes_here(f"DeltaSink[{table}2]")
        assert not sync._writes_here(f"ParquetSink[{table}]")
    remote = DeltaSync("s3://bucket/events/", metadata_location="s3://bucket/events/_icefloe")
    assert remote._writes_here("DeltaSink[s3://bucket/events]")
    assert not remote._writes_here("DeltaSink[s3://bucket/events2]")
