"""``table.inspect`` over the whole history: ``metadata_log_entries``, ``all_manifests``,
``all_entries``, ``all_files``, ``all_data_files`` and ``all_delete_files`` compared with PyIceberg
0.12 on the same SQLite catalog, on v2 and v3 tables with appends, merge-on-read deletes (v2
position and equality delete files, v3 deletion vectors), an overwrite that removes files, a
compaction, a manifest rewrite and an expired snapshot. PyIceberg has no ``all_entries``: its
manifest reader gives the oracle, as Java's ``AllEntriesTable`` defines the table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.schema import Schema
from support.evolution import SIMPLE_SCHEMA, Catalogs, shared_catalogs

_MOR = {"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}


def _rows_of(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "data": [f"r{i % 2}" for i in ids]})


@pytest.fixture(params=[2, 3], ids=["v2", "v3"])
def history(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Catalogs, Any, Any, int]:
    """A partitioned table whose kept snapshots reach files the current one no longer has; the
    id of its expired first snapshot last."""
    c = shared_catalogs(tmp_path)
    t = c.ours.create_table(
        "db.t", Schema.from_json(SIMPLE_SCHEMA), format_version=request.param, properties=_MOR
    )
    with t.update_spec() as u:
        u.add_field("data", "identity")
    # files of two rows where a delete hits one (a file whose metrics prove a delete for every
    # row is dropped whole, with no delete file)
    t.append(_rows_of([1, 2, 3, 4]))
    t.append(_rows_of([5, 6]))
    t.append(_rows_of([7, 8, 9]))
    t.delete("id == 2")  # v2: a position delete file, v3: a deletion vector
    t.delete("id == 7")
    if request.param == 2:
        t.delete_by_keys({"id": [5]}, ["id"])  # an equality delete file
    t.overwrite(_rows_of([10, 11]), "id >= 8")  # removes the file of 8
    t.rewrite_data_files()  # compaction: the data and position delete files so far removed
    t.rewrite_manifests()  # the compacted files again, as existing entries of new manifests
    t.append(_rows_of([20]))
    first = t.refresh().snapshots()[0].snapshot_id
    t.expire_snapshots(snapshot_ids=[first])
    return c, t.refresh(), c.theirs.load_table("db.t"), first


def _plain(v: Any) -> Any:
    """A value comparable across icefloe and PyIceberg: maps as sorted pairs, partition
    structs as sorted items, timestamps as epoch ms (PyIceberg's carry no zone)."""
    if isinstance(v, list) and v and isinstance(v[0], tuple):
        return tuple(sorted(v))
    if isinstance(v, dict):
        return tuple(sorted(v.items()))
    if isinstance(v, list):
        return tuple(v)
    if hasattr(v, "timestamp"):
        if v.tzinfo is None:
            v = v.replace(tzinfo=__import__("datetime").timezone.utc)
        return int(v.timestamp() * 1000)
    return v


def _rows(table: pa.Table, cols: list[str]) -> list[tuple[Any, ...]]:
    return sorted(
        (tuple(_plain(r[c]) for c in cols) for r in table.select(cols).to_pylist()), key=repr
    )


def _same_types(ours: pa.Table, theirs: pa.Table, cols: list[str]) -> None:
    for c in cols:
        assert ours.schema.field(c).type == theirs.schema.field(c).type, c


def test_metadata_log_entries(history: tuple[Catalogs, Any, Any, int]) -> None:
    _, t, theirs, _ = history
    ours, expected = t.inspect.metadata_log_entries(), theirs.inspect.metadata_log_entries()
    cols = ["timestamp", "file", "latest_snapshot_id", "latest_schema_id", "latest_sequence_number"]
    assert ours.column_names == expected.column_names == cols
    _same_types(ours, expected, cols[1:])
    assert ours.schema.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    assert _rows(ours, cols) == _rows(expected, cols)
    # every previous metadata file and the current one, which names the current snapshot
    assert ours.num_rows == len(t.metadata.metadata_log) + 1
    last = ours.slice(ours.num_rows - 1).to_pylist()[0]
    assert last["file"] == t.metadata_location
    assert last["latest_snapshot_id"] == t.metadata.current_snapshot().snapshot_id
    assert last["latest_sequence_number"] == t.metadata.current_snapshot().sequence_number
    # files written before the first kept snapshot name none
    assert 0 < ours.column("latest_snapshot_id").null_count < ours.num_rows


def test_all_manifests(history: tuple[Catalogs, Any, Any, int]) -> None:
    _, t, theirs, expired = history
    ours, expected = t.inspect.all_manifests(), theirs.inspect.all_manifests()
    assert ours.column_names == expected.column_names
    assert "reference_snapshot_id" in ours.column_names
    _same_types(ours, expected, ours.column_names)
    cols = [c for c in ours.column_names if c != "partition_summaries"]
    assert _rows(ours, cols) == _rows(expected, cols)
    with_summaries = [*cols, "partition_summaries"]
    assert sorted(map(repr, _rows(ours, with_summaries))) == sorted(
        map(repr, _rows(expected, with_summaries))
    )
    # one row per manifest each kept snapshot lists; the expired snapshot's list is gone
    kept = {s.snapshot_id: len(t.inspect.manifests(s.snapshot_id)) for s in t.snapshots()}
    refs = ours.column("reference_snapshot_id").to_pylist()
    assert {sid: refs.count(sid) for sid in set(refs)} == kept
    assert expired not in refs
    assert ours.num_rows > len(set(ours.column("path").to_pylist()))  # shared manifests repeat


def _expected_entries(theirs: Any) -> list[tuple[Any, ...]]:
    """Every entry (deleted ones too) of each distinct manifest a kept snapshot lists."""
    manifests = {m.manifest_path: m for s in theirs.snapshots() for m in s.manifests(theirs.io)}
    return sorted(
        (
            int(e.status.value),
            e.snapshot_id,
            e.sequence_number,
            e.file_sequence_number,
            int(e.data_file.content.value),
            e.data_file.file_path,
            e.data_file.record_count,
            e.data_file.file_size_in_bytes,
        )
        for m in manifests.values()
        for e in m.fetch_manifest_entry(theirs.io, discard_deleted=False)
    )


def test_all_entries(history: tuple[Catalogs, Any, Any, int]) -> None:
    _, t, theirs, _ = history
    ours = t.inspect.all_entries()
    assert ours.column_names == t.inspect.entries().column_names
    assert ours.schema == t.inspect.entries().schema
    got = sorted(
        (
            r["status"],
            r["snapshot_id"],
            r["sequence_number"],
            r["file_sequence_number"],
            r["data_file"]["content"],
            r["data_file"]["file_path"],
            r["data_file"]["record_count"],
            r["data_file"]["file_size_in_bytes"],
        )
        for r in ours.to_pylist()
    )
    assert got == _expected_entries(theirs)  # a multiset: no entry lost or repeated
    assert {r[0] for r in got} == {0, 1, 2}  # existing, added and deleted entries
    # more than the current snapshot's entries: those of the manifests only older ones list
    assert ours.num_rows > t.inspect.entries().num_rows


_FILE_COLS = [
    "content",
    "file_path",
    "file_format",
    "spec_id",
    "partition",
    "record_count",
    "file_size_in_bytes",
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
    "key_metadata",
    "split_offsets",
    "equality_ids",
    "sort_order_id",
]
#: PyIceberg's types of these columns are icefloe's (its ``file_format`` is a dictionary, its
#: partition strings ``large_string`` and its list items nullable).
_TYPED_COLS = [
    "content",
    "file_path",
    "spec_id",
    "record_count",
    "file_size_in_bytes",
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
    "key_metadata",
    "sort_order_id",
]


@pytest.mark.parametrize(
    ("name", "contents"),
    [("all_files", {0, 1, 2}), ("all_data_files", {0}), ("all_delete_files", {1, 2})],
)
def test_all_files(history: tuple[Catalogs, Any, Any, int], name: str, contents: set[int]) -> None:
    _, t, theirs, _ = history
    ours, expected = getattr(t.inspect, name)(), getattr(theirs.inspect, name)()
    assert ours.column_names[: len(_FILE_COLS)] == _FILE_COLS
    assert ours.schema == t.inspect.files().schema
    _same_types(ours, expected, _TYPED_COLS)
    # the same files with the same metadata; each once (PyIceberg repeats a file each manifest
    # lists live, and Java may)
    assert _rows(ours, _FILE_COLS) == sorted(set(_rows(expected, _FILE_COLS)), key=repr)
    paths = ours.column("file_path").to_pylist()
    assert len(paths) == len(set(paths))
    assert set(ours.column("content").to_pylist()) <= contents
    # files the compaction removed are still reachable from the snapshots before it
    current = set(t.inspect.files().column("file_path").to_pylist())
    assert set(paths) - current
    if name == "all_delete_files":
        assert len(set(paths) - current) >= 2  # the compaction applied the position deletes
        if t.metadata.format_version == 3:
            assert set(ours.column("file_format").to_pylist()) == {"PUFFIN"}
    if name == "all_files":
        assert len(expected) > ours.num_rows  # rewrite_manifests listed files again


def test_deletion_vectors_sharing_a_puffin_file_are_each_a_file(tmp_path: Path) -> None:
    """One delete over three data files writes one Puffin file of three deletion vectors:
    three delete files in ``files()`` and in the whole-history tables, as PyIceberg lists."""
    c = shared_catalogs(tmp_path)
    t = c.ours.create_table(
        "db.dv", Schema.from_json(SIMPLE_SCHEMA), format_version=3, properties=_MOR
    )
    with t.update_spec() as u:
        u.add_field("id", "bucket[8]")
    t.append(_rows_of(list(range(40))))
    t.delete("id in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)")
    t.refresh()
    dvs = t.inspect.delete_files()
    assert dvs.num_rows >= 3 and len(set(dvs.column("file_path").to_pylist())) == 1
    theirs = c.theirs.load_table("db.dv")
    # (PyIceberg has no DV columns: the partition tells its DVs apart here)
    cols = ["content", "file_path", "partition", "record_count"]
    for name in ("all_delete_files", "all_files"):
        ours, expected = getattr(t.inspect, name)(), getattr(theirs.inspect, name)()
        assert _rows(ours, cols) == sorted(set(_rows(expected, cols)), key=repr), name
    assert t.inspect.all_delete_files().num_rows == dvs.num_rows
    assert t.inspect.all_files().num_rows == t.inspect.files().num_rows


def test_all_files_leave_out_what_only_expired_snapshots_reach(tmp_path: Path) -> None:
    c = shared_catalogs(tmp_path)
    t = c.ours.create_table("db.x", Schema.from_json(SIMPLE_SCHEMA))
    t.append(_rows_of([1]))
    gone = set(t.refresh().inspect.files().column("file_path").to_pylist())
    t.overwrite(_rows_of([2]))
    assert gone <= set(t.inspect.all_files().column("file_path").to_pylist())
    t.expire_snapshots(snapshot_ids=[t.snapshots()[0].snapshot_id])
    t.refresh()
    theirs = c.theirs.load_table("db.x")
    ours = set(t.inspect.all_files().column("file_path").to_pylist())
    assert ours == set(theirs.inspect.all_files().column("file_path").to_pylist())
    assert not ours & gone
    entries = {r["data_file"]["file_path"] for r in t.inspect.all_entries().to_pylist()}
    assert gone <= entries  # the deleted entry of the overwrite's manifest names it


def test_no_snapshot_gives_the_columns_without_rows(tmp_path: Path) -> None:
    c = shared_catalogs(tmp_path)
    t = c.ours.create_table("db.e", Schema.from_json(SIMPLE_SCHEMA))
    theirs = c.theirs.load_table("db.e")
    for name in ("all_manifests", "all_files", "all_data_files", "all_delete_files"):
        ours, expected = getattr(t.inspect, name)(), getattr(theirs.inspect, name)()
        assert ours.num_rows == expected.num_rows == 0, name
        assert set(expected.column_names) - {"readable_metrics"} <= set(ours.column_names)
    assert t.inspect.all_files().schema == t.inspect.files().schema
    assert t.inspect.all_entries().schema == t.inspect.entries().schema
    assert t.inspect.all_entries().num_rows == 0
    log = t.inspect.metadata_log_entries()
    cols = log.column_names
    assert _rows(log, cols) == _rows(theirs.inspect.metadata_log_entries(), cols)
    assert log.num_rows == 1 and log.column("latest_snapshot_id").null_count == 1
