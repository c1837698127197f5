"""A transaction of several changes losing a race: each change's retry checks see what other
writers committed since the transaction started, and never count the transaction's own
earlier changes as concurrent. Writer B commits between A staging its changes and A
committing them (a second catalog object, as another process would be)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.table import Table

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.string(), nullable=False)]
)


def _rows(ids: list[int], part: str = "a") -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "part": pa.array([part] * len(ids), pa.string())},
        schema=SCHEMA,
    )


def _ids(t: Table) -> list[int]:
    t.refresh()
    return sorted(t.scan().to_arrow().column("id").to_pylist())


@pytest.fixture
def tables(tmp_path: Path) -> tuple[Table, Table]:
    """The same merge-on-read v2 table, partitioned by ``part``, loaded by writers A and B;
    it holds ids 1..3 in partition ``a``."""

    def catalog() -> SqlCatalog:
        return SqlCatalog(
            "c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri()
        )

    c = catalog()
    c.create_namespace("db")
    t = c.create_table(
        "db.t",
        SCHEMA,
        properties={
            "format-version": "2",
            "write.delete.mode": "merge-on-read",
            "write.update.mode": "merge-on-read",
        },
    )
    t.update_spec().add_field("part").commit()
    t.append(_rows([1, 2, 3]))
    return catalog().load_table("db.t"), catalog().load_table("db.t")


def _rewrite_by_b(b: Table) -> Callable[[], None]:
    """B rewrites partition ``a``: the same rows in a new file (a compaction would too)."""
    return lambda: b.overwrite(_rows([1, 2, 3]), "part = 'a'")


@pytest.mark.parametrize("first", ["append", "append other partition", "set property"])
def test_delete_after_another_change_sees_a_concurrent_rewrite(
    tables: tuple[Table, Table], first: str
) -> None:
    a, b = tables
    tx = a.transaction()
    if first == "append":
        tx.append(_rows([10]))
    elif first == "append other partition":
        tx.append(_rows([10], "b"))
    else:
        tx.set_properties(k="v")
    tx.delete("id = 1")
    _rewrite_by_b(b)()
    # the delete was written for the file B replaced: committing it would lose the delete
    with pytest.raises(CommitConflictError, match="concurrent commit"):
        tx.commit_transaction()
    assert _ids(a) == [1, 2, 3]


def test_two_row_level_changes_after_an_append(tables: tuple[Table, Table]) -> None:
    a, b = tables
    tx = a.transaction()
    tx.append(_rows([10]))
    tx.delete("id = 10")  # deletes from the transaction's own new file
    tx.delete("id = 2")
    _rewrite_by_b(b)()
    with pytest.raises(CommitConflictError):
        tx.commit_transaction()
    assert _ids(a) == [1, 2, 3]


def test_own_changes_are_not_concurrent(tables: tuple[Table, Table]) -> None:
    """Without another writer, and with one whose commit does not touch what the changes
    read, the transaction commits: its own earlier snapshots fail no check."""
    a, b = tables
    tx = a.transaction()
    tx.append(_rows([10, 11]))
    tx.delete("id = 10")  # a DV on the file the append just added
    tx.overwrite(_rows([12]), "id = 11")  # replaces a row of that file too
    tx.commit_transaction()
    assert _ids(a) == [1, 2, 3, 12]

    tx = a.transaction()
    tx.append(_rows([20], "c"))
    tx.delete("id = 20")
    tx.overwrite(_rows([21], "c"), "part = 'c'")
    b.append(_rows([30], "d"))  # a partition none of A's changes read
    tx.commit_transaction()
    assert _ids(a) == [1, 2, 3, 12, 21, 30]


@pytest.mark.parametrize(
    ("change", "conflict"),
    [("overwrite", "concurrent commit added data"), ("partition_overwrite", "replaced partition")],
)
def test_an_overwrite_after_an_append_sees_concurrent_adds(
    tables: tuple[Table, Table], change: str, conflict: str
) -> None:
    a, b = tables
    tx = a.transaction()
    tx.append(_rows([10], "b"))
    if change == "overwrite":
        tx.overwrite(_rows([40], "c"), "part = 'c'")
    else:
        tx.dynamic_partition_overwrite(_rows([40], "c"))
    b.append(_rows([41], "c"))  # data the overwrite would have replaced had it seen it
    with pytest.raises(CommitConflictError, match=conflict):
        tx.commit_transaction()
    assert _ids(a) == [1, 2, 3, 41]


def test_duplicate_add_files_in_one_transaction_still_refused(
    tables: tuple[Table, Table], tmp_path: Path
) -> None:
    import pyarrow.parquet as pq

    a, _ = tables
    path = tmp_path / "extra.parquet"
    with_ids = pa.schema(
        [f.with_metadata({"PARQUET:field_id": str(i)}) for i, f in enumerate(SCHEMA, 1)]
    )
    pq.write_table(_rows([60], "e").cast(with_ids), path)
    tx = a.transaction()
    tx.add_files([str(path)])
    with pytest.raises(ValidationError, match="already a data file"):
        tx.add_files([str(path)])


def _plain(tmp_path: Path, version: str, **props: str) -> tuple[Table, Table]:
    """An unpartitioned table of ids 1..3 (ids 1, 2 in one file, 3 in another), loaded by
    writers A and B."""

    def catalog() -> SqlCatalog:
        return SqlCatalog(
            "c", uri=f"sqlite:///{tmp_path}/p.db", warehouse=(tmp_path / "pw").as_uri()
        )

    c = catalog()
    c.create_namespace("db")
    t = c.create_table("db.t", SCHEMA, properties={"format-version": version, **props})
    t.append(_rows([1, 2]))
    t.append(_rows([3]))
    return catalog().load_table("db.t"), catalog().load_table("db.t")


def _keys(ids: list[int]) -> pa.Table:
    return _rows(ids).select(["id"])


@pytest.mark.parametrize("first", ["upsert", "delete_by_keys", "append"])
def test_compaction_after_another_change_is_not_rebuilt_with_stale_sequence_numbers(
    tmp_path: Path, first: str
) -> None:
    """A compaction keeps the data sequence number of the state it read: the transaction's
    earlier change, which a retry renumbers. Rebuilt, its files kept the old number, so the
    upsert's own equality delete removed the upserted row, or another writer's equality
    delete no longer applied (a deleted row came back)."""
    a, b = _plain(tmp_path, "2", **{"write.upsert.mode": "equality"})
    tx = a.transaction()
    if first == "upsert":
        tx.upsert(_rows([1], "new"), join_cols=["id"])
    elif first == "delete_by_keys":
        tx.delete_by_keys(_keys([2]), ["id"])
    else:
        tx.append(_rows([4]))
    tx.rewrite_data_files()
    b.delete_by_keys(_keys([3]), ["id"])
    with pytest.raises(CommitConflictError, match="renumbered"):
        tx.commit_transaction()
    assert _ids(a) == [1, 2]
    rows = a.scan().to_arrow().to_pylist()
    assert {r["part"] for r in rows} == {"a"}  # nothing of the transaction landed


def _copy_rows(tx: Any, change: str, row: int) -> None:
    """A change of ``tx`` that copies the rows of the file holding id ``row``."""
    if change == "rewrite_data_files":
        tx.rewrite_data_files()
    elif change == "upsert":
        tx.upsert(_rows([row], "u"), join_cols=["id"])
    elif change == "cow_delete":
        tx.delete(f"id = {row}")
    else:
        tx.overwrite(_rows([60]), f"id = {row}")


def _refused_after_a_concurrent_append(tx: Any, a: Table, b: Table) -> None:
    """``b`` appends ids 100 and 101; ``tx`` (of ``a``) then fails as renumbered, and the
    table holds those rows beside the first three, each with a row id of its own."""
    b.append(_rows([100, 101]))
    with pytest.raises(CommitConflictError, match="renumbered"):
        tx.commit_transaction()
    a.refresh()
    got = a.scan(selected_fields=("id", "_row_id")).to_arrow()
    assert sorted(got.column("id").to_pylist()) == [1, 2, 3, 100, 101]
    row_ids = got.column("_row_id").to_pylist()
    assert None not in row_ids and len(set(row_ids)) == len(row_ids)


@pytest.mark.parametrize("second", ["rewrite_data_files", "upsert", "cow_delete", "cow_overwrite"])
def test_v3_rows_copied_from_an_earlier_change_keep_unique_row_ids(
    tmp_path: Path, second: str
) -> None:
    """A change copying rows of the transaction's own append keeps their ``_row_id``, given
    when the append was first built; a retry gives the append other ids (another writer's
    rows took them), so the copies would have duplicated ids."""
    a, b = _plain(tmp_path, "3", **{"write.delete.mode": "copy-on-write"})
    tx = a.transaction()
    tx.append(_rows([50, 51]))
    _copy_rows(tx, second, 50)
    _refused_after_a_concurrent_append(tx, a, b)


@pytest.mark.parametrize("second", ["rewrite_data_files", "upsert", "cow_delete", "cow_overwrite"])
def test_v3_rows_of_an_upgraded_table_numbered_by_an_earlier_change_keep_unique_row_ids(
    tmp_path: Path, second: str
) -> None:
    """The files of a table upgraded to v3 get their ``first_row_id`` at its first v3
    snapshot: here the transaction's own append. A retry renumbers that append after another
    writer's snapshot gave the same files other ids, so rows copied with the first ids would
    collide with rows of other files."""
    a, b = _plain(tmp_path, "2", **{"write.delete.mode": "copy-on-write"})
    a.upgrade_format_version(3)
    b.refresh()
    tx = a.transaction()
    tx.append(_rows([50]))
    _copy_rows(tx, second, 1)
    _refused_after_a_concurrent_append(tx, a, b)


def test_v2_copy_on_write_after_an_append_is_rebuilt(tmp_path: Path) -> None:
    """Without row ids nothing copied depends on the earlier change's numbers: the
    transaction is rebuilt on the other writer's commit."""
    a, b = _plain(tmp_path, "2", **{"write.delete.mode": "copy-on-write"})
    tx = a.transaction()
    tx.append(_rows([50, 51]))
    tx.delete("id = 50")
    b.append(_rows([100]))
    tx.commit_transaction()
    assert _ids(a) == [1, 2, 3, 51, 100]


