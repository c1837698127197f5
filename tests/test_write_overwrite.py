"""overwrite (full, by filter with copy-on-write), dynamic partition overwrite and add_files."""

from __future__ import annotations

import datetime as dt
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from icefloe.arrow_schema import schema_to_arrow
from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.scan.manifests import manifest_entries
from icefloe.table.producer import SnapshotProducer
from icefloe.write import DataFile
from support.s3 import Warehouse, versions_and_stores
from support.write_util import (
    SCHEMA,
    SPEC,
    catalog,
    checksum,
    duckdb_checksum,
    pyiceberg_read,
    rows,
)


def _live(table: Any) -> pa.Table:
    batches = [
        b.filter(pc.not_equal(b["status"], 2))
        for _, b in manifest_entries(table.io, table.current_snapshot(), 0)
    ]
    return pa.Table.from_batches(batches)


def _expect(table: Any, want: pa.Table, con: Any) -> None:
    assert checksum(pyiceberg_read(table)) == checksum(want)
    assert duckdb_checksum(con, table) == checksum(want)


@pytest.mark.parametrize(
    ("version", "warehouse"), versions_and_stores(1, 2, 3), indirect=["warehouse"]
)
def test_full_overwrite(
    tmp_path: Path, version: int, warehouse: Warehouse, duckdb_con: Any
) -> None:
    t = catalog(tmp_path, warehouse).create_table(
        "ns.t", SCHEMA, partition_spec=SPEC, format_version=version
    )
    t.append(rows(0, 100))
    before = _live(t).num_rows
    t.overwrite(rows(500, 7))
    snap = t.current_snapshot()
    assert snap is not None and snap.summary is not None
    assert snap.summary.operation == "overwrite"
    assert snap.summary.get_int("deleted-data-files") == before
    assert snap.summary.get_int("deleted-records") == 100
    assert snap.summary.get_int("total-records") == 7
    _expect(t, rows(500, 7), duckdb_con)


@pytest.mark.parametrize(
    ("version", "warehouse"), versions_and_stores(2, 3), indirect=["warehouse"]
)
def test_overwrite_by_filter_rewrites_partial_files(
    tmp_path: Path, version: int, warehouse: Warehouse, duckdb_con: Any
) -> None:
    t = catalog(tmp_path, warehouse).create_table(
        "ns.t", SCHEMA, partition_spec=SPEC, format_version=version
    )
    old = rows(0, 200)
    t.append(old)
    if version == 3:
        ids_before = _row_ids(t)
    # `id < 50` cuts through bucket partitions: files are read and partly rewritten.
    t.overwrite(rows(1000, 5), "id < 50")
    keep = old.filter(pc.greater_equal(old["id"], 50))
    _expect(t, pa.concat_tables([keep, rows(1000, 5)]), duckdb_con)
    snap = t.current_snapshot()
    assert snap is not None and snap.summary is not None
    assert (
        snap.summary.get_int(
            "deleted-records",
        )
        is not None
    )
    assert snap.summary.get_int("total-records") == keep.num_rows + 5
    if version == 3:
        after = _row_ids(t)
        for k, rid in after.items():  # surviving rows keep their row ids
            if k < 1000:
                assert ids_before[k] == rid
        assert set(after) == set(keep["id"].to_pylist()) | set(range(1000, 1005))
    # A filter on the partition (a whole day) removes whole files and adds none.
    t.overwrite(rows(0, 0), "ts < '2024-01-04T00:00:00'")
    cutoff = pa.scalar(dt.datetime(2024, 1, 4), pa.timestamp("us"))
    both = pa.concat_tables([keep, rows(1000, 5)])
    _expect(t, both.filter(pc.greater_equal(both["ts"], cutoff)), duckdb_con)
    snap = t.current_snapshot()
    assert snap is not None and snap.summary is not None
    assert snap.summary.operation == "overwrite"
    assert snap.summary.get_int("added-data-files") is None
    assert snap.summary.get_int("deleted-data-files")


def _row_ids(table: Any) -> dict[int, int]:
    """id -> _row_id, computed from the files and the manifests (first_row_id + position)."""
    out: dict[int, int] = {}
    live = _live(table)
    for path, first in zip(
        live["file_path"].to_pylist(), live["first_row_id"].to_pylist(), strict=True
    ):
        data = pq.read_table(table.io.new_input(path).open())
        ids = data["id"].to_pylist()
        if "_row_id" in data.column_names:
            stored = data["_row_id"].to_pylist()
            rids = [s if s is not None else first + i for i, s in enumerate(stored)]
        else:
            rids = [first + i for i in range(len(ids))]
        out.update(zip(ids, rids, strict=True))
    return out


