"""The main job of the README: a short end-to-end demonstration of what icefloe does today.

It generates an Arrow table of a few million orders, computes the partition values of the spec
``bucket[16](customer_id), day(ts), truncate[4](region)`` with icefloe's Rust transforms,
counts the rows of every partition with Arrow's group-by, and prints partition counts, timings
and the Appendix D forms of one partition's values. ``python -m icefloe.demo [--rows N]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from collections.abc import Callable
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

import icefloe
from icefloe import values
from icefloe.transforms import Transform, parse_transform
from icefloe.types import DateType, IntegerType, StringType

T = TypeVar("T")

REGIONS = ["eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-east", "sa-east"]


def _timed(label: str, fn: Callable[[], T]) -> T:
    t0 = time.perf_counter()
    out = fn()
    ms = (time.perf_counter() - t0) * 1e3
    print(f"  {label:<40} {ms:8.1f} ms")
    return out


def generate(rows: int, seed: int = 7) -> pa.Table:
    """A table of ``rows`` synthetic orders over about 30 days of 2026, with some nulls."""
    import numpy as np

    rng = np.random.default_rng(seed)
    start = int(dt.datetime(2026, 10, 1, tzinfo=dt.timezone.utc).timestamp() * 1_000_000)
    ts = start + rng.integers(0, 30 * 86_400 * 1_000_000, size=rows)
    customer = rng.integers(1, 5_000_000, size=rows)
    region_idx = rng.integers(0, len(REGIONS), size=rows)
    region = pa.DictionaryArray.from_arrays(
        pa.array(region_idx, pa.int32()), pa.array(REGIONS)
    ).dictionary_decode()
    amount = pa.array(rng.integers(100, 1_000_000, size=rows), pa.int64())
    null_region = pa.array(rng.random(rows) < 0.01)
    return pa.table(
        {
            "customer_id": pa.array(customer, pa.int64()),
            "ts": pa.array(ts, pa.int64()).view(pa.timestamp("us", tz="UTC")),
            "region": pc.if_else(null_region, pa.scalar(None, pa.string()), region),
            "amount_cents": amount,
        }
    )


def partition(table: pa.Table, spec: list[tuple[str, str]]) -> pa.Table:
    """The partition tuple of every row: one column per (source column, transform) pair."""
    cols = {}
    for source, name in spec:
        t: Transform = parse_transform(name)
        column = table[source]
        label = f"{source}_{name.split('[')[0]}"
        t0 = time.perf_counter()
        cols[label] = t.apply(column)
        ms = (time.perf_counter() - t0) * 1e3
        print(f"  {f'{name}({source})':<40} {ms:8.1f} ms")
    return pa.table(cols)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=3_000_000, help="rows to generate")
    args = ap.parse_args(argv)

    print(f"icefloe {icefloe.__version__}: Rust core {icefloe._native.__name__}")
    print(f"generating {args.rows:,} orders ...")
    table = _timed("generate Arrow table", lambda: generate(args.rows))
    spec = [("customer_id", "bucket[16]"), ("ts", "day"), ("region", "truncate[4]")]
    print("partition spec: " + ", ".join(f"{t}({c})" for c, t in spec))
    parts = partition(table, spec)
    keys = parts.column_names
    counts = _timed(
        "count rows per partition (group-by)",
        lambda: (
            parts.group_by(keys)
            .aggregate([([], "count_all")])
            .sort_by([(k, "ascending") for k in keys])
        ),
    )
    print(f"{len(table):,} rows fall into {counts.num_rows:,} partitions")
    for key in keys:
        print(f"  distinct {key}: {pc.count_distinct(parts[key]).as_py()}")
    print("first partitions:")
    for row in counts.slice(0, 5).to_pylist():
        day = dt.date(1970, 1, 1) + dt.timedelta(days=row["ts_day"])
        print(
            f"  customer_id_bucket={row['customer_id_bucket']:>2} ts_day={day} "
            f"region_truncate={row['region_truncate']!s:<5} rows={row['count_all']:,}"
        )
    first = counts.slice(0, 1).to_pylist()[0]
    print("Appendix D binary/JSON forms of the first partition's values (manifest bounds):")
    for key, typ, value in [
        ("customer_id_bucket", IntegerType(), first["customer_id_bucket"]),
        ("ts_day", DateType(), dt.date(1970, 1, 1) + dt.timedelta(days=first["ts_day"])),
        ("region_truncate", StringType(), first["region_truncate"]),
    ]:
        if value is None:
            print(f"  {key}: null")
            continue
        print(
            f"  {key}: bytes={values.to_bytes(typ, value).hex()} "
            f"json={values.to_json(typ, value)!r}"
        )
    total = pc.sum(table["amount_cents"]).as_py()
    print(f"total amount: {total / 100:,.2f}")


if __name__ == "__main__":
    main()
