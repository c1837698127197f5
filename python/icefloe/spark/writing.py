"""Distributed writes: executors write Parquet data files, the driver commits one snapshot.

:func:`write` clusters the DataFrame's rows by the table's partition values (each partition
field computed by the transform UDFs of :mod:`icefloe.spark.functions`, then
``repartition`` + ``sortWithinPartitions`` on them), so each partition's rows land in few
files. Each Spark task converts its Arrow batches to the table schema
(:func:`icefloe.write.input.to_table_schema`: validation and safe casts), writes them with
:func:`icefloe.write.write_parquet_files` (partition fan-out, rolling files, metrics) and returns
one row per data file (the pickled :class:`~icefloe.write.DataFile`). The driver collects
those rows and commits them in one snapshot through
:class:`~icefloe.table.producer.SnapshotProducer` (a lost race is retried by rebuilding the
snapshot on the new table state).

A failed job commits nothing: a failing task deletes the files it wrote, and the driver then
deletes every file the job's tasks wrote (their names carry the job's tag). A failed commit
deletes the job's files too, but only when it is known not to have happened: after an unknown
outcome (``CommitStateUnknownError``, or an interrupt during the catalog swap) they are kept.

``mode="overwrite"`` without a filter replaces every live file of the branch; with
``overwrite_filter`` it removes the rows matching the filter (copy-on-write: files whose rows
all match are dropped, other files that may contain matches are rewritten without them on the
executors) and adds the new rows, all in the same snapshot.
"""

from __future__ import annotations

import pickle
import random
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_schema import schema_to_arrow
from icefloe.exceptions import ValidationError
from icefloe.expressions.arrow import selection_mask
from icefloe.expressions.base import AlwaysTrue, BooleanExpression
from icefloe.expressions.binding import bind
from icefloe.io import FileIO
from icefloe.metadata import MAIN_BRANCH, TableMetadata
from icefloe.partitioning import PartitionSpec
from icefloe.scan.tasks import (
    LAST_UPDATED_SEQUENCE_NUMBER,
    ROW_ID,
    FileScanTask,
    ReadOptions,
    replace_task,
)
from icefloe.schema import Schema
from icefloe.spark import functions as ifn
from icefloe.spark.errors import executor_errors, icefloe_errors
from icefloe.spark.reading import iter_tasks, pickled_tasks, resolve_table, task_frame
from icefloe.spark.schema import spark_type
from icefloe.spark.spark_input import from_spark
from icefloe.spark.worker import ensure_worker_python, prepare_worker, profile_scope
from icefloe.table import Table
from icefloe.table.row_delta import (
    concurrent_data_validator,
    concurrent_deletes_validator,
    delete_entries_predicate,
)
from icefloe.table_paths import data_location
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)
from icefloe.types import NestedField
from icefloe.write import DataFile
from icefloe.write.coerce import coerce_column
from icefloe.write.input import to_table_schema
from icefloe.write.matching import proven_by_metrics
from icefloe.write.writer import WriteOptions, write_parquet_files

__all__ = [
    "check_spark_types",
    "cleanup_job",
    "cluster",
    "collect_files",
    "commit_files",
    "conform",
    "frame_columns",
    "job_tag",
    "write",
    "write_batches",
    "write_files",
]

#: The v3 row-lineage columns a data file may carry (spec "Row Lineage").
LINEAGE = (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER)
#: Bytes of Arrow data a task gathers before writing them (files roll at the target size).
FLUSH_BYTES = 256 * 1024 * 1024
_KEY = "__icefloe_key{}"


def _column(schema: Schema, source_id: int) -> Any:
    from pyspark.sql import functions as F

    name = schema.find_column_name(source_id)
    if name is None:
        raise ValidationError(f"partition source field {source_id} is not in the schema")
    parts = [f.name for f in (*schema.ancestors(source_id), schema.find_field(source_id))]
    return F.col(".".join(f"`{p.replace('`', '``')}`" for p in parts))


