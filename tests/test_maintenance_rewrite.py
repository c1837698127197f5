"""rewrite_data_files: bin-packed compaction applying deletes, a `replace` snapshot, row ids
kept, conflicts with concurrent deletes of the inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from icefloe._concurrency import work_threads
from icefloe.exceptions import CommitConflictError, NoSuchSnapshotError, ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField, StringType
from support.rowlevel_util import live_data_files, live_deletes, ours
from support.s3 import Warehouse, versions_and_stores
from support.write_util import SCHEMA, catalog, checksum, duckdb_checksum, pyiceberg_read, rows

SPEC = PartitionSpec(PartitionField(1, 1000, parse_transform("bucket[2]"), "b"))


def _table(
    tmp_path: Path, version: int, appends: int = 6, warehouse: Warehouse | None = None
) -> Any:
    cat = catalog(tmp_path, warehouse)
    t = cat.create_table(
        "ns.t",
        SCHEMA,
        partition_spec=SPEC,
        properties={"format-version": str(version), "write.delete.mode": "merge-on-read"},
    )
    for i in range(appends):
        t.append(rows(i * 20, 20))
    return t


@pytest.mark.parametrize(
    ("version", "warehouse"), versions_and_stores(2, 3), indirect=["warehouse"]
)
def test_compaction_applies_deletes_and_keeps_row_ids(
    tmp_path: Path, version: int, warehouse: Warehouse, duckdb_con: Any
) -> None:
    t = _table(tmp_path, version, warehouse=warehouse)
    t.delete("id in (3, 13, 23, 47, 118)")
    before_files = live_data_files(t)
    assert len(before_files) == 12  # 6 appends x 2 buckets
    before = ours(t, *(("_row_id", "_last_updated_sequence_number") if version >= 3 else ()))
    result = t.rewrite_data_files(target_file_size=10 * 1024 * 1024)
    snap = t.current_snapshot()
    assert snap.summary.operation == "replace"
    assert result.rewritten_data_files == 12
    assert result.added_data_files == 2  # one per bucket
    assert len(live_data_files(t)) == 2
    assert live_deletes(t).num_rows == 0 or version == 2
    after = ours(t, *(("_row_id", "_last_updated_sequence_number") if version >= 3 else ()))
    # same rows, same ids and sequence numbers (x holds NaNs: compared apart)
    assert after.drop(["x"]).to_pylist() == before.drop(["x"]).to_pylist()
    assert after["x"].equals(before["x"]) or after["x"].is_nan().equals(before["x"].is_nan())
    assert checksum(pyiceberg_read(t)) == checksum(before)
    assert duckdb_checksum(duckdb_con, t) == checksum(before)
    assert int(snap.summary.get_int("added-records") or 0) == before.num_rows
    # nothing left to compact
    again = t.rewrite_data_files(target_file_size=10 * 1024 * 1024)
    assert again.rewritten_data_files == 0
    assert t.current_snapshot().snapshot_id == snap.snapshot_id


def test_compaction_min_input_files_and_target(tmp_path: Path) -> None:
    t = _table(tmp_path, 2, appends=3)
    r = t.rewrite_data_files(target_file_size=10 * 1024 * 1024, min_input_files=4)
    assert r.rewritten_data_files == 0  # 3 files per bucket, no deletes
    with pytest.raises(ValidationError):
        t.rewrite_data_files(min_input_files=0)


def test_compaction_of_a_branch_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    """Compaction rewrites a branch's files: a misspelled branch is an error, not a new
    branch forked from main holding main's files compacted; a tag cannot be rewritten."""
    t = _table(tmp_path, 2, appends=3)
    snap = t.current_snapshot()
    assert snap is not None
    with t.manage_snapshots() as m:
        m.create_branch("audit", snap.snapshot_id).create_tag("v1", snap.snapshot_id)
    refs = dict(t.metadata.refs)
    with pytest.raises(NoSuchSnapshotError, match="typo"):
        t.rewrite_data_files(branch="typo")
    with pytest.raises(NoSuchSnapshotError, match="typo"):
        t.plan_rewrite_data_files(branch="typo")
    with pytest.raises(ValidationError, match="tag"):
        t.rewrite_data_files(branch="v1")
    assert t.refresh().metadata.refs == refs
    assert t.rewrite_data_files(branch="audit", min_input_files=1).rewritten_data_files > 0


