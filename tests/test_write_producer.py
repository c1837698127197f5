"""The snapshot producer API: removals, delete files, validation on retry, manifest merging."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from icefloe.exceptions import CommitConflictError
from icefloe.manifest import manifest_files, read_manifest_list
from icefloe.scan.manifests import manifest_entries
from icefloe.table.concurrent_commits import Since
from icefloe.table.producer import SnapshotProducer
from icefloe.write import DataFile
from support.write_util import (
    SCHEMA,
    SPEC,
    catalog,
    checksum,
    duckdb_checksum,
    pyiceberg_read,
    rows,
)


def _live_paths(table: Any) -> list[str]:
    out = []
    for _, batch in manifest_entries(table.io, table.current_snapshot(), 0):
        live = batch.filter(pc.not_equal(batch["status"], 2))
        out += live["file_path"].to_pylist()
    return sorted(out)


def _data_file(table: Any, path: str) -> DataFile:
    for _, batch in manifest_entries(table.io, table.current_snapshot()):
        for row in batch.to_pylist():
            if row["file_path"] == path and row["status"] != 2:
                spec_id = int(batch.schema.metadata[b"partition-spec-id"])
                return DataFile.from_entry(row, spec_id)
    raise AssertionError(path)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_replace_a_file(tmp_path: Path, version: int, duckdb_con: Any) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=version)
    t.append(rows(0, 100))
    victim = _live_paths(t)[0]
    gone = pq.read_table(victim.removeprefix("file://"))
    from icefloe.write import write_data_files

    with t.transaction() as tx:
        new = write_data_files(tx.metadata, t.io, rows(1000, 3))
        p = SnapshotProducer(tx, snapshot_properties={"app": "test"})
        p.add_data_files(new).remove_files([victim]).owns_files(f.file_path for f in new)
        p.commit()
    snap = t.current_snapshot()
    assert snap is not None and snap.summary is not None
    assert snap.summary.operation == "overwrite"
    assert snap.summary.get("app") == "test"
    assert snap.summary.get_int("deleted-data-files") == 1
    assert snap.summary.get_int("deleted-records") == gone.num_rows
    assert snap.summary.get_int("total-records") == 103 - gone.num_rows
    assert snap.summary.get_int("manifests-replaced") == 1
    assert victim not in _live_paths(t)
    keep = pc.invert(pc.is_in(rows(0, 100)["id"], gone["id"]))
    want = checksum(pa.concat_tables([rows(0, 100).filter(keep), rows(1000, 3)]))
    assert checksum(pyiceberg_read(t)) == want
    assert duckdb_checksum(duckdb_con, t) == want
    if version == 3:
        # Removing adds no rows; the rewritten manifest's existing rows keep their ids.
        assert snap.added_rows is not None and snap.added_rows >= 3


def test_removal_conflict_on_retry_cleans_up(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, format_version=2)
    t.append(rows(0, 10))
    victim = _live_paths(t)[0]
    other = cat.load_table("ns.t")
    with other.transaction() as tx:
        SnapshotProducer(tx).remove_files([victim]).commit()
    meta_dir = Path(t.location.removeprefix("file://")) / "metadata"
    before = set(meta_dir.glob("*.avro"))
    with pytest.raises(CommitConflictError, match="not a live file"), t.transaction() as tx:
        SnapshotProducer(tx).remove_files([victim]).commit()
    assert set(meta_dir.glob("*.avro")) == before  # the failed attempt left nothing


def test_custom_validator_runs_on_retry(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, format_version=2)
    t.append(rows(0, 10))
    stale = cat.load_table("ns.t")
    t.append(rows(10, 10))
    calls: list[tuple[int | None, int | None]] = []

    def no_new_snapshots(md: Any, parent: Any, since: Since) -> None:
        calls.append((parent.snapshot_id if parent else None, since.start))
        if since.snapshots(md, parent):
            raise CommitConflictError("the table changed since the operation started")

    with pytest.raises(CommitConflictError, match="changed"), stale.transaction() as tx:
        SnapshotProducer(tx).add_data_files([]).validate(no_new_snapshots).commit()
    assert len(calls) == 2 and calls[0][0] == calls[0][1] and calls[1][0] != calls[1][1]


def test_position_delete_file_via_producer(tmp_path: Path, duckdb_con: Any) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, format_version=2)
    t.append(rows(0, 10))
    (path,) = _live_paths(t)
    schema = pa.schema(
        [
            pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
            pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"}),
        ]
    )
    dpath = f"{t.location}/data/deletes-1.parquet"
    pq.write_table(
        pa.table({"file_path": [path, path], "pos": [0, 3]}, schema=schema),
        dpath.removeprefix("file://"),
    )
    size = Path(dpath.removeprefix("file://")).stat().st_size
    with t.transaction() as tx:
        p = SnapshotProducer(tx)
        p.add_delete_files([DataFile(dpath, 2, size, content=1)])
        p.commit()
    snap = t.current_snapshot()
    assert snap is not None and snap.summary is not None
    assert snap.summary.operation == "delete"
    assert snap.summary.get_int("added-position-delete-files") == 1
    assert snap.summary.get_int("added-position-deletes") == 2
    assert snap.summary.get_int("total-delete-files") == 1
    want = checksum(rows(0, 10).filter(pc.invert(pc.is_in(rows(0, 10)["id"], pa.array([0, 3])))))
    assert checksum(pyiceberg_read(t)) == want
    assert duckdb_checksum(duckdb_con, t) == want
    # Removing the delete file brings the rows back.
    with t.transaction() as tx:
        SnapshotProducer(tx).remove_files([dpath]).commit()
    snap = t.current_snapshot()
    assert snap is not None and snap.summary is not None
    assert snap.summary.get_int("removed-position-delete-files") == 1
    assert snap.summary.get_int("total-delete-files") == 0
    assert checksum(pyiceberg_read(t)) == checksum(rows(0, 10))


@pytest.mark.parametrize("version", [2, 3])
def test_delete_manifests_merge_too(tmp_path: Path, version: int, duckdb_con: Any) -> None:
    """Merge-on-read deletes, one commit each, in different files: their delete manifests are
    merged like data manifests (unmerged, every commit added one and planning slowed with
    each); the rows and the deletes' sequence numbers are unchanged, for PyIceberg and DuckDB
    too."""
    cat = catalog(tmp_path)
    props = {"commit.manifest.min-count-to-merge": "3", "write.delete.mode": "merge-on-read"}
    t = cat.create_table("ns.t", SCHEMA, format_version=version, properties=props)
    for i in range(4):
        t.append(rows(i * 10, 10))
    seqs: dict[str, int] = {}
    for i in range(8):
        t.delete(f"id = {i * 5}")
        for _, batch in manifest_entries(t.io, t.current_snapshot(), content=1):
            live = batch.filter(pc.not_equal(batch["status"], 2))
            for path, seq in zip(
                live["file_path"].to_pylist(), live["sequence_number"].to_pylist(), strict=True
            ):
                assert seqs.setdefault(path, seq) == seq  # merging keeps each sequence number
    snap = t.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    lst = manifest_files(read_manifest_list(t.io.new_input(snap.manifest_list).read()))
    assert sum(1 for m in lst if m.content == 1) <= 3
    gone = {i * 5 for i in range(8)}
    want = checksum(rows(0, 40).filter(pc.invert(pc.is_in(rows(0, 40)["id"], pa.array(gone)))))
    assert checksum(t.scan().to_arrow()) == want
    assert checksum(pyiceberg_read(t)) == want
    assert duckdb_checksum(duckdb_con, t) == want


@pytest.mark.parametrize("version", [2, 3])
def test_manifest_merge(tmp_path: Path, version: int, duckdb_con: Any) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table(
        "ns.t",
        SCHEMA,
        format_version=version,
        properties={"commit.manifest.min-count-to-merge": "3"},
    )
    ids: dict[str, int] = {}
    for i in range(5):
        t.append(rows(i * 10, 10))
        if version == 3:  # a file's first row id never changes when its manifest is merged
            for _, batch in manifest_entries(t.io, t.current_snapshot()):
                for path, first in zip(
                    batch["file_path"].to_pylist(), batch["first_row_id"].to_pylist(), strict=True
                ):
                    assert ids.setdefault(path, first) == first
    snap = t.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    lst = manifest_files(read_manifest_list(t.io.new_input(snap.manifest_list).read()))
    assert len(lst) < 5
    assert sum(m.added_files_count for m in lst) == 1
    assert sum(m.added_files_count + m.existing_files_count for m in lst) == 5
    want = checksum(rows(0, 50))
    assert checksum(pyiceberg_read(t)) == want
    assert duckdb_checksum(duckdb_con, t) == want
    if version == 3:
        _, batch = manifest_entries(t.io, snap)[0]
        spans = sorted(
            zip(batch["first_row_id"].to_pylist(), batch["record_count"].to_pylist(), strict=True)
        )
        assert len(spans) == 5
        for (a, n), (b, _) in itertools.pairwise(spans):
            assert a + n <= b  # disjoint ranges
        assert t.metadata.next_row_id is not None and spans[-1][0] + 10 <= t.metadata.next_row_id
    # Fast append never merges.
    t.set_properties({"commit.manifest-merge.enabled": "false"})
    t.append(rows(50, 1))
    t.append(rows(51, 1))
    snap = t.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    lst2 = manifest_files(read_manifest_list(t.io.new_input(snap.manifest_list).read()))
    assert len(lst2) == len(lst) + 2


def test_columnar_entries_with_explicit_sequence_numbers_and_row_ids(tmp_path: Path) -> None:
    """``add_entries`` + ``set_sequence_number`` + ``set_next_row_id``: entries keep their own
    data sequence numbers and first row ids, PyIceberg reads them, the table's counters move."""
    from icefloe.write import write_data_files
    from icefloe.write.files import entries_batch

    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=3)
    files = write_data_files(t.metadata, t.io, rows(0, 30))
    for i, f in enumerate(files):
        f.first_row_id = 100 * i
    batch = entries_batch(files, version=3, schema=t.schema(), spec=t.spec())
    seqs = pa.array([3 + i for i in range(len(files))], pa.int64())
    batch = batch.set_column(
        batch.schema.get_field_index("sequence_number"), "sequence_number", seqs
    )
    with t.transaction() as tx:
        p = SnapshotProducer(tx).add_entries(batch, content=0)
        p.set_sequence_number(10).set_next_row_id(5000).owns_files(f.file_path for f in files)
        p.commit()
    snap = t.current_snapshot()
    assert snap is not None and snap.sequence_number == 10
    assert t.metadata.next_row_id == 5000 and snap.added_rows == 5000
    entries = t.inspect.entries()
    assert sorted(entries["sequence_number"].to_pylist()) == sorted(seqs.to_pylist())
    ids = t.scan(selected_fields=("id", "_row_id")).to_arrow()
    assert min(ids["_row_id"].to_pylist()) == 0
    assert sorted(pyiceberg_read(t)["id"].to_pylist()) == list(range(30))
    with pytest.raises(CommitConflictError, match="sequence number 10"), t.transaction() as tx:
        SnapshotProducer(tx).add_entries(batch, content=0).set_sequence_number(10).commit()
    with pytest.raises(Exception, match="content"):
        SnapshotProducer(t.transaction()).add_entries(batch, content=1)


