"""``table.changelog_scan(...)``: the rows each snapshot of a stretch of history inserted and
deleted, as Iceberg Java's incremental changelog scan (Spark's ``<table>.changes``) gives them.

For every snapshot after the start (exclusive unless ``from_inclusive``; default: the first
snapshot) up to the end (inclusive; default: the current snapshot) on the end's history,
oldest first, except ``replace`` snapshots (compactions change no rows):

- each data file the snapshot added gives its rows as ``INSERT``;
- each data file the snapshot removed gives its rows as ``DELETE``.

Every row carries ``_change_type`` (``INSERT`` or ``DELETE``), ``_change_ordinal`` (the
snapshot's position among those changes, from 0) and ``_commit_snapshot_id``. A copy-on-write
delete or update therefore shows the rewritten file's untouched rows twice, deleted and
inserted in the same snapshot (Java's "carry-over" rows), exactly as Java's changelog does.
Row-level delete files (merge-on-read) are not expressible this way: a stretch whose snapshots
see delete files is refused with :class:`~icefloe.exceptions.UnsupportedFeatureError`, as Java
refuses it. Rows come in the table's current schema; the filter and column choice are those of
:meth:`icefloe.table.Table.scan` (the filter is applied to the rows of every file).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import UnsupportedFeatureError, ValidationError
from icefloe.expressions.base import AlwaysTrue, BooleanExpression
from icefloe.metadata import Snapshot
from icefloe.scan.columnar import TaskStream
from icefloe.scan.manifests import DATA_COLUMNS, planning_manifest_list, read_entries, reader
from icefloe.scan.planner import PlannedBatch
from icefloe.scan.tasks import FileScanTask
from icefloe.table.incremental_scan import history_range, load_history, range_args
from icefloe.table.scan import TableScan, selected_names

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CHANGE_ORDINAL",
    "CHANGE_TYPE",
    "COMMIT_SNAPSHOT_ID",
    "ChangeSet",
    "ChangelogScan",
]

CHANGE_TYPE = "_change_type"
CHANGE_ORDINAL = "_change_ordinal"
COMMIT_SNAPSHOT_ID = "_commit_snapshot_id"
CHANGE_COLUMNS = (CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID)
INSERT = "INSERT"
DELETE = "DELETE"

_DATA = 0
_ADDED = 1
_DELETED = 2


@dataclass(frozen=True)
class ChangeSet:
    """The data files one snapshot added (``INSERT``) or removed (``DELETE``), as scan tasks."""

    change_type: str
    ordinal: int
    snapshot_id: int
    tasks: list[FileScanTask]


class ChangelogScan:
    """The rows inserted and deleted by each snapshot of a stretch of history (see the module
    docstring)."""

    def __init__(
        self,
        table: Any,
        from_snapshot_id: int | str | None = None,
        to_snapshot_id: int | str | None = None,
        *,
        from_inclusive: bool = False,
        row_filter: str | BooleanExpression = AlwaysTrue(),  # noqa: B008 (a singleton)
        selected_fields: Sequence[str] | None = ("*",),
        case_sensitive: bool = True,
        options: Mapping[str, str] | None = None,
    ) -> None:
        chosen = selected_names(selected_fields)  # checked before the history is loaded
        load_history(table)
        self.table = table
        # the table's state when the scan was made (as a TableScan's): later commits through
        # the same table object move neither the default end nor the schema
        self._metadata = table.metadata
        self.from_snapshot_id, self.to_snapshot_id = range_args(
            self._metadata, from_snapshot_id, to_snapshot_id, from_inclusive
        )
        self.from_inclusive = from_inclusive
        schema = self._metadata.current_schema()
        taken = [n for n in CHANGE_COLUMNS if schema.find_field_id(n) is not None]
        if taken:
            raise ValidationError(
                f"the table has a column named {taken[0]!r}, the name of a changelog column: "
                "its values and the change's cannot both be given (Iceberg Java refuses the "
                "changelog too); rename the column or read with incremental_append_scan"
            )
        # the rows' schema, projection, filter and read settings: a scan of the current schema
        # the change columns named among the fields (all three when none is named)
        self._change_columns = [n for n in CHANGE_COLUMNS if n in chosen] or list(CHANGE_COLUMNS)
        self._rows = TableScan(
            table,
            row_filter=row_filter,
            selected_fields=tuple(n for n in chosen if n not in CHANGE_COLUMNS),
            case_sensitive=case_sensitive,
            options=options,
        )
        self._changes: list[ChangeSet] | None = None
        self._lists: dict[int, pa.RecordBatch] = {}

    def __repr__(self) -> str:
        return (
            f"ChangelogScan(from={self.from_snapshot_id!r}, to={self.to_snapshot_id!r}, "
            f"from_inclusive={self.from_inclusive!r}, filter={str(self._rows.row_filter)!r})"
        )

    def snapshots(self) -> list[Snapshot]:
        """The snapshots whose changes the scan reads (``replace`` ones left out), oldest
        first; raises :class:`UnsupportedFeatureError` when one of them sees delete files."""
        md = self._metadata
        chain = history_range(md, self.from_snapshot_id, self.to_snapshot_id, self.from_inclusive)
        kept = [s for s in chain if s.summary is None or s.summary.operation != "replace"]
        for snap in kept:
            listed = self._manifest_list(snap)
            if listed.num_rows and pc.any(pc.not_equal(listed.column("content"), _DATA)).as_py():
                raise UnsupportedFeatureError(
                    f"snapshot {snap.snapshot_id} has delete files: changelog scans read the "
                    "data files snapshots add and remove, and row-level deletes are not "
                    "expressible that way (Iceberg Java refuses them too); compact the deletes "
                    "away or read with incremental_append_scan"
                )
        return kept

    def changes(self) -> list[ChangeSet]:
        """Per snapshot, oldest first, the files it added and the files it removed."""
        if self._changes is not None:
            return self._changes
        out: list[ChangeSet] = []
        bound = self._rows.bound_filter()
        for ordinal, snap in enumerate(self.snapshots()):
            added, removed = self._entries(snap)
            for kind, entries in ((DELETE, removed), (INSERT, added)):
                tasks = _tasks(entries, bound)
                if tasks:
                    out.append(ChangeSet(kind, ordinal, snap.snapshot_id, tasks))
        self._changes = out
        return out

    def _manifest_list(self, snap: Snapshot) -> pa.RecordBatch:
        """``snap``'s decoded manifest list (read once per scan)."""
        listed = self._lists.get(snap.snapshot_id)
        if listed is None:
            listed = planning_manifest_list(snap, reader(self.table.io))
            self._lists[snap.snapshot_id] = listed
        return listed

    def _entries(self, snap: Snapshot) -> tuple[list[pa.RecordBatch], list[pa.RecordBatch]]:
        """The manifest entries ``snap`` added and deleted, per manifest it wrote."""
        listed = self._manifest_list(snap)
        mine = pc.equal(listed.column("content"), _DATA)
        if "added_snapshot_id" in listed.schema.names:
            own = pc.equal(listed.column("added_snapshot_id"), snap.snapshot_id)
            mine = pc.and_(mine, pc.fill_null(own, True))
        written = listed.filter(mine)
        added: list[pa.RecordBatch] = []
        removed: list[pa.RecordBatch] = []
        for entries in read_entries(self.table.io, written):
            by_snap = pc.equal(entries.column("snapshot_id"), snap.snapshot_id)
            status = entries.column("status")
            added.append(entries.filter(pc.and_(by_snap, pc.equal(status, _ADDED))))
            removed.append(entries.filter(pc.and_(by_snap, pc.equal(status, _DELETED))))
        return added, removed

    # -- reading ---------------------------------------------------------------------------------
    def schema(self) -> pa.Schema:
        """The Arrow schema of the rows: the projected columns, then the change columns."""
        rows = self._reader([]).schema
        return _with_change_columns(rows, self._change_columns)

    def _reader(self, tasks: list[FileScanTask]) -> pa.RecordBatchReader:
        from icefloe.read import scan_output

        return scan_output.to_batches(
            self.table.io, tasks, self._rows.read_options(), max_workers=self._rows._threads()
        )

    def to_batches(self) -> pa.RecordBatchReader:
        """The changed rows as a streaming ``pyarrow.RecordBatchReader``, snapshot by snapshot
        (each snapshot's deleted rows before its inserted ones)."""
        schema = self.schema()
        changes = self.changes()

        def batches() -> Iterator[pa.RecordBatch]:
            for change in changes:
                for batch in self._reader(change.tasks):
                    if batch.num_rows:
                        yield _tagged(batch, change, schema)

        return pa.RecordBatchReader.from_batches(schema, batches())

    def to_arrow(self) -> pa.Table:
        """The changed rows as one ``pyarrow.Table``."""
        return self.to_batches().read_all()

    def count(self) -> int:
        """The number of changed rows (files without a residual filter counted from their
        manifest record counts)."""
        from icefloe.read import scan_output

        options = self._rows.read_options()
        return sum(
            scan_output.count(self.table.io, c.tasks, options, max_workers=self._rows._threads())
            for c in self.changes()
        )

    def to_pandas(self, **kwargs: Any) -> pd.DataFrame:
        """The changed rows as a pandas ``DataFrame``."""
        from icefloe.read.scan_output import arrow_to_pandas, require_pandas

        require_pandas("ChangelogScan.to_pandas()")
        return arrow_to_pandas(self.to_arrow(), **kwargs)

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule stream of :meth:`to_batches`."""
        return self.to_batches().__arrow_c_stream__(requested_schema)


def _tasks(entries: list[pa.RecordBatch], bound: BooleanExpression) -> list[FileScanTask]:
    """Scan tasks (no deletes; ``bound`` as residual) of the data files of ``entries``."""
    stream = TaskStream()
    for batch in entries:
        if batch.num_rows == 0:
            continue
        spec_id = int((batch.schema.metadata or {}).get(b"partition-spec-id", b"0"))
        kept = batch.select(list(DATA_COLUMNS))
        stream(PlannedBatch(spec_id, kept, np.zeros(kept.num_rows, dtype=np.int32)), [bound])
    return stream.tasks


_CHANGE_TYPES = {
    CHANGE_TYPE: pa.string(),
    CHANGE_ORDINAL: pa.int32(),
    COMMIT_SNAPSHOT_ID: pa.int64(),
}


def _with_change_columns(rows: pa.Schema, names: Sequence[str]) -> pa.Schema:
    for name in names:
        rows = rows.append(pa.field(name, _CHANGE_TYPES[name], nullable=False))
    return rows


def _tagged(batch: pa.RecordBatch, change: ChangeSet, schema: pa.Schema) -> pa.RecordBatch:
    n = batch.num_rows
    values = {
        CHANGE_TYPE: pa.array(np.full(n, change.change_type, dtype=object), pa.string()),
        CHANGE_ORDINAL: pa.array(np.full(n, change.ordinal, dtype=np.int32)),
        COMMIT_SNAPSHOT_ID: pa.array(np.full(n, change.snapshot_id, dtype=np.int64)),
    }
    extra = [values[name] for name in schema.names[batch.num_columns :]]
    return pa.RecordBatch.from_arrays([*batch.columns, *extra], schema=schema)
