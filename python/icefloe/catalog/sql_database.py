"""The SQL catalog's database: the two tables it shares with Iceberg's JDBC catalog and
PyIceberg, its connection URLs, and how database errors become icefloe's errors (without the
SQL statement or its parameters, which may hold names and locations)."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from sqlalchemy import Column, MetaData, String, Table, func
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DataError, OperationalError, ProgrammingError, SQLAlchemyError

from icefloe.catalog.sqlite_journal import READ_ONLY_HINT, in_wal_mode
from icefloe.exceptions import (
    CatalogReadOnlyError,
    ForbiddenError,
    IcebergError,
    ServiceUnavailableError,
    UnauthorizedError,
    ValidationError,
)
from icefloe.properties import parse_seconds

__all__ = [
    "EXISTS",
    "ICEBERG_TABLES",
    "NAMESPACE_PROPERTIES",
    "SCHEMA",
    "NotCommitted",
    "brief",
    "check_credentials",
    "check_reserved",
    "committed",
    "database_errors",
    "normalise_uri",
    "privilege_refused",
    "read_only_error",
    "refusal",
    "request_timeout_seconds",
    "said",
    "too_long",
    "under",
]

#: Stored with every namespace (as Iceberg's JDBC catalog does) so that one whose properties
#: are all removed still exists; never shown, set or removed by users.
EXISTS = "exists"

SCHEMA = MetaData()
ICEBERG_TABLES = Table(
    "iceberg_tables",
    SCHEMA,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("table_namespace", String(255), primary_key=True, nullable=False),
    Column("table_name", String(255), primary_key=True, nullable=False),
    Column("metadata_location", String(1000), nullable=True),
    Column("previous_metadata_location", String(1000), nullable=True),
    Column("iceberg_type", String(5), nullable=True),
)
NAMESPACE_PROPERTIES = Table(
    "iceberg_namespace_properties",
    SCHEMA,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("namespace", String(255), primary_key=True, nullable=False),
    Column("property_key", String(255), primary_key=True, nullable=False),
    Column("property_value", String(1000), nullable=True),
)


def normalise_uri(uri: str) -> str:
    """Iceberg Java's JDBC URLs (``jdbc:postgresql://...``, ``jdbc:sqlite:path``) as SQLAlchemy
    URLs, and an installed PostgreSQL driver picked for a bare ``postgresql://`` URI."""
    if uri.startswith("jdbc:"):
        uri = uri[len("jdbc:") :]
        if uri.startswith("sqlite:") and not uri.startswith("sqlite://"):
            path = uri[len("sqlite:") :]
            return "sqlite:///:memory:" if path in ("", ":memory:") else f"sqlite:///{path}"
    for prefix in ("postgresql://", "postgres://"):
        if uri.startswith(prefix):
            rest = uri[len(prefix) :]
            if importlib.util.find_spec("psycopg") is not None:
                return "postgresql+psycopg://" + rest
            return "postgresql://" + rest
    return uri


_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")


def database_errors(fn: _F) -> _F:
    """``fn`` raising :class:`ServiceUnavailableError` for a database error it does not handle
    itself (the database cannot be reached or opened, a connection dropped), with the
    driver's message and no SQL statement or parameters."""

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "_gone", False):  # (__init__ runs here too)
            raise ServiceUnavailableError(
                f"SQL catalog {self.name!r} was closed, and its in-memory database with it"
            )
        try:
            return fn(self, *args, **kwargs)
        except DataError as exc:  # a value the catalog's columns cannot hold: not retryable
            raise too_long(self.name, exc) from exc
        except SQLAlchemyError as exc:
            raise refusal(self.name, exc, self.engine) or ServiceUnavailableError(
                f"SQL catalog {self.name!r}: the catalog database failed: {brief(exc)}"
            ) from exc

    return wrapper  # type: ignore[return-value]


#: libpq's words when the server turns a login away (no SQLSTATE reaches the client then).
_LOGIN_REFUSED = re.compile(
    r"password authentication failed|authentication failed for user|no pg_hba\.conf entry|"
    r"password is not allowed|role \S+ is not permitted to log in|"
    r'role "(?:[^"]|"")*" does not exist'
)
#: libpq on the URI's options ("invalid connection option", "invalid sslmode value", possibly
#: after "connection is bad: "), on a database or TLS or GSSAPI setting the server or the
#: client cannot meet, and on certificate and key files it cannot use.
_BAD_SETTINGS = re.compile(
    r"\binvalid connection option\b|\binvalid \w+ value\b|\bbad value for \w+|"
    r"\bvalue \"\w+\" invalid when \w+ support is not compiled in|"
    r'database "(?:[^"]|"")*" does not exist|'
    r"server does not support SSL, but SSL was required|"
    r"GSSAPI encryption required but|"
    r"could not (?:read|open|load) (?:root )?(?:certificate|private key) file|"
    r"root certificate file .* does not exist|certificate present, but not private key|"
    r"private key file .* has group or world access|"
    r"certificate verify failed|server certificate for .* does not match host name"
)


def privilege_refused(exc: SQLAlchemyError) -> bool:
    """Whether the database refused ``exc``'s statement for want of a privilege (SQLSTATE
    42501): the statement did nothing."""
    return getattr(getattr(exc, "orig", None), "sqlstate", None) == "42501"


