"""Distributed reads: the driver plans, executors read the planned files with icefloe's reader.

:func:`read` plans the scan on the driver (manifests, pruning, delete matching), numbers the
:class:`~icefloe.scan.tasks.FileScanTask` objects in a ``spark.range`` DataFrame spread over as
many partitions as there are tasks (up to ``max_partitions``; the pickled tasks travel in the
mapped function's closure), and maps it with
``mapInArrow`` to the rows of that file: each executor runs :func:`icefloe.read.read_task`,
which applies deletion vectors, position and equality deletes and the residual filter, and
yields Arrow batches that Spark takes without conversion. The DataFrame's schema is the Spark
form of the (projected) Iceberg schema, see :mod:`icefloe.spark.schema`.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

from icefloe.exceptions import NotFoundError, StaleReadError, ValidationError
from icefloe.expressions.base import AlwaysTrue, BooleanExpression
from icefloe.io import FileIO
from icefloe.nesting import check_nesting
from icefloe.scan.tasks import (
    METADATA_COLUMNS,
    PARTITION,
    FileScanTask,
    ReadOptions,
    metadata_field,
    union_partition_type,
)
from icefloe.spark.errors import executor_errors
from icefloe.spark.schema import arrow_for_spark, spark_type, to_spark_batch
from icefloe.spark.worker import ensure_worker_python, prepare_worker, profiled
from icefloe.table import Table
from icefloe.table.scan import TableScan
from icefloe.types import NestedField, StructType

__all__ = [
    "StaleReadError",
    "iter_numbered_tasks",
    "iter_tasks",
    "output_fields",
    "pickled_tasks",
    "read",
    "read_scan",
    "resolve_table",
    "spark_batches",
    "task_frame",
]


#: What a read of columns nested deeper than icefloe can read says it cannot do.
READ_REFUSED = "cannot read the table"


def resolve_table(table_or_identifier: Table | str | Sequence[str], catalog: Any = None) -> Table:
    """``table_or_identifier`` as a :class:`Table` (identifiers load from ``catalog``, or from
    :func:`icefloe.catalog.load_catalog` when none is given)."""
    if isinstance(table_or_identifier, Table):
        return table_or_identifier
    if catalog is None:
        from icefloe.catalog import load_catalog

        catalog = load_catalog()
    table: Table = catalog.load_table(table_or_identifier)
    return table


def task_frame(spark: Any, tasks: Sequence[FileScanTask], max_partitions: int | None = None) -> Any:
    """A DataFrame of task indexes (column ``id``, ``0..len(tasks)-1``) spread over up to
    ``max_partitions`` partitions (default: 4 per core) with the pickled tasks for
    :func:`iter_tasks`.

    The indexes come from ``spark.range``, so Spark starts no Python worker to build the
    frame; the pickled tasks travel in the mapped function's closure (broadcast by PySpark
    when large), one planning round trip for the whole job.

    The frame's size is unknown to Spark's planner, as for a source without statistics:
    Spark estimates a ``mapInArrow`` output from its input, and the input here is one number
    per task, so a table of any size would look a few hundred bytes small and be chosen as the
    broadcast side of every join (and fail once it no longer fits in memory). The range is
    therefore united with an empty relation of unknown size (``spark.sql.defaultSizeInBytes``,
    never broadcast by its estimate); adaptive execution still sees the true sizes at run time.
    """
    ensure_worker_python(spark)
    limit = max_partitions or max(1, 4 * spark.sparkContext.defaultParallelism)
    slices = max(1, min(len(tasks), limit))
    return spark.range(0, len(tasks), 1, slices).unionByName(_unsized(spark))


def _unsized(spark: Any) -> Any:
    """An empty DataFrame (column ``id``) whose size Spark's planner cannot estimate: an RDD
    without partitions, so it runs nothing."""
    from pyspark.sql.types import LongType, StructField, StructType

    schema = StructType([StructField("id", LongType(), False)])
    return spark.createDataFrame(spark.sparkContext.emptyRDD(), schema)


def pickled_tasks(tasks: Sequence[FileScanTask]) -> list[bytes]:
    """The tasks pickled for shipping to executors (see :func:`iter_tasks`)."""
    return [pickle.dumps(t, protocol=pickle.HIGHEST_PROTOCOL) for t in tasks]


def iter_tasks(batches: Iterator[pa.RecordBatch], payloads: list[bytes]) -> Iterator[FileScanTask]:
    """On executors: the tasks whose indexes arrive in ``batches`` (a :func:`task_frame`)."""
    for _, task in iter_numbered_tasks(batches, payloads):
        yield task


def iter_numbered_tasks(
    batches: Iterator[pa.RecordBatch], payloads: list[bytes]
) -> Iterator[tuple[int, FileScanTask]]:
    """Like :func:`iter_tasks`, with each task's index."""
    for batch in batches:
        for i in batch.column(0).to_pylist():
            task: FileScanTask = pickle.loads(payloads[i])
            yield i, task


