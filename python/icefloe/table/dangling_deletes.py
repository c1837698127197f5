"""Dangling delete files: delete files that no live data file of a branch can apply to.

Compaction rewrites data files with their deletes applied, but a delete file scoped to a
partition (Spark's v2 position deletes, ``write.delete.granularity=partition``) or an equality
delete file may also cover data files that were not rewritten, so it stays in the snapshot.
Once no live data file remains that it applies to, every read still loads and indexes it for
nothing. :func:`remove_dangling_deletes` finds those files with the spec's scoping rules and
removes them in one ``replace`` snapshot that changes no row (as Iceberg Java's
``RemoveDanglingDeleteFiles`` action and the ``remove-dangling-deletes`` option of its
``rewrite_data_files`` do).

A delete file is dangling when (data sequence numbers, spec "Scan Planning"):

- a deletion vector, or a position delete file naming one data file (``referenced_data_file``,
  or equal ``file_path`` bounds): that data file is not live, or its data sequence number is
  above the delete's;
- any other position delete file: its partition (spec id and tuple) has no live data file, or
  only data files with data sequence numbers above the delete's;
- an equality delete file of a partitioned spec: its partition has no live data file with a
  data sequence number strictly below the delete's;
- an equality delete file of an unpartitioned spec (it applies to every partition): no live
  data file of the table has a data sequence number strictly below the delete's.

The minimum data sequence number per partition is one Arrow group-by over the live manifest
entries. A retried commit (another writer committed first) looks again on the newer table
state and fails with ``CommitConflictError`` if a file it removes is gone or could apply to a
data file committed meanwhile (a rewrite keeping its starting sequence number may add one
with a lower sequence number than a delete's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.manifest import manifest_files, read_manifests
from icefloe.metadata import MAIN_BRANCH, Operation, Snapshot, TableMetadata
from icefloe.scan.manifests import fetch, partition_keys, written_manifest_list
from icefloe.scan.planner import path_bound
from icefloe.table.branch_heads import existing_branch_head
from icefloe.table.producer import DELETED, SnapshotProducer

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.table.concurrent_commits import Since
    from icefloe.table.table import Transaction

__all__ = [
    "RemoveDanglingDeletesResult",
    "dangling_delete_files",
    "remove_dangling_deletes",
]

#: The manifest columns decoded (the bounds for ``file_path``'s: a file naming one data file).
_COLUMNS = (
    "status",
    "sequence_number",
    "content",
    "file_path",
    "file_format",
    "partition",
    "record_count",
    "lower_bounds",
    "upper_bounds",
    "referenced_data_file",
    "content_offset",
)
_ENTRY_FIELDS = (
    ("content", pa.int32()),
    ("file_path", pa.string()),
    ("file_format", pa.string()),
    ("sequence_number", pa.int64()),
    ("spec_id", pa.int32()),
    ("partition_key", pa.binary()),
    ("unpartitioned", pa.bool_()),
    ("target", pa.string()),
    ("content_offset", pa.int64()),
    ("record_count", pa.int64()),
)
ENTRY_SCHEMA = pa.schema(list(_ENTRY_FIELDS))
"""The columns of :func:`live_entries` (and of :func:`dangling_delete_files`)."""


@dataclass(frozen=True)
class RemoveDanglingDeletesResult:
    """What :func:`remove_dangling_deletes` removed (or, with ``dry_run``, would remove):
    delete file entries by kind (a deletion vector counts once, though one Puffin file may
    hold several), the deleted rows they recorded, and their locations (sorted, distinct)."""

    removed_delete_files: int
    position_delete_files: int
    equality_delete_files: int
    dvs: int
    removed_delete_records: int
    paths: tuple[str, ...]
    dry_run: bool = False


def _column(
    batch: pa.Table | pa.RecordBatch, name: str, type_: pa.DataType
) -> pa.Array | pa.ChunkedArray:
    if name not in batch.schema.names:
        return pa.nulls(batch.num_rows, type_)
    return batch.column(name).cast(type_)


def _entries_of(batch: pa.RecordBatch, spec_id: int, unpartitioned: bool) -> pa.RecordBatch:
    """The live entries of one manifest in the layout of :data:`ENTRY_SCHEMA`."""
    batch = batch.filter(pc.not_equal(batch.column("status"), DELETED))
    n = batch.num_rows
    content = batch.column("content").cast(pa.int32())
    referenced = _column(batch, "referenced_data_file", pa.string())
    lower, upper = path_bound(batch, "lower_bounds"), path_bound(batch, "upper_bounds")
    named = pc.if_else(pc.equal(lower, upper), lower, pa.scalar(None, pa.binary()))
    target = pc.if_else(
        pc.equal(content, 1),
        pc.coalesce(referenced, named.cast(pa.string())),
        pa.scalar(None, pa.string()),
    )
    return pa.RecordBatch.from_arrays(
        [
            content,
            batch.column("file_path").cast(pa.string()),
            pc.utf8_upper(batch.column("file_format").cast(pa.string())),
            pc.fill_null(batch.column("sequence_number").cast(pa.int64()), 0),
            pa.repeat(pa.scalar(spec_id, pa.int32()), n),
            partition_keys(batch, spec_id),
            pa.repeat(pa.scalar(unpartitioned), n),
            target,
            _column(batch, "content_offset", pa.int64()),
            batch.column("record_count").cast(pa.int64()),
        ],
        schema=ENTRY_SCHEMA,
    )


def live_entries(io: FileIO, metadata: TableMetadata, snapshot: Snapshot | None) -> pa.Table:
    """The live data and delete files of ``snapshot`` (see :data:`ENTRY_SCHEMA`): data
    sequence numbers inherited, ``partition_key`` naming spec and tuple, ``target`` the data
    file a position delete file names (referenced or by equal ``file_path`` bounds)."""
    lst = written_manifest_list(io, snapshot)
    if lst is None or not lst.num_rows:
        return ENTRY_SCHEMA.empty_table()
    mfs = manifest_files(lst)
    specs = {s.spec_id: s for s in metadata.partition_specs}
    batches = []
    # decoded in Rust 64 manifests at a time, only the columns needed
    for i in range(0, len(mfs), 64):
        group = mfs[i : i + 64]
        data = fetch(io, [m.manifest_path for m in group])
        decoded = read_manifests(data, group, columns=_COLUMNS)
        for m, batch in zip(group, decoded, strict=True):
            spec = specs.get(m.partition_spec_id)
            unpartitioned = spec is None or spec.is_unpartitioned
            batches.append(_entries_of(batch, m.partition_spec_id, unpartitioned))
    return pa.Table.from_batches(batches, schema=ENTRY_SCHEMA)


def dangling_entries(entries: pa.Table) -> pa.Table:
    """The delete entries of ``entries`` (:func:`live_entries`) that are dangling."""
    content = entries.column("content")
    data = entries.filter(pc.equal(content, 0))
    deletes = entries.filter(pc.not_equal(content, 0))
    if not deletes.num_rows:
        return deletes
    seq = data.column("sequence_number")
    global_min = pc.min(seq).as_py() if data.num_rows else None
    grouped = data.group_by("partition_key", use_threads=False).aggregate(
        [("sequence_number", "min")]
    )
    by_partition = pa.table(
        {
            "partition_key": grouped.column("partition_key"),
            "partition_min": grouped.column("sequence_number_min"),
        }
    )
    by_file = data.select(["file_path", "sequence_number"]).rename_columns(
        ["target", "target_sequence_number"]
    )
    joined = deletes.join(by_partition, "partition_key", join_type="left outer").join(
        by_file, "target", join_type="left outer"
    )
    d_seq = joined.column("sequence_number")
    part_min = joined.column("partition_min")
    d_content = joined.column("content")
    targeted = pc.and_(pc.equal(d_content, 1), pc.is_valid(joined.column("target")))
    # a delete applies to a data file with a sequence number at most its own (position) or
    # strictly below it (equality); a null minimum (no live data file) means never
    target_applies = pc.fill_null(
        pc.less_equal(joined.column("target_sequence_number"), d_seq), False
    )
    partition_pos = pc.fill_null(pc.less_equal(part_min, d_seq), False)
    partition_eq = pc.fill_null(pc.less(part_min, d_seq), False)
    global_eq = (
        pc.less(pa.scalar(global_min, pa.int64()), d_seq)
        if global_min is not None
        else pa.repeat(pa.scalar(False), joined.num_rows)
    )
    eq_applies = pc.if_else(joined.column("unpartitioned"), global_eq, partition_eq)
    applies = pc.if_else(
        pc.equal(d_content, 2), eq_applies, pc.if_else(targeted, target_applies, partition_pos)
    )
    out = joined.filter(pc.invert(applies)).select(ENTRY_SCHEMA.names)
    return out.sort_by([("file_path", "ascending"), ("content_offset", "ascending")])


def dangling_delete_files(
    io: FileIO, metadata: TableMetadata, branch: str = MAIN_BRANCH
) -> pa.Table:
    """The live delete files of ``branch`` that no live data file can apply to (columns of
    :data:`ENTRY_SCHEMA`; one row per entry, so one per deletion vector)."""
    snapshot = existing_branch_head(metadata, branch, "remove the dangling deletes of")
    if snapshot is None or metadata.format_version < 2:
        return ENTRY_SCHEMA.empty_table()
    lst = written_manifest_list(io, snapshot)
    if lst is None or not pc.any(pc.not_equal(lst.column("content"), 0)).as_py():
        return ENTRY_SCHEMA.empty_table()  # no delete manifests: no manifest need be read
    return dangling_entries(live_entries(io, metadata, snapshot))


def _keys(entries: pa.Table | pa.RecordBatch) -> pa.Array:
    """``path NUL offset`` per entry: one deletion vector among those of one Puffin file."""
    offset = pc.cast(_column(entries, "content_offset", pa.int64()), pa.string())
    path = entries.column("file_path").cast(pa.string())
    return pc.binary_join_element_wise(path, pc.fill_null(offset, ""), "\x00")


class _StillDangling:
    """The retry check: on a newer table state every planned file must still be live and
    still dangling (see the module docstring)."""

    def __init__(self, io: FileIO, planned_on: TableMetadata, planned: pa.Table) -> None:
        self.io = io
        self.planned_on = planned_on
        self.keys = _keys(planned)

    def __call__(self, metadata: TableMetadata, parent: Snapshot | None, since: Since) -> None:
        if metadata is self.planned_on:
            return  # the first build, on the state the files were found on
        entries = live_entries(self.io, metadata, parent)
        live = _keys(entries.filter(pc.not_equal(entries.column("content"), 0)))
        gone = self.keys.filter(pc.invert(pc.is_in(self.keys, value_set=live)))
        if len(gone):
            path = str(gone[0].as_py()).split("\x00")[0]
            raise CommitConflictError(f"delete file {path} was removed by a concurrent commit")
        still = _keys(dangling_entries(entries))
        revived = self.keys.filter(pc.invert(pc.is_in(self.keys, value_set=still)))
        if len(revived):
            path = str(revived[0].as_py()).split("\x00")[0]
            raise CommitConflictError(
                f"delete file {path} applies to a data file a concurrent commit added"
            )


def _result(found: pa.Table, dry_run: bool) -> RemoveDanglingDeletesResult:
    content = found.column("content")
    pos = pc.equal(content, 1)
    dv = pc.and_(pos, pc.equal(found.column("file_format"), "PUFFIN"))

    def count(mask: pa.Array | pa.ChunkedArray) -> int:
        return int(pc.sum(mask).as_py() or 0)

    return RemoveDanglingDeletesResult(
        removed_delete_files=found.num_rows,
        position_delete_files=count(pc.and_(pos, pc.invert(dv))),
        equality_delete_files=count(pc.equal(content, 2)),
        dvs=count(dv),
        removed_delete_records=int(pc.sum(found.column("record_count")).as_py() or 0),
        paths=tuple(pc.unique(found.column("file_path")).to_pylist()),
        dry_run=dry_run,
    )


def remove_dangling_deletes(
    tx: Transaction,
    *,
    branch: str = MAIN_BRANCH,
    dry_run: bool = False,
    snapshot_properties: Mapping[str, str] | None = None,
) -> RemoveDanglingDeletesResult:
    """Removes the dangling delete files of ``branch`` (as of the transaction's metadata) in
    one ``replace`` snapshot added to ``tx``; nothing is committed when none is found or with
    ``dry_run`` (which only reports them). The files stay on storage until the snapshots that
    reference them expire."""
    if not isinstance(dry_run, bool):
        raise ValidationError(f"dry_run must be a bool, got {dry_run!r}")
    md = tx.metadata
    found = dangling_delete_files(tx.table.io, md, branch)
    result = _result(found, dry_run)
    if dry_run or not found.num_rows:
        return result
    producer = SnapshotProducer(tx, branch=branch, snapshot_properties=snapshot_properties)
    wanted = pc.unique(_keys(found))

    def predicate(batch: pa.RecordBatch) -> pa.Array:
        hit = pc.is_in(_keys(batch), value_set=wanted)
        return pc.and_(hit, pc.not_equal(batch.column("content"), 0))

    producer.remove_files_where(predicate)
    producer.set_operation(Operation.REPLACE)
    producer.validate(_StillDangling(tx.table.io, md, found))
    try:
        producer.commit()
    except BaseException:
        producer.abort()
        raise
    return result
