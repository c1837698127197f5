"""Progress reporting for long table maintenance (file deletion, compaction).

Long operations take a ``progress`` argument:

- ``None`` or ``False`` (the default): silent.
- ``True``: a one-line bar on standard error, redrawn at most ten times a second, e.g.
  ``expire_snapshots: deleting files  1,204/5,000 [=====               ]  24%``.
- a callable ``fn(done, total)``: called after each step with the counts so far (from the
  thread that finished the step; calls are serialised), for notebooks or a caller's own UI.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from icefloe.exceptions import ValidationError

__all__ = ["Progress", "ProgressArg", "check_progress"]

ProgressArg = bool | Callable[[int, int], None] | None
"""What a ``progress=`` argument accepts: off, a bar on stderr, or a callback."""

_WIDTH = 20
_INTERVAL_S = 0.1


def check_progress(progress: object) -> None:
    """Refuses a ``progress`` argument that is none of None, a bool or a callable."""
    if progress is not None and not isinstance(progress, bool) and not callable(progress):
        raise ValidationError(
            f"progress must be a bool or a callable(done, total), got {progress!r}"
        )


class Progress:
    """Counts the steps of one operation and reports them as ``progress`` asks.

    Use as a context manager; :meth:`advance` may be called from worker threads.
    """

    def __init__(
        self, progress: ProgressArg, total: int, what: str, *, stream: TextIO | None = None
    ) -> None:
        check_progress(progress)
        self._callback = progress if callable(progress) else None
        self._bar = progress is True
        self._stream = stream if stream is not None else sys.stderr
        self.total = total
        self.what = what
        self.done = 0
        self._lock = threading.Lock()
        self._drawn = 0.0

    def __enter__(self) -> Progress:
        if self._bar and self.total:
            self._draw()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar and self.total:
            self._draw()
            self._stream.write("\n")
            self._stream.flush()

    def advance(self, steps: int = 1) -> None:
        """Record ``steps`` more finished steps and report them."""
        with self._lock:
            self.done += steps
            if self._callback is not None:
                self._callback(self.done, self.total)
            if self._bar and time.monotonic() - self._drawn >= _INTERVAL_S:
                self._draw()

    def _draw(self) -> None:
        total = max(self.total, 1)
        filled = _WIDTH * min(self.done, total) // total
        pct = 100 * min(self.done, total) // total
        bar = "=" * filled + " " * (_WIDTH - filled)
        self._stream.write(f"\r{self.what}  {self.done:,}/{self.total:,} [{bar}] {pct:3d}%")
        self._stream.flush()
        self._drawn = time.monotonic()
