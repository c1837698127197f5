"""The ``icefloe`` Spark data source (PySpark's Python Data Source API): batch reads and writes,
Structured Streaming source and sink, without Iceberg's JVM runtime.

After :func:`register` (or :func:`icefloe.spark.configure`)::

    df = spark.read.format("icefloe").option("catalog", "prod").load("db.events")
    df.where("id > 10").write.format("icefloe").mode("append").save("db.copy")

The table is named by ``load``/``save``'s path (or option ``table``) and loaded from the catalog
named by option ``catalog`` with the properties given as options ``catalog.<key>`` (without
them, from icefloe's configuration, see :func:`icefloe.catalog.load_catalog`). Options are
read by the Python workers Spark starts for planning, writing and committing, so a catalog
must be reachable from every one of them.

Batch read options: ``snapshot-id``, ``branch``, ``tag`` (or ``ref``), ``as-of-timestamp``
(epoch milliseconds), ``split-size`` (bytes of data per Spark partition; default the table's
``read.split.target-size``, lowered as Iceberg's Java runtime does when the scan would
otherwise make fewer partitions than the session has cores, see :func:`adaptive_split_size`),
``columns`` (comma-separated column names, nested ones dotted:
the columns read; Spark 4.1's Python data sources get no column pruning from Spark, so this
is how a read reads fewer columns), ``metadata-columns`` (comma-separated, e.g.
``_file,_pos``; Python data sources cannot expose hidden metadata columns, so they are
requested by this option and become ordinary columns), ``case-sensitive`` (whether
``columns`` and ``filter`` name columns exactly; default the session's
``spark.sql.caseSensitive`` when :func:`register` ran, false unless set: names then match
ignoring case, as Iceberg Java's Spark reads and this format's writes match them),
``start-snapshot-id`` (exclusive) with optionally ``end-snapshot-id`` (inclusive, default the
current snapshot): only the rows the ``append`` snapshots between them added, as Iceberg's
options of the same names read them (see
:class:`icefloe.table.incremental_scan.IncrementalAppendScan`; no other snapshot choice with
them; Iceberg's changelog options ``start-timestamp`` / ``end-timestamp`` are refused).

Filters in ``where`` reach the source through ``pushFilters`` (Spark setting
``spark.sql.python.filterPushdown.enabled``, which :func:`register` turns on): those icefloe
evaluates exactly as Spark does (see :mod:`icefloe.spark.filters`) prune the scan and are
applied to the rows by icefloe; the others stay with Spark.

A read has the schema the DataFrame was defined with (see :func:`fit_to_analysed`), and
PySpark 4.1 plans it once, at the DataFrame's first query, and reuses that plan (its snapshot)
for the DataFrame's later queries; once the plan's files are gone, reading it raises
:class:`~icefloe.exceptions.StaleReadError`.

Writes and streaming: see :mod:`icefloe.spark.format_write` and
:mod:`icefloe.spark.streaming`.
"""

from __future__ import annotations

import itertools
import os
import pickle
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from icefloe.exceptions import ParseError, UnsupportedFeatureError, ValidationError
from icefloe.expressions import parse
from icefloe.expressions.base import AlwaysTrue, And, BooleanExpression
from icefloe.io import FileIO
from icefloe.scan.columnar import (
    OPEN_FILE_COST,
    adaptive_split_size,
    plan_bytes,
    plan_to_tasks,
    split_tasks,
    tasks_bytes,
)
from icefloe.scan.tasks import METADATA_COLUMNS, FileScanTask, ReadOptions
from icefloe.spark.filters import to_expression
from icefloe.spark.reading import output_fields, read_scan, spark_batches
from icefloe.spark.schema import FIELD_ID, spark_type, without_metadata
from icefloe.spark.worker import ensure_worker_python, planner_step, profiled
from icefloe.table import Table
from icefloe.table.scan import SPLIT_SIZE_PROPERTY, TableScan
from icefloe.types import NestedField, StructType

__all__ = [
    "FILTER_PUSHDOWN",
    "FORMAT",
    "IcefloeDataSource",
    "IcefloePushdownReader",
    "IcefloeReader",
    "TasksPartition",
    "adaptive_split_size",
    "bin_pack",
    "fit_to_analysed",
    "register",
    "table_from_options",
]

