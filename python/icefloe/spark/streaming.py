"""The ``icefloe`` format as a Structured Streaming source: the rows that snapshots appended.

``spark.readStream.format("icefloe").option(...).load("db.t")`` reads, micro-batch by
micro-batch, the data files added by the ``append`` snapshots of the table's main branch after
a starting point (an incremental append scan), in commit order. Options:

- ``start-snapshot-id``: read the appends committed after this snapshot (exclusive); or
  ``stream-from-timestamp`` (epoch ms): the snapshots committed at or after it (one ahead of
  the query's start streams nothing until the table's commits reach it);
  by default from the table's first snapshot on;
- ``max-files-per-micro-batch``: at most this many data files in one micro-batch (the
  snapshot boundaries need not align with batches);
- ``filter``: an icefloe filter, as for batch reads: the files it rules out are pruned and
  the rows of each micro-batch filtered (it is bound to the stream's schema, so snapshots
  written before a column it names was added are planned by field id); a malformed one stops
  the query when it starts. Offsets count every added file, pruned or not; its column names
  match as option ``case-sensitive`` says, by default as the session's
  ``spark.sql.caseSensitive`` (see :mod:`icefloe.spark.source`);
- ``skip-delete-snapshots`` / ``skip-overwrite-snapshots`` (default false): a ``delete`` or
  ``overwrite`` snapshot stops the stream with a clear error unless it is to be skipped
  (its changes are not streamed). ``replace`` snapshots (compactions) add no new rows and
  are always skipped.

Iceberg Java's names of these options (``streaming-max-files-per-micro-batch``,
``streaming-skip-delete-snapshots``, ``streaming-skip-overwrite-snapshots``) are taken as
theirs; Java's ``streaming-max-rows-per-micro-batch`` is refused (no row limit here).

Offsets are ``{"snapshot_id": S, "files": k}``: every file of the snapshots before ``S`` and
the first ``k`` added files of ``S`` (in path order) are consumed; ``k = -1``: all of ``S``.
Offsets are stored in the query's checkpoint, so a restarted query goes on after the last batch
it committed and reads each appended snapshot once. The rows are read as the schema Spark
analysed when the query started, the table's or the columns of one the user gave (files written
under older schemas are read by field id); columns added while the query runs are streamed once
it restarts, and a column dropped, renamed, retyped or made optional stops it with a
:class:`StreamingError` saying to restart it, which then streams with the new schema. Options
choosing a snapshot or a ref (``branch``, ``tag``, ``snapshot-id``, ``as-of-timestamp``) are
refused: a stream follows the main branch.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from icefloe.exceptions import IcebergError, ValidationError
from icefloe.expressions.base import AlwaysTrue, BooleanExpression
from icefloe.metadata import Snapshot
from icefloe.scan.tasks import FileScanTask
from icefloe.spark.source import (
    TasksPartition,
    _bool_option,
    _int_option,
    filter_option,
    fit_to_analysed,
    plan_read,
    read_partition,
    table_from_options,
    task_partitions,
)
from icefloe.spark.worker import planner_step
from icefloe.table import Table

__all__ = [
    "JAVA_OPTIONS",
    "IcefloeStreamReader",
    "StreamingError",
    "added_files",
    "with_java_options",
]

_ADDED = 1
_SKIPPED_ALWAYS = ("replace",)
#: Options of batch reads that choose a snapshot or a ref: a stream follows main's appends.
_NOT_STREAMED = ("branch", "tag", "ref", "snapshot-id", "as-of-timestamp")


#: Iceberg Java's names of this source's options (``SparkReadOptions``), taken as aliases.
JAVA_OPTIONS = {
    "streaming-max-files-per-micro-batch": "max-files-per-micro-batch",
    "streaming-skip-delete-snapshots": "skip-delete-snapshots",
    "streaming-skip-overwrite-snapshots": "skip-overwrite-snapshots",
}
#: Iceberg Java's stream options this source has no equivalent of.
_JAVA_REFUSED = ("streaming-max-rows-per-micro-batch",)


def with_java_options(options: Mapping[str, str]) -> dict[str, str]:
    """``options`` with Iceberg Java's names of stream options (:data:`JAVA_OPTIONS`) given
    icefloe's; both names with different values, or a Java option without an equivalent,
    raise :class:`ValidationError`."""
    out = dict(options)
    refused = [k for k in _JAVA_REFUSED if out.get(k)]
    if refused:
        raise ValidationError(
            f"option {refused[0]!r} is not supported by the icefloe stream source (it has no "
            "row limit): limit micro-batches by data files with 'max-files-per-micro-batch'"
        )
    for java, ours in JAVA_OPTIONS.items():
        value = out.pop(java, None)
        if value is None:
            continue
        if out.get(ours) not in (None, value):
            raise ValidationError(
                f"options {java!r} and {ours!r} name the same setting with different values "
                f"({value!r} and {out[ours]!r}): give one of them"
            )
        out[ours] = value
    return out


class StreamingError(ValidationError):
    """The stream met a snapshot it cannot stream (a delete or overwrite not to be skipped), or
    the table's schema changed while the query ran."""


