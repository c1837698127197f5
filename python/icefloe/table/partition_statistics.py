"""Partition statistics: ``compute_partition_statistics`` sums a snapshot's manifest entries per
(spec id, partition) into the spec's partition statistics file and commits
``set-partition-statistics`` for that snapshot.

The rules are Iceberg Java's (``PartitionStatsHandler``), so both write the same rows:

* Full: every entry of every data and delete manifest of the snapshot. A live data file adds its
  records, one file and its size; a live position delete file adds its records and one file, or
  one deletion vector when it is Puffin; an equality delete file adds to the equality counts.
  Every entry, deleted ones included, gives its partition a row and moves ``last_updated_at`` /
  ``last_updated_snapshot_id`` to its snapshot when that is newer (expired snapshots count for
  nothing) - so a partition whose files were all deleted keeps a row of zeros while a manifest
  still lists the deletions.
* Incremental (the default): the newest partition statistics file on the snapshot's ancestry,
  plus the manifests each later ancestor added: ``ADDED`` entries add, ``DELETED`` entries
  subtract, ``EXISTING`` ones only give a row. Without such a file, or when it cannot be read, a
  full compute. When the snapshot already has a file, that file is returned.

``total_record_count`` stays null (as Java leaves it). Everything is done on Arrow columns, one
decode of each manifest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_fill import from_group_key, group_keys
from icefloe.arrow_schema import schema_to_arrow, type_to_arrow
from icefloe.exceptions import IcebergError, NoSuchSnapshotError, ValidationError
from icefloe.metadata import PartitionStatisticsFile, SetPartitionStatistics, TableMetadata
from icefloe.read.partition_statistics import (
    COUNT_COLUMNS,
    partition_statistics_schema,
    read_partition_statistics,
    unified_partition_type,
)
from icefloe.scan.manifests import manifest_list_of, manifest_lists, read_entries
from icefloe.table.inspect_partitions import _unify_partition
from icefloe.table.statistics import check_optional_snapshot_id
from icefloe.types import IcebergType, UUIDType
from icefloe.write.partition_statistics import write_partition_statistics_file

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.metadata import Snapshot
    from icefloe.schema import Schema
    from icefloe.table.transaction import Transaction

__all__ = [
    "compute_partition_statistics",
    "partition_statistics_file_for",
    "partition_statistics_rows",
    "read_current_partition_statistics",
]

_ENTRY_COLUMNS = ("status", "snapshot_id", "content", "file_format", "record_count")
_ADDED, _DELETED = 1, 2


def _snapshot(metadata: TableMetadata, snapshot_id: int | None) -> Snapshot:
    snapshot_id = check_optional_snapshot_id(snapshot_id)
    snap = (
        metadata.current_snapshot() if snapshot_id is None else metadata.snapshot_by_id(snapshot_id)
    )
    if snap is None:
        if snapshot_id is None:
            raise ValidationError("the table has no snapshot to compute partition statistics for")
        raise NoSuchSnapshotError(f"no snapshot with id {snapshot_id}")
    return snap


def _file_schema(metadata: TableMetadata) -> Schema:
    ptype = unified_partition_type(metadata)
    if not any(s.fields for s in metadata.partition_specs) or not ptype.fields:
        raise ValidationError("partition statistics need a partitioned table")
    return partition_statistics_schema(ptype, metadata.format_version)


def partition_statistics_file_for(
    metadata: TableMetadata, snapshot_id: int
) -> PartitionStatisticsFile | None:
    """The partition statistics file registered for ``snapshot_id``, if any."""
    return next((s for s in metadata.partition_statistics if s.snapshot_id == snapshot_id), None)


def _latest_on_ancestry(
    metadata: TableMetadata, snapshot_id: int
) -> PartitionStatisticsFile | None:
    by_snapshot = {s.snapshot_id: s for s in metadata.partition_statistics}
    for snap in metadata.ancestors_of(snapshot_id):
        if snap.snapshot_id in by_snapshot:
            return by_snapshot[snap.snapshot_id]
    return None


def _entries(
    io: FileIO, manifests: pa.Table | pa.RecordBatch, partition: pa.StructType
) -> pa.Table | None:
    """The entries of the listed manifests: status, snapshot, content, format, counts, size,
    spec id and the partition in the unified type."""
    if manifests.num_rows == 0:
        return None
    batches = read_entries(io, manifests)
    spec_ids = manifests.column("partition_spec_id").to_pylist()
    parts = []
    for batch, spec_id in zip(batches, spec_ids, strict=True):
        t = _unify_partition(batch, partition)
        t = t.select([*_ENTRY_COLUMNS, "file_size_in_bytes", "partition"])
        parts.append(t.append_column("spec_id", pa.array([spec_id] * t.num_rows, pa.int32())))
    return pa.concat_tables(parts)


def _aggregate(entries: pa.Table, metadata: TableMetadata, incremental: bool) -> pa.Table:
    """Per (partition, spec id): the signed sums and the newest touching snapshot."""
    status = entries.column("status")
    if incremental:
        sign = pc.if_else(
            pc.equal(status, _ADDED), 1, pc.if_else(pc.equal(status, _DELETED), -1, 0)
        )
        touches = pc.not_equal(sign, 0)
    else:
        sign = pc.if_else(pc.equal(status, _DELETED), 0, 1)
        touches = None
    sign = pc.cast(sign, pa.int64())
    content = entries.column("content")
    puffin = pc.equal(pc.utf8_upper(entries.column("file_format")), "PUFFIN")
    is_data = pc.equal(content, 0)
    is_pos = pc.equal(content, 1)
    is_eq = pc.equal(content, 2)
    records = pc.cast(entries.column("record_count"), pa.int64())
    size = pc.cast(entries.column("file_size_in_bytes"), pa.int64())

    def signed(cond: pa.ChunkedArray, value: pa.ChunkedArray | int) -> pa.ChunkedArray:
        return pc.multiply(pc.multiply(pc.cast(cond, pa.int64()), sign), value)

    snaps = metadata.snapshots
    ids = pa.array([s.snapshot_id for s in snaps], pa.int64())
    at = pa.array([s.timestamp_ms for s in snaps], pa.int64())
    found = pc.index_in(entries.column("snapshot_id"), value_set=ids)
    ts = at.take(found)
    if touches is not None:
        ts = pc.if_else(touches, ts, pa.scalar(None, pa.int64()))
    sid = pc.if_else(pc.is_null(ts), pa.scalar(None, pa.int64()), entries.column("snapshot_id"))
    keys = _flatten(entries.column("partition"))
    work = pa.table(
        {
            **keys,
            "spec_id": entries.column("spec_id"),
            "data_record_count": signed(is_data, records),
            "data_file_count": signed(is_data, 1),
            "total_data_file_size_in_bytes": signed(is_data, size),
            "position_delete_record_count": signed(is_pos, records),
            "position_delete_file_count": signed(pc.and_(is_pos, pc.invert(puffin)), 1),
            "equality_delete_record_count": signed(is_eq, records),
            "equality_delete_file_count": signed(is_eq, 1),
            "dv_count": signed(pc.and_(is_pos, puffin), 1),
            "last_updated_at": ts,
            "last_updated_snapshot_id": sid,
        }
    )
    return _group(work, list(keys))


def _flatten(partition: pa.ChunkedArray) -> dict[str, pa.ChunkedArray]:
    # extension-typed values (uuid, geometry) group by their storage (see group_key)
    return group_keys(partition, [f"__p{i}" for i in range(partition.type.num_fields)])


def _group(work: pa.Table, keys: list[str]) -> pa.Table:
    """Sums per key; the ``last_updated_*`` pair of each key's last row with the greatest time
    (rows are ordered by time first, stably)."""
    work = work.sort_by([("last_updated_at", "ascending")])
    g = work.group_by([*keys, "spec_id"], use_threads=False).aggregate(
        [(c, "sum") for c in COUNT_COLUMNS]
        + [("last_updated_at", "last"), ("last_updated_snapshot_id", "last")]
    )
    return g.rename_columns(
        [*keys, "spec_id", *COUNT_COLUMNS, "last_updated_at", "last_updated_snapshot_id"]
    )


def _rows(grouped: pa.Table, schema: Schema) -> pa.Table:
    """The grouped sums as file rows, ordered by partition (nulls first), then spec id."""
    ptype = schema.find_field(1).field_type
    keys = [f"__p{i}" for i in range(len(ptype.fields))]  # type: ignore[attr-defined]
    sortable = pa.table(
        {
            **{
                k: _total_order(grouped.column(k), f.field_type)
                for k, f in zip(keys, ptype.fields, strict=True)  # type: ignore[attr-defined]
            },
            "spec_id": grouped["spec_id"],
        }
    )
    order = pc.sort_indices(
        sortable,
        sort_keys=[(k, "ascending", "at_start") for k in keys] + [("spec_id", "ascending")],
    )
    g = grouped.take(order)
    arrow_ptype = type_to_arrow(ptype)
    partition = pa.StructArray.from_arrays(
        [
            from_group_key(g.column(k), f.type).combine_chunks()
            for k, f in zip(keys, arrow_ptype, strict=True)
        ],
        fields=list(arrow_ptype),
    )
    n = g.num_rows
    cols: dict[str, pa.Array | pa.ChunkedArray] = {"partition": partition, "spec_id": g["spec_id"]}
    for f in schema.fields[2:]:
        if f.name in COUNT_COLUMNS:
            cols[f.name] = pc.fill_null(g.column(f.name), 0).cast(type_to_arrow(f.field_type))
        elif f.name == "total_record_count":
            cols[f.name] = pa.nulls(n, pa.int64())
        else:
            cols[f.name] = g.column(f.name)
    return pa.table(cols).cast(schema_to_arrow(schema))


def _total_order(col: pa.ChunkedArray, t: IcebergType) -> pa.ChunkedArray:
    """``col`` (values of type ``t``) as keys Arrow sorts in Java's order: floating-point values
    as signed integers ordered as ``Double.compare`` orders them (``-0.0`` before ``0.0``, NaN
    after every number; Arrow sorts NaN next to the nulls and takes ``-0.0`` for ``0.0``),
    uuids as ``UUID.compareTo`` orders them, other types as they are."""
    if isinstance(t, UUIDType):
        return pa.chunked_array([_uuid_order(c) for c in col.chunks], col.type)
    if pa.types.is_float64(col.type):
        bits_type, magnitude = pa.int64(), 0x7FFF_FFFF_FFFF_FFFF
    elif pa.types.is_float32(col.type):
        bits_type, magnitude = pa.int32(), 0x7FFF_FFFF
    else:
        return col
    # one NaN (partition values are compared as Java's doubleToLongBits), then the sign-magnitude
    # bits of negative numbers flipped so integer order is numeric order
    col = pc.if_else(pc.is_nan(col), pa.scalar(float("nan"), col.type), col)
    chunks = []
    for chunk in col.chunks:
        bits = chunk.view(bits_type)
        chunks.append(
            pc.if_else(
                pc.less(bits, 0), pc.bit_wise_xor(bits, pa.scalar(magnitude, bits_type)), bits
            )
        )
    return pa.chunked_array(chunks, bits_type)


def _uuid_order(chunk: pa.FixedSizeBinaryArray) -> pa.FixedSizeBinaryArray:
    """16-byte uuids whose unsigned byte order is ``UUID.compareTo``'s order: that compares
    the big-endian most, then least significant 8 bytes as signed longs, so the sign bit of
    each half is flipped."""
    validity, data = chunk.buffers()
    if data is None:
        return chunk
    n = chunk.offset + len(chunk)
    raw = np.frombuffer(data, dtype=np.uint8, count=16 * n).reshape(n, 16).copy()
    raw[:, [0, 8]] ^= 0x80
    return pa.FixedSizeBinaryArray.from_buffers(
        chunk.type, len(chunk), [validity, pa.py_buffer(raw)], offset=chunk.offset
    )


def _full(
    io: FileIO, metadata: TableMetadata, snap: Snapshot, partition: pa.StructType
) -> pa.Table | None:
    entries = _entries(io, manifest_list_of(io, snap), partition)
    return None if entries is None else _aggregate(entries, metadata, incremental=False)


def _since(
    io: FileIO,
    metadata: TableMetadata,
    snap: Snapshot,
    base: PartitionStatisticsFile,
    old: pa.Table,
    partition: pa.StructType,
) -> pa.Table | None:
    """The rows of ``base`` (read as ``old``) merged with the changes of the ancestors after
    it."""
    between = []
    for s in metadata.ancestors_of(snap.snapshot_id):
        if s.snapshot_id == base.snapshot_id:
            break
        between.append(s)
    lists = manifest_lists(io, between)
    added = [
        ml.filter(pc.equal(ml.column("added_snapshot_id"), s.snapshot_id))
        for s in between
        if (ml := lists[s.snapshot_id]).num_rows
    ]
    added = [b for b in added if b.num_rows]
    work_schema = _work_schema(partition)
    parts = []
    if old.num_rows:
        flat = _flatten(old.column("partition"))
        parts.append(_typed(pa.table({**flat, **_columns_of(old)}), work_schema))
    if added:
        entries = _entries(io, pa.Table.from_batches(added), partition)
        if entries is not None:
            parts.append(_typed(_aggregate(entries, metadata, incremental=True), work_schema))
    if not parts:
        return None
    # The old row keeps its last update on a tie (as Java's merge does): it comes last.
    merged = pa.concat_tables(list(reversed(parts)))
    return _group(merged, [f.name for f in work_schema if f.name.startswith("__p")])


def _columns_of(t: pa.Table) -> dict[str, pa.ChunkedArray]:
    return {n: t.column(n) for n in t.column_names if n != "partition"}


def _work_schema(partition: pa.StructType) -> pa.Schema:
    """The columns summed per key: partition children, spec id, counts, last update."""
    return pa.schema(
        [pa.field(f"__p{i}", f.type) for i, f in enumerate(partition)]
        + [pa.field("spec_id", pa.int32())]
        + [pa.field(c, pa.int64()) for c in COUNT_COLUMNS]
        + [
            pa.field("last_updated_at", pa.int64()),
            pa.field("last_updated_snapshot_id", pa.int64()),
        ]
    )


def _typed(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """``t`` with the columns of ``schema`` (missing ones null)."""
    n = t.num_rows
    cols = [
        t.column(f.name).cast(f.type) if f.name in t.column_names else pa.nulls(n, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(cols, schema=schema)


def partition_statistics_rows(
    io: FileIO, metadata: TableMetadata, snapshot_id: int | None = None, incremental: bool = True
) -> tuple[pa.Table | None, PartitionStatisticsFile | None]:
    """(rows, None) computed for ``snapshot_id`` (default: current), or (None, the registered
    file) when the snapshot already has one and ``incremental`` allows reusing it; (None, None)
    when the snapshot has no entries."""
    snap = _snapshot(metadata, snapshot_id)
    schema = _file_schema(metadata)
    partition = type_to_arrow(schema.find_field(1).field_type)
    old = None
    base = _latest_on_ancestry(metadata, snap.snapshot_id) if incremental else None
    if base is not None:
        if base.snapshot_id == snap.snapshot_id:
            return None, base
        try:
            old = read_partition_statistics(io, base.statistics_path, schema)
        except IcebergError:
            old = None  # unreadable: a full compute, as Java falls back
    if base is not None and old is not None:
        grouped = _since(io, metadata, snap, base, old, partition)
    else:
        grouped = _full(io, metadata, snap, partition)
    if grouped is None or grouped.num_rows == 0:
        return None, None
    return _rows(grouped, schema), None


def compute_partition_statistics(
    tx: Transaction, snapshot_id: int | None = None, incremental: bool = True
) -> PartitionStatisticsFile | None:
    """Compute the partition statistics of ``snapshot_id`` (default: current), write the file
    and add ``set-partition-statistics`` to ``tx``. Returns the snapshot's file (an existing one
    when ``incremental`` finds it already computed), or None when the snapshot has no files."""
    from icefloe.table.manage_snapshots import with_every_snapshot

    metadata = with_every_snapshot(tx, tx.metadata)  # snapshot times and ancestry need them all
    snap = _snapshot(metadata, snapshot_id)
    io = tx.table.io
    rows, existing = partition_statistics_rows(io, metadata, snap.snapshot_id, incremental)
    if rows is None:
        return existing
    stats = write_partition_statistics_file(
        io, metadata, snap.snapshot_id, _file_schema(metadata), rows
    )
    try:
        tx.apply([SetPartitionStatistics(stats)])
    except BaseException:
        io.delete_quietly(stats.statistics_path)
        raise
    tx._own_file(stats.statistics_path)  # deleted if the transaction fails to commit
    return stats


def read_current_partition_statistics(
    io: FileIO, metadata: TableMetadata, snapshot_id: int | None = None
) -> pa.Table | None:
    """The rows of the partition statistics file of ``snapshot_id`` (default: current), read
    with the table's current unified partition type; None when it has none (a table without
    a snapshot has none)."""
    if snapshot_id is None and metadata.current_snapshot() is None:
        return None
    snap = _snapshot(metadata, snapshot_id)
    stats = partition_statistics_file_for(metadata, snap.snapshot_id)
    if stats is None:
        return None
    return read_partition_statistics(io, stats.statistics_path, _file_schema(metadata))
