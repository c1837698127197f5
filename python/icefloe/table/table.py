"""The :class:`Table` object and :class:`Transaction`, the path every table change takes.

A change is a list of :class:`~icefloe.metadata.TableUpdate` plus the
:class:`~icefloe.metadata.TableRequirement` that must still hold when it is committed
(:func:`~icefloe.metadata.requirements_for` derives them like the Java client). A
:class:`Transaction` collects changes and commits them together through
:meth:`Catalog.commit_table`, which retries lost races (see :mod:`icefloe.catalog.commit`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from icefloe.exceptions import CommitConflictError, CommitStateUnknownError, ValidationError
from icefloe.expressions.base import AlwaysTrue
from icefloe.metadata import (
    MAIN_BRANCH,
    RemoveProperties,
    SetProperties,
    TableMetadata,
    TableRequirement,
    TableUpdate,
    apply_updates,
    requirements_for,
)
from icefloe.table.pending import PendingUpdate

if TYPE_CHECKING:
    import datetime

    from icefloe.catalog.base import Catalog, Identifier
    from icefloe.expressions.base import BooleanExpression
    from icefloe.io import FileIO
    from icefloe.metadata import MetadataLogEntry, Snapshot, SnapshotLogEntry, SnapshotRef
    from icefloe.partitioning import PartitionSpec
    from icefloe.scan.scan import TableScan
    from icefloe.schema import Schema
    from icefloe.sorting import SortOrder
    from icefloe.table.expire import ExpireResult
    from icefloe.table.inspect import InspectTable
    from icefloe.table.maintenance import RewriteResult
    from icefloe.table.manage_snapshots import ManageSnapshots
    from icefloe.table.producer import SnapshotProducer
    from icefloe.table.update_schema import UpdateSchema
    from icefloe.table.update_spec import ReplaceSortOrder, UpdateSpec
    from icefloe.write.row_level import UpsertResult

__all__ = ["Table", "Transaction", "UpdateProperties"]


class Table:
    """A table as last loaded or committed: identifier, metadata, metadata file, IO, catalog."""

    def __init__(
        self,
        identifier: Identifier,
        metadata: TableMetadata,
        metadata_location: str,
        io: FileIO,
        catalog: Catalog,
    ) -> None:
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.io = io
        self.catalog = catalog

    def __repr__(self) -> str:
        return f"Table({'.'.join(self.identifier)!r}, {self.metadata_location!r})"

    @property
    def name(self) -> str:
        """The dotted identifier."""
        return ".".join(self.identifier)

    def refresh(self) -> Table:
        """Reload the current metadata from the catalog (in place); returns ``self``."""
        fresh = self.catalog.load_table(self.identifier)
        self.metadata = fresh.metadata
        self.metadata_location = fresh.metadata_location
        self.io = fresh.io
        return self

    # -- read access ----------------------------------------------------------------------------
    @property
    def location(self) -> str:
        """The table's base location."""
        return self.metadata.location

    @property
    def format_version(self) -> int:
        """The table format version (1, 2 or 3)."""
        return self.metadata.format_version

    @property
    def properties(self) -> dict[str, str]:
        """The table properties."""
        return dict(self.metadata.properties)

    def schema(self) -> Schema:
        """The current schema."""
        return self.metadata.current_schema()

    def schemas(self) -> dict[int, Schema]:
        """Every schema by id."""
        return {s.schema_id: s for s in self.metadata.schemas}

    def spec(self) -> PartitionSpec:
        """The default partition spec."""
        return self.metadata.spec()

    def specs(self) -> dict[int, PartitionSpec]:
        """Every partition spec by id."""
        return {s.spec_id: s for s in self.metadata.partition_specs}

    def sort_order(self) -> SortOrder:
        """The default sort order."""
        return self.metadata.sort_order()

    def current_snapshot(self) -> Snapshot | None:
        """The current snapshot of ``main``, or None for an empty table."""
        return self.metadata.current_snapshot()

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot in the metadata."""
        return list(self.metadata.snapshots)

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        """The snapshot with that id, if kept."""
        return self.metadata.snapshot_by_id(snapshot_id)

    def history(self) -> list[SnapshotLogEntry]:
        """The snapshot log: when each snapshot became current."""
        return list(self.metadata.snapshot_log)

    def metadata_log(self) -> list[MetadataLogEntry]:
        """Previous metadata files."""
        return list(self.metadata.metadata_log)

    def refs(self) -> dict[str, SnapshotRef]:
        """Branches and tags by name."""
        return dict(self.metadata.refs)

    def snapshot_as_of(self, timestamp_ms: int) -> Snapshot:
        """The snapshot that was current at ``timestamp_ms`` (from the snapshot log)."""
        return self.metadata.snapshot_as_of(timestamp_ms)

    @property
    def inspect(self) -> InspectTable:
        """Metadata tables as Arrow: ``table.inspect.snapshots()``, ``.files()``, ..."""
        from icefloe.table.inspect import InspectTable

        return InspectTable(self)

    def scan(
        self,
        row_filter: str | BooleanExpression = AlwaysTrue(),  # noqa: B008 (a singleton)
        selected_fields: tuple[str, ...] = ("*",),
        case_sensitive: bool = True,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of: datetime.datetime | int | None = None,
        limit: int | None = None,
        options: Mapping[str, str] | None = None,
    ) -> TableScan:
        """A read of this table: see :class:`icefloe.scan.scan.TableScan`."""
        from icefloe.scan.scan import TableScan

        return TableScan(
            self,
            row_filter=row_filter,
            selected_fields=selected_fields,
            case_sensitive=case_sensitive,
            snapshot_id=snapshot_id,
            ref=ref,
            as_of=as_of,
            limit=limit,
            options=options,
        )

    # -- changes --------------------------------------------------------------------------------
    def transaction(self) -> Transaction:
        """Start a transaction; ``with table.transaction() as tx:`` commits on success."""
        return Transaction(self)

    def update_properties(self) -> UpdateProperties:
        """Set and remove properties in one commit: ``with t.update_properties() as u: ...``."""
        return UpdateProperties(self.transaction(), autocommit=True)

    def set_properties(self, properties: Mapping[str, str] | None = None, **kwargs: str) -> Table:
        """Set table properties in one commit."""
        with self.transaction() as tx:
            tx.set_properties(properties, **kwargs)
        return self

    def remove_properties(self, *keys: str) -> Table:
        """Remove table properties in one commit."""
        with self.transaction() as tx:
            tx.remove_properties(*keys)
        return self

    def update_schema(self, case_sensitive: bool = True) -> UpdateSchema:
        """Evolve the schema in one commit: ``with t.update_schema() as u: u.add_column(...)``."""
        from icefloe.table.update_schema import UpdateSchema

        return UpdateSchema(self.transaction(), case_sensitive=case_sensitive, autocommit=True)

    def update_spec(self, case_sensitive: bool = True) -> UpdateSpec:
        """Evolve the partition spec in one commit: ``with t.update_spec() as u: ...``."""
        from icefloe.table.update_spec import UpdateSpec

        return UpdateSpec(self.transaction(), case_sensitive=case_sensitive, autocommit=True)

    def replace_sort_order(self, case_sensitive: bool = True) -> ReplaceSortOrder:
        """Set a new default sort order: ``with t.replace_sort_order() as o: o.asc("id")``."""
        from icefloe.table.update_spec import ReplaceSortOrder

        return ReplaceSortOrder(self.transaction(), case_sensitive=case_sensitive, autocommit=True)

    def upgrade_format_version(self, format_version: int) -> Table:
        """Upgrade the table format (to 2 or 3; v3 starts row lineage at ``next-row-id`` 0)."""
        with self.transaction() as tx:
            tx.upgrade_format_version(format_version)
        return self

    def manage_snapshots(self) -> ManageSnapshots:
        """Branches, tags, rollback and cherry-pick in one commit."""
        from icefloe.table.manage_snapshots import ManageSnapshots

        return ManageSnapshots(self.transaction(), autocommit=True)

    def expire_snapshots(
        self,
        *,
        older_than_ms: int | None = None,
        retain_last: int | None = None,
        snapshot_ids: Iterable[int] | None = None,
        delete_files: bool = True,
        dry_run: bool = False,
        max_workers: int | None = None,
    ) -> ExpireResult:
        """Expire snapshots by the spec's retention policy and delete unreachable files.

        See :func:`icefloe.table.expire.expire_snapshots`.
        """
        from icefloe.table.expire import expire_snapshots

        return expire_snapshots(
            self,
            older_than_ms=older_than_ms,
            retain_last=retain_last,
            snapshot_ids=snapshot_ids,
            delete_files=delete_files,
            dry_run=dry_run,
            max_workers=max_workers,
        )

    def append(
        self,
        data: Any,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Append Arrow data (table, batches, stream, pandas) in one ``append`` snapshot."""
        with self.transaction() as tx:
            tx.append(data, branch=branch, snapshot_properties=snapshot_properties)
        return self

    def overwrite(
        self,
        data: Any,
        overwrite_filter: BooleanExpression | str | None = None,
        *,
        case_sensitive: bool = True,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Replace the rows matching ``overwrite_filter`` (default: all) by ``data``."""
        with self.transaction() as tx:
            tx.overwrite(
                data,
                overwrite_filter,
                case_sensitive=case_sensitive,
                branch=branch,
                snapshot_properties=snapshot_properties,
            )
        return self

    def dynamic_partition_overwrite(
        self,
        data: Any,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Replace the partitions ``data`` touches by ``data`` in one commit."""
        with self.transaction() as tx:
            tx.dynamic_partition_overwrite(
                data, branch=branch, snapshot_properties=snapshot_properties
            )
        return self

    def add_files(
        self,
        paths: Iterable[str],
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        check_duplicate_files: bool = True,
    ) -> Table:
        """Register existing Parquet files as data files in one ``append`` commit."""
        with self.transaction() as tx:
            tx.add_files(
                paths,
                branch=branch,
                snapshot_properties=snapshot_properties,
                check_duplicate_files=check_duplicate_files,
            )
        return self

    # -- row-level changes and maintenance (icefloe.write.row_level, icefloe.table.maintenance)
    def delete(
        self,
        delete_filter: str | BooleanExpression,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        case_sensitive: bool = True,
    ) -> Table:
        """Delete the rows matching ``delete_filter`` in one snapshot (``write.delete.mode``:
        copy-on-write rewrites files, merge-on-read writes deletion vectors / position deletes)."""
        with self.transaction() as tx:
            tx.delete(
                delete_filter,
                branch=branch,
                snapshot_properties=snapshot_properties,
                case_sensitive=case_sensitive,
            )
        return self

    def upsert(
        self,
        data: Any,
        join_cols: Sequence[str],
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> UpsertResult:
        """Update rows whose ``join_cols`` key exists and insert the others, in one snapshot."""
        with self.transaction() as tx:
            result = tx.upsert(
                data, join_cols, branch=branch, snapshot_properties=snapshot_properties
            )
        return result

    def delete_by_keys(
        self,
        keys: Any,
        join_cols: Sequence[str],
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Delete the rows whose ``join_cols`` equal a row of ``keys`` (equality delete files,
        no data read)."""
        with self.transaction() as tx:
            tx.delete_by_keys(
                keys, join_cols, branch=branch, snapshot_properties=snapshot_properties
            )
        return self

    def rewrite_data_files(
        self,
        *,
        target_file_size: int | None = None,
        min_input_files: int = 2,
        row_filter: str | BooleanExpression = AlwaysTrue(),  # noqa: B008 (a singleton)
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> RewriteResult:
        """Compact small files and apply deletes in one ``replace`` snapshot (see
        :func:`icefloe.table.maintenance.rewrite_data_files`)."""
        with self.transaction() as tx:
            result = tx.rewrite_data_files(
                target_file_size=target_file_size,
                min_input_files=min_input_files,
                row_filter=row_filter,
                branch=branch,
                snapshot_properties=snapshot_properties,
            )
        return result

    def remove_orphan_files(
        self,
        older_than: datetime.datetime | datetime.timedelta | int | None = None,
        *,
        dry_run: bool = False,
        location: str | None = None,
    ) -> list[str]:
        """Delete (or with ``dry_run`` list) files under the table location that no metadata
        references and that are older than ``older_than`` (default: 3 days)."""
        from icefloe.table.maintenance import remove_orphan_files

        return remove_orphan_files(
            self.io,
            self.metadata,
            self.metadata_location,
            older_than=older_than,
            dry_run=dry_run,
            location=location,
        )

    def _do_commit(
        self, requirements: Iterable[TableRequirement], updates: Iterable[TableUpdate]
    ) -> None:
        result = self.catalog.commit_table(self, list(requirements), list(updates))
        self.metadata = result.metadata
        self.metadata_location = result.metadata_location


class Transaction:
    """Changes to one table that are committed together, or not at all.

    Each change is applied to :attr:`metadata` immediately (so later changes see earlier ones
    and invalid ones fail early); :meth:`commit_transaction` sends them all with the
    requirements derived from the metadata the transaction started from.
    """

    def __init__(self, table: Table) -> None:
        self.table = table
        self._base = table.metadata
        self.metadata = table.metadata
        self._updates: list[TableUpdate] = []
        self._requirements: list[TableRequirement] = []
        self._done = False
        # Every change in order: a producer (rebuilt on retry) or fixed updates.
        self._ops: list[SnapshotProducer | tuple[list[TableUpdate], list[TableRequirement]]] = []

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit_transaction()
        else:
            self._done = True  # discard
            self._abort_producers()

    @property
    def updates(self) -> tuple[TableUpdate, ...]:
        """The updates collected so far."""
        return tuple(self._updates)

    def _check_open(self) -> None:
        if self._done:
            raise ValidationError("this transaction was already committed or discarded")

    def apply(
        self,
        updates: Iterable[TableUpdate],
        requirements: Iterable[TableRequirement] = (),
    ) -> Transaction:
        """Add updates (and extra requirements); they are applied to :attr:`metadata` now."""
        self._check_open()
        ups = list(updates)
        reqs = list(requirements)
        self.metadata = apply_updates(self.metadata, ups)
        self._updates.extend(ups)
        self._requirements.extend(reqs)
        self._ops.append((ups, reqs))
        return self

    def _apply_producer(self, producer: SnapshotProducer) -> Transaction:
        """Build a snapshot producer on the current metadata and add its updates."""
        self._check_open()
        ups = producer.build(self.metadata)
        self.metadata = apply_updates(self.metadata, ups)
        self._updates.extend(ups)
        self._ops.append(producer)
        return self

    def _producers(self) -> list[SnapshotProducer]:
        from icefloe.table.producer import SnapshotProducer

        return [op for op in self._ops if isinstance(op, SnapshotProducer)]

    def _abort_producers(self) -> None:
        for p in self._producers():
            p.abort()

    def _replayable(self) -> bool:
        """Whether a lost race can be retried by rebuilding: only producers and properties."""
        if not self._producers():
            return False
        for op in self._ops:
            if isinstance(op, tuple):
                ups, reqs = op
                if reqs or not all(isinstance(u, SetProperties | RemoveProperties) for u in ups):
                    return False
        return True

    def _replay(self) -> None:
        """Rebuild every change on the table's (refreshed) metadata."""
        self._base = self.table.metadata
        self.metadata = self.table.metadata
        self._updates = []
        for op in self._ops:
            ups = op[0] if isinstance(op, tuple) else op.build(self.metadata)
            self.metadata = apply_updates(self.metadata, ups)
            self._updates.extend(ups)

    def append(
        self,
        data: Any,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Transaction:
        """Write ``data`` as data files and add them in an ``append`` snapshot."""
        from icefloe.write import operations

        self._check_open()
        return operations.append(self, data, branch=branch, snapshot_properties=snapshot_properties)

    def overwrite(
        self,
        data: Any,
        overwrite_filter: BooleanExpression | str | None = None,
        *,
        case_sensitive: bool = True,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Transaction:
        """Replace the rows matching ``overwrite_filter`` (default: every row) by ``data``
        in one ``overwrite`` snapshot (files partly matching are rewritten)."""
        from icefloe.write import operations

        self._check_open()
        return operations.overwrite(
            self,
            data,
            overwrite_filter,
            case_sensitive=case_sensitive,
            branch=branch,
            snapshot_properties=snapshot_properties,
        )

    def dynamic_partition_overwrite(
        self,
        data: Any,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Transaction:
        """Replace the partitions ``data`` touches by ``data``."""
        from icefloe.write import operations

        self._check_open()
        return operations.dynamic_partition_overwrite(
            self, data, branch=branch, snapshot_properties=snapshot_properties
        )

    def add_files(
        self,
        paths: Iterable[str],
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        check_duplicate_files: bool = True,
    ) -> Transaction:
        """Register existing Parquet files (with field ids or a name mapping) as data files."""
        from icefloe.write import operations

        self._check_open()
        return operations.add_files(
            self,
            paths,
            branch=branch,
            snapshot_properties=snapshot_properties,
            check_duplicate_files=check_duplicate_files,
        )

    def delete(
        self,
        delete_filter: str | BooleanExpression,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        case_sensitive: bool = True,
    ) -> Transaction:
        """Delete the rows matching ``delete_filter`` (see :meth:`Table.delete`)."""
        from icefloe.write.row_level import delete

        self._check_open()
        delete(
            self,
            delete_filter,
            branch=branch,
            snapshot_properties=snapshot_properties,
            case_sensitive=case_sensitive,
        )
        return self

    def upsert(
        self,
        data: Any,
        join_cols: Sequence[str],
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> UpsertResult:
        """Update or insert rows by key (see :meth:`Table.upsert`)."""
        from icefloe.write.row_level import upsert

        self._check_open()
        return upsert(self, data, join_cols, branch=branch, snapshot_properties=snapshot_properties)

    def delete_by_keys(
        self,
        keys: Any,
        join_cols: Sequence[str],
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Transaction:
        """Delete rows by key with equality delete files (see :meth:`Table.delete_by_keys`)."""
        from icefloe.write.row_level import delete_by_keys

        self._check_open()
        delete_by_keys(
            self, keys, join_cols, branch=branch, snapshot_properties=snapshot_properties
        )
        return self

    def rewrite_data_files(
        self,
        *,
        target_file_size: int | None = None,
        min_input_files: int = 2,
        row_filter: str | BooleanExpression = AlwaysTrue(),  # noqa: B008 (a singleton)
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> RewriteResult:
        """Compact data files (see :meth:`Table.rewrite_data_files`)."""
        from icefloe.table.maintenance import rewrite_data_files

        self._check_open()
        return rewrite_data_files(
            self,
            target_file_size=target_file_size,
            min_input_files=min_input_files,
            row_filter=row_filter,
            branch=branch,
            snapshot_properties=snapshot_properties,
        )

    def set_properties(
        self, properties: Mapping[str, str] | None = None, **kwargs: str
    ) -> Transaction:
        """Set table properties."""
        merged = {**dict(properties or {}), **kwargs}
        for key, value in merged.items():
            if not isinstance(value, str):
                raise ValidationError(f"table property {key!r} must be a string, got {value!r}")
        if not merged:
            return self
        return self.apply([SetProperties(merged)])

    def remove_properties(self, *keys: str) -> Transaction:
        """Remove table properties (missing keys are ignored)."""
        if not keys:
            return self
        return self.apply([RemoveProperties(tuple(keys))])

    def update_schema(self, case_sensitive: bool = True) -> UpdateSchema:
        """A schema change within this transaction (applied when the builder commits)."""
        from icefloe.table.update_schema import UpdateSchema

        return UpdateSchema(self, case_sensitive=case_sensitive)

    def update_spec(self, case_sensitive: bool = True) -> UpdateSpec:
        """A partition spec change within this transaction."""
        from icefloe.table.update_spec import UpdateSpec

        return UpdateSpec(self, case_sensitive=case_sensitive)

    def replace_sort_order(self, case_sensitive: bool = True) -> ReplaceSortOrder:
        """A new default sort order within this transaction."""
        from icefloe.table.update_spec import ReplaceSortOrder

        return ReplaceSortOrder(self, case_sensitive=case_sensitive)

    def manage_snapshots(self) -> ManageSnapshots:
        """Ref and history changes within this transaction."""
        from icefloe.table.manage_snapshots import ManageSnapshots

        return ManageSnapshots(self)

    def upgrade_format_version(self, format_version: int) -> Transaction:
        """Upgrade the format version (2 or 3; never down)."""
        from icefloe.metadata import UpgradeFormatVersion

        if format_version not in (1, 2, 3):
            raise ValidationError(f"unsupported format version {format_version!r}: use 2 or 3")
        if format_version < self.metadata.format_version:
            raise ValidationError(
                f"cannot downgrade a v{self.metadata.format_version} table to v{format_version}"
            )
        if format_version == self.metadata.format_version:
            return self
        return self.apply([UpgradeFormatVersion(format_version)])

    def commit_transaction(self) -> Table:
        """Commit every collected change in one atomic catalog commit."""
        self._check_open()
        self._done = True
        if not self._updates:
            return self.table
        from icefloe.catalog.commit import RetryPolicy

        policy = RetryPolicy.from_properties(self._base.properties)
        # Pure additions (appends) always apply: they retry until the total timeout instead of
        # giving up after commit.retry.num-retries lost races.
        always = self._replayable() and all(p.always_applies for p in self._producers())
        deadline = time.monotonic() + policy.total_timeout_ms / 1000.0
        attempt = 0
        while True:
            requirements = requirements_for(self._base, self._updates) + self._requirements
            try:
                self.table._do_commit(requirements, self._updates)
            except CommitConflictError:
                # Another writer moved the table: producers rebuild on the new state.
                attempt += 1
                wait = policy.wait_ms(min(attempt, 5) if always else attempt) / 1000.0
                exhausted = (
                    time.monotonic() + wait > deadline if always else attempt > policy.num_retries
                )
                if not self._replayable() or exhausted:
                    self._abort_producers()
                    raise
                time.sleep(wait)
                try:
                    self.table.refresh()
                    self._replay()
                except BaseException:
                    self._abort_producers()
                    raise
                continue
            except CommitStateUnknownError:
                raise  # the new metadata may reference the files: keep them
            except BaseException:
                self._abort_producers()
                raise
            for p in self._producers():
                p.committed(True)
            return self.table


class UpdateProperties(PendingUpdate):
    """A property change: ``set(key, value)`` and ``remove(key)``, committed on ``commit()``."""

    def __init__(self, transaction: Transaction, autocommit: bool = False) -> None:
        self._tx = transaction
        self._autocommit = autocommit
        self._set: dict[str, str] = {}
        self._remove: set[str] = set()

    def set(self, key: str, value: str) -> UpdateProperties:
        """Set one property."""
        if key in self._remove:
            raise ValidationError(f"property {key!r} is both set and removed")
        self._set[key] = value
        return self

    def remove(self, key: str) -> UpdateProperties:
        """Remove one property."""
        if key in self._set:
            raise ValidationError(f"property {key!r} is both set and removed")
        self._remove.add(key)
        return self

    def commit(self) -> None:
        """Apply the change (and commit it, when not part of a larger transaction)."""
        if self._set:
            self._tx.set_properties(self._set)
        if self._remove:
            self._tx.remove_properties(*sorted(self._remove))
        if self._autocommit:
            self._tx.commit_transaction()
