"""Turning a columnar :class:`~icefloe.scan.planner.Plan` into scan tasks.

:func:`plan_to_tasks` builds :class:`~icefloe.scan.tasks.FileScanTask` values (one per data
file; delete file references are shared between tasks). :func:`plan_to_table` builds one Arrow
table with a row per task, for callers that plan millions of files:

===================== ============================================================
column                meaning
===================== ============================================================
file_path             data file location
file_format           ``parquet``, ``avro`` or ``orc`` (lower case)
spec_id               partition spec of the data file
partition             struct over the union of the specs' partition fields (by field
                      id; fields of other specs are null)
record_count          rows in the file
file_size_in_bytes    file size
data_sequence_number  data sequence number
file_sequence_number  file sequence number
first_row_id          v3 row lineage (null before v3)
split_offsets         list<int64> of split offsets (nullable)
residual              the residual filter as JSON (``icefloe.expressions.serde``)
delete_files          list of structs: content (1 position, 2 equality), file_path,
                      file_format, record_count, file_size_in_bytes,
                      referenced_data_file, content_offset, content_size_in_bytes,
                      equality_ids, data_sequence_number, spec_id
===================== ============================================================
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe import _native
from icefloe.expressions.base import BooleanExpression
from icefloe.expressions.serde import to_dict
from icefloe.metadata import TableMetadata
from icefloe.scan.planner import EQUALITY_DELETES, Plan, PlannedBatch
from icefloe.scan.tasks import (
    DataFileRef,
    DeleteContent,
    DeleteFileRef,
    FileScanTask,
    replace_task,
)

__all__ = [
    "TableStream",
    "TaskStream",
    "gc_paused",
    "plan_to_table",
    "plan_to_tasks",
    "split_ranges",
]


def _col(batch: pa.RecordBatch, name: str) -> list[Any]:
    i = batch.schema.get_field_index(name)
    if i < 0:
        return [None] * batch.num_rows
    out: list[Any] = batch.column(i).to_pylist()
    return out


def _physical(a: pa.Array) -> pa.Array:
    """Dates, times and timestamps as their integer counts (cheaper to convert, and exact for
    nanoseconds); other types unchanged."""
    t = a.type
    if pa.types.is_date32(t):
        return a.cast(pa.int32())
    if pa.types.is_timestamp(t) or pa.types.is_time64(t):
        return a.cast(pa.int64())
    return a


def _partition_tuples(partition: pa.Array) -> list[tuple[Any, ...]]:
    """Partition tuples in spec order; dates, times and timestamps as integer counts (days,
    microseconds or nanoseconds), which :mod:`icefloe.scan.tasks` accepts."""
    n = len(partition)
    if partition.type.num_fields == 0:
        return [()] * n
    children = [_physical(c).to_pylist() for c in partition.flatten()]
    return list(zip(*children, strict=True))


def _delete_refs(plan: Plan, used: np.ndarray) -> dict[int, DeleteFileRef]:
    refs: dict[int, DeleteFileRef] = {}
    base = 0
    wanted = set(used.tolist())
    for sid, b in plan.deletes:
        n = b.num_rows
        rows = [i for i in range(n) if base + i in wanted]
        if rows:
            sub = b.take(pa.array(rows, type=pa.int64()))
            parts = _partition_tuples(sub.column("partition"))
            cols = {
                name: _col(sub, name)
                for name in (
                    "content",
                    "file_path",
                    "file_format",
                    "record_count",
                    "file_size_in_bytes",
                    "referenced_data_file",
                    "content_offset",
                    "content_size_in_bytes",
                    "equality_ids",
                    "sequence_number",
                )
            }
            for j, i in enumerate(rows):
                refs[base + i] = DeleteFileRef(
                    content=DeleteContent.EQUALITY_DELETES
                    if cols["content"][j] == EQUALITY_DELETES
                    else DeleteContent.POSITION_DELETES,
                    file_path=cols["file_path"][j],
                    file_format=cols["file_format"][j],
                    record_count=cols["record_count"][j],
                    file_size_in_bytes=cols["file_size_in_bytes"][j],
                    referenced_data_file=cols["referenced_data_file"][j],
                    content_offset=cols["content_offset"][j],
                    content_size_in_bytes=cols["content_size_in_bytes"][j],
                    equality_ids=tuple(cols["equality_ids"][j] or ()),
                    data_sequence_number=cols["sequence_number"][j],
                    spec_id=sid,
                    partition=parts[j],
                )
        base += n
    return refs


#: Bytes a file counts for at least when sizing and packing splits (Iceberg's
#: ``read.split.open-file-cost``).
OPEN_FILE_COST = 4 * 1024 * 1024
#: The smallest split size :func:`adaptive_split_size` lowers the target to.
MIN_SPLIT_SIZE = 16 * 1024 * 1024


def adaptive_split_size(scan_bytes: int, parallelism: int, split_size: int) -> int:
    """The split size of a read of ``scan_bytes``: ``split_size`` when it makes at least
    ``parallelism`` splits, else ``scan_bytes / parallelism`` but at least
    :data:`MIN_SPLIT_SIZE` (or ``split_size`` when that is smaller), as Iceberg's Java runtime
    adapts it (``read.split.adaptive-size.enabled``). Never larger than ``split_size``."""
    splits = -(-scan_bytes // max(1, split_size))
    if splits >= parallelism:
        return split_size
    return max(scan_bytes // max(1, parallelism), min(MIN_SPLIT_SIZE, split_size))


def plan_bytes(plan: Plan) -> int:
    """The bytes a plan reads, each file counted as at least :data:`OPEN_FILE_COST`."""
    total = 0
    for pb in plan.batches:
        sizes = pb.entries.column("file_size_in_bytes").to_numpy(zero_copy_only=False)
        total += int(np.maximum(sizes, OPEN_FILE_COST).sum())
    return total


def tasks_bytes(tasks: Sequence[FileScanTask]) -> int:
    """The bytes ``tasks`` (one per file) read, each file counted as at least
    :data:`OPEN_FILE_COST` (as :func:`plan_bytes`)."""
    return sum(max(t.data_file.file_size_in_bytes, OPEN_FILE_COST) for t in tasks)


def split_tasks(tasks: Sequence[FileScanTask], split_size: int) -> list[FileScanTask]:
    """``tasks`` (one per file) with Parquet files larger than ``split_size`` split into
    fixed byte ranges (for tasks without ``split_offsets``, as a REST server plans them)."""
    out: list[FileScanTask] = []
    for task in tasks:
        f = task.data_file
        if f.file_format.lower() != "parquet" or f.file_size_in_bytes <= split_size:
            out.append(task)
            continue
        for start, length in split_ranges(f.file_size_in_bytes, None, split_size):
            out.append(replace_task(task, start=start, length=length))
    return out


def split_ranges(size: int, offsets: list[int] | None, target: int) -> list[tuple[int, int]]:
    """Byte ranges ``(start, length)`` covering a file of ``size`` bytes, for a split target
    size: adjacent ``split_offsets`` ranges (row group starts) combined while they fit in
    ``target`` when the offsets are valid (ascending, inside the file), else fixed ranges of
    ``target`` bytes. A file no larger than ``target`` is one range."""
    if size <= target or target <= 0:
        return [(0, size)]
    ok = (
        offsets is not None
        and len(offsets) > 0
        and all(0 <= a < b for a, b in itertools.pairwise(offsets))
        and offsets[-1] < size
    )
    if not ok:
        return [(start, min(target, size - start)) for start in range(0, size, target)]
    assert offsets is not None
    bounds = [0, *offsets[1:], size]  # the first split also covers the file header
    out: list[tuple[int, int]] = []
    start = 0
    for k in range(1, len(bounds)):
        end_prev, end = bounds[k - 1], bounds[k]
        if end - start > target and end_prev > start:
            out.append((start, end_prev - start))
            start = end_prev
    out.append((start, size - start))
    return out


def _delete_ref_list(plan: Plan, flat: np.ndarray) -> list[DeleteFileRef | None]:
    """The delete file refs by delete index (None for deletes no task uses)."""
    total = sum(b.num_rows for _, b in plan.deletes)
    out: list[DeleteFileRef | None] = [None] * total
    if len(flat):
        for i, ref in _delete_refs(plan, np.unique(flat)).items():
            out[i] = ref
    return out


def plan_to_tasks(plan: Plan, split_size: int | None = None) -> list[FileScanTask]:
    """One :class:`FileScanTask` per planned data file, in manifest order; with ``split_size``,
    Parquet files larger than it become several tasks (see :func:`split_ranges`). Tasks of manifests
    with no file to split are built in Rust (:func:`icefloe._native.plan_build_tasks`)."""
    if not plan.batches:
        return []
    assert plan.assignment is not None
    offsets = plan.assignment.offsets.to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(plan.assignment).to_numpy(zero_copy_only=False)
    refs = _delete_ref_list(plan, flat)
    with gc_paused():
        return _tasks(plan, offsets, flat, refs, split_size)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pauses the cyclic collector: task building makes hundreds of thousands of new objects,
    none in a cycle, which the collector would otherwise walk again and again (a fifth of the
    time) while they are built."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class TaskStream:
    """Builds the tasks of a plan without delete files batch by batch, as the planner hands the
    batches over (``on_batch`` of :func:`icefloe.scan.planner.plan`), so that task building
    overlaps the decode of the next manifests. :attr:`tasks` then equals
    ``plan_to_tasks(plan)`` when :attr:`batches` counts every batch of the plan."""

    def __init__(self) -> None:
        self.tasks: list[FileScanTask] = []
        self.batches = 0

    def __call__(self, pb: PlannedBatch, residuals: Sequence[BooleanExpression]) -> None:
        self.tasks += _build_tasks(pb, list(residuals), None, [])
        self.batches += 1


def _tasks(
    plan: Plan,
    offsets: np.ndarray,
    flat: np.ndarray,
    refs: list[DeleteFileRef | None],
    split_size: int | None,
) -> list[FileScanTask]:
    tasks: list[FileScanTask] = []
    row = 0
    for pb in plan.batches:
        b = pb.entries
        n = b.num_rows
        lo, hi = int(offsets[row]), int(offsets[row + n])
        deletes = pa.ListArray.from_arrays(
            pa.array(offsets[row : row + n + 1] - lo, pa.int32()),
            pa.array(flat[lo:hi], pa.int32()),
        )
        row += n
        sizes = b.column("file_size_in_bytes")
        big = split_size is not None and n > 0 and (pc.max(sizes).as_py() or 0) > split_size
        if big:
            tasks += _python_tasks(pb, plan, deletes, refs, split_size)
            continue
        tasks += _build_tasks(pb, plan.residuals, deletes, refs)
    return tasks


def _build_tasks(
    pb: PlannedBatch,
    residuals: list[BooleanExpression],
    deletes: pa.ListArray | None,
    refs: Sequence[DeleteFileRef | None],
) -> list[FileScanTask]:
    """The tasks of one planned manifest, built in Rust (:func:`_native.plan_build_tasks`);
    partition tuples of types Rust does not convert are made here."""
    b = pb.entries
    residual_index = pa.array(pb.residual_index, pa.int32())
    tasks = _native.plan_build_tasks(pb.spec_id, b, residual_index, residuals, deletes, refs)
    if tasks is None:
        part_index, parts = _distinct_partitions(b.column("partition"))
        tasks = _native.plan_build_tasks(
            pb.spec_id,
            b,
            residual_index,
            residuals,
            deletes,
            refs,
            (part_index.cast(pa.int32()), parts),
        )
        assert tasks is not None
    return tasks


def _distinct_partitions(partition: pa.Array) -> tuple[pa.Array, list[tuple[Any, ...]]]:
    """Per row, an index into the returned distinct partition tuples (the files of one
    partition share one tuple object)."""
    n = len(partition)
    if partition.type.num_fields == 0 or n == 0:
        return pa.array(np.zeros(n, dtype=np.int32)), [()]
    # equal byte keys <=> equal tuples; dictionary indices are numbered in order of first
    # occurrence, so a row is its key's first occurrence where the running maximum grows
    encoded = pc.dictionary_encode(_native.plan_partition_keys(partition))
    index = encoded.indices.to_numpy(zero_copy_only=False)
    first = np.flatnonzero(np.diff(np.maximum.accumulate(index), prepend=-1) > 0)
    return encoded.indices, _partition_tuples(partition.take(pa.array(first)))


def _python_tasks(
    pb: PlannedBatch,
    plan: Plan,
    deletes: pa.ListArray,
    refs: list[DeleteFileRef | None],
    split_size: int | None,
) -> list[FileScanTask]:
    """The tasks of one planned manifest, files larger than ``split_size`` split."""
    b = pb.entries
    sid = pb.spec_id
    lows = deletes.offsets.to_numpy(zero_copy_only=False).tolist()
    values = deletes.values.to_numpy(zero_copy_only=False).tolist()
    sizes = _col(b, "file_size_in_bytes")
    split_offsets = _col(b, "split_offsets")
    residuals = [plan.residuals[i] for i in pb.residual_index.tolist()]
    columns = zip(
        _col(b, "file_path"),
        pc.utf8_lower(b.column("file_format")).to_pylist(),
        _col(b, "record_count"),
        sizes,
        _partition_tuples(b.column("partition")),
        _col(b, "first_row_id"),
        _col(b, "sequence_number"),
        _col(b, "file_sequence_number"),
        residuals,
        lows[:-1],
        lows[1:],
        split_offsets,
        strict=True,
    )
    tasks: list[FileScanTask] = []
    for path, fmt, count, size, part, first, seq, fseq, residual, lo, hi, offs in columns:
        data = DataFileRef(path, fmt, count, size, sid, part, first, seq, fseq)
        deletes_of = tuple([refs[j] for j in values[lo:hi]]) if hi > lo else ()
        # Only Parquet files are split (by row group); ORC and Avro files are read whole.
        ranges = (
            split_ranges(size, offs, split_size)
            if split_size is not None and size > split_size and fmt == "parquet"
            else ((0, None),)
        )
        for start, length in ranges:
            tasks.append(FileScanTask(data, deletes_of, start, length, residual, sid))
    return tasks


def _add_partition_fields(
    fields: dict[int, pa.Field], names: set[str], partition: pa.StructType
) -> bool:
    """Adds the fields of a batch's partition type not yet in ``fields`` (by field id, in
    order of first appearance; a repeated name gets its field id appended); True if any."""
    added = False
    for f in partition:
        fid = int((f.metadata or {}).get(b"field_id", b"-1"))
        if fid in fields:
            continue
        name = f.name if f.name not in names else f"{f.name}_{fid}"
        names.add(name)
        fields[fid] = pa.field(name, f.type, nullable=True, metadata=f.metadata)
        added = True
    return added


def _planned_partition_type(plan: Plan) -> pa.StructType:
    """The Arrow partition type over the planned batches' specs (each field once, by id)."""
    fields: dict[int, pa.Field] = {}
    names: set[str] = set()
    for pb in plan.batches:
        _add_partition_fields(fields, names, pb.entries.schema.field("partition").type)
    return pa.struct(list(fields.values()))


