"""Statistics: ``compute_statistics`` (theta sketches of 5 columns over every live row, the
Puffin file written and committed) against reading the same 5 columns to Arrow, and
``compute_partition_statistics`` (full, from the manifests) against ``inspect.partitions()``.

The table: 10M rows (``--quick`` 500k) in 10 appends; columns ``id`` long (all distinct), ``k``
int (1,000 values), ``s`` string (100,000 values), ``d`` double (all distinct), ``day`` date
(365 values), partitioned by ``bucket[8](id)``. The target is a sketch pass within 1.5x of the
read of the same columns. Each case also prints the CPU time of both (all threads) and the load
average, because the machine is shared.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from harness import Harness

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from icefloe.catalog.sql import SqlCatalog
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.table.statistics import compute_sketches
from icefloe.transforms import parse_transform

COLUMNS = ["id", "k", "s", "d", "day"]
FILES = 10


def _rows(start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    rng = np.random.default_rng(start)
    s = pa.array(np.char.add("v", (ids * 7919 % 100_000).astype(str)))
    base = np.datetime64(dt.date(2024, 1, 1), "D")
    return pa.table(
        {
            "id": ids,
            "k": (ids % 1000).astype(np.int32),
            "s": s,
            "d": rng.random(n),
            "day": pa.array(base + (ids % 365).astype("timedelta64[D]")),
        }
    )


def _cpu(fn: object) -> float:
    t0 = time.process_time()
    fn()  # type: ignore[operator]
    return time.process_time() - t0


def run(h: Harness) -> None:
    n = h.size(10_000_000, 500_000)
    tmp = Path(tempfile.mkdtemp(prefix="bench-stats-"))
    cat = SqlCatalog("b", uri=f"sqlite:///{tmp}/c.db", warehouse=tmp.as_uri())
    cat.create_namespace("b")
    first = _rows(0, 1)
    spec = PartitionSpec(PartitionField(1, 1000, parse_transform("bucket[8]"), "b"))
    t = cat.create_table("b.t", first.schema, partition_spec=spec)
    per = n // FILES
    for i in range(FILES):
        t.append(_rows(i * per, per))
    units = per * FILES

    def read() -> int:
        return int(t.scan(selected_fields=tuple(COLUMNS)).to_arrow().num_rows)

    def sketch_only() -> int:
        meta = t.metadata
        schema = meta.current_schema()
        names = {c: schema.find_field_id(c) or 0 for c in COLUMNS}
        sid = meta.current_snapshot().snapshot_id  # type: ignore[union-attr]
        return len(compute_sketches(t.io, meta, sid, schema, names))

    def compute() -> object:
        return t.compute_statistics(COLUMNS)

    h.compare(
        "compute_statistics_5_columns",
        units,
        "rows",
        compute,
        {"read 5 columns to Arrow": read, "sketches only (no file, no commit)": sketch_only},
        target="<= 1.5x the read",
    )
    cpu_stats, cpu_read = _cpu(compute), _cpu(read)
    load = os.getloadavg()
    print(
        f"  cpu: compute_statistics {cpu_stats:.2f} s, read {cpu_read:.2f} s "
        f"(x{cpu_stats / max(cpu_read, 1e-9):.2f}); load average {load[0]:.1f} "
        f"on {os.cpu_count()} cores",
        flush=True,
    )
    ndv = t.statistics()
    print(f"  ndv: {ndv}", flush=True)

    h.compare(
        "compute_partition_statistics_full",
        len(t.inspect.files()),
        "files",
        lambda: t.compute_partition_statistics(incremental=False),
        {"inspect.partitions() from manifests": lambda: t.inspect.partitions(use_statistics=False)},
    )
