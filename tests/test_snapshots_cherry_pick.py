"""``manage_snapshots().cherry_pick()``: fast-forward when the picked snapshot's parent is
``main``, otherwise a new append snapshot with the same data files; PyIceberg 0.12 reads the
result. Data written by icefloe's own ``table.append``."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.table import Table
from support.evolution import SIMPLE_SCHEMA, Catalogs, shared_catalogs


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "data": [f"r{i}" for i in ids]})


def _setup(tmp_path: Path, version: int = 2) -> tuple[Catalogs, Table]:
    c = shared_catalogs(tmp_path)
    t = c.ours.create_table(
        "db.t", Schema.from_json(SIMPLE_SCHEMA), properties={"format-version": str(version)}
    )
    return c, t


def _their_ids(c: Catalogs, snapshot_id: int | None = None) -> list[int]:
    t = c.theirs.load_table("db.t")
    return sorted(t.scan(snapshot_id=snapshot_id).to_arrow().column("id").to_pylist())


def _head(t: Table) -> int:
    s = t.current_snapshot()
    assert s is not None
    return s.snapshot_id


def test_fast_forward_pick(tmp_path: Path) -> None:
    c, t = _setup(tmp_path)
    t.append(_rows([1]))
    s1 = _head(t)
    with t.manage_snapshots() as ms:
        ms.create_branch("stage", s1)
    t.append(_rows([2]), branch="stage")
    staged = t.refs()["stage"].snapshot_id
    with t.manage_snapshots() as ms:
        ms.cherry_pick(staged)
    assert _head(t) == staged and len(t.snapshots()) == 2
    assert _their_ids(c) == [1, 2]


@pytest.mark.parametrize("version", [2, 3])
def test_pick_onto_a_moved_main(tmp_path: Path, version: int) -> None:
    c, t = _setup(tmp_path, version)
    t.append(_rows([1]))
    s1 = _head(t)
    with t.manage_snapshots() as ms:
        ms.create_branch("stage", s1)
    t.append(_rows([2, 3]), branch="stage")
    staged = t.snapshot_by_id(t.refs()["stage"].snapshot_id)
    assert staged is not None
    t.append(_rows([4]))
    s3 = _head(t)
    with t.manage_snapshots() as ms:
        ms.cherry_pick(staged.snapshot_id)
    picked = t.current_snapshot()
    assert picked is not None and picked.parent_snapshot_id == s3
    assert picked.snapshot_id != staged.snapshot_id
    assert picked.summary is not None and picked.operation == "append"
    assert picked.summary.get("source-snapshot-id") == str(staged.snapshot_id)
    assert picked.summary.get("added-records") == "2"
    assert picked.summary.get("total-records") == "4"
    assert _their_ids(c) == [1, 2, 3, 4]
    staged_files = set(t.inspect.files(staged.snapshot_id).column("file_path").to_pylist())
    staged_files -= set(t.inspect.files(s1).column("file_path").to_pylist())
    assert len(staged_files) == 1
    now_files = t.inspect.files()
    assert staged_files <= set(now_files.column("file_path").to_pylist())
    # the picked files belong to the new snapshot, with its sequence number
    e = t.inspect.entries()
    mine = [r for r in e.to_pylist() if r["data_file"]["file_path"] in staged_files]
    assert {(r["status"], r["snapshot_id"], r["sequence_number"]) for r in mine} == {
        (1, picked.snapshot_id, picked.sequence_number)
    }
    if version == 3:
        assert picked.first_row_id is not None and picked.added_rows == 2
        assert t.metadata.next_row_id == 6  # 1 + 2 (the staged append) + 1 + 2 (the pick)
    # picking it again is refused, on main or through the branch tip
    with pytest.raises(ValidationError, match="already in main's history"):
        t.manage_snapshots().cherry_pick(staged.snapshot_id)
    with pytest.raises(ValidationError, match="already in main's history"):
        t.manage_snapshots().cherry_pick(s3)


def _staged_delete(tmp_path: Path) -> tuple[Catalogs, Table, int]:
    """A table whose main was rolled back from a delete (by PyIceberg) to the append before it:
    the delete's parent is main's head again, as a staged write-audit-publish snapshot's is."""
    c, t = _setup(tmp_path)
    t.append(_rows([1, 2]))
    c.theirs.load_table("db.t").delete("id == 1")
    t.refresh()
    deleting = _head(t)
    with t.manage_snapshots() as ms:
        ms.rollback_to(t.snapshots()[0].snapshot_id)
    return c, t, deleting


def test_only_appends_can_be_picked(tmp_path: Path) -> None:
    _, t, deleting = _staged_delete(tmp_path)
    t.append(_rows([3]))  # main moved: the delete is no longer a fast-forward
    with pytest.raises(ValidationError, match="only append snapshots"):
        t.manage_snapshots().cherry_pick(deleting)
    with pytest.raises(ValidationError, match="cannot find snapshot 7"):
        t.manage_snapshots().cherry_pick(7)
    with pytest.raises(ValidationError, match="is an integer"):
        t.manage_snapshots().cherry_pick(str(deleting))  # type: ignore[arg-type]


def test_any_operation_is_picked_by_fast_forward(tmp_path: Path) -> None:
    # a staged delete (Spark's DELETE under spark.wap.id) whose parent is main's head is
    # published by moving main, as Java's publish does
    c, t, deleting = _staged_delete(tmp_path)
    with t.manage_snapshots() as ms:
        ms.cherry_pick(deleting)
    assert _head(t) == deleting
    assert _their_ids(c) == [2]


def test_a_wap_id_is_published_once(tmp_path: Path) -> None:
    # a retried write-audit-publish job staged the same wap.id twice: the second is refused
    c, t = _setup(tmp_path)
    t.append(_rows([1]))
    with t.manage_snapshots() as ms:
        ms.create_branch("w1a").create_branch("w1b")
    t.append(_rows([2]), branch="w1a", snapshot_properties={"wap.id": "w1"})
    t.append(_rows([2]), branch="w1b", snapshot_properties={"wap.id": "w1"})
    t.append(_rows([3]))  # main moves on: picks make new snapshots
    first, second = t.refs()["w1a"].snapshot_id, t.refs()["w1b"].snapshot_id
    with t.manage_snapshots() as ms:
        ms.cherry_pick(first)
    head = t.current_snapshot()
    assert head is not None and head.summary is not None
    assert head.summary.get("published-wap-id") == "w1"
    assert head.summary.get("source-snapshot-id") == str(first)
    with pytest.raises(ValidationError, match=r"wap\.id 'w1' was already published"):
        t.manage_snapshots().cherry_pick(second)
    assert _their_ids(c) == [1, 2, 3]


def test_pick_from_a_stale_table_retries(tmp_path: Path) -> None:
    c, t = _setup(tmp_path)
    t.append(_rows([1]))
    with t.manage_snapshots() as ms:
        ms.create_branch("stage")
    t.append(_rows([2]), branch="stage")
    t.append(_rows([3]))
    stale = c.ours.load_table("db.t")
    staged = stale.refs()["stage"].snapshot_id
    t.append(_rows([4]))  # main moves after `stale` was loaded
    with stale.manage_snapshots() as ms:
        ms.cherry_pick(staged)
    assert _their_ids(c) == [1, 2, 3, 4]
    # a concurrent pick of the same snapshot is caught on retry
    other = c.ours.load_table("db.t")
    with pytest.raises(ValidationError, match="already in main's history"):
        other.manage_snapshots().cherry_pick(staged)