def _to_union(partition: pa.StructArray, union: pa.StructType) -> pa.StructArray:
    by_id = {}
    for i, f in enumerate(partition.type):
        by_id[(f.metadata or {}).get(b"field_id")] = partition.field(i)
    n = len(partition)
    children = []
    for f in union:
        c = by_id.get((f.metadata or {}).get(b"field_id"))
        children.append(c if c is not None else pa.nulls(n, f.type))
    if not children:
        return pa.array([{}] * n, pa.struct([]))
    out: pa.StructArray = pa.StructArray.from_arrays(children, fields=list(union))
    return out


_DELETE_TYPE = pa.struct(
    [
        pa.field("content", pa.int32()),
        pa.field("file_path", pa.string()),
        pa.field("file_format", pa.string()),
        pa.field("record_count", pa.int64()),
        pa.field("file_size_in_bytes", pa.int64()),
        pa.field("referenced_data_file", pa.string()),
        pa.field("content_offset", pa.int64()),
        pa.field("content_size_in_bytes", pa.int64()),
        pa.field("equality_ids", pa.list_(pa.int32())),
        pa.field("data_sequence_number", pa.int64()),
        pa.field("spec_id", pa.int32()),
    ]
)


def _deletes_struct(plan: Plan) -> pa.StructArray:
    parts = []
    for sid, b in plan.deletes:
        n = b.num_rows
        cols = []
        for f in _DELETE_TYPE:
            src = "sequence_number" if f.name == "data_sequence_number" else f.name
            if f.name == "spec_id":
                cols.append(pa.array(np.full(n, sid, dtype=np.int32)))
            elif src in b.schema.names:
                c = b.column(src)
                if f.name == "file_format":
                    c = pc.utf8_lower(c)
                cols.append(c.cast(f.type))
            else:
                cols.append(pa.nulls(n, f.type))
        parts.append(pa.StructArray.from_arrays(cols, fields=list(_DELETE_TYPE)))
    if not parts:
        return pa.array([], _DELETE_TYPE)
    out: pa.StructArray = pa.concat_arrays(parts)
    return out


