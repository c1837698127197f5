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

Changes and their answers (SQL catalog): a request that creates, registers, commits, drops or
renames a table or view, commits several tables, or creates, drops or updates the properties of
a namespace, records its change in the answers' table inside the catalog transaction that
makes the change (through the hook of :mod:`icefloe.catalog.sql_hook`): a marker row (status
:data:`PENDING_STATUS`, type :data:`PENDING_MEDIA_TYPE`) under its key and fingerprint, whose
body is the change (kind, identifiers, new metadata locations, and for a namespace property
update the keys it set, removed and found missing; no credentials). The marker therefore
exists if and only if the change committed; a request that fails before its change commits
leaves none. Once the answer is built it replaces the marker, in a transaction of its own.
When that fails (the failure is logged and the answer still given) or the server dies in
between, the retry finds the marker and is answered from it as the first attempt was: a commit
with the recorded metadata, a create or register with the table's or view's load answer, a
namespace create with the namespace and the properties of its request (the same body: the
fingerprint holds a retry to it), a namespace property update with the recorded keys, a drop,
rename or multi-table commit with its empty success; that answer is then stored in the
marker's place. A request whose change committed but that then failed (a 5xx, not stored) is
replayed from its marker too. Another server process that runs a request with the same key at
the same time cannot insert a second marker: its transaction rolls back and it answers the
first one's answer (looked up again), or 409 ``CommitFailedException`` when there is none yet.
One whose request fails before its change (a create that finds the name taken by the first
one's) looks again too, and answers the first one's answer when there is one, instead of
its own error (which would also have replaced the first one's marker).
Markers are not replayed by earlier versions of the server.

When the database fails: a lookup of the stored answers that fails raises the catalog's error
for it (:class:`~icefloe.exceptions.ServiceUnavailableError` for a database that cannot be
reached, answered 503), and the request is not run. A marker that cannot be inserted fails the
change with it (nothing is committed). With :class:`MemoryReplies` the answer is stored after
its request finished and nothing survives the server process anyway.

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
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from icefloe.exceptions import CommitFailedError, IcebergError, ServiceUnavailableError
from icefloe.rest.service import printable

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

    from icefloe.catalog.sql_hook import PointerChange

__all__ = [
    "PENDING_MEDIA_TYPE",
    "PENDING_STATUS",
    "IdempotencyKeyReused",
    "IdempotencyKeyTaken",
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

#: The status of a marker row: the request's change committed, its answer is not stored yet
#: (no HTTP status: a marker is not an answer).
PENDING_STATUS = 0
#: The content type of a marker row; its body is the change (``PointerChange.to_json``).
PENDING_MEDIA_TYPE = "application/vnd.icefloe.committed-change+json"


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


class IdempotencyKeyTaken(CommitFailedError):
    """A change refused because another request with its Idempotency-Key committed first (in
    another server process): nothing was committed, and retrying the change cannot help."""

    retryable = False
    nothing_committed = True


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
    (``expires_at``: epoch seconds).

    An implementation may also offer ``marking(key, fingerprint, expires_at)``, a context
    manager yielding a :class:`Marking`, within which the catalog changes a request makes
    record a marker row with them (see :meth:`SqlReplies.marking`)."""

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


class Marking:
    """What a request's changes did to its marker: ``marked`` once one was inserted,
    ``taken`` when another request's row under the key refused it."""

    def __init__(self) -> None:
        self.marked = False
        self.taken = False


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

    @contextmanager
    def marking(self, key: str, fingerprint: str, expires_at: float) -> Iterator[Marking]:
        """Within the block, each change the SQL catalog commits inserts (in the change's own
        transaction) the marker row of this request, recording the change; see the module.
        A row of another request under the key refuses the change
        (:class:`IdempotencyKeyTaken`, ``taken`` set)."""
        from icefloe.catalog.sql_hook import hooked

        state = Marking()

        def mark(conn: Connection, change: PointerChange) -> None:
            if self._same_database(conn.engine):
                self._mark(conn, _stored_key(key), fingerprint, expires_at, change, state)

        with hooked(mark):
            yield state

    def _same_database(self, engine: Engine) -> bool:
        """Whether ``engine`` (of the catalog making a change) reaches the database the replies
        are kept in. A warehouse catalog of ``--per-warehouse`` over an in-memory SQLite
        database has a database of its own: its changes are not marked (a marker there could
        not be found by a replay), as for catalogs of other kinds."""
        if engine is self.engine:
            return True
        url, ours = engine.url, self.engine.url
        in_memory = url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")
        return not in_memory and url == ours

    def _mark(
        self,
        conn: Connection,
        key: str,
        fingerprint: str,
        expires_at: float,
        change: PointerChange,
        state: Marking,
    ) -> None:
        from sqlalchemy import delete, insert, select, text, update
        from sqlalchemy.exc import IntegrityError

        t = self.table
        this = (t.c.idempotency_key == key) & (t.c.request_hash == fingerprint)
        body = json.dumps(change.to_json(), separators=(",", ":")).encode()
        # a second change of the request: its marker records the last one
        if state.marked and conn.execute(update(t).where(this).values(body=body)).rowcount:
            return
        if conn.dialect.name == "postgresql":
            # under READ COMMITTED two requests of one key with different fingerprints would
            # each miss the other's uncommitted row (their primary keys differ): the second
            # waits here until the first's transaction ends, then sees its row below
            digest = hashlib.sha256(key.encode()).digest()[:8]
            conn.execute(
                text("SELECT pg_advisory_xact_lock(:lock)"),
                {"lock": int.from_bytes(digest, "big", signed=True)},
            )
        now_ms = int(time.time() * 1000)
        conn.execute(delete(t).where(t.c.idempotency_key == key, t.c.expires_at_ms < now_ms))
        taken = IdempotencyKeyTaken(
            "another request with this Idempotency-Key committed first; the change was not made"
        )
        if conn.execute(select(t.c.request_hash).where(t.c.idempotency_key == key)).first():
            state.taken = True
            raise taken
        row = {
            "idempotency_key": key,
            "request_hash": fingerprint,
            "expires_at_ms": int(expires_at * 1000),
            "status": PENDING_STATUS,
            "media_type": PENDING_MEDIA_TYPE,
            "headers": "[]",
            "body": body,
        }
        try:
            conn.execute(insert(t).values(**row))
        except IntegrityError as exc:  # inserted by another process meanwhile
            state.taken = True
            raise taken from exc
        state.marked = True

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
        rebuild: Callable[[PointerChange], StoredReply] | None = None,
    ) -> tuple[StoredReply, bool]:
        """The stored reply for ``key`` (``True``: replayed) or the result of running ``fn``.

        ``request`` is the request's :func:`fingerprint`; a live reply under the key for
        another fingerprint raises :class:`IdempotencyKeyReused`. ``legacy`` (see
        :func:`legacy_fingerprint`) also matches rows stored by earlier versions.

        With ``rebuild`` (the answer of the request for the catalog change it made), ``fn``
        runs marking its changes where the replies can (see :meth:`SqlReplies.marking`), and a
        marker found is answered by ``rebuild``. When another process's row under the key
        refused the change, the key's replies are looked up again: the other request's reply
        is returned if it is this request's, else :class:`IdempotencyKeyTaken` raised. A
        failure that committed nothing looks again too (see :meth:`_committed_meanwhile`).

        A failure to look up the stored replies is raised (``fn`` is not run); a failure to
        store the reply is logged and the reply returned (its request did finish)."""
        with self._guard:
            lock, users = self._locks.get(key, (threading.Lock(), 0))
            self._locks[key] = (lock, users + 1)
        try:
            with lock:
                found = self._found(key, request, legacy, rebuild)
                if found is not None:
                    return found, True
                with self._marking(key, request, rebuild) as state:
                    reply = fn()
                if state is not None and state.taken:
                    found = self._found(key, request, legacy, rebuild)
                    if found is None:
                        raise IdempotencyKeyTaken(
                            "a request with this Idempotency-Key is being run by another "
                            "server; retry with the key for its answer"
                        )
                    return found, True
                if state is not None and not state.marked and reply.status >= 400:
                    found = self._committed_meanwhile(key, request, legacy, rebuild)
                    if found is not None:
                        return found, True
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

    def _found(
        self,
        key: str,
        request: str,
        legacy: str | None,
        rebuild: Callable[[PointerChange], StoredReply] | None,
    ) -> StoredReply | None:
        """The live reply for this request, a marker answered by ``rebuild`` (and kept in
        its place); None when there is none. :class:`IdempotencyKeyReused` for another
        request's."""
        found = self.replies.get(key, time.time())
        for fp in (request, legacy):
            if fp is None or fp not in found:
                continue
            reply = found[fp]
            if reply.media_type != PENDING_MEDIA_TYPE:
                return reply
            if rebuild is None:
                raise ServiceUnavailableError(
                    "the change of this Idempotency-Key's request was made, and its answer "
                    "cannot be rebuilt here"
                )
            from icefloe.catalog.sql_hook import PointerChange

            reply = without_credentials(rebuild(PointerChange.from_json(json.loads(reply.body))))
            if reply.status < 400:  # a failure to rebuild it keeps the marker
                self._keep(key, fp, reply)
            return reply
        if found:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was used for another request (method, path, "
                "body or caller); use a new key for a new request"
            )
        return None

    def _committed_meanwhile(
        self,
        key: str,
        request: str,
        legacy: str | None,
        rebuild: Callable[[PointerChange], StoredReply] | None,
    ) -> StoredReply | None:
        """The answer of this request found after it failed without committing anything: the
        same request, run at once by another server process, committed first (its marker or
        answer now under the key), which is why this one failed (a create found the name
        taken, a drop nothing to drop). None when there is none, or it cannot be told: then
        this request's own answer stands."""
        try:
            return self._found(key, request, legacy, rebuild)
        except Exception as exc:  # another request's row, or the lookup failed
            log.debug("no answer of this Idempotency-Key's request found: %s", _said(exc))
            return None

    def _marking(
        self, key: str, request: str, rebuild: Callable[[PointerChange], StoredReply] | None
    ) -> AbstractContextManager[Marking | None]:
        """The replies' ``marking`` for a request whose marker ``rebuild`` can answer."""
        marking = getattr(self.replies, "marking", None)
        if rebuild is None or marking is None:
            return nullcontext()
        context: AbstractContextManager[Marking] = marking(
            key, request, time.time() + self.lifetime_s
        )
        return context

    def _keep(self, key: str, request: str, reply: StoredReply) -> None:
        """Store a finished reply, without credentials; a failure to store it is logged (the
        request did finish: its reply is given all the same)."""
        now = time.time()
        try:
            self.replies.put(key, request, without_credentials(reply), now + self.lifetime_s)
        except Exception as exc:
            log.warning(
                "the answer (%d) was given but not kept for its Idempotency-Key: a retry with "
                "the key is answered from the catalog change recorded with it, or runs the "
                "request again if it recorded none: %s",
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
