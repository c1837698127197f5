"""A PostgreSQL catalog whose server stops answering on a connection the catalog holds: the
call fails with a typed error after ``request-timeout`` seconds instead of blocking forever,
nothing committed is lost, and the catalog works again once the server answers."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sqlalchemy import event
from sqlalchemy.engine import make_url

from icefloe.exceptions import (
    CommitFailedError,
    CommitStateUnknownError,
    ServiceUnavailableError,
    ValidationError,
)

pytestmark = pytest.mark.postgres


class FreezingProxy:
    """A loopback TCP forwarder to PostgreSQL that can stop passing bytes on (``freeze``) while
    keeping every connection open: to its clients, a server that hangs."""

    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.frozen = threading.Event()
        self.closing = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closing.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self.sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                while self.frozen.is_set() and not self.closing.is_set():
                    time.sleep(0.02)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.closing.set()
        self.frozen.clear()
        self.listener.close()
        for s in self.sockets:
            s.close()


@pytest.fixture
def proxy(postgres_uri: str) -> Iterator[FreezingProxy]:
    url = make_url(postgres_uri)
    p = FreezingProxy(url.host or "127.0.0.1", url.port or 5432)
    yield p
    p.close()


def _proxied(postgres_uri: str, proxy: FreezingProxy) -> str:
    return make_url(postgres_uri).set(host="127.0.0.1", port=proxy.port).render_as_string(False)


def _ends_within(seconds: float, fn: Callable[[], Any]) -> BaseException | None:
    """Runs ``fn`` in a thread; the exception it raised (None if none), or fails the test when
    it is still blocked after ``seconds``."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert outcome, f"the call was still blocked after {seconds} s"
    return outcome[0]


def test_a_server_that_stops_answering_fails_the_call_and_loses_nothing(
    tmp_path: Path, postgres_uri: str, proxy: FreezingProxy
) -> None:
    from icefloe.catalog.sql import SqlCatalog

    cat = SqlCatalog(
        "frozen",
        uri=_proxied(postgres_uri, proxy),
        warehouse=str(tmp_path),
        **{"request-timeout": "1", "connect-timeout": "1"},
    )
    cat.create_namespace("db")
    table = cat.create_table(("db", "t"), pa.schema([pa.field("id", pa.int64())]))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))

    proxy.frozen.set()  # the connection the catalog's pool holds now gets no answer
    err = _ends_within(30, lambda: cat.load_table(("db", "t")))
    assert isinstance(err, ServiceUnavailableError), err
    err = _ends_within(30, lambda: table.append(pa.table({"id": pa.array([3], pa.int64())})))
    assert isinstance(err, (ServiceUnavailableError, CommitFailedError, CommitStateUnknownError))
    assert "pw" not in str(err) and "password" not in str(err).lower()

    proxy.frozen.clear()
    t = cat.load_table(("db", "t"))
    ids = sorted(t.scan().to_arrow().column("id").to_pylist())
    assert ids in ([1, 2], [1, 2, 3])  # the frozen commit failed, or (unknown) landed whole
    t.append(pa.table({"id": pa.array([4], pa.int64())}))
    assert 4 in cat.load_table(("db", "t")).scan().to_arrow().column("id").to_pylist()
    cat.close()


