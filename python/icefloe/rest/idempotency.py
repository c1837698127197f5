"""Replay of finished requests by ``Idempotency-Key`` (Iceberg REST 1.11).

A mutating request that carries the header is run at most once per key within the key
lifetime: a repeat of it gets the first answer again without touching the catalog. A key belongs
to one request, told by its fingerprint (method, path, query, principal and JSON body, see
:func:`fingerprint`): the key sent with another request is refused with
:class:`IdempotencyKeyReused` (422), which runs nothing. Successful answers and deterministic
client errors (4xx, including 409) are kept; 5xx answers are not, so a retry after a server
failure runs again. Requests with the same key wait for each other within one server process.

Where the answers are kept: :class:`SqlReplies` keeps them in a table of the SQL catalog's own
database (``icefloe_rest_idempotency``), so a retry after a server restart is still recognised;
:class:`MemoryReplies` keeps them in the server process. Expiry is by wall-clock time; expired
answers are deleted as new ones are stored.

When the database fails: a lookup of the stored answers that fails raises the catalog's error
for it (:class:`~icefloe.exceptions.ServiceUnavailableError` for a database that cannot be
reached, answered 503), and the request is not run. An answer is stored after its request
finished, in a transaction of its own: a failure to store it is logged and the answer is still
given (the change did happen), and a server that dies between the two leaves the retry to run
again. A commit's requirements then refuse it (and icefloe's client finds its own commit, see
:mod:`icefloe.catalog.rest`), but a create, drop or rename run again answers 409 or 404
although the first attempt succeeded.

Credentials are never kept: an answer's ``config`` and ``storage-credentials`` (a table's
settings and vended storage credentials, secret keys among them) are removed before it is
stored, and the server adds them anew, as a load of the table gives them, to a replay.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from icefloe.exceptions import IcebergError, ServiceUnavailableError
from icefloe.rest.service import printable

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = [
    "IdempotencyKeyReused",
    "IdempotencyStore",
    "MemoryReplies",
    "Replies",
    "SqlReplies",
    "StoredReply",
    "fingerprint",
    "legacy_fingerprint",
    "parse_duration",
    "without_credentials",
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


#: The fields of an answer that carry credentials (of a ``LoadTableResult`` or a scan plan).
CREDENTIAL_FIELDS = ("config", "storage-credentials")


def without_credentials(reply: StoredReply) -> StoredReply:
    """``reply`` without its :data:`CREDENTIAL_FIELDS` (the same reply when it has none)."""
    try:
        out = json.loads(reply.body) if reply.body else None
    except ValueError:
        return reply
    if not isinstance(out, dict) or not any(f in out for f in CREDENTIAL_FIELDS):
        return reply
    kept = {k: v for k, v in out.items() if k not in CREDENTIAL_FIELDS}
    body = json.dumps(kept, separators=(",", ":")).encode()
    return StoredReply(reply.status, body, reply.media_type, reply.headers)


class IdempotencyKeyReused(IcebergError):
    """An Idempotency-Key sent with another request than the one it was first used for."""


def fingerprint(method: str, path: str, query: str, principal: str, body: Any) -> str:
    """A digest of what makes a request the one its key was made for: method, path, query,
    the caller's principal and the JSON body (parsed, so whitespace and key order do not
    count)."""
    canonical = json.dumps(
        [method, path, query, principal, body],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def legacy_fingerprint(method: str, path: str) -> str:
    """The digest that rows stored by earlier versions carry (method and path only): such a
    row is replayed to its retry rather than refused."""
    return hashlib.sha256(f"{method} {path}".encode()).hexdigest()


class Replies(Protocol):
    """Where finished answers are kept, by key and request fingerprint, until they expire
    (``expires_at``: epoch seconds)."""

    def get(self, key: str, now: float) -> dict[str, StoredReply]: ...

    def put(self, key: str, fingerprint: str, reply: StoredReply, expires_at: float) -> None: ...

    def purge(self, now: float) -> None: ...


class MemoryReplies:
    """Answers in this process's memory."""

    def __init__(self) -> None:
        self._replies: dict[str, dict[str, tuple[float, StoredReply]]] = {}
        self._lock = threading.Lock()

    def get(self, key: str, now: float) -> dict[str, StoredReply]:
        """The unexpired answers under ``key``, by request fingerprint."""
        with self._lock:
            found = dict(self._replies.get(key, {}))
        return {fp: reply for fp, (t, reply) in found.items() if t >= now}

    def put(self, key: str, fingerprint: str, reply: StoredReply, expires_at: float) -> None:
        with self._lock:
            self._replies.setdefault(key, {})[fingerprint] = (expires_at, reply)

    def purge(self, now: float) -> None:
        with self._lock:
            for key, rows in list(self._replies.items()):
                live = {fp: row for fp, row in rows.items() if row[0] >= now}
                if live:
                    self._replies[key] = live
                else:
                    del self._replies[key]