def test_compaction_writes_one_file_per_bin_however_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compaction aims at the target file size: a bin is not split over the writer's threads
    as an append's large partition is."""
    from icefloe.write import writer

    t = _table(tmp_path, 2)
    monkeypatch.setattr(writer, "SPLIT_BYTES", 64)
    assert t.rewrite_data_files(target_file_size=10 * 1024 * 1024).added_data_files == 2
    assert len(live_data_files(t)) == 2  # one per bucket
    # the same rows appended unpartitioned: one file per thread
    other = catalog(tmp_path / "b").create_table("ns.u", SCHEMA)
    other.append(rows(0, 120))
    assert len(live_data_files(other)) == work_threads()


def _id_table(tmp_path: Path, appends: int, per_append: int, **props: str) -> Any:
    """A v2 table of ``id`` and ``s`` with ``appends`` files of ``per_append`` rows each."""
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType()))
    t = catalog(tmp_path).create_table("ns.t", schema, properties={"format-version": "2", **props})
    for i in range(appends):
        ids = pa.array(range(i * per_append, (i + 1) * per_append), pa.int64())
        t.append(
            pa.table({"id": ids, "s": pc.binary_join_element_wise("s", ids.cast(pa.string()), "")})
        )
    return t


def _file_sizes(t: Any) -> list[tuple[int, int]]:
    """(bytes, rows) of the table's data files."""
    return sorted(
        (f["file_size_in_bytes"], f["record_count"])
        for f in t.refresh().inspect.files().to_pylist()
    )


def test_compaction_of_less_than_the_target_writes_one_file(tmp_path: Path) -> None:
    """Small files adding up to less than the target are compacted into one file, and compacting
    again changes nothing: the rows were not cut into a file of the target's size and a small
    remainder file that no later compaction would ever merge."""
    t = _id_table(tmp_path, 10, 2500)
    before = ours(t)
    target = sum(size for size, _ in _file_sizes(t)) + 2000
    assert t.plan_rewrite_data_files(target_file_size=target).groups == 1
    assert t.rewrite_data_files(target_file_size=target).added_data_files == 1
    snap = t.current_snapshot()
    assert [n for _, n in _file_sizes(t)] == [25000]
    again = t.rewrite_data_files(target_file_size=target)
    assert again.rewritten_data_files == 0
    assert t.current_snapshot().snapshot_id == snap.snapshot_id
    assert ours(t) == before


def test_compaction_splits_files_over_1_8_times_the_target(tmp_path: Path) -> None:
    """A file larger than 1.8 times the target (Iceberg Java's default largest file, say after
    the target was lowered) is split into files of about the target, as Java's planner does;
    one within 0.75-1.8 times the target is left alone. Before, only small files and files
    with deletes were rewritten, and a large file stayed as it was."""
    t = _id_table(tmp_path, 1, 40000)
    ((size, _),) = _file_sizes(t)
    before = ours(t)
    assert t.rewrite_data_files(target_file_size=int(size / 1.7)).rewritten_data_files == 0
    result = t.rewrite_data_files(target_file_size=size // 4)
    assert (result.rewritten_data_files, result.added_data_files) == (1, 4)
    assert all(n == 10000 for _, n in _file_sizes(t))
    assert ours(t) == before
    assert t.rewrite_data_files(target_file_size=size // 4).rewritten_data_files == 0


@pytest.mark.parametrize(("ratio", "files"), [(1.05, 1), (2.15, 2), (2.3, 3), (2.9, 3)])
def test_compaction_output_file_count_follows_the_input_size(
    tmp_path: Path, ratio: float, files: int
) -> None:
    """A file with deletes of ``ratio`` times the target is rewritten as Iceberg Java plans it:
    one file per target size, a remainder under 3/4 of the target spread over the others when
    they stay within 10% above the target (1.05x: 1 file, 2.15x: 2) and written on its own
    otherwise (2.3x: 3, 2.9x: 3), the rows split evenly in order; no small remainder file."""
    t = _id_table(tmp_path, 1, 40000, **{"write.delete.mode": "merge-on-read"})
    ((size, _),) = _file_sizes(t)
    t.delete("id = 7")
    result = t.rewrite_data_files(target_file_size=int(size / ratio))
    assert (result.rewritten_data_files, result.added_data_files) == (1, files)
    counts = [n for _, n in _file_sizes(t)]
    assert sum(counts) == 39999 and max(counts) - min(counts) <= 1
    assert ours(t)["id"].to_pylist() == [i for i in range(40000) if i != 7]


def test_compaction_conflicts_with_concurrent_delete(tmp_path: Path) -> None:
    t = _table(tmp_path, 3, appends=3)
    other = t.catalog.load_table("ns.t")
    tx = t.transaction()
    tx.rewrite_data_files(target_file_size=10 * 1024 * 1024)
    other.delete("id = 5")  # a DV for one of the inputs, committed first
    with pytest.raises(CommitConflictError, match="deletes"):
        tx.commit_transaction()
    t.refresh()
    assert ours(t).num_rows == 59
    assert t.current_snapshot().summary.operation == "delete"


def test_compaction_of_v3_after_upsert_keeps_ids(tmp_path: Path) -> None:
    t = _table(tmp_path, 3, appends=2)
    t.set_properties({"write.merge.mode": "merge-on-read"})
    src = rows(30, 20)
    src = src.set_column(1, "s", pc.binary_join_element_wise("u", src["s"], ""))
    t.upsert(src, ["id"])
    before = ours(t, "_row_id")
    t.rewrite_data_files(target_file_size=10 * 1024 * 1024)
    after = ours(t, "_row_id")
    assert after.drop(["x"]).to_pylist() == before.drop(["x"]).to_pylist()
    assert pa.compute.count_distinct(after["_row_id"]).as_py() == after.num_rows


@pytest.mark.parametrize("version", [2, 3])
def test_compaction_writes_the_current_spec(tmp_path: Path, version: int) -> None:
    """Files of an older spec are rewritten in the current one (as Iceberg Java does), also
    when the old spec's source column has since been dropped."""
    t = _table(tmp_path, version, appends=3)  # bucket[2](id): spec 0
    t.update_spec().remove_field("b").add_field("ts", "day").commit()
    t.append(rows(100, 20))
    t.update_spec().remove_field("ts_day").commit()
    t.update_schema().delete_column("ts").commit()  # only spec 1 used it
    t.delete("id in (3, 101)")
    before = ours(t)
    files_before = len(live_data_files(t))
    result = t.rewrite_data_files(target_file_size=10 * 1024 * 1024, min_input_files=1)
    assert result.rewritten_data_files == files_before
    assert set(t.inspect.files().column("spec_id").to_pylist()) == {t.spec().spec_id}
    after = ours(t)
    assert sorted(after["id"].to_pylist()) == [
        i for i in (*range(60), *range(100, 120)) if i not in (3, 101)
    ]
    assert after.sort_by("id").drop(["x"]) == before.sort_by("id").drop(["x"])


def _by_k(tmp_path: Path, version: int) -> Any:
    """A table partitioned by identity(k) with one file of 12 rows for each k in 0..4."""
    schema = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "k", LongType()),
        NestedField(3, "j", LongType()),
    )
    t = catalog(tmp_path).create_table(
        "ns.t",
        schema,
        partition_spec=PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "k")),
        properties={"format-version": str(version)},
    )
    ids = pa.array(range(60), pa.int64())
    t.append(pa.table({"id": ids, "k": pc.remainder(ids, 5), "j": pc.remainder(ids, 3)}))
    return t


