"""Catalog fixtures (a pytest plugin): every catalog test runs on each backend.

``sql_catalog`` is a SQL catalog on a SQLite file, SQLite in memory and the session's
PostgreSQL server; ``catalog`` adds the file-system (hadoop) catalog and the REST catalog client
talking to the session's ``icefloe serve`` (tests/support/rest.py), in a warehouse of its own. Each
test gets its own catalog name (the ``catalog_name`` column), so tests sharing the PostgreSQL
server never see each other's rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from icefloe.catalog import Catalog
from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.sql import SqlCatalog


def first_layout_database(path: Path) -> None:
    """A SQLite catalog database of the JDBC catalog's first layout: ``iceberg_tables``
    without the ``iceberg_type`` column (so no views)."""
    import sqlite3

    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE iceberg_tables(catalog_name VARCHAR(255) NOT NULL, table_namespace"
        " VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, metadata_location"
        " VARCHAR(1000), previous_metadata_location VARCHAR(1000),"
        " PRIMARY KEY (catalog_name, table_namespace, table_name))"
    )
    con.execute(
        "CREATE TABLE iceberg_namespace_properties(catalog_name VARCHAR(255) NOT NULL,"
        " namespace VARCHAR(255) NOT NULL, property_key VARCHAR(255), property_value"
        " VARCHAR(1000), PRIMARY KEY (catalog_name, namespace, property_key))"
    )
    con.commit()
    con.close()


SQL_BACKENDS = ["sqlite-file", "sqlite-memory", "postgres"]
#: The backends as fixture parameters (``postgres`` carries the ``postgres`` marker).
_PARAMS = [
    pytest.param(b, marks=pytest.mark.postgres) if b == "postgres" else b for b in SQL_BACKENDS
]


def make_sql_catalog(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, **props: str
) -> SqlCatalog:
    """A SQL catalog with a fresh name on ``backend``, its warehouse under ``tmp_path``."""
    if backend == "sqlite-file":
        uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    elif backend == "sqlite-memory":
        uri = "sqlite:///:memory:"
    else:
        uri = request.getfixturevalue("postgres_uri")
    name = f"test_{uuid.uuid4().hex[:12]}"
    return SqlCatalog(name, uri=uri, warehouse=(tmp_path / "warehouse").as_uri(), **props)


@pytest.fixture(params=_PARAMS)
def sql_catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlCatalog]:
    """A SQL catalog on each backend."""
    cat = make_sql_catalog(request.param, tmp_path, request)
    try:
        yield cat
    finally:
        cat.close()


OBJECT_STORE_CATALOGS = [
    pytest.param("hadoop-s3proxy", marks=pytest.mark.s3),
    pytest.param("sqlite-file-moto", marks=pytest.mark.s3),
]


@pytest.fixture(
    params=[
        *_PARAMS,
        "hadoop",
        *OBJECT_STORE_CATALOGS,
        pytest.param("rest", marks=pytest.mark.rest),
    ]
)
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    """Every kind of catalog; the file-system catalog on s3proxy and a SQL one on moto too."""
    if request.param == "hadoop":
        yield HadoopCatalog("fs", warehouse=(tmp_path / "warehouse").as_uri())
        return
    if request.param == "hadoop-s3proxy":
        server = request.getfixturevalue("s3proxy")
        yield HadoopCatalog("fs", warehouse=server.fresh_location(), **server.properties())
        return
    if request.param == "sqlite-file-moto":
        server = request.getfixturevalue("moto_s3")
        cat = make_sql_catalog("sqlite-file", tmp_path, request, **server.properties())
        cat.properties["warehouse"] = server.fresh_location()
        try:
            yield cat
        finally:
            cat.close()
        return
    if request.param == "rest":
        from icefloe.catalog.rest import RestCatalog
        from support.rest import new_warehouse

        server = request.getfixturevalue("rest_server")
        rest = RestCatalog("rest", uri=server.url, warehouse=new_warehouse())
        try:
            yield rest
        finally:
            rest.close()
        return
    cat = make_sql_catalog(request.param, tmp_path, request)
    try:
        yield cat
    finally:
        cat.close()