_TABLE_TYPES = {
    "file_path": pa.string(),
    "file_format": pa.string(),
    "record_count": pa.int64(),
    "file_size_in_bytes": pa.int64(),
    "data_sequence_number": pa.int64(),
    "file_sequence_number": pa.int64(),
    "first_row_id": pa.int64(),
    "split_offsets": pa.list_(pa.int64()),
}
_TABLE_SOURCE = {"data_sequence_number": "sequence_number"}


def _batch_columns(b: pa.RecordBatch, union: pa.StructType) -> dict[str, pa.Array]:
    """One planned batch's columns of :func:`plan_to_table` but ``spec_id`` and ``residual``:
    cast only where the batch's type differs, the partition widened to ``union``."""
    names = b.schema.names
    out: dict[str, pa.Array] = {"partition": _to_union(b.column("partition"), union)}
    for k, t in _TABLE_TYPES.items():
        name = _TABLE_SOURCE.get(k, k)
        if name not in names:
            out[k] = pa.nulls(b.num_rows, t)
            continue
        c = b.column(name)
        c = c if c.type == t else c.cast(t)
        out[k] = pc.utf8_lower(c) if k == "file_format" else c
    return out


class TableStream:
    """Converts the batches of a plan without delete files to the columns of
    :func:`plan_to_table` as the planner hands them over (``on_batch`` of
    :func:`icefloe.scan.planner.plan`), so the conversion overlaps the decode of the next
    manifests; pass it to :func:`plan_to_table`, which uses its columns when :attr:`batches`
    counts every batch of the plan."""

    def __init__(self) -> None:
        self._fields: dict[int, pa.Field] = {}
        self._names: set[str] = set()
        self.union = pa.struct([])
        # per batch: the partition union it was converted with, and its columns
        self.columns: list[tuple[pa.StructType, dict[str, pa.Array]]] = []
        self.batches = 0

    def __call__(self, pb: PlannedBatch, residuals: Sequence[BooleanExpression]) -> None:
        del residuals
        b = pb.entries
        if _add_partition_fields(self._fields, self._names, b.schema.field("partition").type):
            self.union = pa.struct(list(self._fields.values()))
        self.columns.append((self.union, _batch_columns(b, self.union)))
        self.batches += 1