#: The longest key stored as sent, in bytes (the column's width); longer ones are stored as a
#: digest (:func:`_stored_key`).
_KEY_WIDTH = 255


class SqlReplies:
    """Answers in table ``icefloe_rest_idempotency`` of a SQL catalog's database (created if
    absent); rows are keyed by the key and the request's fingerprint (``request_hash``).
    Database errors are raised as the SQL catalog ``name`` raises them (a database that cannot
    be reached: :class:`~icefloe.exceptions.ServiceUnavailableError`)."""

    def __init__(self, engine: Engine, name: str = "") -> None:
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
        self.name = name
        self.table = Table(
            "icefloe_rest_idempotency",
            MetaData(),
            Column("idempotency_key", String(_KEY_WIDTH), primary_key=True, nullable=False),
            Column("request_hash", String(64), primary_key=True, nullable=False),
            Column("expires_at_ms", BigInteger, nullable=False, index=True),
            Column("status", Integer, nullable=False),
            Column("media_type", String(255), nullable=False),
            Column("headers", Text, nullable=False),
            Column("body", LargeBinary, nullable=False),
        )
        with self._database_errors():
            self.table.create(engine, checkfirst=True)

    @contextmanager
    def _database_errors(self) -> Iterator[None]:
        """Database errors as icefloe's, with the driver's message and no SQL statement or
        parameters (see :func:`~icefloe.catalog.sql_database.database_errors`)."""
        from sqlalchemy.exc import SQLAlchemyError

        from icefloe.catalog.sql_database import brief, refusal

        try:
            yield
        except SQLAlchemyError as exc:
            raise refusal(self.name, exc, self.engine) or ServiceUnavailableError(
                f"SQL catalog {self.name!r}: the database of the Idempotency-Key answers "
                f"failed: {brief(exc)}"
            ) from exc

    def get(self, key: str, now: float) -> dict[str, StoredReply]:
        """The unexpired answers under ``key``, by request fingerprint."""
        from sqlalchemy import select

        t = self.table
        stmt = select(t.c.request_hash, t.c.status, t.c.body, t.c.media_type, t.c.headers).where(
            t.c.idempotency_key == _stored_key(key), t.c.expires_at_ms >= int(now * 1000)
        )
        with self._database_errors(), self.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        out = {}
        for row in rows:
            headers = tuple((str(k), str(v)) for k, v in json.loads(row.headers))
            out[str(row.request_hash)] = StoredReply(
                int(row.status), bytes(row.body), str(row.media_type), headers
            )
        return out

    def put(self, key: str, fingerprint: str, reply: StoredReply, expires_at: float) -> None:
        from sqlalchemy import delete, insert

        t = self.table
        key = _stored_key(key)
        row = {
            "idempotency_key": key,
            "request_hash": fingerprint,
            "expires_at_ms": int(expires_at * 1000),
            "status": reply.status,
            "media_type": reply.media_type,
            "headers": json.dumps([list(kv) for kv in reply.headers]),
            "body": reply.body,
        }
        expired = t.c.expires_at_ms < int(time.time() * 1000)
        # an expired answer under the same key is replaced
        with self._database_errors(), self.engine.begin() as conn:
            conn.execute(
                delete(t).where(
                    t.c.idempotency_key == key, (t.c.request_hash == fingerprint) | expired
                )
            )
            conn.execute(insert(t).values(**row))

    def purge(self, now: float) -> None:
        from sqlalchemy import delete

        with self._database_errors(), self.engine.begin() as conn:
            conn.execute(delete(self.table).where(self.table.c.expires_at_ms < int(now * 1000)))