#: The short name of the format.
FORMAT = "icefloe"
#: The Spark setting that lets Python data sources take filters.
FILTER_PUSHDOWN = "spark.sql.python.filterPushdown.enabled"
#: The Spark setting that decides whether column names compare case-sensitively.
CASE_SENSITIVE = "spark.sql.caseSensitive"


def register(spark: Any) -> None:
    """Registers the ``icefloe`` format on ``spark`` and enables Python filter pushdown (the
    format's workers run this Python unless the user chose one, see
    :func:`~icefloe.spark.worker.ensure_worker_python`).

    The registered class carries the session's default parallelism and its
    ``spark.sql.caseSensitive``: Spark plans a Python source's reads and writes in a Python
    worker that cannot ask the session. Reads use the parallelism to make at least one
    partition per core (:func:`adaptive_split_size`); reads resolve the ``columns`` and
    ``filter`` options' names, and writes match DataFrame columns to the table's,
    case-insensitively unless the setting was true (call ``register`` again after changing
    it, or give the read or write option ``case-sensitive``)."""
    ensure_worker_python(spark)
    spark.conf.set(FILTER_PUSHDOWN, "true")
    parallelism = max(1, int(spark.sparkContext.defaultParallelism))
    case_sensitive = str(spark.conf.get(CASE_SENSITIVE, "false")).strip().lower() == "true"
    # a class made here is pickled by value, with the attributes, for Spark's planner workers
    source = type(
        IcefloeDataSource.__name__,
        (IcefloeDataSource,),
        {
            "parallelism": parallelism,
            "case_sensitive": case_sensitive,
            "__module__": __name__,
        },
    )
    spark.dataSource.register(source)


