"""delete(filter): merge-on-read (DVs on v3, position delete files on v2) and copy-on-write,
read back by icefloe, PyIceberg 0.12 and DuckDB with the same rows."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from icefloe.exceptions import ValidationError
from icefloe.partitioning import PartitionSpec
from support.rowlevel_util import live_data_files, live_deletes, ours
from support.s3 import Warehouse, versions_and_stores
from support.write_util import (
    SCHEMA,
    SPEC,
    catalog,
    checksum,
    duckdb_checksum,
    pyiceberg_read,
    rows,
    set_properties_elsewhere,
)

MOR = {"write.delete.mode": "merge-on-read"}


def _table(
    tmp_path: Path,
    version: int,
    props: dict[str, str],
    spec: PartitionSpec = SPEC,
    warehouse: Warehouse | None = None,
) -> Any:
    cat = catalog(tmp_path, warehouse)
    t = cat.create_table(
        "ns.t", SCHEMA, partition_spec=spec, properties={"format-version": str(version), **props}
    )
    t.append(rows(0, 120))
    t.append(rows(120, 80))
    return t


def _expect(mask_fn: Any) -> Any:
    data = rows(0, 200)
    return data.filter(pc.invert(mask_fn(data)))


def _check_peers(t: Any, want: Any, duckdb_con: Any) -> None:
    assert checksum(ours(t)) == checksum(want)
    assert checksum(pyiceberg_read(t)) == checksum(want)
    assert duckdb_checksum(duckdb_con, t) == checksum(want)


def test_mor_delete_v3_writes_one_puffin_and_merges(
    tmp_path: Path, warehouse: Warehouse, duckdb_con: Any
) -> None:
    t = _table(tmp_path, 3, MOR, warehouse=warehouse)
    before = ours(t, "_row_id")
    t.delete("id < 30 or s = 's150'")
    snap = t.current_snapshot()
    assert snap.summary.operation == "delete"
    assert snap.summary.get_int("added-dvs") > 1
    # files whose metrics prove every row matches are dropped whole, the others get DVs
    dropped = snap.summary.get_int("deleted-records")
    assert dropped > 0 and snap.summary.get_int("added-position-deletes") + dropped == 31
    dels = live_deletes(t)
    assert set(dels.column("file_format").to_pylist()) == {"PUFFIN"}
    assert len(set(dels.column("file_path").to_pylist())) == 1  # one Puffin file per commit
    want = _expect(lambda d: pc.or_(pc.less(d["id"], 30), pc.equal(d["s"], "s150")))
    _check_peers(t, want, duckdb_con)

    # a second delete on some of the same files: merged, still one DV per data file
    t.delete("id >= 25 and id < 40")
    dels = live_deletes(t)
    refs = Counter(dels.column("referenced_data_file").to_pylist())
    assert refs and max(refs.values()) == 1
    assert t.current_snapshot().summary.get_int("removed-dvs") >= 1
    want = _expect(lambda d: pc.or_(pc.less(d["id"], 40), pc.equal(d["s"], "s150")))
    _check_peers(t, want, duckdb_con)
    # surviving rows keep their row ids
    after = ours(t, "_row_id")
    kept = before.filter(pc.is_in(before["id"], value_set=after["id"]))
    assert kept.column("_row_id").to_pylist() == after.column("_row_id").to_pylist()
    head = t.current_snapshot().snapshot_id
    t.delete("id > 100000")  # nothing matches: no commit
    assert t.current_snapshot().snapshot_id == head and len(t.snapshots()) == 4


def _avro_delete_entries(t: Any) -> list[dict[str, Any]]:
    """The live delete-file entries of the current snapshot, decoded by fastavro."""

    def records(location: str) -> list[dict[str, Any]]:
        with t.io.new_input(location).open() as f:
            return list(fastavro.reader(io.BytesIO(f.read())))

    out = []
    for m in records(t.current_snapshot().manifest_list):
        if m["content"] == 1:
            out += [e["data_file"] for e in records(m["manifest_path"]) if e["status"] != 2]
    return out


def test_mor_delete_v2_position_files(tmp_path: Path, duckdb_con: Any) -> None:
    t = _table(tmp_path, 2, MOR)
    t.delete("id in (3, 4, 5, 150, 199)")
    dels = live_deletes(t)
    assert set(dels.column("file_format").to_pylist()) == {"PARQUET"}
    assert sum(dels.column("record_count").to_pylist()) == 5
    # each file names its one data file in the manifest (field 143, optional in v2), as
    # Iceberg Java's v2 writer does; read with fastavro, not icefloe's manifest reader
    entries = _avro_delete_entries(t)
    assert len(entries) == dels.num_rows
    for e in entries:
        named = pq.read_table(e["file_path"].removeprefix("file://"), columns=["file_path"])
        assert set(named.column(0).to_pylist()) == {e["referenced_data_file"]}
        assert e["referenced_data_file"] in live_data_files(t)
    t.delete("id = 6")
    want = _expect(lambda d: pc.is_in(d["id"], value_set=pc.cast([3, 4, 5, 6, 150, 199], "int64")))
    _check_peers(t, want, duckdb_con)


@pytest.mark.parametrize(
    ("version", "warehouse"), versions_and_stores(1, 2, 3), indirect=["warehouse"]
)
def test_cow_delete_rewrites_and_keeps_lineage(
    tmp_path: Path, version: int, warehouse: Warehouse, duckdb_con: Any
) -> None:
    t = _table(tmp_path, version, {}, warehouse=warehouse)
    files_before = live_data_files(t)
    before = ours(t, "_row_id") if version >= 3 else None
    t.delete("id >= 10 and id < 15")
    snap = t.current_snapshot()
    assert snap.summary.operation == "overwrite"
    assert live_deletes(t).num_rows == 0
    assert snap.summary.get_int("deleted-data-files") >= 1
    assert snap.summary.get_int("added-data-files") >= 1
    want = _expect(lambda d: pc.and_(pc.greater_equal(d["id"], 10), pc.less(d["id"], 15)))
    _check_peers(t, want, duckdb_con)
    assert len(set(files_before) - set(live_data_files(t))) == snap.summary.get_int(
        "deleted-data-files"
    )
    if before is not None:
        after = ours(t, "_row_id", "_last_updated_sequence_number")
        kept = before.filter(pc.is_in(before["id"], value_set=after["id"]))
        assert kept.column("_row_id").to_pylist() == after.column("_row_id").to_pylist()
        # rows copied into new files keep the sequence number they were last updated at
        assert set(after.column("_last_updated_sequence_number").to_pylist()) <= {1, 2}


def test_cow_whole_file_deletes_without_rewrite(tmp_path: Path, duckdb_con: Any) -> None:
    t = _table(tmp_path, 2, {})
    # ts is hourly from 2024-01-01: the first day is exactly ids 0..23, proven by partition
    t.delete("ts < '2024-01-02T00:00:00'")
    snap = t.current_snapshot()
    assert snap.summary.operation == "delete"
    assert snap.summary.get("added-data-files") is None
    assert snap.summary.get_int("deleted-records") == 24
    want = _expect(lambda d: pc.less(d["id"], 24))
    _check_peers(t, want, duckdb_con)
    # a filter matching every live row of some files (not provable by partition): no rewrite
    (tmp_path / "b").mkdir()
    t2 = _table(tmp_path / "b", 2, {}, PartitionSpec())
    t2.delete("id >= 0")
    assert t2.current_snapshot().summary.get("added-data-files") is None
    assert ours(t2).num_rows == 0


def test_mor_delete_then_cow_delete_applies_dvs(tmp_path: Path, duckdb_con: Any) -> None:
    t = _table(tmp_path, 3, MOR)
    t.delete("id < 5")
    t.set_properties({"write.delete.mode": "copy-on-write"})
    t.delete("id = 7")
    assert live_deletes(t).num_rows < 100  # the DVs of rewritten files were removed with them
    refs = set(live_deletes(t).column("referenced_data_file").to_pylist())
    assert refs <= set(live_data_files(t))
    want = _expect(lambda d: pc.or_(pc.less(d["id"], 5), pc.equal(d["id"], 7)))
    _check_peers(t, want, duckdb_con)


@pytest.mark.parametrize("version", [2, 3])
def test_cow_rewrite_keeps_equality_deletes_outside_the_filter(
    tmp_path: Path, version: int, duckdb_con: Any
) -> None:
    """Regression: the planner prunes delete files by their metrics against the filter, which
    is right for reads but lost an equality delete (bounds id=150) when a copy-on-write delete
    of id=151 rewrote the file, bringing row 150 back."""
    t = _table(tmp_path, version, {}, spec=PartitionSpec())
    t.delete_by_keys({"id": [150]}, ["id"])
    t.delete("id = 151")
    want = _expect(lambda d: pc.is_in(d["id"], pa.array([150, 151], pa.int64())))
    assert checksum(ours(t)) == checksum(want)  # PyIceberg 0.12 reads no equality deletes
    assert duckdb_checksum(duckdb_con, t) == checksum(want)
    t.overwrite(rows(152, 1), overwrite_filter="id = 152")
    assert 150 not in ours(t).column("id").to_pylist()


def test_bad_mode_and_v1_mor(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"write\.delete\.mode='sideways'"):
        _table(tmp_path / "refused", 2, {"write.delete.mode": "sideways"})
    t = _table(tmp_path, 2, {})
    set_properties_elsewhere(tmp_path, "ns.t", {"write.delete.mode": "sideways"})
    t.refresh()
    with pytest.raises(ValidationError, match="sideways"):
        t.delete("id = 1")
    with pytest.raises(ValidationError):
        t.delete("nope = 1")


def test_delete_and_upsert_on_a_branch_leave_main_untouched(tmp_path: Path) -> None:
    t = _table(tmp_path, 3, MOR)
    main_head = t.current_snapshot().snapshot_id
    t.delete("id < 10", branch="audit")  # the branch forks from main
    t.upsert(rows(195, 10), ["id"], branch="audit")
    assert t.current_snapshot().snapshot_id == main_head
    assert checksum(ours(t)) == checksum(rows(0, 200))
    branch = ours(t, ref="audit")
    assert sorted(branch["id"].to_pylist()) == list(range(10, 205))
    # the branch's DVs live only in the branch's snapshots
    assert live_deletes(t).num_rows == 0


def test_a_change_whose_starting_history_expired_says_so(tmp_path: Path) -> None:
    """A delete whose starting snapshot another writer expired before it committed is refused
    (its concurrent commits cannot be checked) with a message saying the history is gone, not
    that the snapshot left the branch."""
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.exceptions import CommitConflictError

    c = SqlCatalog("x", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    c.create_namespace("db")
    props = {"format-version": "3", "write.delete.mode": "merge-on-read"}
    t = c.create_table("db.t", pa.schema([pa.field("id", pa.int64())]), properties=props)
    for i in range(3):
        t.append(pa.table({"id": pa.array([i * 10 + j for j in range(5)], pa.int64())}))
    other = c.load_table("db.t")
    expired = "is no longer in the table \\(expired"
    with pytest.raises(CommitConflictError, match=expired), t.transaction() as tx:
        tx.delete("id = 1")
        other.append(pa.table({"id": pa.array([99], pa.int64())}))
        other.expire_snapshots(older_than_ms=2**62, retain_last=1)
    assert 1 in c.load_table("db.t").scan().to_arrow()["id"].to_pylist()


def test_deletes_of_whole_65536_row_blocks_apply(tmp_path: Path, duckdb_con: Any) -> None:
    """A deletion vector stores a run covering a whole block of 65,536 positions as a run
    container; the roaring crate's block iteration yielded nothing for it, so every read kept
    those rows (and an upsert took them for live). DuckDB is the independent reader."""
    from icefloe.catalog.sql import SqlCatalog

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table(
        "db.t",
        pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())]),
        properties={"format-version": "3", "write.delete.mode": "merge-on-read"},
    )
    n = 200_000
    t.append(pa.table({"id": pa.array(range(n), pa.int64()), "v": ["x"] * n}))
    t.delete("id < 65536 or (id >= 131072 and id < 196608) or id = 199999")
    kept = [i for i in range(n) if 65536 <= i < 131072 or 196608 <= i < 199999]
    t.refresh()
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == kept
    assert t.scan().count() == len(kept)
    assert t.scan(row_filter="id < 70000").to_arrow().num_rows == 70000 - 65536
    assert duckdb_checksum(duckdb_con, t) == (len(kept), sum(kept))
    upsert = t.upsert(pa.table({"id": pa.array([5], pa.int64()), "v": ["y"]}), ["id"])
    assert (upsert.rows_updated, upsert.rows_inserted) == (0, 1)
