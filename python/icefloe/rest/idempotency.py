"""Replay of finished requests by ``Idempotency-Key`` (Iceberg REST 1.11).

A mutating request that carries the header is run at most once per key within the key
lifetime: a repeat of it (the same method and path) gets the first answer again without touching
the catalog. Successful answers and deterministic client errors (4xx, including 409) are kept;
5xx answers are not, so a retry after a server failure runs again. Requests with the same key
wait for each other. Keys live in this server process's memory.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["IdempotencyStore", "StoredReply", "parse_duration"]


@dataclass(frozen=True)
class StoredReply:
    """A finished answer: status, body, content type and extra headers (an ``ETag``)."""

    status: int
    body: bytes
    media_type: str
    headers: tuple[tuple[str, str], ...] = ()


def parse_duration(text: str) -> float:
    """Seconds of an ISO-8601 duration like ``PT30M`` (days, hours, minutes, seconds)."""
    import re

    m = re.fullmatch(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", text)
    if not m or text in ("P", "PT"):
        raise ValueError(f"not an ISO-8601 duration: {text!r}")
    days, hours, minutes, seconds = m.groups()
    return (
        int(days or 0) * 86400
        + int(hours or 0) * 3600
        + int(minutes or 0) * 60
        + float(seconds or 0)
    )


class IdempotencyStore:
    """Finished replies by (key, method, path), kept for ``lifetime_s`` seconds."""

    def __init__(self, lifetime_s: float) -> None:
        self.lifetime_s = lifetime_s
        self._replies: dict[tuple[str, str, str], tuple[float, StoredReply]] = {}
        self._locks: dict[tuple[str, str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def _expire(self, now: float) -> None:
        for k in [k for k, (t, _) in self._replies.items() if t < now]:
            del self._replies[k]
            self._locks.pop(k, None)

    def run(
        self, key: str, method: str, path: str, fn: Callable[[], StoredReply]
    ) -> tuple[StoredReply, bool]:
        """The stored reply for the key (``True``: replayed) or the result of running ``fn``."""
        k = (key, method, path)
        with self._guard:
            now = time.monotonic()
            self._expire(now)
            lock = self._locks.setdefault(k, threading.Lock())
        with lock:
            with self._guard:
                found = self._replies.get(k)
            if found is not None:
                return found[1], True
            reply = fn()
            if reply.status < 500:
                with self._guard:
                    self._replies[k] = (time.monotonic() + self.lifetime_s, reply)
            return reply, False
