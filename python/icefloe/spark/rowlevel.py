"""Row-level changes from Spark: ``delete`` and ``merge`` with positions found on executors.

Both plan the table's live files on the driver, find the affected row positions on the
executors (icefloe's reader with the ``_file`` / ``_pos`` metadata columns), and commit through
:func:`icefloe.table.row_delta.commit_row_delta`: deletion vectors on v3 tables, position delete
files on v2, merged with the deletes already there, plus any new data files, in one snapshot
with the row-level conflict checks (a concurrent change to the same files fails the commit
with ``CommitConflictError`` instead of losing it). Files whose rows all go are removed whole.
No data file is rewritten, so an upsert touching a few rows of many large files writes only
their new rows and small delete files.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from icefloe.exceptions import ValidationError
from icefloe.expressions.base import AlwaysTrue, BooleanExpression
from icefloe.io import FileIO
from icefloe.metadata import MAIN_BRANCH
from icefloe.properties import TableProperties, enum_property
from icefloe.scan.tasks import (
    FILE,
    LAST_UPDATED_SEQUENCE_NUMBER,
    POS,
    ROW_ID,
    FileScanTask,
    ReadOptions,
    replace_task,
)
from icefloe.spark.errors import executor_errors, icefloe_errors
from icefloe.spark.reading import (
    iter_numbered_tasks,
    iter_tasks,
    pickled_tasks,
    resolve_table,
    task_frame,
)
from icefloe.spark.schema import arrow_for_spark, spark_type, to_spark_batch
from icefloe.spark.worker import prepare_worker
from icefloe.spark.writing import cleanup_job, frame_columns, job_tag, write_files
from icefloe.table import Table
from icefloe.table.row_delta import RowDelta, commit_row_delta, plan_candidates, plan_tasks
from icefloe.types import StructType
from icefloe.write.delete_files import FileDeletes
from icefloe.write.input import missing_nested_fields
from icefloe.write.matching import bind_filter

MERGE_ISOLATION = TableProperties.MERGE_ISOLATION_LEVEL

__all__ = ["FILE_NUMBER", "delete", "match_target", "merge"]


def _options(table: Table, field_ids: tuple[int, ...], metadata: tuple[str, ...]) -> ReadOptions:
    import json

    from icefloe.name_mapping import DEFAULT_NAME_MAPPING_PROPERTY, NameMapping

    md = table.metadata
    text = md.properties.get(DEFAULT_NAME_MAPPING_PROPERTY)
    return ReadOptions(
        schema=md.current_schema(),
        projected_field_ids=field_ids,
        specs={s.spec_id: s for s in md.partition_specs},
        name_mapping=NameMapping.from_json(json.loads(text)) if text else None,
        metadata_columns=metadata,
        format_version=md.format_version,
        schemas=md.schemas,
    )


def _matching_positions(file_io: FileIO, options: ReadOptions, payloads: list[bytes]) -> Any:
    """``mapInArrow`` function: per task, the positions of live rows its residual matches, or
    ``whole`` and no positions when it matches every live row (the file is removed, so its
    positions need not travel to the driver)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from icefloe.read import DeleteCache, read_task

        prepare_worker()
        with executor_errors():
            io = file_io
            cache = DeleteCache()
            for task in iter_tasks(batches, payloads):
                everything = replace_task(task, residual=AlwaysTrue())
                live = sum(b.num_rows for b in read_task(io, everything, options, cache))
                parts = [b.column(POS) for b in read_task(io, task, options, cache)]
                positions = pa.concat_arrays(parts) if parts else pa.array([], pa.int64())
                whole = 0 < live == len(positions)
                if whole:
                    positions = positions.slice(0, 0)
                yield pa.RecordBatch.from_pydict(
                    {
                        "file": [task.data_file.file_path],
                        "positions": pa.array([positions.to_numpy()], pa.list_(pa.int64())),
                        "whole": [whole],
                    }
                )

    return run


def _arrow_schema(spark_schema: Any) -> pa.Schema:
    """The Arrow schema Spark sends of a DataFrame of ``spark_schema`` (columns whose type
    Spark cannot convert left out: the tasks' checks judge them)."""
    from pyspark.sql.pandas.types import to_arrow_type

    fields = []
    for sf in spark_schema.fields:
        try:
            fields.append(pa.field(sf.name, to_arrow_type(sf.dataType, timestamp_utc=True)))
        except Exception:  # Spark's own error types: not a verdict on the merge
            continue
    return pa.schema(fields)


