"""``table.scan(...)``: snapshot selection, projection and file planning of a table read.

:class:`TableScan` works with any object that has ``metadata`` (a
:class:`~icefloe.metadata.TableMetadata`) and ``io`` (a :class:`~icefloe.io.FileIO`); it never
touches a catalog. It is an immutable description of a read of the table as it was when the
scan was made (its metadata is kept: later commits and schema changes through the same table
object are not seen): :meth:`TableScan.filter`, :meth:`TableScan.select`,
:meth:`TableScan.use_ref` and :meth:`TableScan.with_snapshot` return copies.

Snapshot selection (spec "Snapshots", "Snapshot References", Appendix F): ``snapshot_id``, or
``ref`` (a branch or tag), or ``as_of`` (a ``datetime`` or epoch milliseconds, resolved through
the snapshot log); at most one of them. Without any, the current snapshot; a table without one
plans to nothing. Scans of a snapshot id, tag or time use the schema of that snapshot; scans of
a branch (or the current snapshot) use the table's current schema.

Planning itself is in :mod:`icefloe.scan.planner`; :meth:`TableScan.plan_files` returns
:class:`~icefloe.scan.tasks.FileScanTask` values and :meth:`TableScan.plan_table` the same
tasks as one Arrow table (see :mod:`icefloe.scan.columnar`); :meth:`TableScan.plan_tasks` splits
large files for parallel reads. Decoded manifests are cached per table object
(:mod:`icefloe.scan.cache`). After each plan, a table whose catalog has ``report_scan`` (the
REST catalog) hands it a :class:`~icefloe.scan.metrics.ScanReport`; a failing report is
logged, never raised.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from icefloe.exceptions import (
    CorruptFileError,
    NoSuchSnapshotError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.expressions.base import (
    AlwaysTrue,
    And,
    BooleanExpression,
    UnboundPredicate,
)
from icefloe.expressions.binding import bind
from icefloe.expressions.parser import parse_filter
from icefloe.expressions.rewrite import rewrite_not
from icefloe.metadata import MAIN_BRANCH, Snapshot, TableMetadata
from icefloe.name_mapping import table_mapping
from icefloe.properties import TableProperties, int_property
from icefloe.scan.cache import DEFAULT_MAX_BYTES, MAX_BYTES_PROPERTY, manifest_cache
from icefloe.scan.columnar import (
    TableStream,
    TaskStream,
    adaptive_split_size,
    gc_paused,
    plan_bytes,
    plan_to_table,
    plan_to_tasks,
    split_tasks,
    tasks_bytes,
)
from icefloe.scan.manifests import planning_manifest_list, reader
from icefloe.scan.metrics import ScanReport, plan_result_counts
from icefloe.scan.planner import Plan, PlannedBatch, plan
from icefloe.scan.tasks import (
    LAST_UPDATED_SEQUENCE_NUMBER,
    METADATA_COLUMNS,
    FileScanTask,
    ReadOptions,
)
from icefloe.schema import Schema
from icefloe.values import epoch_ms, snapshot_id_arg

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DEFAULT_SPLIT_SIZE", "SPLIT_SIZE_PROPERTY", "TableScan"]

log = logging.getLogger("icefloe.scan")

SPLIT_SIZE_PROPERTY = TableProperties.SPLIT_SIZE
DEFAULT_SPLIT_SIZE = TableProperties.SPLIT_SIZE_DEFAULT


def _epoch_ms(as_of: dt.datetime | int) -> int:
    return epoch_ms(as_of, "as_of")


def selected_names(selected_fields: Sequence[str] | str | None) -> tuple[str, ...]:
    """The column names a scan's ``selected_fields`` gives, as a tuple: any iterable of names
    (a list too), or a single name; None is every column (``("*",)``)."""
    if selected_fields is None:
        return ("*",)
    if isinstance(selected_fields, str):
        return (selected_fields,)
    if isinstance(selected_fields, Iterable) and not isinstance(selected_fields, Mapping):
        selected = tuple(selected_fields)
        if all(isinstance(n, str) for n in selected):
            return selected
    raise ValidationError(
        f"selected_fields must be column names (strings), got {selected_fields!r}"
    )


class TableScan:
    """A read of one snapshot of a table: filter, projection and snapshot selection."""

    def __init__(
        self,
        table: Any,
        row_filter: str | BooleanExpression = AlwaysTrue(),  # noqa: B008 (a singleton)
        selected_fields: Sequence[str] | None = ("*",),
        case_sensitive: bool = True,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of: dt.datetime | int | None = None,
        limit: int | None = None,
        options: Mapping[str, str] | None = None,
    ) -> None:
        if not hasattr(table, "metadata") or not hasattr(table, "io"):
            raise ValidationError(f"a scan needs an object with .metadata and .io, got {table!r}")
        chosen = [
            n
            for n, v in (("snapshot_id", snapshot_id), ("ref", ref), ("as_of", as_of))
            if v is not None
        ]
        if len(chosen) > 1:
            raise ValidationError(f"choose one of snapshot_id, ref and as_of, got {chosen}")
        if snapshot_id is not None:
            snapshot_id = snapshot_id_arg(snapshot_id)
        if ref is not None and not isinstance(ref, str):
            raise ValidationError(f"ref must be a branch or tag name, got {ref!r}")
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise ValidationError(f"limit must be a non-negative integer, got {limit!r}")
        selected = selected_names(selected_fields)
        if options is not None and not isinstance(options, Mapping):
            raise ValidationError(f"options must be a mapping, got {options!r}")
        self.table = table
        # the table's state when the scan was made: a schema change or commit through the
        # same table object later changes neither the schema names bind to nor the plan
        self._metadata: TableMetadata = table.metadata
        self.row_filter = parse_filter(row_filter)
        self.selected_fields: tuple[str, ...] = tuple(selected)
        self.case_sensitive = case_sensitive
        self.snapshot_id = snapshot_id
        self.ref = ref
        self.as_of = as_of
        self.limit = limit
        self.options: dict[str, str] = dict(options or {})
        self._plan: Plan | None = None
        # False for row-level writers that read whole files (see planner.plan)
        self._prune_deletes_by_metrics = True
        # True for row-level writers that prove whole files from metrics (see planner.plan)
        self._keep_metrics = False
        self._server: Any = None  # the catalog's ServerPlan, False once known to plan here

    def __repr__(self) -> str:
        return (
            f"TableScan(filter={str(self.row_filter)!r}, fields={self.selected_fields!r}, "
            f"snapshot_id={self.snapshot_id!r}, ref={self.ref!r}, as_of={self.as_of!r})"
        )

    # -- builder-style copies ------------------------------------------------------------------
    def _copy(self, **changes: Any) -> TableScan:
        args: dict[str, Any] = {
            "row_filter": self.row_filter,
            "selected_fields": self.selected_fields,
            "case_sensitive": self.case_sensitive,
            "snapshot_id": self.snapshot_id,
            "ref": self.ref,
            "as_of": self.as_of,
            "limit": self.limit,
            "options": self.options,
        }
        args.update(changes)
        return self._pinned(TableScan(self.table, **args))

    def _pinned(self, copy: TableScan) -> TableScan:
        """``copy`` reading the metadata this scan reads."""
        copy._metadata = self._metadata
        return copy

    def _load_every_snapshot(self) -> bool:
        """Loads the snapshots the catalog left out of the metadata (REST
        ``snapshot-loading-mode=refs``) into the table and this scan; whether it did."""
        load = getattr(self.table, "load_every_snapshot", None)
        if load is None or not load():
            return False
        full: TableMetadata = self.table.metadata
        if full.table_uuid == self._metadata.table_uuid and full.current_schema_id == (
            self._metadata.current_schema_id
        ):
            self._metadata = full
            return True
        return False

    def filter(self, expr: str | BooleanExpression) -> TableScan:
        """A copy whose filter is this one ``and`` ``expr``."""
        return self._copy(row_filter=And(self.row_filter, parse_filter(expr)))

    def select(self, *names: str) -> TableScan:
        """A copy reading only the named columns (``"*"``: all)."""
        return self._copy(selected_fields=tuple(names) or ("*",))

    def use_ref(self, name: str) -> TableScan:
        """A copy reading the snapshot of branch or tag ``name``."""
        if not isinstance(name, str):
            raise ValidationError(f"ref must be a branch or tag name, got {name!r}")
        if self.metadata.refs.get(name) is None and name != MAIN_BRANCH:
            raise NoSuchSnapshotError(f"no branch or tag named {name!r}")
        return self._copy(ref=name, snapshot_id=None, as_of=None)

    def with_snapshot(self, snapshot_id: int) -> TableScan:
        """A copy reading snapshot ``snapshot_id``."""
        snapshot_id = snapshot_id_arg(snapshot_id)
        copy = self._copy(snapshot_id=snapshot_id, ref=None, as_of=None)
        copy.snapshot()  # raises NoSuchSnapshotError (after loading every snapshot)
        return copy

    def with_case_sensitive(self, case_sensitive: bool = True) -> TableScan:
        """A copy binding names case-sensitively or not."""
        return self._copy(case_sensitive=case_sensitive)

    # -- resolution -----------------------------------------------------------------------------
    @property
    def metadata(self) -> TableMetadata:
        """The table metadata the scan reads."""
        return self._metadata

    def snapshot(self) -> Snapshot | None:
        """The snapshot the scan reads (None: the table has no current snapshot). A snapshot
        the catalog left out of the loaded metadata (REST ``snapshot-loading-mode=refs``) is
        loaded when the scan needs it."""
        try:
            return self._snapshot()
        except NoSuchSnapshotError:
            if not self._load_every_snapshot():
                raise
            return self._snapshot()

    def _snapshot(self) -> Snapshot | None:
        md = self.metadata
        if self.snapshot_id is not None:
            return md.snapshot(self.snapshot_id)
        if self.ref is not None:
            r = md.refs.get(self.ref)
            if r is None and self.ref == MAIN_BRANCH:
                return md.current_snapshot()  # a table without snapshots: nothing to read
            if r is None:
                raise NoSuchSnapshotError(f"no branch or tag named {self.ref!r}")
            snap = md.snapshot_by_id(r.snapshot_id)
            if snap is None:
                raise NoSuchSnapshotError(
                    f"ref {self.ref!r} points at snapshot {r.snapshot_id}, which does not exist"
                )
            return snap
        if self.as_of is not None:
            return md.snapshot_as_of(_epoch_ms(self.as_of))
        return md.current_snapshot()

    def schema(self) -> Schema:
        """The table schema the scan reads with (see the module docstring)."""
        md = self.metadata
        pinned = self.snapshot_id is not None or self.as_of is not None
        if self.ref is not None:
            r = md.refs.get(self.ref)
            pinned = r is not None and not r.is_branch
        if pinned:
            snap = self.snapshot()
            if snap is not None and snap.schema_id is not None:
                s = md.schema_by_id(snap.schema_id)
                if s is None:  # as Java's SnapshotUtil.schemaFor refuses it
                    raise CorruptFileError(
                        f"snapshot {snap.snapshot_id} names schema {snap.schema_id}, which the "
                        "table's metadata does not hold"
                    )
                return s
        return md.current_schema()

    def _metadata_names(self) -> list[str]:
        """The selected metadata columns: a table column of the same name (``_pos`` in a
        user's schema) shadows a metadata column, as in the reference."""
        fold = (lambda n: n) if self.case_sensitive else str.lower
        own = {fold(f.name) for f in self.schema().fields}
        return [n for n in self.selected_fields if n in METADATA_COLUMNS and fold(n) not in own]

    def _data_names(self) -> list[str]:
        meta = self._metadata_names()
        return [n for n in self.selected_fields if n not in meta]

    def projected_schema(self) -> Schema:
        """The schema of the rows a read produces (data columns; metadata columns excluded)."""
        schema = self.schema()
        names = self._data_names()
        if "*" in names:
            return schema
        return schema.select(*names, case_sensitive=self.case_sensitive)

    def bound_filter(self) -> BooleanExpression:
        """The row filter bound to :meth:`schema`, with ``Not`` rewritten away. A metadata
        column (``_row_id``, ``_file``, ...) can be selected but not filtered on: a
        :class:`ValidationError` that says so."""
        schema = self.schema()
        try:
            return rewrite_not(bind(schema, self.row_filter, self.case_sensitive))
        except ValidationError:
            for name in _terms(self.row_filter):
                known = name if self.case_sensitive else name.lower()
                if (
                    known in METADATA_COLUMNS
                    and schema.find_field_id(name, self.case_sensitive) is None
                ):
                    raise ValidationError(
                        f"cannot filter on the metadata column {name!r}: metadata columns can "
                        "be selected (selected_fields) but row filters take table columns "
                        "only; filter the rows read instead (e.g. pyarrow.compute on the result)"
                    ) from None
            raise

    def read_options(self) -> ReadOptions:
        """What a reader of this scan's tasks produces."""
        md = self.metadata
        schema = self.schema()
        names = self._data_names()
        ids: tuple[int, ...] | None = None
        if "*" not in names:
            ids = tuple(
                schema.find_field(n, case_sensitive=self.case_sensitive).field_id for n in names
            )
        mapping = table_mapping(md.properties, deferred=True)
        return ReadOptions(
            schema=schema,
            projected_field_ids=ids,
            specs={s.spec_id: s for s in md.partition_specs},
            name_mapping=mapping,
            case_sensitive=self.case_sensitive,
            metadata_columns=tuple(self._metadata_names()),
            format_version=md.format_version,
            schemas=tuple(md.schemas),
        )

    # -- planning -------------------------------------------------------------------------------
    def _option(self, key: str) -> str | None:
        v = self.options.get(key)
        return v if v is not None else self.metadata.properties.get(key)

    def _int_option(self, key: str, default: int) -> int:
        if key in self.options:
            return int_property(self.options, key, default, what="scan option")
        return int_property(self.metadata.properties, key, default)

    def _threads(self) -> int | None:
        n = self._int_option(TableProperties.SCAN_THREADS, 0)
        return n if n > 0 else None

    def _cache_bytes(self) -> int:
        return self._int_option(MAX_BYTES_PROPERTY, DEFAULT_MAX_BYTES)

    #: Whether a catalog may plan this kind of scan on its server (a REST catalog's
    #: ``scan-planning-mode``); scans of other kinds are always planned here.
    _server_plannable = True

    def server_plan(self) -> Any:
        """The plan the table's catalog made on its server
        (:class:`~icefloe.catalog.rest.scan_planning.ServerPlan`), or None when the scan is
        planned here (computed once per scan object)."""
        if self._server is None:
            planner = getattr(getattr(self.table, "catalog", None), "plan_scan", None)
            # the REST protocol's content files carry no data sequence number, so a scan that
            # reads _last_updated_sequence_number (inherited from it) is planned here
            plannable = (
                self._server_plannable
                and LAST_UPDATED_SEQUENCE_NUMBER not in self._metadata_names()
            )
            found = planner(self.table, self) if plannable and planner else None
            self._server = found if found is not None else False
        return self._server or None

    def _read_io(self) -> Any:
        """The FileIO of the reads: the server plan's (credentials it vended) or the table's."""
        remote = self.server_plan()
        return remote.io if remote is not None and remote.io is not None else self.table.io

    def plan(self) -> Plan:
        """The columnar plan (computed once per scan object); not available for a scan its
        catalog's server planned (:meth:`plan_files` has its tasks)."""
        if self.server_plan() is not None:
            raise UnsupportedFeatureError(
                f"the scan of {self.table!r} was planned by its catalog's server: "
                "plan_files() and plan_tasks() give its tasks, not a columnar plan"
            )
        return self._run_plan()

    def _run_plan(
        self, on_batch: Callable[[PlannedBatch, Sequence[BooleanExpression]], None] | None = None
    ) -> Plan:
        """The plan, computed once; a new plan hands its batches to ``on_batch`` (see
        :func:`icefloe.scan.planner.plan`)."""
        if self._plan is not None:
            return self._plan
        snap = self.snapshot()
        bound = self.bound_filter()
        if snap is None:
            self._plan = Plan()
            return self._plan
        io = self.table.io

        read = reader(io)
        started = time.perf_counter_ns()
        self._plan = self._plan_manifests(planning_manifest_list(snap, read), read, bound, on_batch)
        self._report(snap, bound, time.perf_counter_ns() - started)
        return self._plan

    def _plan_manifests(
        self,
        manifest_list: pa.RecordBatch,
        read: Callable[[str], bytes],
        bound: BooleanExpression,
        on_batch: Callable[[PlannedBatch, Sequence[BooleanExpression]], None] | None,
        select_entries: Callable[[str, pa.RecordBatch], pa.RecordBatch] | None = None,
        unique_paths: bool = True,
    ) -> Plan:
        """The plan of the manifests of ``manifest_list`` with this scan's schema, specs,
        threads, cache and limit (see :func:`icefloe.scan.planner.plan`)."""
        return plan(
            manifest_list=manifest_list,
            read=read,
            schema=self.schema(),
            specs={s.spec_id: s for s in self.metadata.partition_specs},
            bound_filter=bound,
            threads=self._threads(),
            cache=manifest_cache(self.table, self._cache_bytes()),
            prune_deletes_by_metrics=self._prune_deletes_by_metrics,
            limit=self.limit,
            on_batch=on_batch,
            select_entries=select_entries,
            unique_paths=unique_paths,
            keep_metrics=self._keep_metrics,
        )

    def _report(self, snap: Snapshot, bound: BooleanExpression, duration_ns: int) -> None:
        """Hand the plan's :class:`ScanReport` to the table's catalog, if it takes reports
        (``report_scan``); a failure is logged, never raised: the scan goes on."""
        catalog = getattr(self.table, "catalog", None)
        report_scan = getattr(catalog, "report_scan", None)
        if report_scan is None or self._plan is None:
            return
        try:
            projected = self.projected_schema()
            ids = tuple(sorted(projected.field_ids))
            report = ScanReport(
                snapshot_id=snap.snapshot_id,
                schema_id=projected.schema_id,
                filter=bound,
                projected_field_ids=ids,
                projected_field_names=tuple(projected.find_column_name(i) or "" for i in ids),
                planning_duration_ns=duration_ns,
                counters=plan_result_counts(self._plan),
            )
            report_scan(self.table, report)
        except Exception as exc:  # a report must never fail the scan
            log.warning("scan report of %r failed: %s", self.table, type(exc).__name__)

    def plan_files(self) -> list[FileScanTask]:
        """The data files to read, each with its delete files and residual filter."""
        remote = self.server_plan()
        if remote is not None:
            return list(remote.tasks)
        if self._plan is None:
            # a new plan without delete files builds its tasks while later manifests decode
            stream = TaskStream()
            with gc_paused():
                planned = self._run_plan(on_batch=stream)
            if stream.batches == len(planned.batches):
                return stream.tasks
        return plan_to_tasks(self.plan())

    def split_size(self) -> int:
        """The split target size: scan option or table property ``read.split.target-size``
        (default 128 MiB)."""
        return self._int_option(SPLIT_SIZE_PROPERTY, DEFAULT_SPLIT_SIZE)

    def plan_tasks(self) -> list[FileScanTask]:
        """The tasks of :meth:`plan_files` with files larger than the split size split into
        byte ranges (by ``split_offsets`` when valid, else fixed ranges); each split carries
        the file's delete files and residual. For parallel reads; writers use
        :meth:`plan_files` (one task per file).

        The split size is :meth:`split_size` when set as a scan option or table property;
        otherwise a read that would make fewer splits than it has worker threads is split
        smaller (row groups of one large file are then read at once), as Iceberg's Java
        runtime adapts its split size."""
        split = self.split_size()
        explicit = SPLIT_SIZE_PROPERTY in self.options or (
            SPLIT_SIZE_PROPERTY in self.metadata.properties
        )
        remote = self.server_plan()
        if not explicit:
            from icefloe.read.scan_output import default_workers

            workers = self._threads() or default_workers()
            total = plan_bytes(self.plan()) if remote is None else tasks_bytes(remote.tasks)
            split = adaptive_split_size(total, workers, split)
        if remote is not None:
            return split_tasks(remote.tasks, split)
        return plan_to_tasks(self.plan(), split_size=split)

    def plan_table(self) -> pa.Table:
        """The tasks of :meth:`plan_files` as one Arrow table (see
        :func:`icefloe.scan.columnar.plan_to_table`); not available for a scan its catalog's
        server planned."""
        if self.server_plan() is not None:
            self.plan()  # refuses: a server plan has no columnar form
        if self._plan is None:
            # a new plan without delete files converts its batches while later manifests decode
            stream = TableStream()
            with gc_paused():
                planned = self._run_plan(on_batch=stream)
            return plan_to_table(planned, self.metadata, stream)
        return plan_to_table(self.plan(), self.metadata)

    # -- reading ---------------------------------------------------------------------------------
    # Thin methods: the work is in icefloe.read.scan_output (shared with the Spark executors).
    def to_batches(self) -> pa.RecordBatchReader:
        """The rows as a streaming ``pyarrow.RecordBatchReader`` (schema known up front, files
        and splits of large files (:meth:`plan_tasks`) read by worker threads, in order, memory
        bounded; ``limit`` applied)."""
        from icefloe.read import scan_output

        return scan_output.to_batches(
            self._read_io(),
            self.plan_tasks(),
            self.read_options(),
            limit=self.limit,
            max_workers=self._threads(),
        )

    def to_arrow(self) -> pa.Table:
        """The rows as one ``pyarrow.Table`` (a failed read raises; never a partial table)."""
        from icefloe.read import scan_output

        return scan_output.to_arrow(
            self._read_io(),
            self.plan_tasks(),
            self.read_options(),
            limit=self.limit,
            max_workers=self._threads(),
        )

    def to_pandas(self, **kwargs: Any) -> pd.DataFrame:
        """The rows as a pandas ``DataFrame`` (``kwargs`` go to ``pyarrow.Table.to_pandas``)."""
        from icefloe.read.scan_output import arrow_to_pandas, require_pandas

        require_pandas("TableScan.to_pandas()")
        return arrow_to_pandas(self.to_arrow(), **kwargs)

    def count(self) -> int:
        """The number of rows the scan returns; from manifest record counts (no file opened)
        for files without deletes or residual filter."""
        from icefloe.read import scan_output

        n = scan_output.count(
            self._read_io(), self.plan_files(), self.read_options(), max_workers=self._threads()
        )
        return n if self.limit is None else min(n, self.limit)

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule stream of :meth:`to_batches`, so DuckDB, Polars or
        ``pyarrow.table(scan)`` read the scan directly."""
        return self.to_batches().__arrow_c_stream__(requested_schema)


def _terms(expr: BooleanExpression) -> Iterable[str]:
    """The column names an unbound filter names (walked with a stack: filters may nest
    deeper than Python's recursion limit)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, UnboundPredicate):
            yield node.term
        stack.extend(node._children())