@pytest.mark.parametrize("version", [2, 3])
def test_compaction_groups_files_of_older_specs_together(tmp_path: Path, version: int) -> None:
    """Small files of an older partition spec are compacted together into the current spec, as
    Iceberg Java does: after a table stopped being partitioned by ``k``, its five one-partition
    files become one file, where each was alone in its old partition and left as it was."""
    t = _by_k(tmp_path, version)
    meta = ("_row_id", "_last_updated_sequence_number") if version >= 3 else ()
    before = ours(t, *meta)
    t.update_spec().remove_field("k").commit()
    assert t.plan_rewrite_data_files().groups == 1
    result = t.rewrite_data_files()
    assert (result.rewritten_data_files, result.added_data_files) == (5, 1)
    assert t.refresh().inspect.files().column("spec_id").to_pylist() == [t.spec().spec_id]
    assert ours(t, *meta) == before
    assert pyiceberg_read(t).sort_by("id") == before.select(["id", "k", "j"])


@pytest.mark.parametrize(("transform", "source"), [("bucket[3]", "id"), ("identity", "j")])
def test_compaction_of_older_specs_writes_the_rows_in_their_new_partitions(
    tmp_path: Path, transform: str, source: str
) -> None:
    """Files of an older spec compacted together are written in the current spec's partitions:
    each new file holds the rows of its partition only, one file per partition."""
    t = _by_k(tmp_path, 2)
    before = ours(t)
    t.update_spec().remove_field("k").add_field(source, transform, "p").commit()
    assert t.rewrite_data_files().rewritten_data_files == 5
    files = t.refresh().inspect.files().to_pylist()
    assert {f["spec_id"] for f in files} == {t.spec().spec_id}
    assert sorted(f["partition"]["p"] for f in files) == [0, 1, 2]
    tr = parse_transform(transform)
    for f in files:
        values = tr.apply(pq.read_table(f["file_path"].removeprefix("file://"))[source])
        assert set(values.to_pylist()) == {f["partition"]["p"]}
    assert ours(t) == before
    assert pyiceberg_read(t).sort_by("id") == before