def _case_sensitive(spark: Any) -> bool:
    """Whether the session compares column names with case (``spark.sql.caseSensitive``)."""
    return str(spark.conf.get("spark.sql.caseSensitive", "false")).strip().lower() == "true"


def delete(
    spark: Any,
    table: Table | str | Sequence[str],
    condition: BooleanExpression | str,
    branch: str = MAIN_BRANCH,
    snapshot_properties: dict[str, str] | None = None,
    catalog: Any = None,
) -> Table:
    """Deletes the rows matching ``condition`` (merge-on-read); returns the table.

    The matching positions of each candidate file are computed on the executors; nothing is
    committed when no row matches.
    """
    t = resolve_table(table, catalog)
    tx = t.transaction()
    # names compare as the session compares them (Spark's default: ignoring case)
    bound = bind_filter(t.schema(), condition, _case_sensitive(spark))
    candidates, proven = plan_candidates(tx, bound, branch=branch, prove=True)
    if not candidates:
        return t
    # files whose column metrics prove every row matches are dropped without a Spark job
    delta = RowDelta(targets=candidates)
    delta.removed.extend(c for c in candidates if c.data_file.file_path in proven)
    tasks = [c for c in candidates if c.data_file.file_path not in proven]
    if not tasks:
        return _commit_delete(t, tx, delta, branch, snapshot_properties, bound)
    options = _options(t, (), (POS,))
    out = task_frame(spark, tasks).mapInArrow(
        _matching_positions(t.io, options, pickled_tasks(tasks)),
        "file string, positions array<bigint>, whole boolean",
    )
    with icefloe_errors():
        result = out.toArrow()
    by_path = {task.data_file.file_path: task for task in tasks}
    lists = result.column("positions").combine_chunks()
    for i, (path, whole) in enumerate(
        zip(result.column("file").to_pylist(), result.column("whole").to_pylist(), strict=True)
    ):
        task = by_path[path]
        values = lists[i].values
        if whole:
            delta.removed.append(task)
        elif len(values):
            delta.deletes.append(FileDeletes(task.data_file, values, task.delete_files))
    return _commit_delete(t, tx, delta, branch, snapshot_properties, bound)


def _commit_delete(
    t: Table,
    tx: Any,
    delta: RowDelta,
    branch: str,
    snapshot_properties: dict[str, str] | None,
    bound: BooleanExpression,
) -> Table:
    if delta.empty:
        return t
    _refuse_v1_deletes(t, delta, "delete")
    commit_row_delta(
        tx, delta, branch=branch, snapshot_properties=snapshot_properties, conflict_filter=bound
    )
    tx.commit_transaction()
    return t


def _refuse_v1_deletes(table: Table, delta: RowDelta, what: str) -> None:
    """``icefloe.spark.delete`` and ``merge`` always write merge-on-read deletes (whatever
    ``write.delete.mode`` says), which a v1 table cannot hold."""
    version = table.metadata.format_version
    if version >= 2 or not delta.deletes:
        return
    alternative = (
        "or delete with icefloe's Table.delete, which rewrites the files on a v1 table"
        if what == "delete"
        else "first"
    )
    raise ValidationError(
        f"icefloe.spark.{what} writes merge-on-read deletes (whatever write.delete.mode says), "
        f"which need format version 2 or later, and {table.name} is v{version}: upgrade it "
        f"with table.upgrade_format_version(2) {alternative}"
    )


#: Column of the target keys frame numbering the row's data file (index into the tasks).
FILE_NUMBER = "_icefloe_file"


