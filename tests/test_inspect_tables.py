"""``table.inspect``: the metadata tables compared with PyIceberg 0.12's on the same table
(partitioned, with an evolved spec, an overwrite and a branch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.exceptions import NoSuchSnapshotError
from icefloe.schema import Schema
from support.evolution import SIMPLE_SCHEMA, Catalogs, append_rows, shared_catalogs


@pytest.fixture
def tables(tmp_path: Path) -> tuple[Catalogs, Any, Any]:
    c = shared_catalogs(tmp_path)
    t = c.ours.create_table("db.t", Schema.from_json(SIMPLE_SCHEMA))
    with t.update_spec() as u:
        u.add_field("data", "identity")
    append_rows(c, "t", [1, 2])
    append_rows(c, "t", [3])
    t.refresh()
    with t.update_spec() as u:
        u.add_field("id", "bucket[4]")
    append_rows(c, "t", [4, 5])
    theirs = c.theirs.load_table("db.t")
    theirs.delete("id == 3")
    append_rows(c, "t", [1])  # r1 again: two files in partition data=r1
    t.refresh()
    with t.manage_snapshots() as ms:
        ms.create_tag("first", t.snapshots()[0].snapshot_id)
        ms.create_branch("dev", min_snapshots_to_keep=3)
    return c, t.refresh(), c.theirs.load_table("db.t")


def _rows(table: pa.Table, cols: list[str]) -> list[tuple[Any, ...]]:
    return sorted(tuple(_plain(r[c]) for c in cols) for r in table.select(cols).to_pylist())


def _plain(v: Any) -> Any:
    if isinstance(v, list) and v and isinstance(v[0], tuple):
        return tuple(sorted(v))
    if isinstance(v, dict):
        return tuple(sorted(v.items()))
    if hasattr(v, "timestamp"):
        return (
            int(v.timestamp() * 1000)
            if v.tzinfo
            else int(v.replace(tzinfo=__import__("datetime").timezone.utc).timestamp() * 1000)
        )
    return v


def test_snapshots(tables: tuple[Catalogs, Any, Any]) -> None:
    _, t, theirs = tables
    cols = ["committed_at", "snapshot_id", "parent_id", "operation", "manifest_list", "summary"]
    ours, expected = t.inspect.snapshots(), theirs.inspect.snapshots()
    assert ours.num_rows == len(t.snapshots()) == 5
    assert _rows(ours, cols) == _rows(expected, cols)


def test_history_and_refs(tables: tuple[Catalogs, Any, Any]) -> None:
    _, t, theirs = tables
    cols = ["made_current_at", "snapshot_id", "parent_id", "is_current_ancestor"]
    assert _rows(t.inspect.history(), cols) == _rows(theirs.inspect.history(), cols)
    cols = [
        "name",
        "snapshot_id",
        "max_reference_age_in_ms",
        "min_snapshots_to_keep",
        "max_snapshot_age_in_ms",
    ]
    assert _rows(t.inspect.refs(), cols) == _rows(theirs.inspect.refs(), cols)
    types = dict(
        zip(
            t.inspect.refs().column("name").to_pylist(),
            t.inspect.refs().column("type").to_pylist(),
            strict=True,
        )
    )
    assert types == {"main": "BRANCH", "dev": "BRANCH", "first": "TAG"}
    assert theirs.inspect.refs().column("type").cast(pa.string()).to_pylist() == [
        types[n] for n in theirs.inspect.refs().column("name").to_pylist()
    ]


def test_manifests(tables: tuple[Catalogs, Any, Any]) -> None:
    _, t, theirs = tables
    cols = [
        "content",
        "path",
        "length",
        "partition_spec_id",
        "added_snapshot_id",
        "added_data_files_count",
        "existing_data_files_count",
        "deleted_data_files_count",
        "added_delete_files_count",
        "existing_delete_files_count",
        "deleted_delete_files_count",
    ]
    ours = t.inspect.manifests()
    assert ours.num_rows >= 3
    assert _rows(ours, cols) == _rows(theirs.inspect.manifests(), cols)
    # every summary, bounds as readable strings ('2024-01-02', not their bytes) as PyIceberg's
    summaries = ours.column("partition_summaries").to_pylist()
    expected = theirs.inspect.manifests().column("partition_summaries").to_pylist()
    assert sorted(map(repr, summaries)) == sorted(map(repr, expected))
    assert any(s["lower_bound"] is not None for row in summaries for s in row)


def test_files_and_entries(tables: tuple[Catalogs, Any, Any]) -> None:
    _, t, theirs = tables
    cols = [
        "content",
        "file_path",
        "spec_id",
        "record_count",
        "file_size_in_bytes",
        "column_sizes",
        "value_counts",
        "null_value_counts",
        "lower_bounds",
        "upper_bounds",
    ]
    ours = t.inspect.files()
    assert ours.num_rows == 5  # r1 (spec 1), r2, r4, r5 and r1 again (spec 2)
    assert _rows(ours, cols) == _rows(theirs.inspect.files(), cols)
    part = sorted(
        (r["file_path"], tuple(sorted(r["partition"].items())))
        for r in ours.select(["file_path", "partition"]).to_pylist()
    )
    their_part = sorted(
        (r["file_path"], tuple(sorted(r["partition"].items())))
        for r in theirs.inspect.files().select(["file_path", "partition"]).to_pylist()
    )
    assert part == their_part
    assert t.inspect.data_files().num_rows == 5 and t.inspect.delete_files().num_rows == 0
    first = t.snapshots()[0].snapshot_id
    assert t.inspect.files(first).num_rows == theirs.inspect.files(first).num_rows == 2

    e = t.inspect.entries()
    te = theirs.inspect.entries()
    flat = sorted(
        (
            r["status"],
            r["snapshot_id"],
            r["sequence_number"],
            r["file_sequence_number"],
            r["data_file"]["file_path"],
        )
        for r in e.to_pylist()
    )
    their_flat = sorted(
        (
            r["status"],
            r["snapshot_id"],
            r["sequence_number"],
            r["file_sequence_number"],
            r["data_file"]["file_path"],
        )
        for r in te.to_pylist()
    )
    assert flat == their_flat
    # one type for a file's content wherever it shows, PyIceberg's
    for table in (e, te):
        assert table.schema.field("data_file").type.field("content").type == pa.int8()
    assert ours.schema.field("content").type == pa.int8()


def test_partitions(tables: tuple[Catalogs, Any, Any]) -> None:
    _, t, theirs = tables
    cols = [
        "spec_id",
        "record_count",
        "file_count",
        "total_data_file_size_in_bytes",
        "position_delete_record_count",
        "equality_delete_file_count",
        "last_updated_snapshot_id",
        "last_updated_at",
    ]
    ours = t.inspect.partitions()
    expected = theirs.inspect.partitions()

    def keyed(tab: pa.Table) -> list[tuple[Any, ...]]:
        return sorted(
            (
                (tuple(sorted(r["partition"].items())), *(_plain(r[c]) for c in cols))
                for r in tab.to_pylist()
            ),
            key=repr,
        )

    assert keyed(ours) == keyed(expected)
    by_part = {tuple(sorted(r["partition"].items())): r for r in ours.to_pylist()}
    assert len(by_part) == 5  # r1 under both specs is two partitions


def test_empty_table_and_unknown_snapshot(tmp_path: Path) -> None:
    c = shared_catalogs(tmp_path)
    t = c.ours.create_table("db.e", Schema.from_json(SIMPLE_SCHEMA))
    for name in ("snapshots", "history", "refs", "manifests", "entries", "files", "partitions"):
        assert getattr(t.inspect, name)().num_rows == 0
    with pytest.raises(NoSuchSnapshotError, match="no such snapshot"):
        t.inspect.files(123)


_PARTITION_COUNTS = [
    "record_count",
    "file_count",
    "total_data_file_size_in_bytes",
    "position_delete_record_count",
    "position_delete_file_count",
    "equality_delete_record_count",
    "equality_delete_file_count",
    "last_updated_at",
    "last_updated_snapshot_id",
]


def test_partitions_of_an_unpartitioned_table(tmp_path: Path) -> None:
    """No ``partition`` and ``spec_id`` columns (Java's ``PartitionsTable`` and PyIceberg leave
    them out) and one row for the whole table."""
    c = shared_catalogs(tmp_path)
    props = {"write.delete.mode": "merge-on-read"}
    t = c.ours.create_table("db.u", Schema.from_json(SIMPLE_SCHEMA), properties=props)
    empty = t.inspect.partitions()
    assert empty.column_names == _PARTITION_COUNTS and empty.num_rows == 0
    append_rows(c, "u", [1, 2, 3])
    append_rows(c, "u", [4])
    t.refresh().delete("id == 2")  # a position delete file
    ours, expected = (
        t.refresh().inspect.partitions(),
        c.theirs.load_table("db.u").inspect.partitions(),
    )
    assert ours.column_names == expected.column_names == _PARTITION_COUNTS
    assert ours.schema.field("file_count").type == expected.schema.field("file_count").type
    assert _rows(ours, _PARTITION_COUNTS) == _rows(expected, _PARTITION_COUNTS)
    row = ours.to_pylist()[0]
    assert ours.num_rows == 1 and (row["record_count"], row["file_count"]) == (4, 2)
    assert row["position_delete_file_count"] == 1
    assert t.inspect.partitions(use_statistics=False).column_names == _PARTITION_COUNTS
    # ``icefloe partitions`` still draws the one partition
    from icefloe.cli.analysis import partition_stats

    drawn = [
        (r.label, r.spec_id, r.records, r.files, r.delete_files) for r in partition_stats(t).rows
    ]
    assert drawn == [("(unpartitioned)", 0, 4, 2, 1)]


def test_partitions_of_a_table_partitioned_once(tmp_path: Path) -> None:
    """A spec that had a field keeps the columns, as Java decides (any spec's fields count);
    PyIceberg looks at the specs of the snapshot's manifests only."""
    c = shared_catalogs(tmp_path)
    t = c.ours.create_table("db.p", Schema.from_json(SIMPLE_SCHEMA))
    with t.update_spec() as u:
        u.add_field("data", "identity")
    append_rows(c, "p", [1, 2])
    with t.refresh().update_spec() as u:
        u.remove_field("data")
    append_rows(c, "p", [3])
    ours, expected = (
        t.refresh().inspect.partitions(),
        c.theirs.load_table("db.p").inspect.partitions(),
    )
    assert (
        ours.column_names == expected.column_names == ["partition", "spec_id", *_PARTITION_COUNTS]
    )
    cols = ["partition", "spec_id", *_PARTITION_COUNTS]

    def keyed(tab: pa.Table) -> list[tuple[Any, ...]]:  # partition values may be null
        return sorted((tuple(_plain(r[k]) for k in cols) for r in tab.to_pylist()), key=repr)

    assert keyed(ours) == keyed(expected)
    assert ours.num_rows == 3  # r1, r2 and the unpartitioned file (data null)
    # only unpartitioned files left: still the columns (PyIceberg 0.12 drops them here)
    t.overwrite(pa.table({"id": pa.array([9], pa.int64()), "data": ["r9"]}))
    now = t.refresh().inspect.partitions()
    assert now.column_names == ["partition", "spec_id", *_PARTITION_COUNTS]
    assert [r["partition"] for r in now.to_pylist()] == [{"data": None}]


def _partition_rows(t: Any, use_statistics: bool) -> pa.Table:
    """``t.inspect.partitions()`` from the manifests, or from a partition statistics file only
    (the manifests deleted from disk first)."""
    if not use_statistics:
        return t.inspect.partitions(use_statistics=False)
    t.compute_partition_statistics()
    for m in t.inspect.manifests().to_pylist():
        Path(m["path"].removeprefix("file://")).unlink()
    return t.inspect.partitions()


@pytest.mark.parametrize("use_statistics", [False, True])
def test_partitions_after_a_partition_field_rename(tmp_path: Path, use_statistics: bool) -> None:
    """Files written before and after a partition field was renamed are one partition, as in
    Iceberg Java's ``partitionSpecRenameFields`` test: each partition was listed once per spec,
    with half its files. (PyIceberg 0.12 keys by field name and also lists them twice.) The
    partition statistics file keeps one row per spec, as Java writes it."""
    c = shared_catalogs(tmp_path)
    rows = pa.table({"data": ["c1", "c2"], "category": ["d1", "d2"]})
    t = c.ours.create_table("db.t", rows.schema, format_version=2)
    with t.update_spec() as u:
        u.add_field("data", "identity")
        u.add_field("category", "identity")
    t.append(rows)
    with t.update_spec() as u:
        u.rename_field("category", "category_another_name")
    t.append(rows)
    t.refresh()
    parts = _partition_rows(t, use_statistics)
    assert sorted(
        (tuple(r["partition"].values()), r["spec_id"], r["file_count"], r["record_count"])
        for r in parts.to_pylist()
    ) == [(("c1", "d1"), t.spec().spec_id, 2, 2), (("c2", "d2"), t.spec().spec_id, 2, 2)]
    newest = t.current_snapshot()
    assert set(parts.column("last_updated_snapshot_id").to_pylist()) == {newest.snapshot_id}
    if use_statistics:
        assert t.partition_statistics().num_rows == 4


@pytest.mark.parametrize("use_statistics", [False, True])
def test_partitions_after_a_partition_source_column_is_dropped(
    tmp_path: Path, use_statistics: bool
) -> None:
    """A partition field whose source column was dropped leaves the unified partition type, so
    files of the spec that had it and of the spec without it are one partition per bucket (as
    Java's ``PartitionsTable`` groups them; PyIceberg 0.12 cannot list them): each bucket was
    listed once per spec."""
    c = shared_catalogs(tmp_path)
    schema = pa.schema([("id", pa.int64()), ("cat", pa.string())])
    t = c.ours.create_table("db.t", schema, format_version=2)
    with t.update_spec() as u:
        u.add_field("cat", "identity")
        u.add_field("id", "bucket[3]")
    ids = pa.array([1, 2, 3, 4], pa.int64())
    t.append(pa.table({"id": ids, "cat": ["a", "b", "a", "b"]}))
    with t.update_spec() as u:
        u.remove_field("cat")
    with t.update_schema() as u:
        u.delete_column("cat")
    t.append(pa.table({"id": ids}))
    t.refresh()
    files = t.inspect.files().to_pylist()  # the oracle: data files and rows per bucket
    expected: dict[int, list[int]] = {}
    for f in files:
        counts = expected.setdefault(f["partition"]["id_bucket_3"], [0, 0])
        counts[0] += 1
        counts[1] += f["record_count"]
    parts = _partition_rows(t, use_statistics)
    got = {
        r["partition"]["id_bucket_3"]: [r["file_count"], r["record_count"]]
        for r in parts.to_pylist()
    }
    assert parts.num_rows == len(got) == len(expected) and got == expected
    assert set(parts.column("spec_id").to_pylist()) == {t.spec().spec_id}


@pytest.mark.parametrize("use_statistics", [False, True])
def test_a_spec_lacking_a_field_is_another_partition_than_a_null(
    tmp_path: Path, use_statistics: bool
) -> None:
    """A file whose spec lacks a partition field (shown null) and a file whose spec holds null
    there are two partitions, as Java's ``PartitionsTable`` keys them (by the values and by how
    many of the unified fields the spec has) and PyIceberg 0.12 lists them."""
    c = shared_catalogs(tmp_path)
    t = c.ours.create_table("db.t", Schema.from_json(SIMPLE_SCHEMA))
    with t.update_spec() as u:
        u.add_field("data", "identity")
    t.append(pa.table({"id": pa.array([1], pa.int64()), "data": ["r1"]}))
    with t.refresh().update_spec() as u:
        u.add_field("id", "identity")
    t.refresh().append(pa.table({"id": pa.array([None], pa.int64()), "data": ["r1"]}))
    t.refresh()
    cols = ["partition", "spec_id", "file_count", "record_count"]
    expected = _rows(c.theirs.load_table("db.t").inspect.partitions(), cols)
    r1 = (("data", "r1"), ("id", None))
    assert expected == [(r1, 1, 1, 1), (r1, 2, 1, 1)]
    assert _rows(_partition_rows(t, use_statistics), cols) == expected


def test_partition_fields_are_taken_from_one_array_however_many_specs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table whose spec changed many times: the partition tuple of ``inspect.partitions()``
    and of partition statistics has a field per partition field of every spec, read from a
    chunk per manifest. Each field was taken chunk by chunk (manifests x fields squared: 16
    seconds at 400 specs, where PyIceberg took half a second); now from one array, with the
    same rows as PyIceberg."""
    import pyarrow.compute as pc
    from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSql

    from icefloe.catalog.sql import SqlCatalog

    uri, warehouse = f"sqlite:///{tmp_path}/c.db", (tmp_path / "wh").as_uri()
    cat = SqlCatalog("s", uri=uri, warehouse=warehouse)
    cat.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64())])
    table = cat.create_table("db.t", schema)
    for k in range(12):
        with table.update_spec() as spec:
            spec.add_field("id", f"bucket[{k + 2}]", f"b{k}")
            if k:
                spec.remove_field(f"b{k - 1}")
        table.append(pa.table({"id": pa.array([k, k + 1000], pa.int64())}))
    chunks: list[int] = []
    real = pc.struct_field

    def counting(values: Any, *args: Any, **kwargs: Any) -> Any:
        chunks.append(values.num_chunks if isinstance(values, pa.ChunkedArray) else 1)
        return real(values, *args, **kwargs)

    monkeypatch.setattr(pc, "struct_field", counting)
    rows = table.inspect.partitions()
    table.compute_partition_statistics()
    monkeypatch.undo()
    assert chunks and max(chunks) == 1, max(chunks)
    theirs = PyIcebergSql("s", uri=uri, warehouse=warehouse).load_table("db.t")
    assert rows.num_rows == theirs.inspect.partitions().num_rows
    assert sum(rows.column("record_count").to_pylist()) == 24
