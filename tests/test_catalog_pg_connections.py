"""A PostgreSQL catalog's connections end with the catalog: one dropped without ``close()``
(or one whose opening failed) hands its pooled connections back to the server when it is
collected, with no ``ResourceWarning`` from the driver on whatever code runs at that moment."""

from __future__ import annotations

import gc
import time
import uuid
import warnings
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy
from sqlalchemy.engine import make_url

from icefloe.exceptions import ForbiddenError

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
