"""The commit step of row-level changes, shared by delete/upsert/compaction and Spark.

:func:`commit_row_delta` takes a :class:`RowDelta` (positions to delete per data file, data
files to drop, new data and delete files), writes the deletion vectors (v3, one Puffin file) or
position delete files (v2), removes the delete files they supersede and those of dropped data
files, and adds one snapshot to the transaction with the conflict checks that run when the
commit is retried on a newer table state. :func:`plan_tasks` plans the live files of a branch,
:func:`write_rows` writes rows (with row lineage columns on v3) as data files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe import _native
from icefloe.arrow_schema import schema_to_arrow
from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.expressions.base import AlwaysFalse, AlwaysTrue, BooleanExpression
from icefloe.expressions.binding import bind
from icefloe.expressions.evaluator import evaluate
from icefloe.expressions.projection import project
from icefloe.expressions.serde import to_dict
from icefloe.io import FileIO
from icefloe.metadata import MAIN_BRANCH, Snapshot, TableMetadata
from icefloe.name_mapping import NameMapping, table_mapping
from icefloe.partitioning import PartitionSpec
from icefloe.properties import TableProperties, enum_property, parse_enum
from icefloe.read.deletes import DeleteCache
from icefloe.scan.tasks import (
    LAST_UPDATED_SEQUENCE_NUMBER,
    ROW_ID,
    DataFileRef,
    DeleteContent,
    DeleteFileRef,
    FileScanTask,
    metadata_field,
    replace_task,
)
from icefloe.schema import Schema
from icefloe.table.branch_heads import parent_snapshot
from icefloe.table.concurrent_commits import Since
from icefloe.table.delete_scopes import resolve_scopes, unresolved_paths, with_scopes
from icefloe.table.producer import SnapshotProducer
from icefloe.write.delete_files import (
    FileDeletes,
    new_delete_location,
    partition_dict,
    write_deletion_vectors,
    write_file_scoped_position_deletes,
    write_position_deletes,
)
from icefloe.write.files import DataFile
from icefloe.write.matching import (
    partition_key,
    partition_row,
    proven_by_metrics,
)
from icefloe.write.writer import WriteOptions, write_parquet_files

if TYPE_CHECKING:
    from icefloe.table.table import Transaction

__all__ = [
    "COPY_ON_WRITE",
    "MERGE_ON_READ",
    "RowContext",
    "RowDelta",
    "commit_row_delta",
    "concurrent_deletes_validator",
    "delete_entries_predicate",
    "lineage_schema",
    "plan_tasks",
    "read_check",
    "write_mode",
    "write_rows",
]

DELETE_MODE = TableProperties.DELETE_MODE
UPDATE_MODE = TableProperties.UPDATE_MODE
MERGE_MODE = TableProperties.MERGE_MODE
UPSERT_MODE = TableProperties.UPSERT_MODE
DELETE_ISOLATION = TableProperties.DELETE_ISOLATION_LEVEL
COPY_ON_WRITE = "copy-on-write"
MERGE_ON_READ = "merge-on-read"
EQUALITY = "equality"
SERIALIZABLE = "serializable"
SNAPSHOT = "snapshot"

# ---------------------------------------------------------------------------------------------
# planning and reading context


@dataclass
class RowContext:
    """The transaction, branch and shared delete cache of one row-level operation."""

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

    _derived: tuple[TableMetadata, dict[int, PartitionSpec], NameMapping | None] | None = field(
        default=None, repr=False, compare=False
    )

    def _of_metadata(self) -> tuple[TableMetadata, dict[int, PartitionSpec], NameMapping | None]:
        """The specs and name mapping of the current metadata, built once per metadata object
        (the same objects let the reader reuse what it derives from them, task to task)."""
        md = self.metadata
        derived = self._derived
        if derived is None or derived[0] is not md:
            mapping = table_mapping(md.properties, deferred=True)
            derived = self._derived = (md, {s.spec_id: s for s in md.partition_specs}, mapping)
        return derived

    @property
    def specs(self) -> dict[int, PartitionSpec]:
        return self._of_metadata()[1]

    @property
    def mapping(self) -> NameMapping | None:
        return self._of_metadata()[2]

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
    matching ``row_filter``, one task per file with every delete that applies to it: delete
    files are not pruned by the filter, since copy-on-write rewrites read all rows of a file."""
    return plan_candidates(tx, row_filter, branch=branch, case_sensitive=case_sensitive)[0]