def test_overwrite_respects_existing_position_deletes(tmp_path: Path, duckdb_con: Any) -> None:
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, format_version=2)
    t.append(rows(0, 20))
    (path,) = _live(t)["file_path"].to_pylist()
    schema = pa.schema(
        [
            pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
            pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"}),
        ]
    )
    dpath = f"{t.location}/data/del.parquet"
    pq.write_table(pa.table({"file_path": [path], "pos": [15]}, schema=schema), dpath[7:])
    with t.transaction() as tx:
        p = SnapshotProducer(tx)
        p.add_delete_files(
            [
                DataFile(
                    dpath,
                    1,
                    Path(dpath[7:]).stat().st_size,
                    content=1,
                    # v2 has no referenced_data_file: equal file_path bounds scope it.
                    lower_bounds={2147483546: path.encode()},
                    upper_bounds={2147483546: path.encode()},
                )
            ]
        )
        p.commit()
    t.overwrite(rows(0, 0), "id < 5")
    want = rows(0, 20).filter(
        pc.and_(pc.greater_equal(rows(0, 20)["id"], 5), pc.not_equal(rows(0, 20)["id"], 15))
    )
    _expect(t, want, duckdb_con)
    snap = t.current_snapshot()
    assert snap is not None and snap.summary is not None
    # The file-scoped delete file went with its data file.
    assert snap.summary.get_int("removed-position-delete-files") == 1
    assert snap.summary.get_int("total-delete-files") == 0


def test_overwrite_conflicts_with_concurrent_matching_append(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=2)
    t.append(rows(0, 48))
    other = cat.load_table("ns.t")
    other.append(rows(5, 1))  # same day as the filter: a real conflict
    with pytest.raises(CommitConflictError, match="concurrent"):
        t.overwrite(rows(100, 1), "ts < '2024-01-02T00:00:00'")
    # Data outside the filter is no conflict: the overwrite is rebuilt and commits.
    t.refresh()
    stale = cat.load_table("ns.t")
    t.append(rows(200, 1))  # 2024-01-09
    stale.overwrite(rows(0, 0), "ts < '2024-01-02T00:00:00'")
    got = pyiceberg_read(stale.refresh())
    assert 200 in got["id"].to_pylist() and 0 not in got["id"].to_pylist()


@pytest.mark.parametrize("isolation", ["serializable", "snapshot"])
def test_unpartitioned_overwrite_checks_concurrent_appends_by_column_bounds(
    tmp_path: Path, isolation: str
) -> None:
    """Without partitions, the files a concurrent writer appended are told apart by their
    column bounds: only one that may hold rows the filter matches is a conflict (and only
    under serializable isolation)."""
    cat = catalog(tmp_path)
    t = cat.create_table(
        "ns.t",
        SCHEMA,
        format_version=2,
        properties={"write.delete.isolation-level": isolation},
    )
    t.append(rows(0, 20))
    for other_rows, conflict in [(rows(100, 5), False), (rows(5, 1), isolation == "serializable")]:
        stale = cat.load_table("ns.t")
        cat.load_table("ns.t").append(other_rows)
        if conflict:
            with pytest.raises(CommitConflictError, match="may hold rows"):
                stale.overwrite(rows(1000, 1), "id < 10")
            continue
        stale.overwrite(rows(1000, 1), "id < 10")
    got = sorted(pyiceberg_read(t.refresh())["id"].to_pylist())
    kept = [*range(10, 20), *range(100, 105)]
    # snapshot isolation: the second overwrite matched nothing it saw and kept the new id 5
    added = [1000] if isolation == "serializable" else [1000, 1000]
    assert got == sorted([*kept, 5, *added])


@pytest.mark.parametrize("version", [2, 3])
def test_dynamic_partition_overwrite(tmp_path: Path, version: int, duckdb_con: Any) -> None:
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=version)
    t.append(rows(0, 100))
    new = rows(0, 24).set_column(1, "s", pa.array(["new"] * 24))  # day 1, every bucket touched?
    t.dynamic_partition_overwrite(new)
    got = pyiceberg_read(t)
    # Partitions of the new rows hold only new rows; all other rows are untouched.
    new_parts = {(p["ts_day"], p["id_bucket"]) for p in _new_partitions(t)}
    assert got.num_rows == 100
    assert sorted(got.filter(pc.equal(got["s"], "new"))["id"].to_pylist()) == list(range(24))
    assert duckdb_checksum(duckdb_con, t) == checksum(got)
    assert new_parts
    with pytest.raises(ValidationError, match="partitioned"):
        catalog(tmp_path / "u").create_table("ns.u", SCHEMA).dynamic_partition_overwrite(new)


