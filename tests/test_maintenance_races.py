"""Maintenance interleaved with other writers: each case brought deleted rows back, lost a
delete, or failed a write that could be rebuilt.

- a copy-on-write delete (or a compaction) committed over an equality delete that another
  writer committed meanwhile with an unpartitioned spec (such deletes apply to every
  partition): the rewritten rows got a newer sequence number and the deleted key came back;
- a delete by keys committed after a compaction had moved its partitions' rows into a new
  spec: its equality deletes applied to nothing, the keys stayed;
- a change planned on a v2 table that another writer upgraded to v3 before it committed failed
  with a ValidationError (its snapshot had no row ids) instead of being rebuilt;
- a compaction and a streaming writer's equality deletes in its partitions: the compaction
  always conflicted; its files now keep its starting sequence number (as Java's), so both
  commit and the deletes apply to the rewritten rows;
- a manifest rewrite that lost the race to another one raised a private error where the same
  state on a first attempt is nothing to do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import CommitConflictError

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string())])


def _rows(ids: range | list[int], region: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "region": [region] * len(ids)})


def _catalog(tmp_path: Path) -> SqlCatalog:
    cat = SqlCatalog("races", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "w"))
    cat.create_namespace("db")
    return cat


def _ids(cat: SqlCatalog) -> list[int]:
    return sorted(cat.load_table("db.t").scan().to_arrow().column("id").to_pylist())


@pytest.mark.parametrize("rewrite", ["compaction", "copy-on-write delete"])
def test_a_rewrite_conflicts_with_a_concurrent_global_equality_delete(
    tmp_path: Path, rewrite: str
) -> None:
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", SCHEMA, format_version=2)
    t.append(_rows([0, 1, 2, 30], "us"))
    # planned while the table is unpartitioned: its equality delete file has spec 0 (global)
    writer = cat.load_table("db.t").transaction()
    writer.delete_by_keys({"id": pa.array([15], pa.int64())}, ["id"])
    with t.update_spec() as s:
        s.add_field("region", "identity")
    t.append(_rows(range(10, 20), "eu"))
    t.append(_rows(range(20, 25), "eu"))
    maintenance: Any = cat.load_table("db.t").transaction()
    if rewrite == "compaction":
        maintenance.rewrite_data_files(min_input_files=1, row_filter="region = 'eu'")
    else:
        maintenance.delete("id = 11")
    writer.commit_transaction()
    assert 15 not in _ids(cat)
    if rewrite == "compaction":
        # its files keep the starting sequence number: the global delete applies to them
        maintenance.commit_transaction()
    else:
        with pytest.raises(CommitConflictError, match="unpartitioned spec"):
            maintenance.commit_transaction()
        assert 11 in _ids(cat)
    assert 15 not in _ids(cat)
    assert len(_ids(cat)) == 18


def test_a_manifest_rewrite_that_loses_to_another_has_nothing_to_do(tmp_path: Path) -> None:
    from icefloe.table.rewrite_manifests import NothingLeftToRewrite, rewrite_manifests

    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", SCHEMA, format_version=2)
    for k in range(5):
        t.append(_rows(range(k * 10, k * 10 + 10), "eu"))
    stale = cat.load_table("db.t")
    in_tx = cat.load_table("db.t").transaction()
    rewrite_manifests(in_tx)
    assert cat.load_table("db.t").rewrite_manifests().rewritten_manifests == 5
    done = cat.load_table("db.t").current_snapshot()
    # the table's own call: zero counts, as on a first attempt with nothing to regroup
    result = stale.rewrite_manifests()
    assert (result.rewritten_manifests, result.added_manifests, result.snapshot_id) == (0, 0, None)
    # a transaction holding the rewrite: a public conflict naming what happened
    with pytest.raises(NothingLeftToRewrite, match="nothing left to rewrite"):
        in_tx.commit_transaction()
    assert cat.load_table("db.t").current_snapshot() == done
    assert _ids(cat) == list(range(50))


@pytest.mark.parametrize("operation", ["delete_by_keys", "equality upsert"])
def test_equality_deletes_conflict_when_a_rewrite_moved_their_rows(
    tmp_path: Path, operation: str
) -> None:
    cat = _catalog(tmp_path)
    t = cat.create_table(
        "db.t", SCHEMA, format_version=2, properties={"write.upsert.mode": "equality"}
    )
    with t.update_spec() as s:
        s.add_field("region", "identity")
    t.append(_rows(range(0, 10), "eu"))
    t.append(_rows(range(10, 20), "eu"))
    with t.update_spec() as s:  # later files: by a bucket of id
        s.remove_field("region")
        s.add_field("id", "bucket[2]", "idb")
    writer: Any = cat.load_table("db.t").transaction()
    keys = {"id": pa.array([5, 15], pa.int64())}
    if operation == "delete_by_keys":
        writer.delete_by_keys(keys, ["id"])  # routed to region=eu of the old spec
    else:
        writer.upsert(_rows([5, 15], "new"), join_cols=["id"])
    cat.load_table("db.t").rewrite_data_files(min_input_files=1)  # into the bucket spec
    # (the upsert's serializable check of new files holding its keys sees it first)
    with pytest.raises(CommitConflictError, match=r"do not reach|may hold rows"):
        writer.commit_transaction()
    assert _ids(cat) == list(range(20))
    # done again on the table as it is, the delete reaches the moved rows
    if operation == "delete_by_keys":
        cat.load_table("db.t").delete_by_keys(keys, ["id"])
        assert 5 not in _ids(cat) and 15 not in _ids(cat)


@pytest.mark.parametrize("change", ["compaction", "append", "delete", "manifests"])
def test_a_change_planned_before_an_upgrade_to_v3(tmp_path: Path, change: str) -> None:
    """Rebuilt on the v3 table, except a merge-on-read delete (its position delete file)."""
    cat = _catalog(tmp_path)
    t = cat.create_table(
        "db.t", SCHEMA, format_version=2, properties={"write.delete.mode": "merge-on-read"}
    )
    for k in range(3):
        t.append(_rows(range(k * 10, k * 10 + 10), "eu"))
    t.delete("id in (1, 11)")
    tx: Any = cat.load_table("db.t").transaction()
    expected = [i for i in range(30) if i not in (1, 11)]
    if change == "compaction":
        tx.rewrite_data_files(min_input_files=1)
    elif change == "append":
        tx.append(_rows([100], "eu"))
        expected.append(100)
    elif change == "delete":
        tx.delete("id = 2")
        expected.remove(2)
    else:
        from icefloe.table.rewrite_manifests import rewrite_manifests

        rewrite_manifests(tx)
    cat.load_table("db.t").upgrade_format_version(3)
    if change == "delete":
        # its position delete file was written for v2; v3 takes deletion vectors only
        with pytest.raises(CommitConflictError, match="deletion vectors only"):
            tx.commit_transaction()
        cat.load_table("db.t").delete("id = 2")  # made again: a DV
    else:
        tx.commit_transaction()
    fresh = cat.load_table("db.t")
    assert fresh.metadata.format_version == 3
    assert _ids(cat) == sorted(expected)
    lineage = fresh.scan(selected_fields=("id", "_row_id")).to_arrow()
    assert lineage.column("_row_id").null_count == 0
    assert len(set(lineage.column("_row_id").to_pylist())) == lineage.num_rows
    assert fresh.metadata.next_row_id >= lineage.num_rows


@pytest.mark.parametrize("first", ["deletes", "compaction"])
def test_compaction_keeps_its_starting_sequence_number(tmp_path: Path, first: str) -> None:
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", SCHEMA, format_version=2)
    with t.update_spec() as s:
        s.add_field("region", "identity")
    t.append(_rows(range(0, 10), "eu"))
    t.append(_rows(range(10, 20), "eu"))
    t.delete_by_keys({"id": pa.array([3], pa.int64())}, ["id"])  # applied by the rewrite
    start = cat.load_table("db.t").current_snapshot()
    compaction: Any = cat.load_table("db.t").transaction()
    compaction.rewrite_data_files(min_input_files=1)
    writer: Any = cat.load_table("db.t").transaction()
    writer.delete_by_keys({"id": pa.array([5, 15], pa.int64())}, ["id"])
    for tx in (writer, compaction) if first == "deletes" else (compaction, writer):
        tx.commit_transaction()
    t = cat.load_table("db.t")
    expected = [i for i in range(20) if i not in (3, 5, 15)]
    assert _ids(cat) == expected
    entries = t.inspect.entries().to_pylist()
    live = [e for e in entries if e["status"] != 2 and e["data_file"]["content"] == 0]
    assert len(live) == 1 and live[0]["sequence_number"] == start.sequence_number
    duckdb = pytest.importorskip("duckdb")
    from support.peers import duckdb_connect

    assert duckdb is not None
    con = duckdb_connect()
    got = con.execute(f"select id from iceberg_scan('{t.metadata_location}') order by id")
    assert [r[0] for r in got.fetchall()] == expected
