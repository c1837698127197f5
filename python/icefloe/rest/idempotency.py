"""Replay of finished requests by ``Idempotency-Key`` (Iceberg REST 1.11).

A mutating request that carries the header is run at most once per key within the key
lifetime: a repeat of it (the same method and path) gets the first answer again without touching
the catalog. Successful answers and deterministic client errors (4xx, including 409) are kept;
5xx answers are not, so a retry after a server failure runs again. Requests with the same key
wait for each other within one server process.

Where the answers are kept: :class:`SqlReplies` keeps them in a table of the SQL catalog's own
database (``icefloe_rest_idempotency``), so a retry after a server restart is still recognised;
:class:`MemoryReplies` keeps them in the server process. Expiry is by wall-clock time; expired
answers are deleted as new ones are stored. An answer is stored after its request finished: a
server that dies between the two leaves the retry to run again (a commit's requirements then
refuse it, and the client finds its own commit, see :mod:`icefloe.catalog.rest`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = [
    "IdempotencyStore",
    "MemoryReplies",
    "Replies",
    "SqlReplies",
    "StoredReply",
    "parse_duration",
]

log = logging.getLogger("icefloe.rest")

#: Seconds between deletions of expired answers.
PURGE_INTERVAL_S = 60.0


@dataclass(frozen=True)
class StoredReply:
    """A finished answer: status, body, content type and extra headers (an ``ETag``)."""

    status: int
    body: bytes
    media_type: str
    headers: tuple[tuple[str, str], ...] = ()


def parse_duration(text: str) -> float:
    """Seconds of an ISO-8601 duration like ``PT30M`` (days, hours, minutes, seconds)."""
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


Request = tuple[str, str, str]  # (key, method, path)


class Replies(Protocol):
    """Where finished answers are kept until they expire (``expires_at``: epoch seconds)."""

    def get(self, request: Request, now: float) -> StoredReply | None: ...

    def put(self, request: Request, reply: StoredReply, expires_at: float) -> None: ...

    def purge(self, now: float) -> None: ...


class MemoryReplies:
    """Answers in this process's memory."""

    def __init__(self) -> None:
        self._replies: dict[Request, tuple[float, StoredReply]] = {}
        self._lock = threading.Lock()

    def get(self, request: Request, now: float) -> StoredReply | None:
        with self._lock:
            found = self._replies.get(request)
        return found[1] if found is not None and found[0] >= now else None

    def put(self, request: Request, reply: StoredReply, expires_at: float) -> None:
        with self._lock:
            self._replies[request] = (expires_at, reply)

    def purge(self, now: float) -> None:
        with self._lock:
            for k in [k for k, (t, _) in self._replies.items() if t < now]:
                del self._replies[k]


class SqlReplies:
    """Answers in table ``icefloe_rest_idempotency`` of a SQL catalog's database (created if
    absent); rows are keyed by the key and a hash of the method and path."""

    def __init__(self, engine: Engine) -> None:
        from sqlalchemy import (
            BigInteger,
            Column,
            Integer,
            LargeBinary,
            MetaData,
            String,
            Table,
            Text,
        )

        self.engine = engine
        self.table = Table(
            "icefloe_rest_idempotency",
            MetaData(),
            Column("idempotency_key", String(255), primary_key=True, nullable=False),
            Column("request_hash", String(64), primary_key=True, nullable=False),
            Column("expires_at_ms", BigInteger, nullable=False, index=True),
            Column("status", Integer, nullable=False),
            Column("media_type", String(255), nullable=False),
            Column("headers", Text, nullable=False),
            Column("body", LargeBinary, nullable=False),
        )
        self.table.create(engine, checkfirst=True)

    @staticmethod
    def _hash(request: Request) -> str:
        _, method, path = request
        return hashlib.sha256(f"{method} {path}".encode()).hexdigest()

    def get(self, request: Request, now: float) -> StoredReply | None:
        from sqlalchemy import select

        t = self.table
        stmt = select(t.c.status, t.c.body, t.c.media_type, t.c.headers).where(
            t.c.idempotency_key == request[0],
            t.c.request_hash == self._hash(request),
            t.c.expires_at_ms >= int(now * 1000),
        )
        with self.engine.connect() as conn:
            row = conn.execute(stmt).first()
        if row is None:
            return None
        headers = tuple((str(k), str(v)) for k, v in json.loads(row.headers))
        return StoredReply(int(row.status), bytes(row.body), str(row.media_type), headers)

    def put(self, request: Request, reply: StoredReply, expires_at: float) -> None:
        from sqlalchemy import delete, insert

        t = self.table
        h = self._hash(request)
        row = {
            "idempotency_key": request[0],
            "request_hash": h,
            "expires_at_ms": int(expires_at * 1000),
            "status": reply.status,
            "media_type": reply.media_type,
            "headers": json.dumps([list(kv) for kv in reply.headers]),
            "body": reply.body,
        }
        with self.engine.begin() as conn:  # an expired answer under the same key is replaced
            conn.execute(delete(t).where(t.c.idempotency_key == request[0], t.c.request_hash == h))
            conn.execute(insert(t).values(**row))

    def purge(self, now: float) -> None:
        from sqlalchemy import delete

        with self.engine.begin() as conn:
            conn.execute(delete(self.table).where(self.table.c.expires_at_ms < int(now * 1000)))


class IdempotencyStore:
    """Finished replies by (key, method, path), kept for ``lifetime_s`` seconds in
    ``replies`` (default: :class:`MemoryReplies`)."""

    def __init__(self, lifetime_s: float, replies: Replies | None = None) -> None:
        self.lifetime_s = lifetime_s
        self.replies: Replies = replies if replies is not None else MemoryReplies()
        self._locks: dict[Request, tuple[threading.Lock, int]] = {}
        self._guard = threading.Lock()
        self._purged_at = 0.0

    def run(
        self, key: str, method: str, path: str, fn: Callable[[], StoredReply]
    ) -> tuple[StoredReply, bool]:
        """The stored reply for the key (``True``: replayed) or the result of running ``fn``."""
        k = (key, method, path)
        with self._guard:
            lock, users = self._locks.get(k, (threading.Lock(), 0))
            self._locks[k] = (lock, users + 1)
        try:
            with lock:
                found = self.replies.get(k, time.time())
                if found is not None:
                    return found, True
                reply = fn()
                if reply.status < 500:
                    self._keep(k, reply)
                return reply, False
        finally:
            with self._guard:
                lock, users = self._locks[k]
                if users <= 1:
                    del self._locks[k]
                else:
                    self._locks[k] = (lock, users - 1)

    def _keep(self, request: Request, reply: StoredReply) -> None:
        """Store a finished reply; a failure to store is logged (the request did finish)."""
        now = time.time()
        try:
            self.replies.put(request, reply, now + self.lifetime_s)
            if now - self._purged_at > PURGE_INTERVAL_S:
                self._purged_at = now
                self.replies.purge(now)
        except Exception as exc:
            log.warning("cannot keep the reply for an Idempotency-Key: %s", type(exc).__name__)
