"""Row-level building blocks shared by ``delete``, ``upsert``, ``delete_by_keys`` and Spark.

Per planned task (one data file with the deletes that apply to it):

- :func:`matching_positions`: positions of the live rows matching a filter (the ``_pos``
  metadata column of the reader, filtered by the bound expression in Arrow).
  :func:`native_matching_positions` does the same for many tasks at once where the native
  reader takes their files (a chunk of files decoded per call, the filter evaluated once per
  chunk), leaving the other tasks to the per-task function.
- :func:`surviving_rows`: the live rows *not* matching a filter, with ``_row_id`` and
  ``_last_updated_sequence_number`` so a copy-on-write rewrite keeps row lineage.
- :func:`key_match_mask` / :func:`matching_key_positions`: which rows of a data file have a key
  present in a set of keys (hash-matched in Rust, null equals null like equality deletes);
  :func:`native_matching_key_positions` for many tasks at once.
- :func:`check_unique_keys`: upsert sources must not repeat a key.
- :func:`canonical_nans`: float keys with one NaN, as keys compare them, before Arrow hashes,
  groups or joins them (it tells NaNs apart by their bits).
- :func:`carry_row_ids`: the ``_row_id`` of the existing row each source row replaces (an
  Arrow hash lookup or join), so an updated row keeps its id; :func:`first_match` the lookup
  itself, :func:`matched_source_rows` how many source rows an upsert replaces.
- :func:`all_rows_match`: whether a task's partition alone proves every row matches a filter
  (then copy-on-write drops the whole file without reading it); :func:`proven_by_metrics`
  the same proof from the files' column metrics (in Rust, per manifest batch).

Nothing here loops over rows in Python.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe import _native
from icefloe._concurrency import work_threads
from icefloe._identity_memo import IdentityMemo
from icefloe.arrow_fill import extension_storage
from icefloe.deletes import EqualityDeleteSet
from icefloe.exceptions import ValidationError
from icefloe.expressions.arrow import selection_mask
from icefloe.expressions.base import AlwaysFalse, AlwaysTrue, BooleanExpression
from icefloe.expressions.binding import bind
from icefloe.expressions.evaluator import evaluate
from icefloe.expressions.parser import parse_filter
from icefloe.expressions.projection import project
from icefloe.io import FileIO
from icefloe.name_mapping import NameMapping
from icefloe.partitioning import PartitionSpec
from icefloe.read.column_chunks import column_chunks
from icefloe.read.deletes import DeleteCache
from icefloe.read.native_files import POSITION_COLUMN, top_level_fields
from icefloe.read.reader import output_schema, read_task
from icefloe.scan.filters import expr_json, referenced_field_ids
from icefloe.scan.tasks import (
    LAST_UPDATED_SEQUENCE_NUMBER,
    POS,
    ROW_ID,
    FileScanTask,
    ReadOptions,
    metadata_field,
    replace_task,
)
from icefloe.schema import Schema
from icefloe.types import StructType, UUIDType

__all__ = [
    "all_rows_match",
    "bind_filter",
    "canonical_nans",
    "carry_row_ids",
    "check_unique_keys",
    "first_match",
    "key_match_mask",
    "matched_source_rows",
    "matching_key_positions",
    "matching_positions",
    "native_matching_key_positions",
    "native_matching_positions",
    "partition_key",
    "partition_row",
    "proven_by_metrics",
    "surviving_rows",
]

_EMPTY_POSITIONS = pa.array([], pa.int64())
_NO_SPECS: Mapping[int, PartitionSpec] = {}


def bind_filter(
    schema: Schema, row_filter: BooleanExpression | str, case_sensitive: bool = True
) -> BooleanExpression:
    """``row_filter`` (an expression or a filter string) bound to ``schema``."""
    return bind(schema, parse_filter(row_filter), case_sensitive)


_OPTIONS = IdentityMemo(32)


def _options(
    schema: Schema,
    projected: tuple[int, ...] | None,
    specs: Mapping[int, PartitionSpec],
    name_mapping: NameMapping | None,
    metadata_columns: tuple[str, ...],
    format_version: int,
    schemas: tuple[Schema, ...] = (),
) -> ReadOptions:
    """Read options, the same object for the same arguments: the reader memoizes the schemas
    it derives per options object, which the tasks of one operation then share. ``schemas``:
    the table's (equality deletes on fields it dropped still apply, see :class:`ReadOptions`)."""
    return _OPTIONS.get(
        (schema, specs, name_mapping, schemas),
        (projected, metadata_columns, format_version),
        lambda: ReadOptions(
            schema,
            projected_field_ids=projected,
            specs=specs,
            name_mapping=name_mapping,
            metadata_columns=metadata_columns,
            format_version=format_version,
            schemas=schemas,
        ),
    )


