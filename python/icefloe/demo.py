"""An end-to-end pipeline on the embedded SQLite catalog, without Spark.

1. create a SQLite catalog and a partitioned v3 table ``demo.orders``
   (``day(ts), bucket[4](customer_id)``);
2. ingest a few million generated orders in batches (one ``append`` snapshot each) with a
   progress bar;
3. replace one day's orders with corrected ones (dynamic partition overwrite), then delete by a
   filter and upsert by ``order_id`` with merge-on-read (deletion vectors);
4. read the table back: row count and total amount, a filtered scan (with the files pruned by
   partition and metrics), and a time-travel read of the first snapshot;
   then compact the small files (applying the DVs) and list orphan files (dry run);
5. print a short report: rows, files, snapshots, row ids assigned, timings.

``python -m icefloe.demo [--rows N] [--batches K] [--warehouse DIR]``; without ``--warehouse``
the catalog lives in a temporary directory that is removed at the end.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

import icefloe
from icefloe.catalog.sql import SqlCatalog
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.read.scan_output import count, to_arrow
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField, StringType, TimestamptzType

T = TypeVar("T")

REGIONS = ["eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-east", "sa-east"]
START = dt.datetime(2026, 10, 1, tzinfo=dt.timezone.utc)
DAYS = 30

SCHEMA = Schema(
    NestedField(1, "order_id", LongType(), required=True),
    NestedField(2, "customer_id", LongType(), required=True),
    NestedField(3, "ts", TimestamptzType(), required=True),
    NestedField(4, "region", StringType()),
    NestedField(5, "amount_cents", LongType(), required=True),
)
SPEC = PartitionSpec(
    PartitionField(3, 1000, parse_transform("day"), "ts_day"),
    PartitionField(2, 1001, parse_transform("bucket[4]"), "customer_bucket"),
)


class Timer:
    """Collects named timings for the report."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, float]] = []

    def run(self, label: str, fn: Callable[[], T]) -> T:
        t0 = time.perf_counter()
        out = fn()
        self.steps.append((label, time.perf_counter() - t0))
        return out


def generate(first_id: int, rows: int, seed: int) -> pa.Table:
    """``rows`` synthetic orders with ids from ``first_id`` over 30 days of October 2026."""
    import numpy as np

    rng = np.random.default_rng(seed)
    start = int(START.timestamp() * 1_000_000)
    ts = start + rng.integers(0, DAYS * 86_400 * 1_000_000, size=rows)
    region_idx = rng.integers(0, len(REGIONS), size=rows)
    region = pa.DictionaryArray.from_arrays(
        pa.array(region_idx, pa.int32()), pa.array(REGIONS)
    ).dictionary_decode()
    null_region = pa.array(rng.random(rows) < 0.01)
    return pa.table(
        {
            "order_id": pa.array(np.arange(first_id, first_id + rows), pa.int64()),
            "customer_id": pa.array(rng.integers(1, 5_000_000, size=rows), pa.int64()),
            "ts": pa.array(ts, pa.int64()).view(pa.timestamp("us", tz="UTC")),
            "region": pc.if_else(null_region, pa.scalar(None, pa.string()), region),
            "amount_cents": pa.array(rng.integers(100, 1_000_000, size=rows), pa.int64()),
        }
    )


DELETE_FILTER = "region = 'sa-east' and amount_cents < 200000"


def now_ms() -> int:
    """The current time in epoch milliseconds."""
    return int(time.time() * 1000)


