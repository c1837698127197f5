"""Upserts of 1% of a table by key on v2 and v3 tables (merge-on-read), against reading the key
column: the shapes suite's tables, unpartitioned, at 10,000,000 rows by default.

On v2 the new rows are encoded while the keys are matched; on v3 the rows an upsert updates
carry the row ids the matching finds, so their file is written after it. Each upsert starts
from the same snapshot (reset between runs, untimed); the cases run in turns in one process.
Medians of ``--repeat`` runs, wall / CPU milliseconds. Usage:
``python benches/upsert_versions.py [--rows N] [--shapes event,narrow] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import shapes_data
from shapes_engines import MOR, Icefloe


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--shapes", default="event,narrow")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print("| shape | v2 upsert | v3 upsert | read key columns | v2 / read | v3 / read |")
    print("|---|---|---|---|---|---|")
    for name in args.shapes.split(","):
        shape = shapes_data.SHAPES[name]
        data = shape.table(args.rows)
        source = shapes_data.upsert_rows(shape, args.rows)
        with tempfile.TemporaryDirectory() as d:
            ours = Icefloe(Path(d))
            tables = {}
            for version in (2, 3):
                t = ours.create(shape, "none", version=version, props=MOR)
                t.append(data)
                tables[version] = (t, t.current_snapshot().snapshot_id)
            meta = tables[2][0].metadata_location
            times: dict[str, list[tuple[float, float]]] = {"v2": [], "v3": [], "read": []}
            for _ in range(args.repeat):
                for case in times:
                    if case != "read":
                        t, s0 = tables[int(case[1])]
                        ours.reset(t, s0)
                    wall, cpu = time.perf_counter(), time.process_time()
                    if case == "read":
                        ours.read(meta, shape.keys)
                    else:
                        t.upsert(source, list(shape.keys))
                    times[case].append(
                        ((time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3)
                    )
        med = {
            k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
            for k, v in times.items()
        }
        cells = [f"{w:,.0f} / {c:,.0f}" for w, c in med.values()]
        read = med["read"][0]
        print(
            f"| {name} | {' | '.join(cells)} | "
            f"x{med['v2'][0] / read:.2f} | x{med['v3'][0] / read:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