@pytest.mark.parametrize("float_type", [pa.float64(), pa.float32()])
def test_every_nan_is_one_identity_partition(tmp_path: Path, float_type: pa.DataType) -> None:
    """NaNs of other payloads (numpy's ``inf - inf`` sets the sign bit) are one partition, as
    Java's double comparison has it: one append writes one NaN file, and a dynamic overwrite
    with a NaN row replaces the NaN rows of every payload, the earlier appends' included."""
    from icefloe.partitioning import PartitionField, PartitionSpec
    from icefloe.transforms import parse_transform

    signed_nan = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
    schema = pa.schema([("f", float_type), ("v", pa.int64())])
    spec = PartitionSpec(PartitionField(1, 1000, parse_transform("identity"), "f"))
    t = catalog(tmp_path).create_table("ns.n", schema, partition_spec=spec)

    def data(f: list[float], v: list[int]) -> pa.Table:
        return pa.table({"f": pa.array(f, float_type), "v": v}, schema=schema)

    t.append(data([float("nan"), signed_nan, 1.0, -0.0, 0.0], [1, 2, 3, 4, 5]))
    assert len(t.inspect.partitions()) == 4  # NaN, 1.0, -0.0, 0.0
    t.append(data([signed_nan], [6]))
    assert len(t.inspect.partitions()) == 4
    t.dynamic_partition_overwrite(data([float("nan")], [10]))
    assert sorted(t.scan().to_arrow()["v"].to_pylist()) == [3, 4, 5, 10]


def _new_partitions(table: Any) -> list[dict[str, Any]]:
    snap = table.current_snapshot()
    live = _live(table)
    mine = live.filter(pc.equal(live["snapshot_id"], snap.snapshot_id))
    return list(mine["partition"].to_pylist())


def _with_ids(table: pa.Table) -> pa.Table:
    target = schema_to_arrow(SCHEMA)
    return table.select(target.names).cast(target)


def test_add_files(tmp_path: Path, duckdb_con: Any) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, format_version=2)
    src = tmp_path / "ext"
    src.mkdir()
    a, b = rows(0, 30), rows(30, 30)
    pq.write_table(_with_ids(a), src / "a.parquet")
    pq.write_table(_with_ids(b), src / "b.parquet", row_group_size=10)
    paths = [(src / "a.parquet").as_uri(), (src / "b.parquet").as_uri()]
    t.add_files(paths)
    _expect(t, pa.concat_tables([a, b]), duckdb_con)
    live = _live(t)
    # Footer metrics agree with what our own writer computes for the same rows.
    t2 = catalog(tmp_path / "w").create_table("ns.t", SCHEMA, format_version=2)
    t2.append(a)
    ours = _live(t2).to_pylist()[0]
    theirs = next(r for r in live.to_pylist() if r["file_path"].endswith("a.parquet"))
    for key in ("value_counts", "null_value_counts", "lower_bounds", "upper_bounds"):
        assert dict(theirs[key]) == dict(ours[key]), key
    assert (
        len(
            next(r for r in live.to_pylist() if r["file_path"].endswith("b.parquet"))[
                "split_offsets"
            ]
        )
        == 3
    )
    with pytest.raises(ValidationError, match="already a data file"):
        t.add_files(paths[:1])
    pq.write_table(a, src / "noids.parquet")
    with pytest.raises(ValidationError, match="no field ids"):
        t.add_files([(src / "noids.parquet").as_uri()])
    from icefloe.name_mapping import create_mapping

    t.set_properties({"schema.name-mapping.default": create_mapping(t.schema()).to_json_string()})
    t.add_files([(src / "noids.parquet").as_uri()])
    assert checksum(pyiceberg_read(t)) == checksum(pa.concat_tables([a, b, a]))
    bad = _with_ids(a).set_column(
        1, pa.field("s", pa.int64(), metadata={b"PARQUET:field_id": b"2"}), pa.array(range(30))
    )
    pq.write_table(bad, src / "bad.parquet")
    with pytest.raises(ValidationError, match="'s'"):
        t.add_files([(src / "bad.parquet").as_uri()])


