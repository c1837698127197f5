"""Dropping, purging and orphan removal never touch another table's files.

With the default layout ``<warehouse>/<namespace...>/<name>`` the table ``db.a`` contains the
directories of every table in namespace ``db.a`` (``db.a.b``), and tables named ``data`` or
``metadata`` in that namespace sit exactly on ``db.a``'s data and metadata directories. Purge
deletes only the files ``db.a``'s metadata reaches; orphan removal lists only ``db.a``'s data
and metadata directories and skips directories holding another table's metadata.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import Catalog
from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.table import Table
from icefloe.table.orphan_files import reachable_files

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def _ids(t: Table) -> list[int]:
    return sorted(t.scan().to_arrow().column("id").to_pylist())


def _local(location: str) -> Path:
    return Path(location.removeprefix("file://"))


def _files(t: Table) -> set[str]:
    """The files the table's metadata reaches that exist."""
    found = reachable_files(t.io, t.metadata, t.metadata_location).to_pylist()
    return {p for p in set(found) if t.io.exists(p)}


def _nested(catalog: Catalog) -> tuple[Table, dict[str, Table]]:
    """``db.a`` and the tables ``db.a.b``, ``db.a.data`` and ``db.a.metadata`` inside it."""
    catalog.create_namespace("db")
    catalog.create_namespace("db.a")
    parent = catalog.create_table("db.a", SCHEMA)
    parent.append(pa.table({"id": pa.array([1], pa.int64())}))
    parent.delete("id = 1")  # a snapshot whose manifest marks the file deleted
    parent.append(pa.table({"id": pa.array([2], pa.int64())}))
    children = {}
    for i, name in enumerate(("b", "data", "metadata")):
        child = catalog.create_table(f"db.a.{name}", SCHEMA)
        child.append(pa.table({"id": pa.array([10 * i, 10 * i + 1], pa.int64())}))
        children[name] = catalog.load_table(f"db.a.{name}")
    return catalog.load_table("db.a"), children


def _assert_children_intact(catalog: Catalog, children: dict[str, Table]) -> None:
    for i, (name, before) in enumerate(children.items()):
        t = catalog.load_table(f"db.a.{name}")
        assert _ids(t) == [10 * i, 10 * i + 1]
        assert _files(t) == _files(before)
        t.append(pa.table({"id": pa.array([99], pa.int64())}))


@pytest.mark.parametrize("purge", [True, False], ids=["purge", "drop"])
def test_drop_and_purge_never_touch_nested_tables(catalog: Catalog, purge: bool) -> None:
    parent, children = _nested(catalog)
    owned = _files(parent)
    assert len(owned) > 5
    catalog.drop_table("db.a", purge=purge)
    assert not catalog.table_exists("db.a")
    _assert_children_intact(catalog, children)
    left = {p for p in owned if parent.io.exists(p)}
    if purge:
        assert left == set()
    elif isinstance(catalog, HadoopCatalog):
        # a file-system table is its directory, but db.a.data and db.a.metadata sit on its
        # data and metadata directories: those are theirs, only the version files go
        assert not any(p.rsplit("/", 1)[-1].startswith("v") for p in left)
    else:
        assert left == owned  # a drop without purge keeps the files
    assert catalog.list_tables("db.a") == [("db", "a", n) for n in ("b", "data", "metadata")]


def test_file_system_drop_removes_the_directory_but_nested_tables(tmp_path: Path) -> None:
    cat = HadoopCatalog("fs", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    cat.create_namespace("db.a")
    parent = cat.create_table("db.a", SCHEMA)
    parent.append(pa.table({"id": pa.array([1], pa.int64())}))
    child = cat.create_table("db.a.b", SCHEMA)
    child.append(pa.table({"id": pa.array([2], pa.int64())}))
    cat.drop_table("db.a")
    root = tmp_path / "wh" / "db" / "a"
    left = {p.relative_to(root).parts[0] for p in root.rglob("*") if p.is_file()}
    assert left == {"b", ".icefloe-namespace.json"}  # the nested table and the namespace
    assert _ids(cat.load_table("db.a.b")) == [2]
    assert cat.list_namespaces("db") == [("db", "a")]


def test_purge_of_a_table_located_at_the_warehouse_root(tmp_path: Path) -> None:
    """Purge deletes what the metadata reaches, so even a table whose location is the whole
    warehouse leaves every other table alone."""
    wh = tmp_path / "wh"
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=wh.as_uri())
    cat.create_namespace("db")
    victim = cat.create_table("db.victim", SCHEMA)
    victim.append(pa.table({"id": pa.array([5], pa.int64())}))
    wide = cat.create_table("db.wide", SCHEMA, location=wh.as_uri())
    wide.append(pa.table({"id": pa.array([6], pa.int64())}))
    before = _files(victim)
    cat.drop_table("db.wide", purge=True)
    assert _ids(cat.load_table("db.victim")) == [5] and _files(victim) == before
    cat.close()


def test_purge_removes_only_the_directories_its_files_were_in(tmp_path: Path) -> None:
    """Purge removes the table's directories it emptied, never another empty directory under
    the table's location (a table created in a directory that held them removed them all);
    a table at the root of a file system is refused at create."""
    from icefloe.exceptions import ValidationError

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    home = tmp_path / "home"
    keep = [home / "projects" / "empty", home / "cache", home / "data" / "theirs"]
    for d in keep:
        d.mkdir(parents=True)
    t = cat.create_table("db.t", SCHEMA, location=home.as_uri())
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    owned = [_local(p) for p in t.inspect.files().column("file_path").to_pylist()]
    cat.drop_table("db.t", purge=True)
    assert all(d.is_dir() for d in keep)
    assert not any(p.exists() for p in owned) and not (home / "metadata").exists()
    assert sorted(p.name for p in home.iterdir()) == ["cache", "data", "projects"]
    for root in ("/", "file:///", "file:/"):
        with pytest.raises(ValidationError, match="root of a file system"):
            cat.create_table("db.r", SCHEMA, location=root)
    cat.close()