def _target_keys(
    spark: Any, table: Table, tasks: list[FileScanTask], on: Sequence[str], lineage: bool
) -> Any:
    """A DataFrame of the live rows' key columns plus ``_pos`` (with ``lineage`` also
    ``_row_id``) and :data:`FILE_NUMBER`, the index of the row's file in ``tasks`` (four
    bytes a row to shuffle instead of the file's path), read on the executors."""
    from pyspark.sql.types import IntegerType

    from icefloe.scan.tasks import metadata_field

    schema = table.schema()
    ids = tuple(schema.find_field(c).field_id for c in on)
    meta = (POS, ROW_ID) if lineage else (POS,)
    options = _options(table, ids, meta)
    fields = [schema.find_field(c) for c in on] + [metadata_field(m) for m in meta]
    target = arrow_for_spark(fields)
    file_io = table.io
    payloads = pickled_tasks(tasks)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from icefloe.read import DeleteCache, read_task

        prepare_worker()
        with executor_errors():
            io = file_io
            cache = DeleteCache()
            for number, task in iter_numbered_tasks(batches, payloads):
                for rb in read_task(io, replace_task(task, residual=AlwaysTrue()), options, cache):
                    if rb.num_rows:
                        out = to_spark_batch(rb, fields, target)
                        column = pa.array(np.full(rb.num_rows, number, np.int32))
                        yield out.append_column(FILE_NUMBER, column)

    schema_out = spark_type(StructType(*fields)).add(FILE_NUMBER, IntegerType(), False)
    return task_frame(spark, tasks).mapInArrow(run, schema_out)


def match_target(source: Any, keys: Any, on: Sequence[str]) -> Any:
    """``source`` left-joined with the target's keys (:func:`_target_keys`) on ``on``.

    The join is a sort-merge join, hinted: the keys are as many rows as the table has, so
    broadcasting them fails once they outgrow the driver's memory, and the source, whose rows
    must all be kept (inserts), cannot be the broadcast side of a left join. The hint holds
    whatever the session's ``spark.sql.autoBroadcastJoinThreshold`` (and under adaptive
    execution)."""
    return source.join(keys.hint("merge"), on=list(on), how="left")


def _with_table_names(df: Any, table: Table, on: list[str]) -> tuple[Any, list[str]]:
    """``df`` with each top-level column that names a table column when case is ignored
    renamed to the table's name, and the keys ``on`` likewise (Spark's
    ``spark.sql.caseSensitive=false``, by the rules of the format's writes: see
    :func:`~icefloe.spark.format_write.match_columns`); other names are left for the checks
    to report."""
    from icefloe.spark.format_write import match_columns

    folded = {f.name.lower() for f in table.schema().fields}

    def renamed(columns: list[str]) -> dict[str, str]:
        mine = [c for c in columns if c.lower() in folded]
        return dict(zip(mine, match_columns(mine, table, case_sensitive=False), strict=True))

    names = renamed(list(df.columns))
    columns = [names.get(c, c) for c in df.columns]
    keys = [renamed([c]).get(c, c) for c in on]
    return (df.toDF(*columns) if columns != list(df.columns) else df), keys