def partition_columns(schema: Schema, spec: PartitionSpec) -> list[Any]:
    """Spark columns computing ``spec``'s partition values (void fields omitted)."""
    keys = []
    for pf in spec.fields:
        col = _column(schema, pf.source_id)
        t = pf.transform
        if isinstance(t, IdentityTransform):
            keys.append(col)
        elif isinstance(t, BucketTransform):
            keys.append(ifn.bucket(t.num_buckets, col))
        elif isinstance(t, TruncateTransform):
            source = spark_type(schema.find_field(pf.source_id).field_type)
            keys.append(ifn.truncate(t.width, col, source))
        elif isinstance(t, YearTransform):
            keys.append(ifn.years(col))
        elif isinstance(t, MonthTransform):
            keys.append(ifn.months(col))
        elif isinstance(t, DayTransform):
            keys.append(ifn.days(col))
        elif isinstance(t, HourTransform):
            keys.append(ifn.hours(col))
    return keys


def cluster(df: Any, table: Table | str | Sequence[str], catalog: Any = None) -> Any:
    """``df`` with its rows clustered by ``table``'s partition values (hash-partitioned by
    them and sorted within each Spark partition), so that a write makes few files per
    partition. Unpartitioned tables: ``df`` as is."""
    t = resolve_table(table, catalog)
    ensure_worker_python(df.sparkSession)
    schema = t.metadata.current_schema()
    keys = partition_columns(schema, t.metadata.spec())
    if not keys:
        return df
    names = [_KEY.format(i) for i in range(len(keys))]
    named = [k.alias(n) for k, n in zip(keys, names, strict=True)]
    out = df.select("*", *named).repartition(*names).sortWithinPartitions(*names)
    return out.drop(*names)


def job_tag() -> int:
    return random.randrange(10**8, 10**9)


def _task_id(tag: int) -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return tag * 100_000 + (ctx.partitionId() % 100_000 if ctx is not None else 0)


def _file_rows(files: list[DataFile]) -> pa.RecordBatch:
    payload = [pickle.dumps(f, protocol=pickle.HIGHEST_PROTOCOL) for f in files]
    return pa.RecordBatch.from_arrays([pa.array(payload, pa.binary())], names=["file"])


