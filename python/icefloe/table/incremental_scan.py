"""``table.incremental_append_scan(...)``: the rows appended between two snapshots.

An incremental append scan reads the data files that the ``append`` snapshots of a stretch of
a table's history added, as Iceberg Java's ``IncrementalAppendScan`` (and its Spark options
``start-snapshot-id`` / ``end-snapshot-id``) read them: the stretch runs from the end snapshot
back through its ancestors to the start snapshot, which is excluded unless ``from_inclusive``;
every other operation in it (overwrites, deletes, compactions) is skipped, and delete files
are not applied, so the rows are those the appends wrote. A pipeline that remembers the last
snapshot it consumed reads exactly the new rows with it.

The start snapshot need not exist any more (expiry may have removed it) as long as it is the
parent of a snapshot in the end snapshot's history; the end snapshot (default: the current
one) must exist. A start equal to the end reads nothing (a pipeline with nothing new to read;
Iceberg Java refuses such a range). A table a REST catalog loaded with only its refs'
snapshots (``snapshot-loading-mode=refs``) loads the others first. Rows are read with the
table's current schema (files written under older schemas are read by field id). Filters,
projections, limits and the readers (:meth:`to_arrow`, :meth:`to_batches`, :meth:`count`,
...) are those of :class:`~icefloe.table.scan.TableScan`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import NoSuchSnapshotError, ValidationError
from icefloe.expressions.base import AlwaysTrue, BooleanExpression
from icefloe.metadata import Snapshot, TableMetadata
from icefloe.scan.manifests import planning_manifest_list, read_entries, reader, unique_manifests
from icefloe.scan.planner import Plan
from icefloe.schema import Schema
from icefloe.table.scan import TableScan
from icefloe.types import integer_arg

__all__ = [
    "IncrementalAppendScan",
    "history_range",
    "load_history",
    "range_args",
    "snapshot_arg",
    "snapshots_between",
]

_DATA = 0
_ADDED = 1


def snapshot_arg(md: TableMetadata, value: int | str | None, what: str) -> int | None:
    """A snapshot id given as an id or as the name of a tag (as Java takes them)."""
    if value is None:
        return None
    if isinstance(value, str):
        ref = md.refs.get(value)
        if ref is None:
            hint = ""
            if re.fullmatch(r"\s*-?[0-9]+\s*", value):
                hint = f"; a snapshot id is given as an integer: {what}={int(value)}"
            raise NoSuchSnapshotError(f"{what}: no tag named {value!r}{hint}")
        if ref.is_branch:
            raise ValidationError(f"{what}: {value!r} is a branch, not a tag")
        return ref.snapshot_id
    out = integer_arg(value)
    if out is None:
        raise ValidationError(f"{what} must be a snapshot id or a tag name, got {value!r}")
    return out


def range_args(
    md: TableMetadata, start: int | str | None, end: int | str | None, from_inclusive: bool
) -> tuple[int | None, int | None]:
    """The start and end snapshot ids of a stretch of history given as ids or tag names; an
    end (and an inclusive start) must exist (:class:`NoSuchSnapshotError`)."""
    start_id = snapshot_arg(md, start, "from_snapshot_id")
    end_id = snapshot_arg(md, end, "to_snapshot_id")
    if end_id is not None:
        md.snapshot(end_id)
    if from_inclusive and start_id is not None:
        md.snapshot(start_id)
    return start_id, end_id


def load_history(table: Any) -> None:
    """Loads the snapshots a REST catalog in ``snapshot-loading-mode=refs`` left out of the
    table's metadata: a stretch of history needs every snapshot of it."""
    load = getattr(table, "load_every_snapshot", None)
    if load is not None:
        load()


