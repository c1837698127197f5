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
- A file whose partition or column metrics prove that every row matches the delete filter is
  dropped without being read; a file whose every live row matches is dropped without a rewrite.
- ``write.upsert.mode=equality`` makes ``upsert`` write equality deletes for the source keys
  instead of reading the table; ``delete_by_keys`` always writes equality delete files.

:func:`icefloe.table.row_delta.commit_row_delta` is the reusable commit step (Spark's merge and
delete call it with the positions their executors found).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from icefloe._concurrency import parallel_map, work_executor, work_threads
from icefloe.exceptions import ValidationError
from icefloe.expressions.base import AlwaysFalse, AlwaysTrue, BooleanExpression
from icefloe.metadata import MAIN_BRANCH, Operation, TableMetadata
from icefloe.properties import enum_property
from icefloe.read.deletes import DeleteCache, TaskDeletes
from icefloe.scan.columnar import gc_paused
from icefloe.scan.tasks import (
    LAST_UPDATED_SEQUENCE_NUMBER,
    ROW_ID,
    DeleteContent,
    FileScanTask,
)
from icefloe.table.key_columns import (
    check_equality_key_types,
    check_key_types,
    join_columns,
    keys_filter,
)
from icefloe.table.key_routing import KeyRouter
from icefloe.types import (
    UnknownType,
)
from icefloe.write.delete_files import (
    FileDeletes,
    new_delete_location,
    partition_dict,
    write_equality_deletes,
)
from icefloe.write.files import DataFile
from icefloe.write.input import (
    check_valid_columns,
    missing_nested_fields,
    to_schema_arrow_table,
    to_table_schema,
)
from icefloe.write.matching import (
    KeySet,
    all_rows_match,
    bind_filter,
    carry_row_ids,
    check_unique_keys,
    first_match,
    key_match_mask,
    matched_source_rows,
    matching_key_positions,
    matching_positions,
    native_matching_key_positions,
    native_matching_positions,
    surviving_rows,
)
from icefloe.write.writer import write_data_files

if TYPE_CHECKING:
    from concurrent.futures import Future

    from icefloe.io import FileIO
    from icefloe.table.table import Transaction

from icefloe.table.row_delta import (
    COPY_ON_WRITE,
    DELETE_MODE,
    EQUALITY,
    MERGE_MODE,
    MERGE_ON_READ,
    SERIALIZABLE,
    UPDATE_MODE,
    UPSERT_MODE,
    RowContext,
    RowDelta,
    commit_row_delta,
    plan_candidates,
    plan_tasks,
    read_check,
    write_mode,
    write_rows,
)

__all__ = [
    "UpsertResult",
    "delete",
    "delete_by_keys",
    "replace_rows",
    "upsert",
]


# ---------------------------------------------------------------------------------------------
# delete


_T = TypeVar("_T")


def _per_task(
    fn: Callable[[FileScanTask, DeleteCache], _T], tasks: list[FileScanTask], cache: DeleteCache
) -> list[_T]:
    """``fn`` over every task, in order; on several threads (each with its own delete cache)
    when there are enough tasks. The reading and matching release the GIL. The cyclic
    collector is paused meanwhile: the per-file work makes many short-lived objects, none in a
    cycle, and in a process holding a large heap the collections they trigger would walk all
    of it (and the threads would wait on each other for them)."""
    with gc_paused():
        return _run_tasks(fn, tasks, cache)


def _run_tasks(
    fn: Callable[[FileScanTask, DeleteCache], _T], tasks: list[FileScanTask], cache: DeleteCache
) -> list[_T]:
    if len(tasks) < 4 or work_threads() < 2:
        return [fn(t, cache) for t in tasks]
    local = threading.local()

    def run(task: FileScanTask) -> _T:
        mine = getattr(local, "cache", None)
        if mine is None:
            mine = local.cache = DeleteCache()
        return fn(task, mine)

    return parallel_map(run, tasks, threads=work_threads(), kind="work")


def _fill_in(
    found: list[_T | None],
    tasks: list[FileScanTask],
    fn: Callable[[FileScanTask, DeleteCache], _T],
    cache: DeleteCache,
) -> None:
    """Runs ``fn`` (see :func:`_per_task`) for the tasks the native path left (None in
    ``found``) and puts its results in their places."""
    rest = [i for i, f in enumerate(found) if f is None]
    if rest:
        for i, r in zip(rest, _per_task(fn, [tasks[i] for i in rest], cache), strict=True):
            found[i] = r