def plan_candidates(
    tx: Transaction,
    row_filter: BooleanExpression | str = AlwaysTrue(),  # noqa: B008 (a singleton)
    *,
    branch: str = MAIN_BRANCH,
    case_sensitive: bool = True,
    prove: bool = False,
) -> tuple[list[FileScanTask], frozenset[str]]:
    """The tasks of :func:`plan_tasks` and, with ``prove``, the paths of the files whose
    column metrics prove that every row matches ``row_filter`` (a delete drops them unread;
    see :func:`icefloe.write.matching.proven_by_metrics`)."""
    from icefloe.table.scan import TableScan

    view = SimpleNamespace(metadata=tx.metadata, io=tx.table.io)
    ref = branch if branch in tx.metadata.refs else None
    scan = TableScan(view, row_filter, case_sensitive=case_sensitive, ref=ref)
    scan._prune_deletes_by_metrics = False
    scan._keep_metrics = prove
    seen: set[str] = set()
    out: list[FileScanTask] = []
    for task in scan.plan_files():
        if task.data_file.file_path not in seen:
            seen.add(task.data_file.file_path)
            out.append(task)
    if not prove or not out:
        return out, frozenset()
    batches = [pb.entries for pb in scan.plan().batches]
    return out, proven_by_metrics(batches, scan.bound_filter())


def lineage_schema(schema: Schema) -> Schema:
    """``schema`` plus the ``_row_id`` and ``_last_updated_sequence_number`` columns that
    rewritten v3 files carry (spec "Row Lineage")."""
    return Schema(
        *schema.fields,
        metadata_field(ROW_ID),
        metadata_field(LAST_UPDATED_SEQUENCE_NUMBER),
        schema_id=schema.schema_id,
    )


def typed_rows(rows: pa.Table, schema: Schema, *, lineage: bool) -> pa.Table:
    """Rows read in ``schema`` (plus, with ``lineage``, ``_row_id`` and
    ``_last_updated_sequence_number``) in exactly the Arrow schema files are written from."""
    write_schema = lineage_schema(schema) if lineage else schema
    target = schema_to_arrow(write_schema)
    if rows.schema.equals(target, check_metadata=True):
        return rows
    return pa.Table.from_arrays([rows.column(f.name) for f in target], schema=target)


def write_rows(
    tx: Transaction,
    rows: pa.Table,
    *,
    lineage: bool,
    spec: PartitionSpec | None = None,
    target_file_size: int | None = None,
    file_count: Callable[[int], int] | None = None,
) -> list[DataFile]:
    """Writes rows already typed as the table schema (plus, with ``lineage``, ``_row_id`` and
    ``_last_updated_sequence_number``) as data files of ``spec`` (default: the table's).
    ``file_count`` gives the number of files a partition's rows are written as (compaction;
    see :class:`~icefloe.write.writer.WriteOptions`)."""
    md = tx.metadata
    schema = md.current_schema()
    rows = typed_rows(rows, schema, lineage=lineage)
    options = WriteOptions(target_file_size=target_file_size, file_count=file_count)
    # The writer recognises the lineage columns and stores them with their reserved ids.
    return write_parquet_files(
        md, tx.table.io, rows, schema=schema, spec=spec or md.spec(), options=options
    )