def upsert_source(rows: int) -> pa.Table:
    """Changes for the upsert: new values for the first orders and as many new orders."""
    k = max(1, rows // 100)
    return pa.concat_tables([generate(0, k, seed=123), generate(10**11, k, seed=124)])


def _bar(done: int, total: int, started: float, width: int = 30) -> str:
    filled = int(width * done / max(total, 1))
    rate = done / max(time.perf_counter() - started, 1e-9)
    return (
        f"\r  ingest [{'#' * filled}{'.' * (width - filled)}] {done:>12,}/{total:,} rows "
        f"{rate / 1e6:5.2f} M rows/s"
    )


def ingest(table: Table, rows: int, batches: int, timer: Timer) -> list[int]:
    """Append ``rows`` orders in ``batches`` commits; returns the snapshot ids."""
    per = max(1, rows // batches)
    done = 0
    snapshots = []
    started = time.perf_counter()
    for i in range(batches):
        n = per if i < batches - 1 else rows - done
        if n <= 0:
            break
        data = generate(done, n, seed=i)
        timer.run(f"append batch {i + 1}", lambda d=data: table.append(d))  # type: ignore[misc]
        done += n
        snap = table.current_snapshot()
        assert snap is not None
        snapshots.append(snap.snapshot_id)
        sys.stdout.write(_bar(done, rows, started))
        sys.stdout.flush()
    sys.stdout.write("\n")
    return snapshots


def _scan_arrow(table: Table, **kwargs: object) -> pa.Table:
    scan = table.scan(**kwargs)  # type: ignore[arg-type]
    return to_arrow(table.io, scan.plan_files(), scan.read_options())


def _scan_count(table: Table, **kwargs: object) -> int:
    scan = table.scan(**kwargs)  # type: ignore[arg-type]
    return count(table.io, scan.plan_files(), scan.read_options())


def run(rows: int, batches: int, warehouse: Path) -> dict[str, object]:
    """Runs the pipeline; returns the report's figures (also printed)."""
    timer = Timer()
    warehouse.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog(
        "demo", uri=f"sqlite:///{warehouse / 'catalog.db'}", warehouse=warehouse.as_uri()
    )
    catalog.create_namespace_if_not_exists("demo")
    if catalog.table_exists("demo.orders"):
        catalog.drop_table("demo.orders", purge=True)
    table = timer.run(
        "create table",
        lambda: catalog.create_table("demo.orders", SCHEMA, partition_spec=SPEC, format_version=3),
    )
    print(f"table demo.orders (v3) at {table.location}")
    print(f"  partition spec: {table.spec()}")
    snapshot_ids = ingest(table, rows, batches, timer)

    # Corrected orders for one day replace that day's partitions in one commit.
    day = START + dt.timedelta(days=3)
    fixed = generate(10**12, max(1, rows // (DAYS * 10)), seed=99)
    fixed = fixed.set_column(
        2,
        "ts",
        pc.add(
            pa.scalar(int(day.timestamp() * 1_000_000)),
            pc.multiply(pa.array(range(fixed.num_rows), pa.int64()), 1_000_000),
        ).cast(pa.timestamp("us", tz="UTC")),
    )
    timer.run(
        "dynamic partition overwrite (1 day)", lambda: table.dynamic_partition_overwrite(fixed)
    )

    # Row-level changes with merge-on-read: deletion vectors instead of rewritten files.
    table.set_properties(
        {"write.delete.mode": "merge-on-read", "write.merge.mode": "merge-on-read"}
    )
    timer.run("delete by filter (deletion vectors)", lambda: table.delete(DELETE_FILTER))
    dvs = table.current_snapshot().summary.get_int("added-dvs") or 0  # type: ignore[union-attr]
    changes = upsert_source(rows)
    upserted = timer.run(
        "upsert by order_id (deletion vectors)", lambda: table.upsert(changes, ["order_id"])
    )

    total_rows = timer.run("count rows (scan)", lambda: _scan_count(table))
    amounts = timer.run(
        "read amount_cents (scan)", lambda: _scan_arrow(table, selected_fields=("amount_cents",))
    )
    one_day = f"ts >= '{day.isoformat()}' and ts < '{(day + dt.timedelta(days=1)).isoformat()}'"
    flt = f"{one_day} and region = 'eu-west'"
    filtered = table.scan(row_filter=flt)
    tasks = timer.run("plan a filtered scan", filtered.plan_files)
    eu = timer.run(
        "read the filtered scan", lambda: to_arrow(table.io, tasks, filtered.read_options())
    )
    first_rows = timer.run(
        "time travel to the first snapshot",
        lambda: _scan_count(table, snapshot_id=snapshot_ids[0]),
    )
    files_before = len(table.scan().plan_files())
    compacted = timer.run(
        "compact (rewrite_data_files)", lambda: table.rewrite_data_files(target_file_size=64 << 20)
    )
    rows_after = timer.run("count rows after compaction", lambda: _scan_count(table))
    orphans = timer.run(
        "list orphan files (dry run)",
        lambda: table.remove_orphan_files(older_than=dt.timedelta(0), dry_run=True),
    )
    snapshots_before = len(table.snapshots())
    expired = timer.run(
        "expire all but the current snapshot",
        lambda: table.expire_snapshots(older_than_ms=now_ms(), retain_last=1),
    )
    rows_after_expiry = timer.run("count rows after expiry", lambda: _scan_count(table))
    all_files = table.scan().plan_files()
    snap = table.current_snapshot()
    assert snap is not None and snap.summary is not None
    report: dict[str, object] = {
        "rows": total_rows,
        "data_files": len(all_files),
        "snapshots": len(table.snapshots()),
        "first_snapshot_rows": first_rows,
        "filtered_rows": eu.num_rows,
        "filtered_files": len(tasks),
        "next_row_id": table.metadata.next_row_id,
        "total_amount": pc.sum(amounts["amount_cents"]).as_py() or 0,
        "dvs_written": dvs,
        "rows_updated": upserted.rows_updated,
        "rows_inserted": upserted.rows_inserted,
        "files_before_compaction": files_before,
        "files_compacted": compacted.rewritten_data_files,
        "rows_after_compaction": rows_after,
        "orphan_files": len(orphans),
        "snapshots_before_expiry": snapshots_before,
        "snapshots_expired": len(expired.snapshot_ids),
        "files_deleted_by_expiry": len(expired.all_files),
        "rows_after_expiry": rows_after_expiry,
    }
    print("report")
    print(f"  rows in the table           {total_rows:>14,}")
    print(f"  data files                  {len(all_files):>14,}")
    print(f"  snapshots                   {len(table.snapshots()):>14,}")
    print(
        f"  expired snapshots           {len(expired.snapshot_ids):>14,}"
        f" ({len(expired.all_files):,} files deleted)"
    )
    print(f"  last operation              {snap.summary.operation:>14}")
    print(f"  rows at the first snapshot  {first_rows:>14,}")
    print(f"  total amount                {report['total_amount'] / 100:>14,.2f}")  # type: ignore[operator]
    print(
        f"  filtered scan ({flt})\n"
        f"    {eu.num_rows:,} rows from {len(tasks)} of {len(all_files)} files"
    )
    print(f"  row ids assigned (next-row-id) {table.metadata.next_row_id:>11,}")
    print(f"  deletion vectors written    {dvs:>14,}")
    print(
        f"  upsert                      {upserted.rows_updated:>14,} updated, "
        f"{upserted.rows_inserted:,} inserted"
    )
    print(
        f"  compaction                  {compacted.rewritten_data_files:>14,} files -> "
        f"{compacted.added_data_files:,} ({files_before:,} -> {len(all_files):,} live files)"
    )
    print(f"  orphan files (dry run)      {len(orphans):>14,}")
    print("timings")
    for label, seconds in timer.steps:
        print(f"  {label:<40} {seconds * 1e3:9.1f} ms")
    return report


def main(argv: list[str] | None = None) -> dict[str, object]:
    ap = argparse.ArgumentParser(
        prog="python -m icefloe.demo", description=(__doc__ or "").splitlines()[0]
    )
    ap.add_argument("--rows", type=int, default=3_000_000, help="rows to ingest")
    ap.add_argument("--batches", type=int, default=6, help="append commits")
    ap.add_argument("--warehouse", type=Path, help="keep the catalog and table here")
    args = ap.parse_args(argv)
    print(f"icefloe {icefloe.__version__}: end-to-end pipeline, {args.rows:,} orders")
    if args.warehouse is not None:
        return run(args.rows, args.batches, args.warehouse)
    tmp = Path(tempfile.mkdtemp(prefix="icefloe-demo-"))
    try:
        return run(args.rows, args.batches, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
