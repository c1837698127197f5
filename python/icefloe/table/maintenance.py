"""Table maintenance: data file compaction and orphan file removal.

- :func:`rewrite_data_files` bin-packs small files (and files with deletes) per partition and
  rewrites them with their deletes applied, in one ``replace`` snapshot; optionally it then
  removes the delete files left dangling (:mod:`icefloe.table.dangling_deletes`).
  :func:`plan_rewrite_data_files` says what it would rewrite.
- :func:`remove_orphan_files` and :func:`reachable_files` (with :data:`DEFAULT_ORPHAN_AGE`) are
  re-exported from :mod:`icefloe.table.orphan_files`, where they live.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from icefloe.exceptions import ValidationError
from icefloe.expressions.base import AlwaysFalse, AlwaysTrue, BooleanExpression
from icefloe.io import FileIO
from icefloe.metadata import MAIN_BRANCH, Operation, TableMetadata
from icefloe.name_mapping import table_mapping
from icefloe.progress import Progress, ProgressArg
from icefloe.read.deletes import DeleteCache
from icefloe.scan.tasks import FileScanTask, replace_task
from icefloe.table.delete_scopes import resolve_scopes, unresolved_paths, with_scopes
from icefloe.table.orphan_files import DEFAULT_ORPHAN_AGE, reachable_files, remove_orphan_files
from icefloe.write.matching import surviving_rows

if TYPE_CHECKING:
    from icefloe.metadata import Snapshot
    from icefloe.table.table import Transaction
    from icefloe.write.files import DataFile

__all__ = [
    "DEFAULT_ORPHAN_AGE",
    "RewritePlan",
    "RewriteResult",
    "plan_rewrite_data_files",
    "reachable_files",
    "remove_orphan_files",
    "rewrite_data_files",
]


@dataclass(frozen=True)
class RewriteResult:
    """What :func:`rewrite_data_files` did."""

    rewritten_data_files: int
    added_data_files: int
    rewritten_bytes: int
    removed_delete_files: int


def _bins(tasks: list[FileScanTask], target: int) -> list[list[FileScanTask]]:
    """First-fit-decreasing bin packing of files by size into bins of at most ``target``."""
    bins: list[list[FileScanTask]] = []
    sizes: list[int] = []
    for t in sorted(tasks, key=lambda t: -t.data_file.file_size_in_bytes):
        size = t.data_file.file_size_in_bytes
        for i, used in enumerate(sizes):
            if used + size <= target:
                bins[i].append(t)
                sizes[i] += size
                break
        else:
            bins.append([t])
            sizes.append(size)
    return bins


#: Files above this many times the target size are too large (Iceberg Java's default
#: ``max-file-size-bytes`` ratio); a file being written rolls over half way there.
_MAX_FILE_RATIO = 1.8


#: The most input bytes of one group of files rewritten together when the group is streamed
#: (Iceberg Java's ``max-file-group-size-bytes`` default).
MAX_GROUP_BYTES = 100 << 30


def _write_max(target: int) -> int:
    """The size at which a compaction's output file rolls over to another: half way from the
    target to the largest size kept (Java's ``writeMaxFileSize``), so data that encodes a little
    larger than its input did makes no small remainder file."""
    return target + int((target * _MAX_FILE_RATIO - target) * 0.5)


def _output_files(input_size: int, target: int) -> int:
    """The number of files a group of ``input_size`` input bytes is written as (as Iceberg Java
    plans it): one below the target; otherwise one per target size, where a remainder under the
    small-file size (3/4 of the target) is spread over the other files when that keeps them
    within 10% above the target, and written as a file of its own otherwise."""
    if input_size < target:
        return 1
    fewer, remainder = divmod(input_size, target)
    more = fewer + (remainder > 0)
    if remainder > target * 3 // 4:
        return more
    if input_size // fewer < min(1.1 * target, _write_max(target)):
        return fewer
    return more


@dataclass(frozen=True)
class RewritePlan:
    """What :func:`rewrite_data_files` would rewrite now (see :func:`plan_rewrite_data_files`):
    groups of files (each written as at least one new file), input files, their bytes and the
    delete files the rewrite drops (those naming one rewritten file: DVs and file-scoped
    position deletes; not the dangling ones a removal of dangling deletes would find after)."""

    groups: int
    data_files: int
    data_bytes: int
    delete_files: int
    target_file_size: int


def _check_int(name: str, value: object, least: int, *, optional: bool = False) -> None:
    """A ``ValidationError`` naming ``name`` unless ``value`` is an int of at least ``least``
    (or None when ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise ValidationError(f"{name} must be an integer of at least {least}, got {value!r}")


def _rewrite_groups(
    tx: Transaction,
    target_file_size: int | None,
    min_input_files: int,
    row_filter: BooleanExpression | str,
    branch: str,
) -> tuple[int, list[tuple[int, list[FileScanTask]]]]:
    """The target size and the groups of files a rewrite would merge (each with its spec id,
    or -1 for files of older specs)."""
    from icefloe.table.branch_heads import existing_branch_head
    from icefloe.table.row_delta import plan_tasks
    from icefloe.write.properties import target_file_size as _target

    md = tx.metadata
    _check_int("target_file_size", target_file_size, 1, optional=True)
    _check_int("min_input_files", min_input_files, 1)
    target = _target(md.properties) if target_file_size is None else target_file_size
    if target <= 0:  # the table property
        raise ValidationError(f"target_file_size must be positive, got {target}")
    head = existing_branch_head(md, branch, "compact")
    groups: dict[tuple[int, str], list[FileScanTask]] = {}
    for task in plan_tasks(tx, row_filter, branch=branch):
        f = task.data_file
        small = f.file_size_in_bytes < target * 3 // 4
        if small or _too_large(f.file_size_in_bytes, f.record_count, target) or task.delete_files:
            f = task.data_file
            # as Java's: files of older specs are grouped together whatever their partition
            # (they are all rewritten in the current spec), so that they make fewer files
            current = f.spec_id == md.default_spec_id
            key = (f.spec_id, repr(f.partition)) if current else (-1, "")
            groups.setdefault(key, []).append(task)
    # Groups streamed as they are read are packed as Java packs them (up to 100 GiB, so a
    # partition's small files make one group, divided into files afterwards); groups read
    # whole before they are written are packed to the target size, which bounds their memory.
    streamed = _streams_groups(md)
    todo = [
        (spec_id, group)
        for (spec_id, _), tasks in sorted(groups.items(), key=lambda kv: kv[0])
        for group in _bins(tasks, MAX_GROUP_BYTES if streamed and spec_id >= 0 else target)
        if _worth_rewriting(group, min_input_files, target)
    ]
    # the v2 file-scoped position deletes Java writes name their data file by bounds only
    resolved = iter(_with_referenced_files(tx.table.io, head, [t for _, g in todo for t in g]))
    return target, [(spec_id, [next(resolved) for _ in group]) for spec_id, group in todo]


def _too_large(size: int, rows: int, target: int) -> bool:
    """Whether a file of ``size`` bytes is over Iceberg Java's largest wanted file, 1.8 times
    the target (its ``max-file-size-bytes`` default): compaction splits it (unless it holds
    one row, which no split makes smaller)."""
    return size > target * 9 // 5 and rows > 1


def _worth_rewriting(group: list[FileScanTask], min_input_files: int, target: int) -> bool:
    """Whether a group of files is rewritten: it has deletes to apply or a file to split
    (:func:`_too_large`); or it has ``min_input_files`` files, or more than one adding up to
    more than the target (Java's rules), and makes fewer files than it has (two files of 0.7
    times the target would be written as two such files again, at every compaction).
    ``min_input_files=1`` asks for every group to be rewritten."""
    if any(t.delete_files for t in group) or min_input_files <= 1:
        return True
    if any(
        _too_large(t.data_file.file_size_in_bytes, t.data_file.record_count, target) for t in group
    ):
        return True
    size = sum(t.data_file.file_size_in_bytes for t in group)
    if not (len(group) >= min_input_files or (len(group) > 1 and size > target)):
        return False
    return _output_files(size, target) < len(group)


def _applied_deletes(tasks: list[FileScanTask]) -> set[tuple[str, int | None]]:
    """``(path, offset)`` of the delete files a rewrite of ``tasks`` drops: those naming one
    rewritten data file (deletion vectors, file-scoped position deletes; ``tasks`` as
    :func:`_rewrite_groups` returns them, the data file a v2 position delete file names by its
    ``file_path`` bounds resolved), the same the commit removes. Partition-scoped and equality
    delete files may still apply elsewhere and stay."""
    from icefloe.table.row_delta import _file_scoped

    return {
        (d.file_path, d.content_offset)
        for t in tasks
        for d in _file_scoped(t.data_file.file_path, t.delete_files)
    }


def _with_referenced_files(
    io: FileIO, snapshot: Snapshot | None, tasks: list[FileScanTask]
) -> list[FileScanTask]:
    """``tasks`` with each position delete file that names one data file only by equal lower
    and upper ``file_path`` bounds (as Iceberg Java and Spark write v2 file-scoped deletes,
    without ``referenced_data_file``) given that data file as ``referenced_data_file``, read
    from the delete manifests of ``snapshot``, the head the tasks were planned from (see
    :mod:`icefloe.table.delete_scopes`)."""
    named = resolve_scopes(io, snapshot, unresolved_paths(d for t in tasks for d in t.delete_files))
    if not named:
        return tasks
    out = []
    for t in tasks:
        refs = with_scopes(t.delete_files, named)
        out.append(t if refs == t.delete_files else replace_task(t, delete_files=refs))
    return out


def plan_rewrite_data_files(
    tx: Transaction,
    *,
    target_file_size: int | None = None,
    min_input_files: int = 2,
    row_filter: BooleanExpression | str = AlwaysTrue(),  # noqa: B008 (a singleton)
    branch: str = MAIN_BRANCH,
) -> RewritePlan:
    """What :func:`rewrite_data_files` with the same arguments would rewrite, without reading
    or writing data (``tx`` is only planned against, never committed)."""
    target, todo = _rewrite_groups(tx, target_file_size, min_input_files, row_filter, branch)
    tasks = [t for _, g in todo for t in g]
    return RewritePlan(
        groups=len(todo),
        data_files=len(tasks),
        data_bytes=sum(t.data_file.file_size_in_bytes for t in tasks),
        delete_files=len(_applied_deletes(tasks)),
        target_file_size=target,
    )


def _streams_groups(md: TableMetadata) -> bool:
    """Whether groups of files of the current spec are written as their rows are read (see
    :func:`_stream_group`): Parquet tables without a sort order (a sort orders a group's rows
    as a whole)."""
    from icefloe.write.avro_files import is_avro
    from icefloe.write.orc_files import is_orc

    props = md.properties
    return not (md.sort_order().is_sorted or is_orc(props) or is_avro(props))


def _stream_group(
    tx: Transaction,
    group: list[FileScanTask],
    rows: Callable[[FileScanTask], Iterator[pa.RecordBatch]],
    target: int,
    lineage: bool,
    bar: Progress,
) -> list[DataFile]:
    """A group of files of the current spec rewritten as their rows are read (``rows``), a
    row group at a time: memory holds about a row group, not the group's rows.

    As :func:`rewrite_data_files` says, the group makes as many files as its input's size calls
    for, with about equal rows each: the rows per file follow from the input's record counts
    less the rows its deletion vectors or file-scoped position deletes remove (overlapping
    position delete files, partition-scoped and equality deletes can only make the last file
    shorter, or leave it out)."""
    from icefloe.table.row_delta import _file_scoped, typed_rows
    from icefloe.write.rolling import RollingWriter

    md = tx.metadata
    schema = md.current_schema()
    size = sum(t.data_file.file_size_in_bytes for t in group)
    files = _output_files(size, target)
    # Rows deleted: the largest count among the DV and position delete files naming only the
    # file, a lower bound (a data file has one DV at most, and position delete files written by
    # different engines may delete the same rows), so the estimate of live rows never falls short
    live = sum(
        max(
            0,
            t.data_file.record_count
            - max(
                (d.record_count for d in _file_scoped(t.data_file.file_path, t.delete_files)),
                default=0,
            ),
        )
        for t in group
    )
    writer = RollingWriter(
        md,
        tx.table.io,
        md.spec(),
        max_file_bytes=_write_max(target),
        rows_per_file=-(-live // files) if files > 1 and live else None,
    )
    with writer:
        for t in group:
            for batch in rows(t):
                writer.write(typed_rows(pa.Table.from_batches([batch]), schema, lineage=lineage))
            bar.advance()
        return writer.finish()


def rewrite_data_files(
    tx: Transaction,
    *,
    target_file_size: int | None = None,
    min_input_files: int = 2,
    row_filter: BooleanExpression | str = AlwaysTrue(),  # noqa: B008 (a singleton)
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    progress: ProgressArg = None,
    remove_dangling_deletes: bool = False,
) -> RewriteResult:
    """Compacts small data files and applies their deletes, in one ``replace`` snapshot.

    Per partition, files smaller than 3/4 of the target size (``write.target-file-size-bytes``
    unless ``target_file_size`` is given), files larger than 1.8 times it (split, as Java's
    ``max-file-size-bytes`` default) and files with deletes are bin-packed into groups of
    up to :data:`MAX_GROUP_BYTES`, as in Iceberg Java (groups read whole before they are
    written, see :func:`_streams_groups`, to the target size; files of older partition specs
    all count as one partition, as in Java); a group is rewritten when it has
    ``min_input_files`` files, more than one file adding up to more than the target, or any
    deletes. As in Iceberg Java, a group is written as one file when its input is below the
    target, else as about one file per target size of input (a remainder under 3/4 of the
    target spread over the others when they stay within 10% above it), its rows split evenly
    in order; a file only rolls over to another at 1.4 times the target. Rewritten rows are
    written in the table's current partition spec, as Iceberg Java does (files of an older spec
    move to the current one, which also works when an old spec's source column has been
    dropped), and keep ``_row_id`` and ``_last_updated_sequence_number`` (v3). The new files
    keep the data sequence number of the snapshot the compaction started from, as Java's does
    by default, so equality deletes committed meanwhile apply to them too. The commit fails
    with ``CommitConflictError`` if a concurrent commit removed one of the input files or added
    position deletes or deletion vectors for it (or equality deletes of another partition spec
    than the output's).
    ``progress`` counts the input files as their rows are read (see :mod:`icefloe.progress`).

    Delete files that only applied to rewritten files are dropped when they name them (deletion
    vectors, file-scoped position deletes); partition-scoped and equality delete files may still
    apply elsewhere and stay. With ``remove_dangling_deletes`` those that no live data file can
    apply to any more are removed afterwards in a second ``replace`` snapshot of the same
    commit (see :mod:`icefloe.table.dangling_deletes`; also when nothing needed compacting),
    and counted in ``removed_delete_files``.
    """
    from icefloe.table.row_delta import RowDelta, commit_row_delta, write_rows

    if not isinstance(remove_dangling_deletes, bool):
        raise ValidationError(
            f"remove_dangling_deletes must be a bool, got {remove_dangling_deletes!r}"
        )
    md = tx.metadata
    target, todo = _rewrite_groups(tx, target_file_size, min_input_files, row_filter, branch)
    schema = md.current_schema()
    specs = {s.spec_id: s for s in md.partition_specs}
    lineage = md.format_version >= 3
    mapping = table_mapping(md.properties, deferred=True)
    cache = DeleteCache()
    delta = RowDelta()
    removed_deletes: set[tuple[str, int | None]] = set()
    streamed = _streams_groups(md)
    try:
        with Progress(
            progress, sum(len(g) for _, g in todo), "rewrite_data_files: rewriting files"
        ) as bar:
            for spec_id, group in todo:

                def read(t: FileScanTask) -> Iterator[pa.RecordBatch]:
                    return surviving_rows(
                        tx.table.io,
                        t,
                        schema,
                        AlwaysFalse(),
                        specs=specs,
                        name_mapping=mapping,
                        cache=cache,
                        schemas=md.schemas,
                        lineage=lineage,
                    )

                delta.removed.extend(group)
                removed_deletes |= _applied_deletes(group)
                if spec_id >= 0 and streamed:
                    delta.added_data.extend(_stream_group(tx, group, read, target, lineage, bar))
                    continue
                batches: list[pa.RecordBatch] = []
                for t in group:
                    batches += read(t)
                    bar.advance()
                if batches:
                    rows = pa.Table.from_batches(batches)
                    # as Java's: the number of files follows from the input's size, each
                    # partition of the output taking its share by rows
                    size = sum(t.data_file.file_size_in_bytes for t in group)
                    total = rows.num_rows

                    def file_count(n: int, size: int = size, total: int = total) -> int:
                        return _output_files(size * n // total, target)

                    delta.added_data.extend(
                        write_rows(
                            tx,
                            rows,
                            lineage=lineage,
                            spec=md.spec(),
                            target_file_size=_write_max(target),
                            file_count=file_count,
                        )
                    )
        if delta.removed:
            # as Java's (use-starting-sequence-number): the new files take the data sequence
            # number of the snapshot the compaction read, so equality deletes committed
            # meanwhile (a streaming upsert's) still apply to them instead of conflicting
            start = md.snapshot_by_name(branch) if branch in md.refs else None
            keep_seq = md.format_version >= 2 and start is not None
            if keep_seq:
                assert start is not None
                for f in delta.added_data:
                    f.data_sequence_number = start.sequence_number
            commit_row_delta(
                tx,
                delta,
                branch=branch,
                snapshot_properties=snapshot_properties,
                operation=Operation.REPLACE,
                isolation="snapshot",
                starting_sequence_spec=md.default_spec_id if keep_seq else None,
            )
    except BaseException:
        for f in delta.added_data:
            tx.table.io.delete_quietly(f.file_path)
        raise
    dangling = 0
    if remove_dangling_deletes:
        from icefloe.table.dangling_deletes import remove_dangling_deletes as remove

        found = remove(tx, branch=branch, snapshot_properties=snapshot_properties)
        dangling = found.removed_delete_files
    return RewriteResult(
        len(delta.removed),
        len(delta.added_data),
        sum(t.data_file.file_size_in_bytes for t in delta.removed),
        len(removed_deletes) + dangling,
    )