def write_mode(props: Mapping[str, str], key: str, version: int) -> str:
    """The ``copy-on-write`` / ``merge-on-read`` mode in property ``key`` (v1: copy-on-write)."""
    mode = enum_property(props, key, COPY_ON_WRITE, (COPY_ON_WRITE, MERGE_ON_READ))
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
    concurrent deletes of them or new deletes for them conflict. ``routed``: the tasks whose
    partitions the equality deletes were written for; a concurrent commit that removes one of
    their files and adds data files in partitions those deletes do not reach (a compaction
    into a new spec) conflicts, since their rows may have moved out of reach.
    """

    deletes: list[FileDeletes] = field(default_factory=list)
    removed: list[FileScanTask] = field(default_factory=list)
    added_data: list[DataFile] = field(default_factory=list)
    added_deletes: list[DataFile] = field(default_factory=list)
    targets: list[FileScanTask] = field(default_factory=list)
    routed: list[FileScanTask] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.deletes or self.removed or self.added_data or self.added_deletes)


def _key(path: str, offset: int | None) -> str:
    return f"{path}\x00{'' if offset is None else offset}"


def _file_scoped(path: str, deletes: Iterable[DeleteFileRef]) -> list[DeleteFileRef]:
    """The position delete files (deletion vectors included) of ``deletes`` that name only the
    data file ``path``: removed with it. A planned ``DeleteFileRef`` carries no ``file_path``
    bounds, so a v2 file written as Iceberg Java writes them (equal bounds, no
    ``referenced_data_file``) counts only once its ``referenced_data_file`` is resolved from the
    manifest entry, as compaction does (``maintenance._with_referenced_files``)."""
    return [
        d
        for d in deletes
        if d.content is DeleteContent.POSITION_DELETES and d.referenced_data_file == path
    ]


def _with_scopes(ctx: RowContext, delta: RowDelta) -> RowDelta:
    """``delta`` with the v2 position delete files Java scopes to one data file by their
    bounds alone resolved (:mod:`icefloe.table.delete_scopes`): a new DV or file-scoped delete
    file then replaces them, as Java's do, and a removed data file takes them along, as it
    takes icefloe's own file-scoped deletes."""
    refs = [d for item in delta.deletes for d in item.existing]
    refs += [d for task in delta.removed for d in task.delete_files]
    paths = unresolved_paths(refs)
    if not paths:
        return delta
    named = resolve_scopes(ctx.io, parent_snapshot(ctx.metadata, ctx.branch), paths)
    if not named:
        return delta
    return replace(
        delta,
        deletes=[replace(i, existing=with_scopes(i.existing, named)) for i in delta.deletes],
        removed=[
            replace_task(t, delete_files=with_scopes(t.delete_files, named)) for t in delta.removed
        ],
    )


