"""The :class:`Table` object: a catalog entry's current metadata, its file IO, reads, and the
change methods, each a one-change :class:`~icefloe.table.transaction.Transaction` (the path
every table change takes; ``Transaction`` and ``UpdateProperties`` are re-exported here).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from icefloe.exceptions import (
    CommitConflictError,
    NoSuchTableError,
    NotFoundError,
    ValidationError,
)
from icefloe.expressions.base import AlwaysTrue
from icefloe.metadata import MAIN_BRANCH, TableMetadata, TableRequirement, TableUpdate
from icefloe.table.committer import Committer, Identifier, run_again_on_conflict
from icefloe.table.metadata_access import MetadataAccess
from icefloe.table.transaction import Transaction, UpdateProperties
from icefloe.table.versions import supersedes

if TYPE_CHECKING:
    import datetime

    from icefloe.expressions.base import BooleanExpression
    from icefloe.io import FileIO
    from icefloe.metadata import PartitionStatisticsFile, StatisticsFile
    from icefloe.progress import ProgressArg
    from icefloe.schema import Schema
    from icefloe.table.changelog_scan import ChangelogScan
    from icefloe.table.dangling_deletes import RemoveDanglingDeletesResult
    from icefloe.table.expire import ExpireResult
    from icefloe.table.incremental_scan import IncrementalAppendScan
    from icefloe.table.inspect import InspectTable
    from icefloe.table.maintenance import RewritePlan, RewriteResult
    from icefloe.table.manage_snapshots import ManageSnapshots
    from icefloe.table.rewrite_manifests import RewriteManifestsResult
    from icefloe.table.row_level import UpsertResult
    from icefloe.table.scan import TableScan
    from icefloe.table.update_schema import UpdateSchema
    from icefloe.table.update_spec import ReplaceSortOrder, UpdateSpec

__all__ = ["Table", "Transaction", "UpdateProperties"]

_R = TypeVar("_R")
#: How many times a change is planned again after another writer expired the state it read.
_REPLANS_AFTER_MISSING_FILES = 5


#: Held while a table object takes a new version (see :meth:`Table._adopt`): short, and one
#: for every table so that tables stay picklable.
_ADOPT_LOCK = threading.Lock()


class Table(MetadataAccess):
    """A table as last loaded or committed: identifier, metadata, metadata file, IO, catalog.

    Threads may share one: a commit or refresh that ends after another thread's gave the
    object a later version of the table leaves that later version in place."""

    def __init__(
        self,
        identifier: Identifier,
        metadata: TableMetadata,
        metadata_location: str,
        io: FileIO,
        catalog: Committer,
    ) -> None:
        self.identifier = identifier
        #: the metadata and its file, stored together so that a reader never pairs one
        #: version's metadata with another's file (see :meth:`metadata_and_location`)
        self._state: tuple[TableMetadata, str] = (metadata, metadata_location)
        self.io = io
        self.catalog = catalog
        self._complete: TableMetadata | None = None  # metadata known to hold every snapshot

    def __repr__(self) -> str:
        return f"Table({'.'.join(self.identifier)!r}, {self.metadata_location!r})"

    @property
    def metadata(self) -> TableMetadata:
        """The table's metadata as last loaded or committed."""
        return self._state[0]

    @metadata.setter
    def metadata(self, value: TableMetadata) -> None:
        self._state = (value, self._state[1])

    @property
    def metadata_location(self) -> str:
        """The file of :attr:`metadata` ("" for a table not created yet)."""
        return self._state[1]

    @metadata_location.setter
    def metadata_location(self, value: str) -> None:
        self._state = (self._state[0], value)

    def metadata_and_location(self) -> tuple[TableMetadata, str]:
        """:attr:`metadata` and :attr:`metadata_location` of one version, read at once (a
        commit through the same object from another thread may change both meanwhile)."""
        return self._state

    @property
    def name(self) -> str:
        """The dotted identifier."""
        return ".".join(self.identifier)

    def refresh(self) -> Table:
        """Reload the current metadata from the catalog (in place); returns ``self``.

        Raises :class:`NoSuchTableError` when the name now holds another table (dropped and
        created again, or renamed away and replaced: its UUID differs), as the reference
        does: a change made through this object must not land in that table."""
        since = self.metadata
        fresh = self.catalog.load_table(self.identifier)
        was, now = self.metadata.table_uuid, fresh.metadata.table_uuid
        if was and now and was != now:
            raise NoSuchTableError(
                f"table {self.name} is not the table this object loaded (its UUID was {was}, "
                f"now {now}: it was dropped or renamed and another took its name); load it again"
            )
        # the catalog's version, unless another thread's commit or refresh meanwhile gave
        # this object a later one (a pointer the catalog moved back is taken otherwise)
        self._adopt(fresh.metadata, fresh.metadata_location, since)
        self.io = fresh.io
        return self

    def _adopt(
        self, metadata: TableMetadata, location: str, since: TableMetadata | None = None
    ) -> None:
        """Take ``metadata`` (at ``location``) as this object's version of the table, unless
        the object holds a later version that it did not hold when the caller began (the
        metadata ``since``; None: never take an older version)."""
        with _ADOPT_LOCK:
            current, current_location = self._state
            if current is not since and supersedes(current, current_location, metadata, location):
                return
            self._state = (metadata, location)

    # -- read access (the metadata's own values: icefloe.table.metadata_access) -----------------
    def load_every_snapshot(self) -> bool:
        """Load the snapshots the catalog left out of this table's metadata (a REST catalog
        with ``snapshot-loading-mode=refs`` loads only those refs point at); True when there
        were some. Time travel calls it when a snapshot it needs is missing; once the metadata
        is known to be whole, it asks the catalog no more."""
        since, location = self._state
        if since is self._complete:
            return False
        full = self.catalog.load_every_snapshot(self) if self.catalog is not None else None
        with _ADOPT_LOCK:
            if full is None:
                self._complete = since  # the catalog left nothing out of it
            elif self._state[0] is since:
                # the same version, whole; a commit that moved the object meanwhile stays
                self._state = (full, location)
                self._complete = full
        return full is not None

    @property
    def inspect(self) -> InspectTable:
        """Metadata tables as Arrow: ``table.inspect.snapshots()``, ``.files()``, ..."""
        from icefloe.table.inspect import InspectTable

        return InspectTable(self)

    def scan(
        self,
        row_filter: str | BooleanExpression = AlwaysTrue(),  # noqa: B008 (a singleton)
        selected_fields: Sequence[str] | None = ("*",),
        case_sensitive: bool = True,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of: datetime.datetime | int | None = None,
        limit: int | None = None,
        options: Mapping[str, str] | None = None,
    ) -> TableScan:
        """A read of this table: see :class:`icefloe.table.scan.TableScan`."""
        from icefloe.table.scan import TableScan

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

    def incremental_append_scan(
        self,
        from_snapshot_id: int | str | None = None,
        to_snapshot_id: int | str | None = None,
        *,
        from_inclusive: bool = False,
        row_filter: str | BooleanExpression = AlwaysTrue(),  # noqa: B008 (a singleton)
        selected_fields: Sequence[str] | None = ("*",),
        case_sensitive: bool = True,
        limit: int | None = None,
        options: Mapping[str, str] | None = None,
    ) -> IncrementalAppendScan:
        """A read of the rows the ``append`` snapshots after ``from_snapshot_id`` (exclusive
        unless ``from_inclusive``; None: from the first snapshot) up to ``to_snapshot_id``
        (default: the current snapshot) added; ids or tag names. See
        :class:`icefloe.table.incremental_scan.IncrementalAppendScan`."""
        from icefloe.table.incremental_scan import IncrementalAppendScan

        return IncrementalAppendScan(
            self,
            from_snapshot_id,
            to_snapshot_id,
            from_inclusive=from_inclusive,
            row_filter=row_filter,
            selected_fields=selected_fields,
            case_sensitive=case_sensitive,
            limit=limit,
            options=options,
        )

    def changelog_scan(
        self,
        from_snapshot_id: int | str | None = None,
        to_snapshot_id: int | str | None = None,
        *,
        from_inclusive: bool = False,
        row_filter: str | BooleanExpression = AlwaysTrue(),  # noqa: B008 (a singleton)
        selected_fields: Sequence[str] | None = ("*",),
        case_sensitive: bool = True,
        options: Mapping[str, str] | None = None,
    ) -> ChangelogScan:
        """A read of the rows each snapshot after ``from_snapshot_id`` (exclusive unless
        ``from_inclusive``; None: from the first) up to ``to_snapshot_id`` (default: the
        current snapshot) inserted and deleted, with ``_change_type``, ``_change_ordinal``
        and ``_commit_snapshot_id``, as Iceberg's changelog scan gives them. See
        :class:`icefloe.table.changelog_scan.ChangelogScan`."""
        from icefloe.table.changelog_scan import ChangelogScan

        return ChangelogScan(
            self,
            from_snapshot_id,
            to_snapshot_id,
            from_inclusive=from_inclusive,
            row_filter=row_filter,
            selected_fields=selected_fields,
            case_sensitive=case_sensitive,
            options=options,
        )

    # -- changes --------------------------------------------------------------------------------
    def transaction(self) -> Transaction:
        """Start a transaction; ``with table.transaction() as tx:`` commits on success."""
        return Transaction(self)

    def _replanned(self, change: Callable[[Transaction], _R], data: Any = None) -> _R:
        """``change`` made in a transaction of its own and committed. A change that reads the
        table to plan (a delete, an overwrite, a compaction) reads the manifests of the state
        this handle holds: when another writer expired that state meanwhile (a file of it is
        not found) and the table has moved, the change is planned again on the newest state,
        as after a lost race. Nothing of the failed attempt was committed (its files are
        deleted with its transaction). A change whose input ``data`` is a stream the attempt
        used up is not planned again (it would run without its rows): it raises
        :class:`CommitConflictError`."""
        first_schema = self.metadata.current_schema()
        for attempt in range(_REPLANS_AFTER_MISSING_FILES):
            tx = self.transaction()
            try:
                with tx:
                    result = change(tx)
                return result
            except ValidationError as exc:
                if attempt:
                    _raise_if_schema_moved(exc, first_schema, self.metadata.current_schema())
                raise
            except NotFoundError as exc:
                if tx.may_have_committed:
                    raise
                was = self.metadata_location
                self.refresh()
                if self.metadata_location == was:
                    raise  # not a race: a file of the current state is missing
                if _one_shot(data):
                    raise CommitConflictError(
                        "another writer changed the table and expired the state this change "
                        "was planned on, and its input was a stream this attempt read: nothing "
                        "was committed; run the change again with the input"
                    ) from exc
                self.load_every_snapshot()
        with self.transaction() as tx:
            return change(tx)

    def update_properties(self) -> UpdateProperties:
        """Set and remove properties in one commit: ``with t.update_properties() as u: ...``."""
        return UpdateProperties(self.transaction(), autocommit=True)

    def set_properties(
        self, properties: Mapping[str, str] | None = None, /, **kwargs: str
    ) -> Table:
        """Set table properties in one commit: from a mapping, keyword arguments, or both
        (``properties`` is positional, so a property may be named ``properties``)."""
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
        older_than_ms: int | datetime.datetime | None = None,
        retain_last: int | None = None,
        snapshot_ids: Iterable[int] | None = None,
        delete_files: bool = True,
        dry_run: bool = False,
        max_workers: int | None = None,
        progress: ProgressArg = None,
    ) -> ExpireResult:
        """Expire snapshots by the spec's retention policy and delete unreachable files.

        See :func:`icefloe.table.expire.expire_snapshots`; ``progress=True`` shows a bar.
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
            progress=progress,
        )

    def append(
        self,
        data: Any,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Append ``data`` in one ``append`` snapshot.

        ``data`` is a pyarrow Table, RecordBatch or RecordBatchReader, a pandas DataFrame, a
        dict of column names to arrays or lists, or an object exporting an Arrow stream (a
        table scan, a polars DataFrame, a DuckDB result); a list of dicts needs
        ``pyarrow.Table.from_pylist(rows)`` first, a pyarrow dataset ``dataset.to_table()`` or
        ``dataset.scanner().to_reader()``.

        Data without rows commits nothing: no snapshot, no metadata file, no catalog request.
        """
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
        """Replace the rows matching ``overwrite_filter`` (default: all) by ``data`` (any
        input :meth:`append` accepts)."""
        self._replanned(
            lambda tx: tx.overwrite(
                data,
                overwrite_filter,
                case_sensitive=case_sensitive,
                branch=branch,
                snapshot_properties=snapshot_properties,
            ),
            data,
        )
        return self

    def dynamic_partition_overwrite(
        self,
        data: Any,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Replace the partitions ``data`` touches by ``data`` in one commit (any input
        :meth:`append` accepts)."""
        self._replanned(
            lambda tx: tx.dynamic_partition_overwrite(
                data, branch=branch, snapshot_properties=snapshot_properties
            ),
            data,
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

    # -- row-level changes and maintenance (icefloe.table.row_level, icefloe.table.maintenance)
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
        self._replanned(
            lambda tx: tx.delete(
                delete_filter,
                branch=branch,
                snapshot_properties=snapshot_properties,
                case_sensitive=case_sensitive,
            )
        )
        return self

    def upsert(
        self,
        data: Any,
        join_cols: str | Sequence[str] | None = None,
        when_matched_update_all: bool = True,
        when_not_matched_insert_all: bool = True,
        case_sensitive: bool = True,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> UpsertResult:
        """Update rows whose ``join_cols`` key exists and insert the others, in one snapshot
        (``data``: any input :meth:`append` accepts). Without ``join_cols`` the key is the
        schema's identifier fields (as in PyIceberg; :class:`ValidationError` when the table has
        none). ``when_matched_update_all=False`` only inserts the rows of new keys;
        ``when_not_matched_insert_all=False`` only updates existing keys (PyIceberg's
        parameters; both false is a :class:`ValidationError`). ``case_sensitive=False``
        matches ``join_cols`` to the schema ignoring case. An equality-mode upsert
        (``write.upsert.mode=equality``) that conflicts with another writer's rows of its keys
        runs again on the newer table (see :func:`icefloe.table.row_level.upsert_runs_again`)."""
        from icefloe.table.row_level import EQUALITY_UPSERT_RETRIES, upsert_runs_again

        if _one_shot(data):  # an upsert holds its rows anyway; read once, tried again
            from icefloe.write.input import to_arrow_table

            data = to_arrow_table(data)
        first_schema = self.metadata.current_schema()
        return run_again_on_conflict(
            lambda: self._replanned(
                lambda tx: tx.upsert(
                    data,
                    join_cols,
                    when_matched_update_all,
                    when_not_matched_insert_all,
                    case_sensitive,
                    branch=branch,
                    snapshot_properties=snapshot_properties,
                )
            ),
            self.refresh,
            EQUALITY_UPSERT_RETRIES,
            runs_again=lambda: upsert_runs_again(self.metadata),
            rerun_failed=lambda exc: _raise_if_schema_moved(
                exc, first_schema, self.metadata.current_schema()
            ),
        )

    def delete_by_keys(
        self,
        keys: Any,
        join_cols: str | Sequence[str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Table:
        """Delete the rows whose ``join_cols`` (by default the schema's identifier fields)
        equal a row of ``keys`` (any input :meth:`append` accepts; equality delete files, no
        data read).

        Its deletes reach only the partitions whose files may hold the keys; when another
        writer adds data that may hold them to another partition meanwhile (serializable
        isolation, the default of ``write.delete.isolation-level``), it runs again on the
        newer table, whose deletes then reach that data too."""
        from icefloe.table.row_level import EQUALITY_UPSERT_RETRIES

        if _one_shot(keys):  # the keys are held anyway; read once, tried again
            from icefloe.write.input import to_arrow_table

            keys = to_arrow_table(keys)
        run_again_on_conflict(
            lambda: self._replanned(
                lambda tx: tx.delete_by_keys(
                    keys, join_cols, branch=branch, snapshot_properties=snapshot_properties
                )
            ),
            self.refresh,
            EQUALITY_UPSERT_RETRIES,
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
        progress: ProgressArg = None,
        remove_dangling_deletes: bool = False,
    ) -> RewriteResult:
        """Compact small files and apply deletes in one ``replace`` snapshot (see
        :func:`icefloe.table.maintenance.rewrite_data_files`); ``progress=True`` shows a bar;
        ``remove_dangling_deletes=True`` then removes the delete files left dangling."""
        return self._replanned(
            lambda tx: tx.rewrite_data_files(
                target_file_size=target_file_size,
                min_input_files=min_input_files,
                row_filter=row_filter,
                branch=branch,
                snapshot_properties=snapshot_properties,
                progress=progress,
                remove_dangling_deletes=remove_dangling_deletes,
            )
        )

    def plan_rewrite_data_files(
        self,
        *,
        target_file_size: int | None = None,
        min_input_files: int = 2,
        row_filter: str | BooleanExpression = AlwaysTrue(),  # noqa: B008 (a singleton)
        branch: str = MAIN_BRANCH,
    ) -> RewritePlan:
        """What :meth:`rewrite_data_files` would rewrite now, without reading or writing."""
        from icefloe.table.maintenance import plan_rewrite_data_files

        return plan_rewrite_data_files(
            Transaction(self),  # only read, never committed: read-only tables plan too
            target_file_size=target_file_size,
            min_input_files=min_input_files,
            row_filter=row_filter,
            branch=branch,
        )

    def remove_dangling_deletes(
        self,
        *,
        branch: str = MAIN_BRANCH,
        dry_run: bool = False,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> RemoveDanglingDeletesResult:
        """Remove the delete files no live data file can apply to, in one ``replace``
        snapshot (see :mod:`icefloe.table.dangling_deletes`); ``dry_run`` only reports them."""
        from icefloe.table.dangling_deletes import remove_dangling_deletes

        if dry_run:  # only read, never committed: read-only tables report too
            return remove_dangling_deletes(Transaction(self), branch=branch, dry_run=dry_run)
        return self._replanned(
            lambda tx: remove_dangling_deletes(
                tx, branch=branch, snapshot_properties=snapshot_properties
            )
        )

    def rewrite_manifests(
        self,
        *,
        spec_id: int | None = None,
        target_manifest_size: int | None = None,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> RewriteManifestsResult:
        """Regroup the data manifests by partition in one ``replace`` snapshot (see
        :mod:`icefloe.table.rewrite_manifests`); ``dry_run`` only counts."""
        from icefloe.table.rewrite_manifests import (
            NothingLeftToRewrite,
            RewriteManifestsResult,
            plan_rewrite_manifests,
            rewrite_manifests,
        )

        if dry_run:
            return plan_rewrite_manifests(
                self, spec_id=spec_id, target_manifest_size=target_manifest_size, branch=branch
            )
        try:
            with self.transaction() as tx:
                result = rewrite_manifests(
                    tx,
                    spec_id=spec_id,
                    target_manifest_size=target_manifest_size,
                    branch=branch,
                    snapshot_properties=snapshot_properties,
                )
        except NothingLeftToRewrite:  # another rewrite regrouped them first
            return RewriteManifestsResult(0, 0, 0, 0)
        return result

    def compute_statistics(
        self,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        *,
        compression_codec: str | None = "zstd",
    ) -> StatisticsFile:
        """Theta-sketch statistics of ``columns`` (default: every top-level primitive column)
        over the live rows of ``snapshot_id`` (default: current), as a Puffin file with ``ndv``
        per column, committed with ``set-statistics`` (replacing that snapshot's older file)."""
        tx = self.transaction()  # a failed commit deletes the file (see Transaction)
        stats = tx.compute_statistics(columns, snapshot_id, compression_codec=compression_codec)
        tx.commit_transaction()
        return stats

    def compute_partition_statistics(
        self, snapshot_id: int | None = None, *, incremental: bool = True
    ) -> PartitionStatisticsFile | None:
        """Partition statistics of ``snapshot_id`` (default: current): per (spec, partition)
        record, file, size, delete and deletion-vector counts and the last update, computed as
        Iceberg Java does (incrementally from the newest earlier file on the snapshot's ancestry
        unless ``incremental=False``), written as Parquet and committed with
        ``set-partition-statistics``. Returns None when the snapshot has no files."""
        tx = self.transaction()  # a failed commit deletes a new file (see Transaction)
        before = {s.statistics_path for s in self.metadata.partition_statistics}
        stats = tx.compute_partition_statistics(snapshot_id, incremental=incremental)
        if stats is None or stats.statistics_path in before:
            return stats
        tx.commit_transaction()
        return stats

    def remove_orphan_files(
        self,
        older_than: datetime.datetime | datetime.timedelta | int | None = None,
        *,
        dry_run: bool = False,
        location: str | None = None,
        max_workers: int | None = None,
        progress: ProgressArg = None,
    ) -> list[str]:
        """Delete (or with ``dry_run`` list) files under the table location that no metadata
        references and that are older than ``older_than`` (default: 3 days), in
        ``max_workers`` threads; ``progress=True`` shows a bar (see
        :func:`icefloe.table.orphan_files.remove_orphan_files`). The table is refreshed after
        the files are listed: what other writers committed meanwhile is kept. A ``location``
        (or table location) that does not exist raises
        :class:`~icefloe.exceptions.NotFoundError`."""
        from icefloe.table.orphan_files import remove_orphan_files

        def current() -> tuple[TableMetadata, str | None]:
            self.refresh()
            self.load_every_snapshot()  # every snapshot's files are live
            return self.metadata, self.metadata_location

        self.load_every_snapshot()
        return remove_orphan_files(
            self.io,
            self.metadata,
            self.metadata_location,
            older_than=older_than,
            dry_run=dry_run,
            location=location,
            max_workers=max_workers,
            progress=progress,
            refresh=current,
        )

    def _do_commit(
        self, requirements: Iterable[TableRequirement], updates: Iterable[TableUpdate]
    ) -> None:
        result = self.catalog.commit_table(self, list(requirements), list(updates))
        # a thread sharing this object may have committed after this commit landed and taken
        # its own result first: the later version stays
        self._adopt(result.metadata, result.metadata_location)


def _raise_if_schema_moved(exc: ValidationError, first: Schema, now: Schema) -> None:
    """A change run again on a newer table state failed on its input: when another writer
    changed the schema meanwhile (the input fitted the schema the change began with), the
    failure is a conflict, :class:`CommitConflictError`, not the caller's bad input."""
    if not now.same_schema(first):
        raise CommitConflictError(
            "the table's schema changed while the change ran (another writer's commit), and "
            f"its input does not fit the new one: {exc}"
        ) from exc


def _one_shot(data: Any) -> bool:
    """Whether reading ``data`` uses it up (a record batch stream, or an object exporting
    an Arrow stream that is not a table)."""
    if data is None:
        return False
    import pyarrow as pa

    if isinstance(data, pa.RecordBatchReader | Iterator):
        return True
    if isinstance(data, pa.Table | pa.RecordBatch) or type(data).__module__.startswith("pandas"):
        return False
    return hasattr(data, "__arrow_c_stream__")
