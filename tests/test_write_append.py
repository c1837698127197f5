"""Appending data: files, manifests, snapshots, read back by PyIceberg and DuckDB."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from icefloe._concurrency import work_threads
from icefloe.exceptions import ValidationError
from icefloe.manifest import read_manifest, read_manifest_list
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.sorting import NullOrder, SortDirection, SortField, SortOrder
from icefloe.transforms import parse_transform
from icefloe.types import LongType
from icefloe.write import writer as writer_module
from icefloe.write.writer import WriteOptions, write_data_files
from support.parquet_pages import DATA_PAGE, DATA_PAGE_V2, column_pages
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


def _manifest_entries(table: Any) -> pa.Table:
    snap = table.current_snapshot()
    lst = read_manifest_list(table.io.new_input(snap.manifest_list).read())
    from icefloe.manifest import manifest_files

    batches = [
        read_manifest(table.io.new_input(m.manifest_path).read(), manifest=m)
        for m in manifest_files(lst)
    ]
    return pa.Table.from_batches(batches)


@pytest.mark.parametrize(
    ("version", "warehouse"), versions_and_stores(1, 2, 3), indirect=["warehouse"]
)
def test_partitioned_append_reads_back_everywhere(
    tmp_path: Path, version: int, warehouse: Warehouse, duckdb_con: Any
) -> None:
    cat = catalog(tmp_path, warehouse)
    t = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=version)
    first, second = rows(0, 500), rows(500, 37)
    t.append(first)
    s1 = t.current_snapshot()
    t.append(second)
    s2 = t.current_snapshot()
    assert s1 is not None and s2 is not None
    assert s2.parent_snapshot_id == s1.snapshot_id
    want = checksum(pa.concat_tables([first, second]))
    assert checksum(pyiceberg_read(t)) == want
    assert duckdb_checksum(duckdb_con, t) == want
    # A reload from the catalog sees the same.
    again = cat.load_table("ns.t")
    assert again.current_snapshot() == s2
    # Summary (Appendix F) with running totals.
    summary = s2.summary
    assert summary is not None and summary.operation == "append"
    assert summary.get_int("added-records") == 37
    assert summary.get_int("total-records") == 537
    entries = _manifest_entries(t)
    assert summary.get_int("total-data-files") == entries.num_rows
    added = entries.filter(pc.equal(entries["snapshot_id"], s2.snapshot_id))
    assert summary.get_int("added-data-files") == added.num_rows
    assert summary.get_int("added-files-size") == pc.sum(added["file_size_in_bytes"]).as_py()
    parts = {tuple(p.values()) for p in added["partition"].to_pylist()}
    assert summary.get_int("changed-partition-count") == len(parts)
    # One file per partition; every row of a file is in its partition.
    for path, part in zip(
        added["file_path"].to_pylist(), added["partition"].to_pylist(), strict=True
    ):
        data = pq.read_table(t.io.new_input(path).open())
        days = pc.unique(data["ts"].cast(pa.date32())).to_pylist()
        assert days == [part["ts_day"]]
    # Sequence numbers and row lineage.
    if version >= 2:
        assert s2.sequence_number == s1.sequence_number + 1
        assert set(added["sequence_number"].to_pylist()) == {s2.sequence_number}
    if version == 3:
        assert s1.first_row_id == 0 and s1.added_rows == 500
        assert s2.first_row_id == 500 and s2.added_rows == 37
        assert t.metadata.next_row_id == 537
        ids = sorted(
            zip(
                entries["first_row_id"].to_pylist(),
                entries["record_count"].to_pylist(),
                strict=True,
            )
        )
        pos = 0
        for first_id, count in ids:  # contiguous, non-overlapping ranges
            assert first_id == pos
            pos += count
        assert pos == 537


def test_pyiceberg_filters_use_our_metrics(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=2)
    t.append(rows(0, 300))
    got = pyiceberg_read(t, row_filter="id >= 290")
    assert sorted(got["id"].to_pylist()) == list(range(290, 300))
    got = pyiceberg_read(t, row_filter="s = 's17'")
    assert got["id"].to_pylist() == [17]


def test_files_of_an_unsorted_table_name_its_order_zero(tmp_path: Path) -> None:
    """Iceberg Java and Trino write sort order id 0 on the data files of unsorted tables (the
    spec asks data files to carry one); icefloe wrote none, partitioned or not."""
    cat = catalog(tmp_path)
    for name, spec in (("ns.u", PartitionSpec()), ("ns.p", SPEC)):
        t = cat.create_table(name, SCHEMA, partition_spec=spec, format_version=2)
        t.append(rows(0, 50))
        more = pa.concat_tables([rows(50, 10), rows(60, 10)])
        t.append(pa.RecordBatchReader.from_batches(more.schema, more.to_batches(max_chunksize=10)))
        ids = _manifest_entries(t)["sort_order_id"].to_pylist()
        assert ids and set(ids) == {0}, (name, ids)


def test_unpartitioned_sorted_append(tmp_path: Path, duckdb_con: Any) -> None:
    cat = catalog(tmp_path)
    order = SortOrder(
        SortField(1, parse_transform("identity"), SortDirection.DESC, NullOrder.NULLS_LAST),
        order_id=1,
    )
    t = cat.create_table("ns.t", SCHEMA, sort_order=order, format_version=2)
    data = rows(0, 100)
    head = [5, 3, 99, 0, 42]
    t.append(data.take(pa.array(head + [i for i in range(100) if i not in head])))
    entries = _manifest_entries(t)
    assert entries.num_rows == 1
    assert entries["sort_order_id"].to_pylist() == [t.sort_order().order_id]
    written = pq.read_table(entries["file_path"][0].as_py().removeprefix("file://"))
    assert written["id"].to_pylist() == list(range(99, -1, -1))
    assert duckdb_checksum(duckdb_con, t) == checksum(data)


def test_large_partition_is_split_over_the_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, duckdb_con: Any
) -> None:
    """With fewer partitions than threads, a partition of at least two SPLIT_BYTES becomes one
    file per thread of contiguous rows (the sort order holds across them); smaller ones, as
    many partitions as threads and Spark's executors (``spread=False``) keep one file each."""
    monkeypatch.setattr(writer_module, "SPLIT_BYTES", 4096)
    cat = catalog(tmp_path)
    order = SortOrder(
        SortField(1, parse_transform("identity"), SortDirection.ASC, NullOrder.NULLS_FIRST),
        order_id=1,
    )
    t = cat.create_table("ns.t", SCHEMA, sort_order=order, format_version=2)
    data = rows(0, 3000)
    assert data.nbytes >= 3 * 4096
    shuffled = data.take(pa.array([(i * 7919) % 3000 for i in range(3000)]))

    def file_ids(table: Any, **options: Any) -> list[list[int]]:
        opts = WriteOptions(**options)
        files = write_data_files(table.metadata, table.io, shuffled, options=opts)
        return [
            pq.read_table(f.file_path.removeprefix("file://"), columns=["id"])["id"].to_pylist()
            for f in files
        ]

    split = file_ids(t, max_workers=2)
    assert len(split) == 2 and split[0] + split[1] == list(range(3000))
    assert len(file_ids(t, max_workers=2, spread=False)) == 1
    assert len(file_ids(t, max_workers=1)) == 1
    two = cat.create_table(
        "ns.two",
        SCHEMA,
        partition_spec=PartitionSpec(PartitionField(1, 1000, parse_transform("bucket[2]"), "b")),
        format_version=2,
    )
    assert len(file_ids(two, max_workers=2)) == 2  # one file per partition
    monkeypatch.setattr(writer_module, "SPLIT_BYTES", data.nbytes // 2 + 1)
    assert len(file_ids(t, max_workers=2)) == 1  # less than two pieces' worth
    monkeypatch.setattr(writer_module, "SPLIT_BYTES", 4096)
    # committed through the table API: one file per thread of the machine
    t.append(shuffled)
    assert len(_manifest_entries(t)) == min(work_threads(), data.nbytes // 4096)
    assert checksum(pyiceberg_read(t)) == checksum(data)
    assert duckdb_checksum(duckdb_con, t) == checksum(data)


def test_target_file_size_rolls_files(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table(
        "ns.t",
        SCHEMA,
        format_version=2,
        properties={
            "write.target-file-size-bytes": "20000",
            "write.parquet.row-group-limit": "1000",
        },
    )
    data = rows(0, 20_000)
    t.append(data)
    entries = _manifest_entries(t)
    assert entries.num_rows > 2
    assert sum(entries["record_count"].to_pylist()) == 20_000
    for path, offsets in zip(
        entries["file_path"].to_pylist(), entries["split_offsets"].to_pylist(), strict=True
    ):
        md = pq.ParquetFile(path.removeprefix("file://")).metadata
        assert len(offsets) == md.num_row_groups
        assert all(md.row_group(i).num_rows <= 1000 for i in range(md.num_row_groups))
    assert checksum(pyiceberg_read(t)) == checksum(data)


def test_parquet_properties_and_field_ids(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table(
        "ns.t",
        SCHEMA,
        format_version=2,
        properties={"write.parquet.compression-codec": "snappy"},
    )
    t.append(rows(0, 10))
    path = _manifest_entries(t)["file_path"][0].as_py().removeprefix("file://")
    md = pq.ParquetFile(path).metadata
    assert md.row_group(0).column(0).compression == "SNAPPY"
    schema = pq.read_schema(path)
    assert [f.metadata[b"PARQUET:field_id"] for f in schema] == [b"1", b"2", b"3", b"4"]


def _distinct_strings(n: int) -> pa.Table:
    """``n`` rows of a long id and a 40-character string, all distinct (so written plain)."""
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "s": pa.array([f"{i:040x}" for i in range(n)], pa.string()),
        }
    )


def test_small_page_size_is_honoured_by_large_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``write.parquet.page-size-bytes`` below the 1 MiB default cuts pages near that size
    in files written by pyarrow too (large partitions): they used to hold 1024 values each,
    pages of 45 KB for a page size of 8 KB; the default page size keeps pyarrow's default
    batch of values, as fast as before."""
    cat = catalog(tmp_path)
    data = _distinct_strings(30_000)  # over 1 MB of strings: written by pyarrow
    t = cat.create_table(
        "ns.small_pages", data.schema, properties={"write.parquet.page-size-bytes": "8192"}
    )
    t.append(data)
    path = _manifest_entries(t)["file_path"][0].as_py().removeprefix("file://")
    assert pq.ParquetFile(path).metadata.created_by.startswith("parquet-cpp-arrow")
    sizes = sorted(
        p.uncompressed_size for p in column_pages(path, 1) if p.type in (DATA_PAGE, DATA_PAGE_V2)
    )
    typical = sizes[len(sizes) // 2]
    assert 8192 // 2 <= typical <= 2 * 8192, sizes[:5]
    assert pyiceberg_read(t).sort_by("id").equals(data)

    batches: list[Any] = []
    real = pq.ParquetWriter

    def recording(*args: Any, **kwargs: Any) -> pq.ParquetWriter:
        batches.append(kwargs.get("write_batch_size"))
        return real(*args, **kwargs)

    monkeypatch.setattr(writer_module.pq, "ParquetWriter", recording)
    default = cat.create_table("ns.default_pages", data.schema)
    default.append(data)
    assert batches and set(batches) <= {None, 1024}  # pyarrow's default


def test_transaction_with_two_appends_commits_once(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=3)
    before = t.metadata_location
    with t.transaction() as tx:
        tx.append(rows(0, 10))
        tx.append(rows(10, 5))
        tx.set_properties(owner="me")
    snaps = t.snapshots()
    assert len(snaps) == 2 and snaps[1].parent_snapshot_id == snaps[0].snapshot_id
    assert t.metadata.metadata_log[-1].metadata_file == before  # one new metadata file
    assert t.metadata.next_row_id == 15
    assert checksum(pyiceberg_read(t)) == checksum(rows(0, 15))


def test_concurrent_writers_retry(tmp_path: Path, warehouse: Warehouse, duckdb_con: Any) -> None:
    cat = catalog(tmp_path, warehouse)
    a = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=3)
    b = cat.load_table("ns.t")
    a.append(rows(0, 10))
    b.append(rows(10, 10))  # stale base: rebuilt on a's snapshot
    b.refresh()
    snaps = b.snapshots()
    assert len(snaps) == 2
    assert snaps[1].parent_snapshot_id == snaps[0].snapshot_id
    assert b.metadata.next_row_id == 20 and snaps[1].first_row_id == 10
    assert duckdb_checksum(duckdb_con, b) == checksum(rows(0, 20))
    # No leftover manifest lists from the failed attempt.
    listed = b.io.list_prefix(f"{b.location}/metadata")
    lists = sorted(f.location for f in listed if f.location.rsplit("/", 1)[1].startswith("snap-"))
    assert len(lists) == 2


def test_branch_append_leaves_main_untouched(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, format_version=2)
    t.append(rows(0, 10))
    main = t.current_snapshot()
    assert main is not None
    t.append(rows(10, 5), branch="audit")
    assert t.current_snapshot() == main
    ref = t.metadata.refs["audit"]
    audit = t.snapshot_by_id(ref.snapshot_id)
    assert audit is not None and audit.parent_snapshot_id == main.snapshot_id
    assert audit.summary is not None and audit.summary.get_int("total-records") == 15
    t.append(rows(15, 1), branch="audit")
    assert t.metadata.refs["audit"].snapshot_id != ref.snapshot_id
    assert checksum(pyiceberg_read(t)) == checksum(rows(0, 10))
    from pyiceberg.table import StaticTable

    st = StaticTable.from_metadata(t.metadata_location)
    got = st.scan(snapshot_id=t.metadata.refs["audit"].snapshot_id).to_arrow()
    assert checksum(got) == checksum(rows(0, 16))


def test_bad_input_commits_nothing_and_leaves_no_files(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=2)
    data_dir = Path(t.location.removeprefix("file://")) / "data"
    with pytest.raises(ValidationError, match="'id'"):
        t.append(rows(0, 5).drop_columns(["id"]))
    with pytest.raises(ValidationError, match="'nope'"):
        t.append(rows(0, 5).append_column("nope", pa.array([1] * 5)))
    with pytest.raises(ValidationError, match="'s'"):
        t.append(rows(0, 5).set_column(1, "s", pa.array([1, 2, 3, 4, 5])))
    nulls = rows(0, 5).set_column(0, "id", pa.array([1, None, 3, 4, 5], pa.int64()))
    with pytest.raises(ValidationError, match="required column 'id'"):
        t.append(nulls)
    too_big = rows(0, 2).set_column(0, "id", pa.array([1, 2], pa.uint64()))
    t.append(too_big)  # safe integer cast
    huge = rows(0, 1).set_column(0, "id", pa.array([2**64 - 1], pa.uint64()))
    with pytest.raises(ValidationError, match="'id'"):
        t.append(huge)
    assert len(t.snapshots()) == 1
    assert len(list(data_dir.rglob("*.parquet"))) == _manifest_entries(t).num_rows


def test_failed_transaction_removes_written_files(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, format_version=2)
    data_dir = Path(t.location.removeprefix("file://")) / "data"
    with pytest.raises(RuntimeError), t.transaction() as tx:
        tx.append(rows(0, 5))
        raise RuntimeError("boom")
    assert t.current_snapshot() is None
    assert list(data_dir.rglob("*.parquet")) == []
    meta_dir = Path(t.location.removeprefix("file://")) / "metadata"
    assert list(meta_dir.glob("*.avro")) == []


def test_input_kinds(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, format_version=2)
    data = rows(0, 30)
    t.append(data.to_batches()[0])
    t.append(pa.RecordBatchReader.from_batches(data.schema, data.to_batches()))
    t.append(data.to_pandas())
    t.append(data.select(["s", "id"]))  # column order and missing optional columns
    got = pyiceberg_read(t)
    assert got.num_rows == 120
    assert got.filter(pc.is_null(got["ts"])).num_rows == 30


def test_write_default_fills_missing_columns_v3(tmp_path: Path) -> None:
    from icefloe.schema import Schema
    from icefloe.types import LongType, NestedField, StringType

    schema = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "tag", StringType(), True, write_default="x", initial_default="x"),
    )
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", schema, format_version=3)
    t.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    assert pyiceberg_read(t)["tag"].to_pylist() == ["x", "x"]


def test_identity_string_partition_paths(tmp_path: Path, duckdb_con: Any) -> None:
    cat = catalog(tmp_path)
    spec = PartitionSpec(
        SPEC.fields[0].__class__(2, 1000, parse_transform("identity"), "s"),
    )
    t = cat.create_table("ns.t", SCHEMA, partition_spec=spec, format_version=2)
    data = rows(0, 6).set_column(1, "s", pa.array(["a/b", "a b", None, "a/b", "é", None]))
    t.append(data)
    entries = _manifest_entries(t)
    assert sorted(p["s"] or "" for p in entries["partition"].to_pylist()) == [
        "",
        "a b",
        "a/b",
        "é",
    ]
    assert any("s=null" in p for p in entries["file_path"].to_pylist())
    assert duckdb_checksum(duckdb_con, t) == checksum(data)
    got = pyiceberg_read(t, row_filter="s = 'a/b'")
    assert sorted(got["id"].to_pylist()) == [0, 3]


def _append_worker(args: tuple[str, int, int]) -> int:
    from icefloe.catalog.sql import SqlCatalog

    root, worker, n = args
    cat = SqlCatalog("c", uri=f"sqlite:///{root}/c.db", warehouse=(Path(root) / "wh").as_uri())
    table = cat.load_table("ns.t")
    for i in range(n):
        table.append(rows(worker * 1000 + i, 1))
    return n


def test_concurrent_appends_from_processes_all_land(tmp_path: Path, duckdb_con: Any) -> None:
    import multiprocessing

    cat = catalog(tmp_path)
    cat.create_table("ns.t", SCHEMA, format_version=3)
    workers, each = 3, 3
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers) as pool:
        assert (
            pool.map(_append_worker, [(str(tmp_path), w, each) for w in range(workers)])
            == [each] * workers
        )
    t = cat.load_table("ns.t")
    assert len(t.snapshots()) == workers * each
    assert t.metadata.next_row_id == workers * each
    got = pyiceberg_read(t)
    want = sorted(w * 1000 + i for w in range(workers) for i in range(each))
    assert sorted(got["id"].to_pylist()) == want
    assert duckdb_checksum(duckdb_con, t) == (len(want), sum(want))
    # Lost attempts left no manifest lists or manifests behind.
    meta = Path(t.location.removeprefix("file://")) / "metadata"
    assert len(list(meta.glob("snap-*.avro"))) == workers * each
    assert len(list(meta.glob("*-m*.avro"))) == workers * each


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("write.parquet.compression-codec", "lzo-ish"),
        ("write.target-file-size-bytes", "big"),
        ("write.parquet.row-group-limit", "0"),
        ("commit.manifest-merge.enabled", "maybe"),
    ],
)
def test_bad_write_properties_are_named(tmp_path: Path, key: str, value: str) -> None:
    cat = catalog(tmp_path)
    with pytest.raises(ValidationError, match=key.replace(".", r"\.")):
        cat.create_table("ns.bad", SCHEMA, properties={key: value})
    # Stored by another engine, the value makes the write refuse before writing anything.
    t = cat.create_table("ns.t", SCHEMA, format_version=2)
    set_properties_elsewhere(tmp_path, "ns.t", {key: value})
    t = cat.load_table("ns.t")
    with pytest.raises(ValidationError, match=key.replace(".", r"\.")):
        t.append(rows(0, 3))
    assert t.current_snapshot() is None
    assert list((Path(t.location.removeprefix("file://")) / "data").rglob("*.parquet")) == []


def test_missing_optional_struct_with_required_children_is_written_as_nulls(
    tmp_path: Path,
) -> None:
    """Required children of every kind get placeholder values under the null parent rows
    (Parquet writers refuse nulls there); every reader sees null structs."""
    from icefloe.schema import Schema as IceSchema
    from icefloe.types import (
        BooleanType,
        DecimalType,
        DoubleType,
        IntegerType,
        ListType,
        LongType,
        MapType,
        NestedField,
        StringType,
        StructType,
        TimestamptzType,
        UUIDType,
    )

    inner = StructType(NestedField(15, "z", DoubleType(), required=True))
    st = StructType(
        NestedField(3, "a", IntegerType(), required=True),
        NestedField(4, "s", StringType(), required=True),
        NestedField(5, "l", ListType(6, LongType(), element_required=True), required=True),
        NestedField(7, "m", MapType(8, StringType(), 9, LongType()), required=True),
        NestedField(10, "u", UUIDType(), required=True),
        NestedField(11, "d", DecimalType(10, 2), required=True),
        NestedField(12, "ts", TimestamptzType(), required=True),
        NestedField(13, "b", BooleanType(), required=True),
        NestedField(14, "inner", inner, required=True),
        NestedField(16, "opt", StringType()),
    )
    schema = IceSchema(NestedField(1, "id", LongType(), required=True), NestedField(2, "st", st))
    t = catalog(tmp_path).create_table("ns.structs", schema)
    t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    want = [{"id": i, "st": None} for i in (1, 2, 3)]
    assert sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == want
    assert sorted(pyiceberg_read(t).to_pylist(), key=lambda r: r["id"]) == want


def test_a_truncated_decimal_partition_value_too_wide_is_refused(tmp_path: Path) -> None:
    """``truncate[50]`` of ``-99.99`` in ``decimal(4, 2)`` is ``-100.00``, one digit more than
    the partition type holds: the append is refused with a typed error and writes nothing."""
    from decimal import Decimal

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("m", pa.decimal128(4, 2))])
    t = catalog(tmp_path).create_table("ns.t", schema)
    with t.update_spec() as u:
        u.add_field("m", "truncate[50]", "p")
    t.append(pa.table({"id": [1], "m": [Decimal("99.99")]}, schema=schema))  # 99.50 fits
    before = t.metadata_location
    with pytest.raises(ValidationError, match="does not fit"):
        t.append(pa.table({"id": [2], "m": [Decimal("-99.99")]}, schema=schema))
    assert t.refresh().metadata_location == before
    data = Path(t.location.removeprefix("file://")) / "data"
    assert len([p for p in data.rglob("*.parquet")]) == 1


def test_a_table_of_unknown_columns_only_refuses_rows_clearly(tmp_path: Path) -> None:
    """``unknown`` columns are not stored, so a table with no other column has nothing a data
    file could hold its rows in: appending is a ValidationError, nothing committed, no file
    left; a column of another type added later makes it writable."""
    t = catalog(tmp_path).create_table("ns.u", pa.schema([("u", pa.null())]), format_version=3)
    with pytest.raises(ValidationError, match="unknown"):
        t.append(pa.table({"u": pa.nulls(3)}))
    assert t.refresh().current_snapshot() is None
    assert not [p for p in (tmp_path).rglob("*.parquet")]
    with t.update_schema() as u:
        u.add_column("id", LongType())
    t.append(pa.table({"u": pa.nulls(2), "id": pa.array([1, 2], pa.int64())}))
    got = t.scan().to_arrow()
    assert got.num_rows == 2 and got["u"].null_count == 2 and got["id"].to_pylist() == [1, 2]


def test_values_for_an_unknown_column_name_its_iceberg_type(tmp_path: Path) -> None:
    """An ``unknown`` column takes only nulls: values of another type are refused naming the
    column's Iceberg type (the message named the input's type as the column's before)."""
    schema = pa.schema([("id", pa.int64()), ("u", pa.null()), ("s", pa.struct([("w", pa.null())]))])
    t = catalog(tmp_path).create_table("ns.u", schema, format_version=3)
    with pytest.raises(
        ValidationError,
        match=r"column 'u' has Iceberg type unknown, which holds only nulls: got string",
    ):
        t.append(pa.table({"id": pa.array([1], pa.int64()), "u": pa.array(["x"])}))
    with pytest.raises(ValidationError, match=r"column 's.w' has Iceberg type unknown.*got int64"):
        t.append(pa.table({"id": pa.array([1], pa.int64()), "s": pa.array([{"w": 1}])}))
    assert t.refresh().current_snapshot() is None


def test_dates_after_year_9999_are_written_or_refused_clearly(tmp_path: Path) -> None:
    """Iceberg's dates and timestamps go past 9999-12-31 (DuckDB writes them); Python's do not,
    so partition values of them cannot be named: such an append or ``add_files`` is a
    ValidationError with nothing committed, while unpartitioned tables and transforms that stay
    in range (``year``) take them."""
    days = 2_932_897  # 10000-01-01
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("d", pa.date32())])
    rows = pa.table({"id": [1], "d": pa.array([days], pa.int32()).cast(pa.date32())}, schema=schema)
    cat = catalog(tmp_path)
    plain = cat.create_table("ns.plain", schema)
    plain.append(rows)
    got = plain.scan().to_arrow().column("d").cast(pa.int32()).to_pylist()
    assert got == [days]
    by_year = cat.create_table(
        "ns.by_year",
        schema,
        partition_spec=PartitionSpec(PartitionField(2, 1000, parse_transform("year"), "y")),
    )
    by_year.append(rows)
    assert by_year.scan().count() == 1
    by_day = cat.create_table(
        "ns.by_day",
        schema,
        partition_spec=PartitionSpec(PartitionField(2, 1000, parse_transform("day"), "d_day")),
    )
    with pytest.raises(ValidationError, match="1-9999"):
        by_day.append(rows)
    path = tmp_path / "far.parquet"
    pq.write_table(rows, path)
    by_day.set_properties({"schema.name-mapping.default": _mapping_json(by_day)})
    with pytest.raises(ValidationError, match=r"far\.parquet"):
        by_day.add_files([str(path)])
    assert by_day.refresh().current_snapshot() is None


def _mapping_json(t: Any) -> str:
    from icefloe.name_mapping import create_mapping

    return create_mapping(t.schema()).to_json_string()