def _csv(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def _int_option(options: Mapping[str, str], key: str) -> int | None:
    value = options.get(key)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValidationError(f"option {key!r} must be an integer, got {value!r}") from None


def _bool_option(options: Mapping[str, str], key: str, default: bool) -> bool:
    value = options.get(key)
    if value is None:
        return default
    if value.lower() not in ("true", "false"):
        raise ValidationError(f"option {key!r} must be true or false, got {value!r}")
    return value.lower() == "true"


def catalog_from_options(options: Mapping[str, str]) -> Any:
    """The catalog named by option ``catalog`` with the ``catalog.<key>`` properties."""
    from icefloe.catalog import load_catalog

    props = {k[len("catalog.") :]: v for k, v in options.items() if k.startswith("catalog.")}
    return load_catalog(options.get("catalog") or None, **props)


def table_from_options(options: Mapping[str, str]) -> Table:
    """The table named by option ``path`` (``load``/``save``'s argument) or ``table``."""
    ident = options.get("path") or options.get("table")
    if not ident:
        raise ValidationError(
            "the icefloe format needs a table: .load('db.table') / .save('db.table') "
            "or .option('table', 'db.table')"
        )
    table: Table = catalog_from_options(options).load_table(ident)
    return table


#: Iceberg Java's options of changelog scans, which this source does not have.
_CHANGELOG = ("start-timestamp", "end-timestamp")


def check_batch_options(options: Mapping[str, str]) -> None:
    """Refuses options of a batch read that it would otherwise ignore: Iceberg's changelog
    options (the rows would be the whole table's)."""
    given = [k for k in _CHANGELOG if options.get(k)]
    if given:
        raise UnsupportedFeatureError(
            f"option {', '.join(given)}: changelog reads are not supported by the icefloe "
            "format; 'start-snapshot-id' and 'end-snapshot-id' read the rows appended "
            "between two snapshots"
        )


def filter_option(options: Mapping[str, str]) -> BooleanExpression | None:
    """The ``filter`` option parsed (an icefloe filter string), None when not given; a
    malformed one raises :class:`~icefloe.exceptions.ParseError`."""
    given = options.get("filter")
    if not given or not given.strip():
        return None
    try:
        return parse(given)
    except ParseError as e:
        raise ParseError(f"option 'filter': {e}", e.position) from None


def _snapshot_choice(options: Mapping[str, str]) -> dict[str, Any]:
    refs = [k for k in ("branch", "tag", "ref") if options.get(k)]
    if len(refs) > 1:
        raise ValidationError(f"choose one of the options branch, tag and ref, got {refs}")
    ref = options.get("branch") or options.get("tag") or options.get("ref")
    chosen = {
        "snapshot_id": _int_option(options, "snapshot-id"),
        "ref": ref or None,
        "as_of": _int_option(options, "as-of-timestamp"),
    }
    return chosen


def _scan_options(options: Mapping[str, str]) -> dict[str, str]:
    split = _int_option(options, "split-size")
    if split is None:
        return {}
    if split <= 0:
        raise ValidationError(f"option 'split-size' must be positive, got {split}")
    return {SPLIT_SIZE_PROPERTY: str(split)}


def plan_read(
    options: Mapping[str, str], row_filter: BooleanExpression | None = None
) -> tuple[Table, TableScan, ReadOptions, list[NestedField]]:
    """The table, scan, reader options and output fields of a read with ``options``."""
    table = table_from_options(options)
    columns = _csv(options.get("columns")) or None
    scan, read_options, fields = read_scan(
        table,
        row_filter,
        columns,
        case_sensitive=_bool_option(options, "case-sensitive", True),
        metadata_columns=_csv(options.get("metadata-columns")),
        scan_options=_scan_options(options),
        start_snapshot_id=_int_option(options, "start-snapshot-id"),
        end_snapshot_id=_int_option(options, "end-snapshot-id"),
        **_snapshot_choice(options),
    )
    return table, scan, read_options, fields


#: How to see a table whose schema changed since a read was defined.
_READ_AGAIN = (
    "read the table again (spark.read.format('icefloe')...load(...)) to see its current schema"
)


def _top_level_id(schema: Any, field_id: int) -> int:
    ancestors = schema.ancestors(field_id)
    return int(ancestors[0].field_id) if ancestors else field_id


def fit_to_analysed(
    options: ReadOptions,
    fields: list[NestedField],
    analysed: Any,
    case_sensitive: bool = True,
    *,
    when: str = "after this read was defined",
    advice: str = _READ_AGAIN,
    error: type[ValidationError] = ValidationError,
) -> tuple[ReadOptions, list[NestedField]]:
    """The read of ``fields`` narrowed to the columns of ``analysed``, the Spark schema the
    query was analysed with (its fields carry their Iceberg ids; without them, as in a schema
    the user gave, they match by name). Columns added to the table since are not read; a
    column that is gone, renamed or changed in type (or nullability) raises ``error``
    (:class:`ValidationError`; its text says the schema changed ``when`` and gives
    ``advice``), as Spark would read the rows positionally as the analysed types."""
    if analysed is None:
        return options, fields
    by_id = {f.field_id: f for f in fields}
    by_name = {(f.name if case_sensitive else f.name.lower()): f for f in fields}
    chosen: list[NestedField] = []
    # a schema the user gave carries no field ids: a mismatch is that schema's, not a change
    given = not any(sf.metadata.get(FIELD_ID) is not None for sf in analysed.fields)
    for sf in analysed.fields:
        fid = sf.metadata.get(FIELD_ID)
        key = sf.name if case_sensitive else sf.name.lower()
        found = by_id.get(fid) if fid is not None else by_name.get(key)
        if found is None:
            problem = f"column {sf.name!r} is {'not' if given else 'no longer'} in it"
        elif found.name != sf.name:
            problem = f"column {sf.name!r} was renamed to {found.name!r}"
        else:
            now = spark_type(found.field_type)
            loosened = not found.required and not sf.nullable
            if loosened or without_metadata(now) != without_metadata(sf.dataType):
                was = sf.dataType.simpleString() + ("" if sf.nullable else " not null")
                new = now.simpleString() + (" not null" if found.required else "")
                problem = (
                    f"column {sf.name!r} is {new} in it, not {was}"
                    if given
                    else f"column {sf.name!r} changed from {was} to {new}"
                )
            else:
                chosen.append(found)
                continue
        if given:
            raise error(
                f"the schema given to the read does not fit the table: {problem}; give the "
                "table's columns and types (a subset of them), or no schema"
            )
        raise error(f"the table's schema changed {when}: {problem}; {advice}")
    ids = [f.field_id for f in chosen]
    if ids == [f.field_id for f in fields]:
        return options, fields
    wanted = set(ids)
    data = wanted - set(METADATA_COLUMNS.values())
    projected = options.projected_field_ids
    if projected is None:
        projected = tuple(f.field_id for f in options.schema.fields)
    narrowed = replace(
        options,
        projected_field_ids=tuple(i for i in projected if _top_level_id(options.schema, i) in data),
        metadata_columns=tuple(
            n for n in options.metadata_columns if METADATA_COLUMNS[n] in wanted
        ),
    )
    out = output_fields(narrowed)
    if [f.field_id for f in out] != ids:
        raise error(f"the table's schema changed {when}: its columns were reordered; {advice}")
    return narrowed, out


def bin_pack(
    tasks: Sequence[FileScanTask], target: int, open_cost: int = OPEN_FILE_COST
) -> list[list[FileScanTask]]:
    """``tasks`` in order, cut into groups of about ``target`` bytes (each task weighs its
    split length, and at least ``open_cost``): a task joins the group its last byte falls in,
    so ``k`` equal tasks of ``target / k`` bytes share one group."""
    if not tasks:
        return []
    sizes = np.fromiter(
        (t.length if t.length is not None else t.data_file.file_size_in_bytes for t in tasks),
        dtype=np.int64,
        count=len(tasks),
    )
    weights = np.maximum(sizes, open_cost)
    ends = np.cumsum(weights)
    bins = (ends - 1) // max(1, target)
    cuts = np.flatnonzero(np.diff(bins)) + 1
    bounds = [0, *cuts.tolist(), len(tasks)]
    return [list(tasks[a:b]) for a, b in itertools.pairwise(bounds)]


class TasksPartition(InputPartition):
    """One Spark partition of a read: the pickled tasks and what reading them needs."""

    def __init__(
        self,
        file_io: FileIO,
        options: ReadOptions,
        fields: list[NestedField],
        tasks: bytes,
    ) -> None:
        super().__init__(None)
        self.file_io = file_io
        self.options = options
        self.fields = fields
        self.tasks = tasks

    def __repr__(self) -> str:
        return f"TasksPartition({len(self.tasks)} bytes of tasks)"


def task_partitions(
    table: Table,
    options: ReadOptions,
    fields: list[NestedField],
    tasks: Sequence[FileScanTask],
    split_size: int,
    file_io: FileIO | None = None,
) -> list[TasksPartition]:
    """The planned ``tasks`` bin-packed into partitions of about ``split_size`` bytes, read
    with ``file_io`` (default: the table's)."""
    file_io = file_io or table.io
    return [
        TasksPartition(
            file_io, options, fields, pickle.dumps(group, protocol=pickle.HIGHEST_PROTOCOL)
        )
        for group in bin_pack(tasks, split_size)
    ]


def read_partition(partition: TasksPartition) -> Iterator[pa.RecordBatch]:
    """On executors: the Arrow batches of one partition's tasks."""
    tasks: list[FileScanTask] = pickle.loads(partition.tasks)
    batches = spark_batches(partition.file_io, partition.options, partition.fields, tasks)
    yield from profiled("read", batches)


class IcefloeReader(DataSourceReader):
    """Batch reader: plans on the driver's planner worker, reads tasks on executors. The
    ``filter`` option (an icefloe filter) prunes the plan and is applied to the rows."""

    def __init__(
        self, options: Mapping[str, str], parallelism: int | None = None, schema: Any = None
    ) -> None:
        self.options = dict(options)
        self.parallelism = parallelism or os.cpu_count() or 1
        self.pushed: list[BooleanExpression] = []
        #: the Spark schema the query was analysed with (see :func:`fit_to_analysed`)
        self.analysed = schema

    def row_filter(self) -> BooleanExpression:
        """The ``filter`` option and the pushed filters, all of them."""
        given = filter_option(self.options)
        parts = ([given] if given is not None else []) + self.pushed
        if not parts:
            return AlwaysTrue()
        return parts[0] if len(parts) == 1 else And(*parts)

    def partitions(self) -> list[TasksPartition]:
        with planner_step():
            table, scan, options, fields = plan_read(self.options, self.row_filter())
            case_sensitive = _bool_option(self.options, "case-sensitive", True)
            options, fields = fit_to_analysed(options, fields, self.analysed, case_sensitive)
            split = scan.split_size()
            remote = scan.server_plan()  # a REST catalog's server planned it
            if _int_option(self.options, "split-size") is None:
                # files weigh at least the open cost, as when they are packed
                total = plan_bytes(scan.plan()) if remote is None else tasks_bytes(remote.tasks)
                split = adaptive_split_size(total, self.parallelism, split)
            if remote is not None:
                tasks = split_tasks(remote.tasks, split)
                io = remote.io or table.io
                return task_partitions(table, options, fields, tasks, split, io)
            tasks = plan_to_tasks(scan.plan(), split_size=split)
            return task_partitions(table, options, fields, tasks, split)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, TasksPartition):  # Spark's one empty partition
            return iter(())
        return read_partition(partition)