def _writer(
    metadata: TableMetadata,
    file_io: FileIO,
    columns: list[str],
    tag: int,
    flush_bytes: int,
) -> Any:
    """The function ``mapInArrow`` runs: rows in, one row per written data file out."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        with profile_scope("write"):
            files = write_batches(metadata, file_io, columns, tag, batches, flush_bytes)
        yield _file_rows(files)

    return run


def write_batches(
    metadata: TableMetadata,
    file_io: FileIO,
    columns: list[str],
    tag: int,
    batches: Iterable[pa.RecordBatch],
    flush_bytes: int = FLUSH_BYTES,
) -> list[DataFile]:
    """On executors: Spark's Arrow batches (``columns``) written as Parquet data files of the
    table (current schema, default spec; metrics collected), not committed. The files are
    named for the job's ``tag`` and the task; on failure the task's files are deleted."""
    schema = metadata.current_schema()
    spec = metadata.spec()
    lineage = [c for c in columns if c in LINEAGE]
    data_columns = [c for c in columns if c not in LINEAGE]
    prepare_worker()
    with executor_errors():
        io = file_io
        opts = WriteOptions(task_id=_task_id(tag), spread=False)
        written: list[DataFile] = []

        def flush(buf: list[pa.RecordBatch]) -> None:
            batch = pa.Table.from_batches(buf)
            data = conform(batch, schema, data_columns, metadata.format_version)
            for name in lineage:
                data = data.append_column(name, batch.column(name).cast(pa.int64()))
            written.extend(
                write_parquet_files(metadata, io, data, schema=schema, spec=spec, options=opts)
            )

        try:
            buf: list[pa.RecordBatch] = []
            size = 0
            for batch in batches:
                if batch.num_rows:
                    buf.append(batch)
                    size += batch.nbytes
                if size >= flush_bytes:
                    flush(buf)
                    buf, size = [], 0
            if buf:
                flush(buf)
        except BaseException:
            for f in written:
                io.delete_quietly(f.file_path)
            raise
        return written


def conform(
    rows: pa.Table, schema: Schema, columns: Sequence[str], format_version: int
) -> pa.Table:
    """Spark's Arrow rows of data ``columns`` (named as the table's) as the table writes them:
    the Iceberg forms Spark has no type for restored (:func:`from_spark`), then the write rules
    (:func:`~icefloe.write.input.to_table_schema`: only safe casts, values checked)."""
    return to_table_schema(from_spark(rows.select(list(columns)), schema), schema, format_version)


def check_spark_types(
    spark_schema: Any, columns: Sequence[str], metadata: TableMetadata, table_name: str
) -> None:
    """On the driver, before any task runs: refuses a DataFrame of ``spark_schema`` (its
    columns named ``columns`` in the table) whose types cannot be written to the table. The
    Arrow schema Spark sends the tasks is put through the tasks' own conversion
    (:func:`conform`) with no rows, so the type rules are the tasks' and only they apply here;
    what depends on the values (decimals that lose digits, nulls in required columns, ...) is
    left to the tasks. The error names the DataFrame column and suggests Spark's cast. A
    column type Spark's Arrow conversion here does not know leaves the check to the tasks."""
    from pyspark.sql.pandas.types import to_arrow_type

    given: list[tuple[Any, str, pa.DataType]] = []
    for sf, name in zip(spark_schema.fields, columns, strict=True):
        if name in LINEAGE:
            continue
        try:
            given.append((sf, name, to_arrow_type(sf.dataType, timestamp_utc=True)))
        except Exception:  # Spark's own error types: not a verdict on the write
            return
    schema = metadata.current_schema()
    version = metadata.format_version
    empty = pa.schema([pa.field(name, at) for _, name, at in given]).empty_table()
    try:
        conform(empty, schema, empty.column_names, version)
    except ValidationError as e:
        target = schema_to_arrow(schema)
        for sf, name, at in given:  # the DataFrame column to blame, when one is
            one = from_spark(pa.schema([pa.field(name, at)]).empty_table(), schema)
            field = next(f for f in schema.fields if f.name == name)
            try:
                coerce_column(one.column(0), field, target.field(name))
            except ValidationError:
                raise _spark_type_error(sf, field, table_name) from None
        raise ValidationError(f"cannot write the DataFrame to {table_name}: {e}") from None


def _spark_type_error(sf: Any, field: NestedField, table_name: str) -> ValidationError:
    """The error for DataFrame column ``sf`` (a Spark field) that cannot be written as
    ``field``, suggesting the cast to the table's Spark type."""
    from pyspark.sql import types as T

    target = spark_type(field.field_type).simpleString()
    why = ""
    if isinstance(sf.dataType, T.TimestampType) and target == "timestamp_ntz":
        why = (
            ": Spark's timestamp is an instant, the column holds date-times without a zone "
            "(a cast to timestamp_ntz takes the instant's date-time in the session time zone)"
        )
    elif isinstance(sf.dataType, T.TimestampNTZType) and target == "timestamp":
        why = (
            ": the column holds instants, Spark's timestamp_ntz date-times without a zone (a "
            "cast to timestamp takes them as date-times of the session time zone)"
        )
    # a nested Iceberg type's text (field ids, optional) says less than Spark's
    table_type = f"{field.field_type}, " if field.field_type.is_primitive else ""
    return ValidationError(
        f"DataFrame column {sf.name!r} has Spark type {sf.dataType.simpleString()}, which "
        f"cannot be written to column {field.name!r} of {table_name} ({table_type}Spark type "
        f"{target}){why}; cast it to the table's type first, e.g. "
        f'df.withColumn("{sf.name}", col("{sf.name}").cast("{target}"))'
    )


