"""Writes through the ``icefloe`` format: batch (``df.write``) and streaming (``writeStream``).

Executors receive Spark's Arrow batches and write Parquet data files with metrics
(:func:`icefloe.spark.writing.write_batches`: the table's current schema and default spec,
rows fanned out by partition, files rolled at the target size); each task returns its files as
its commit message. Spark's Python Data Source API gives sources no say in how rows are
distributed, so a task writes one file per partition it sees: cluster the DataFrame by the
partition columns first (``repartition``/``sortWithinPartitions``) for fewer files.

DataFrame columns are matched to the table's by name (:func:`match_columns`): ignoring case
unless the session's ``spark.sql.caseSensitive`` was true when the format was registered
(:func:`icefloe.spark.source.register`), or as write option ``case-sensitive`` says.

Their types are checked when the write is planned, on the driver, before any task runs (when
a streaming query starts, for the sink): the Arrow schema Spark sends the tasks goes through
the tasks' own conversion with no rows (:func:`icefloe.spark.writing.check_spark_types`). A
column that cannot be written as the table's type (Spark's ``timestamp`` into an Iceberg
``timestamp`` without zone, ``double`` into ``float``, ``string`` into ``long``...) or a
required column missing from the DataFrame raises
:class:`~icefloe.exceptions.ValidationError` naming the column and the Spark cast that makes
it fit. What depends on the values (decimals that would lose digits, nulls in required
columns) is checked by the tasks, which fail the job; nothing is committed.

The driver's ``commit`` adds all the files in one snapshot; a commit that loses a race with
another writer is retried on the new table state. Batch write options:

- mode ``append``: an ``append`` snapshot;
- mode ``overwrite``: every live row replaced; with option ``overwrite-filter`` (an icefloe
  filter string) only the rows matching it (copy-on-write, as ``Table.overwrite``); with
  option ``overwrite-mode`` = ``dynamic`` the partitions the new rows fall in are replaced
  (every row of an unpartitioned table; no rows written: nothing committed, as Java);
- ``branch``, and ``snapshot-property.<key>`` for the snapshot's summary;
- Iceberg Java's ``write-format``, ``target-file-size-bytes``, ``compression-codec`` and
  ``compression-level``: the table property each stands for, for this write.

The v3 row-lineage columns (``_row_id``, ``_last_updated_sequence_number``) are refused in the
DataFrame: a write gives its rows new ids (a merge's updates keep theirs another way).

If the job fails (a task raises and Spark gives up), ``abort`` deletes every file the job wrote
(unless a snapshot records the job: a commit whose outcome was unknown may have happened),
also those of failed task attempts, whose names carry the job's tag; nothing is committed.

Streaming: each micro-batch commits one snapshot whose summary records the query
(``icefloe.streaming.query``: option ``query-id``, by default the checkpoint location in one
spelling: absolute, scheme-qualified, no trailing slash, see :func:`checkpoint_location`),
Spark's id of the query its checkpoint holds (``icefloe.streaming.query-run``, the id in the
checkpoint's ``metadata`` file, the same across restarts and however the location is spelled:
the key Iceberg Java's sink uses) and its batch id (``icefloe.streaming.batch-id``). Before
committing, the sink looks for the newest snapshot of its query on the branch (one of its
Spark query id, else of its name, a recorded checkpoint location compared in that one
spelling, so snapshots of older versions count): a batch id already committed (a batch
replayed after a restart) is not committed again and its files are deleted; a snapshot of the
query's name but of another run (the checkpoint was deleted and the query started afresh at
the same location) is not this run's, whose batches all commit. Only the history tells
(as in Java's sink): a batch whose snapshot was expired before the restart commits again.
Output modes ``append`` (append snapshots) and ``complete`` (each batch replaces the table's
rows).
"""

from __future__ import annotations

import json
import os
import pickle
import posixpath
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from icefloe.exceptions import ValidationError
from icefloe.io import FileIO
from icefloe.metadata import MAIN_BRANCH, TableMetadata
from icefloe.spark.source import table_from_options
from icefloe.spark.worker import planner_step, profile_scope
from icefloe.spark.writing import (
    LINEAGE,
    check_spark_types,
    cleanup_job,
    commit_files,
    job_tag,
    write_batches,
)
from icefloe.table import Table
from icefloe.write import DataFile

