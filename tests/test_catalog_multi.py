"""Transactions over several tables (``catalog.transaction()``) on every catalog: committed all
or nothing; appends that lost a race are rebuilt; the file-system catalog refuses them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog import Catalog
from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import (
    CommitConflictError,
    CommitFailedError,
    ServiceUnavailableError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.types import LongType

ROWS = pa.schema([pa.field("id", pa.int64())])


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def _ids(catalog: Catalog, name: str) -> list[int]:
    return sorted(catalog.load_table(name).scan().to_arrow()["id"].to_pylist())


def test_multi_table_transaction(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    catalog.create_table("db.a", ROWS)
    catalog.create_table("db.b", ROWS)
    tx = catalog.transaction()
    tx.table("db.a").append(_rows([1]))
    tx.table("db.b").append(_rows([2]))
    tx.table("db.b").set_properties(k="v")
    assert tx.table("db.a") is tx.table("db.a")
    with pytest.raises(ValidationError, match="catalog transaction"):
        tx.table("db.a").commit_transaction()
    if isinstance(catalog, HadoopCatalog):
        with pytest.raises(UnsupportedFeatureError, match="atomically"):
            tx.commit()
        assert catalog.load_table("db.a").current_snapshot() is None
        for name in ("db.a", "db.b"):  # the refused commit's data files are deleted
            location = catalog.load_table(name).location.removeprefix("file://")
            assert not list(Path(location).rglob("*.parquet"))
        return
    committed = tx.commit()
    assert [t.identifier for t in committed] == [("db", "a"), ("db", "b")]
    assert _ids(catalog, "db.a") == [1] and _ids(catalog, "db.b") == [2]
    assert catalog.load_table("db.b").properties["k"] == "v"
    assert committed[0].metadata_location == catalog.load_table("db.a").metadata_location
    # b's schema change lost to another writer: neither table changes
    tx = catalog.transaction()
    tx.table("db.a").append(_rows([3]))
    tx.table("db.b").update_schema().add_column("x", LongType()).commit()
    catalog.load_table("db.b").update_schema().add_column("y", LongType()).commit()
    with pytest.raises((CommitFailedError, CommitConflictError)):
        tx.commit()
    assert _ids(catalog, "db.a") == [1]
    assert len(catalog.load_table("db.a").snapshots()) == 1
    # appends that lost a race are rebuilt on the new state and committed together
    with catalog.transaction() as tx:
        tx.table("db.a").append(_rows([4]))
        tx.table("db.b").append(_rows([5]))
        catalog.load_table("db.a").append(_rows([6]))
    assert _ids(catalog, "db.a") == [1, 4, 6] and _ids(catalog, "db.b") == [2, 5]
    # a part of property changes only is rebuilt with the rest
    with catalog.transaction() as tx:
        tx.table("db.a").append(_rows([8]))
        tx.table("db.b").set_properties({"last-load": "8"})
        catalog.load_table("db.a").append(_rows([9]))
    assert _ids(catalog, "db.a") == [1, 4, 6, 8, 9]
    assert catalog.load_table("db.b").properties["last-load"] == "8"
    # an error inside the block commits nothing
    with pytest.raises(RuntimeError), catalog.transaction() as tx:
        tx.table("db.a").append(_rows([7]))
        raise RuntimeError("boom")
    assert _ids(catalog, "db.a") == [1, 4, 6, 8, 9]


def test_every_catalog_closes_and_is_a_context_manager(catalog: Catalog) -> None:
    """``close()`` (which the guide documents) exists on every catalog, and ``with`` closes."""
    with catalog as same:
        assert same is catalog
        same.create_namespace("ctx")
    catalog.close()  # twice is harmless


def test_a_closed_catalog_connects_again_or_says_it_is_gone(tmp_path: Path) -> None:
    """A SQL catalog on a file reconnects after ``close()``; one in memory lost its database
    with the close and says so, instead of reporting missing tables."""
    on_disk = SqlCatalog("f", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    on_disk.create_namespace("db")
    on_disk.close()
    assert on_disk.list_namespaces() == [("db",)]
    memory = SqlCatalog("m", uri="sqlite:///:memory:", warehouse=str(tmp_path / "wh2"))
    memory.create_namespace("db")
    memory.close()
    with pytest.raises(ServiceUnavailableError, match="closed, and its in-memory database"):
        memory.list_namespaces()


def test_multi_table_commits_delete_old_metadata_files(catalog: Catalog) -> None:
    """With ``write.metadata.delete-after-commit.enabled``, the metadata files that leave a
    table's log are deleted after a multi-table commit, as after a single-table one."""
    if isinstance(catalog, HadoopCatalog):
        pytest.skip("the file-system catalog cannot commit several tables")
    props = {
        "write.metadata.delete-after-commit.enabled": "true",
        "write.metadata.previous-versions-max": "2",
    }
    catalog.create_namespace("db")
    for name in ("db.a", "db.b"):
        catalog.create_table(name, ROWS, properties=props)
    for i in range(5):
        tx = catalog.transaction()
        tx.table("db.a").append(_rows([i]))
        tx.table("db.b").append(_rows([i]))
        tx.commit()
    for name in ("db.a", "db.b"):
        t = catalog.load_table(name)
        assert len(t.metadata.metadata_log) == 2
        kept = {e.metadata_file for e in t.metadata.metadata_log} | {t.metadata_location}
        listed = t.io.list_prefix(t.location.rstrip("/") + "/metadata")
        stored = {f.location for f in listed if f.location.endswith(".metadata.json")}
        assert len(stored) == 3 and {k.rsplit("/", 1)[1] for k in kept} == {
            s.rsplit("/", 1)[1] for s in stored
        }
        assert _ids(catalog, name) == [0, 1, 2, 3, 4]


