"""The journal mode of a SQL catalog's SQLite file: the write-ahead log by default (one sync
per commit), shared with PyIceberg as before; the rollback journal on request."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import CatalogReadOnlyError, ValidationError


def _mode(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        return str(con.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        con.close()


def _catalog(tmp_path: Path, **props: str) -> SqlCatalog:
    return SqlCatalog(
        "c", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri(), **props
    )


def test_a_new_database_file_uses_the_write_ahead_log_and_pyiceberg_shares_it(
    tmp_path: Path,
) -> None:
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    cat = _catalog(tmp_path)
    cat.create_namespace("n")
    table = cat.create_table("n.t", pa.schema([("a", pa.int64())]))
    table.append(pa.table({"a": [1, 2]}))
    assert _mode(tmp_path / "c.db") == "wal"

    # PyIceberg opens the same file while icefloe's connections are open, and both see the
    # other's commits
    theirs = PySqlCatalog(
        "c", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    py_table = theirs.load_table("n.t")
    assert sorted(py_table.scan().to_arrow().column("a").to_pylist()) == [1, 2]
    py_table.append(pa.table({"a": [3]}))
    assert sorted(table.refresh().scan().to_arrow().column("a").to_pylist()) == [1, 2, 3]
    table.append(pa.table({"a": [4]}))
    assert theirs.load_table("n.t").scan().to_arrow().num_rows == 4


def test_the_rollback_journal_on_request(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    cat.create_namespace("n")
    cat.engine.dispose()
    assert _mode(tmp_path / "c.db") == "wal"
    kept = _catalog(tmp_path, **{"sqlite.journal-mode": "DELETE"})
    table = kept.create_table("n.t", pa.schema([("a", pa.int64())]))
    table.append(pa.table({"a": [1]}))
    assert _mode(tmp_path / "c.db") == "delete"
    assert table.refresh().scan().to_arrow().num_rows == 1


def test_an_unknown_journal_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"sqlite\.journal-mode must be one of wal"):
        _catalog(tmp_path, **{"sqlite.journal-mode": "off"})
    assert not (tmp_path / "c.db").exists()


def test_a_read_only_database_names_the_journal_mode(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    cat.create_namespace("n")
    cat.engine.dispose()
    read_only = SqlCatalog(
        "c",
        uri=f"sqlite:///file:{tmp_path / 'c.db'}?mode=ro&uri=true",
        warehouse=(tmp_path / "wh").as_uri(),
    )
    assert read_only.list_namespaces() == [("n",)]
    with pytest.raises(CatalogReadOnlyError, match=r"readonly database.*journal-mode=delete"):
        read_only.create_namespace("m")


def _append_to_both(catalog: SqlCatalog) -> None:
    with catalog.transaction() as tx:
        tx.table("n.t").append(pa.table({"a": [2]}))
        tx.table("n.v").append(pa.table({"a": [2]}))


def test_a_commit_to_a_read_only_database_is_refused_cleanly(tmp_path: Path) -> None:
    """Not a retryable CommitFailedError (the command line called it a conflict): the table
    is unchanged, no file of the attempt is left, and no WAL hint for a file not in WAL."""
    cat = _catalog(tmp_path, **{"sqlite.journal-mode": "delete"})
    cat.create_namespace("n")
    t = cat.create_table("n.t", pa.schema([("a", pa.int64())]))
    t.append(pa.table({"a": [1]}))
    cat.create_table("n.v", pa.schema([("a", pa.int64())]))
    cat.engine.dispose()
    files = sorted(p for p in (tmp_path / "wh").rglob("*") if p.is_file())
    read_only = SqlCatalog(
        "c",
        uri=f"sqlite:///file:{tmp_path / 'c.db'}?mode=ro&uri=true",
        warehouse=(tmp_path / "wh").as_uri(),
        **{"sqlite.journal-mode": "delete"},
    )
    table = read_only.load_table("n.t")
    for change in (
        lambda: table.append(pa.table({"a": [2]})),
        lambda: table.set_properties({"k": "v"}),
        lambda: read_only.create_table("n.u", pa.schema([("a", pa.int64())])),
        lambda: _append_to_both(read_only),
    ):
        with pytest.raises(CatalogReadOnlyError, match="is read-only") as refused:
            change()
        assert "WAL" not in str(refused.value)
    assert sorted(p for p in (tmp_path / "wh").rglob("*") if p.is_file()) == files
    assert read_only.load_table("n.t").scan().to_arrow().column("a").to_pylist() == [1]
