"""Shared set-up for the evolution, snapshot, expire and inspect tests: an icefloe SQL catalog on
a SQLite file and a PyIceberg catalog on the same database (PyIceberg is the oracle and the
writer of data files until icefloe writes its own)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from icefloe.catalog.sql import SqlCatalog

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")


@dataclass
class Catalogs:
    """icefloe's and PyIceberg's view of one SQLite catalog."""

    ours: SqlCatalog
    theirs: Any
    uri: str
    warehouse: str


def shared_catalogs(tmp_path: Path, namespace: str = "db") -> Catalogs:
    """Both catalogs on ``tmp_path/shared.db`` with ``namespace`` created."""
    uri = f"sqlite:///{tmp_path / 'shared.db'}"
    warehouse = (tmp_path / "warehouse").as_uri()
    ours = SqlCatalog("shared", uri=uri, warehouse=warehouse)
    theirs = pyiceberg_sql.SqlCatalog("shared", uri=uri, warehouse=warehouse)
    ours.create_namespace(namespace)
    return Catalogs(ours, theirs, uri, warehouse)


def local_path(location: str) -> Path:
    """A local filesystem path from a ``file://`` URI or a plain path."""
    return Path(location[len("file://") :] if location.startswith("file://") else location)


def append_rows(c: Catalogs, name: str, ids: list[int], branch: str = "main") -> int:
    """Appends rows ``ids`` to ``db.<name>`` through PyIceberg; returns the new snapshot id."""
    import pyarrow as pa

    table = c.theirs.load_table(f"db.{name}")
    arrow = pa.table({"id": pa.array(ids, pa.int64()), "data": [f"r{i}" for i in ids]})
    table.append(arrow, branch=branch)
    table = c.theirs.load_table(f"db.{name}")
    ref = table.metadata.refs[branch]
    return int(ref.snapshot_id)


SIMPLE_SCHEMA = {
    "type": "struct",
    "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False},
        {"id": 2, "name": "data", "type": "string", "required": False},
    ],
}
