"""The peer oracles are usable offline: DuckDB's iceberg extension reads a PyIceberg table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytestmark = pytest.mark.interop


def test_duckdb_reads_pyiceberg_table(tmp_path: Path, duckdb_con: Any) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("peers", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("ns")
    table = catalog.create_table(
        "ns.t",
        schema=pa.schema([("id", pa.int64()), ("s", pa.string())]),
        properties={"format-version": "2"},
    )
    table.append(pa.table({"id": [1, 2, 3], "s": ["a", "b", None]}))
    got = duckdb_con.execute(
        f"select count(*), sum(id), count(s) from iceberg_scan('{table.metadata_location}')"
    ).fetchall()
    assert got == [(3, 6, 2)]
