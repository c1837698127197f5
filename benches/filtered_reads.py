"""Filtered reads of large files: the shapes suite's ``event`` table (unpartitioned, two files
of 5,000,000 rows at the default size) read with a filter its partitions cannot settle
(``value < 0.5``, half the rows) and with a row-group-prunable one (the lowest tenth of
``ts``), every column and two columns, by icefloe's native path, by its general reader (the
native path turned off), and by PyIceberg 0.12, in turns in one process.

Medians of ``--repeat`` runs, wall / CPU milliseconds. Usage:
``python benches/filtered_reads.py [--rows N] [--repeat R]`` (default 10,000,000 rows, 5).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import shapes_data
from icefloe.catalog.sql import SqlCatalog
from icefloe.read import native_files

FILTERS = {
    "value < 0.5": "value < 0.5",
    "first tenth of ts": f"ts < '{shapes_data._ts_literal(3)}'",
}


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    from pyiceberg.table import StaticTable

    data = shapes_data.SHAPES["event"].table(args.rows)
    with tempfile.TemporaryDirectory() as d:
        cat = SqlCatalog("b", uri=f"sqlite:///{d}/c.db", warehouse=Path(d, "wh").as_uri())
        cat.create_namespace("b")
        t = cat.create_table("b.event", data.schema)
        t.append(data)
        files = t.inspect.files()
        print(f"{args.rows:,} rows in {files.num_rows} files; medians of {args.repeat}")
        peer = StaticTable.from_metadata(t.metadata_location)

        def icefloe(expr: str, cols: tuple[str, ...], native: bool) -> Callable[[], Any]:
            def run() -> Any:
                native_files.ENABLED = native
                try:
                    return t.scan(row_filter=expr, selected_fields=cols).to_arrow()
                finally:
                    native_files.ENABLED = True

            return run

        def pyiceberg(expr: str, cols: tuple[str, ...]) -> Callable[[], Any]:
            return lambda: peer.scan(row_filter=expr, selected_fields=cols).to_arrow()

        for label, expr in FILTERS.items():
            for cols in (("*",), ("id", "value")):
                cases = {
                    "icefloe": icefloe(expr, cols, True),
                    "icefloe, general reader": icefloe(expr, cols, False),
                    "PyIceberg 0.12": pyiceberg(expr, cols),
                }
                times: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
                for _ in range(args.repeat):
                    for name, fn in cases.items():
                        times[name].append(_timed(fn))
                print(f"\n{label}, columns {','.join(cols)}")
                base = statistics.median(w for w, _ in times["icefloe"])
                for name, runs in times.items():
                    wall = statistics.median(w for w, _ in runs)
                    cpu = statistics.median(c for _, c in runs)
                    print(f"  {name:26s} {wall:8,.0f} / {cpu:8,.0f} ms   x{wall / base:.2f}")


if __name__ == "__main__":
    main()
