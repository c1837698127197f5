"""Scan of a 100-file table on a local S3 server: requests per file and wall time.

moto's S3 server runs in this process on a loopback port and counts every request it answers
(``--latency-ms`` delays each answer, as a remote store would); s3proxy (``--server s3proxy``,
needs Java) is the second server, without counts. One icefloe
append writes the table (``bucket[100]`` on ``id``: 100 data files, ``--rows`` rows). Then
icefloe and PyIceberg 0.12 each read the same metadata file from the same server, the runs
interleaved, ``--repeat`` times: ``StaticTable.from_metadata(...).scan().to_arrow()``, planning
included.

Run: ``PYTHONPATH=python python benches/bench_s3_scan.py [--rows N] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import pyarrow as pa

import icefloe
from icefloe.catalog.sql import SqlCatalog
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import DoubleType, LongType, NestedField, StringType
from support.s3 import S3Server, _start_moto, start_s3proxy

FILES = 100


def build(server: S3Server, tmp: Path, rows: int) -> str:
    """A table of ``FILES`` data files on the server; returns its metadata location."""
    props = server.properties()
    catalog = SqlCatalog(
        "bench", uri=f"sqlite:///{tmp}/c.db", warehouse=server.fresh_location(), **props
    )
    catalog.create_namespace("ns")
    schema = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "s", StringType()),
        NestedField(3, "x", DoubleType()),
    )
    spec = PartitionSpec(PartitionField(1, 1000, parse_transform(f"bucket[{FILES}]"), "b"))
    table = catalog.create_table("ns.t", schema, partition_spec=spec)
    ids = pa.array(range(rows), pa.int64())
    table.append(
        pa.table(
            {
                "id": ids,
                "s": pa.array([f"row {i}" for i in range(rows)]),
                "x": pa.array([i / 7 for i in range(rows)], pa.float64()),
            }
        )
    )
    files = table.inspect.files().num_rows
    assert files == FILES, files
    return table.metadata_location


def readers(location: str, props: dict[str, str]) -> dict[str, Callable[[], int]]:
    from pyiceberg.table import StaticTable

    def ours() -> int:
        return (
            icefloe.StaticTable.from_metadata(location, properties=props).scan().to_arrow().num_rows
        )

    def pyiceberg() -> int:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = StaticTable.from_metadata(location, properties=props)
            return int(table.scan().to_arrow().num_rows)

    return {"icefloe": ours, "pyiceberg 0.12": pyiceberg}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--server", choices=["moto", "s3proxy"], default="moto")
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="moto only: delay every answer, standing in for a remote store's round trip",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.server == "moto":
            handle, server = _start_moto(args.latency_ms / 1000)
            stop = handle.stop
        else:
            proc, server = start_s3proxy(Path(tmp) / "s3proxy")
            stop = proc.kill
        try:
            location = build(server, Path(tmp), args.rows)
            runs = readers(location, server.properties())
            times: dict[str, list[float]] = {name: [] for name in runs}
            requests: dict[str, Counter[str]] = {}
            for name, run in runs.items():  # warm-up, and the request counts of one scan
                before = server.requests.snapshot() if server.requests else Counter()
                assert run() == args.rows
                if server.requests:
                    requests[name] = server.requests.since(before)
            for _ in range(args.repeat):
                for name, run in runs.items():
                    start = time.perf_counter()
                    run()
                    times[name].append(time.perf_counter() - start)
        finally:
            stop()
    delay = f", {args.latency_ms:g} ms added per request" if args.latency_ms else ""
    print(f"scan of {FILES} files, {args.rows:,} rows on {args.server} (loopback{delay})")
    print("| reader | median s | min s | requests | per data file |")
    print("|---|---|---|---|---|")
    for name, ts in times.items():
        made = requests.get(name)
        total = sum(made.values()) if made else None
        per = f"{total / FILES:.2f}" if total is not None else "n/a"
        detail = (
            f"{total} ({', '.join(f'{k} {v}' for k, v in sorted(made.items()))})" if made else "n/a"
        )
        print(f"| {name} | {statistics.median(ts):.3f} | {min(ts):.3f} | {detail} | {per} |")
    base = statistics.median(times["pyiceberg 0.12"])
    print(f"icefloe speed-up: {base / statistics.median(times['icefloe']):.2f}x")


if __name__ == "__main__":
    main()