def test_purge_keeps_data_files_when_gc_is_disabled(tmp_path: Path) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, properties={"gc.enabled": "false"})
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    data = [_local(p) for p in t.inspect.files().column("file_path").to_pylist()]
    metadata = _local(t.metadata_location)
    cat.drop_table("db.t", purge=True)
    assert all(p.exists() for p in data) and not metadata.exists()
    cat.close()


def _age_everything(root: Path) -> None:
    import os
    import time

    old = time.time() - 10 * 86400
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, (old, old))


def test_orphan_removal_never_lists_another_tables_files(catalog: Catalog, tmp_path: Path):
    parent, children = _nested(catalog)
    if not parent.location.startswith(("file:", "/")):
        pytest.skip("ages the files through the local file system")
    root = _local(parent.location)
    stray = [root / "data" / "stray.parquet", root / "metadata" / "stray-m0.avro"]
    for p in stray:
        p.write_bytes(b"x")
    _age_everything(tmp_path)
    found = parent.remove_orphan_files(older_than=timedelta(days=1), dry_run=True)
    theirs = {_local(p) for p in set().union(*(_files(c) for c in children.values()))}
    assert not {_local(p) for p in found} & theirs
    # the strays next to db.a.data's and db.a.metadata's own metadata are not told apart from
    # theirs: kept (never deleting another table's file comes first)
    # an explicit location covering everything: still none of theirs (nor a namespace file)
    wide = parent.remove_orphan_files(
        older_than=timedelta(days=1), dry_run=True, location=parent.location
    )
    assert not {_local(p) for p in wide} & theirs
    assert not [p for p in wide if p.endswith(".icefloe-namespace.json")]
    removed = parent.remove_orphan_files(older_than=timedelta(days=1))
    assert set(removed) == set(found)
    _assert_children_intact(catalog, children)
    assert _ids(catalog.load_table("db.a")) == [2]
    for name in children:
        catalog.load_table(f"db.a.{name}").remove_orphan_files(older_than=timedelta(days=1))
    assert _ids(catalog.load_table("db.a")) == [2]
    assert _files(catalog.load_table("db.a")) == _files(parent)


def test_orphan_removal_still_finds_orphans(tmp_path: Path) -> None:
    wh = (tmp_path / "wh").as_uri()
    cat: Any = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=wh)
    cat.create_namespace("db")
    cat.create_namespace("db.t")
    t = cat.create_table("db.t", SCHEMA)
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    nested = cat.create_table("db.t.n", SCHEMA)
    nested.append(pa.table({"id": pa.array([2], pa.int64())}))
    root = _local(t.location)
    stray = {root / "data" / "x.parquet", root / "metadata" / "y-m0.avro"}
    for p in stray:
        p.write_bytes(b"x")
    _age_everything(tmp_path)
    removed = {_local(p) for p in t.remove_orphan_files(older_than=timedelta(days=1))}
    assert removed == stray
    assert _ids(cat.load_table("db.t.n")) == [2]
    cat.close()


def test_file_system_drop_and_purge_on_every_store(warehouse: Any) -> None:
    """On S3 too: no file of the nested table goes, and no empty "directory" of the dropped
    table is left to look like a namespace."""
    cat = HadoopCatalog("fs", warehouse=warehouse.location, **warehouse.properties)
    cat.create_namespace("db")
    cat.create_namespace("db.a")
    for name in ("db.a", "db.a.b", "db.t"):
        cat.create_table(name, SCHEMA).append(pa.table({"id": pa.array([1], pa.int64())}))
    child = cat.load_table("db.a.b")
    before = set(reachable_files(child.io, child.metadata, child.metadata_location).to_pylist())
    cat.drop_table("db.a", purge=True)
    cat.drop_table("db.t")
    assert cat.list_namespaces("db") == [("db", "a")]
    assert cat.list_tables("db") == [] and cat.list_tables("db.a") == [("db", "a", "b")]
    t = cat.load_table("db.a.b")
    assert _ids(t) == [1]
    assert all(t.io.exists(p) for p in before if not p.endswith("version-hint.text"))


def test_purge_and_expiry_delete_hadoop_checksum_files(tmp_path: Path) -> None:
    """Hadoop's local file system (Iceberg Java, Spark) writes ``.<name>.crc`` beside every
    file; deleting a file deletes its checksum too, so a purged Java-written table leaves no
    directory behind."""
    wh = tmp_path / "wh"
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=wh.as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    for i in range(2):
        t.append(pa.table({"id": pa.array([i], pa.int64())}))
    root = _local(t.location)
    for f in [p for p in root.rglob("*") if p.is_file()]:
        (f.parent / f".{f.name}.crc").write_bytes(b"crc")
    first = t.history()[0].snapshot_id
    t.overwrite(pa.table({"id": pa.array([7], pa.int64())}))
    replaced = set(t.inspect.files(snapshot_id=first).column("file_path").to_pylist())
    assert replaced and t.current_snapshot() is not None
    t.expire_snapshots(older_than_ms=t.current_snapshot().timestamp_ms + 1, retain_last=1)
    for p in map(_local, replaced):
        assert not p.exists() and not (p.parent / f".{p.name}.crc").exists()
    cat.drop_table("db.t", purge=True)
    assert not root.exists()
    cat.close()
