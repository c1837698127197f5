"""Avro data files: appending and reading the event table (id, a zoned timestamp, a 40-value
category, a double, a 16-character string) in a table whose ``write.format.default`` is
``avro``, against the same table in Parquet (icefloe), and against fastavro encoding and
decoding the same rows alone (no Iceberg work: the floor of a Python Avro library).

Cases run in turns, ``--repeat`` times each; medians of wall and CPU milliseconds.
Usage: ``python benches/avro_files.py [--rows N] [--repeat R]`` (default 1,000,000 rows, 5).
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from icefloe.catalog.sql import SqlCatalog
from icefloe.schema import Schema
from icefloe.types import DoubleType, LongType, NestedField, StringType, TimestamptzType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "ts", TimestamptzType()),
    NestedField(3, "category", StringType()),
    NestedField(4, "amount", DoubleType()),
    NestedField(5, "token", StringType()),
)
AVRO_SCHEMA = {
    "type": "record",
    "name": "table",
    "fields": [
        {"name": "id", "type": "long", "field-id": 1},
        {
            "name": "ts",
            "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}],
            "field-id": 2,
        },
        {"name": "category", "type": ["null", "string"], "field-id": 3},
        {"name": "amount", "type": ["null", "double"], "field-id": 4},
        {"name": "token", "type": ["null", "string"], "field-id": 5},
    ],
}


def event_rows(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    cats = np.array([f"category-{i}" for i in range(40)], dtype=object)
    tokens = [f"{v:016x}" for v in rng.integers(0, 2**62, n)]
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "ts": pa.array(rng.integers(1_700_000_000_000_000, 1_710_000_000_000_000, n)).cast(
                pa.timestamp("us", tz="UTC")
            ),
            "category": pa.array(cats[rng.integers(0, 40, n)], pa.string()),
            "amount": pa.array(rng.random(n) * 1000),
            "token": pa.array(tokens, pa.string()),
        }
    )


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return (time.perf_counter() - w0) * 1000, (time.process_time() - c0) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import fastavro

    data = event_rows(args.rows)
    records = data.cast(
        pa.schema([pa.field(f.name, pa.int64() if f.name == "ts" else f.type) for f in data.schema])
    ).to_pylist()
    parsed = fastavro.parse_schema(AVRO_SCHEMA)
    results: dict[str, list[tuple[float, float]]] = {}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cat = SqlCatalog("b", uri=f"sqlite:///{root}/c.db", warehouse=(root / "wh").as_uri())
        cat.create_namespace("db")
        encoded = io.BytesIO()
        fastavro.writer(encoded, parsed, records, codec="deflate")
        for r in range(args.repeat):
            for fmt in ("avro", "parquet"):
                t = cat.create_table(
                    f"db.{fmt}{r}", SCHEMA, properties={"write.format.default": fmt}
                )
                results.setdefault(f"icefloe {fmt} append", []).append(
                    timed(lambda t=t: t.append(data))
                )
                results.setdefault(f"icefloe {fmt} read", []).append(
                    timed(lambda t=t: t.scan().to_arrow())
                )

            def fast_write() -> None:
                fastavro.writer(io.BytesIO(), parsed, records, codec="deflate")

            def fast_read() -> None:
                list(fastavro.reader(io.BytesIO(encoded.getvalue())))

            results.setdefault("fastavro encode (deflate, no Iceberg work)", []).append(
                timed(fast_write)
            )
            results.setdefault("fastavro decode to dicts", []).append(timed(fast_read))
    print(
        f"{args.rows:,} rows, {args.repeat} runs each, load {load:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print("| case | wall ms | CPU ms |")
    print("|---|---|---|")
    for name, runs in results.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"| {name} | {wall:,.0f} | {cpu:,.0f} |")


if __name__ == "__main__":
    main()