def test_a_branch_forked_from_an_earlier_change_that_a_retry_moves(tmp_path: Path) -> None:
    """The delete goes to a new branch forked from the transaction's own append; another
    writer creates that branch at the old head meanwhile. Rebuilt there, the delete's DV
    would name a data file the branch does not hold."""
    a, b = _plain(tmp_path, "3", **{"write.delete.mode": "merge-on-read"})
    tx = a.transaction()
    tx.append(_rows([10, 11]))
    tx.delete("id = 10", branch="nb")
    b.manage_snapshots().create_branch("nb").commit()
    with pytest.raises(CommitConflictError, match="left off that branch"):
        tx.commit_transaction()
    a.refresh()
    assert sorted(a.scan(ref="nb").to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert not a.inspect.delete_files(a.refs()["nb"].snapshot_id).num_rows


@pytest.mark.parametrize("with_append", [False, True])
def test_position_deletes_planned_on_v2_are_refused_after_an_upgrade_to_v3(
    tmp_path: Path, with_append: bool
) -> None:
    a, b = _plain(tmp_path, "2", **{"write.delete.mode": "merge-on-read"})
    tx = a.transaction()
    if with_append:
        tx.append(_rows([10]))
    tx.delete("id = 1")
    b.upgrade_format_version(3)
    with pytest.raises(CommitConflictError, match="deletion vectors only"):
        tx.commit_transaction()
    a.refresh()
    assert a.format_version == 3 and _ids(a) == [1, 2, 3]
    assert not a.inspect.delete_files().num_rows


@pytest.mark.parametrize("change", ["cow_delete", "mor_upsert", "insert_upsert"])
def test_v3_rows_copied_from_older_files_are_rebuilt(tmp_path: Path, change: str) -> None:
    """After the transaction's own append, a change copying rows of files the transaction
    did not write keeps row ids a retry does not renumber: it is rebuilt and commits."""
    mode = "copy-on-write" if change.startswith("cow") else "merge-on-read"
    a, b = _plain(tmp_path, "3", **{"write.delete.mode": mode, "write.update.mode": mode})
    tx = a.transaction()
    tx.append(_rows([10], "b"))
    if change == "cow_delete":
        tx.delete("id = 1")
        want = [2, 3, 10, 100]
    elif change == "mor_upsert":
        tx.upsert(_rows([1], "z"), join_cols=["id"])
        want = [1, 2, 3, 10, 100]
    else:
        tx.upsert(_rows([20], "c"), join_cols=["id"])
        want = [1, 2, 3, 10, 20, 100]
    b.append(_rows([100], "z"))
    tx.commit_transaction()
    a.refresh()
    got = a.scan(selected_fields=("id", "_row_id")).to_arrow()
    assert sorted(got.column("id").to_pylist()) == want
    row_ids = got.column("_row_id").to_pylist()
    assert None not in row_ids and len(set(row_ids)) == len(row_ids)


@pytest.mark.parametrize("other_branch", [False, True])
def test_a_published_wap_snapshot_then_a_delete_survive_a_concurrent_commit(
    tmp_path: Path, other_branch: bool
) -> None:
    """Publishing a staged snapshot whose parent is ``main``'s head moves ``main`` to it; a
    delete after it in the same transaction was made on that snapshot, which is the
    transaction's own change, not another writer's: a retry rebuilds both (the publish then
    becomes a new snapshot when ``main`` moved)."""
    a, b = _plain(tmp_path, "2", **{"write.wap.enabled": "true"})
    a.append(_rows([20, 22]), snapshot_properties={"wap.id": "w1"})  # staged, main unchanged
    a.refresh()
    tx = a.transaction()
    tx.manage_snapshots().publish_changes("w1").commit()
    tx.delete("id = 22")
    if other_branch:
        b.manage_snapshots().create_branch("side").commit()
    else:
        b.append(_rows([100]))
    tx.commit_transaction()
    assert _ids(a) == [1, 2, 3, 20] + ([] if other_branch else [100])
    head = a.current_snapshot()
    assert head is not None and head.summary is not None
    assert head.summary.operation in ("delete", "overwrite")


@pytest.mark.parametrize("order", ["append-then-delete", "delete-then-append"])
def test_a_delete_that_matched_nothing_still_checks_what_others_added(
    tables: tuple[Table, Table], order: str
) -> None:
    """A transaction's delete whose filter matched no row made no snapshot and was dropped
    with its serializable check: another writer's row the filter matches survived the
    transaction's later snapshot. Now the transaction's snapshot carries the check."""
    a, b = tables
    with pytest.raises(CommitConflictError), a.transaction() as tx:
        if order == "append-then-delete":
            tx.append(_rows([50]))
            tx.delete("id >= 10 and id < 20")
        else:
            tx.delete("id >= 10 and id < 20")
            tx.append(_rows([50]))
        b.append(_rows([15]))  # meanwhile: a row the delete's filter matches
    assert _ids(a) == [1, 2, 3, 15]
    # nothing committed meanwhile: the transaction commits, its delete deleting nothing
    with a.transaction() as tx:
        tx.delete("id >= 100")
        tx.append(_rows([50]))
    assert _ids(a) == [1, 2, 3, 15, 50]
    # snapshot isolation does not check what others added
    a.set_properties(**{"write.delete.isolation-level": "snapshot"})
    with a.transaction() as tx:
        tx.delete("id >= 200")
        tx.append(_rows([60]))
        b.refresh().append(_rows([250]))
    assert _ids(a) == [1, 2, 3, 15, 50, 60, 250]