@pytest.mark.parametrize("version", [2, 3])
def test_merged_manifests_keep_the_deletions_of_their_own_snapshot(
    tmp_path: Path, version: int
) -> None:
    """A commit that removes files and merges manifests keeps its DELETED entries (as Java's
    merge does): a replaced DV or position delete file and compacted data files stay listed
    as deleted by that snapshot, which incremental partition statistics and changelogs read."""
    cat = catalog(tmp_path)
    props = {"commit.manifest.min-count-to-merge": "2", "write.delete.mode": "merge-on-read"}
    t = cat.create_table(
        "ns.t", SCHEMA, partition_spec=SPEC, format_version=version, properties=props
    )
    t.append(rows(0, 10))
    t.append(rows(10, 10))

    def deleted_here(content: int) -> int:
        snap = t.current_snapshot()
        assert snap is not None
        n = 0
        for _, batch in manifest_entries(t.io, snap, content):
            mine = pc.and_(
                pc.equal(batch["status"], 2), pc.equal(batch["snapshot_id"], snap.snapshot_id)
            )
            n += pc.sum(mine.cast(pa.int64())).as_py() or 0
        return n

    t.delete("id = 1")
    t.delete("id = 2")  # replaces the first delete file of the same data file
    snap = t.current_snapshot()
    assert snap is not None
    assert deleted_here(1) == int(snap.summary.get("removed-delete-files") or 0) == 1
    t.rewrite_data_files(min_input_files=1)
    snap = t.current_snapshot()
    assert snap is not None
    assert deleted_here(0) == int(snap.summary.get("deleted-data-files") or 0) > 0
    t.compute_partition_statistics(incremental=True)
    t.refresh()
    assert sum(r["record_count"] for r in t.inspect.partitions().to_pylist()) == 18
