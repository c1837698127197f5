"""Interleaved wall and CPU timing of several implementations of one operation.

Each run of an implementation may have an untimed ``setup`` (resetting a table to its starting
snapshot, say) whose result the timed ``op`` receives. Runs are interleaved (A B C A B C ...) so
a change in the machine's load hits every implementation alike; the medians are reported. CPU
is ``time.process_time`` (every thread of this process, DuckDB's and Arrow's pools included).
Before each timed run the page cache's dirty pages are written out (``os.sync``, untimed), so
no run pays for the write-back of another's files (icefloe's commits ``fsync`` what they add,
which on a virtual disk flushes everything written before). An implementation that raises is
reported with its error and not run again.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Setup = Callable[[], Any] | None
Op = Callable[[Any], object]


@dataclass
class Timing:
    """Median wall and CPU seconds of an implementation's runs, or the error that stopped it."""

    wall: float = 0.0
    cpu: float = 0.0
    error: str = ""
    runs: int = 0  # 1: too slow to repeat, one run

    def __str__(self) -> str:
        if self.error:
            return "n/a"
        once = " (1 run)" if self.runs == 1 else ""
        return f"{self.wall * 1e3:,.0f} / {self.cpu * 1e3:,.0f}{once}"


BUDGET_S = 20.0


def interleave(impls: dict[str, tuple[Setup, Op]], repeat: int) -> dict[str, Timing]:
    """Median wall and CPU time of each implementation over ``repeat`` interleaved runs, after
    one untimed warm-up run each. An implementation whose warm-up run takes longer than
    ``BUDGET_S`` is not run again: that run is its result (``runs`` 1)."""
    walls: dict[str, list[float]] = {k: [] for k in impls}
    cpus: dict[str, list[float]] = {k: [] for k in impls}
    out: dict[str, Timing] = {k: Timing() for k in impls}
    for rep in range(repeat + 1):
        for name, (setup, op) in impls.items():
            if out[name].error or (rep and out[name].runs == 1):
                continue
            try:
                arg = setup() if setup is not None else None
                gc.collect()
                if hasattr(os, "sync"):
                    os.sync()
                w0, c0 = time.perf_counter(), time.process_time()
                op(arg)
                w1, c1 = time.perf_counter(), time.process_time()
            except Exception as e:  # reported in the table, not fatal to the suite
                out[name].error = f"{type(e).__name__}: {str(e)[:160]}"
                print(f"    {name}: {out[name].error}", flush=True)
                continue
            if rep or w1 - w0 > BUDGET_S:  # the first round warms caches and imports
                walls[name].append(w1 - w0)
                cpus[name].append(c1 - c0)
            if not rep and w1 - w0 > BUDGET_S:
                out[name].runs = 1
    for name, t in out.items():
        if not t.error and walls[name]:
            t.wall, t.cpu = statistics.median(walls[name]), statistics.median(cpus[name])
    return out


def load() -> str:
    """The machine's 1, 5 and 15 minute load averages."""
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def ratio(num: Timing, den: Timing, attr: str = "wall") -> str:
    """``num / den`` of the chosen time, formatted as ``x1.23``; ``-`` if either is missing."""
    a, b = getattr(num, attr), getattr(den, attr)
    if num.error or den.error or not a or not b:
        return "-"
    return f"x{a / b:.2f}"
