"""A PostgreSQL catalog's connections: they end with the catalog (one dropped without
``close()``, or one whose opening failed, hands its pooled connections back to the server when
it is collected, with no ``ResourceWarning`` from the driver on whatever code runs at that
moment); Iceberg Java's ``jdbc.*`` connection properties are applied or refused, never dropped;
and connection settings no retry fixes are refused as such."""

from __future__ import annotations

import gc
import logging
import time
import uuid
import warnings
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy
from sqlalchemy.engine import make_url

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import ForbiddenError, ValidationError

pytestmark = pytest.mark.postgres


def _connections(engine: sqlalchemy.Engine, name: str, settle: float = 0.0) -> int:
    """How many server sessions ``name`` has; with ``settle``, waits that long for it to drop
    to 0 (a backend ends a moment after its client hangs up)."""
    deadline = time.monotonic() + settle
    while True:
        with engine.connect() as conn:
            query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = :n"
            n = int(conn.execute(sqlalchemy.text(query), {"n": name}).scalar_one())
        if n == 0 or time.monotonic() > deadline:
            return n
        time.sleep(0.05)


def test_a_dropped_catalog_closes_its_connections(postgres_uri: str, tmp_path: Path) -> None:
    from icefloe.catalog.sql import SqlCatalog

    app = f"icefloe_{uuid.uuid4().hex[:8]}"
    uri = f"{postgres_uri}?application_name={app}"
    watcher = sqlalchemy.create_engine(postgres_uri)
    try:
        cat = SqlCatalog(app, uri=uri, warehouse=(tmp_path / "wh").as_uri())
        cat.create_namespace("db")
        cat.create_table("db.t", pa.schema([("id", pa.int64())])).append(
            pa.table({"id": pa.array([1], pa.int64())})
        )
        assert _connections(watcher, app) >= 1
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", ResourceWarning)
            del cat
            gc.collect()
        assert not [w for w in seen if issubclass(w.category, ResourceWarning)]
        assert _connections(watcher, app, settle=10) == 0
    finally:
        watcher.dispose()


def test_a_catalog_that_fails_to_open_leaves_no_connection(
    postgres_uri: str, tmp_path: Path
) -> None:
    """A role that may not create the catalog's tables in a database without them: the
    refusal comes while the catalog opens, and the connection that met it is closed then, not
    at some later collection."""
    from icefloe.catalog.sql import SqlCatalog

    app = f"icefloe_{uuid.uuid4().hex[:8]}"
    role = f"nobody_{app}"
    watcher = sqlalchemy.create_engine(postgres_uri, isolation_level="AUTOCOMMIT")
    try:
        with watcher.connect() as conn:
            conn.execute(sqlalchemy.text(f"CREATE ROLE {role} LOGIN"))
            conn.execute(sqlalchemy.text(f"CREATE DATABASE {app}"))
        base = make_url(postgres_uri).set(username=role, database=app)
        uri = base.render_as_string(hide_password=False) + f"?application_name={app}"
        gc.disable()  # the connection must be closed by the failure, not by a collection
        try:
            with pytest.raises(ForbiddenError):
                SqlCatalog(app, uri=uri, warehouse=(tmp_path / "wh").as_uri())
            assert _connections(watcher, app, settle=10) == 0
        finally:
            gc.enable()
    finally:
        watcher.dispose()


# -- Iceberg Java's jdbc.* connection properties ------------------------------------------------


def _java_uri(postgres_uri: str, database: str = "postgres") -> str:
    """The test server as Iceberg Java's JDBC URL (``jdbc:postgresql://127.0.0.1:<port>/db``)."""
    url = make_url(postgres_uri)
    return f"jdbc:postgresql://{url.host}:{url.port}/{database}"


def _open(uri: str, tmp_path: Path, **props: str) -> SqlCatalog:
    props.setdefault("jdbc.user", "icefloe")  # the test server's
    return SqlCatalog("c", uri=uri, warehouse=(tmp_path / "wh").as_uri(), **props)


@pytest.mark.parametrize(
    "props", [{"jdbc.sslmode": "require"}, {"jdbc.ssl": "true"}, {"jdbc.sslmode": "VERIFY-FULL"}]
)
def test_javas_tls_settings_are_applied(
    postgres_uri: str, tmp_path: Path, props: dict[str, str]
) -> None:
    """A configuration shared with Iceberg Java that requires TLS (pgjdbc's ``sslmode``, or
    ``ssl=true``, its verify-full) is refused by the test server, which has no TLS: the
    catalog never connects in plaintext, and the refusal is not one to retry."""
    secret = {"jdbc.sslpassword": "Pw9Qkeypass"}
    with pytest.raises(ValidationError, match="SSL was required") as bad:
        _open(_java_uri(postgres_uri), tmp_path, **props, **secret)
    assert "Pw9Q" not in str(bad.value)


