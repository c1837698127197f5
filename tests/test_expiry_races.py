"""Another writer's ``expire_snapshots`` landing while a change is being made: the change
never commits on top of what the expiry deleted. Writer B runs at one exact moment inside
writer A (a second catalog object, as another process would be)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icefloe.table.row_delta as row_delta
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import CommitConflictError
from icefloe.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def _ids(values: range | list[int]) -> pa.Table:
    return pa.table({"id": pa.array(list(values), pa.int64())}, schema=SCHEMA)


def _catalog(tmp_path: Path) -> Callable[[], SqlCatalog]:
    return lambda: SqlCatalog(
        "c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri()
    )


def _every_snapshot_reads(t: Table) -> None:
    for s in t.snapshots():
        t.scan(snapshot_id=s.snapshot_id).to_arrow()


def _once(fn: Callable[[], None]) -> Callable[[], None]:
    done: list[bool] = []

    def run() -> None:
        if not done:
            done.append(True)
            fn()

    return run


def _before_row_delta(monkeypatch: pytest.MonkeyPatch, writer_b: Callable[[], None]) -> None:
    """Run ``writer_b`` once, when A has read the table and starts its commit."""
    real = row_delta.commit_row_delta
    once = _once(writer_b)

    def hooked(*args: Any, **kwargs: Any) -> Any:
        once()
        return real(*args, **kwargs)

    import icefloe.table.row_level as row_level  # it holds its own reference

    for module in (row_delta, row_level):
        monkeypatch.setattr(module, "commit_row_delta", hooked)


def _before_catalog_commit(
    monkeypatch: pytest.MonkeyPatch, cat: SqlCatalog, writer_b: Callable[[], None]
) -> None:
    """Run ``writer_b`` once, just before A's first catalog commit."""
    owner = next(k for k in type(cat).__mro__ if "commit_table" in k.__dict__)
    real = owner.__dict__["commit_table"]
    once = _once(writer_b)

    def hooked(self: Any, table: Any, requirements: Any, updates: Any) -> Any:
        once()
        return real(self, table, requirements, updates)

    monkeypatch.setattr(owner, "commit_table", hooked)


def _delete_and_expire(mk: Callable[[], SqlCatalog]) -> Callable[[], None]:
    def writer_b() -> None:
        b = mk().load_table("db.t")
        b.delete("id = 5")
        b.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1, retain_last=1)

    return writer_b


@pytest.mark.parametrize(
    "version,change",
    [(2, "delete"), (3, "delete"), (2, "compaction"), (3, "compaction")],
)
def test_a_row_level_change_conflicts_with_a_delete_and_an_expiry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int, change: str
) -> None:
    """The snapshot A read is expired before A builds its commit: its checks of what was
    committed meanwhile still start there (and fail, the history being gone) instead of at
    the newest state, where they saw nothing and A committed a second deletion vector for
    one file (the table unreadable) or a compaction that brought a deleted row back."""
    mk = _catalog(tmp_path)
    cat = mk()
    cat.create_namespace("db")
    props = {"format-version": str(version), "write.delete.mode": "merge-on-read"}
    props |= {"write.update.mode": "merge-on-read"}
    t = cat.create_table("db.t", SCHEMA, properties=props)
    t.append(_ids(range(10)))
    t.append(_ids(range(10, 20)))
    _before_row_delta(monkeypatch, _delete_and_expire(mk))
    with pytest.raises(CommitConflictError, match="no longer in the table"):
        if change == "delete":
            t.delete("id = 3")
        else:
            t.rewrite_data_files(min_input_files=2)
    t = mk().load_table("db.t")
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [i for i in range(20) if i != 5]
    _every_snapshot_reads(t)