#: After a failed job, how long its cleanup waits for files that tasks Spark is still
#: cancelling finish writing (a quiet listing of this long ends the wait early).
CLEANUP_SETTLE_S = 3.0
_CLEANUP_POLL_S = 0.5


def cleanup_job(table: Table, tag: int, settle_s: float = CLEANUP_SETTLE_S) -> None:
    """Deletes the files of a failed job (names carry ``-<tag><5-digit task>-``, after the
    last hashed directory's digits and a dash in an object-storage layout without partition
    paths). Tasks of the job that Spark is still cancelling may finish a file after the first
    listing, so the data directory is listed again until a listing finds none of the job's
    files twice in a row (half a second apart), for at most ``settle_s`` seconds."""
    pattern = re.compile(rf"(^|/)([01]{{8}}-)?\d+-{tag}\d{{5}}-[^/]*$")
    base = data_location(table.metadata.location, table.metadata.properties)
    deadline = time.monotonic() + settle_s
    quiet = 0  # listings in a row that found none of the job's files
    while True:
        found = 0
        for info in table.io.list_prefix(base):
            if pattern.search(info.location):
                found += 1
                table.io.delete_quietly(info.location)
        quiet = quiet + 1 if found == 0 else 0
        if quiet >= 2 or time.monotonic() >= deadline:
            return
        time.sleep(_CLEANUP_POLL_S)


def collect_files(out: Any, table: Table, tag: int) -> list[DataFile]:
    """Runs the job producing data-file rows; on failure deletes the job's files and raises
    the executor's icefloe error."""
    try:
        with icefloe_errors():
            rows = out.collect()
    except BaseException:
        cleanup_job(table, tag)
        raise
    return [pickle.loads(r[0]) for r in rows]


def write_files(
    df: Any, table: Table, tag: int, flush_bytes: int = FLUSH_BYTES, lineage: bool = False
) -> list[DataFile]:
    """Writes ``df`` as data files of ``table`` (current schema, default spec) on the
    executors; returns the files, not yet committed.

    With ``lineage``, on v3 tables ``df`` may carry the row-lineage columns ``_row_id`` and
    ``_last_updated_sequence_number`` (rows that keep their identity, e.g. merge updates):
    they are written into the files with their reserved field ids, and where null the reader
    inherits them from the file's ``first_row_id`` and sequence number. Otherwise they are
    refused (rows written anew get new ids)."""
    metadata = table.metadata
    columns = frame_columns(df, table, lineage=lineage)
    if columns != list(df.columns):
        df = df.toDF(*columns)  # the table's names (they differed in case only)
    ensure_worker_python(df.sparkSession)
    df = cluster(df, table)
    fn = _writer(metadata, table.io, columns, tag, flush_bytes)
    return collect_files(df.mapInArrow(fn, "file binary"), table, tag)


def frame_columns(df: Any, table: Table, lineage: bool = False) -> list[str]:
    """The table's names of DataFrame ``df``'s columns (:func:`match_columns` under the
    session's ``spark.sql.caseSensitive``), their types checked on the driver before any task
    runs (:func:`check_spark_types`)."""
    from icefloe.spark.format_write import match_columns
    from icefloe.spark.source import CASE_SENSITIVE

    conf = str(df.sparkSession.conf.get(CASE_SENSITIVE, "false")).strip().lower()
    columns = match_columns(list(df.columns), table, case_sensitive=conf == "true", lineage=lineage)
    check_spark_types(df.schema, columns, table.metadata, table.name)
    return columns