def matching_positions(
    io: FileIO,
    task: FileScanTask,
    schema: Schema,
    bound_filter: BooleanExpression,
    *,
    specs: Mapping[int, PartitionSpec] | None = None,
    name_mapping: NameMapping | None = None,
    cache: DeleteCache | None = None,
    schemas: tuple[Schema, ...] = (),
) -> pa.Array:
    """Positions (int64, ascending) of the rows of ``task``'s data file that are live (not
    deleted by the task's deletes) and match ``bound_filter``. Rows where the filter is null
    (unknown) do not match. Only the filter's columns are read."""
    if bound_filter is AlwaysFalse():
        return _EMPTY_POSITIONS
    whole = replace_task(task, residual=bound_filter, start=0, length=None)
    options = _options(schema, (), specs or _NO_SPECS, name_mapping, (POS,), 2, schemas)
    arrays = [b.column(0) for b in read_task(io, whole, options, cache)]
    if not arrays:
        return _EMPTY_POSITIONS
    return pa.concat_arrays(arrays)


def native_matching_positions(
    io: FileIO,
    tasks: Sequence[FileScanTask],
    schema: Schema,
    bound_filter: BooleanExpression,
    *,
    cache: DeleteCache,
    name_mapping: NameMapping | None = None,
    workers: int | None = None,
) -> list[pa.Array | None]:
    """Per task, what :func:`matching_positions` gives, for the tasks whose files the native
    reader takes (:func:`icefloe.read.column_chunks.column_chunks`): the filter's columns of a
    chunk of files are decoded in one call and the filter evaluated on each batch as it comes
    (in Rust, on the decoding threads, when it can be), while the next ones decode. None for a
    task left to :func:`matching_positions`."""
    out: list[pa.Array | None] = [None] * len(tasks)
    if bound_filter is AlwaysFalse():
        return [_EMPTY_POSITIONS] * len(tasks)
    fields = top_level_fields(schema, referenced_field_ids(bound_filter))
    if fields is None:
        return out
    threads = workers or work_threads()
    chunks = column_chunks(io, tasks, fields, threads, cache, name_mapping, select=bound_filter)
    for chunk in chunks:
        for i, rows in chunk.parts():
            out[i] = rows.column(POSITION_COLUMN).combine_chunks()
    return out


def surviving_rows(
    io: FileIO,
    task: FileScanTask,
    schema: Schema,
    bound_filter: BooleanExpression,
    *,
    specs: Mapping[int, PartitionSpec] | None = None,
    name_mapping: NameMapping | None = None,
    cache: DeleteCache | None = None,
    schemas: tuple[Schema, ...] = (),
    lineage: bool = True,
) -> Iterator[pa.RecordBatch]:
    """The live rows of ``task``'s data file that do not match ``bound_filter`` (null counts as
    not matching), with every table column and, when ``lineage``, ``_row_id`` and
    ``_last_updated_sequence_number`` appended (null when the table has no row lineage)."""
    whole = replace_task(task, residual=AlwaysTrue(), start=0, length=None)
    meta = (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER) if lineage else ()
    version = 3 if lineage else 2
    options = _options(schema, None, specs or _NO_SPECS, name_mapping, meta, version, schemas)
    expr = None if bound_filter is AlwaysFalse() else bound_filter
    for batch in read_task(io, whole, options, cache):
        if expr is None:
            yield batch
            continue
        hit = selection_mask(expr, batch)
        keep = pc.invert(hit)
        out = batch.filter(keep)
        if out.num_rows:
            yield out