class IcefloePushdownReader(IcefloeReader):
    """:class:`IcefloeReader` that also takes the filters Spark pushes (option
    ``filter-pushdown``). PySpark 4.1 keeps the read a pushdown planned on the DataFrame's
    source and reuses it for later queries of that DataFrame that push nothing, so those
    would see only the first query's rows: use it for DataFrames queried once."""

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:
        """Takes the filters icefloe evaluates exactly (see :mod:`icefloe.spark.filters`)."""
        with planner_step():
            _, scan, _, _ = plan_read(self.options)
            schema = scan.schema()
        for f in filters:
            expr = to_expression(f, schema)
            if expr is None:
                yield f
            else:
                self.pushed.append(expr)


class IcefloeDataSource(DataSource):
    """``spark.read.format("icefloe")`` / ``df.write.format("icefloe")`` / streaming."""

    #: Partitions a read aims for at least (set by :func:`register`; else the planner
    #: worker's CPU count).
    parallelism: int | None = None
    #: The session's ``spark.sql.caseSensitive`` when :func:`register` ran: whether reads
    #: resolve column names and writes match DataFrame columns to the table's exactly (else
    #: ignoring case), unless option ``case-sensitive`` says.
    case_sensitive: bool = True

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def _case_sensitive(self) -> bool:
        """Whether names match exactly: option ``case-sensitive``, by default the session's
        ``spark.sql.caseSensitive`` (see :func:`register`)."""
        return _bool_option(self.options, "case-sensitive", self.case_sensitive)

    def _read_options(self) -> dict[str, str]:
        """The options with ``case-sensitive`` always given (the session's setting unless
        the user gave it): the readers, pickled for Spark's planner workers, plan with them
        and cannot see this class's setting. A bad value is refused where it is read."""
        options = dict(self.options)  # keys are lower case (Spark's CaseInsensitiveDict)
        options.setdefault("case-sensitive", "true" if self.case_sensitive else "false")
        return options

    def schema(self) -> Any:
        with planner_step():
            _, _, _, fields = plan_read(self._read_options())
            return spark_type(StructType(*fields))

    def reader(self, schema: Any) -> IcefloeReader:
        with planner_step():
            options = self._read_options()
            check_batch_options(options)
            if _bool_option(options, "filter-pushdown", False):
                return IcefloePushdownReader(options, self.parallelism, schema)
            return IcefloeReader(options, self.parallelism, schema)

    def writer(self, schema: Any, overwrite: bool) -> Any:
        from icefloe.spark.format_write import IcefloeWriter

        with planner_step():
            return IcefloeWriter(self.options, schema, overwrite, self._case_sensitive())

    def streamWriter(self, schema: Any, overwrite: bool) -> Any:
        from icefloe.spark.format_write import IcefloeStreamWriter

        with planner_step():
            return IcefloeStreamWriter(self.options, schema, overwrite, self._case_sensitive())

    def streamReader(self, schema: Any) -> Any:
        from icefloe.spark.streaming import IcefloeStreamReader

        with planner_step():
            return IcefloeStreamReader(self._read_options(), schema)
