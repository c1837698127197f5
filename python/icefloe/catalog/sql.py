"""SQL catalog on SQLAlchemy: SQLite (file or memory) and PostgreSQL.

It keeps exactly the two tables of Iceberg's JDBC catalog and PyIceberg's ``SqlCatalog``, so all
three can open one database:

- ``iceberg_tables(catalog_name, table_namespace, table_name, metadata_location,
  previous_metadata_location, iceberg_type)``; ``iceberg_type`` is ``'TABLE'`` for tables and
  ``'VIEW'`` for views; databases created without the column (the "v0" layout, which has no
  views) are used as they are, and looked at again while open, as Iceberg Java may add it;
- ``iceberg_namespace_properties(catalog_name, namespace, property_key, property_value)``;
  every namespace gets the reserved, hidden ``exists=true`` like the Java catalog, so removing
  its last property does not remove it.

Namespaces are stored dotted (``a.b``). The pointer swap of a commit is one compare-and-swap
``UPDATE ... WHERE metadata_location = :expected``: no row updated means another writer won
(:class:`CommitFailedError`); a database error during the swap is resolved by re-reading the
pointer, and reported as :class:`CommitStateUnknownError` when that is impossible. Every
transaction that changes an entry calls the hook of :mod:`icefloe.catalog.sql_hook` before its
COMMIT, on its own connection.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    and_,
    create_engine,
    delete,
    insert,
    inspect,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DataError, IntegrityError, SQLAlchemyError
from sqlalchemy.pool import QueuePool

from icefloe.catalog.base import (
    Identifier,
    split_identifier,
)
from icefloe.catalog.commit import (
    CommitResult,
    RetryPolicy,
    check_refs_as_planned,
    check_updates_fit,
)
from icefloe.catalog.sql_database import (
    ICEBERG_TABLES,
    SCHEMA,
    NotCommitted,
    brief,
    check_credentials,
    committed,
    database_errors,
    normalise_uri,
    privilege_refused,
    read_only_error,
    request_timeout_seconds,
    said,
    too_long,
)
from icefloe.catalog.sql_hook import PointerChange, announce
from icefloe.catalog.sql_jdbc import create_tables, postgres_connect_args, warn_sqlite_keys
from icefloe.catalog.sql_namespaces import SqlNamespaces
from icefloe.catalog.sql_views import (
    NO_TYPE_COLUMN,
    TABLE_TYPE,
    VIEW_TYPE,
    missing_entry,
    taken_entry,
)
from icefloe.catalog.sqlite_fork import guard_forks
from icefloe.catalog.sqlite_journal import journal_mode, use_journal_mode
from icefloe.exceptions import (
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
    IcebergError,
    MissingDependencyError,
    NoSuchNamespaceError,
    UnsupportedFeatureError,
    ValidationError,
    commit_did_not_happen,
)
from icefloe.metadata import (
    TableMetadata,
    TableRequirement,
    TableUpdate,
    apply_updates,
    validate_requirements,
)

if TYPE_CHECKING:
    from icefloe.table import Table

__all__ = ["SqlCatalog"]

#: How often a namespace property update that lost a race to another writer is tried again.
_PROPERTY_RETRIES = 5

#: The engines of open catalogs on a database server or file, whose pooled connections a child
#: made by ``fork`` must not use.
_ENGINES: weakref.WeakSet[Engine] = weakref.WeakSet()


def _forget_connections_in_child() -> None:
    """In a child made by ``fork``: the pooled connections are the parent's (one socket or
    file handle used by two processes mixes their requests and answers), so the child leaves
    them to the parent, untouched, and opens its own on first use."""
    for engine in list(_ENGINES):
        engine.dispose(close=False)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_connections_in_child)

#: How often opening a new catalog database tries to create its tables while another process
#: or thread creates them too.
_CREATE_ATTEMPTS = 3


class SqlCatalog(SqlNamespaces):
    """A catalog in a SQL database, shared with Iceberg's JDBC catalog and PyIceberg; it keeps
    tables and views (rows of ``iceberg_type`` ``'VIEW'``, as Iceberg Java's).

    Properties: ``uri`` (SQLAlchemy URL: ``sqlite:///path.db``, ``sqlite:///:memory:``,
    ``postgresql+psycopg://user:pw@host:port/db``, or Iceberg Java's ``jdbc:sqlite:path`` and
    ``jdbc:postgresql://host:port/db``), ``jdbc.user`` and ``jdbc.password`` (override the URI's),
    ``warehouse`` (where new tables go), ``init_catalog_tables`` (create the two tables if
    absent, default true; or Java's ``jdbc.init-catalog-tables``), ``echo``,
    ``connect-timeout`` (seconds to open a PostgreSQL connection, default 10; or Java's
    ``jdbc.connectTimeout`` / ``jdbc.loginTimeout`` with pgjdbc's defaults, the smaller that
    is not 0), ``request-timeout`` (seconds
    to wait for PostgreSQL's answer on an open connection, default 60; or Java's
    ``jdbc.socketTimeout``), ``sqlite.journal-mode`` (a SQLite file's journal: ``wal``, the
    default, or ``delete`` for a file on a network file system; see
    :mod:`icefloe.catalog.sqlite_journal`).

    For PostgreSQL, pgjdbc's connection properties among Java's ``jdbc.*`` are applied as
    libpq's: ``sslmode``, ``ssl`` (true: ``verify-full``), ``sslrootcert``, ``sslcert``,
    ``sslkey``, ``sslpassword``, ``gssEncMode``, ``channelBinding``, ``kerberosServerName``,
    ``ApplicationName``, ``currentSchema`` (the search path: the catalog's tables are those of
    its first schema, as Java's), ``options``, ``readOnly``, ``tcpKeepAlive``,
    ``targetServerType``, ``loadBalanceHosts`` and ``service``; a setting in the URI wins. Any
    other ``jdbc.*`` key on security or on which database is used is a
    :class:`ValidationError`; others are ignored with a warning (see
    :mod:`icefloe.catalog.sql_jdbc`).
    """

    keeps_views = True

    @database_errors
    def __init__(self, name: str, **properties: str) -> None:
        super().__init__(name, **properties)
        uri = properties.get("uri")
        if not uri:
            raise ValidationError("a SQL catalog needs a 'uri' property (a SQLAlchemy URL)")
        uri = normalise_uri(uri)
        check_credentials(name, uri)
        kwargs: dict[str, Any] = {"echo": properties.get("echo", "false").lower() == "true"}
        self._in_memory = False
        self._gone = False
        sqlite_mode = journal_mode(name, properties) if uri.startswith("sqlite") else None
        if uri.startswith("sqlite"):
            kwargs["connect_args"] = {"timeout": 60, "check_same_thread": False}
            if ":memory:" in uri or uri.rstrip("/") in ("sqlite:", "sqlite:/"):
                self._in_memory = True
                # One connection holds the database, lent to one thread at a time: threads
                # sharing it at once interleaved their transactions and lost commits.
                kwargs.update(poolclass=QueuePool, pool_size=1, max_overflow=0, pool_timeout=600)
        else:
            kwargs["pool_pre_ping"] = True
        user, password = properties.get("jdbc.user"), properties.get("jdbc.password")
        request_timeout = request_timeout_seconds(properties)
        self._request_timeout = request_timeout
        try:
            url = make_url(uri)
            if url.get_backend_name() == "postgresql":  # Java's jdbc.* settings as libpq's
                kwargs["connect_args"] = postgres_connect_args(name, properties, url.query)
            elif url.get_backend_name() == "sqlite":
                warn_sqlite_keys(name, properties)
            if user is not None or password is not None:  # as Iceberg Java's JDBC catalog
                url = url.set(
                    username=url.username if user is None else user,
                    password=url.password if password is None else password,
                )
            self.engine: Engine = create_engine(url, **kwargs)
            if not self._in_memory:  # an in-memory database lives in its one connection
                _ENGINES.add(self.engine)
            if sqlite_mode is not None and not self._in_memory:
                use_journal_mode(self.engine, sqlite_mode)
            if self.engine.dialect.name == "sqlite" and not self._in_memory:
                guard_forks(self.engine)
            if self.engine.dialect.driver == "psycopg":
                from icefloe.catalog.pg_deadline import watch_connections

                watch_connections(self.engine, request_timeout)
        except ModuleNotFoundError as exc:  # the database's driver
            driver = "postgres" if uri.startswith("postgresql") else None
            if driver is None:
                raise MissingDependencyError(
                    f"SQL catalog {name!r}: the database driver {exc.name!r} is not installed",
                    name=exc.name,
                ) from exc
            raise MissingDependencyError.install(
                f"SQL catalog {name!r}: a PostgreSQL catalog needs the {exc.name!r} driver",
                driver,
                name=exc.name,
            ) from exc
        except ArgumentError as exc:  # a malformed URL or an unknown dialect: not retryable
            raise ValidationError(
                f"SQL catalog {name!r}: 'uri' is not a usable SQLAlchemy URL ({exc})"
            ) from exc
        except ValidationError:
            raise
        except ValueError:  # a port that is not a number; the text would echo the URI
            if "," in uri.partition("://")[2].partition("/")[0].rpartition("@")[2]:
                raise ValidationError(
                    f"SQL catalog {name!r}: 'uri' names several hosts ('h1:5432,h2:5432'), "
                    "which is not read in that form: give them as query parameters, as in "
                    "jdbc:postgresql:///db?host=h1:5432&host=h2:5432 (or "
                    "postgresql+psycopg:///db?host=h1:5432&host=h2:5432)"
                ) from None
            raise ValidationError(
                f"SQL catalog {name!r}: 'uri' has a port that is not a number (a ':' or '@' in "
                "the user name or password must be percent-encoded)"
            ) from None
        # a catalog dropped without close() hands its pooled connections back to the server
        # (the driver would only warn about them, from whatever code the collection ran in)
        self._finalizer = weakref.finalize(self, self.engine.dispose)
        self._has_type_column = True
        try:
            self._init_tables(create_tables(properties))
        except BaseException:
            self._finalizer()
            raise

    def _init_tables(self, create: bool) -> None:
        attempt = 0
        while missing := self._missing_tables():
            if not create:
                raise ValidationError(f"catalog database lacks tables {sorted(missing)}")
            attempt += 1
            try:
                SCHEMA.create_all(self.engine, checkfirst=True)
            except SQLAlchemyError:
                # Another process or thread opening the new database may have created a table
                # between the check and the CREATE: look again and create what is still
                # missing (the other may not be done), as Iceberg Java's JDBC catalog does.
                if attempt >= _CREATE_ATTEMPTS and self._missing_tables():
                    raise
            else:
                break
        columns = {c["name"] for c in inspect(self.engine).get_columns("iceberg_tables")}
        self._has_type_column = "iceberg_type" in columns

    def _missing_tables(self) -> set[str]:
        names = set(inspect(self.engine).get_table_names())
        return {"iceberg_tables", "iceberg_namespace_properties"} - names

    @property
    def _typed(self) -> bool:
        """Whether ``iceberg_tables`` has the ``iceberg_type`` column (tables and views apart).
        A database without it is looked at again on each call: Iceberg Java adds the column
        (and then views) to such a database while this catalog is open."""
        if not self._has_type_column:
            columns = {c["name"] for c in inspect(self.engine).get_columns("iceberg_tables")}
            self._has_type_column = "iceberg_type" in columns
        return self._has_type_column

    def __reduce__(self) -> tuple[Any, ...]:
        if self._in_memory:
            raise ValidationError(
                f"SQL catalog {self.name!r} keeps its tables in an in-memory database of this "
                "process: it (and its tables) cannot be pickled; use a database file or server"
            )
        return super().__reduce__()

    def close(self) -> None:
        """Release the database connections (a later call connects again, except to an
        in-memory database, which closing discards)."""
        self.engine.dispose()
        self._gone = self._in_memory

    # -- helpers --------------------------------------------------------------------------------
    def _table_filter(self, namespace: str, name: str, kind: str = TABLE_TYPE) -> Any:
        clause = and_(
            ICEBERG_TABLES.c.catalog_name == self.name,
            ICEBERG_TABLES.c.table_namespace == namespace,
            ICEBERG_TABLES.c.table_name == name,
        )
        return and_(clause, self._type_filter(kind)) if self._typed else clause

    def _type_filter(self, kind: str = TABLE_TYPE) -> Any:
        if kind == VIEW_TYPE:
            return ICEBERG_TABLES.c.iceberg_type == VIEW_TYPE
        return or_(
            ICEBERG_TABLES.c.iceberg_type == TABLE_TYPE, ICEBERG_TABLES.c.iceberg_type.is_(None)
        )

    # -- table pointers -------------------------------------------------------------------------
    @staticmethod
    def _entry_key(identifier: Identifier, kind: str = TABLE_TYPE) -> tuple[str, str]:
        """``(stored namespace, name)`` of a table or view; a namespace level holding a dot
        names no entry (:class:`NoSuchTableError` / :class:`NoSuchViewError`): stored dotted,
        ``("a.b", "t")`` would be the entry ``a.b.t`` of namespace ``("a", "b")``."""
        namespace, name = split_identifier(identifier)
        if any("." in p for p in namespace):
            raise missing_entry(kind, identifier)
        return ".".join(namespace), name

    @database_errors
    def _get_pointer(self, identifier: Identifier, kind: str = TABLE_TYPE) -> str:
        ns, name = self._entry_key(identifier, kind)
        with self.engine.connect() as conn:
            row = conn.execute(
                select(ICEBERG_TABLES.c.metadata_location).where(self._table_filter(ns, name, kind))
            ).first()
        if row is None or not row[0]:
            raise missing_entry(kind, identifier)
        return str(row[0])

    def _settled_pointers(self, identifiers: list[Identifier], kind: str = TABLE_TYPE) -> list[str]:
        """The pointers of ``identifiers`` once no transaction can still change them: each row
        is read ``FOR UPDATE``, which waits for a transaction that updated it to end.

        After a commit's answer was lost, a plain read can see the old pointer while the
        commit is still on its way to taking effect (PostgreSQL holds a COMMIT back while it
        waits for a synchronous standby, and makes it visible after the client has gone): the
        new pointer would then name metadata the writer deleted, thinking it lost. A commit
        that can still take effect has updated the row and holds its lock until it is visible,
        so once the lock is ours the pointer is final. A lock not granted within the catalog's
        ``request-timeout`` (PostgreSQL's ``lock_timeout``) is an error: the outcome is unknown.
        SQLite has no such state (the lock clause is left out there)."""
        postgres = self.engine.dialect.name == "postgresql"
        out = []
        with self.engine.connect() as conn:  # its transaction begins with the first statement
            try:
                if postgres and self._request_timeout:
                    wait_ms = max(1, int(self._request_timeout * 1000 * 0.8))
                    conn.execute(text(f"SET LOCAL lock_timeout = {wait_ms}"))
                for identifier in identifiers:
                    ns, name = self._entry_key(identifier, kind)
                    row = conn.execute(
                        select(ICEBERG_TABLES.c.metadata_location)
                        .where(self._table_filter(ns, name, kind))
                        .with_for_update()
                    ).first()
                    if row is None or not row[0]:
                        raise missing_entry(kind, identifier)
                    out.append(str(row[0]))
            finally:  # the rows were read under their locks: ending the read changes nothing
                with contextlib.suppress(SQLAlchemyError):
                    conn.rollback()
        return out

    @database_errors
    def _create_pointer(
        self, identifier: Identifier, metadata_location: str, kind: str = TABLE_TYPE
    ) -> None:
        self._insert_pointer(identifier, metadata_location, kind, registering=False)

    @database_errors
    def _register_pointer(self, identifier: Identifier, metadata_location: str) -> None:
        """The check that no other table's current metadata is ``metadata_location`` and the
        insert, in one transaction that holds a lock two registrations of one file both take:
        SQLite's write lock from the transaction's start (``BEGIN IMMEDIATE``), PostgreSQL's
        transaction-level advisory lock on the catalog and location. Two concurrent
        registrations of one file under two names: one wins, the other sees its entry."""
        self._insert_pointer(identifier, metadata_location, TABLE_TYPE, registering=True)

    def _insert_pointer(
        self, identifier: Identifier, metadata_location: str, kind: str, registering: bool
    ) -> None:
        namespace, name = split_identifier(identifier)
        ns = self._ns_string(namespace)  # a level with a dot names no namespace
        values: dict[str, Any] = {
            "catalog_name": self.name,
            "table_namespace": ns,
            "table_name": name,
            "metadata_location": metadata_location,
            "previous_metadata_location": None,
        }
        if self._typed:
            values["iceberg_type"] = kind
        action = "register" if registering else "create"
        inserted = False
        try:
            with self.engine.begin() as conn:
                if registering:
                    self._lock_location(conn, metadata_location)
                if not self._ns_exists(conn, ns):
                    raise NoSuchNamespaceError(f"namespace {ns!r} does not exist")
                if registering:
                    holder = self._other_table_at(conn, metadata_location, ns, name)
                    if holder is not None:
                        raise self._refuse_shared(identifier, holder)
                conn.execute(insert(ICEBERG_TABLES).values(**values))
                inserted = True
                change = PointerChange(action, kind, (identifier,), (metadata_location,))
                announce(conn, change)
        except IntegrityError as exc:
            if inserted:  # the hook's statement, not the name taken
                raise
            raise taken_entry(self, identifier, kind) from exc

    def _lock_location(self, conn: Connection, metadata_location: str) -> None:
        """Take, as the transaction's first statement, the lock that makes a registration's
        check and insert one step (see :meth:`_register_pointer`); held until it ends. Other
        databases get no lock: there the check and the insert can interleave."""
        dialect = self.engine.dialect.name
        if dialect == "sqlite":
            # pysqlite begins a transaction only before the INSERT: the check would read
            # outside it. BEGIN IMMEDIATE takes the write lock first (waiting the busy
            # timeout for another writer), so the check sees every committed entry.
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        elif dialect == "postgresql":
            # an entry inserted by a concurrent transaction is invisible to this one's check
            # (and the two rows do not conflict): registrations of one file take turns
            key = "\0".join((self.name, *_spellings(metadata_location)))
            digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
            conn.execute(
                text("SELECT pg_advisory_xact_lock(:key)"),
                {"key": int.from_bytes(digest, "big", signed=True)},
            )

    def _other_table_at(
        self, conn: Connection, metadata_location: str, ns: str, name: str
    ) -> Identifier | None:
        """A table other than ``ns.name`` whose current metadata is ``metadata_location``."""
        c = ICEBERG_TABLES.c
        query = select(c.table_namespace, c.table_name).where(
            c.catalog_name == self.name,
            c.metadata_location.in_(_spellings(metadata_location)),
            or_(c.table_namespace != ns, c.table_name != name),
        )
        if self._typed:
            query = query.where(self._type_filter())
        row = conn.execute(query.limit(1)).first()
        return None if row is None else (*str(row[0]).split("."), str(row[1]))

    @database_errors
    def _not_committed(self, what: str, exc: SQLAlchemyError) -> IcebergError:
        """The error for a swap the database refused or failed before its COMMIT was sent:
        the database rolled the transaction back (a client gone before COMMIT commits
        nothing), so nothing was committed."""
        if isinstance(exc, DataError):  # no retry helps
            return too_long(self.name, exc)
        if privilege_refused(exc):
            return CommitFailedError(
                f"{what} failed: the database refused it ({brief(exc)}); nothing was committed"
            )
        failed = CommitFailedError(
            f"{what} failed in the database before it committed ({brief(exc)}); nothing was "
            "committed"
        )
        if "database is locked" in str(exc):
            # SQLite waited its whole busy timeout for another connection's lock: trying
            # again at once would wait as long again, attempt after attempt
            failed.retryable = False
        return read_only_error(self.name, exc, self.engine) or failed

    def _swap_pointer(
        self, identifier: Identifier, expected: str, new: str, kind: str = TABLE_TYPE
    ) -> None:
        ns, name = self._entry_key(identifier, kind)
        stmt = (
            update(ICEBERG_TABLES)
            .where(
                self._table_filter(ns, name, kind), ICEBERG_TABLES.c.metadata_location == expected
            )
            .values(metadata_location=new, previous_metadata_location=expected)
        )
        try:
            conn = self.engine.connect()
        except SQLAlchemyError as exc:  # no connection, so no UPDATE sent: nothing happened
            raise CommitFailedError(
                f"commit of {'.'.join(identifier)!r} failed: the catalog database could not "
                f"be reached ({brief(exc)}); nothing was committed"
            ) from exc

        def swap(c: Connection) -> int:
            rowcount: int = c.execute(stmt).rowcount
            if rowcount == 1:
                announce(c, PointerChange("commit", kind, (identifier,), (new,)))
            return rowcount

        try:
            with conn:
                rowcount = committed(conn, swap)
        except NotCommitted as before:
            raise self._not_committed(f"commit of {'.'.join(identifier)!r}", before.error) from (
                before.error
            )
        except SQLAlchemyError as exc:
            # The COMMIT may or may not have reached the database: look at the pointer. It is
            # ours, or a later commit's whose metadata log lists ours, if the swap happened.
            try:
                (current,) = self._settled_pointers([identifier], kind)
                happened = current == new or (
                    kind == TABLE_TYPE
                    and any(
                        e.metadata_file == new for e in self.read_metadata(current).metadata_log
                    )
                )
            except Exception as check_exc:
                raise CommitStateUnknownError(
                    f"commit of {'.'.join(identifier)!r} to {new} may or may not have "
                    f"happened: {brief(exc)}; checking failed: {said(check_exc)}"
                ) from exc
            if happened:
                return
            failed = CommitFailedError(
                f"commit of {'.'.join(identifier)!r} failed in the database: {brief(exc)}"
            )
            if "database is locked" in str(exc):
                # SQLite waited its whole busy timeout for another connection's lock: trying
                # again at once would wait as long again, attempt after attempt
                failed.retryable = False
            raise read_only_error(self.name, exc, self.engine) or failed from exc
        if rowcount != 1:
            raise CommitFailedError(
                f"{kind.lower()} {'.'.join(identifier)!r} was changed by another writer "
                f"(its metadata is no longer {expected})"
            )

    @database_errors
    def _drop_pointer(self, identifier: Identifier, kind: str = TABLE_TYPE) -> None:
        ns, name = self._entry_key(identifier, kind)
        with self.engine.begin() as conn:
            deleted = conn.execute(
                delete(ICEBERG_TABLES).where(self._table_filter(ns, name, kind))
            ).rowcount
            if deleted:
                announce(conn, PointerChange("drop", kind, (identifier,)))
        if deleted == 0:
            raise missing_entry(kind, identifier)

    @database_errors
    def _rename_pointer(
        self, source: Identifier, target: Identifier, kind: str = TABLE_TYPE
    ) -> None:
        src, src_name = self._entry_key(source, kind)
        dst_ns, dst_name = split_identifier(target)
        dst = self._ns_string(dst_ns)  # a level with a dot names no namespace
        moved = 0
        try:
            with self.engine.begin() as conn:
                if not self._ns_exists(conn, dst):
                    raise NoSuchNamespaceError(f"namespace {dst!r} does not exist")
                moved = conn.execute(
                    update(ICEBERG_TABLES)
                    .where(self._table_filter(src, src_name, kind))
                    .values(table_namespace=dst, table_name=dst_name)
                ).rowcount
                if moved == 0:
                    raise missing_entry(kind, source)
                announce(conn, PointerChange("rename", kind, (source, target)))
        except IntegrityError as exc:
            if moved:  # the hook's statement, not the name taken
                raise
            raise taken_entry(self, target, kind) from exc

    @database_errors
    def _list_table_names(self, namespace: Identifier, kind: str = TABLE_TYPE) -> list[str]:
        ns = self._ns_string(namespace)  # a level with a dot names no namespace
        with self.engine.connect() as conn:
            if not self._ns_exists(conn, ns):
                raise NoSuchNamespaceError(f"namespace {ns!r} does not exist")
            query = select(ICEBERG_TABLES.c.table_name).where(
                ICEBERG_TABLES.c.catalog_name == self.name, ICEBERG_TABLES.c.table_namespace == ns
            )
            if self._typed:
                query = query.where(self._type_filter(kind))
            elif kind == VIEW_TYPE:  # a database without the type column holds no views
                return []
            return sorted(str(n) for n in conn.execute(query).scalars())

    # -- one table under two names ---------------------------------------------------------------
    @database_errors
    def _tables_sharing(
        self, identifier: Identifier, table: Table, metadata_files: list[str]
    ) -> list[Identifier]:
        """Other entries pointing at one of the purged table's metadata files, or at a file of
        its metadata directories that is metadata of the same table (same UUID: an older file
        registered under another name). An entry whose metadata cannot be read there counts
        too: deleting files is only done when no other entry can be this table."""
        ns, name = self._entry_key(identifier)
        files = {v for f in (*metadata_files, table.metadata_location) for v in _spellings(f)}
        dirs = sorted({f.rsplit("/", 1)[0] + "/" for f in files if "/" in f})
        c = ICEBERG_TABLES.c
        wanted = [c.metadata_location.startswith(d, autoescape=True) for d in dirs]
        ordered = sorted(files)
        wanted += [
            c.metadata_location.in_(ordered[i : i + 500]) for i in range(0, len(ordered), 500)
        ]
        query = select(c.table_namespace, c.table_name, c.metadata_location).where(
            c.catalog_name == self.name,
            or_(c.table_namespace != ns, c.table_name != name),
            or_(*wanted),
        )
        if self._typed:
            query = query.where(self._type_filter())
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        sharing = []
        for other_ns, other_name, location in rows:
            if not location:
                continue
            same = location in files
            if not same:
                try:
                    other = self.read_metadata(str(location))
                    same = other.table_uuid == table.metadata.table_uuid
                except IcebergError:
                    same = True  # cannot tell: keep the files
            if same:
                sharing.append((*str(other_ns).split("."), str(other_name)))
        return sorted(sharing)

    # -- views: rows of iceberg_type 'VIEW' -----------------------------------------------------
    def _view_pointer(self, identifier: Identifier) -> str:
        if not self._typed:  # the older layout has no views
            raise missing_entry(VIEW_TYPE, identifier)
        return self._get_pointer(identifier, VIEW_TYPE)

    def _create_view_pointer(self, identifier: Identifier, metadata_location: str) -> None:
        if not self._typed:
            raise UnsupportedFeatureError(NO_TYPE_COLUMN)
        self._create_pointer(identifier, metadata_location, VIEW_TYPE)

    def _swap_view_pointer(self, identifier: Identifier, expected: str, new: str) -> None:
        self._swap_pointer(identifier, expected, new, VIEW_TYPE)

    def _drop_view_pointer(self, identifier: Identifier) -> None:
        if not self._typed:
            raise missing_entry(VIEW_TYPE, identifier)
        self._drop_pointer(identifier, VIEW_TYPE)

    def _rename_view_pointer(self, source: Identifier, target: Identifier) -> None:
        self._rename_pointer(source, target, VIEW_TYPE)

    def _list_view_names(self, namespace: Identifier) -> list[str]:
        return self._list_table_names(namespace, VIEW_TYPE)

    # -- several tables at once -----------------------------------------------------------------
    @database_errors
    def commit_tables(
        self, changes: Iterable[tuple[Any, list[TableRequirement], list[TableUpdate]]]
    ) -> list[CommitResult]:
        """Commit changes to several tables in one database transaction, all or nothing.

        Each table's requirements are checked against its current metadata
        (:class:`CommitConflictError` when one fails), each new metadata file is written, and
        every pointer is swapped by a conditional ``UPDATE`` in one transaction; if any of them
        finds its table moved, the transaction rolls back, the files are deleted and the whole
        commit is tried again on the new state (``commit.retry.*`` of the first table).
        """
        items = list(changes)
        idents = [tuple(t.identifier) for t, _, _ in items]
        if len(set(idents)) != len(idents):
            raise ValidationError("a multi-table commit names a table more than once")
        if not items:
            return []
        policy = RetryPolicy.from_properties(items[0][0].metadata.properties)
        deadline = time.monotonic() + policy.total_timeout_ms / 1000.0
        attempt = 0
        while True:
            staged: list[tuple[Identifier, str, TableMetadata, str]] = []
            bases: list[TableMetadata] = []
            swapping = False
            try:
                for ident, (table, reqs, ups) in zip(idents, items, strict=True):
                    base_location = self._get_pointer(ident)
                    base = self.read_metadata(base_location)
                    try:
                        validate_requirements(reqs, base)
                    except CommitFailedError as exc:
                        raise CommitConflictError(
                            f"commit to {'.'.join(ident)!r} conflicts with its current state: "
                            f"{exc}; refresh the table and make the change again"
                        ) from exc
                    if base_location != table.metadata_location:
                        check_refs_as_planned(table.metadata, base, ups)
                    check_updates_fit(base, ups)
                    new = apply_updates(base, ups, base_location)
                    location = self._write_metadata(new, self._next_version(base, base_location))
                    staged.append((ident, base_location, new, location))
                    bases.append(base)
                swapping = True  # from here on only CommitFailedError proves nothing moved
                self._swap_all(staged)
            except CommitFailedError as exc:
                self._delete_staged(staged)
                attempt += 1
                wait = policy.wait_ms(attempt) / 1000.0
                late = attempt > 1 and time.monotonic() + wait > deadline  # after one retry
                if attempt > policy.num_retries or late or not exc.retryable:
                    raise
                time.sleep(wait)
                continue
            except BaseException as exc:
                # CommitStateUnknownError, an interrupt or any other error during the swap: the
                # new files may be the tables' current metadata, keep them (unless the error
                # proves no pointer moved, as a read-only database's refusal does)
                if not swapping or commit_did_not_happen(exc):
                    self._delete_staged(staged)
                raise
            for base, (_, base_location, new, _) in zip(bases, staged, strict=True):
                self._delete_after_commit(base, base_location, new)
            return [CommitResult(new, location) for _, _, new, location in staged]

    def _delete_staged(self, staged: list[tuple[Identifier, str, TableMetadata, str]]) -> None:
        for _, _, new, location in staged:
            self.table_io(new.properties).delete_quietly(location)

    def _swap_all(self, staged: list[tuple[Identifier, str, TableMetadata, str]]) -> None:
        """Every pointer swap in one transaction (rolled back unless every swap matched)."""

        def swap(conn: Connection) -> None:
            for ident, expected, _, location in staged:
                ns, name = self._entry_key(ident)
                rowcount = conn.execute(
                    update(ICEBERG_TABLES)
                    .where(
                        self._table_filter(ns, name),
                        ICEBERG_TABLES.c.metadata_location == expected,
                    )
                    .values(metadata_location=location, previous_metadata_location=expected)
                ).rowcount
                if rowcount != 1:
                    raise CommitFailedError(
                        f"table {'.'.join(ident)!r} was changed by another writer"
                    )
            idents = tuple(ident for ident, _, _, _ in staged)
            locations = tuple(location for _, _, _, location in staged)
            announce(conn, PointerChange("commit-tables", TABLE_TYPE, idents, locations))

        try:
            with self.engine.connect() as conn:
                committed(conn, swap)
        except NotCommitted as before:
            raise self._not_committed("multi-table commit", before.error) from before.error
        except SQLAlchemyError as exc:
            # The COMMIT may or may not have reached the database: look at the pointers.
            try:
                current = self._settled_pointers([ident for ident, _, _, _ in staged])
            except Exception as check_exc:
                raise CommitStateUnknownError(
                    f"multi-table commit may or may not have happened: {brief(exc)}; "
                    f"checking failed: {said(check_exc)}"
                ) from exc
            if all(c == s[3] for c, s in zip(current, staged, strict=True)):
                return
            if all(c == s[1] for c, s in zip(current, staged, strict=True)):
                raise read_only_error(self.name, exc, self.engine) or CommitFailedError(
                    f"multi-table commit failed in the database: {brief(exc)}"
                ) from exc
            raise CommitStateUnknownError(
                f"multi-table commit left an unexpected state: {brief(exc)}"
            ) from exc


def _spellings(location: str) -> list[str]:
    """``location`` and the other ways a local file's location is written (``/p``,
    ``file:/p``, ``file:///p``), as one file may be stored under any of them."""
    path = None
    if location.startswith("/"):
        path = location
    elif location.startswith("file:///"):
        path = location[len("file://") :]
    elif location.startswith("file:/"):
        path = location[len("file:") :]
    if path is None:
        return [location]
    return sorted({location, path, f"file:{path}", f"file://{path}"})
