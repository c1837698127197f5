"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from peers import duckdb_connect

# PostgreSQL server and per-backend catalog fixtures (tests/_postgres.py, tests/_catalogs.py),
# the Spark session and Iceberg Java catalogs (tests/_spark.py).
pytest_plugins = ["_postgres", "_catalogs", "_spark"]


@pytest.fixture
def duckdb_con() -> Iterator[Any]:
    """DuckDB with its iceberg extension loaded offline (see tests/peers.py)."""
    con = duckdb_connect()
    try:
        yield con
    finally:
        con.close()
