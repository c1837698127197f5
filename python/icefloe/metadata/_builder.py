"""Applying :class:`~icefloe.metadata.updates.TableUpdate` sequences to table metadata.

The rules follow the Java reference's ``TableMetadata.Builder``:

* ``add-schema`` / ``add-spec`` / ``add-sort-order`` reuse the id of an identical existing
  object, otherwise take the highest existing id + 1 (an unsorted order is always id 0);
  ``last-column-id`` and ``last-partition-id`` only grow. ``-1`` in the matching ``set-*`` update
  means "the one added last"; using it when nothing was added is an error.
* ``add-snapshot`` refuses a duplicate id, and from v2 a sequence number not above
  ``last-sequence-number`` (unless the snapshot has no parent); it sets
  ``last-sequence-number`` and ``last-updated-ms`` from the snapshot. In v3 the snapshot needs
  ``first-row-id`` and ``added-rows``; a ``first-row-id`` behind the table's ``next-row-id``
  means another commit used those row ids first and raises the retryable
  :class:`~icefloe.exceptions.CommitFailedError`; ``next-row-id`` becomes
  ``first-row-id + added-rows``.
* ``set-snapshot-ref`` on ``main`` moves ``current-snapshot-id`` and appends to
  ``snapshot-log``; ``remove-snapshot-ref`` of ``main`` clears the current snapshot.
* ``set-statistics`` / ``set-partition-statistics`` need an existing snapshot and replace that
  snapshot's previous file.
* ``remove-snapshots`` also drops refs to removed snapshots and their statistics; the
  snapshot log keeps only the entries after the last entry whose snapshot is gone, and
  snapshots that were made current and replaced within the same updates are not logged.
* with ``metadata_location`` (where ``base`` was read from), ``metadata-log`` gains that file
  with ``base``'s ``last-updated-ms`` and keeps at most ``write.metadata.previous-versions-max``
  (default 100, at least 1) entries.
* the format version only moves up, to at most 3; upgrading to v3 starts ``next-row-id`` at 0.
* the result's default partition spec and default sort order must fit its current schema
  (source columns present, primitive, suiting their transforms; ``void`` partition fields are
  exempt); historical specs and orders may refer to dropped columns.

Other invalid updates raise :class:`~icefloe.exceptions.ValidationError`; the result is
re-validated as a whole by :class:`TableMetadata`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from icefloe.exceptions import CommitFailedError, ValidationError
from icefloe.metadata._json import check_no_surrogates
from icefloe.metadata.property_checks import check_properties
from icefloe.metadata.snapshots import (
    MAIN_BRANCH,
    EncryptedKey,
    MetadataLogEntry,
    Operation,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotLogEntry,
    StatisticsFile,
)
from icefloe.metadata.table_metadata import SUPPORTED_FORMAT_VERSION, TableMetadata
from icefloe.metadata.updates import (
    LAST_ADDED,
    AddEncryptionKey,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssignUUID,
    RemoveEncryptionKey,
    RemovePartitionSpecs,
    RemovePartitionStatistics,
    RemoveProperties,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    RemoveStatistics,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetPartitionStatistics,
    SetProperties,
    SetSnapshotRef,
    SetStatistics,
    TableUpdate,
    UpgradeFormatVersion,
)
from icefloe.partitioning import PartitionSpec
from icefloe.properties import TableProperties, int_property
from icefloe.schema import Schema
from icefloe.schema_rules import validate_schema
from icefloe.sorting import SortOrder

__all__ = ["METADATA_PREVIOUS_VERSIONS_MAX", "apply_updates"]

METADATA_PREVIOUS_VERSIONS_MAX = TableProperties.METADATA_PREVIOUS_VERSIONS_MAX
METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT = TableProperties.METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT


def apply_updates(
    base: TableMetadata,
    updates: Iterable[TableUpdate],
    metadata_location: str | None = None,
    *,
    now_ms: int | None = None,
) -> TableMetadata:
    """New metadata: ``base`` with ``updates`` applied in order (see the module docstring).

    ``metadata_location`` is the file ``base`` was read from (added to ``metadata-log``);
    ``now_ms`` overrides the clock used for ``last-updated-ms`` (for tests and replays).
    With no updates and no ``metadata_location`` the result is ``base`` itself.
    """
    b = _Builder(base, time.time_ns() // 1_000_000 if now_ms is None else now_ms)
    for u in updates:
        b.apply(u)
    return b.build(metadata_location)


class _Builder:
    def __init__(self, base: TableMetadata, now_ms: int) -> None:
        self.base = base
        self._now = now_ms
        self.format_version = base.format_version
        self.table_uuid = base.table_uuid
        self.location = base.location
        self.last_updated_ms: int | None = None
        self.last_column_id = base.last_column_id
        self.schemas = list(base.schemas)
        self.current_schema_id = base.current_schema_id
        self.specs = list(base.partition_specs)
        self.default_spec_id = base.default_spec_id
        self.last_partition_id = base.last_partition_id
        self.sort_orders = list(base.sort_orders)
        self.default_sort_order_id = base.default_sort_order_id
        self.last_sequence_number = base.last_sequence_number
        self.properties = dict(base.properties)
        self.current_snapshot_id = base.current_snapshot_id
        self.snapshots = list(base.snapshots)
        self.refs = dict(base.refs)
        self.snapshot_log = list(base.snapshot_log)
        self.statistics = list(base.statistics)
        self.partition_statistics = list(base.partition_statistics)
        self.next_row_id = base.next_row_id
        self.encryption_keys = list(base.encryption_keys)
        self.last_added_schema_id: int | None = None
        self.last_added_spec_id: int | None = None
        self.last_added_order_id: int | None = None
        self.added_snapshot_ids: set[int] = set()
        self.intermediate_snapshot_ids: set[int] = set()
        self.removed_snapshots = False
        self.changed = False

    # ------------------------------------------------------------------ dispatch

    def apply(self, u: TableUpdate) -> None:
        handler = getattr(self, "_" + u.action.replace("-", "_"), None)
        if handler is None:  # pragma: no cover - every registered action has a handler
            raise ValidationError(f"unsupported table update {u.action!r}")
        # a lone surrogate (a ref name, a property, a summary value) could never be written
        # to the metadata file as UTF-8: refused here, before anything is committed
        check_no_surrogates(u.to_json(), f"table update {u.action!r}")
        handler(u)

    def _assign_uuid(self, u: AssignUUID) -> None:
        if u.uuid != self.table_uuid:
            self.table_uuid = u.uuid
            self.changed = True

    def _upgrade_format_version(self, u: UpgradeFormatVersion) -> None:
        v = u.format_version
        if v > SUPPORTED_FORMAT_VERSION:  # a bad argument (Java: 400), not a missing feature
            raise ValidationError(
                f"Cannot upgrade table to unsupported format version: v{v} "
                f"(supported: v{SUPPORTED_FORMAT_VERSION})"
            )
        if v < self.format_version:
            raise ValidationError(f"Cannot downgrade v{self.format_version} table to v{v}")
        if v == self.format_version:
            return
        current = [s for s in self.schemas if s.schema_id == self.current_schema_id]
        for schema in current:  # v3 reserves the row lineage columns' names
            validate_schema(schema, v)
        self.format_version = v
        if v >= 3 and self.next_row_id is None:
            self.next_row_id = 0
        self.changed = True

    # ------------------------------------------------------------------ schemas

    def _add_schema(self, u: AddSchema) -> None:
        schema = u.schema
        validate_schema(schema, self.format_version)
        # The deprecated last-column-id can only raise the table's: Java clients send the new
        # schema's highest id, which is lower after a column drop (Java 1.11 ignores it).
        new_id = self.current_schema_id
        for s in self.schemas:
            if s.same_schema(schema):
                self.last_added_schema_id = s.schema_id
                return
            if s.schema_id >= new_id:
                new_id = s.schema_id + 1
        self.schemas.append(
            Schema(
                *schema.fields,
                schema_id=new_id,
                identifier_field_ids=schema.identifier_field_ids,
            )
        )
        self.last_column_id = max(
            self.last_column_id, schema.highest_field_id, u.last_column_id or 0
        )
        self.last_added_schema_id = new_id
        self.changed = True

    def _set_current_schema(self, u: SetCurrentSchema) -> None:
        sid = u.schema_id
        if sid == LAST_ADDED:
            if self.last_added_schema_id is None:
                raise ValidationError("Cannot set last added schema: no schema has been added")
            sid = self.last_added_schema_id
        if not any(s.schema_id == sid for s in self.schemas):
            raise ValidationError(f"Cannot set current schema to unknown schema: {sid}")
        if sid != self.current_schema_id:
            schema = next(s for s in self.schemas if s.schema_id == sid)
            _check_partition_names(schema, self.specs)
            self.current_schema_id = sid
            self.changed = True

    def _remove_schemas(self, u: RemoveSchemas) -> None:
        ids = set(u.schema_ids)
        if self.current_schema_id in ids:
            raise ValidationError(f"Cannot remove current schema: {self.current_schema_id}")
        kept = [s for s in self.schemas if s.schema_id not in ids]
        if len(kept) != len(self.schemas):
            self.schemas = kept
            self.changed = True

    # ------------------------------------------------------------------ specs and orders

    def _current_schema(self) -> Schema:
        return next(s for s in self.schemas if s.schema_id == self.current_schema_id)

    def _add_spec(self, u: AddPartitionSpec) -> None:
        spec = u.spec
        spec.validate(self._current_schema())
        if self.format_version == 1:
            for i, f in enumerate(spec.fields):
                if f.field_id != 1000 + i:
                    raise ValidationError(
                        f"Spec does not use sequential IDs that are required in v1: {spec}"
                    )
        new_id = 0
        for s in self.specs:
            if tuple(s.fields) == tuple(spec.fields):
                self.last_added_spec_id = s.spec_id
                return
            if s.spec_id >= new_id:
                new_id = s.spec_id + 1
        self.specs.append(PartitionSpec(*spec.fields, spec_id=new_id))
        self.last_partition_id = max(self.last_partition_id, spec.last_assigned_field_id)
        self.last_added_spec_id = new_id
        self.changed = True

    def _set_default_spec(self, u: SetDefaultSpec) -> None:
        sid = u.spec_id
        if sid == LAST_ADDED:
            if self.last_added_spec_id is None:
                raise ValidationError("Cannot set last added spec: no spec has been added")
            sid = self.last_added_spec_id
        if not any(s.spec_id == sid for s in self.specs):
            raise ValidationError(f"Cannot set default partition spec to unknown spec: {sid}")
        if sid != self.default_spec_id:
            self.default_spec_id = sid
            self.changed = True

    def _remove_partition_specs(self, u: RemovePartitionSpecs) -> None:
        ids = set(u.spec_ids)
        if self.default_spec_id in ids:
            raise ValidationError("Cannot remove the default partition spec")
        kept = [s for s in self.specs if s.spec_id not in ids]
        if len(kept) != len(self.specs):
            self.specs = kept
            self.changed = True

    def _add_sort_order(self, u: AddSortOrder) -> None:
        order = u.sort_order
        order.validate(self._current_schema())
        if not order.fields:
            new_id = 0
        else:
            new_id = 1
            for o in self.sort_orders:
                if o.fields and o.same_order(order):
                    self.last_added_order_id = o.order_id
                    return
                if o.order_id >= new_id:
                    new_id = o.order_id + 1
        if any(o.order_id == new_id for o in self.sort_orders):  # unsorted already present
            self.last_added_order_id = new_id
            return
        self.sort_orders.append(SortOrder(*order.fields, order_id=new_id))
        self.last_added_order_id = new_id
        self.changed = True

    def _set_default_sort_order(self, u: SetDefaultSortOrder) -> None:
        oid = u.sort_order_id
        if oid == LAST_ADDED:
            if self.last_added_order_id is None:
                raise ValidationError("Cannot set last added sort order: no order has been added")
            oid = self.last_added_order_id
        if not any(o.order_id == oid for o in self.sort_orders):
            raise ValidationError(f"Cannot set default sort order to unknown order: {oid}")
        if oid != self.default_sort_order_id:
            self.default_sort_order_id = oid
            self.changed = True

    # ------------------------------------------------------------------ snapshots and refs

    def _snapshot(self, snapshot_id: int) -> Snapshot | None:
        return next((s for s in self.snapshots if s.snapshot_id == snapshot_id), None)

    def _add_snapshot(self, u: AddSnapshot) -> None:
        s = u.snapshot
        if self._snapshot(s.snapshot_id) is not None:
            raise ValidationError(f"Snapshot already exists for id: {s.snapshot_id}")
        operation = s.summary.operation if s.summary is not None else None
        if self.format_version >= 2 and operation not in Operation.ALL:
            # Readers (PyIceberg, Java's changelog and incremental scans) need it: a new
            # snapshot without one would leave a table they cannot read.
            raise ValidationError(
                f"snapshot {s.snapshot_id}: a v{self.format_version} snapshot's summary needs an "
                f"'operation' of {', '.join(Operation.ALL)}, got {operation!r}"
            )
        if self.format_version == 1 and s.sequence_number != 0:
            # Kept stricter than Java's builder: the client that sends one (DuckDB 1.5.5) also
            # writes zero file counts for the manifests it carries over in v1, and readers that
            # trust the counts (Java, icefloe) would then skip the table's earlier rows.
            raise ValidationError(
                f"snapshot {s.snapshot_id}: sequence-number must be 0 in v1, "
                f"got {s.sequence_number} (this client writes v1 snapshots as v2 ones; "
                "upgrade the table to format version 2 to write it with this client)"
            )
        if (
            self.format_version >= 2
            and s.parent_snapshot_id is not None
            and s.sequence_number <= self.last_sequence_number
        ):
            raise ValidationError(
                f"Cannot add snapshot with sequence number {s.sequence_number} older than "
                f"last sequence number {self.last_sequence_number}"
            )
        if self.format_version >= 3:
            if s.first_row_id is None:
                raise ValidationError("Cannot add a snapshot: first-row-id is null")
            if s.added_rows is None:
                raise ValidationError("Cannot add a snapshot: added-rows is null")
            assert self.next_row_id is not None
            if s.first_row_id < self.next_row_id:
                raise CommitFailedError(
                    "Cannot add a snapshot, first-row-id is behind table next-row-id: "
                    f"{s.first_row_id} < {self.next_row_id}"
                )
            self.next_row_id = s.first_row_id + s.added_rows
        self.snapshots.append(s)
        self.added_snapshot_ids.add(s.snapshot_id)
        if self.format_version >= 2:
            self.last_sequence_number = max(self.last_sequence_number, s.sequence_number)
        self.changed = True

    def _set_snapshot_ref(self, u: SetSnapshotRef) -> None:
        ref = u.ref()
        snapshot = self._snapshot(ref.snapshot_id)
        if snapshot is None:
            raise ValidationError(f"Cannot set {u.ref_name} to unknown snapshot: {ref.snapshot_id}")
        if u.ref_name == MAIN_BRANCH and not ref.is_branch:
            raise ValidationError("the main ref must be a branch, not a tag")
        if self.refs.get(u.ref_name) == ref:
            return
        if u.ref_name == MAIN_BRANCH:
            if (
                self.current_snapshot_id is not None
                and self.current_snapshot_id in self.added_snapshot_ids
                and self.current_snapshot_id != ref.snapshot_id
            ):
                self.intermediate_snapshot_ids.add(self.current_snapshot_id)
            self.intermediate_snapshot_ids.discard(ref.snapshot_id)
            self.current_snapshot_id = ref.snapshot_id
            # As Java's builder: the metadata's time is the committer's clock, never a
            # snapshot's (a writer whose clock runs ahead would otherwise make every later
            # commit look older than the table); the log says when main moved, which for a
            # snapshot added here is its own time, checked against the commit's
            if self.last_updated_ms is None:
                self.last_updated_ms = self._now
            added = ref.snapshot_id in self.added_snapshot_ids
            changed_at = snapshot.timestamp_ms if added else self.last_updated_ms
            self.snapshot_log.append(SnapshotLogEntry(changed_at, ref.snapshot_id))
        self.refs[u.ref_name] = ref
        self.changed = True

    def _remove_snapshot_ref(self, u: RemoveSnapshotRef) -> None:
        if u.ref_name not in self.refs:
            return
        del self.refs[u.ref_name]
        if u.ref_name == MAIN_BRANCH:
            self.current_snapshot_id = None
        self.changed = True

    def _remove_snapshots(self, u: RemoveSnapshots) -> None:
        ids = set(u.snapshot_ids)
        kept = [s for s in self.snapshots if s.snapshot_id not in ids]
        if len(kept) == len(self.snapshots):
            return
        self.snapshots = kept
        self.removed_snapshots = True
        live = {s.snapshot_id for s in kept}
        for name in [n for n, r in self.refs.items() if r.snapshot_id not in live]:
            self._remove_snapshot_ref(RemoveSnapshotRef(name))
        self.statistics = [s for s in self.statistics if s.snapshot_id in live]
        self.partition_statistics = [s for s in self.partition_statistics if s.snapshot_id in live]
        self.changed = True

    # ------------------------------------------------------------------ plain fields

    def _set_location(self, u: SetLocation) -> None:
        if u.location != self.location:
            self.location = u.location
            self.changed = True

    def _set_properties(self, u: SetProperties) -> None:
        schema = next((s for s in self.schemas if s.schema_id == self.current_schema_id), None)
        check_properties(u.updates, self.properties, schema)
        if u.updates:
            self.properties.update(u.updates)
            self.changed = True

    def _remove_properties(self, u: RemoveProperties) -> None:
        for k in u.removals:
            if k in self.properties:
                del self.properties[k]
                self.changed = True

    def _set_statistics(self, u: SetStatistics) -> None:
        st = u.statistics
        if u.snapshot_id is not None and u.snapshot_id != st.snapshot_id:
            raise ValidationError(
                f"set-statistics snapshot-id {u.snapshot_id} does not match the statistics "
                f"file's snapshot-id {st.snapshot_id}"
            )
        self._require_snapshot(st.snapshot_id, "statistics")
        self.statistics = _put(self.statistics, st)
        self.changed = True

    def _require_snapshot(self, snapshot_id: int, what: str) -> None:
        if self._snapshot(snapshot_id) is None:
            raise ValidationError(f"Cannot set {what} for unknown snapshot: {snapshot_id}")

    def _remove_statistics(self, u: RemoveStatistics) -> None:
        kept = [s for s in self.statistics if s.snapshot_id != u.snapshot_id]
        if len(kept) != len(self.statistics):
            self.statistics = kept
            self.changed = True

    def _set_partition_statistics(self, u: SetPartitionStatistics) -> None:
        self._require_snapshot(u.partition_statistics.snapshot_id, "partition statistics")
        self.partition_statistics = _put(self.partition_statistics, u.partition_statistics)
        self.changed = True

    def _remove_partition_statistics(self, u: RemovePartitionStatistics) -> None:
        kept = [s for s in self.partition_statistics if s.snapshot_id != u.snapshot_id]
        if len(kept) != len(self.partition_statistics):
            self.partition_statistics = kept
            self.changed = True

    def _add_encryption_key(self, u: AddEncryptionKey) -> None:
        key: EncryptedKey = u.encryption_key
        existing = [k for k in self.encryption_keys if k.key_id != key.key_id]
        self.encryption_keys = [*existing, key]
        self.changed = True

    def _remove_encryption_key(self, u: RemoveEncryptionKey) -> None:
        kept = [k for k in self.encryption_keys if k.key_id != u.key_id]
        if len(kept) != len(self.encryption_keys):
            self.encryption_keys = kept
            self.changed = True

    # ------------------------------------------------------------------ build

    def build(self, metadata_location: str | None) -> TableMetadata:
        now_ms = self._now
        if not self.changed and metadata_location is None:
            return self.base
        self._check_default_spec_and_order()
        last_updated = self.last_updated_ms if self.last_updated_ms is not None else now_ms
        metadata_log = list(self.base.metadata_log)
        if metadata_location is not None:
            # Every commit reads it: a malformed stored value warns and uses the default;
            # values below 1 mean 1, as in the reference.
            max_size = max(
                1,
                int_property(
                    self.properties,
                    METADATA_PREVIOUS_VERSIONS_MAX,
                    METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT,
                    lenient=True,
                ),
            )
            if len(metadata_log) >= max_size:
                metadata_log = metadata_log[len(metadata_log) - max_size + 1 :]
            metadata_log.append(MetadataLogEntry(self.base.last_updated_ms, metadata_location))
        return replace(
            self.base,
            format_version=self.format_version,
            table_uuid=self.table_uuid,
            location=self.location,
            last_updated_ms=last_updated,
            last_column_id=self.last_column_id,
            schemas=tuple(self.schemas),
            current_schema_id=self.current_schema_id,
            partition_specs=tuple(self.specs),
            default_spec_id=self.default_spec_id,
            last_partition_id=self.last_partition_id,
            sort_orders=tuple(self.sort_orders),
            default_sort_order_id=self.default_sort_order_id,
            last_sequence_number=self.last_sequence_number,
            properties=self.properties,
            current_snapshot_id=self.current_snapshot_id,
            snapshots=tuple(self.snapshots),
            refs=self.refs,
            snapshot_log=tuple(self._final_snapshot_log()),
            metadata_log=tuple(metadata_log),
            statistics=tuple(self.statistics),
            partition_statistics=tuple(self.partition_statistics),
            next_row_id=self.next_row_id,
            encryption_keys=tuple(self.encryption_keys),
        )

    def _check_default_spec_and_order(self) -> None:
        """Every write partitions by the default spec and sorts by the default order under the
        current schema: updates leaving one whose source column is gone (or no longer fits its
        transform) are refused, as Java's builder does. Other specs and orders may refer to
        dropped columns (old data files keep their partition values)."""
        schema = self._current_schema()
        spec = next(s for s in self.specs if s.spec_id == self.default_spec_id)
        order = next(o for o in self.sort_orders if o.order_id == self.default_sort_order_id)
        try:
            spec.check_compatible(schema)
        except ValidationError as e:
            raise ValidationError(
                f"the default partition spec {spec.spec_id} does not fit schema "
                f"{schema.schema_id}: {e}"
            ) from None
        try:
            order.validate(schema)
        except ValidationError as e:
            raise ValidationError(
                f"the default sort order {order.order_id} does not fit schema "
                f"{schema.schema_id}: {e}"
            ) from None

    def _final_snapshot_log(self) -> list[SnapshotLogEntry]:
        if not self.intermediate_snapshot_ids and not self.removed_snapshots:
            return self.snapshot_log
        live = {s.snapshot_id for s in self.snapshots}
        out: list[SnapshotLogEntry] = []
        for e in self.snapshot_log:
            if e.snapshot_id not in live:
                # history before a removed snapshot no longer describes this table
                out.clear()
            elif e.snapshot_id not in self.intermediate_snapshot_ids:
                out.append(e)
        return out


def _put(items: list[Any], new: StatisticsFile | PartitionStatisticsFile) -> list[Any]:
    """``items`` with ``new`` replacing any entry for the same snapshot (order kept)."""
    out = []
    placed = False
    for it in items:
        if it.snapshot_id == new.snapshot_id:
            if not placed:
                out.append(new)
                placed = True
        else:
            out.append(it)
    if not placed:
        out.append(new)
    return out


def _check_partition_names(schema: Schema, specs: Iterable[PartitionSpec]) -> None:
    """A column may not take the name of a partition field of any spec whose source column is
    still in ``schema``, unless it is that source column (an identity field named after its
    column). Iceberg Java checks this whenever the current schema changes and cannot load
    metadata that breaks it."""
    for spec in specs:
        for f in spec.fields:
            if schema.find_column_name(f.source_id) is None:
                continue  # a historical field whose source was dropped
            found = schema.find_field_id(f.name)
            if found is not None and found != f.source_id:
                raise ValidationError(
                    f"column {f.name!r} (id {found}) would have the name of partition field "
                    f"{f.name!r} of spec {spec.spec_id} ({f.transform} of "
                    f"{schema.find_column_name(f.source_id)!r}): Iceberg Java cannot load such "
                    "metadata; give the column another name, or rename the partition field"
                )
