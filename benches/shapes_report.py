"""The shapes suite's Markdown dashboard: one table per area, times and the target ratios.

Times are ``wall / CPU`` milliseconds (medians of interleaved runs). Ratios: ``icefloe / floor``
and ``/ plain`` are icefloe's time over the other's (targets <= 1.15); ``peer / icefloe`` is how
many times faster icefloe is (targets >= 1.5 DuckDB, >= 1 PyIceberg, >= 2 PyIceberg appends,
>= 10 PyIceberg row-level changes).
"""

from __future__ import annotations

import os
import platform
from typing import Any

from shapes_memory import StreamMemory
from shapes_timing import Timing, ratio

Key = tuple[str, ...]


class Report:
    """Timings collected per area and key (shape, layout[, operation])."""

    def __init__(self, rows: int, repeat: int) -> None:
        self.rows, self.repeat = rows, repeat
        self.areas: dict[str, list[tuple[Key, dict[str, Timing]]]] = {}
        self.load_before = self.load_after = ""
        self.seconds = 0.0
        #: (shape, layout) -> streamed reads of every column: (icefloe, floor)
        self.memory: dict[Key, tuple[StreamMemory, StreamMemory]] = {}

    def add(self, area: str, key: Key, res: dict[str, Timing]) -> None:
        self.areas.setdefault(area, []).append((key, res))

    def _rows(self, area: str) -> list[tuple[Key, dict[str, Timing]]]:
        return self.areas.get(area, [])

    def markdown(self) -> str:
        out = [
            f"{self.rows:,} rows a shape; medians of {self.repeat} interleaved runs after a "
            f"warm-up; times are wall / CPU ms. {platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}. Load average (1/5/15 min) before "
            f"{self.load_before}, after {self.load_after}; {self.seconds:.0f} s in all.",
            "",
        ]
        out += self._append()
        out += self._read("read", "Plain reads (every column)")
        out += self._read("projected", "Projected reads (two columns)")
        out += self._deletes()
        out += self._row_level()
        out += self._memory()
        errors = self._errors()
        if errors:
            out += ["Peers that could not run a case:", "", *errors, ""]
        return "\n".join(out)

    @staticmethod
    def _table(title: str, head: list[str], body: list[list[Any]]) -> list[str]:
        lines = [f"### {title}", "", "| " + " | ".join(head) + " |"]
        lines.append("|" + "---|" * len(head))
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
        return [*lines, ""]

    def _append(self) -> list[str]:
        body = []
        for key, r in self._rows("append"):
            ours, floor, py = r["icefloe"], r["pyarrow floor"], r["pyiceberg"]
            body.append(
                [
                    *key,
                    ours,
                    floor,
                    py,
                    ratio(ours, floor),
                    ratio(ours, floor, "cpu"),
                    ratio(py, ours),
                    ratio(py, ours, "cpu"),
                ]
            )
        head = ["shape", "layout", "icefloe", "pyarrow floor", "PyIceberg"]
        head += ["icefloe/floor wall", "icefloe/floor CPU", "PyIceberg/icefloe wall", "CPU"]
        return self._table("Appends (targets: <= 1.15x the floor, >= 2x PyIceberg)", head, body)

    def _read(self, area: str, title: str) -> list[str]:
        body = []
        for key, r in self._rows(area):
            ours = r["icefloe"]
            body.append(
                [
                    *key,
                    ours,
                    r["pyarrow floor"],
                    r["pyiceberg"],
                    r["duckdb"],
                    ratio(r["duckdb"], ours),
                    ratio(r["pyiceberg"], ours),
                    ratio(ours, r["pyarrow floor"]),
                ]
            )
        head = ["shape", "layout", "icefloe", "pyarrow floor", "PyIceberg", "DuckDB"]
        head += ["DuckDB/icefloe", "PyIceberg/icefloe", "icefloe/floor"]
        title += " (targets: >= 1.5x DuckDB, >= 1x PyIceberg)"
        return self._table(title, head, body)

    def _deletes(self) -> list[str]:
        body = []
        for key, r in self._rows("deletes"):
            plain = r["icefloe plain"]
            row = [*key, plain]
            for k in ("dv", "pos", "eq"):
                row += [r[f"icefloe {k}"], ratio(r[f"icefloe {k}"], plain, "cpu")]
            row += [
                ratio(r["duckdb dv"], r["icefloe dv"]),
                ratio(r["duckdb pos"], r["icefloe pos"]),
            ]
            row += [ratio(r["pyiceberg pos"], r["icefloe pos"])]
            body.append(row)
        head = ["shape", "layout", "plain", "DVs", "CPU/plain", "pos deletes", "CPU/plain"]
        head += ["eq deletes", "CPU/plain", "DuckDB/icefloe DV", "pos", "PyIceberg/icefloe pos"]
        title = "Reads with deletes, 10% of rows (targets: DV, pos <= 1.15x plain CPU; eq <= 1.5x)"
        return self._table(title, head, body)

    def _row_level(self) -> list[str]:
        body = []
        for key, r in self._rows("row-level"):
            ours, need = r["icefloe"], r["read needed columns"]
            py = r.get("pyiceberg", Timing(error="skipped"))
            shown: object = py
            if "pyiceberg" not in r:
                shown = "skipped (--slow-peers)"
            elif py.error:
                shown = f"n/a ({py.error})"
            write = r.get("append the new rows")
            body.append([*key, ours, shown, ratio(py, ours), need, ratio(ours, need), write or "-"])
        head = ["shape", "layout", "operation", "icefloe", "PyIceberg", "PyIceberg/icefloe"]
        head += ["read needed columns", "icefloe/read", "append of its new rows"]
        title = "Row-level changes (targets: >= 10x PyIceberg, <= 1.5x reading the needed columns)"
        return self._table(title, head, body)

    def _memory(self) -> list[str]:
        mb = 1024 * 1024
        body = []
        for key, (ours, floor) in self.memory.items():
            body.append(
                [
                    *key,
                    f"{ours.arrow_bytes / mb:,.0f}",
                    f"{ours.peak_bytes / mb:,.0f}",
                    f"x{ours.peak_bytes / max(1, ours.arrow_bytes):.2f}",
                    f"{floor.peak_bytes / mb:,.0f}",
                ]
            )
        if not body:
            return []
        head = [
            "shape",
            "layout",
            "Arrow data read (MB)",
            "icefloe peak RSS growth (MB)",
            "icefloe peak / data",
            "floor peak RSS growth (MB)",
        ]
        title = "Streamed read of every column: peak memory (a read must not hold the table)"
        return self._table(title, head, body)

    def _errors(self) -> list[str]:
        seen = []
        for area, rows in self.areas.items():
            for key, r in rows:
                for impl, t in r.items():
                    if t.error:
                        seen.append(f"- {area} {'/'.join(key)} {impl}: {t.error}")
        return seen