def _live_count(ctx: RowContext, task: FileScanTask) -> int | None:
    """Rows of the task's file not deleted by position deletes; None with equality deletes."""
    if any(d.content is DeleteContent.EQUALITY_DELETES for d in task.delete_files):
        return None
    deletes = TaskDeletes.load(
        ctx.io, task.data_file.file_path, task.delete_files, ctx.cache, ctx.mapping
    )
    rows = task.data_file.record_count
    positions = deletes.positions
    if positions is None:
        return rows
    last = positions.last
    if last is not None and last >= rows:
        # positions past the file's end (another writer's) delete nothing: count in range only
        return pc.sum(positions.keep_mask(0, rows)).as_py() or 0
    return rows - positions.cardinality


def _rewrite(
    ctx: RowContext, task: FileScanTask, batches: Iterable[pa.RecordBatch]
) -> list[DataFile]:
    lineage = ctx.version >= 3
    parts = list(batches)
    if not parts:
        return []
    rows = pa.Table.from_batches(parts)
    return write_rows(ctx.tx, rows, lineage=lineage)


def _delete_delta(
    ctx: RowContext,
    bound: BooleanExpression,
    mode: str,
    delta: RowDelta,
    drop_emptied: bool = False,
) -> int:
    """Adds the deletion of the rows matching ``bound`` to ``delta`` (``mode``: merge-on-read
    positions, or copy-on-write rewrites); returns the number of rows deleted. With
    ``drop_emptied`` a merge-on-read file losing every live row is removed, not given a DV."""
    deleted = 0
    tasks, proven = plan_candidates(
        ctx.tx, bound, branch=ctx.branch, case_sensitive=ctx.case_sensitive, prove=True
    )

    def probe(task: FileScanTask, cache: DeleteCache) -> pa.Array:
        return matching_positions(
            ctx.io,
            task,
            ctx.schema,
            bound,
            specs=ctx.specs,
            name_mapping=ctx.mapping,
            schemas=ctx.metadata.schemas,
            cache=cache,
        )

    # None: the partition or the column metrics prove every row matches; else the positions
    whole = [
        t.data_file.file_path in proven or all_rows_match(t, ctx.schema, bound, ctx.specs)
        for t in tasks
    ]
    read = [t for t, w in zip(tasks, whole, strict=True) if not w]
    found = native_matching_positions(
        ctx.io, read, ctx.schema, bound, cache=ctx.cache, name_mapping=ctx.mapping
    )
    _fill_in(found, read, probe, ctx.cache)
    it = iter(found)
    matched = [None if w else next(it) for w in whole]
    for task, pos in zip(tasks, matched, strict=True):
        if pos is None:
            live = _live_count(ctx, task)
            if live is None:
                live = _count_live(ctx, task)
            deleted += live
            delta.removed.append(task)
            continue
        if len(pos) == 0:
            continue
        deleted += len(pos)
        if mode == MERGE_ON_READ and not (drop_emptied and _live_count(ctx, task) == len(pos)):
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
                    schemas=ctx.metadata.schemas,
                    cache=ctx.cache,
                    lineage=ctx.version >= 3,
                ),
            )
        )
    return deleted


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
    ctx = RowContext(tx, branch, case_sensitive)
    bound = bind_filter(ctx.schema, row_filter, case_sensitive)
    if bound is AlwaysFalse():
        return 0
    mode = write_mode(ctx.metadata.properties, DELETE_MODE, ctx.version)
    delta = RowDelta()
    try:
        deleted = _delete_delta(ctx, bound, mode, delta)
        if delta.empty:
            # nothing to commit, but the transaction's other changes are ordered after
            # whatever others commit meanwhile: a row they add that the filter matches fails
            # the commit, as the delete's own snapshot would have
            tx.add_read_check(branch, read_check(ctx, delta, branch, bound))
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