def _write_deletes(
    ctx: RowContext, items: Sequence[FileDeletes]
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
    props = md.properties
    default = TableProperties.DELETE_GRANULARITY_DEFAULT
    if enum_property(props, TableProperties.DELETE_GRANULARITY, default) == "file":
        return write_file_scoped_position_deletes(
            ctx.io, md.location, props, items, ctx.specs, ctx.cache
        )
    # granularity "partition": one position delete file per partition, superseding nothing
    # (older deletes stay and readers union them with the new ones).
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
    allow_empty: bool = False,
    starting_sequence_spec: int | None = None,
) -> SnapshotProducer | None:
    """Writes the delete files of ``delta`` and adds one snapshot for it to ``tx``.

    On a retry against a newer table state the commit fails with ``CommitConflictError`` if a
    concurrent commit removed a file this change read or removes, added deletes for those
    files, or (``isolation='serializable'``, the default, with a ``conflict_filter``) added
    data files in partitions the filter may match. Returns the producer (None if nothing to do
    and not ``allow_empty``: with it, an empty delta commits a snapshot that changes nothing).

    ``starting_sequence_spec``: the added data files carry the data sequence number of the
    snapshot the change started from (a compaction), so equality deletes committed meanwhile
    still apply to them: those of that spec, in the partitions read, or global ones, are then
    no conflict.
    """
    ctx = RowContext(tx, branch)
    if delta.empty and not allow_empty:
        return None
    delta = _with_scopes(ctx, delta)
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
        if delta.added_data:
            # a compaction's files take the data sequence number of the state it read
            if any(f.data_sequence_number is not None for f in delta.added_data):
                producer.copies_rows()
            # v3: rewritten rows keep the _row_id of the files they came from
            producer.copies_rows_of(_read_files(delta))
        producer.add_delete_files(dvs + delta.added_deletes)
        producer.remove_files(t.data_file.file_path for t in delta.removed)
        if removed_deletes:
            producer.remove_files_where(_entry_key_predicate(set(removed_deletes)))
        if ctx.version >= 3 and dvs:
            # a data file has one deletion vector at most: one that does not apply to it (older
            # than the file) goes too, and readers would otherwise refuse the table
            paths = {d.referenced_data_file for d in dvs if d.referenced_data_file}
            producer.remove_files_where(_deletion_vectors_of(paths), deletes_only=True)
        if operation is not None:
            producer.set_operation(operation)
        if isolation is not None:
            level = parse_enum("isolation", isolation, (SERIALIZABLE, SNAPSHOT), "argument")
        else:
            level = enum_property(tx.metadata.properties, DELETE_ISOLATION, SERIALIZABLE)
        producer.validate(
            _Validator(
                ctx.io,
                branch,
                delta.targets + delta.removed + _task_refs(delta.deletes),
                set(removed_deletes),
                conflict_filter if level == SERIALIZABLE else None,
                ctx.schema,
                starting_sequence_spec,
                delta.routed,
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


def read_check(
    ctx: RowContext, delta: RowDelta, branch: str, conflict_filter: BooleanExpression
) -> _Validator:
    """The retry checks of a row-level change that wrote nothing: the files it read are
    still live and (serializable isolation, the default) nothing added since matches
    ``conflict_filter``."""
    level = enum_property(ctx.metadata.properties, DELETE_ISOLATION, SERIALIZABLE)
    return _Validator(
        ctx.io,
        branch,
        list(delta.targets),
        set(),
        conflict_filter if level == SERIALIZABLE else None,
        ctx.schema,
    )


def _read_files(delta: RowDelta) -> list[DataFileRef]:
    """The data files whose rows ``delta`` read (and may carry into its added files)."""
    tasks = [*delta.removed, *delta.targets, *delta.routed, *_task_refs(delta.deletes)]
    return [t.data_file for t in tasks]


def _task_refs(items: Sequence[FileDeletes]) -> list[FileScanTask]:
    return [FileScanTask(i.data_file, tuple(i.existing)) for i in items]


def concurrent_deletes_validator(
    io: FileIO, branch: str, tasks: Sequence[FileScanTask], schema: Schema
) -> Any:
    """A producer validator failing with ``CommitConflictError`` when a commit after the
    transaction's start removed one of ``tasks``' data files or added deletes that may apply
    to them (for a change that rewrites their rows)."""
    return _Validator(io, branch, list(tasks), set(), None, schema)


def concurrent_data_validator(
    io: FileIO,
    branch: str,
    tasks: Sequence[FileScanTask],
    conflict_filter: BooleanExpression,
    schema: Schema,
    properties: Mapping[str, str],
) -> Any:
    """:func:`concurrent_deletes_validator`, also failing (under the table's
    ``write.delete.isolation-level``, serializable by default) when a commit after the
    transaction's start added a data file that may hold rows ``conflict_filter`` (bound)
    matches: for a change replacing those rows, which it did not see."""
    level = enum_property(properties, DELETE_ISOLATION, SERIALIZABLE)
    return _Validator(
        io, branch, list(tasks), set(), conflict_filter if level == SERIALIZABLE else None, schema
    )


def delete_entries_predicate(entries: Iterable[tuple[str, int | None]]) -> Any:
    """A ``remove_files_where`` predicate selecting the delete entries ``(file_path,
    content_offset)``: a deletion vector is removed by its entry, since one Puffin file holds
    the DVs of many data files (``content_offset`` None: a whole delete file)."""
    return _entry_key_predicate({_key(path, offset) for path, offset in entries})


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


def _deletion_vectors_of(paths: set[str]) -> Any:
    """A ``remove_files_where`` predicate selecting the deletion vectors of the data files
    ``paths``."""
    wanted = pa.array(sorted(paths), pa.string())

    def predicate(batch: pa.RecordBatch) -> pa.Array:
        names = batch.schema.names
        if "referenced_data_file" not in names or "content_offset" not in names:
            return pa.array([False] * batch.num_rows)
        ref = batch.column("referenced_data_file").cast(pa.string())
        dv = pc.and_(pc.equal(batch.column("content"), 1), pc.is_valid(batch["content_offset"]))
        return pc.fill_null(pc.and_(dv, pc.is_in(ref, value_set=wanted)), False)

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
        starting_sequence_spec: int | None = None,
        routed: Sequence[FileScanTask] = (),
    ) -> None:
        self.io = io
        self.branch = branch
        self.starting_sequence_spec = starting_sequence_spec
        self.routed_paths = {t.data_file.file_path for t in routed}
        self.covered = {(t.data_file.spec_id, partition_key(t.data_file.partition)) for t in routed}
        self.paths = {t.data_file.file_path for t in targets}
        self.partitions = {
            (t.data_file.spec_id, partition_key(t.data_file.partition)) for t in targets
        }
        self.removed_deletes = removed_deletes
        self.conflict_filter = conflict_filter
        self.schema = schema

    def __call__(self, metadata: TableMetadata, parent: Snapshot | None, since: Since) -> None:
        others = since.snapshots(metadata, parent)
        if not others:
            return
        metrics_json = None
        if self.conflict_filter is not None and not isinstance(
            self.conflict_filter, AlwaysTrue | AlwaysFalse
        ):
            metrics_json = json.dumps(to_dict(self.conflict_filter))
        entries = _entries_of(self.io, others, metrics_json)
        if self.routed_paths:
            self._check_moved_rows(metadata, entries)
        for row, spec_id, metrics_may_match, operation in entries:
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
            elif (
                content == 2
                and self.starting_sequence_spec is not None
                and (spec_id == self.starting_sequence_spec or _global(metadata, spec_id))
            ):
                continue  # it applies to the new files (older data sequence number) as well
            elif content == 2 and (spec_id, part) in self.partitions:
                raise CommitConflictError(
                    f"a concurrent commit added equality deletes ({path}) for a partition "
                    "this change read"
                )
            elif content == 2 and self.paths and _global(metadata, spec_id):
                raise CommitConflictError(
                    f"a concurrent commit added equality deletes ({path}) of an unpartitioned "
                    "spec, which apply to every partition, those this change read included"
                )
            elif (
                content == 0
                and operation != "replace"  # a rewrite adds no rows (as Java validates)
                and self.conflict_filter is not None
                and metrics_may_match
                and not self._reached_by_equality_deletes(metadata, spec_id, part)
                and _may_match(self.conflict_filter, self.schema, metadata, spec_id, row)
            ):
                raise CommitConflictError(
                    f"a concurrent commit added data file {path} that may hold rows this "
                    "change's filter matches (serializable isolation)"
                )

    def _reached_by_equality_deletes(
        self, metadata: TableMetadata, spec_id: int, part: Any
    ) -> bool:
        """Whether this change's equality deletes (written for the ``routed`` partitions, with
        every key that can be in each) apply to a data file another writer added in ``part``
        of ``spec_id``: its rows are deleted as if it had come first, so it cannot conflict."""
        return (spec_id, part) in self.covered or any(
            _global(metadata, covered_spec) for covered_spec, _ in self.covered
        )

    def _check_moved_rows(self, metadata: TableMetadata, entries: Sequence[_Entry]) -> None:
        """Equality deletes written for the partitions of the ``routed`` files: a concurrent
        commit that removed one of those files and added data files in other partitions may
        have moved the keys' rows where the deletes do not apply (a rewrite into a new spec)."""
        if any(_global(metadata, spec_id) for spec_id, _ in self.covered):
            return  # the deletes apply everywhere
        if not any(
            row["status"] == 2 and row["content"] == 0 and row["file_path"] in self.routed_paths
            for row, _, _, _ in entries
        ):
            return
        for row, spec_id, _, _ in entries:
            if row["status"] != 1 or row["content"] != 0:
                continue
            if (spec_id, partition_key(_partition_tuple(row))) not in self.covered:
                raise CommitConflictError(
                    f"a concurrent commit removed data files these equality deletes were "
                    f"written for and added {row['file_path']} in a partition they do not "
                    "reach (rows moved by a rewrite)"
                )


def _global(metadata: TableMetadata, spec_id: int) -> bool:
    """Whether equality deletes of ``spec_id`` apply to every partition (an unpartitioned
    spec, as readers apply them)."""
    spec = metadata.spec_by_id(spec_id)
    return spec is not None and spec.is_unpartitioned


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
        ptype = spec.partition_type(schema, metadata.schemas)  # dropped sources: older types
        proj = bind(ptype, project(bound, spec, strict=False), True)
        if proj is AlwaysTrue():
            return True
        if proj is AlwaysFalse():
            return False
        return evaluate(proj, partition_row(ptype, _partition_tuple(row)))
    except (ValidationError, TypeError, ValueError):
        return True  # cannot tell: assume it may match


#: A manifest entry of a concurrent snapshot (as a row), its spec id, whether its metrics may
#: match the change's filter, and the snapshot's operation.
_Entry = tuple[dict[str, Any], int, bool, str | None]


def _entries_of(
    io: FileIO, snapshots: Sequence[Snapshot], metrics_json: str | None = None
) -> list[_Entry]:
    """Entries added or deleted by ``snapshots``, each with its spec id, whether its column
    metrics (bounds, null and value counts) say the file may hold a row matching the filter in
    ``metrics_json`` (the inclusive metrics evaluation the scan planner uses; always true
    without a filter, and for delete files), and the operation of the snapshot that made it."""
    from icefloe.manifest import manifest_files
    from icefloe.scan.manifests import manifest_list_of, read_manifest_entries

    out: list[_Entry] = []
    for s in snapshots:
        if s.manifest_list is None:
            continue
        lst = manifest_list_of(io, s)
        mfs = [m for m in manifest_files(lst) if m.added_snapshot_id == s.snapshot_id]
        if not mfs:
            continue
        batches = read_manifest_entries(io, mfs)
        for m, b in zip(mfs, batches, strict=True):
            mine = pc.and_(
                pc.equal(b.column("snapshot_id"), s.snapshot_id),
                pc.not_equal(b.column("status"), 0),
            )
            sub = b.filter(mine)
            if not sub.num_rows:
                continue
            may = [True] * sub.num_rows
            if metrics_json is not None:
                entries = pa.StructArray.from_arrays(sub.columns, names=sub.schema.names)
                mask = _native.expr_metrics_mask(entries, metrics_json).to_pylist()
                content = sub.column("content").to_pylist()
                may = [bool(k) or c != 0 for k, c in zip(mask, content, strict=True)]
            rows = sub.to_pylist()
            out.extend(
                (r, m.partition_spec_id, k, s.operation) for r, k in zip(rows, may, strict=True)
            )
    return out