def test_a_discarded_part_stops_the_catalog_transaction(tmp_path: Path) -> None:
    """A part's discard deleted its files, and the catalog transaction still committed its
    updates: the table's current snapshot named a deleted manifest list. Now nothing commits,
    and parts of a finished transaction refuse changes (one with nothing staged took an
    append, whose rows were silently lost)."""
    catalog = SqlCatalog("m", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    for name in ("db.a", "db.b"):
        catalog.create_table(name, ROWS)
    discarded = pytest.raises(ValidationError, match=r"'db\.a' were discarded")
    with discarded, catalog.transaction() as tx:
        part = tx.table("db.a")
        part.append(_rows([1]))
        tx.table("db.b").append(_rows([2]))
        part.discard()
    assert _ids(catalog, "db.a") == [] and _ids(catalog, "db.b") == []
    assert not list((tmp_path / "wh").rglob("*.parquet"))
    # a raising part's block discards it the same way
    with pytest.raises(ValidationError, match="discarded"), catalog.transaction() as tx:
        with pytest.raises(RuntimeError), tx.table("db.a") as part:
            part.append(_rows([3]))
            raise RuntimeError("boom")
        tx.table("db.b").append(_rows([4]))
    assert _ids(catalog, "db.a") == [] and _ids(catalog, "db.b") == []
    # after a commit, every part is closed, those with nothing staged too
    tx = catalog.transaction()
    idle = tx.table("db.b")
    tx.table("db.a").append(_rows([5]))
    tx.commit()
    with pytest.raises(ValidationError, match="already committed or discarded"):
        idle.append(_rows([6]))
    # after a raising block too
    with pytest.raises(RuntimeError), catalog.transaction() as tx:
        left = tx.table("db.a")
        left.append(_rows([7]))
        raise RuntimeError("boom")
    with pytest.raises(ValidationError, match="already committed or discarded"):
        left.append(_rows([8]))
    assert _ids(catalog, "db.a") == [5] and _ids(catalog, "db.b") == []
