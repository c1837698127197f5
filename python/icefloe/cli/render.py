"""Terminal and JSON output shared by the commands: the console, number formats and bars.

Human output goes through a :class:`rich.console.Console` on standard output (colour when it is
a terminal, or as ``--color/--no-color`` says; ``NO_COLOR`` is honoured); ``--json`` output is
plain JSON on standard output, one document per command, with no colour and no progress.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import sys
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.text import Text

__all__ = [
    "OP_COLORS",
    "Output",
    "bar",
    "human_size",
    "parse_size",
    "plural",
    "ts",
]

#: Colour of each snapshot operation, in the terminal and in the HTML report.
OP_COLORS: Mapping[str, str] = {
    "append": "green",
    "overwrite": "yellow",
    "delete": "red",
    "replace": "blue",
}

_EIGHTHS = " ▏▎▍▌▋▊▉█"
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


class Output:
    """Where a command writes: ``console`` for people, :meth:`json` for scripts."""

    def __init__(self, *, color: bool | None = None, width: int | None = None) -> None:
        self.color = color
        self.width = width
        self._console: Console | None = None
        self._err: Console | None = None

    def _make(self, stderr: bool) -> Console:
        kwargs: dict[str, Any] = {"stderr": stderr, "highlight": False, "soft_wrap": False}
        if not stderr and not sys.stdout.isatty():
            kwargs["file"] = _TrimmedStdout()
        if self.width:
            kwargs["width"] = self.width
        if self.color is True:
            kwargs.update(force_terminal=True, color_system="256")
        elif self.color is False:
            kwargs.update(no_color=True, color_system=None)
        return Console(**kwargs)

    @property
    def console(self) -> Console:
        """Human output on standard output."""
        if self._console is None:
            self._console = self._make(stderr=False)
        return self._console

    @property
    def err(self) -> Console:
        """Progress and notes on standard error."""
        if self._err is None:
            self._err = self._make(stderr=True)
        return self._err

    def json(self, document: Any) -> None:
        """Write ``document`` as indented JSON to standard output."""
        sys.stdout.write(json.dumps(document, indent=2, default=_json_default) + "\n")
        sys.stdout.flush()


_TRAILING_BLANKS = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)\n")


class _TrimmedStdout(io.TextIOBase):
    """Standard output (as it is at each write, so test runners can swap it) without the
    blanks rich pads lines with, when the output is a file or a pipe."""

    def write(self, text: str) -> int:
        sys.stdout.write(_TRAILING_BLANKS.sub(r"\1\n", text))
        return len(text)

    def flush(self) -> None:
        sys.stdout.flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(sys.stdout, "encoding", None) or "utf-8"


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def human_size(n: int | float | None) -> str:
    """Bytes in binary units: ``1.5 MiB``."""
    if n is None:
        return "-"
    value = float(n)
    for unit in _UNITS:
        if abs(value) < 1024 or unit == _UNITS[-1]:
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def parse_size(text: str) -> int:
    """``128MiB``, ``512 MB``, ``1g`` or a plain byte count, as bytes."""
    from icefloe.exceptions import ValidationError

    raw = text.strip().lower().replace(" ", "")
    units = {
        "": 1,
        "b": 1,
        "k": 1024,
        "kb": 1000,
        "kib": 1024,
        "m": 1024**2,
        "mb": 1000**2,
        "mib": 1024**2,
        "g": 1024**3,
        "gb": 1000**3,
        "gib": 1024**3,
        "t": 1024**4,
        "tb": 1000**4,
        "tib": 1024**4,
    }
    number = raw.rstrip("abgikmt")
    unit = raw[len(number) :]
    try:
        value = float(number)
    except ValueError:
        raise ValidationError(f"not a size: {text!r} (try 128MiB or 134217728)") from None
    if unit not in units or value <= 0:
        raise ValidationError(f"not a size: {text!r} (try 128MiB or 134217728)")
    return int(value * units[unit])


def ts(ms: int | None) -> str:
    """Epoch milliseconds as ``2026-11-24 10:00:01`` (UTC)."""
    if ms is None:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def iso(ms: int | None) -> str | None:
    """Epoch milliseconds as an ISO 8601 string with milliseconds, UTC."""
    if ms is None:
        return None
    t = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)
    return t.isoformat(timespec="milliseconds")


def bar(value: float, maximum: float, width: int, style: str = "") -> Text:
    """A horizontal bar of ``width`` cells for ``value`` out of ``maximum`` (eighth-cell steps)."""
    if maximum <= 0 or value <= 0:
        return Text(" " * width)
    eighths = round(8 * width * min(value, maximum) / maximum)
    eighths = max(eighths, 1)
    full, part = divmod(eighths, 8)
    s = "█" * full + (_EIGHTHS[part] if part else "")
    return Text(s.ljust(width), style=style)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 branch``, ``2 branches``: a count with its noun."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def pct(part: float, whole: float) -> str:
    """``part`` as a percentage of ``whole`` (``-`` when ``whole`` is zero)."""
    if not whole:
        return "-"
    return f"{100 * part / whole:.1f}%"