def test_a_commit_whose_answer_never_comes_is_checked_when_the_server_returns(
    tmp_path: Path, postgres_uri: str, proxy: FreezingProxy
) -> None:
    """The pointer swap's UPDATE is sent and the server freezes before answering: the call ends
    after ``request-timeout``. No COMMIT was sent, and PostgreSQL never commits a transaction
    whose client left before its COMMIT: the commit failed, its files are deleted."""
    from icefloe.catalog.sql import SqlCatalog

    cat = SqlCatalog(
        "frozen2",
        uri=_proxied(postgres_uri, proxy),
        warehouse=str(tmp_path),
        **{"request-timeout": "1", "connect-timeout": "1"},
    )
    cat.create_namespace("db")
    table = cat.create_table(("db", "t"), pa.schema([pa.field("id", pa.int64())]))
    table.set_properties({"commit.retry.num-retries": "0"})  # the first attempt's error

    def freeze_before_swap(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("UPDATE ICEBERG_TABLES"):
            proxy.frozen.set()

    event.listen(cat.engine, "before_cursor_execute", freeze_before_swap)
    err = _ends_within(30, lambda: table.append(pa.table({"id": pa.array([1], pa.int64())})))
    event.remove(cat.engine, "before_cursor_execute", freeze_before_swap)
    # the UPDATE went out and no answer came, but no COMMIT did: nothing was committed
    assert isinstance(err, CommitFailedError), err
    assert "request-timeout" in str(err) and "nothing was committed" in str(err)
    assert not list((tmp_path / "db" / "t" / "data").rglob("*.parquet"))
    proxy.frozen.clear()
    # the server never got the UPDATE (the proxy held it; its transaction ended unanswered)
    assert cat.load_table(("db", "t")).scan().to_arrow().num_rows == 0
    cat.close()


@contextlib.contextmanager
def _commits_held_back(postgres_uri: str) -> Iterator[Callable[[], None]]:
    """PostgreSQL holds every COMMIT back, invisible to other sessions, waiting for a
    synchronous standby that does not exist; the function given releases them (they then take
    effect, as when a standby comes back or a stalled disk catches up)."""
    import psycopg

    dsn = make_url(postgres_uri).set(drivername="postgresql").render_as_string(False)

    def setting(value: str | None) -> None:
        with psycopg.connect(dsn, autocommit=True) as c:
            if value is None:
                c.execute("ALTER SYSTEM RESET synchronous_standby_names")
            else:
                c.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{value}'")
            c.execute("SELECT pg_reload_conf()")

    setting("no_such_standby")
    time.sleep(0.5)  # the reload reaches every backend
    try:
        yield lambda: setting(None)
    finally:
        setting(None)


@pytest.mark.parametrize("multi", [False, True])
def test_a_commit_held_back_and_applied_later_keeps_its_files(
    tmp_path: Path, postgres_uri: str, multi: bool
) -> None:
    """A COMMIT whose answer never comes but that PostgreSQL applies later: a plain read of the
    pointer still sees the old one, so the commit was taken for failed and its files deleted,
    and the table then named missing metadata. Its state is unknown now, its files kept, and
    the table reads the rows once the commit takes effect."""
    from icefloe.catalog.sql import SqlCatalog

    props = {"request-timeout": "2", "connect-timeout": "2"}
    name = f"held{int(multi)}"
    cat = SqlCatalog(name, uri=postgres_uri, warehouse=str(tmp_path), **props)
    cat.create_namespace("db")
    names = [("db", "a"), ("db", "b")] if multi else [("db", "a")]
    schema = pa.schema([pa.field("id", pa.int64())])
    for ident in names:
        cat.create_table(ident, schema).append(pa.table({"id": pa.array([1], pa.int64())}))
    rows = pa.table({"id": pa.array([2], pa.int64())})
    with _commits_held_back(postgres_uri) as release:

        def commit() -> None:
            if multi:
                tx = cat.transaction()
                for ident in names:
                    tx.table(ident).append(rows)
                tx.commit()
            else:
                cat.load_table(names[0]).append(rows)

        err = _ends_within(60, commit)
        assert isinstance(err, CommitStateUnknownError), err
        release()
    time.sleep(1)
    fresh = SqlCatalog(name, uri=postgres_uri, warehouse=str(tmp_path))
    for ident in names:
        ids = sorted(fresh.load_table(ident).scan().to_arrow().column("id").to_pylist())
        assert ids == [1, 2]
    fresh.close()
    cat.close()


def test_request_timeout_settings() -> None:
    from icefloe.catalog.sql_database import request_timeout_seconds as _request_timeout

    assert _request_timeout({}) == 60.0
    assert _request_timeout({"request-timeout": "2.5"}) == 2.5
    assert _request_timeout({"jdbc.socketTimeout": "30"}) == 30.0
    assert _request_timeout({"jdbc.socketTimeout": "0"}) is None
    for bad in ("0", "-1", "soon"):
        with pytest.raises(ValidationError, match="request-timeout"):
            _request_timeout({"request-timeout": bad})


def test_a_commit_held_by_a_row_lock_fails_as_not_committed(
    postgres_uri: str, tmp_path: Path
) -> None:
    """Another session holds the table's row (``SELECT ... FOR UPDATE``): the UPDATE waits,
    the request timeout or the server's lock timeout ends it before any COMMIT was sent, so
    the database committed nothing. That was CommitStateUnknownError with the commit's files
    kept; it is CommitFailedError and they are deleted."""
    import uuid

    import sqlalchemy

    from icefloe.catalog.sql import SqlCatalog

    name = f"c{uuid.uuid4().hex[:8]}"
    lock_timeout = postgres_uri + "?options=-c%20lock_timeout%3D500"
    for uri, props in (
        (postgres_uri, {"request-timeout": "1"}),  # the client's watchdog closes it
        (lock_timeout, {}),  # the server cancels the statement
    ):
        cat = SqlCatalog(name, uri=uri, warehouse=(tmp_path / "wh").as_uri(), **props)
        if not cat.namespace_exists("db"):
            cat.create_namespace("db")
        ident = f"db.t{len(props)}"
        t = cat.create_table(ident, pa.schema([("id", pa.int64())]))
        t.set_properties({"commit.retry.num-retries": "0"})
        holder = sqlalchemy.create_engine(postgres_uri)
        try:
            with holder.connect() as conn, conn.begin():
                conn.execute(
                    sqlalchemy.text(
                        "SELECT * FROM iceberg_tables WHERE catalog_name = :c "
                        "AND table_name = :t FOR UPDATE"
                    ),
                    {"c": name, "t": ident.split(".")[1]},
                )
                err = _ends_within(30, lambda t=t: t.append(pa.table({"id": [1]})))
                assert isinstance(err, CommitFailedError), err
                assert "nothing was committed" in str(err)
        finally:
            holder.dispose()
        location = Path(t.location.removeprefix("file://"))
        assert not list(location.rglob("*.parquet"))
        assert len(list(location.rglob("*.metadata.json"))) == 2  # the create's, the property's
        t.append(pa.table({"id": [2]}))  # the lock is gone: it commits
        assert cat.load_table(ident).scan().to_arrow()["id"].to_pylist() == [2]
        cat.close()
