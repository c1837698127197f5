"""Terminal and JSON output shared by the commands: the console, number formats and bars.

Human output goes through a :class:`rich.console.Console` on standard output (colour when it is
a terminal, or as ``--color/--no-color`` says; ``NO_COLOR`` is honoured); ``--json`` output is
plain JSON on standard output, one document per command, with no colour and no progress.

Names and values from tables reach the console only through :func:`literal` (a rich
:class:`~rich.text.Text`) or :func:`esc` (inside markup strings): rich markup in them is shown
as written, and control characters (ANSI escape sequences, newlines) as ``\\x1b``, ``\\n``.
JSON output is strict: NaN and infinities are the strings ``"NaN"``, ``"Infinity"`` and
``"-Infinity"`` (as Spark's and Jackson's JSON write them).
"""

from __future__ import annotations

import datetime as dt
import decimal
import errno
import io
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any, cast

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from icefloe.io.files import unicode_name

__all__ = [
    "OP_COLORS",
    "Output",
    "bar",
    "deletes_text",
    "dumps",
    "esc",
    "fit_widths",
    "human_size",
    "json_safe",
    "literal",
    "open_output",
    "parse_size",
    "plural",
    "printable",
    "shown_properties",
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
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED_CONTROLS = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_INT64_MAX = 2**63 - 1
#: The width of :attr:`Output.unwrapped` output into files and pipes: no line is folded.
_UNWRAPPED_WIDTH = 100_000


class _Console(Console):
    """rich's console, whose closed output pipe reaches the command line's handler (rich's
    own exits with 1, as a failure would)."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError(errno.EPIPE, "the output pipe was closed")


class Output:
    """Where a command writes: ``console`` for people, :meth:`json` for scripts."""

    def __init__(self, *, color: bool | None = None, width: int | None = None) -> None:
        self.color = color
        self.width = width
        self._console: Console | None = None
        self._err: Console | None = None

    def _make(self, stderr: bool) -> Console:
        piped = not (sys.stderr if stderr else sys.stdout).isatty()
        kwargs: dict[str, Any] = {
            "stderr": stderr,
            "highlight": False,
            # into a file or pipe without --width, a line of text is not folded at 80 columns
            # (a path cut in two is no path for grep); tables and pictures keep the width
            "soft_wrap": piped and not self.width,
            "emoji": False,
        }
        if not stderr and not sys.stdout.isatty():
            kwargs["file"] = _Trimmed()
        if self.width:
            kwargs["width"] = self.width
        if self.color is True:
            kwargs.update(force_terminal=True, color_system="256")
        elif self.color is False:
            kwargs.update(no_color=True, color_system=None)
        return _Console(**kwargs)

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

    @property
    def unwrapped(self) -> Console:
        """Standard output for text without pictures (key/value facts, trees): into a file
        or pipe without ``--width``, lines as long as their values (a path folded at 80
        columns is no path for ``grep`` or ``cut``); on a terminal, :attr:`console`."""
        if self.width or sys.stdout.isatty():
            return self.console
        return _Console(
            file=cast(IO[str], _Trimmed()),
            width=_UNWRAPPED_WIDTH,
            highlight=False,
            soft_wrap=False,
            emoji=False,
            no_color=self.color is not True,
            color_system="256" if self.color is True else None,
            force_terminal=self.color is True,
        )

    def file_console(self, stream: IO[str]) -> Console:
        """A console that draws into ``stream`` (a file): no colour, the output's width."""
        return _Console(
            file=cast(IO[str], _Trimmed(stream)),
            width=self.width or self.console.width,
            highlight=False,
            soft_wrap=False,
            emoji=False,
            no_color=True,
            color_system=None,
        )

    def json(self, document: Any) -> None:
        """Write ``document`` as indented, strict JSON to standard output."""
        sys.stdout.write(dumps(document, indent=2) + "\n")
        sys.stdout.flush()


def dumps(document: Any, indent: int | None = None, *, ensure_ascii: bool = True) -> str:
    """``document`` as strict JSON (see :func:`json_safe`): dates and times in ISO 8601, other
    values JSON has no type for (decimals, uuids) as their strings."""
    return json.dumps(
        json_safe(document),
        indent=indent,
        default=_json_default,
        allow_nan=False,
        ensure_ascii=ensure_ascii,
    )


def json_safe(value: Any) -> Any:
    """``value`` with every NaN and infinity (in dicts, lists and tuples too) replaced by
    the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``, bytes by their hex, and
    strings that are not valid Unicode (a file name that is not UTF-8) by
    :func:`~icefloe.io.files.unicode_name`."""
    if isinstance(value, str):
        return unicode_name(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {
            unicode_name(k) if isinstance(k, str) else k: json_safe(v) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def open_output(path: str, mode: str) -> IO[Any]:
    """``path`` opened for writing (text as UTF-8); one that cannot be written is bad input."""
    from icefloe.exceptions import ValidationError

    try:
        return open(path, mode, encoding=None if "b" in mode else "utf-8")
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ValidationError(f"cannot write --output {path}: {reason}") from None


def printable(value: object) -> str:
    """``str(value)`` with control characters written out (``\\x1b``, ``\\n``), so none
    reaches the terminal raw, and so are the bytes of a file name that is not UTF-8
    (:func:`~icefloe.io.files.unicode_name`)."""

    def written(m: re.Match[str]) -> str:
        ch = m.group()
        return _NAMED_CONTROLS.get(ch) or f"\\x{ord(ch):02x}"

    return _CONTROL.sub(written, unicode_name(str(value)))


#: Words of a property name that make its value a credential (``s3.secret-access-key``,
#: ``adls.sas-token.<account>``, ``password``, ``api_key``, ``connection-string``).
_SECRET_WORDS = frozenset(
    {"secret", "token", "password", "passwd", "credential", "credentials", "key", "sas"}
)


def _is_secret(key: str) -> bool:
    """Whether a property's value is a credential, by the words of its name: a column's
    setting (``...column.<name>``) is named by its setting alone, and a key id (``encryption
    .key-id``, ``s3.access-key-id``) is no secret."""
    name = key.lower().split(".column.", 1)[0]
    if name.endswith("key-id") or name.endswith("key_id"):
        return False
    words = set(re.split(r"[^a-z0-9]+", name))
    return bool(words & _SECRET_WORDS) or "connection-string" in name or ("authorization" in words)


def shown_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """``properties`` as every command shows them, in order of key: credential values (see
    :func:`_is_secret`) read ``***`` and URLs show no password. The table API still returns
    the values themselves."""
    from icefloe.properties import redact_url

    return {k: "***" if _is_secret(k) else redact_url(v) for k, v in sorted(properties.items())}


def literal(value: object, style: str = "") -> Text:
    """``value`` as text shown as written: no markup, control characters written out."""
    return Text(printable(value), style=style)


def esc(value: object) -> str:
    """``value`` for a markup string: shown as written, control characters written out."""
    return escape(printable(value))


_TRAILING_BLANKS = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)\n")


class _Trimmed(io.TextIOBase):
    """``stream``, or standard output as it is at each write (so test runners can swap it),
    without the blanks rich pads lines with, when the output is a file or a pipe."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__()
        self._stream = stream

    def _target(self) -> IO[str]:
        return self._stream if self._stream is not None else sys.stdout

    def write(self, text: str) -> int:
        self._target().write(_TRAILING_BLANKS.sub(r"\1\n", text))
        return len(text)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._target(), "encoding", None) or "utf-8"


def _json_default(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return format(value, "f")  # plain notation: 0.0000000000, not 0E-10
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
        if unit == "B" and abs(value) < 1024:
            return f"{int(value)} B"
        shown = f"{value:.1f}"
        if unit != "B" and (abs(float(shown)) < 1024 or unit == _UNITS[-1]):
            return f"{shown} {unit}"  # the unit chosen after rounding: 1.0 MiB, not 1024.0 KiB
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
        "p": 1024**5,
        "pb": 1000**5,
        "pib": 1024**5,
        "e": 1024**6,
        "eb": 1000**6,
        "eib": 1024**6,
    }
    number = raw.rstrip("abegikmpt")
    unit = raw[len(number) :]
    try:
        value = decimal.Decimal(number)  # exact: a float would round 2**63 - 1 up
    except decimal.InvalidOperation:
        raise ValidationError(f"not a size: {text!r} (try 128MiB or 134217728)") from None
    if unit not in units or not value.is_finite() or value <= 0:
        raise ValidationError(f"not a size: {text!r} (try 128MiB or 134217728)")
    size = int(value * units[unit])
    if size < 1 or size > _INT64_MAX:
        raise ValidationError(f"size out of range: {text!r} (from 1 byte to 8 EiB less one byte)")
    return size


def _utc(ms: int) -> dt.datetime | None:
    """Epoch milliseconds as a UTC datetime; None when no calendar date from year 1 to 9999
    holds it (a writer that put microseconds there, say)."""
    try:
        return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=ms)
    except OverflowError:
        return None


def ts(ms: int | None, *, utc: bool = False, year: bool = True) -> str:
    """Epoch milliseconds as ``2026-11-24 10:00:01`` (UTC), with `` UTC`` after it when
    ``utc``, without ``2026-`` when not ``year``; a time out of the calendar's range as its
    number: ``1795517201000000 ms (out of range)``."""
    if ms is None:
        return "-"
    t = _utc(ms)
    if t is None:
        return f"{ms} ms (out of range)"
    text = t.replace(tzinfo=None).isoformat(" ", "seconds")
    return (text if year else text[5:]) + (" UTC" if utc else "")


def iso(ms: int | None) -> str | None:
    """Epoch milliseconds as an ISO 8601 string with milliseconds, UTC; None when it is out of
    the calendar's range (years 1 to 9999)."""
    t = None if ms is None else _utc(ms)
    return None if t is None else t.isoformat(timespec="milliseconds")


def bar(value: float, maximum: float, width: int, style: str = "") -> Text:
    """A horizontal bar of ``width`` cells for ``value`` out of ``maximum`` (eighth-cell steps)."""
    if maximum <= 0 or value <= 0:
        return Text(" " * width)
    eighths = round(8 * width * min(value, maximum) / maximum)
    eighths = max(eighths, 1)
    full, part = divmod(eighths, 8)
    s = "█" * full + (_EIGHTHS[part] if part else "")
    return Text(s.ljust(width), style=style)


#: The narrowest a column of values is cut to (with an ellipsis) before columns are left out.
MIN_CELL = 10


def fit_widths(natural: Sequence[int], width: int, gap: int, least: int = MIN_CELL) -> list[int]:
    """Widths for the leading columns of a table drawn in ``width`` cells, ``gap`` cells apart,
    whose values are ``natural`` cells wide: as many columns as fit at ``least`` cells each (at
    least one; a column narrower than that at its own width), then the room left given to
    them: whole, those that want least first, and what cannot make the rest whole shared
    evenly. Fewer widths than columns means the others are left out; a value is cut (with
    an ellipsis), never folded."""
    if not natural:
        return []
    floors = [max(1, min(n, least, width)) for n in natural]
    used = floors[0]
    shown = 1
    for f in floors[1:]:
        if used + gap + f > width:
            break
        used += gap + f
        shown += 1
    widths = floors[:shown]
    room = width - used
    wanting = sorted(range(shown), key=lambda j: natural[j] - widths[j])
    while wanting and natural[wanting[0]] - widths[wanting[0]] <= room:  # whole, if it can
        j = wanting.pop(0)
        room -= natural[j] - widths[j]
        widths[j] = natural[j]
    for k, j in enumerate(wanting):  # the others share what is left
        give = room // (len(wanting) - k)
        widths[j] += give
        room -= give
    return widths


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 branch``, ``2 branches``: a count with its noun."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def deletes_text(rows: int, keys: int, key_files: int) -> str:
    """``N deleted rows`` (position deletes and DVs) and, apart, ``N equality-delete keys in M
    files``: an equality delete holds keys, and how many rows they match is not known."""
    parts = [plural(rows, "deleted row")] if rows or not key_files else []
    if key_files:
        parts.append(f"{plural(keys, 'equality-delete key')} in {plural(key_files, 'file')}")
    return ", ".join(parts)


def pct(part: float, whole: float) -> str:
    """``part`` as a percentage of ``whole`` (``-`` when ``whole`` is zero)."""
    if not whole:
        return "-"
    return f"{100 * part / whole:.1f}%"