class IdempotencyStore:
    """Finished replies by key and request fingerprint, kept for ``lifetime_s`` seconds in
    ``replies`` (default: :class:`MemoryReplies`)."""

    def __init__(self, lifetime_s: float, replies: Replies | None = None) -> None:
        self.lifetime_s = lifetime_s
        self.replies: Replies = replies if replies is not None else MemoryReplies()
        self._locks: dict[str, tuple[threading.Lock, int]] = {}
        self._guard = threading.Lock()
        self._purged_at = 0.0

    def run(
        self,
        key: str,
        request: str,
        fn: Callable[[], StoredReply],
        *,
        legacy: str | None = None,
    ) -> tuple[StoredReply, bool]:
        """The stored reply for ``key`` (``True``: replayed) or the result of running ``fn``.

        ``request`` is the request's :func:`fingerprint`; a live reply under the key for
        another fingerprint raises :class:`IdempotencyKeyReused`. ``legacy`` (see
        :func:`legacy_fingerprint`) also matches rows stored by earlier versions.

        A failure to look up the stored replies is raised (``fn`` is not run); a failure to
        store the reply is logged and the reply returned (its request did finish)."""
        with self._guard:
            lock, users = self._locks.get(key, (threading.Lock(), 0))
            self._locks[key] = (lock, users + 1)
        try:
            with lock:
                found = self.replies.get(key, time.time())
                for fp in (request, legacy):
                    if fp is not None and fp in found:
                        return found[fp], True
                if found:
                    raise IdempotencyKeyReused(
                        "this Idempotency-Key was used for another request (method, path, "
                        "body or caller); use a new key for a new request"
                    )
                reply = fn()
                if reply.status < 500:
                    self._keep(key, request, reply)
                return reply, False
        finally:
            with self._guard:
                lock, users = self._locks[key]
                if users <= 1:
                    del self._locks[key]
                else:
                    self._locks[key] = (lock, users - 1)

    def _keep(self, key: str, request: str, reply: StoredReply) -> None:
        """Store a finished reply, without credentials; a failure to store it is logged (the
        request did finish: its reply is given all the same)."""
        now = time.time()
        try:
            self.replies.put(key, request, without_credentials(reply), now + self.lifetime_s)
        except Exception as exc:
            log.warning(
                "the answer (%d) was given but not kept for its Idempotency-Key, so a retry "
                "with the key runs the request again: %s",
                reply.status,
                _said(exc),
            )
            return
        if now - self._purged_at > PURGE_INTERVAL_S:
            self._purged_at = now
            try:
                self.replies.purge(now)
            except Exception as exc:
                log.warning("cannot delete expired Idempotency-Key answers: %s", _said(exc))


def _stored_key(key: str) -> str:
    """``key`` as the SQL table holds it: a key wider than its column (PostgreSQL refuses
    one, so its answer would not be kept) becomes ``sha256:`` and the key's digest."""
    raw = key.encode("utf-8", "surrogatepass")
    return key if len(raw) <= _KEY_WIDTH else "sha256:" + hashlib.sha256(raw).hexdigest()


def _said(exc: Exception) -> str:
    """What a log line may say of a failure to keep answers: icefloe's message (without SQL
    statements or parameters), else only the exception's type."""
    return printable(exc) if isinstance(exc, IcebergError) else type(exc).__name__