def test_add_files_infers_partitions(tmp_path: Path, duckdb_con: Any) -> None:
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=2)
    src = tmp_path / "ext"
    src.mkdir()
    data = rows(0, 400)
    one = data.filter(pc.equal(data["id"], 8))  # a single (day, bucket) partition
    pq.write_table(_with_ids(one), src / "one.parquet")
    t.add_files([(src / "one.parquet").as_uri()])
    (part,) = _live(t)["partition"].to_pylist()
    t2 = catalog(tmp_path / "w").create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=2)
    t2.append(one)
    assert part == _live(t2)["partition"].to_pylist()[0]
    pq.write_table(_with_ids(data), src / "many.parquet")
    with pytest.raises(ValidationError, match="more than one partition"):
        t.add_files([(src / "many.parquet").as_uri()])
    _expect(t, one, duckdb_con)


def test_overwrite_on_a_branch_and_in_a_transaction(tmp_path: Path, duckdb_con: Any) -> None:
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=3)
    t.append(rows(0, 50))
    main = t.current_snapshot()
    assert main is not None
    t.append(rows(50, 10), branch="dev")
    t.overwrite(rows(100, 2), "id < 20", branch="dev")
    assert t.current_snapshot() == main  # main untouched
    from pyiceberg.table import StaticTable

    dev = StaticTable.from_metadata(t.metadata_location).scan(
        snapshot_id=t.metadata.refs["dev"].snapshot_id
    )
    got = sorted(dev.to_arrow()["id"].to_pylist())
    assert got == [*range(20, 60), 100, 101]
    # Several operations in one transaction: one commit, each its own snapshot, in order.
    with t.transaction() as tx:
        tx.overwrite(rows(200, 3), "id >= 40")
        tx.append(rows(300, 1))
    snaps = t.snapshots()
    assert [s.summary.operation for s in snaps[-2:] if s.summary] == ["overwrite", "append"]
    want = pa.concat_tables([rows(0, 40), rows(200, 3), rows(300, 1)])
    _expect(t, want, duckdb_con)


def test_dynamic_overwrite_sees_concurrent_data_in_merged_manifests(tmp_path: Path) -> None:
    """Data another writer added to a replaced partition is a conflict even when a later
    commit merged its manifest (its entries are then ``EXISTING`` in the merged one)."""
    t = catalog(tmp_path).create_table(
        "ns.t",
        SCHEMA,
        partition_spec=SPEC,
        format_version=2,
        properties={"commit.manifest.min-count-to-merge": "2"},
    )
    t.append(rows(0, 1))
    stale = t.catalog.load_table("ns.t")
    t.append(rows(0, 1))  # the same partition as the overwrite's row
    t.append(rows(200, 1))  # another partition; merges the manifests
    statuses = [
        e["status"]
        for _, b in manifest_entries(t.io, t.current_snapshot(), content=0)
        for e in b.to_pylist()
    ]
    assert 0 in statuses  # merged: the earlier appends' entries are EXISTING now
    with pytest.raises(CommitConflictError, match="replaced partition"):
        stale.dynamic_partition_overwrite(rows(0, 1))
    t.dynamic_partition_overwrite(rows(0, 1))
    assert t.refresh().current_snapshot().summary.get("replace-partitions") == "true"


def test_dynamic_overwrite_replaces_what_a_concurrent_compaction_wrote(tmp_path: Path) -> None:
    """A compaction of a replaced partition adds no rows: the overwrite commits over it and
    replaces the compacted file too (Java validates only appends and overwrites)."""
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=2)
    t.append(rows(0, 1))
    t.append(rows(0, 1))
    t.append(rows(200, 1))
    stale = t.catalog.load_table("ns.t")
    assert t.rewrite_data_files().rewritten_data_files == 2
    assert t.current_snapshot().operation == "replace"
    new = rows(0, 1).set_column(1, "s", pa.array(["new"]))
    stale.dynamic_partition_overwrite(new)
    got = t.refresh().scan().to_arrow().sort_by("id")
    assert got["id"].to_pylist() == [0, 200]
    assert got["s"].to_pylist()[0] == "new"


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_overwrite_of_none_is_refused_and_keeps_every_row(tmp_path: Path, mode: str) -> None:
    """``table.overwrite(None)`` (an unset variable) committed an overwrite that deleted every
    row; ``append(None)`` is refused, and so is this now, committing nothing."""
    t = catalog(tmp_path).create_table(
        "ns.t", SCHEMA, partition_spec=SPEC, properties={"write.delete.mode": mode}
    )
    t.append(rows(0, 3))
    head = t.current_snapshot()
    with pytest.raises(ValidationError, match="got None; to remove rows"):
        t.overwrite(None)
    with pytest.raises(ValidationError, match="got None"), t.transaction() as tx:
        tx.overwrite(None, "id > 0")
    assert t.refresh().current_snapshot() == head and t.scan().count() == 3
