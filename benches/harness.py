"""Benchmark harness: times icefloe against its peers in the same process run.

Each ``benches/bench_<area>.py`` defines ``run(h: Harness) -> None`` and calls
:meth:`Harness.compare` once per case. ``python benches/run.py [area ...]`` runs them and writes a
Markdown table of throughputs with the ratio of icefloe against every peer measured in that run.
Benchmarks are never assertions: targets are recorded in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Result:
    """One timed implementation of a case: the best and median of ``repeat`` runs."""

    impl: str
    best_s: float
    median_s: float


@dataclass
class Case:
    """A benchmark case: ``units`` of work (values, entries, rows) done by each implementation."""

    area: str
    name: str
    units: int
    unit: str
    target: str
    results: list[Result] = field(default_factory=list)

    def ours(self) -> Result:
        return self.results[0]


def _time(fn: Callable[[], object], repeat: int, warmup: int) -> Result:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return Result("", min(times), statistics.median(times))


class Harness:
    """Collects cases; ``quick`` shrinks sizes so a smoke run finishes in seconds."""

    def __init__(self, quick: bool = False, repeat: int = 5) -> None:
        self.quick = quick
        self.repeat = 2 if quick else repeat
        self.cases: list[Case] = []
        self.area = ""
        self.options: dict[str, Any] = {}  # area-specific command-line options
        self.extra_markdown: list[str] = []  # areas that report their own tables

    def size(self, full: int, quick: int) -> int:
        """The problem size to use for this run."""
        return quick if self.quick else full

    def compare(
        self,
        name: str,
        units: int,
        unit: str,
        ours: Callable[[], object],
        peers: dict[str, Callable[[], object]],
        target: str = "",
        warmup: int = 1,
    ) -> Case:
        """Time ``ours`` (icefloe) and each peer on the same work; print and record the case."""
        case = Case(self.area, name, units, unit, target)
        for impl, fn in [("icefloe", ours), *peers.items()]:
            r = _time(fn, self.repeat, warmup)
            r.impl = impl
            case.results.append(r)
        self.cases.append(case)
        print(self.format_case(case), flush=True)
        return case

    @staticmethod
    def rate(case: Case, r: Result) -> float:
        return case.units / r.best_s

    def format_case(self, case: Case) -> str:
        ours = case.ours()
        parts = [
            f"{case.area}/{case.name}: icefloe {self.rate(case, ours) / 1e6:.2f} M{case.unit}/s"
        ]
        for r in case.results[1:]:
            parts.append(
                f"{r.impl} {self.rate(case, r) / 1e6:.2f} M{case.unit}/s "
                f"(icefloe x{r.best_s / ours.best_s:.1f})"
            )
        return "; ".join(parts)

    def markdown(self) -> str:
        """A Markdown table: one row per (case, peer) with throughputs and the ratio."""
        lines = [
            f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}; best of {self.repeat} runs.",
            "",
            "| case | units | icefloe | peer | peer rate | icefloe / peer | target |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in self.cases:
            ours = c.ours()
            ours_rate = f"{self.rate(c, ours) / 1e6:.2f} M{c.unit}/s ({ours.best_s * 1e3:.1f} ms)"
            peers = c.results[1:] or [None]
            for r in peers:
                if r is None:
                    lines.append(
                        f"| {c.area}/{c.name} | {c.units:,} | {ours_rate} | - | - | - "
                        f"| {c.target} |"
                    )
                    continue
                peer_rate = f"{self.rate(c, r) / 1e6:.2f} M{c.unit}/s ({r.best_s * 1e3:.1f} ms)"
                lines.append(
                    f"| {c.area}/{c.name} | {c.units:,} | {ours_rate} | {r.impl} | {peer_rate} "
                    f"| x{r.best_s / ours.best_s:.2f} | {c.target} |"
                )
        if not self.cases:
            lines = []
        return "\n".join([*lines, *self.extra_markdown]) + "\n"