def snapshots_between(
    md: TableMetadata, from_snapshot_id: int | None, to_snapshot_id: int
) -> list[Snapshot]:
    """The snapshots after ``from_snapshot_id`` (exclusive; None: from the start of the
    history) up to ``to_snapshot_id`` (inclusive) on ``to_snapshot_id``'s history, oldest
    first. ``from_snapshot_id`` must be the parent of one of them (it may have been expired),
    else :class:`ValidationError`."""
    md.snapshot(to_snapshot_id)  # NoSuchSnapshotError
    chain: list[Snapshot] = []
    found = from_snapshot_id is None
    for snap in md.ancestors_of(to_snapshot_id):
        if snap.snapshot_id == from_snapshot_id:
            found = True
            break
        chain.append(snap)
        if from_snapshot_id is not None and snap.parent_snapshot_id == from_snapshot_id:
            found = True
            break
    if not found:
        if from_snapshot_id is not None and md.snapshot_by_id(from_snapshot_id) is None:
            raise NoSuchSnapshotError(
                f"starting snapshot {from_snapshot_id} is not in the table's metadata nor the "
                f"parent of a snapshot on the history of {to_snapshot_id}"
            )
        raise ValidationError(
            f"starting snapshot (exclusive) {from_snapshot_id} is not an ancestor of the end "
            f"snapshot {to_snapshot_id} (nor the parent of one)"
        )
    return list(reversed(chain))


def history_range(
    md: TableMetadata, start: int | None, end: int | None, from_inclusive: bool
) -> list[Snapshot]:
    """The snapshots from ``start`` (exclusive unless ``from_inclusive``; None: the first) to
    ``end`` (inclusive; None: the current snapshot), oldest first; none when the table has no
    snapshot and neither end is given."""
    end_snap = md.snapshot(end) if end is not None else md.current_snapshot()
    if end_snap is None:
        if start is not None:
            raise NoSuchSnapshotError(f"the table has no current snapshot after {start}")
        return []
    if from_inclusive and start is not None:
        first = md.snapshot(start)
        if not any(s.snapshot_id == start for s in md.ancestors_of(end_snap.snapshot_id)):
            raise ValidationError(
                f"starting snapshot (inclusive) {start} is not an ancestor of the end "
                f"snapshot {end_snap.snapshot_id}"
            )
        start = first.parent_snapshot_id
    return snapshots_between(md, start, end_snap.snapshot_id)