def test_tls_required_in_the_uri_is_not_retryable(postgres_uri: str, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="server does not support SSL"):
        _open(_java_uri(postgres_uri) + "?sslmode=require", tmp_path)


def test_a_database_that_does_not_exist_is_not_retryable(postgres_uri: str, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match='database "no_such_db" does not exist'):
        _open(_java_uri(postgres_uri, "no_such_db"), tmp_path)


def test_javas_application_name_is_the_sessions(postgres_uri: str, tmp_path: Path) -> None:
    app = f"icefloe_{uuid.uuid4().hex[:8]}"
    watcher = sqlalchemy.create_engine(postgres_uri)
    cat = _open(_java_uri(postgres_uri), tmp_path, **{"jdbc.ApplicationName": app})
    try:
        with cat.engine.connect():
            assert _connections(watcher, app) == 1
    finally:
        cat.close()
        watcher.dispose()


def test_javas_current_schema_holds_the_catalog_tables(postgres_uri: str, tmp_path: Path) -> None:
    """pgjdbc's ``currentSchema`` sets the search path, so Iceberg Java keeps its catalog's
    tables in that schema: icefloe finds and creates them there too, and a schema that does
    not exist is a bad setting."""
    schema = f"lake_{uuid.uuid4().hex[:8]}"
    admin = sqlalchemy.create_engine(postgres_uri)
    try:
        with admin.begin() as conn:
            conn.execute(sqlalchemy.text(f"CREATE SCHEMA {schema}"))
        in_schema = _open(_java_uri(postgres_uri), tmp_path, **{"jdbc.currentSchema": schema})
        in_schema.create_namespace(schema)
        in_schema.close()
        with admin.connect() as conn:
            query = "SELECT table_name FROM information_schema.tables WHERE table_schema = :s"
            tables = conn.execute(sqlalchemy.text(query), {"s": schema}).scalars().all()
        assert sorted(tables) == ["iceberg_namespace_properties", "iceberg_tables"]
        public = _open(postgres_uri, tmp_path)
        assert (schema,) not in public.list_namespaces()
        public.close()
        with pytest.raises(ValidationError, match="names no schema that exists"):
            _open(_java_uri(postgres_uri), tmp_path, **{"jdbc.currentSchema": schema + "_x"})
    finally:
        admin.dispose()


@pytest.mark.parametrize("key", ["sslfactory", "sslhostnameverifier", "jaasLogin", "PGHOST"])
def test_a_security_setting_icefloe_cannot_apply_is_refused(
    postgres_uri: str, tmp_path: Path, key: str
) -> None:
    with pytest.raises(ValidationError, match=f"'jdbc.{key}' is a PostgreSQL JDBC") as bad:
        _open(_java_uri(postgres_uri), tmp_path, **{f"jdbc.{key}": "Pw9Qvalue"})
    assert "Pw9Q" not in str(bad.value)


def test_a_java_tuning_setting_is_ignored_with_a_warning(
    postgres_uri: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from icefloe.catalog import sql_jdbc

    monkeypatch.setattr(sql_jdbc, "_WARNED", set())  # (warned once a process)
    with caplog.at_level(logging.WARNING, logger="icefloe.catalog.sql_jdbc"):
        for _ in range(2):
            _open(_java_uri(postgres_uri), tmp_path, **{"jdbc.reWriteBatchedInserts": "1"}).close()
    warned = [r for r in caplog.records if "jdbc.reWriteBatchedInserts" in r.getMessage()]
    assert len(warned) == 1


def test_several_hosts_are_given_as_query_parameters(postgres_uri: str, tmp_path: Path) -> None:
    """pgjdbc's multi-host URL is not a SQLAlchemy URL: the error says how to write it, and
    that form connects (to the first host that answers)."""
    url = make_url(postgres_uri)
    with pytest.raises(ValidationError, match=r"several hosts.*\?host=h1:5432&host=h2:5432"):
        _open(f"jdbc:postgresql://127.0.0.1:1,{url.host}:{url.port}/postgres", tmp_path)
    uri = f"jdbc:postgresql:///postgres?host=127.0.0.1:1&host={url.host}:{url.port}"
    cat = _open(uri, tmp_path)
    cat.list_namespaces()
    cat.close()