def replace_rows(
    tx: Transaction,
    data: Any,
    row_filter: BooleanExpression | str,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    case_sensitive: bool = True,
    written: Sequence[DataFile] = (),
) -> int:
    """``overwrite(data, row_filter)`` on a merge-on-read table: the matching rows are deleted
    as :func:`delete` does in merge-on-read mode (files the partition proves matching are
    dropped unread, others get deletion vectors / position deletes, nothing is rewritten) and
    ``data`` (plus the already ``written`` files) is added, in one ``overwrite`` snapshot.

    Returns the number of rows deleted."""
    ctx = RowContext(tx, branch, case_sensitive)
    bound = bind_filter(ctx.schema, row_filter, case_sensitive)
    delta = RowDelta()
    delta.added_data.extend(written)
    # The new rows are encoded while the matching rows are found: neither reads the other.
    writing = (
        None if data is None else _Overlapped(lambda: write_data_files(tx.metadata, ctx.io, data))
    )
    try:
        try:
            deleted = (
                0
                if bound is AlwaysFalse()
                else _delete_delta(ctx, bound, MERGE_ON_READ, delta, drop_emptied=True)
            )
        except BaseException:
            if writing is not None:
                writing.abandon(ctx.io)
            raise
        if writing is not None:
            delta.added_data.extend(writing.result())
        commit_row_delta(
            tx,
            delta,
            branch=branch,
            snapshot_properties=snapshot_properties,
            operation=Operation.OVERWRITE,
            conflict_filter=bound,
            isolation=SERIALIZABLE,  # new data matching the filter always conflicts
            allow_empty=True,  # an overwrite that changes nothing commits, as copy-on-write does
        )
    except BaseException:
        for f in delta.added_data:
            ctx.io.delete_quietly(f.file_path)
        raise
    return deleted


class _Overlapped:
    """Files written on a worker while the calling thread finds the rows they replace."""

    def __init__(self, write: Callable[[], list[DataFile]]) -> None:
        self._write = write
        self._future = work_executor().submit(write)

    def result(self) -> list[DataFile]:
        """The written files; a write no worker started (every one busy, perhaps with this
        call's caller) runs here."""
        return self._write() if self._future.cancel() else self._future.result()

    def abandon(self, io: FileIO) -> None:
        """After a failure elsewhere: the files the write leaves are removed when it ends (a
        write that failed removed its own). Nothing waits for it here, so a second Ctrl-C
        cannot stop the removal."""

        def remove(done: Future[list[DataFile]]) -> None:
            if done.cancelled() or done.exception() is not None:
                return
            for f in done.result():
                io.delete_quietly(f.file_path)

        if not self._future.cancel():
            self._future.add_done_callback(remove)


def _count_live(ctx: RowContext, task: FileScanTask) -> int:
    return len(
        matching_positions(
            ctx.io,
            task,
            ctx.schema,
            AlwaysTrue(),
            specs=ctx.specs,
            name_mapping=ctx.mapping,
            schemas=ctx.metadata.schemas,
            cache=ctx.cache,
        )
    )


# ---------------------------------------------------------------------------------------------
# keys: upsert and delete_by_keys


@dataclass(frozen=True)
class UpsertResult:
    """What an upsert changed: the table's rows replaced (two rows of one key replaced by one
    source row count twice, as Spark's MERGE counts updated rows) and the source rows added."""

    rows_updated: int
    rows_inserted: int


def _source(ctx: RowContext, data: Any, join_cols: Sequence[str]) -> pa.Table:
    if not join_cols:
        raise ValidationError("upsert needs at least one join column")
    for name in join_cols:
        if ctx.schema.find_field_id(name, ctx.case_sensitive) is None:
            raise ValidationError(f"join column {name!r} is not in the table schema")
    data = to_schema_arrow_table(data, ctx.schema)
    given = set(data.column_names)
    fold = (lambda n: n) if ctx.case_sensitive else str.lower
    given = {fold(g) for g in given}
    for name in join_cols:
        if fold(name) in {fold(f.name) for f in ctx.schema.fields} and fold(name) not in given:
            # filled with nulls, it would match (and replace) every row with a null key
            raise ValidationError(f"join column {name!r} is not in the data to upsert")
    missing = [
        f.name
        for f in ctx.schema.fields
        if fold(f.name) not in given and not isinstance(f.field_type, UnknownType)
    ]
    if missing:
        # filled with nulls (or defaults), an update would wipe the rows' values
        raise ValidationError(
            f"the data to upsert lacks the columns {missing}: an upsert replaces whole rows, "
            "so it needs every column of the table (Spark's MERGE ... UPDATE SET * refuses "
            "such a source too)"
        )
    nested = missing_nested_fields(ctx.schema, data.schema, ctx.case_sensitive)
    if nested:
        raise ValidationError(
            f"the data to upsert lacks the nested fields {nested}: an upsert replaces whole "
            "rows, so it needs every field of the table's structs (filled with nulls or "
            "defaults, the update would wipe the rows' values)"
        )
    return to_table_schema(data, ctx.schema, ctx.version)


