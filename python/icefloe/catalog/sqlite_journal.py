"""The journal mode of a SQL catalog's SQLite database file.

SQLite's default rollback journal costs about four times as many ``fsync`` calls per commit
as its write-ahead log (the journal, the database, and the journal's removal), which on a
virtual disk made the pointer swap the slowest step of a small commit. In WAL mode with
SQLite's default ``synchronous=FULL`` a commit syncs the log once and is just as durable;
readers no longer wait for writers. The mode is a property of the database file: PyIceberg
and Iceberg Java's JDBC catalog open such a file as usual. WAL needs shared memory between
the processes using the file, so it does not work on network file systems; a catalog there
keeps the rollback journal with ``sqlite.journal-mode=delete``.
"""

from __future__ import annotations

import sqlite3
from typing import Any
from urllib.parse import unquote, urlsplit

from sqlalchemy import event
from sqlalchemy.engine import Engine

from icefloe.exceptions import ValidationError

JOURNAL_MODE = "sqlite.journal-mode"
JOURNAL_MODES = ("wal", "delete", "truncate", "persist")
DEFAULT_JOURNAL_MODE = "wal"
READ_ONLY_HINT = (
    " (a SQLite file in WAL mode can only be read by a process that may write its directory;"
    f" catalogs that write it with {JOURNAL_MODE}=delete keep it readable without)"
)


def in_wal_mode(path: str | None) -> bool:
    """Whether the SQLite database file at ``path`` is in WAL mode (its header's read and write
    versions are 2), read without SQLite, which may not open it."""
    if path and path.startswith("file:"):  # a URI filename (``?mode=ro&uri=true``)
        path = unquote(urlsplit(path).path)
    if not path or path == ":memory:":
        return False
    try:
        with open(path, "rb") as f:
            header = f.read(20)
    except OSError:
        return False
    return len(header) == 20 and header[18] == 2 and header[19] == 2


def journal_mode(catalog: str, properties: dict[str, str] | Any) -> str:
    """The journal mode a catalog's properties ask for (``wal`` unless told otherwise)."""
    mode = str(properties.get(JOURNAL_MODE, DEFAULT_JOURNAL_MODE)).strip().lower()
    if mode not in JOURNAL_MODES:
        raise ValidationError(
            f"SQL catalog {catalog!r}: {JOURNAL_MODE} must be one of {', '.join(JOURNAL_MODES)}, "
            f"not {mode!r}"
        )
    return mode


def use_journal_mode(engine: Engine, mode: str) -> None:
    """Puts the database file in ``mode`` when a connection opens, if it is not already.

    A file another process holds busy, or one that is read-only, keeps its mode: the catalog
    works in any of them, only the cost of a commit differs."""

    @event.listens_for(engine, "connect")
    def _set_mode(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            (current,) = cursor.execute("PRAGMA journal_mode").fetchone()
            if str(current).lower() != mode:
                cursor.execute(f"PRAGMA journal_mode={mode}").fetchone()
        except sqlite3.Error:
            pass
        finally:
            cursor.close()