def test_publishing_a_staged_snapshot_another_writer_expired_conflicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pick is a new snapshot naming the staged snapshot's data files; an expiry of the
    staged snapshot just before the commit deleted them: the commit is refused, main stays
    readable."""
    mk = _catalog(tmp_path)
    cat = mk()
    cat.create_namespace("db")
    props = {"format-version": "2", "write.wap.enabled": "true"}
    t = cat.create_table("db.t", SCHEMA, properties=props)
    t.append(_ids([1, 2]))
    t.append(_ids([100]), snapshot_properties={"wap.id": "w1"})
    staged = next(s for s in t.snapshots() if s.summary.get("wap.id") == "w1")
    t.append(_ids([3]))  # main moved on: the pick is a new snapshot

    def writer_b() -> None:
        mk().load_table("db.t").expire_snapshots(snapshot_ids=[staged.snapshot_id])

    _before_catalog_commit(monkeypatch, cat, writer_b)
    with pytest.raises(CommitConflictError, match="no longer has it"):
        t.manage_snapshots().publish_changes("w1").commit()
    t = mk().load_table("db.t")
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    _every_snapshot_reads(t)


def test_a_staged_write_whose_parent_was_rolled_back_and_expired_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A staged append planned on main's head P; another writer rolls main back and expires
    P before the commit: the staged snapshot is rebuilt on the new head instead of naming
    P's deleted manifests."""
    mk = _catalog(tmp_path)
    cat = mk()
    cat.create_namespace("db")
    props = {"format-version": "2", "write.wap.enabled": "true"}
    t = cat.create_table("db.t", SCHEMA, properties=props)
    t.append(_ids([1]))
    t.append(_ids([2]))

    def writer_b() -> None:
        b = mk().load_table("db.t")
        head = b.current_snapshot()
        assert head is not None and head.parent_snapshot_id is not None
        b.manage_snapshots().rollback_to(head.parent_snapshot_id).commit()
        b.expire_snapshots(snapshot_ids=[head.snapshot_id])

    _before_catalog_commit(monkeypatch, cat, writer_b)
    t.append(_ids([9]), snapshot_properties={"wap.id": "x"})
    t = mk().load_table("db.t")
    staged = next(s for s in t.snapshots() if s.summary.get("wap.id") == "x")
    main = t.current_snapshot()
    assert main is not None and staged.parent_snapshot_id == main.snapshot_id
    assert sorted(t.scan(snapshot_id=staged.snapshot_id).to_arrow().column("id").to_pylist()) == [
        1,
        9,
    ]
    _every_snapshot_reads(t)
    assert t.remove_orphan_files(older_than=int(time.time() * 1000) + 1000, dry_run=True) == []


@pytest.mark.parametrize("overlap", [True, False])
def test_two_expiries_at_once_delete_every_file_they_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overlap: bool
) -> None:
    """B plans to expire the two oldest snapshots; A expires the oldest (and deletes its files)
    just before B's catalog commit, which then applies on A's metadata. B still deletes every
    file only its expired snapshots reached: before, reading the manifest list A had deleted
    stopped B's clean-up and left the second snapshot's files behind for orphan removal."""
    mk = _catalog(tmp_path)
    cat = mk()
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    for i in range(3):
        t.overwrite(_ids([i]))
    first, second, _ = (s.snapshot_id for s in t.snapshots())

    def writer_a() -> None:
        mk().load_table("db.t").expire_snapshots(snapshot_ids=[first])

    b = mk().load_table("db.t")
    _before_catalog_commit(monkeypatch, cat, writer_a)
    result = b.expire_snapshots(snapshot_ids=[first, second] if overlap else [second])
    assert result.files_deleted and not result.files_not_deleted

    t = mk().load_table("db.t")
    assert len(t.snapshots()) == 1
    reached = {p.rsplit("/", 1)[1] for p in t.inspect.all_files().column("file_path").to_pylist()}
    reached |= {m.rsplit("/", 1)[1] for m in _manifest_files(t)}
    on_disk = {
        p.name
        for p in (tmp_path / "wh").rglob("*")
        if p.is_file() and not p.name.endswith(".metadata.json")
    }
    assert on_disk == reached
    assert t.scan().to_arrow().column("id").to_pylist() == [2]


def _manifest_files(t: Table) -> list[str]:
    """The manifest lists and manifests of ``t``'s snapshots."""
    snap = t.current_snapshot()
    assert snap is not None and snap.manifest_list
    return [snap.manifest_list, *t.inspect.manifests().column("path").to_pylist()]


def test_a_live_snapshot_missing_a_manifest_is_reported_not_called_clean(tmp_path: Path) -> None:
    """A manifest of the snapshot left is gone (a damaged table): the expiry stands, deletes
    nothing and says why in ``files_error``; it used to report a clean deletion."""
    import os

    cat = _catalog(tmp_path)()
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    t.overwrite(_ids([1]))
    first = t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    t.overwrite(_ids([2]))
    live_manifest = t.inspect.manifests().column("path").to_pylist()[0]
    os.remove(live_manifest.removeprefix("file://"))
    before = sorted(p for p in (tmp_path / "wh").rglob("*") if p.is_file())
    result = t.expire_snapshots(snapshot_ids=[first])
    assert result.snapshot_ids == (first,)
    assert not result.files_deleted and "not found" in (result.files_error or "")
    after = sorted(p for p in (tmp_path / "wh").rglob("*") if p.is_file())
    assert [p for p in before if p not in after] == []