def _read_partition(
    file_io: FileIO,
    options: ReadOptions,
    fields: list[NestedField],
    payloads: list[bytes],
) -> Any:
    """The function ``mapInArrow`` runs: task indexes in, Spark-shaped Arrow batches out."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tasks = iter_tasks(batches, payloads)
        yield from profiled("read", spark_batches(file_io, options, fields, tasks))

    return run


def spark_batches(
    file_io: FileIO,
    options: ReadOptions,
    fields: list[NestedField],
    tasks: Iterable[FileScanTask],
) -> Iterator[pa.RecordBatch]:
    """On executors: the rows of ``tasks`` (deletes and residuals applied) as Arrow batches
    shaped for the Spark schema of ``fields`` (empty batches skipped)."""
    from icefloe.read import DeleteCache, read_task

    prepare_worker()
    with executor_errors():
        check_nesting(options.projected_schema(), READ_REFUSED)  # a read planned elsewhere
        target = arrow_for_spark(fields)
        io = file_io
        cache = DeleteCache()
        for task in tasks:
            try:
                for rb in read_task(io, task, options, cache):
                    if rb.num_rows:
                        yield to_spark_batch(rb, fields, target)
            except NotFoundError as e:
                raise StaleReadError(
                    f"{e}: a file of the table state this read was planned on is gone "
                    "(snapshots expired or files removed since). Spark plans a read of a "
                    "DataFrame once and reuses that plan for its later queries: read the "
                    "table again (spark.read...load()) to see its current state"
                ) from e


def output_fields(options: ReadOptions) -> list[NestedField]:
    fields = list(options.projected_schema().fields)
    for name in options.metadata_columns:
        fields.append(metadata_field(name, options.partition_type))
    return fields


def read_scan(
    table: Table,
    row_filter: BooleanExpression | str | None = None,
    selected_fields: Sequence[str] | None = None,
    *,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: Any = None,
    case_sensitive: bool = True,
    metadata_columns: Sequence[str] = (),
    scan_options: dict[str, str] | None = None,
    start_snapshot_id: int | None = None,
    end_snapshot_id: int | None = None,
) -> tuple[TableScan, ReadOptions, list[NestedField]]:
    """The scan of a distributed read, what its readers produce and its output fields (data
    columns, then the requested metadata columns). With ``start_snapshot_id`` (and optionally
    ``end_snapshot_id``) the scan is an incremental append scan (see
    :meth:`icefloe.table.Table.incremental_append_scan`), which chooses no other snapshot."""
    for name in metadata_columns:
        if name not in METADATA_COLUMNS:
            raise ValidationError(
                f"unknown metadata column {name!r}; known: {', '.join(METADATA_COLUMNS)}"
            )
    if selected_fields is None:
        data: tuple[str, ...] = ("*",)
    elif isinstance(selected_fields, str):  # a single name, as Table.scan takes it
        data = (selected_fields,)
    else:
        data = tuple(selected_fields)
    if end_snapshot_id is not None and start_snapshot_id is None:
        raise ValidationError(
            "an incremental read needs a start snapshot: end-snapshot-id alone is not enough"
        )
    scan: TableScan
    if start_snapshot_id is not None:
        chosen = [
            n
            for n, v in (("snapshot-id", snapshot_id), ("ref", ref), ("as-of", as_of))
            if v is not None
        ]
        if chosen:
            raise ValidationError(
                f"an incremental read cannot also choose a snapshot ({', '.join(chosen)})"
            )
        scan = table.incremental_append_scan(
            start_snapshot_id,
            end_snapshot_id,
            row_filter=row_filter if row_filter is not None else AlwaysTrue(),
            selected_fields=data + tuple(metadata_columns),
            case_sensitive=case_sensitive,
            options=scan_options,
        )
    else:
        scan = table.scan(
            row_filter=row_filter if row_filter is not None else AlwaysTrue(),
            selected_fields=data + tuple(metadata_columns),
            snapshot_id=snapshot_id,
            ref=ref,
            as_of=as_of,
            case_sensitive=case_sensitive,
            options=scan_options,
        )
    options = scan.read_options()
    # refused here, when the read is planned, not by every executor's first task
    check_nesting(options.projected_schema(), READ_REFUSED)
    if PARTITION in options.metadata_columns:
        options = replace(
            options, partition_type=union_partition_type(options.schema, options.specs)
        )
    return scan, options, output_fields(options)


def read(
    spark: Any,
    table_or_identifier: Table | str | Sequence[str],
    row_filter: BooleanExpression | str | None = None,
    selected_fields: Sequence[str] | None = None,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: Any = None,
    case_sensitive: bool = True,
    metadata_columns: Sequence[str] = (),
    catalog: Any = None,
    max_partitions: int | None = None,
    start_snapshot_id: int | None = None,
    end_snapshot_id: int | None = None,
) -> Any:
    """A Spark DataFrame of the table's rows, read on the executors by icefloe.

    ``row_filter`` is an icefloe expression or filter string; ``selected_fields`` column names
    (nested ones dotted); ``snapshot_id``, ``ref`` (branch or tag) or ``as_of`` (a datetime or
    epoch milliseconds) choose the snapshot; ``metadata_columns`` adds columns such as
    ``_file``, ``_pos`` or ``_row_id`` (see :data:`icefloe.scan.tasks.METADATA_COLUMNS`);
    ``start_snapshot_id`` (exclusive) and ``end_snapshot_id`` (inclusive, default the current
    snapshot) read only the rows the appends between them added, as Iceberg's options of the
    same names do.
    """
    table = resolve_table(table_or_identifier, catalog)
    scan, options, fields = read_scan(
        table,
        row_filter,
        selected_fields,
        snapshot_id=snapshot_id,
        ref=ref,
        as_of=as_of,
        case_sensitive=case_sensitive,
        metadata_columns=metadata_columns,
        start_snapshot_id=start_snapshot_id,
        end_snapshot_id=end_snapshot_id,
    )
    schema = spark_type(StructType(*fields))
    tasks = scan.plan_files()
    if not tasks:
        return spark.createDataFrame([], schema)
    frame = task_frame(spark, tasks, max_partitions)
    fn = _read_partition(table.io, options, fields, pickled_tasks(tasks))
    return frame.mapInArrow(fn, schema)
