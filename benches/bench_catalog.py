"""Catalog benchmarks: load a table and commit property changes on a SQLite catalog.

Both icefloe and PyIceberg 0.12 use their SQL catalog on a SQLite file in a temporary
directory; a commit writes a new metadata file and swaps the pointer.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness import Harness


def run(h: Harness) -> None:
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    from icefloe.catalog.sql import SqlCatalog

    tmp = Path(tempfile.mkdtemp(prefix="icefloe-bench-catalog-"))
    uri = f"sqlite:///{tmp / 'catalog.db'}"
    warehouse = (tmp / "warehouse").as_uri()
    ours = SqlCatalog("bench", uri=uri, warehouse=warehouse)
    theirs = PySqlCatalog("bench", uri=uri, warehouse=warehouse)
    ours.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
    ours.create_table("db.ours", schema)
    theirs.create_table("db.theirs", schema)
    commits = h.size(50, 5)
    counter = iter(range(10**9))

    def our_commits() -> None:
        table = ours.load_table("db.ours")
        for _ in range(commits):
            table.set_properties(k=str(next(counter)))

    def their_commits() -> None:
        table = theirs.load_table("db.theirs")
        for _ in range(commits):
            table = table.transaction().set_properties(k=str(next(counter))).commit_transaction()

    h.compare(
        "commit-properties",
        commits,
        "commit",
        ours=our_commits,
        peers={"pyiceberg": their_commits},
        target=">= PyIceberg",
    )
    loads = h.size(200, 20)

    def our_loads() -> None:
        for _ in range(loads):
            ours.load_table("db.ours")

    def their_loads() -> None:
        for _ in range(loads):
            theirs.load_table("db.theirs")

    h.compare(
        "load-table",
        loads,
        "load",
        ours=our_loads,
        peers={"pyiceberg": their_loads},
        target=">= PyIceberg",
    )