def all_rows_match(
    task: FileScanTask,
    schema: Schema,
    bound_filter: BooleanExpression,
    specs: Mapping[int, PartitionSpec],
) -> bool:
    """True when ``task``'s partition proves every row of its data file matches the filter
    (strict projection of the filter onto the file's partition spec, evaluated on its
    partition tuple)."""
    if bound_filter is AlwaysTrue():
        return True
    if bound_filter is AlwaysFalse():
        return False
    spec = specs.get(task.data_file.spec_id)
    if spec is None or not spec.fields:
        return False
    ptype, bound = _STRICT.get(
        (schema, bound_filter, spec), (), lambda: _strict_projection(schema, bound_filter, spec)
    )
    if bound is AlwaysFalse():
        return False
    if bound is AlwaysTrue():
        return True
    try:
        return evaluate(bound, partition_row(ptype, task.data_file.partition))
    except TypeError:  # a value the evaluator cannot compare proves nothing
        return False


def proven_by_metrics(
    entries: Sequence[pa.RecordBatch], bound_filter: BooleanExpression
) -> frozenset[str]:
    """The ``file_path`` of the manifest entries (batches with ``record_count`` and the column
    metrics maps) whose metrics prove that every row of the file matches ``bound_filter``
    (bound to the table schema): null and NaN counts of zero and bounds inside the filter's
    range (:func:`icefloe._native.expr_strict_metrics_mask`; missing statistics prove
    nothing)."""
    if bound_filter is AlwaysFalse() or not entries:
        return frozenset()
    if bound_filter is AlwaysTrue():
        return frozenset(p for b in entries for p in b.column("file_path").to_pylist())
    text = expr_json(bound_filter)
    out: set[str] = set()
    for batch in entries:
        if batch.num_rows == 0:
            continue
        mask = _native.expr_strict_metrics_mask(batch.to_struct_array(), text)
        out.update(batch.column("file_path").filter(mask).to_pylist())
    return frozenset(out)


#: The strict projection of a filter onto a spec, worked out once per operation, not per file.
_STRICT = IdentityMemo(32)


def _strict_projection(
    schema: Schema, bound_filter: BooleanExpression, spec: PartitionSpec
) -> tuple[StructType, BooleanExpression]:
    # The filter is bound to ``schema``: a source dropped from it (typed ``unknown`` here) is
    # never projected, so its older type (``partition_type(schema, history)``) is not needed.
    ptype = spec.partition_type(schema)
    return ptype, bind(ptype, project(bound_filter, spec, strict=True), True)


_EPOCH = _dt.datetime(1970, 1, 1)


