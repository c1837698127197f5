"""Forking a process while another of its threads uses a SQLite catalog.

SQLite keeps the locks of a database file in per-process tables; ``fork`` copies them into the
child as they were. A child made while another thread of the parent was inside a database
transaction then waits on a lock no process holds, until the busy timeout fails its commit.
So a fork waits until no connection of a SQLite catalog is in use (checked out of its pool;
a connection back in the pool has ended its transaction and holds no lock), and connections
are not handed out while the fork happens. A fork made by a thread that itself holds a
connection does not wait for it, and none waits longer than :data:`FORK_WAIT_SECONDS`.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

__all__ = ["FORK_WAIT_SECONDS", "guard_forks"]

#: The longest a fork waits for other threads' SQLite transactions to end.
FORK_WAIT_SECONDS = 60.0

_log = logging.getLogger(__name__)
_cond = threading.Condition()
#: the pool records of the connections in use (``id`` of the record) -> the thread that took
#: each: a connection may go back to its pool from another thread (or the garbage collector)
_in_use: dict[int, int] = {}
_forking = False


def _checkout(_dbapi_connection: Any, record: Any, *_: Any) -> None:
    me = threading.get_ident()
    with _cond:
        # a thread that already holds a connection goes on: the fork waits for it anyway
        while _forking and me not in _in_use.values():
            _cond.wait()
        _in_use[id(record)] = me


def _checkin(_dbapi_connection: Any, record: Any, *_: Any) -> None:
    with _cond:
        _in_use.pop(id(record), None)
        _cond.notify_all()


def _before_fork() -> None:
    global _forking
    me = threading.get_ident()

    def none_in_use_elsewhere() -> bool:
        return all(t == me for t in _in_use.values())

    with _cond:
        _forking = True
        if not _cond.wait_for(none_in_use_elsewhere, timeout=FORK_WAIT_SECONDS):
            _log.warning(
                "forking while another thread is still inside a SQLite catalog transaction "
                "after %.0f s: the child may wait on that transaction's lock",
                FORK_WAIT_SECONDS,
            )


def _after_fork_in_parent() -> None:
    global _forking
    with _cond:
        _forking = False
        _cond.notify_all()


def _after_fork_in_child() -> None:
    global _cond, _forking
    # the parent's threads and their connections are not in the child
    _cond = threading.Condition()
    _in_use.clear()
    _forking = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )


def guard_forks(engine: Engine) -> None:
    """Count the connections of ``engine`` (a SQLite file's) in use, for forks to wait on."""
    event.listen(engine, "checkout", _checkout)
    event.listen(engine, "checkin", _checkin)
    event.listen(engine, "detach", _checkin)  # leaves the pool without a checkin