__all__ = [
    "BATCH_ID",
    "QUERY",
    "QUERY_RUN",
    "FilesMessage",
    "IcefloeStreamWriter",
    "IcefloeWriter",
    "checkpoint_location",
    "checkpoint_query_id",
    "last_committed_batch",
    "match_columns",
]

#: Snapshot summary keys of streaming commits.
QUERY = "icefloe.streaming.query"
BATCH_ID = "icefloe.streaming.batch-id"
QUERY_RUN = "icefloe.streaming.query-run"
#: Snapshot summary key naming the write job a snapshot committed (``abort`` checks it).
JOB = "icefloe.spark.job"


class FilesMessage(WriterCommitMessage):
    """A task's written data files (pickled :class:`~icefloe.write.DataFile` objects)."""

    def __init__(self, files: list[DataFile]) -> None:
        self.payload = pickle.dumps(files, protocol=pickle.HIGHEST_PROTOCOL)

    def files(self) -> list[DataFile]:
        out: list[DataFile] = pickle.loads(self.payload)
        return out


def _files(messages: Sequence[Any]) -> list[DataFile]:
    out: list[DataFile] = []
    for m in messages:
        if isinstance(m, FilesMessage):
            out.extend(m.files())
    return out


def _delete(table: Table, files: Sequence[DataFile]) -> None:
    for f in files:
        table.io.delete_quietly(f.file_path)


def _job_committed(options: Mapping[str, str], tag: int) -> bool:
    """Whether a snapshot of the table records job ``tag``; true also when the table cannot be
    loaded (the outcome is then unknown, and files are kept for ``remove_orphan_files``)."""
    try:
        table = table_from_options(options)
    except Exception:
        return True
    return any(
        s.summary is not None and s.summary.get(JOB) == str(tag) for s in table.metadata.snapshots
    )


def match_columns(
    names: Sequence[str], table: Table, case_sensitive: bool = True, lineage: bool = False
) -> list[str]:
    """The table's names for DataFrame columns ``names`` (with ``lineage``, on v3, the
    row-lineage columns too: rows that keep their identity, as a merge's updates). Case-
    sensitively a name must be the table's exactly; otherwise (Spark's
    ``spark.sql.caseSensitive=false``) it may differ in case, an exact match winning over an
    ambiguous one, and two columns equal but for case are refused. A column named twice is
    refused."""
    metadata = table.metadata
    known = [f.name for f in metadata.current_schema().fields]
    if lineage and metadata.format_version >= 3:
        known += [c for c in LINEAGE if c not in known]
    exact = set(known)
    if case_sensitive:
        missing = [c for c in names if c not in exact]
        if missing:
            if missing[0] in LINEAGE:
                raise ValidationError(
                    f"DataFrame column {missing[0]!r} is a row-lineage column: a write assigns "
                    "row ids and sequence numbers itself (another table's would not be "
                    "unique in this one); drop it"
                )
            raise _not_in_schema(missing[0], table, known)
        twice = sorted({c for c in names if names.count(c) > 1})
        if twice:
            raise ValidationError(f"DataFrame column {twice[0]!r} appears more than once")
        return list(names)
    folded: dict[str, list[str]] = {}
    for k in known:
        folded.setdefault(k.lower(), []).append(k)
    seen: dict[str, str] = {}
    out: list[str] = []
    for c in names:
        key = c.lower()
        if key in seen:
            raise ValidationError(
                f"DataFrame columns {seen[key]!r} and {c!r} differ only in case, and Spark "
                "compares column names case-insensitively (spark.sql.caseSensitive=false): "
                "rename one of them"
            )
        seen[key] = c
        found = folded.get(key, [])
        if c in exact:
            out.append(c)
        elif len(found) == 1:
            out.append(found[0])
        elif not found:
            if c in LINEAGE or key in {x.lower() for x in LINEAGE}:
                raise ValidationError(
                    f"DataFrame column {c!r} is a row-lineage column: a write assigns row ids "
                    "and sequence numbers itself (another table's would not be unique in this "
                    "one); drop it"
                )
            raise _not_in_schema(c, table, known)
        else:
            raise ValidationError(
                f"DataFrame column {c!r} matches columns {sorted(found)} of {table.name} when "
                "compared case-insensitively (spark.sql.caseSensitive=false)"
            )
    return out