def _chain(table: Table) -> list[Snapshot]:
    """The snapshots of the main branch, oldest first."""
    current = table.metadata.current_snapshot()
    if current is None:
        return []
    return list(reversed(table.metadata.ancestors_of(current.snapshot_id)))


def _added_paths(table: Table, snapshot: Snapshot) -> list[str]:
    """The paths of the data files ``snapshot`` added, sorted (what offsets count)."""
    import pyarrow.compute as pc

    entries = table.inspect.entries(snapshot.snapshot_id, with_readable_metrics=False)
    if entries.num_rows == 0:
        return []
    mine = pc.and_(
        pc.equal(entries.column("status"), _ADDED),
        pc.equal(entries.column("snapshot_id"), snapshot.snapshot_id),
    )
    data = entries.column("data_file").combine_chunks()
    paths: list[str] = pc.struct_field(data, "file_path").filter(mine).to_pylist()
    return sorted(paths)


def added_files(
    table: Table,
    snapshot: Snapshot,
    row_filter: BooleanExpression | None = None,
    paths: Collection[str] | None = None,
) -> list[FileScanTask]:
    """The data files ``snapshot`` added (or those of them in ``paths``), as scan tasks (path
    order; deletes as of it). With ``row_filter`` (bound to the stream's schema, so that it
    means the same columns in every snapshot) the files it rules out are pruned and the
    others carry it as their residual."""
    wanted = set(_added_paths(table, snapshot) if paths is None else paths)
    if not wanted:
        return []
    scan = table.scan(
        snapshot_id=snapshot.snapshot_id,
        row_filter=row_filter if row_filter is not None else AlwaysTrue(),
    )
    tasks = [t for t in scan.plan_files() if t.data_file.file_path in wanted]
    return sorted(tasks, key=lambda t: t.data_file.file_path)


def _count(snapshot: Snapshot, table: Table) -> int:
    """How many data files an append snapshot added (from its summary when it says)."""
    n = snapshot.summary.get_int("added-data-files") if snapshot.summary is not None else None
    return n if n is not None else len(_added_paths(table, snapshot))