def _rewriter(
    metadata: TableMetadata,
    file_io: FileIO,
    options: ReadOptions,
    delete_filter: BooleanExpression,
    tag: int,
    payloads: list[bytes],
) -> Any:
    """``mapInArrow`` function rewriting data files without the rows matching a filter
    (rows where it is null are kept, as SQL's ``DELETE ... WHERE`` keeps them)."""
    schema = metadata.current_schema()
    spec = metadata.spec()

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from icefloe.read import DeleteCache, read_task

        prepare_worker()
        with executor_errors():
            io = file_io
            opts = WriteOptions(task_id=_task_id(tag), spread=False)
            expr = delete_filter
            written: list[DataFile] = []
            try:
                for task in iter_tasks(batches, payloads):
                    parts = list(read_task(io, task, options, DeleteCache()))
                    if not parts:
                        continue
                    rows = pa.Table.from_batches(parts)
                    matched = selection_mask(expr, rows)
                    kept = rows.filter(pc.invert(matched))
                    if kept.num_rows:
                        data = to_table_schema(kept, schema, metadata.format_version)
                        written.extend(
                            write_parquet_files(
                                metadata, io, data, schema=schema, spec=spec, options=opts
                            )
                        )
            except BaseException:
                for f in written:
                    io.delete_quietly(f.file_path)
                raise
            yield _file_rows(written)

    return run


def _overwrite_plan(
    table: Table, branch: str, overwrite_filter: BooleanExpression | str
) -> tuple[list[str], list[FileScanTask], BooleanExpression]:
    """Data files to drop whole, tasks of files to rewrite, and the bound filter (the DVs of
    both go with them: :func:`_dv_entries`)."""
    scan = table.scan(row_filter=overwrite_filter, ref=branch)
    # rewritten files keep their rows that do not match: every delete of a file must apply to
    # them, also those whose metrics cannot match the filter
    scan._prune_deletes_by_metrics = False
    scan._keep_metrics = True
    bound = bind(table.schema(), scan.row_filter, True)
    drop: list[str] = []
    rewrite: list[FileScanTask] = []
    tasks = scan.plan_files()
    # files whose partition (residual true) or column metrics prove every row matches
    proven = proven_by_metrics([pb.entries for pb in scan.plan().batches], bound) if tasks else ()
    for task in tasks:
        if isinstance(task.residual, AlwaysTrue) or task.data_file.file_path in proven:
            drop.append(task.data_file.file_path)
        else:
            rewrite.append(replace_task(task, residual=AlwaysTrue()))
    return drop, rewrite, bound


def _dv_entries(table: Table, branch: str, data_files: set[str]) -> list[tuple[str, int | None]]:
    """``(puffin path, content_offset)`` of the deletion vectors of ``data_files``: one Puffin
    file holds the DVs of many data files, so a DV is removed by its entry, never by path."""
    out: set[tuple[str, int | None]] = set()
    for task in table.scan(ref=branch).plan_files():
        if task.data_file.file_path in data_files:
            out.update(
                (d.file_path, d.content_offset) for d in task.delete_files if d.is_deletion_vector
            )
    return sorted(out, key=lambda e: (e[0], -1 if e[1] is None else e[1]))