def _internal(v: Any) -> Any:
    """A partition value in the form bound literals use (days, microseconds)."""
    if isinstance(v, _dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return (v - _EPOCH) // _dt.timedelta(microseconds=1)
    if isinstance(v, _dt.date):
        return (v - _EPOCH.date()).days
    if isinstance(v, _dt.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    return v


def partition_key(partition: Sequence[Any]) -> str:
    """A hashable, representation-independent key of a partition tuple (dates as days...)."""
    return repr(tuple(_internal(v) for v in partition))


def partition_row(ptype: StructType, partition: Sequence[Any]) -> dict[int, Any]:
    """A partition tuple as the ``{field id: value}`` row the expression evaluator reads
    (uuids as ``uuid.UUID``, as bound literals hold them, not the tuple's 16 bytes)."""
    return {
        f.field_id: (
            uuid.UUID(bytes=bytes(v))
            if isinstance(f.field_type, UUIDType) and isinstance(v, bytes | bytearray)
            else _internal(v)
        )
        for f, v in zip(ptype.fields, partition, strict=False)
    }


# ---------------------------------------------------------------------------------------------
# keys


def _key_table(data: pa.Table | pa.RecordBatch, join_cols: Sequence[str]) -> pa.Table:
    table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
    missing = [c for c in join_cols if c not in table.column_names]
    if missing:
        raise ValidationError(f"join columns {missing} are not in the data {table.column_names}")
    return table.select(list(join_cols))


_NAN_TYPES = (pa.float32(), pa.float64())


def canonical_nans(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """``col`` with every NaN as the one NaN, for Arrow's hashing, grouping and joins, which
    tell NaNs apart by their bits where keys do not (Java's ``Double.compare``: NaN equals
    NaN; ``-0.0`` and ``0.0`` stay apart). Other types, and columns without NaN, as they are."""
    if col.type not in _NAN_TYPES or col.null_count == len(col):
        return col
    nan = pc.is_nan(col)
    if not pc.any(nan).as_py():
        return col
    out: pa.ChunkedArray = pc.if_else(nan, pa.scalar(float("nan"), col.type), col)
    return out


def _canonical_keys(keys: pa.Table) -> pa.Table:
    """The key columns of ``keys`` (a table of them) with :func:`canonical_nans`."""
    if not any(t in _NAN_TYPES for t in keys.schema.types):
        return keys
    return pa.Table.from_arrays([canonical_nans(c) for c in keys.columns], schema=keys.schema)


def check_unique_keys(
    data: pa.Table, join_cols: Sequence[str], key_set: KeySet | None = None
) -> None:
    """Raises ``ValidationError`` when two rows of ``data`` share a key (an upsert source must
    name each row once). ``key_set``, the keys of ``data`` already hashed, settles the common
    case (as many distinct keys as rows) without grouping them again."""
    if not join_cols:
        raise ValidationError("upsert needs at least one join column")
    keys = _key_table(data, join_cols)
    if keys.num_rows < 2:
        return
    keys = pa.Table.from_arrays(
        [canonical_nans(extension_storage(c)) for c in keys.columns], keys.column_names
    )
    # The set hashes floats by their bits (-0.0 is not 0.0); grouping decides those.
    exact = not any(pa.types.is_floating(t) for t in keys.schema.types)
    if key_set is not None and exact and len(key_set) == keys.num_rows:
        return
    counts = keys.group_by(list(join_cols), use_threads=False).aggregate([([], "count_all")])
    if counts.num_rows != keys.num_rows:
        dup = counts.filter(pc.greater(counts.column("count_all"), 1)).slice(0, 1).to_pylist()
        raise ValidationError(
            f"duplicate rows in the source for join columns {list(join_cols)}: "
            f"{ {k: v for k, v in dup[0].items() if k != 'count_all'} }"
        )


class KeySet:
    """A set of keys (the ``join_cols`` of a table), hashed once in Rust and probed per batch."""

    def __init__(self, keys: pa.Table | pa.RecordBatch, join_cols: Sequence[str]) -> None:
        self.join_cols = list(join_cols)
        self._set = EqualityDeleteSet(_key_table(keys, self.join_cols))

    def __len__(self) -> int:
        return len(self._set)

    @property
    def native(self) -> _native.EqualityDeleteSet:
        """The Rust set (its columns named as the join columns)."""
        return self._set.native

    def match_mask(self, batch: pa.Table | pa.RecordBatch) -> pa.BooleanArray:
        """True for the rows of ``batch`` whose key is in the set."""
        keys = _key_table(batch, self.join_cols)
        if keys.num_rows == 0:
            return pa.array([], pa.bool_())
        return pc.invert(self._set.keep_mask(keys))


def key_match_mask(
    batch: pa.Table | pa.RecordBatch, keys: pa.Table | pa.RecordBatch, join_cols: Sequence[str]
) -> pa.BooleanArray:
    """True for the rows of ``batch`` whose ``join_cols`` equal a row of ``keys``."""
    return KeySet(keys, join_cols).match_mask(batch)


def matching_key_positions(
    io: FileIO,
    task: FileScanTask,
    schema: Schema,
    keys: KeySet,
    *,
    specs: Mapping[int, PartitionSpec] | None = None,
    name_mapping: NameMapping | None = None,
    cache: DeleteCache | None = None,
    schemas: tuple[Schema, ...] = (),
    with_row_ids: bool = False,
) -> pa.Table:
    """The live rows of ``task``'s data file whose key is in ``keys``: a table of the join
    columns, ``_pos`` and (when ``with_row_ids``) ``_row_id``. Reads only the join columns."""
    ids = _join_ids(schema, keys)
    meta = (POS, ROW_ID) if with_row_ids else (POS,)
    whole = replace_task(task, residual=AlwaysTrue(), start=0, length=None)
    options = _options(schema, tuple(ids), specs or _NO_SPECS, name_mapping, meta, 3, schemas)
    parts = []
    for batch in read_task(io, whole, options, cache):
        hit = keys.match_mask(batch)
        if pc.any(hit).as_py():
            parts.append(batch.filter(hit))
    if not parts:
        return output_schema(options, task.data_file.spec_id).empty_table()
    return pa.Table.from_batches(parts)


def _join_ids(schema: Schema, keys: KeySet) -> list[int]:
    ids = []
    for name in keys.join_cols:
        fid = schema.find_field_id(name)
        if fid is None:
            raise ValidationError(f"join column {name!r} is not in the table schema")
        ids.append(fid)
    return ids


def native_matching_key_positions(
    io: FileIO,
    tasks: Sequence[FileScanTask],
    schema: Schema,
    keys: KeySet,
    *,
    cache: DeleteCache,
    name_mapping: NameMapping | None = None,
    with_row_ids: bool = False,
    workers: int | None = None,
) -> list[pa.Table | None]:
    """Per task, what :func:`matching_key_positions` gives, for the tasks whose files the
    native reader takes: the join columns of a chunk of files are decoded in one call and
    each batch is matched against ``keys`` in Rust as it comes. None for a task left to
    :func:`matching_key_positions`."""
    out: list[pa.Table | None] = [None] * len(tasks)
    ids = _join_ids(schema, keys)
    if top_level_fields(schema, ids) is None:
        return out
    # the key columns in the schema's order, as the per-task function gives them, each with
    # its name in the key set (the join columns may be listed in any order)
    name_of = dict(zip(ids, keys.join_cols, strict=True))
    fields = [f for f in schema.fields if f.field_id in name_of]
    key_names = [name_of[f.field_id] for f in fields]
    meta = (POS, ROW_ID) if with_row_ids else (POS,)
    options = _options(schema, tuple(ids), _NO_SPECS, name_mapping, meta, 3)
    result = output_schema(options)
    # a file rewritten with row lineage stores its rows' ids; others inherit them
    stored = [metadata_field(ROW_ID)] if with_row_ids else []

    threads = workers or work_threads()
    chunks = column_chunks(
        io,
        tasks,
        fields,
        threads,
        cache,
        name_mapping,
        optional=stored,
        keys=(keys.native, key_names),
    )
    for chunk in chunks:
        for i, part in chunk.parts():
            if part.num_rows == 0:
                out[i] = result.empty_table()
                continue
            part = part.combine_chunks()
            pos = part.column(POSITION_COLUMN)
            arrays = [part.column(f.name) for f in fields] + [pos]
            if with_row_ids:
                first = tasks[i].data_file.first_row_id
                if first is None:  # a file from before the upgrade to v3: no row ids
                    arrays.append(pa.nulls(part.num_rows, pa.int64()))
                else:
                    inherited = pc.add(pos, pa.scalar(first, pa.int64()))
                    arrays.append(pc.coalesce(part.column(ROW_ID), inherited))
            out[i] = pa.Table.from_arrays(arrays, schema=result)
    return out


def first_match(source: pa.Table, matched: pa.Table, join_cols: Sequence[str]) -> pa.Array | None:
    """For each row of ``source``, the index of the first row of ``matched`` with the same key
    (null where none, and for null keys); None when the keys are not one column of one type
    in both, or Arrow has no lookup for the type."""
    if len(join_cols) != 1:
        return None
    mine, theirs = source.column(join_cols[0]), matched.column(join_cols[0])
    if mine.type != theirs.type:
        return None
    # integer, date, time and timestamp keys in Rust (a map sized once), other types by
    # Arrow's lookup
    keys = canonical_nans(mine).combine_chunks()
    value_set = canonical_nans(theirs).combine_chunks()
    at = _native.index_in(keys, value_set)
    if at is None:
        with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError):
            at = pc.index_in(keys, value_set=value_set, skip_nulls=True)
    return at


def matched_source_rows(
    source: pa.Table, matched: pa.Table, join_cols: Sequence[str], at: pa.Array | None
) -> int:
    """How many rows of ``source`` (unique keys; null equals null) have their key among the
    rows of ``matched``, however many rows of ``matched`` share a key. ``at`` is
    :func:`first_match` of the two, when it gave one."""
    if matched.num_rows == 0:
        return 0
    if at is None:
        cols = [matched.column(n) for n in join_cols]
        cols = [
            c.cast(c.type.storage_type) if isinstance(c.type, pa.BaseExtensionType) else c
            for c in cols
        ]
        cols = [canonical_nans(c) for c in cols]
        if len(cols) == 1:
            return int(pc.count_distinct(cols[0], mode="all").as_py())
        names = [f"k{i}" for i in range(len(cols))]
        return int(pa.table(cols, names=names).group_by(names).aggregate([]).num_rows)
    # ``at`` is null for the source's null keys, which match the target's null keys
    null_keys: int = source.column(join_cols[0]).null_count
    found: int = len(at) - at.null_count
    if null_keys and matched.column(join_cols[0]).null_count:
        found += null_keys
    return found


def carry_row_ids(
    source: pa.Table, matched: pa.Table, join_cols: Sequence[str], at: pa.Array | None = None
) -> pa.Array:
    """For each row of ``source`` (in order), the ``_row_id`` of the row of ``matched`` (join
    columns plus ``_row_id``) with the same key, else null. Keys with nulls never carry an id.
    ``at`` is :func:`first_match` of the two, when the caller has it."""
    if matched.num_rows == 0:
        return pa.nulls(source.num_rows, pa.int64())
    if at is None:
        at = first_match(source, matched, join_cols)
    if at is not None:
        ids = matched.column(ROW_ID).combine_chunks()  # one chunk: take is then cheap
        return ids.take(at).cast(pa.int64())
    idx = "__icefloe_source_index"
    left = _canonical_keys(_key_table(source, join_cols)).append_column(
        idx, pa.array(np.arange(source.num_rows, dtype=np.int64))
    )
    right = _canonical_keys(matched.select(list(join_cols))).append_column(
        ROW_ID, matched.column(ROW_ID)
    )
    # Drop field metadata so the join's key types compare equal.
    left = left.cast(pa.schema([f.remove_metadata() for f in left.schema]))
    right = right.cast(
        pa.schema(
            [
                pa.field(f.name, left.schema.field(f.name).type if f.name in join_cols else f.type)
                for f in right.schema
            ]
        )
    )
    joined = left.join(right, keys=list(join_cols), join_type="left outer", use_threads=False)
    # a key the table holds more than once (a table written without unique keys) joins
    # several rows: the source row carries the lowest of their ids, as one row per key must
    first = joined.group_by(idx, use_threads=False).aggregate([(ROW_ID, "min")])
    return first.sort_by(idx).column(f"{ROW_ID}_min").combine_chunks().cast(pa.int64())
