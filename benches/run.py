"""Runs the benchmarks: ``python benches/run.py [--quick] [--out FILE] [area ...]``.

``shapes`` takes ``--rows N`` (rows a shape), ``--shapes a,b`` and ``--layouts x,y``; ``spark``
takes ``--cases a,b`` (a subset of its case names).

Areas are the ``bench_<area>.py`` modules beside this file; with none named, all run.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness import Harness  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    areas = sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("areas", nargs="*", choices=[*areas, []], help="which areas to run")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, help="also write the Markdown table here")
    ap.add_argument("--rows", type=int, help="shapes: rows a shape (default 200,000)")
    ap.add_argument("--shapes", help="shapes: comma-separated subset of the shapes")
    ap.add_argument("--layouts", help="shapes: comma-separated subset of none,day,day+bucket")
    ap.add_argument("--slow-peers", action="store_true", help="shapes: PyIceberg's slow upserts")
    ap.add_argument("--cases", help="spark: comma-separated subset of the case names")
    args = ap.parse_args(argv)
    h = Harness(quick=args.quick, repeat=args.repeat)
    h.options = {
        "rows": args.rows,
        "shapes": args.shapes,
        "layouts": args.layouts,
        "slow_peers": args.slow_peers,
        "out": args.out,
        "cases": args.cases,
    }
    for area in args.areas or areas:
        h.area = area
        importlib.import_module(f"bench_{area}").run(h)
    table = h.markdown()
    print(table)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