def _not_in_schema(column: str, table: Table, known: Sequence[str]) -> ValidationError:
    return ValidationError(
        f"DataFrame column {column!r} is not in the schema of {table.name} "
        f"(columns: {sorted(known)})"
    )


def _snapshot_properties(options: Mapping[str, str]) -> dict[str, str]:
    prefix = "snapshot-property."
    return {k[len(prefix) :]: v for k, v in options.items() if k.startswith(prefix)}


#: Iceberg Java's Spark write options that stand for a table property during one write.
_JAVA_WRITE_OPTIONS = {
    "write-format": "write.format.default",
    "target-file-size-bytes": "write.target-file-size-bytes",
}


def write_option_properties(metadata: TableMetadata, options: Mapping[str, str]) -> dict[str, str]:
    """The table properties Iceberg Java's write options (``write-format``,
    ``target-file-size-bytes``, ``compression-codec``, ``compression-level``) set for one
    write, as Java's ``SparkWriteConf`` lets them override the table's."""
    out = {prop: options[opt] for opt, prop in _JAVA_WRITE_OPTIONS.items() if options.get(opt)}
    fmt = (
        out.get("write.format.default")
        or metadata.properties.get("write.format.default")
        or "parquet"
    ).lower()
    if options.get("compression-codec"):
        out[f"write.{fmt}.compression-codec"] = options["compression-codec"]
    if options.get("compression-level"):
        if fmt == "orc":
            raise ValidationError("option compression-level does not apply to ORC files")
        out[f"write.{fmt}.compression-level"] = options["compression-level"]
    return out


class _FileWriter:
    """What executors need to write files of the table (picklable)."""

    def __init__(self, options: Mapping[str, str], schema: Any, case_sensitive: bool) -> None:
        self.options = dict(options)
        table = table_from_options(self.options)
        given = list(schema.fieldNames())
        #: the table's names of the DataFrame's columns (batches are renamed when they differ)
        self.columns: list[str] = match_columns(given, table, case_sensitive)
        # the column types are checked here, before any task runs, by the tasks' own rules
        check_spark_types(schema, self.columns, table.metadata, table.name)
        self.rename = self.columns != given
        self.metadata: TableMetadata = table.metadata
        self.metadata_location = table.metadata_location
        #: the metadata the files are written by: the table's, with the write options' properties
        self.file_metadata = self.metadata
        overrides = write_option_properties(self.metadata, self.options)
        if overrides:
            from icefloe.metadata.property_checks import check_properties

            check_properties(overrides, self.metadata.properties)  # refused before any task
            props = {**self.metadata.properties, **overrides}
            self.file_metadata = replace(self.metadata, properties=props)
        self.file_io = table.io
        self.tag = job_tag()
        self.branch = self.options.get("branch") or MAIN_BRANCH

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FilesMessage:
        if self.rename:
            iterator = (b.rename_columns(self.columns) for b in iterator)
        with profile_scope("write"):
            files = write_batches(
                self.file_metadata, self.file_io, self.columns, self.tag, iterator
            )
            return FilesMessage(files)