def merge(
    df: Any,
    table: Table | str | Sequence[str],
    on: Sequence[str],
    when_matched: str | None = "update",
    when_not_matched: str | None = "insert",
    branch: str = MAIN_BRANCH,
    snapshot_properties: dict[str, str] | None = None,
    catalog: Any = None,
) -> Table:
    """Merges the rows of ``df`` into ``table`` by the key columns ``on`` (merge-on-read).

    ``when_matched``: ``"update"`` replaces matched rows with the source rows, ``"delete"``
    deletes them, ``None`` leaves them. ``when_not_matched``: ``"insert"`` adds source rows
    without a match, ``None`` drops them. A target row matched by more than one source row is
    an error (:class:`~icefloe.exceptions.ValidationError`), as in SQL's ``MERGE``; so is a
    source without every column of the table when matched rows are updated. Keys match as
    SQL's ``=`` does: a null key matches nothing (``Table.upsert`` matches null to null).

    On v3 tables updated rows keep their ``_row_id`` and get the commit's sequence number as
    ``_last_updated_sequence_number`` (spec "Row Lineage"); inserted rows get new ids.

    Under ``write.merge.isolation-level=serializable`` (the default) the commit fails with
    :class:`~icefloe.exceptions.CommitConflictError` if another writer added data files while
    the merge ran (their rows may hold keys it should have matched); run it again.

    The source is joined once with the target's keys (read on the executors; a sort-merge
    join whatever the table's size, see :func:`match_target`) and the joined rows are kept
    (``persist``) for the two passes over them: the matched positions per file (collected to
    the driver) and the rows to write.
    """
    from pyspark.sql import functions as F

    if when_matched not in ("update", "delete", None):
        raise ValidationError(f"when_matched must be 'update', 'delete' or None: {when_matched!r}")
    if when_not_matched not in ("insert", None):
        raise ValidationError(f"when_not_matched must be 'insert' or None: {when_not_matched!r}")
    on = [on] if isinstance(on, str) else list(on)
    if not on:
        raise ValidationError("merge needs at least one key column in 'on'")
    t = resolve_table(table, catalog)
    schema = t.schema()
    if not _case_sensitive(df.sparkSession):  # the default, as Java's MERGE compares them
        df, on = _with_table_names(df, t, on)
    for c in on:
        if c not in df.columns:
            raise ValidationError(f"merge key {c!r} is not a column of the source DataFrame")
        schema.find_field(c)  # raises ValidationError when the table has no such column
    for c in df.columns:
        if c in (FILE, POS, ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER, FILE_NUMBER):
            raise ValidationError(f"merge source column {c!r} is a reserved metadata column")
    frame_columns(df, t)  # unknown columns and types that cannot be written, before any job
    missing = [f.name for f in schema.fields if f.name not in df.columns]
    if when_matched == "update" and missing:
        # filled with nulls, an update would wipe the rows' values (as SQL's UPDATE SET * says)
        raise ValidationError(
            f"the merge source lacks the columns {missing}: an update replaces whole rows"
        )
    if when_matched == "update":
        nested = missing_nested_fields(
            schema, _arrow_schema(df.schema), _case_sensitive(df.sparkSession)
        )
        if nested:
            raise ValidationError(
                f"the merge source lacks the nested fields {nested}: an update replaces whole rows"
            )
    lineage = t.metadata.format_version >= 3
    spark = df.sparkSession
    tx = t.transaction()
    tasks = plan_tasks(tx, AlwaysTrue(), branch=branch)
    tag = job_tag()
    files: list[Any] = []
    positions: dict[str, pa.Array] = {}
    joined = None
    try:
        if tasks:
            keys = _target_keys(spark, t, tasks, on, lineage)
            joined = match_target(df, keys, on).persist()
            is_match = F.col(FILE_NUMBER).isNotNull()
            if when_matched is not None:
                grouped = (
                    joined.where(is_match)
                    .groupBy(FILE_NUMBER)
                    .agg(
                        F.count(F.lit(1)).alias("n"),
                        F.array_distinct(F.collect_list(POS)).alias("positions"),
                    )
                )
                with icefloe_errors():
                    result = grouped.toArrow()
                counts = result.column("n").to_pylist()
                lists = result.column("positions").combine_chunks()
                numbers = result.column(FILE_NUMBER).to_pylist()
                for i, (number, n) in enumerate(zip(numbers, counts, strict=True)):
                    path = tasks[number].data_file.file_path
                    pos = lists[i].values
                    if n != len(pos):
                        raise ValidationError(
                            f"merge: {n - len(pos)} rows of {path} are matched by more than one "
                            "source row"
                        )
                    positions[path] = pos
            wanted = None
            if when_matched == "update" and positions:
                wanted = is_match
            if when_not_matched == "insert":
                wanted = ~is_match if wanted is None else wanted | ~is_match
            if wanted is not None:
                columns = [F.col(c) for c in df.columns]
                if lineage:
                    columns += [
                        F.col(ROW_ID),
                        F.lit(None).cast("bigint").alias(LAST_UPDATED_SEQUENCE_NUMBER),
                    ]
                files = write_files(joined.where(wanted).select(*columns), t, tag, lineage=lineage)
        elif when_not_matched == "insert":
            files = write_files(df, t, tag)
        by_path = {task.data_file.file_path: task for task in tasks}
        delta = RowDelta(targets=[by_path[p] for p in positions], added_data=files)
        for path, pos in positions.items():
            task = by_path[path]
            delta.deletes.append(FileDeletes(task.data_file, pos, task.delete_files))
        if delta.empty:
            return t
        _refuse_v1_deletes(t, delta, "merge")
        # the merge read every row: any data another writer added meanwhile may hold a key
        # it should have matched (as Java's MERGE, under write.merge.isolation-level)
        isolation = enum_property(t.metadata.properties, MERGE_ISOLATION, "serializable")
        commit_row_delta(
            tx,
            delta,
            branch=branch,
            snapshot_properties=snapshot_properties,
            conflict_filter=AlwaysTrue(),
            isolation=isolation,
        )
        tx.commit_transaction()
    except BaseException:
        if not tx.may_have_committed:  # else the new metadata may reference the files: keep
            cleanup_job(t, tag)
        raise
    finally:
        if joined is not None:
            joined.unpersist()
    return t