#: Times an equality-mode upsert runs again on a newer table after a conflict.
EQUALITY_UPSERT_RETRIES = 4


def upsert_runs_again(metadata: TableMetadata) -> bool:
    """Whether an upsert that conflicted with a concurrent commit runs again on the newer
    table: equality-mode upserts do (last writer wins, as streaming upserts expect; on the
    newer table its equality deletes cover the rows the other writer added), the others
    read the rows they replace and fail."""
    return _upsert_mode(metadata.properties, metadata.format_version) == EQUALITY


def _upsert_mode(props: Mapping[str, str], version: int) -> str:
    if UPSERT_MODE in props:
        mode = enum_property(props, UPSERT_MODE, COPY_ON_WRITE)
        if mode == EQUALITY:
            if version < 2:
                raise ValidationError(f"{UPSERT_MODE}=equality needs format version 2 or later")
            return EQUALITY
        return COPY_ON_WRITE if version < 2 else mode
    return write_mode(props, MERGE_MODE if MERGE_MODE in props else UPDATE_MODE, version)


def upsert(
    tx: Transaction,
    data: Any,
    join_cols: str | Sequence[str] | None = None,
    *,
    when_matched_update_all: bool = True,
    when_not_matched_insert_all: bool = True,
    case_sensitive: bool = True,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> UpsertResult:
    """Inserts the rows of ``data`` whose key (``join_cols``, by default the table's
    identifier fields) is new and replaces the rows whose key exists, in one snapshot. Keys
    must be unique in ``data``; null equals null.

    ``when_matched_update_all=False`` leaves the rows whose key exists as they are (only new
    keys are inserted); ``when_not_matched_insert_all=False`` inserts nothing (only existing
    keys are updated); one of them must be true, as in PyIceberg. Either of them reads the
    table's keys, in equality mode too. ``case_sensitive=False`` matches ``join_cols`` to the
    schema's names ignoring case.

    Updated rows keep their ``_row_id`` on v3 (merge-on-read and copy-on-write)."""
    if not (when_matched_update_all or when_not_matched_insert_all):
        raise ValidationError(
            "an upsert with when_matched_update_all=False and when_not_matched_insert_all=False "
            "would change nothing: set one of them"
        )
    both = when_matched_update_all and when_not_matched_insert_all
    ctx = RowContext(tx, branch, case_sensitive)
    join_cols = _schema_names(ctx, join_columns(ctx.schema, join_cols, case_sensitive))
    check_key_types(ctx.schema, join_cols, ctx.case_sensitive)
    source = _source(ctx, data, join_cols)
    if source.num_rows == 0:
        return UpsertResult(0, 0)
    check_valid_columns(source, join_cols)  # keys are hashed and compared by value
    mode = _upsert_mode(ctx.metadata.properties, ctx.version)
    if mode == EQUALITY and both:
        check_unique_keys(source, join_cols)
        return _upsert_equality(ctx, source, join_cols, snapshot_properties)
    if mode == EQUALITY:  # the rows to change are found by reading: deleted by position
        mode = MERGE_ON_READ
    lineage = ctx.version >= 3
    keys = KeySet(source, join_cols)
    check_unique_keys(source, join_cols, keys)
    key_filter = keys_filter(source, join_cols)
    delta = RowDelta()
    matched_parts: list[pa.Table] = []
    # Without row lineage, when every source row is written, the new rows do not depend on
    # the matching: they are encoded meanwhile. On v3 the updated rows carry the row ids the
    # matching finds.
    writing = (
        None if lineage or not both else _Overlapped(lambda: write_rows(tx, source, lineage=False))
    )
    try:
        tasks = plan_tasks(tx, key_filter, branch=branch)

        def probe(task: FileScanTask, cache: DeleteCache) -> pa.Table:
            return matching_key_positions(
                ctx.io,
                task,
                ctx.schema,
                keys,
                specs=ctx.specs,
                name_mapping=ctx.mapping,
                schemas=ctx.metadata.schemas,
                cache=cache,
                with_row_ids=lineage,
            )

        hits = native_matching_key_positions(
            ctx.io,
            tasks,
            ctx.schema,
            keys,
            cache=ctx.cache,
            name_mapping=ctx.mapping,
            with_row_ids=lineage,
        )
        _fill_in(hits, tasks, probe, ctx.cache)
        for task, hit in zip(tasks, hits, strict=True):
            assert hit is not None
            if hit.num_rows == 0:
                continue
            matched_parts.append(hit)
            if not when_matched_update_all:  # the matched rows stay as they are
                continue
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
        at = None
        if both:
            found = 0
            if matched is not None:
                at = first_match(source, matched, join_cols)
                found = matched_source_rows(source, matched, join_cols, at)
            inserted = source.num_rows - found
        else:  # only the source rows of existing keys, or only the others
            existing = (
                key_match_mask(source, matched, join_cols)
                if matched is not None
                else pa.repeat(False, source.num_rows)
            )
            rows = source.filter(existing if when_matched_update_all else pc.invert(existing))
            if when_matched_update_all:
                inserted = 0
                at = first_match(rows, matched, join_cols) if matched is not None else None
            else:
                inserted, updated, matched, at = rows.num_rows, 0, None, None
            if rows.num_rows == 0 and not (delta.deletes or delta.removed):
                return UpsertResult(0, 0)  # nothing to change
        if lineage:
            ids = (
                carry_row_ids(rows, matched, join_cols, at)
                if matched is not None
                else pa.nulls(rows.num_rows, pa.int64())
            )
            rows = rows.append_column(ROW_ID, ids).append_column(
                LAST_UPDATED_SEQUENCE_NUMBER, pa.nulls(rows.num_rows, pa.int64())
            )
        if writing is None:
            delta.added_data.extend(write_rows(tx, rows, lineage=lineage))
        else:
            written, writing = writing.result(), None
            delta.added_data.extend(written)
        commit_row_delta(
            tx,
            delta,
            branch=branch,
            snapshot_properties=snapshot_properties,
            operation=Operation.OVERWRITE if (delta.deletes or delta.removed) else Operation.APPEND,
            conflict_filter=bind_filter(ctx.schema, key_filter),
        )
    except BaseException:
        if writing is not None:
            writing.abandon(ctx.io)
        for f in delta.added_data:
            ctx.io.delete_quietly(f.file_path)
        raise
    return UpsertResult(updated, inserted)


def _schema_names(ctx: RowContext, join_cols: Sequence[str]) -> list[str]:
    """``join_cols`` as the schema names them (they may differ in case when the upsert is not
    case sensitive); a name the schema lacks is kept for :func:`_source` to refuse."""
    if ctx.case_sensitive:
        return list(join_cols)
    out = []
    for name in join_cols:
        fid = ctx.schema.find_field_id(name, case_sensitive=False)
        out.append((ctx.schema.find_column_name(fid) if fid is not None else None) or name)
    return out


def _rows_without_keys(
    ctx: RowContext, task: FileScanTask, keys: KeySet, lineage: bool
) -> Iterable[pa.RecordBatch]:
    for batch in surviving_rows(
        ctx.io,
        task,
        ctx.schema,
        AlwaysFalse(),
        specs=ctx.specs,
        name_mapping=ctx.mapping,
        schemas=ctx.metadata.schemas,
        cache=ctx.cache,
        lineage=lineage,
    ):
        keep = pc.invert(keys.match_mask(batch))
        out = batch.filter(keep)
        if out.num_rows:
            yield out


def _equality_files(
    ctx: RowContext, keys: pa.Table, join_cols: Sequence[str]
) -> tuple[list[DataFile], list[FileScanTask]]:
    """One equality delete file per partition of the live data files that may hold the keys
    (equality deletes apply within their partition only), holding the keys that can be in
    that partition (see :class:`~icefloe.table.key_routing.KeyRouter`); written in parallel.
    Also the planned tasks of those partitions (:attr:`RowDelta.routed`)."""
    md = ctx.metadata
    ids = []
    for name in join_cols:
        fid = ctx.schema.find_field_id(name, ctx.case_sensitive)
        if fid is None:
            raise ValidationError(f"join column {name!r} is not in the table schema")
        ids.append(fid)
    partitions: dict[tuple[int, str], list[FileScanTask]] = {}
    key_filter = keys_filter(keys, join_cols, ctx.schema, ctx.case_sensitive)
    for task in plan_tasks(ctx.tx, key_filter, branch=ctx.branch):
        key = (task.data_file.spec_id, repr(task.data_file.partition))
        partitions.setdefault(key, []).append(task)
    router = KeyRouter(ctx.schema, ctx.specs, keys, join_cols, ctx.case_sensitive)
    jobs: list[tuple[FileScanTask, pa.Table]] = []
    reached: list[FileScanTask] = []
    for (spec_id, _), tasks in sorted(partitions.items(), key=lambda kv: kv[0]):
        routed = router.keys_for(spec_id, tasks[0].data_file.partition)
        if routed.num_rows:
            jobs.append((tasks[0], routed))
            reached += tasks
    written: list[DataFile] = []
    lock = threading.Lock()

    def write(job: tuple[FileScanTask, pa.Table]) -> DataFile:
        task, routed = job
        spec_id = task.data_file.spec_id
        loc = new_delete_location(md.location, md.properties, "parquet", prefix="eq-")
        f = write_equality_deletes(
            ctx.io,
            loc,
            routed,
            ctx.schema,
            ids,
            spec_id,
            partition_dict(ctx.specs.get(spec_id), task.data_file.partition),
            md.properties,
        )
        with lock:
            written.append(f)
        return f

    try:
        return parallel_map(write, jobs, threads=work_threads(), kind="work"), reached
    except BaseException:
        for f in written:
            ctx.io.delete_quietly(f.file_path)
        raise


def _upsert_equality(
    ctx: RowContext,
    source: pa.Table,
    join_cols: Sequence[str],
    snapshot_properties: Mapping[str, str] | None,
) -> UpsertResult:
    check_equality_key_types(ctx.schema, join_cols, ctx.case_sensitive)
    delta = RowDelta()
    keys = source.select(list(join_cols))
    try:
        delta.added_deletes, delta.routed = _equality_files(ctx, keys, join_cols)
        delta.added_data = write_rows(ctx.tx, source, lineage=False)
        # Equality deletes are written only where live files may hold the keys: rows of the
        # keys another writer added meanwhile elsewhere (a key new to the table) would stay
        # beside these, so such a commit conflicts (under serializable isolation, as the
        # merge-on-read upsert does).
        commit_row_delta(
            ctx.tx,
            delta,
            branch=ctx.branch,
            snapshot_properties=snapshot_properties,
            operation=Operation.OVERWRITE if delta.added_deletes else Operation.APPEND,
            conflict_filter=bind_filter(ctx.schema, keys_filter(keys, join_cols)),
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
    join_cols: str | Sequence[str] | None = None,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> int:
    """Deletes the rows whose ``join_cols`` (by default the table's identifier fields) equal
    a row of ``keys`` by writing equality delete files (no data is read). Returns the number
    of delete files written."""
    ctx = RowContext(tx, branch)
    if ctx.version < 2:
        raise ValidationError("equality deletes need format version 2 or later")
    from icefloe.write.input import to_schema_arrow_table

    table = to_schema_arrow_table(keys, ctx.schema)  # Python values: a ValidationError, not Arrow's
    join_cols = join_columns(ctx.schema, join_cols, ctx.case_sensitive, "delete_by_keys")
    if not join_cols:
        raise ValidationError("delete_by_keys needs at least one join column")
    check_key_types(ctx.schema, join_cols, ctx.case_sensitive)
    check_equality_key_types(ctx.schema, join_cols, ctx.case_sensitive)
    missing = [c for c in join_cols if c not in table.column_names]
    if missing:
        raise ValidationError(f"keys lack join columns {missing}")
    for c in join_cols:
        if table.column_names.count(c) > 1:
            raise ValidationError(f"keys have the join column {c!r} twice")
    table = table.select(join_cols)
    if table.num_rows == 0:
        return 0
    check_valid_columns(table, join_cols)
    delta = RowDelta()
    delta.added_deletes, delta.routed = _equality_files(ctx, table, join_cols)
    if not delta.added_deletes:
        return 0
    # The deletes reach only the partitions whose files may hold the keys: a data file
    # another writer added meanwhile elsewhere may hold them too, and its rows would stay.
    # Under serializable isolation (write.delete.isolation-level, the default) that conflicts.
    commit_row_delta(
        tx,
        delta,
        branch=branch,
        snapshot_properties=snapshot_properties,
        operation=Operation.DELETE,
        conflict_filter=bind_filter(ctx.schema, keys_filter(table, join_cols)),
    )
    return len(delta.added_deletes)