def plan_to_table(
    plan: Plan, metadata: TableMetadata | None = None, stream: TableStream | None = None
) -> pa.Table:
    """The planned tasks as one Arrow table (columns in the module docstring); ``stream``, if
    it saw every batch of ``plan``, holds their columns already converted."""
    del metadata
    union = _planned_partition_type(plan)
    types: dict[str, pa.DataType] = {**_TABLE_TYPES, "partition": union}
    done = stream.columns if stream is not None and stream.batches == len(plan.batches) else None
    # columns stay chunked (one chunk per planned batch: no concatenation of a million paths);
    # a batch's column is cast only where its type differs, whole columns are computed once
    columns: dict[str, list[pa.Array]] = {k: [] for k in types}
    for i, pb in enumerate(plan.batches):
        if done is None:
            cols = _batch_columns(pb.entries, union)
        else:
            seen, cols = done[i]
            if not seen.equals(union, check_metadata=True):
                # converted before later batches added partition fields
                cols = {**cols, "partition": _to_union(pb.entries.column("partition"), union)}
        for k in types:
            columns[k].append(cols[k])
    arrays: dict[str, pa.Array | pa.ChunkedArray] = {
        k: pa.chunked_array(v, types[k]) for k, v in columns.items()
    }
    counts = [pb.entries.num_rows for pb in plan.batches]
    arrays["spec_id"] = pa.array(
        np.repeat(np.array([pb.spec_id for pb in plan.batches], dtype=np.int32), counts)
    )
    index = [np.asarray(pb.residual_index, dtype=np.int32) for pb in plan.batches]
    residual_json = [json.dumps(to_dict(r)) for r in plan.residuals]
    arrays["residual"] = pa.array(residual_json, pa.string()).take(
        pa.array(np.concatenate(index) if index else np.zeros(0, dtype=np.int32))
    )
    order = ["file_path", "file_format", "spec_id", "partition", "record_count"]
    order += ["file_size_in_bytes", "data_sequence_number", "file_sequence_number"]
    order += ["first_row_id", "split_offsets", "residual"]
    arrays = {k: arrays[k] for k in order}
    deletes = _deletes_struct(plan)
    if plan.assignment is not None and len(plan.assignment):
        idx = pc.list_flatten(plan.assignment)
        arrays["delete_files"] = pa.ListArray.from_arrays(
            plan.assignment.offsets, deletes.take(idx)
        )
    else:
        arrays["delete_files"] = pa.array([], pa.list_(_DELETE_TYPE))
    return pa.table(arrays)