class IcefloeWriter(_FileWriter, DataSourceArrowWriter):
    """Batch writer: files on executors, one snapshot committed by the driver.

    The commit starts from the table as the job saw it when it was planned: a commit by
    someone else since then makes the first attempt fail and the snapshot is rebuilt on the
    new state, with the operation's checks (an overwrite's conflicting concurrent appends)
    made against what changed since the job started."""

    def __init__(
        self, options: Mapping[str, str], schema: Any, overwrite: bool, case_sensitive: bool = True
    ) -> None:
        super().__init__(options, schema, case_sensitive)
        self.overwrite = overwrite
        self.overwrite_filter = self.options.get("overwrite-filter") or None
        mode = (self.options.get("overwrite-mode") or "static").lower()
        if mode not in ("static", "dynamic"):
            raise ValidationError(f"option 'overwrite-mode' must be static or dynamic: {mode!r}")
        self.dynamic = mode == "dynamic"
        if not overwrite and (self.overwrite_filter or self.dynamic):
            raise ValidationError("options overwrite-filter and overwrite-mode need mode overwrite")
        if self.overwrite_filter and self.dynamic:
            raise ValidationError("choose one of overwrite-filter and overwrite-mode=dynamic")
        if self.overwrite_filter:  # a bad filter is refused before the job runs
            from icefloe.write.matching import bind_filter

            bind_filter(self.metadata.current_schema(), self.overwrite_filter)

    def _base(self) -> Table:
        """The table at the metadata the job was planned with (for the commit's checks)."""
        table = table_from_options(self.options)
        return Table(
            table.identifier, self.metadata, self.metadata_location, table.io, table.catalog
        )

    def commit(self, messages: list[Any]) -> None:
        from icefloe.table.operations import dynamic_partition_overwrite, overwrite

        with planner_step():
            table = self._base()
            files = _files(messages)
            props = _snapshot_properties(self.options)
            props[JOB] = str(self.tag)
            if self.dynamic and not files:
                return  # nothing written, no partition to replace (Java skips the commit too)
            # an unpartitioned table is one partition: every row replaced, as Java's
            # replacePartitions does
            dynamic = self.dynamic and not table.metadata.spec().is_unpartitioned
            if self.overwrite and (self.overwrite_filter or dynamic):
                tx = table.transaction()
                try:
                    with tx:
                        if dynamic:
                            dynamic_partition_overwrite(
                                tx,
                                None,
                                branch=self.branch,
                                snapshot_properties=props,
                                written=files,
                            )
                        else:
                            overwrite(
                                tx,
                                None,
                                self.overwrite_filter,
                                branch=self.branch,
                                snapshot_properties=props,
                                written=files,
                            )
                except BaseException:
                    if not tx.may_have_committed:  # else the new metadata may reference them
                        _delete(table, files)
                    raise
                return
            commit_files(
                table,
                files,
                branch=self.branch,
                remove_all=self.overwrite,
                snapshot_properties=props,
            )

    def abort(self, messages: list[Any]) -> None:
        """Spark calls this when the job or ``commit`` failed: the files are deleted unless a
        snapshot recorded this job (a commit whose outcome was unknown may have happened)."""
        with planner_step():
            if _job_committed(self.options, self.tag):
                return
            table = table_from_options(self.options)
            _delete(table, _files(messages))
            cleanup_job(table, self.tag)


def checkpoint_location(location: str) -> str:
    """A checkpoint location in one spelling: absolute, scheme-qualified, no trailing slash
    (``/ck``, ``/ck/``, ``file:/ck``, ``file:///ck`` and, run from ``/``, ``ck`` all give
    ``file:///ck``), so a query restarted with its checkpoint named another way is the same
    query."""
    text = location.strip()
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if len(scheme) < 2:  # no scheme (a one-letter one is a Windows drive): a local path
        path = os.path.abspath(text)
        return "file://" + path.replace(os.sep, "/") if path.startswith("/") else "file:///" + path
    path = posixpath.normpath(parts.path) if parts.path else ""
    if path in (".", "/"):
        path = "/" if parts.path.startswith("/") else ""
    if path.startswith("//"):  # normpath keeps a leading '//'
        path = "/" + path.lstrip("/")
    netloc = parts.netloc
    if scheme == "file" and netloc.lower() in ("", "localhost"):
        netloc = ""
    out = f"{scheme}://{netloc}{path}"
    if parts.query:
        out += f"?{parts.query}"
    return out.rstrip("/") if path != "/" else out


def _same_location(recorded: str, location: str) -> bool:
    try:
        return checkpoint_location(recorded) == location
    except ValueError:  # not a location (urlsplit refuses it)
        return False


