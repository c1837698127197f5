"""``manage_snapshots().cherry_pick()``: fast-forward when the picked snapshot's parent is
``main``, otherwise a new snapshot with the same data files (an append, or a dynamic partition
overwrite replacing its partitions), decided again when the commit is retried on a newer
``main``; PyIceberg 0.12 reads the result. Data written by icefloe's own ``table.append``."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.transforms import parse_transform
from support.evolution import SIMPLE_SCHEMA, Catalogs, shared_catalogs


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "data": [f"r{i}" for i in ids]})


def _setup(
    tmp_path: Path, version: int = 2, *, partitioned: bool = False
) -> tuple[Catalogs, Table]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    c = shared_catalogs(tmp_path)
    spec = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "data"))
    t = c.ours.create_table(
        "db.t",
        Schema.from_json(SIMPLE_SCHEMA),
        partition_spec=spec if partitioned else None,
        properties={"format-version": str(version)},
    )
    return c, t


def _their_ids(c: Catalogs, snapshot_id: int | None = None) -> list[int]:
    t = c.theirs.load_table("db.t")
    return sorted(t.scan(snapshot_id=snapshot_id).to_arrow().column("id").to_pylist())


def _ids(t: Table, snapshot_id: int | None = None) -> list[int]:
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


def _staged_append(tmp_path: Path) -> tuple[Catalogs, Table, int]:
    """main: [1]; a snapshot staged on branch ``stage`` (wap.id w1) appends [2]."""
    c, t = _setup(tmp_path)
    t.append(_rows([1]))
    with t.manage_snapshots() as ms:
        ms.create_branch("stage")
    t.append(_rows([2]), branch="stage", snapshot_properties={"wap.id": "w1"})
    return c, t, t.refs()["stage"].snapshot_id


def test_planned_fast_forward_becomes_a_new_snapshot_on_a_newer_main(tmp_path: Path) -> None:
    c, t, staged = _staged_append(tmp_path)
    with t.manage_snapshots() as ms:
        ms.cherry_pick(staged)  # main is the staged snapshot's parent: a fast-forward
        other = c.ours.load_table("db.t")
        other.append(_rows([3]))  # ... until another writer commits first
        concurrent = _head(other)
    head = t.current_snapshot()
    assert head is not None and head.summary is not None
    assert head.snapshot_id != staged and head.parent_snapshot_id == concurrent
    assert head.operation == "append"
    assert head.summary.get("source-snapshot-id") == str(staged)
    assert head.summary.get("published-wap-id") == "w1"
    assert _their_ids(c) == [1, 2, 3]


def test_retried_pick_refuses_what_a_concurrent_pick_published(tmp_path: Path) -> None:
    c, t, staged = _staged_append(tmp_path)
    with (
        pytest.raises(CommitConflictError, match="already in main's history"),
        t.manage_snapshots() as ms,
    ):
        ms.cherry_pick(staged)
        with c.ours.load_table("db.t").manage_snapshots() as other:
            other.cherry_pick(staged)
    t.refresh()
    assert _head(t) == staged and _their_ids(c) == [1, 2]


def test_retried_fast_forward_of_a_delete_is_refused(tmp_path: Path) -> None:
    c, t, deleting = _staged_delete(tmp_path)
    with (
        pytest.raises(CommitConflictError, match="only append snapshots and dynamic partition"),
        t.manage_snapshots() as ms,
    ):
        ms.cherry_pick(deleting)
        c.ours.load_table("db.t").append(_rows([3]))
    assert _their_ids(c) == [1, 2, 3]


def test_pick_becomes_a_fast_forward_on_retry_and_leaves_no_files(tmp_path: Path) -> None:
    # planned as a new snapshot (main had moved); another writer rolls main back to the staged
    # snapshot's parent before the commit: the retry fast-forwards and deletes what it wrote
    c, t, staged = _staged_append(tmp_path)
    parent = _head(t)
    t.append(_rows([3]))
    meta_dir = Path(t.location.removeprefix("file://")) / "metadata"
    before = {p.name for p in meta_dir.glob("*.avro")}
    with t.manage_snapshots() as ms:
        ms.cherry_pick(staged)
        assert {p.name for p in meta_dir.glob("*.avro")} > before  # a manifest and a list
        with c.ours.load_table("db.t").manage_snapshots() as other:
            other.rollback_to(parent)
    assert _head(t) == staged and _their_ids(c) == [1, 2]
    assert {p.name for p in meta_dir.glob("*.avro")} == before


def test_a_discarded_block_deletes_what_its_pick_wrote(tmp_path: Path) -> None:
    # a `with table.manage_snapshots()` block that raises commits nothing and, like a discarded
    # transaction, leaves none of the manifests and manifest list its cherry-pick wrote
    _, t, staged = _staged_append(tmp_path)
    t.append(_rows([3]))  # main moved on: the pick writes a new snapshot
    meta_dir = Path(t.location.removeprefix("file://")) / "metadata"
    before = {p.name for p in meta_dir.glob("*.avro")}
    heads = _head(t)
    with pytest.raises(RuntimeError, match="audit failed"), t.manage_snapshots() as ms:
        ms.cherry_pick(staged)
        assert {p.name for p in meta_dir.glob("*.avro")} > before
        raise RuntimeError("audit failed")
    t.refresh()
    assert _head(t) == heads
    assert {p.name for p in meta_dir.glob("*.avro")} == before


def _partition_rows(ids: list[int], data: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "data": [data] * len(ids)})


def _stage_overwrite(t: Table, rows: pa.Table, wap_id: str | None = None) -> int:
    """A dynamic partition overwrite of ``rows`` on a new branch ``stage``; its snapshot id."""
    with t.manage_snapshots() as ms:
        ms.create_branch("stage")
    props = {"wap.id": wap_id} if wap_id else None
    t.dynamic_partition_overwrite(rows, branch="stage", snapshot_properties=props)
    return t.refs()["stage"].snapshot_id


@pytest.mark.parametrize("version", [2, 3])
def test_pick_dynamic_partition_overwrite(tmp_path: Path, version: int) -> None:
    c, t = _setup(tmp_path, version, partitioned=True)
    t.append(pa.concat_tables([_partition_rows([1, 2], "a"), _partition_rows([3], "b")]))
    staged = _stage_overwrite(t, _partition_rows([10], "a"), wap_id="w9")
    t.append(_partition_rows([4], "c"))  # main moves on in another partition
    with t.transaction() as tx:
        tx.set_properties({"write.delete.mode": "merge-on-read"})
    t.delete("id == 2")  # and deletes a row of the replaced one: a delete file, no data
    assert t.inspect.delete_files().num_rows == 1
    with t.manage_snapshots() as ms:
        ms.cherry_pick(staged)
    head = t.current_snapshot()
    assert head is not None and head.summary is not None and head.operation == "overwrite"
    assert head.summary.get("source-snapshot-id") == str(staged)
    assert head.summary.get("published-wap-id") == "w9"
    assert head.summary.get("deleted-data-files") == "1"
    assert head.summary.get("total-delete-files") == "0"  # it went with the replaced data
    assert _their_ids(c) == [3, 4, 10]
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [3, 4, 10]
    if version == 3:
        assert head.first_row_id is not None and head.added_rows is not None
        assert t.metadata.next_row_id == head.first_row_id + head.added_rows
        ids = t.scan(selected_fields=["id", "_row_id"]).to_arrow().column("_row_id")
        assert len(set(ids.to_pylist())) == 3
    with pytest.raises(ValidationError, match="already in main's history"):
        t.manage_snapshots().cherry_pick(staged)


def test_pick_dynamic_partition_overwrite_refusals(tmp_path: Path) -> None:
    _, t = _setup(tmp_path / "1", partitioned=True)
    t.append(_partition_rows([1], "a"))
    root = _head(t)
    t.append(_partition_rows([2], "b"))
    staged = _stage_overwrite(t, _partition_rows([10], "a"))
    # main rolled back before the staged snapshot's parent, then moved on: not its ancestor
    with t.manage_snapshots() as ms:
        ms.rollback_to(root)
    t.append(_partition_rows([3], "c"))
    with pytest.raises(ValidationError, match=r"parent \d+ is an ancestor of main"):
        t.manage_snapshots().cherry_pick(staged)
    # main added data to the replaced partition after the parent
    c2, t2 = _setup(tmp_path / "2", partitioned=True)
    t2.append(_partition_rows([1], "a"))
    staged2 = _stage_overwrite(t2, _partition_rows([10], "a"))
    t2.append(_partition_rows([5], "a"))
    with pytest.raises(ValidationError, match="main changed a partition it replaces"):
        t2.manage_snapshots().cherry_pick(staged2)
    # ... or does so concurrently, before the pick commits
    with t2.manage_snapshots() as ms:
        ms.rollback_to(t2.snapshots()[0].snapshot_id)
    with (
        pytest.raises(CommitConflictError, match="main changed a partition it replaces"),
        t2.manage_snapshots() as ms,
    ):
        ms.cherry_pick(staged2)
        c2.ours.load_table("db.t").append(_partition_rows([6], "a"))
    assert _their_ids(c2) == [1, 6]


@pytest.mark.parametrize("version", [2, 3])
def test_wap_enabled_tables_stage_writes_with_a_wap_id(tmp_path: Path, version: int) -> None:
    """With ``write.wap.enabled=true`` a write carrying a ``wap.id`` is staged, as Java stages
    Spark's ``spark.wap.id`` writes: added with main's head as parent, no branch moves;
    ``publish_changes`` picks it by its id. Without the property a wap.id is only a summary
    property."""
    c, t = _setup(tmp_path, version)
    t.append(_rows([1]))
    head = _head(t)
    t.append(_rows([9]), snapshot_properties={"wap.id": "plain"})  # not enabled: to main
    assert _head(t) != head and t.current_snapshot().summary.get("wap.id") == "plain"
    t.manage_snapshots().rollback_to(head).commit()
    t.set_properties(**{"write.wap.enabled": "true"})
    t.append(_rows([2]), snapshot_properties={"wap.id": "j1"})
    assert _head(t) == head and _ids(t) == [1]
    staged = next(s for s in t.snapshots() if s.summary and s.summary.get("wap.id") == "j1")
    assert staged.parent_snapshot_id == head
    assert not [r for r in t.refs().values() if r.snapshot_id == staged.snapshot_id]
    assert _ids(t, staged.snapshot_id) == [1, 2] == _their_ids(c, staged.snapshot_id)
    t.delete("id = 1", snapshot_properties={"wap.id": "j2"})
    assert _head(t) == head and _ids(t) == [1]
    with pytest.raises(ValidationError, match="cannot also go to branch 'b'"):
        t.append(_rows([3]), branch="b", snapshot_properties={"wap.id": "j3"})
    assert "b" not in t.refresh().refs()
    before = t.refresh().metadata_location  # staged under "", publish_changes could not name it
    with pytest.raises(ValidationError, match=r"give a non-empty one"):
        t.append(_rows([4]), snapshot_properties={"wap.id": ""})
    assert t.refresh().metadata_location == before
    with pytest.raises(ValidationError, match=r"no snapshot was staged with wap\.id 'nope'"):
        t.manage_snapshots().publish_changes("nope")
    # no id is not the id of every snapshot without one (those are not staged)
    for bad in (None, "", 1):
        with pytest.raises(ValidationError, match=r"a wap\.id is a non-empty string"):
            t.manage_snapshots().publish_changes(bad)  # type: ignore[arg-type]
    assert _head(t) == head
    t.manage_snapshots().publish_changes("j1").commit()
    assert _head(t) == staged.snapshot_id and _ids(t) == [1, 2] == _their_ids(c)
    with pytest.raises(ValidationError, match="already"):
        t.manage_snapshots().publish_changes("j1").commit()
    if version == 3:
        ids = t.scan(selected_fields=("id", "_row_id")).to_arrow()["_row_id"].to_pylist()
        assert len(set(ids)) == 2 and None not in ids


def test_a_pick_whose_files_main_already_holds_is_refused(tmp_path: Path) -> None:
    """A file added to main and to a branch (``add_files`` checks only the branch it adds
    to), then the branch's snapshot picked onto main: the commit listed the file twice among
    main's live entries, and every read of the table failed as corrupt. It is refused."""
    import pyarrow.parquet as pq

    _, t = _setup(tmp_path)
    t.append(_rows([1]))
    path = tmp_path / "shared.parquet"
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), metadata={"PARQUET:field_id": "1"}),
            pa.field("data", pa.string(), metadata={"PARQUET:field_id": "2"}),
        ]
    )
    pq.write_table(_rows([7]).cast(schema), path)
    with t.manage_snapshots() as ms:
        ms.create_branch("b1", _head(t))
    t.add_files([str(path)])
    t.add_files([str(path)], branch="b1")
    staged = t.refs()["b1"].snapshot_id
    head = _head(t)
    with (
        pytest.raises(ValidationError, match="already a data file of main"),
        t.manage_snapshots() as ms,
    ):
        ms.cherry_pick(staged)
    assert _head(t.refresh()) == head and _ids(t) == [1, 7]
