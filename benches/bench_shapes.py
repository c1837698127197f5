"""Every table shape, every layout, every operation, against every peer in the same run.

``python benches/run.py shapes [--rows N] [--repeat K] [--shapes a,b] [--layouts x,y]``

Shapes (``shapes_data``): narrow numbers, the event table, wide (60 columns, a third strings),
nested (struct, list<struct>, map), TPC-H ``lineitem``; layouts: unpartitioned, ``day`` of the
time column, ``day`` + ``bucket[16]`` of the id. Per shape and layout:

- append: icefloe, PyIceberg 0.12 and the pyarrow floor, each into a fresh table / directory;
- reads of every column and of two (projected): icefloe, PyIceberg and DuckDB reading icefloe's
  table through its metadata file, the floor reading its own files;
- overwrite by a time filter (10%), delete 10% (deletion vectors on a v3 merge-on-read table),
  upsert 1% by key: icefloe against PyIceberg (copy-on-write, v2) and against icefloe's read of
  the columns the operation needs; each run starts from the appended snapshot;
- reads with deletion vectors, position delete files (v2 merge-on-read) and equality deletes
  (``delete_by_keys`` of 10% of the keys) against icefloe's plain read, DuckDB alongside;
- the peak memory of a streamed read of every column (``shapes_memory``), icefloe's and the
  floor's, each in a fresh process, against the Arrow bytes the read yields.

Wall and CPU medians of interleaved runs (``shapes_timing``); the Markdown dashboard is printed
and appended to ``--out``. Default 200,000 rows a shape (a few minutes on 2 cores);
``--rows 3000000`` / ``--rows 10000000`` are the sizes the targets are stated at. PyIceberg's
upsert into a partitioned table takes minutes even at 200,000 rows (371 s wall for the event
table in ``day+bucket``), so it runs only with ``--slow-peers``.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from harness import Harness
from shapes_data import SHAPES, Shape, delete_keys, overwrite_rows, upsert_rows
from shapes_engines import LAYOUTS, MOR, DuckDB, Floor, Icefloe, PyIceberg
from shapes_memory import streamed_read
from shapes_report import Report
from shapes_timing import Timing, interleave, load

DEFAULT_ROWS = 200_000


def _checked(fn: Callable[[], int], expected: int) -> Callable[[Any], int]:
    def run(_: Any) -> int:
        got = fn()
        if got != expected:
            raise ValueError(f"read {got} rows, expected {expected}")
        return got

    return run


def _append(
    shape: Shape, layout: str, eng: dict[str, Any], repeat: int
) -> tuple[dict[str, Timing], Any, Path, Any]:
    data = shape.table(eng["rows"])
    ours, theirs, floor = eng["icefloe"], eng["pyiceberg"], eng["floor"]
    made: dict[str, list[Any]] = {"icefloe": [], "floor": [], "pyiceberg": []}

    def ours_op(t: Any) -> None:
        t.append(data)
        made["icefloe"].append(t)

    def floor_op(_: Any) -> None:
        made["floor"].append(floor.append(shape, layout, data))

    def theirs_op(t: Any) -> None:
        t.append(data)
        made["pyiceberg"].append(t)

    res = interleave(
        {
            "icefloe": (lambda: ours.create(shape, layout), ours_op),
            "pyarrow floor": (
                None,
                lambda _: made["floor"].append(floor.append(shape, layout, data)),
            ),
            "pyiceberg": (lambda: theirs.create(shape, layout), theirs_op),
        },
        repeat,
    )
    py_table = made["pyiceberg"][0] if made["pyiceberg"] else None
    return res, made["icefloe"][0], made["floor"][0], py_table


def _reads(
    meta: str, floor_dir: Path, eng: dict[str, Any], cols: tuple[str, ...], rows: int, repeat: int
) -> dict[str, Timing]:
    ours, theirs, floor, duck = eng["icefloe"], eng["pyiceberg"], eng["floor"], eng["duckdb"]
    return interleave(
        {
            "icefloe": (None, _checked(lambda: ours.read(meta, cols), rows)),
            "pyarrow floor": (None, _checked(lambda: floor.read(floor_dir, cols), rows)),
            "pyiceberg": (None, _checked(lambda: theirs.read(meta, cols), rows)),
            "duckdb": (None, _checked(lambda: duck.read(meta, cols), rows)),
        },
        repeat,
    )


def _row_level(
    shape: Shape, layout: str, eng: dict[str, Any], plain_meta: str, py_table: Any, repeat: int
) -> tuple[dict[str, dict[str, Timing]], Any, int]:
    """Overwrite, delete and upsert; returns the timings, the v3 table and its first snapshot."""
    rows, ours, theirs = eng["rows"], eng["icefloe"], eng["pyiceberg"]
    mor = ours.create(shape, layout, version=3, props=MOR)
    mor.append(shape.table(rows))
    s0 = mor.current_snapshot().snapshot_id
    p0 = py_table.current_snapshot().snapshot_id if py_table is not None else None
    ow, up = overwrite_rows(shape, rows), upsert_rows(shape, rows)
    # (icefloe, PyIceberg, the columns the operation reads, the rows it writes)
    ops: dict[
        str, tuple[Callable[[Any], Any], Callable[[Any], Any], tuple[str, ...], pa.Table | None]
    ] = {
        "overwrite 10%": (
            lambda t: t.overwrite(ow, shape.overwrite_filter),
            lambda t: t.overwrite(ow, overwrite_filter=shape.overwrite_filter),
            (shape.time_col,),
            ow,
        ),
        "delete 10%": (
            lambda t: t.delete(shape.delete_filter),
            lambda t: t.delete(delete_filter=shape.delete_filter),
            (shape.delete_col,),
            None,
        ),
        "upsert 1%": (
            lambda t: t.upsert(up, list(shape.keys)),
            lambda t: t.upsert(up, join_cols=list(shape.keys)),
            shape.keys,
            up,
        ),
    }
    out: dict[str, dict[str, Timing]] = {}
    for name, (mine, peer, needed, new_rows) in ops.items():
        impls: dict[str, Any] = {
            "icefloe": (lambda: (ours.reset(mor, s0), mor)[1], mine),
            "read needed columns": (None, lambda _, c=needed: ours.read(plain_meta, c)),
        }
        if new_rows is not None:
            # what writing the operation's new rows costs alone: an append of them
            impls["append the new rows"] = (
                lambda: (ours.reset(mor, s0), mor)[1],
                lambda t, d=new_rows: t.append(d),
            )
        slow = name.startswith("upsert") and layout != "none" and not eng["slow_peers"]
        # PyIceberg 0.12's upsert into lineitem (two key columns) kills the process with
        # SIGSEGV at 1,000,000 rows (reproduced without icefloe in the process)
        crashes = name.startswith("upsert") and shape.name == "lineitem" and rows > 100_000
        if py_table is not None and not slow and not crashes:
            impls["pyiceberg"] = (lambda: (theirs.reset(py_table, p0), py_table)[1], peer)
        out[name] = interleave(impls, repeat)
        if py_table is not None and crashes:
            out[name]["pyiceberg"] = Timing(error="PyIceberg 0.12 segfaults")
        print(f"  {name}: " + "; ".join(f"{k} {v}" for k, v in out[name].items()), flush=True)
    ours.reset(mor, s0)
    return out, mor, s0


def _delete_reads(
    shape: Shape, layout: str, eng: dict[str, Any], plain_meta: str, mor: Any, repeat: int
) -> dict[str, Timing]:
    rows, ours, duck, theirs = eng["rows"], eng["icefloe"], eng["duckdb"], eng["pyiceberg"]
    n = shape.table(rows).num_rows
    mor.delete(shape.delete_filter)
    pos = ours.create(shape, layout, version=2, props=MOR)
    pos.append(shape.table(rows))
    pos.delete(shape.delete_filter)
    eq = ours.create(shape, layout, version=2)
    eq.append(shape.table(rows))
    eq.delete_by_keys(delete_keys(shape, rows), list(shape.keys))
    metas = {"dv": mor.metadata_location, "pos": pos.metadata_location, "eq": eq.metadata_location}
    kept = {k: ours.read(m) for k, m in metas.items()}
    impls: dict[str, Any] = {"icefloe plain": (None, _checked(lambda: ours.read(plain_meta), n))}
    for k, m in metas.items():
        impls[f"icefloe {k}"] = (None, _checked(lambda m=m: ours.read(m), kept[k]))
    for k in ("dv", "pos"):
        m = metas[k]
        impls[f"duckdb {k}"] = (None, _checked(lambda m=m: duck.read(m), kept[k]))
    impls["pyiceberg pos"] = (None, _checked(lambda: theirs.read(metas["pos"]), kept["pos"]))
    return interleave(impls, repeat)


def run(h: Harness) -> None:
    opts = h.options
    rows = int(opts.get("rows") or DEFAULT_ROWS)
    shapes = (opts.get("shapes") or ",".join(SHAPES)).split(",")
    layouts = (opts.get("layouts") or ",".join(LAYOUTS)).split(",")
    repeat = h.repeat
    report = Report(rows, repeat)
    report.load_before = load()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="icefloe-shapes-") as tmp:
        root = Path(tmp)
        eng: dict[str, Any] = {
            "rows": rows,
            "icefloe": Icefloe(root),
            "pyiceberg": PyIceberg(root),
            "floor": Floor(root),
            "duckdb": DuckDB(),
            "slow_peers": bool(opts.get("slow_peers")),
        }
        for name in shapes:
            shape = SHAPES[name]
            t0 = time.perf_counter()
            shape.table(rows)
            print(f"{name}: generated {rows:,} rows in {time.perf_counter() - t0:.1f} s")
            for layout in layouts:
                key = (name, layout)
                print(f"{name} / {layout} (load {load()})", flush=True)
                res, ours_t, floor_dir, py_t = _append(shape, layout, eng, repeat)
                report.add("append", key, res)
                n = shape.table(rows).num_rows
                meta = ours_t.metadata_location
                report.add("read", key, _reads(meta, floor_dir, eng, ("*",), n, repeat))
                report.add(
                    "projected", key, _reads(meta, floor_dir, eng, shape.projection, n, repeat)
                )
                ops, mor, _ = _row_level(shape, layout, eng, meta, py_t, repeat)
                for op, res in ops.items():
                    report.add("row-level", (name, layout, op), res)
                report.add("deletes", key, _delete_reads(shape, layout, eng, meta, mor, repeat))
                report.memory[key] = (
                    streamed_read("icefloe", meta),
                    streamed_read("floor", str(floor_dir)),
                )
                if opts.get("out"):  # the tables so far, in case a long run is stopped
                    report.load_after = load()
                    Path(opts["out"]).write_text(report.markdown())
    report.load_after = load()
    report.seconds = time.perf_counter() - started
    text = report.markdown()
    h.extra_markdown.append(text)