def refusal(name: str, exc: SQLAlchemyError, engine: Any) -> IcebergError | None:
    """The error for a database that refused on its own terms, which no retry changes: a
    read-only database (:func:`read_only_error`), a missing privilege
    (:class:`ForbiddenError`), a login turned away (:class:`UnauthorizedError`), or
    connection settings the driver or server cannot use (:class:`ValidationError`: a database
    or search-path schema that does not exist, TLS required of a server without it, unusable
    certificate or key files); else None (the database may be down for a while)."""
    read_only = read_only_error(name, exc, engine)
    if read_only is not None:
        return read_only
    text = brief(exc)
    state = getattr(getattr(exc, "orig", None), "sqlstate", None)
    if privilege_refused(exc):
        return ForbiddenError(f"SQL catalog {name!r}: the database refused: {text}")
    if (state or "").startswith("28") or _LOGIN_REFUSED.search(text):
        return UnauthorizedError(f"SQL catalog {name!r}: the database refused the login: {text}")
    if state == "3F000":  # the search path names no schema that exists
        return ValidationError(
            f"SQL catalog {name!r}: bad connection settings: {text} (the search path, as "
            "Iceberg Java's 'jdbc.currentSchema' sets it, names no schema that exists)"
        )
    postgres = getattr(getattr(engine, "dialect", None), "name", None) == "postgresql"
    settings = isinstance(exc, ProgrammingError | OperationalError) and _BAD_SETTINGS.search(text)
    if postgres and state is None and settings:
        return ValidationError(f"SQL catalog {name!r}: bad connection settings: {text}")
    return None


def read_only_error(name: str, exc: SQLAlchemyError, engine: Any) -> CatalogReadOnlyError | None:
    """:class:`CatalogReadOnlyError` when ``exc`` says the database refused a write because it
    is read-only (SQLite's "readonly database", PostgreSQL's SQLSTATE 25006), else None. A
    SQLite file in WAL mode gets the hint that readers, too, must be able to write its
    directory."""
    cause = getattr(exc, "orig", None)
    text = brief(exc)
    if "readonly database" not in text and getattr(cause, "sqlstate", None) != "25006":
        return None
    database = getattr(getattr(engine, "url", None), "database", None)
    hint = READ_ONLY_HINT if engine.dialect.name == "sqlite" and in_wal_mode(database) else ""
    return CatalogReadOnlyError(f"SQL catalog {name!r} is read-only: {text}{hint}")


def brief(exc: SQLAlchemyError) -> str:
    """The driver's first line of ``exc``, without SQLAlchemy's statement and parameters."""
    cause = getattr(exc, "orig", None) or exc
    return " ".join(str(cause).split("\n")[0].split()) or type(cause).__name__


def said(exc: BaseException) -> str:
    """What an error message may quote of ``exc``: :func:`brief` for a database error (its
    SQL text and parameters left out), else its text."""
    return brief(exc) if isinstance(exc, SQLAlchemyError) else str(exc)


def too_long(name: str, exc: DataError) -> ValidationError:
    return ValidationError(
        f"SQL catalog {name!r}: a value does not fit the catalog's columns ({brief(exc)}): "
        "names and property keys hold 255 characters, property values and metadata "
        "locations 1,000"
    )


def request_timeout_seconds(properties: Mapping[str, str]) -> float | None:
    """How long a PostgreSQL catalog waits for an answer on a connection it holds:
    ``request-timeout`` seconds (default 60), else Iceberg Java's ``jdbc.socketTimeout``
    (seconds, 0 for no limit)."""
    if "request-timeout" in properties:
        return parse_seconds("request-timeout", properties["request-timeout"])
    raw = properties.get("jdbc.socketTimeout")
    if raw is None:
        return 60.0
    if raw.strip() == "0":
        return None
    return parse_seconds("jdbc.socketTimeout", raw)


def check_credentials(name: str, uri: str) -> None:
    """Refuses an ``@`` left unencoded in a URI's user name or password: the driver would take
    the rest of the password for the host name and echo it in its errors."""
    head = uri.partition("?")[0]
    if "://" in head and head.partition("://")[2].count("@") > 1:
        raise ValidationError(
            f"SQL catalog {name!r}: the user name or password in 'uri' holds an '@'; "
            "percent-encode it as %40 (or give them as 'jdbc.user' and 'jdbc.password')"
        )


def check_reserved(properties: Mapping[str, str]) -> None:
    if EXISTS in properties:
        raise ValidationError(f"namespace property {EXISTS!r} is reserved by the SQL catalog")


def under(column: Any, namespace: str) -> Any:
    """``column`` names a namespace inside ``namespace`` (``a.b`` is inside ``a``), compared
    exactly: SQLite's ``LIKE`` ignores the case of ASCII letters (``A`` would be inside ``a``),
    stops at a NUL and refuses long patterns."""
    prefix = namespace + "."
    return func.substr(column, 1, len(prefix)) == prefix


class NotCommitted(Exception):
    """A database error raised before a transaction's COMMIT was sent (``error``)."""

    def __init__(self, error: SQLAlchemyError) -> None:
        super().__init__(str(error))
        self.error = error


def committed(conn: Connection, work: Callable[[Connection], _T]) -> _T:
    """``work(conn)`` in a transaction, then COMMIT. A database error before the COMMIT was
    sent is raised as :class:`NotCommitted` (the transaction is rolled back: it did nothing);
    one from the COMMIT itself as it is (the commit may have happened)."""
    trans = conn.begin()
    try:
        result = work(conn)
    except SQLAlchemyError as exc:
        with contextlib.suppress(Exception):
            trans.rollback()
        raise NotCommitted(exc) from exc
    except BaseException:
        with contextlib.suppress(Exception):
            trans.rollback()
        raise
    trans.commit()
    return result
