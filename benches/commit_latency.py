"""Median and p90 latency of single metadata-only commits on SQLite (icefloe vs PyIceberg).

`benches/bench_write.py` times a run of commits as one block; this times each commit alone, which
is what the "commit overhead under 30 ms at the median" target needs.
Usage: ``python benches/commit_latency.py [commits]``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import bench_write


def _latencies(fn: Callable[[], None], n: int, warmup: int) -> list[float]:
    out = []
    for _ in range(n + warmup):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return sorted(out[warmup:])


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    with tempfile.TemporaryDirectory() as tmp:
        ours, peer, _ = bench_write._commit_overhead(Path(tmp), 1)
        for name, fn, count in (("icefloe", ours, n), ("pyiceberg 0.12 (1-row append)", peer, 10)):
            ms = _latencies(fn, count, warmup=min(10, count))
            p90 = ms[int(len(ms) * 0.9) - 1]
            print(f"{name}: median {statistics.median(ms):.1f} ms, p90 {p90:.1f} ms")


if __name__ == "__main__":
    main()
