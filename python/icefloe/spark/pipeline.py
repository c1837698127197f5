"""The README's main job: a Spark pipeline on icefloe (``python -m icefloe.spark.pipeline``).

A local Spark session (``local[*]``) works on a partitioned v3 table of the embedded SQLite
catalog, with icefloe doing every Iceberg step (no Iceberg Java runtime):

1. ingest a few million generated events (``events.clicks``, partitioned by ``day(ts)`` and
   ``bucket[8](user_id)``) in one :func:`icefloe.spark.write` job: executors write the
   Parquet files, the driver commits one snapshot;
2. delete the bot events with :func:`icefloe.spark.delete` and upsert a batch of corrected and
   new events with :func:`icefloe.spark.merge`, both merge-on-read: positions found on the
   executors, deletion vectors committed, no data file rewritten;
3. read the table back through :func:`icefloe.spark.read` (count and sums, an aggregate per
   kind) and a time-travel read of the ingest snapshot;
4. compact (``rewrite_data_files``: small files merged, deletion vectors applied), expire every
   snapshot but the current one, and check the rows are unchanged;
5. print a short report with timings.

Spark 4 needs Java 17 or newer and ``pyspark``; the job says what to install when either is
missing. ``--rows N`` (or ``ICEFLOE_PIPELINE_ROWS``) sets the size, ``--warehouse DIR`` keeps the
catalog and table (otherwise a temporary directory is used and removed); ``--warehouse
s3://bucket/prefix --catalog-db FILE --property s3.endpoint=...`` puts the table on S3.
``--conf KEY=VALUE`` (repeatable, or ``ICEFLOE_SPARK_CONF="KEY=VALUE ..."``) sets Spark settings
of the session the job starts, e.g. ``--conf spark.driver.memory=1g --conf
spark.sql.autoBroadcastJoinThreshold=1g`` (``ICEFLOE_SPARK_MEMORY`` sets the driver memory,
default 2g).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import icefloe
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.spark.worker import ARROW_SETTINGS
from icefloe.transforms import parse_transform
from icefloe.types import DoubleType, LongType, NestedField, StringType, TimestamptzType

__all__ = [
    "DELETE_CONDITION",
    "SCHEMA",
    "SPEC",
    "environment_problem",
    "events",
    "main",
    "run",
    "upsert_source",
]

T = TypeVar("T")

#: Default number of events ingested.
DEFAULT_ROWS = 3_000_000
#: Events are spread over this many days from ``START_EPOCH`` (2026-11-01T00:00Z).
DAYS = 7
START_EPOCH = 1_793_491_200
KINDS = ("view", "view", "view", "click", "click", "cart", "purchase", "bot")

SCHEMA = Schema(
    NestedField(1, "event_id", LongType(), required=True),
    NestedField(2, "user_id", LongType(), required=True),
    NestedField(3, "ts", TimestamptzType(), required=True),
    NestedField(4, "kind", StringType()),
    NestedField(5, "amount", DoubleType()),
)
SPEC = PartitionSpec(
    PartitionField(3, 1000, parse_transform("day"), "ts_day"),
    PartitionField(2, 1001, parse_transform("bucket[8]"), "user_bucket"),
)
DELETE_CONDITION = "kind = 'bot'"
#: The day the filtered read and the streaming step look at (UTC bounds).
ONE_DAY = ("2026-11-03 00:00:00Z", "2026-11-04 00:00:00Z")


def environment_problem() -> str | None:
    """What is missing for Spark here (pyspark, Java 17+), as an install hint; None if ready."""
    try:
        import pyspark
    except ImportError:
        return "pyspark is not installed: run `pip install 'icefloe[spark]'`"
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    install = (
        "install a Java 17 (or 21) runtime, e.g. `sudo apt-get install openjdk-17-jre-headless` "
        "(Debian/Ubuntu), `brew install openjdk@17` (macOS) or https://adoptium.net, and put "
        "`java` on PATH or set JAVA_HOME"
    )
    if java is None or not Path(java).exists():
        where = f"JAVA_HOME={java_home} has no bin/java" if java_home else "no `java` on PATH"
        return f"Spark {pyspark.__version__} needs Java 17 or newer ({where}): {install}"
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError as e:
        return f"cannot run {java} ({e}): {install}"
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if match is None:
        return f"cannot tell the Java version of {java}: {install}"
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0_..." is Java 8
        major = int(match.group(2))
    if major < 17:
        return (
            f"Spark {pyspark.__version__} needs Java 17 or newer, {java} is Java {major}: {install}"
        )
    return None


def events(spark: Any, first_id: int, rows: int, seed: int = 0, partitions: int = 0) -> Any:
    """``rows`` generated events with ids from ``first_id``: a deterministic DataFrame computed
    by Spark from the id (same ids and seed, same rows)."""
    parts = partitions or max(1, spark.sparkContext.defaultParallelism)
    kinds = ", ".join(f"'{k}'" for k in KINDS)
    return spark.range(first_id, first_id + rows, 1, parts).selectExpr(
        "id AS event_id",
        f"pmod(xxhash64(id, {seed}, 'user'), 200000) AS user_id",
        f"timestamp_seconds({START_EPOCH} + pmod(xxhash64(id, {seed}, 'ts'), {DAYS * 86400})) "
        "AS ts",
        f"element_at(array({kinds}), CAST(pmod(xxhash64(id, {seed}, 'kind'), {len(KINDS)}) + 1 "
        "AS int)) AS kind",
        f"CAST(pmod(xxhash64(id, {seed}, 'amount'), 100000) AS double) / 100 AS amount",
    )


def upsert_source(spark: Any, rows: int) -> Any:
    """The upsert batch: new values for 1% of the ingested events (every 100th id, bots among
    them, so those come back as inserts) and as many new events."""
    k = max(1, rows // 100)
    changed = (
        events(spark, 0, rows, seed=0)
        .where("event_id % 100 = 7")
        .selectExpr("event_id", "user_id", "ts", "'view' AS kind", "amount + 1000 AS amount")
    )
    fresh = events(spark, 10**12, k, seed=1)
    return changed.unionByName(fresh)


class Timer:
    """Named timings for the report."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, float]] = []

    def run(self, label: str, fn: Callable[[], T]) -> T:
        t0 = time.perf_counter()
        out = fn()
        self.steps.append((label, time.perf_counter() - t0))
        print(f"  {label:<46} {self.steps[-1][1]:7.2f} s", flush=True)
        return out