def last_committed_batch(
    table: Table,
    query: str,
    branch: str = MAIN_BRANCH,
    run: str | None = None,
    location: str | None = None,
) -> int | None:
    """The batch id of the newest snapshot on ``branch`` committed by a streaming query: one
    recording run ``run`` (Spark's id of the query its checkpoint holds, which stays the same
    across restarts: the key Iceberg Java's sink uses), or recording ``query``, or, with
    ``location`` (the query's :func:`checkpoint_location`), a query named by a spelling of that
    checkpoint location (as older versions recorded it). A snapshot of the query's name but of
    another run gives None: the checkpoint was deleted and started afresh at the same
    location."""
    md = table.metadata
    ref = md.refs.get(branch)
    if ref is None:
        return None
    for snap in md.ancestors_of(ref.snapshot_id):
        summary = snap.summary
        if summary is None:
            continue
        other = summary.get(QUERY_RUN)
        if run is not None and other == run:
            return summary.get_int(BATCH_ID)
        name = summary.get(QUERY)
        if name is None:
            continue
        if name == query or (location is not None and _same_location(name, location)):
            if run is not None and other is not None and other != run:
                return None
            return summary.get_int(BATCH_ID)
    return None


def checkpoint_query_id(checkpoint: str | None, io: FileIO) -> str | None:
    """Spark's id of the query a checkpoint belongs to (the ``id`` of its ``metadata`` file,
    written when the query first starts), None when it cannot be read."""
    if not checkpoint:
        return None
    try:
        first = io.new_input(f"{checkpoint.rstrip('/')}/metadata").read().splitlines()[0]
        value = json.loads(first).get("id")
    except Exception:  # another file system, no access: the location alone names the query
        return None
    return value if isinstance(value, str) and value else None


class IcefloeStreamWriter(_FileWriter, DataSourceStreamArrowWriter):
    """Streaming sink: one snapshot per micro-batch, each batch id committed once."""

    def __init__(
        self, options: Mapping[str, str], schema: Any, overwrite: bool, case_sensitive: bool = True
    ) -> None:
        super().__init__(options, schema, case_sensitive)
        self.complete = overwrite
        raw = self.options.get("checkpointlocation") or None
        #: the checkpoint location in one spelling (None without one)
        self.location = checkpoint_location(raw) if raw else None
        query = self.options.get("query-id") or self.location
        if not query:
            raise ValidationError(
                "the icefloe streaming sink needs option 'checkpointLocation' (or 'query-id') "
                "to commit each micro-batch exactly once"
            )
        self.query = query
        #: the location snapshots of older versions may name in another spelling
        self._legacy_location = None if self.options.get("query-id") else self.location
        self._run: str | None = None

    def _query_run(self, table: Table) -> str | None:
        """Spark's id of this run of the query (its checkpoint's), read once."""
        if self._run is None:
            raw = self.options.get("checkpointlocation")
            self._run = (
                checkpoint_query_id(self.location, table.io)
                or checkpoint_query_id(raw, table.io)
                or ""
            )
        return self._run or None

    def _done(self, table: Table) -> int | None:
        """The id of the newest batch of this query committed on the branch."""
        run = self._query_run(table)
        return last_committed_batch(table, self.query, self.branch, run, self._legacy_location)

    def commit(self, messages: list[Any], batchId: int) -> None:
        with planner_step():
            table = table_from_options(self.options)
            files = _files(messages)
            run = self._query_run(table)
            done = self._done(table)
            if done is not None and done >= batchId:
                _delete(table, files)  # a replayed batch: its rows are in the table already
                return
            props = _snapshot_properties(self.options)
            props.update({QUERY: self.query, BATCH_ID: str(batchId)})
            if run is not None:
                props[QUERY_RUN] = run

            commit_files(
                table,
                files,
                branch=self.branch,
                remove_all=self.complete,
                snapshot_properties=props,
            )

    def abort(self, messages: list[Any], batchId: int) -> None:
        """Deletes the batch's files unless the batch was committed (or the table cannot be
        loaded to tell)."""
        with planner_step():
            try:
                table = table_from_options(self.options)
            except Exception:
                return  # outcome unknown: keep the files for remove_orphan_files
            done = self._done(table)
            if done is not None and done >= batchId:
                return
            _delete(table, _files(messages))
