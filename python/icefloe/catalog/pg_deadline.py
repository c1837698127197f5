"""A deadline on every answer the SQL catalog waits for from PostgreSQL.

libpq waits for a server's answer as long as the connection stays open. A server that stops
answering on a connection the catalog already holds (a hung backend, a stalled proxy: the
kernel still acknowledges the packets, so TCP keepalives see nothing wrong) would block the
call forever. The catalog's connections are :class:`WatchedConnection` s: while one waits for
an answer, a watchdog thread holds its deadline, and when the answer is later than
``request-timeout`` seconds the watchdog shuts the socket down. libpq then fails the wait as a
dropped connection, SQLAlchemy discards the connection, and the catalog reports it as any
dropped connection (``ServiceUnavailableError``; a commit checks the table's pointer first, as
PostgreSQL may have applied it). The same as the ``socketTimeout`` of PostgreSQL's JDBC driver,
which Iceberg Java's JDBC catalog passes on as ``jdbc.socketTimeout``.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import socket
import threading
import time
from typing import Any

import psycopg


class _Deadline:
    __slots__ = ("done", "fd", "fired")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.done = False
        self.fired = False


class _Watchdog:
    """One daemon thread for every connection of the process: a heap of deadlines."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._heap: list[tuple[float, int, _Deadline]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, fd: int) -> _Deadline:
        deadline = _Deadline(fd)
        with self._cv:
            heapq.heappush(self._heap, (time.monotonic() + seconds, next(self._seq), deadline))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="icefloe-pg-deadline", daemon=True
                )
                self._thread.start()
            self._cv.notify()
        return deadline

    def disarm(self, deadline: _Deadline) -> None:
        with self._cv:  # after this, the watchdog never touches the socket
            deadline.done = True

    def _run(self) -> None:
        with self._cv:
            while True:
                while self._heap and self._heap[0][2].done:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cv.wait()
                    continue
                due = self._heap[0][0] - time.monotonic()
                if due > 0:
                    self._cv.wait(due)
                    continue
                _, _, deadline = heapq.heappop(self._heap)
                # Under the lock: the wait has not ended (not disarmed), so the connection, and
                # with it the descriptor, is still open.
                deadline.fired = True
                _shut_down(deadline.fd)


def _shut_down(fd: int) -> None:
    with contextlib.suppress(OSError):
        sock = socket.socket(fileno=socket.dup(fd))
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.close()


_WATCHDOG = _Watchdog()


def _new_watchdog_in_child() -> None:
    """A child made by ``fork`` has no watchdog thread, and its lock may have been held by a
    parent's thread at the fork: it starts afresh."""
    global _WATCHDOG
    _WATCHDOG = _Watchdog()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_watchdog_in_child)


class WatchedConnection(psycopg.Connection[Any]):
    """A psycopg connection whose waits for the server end after :attr:`request_timeout`
    seconds (``None``: no limit) with a dropped connection."""

    request_timeout: float | None = None

    def wait(self, gen: Any, *args: Any, **kwargs: Any) -> Any:
        seconds = self.request_timeout
        if not seconds:
            return super().wait(gen, *args, **kwargs)
        deadline = _WATCHDOG.arm(seconds, self.pgconn.socket)
        try:
            return super().wait(gen, *args, **kwargs)
        except psycopg.OperationalError as exc:
            if deadline.fired:
                raise psycopg.OperationalError(
                    f"the database did not answer within {seconds:g} s (request-timeout); "
                    "the connection was closed"
                ) from exc
            raise
        finally:
            _WATCHDOG.disarm(deadline)


def watch_connections(engine: Any, seconds: float | None) -> None:
    """Makes every connection ``engine`` opens a :class:`WatchedConnection` with ``seconds``."""
    from sqlalchemy import event

    def connect(dialect: Any, record: Any, cargs: Any, cparams: Any) -> WatchedConnection:
        conn = WatchedConnection.connect(*cargs, **cparams)
        conn.request_timeout = seconds
        return conn

    event.listen(engine, "do_connect", connect)