def _summary(table: Any, key: str) -> int:
    snap = table.current_snapshot()
    value = snap.summary.get_int(key) if snap is not None and snap.summary is not None else None
    return int(value or 0)


def _deleted_rows(table: Any) -> int:
    """Rows the current snapshot deleted: positions added minus those of the deletion vectors
    it replaced (a DV of a file that had one holds the old positions too)."""
    return _summary(table, "added-position-deletes") - _summary(table, "removed-position-deletes")


def _stream_one_day(
    spark: Any, catalog: Any, opts: dict[str, str], local: Path, files: int
) -> tuple[int, int]:
    """A Structured Streaming query: the events of one day appended to ``events.clicks``
    (deletes and merges skipped), a few files per micro-batch, into ``events.one_day``
    through the icefloe sink (checkpoint under ``local``); returns (micro-batches committed,
    rows in the table)."""
    if catalog.table_exists("events.one_day"):
        catalog.drop_table("events.one_day", purge=True)
    out = catalog.create_table("events.one_day", SCHEMA, format_version=3)
    checkpoint = local / "checkpoints" / "one_day"
    shutil.rmtree(checkpoint, ignore_errors=True)  # a new table: a new query
    per_batch = max(1, -(-files // 3))  # about three micro-batches
    stream = (
        spark.readStream.format("icefloe")
        .options(**opts)
        .option("max-files-per-micro-batch", str(per_batch))
        .option("skip-delete-snapshots", "true")
        .option("skip-overwrite-snapshots", "true")
        .load("events.clicks")
        .where(f"ts >= TIMESTAMP'{ONE_DAY[0]}' AND ts < TIMESTAMP'{ONE_DAY[1]}'")
    )
    query = (
        stream.writeStream.format("icefloe")
        .options(**opts)
        .option("checkpointLocation", str(checkpoint))
        .start("events.one_day")
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    out.refresh()
    n = sum(task.data_file.record_count for task in out.scan().plan_files())
    return len(out.snapshots()), n


def run(
    spark: Any,
    rows: int,
    warehouse: Path | str,
    properties: Mapping[str, str] | None = None,
    catalog_db: Path | None = None,
) -> dict[str, Any]:
    """Runs the pipeline on ``spark``; returns the report's figures (also printed).

    ``warehouse`` is a local directory or an object-store URI (``s3://bucket/prefix``, with
    ``properties`` such as ``s3.endpoint``); the SQLite catalog is ``catalog_db`` (default
    ``<warehouse>/catalog.db``, which needs a local warehouse)."""
    from pyspark.sql import functions as F

    import icefloe.spark as ispark
    from icefloe.catalog.sql import SqlCatalog

    timer = Timer()
    if isinstance(warehouse, Path) or "://" not in warehouse:
        local = Path(warehouse)
        local.mkdir(parents=True, exist_ok=True)
        location = local.resolve().as_uri()
        catalog_db = catalog_db or local / "catalog.db"
    else:
        location = warehouse
        if catalog_db is None:
            raise ValueError("a warehouse on an object store needs catalog_db (a local file)")
    catalog_db.parent.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog(
        "pipeline", uri=f"sqlite:///{catalog_db}", warehouse=location, **dict(properties or {})
    )
    catalog.create_namespace_if_not_exists("events")
    if catalog.table_exists("events.clicks"):
        catalog.drop_table("events.clicks", purge=True)
    table = catalog.create_table("events.clicks", SCHEMA, partition_spec=SPEC, format_version=3)
    print(f"table events.clicks (v3) at {table.location}, partitioned by {table.spec()}")
    print("steps")

    ispark.register(spark)
    # the format's workers open the same catalog from these options
    opts = {
        "catalog": "pipeline",
        "catalog.uri": f"sqlite:///{catalog_db}",
        "catalog.warehouse": location,
        **{f"catalog.{k}": v for k, v in (properties or {}).items()},
    }

    def load(**options: str) -> Any:
        return spark.read.format("icefloe").options(**opts, **options).load("events.clicks")

    timer.run(
        f"ingest {rows:,} events (format icefloe, append)",
        lambda: (
            ispark.cluster(events(spark, 0, rows), table)
            .write.format("icefloe")
            .options(**opts)
            .mode("append")
            .save("events.clicks")
        ),
    )
    table.refresh()
    ingest_snapshot = table.current_snapshot()
    assert ingest_snapshot is not None
    ingest_files = len(table.scan().plan_files())

    timer.run(
        f"delete {DELETE_CONDITION} (DVs)", lambda: ispark.delete(spark, table, DELETE_CONDITION)
    )
    deleted = _deleted_rows(table)
    dvs = _summary(table, "added-dvs")

    source = upsert_source(spark, rows)
    timer.run(
        "merge upserts by event_id (DVs)", lambda: ispark.merge(source, table, on=["event_id"])
    )
    merge_added = _summary(table, "added-records")
    merge_replaced = _deleted_rows(table)
    merge_dvs = _summary(table, "added-dvs")

    def totals(df: Any) -> tuple[int, float]:
        r = df.agg(F.count(F.lit(1)).alias("n"), F.sum("amount").alias("s")).collect()[0]
        return int(r["n"]), float(r["s"] or 0.0)

    live, amount = timer.run(
        "read: count and sum (format icefloe)", lambda: totals(load(columns="amount"))
    )
    per_kind = timer.run(
        "read: events per kind, one day (filter option, pruned by icefloe)",
        lambda: {
            r["kind"]: r["n"]
            for r in load(columns="ts,kind", filter=f"ts >= '{ONE_DAY[0]}' and ts < '{ONE_DAY[1]}'")
            .groupBy("kind")
            .agg(F.count(F.lit(1)).alias("n"))
            .collect()
        },
    )
    past_rows, past_amount = timer.run(
        "time travel: the ingest snapshot",
        lambda: totals(load(columns="amount", **{"snapshot-id": str(ingest_snapshot.snapshot_id)})),
    )
    stream_batches, stream_rows = timer.run(
        "stream one day's appended events into events.one_day (micro-batches)",
        lambda: _stream_one_day(spark, catalog, opts, catalog_db.parent, ingest_files),
    )
    files_before = len(table.scan().plan_files())
    compacted = timer.run(
        "compact (rewrite_data_files, DVs applied)",
        lambda: table.rewrite_data_files(target_file_size=128 << 20),
    )
    snapshots_before = len(table.snapshots())
    expired = timer.run(
        "expire all snapshots but the current one",
        lambda: table.expire_snapshots(older_than_ms=int(time.time() * 1000), retain_last=1),
    )
    rows_after, amount_after = timer.run(
        "read after maintenance", lambda: totals(ispark.read(spark, table))
    )
    files_after = len(table.scan().plan_files())
    report: dict[str, Any] = {
        "rows_ingested": rows,
        "ingest_files": ingest_files,
        "rows_deleted": deleted,
        "dvs_written": dvs + merge_dvs,
        "merge_rows_written": merge_added,
        "merge_rows_replaced": merge_replaced,
        "rows": live,
        "amount": amount,
        "per_kind_one_day": per_kind,
        "time_travel_rows": past_rows,
        "time_travel_amount": past_amount,
        "stream_batches": stream_batches,
        "stream_rows": stream_rows,
        "files_before_compaction": files_before,
        "files_compacted": compacted.rewritten_data_files,
        "files_after_compaction": files_after,
        "snapshots_before_expiry": snapshots_before,
        "snapshots_expired": len(expired.snapshot_ids),
        "files_deleted_by_expiry": len(expired.all_files),
        "snapshots": len(table.snapshots()),
        "rows_after_maintenance": rows_after,
        "amount_after_maintenance": amount_after,
        "next_row_id": table.metadata.next_row_id,
        "seconds": sum(s for _, s in timer.steps),
    }
    print("report")
    print(f"  events ingested              {rows:>13,} in {ingest_files:,} data files")
    print(f"  deleted ({DELETE_CONDITION})     {deleted:>13,} rows, {dvs:,} deletion vectors")
    print(
        f"  merge                        {merge_replaced:>13,} rows replaced, "
        f"{merge_added:,} rows written, {merge_dvs:,} deletion vectors"
    )
    print(f"  rows now                     {live:>13,} (amount {amount:,.2f})")
    print(f"  rows at the ingest snapshot  {past_rows:>13,} (amount {past_amount:,.2f})")
    print(
        f"  streamed (one day, appends)  {stream_rows:>13,} rows in {stream_batches} "
        "micro-batches, one snapshot each"
    )
    print(
        "  one day by kind              "
        + ", ".join(f"{k} {v:,}" for k, v in sorted(per_kind.items(), key=lambda kv: str(kv[0])))
    )
    print(
        f"  compaction                   {compacted.rewritten_data_files:>13,} files -> "
        f"{compacted.added_data_files:,} ({files_before:,} -> {files_after:,} live files)"
    )
    print(
        f"  expiry                       {len(expired.snapshot_ids):>13,} snapshots expired, "
        f"{len(expired.all_files):,} files deleted, {len(table.snapshots())} left"
    )
    print(f"  rows after maintenance       {rows_after:>13,} (amount {amount_after:,.2f})")
    print(f"  row ids assigned             {table.metadata.next_row_id:>13,}")
    print(f"  total                        {report['seconds']:>12.1f} s")
    return report


def spark_session(master: str = "local[*]", conf: dict[str, str] | None = None) -> Any:
    """A local Spark session tuned for the pipeline (UTC, few shuffle partitions, Arrow batch
    settings of :data:`~icefloe.spark.worker.ARROW_SETTINGS`), with ``conf`` (Spark settings)
    applied last; an active session is reused as it is."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    cores = os.cpu_count() or 2
    builder = (
        SparkSession.builder.master(master)
        .appName("icefloe-pipeline")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", os.environ.get("ICEFLOE_SPARK_MEMORY", "2g"))
        .config("spark.sql.shuffle.partitions", str(max(2, cores)))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.python.worker.reuse", "true")
    )
    for key, value in {**ARROW_SETTINGS, **(conf or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Command line entry point; exits with status 2 when Spark cannot run here."""
    ap = argparse.ArgumentParser(
        prog="python -m icefloe.spark.pipeline", description=(__doc__ or "").splitlines()[0]
    )
    ap.add_argument(
        "--rows",
        type=int,
        default=int(os.environ.get("ICEFLOE_PIPELINE_ROWS", DEFAULT_ROWS)),
        help=f"events to ingest (default {DEFAULT_ROWS:,}, or $ICEFLOE_PIPELINE_ROWS)",
    )
    ap.add_argument(
        "--warehouse",
        help="keep the catalog and table here: a directory, or an object-store URI such as "
        "s3://bucket/prefix (with --catalog-db and --property s3.endpoint=...)",
    )
    ap.add_argument(
        "--catalog-db", type=Path, help="the SQLite catalog file (default <warehouse>/catalog.db)"
    )
    ap.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a catalog property, e.g. s3.endpoint=http://127.0.0.1:9000 (repeatable)",
    )
    ap.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    ap.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for the session the job starts (repeatable), e.g. "
        "--conf spark.driver.memory=1g; also $ICEFLOE_SPARK_CONF (space-separated KEY=VALUE)",
    )
    args = ap.parse_args(argv)
    if args.rows < 100:
        ap.error("--rows must be at least 100")
    properties: dict[str, str] = {}
    for item in args.property:
        key, sep, value = item.partition("=")
        if not sep or not key:
            ap.error(f"--property needs KEY=VALUE, got {item!r}")
        properties[key] = value
    remote = args.warehouse is not None and "://" in args.warehouse
    if remote and args.catalog_db is None:
        ap.error("a warehouse on an object store needs --catalog-db (a local SQLite file)")
    conf: dict[str, str] = {}
    for item in os.environ.get("ICEFLOE_SPARK_CONF", "").split() + args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            ap.error(f"--conf needs KEY=VALUE, got {item!r}")
        conf[key.strip()] = value.strip()
    problem = environment_problem()
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2)
    from pyspark.sql import SparkSession

    own = SparkSession.getActiveSession() is None
    t0 = time.perf_counter()
    spark = spark_session(args.master, conf)
    import pyspark

    print(
        f"icefloe {icefloe.__version__} on Spark {pyspark.__version__} "
        f"({spark.sparkContext.master}, session ready in {time.perf_counter() - t0:.1f} s): "
        f"{args.rows:,} events"
    )
    tmp = None
    try:
        if args.warehouse is not None:
            return run(spark, args.rows, args.warehouse, properties, args.catalog_db)
        tmp = Path(tempfile.mkdtemp(prefix="icefloe-spark-pipeline-"))
        return run(spark, args.rows, tmp, properties, args.catalog_db)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if own:
            spark.stop()


if __name__ == "__main__":
    main()