class IncrementalAppendScan(TableScan):
    """The rows the ``append`` snapshots after one snapshot and up to another added (see the
    module docstring)."""

    _server_plannable = False  # planned here, also for a catalog that plans on its server

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
        limit: int | None = None,
        options: Mapping[str, str] | None = None,
        _metadata: TableMetadata | None = None,
    ) -> None:
        super().__init__(
            table,
            row_filter=row_filter,
            selected_fields=selected_fields,
            case_sensitive=case_sensitive,
            limit=limit,
            options=options,
        )
        if _metadata is None:  # a new scan; a copy reads the metadata of the scan it copies
            load_history(table)
            _metadata = table.metadata  # with every snapshot
        self._metadata = _metadata
        self.from_snapshot_id, self.to_snapshot_id = range_args(
            self.metadata, from_snapshot_id, to_snapshot_id, from_inclusive
        )
        self.from_inclusive = from_inclusive

    def __repr__(self) -> str:
        return (
            f"IncrementalAppendScan(from={self.from_snapshot_id!r}, "
            f"to={self.to_snapshot_id!r}, from_inclusive={self.from_inclusive!r}, "
            f"filter={str(self.row_filter)!r}, fields={self.selected_fields!r})"
        )

    def _copy(self, **changes: Any) -> IncrementalAppendScan:
        for key in ("snapshot_id", "ref", "as_of"):
            if changes.get(key) is not None:
                raise ValidationError(
                    "an incremental append scan reads a stretch of history; it takes no "
                    f"{key} (use from_snapshot_id and to_snapshot_id)"
                )
        args: dict[str, Any] = {
            "from_inclusive": self.from_inclusive,
            "row_filter": self.row_filter,
            "selected_fields": self.selected_fields,
            "case_sensitive": self.case_sensitive,
            "limit": self.limit,
            "options": self.options,
        }
        args.update({k: v for k, v in changes.items() if k not in ("snapshot_id", "ref", "as_of")})
        return IncrementalAppendScan(
            self.table,
            self.from_snapshot_id,
            self.to_snapshot_id,
            _metadata=self._metadata,
            **args,
        )

    def use_ref(self, name: str) -> TableScan:
        """Refused: an incremental scan's end is ``to_snapshot_id``."""
        return self._copy(ref=name)

    def with_snapshot(self, snapshot_id: int) -> TableScan:
        """Refused: an incremental scan's end is ``to_snapshot_id``."""
        return self._copy(snapshot_id=snapshot_id)

    # -- resolution -----------------------------------------------------------------------------
    def _snapshot(self) -> Snapshot | None:
        """The end snapshot (the current one unless ``to_snapshot_id`` was given)."""
        if self.to_snapshot_id is not None:
            return self.metadata.snapshot(self.to_snapshot_id)
        return self.metadata.current_snapshot()

    def schema(self) -> Schema:
        """The table's current schema."""
        return self.metadata.current_schema()

    def appends(self) -> list[Snapshot]:
        """The ``append`` snapshots whose files the scan reads, oldest first."""
        chain = history_range(
            self.metadata, self.from_snapshot_id, self.to_snapshot_id, self.from_inclusive
        )
        return [s for s in chain if s.summary is not None and s.summary.operation == "append"]

    # -- planning -------------------------------------------------------------------------------
    def _run_plan(self, on_batch: Any = None) -> Plan:
        if self._plan is not None:
            return self._plan
        snaps = self.appends()
        bound = self.bound_filter()
        if not snaps:
            self._plan = Plan()
            return self._plan
        read = reader(self.table.io)
        ids = pa.array([s.snapshot_id for s in snaps], pa.int64())
        lists = [planning_manifest_list(s, read) for s in snaps]
        manifests = unique_manifests(lists)
        if manifests.num_rows:
            mine = pc.equal(manifests.column("content"), _DATA)
            if "added_snapshot_id" in manifests.column_names:
                added = manifests.column("added_snapshot_id")
                mine = pc.and_(mine, pc.fill_null(pc.is_in(added, value_set=ids), True))
            manifests = manifests.filter(mine)
        if manifests.num_rows == 0:
            self._plan = Plan()
            return self._plan
        batch = manifests.combine_chunks().to_batches()[0]
        # a manifest an append wrote lists only the files it added, unless it merged older
        # manifests into it (existing entries): only those are decoded for their entries
        if "existing_files_count" in batch.schema.names:
            own_only = pc.fill_null(pc.equal(batch.column("existing_files_count"), 0), False)
            merged = batch.filter(pc.invert(own_only))
        else:
            merged = batch
        added_paths = self._added_paths(merged, ids)

        def select(manifest_path: str, entries: pa.RecordBatch) -> pa.RecordBatch:
            paths = added_paths.get(manifest_path)
            if paths is None:  # every live entry is the appending snapshot's
                return entries
            return entries.filter(pc.is_in(entries.column("file_path"), value_set=paths))

        # a file added, removed and added again in the range is read once per append, as Java
        self._plan = self._plan_manifests(batch, read, bound, on_batch, select, unique_paths=False)
        return self._plan

    def _added_paths(self, manifests: pa.RecordBatch, ids: pa.Array) -> dict[str, pa.Array]:
        """Per manifest, the paths of the data files it lists as added by one of ``ids``."""
        out: dict[str, pa.Array] = {}
        if manifests.num_rows == 0:
            return out
        paths = manifests.column("manifest_path").to_pylist()
        for path, entries in zip(paths, read_entries(self.table.io, manifests), strict=True):
            mask = pc.and_(
                pc.equal(entries.column("status"), _ADDED),
                pc.is_in(entries.column("snapshot_id"), value_set=ids),
            )
            out[path] = entries.column("file_path").filter(mask)
        return out
