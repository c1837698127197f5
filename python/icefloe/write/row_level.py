"""Row-level operations: ``delete(filter)``, ``upsert(data, join_cols)``, ``delete_by_keys``.

Each operation plans the live data files that may hold affected rows (``Table.scan`` planning
with the filter, or with the key range for key-based operations), finds the affected rows per
file (:mod:`icefloe.write.matching`, all in Rust/Arrow) and commits one snapshot through
:func:`commit_row_delta`:

- ``write.delete.mode`` / ``write.update.mode``/``write.merge.mode`` (``copy-on-write``, the
  default, or ``merge-on-read``) choose between rewriting the affected files without the
  deleted rows (keeping ``_row_id`` and ``_last_updated_sequence_number`` on v3) and writing
  deletes: deletion vectors in one Puffin file per commit on v3 (merged with any existing DV or
  position deletes of the file) or position delete files on v2.
- A file whose partition proves that every row matches the delete filter is dropped without
  being read; a file whose every live row matches is dropped without a rewrite.
- ``write.upsert.mode=equality`` makes ``upsert`` write equality deletes for the source keys
  instead of reading the table; ``delete_by_keys`` always writes equality delete files.

:func:`commit_row_delta` is the reusable commit step (Spark's merge/delete call it with the
positions its executors found): it writes the DVs or position delete files, removes the delete
files they supersede and the data files dropped, adds new data files, and registers the
conflict checks that run when the commit is retried on a newer table state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_schema import schema_to_arrow
from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.expressions.base import AlwaysFalse, AlwaysTrue, And, BooleanExpression
from icefloe.expressions.binding import bind
from icefloe.expressions.builder import col
from icefloe.expressions.evaluator import evaluate
from icefloe.expressions.projection import project
from icefloe.io import FileIO
from icefloe.metadata import MAIN_BRANCH, Operation, Snapshot, TableMetadata
from icefloe.name_mapping import DEFAULT_NAME_MAPPING_PROPERTY, NameMapping
from icefloe.partitioning import PartitionSpec
from icefloe.read.deletes import DeleteCache, TaskDeletes
from icefloe.scan.tasks import (
    LAST_UPDATED_SEQUENCE_NUMBER,
    ROW_ID,
    DeleteContent,
    DeleteFileRef,
    FileScanTask,
    metadata_field,
)
from icefloe.schema import Schema
from icefloe.table.producer import SnapshotProducer
from icefloe.write.delete_files import (
    FileDeletes,
    new_delete_location,
    partition_dict,
    write_deletion_vectors,
    write_equality_deletes,
    write_position_deletes,
)
from icefloe.write.files import DataFile
from icefloe.write.input import to_table_schema
from icefloe.write.matching import (
    KeySet,
    all_rows_match,
    bind_filter,
    carry_row_ids,
    check_unique_keys,
    matching_key_positions,
    matching_positions,
    partition_key,
    partition_row,
    surviving_rows,
)
from icefloe.write.writer import WriteOptions, write_parquet_files

if TYPE_CHECKING:
    from icefloe.table.table import Transaction

__all__ = [
    "COPY_ON_WRITE",
    "MERGE_ON_READ",
    "RowDelta",
    "UpsertResult",
    "commit_row_delta",
    "delete",
    "delete_by_keys",
    "lineage_schema",
    "plan_tasks",
    "upsert",
    "write_rows",
]

DELETE_MODE = "write.delete.mode"
UPDATE_MODE = "write.update.mode"
MERGE_MODE = "write.merge.mode"
UPSERT_MODE = "write.upsert.mode"
DELETE_ISOLATION = "write.delete.isolation-level"
COPY_ON_WRITE = "copy-on-write"
MERGE_ON_READ = "merge-on-read"
EQUALITY = "equality"
SERIALIZABLE = "serializable"
SNAPSHOT = "snapshot"


# ---------------------------------------------------------------------------------------------
# planning and reading context


@dataclass
class _Context:
    tx: Transaction
    branch: str
    case_sensitive: bool = True
    cache: DeleteCache = field(default_factory=DeleteCache)

    @property
    def metadata(self) -> TableMetadata:
        return self.tx.metadata

    @property
    def io(self) -> FileIO:
        return self.tx.table.io

    @property
    def schema(self) -> Schema:
        return self.metadata.current_schema()

    @property
    def specs(self) -> dict[int, PartitionSpec]:
        return {s.spec_id: s for s in self.metadata.partition_specs}

    @property
    def mapping(self) -> NameMapping | None:
        import json

        text = self.metadata.properties.get(DEFAULT_NAME_MAPPING_PROPERTY)
        return NameMapping.from_json(json.loads(text)) if text else None

    @property
    def version(self) -> int:
        return self.metadata.format_version


def plan_tasks(
    tx: Transaction,
    row_filter: BooleanExpression | str = AlwaysTrue(),  # noqa: B008 (a singleton)
    *,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
) -> list[FileScanTask]:
    """The live data files of ``branch`` (as of the transaction's metadata) that may hold rows
    matching ``row_filter``, one task per file with the deletes that apply to it."""
    from icefloe.scan.scan import TableScan

    view = SimpleNamespace(metadata=tx.metadata, io=tx.table.io)
    ref = branch if branch in tx.metadata.refs else None
    scan = TableScan(view, row_filter, case_sensitive=case_sensitive, ref=ref)
    seen: set[str] = set()
    out: list[FileScanTask] = []
    for task in scan.plan_files():
        if task.data_file.file_path not in seen:
            seen.add(task.data_file.file_path)
            out.append(task)
    return out


def lineage_schema(schema: Schema) -> Schema:
    """``schema`` plus the ``_row_id`` and ``_last_updated_sequence_number`` columns that
    rewritten v3 files carry (spec "Row Lineage")."""
    return Schema(
        *schema.fields,
        metadata_field(ROW_ID),
        metadata_field(LAST_UPDATED_SEQUENCE_NUMBER),
        schema_id=schema.schema_id,
    )


def write_rows(
    tx: Transaction,
    rows: pa.Table,
    *,
    lineage: bool,
    spec: PartitionSpec | None = None,
    target_file_size: int | None = None,
) -> list[DataFile]:
    """Writes rows already typed as the table schema (plus, with ``lineage``, ``_row_id`` and
    ``_last_updated_sequence_number``) as data files of ``spec`` (default: the table's)."""
    md = tx.metadata
    schema = md.current_schema()
    write_schema = lineage_schema(schema) if lineage else schema
    target = schema_to_arrow(write_schema)
    if not rows.schema.equals(target, check_metadata=True):
        rows = pa.Table.from_arrays([rows.column(f.name) for f in target], schema=target)
    options = WriteOptions(target_file_size=target_file_size)
    return write_parquet_files(
        md, tx.table.io, rows, schema=write_schema, spec=spec or md.spec(), options=options
    )


def _mode(props: Mapping[str, str], key: str, version: int) -> str:
    mode = props.get(key, COPY_ON_WRITE).strip().lower()
    if mode not in (COPY_ON_WRITE, MERGE_ON_READ):
        raise ValidationError(
            f"table property {key}={mode!r}: use {COPY_ON_WRITE} or {MERGE_ON_READ}"
        )
    return COPY_ON_WRITE if version < 2 else mode


# ---------------------------------------------------------------------------------------------
# the commit step


@dataclass
class RowDelta:
    """The changes of one row-level commit.

    ``deletes``: positions to delete per data file (become DVs on v3, position delete files on
    v2). ``removed``: tasks whose data file is removed whole (with the DVs and file-scoped
    position deletes of it). ``added_data``: new data files. ``added_deletes``: delete files
    written already (equality deletes). ``targets``: the tasks whose files this change read;
    concurrent deletes of them or new deletes for them conflict.
    """

    deletes: list[FileDeletes] = field(default_factory=list)
    removed: list[FileScanTask] = field(default_factory=list)
    added_data: list[DataFile] = field(default_factory=list)
    added_deletes: list[DataFile] = field(default_factory=list)
    targets: list[FileScanTask] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.deletes or self.removed or self.added_data or self.added_deletes)


def _key(path: str, offset: int | None) -> str:
    return f"{path}\x00{'' if offset is None else offset}"


def _file_scoped(path: str, deletes: Iterable[DeleteFileRef]) -> list[DeleteFileRef]:
    return [
        d
        for d in deletes
        if d.content is DeleteContent.POSITION_DELETES and d.referenced_data_file == path
    ]


def _write_deletes(
    ctx: _Context, items: Sequence[FileDeletes]
) -> tuple[list[DataFile], list[DeleteFileRef]]:
    md = ctx.metadata
    if not items:
        return [], []
    if ctx.version < 2:
        raise ValidationError(
            f"row-level deletes need format version 2 or later (table is v{ctx.version}); "
            f"use {DELETE_MODE}={COPY_ON_WRITE}"
        )
    if ctx.version >= 3:
        loc = new_delete_location(md.location, md.properties, "puffin")
        return write_deletion_vectors(ctx.io, loc, items, ctx.specs, ctx.cache)
    # v2: one position delete file per partition; merged positions make older deletes of
    # the same files redundant only when they are scoped to that file.
    groups: dict[tuple[int, str], list[FileDeletes]] = {}
    for item in items:
        k = (item.data_file.spec_id, repr(item.data_file.partition))
        groups.setdefault(k, []).append(item)
    out: list[DataFile] = []
    for group in groups.values():
        df = group[0].data_file
        loc = new_delete_location(md.location, md.properties, "parquet")
        positions: dict[str, Any] = {}
        for item in group:
            prev = positions.get(item.data_file.file_path)
            positions[item.data_file.file_path] = (
                item.positions if prev is None else pa.concat_arrays([prev, _arr(item.positions)])
            )
        out.append(
            write_position_deletes(
                ctx.io,
                loc,
                {p: _arr(v) for p, v in positions.items()},
                df.spec_id,
                partition_dict(ctx.specs.get(df.spec_id), df.partition),
                md.properties,
            )
        )
    return out, []


def _arr(positions: Any) -> pa.Array:
    from icefloe.deletes import DeletionVector

    if isinstance(positions, DeletionVector):
        return positions.positions()
    if isinstance(positions, pa.ChunkedArray):
        return positions.combine_chunks().cast(pa.int64())
    if isinstance(positions, pa.Array):
        return positions.cast(pa.int64())
    return pa.array(positions, pa.int64())


def commit_row_delta(
    tx: Transaction,
    delta: RowDelta,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    operation: str | None = None,
    conflict_filter: BooleanExpression | None = None,
    isolation: str | None = None,
) -> SnapshotProducer | None:
    """Writes the delete files of ``delta`` and adds one snapshot for it to ``tx``.

    On a retry against a newer table state the commit fails with ``CommitConflictError`` if a
    concurrent commit removed a file this change read or removes, added deletes for those
    files, or (``isolation='serializable'``, the default, with a ``conflict_filter``) added
    data files in partitions the filter may match. Returns the producer (None if nothing to do).
    """
    ctx = _Context(tx, branch)
    if delta.empty:
        return None
    written: list[str] = []
    try:
        dvs, superseded = _write_deletes(ctx, delta.deletes)
        written.extend({f.file_path for f in dvs})
        removed_deletes: dict[str, DeleteFileRef] = {
            _key(d.file_path, d.content_offset): d for d in superseded
        }
        for task in delta.removed:
            for d in _file_scoped(task.data_file.file_path, task.delete_files):
                removed_deletes[_key(d.file_path, d.content_offset)] = d
        producer = SnapshotProducer(tx, branch=branch, snapshot_properties=snapshot_properties)
        producer.owns_files(written)
        producer.owns_files(f.file_path for f in delta.added_data + delta.added_deletes)
        producer.add_data_files(delta.added_data)
        producer.add_delete_files(dvs + delta.added_deletes)
        producer.remove_files(t.data_file.file_path for t in delta.removed)
        if removed_deletes:
            producer.remove_files_where(_entry_key_predicate(set(removed_deletes)))
        if operation is not None:
            producer.set_operation(operation)
        level = (isolation or tx.metadata.properties.get(DELETE_ISOLATION, SERIALIZABLE)).lower()
        producer.validate(
            _Validator(
                ctx.io,
                branch,
                delta.targets + delta.removed + _task_refs(delta.deletes),
                set(removed_deletes),
                conflict_filter if level == SERIALIZABLE else None,
                ctx.schema,
            )
        )
    except BaseException:
        for p in written:
            ctx.io.delete_quietly(p)
        for f in delta.added_data + delta.added_deletes:
            ctx.io.delete_quietly(f.file_path)
        raise
    try:
        producer.commit()
    except BaseException:
        producer.abort()
        raise
    return producer


def _task_refs(items: Sequence[FileDeletes]) -> list[FileScanTask]:
    return [FileScanTask(i.data_file, tuple(i.existing)) for i in items]


def _entry_key_predicate(keys: set[str]) -> Any:
    wanted = pa.array(sorted(keys), pa.string())

    def predicate(batch: pa.RecordBatch) -> pa.Array:
        path = batch.column("file_path").cast(pa.string())
        if "content_offset" in batch.schema.names:
            off = pc.cast(batch.column("content_offset"), pa.string())
        else:
            off = pa.nulls(batch.num_rows, pa.string())
        key = pc.binary_join_element_wise(path, pc.fill_null(off, ""), "\x00")
        hit = pc.is_in(key, value_set=wanted)
        return pc.and_(hit, pc.not_equal(batch.column("content"), 0))

    return predicate


class _Validator:
    """The retry checks of a row-level commit (see :func:`commit_row_delta`)."""

    def __init__(
        self,
        io: FileIO,
        branch: str,
        targets: list[FileScanTask],
        removed_deletes: set[str],
        conflict_filter: BooleanExpression | None,
        schema: Schema,
    ) -> None:
        self.io = io
        self.branch = branch
        self.paths = {t.data_file.file_path for t in targets}
        self.partitions = {
            (t.data_file.spec_id, partition_key(t.data_file.partition)) for t in targets
        }
        self.removed_deletes = removed_deletes
        self.conflict_filter = conflict_filter
        self.schema = schema

    def __call__(
        self, metadata: TableMetadata, parent: Snapshot | None, start_parent: int | None
    ) -> None:
        if parent is None or parent.snapshot_id == start_parent:
            return
        entries = _entries_since(self.io, metadata, parent, start_parent)
        for row, spec_id in entries:
            path = row["file_path"]
            status, content = row["status"], row["content"]
            if status == 2 and content == 0 and path in self.paths:
                raise CommitConflictError(
                    f"data file {path} was removed by a concurrent commit this change did not see"
                )
            removed_key = _key(path, row.get("content_offset"))
            if status == 2 and content != 0 and removed_key in self.removed_deletes:
                raise CommitConflictError(f"delete file {path} was removed by a concurrent commit")
            if status != 1:
                continue
            part = partition_key(_partition_tuple(row))
            if content == 1:
                ref = row.get("referenced_data_file")
                if ref in self.paths or (ref is None and (spec_id, part) in self.partitions):
                    raise CommitConflictError(
                        f"a concurrent commit added deletes ({path}) for a data file this "
                        "change read"
                    )
            elif content == 2 and (spec_id, part) in self.partitions:
                raise CommitConflictError(
                    f"a concurrent commit added equality deletes ({path}) for a partition "
                    "this change read"
                )
            elif (
                content == 0
                and self.conflict_filter is not None
                and _may_match(self.conflict_filter, self.schema, metadata, spec_id, row)
            ):
                raise CommitConflictError(
                    f"a concurrent commit added data file {path} that may hold rows this "
                    "change's filter matches (serializable isolation)"
                )


def _partition_tuple(row: Mapping[str, Any]) -> tuple[Any, ...]:
    part = row.get("partition") or {}
    return tuple(part.values()) if isinstance(part, dict) else tuple(part)


def _may_match(
    bound: BooleanExpression,
    schema: Schema,
    metadata: TableMetadata,
    spec_id: int,
    row: Mapping[str, Any],
) -> bool:
    spec = metadata.spec_by_id(spec_id)
    if bound is AlwaysFalse():
        return False
    if spec is None or not spec.fields:
        return True
    try:
        ptype = spec.partition_type(schema)
        proj = bind(ptype, project(bound, spec, strict=False), True)
        if proj is AlwaysTrue():
            return True
        if proj is AlwaysFalse():
            return False
        return evaluate(proj, partition_row(ptype, _partition_tuple(row)))
    except (ValidationError, TypeError, ValueError):
        return True  # cannot tell: assume it may match


def _entries_since(
    io: FileIO, metadata: TableMetadata, parent: Snapshot, start: int | None
) -> list[tuple[dict[str, Any], int]]:
    """Entries added or deleted by the snapshots after ``start`` up to ``parent``."""
    from icefloe.manifest import manifest_files, read_manifest_list, read_manifests

    ids: list[Snapshot] = []
    snap: Snapshot | None = parent
    while snap is not None and snap.snapshot_id != start:
        ids.append(snap)
        snap = (
            metadata.snapshot_by_id(snap.parent_snapshot_id)
            if snap.parent_snapshot_id is not None
            else None
        )
    if start is not None and snap is None:
        raise CommitConflictError(
            f"cannot validate against concurrent commits: snapshot {start} is no longer an "
            "ancestor of the branch head"
        )
    out: list[tuple[dict[str, Any], int]] = []
    for s in ids:
        if s.manifest_list is None:
            continue
        lst = read_manifest_list(io.new_input(s.manifest_list).read(), name=s.manifest_list)
        mfs = [m for m in manifest_files(lst) if m.added_snapshot_id == s.snapshot_id]
        if not mfs:
            continue
        batches = read_manifests([io.new_input(m.manifest_path).read() for m in mfs], mfs)
        for m, b in zip(mfs, batches, strict=True):
            mine = pc.and_(
                pc.equal(b.column("snapshot_id"), s.snapshot_id),
                pc.not_equal(b.column("status"), 0),
            )
            sub = b.filter(mine)
            if sub.num_rows:
                out.extend((r, m.partition_spec_id) for r in sub.to_pylist())
    return out


# ---------------------------------------------------------------------------------------------
# delete


def _live_count(ctx: _Context, task: FileScanTask) -> int | None:
    """Rows of the task's file not deleted by position deletes; None with equality deletes."""
    if any(d.content is DeleteContent.EQUALITY_DELETES for d in task.delete_files):
        return None
    deletes = TaskDeletes.load(
        ctx.io, task.data_file.file_path, task.delete_files, ctx.cache, ctx.mapping
    )
    gone = deletes.positions.cardinality if deletes.positions is not None else 0
    return task.data_file.record_count - gone


def _rewrite(
    ctx: _Context, task: FileScanTask, batches: Iterable[pa.RecordBatch]
) -> list[DataFile]:
    lineage = ctx.version >= 3
    parts = list(batches)
    if not parts:
        return []
    rows = pa.Table.from_batches(parts)
    return write_rows(ctx.tx, rows, lineage=lineage)


def delete(
    tx: Transaction,
    row_filter: BooleanExpression | str,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    case_sensitive: bool = True,
) -> int:
    """Deletes the rows matching ``row_filter`` in one snapshot (``write.delete.mode``).

    Returns the number of rows deleted (0: nothing committed)."""
    ctx = _Context(tx, branch, case_sensitive)
    bound = bind_filter(ctx.schema, row_filter, case_sensitive)
    if bound is AlwaysFalse():
        return 0
    mode = _mode(ctx.metadata.properties, DELETE_MODE, ctx.version)
    delta = RowDelta()
    deleted = 0
    try:
        for task in plan_tasks(tx, bound, branch=branch, case_sensitive=case_sensitive):
            if all_rows_match(task, ctx.schema, bound, ctx.specs):
                live = _live_count(ctx, task)
                if live is None:
                    live = _count_live(ctx, task)
                deleted += live
                delta.removed.append(task)
                continue
            pos = matching_positions(
                ctx.io,
                task,
                ctx.schema,
                bound,
                specs=ctx.specs,
                name_mapping=ctx.mapping,
                cache=ctx.cache,
            )
            if len(pos) == 0:
                continue
            deleted += len(pos)
            if mode == MERGE_ON_READ:
                delta.deletes.append(FileDeletes(task.data_file, pos, task.delete_files))
                continue
            if _live_count(ctx, task) == len(pos):
                delta.removed.append(task)
                continue
            delta.removed.append(task)
            delta.added_data.extend(
                _rewrite(
                    ctx,
                    task,
                    surviving_rows(
                        ctx.io,
                        task,
                        ctx.schema,
                        bound,
                        specs=ctx.specs,
                        name_mapping=ctx.mapping,
                        cache=ctx.cache,
                        lineage=ctx.version >= 3,
                    ),
                )
            )
        if delta.empty:
            return 0
        commit_row_delta(
            tx,
            delta,
            branch=branch,
            snapshot_properties=snapshot_properties,
            operation=Operation.OVERWRITE if delta.added_data else Operation.DELETE,
            conflict_filter=bound,
        )
    except BaseException:
        for f in delta.added_data:
            ctx.io.delete_quietly(f.file_path)
        raise
    return deleted


def _count_live(ctx: _Context, task: FileScanTask) -> int:
    return len(
        matching_positions(
            ctx.io,
            task,
            ctx.schema,
            AlwaysTrue(),
            specs=ctx.specs,
            name_mapping=ctx.mapping,
            cache=ctx.cache,
        )
    )


# ---------------------------------------------------------------------------------------------
# keys: upsert and delete_by_keys


@dataclass(frozen=True)
class UpsertResult:
    """What an upsert changed."""

    rows_updated: int
    rows_inserted: int


def _key_filter(keys: pa.Table, join_cols: Sequence[str]) -> BooleanExpression:
    """A filter selecting at least every row whose key is in ``keys``: the range of each
    join column (``is_null`` joins in when keys have nulls). Used to prune planning."""
    expr: BooleanExpression = AlwaysTrue()
    for name in join_cols:
        c = keys.column(name)
        if pa.types.is_floating(c.type) or not (
            pa.types.is_integer(c.type)
            or pa.types.is_string(c.type)
            or pa.types.is_large_string(c.type)
            or pa.types.is_date(c.type)
        ):
            continue
        if c.null_count == len(c):
            part: BooleanExpression = col(name).is_null()
        else:
            mm = pc.min_max(c)
            part = (col(name) >= mm["min"].as_py()) & (col(name) <= mm["max"].as_py())
            if c.null_count:
                part = part | col(name).is_null()
        expr = part if expr is AlwaysTrue() else And(expr, part)
    return expr


def _source(ctx: _Context, data: Any, join_cols: Sequence[str]) -> pa.Table:
    source = to_table_schema(data, ctx.schema, ctx.version)
    for name in join_cols:
        if ctx.schema.find_field_id(name, ctx.case_sensitive) is None:
            raise ValidationError(f"join column {name!r} is not in the table schema")
    check_unique_keys(source, join_cols)
    return source


def _upsert_mode(props: Mapping[str, str], version: int) -> str:
    raw = props.get(UPSERT_MODE)
    if raw is not None:
        mode = raw.strip().lower()
        if mode == EQUALITY:
            if version < 2:
                raise ValidationError(f"{UPSERT_MODE}=equality needs format version 2 or later")
            return EQUALITY
        if mode in (COPY_ON_WRITE, MERGE_ON_READ):
            return COPY_ON_WRITE if version < 2 else mode
        raise ValidationError(
            f"table property {UPSERT_MODE}={raw!r}: use {EQUALITY}, {COPY_ON_WRITE} or "
            f"{MERGE_ON_READ}"
        )
    return _mode(props, MERGE_MODE if MERGE_MODE in props else UPDATE_MODE, version)


def upsert(
    tx: Transaction,
    data: Any,
    join_cols: Sequence[str],
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> UpsertResult:
    """Inserts the rows of ``data`` whose key (``join_cols``) is new and replaces the rows
    whose key exists, in one snapshot. Keys must be unique in ``data``; null equals null.

    Updated rows keep their ``_row_id`` on v3 (merge-on-read and copy-on-write)."""
    ctx = _Context(tx, branch)
    join_cols = list(join_cols)
    source = _source(ctx, data, join_cols)
    if source.num_rows == 0:
        return UpsertResult(0, 0)
    mode = _upsert_mode(ctx.metadata.properties, ctx.version)
    if mode == EQUALITY:
        return _upsert_equality(ctx, source, join_cols, snapshot_properties)
    lineage = ctx.version >= 3
    keys = KeySet(source, join_cols)
    key_filter = _key_filter(source, join_cols)
    delta = RowDelta()
    matched_parts: list[pa.Table] = []
    try:
        for task in plan_tasks(tx, key_filter, branch=branch):
            hit = matching_key_positions(
                ctx.io,
                task,
                ctx.schema,
                keys,
                specs=ctx.specs,
                name_mapping=ctx.mapping,
                cache=ctx.cache,
                with_row_ids=lineage,
            )
            if hit.num_rows == 0:
                continue
            matched_parts.append(hit)
            if mode == MERGE_ON_READ:
                delta.deletes.append(
                    FileDeletes(task.data_file, hit.column("_pos"), task.delete_files)
                )
                continue
            delta.removed.append(task)
            if _live_count(ctx, task) != hit.num_rows:
                kept = _rows_without_keys(ctx, task, keys, lineage)
                delta.added_data.extend(_rewrite(ctx, task, kept))
        matched = pa.concat_tables(matched_parts) if matched_parts else None
        updated = matched.num_rows if matched is not None else 0
        rows = source
        if lineage:
            ids = (
                carry_row_ids(source, matched, join_cols)
                if matched is not None
                else pa.nulls(source.num_rows, pa.int64())
            )
            rows = rows.append_column(ROW_ID, ids).append_column(
                LAST_UPDATED_SEQUENCE_NUMBER, pa.nulls(source.num_rows, pa.int64())
            )
        delta.added_data.extend(write_rows(tx, rows, lineage=lineage))
        commit_row_delta(
            tx,
            delta,
            branch=branch,
            snapshot_properties=snapshot_properties,
            operation=Operation.OVERWRITE if (delta.deletes or delta.removed) else Operation.APPEND,
            conflict_filter=bind_filter(ctx.schema, key_filter),
        )
    except BaseException:
        for f in delta.added_data:
            ctx.io.delete_quietly(f.file_path)
        raise
    return UpsertResult(updated, source.num_rows - updated)


def _rows_without_keys(
    ctx: _Context, task: FileScanTask, keys: KeySet, lineage: bool
) -> Iterable[pa.RecordBatch]:
    for batch in surviving_rows(
        ctx.io,
        task,
        ctx.schema,
        AlwaysFalse(),
        specs=ctx.specs,
        name_mapping=ctx.mapping,
        cache=ctx.cache,
        lineage=lineage,
    ):
        keep = pc.invert(keys.match_mask(batch))
        out = batch.filter(keep)
        if out.num_rows:
            yield out


def _equality_files(ctx: _Context, keys: pa.Table, join_cols: Sequence[str]) -> list[DataFile]:
    """One equality delete file per partition of the live data files that may hold the keys
    (equality deletes apply within their partition only)."""
    md = ctx.metadata
    ids = []
    for name in join_cols:
        fid = ctx.schema.find_field_id(name, ctx.case_sensitive)
        if fid is None:
            raise ValidationError(f"join column {name!r} is not in the table schema")
        ids.append(fid)
    partitions: dict[tuple[int, str], FileScanTask] = {}
    for task in plan_tasks(ctx.tx, _key_filter(keys, join_cols), branch=ctx.branch):
        partitions.setdefault((task.data_file.spec_id, repr(task.data_file.partition)), task)
    out: list[DataFile] = []
    try:
        for (spec_id, _), task in sorted(partitions.items(), key=lambda kv: kv[0]):
            loc = new_delete_location(md.location, md.properties, "parquet", prefix="eq-")
            out.append(
                write_equality_deletes(
                    ctx.io,
                    loc,
                    keys,
                    ctx.schema,
                    ids,
                    spec_id,
                    partition_dict(ctx.specs.get(spec_id), task.data_file.partition),
                    md.properties,
                )
            )
    except BaseException:
        for f in out:
            ctx.io.delete_quietly(f.file_path)
        raise
    return out


def _upsert_equality(
    ctx: _Context,
    source: pa.Table,
    join_cols: Sequence[str],
    snapshot_properties: Mapping[str, str] | None,
) -> UpsertResult:
    delta = RowDelta()
    try:
        delta.added_deletes = _equality_files(ctx, source.select(list(join_cols)), join_cols)
        delta.added_data = write_rows(ctx.tx, source, lineage=False)
        commit_row_delta(
            ctx.tx,
            delta,
            branch=ctx.branch,
            snapshot_properties=snapshot_properties,
            operation=Operation.OVERWRITE if delta.added_deletes else Operation.APPEND,
            isolation=SNAPSHOT,
        )
    except BaseException:
        for f in delta.added_data + delta.added_deletes:
            ctx.io.delete_quietly(f.file_path)
        raise
    # Without reading the table, updated and inserted rows cannot be told apart.
    return UpsertResult(0, source.num_rows)


def delete_by_keys(
    tx: Transaction,
    keys: Any,
    join_cols: Sequence[str],
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> int:
    """Deletes the rows whose ``join_cols`` equal a row of ``keys`` by writing equality delete
    files (no data is read). Returns the number of delete files written."""
    ctx = _Context(tx, branch)
    if ctx.version < 2:
        raise ValidationError("equality deletes need format version 2 or later")
    table = (
        keys if isinstance(keys, pa.Table) else pa.table(keys) if isinstance(keys, dict) else None
    )
    if table is None:
        from icefloe.write.input import to_arrow_table

        table = to_arrow_table(keys)
    join_cols = list(join_cols)
    missing = [c for c in join_cols if c not in table.column_names]
    if missing:
        raise ValidationError(f"keys lack join columns {missing}")
    table = table.select(join_cols)
    if table.num_rows == 0:
        return 0
    delta = RowDelta()
    delta.added_deletes = _equality_files(ctx, table, join_cols)
    if not delta.added_deletes:
        return 0
    commit_row_delta(
        tx,
        delta,
        branch=branch,
        snapshot_properties=snapshot_properties,
        operation=Operation.DELETE,
        isolation=SNAPSHOT,
    )
    return len(delta.added_deletes)