def commit_files(
    table: Table,
    files: Sequence[DataFile],
    *,
    branch: str = MAIN_BRANCH,
    remove: Sequence[str] = (),
    remove_deletes: Sequence[tuple[str, int | None]] = (),
    rewritten: Sequence[FileScanTask] = (),
    remove_all: bool = False,
    delete_files: Sequence[DataFile] = (),
    snapshot_properties: dict[str, str] | None = None,
    conflict_filter: BooleanExpression | None = None,
) -> Table:
    """Commits added data (and delete) files and removed files in one snapshot (retried on
    lost races); on failure the added files are deleted unless the outcome is unknown. With
    a bound ``conflict_filter`` (an overwrite's), a data file another commit added since
    ``table``'s snapshot that may hold rows it matches fails the commit (serializable
    isolation): those rows would be kept, not replaced."""
    from icefloe.table.producer import SnapshotProducer

    added = [f.file_path for f in (*files, *delete_files)]
    tx = table.transaction()
    try:
        with tx:
            p = SnapshotProducer(tx, branch=branch, snapshot_properties=snapshot_properties)
            p.owns_files(added)
            if remove_all:
                p.remove_files_where(lambda batch: pa.array([True] * batch.num_rows))
            if remove:
                p.remove_files(remove)
            if remove_deletes:
                p.remove_files_where(delete_entries_predicate(remove_deletes))
            if conflict_filter is not None:
                p.validate(
                    concurrent_data_validator(
                        table.io,
                        branch,
                        rewritten,
                        conflict_filter,
                        table.schema(),
                        table.metadata.properties,
                    )
                )
            elif rewritten:
                # rows kept by a rewrite must not lose deletes a concurrent commit added
                p.validate(
                    concurrent_deletes_validator(table.io, branch, rewritten, table.schema())
                )
            if files:
                p.add_data_files(files)
            if delete_files:
                p.add_delete_files(delete_files)
            try:
                p.commit()
            except BaseException:
                p.abort()
                raise
    except BaseException:
        if not tx.may_have_committed:  # else the new metadata may reference them: keep
            for path in added:
                table.io.delete_quietly(path)
        raise
    return table


def write(
    df: Any,
    table: Table | str | Sequence[str],
    mode: str = "append",
    overwrite_filter: BooleanExpression | str | None = None,
    branch: str = MAIN_BRANCH,
    snapshot_properties: dict[str, str] | None = None,
    catalog: Any = None,
) -> Table:
    """Writes the rows of Spark DataFrame ``df`` into ``table`` in one snapshot; returns the
    table with its new metadata.

    ``mode`` is ``"append"`` or ``"overwrite"`` (every live row replaced, or with
    ``overwrite_filter`` only the rows matching it). Columns are matched to the table's
    current schema by name; missing optional columns are written as nulls (or their write
    default), types are cast when the cast is safe.
    """
    if mode not in ("append", "overwrite"):
        raise ValidationError(f"mode must be 'append' or 'overwrite', got {mode!r}")
    if overwrite_filter is not None and mode != "overwrite":
        raise ValidationError("overwrite_filter needs mode='overwrite'")
    t = resolve_table(table, catalog)
    tag = job_tag()
    files = write_files(df, t, tag)
    remove: list[str] = []
    remove_deletes: list[tuple[str, int | None]] = []
    rewrite: list[FileScanTask] = []
    bound: BooleanExpression | None = None
    if mode == "overwrite" and overwrite_filter is not None:
        try:
            # planned on the table as it is after the job: rows another writer added while it
            # ran are replaced too; rows added after this, the commit refuses (conflict_filter)
            t = t.refresh()
            drop, rewrite, bound = _overwrite_plan(t, branch, overwrite_filter)
            remove = list(drop)
            if rewrite:
                files = files + _rewrite_files(df.sparkSession, t, rewrite, bound, tag)
                remove += [task.data_file.file_path for task in rewrite]
            if remove:
                remove_deletes = _dv_entries(t, branch, set(remove))
        except BaseException:
            for f in files:
                t.io.delete_quietly(f.file_path)
            raise
    return commit_files(
        t,
        files,
        branch=branch,
        remove=sorted(set(remove)),
        remove_deletes=remove_deletes,
        rewritten=rewrite,
        remove_all=mode == "overwrite" and overwrite_filter is None,
        snapshot_properties=snapshot_properties,
        conflict_filter=bound,
    )


def _rewrite_files(
    spark: Any, table: Table, tasks: list[FileScanTask], bound: BooleanExpression, tag: int
) -> list[DataFile]:
    options = table.scan().read_options()
    frame = task_frame(spark, tasks)
    fn = _rewriter(table.metadata, table.io, options, bound, tag, pickled_tasks(tasks))
    return collect_files(frame.mapInArrow(fn, "file binary"), table, tag)