class IcefloeStreamReader(DataSourceStreamReader):
    """Micro-batches of the files appended to a table (see the module docs)."""

    def __init__(self, options: Mapping[str, str], schema: Any = None) -> None:
        #: the error of a refused option, raised by the first call Spark makes: raised here,
        #: PySpark's stream runner would report its own ``UnboundLocalError`` first
        self._refused: IcebergError | None = None
        try:
            self._configure(options, schema)
        except IcebergError as exc:
            self._refused = exc

    def _check_options(self) -> None:
        if self._refused is not None:
            raise self._refused

    def _configure(self, options: Mapping[str, str], schema: Any) -> None:
        self.options = with_java_options(options)
        refused = [k for k in _NOT_STREAMED if self.options.get(k)]
        if refused:
            raise ValidationError(
                f"option {', '.join(refused)}: a stream reads the appends of the main branch "
                "(a branch's appends are streamed once main is fast-forwarded to them; "
                "'start-snapshot-id' or 'stream-from-timestamp' choose where it starts)"
            )
        starts = [k for k in ("start-snapshot-id", "stream-from-timestamp") if self.options.get(k)]
        if len(starts) > 1:
            raise ValidationError(
                "options 'start-snapshot-id' and 'stream-from-timestamp' both choose where the "
                "stream starts: give one"
            )
        #: the rows' schema Spark fixed when the query started, the table's or one the user
        #: gave (see :meth:`partitions`)
        self.analysed = schema
        self.limit = _int_option(self.options, "max-files-per-micro-batch")
        if self.limit is not None and self.limit <= 0:
            raise ValidationError(
                f"option 'max-files-per-micro-batch' must be positive, got {self.limit}"
            )
        self.skip = {
            "delete": _bool_option(self.options, "skip-delete-snapshots", False),
            "overwrite": _bool_option(self.options, "skip-overwrite-snapshots", False),
        }
        self.start: dict[str, int] | None = None
        #: snapshots committed before it are never streamed, also those committed after the
        #: query started (a timestamp in the future), as in Iceberg Java
        self.from_ts = _int_option(self.options, "stream-from-timestamp")
        #: the ``filter`` option, parsed and bound here so a bad one stops the query at start
        self.row_filter = filter_option(self.options)
        if self.row_filter is not None:
            plan_read(self.options, self.row_filter)[1].bound_filter()

    # -- offsets --------------------------------------------------------------------------------
    def initialOffset(self) -> dict[str, int]:
        with planner_step():
            self._check_options()
            table = table_from_options(self.options)
            start_id = _int_option(self.options, "start-snapshot-id")
            if start_id is not None:
                table.metadata.snapshot(start_id)  # raises NoSuchSnapshotError
                return {"snapshot_id": start_id, "files": -1}
            from_ts = _int_option(self.options, "stream-from-timestamp")
            for snap in _chain(table):
                if from_ts is None or snap.timestamp_ms >= from_ts:
                    return {"snapshot_id": snap.snapshot_id, "files": 0}
            current = table.metadata.current_snapshot()
            # nothing to read yet: start after the current snapshot (or at the first one)
            if current is None:
                return {"snapshot_id": -1, "files": -1}
            return {"snapshot_id": current.snapshot_id, "files": -1}

    def _streamed(self, snap: Snapshot) -> bool:
        """Whether ``snap``'s added files are streamed (raises for ones that may not pass)."""
        op = snap.operation or "append"
        if op == "append":
            return True
        if op in _SKIPPED_ALWAYS:
            return False
        if self.skip.get(op, False):
            return False
        raise StreamingError(
            f"cannot stream snapshot {snap.snapshot_id}: its operation is {op!r}, and the "
            f"icefloe source streams appends only (set option 'skip-{op}-snapshots' to skip "
            "such snapshots)"
        )

    def _after(self, table: Table, offset: Mapping[str, int]) -> list[tuple[Snapshot, int]]:
        """(snapshot, files already consumed of it) for the snapshots not fully consumed."""
        chain = _chain(table)
        sid, k = int(offset["snapshot_id"]), int(offset["files"])
        if sid == -1:
            return [(s, 0) for s in chain if self._after_start(s)]
        ids = [s.snapshot_id for s in chain]
        if sid not in ids:
            raise StreamingError(
                f"the stream's offset names snapshot {sid}, which is no longer an ancestor of "
                "the table's current snapshot (expired or rolled back)"
            )
        i = ids.index(sid)
        out = [] if k == -1 else [(chain[i], k)]
        return out + [(s, 0) for s in chain[i + 1 :] if self._after_start(s)]

    def _after_start(self, snap: Snapshot) -> bool:
        """Whether ``snap`` was committed at or after ``stream-from-timestamp`` (if given)."""
        return self.from_ts is None or snap.timestamp_ms >= self.from_ts

    def latestOffset(self) -> dict[str, int]:
        with planner_step():
            self._check_options()
            table = table_from_options(self.options)
            current = table.metadata.current_snapshot()
            start = self.start if self.start is not None else self.initialOffset()
            if current is None:
                return dict(start)
            if self.limit is None:
                for snap, _ in self._after(table, start):
                    self._streamed(snap)  # fail early on what cannot be streamed
                return {"snapshot_id": current.snapshot_id, "files": -1}
            budget = self.limit
            end = dict(start)
            for snap, done in self._after(table, start):
                if not self._streamed(snap):
                    end = {"snapshot_id": snap.snapshot_id, "files": -1}
                    continue
                left = _count(snap, table) - done
                if left <= budget:
                    budget -= left
                    end = {"snapshot_id": snap.snapshot_id, "files": -1}
                    continue
                if budget > 0:
                    end = {"snapshot_id": snap.snapshot_id, "files": done + budget}
                break
            return end

    # -- reading ---------------------------------------------------------------------------------
    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[TasksPartition]:
        with planner_step():
            self._check_options()
            table, scan, options, fields = plan_read(self.options, self.row_filter)
            # bound to the stream's schema: older snapshots are planned with its field ids
            bound = scan.bound_filter() if self.row_filter is not None else None
            # the rows as Spark analysed them: its columns only (added ones wait for a
            # restart); a column gone, renamed, retyped or made optional stops the query
            options, fields = fit_to_analysed(
                options,
                fields,
                self.analysed,
                _bool_option(self.options, "case-sensitive", True),
                when="while the query ran",
                advice="restart the query to stream with the new schema (it goes on from its "
                "checkpoint)",
                error=StreamingError,
            )
            tasks: list[FileScanTask] = []
            end_id, end_k = int(end["snapshot_id"]), int(end["files"])
            if start != end:
                for snap, done in self._after(table, start):
                    last = snap.snapshot_id == end_id
                    if self._streamed(snap):
                        paths = _added_paths(table, snap)
                        stop = end_k if last and end_k != -1 else len(paths)
                        if paths[done:stop]:
                            tasks += added_files(table, snap, bound, paths[done:stop])
                    if last:
                        break
            self.start = dict(end)
            return task_partitions(table, options, fields, tasks, scan.split_size())

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, TasksPartition):
            return iter(())
        return read_partition(partition)

    def commit(self, end: dict[str, int]) -> None:
        self._check_options()
        self.start = dict(end)
