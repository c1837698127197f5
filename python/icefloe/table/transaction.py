"""The :class:`Transaction`: changes to one table collected and committed together.

A change is a list of :class:`~icefloe.metadata.TableUpdate` plus the
:class:`~icefloe.metadata.TableRequirement` that must still hold when it is committed
(:func:`~icefloe.metadata.requirements_for` derives them like the Java client). A transaction
commits them through :meth:`Catalog.commit_table`, retrying lost races by replaying its snapshot
producers on the new table state (see :mod:`icefloe.table.committer`). :class:`Table`'s change
methods are one-change transactions delegating here. Also :class:`UpdateProperties`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from icefloe.exceptions import (
    CommitConflictError,
    CommitStateUnknownError,
    IcebergError,
    NoSuchTableError,
    NotFoundError,
    OperationNotOfferedError,
    ValidationError,
    commit_did_not_happen,
    state_read_failed,
)
from icefloe.expressions.base import AlwaysTrue
from icefloe.metadata import (
    MAIN_BRANCH,
    RemoveProperties,
    SetProperties,
    TableRequirement,
    TableUpdate,
    apply_updates,
    requirements_for,
)
from icefloe.properties import string_map
from icefloe.table.committer import RetryPolicy
from icefloe.table.pending import PendingUpdate
from icefloe.table_paths import resolve_table_paths

if TYPE_CHECKING:
    from icefloe.expressions.base import BooleanExpression
    from icefloe.io import FileIO
    from icefloe.metadata import PartitionStatisticsFile, StatisticsFile
    from icefloe.progress import ProgressArg
    from icefloe.table.maintenance import RewriteResult
    from icefloe.table.manage_snapshots import ManageSnapshots
    from icefloe.table.producer import SnapshotProducer, Validator
    from icefloe.table.row_level import UpsertResult
    from icefloe.table.table import Table
    from icefloe.table.update_schema import UpdateSchema
    from icefloe.table.update_spec import ReplaceSortOrder, UpdateSpec

__all__ = ["Transaction", "UpdateProperties"]


#: How many times a change is rebuilt on newer states whose files vanish meanwhile.
_REBUILDS_AFTER_MISSING_FILES = 5


class Transaction:
    """Changes to one table that are committed together, or not at all.

    Each change is applied to :attr:`metadata` immediately (so later changes see earlier ones
    and invalid ones fail early); :meth:`commit_transaction` sends them all with the
    requirements derived from the metadata the transaction started from.
    """

    def __init__(self, table: Table) -> None:
        self.table = table
        self._base, self._base_location = table.metadata_and_location()
        self.metadata = self._base
        self._updates: list[TableUpdate] = []
        self._requirements: list[TableRequirement] = []
        self._done = False
        # Set once the catalog was asked to commit and did not refuse: the commit happened or
        # may have happened, so nothing the producers wrote may be deleted any more.
        self._may_have_committed = False
        # Every change in order: a producer (rebuilt on retry) or fixed updates.
        self._ops: list[SnapshotProducer | tuple[list[TableUpdate], list[TableRequirement]]] = []
        # Files written for changes other than the producers' (statistics): deleted with them.
        self._owned_files: list[str] = []
        # Checks of changes that made no snapshot (a delete that matched nothing), per branch,
        # waiting for the next snapshot on that branch to carry them (see add_read_check).
        self._pending_checks: list[tuple[str, Validator]] = []
        # A staged create into a directory that does not exist yet: discarding it removes the
        # empty directories its writes made (from the first missing one down; a SQL catalog's
        # namespaces have no directory of their own before a table's files make one).
        self._new_directory = (
            None
            if table.metadata_location
            else _first_missing_directory(table.io, table.metadata.location)
        )
        # The table was dropped since it was loaded (NoSuchTableError): deleting the files
        # written for it, the directories they were in go too once empty (on a file-system
        # catalog a left directory reads as a namespace; the drop removed the table's own).
        self._table_gone = False

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            if not self._done:  # (committed inside the block already: nothing left to do)
                self.commit_transaction()
        else:
            self.discard()

    def discard(self) -> None:
        """Drop every change of this transaction and delete the files it wrote; it cannot be
        committed afterwards (what happens when its ``with`` block raises)."""
        self._done = True
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
        """Build a snapshot producer on the current metadata and add its updates.

        A file of the table's state this transaction started from may be gone: another
        writer's ``expire_snapshots`` deleted the manifest lists of snapshots it expired. The
        change is then rebuilt on the newest state, as after a lost race (an append always
        applies; a row-level change checks what happened meanwhile)."""
        self._check_open()
        for branch, check in [c for c in self._pending_checks if c[0] == producer.branch]:
            producer.validate(check)
            self._pending_checks.remove((branch, check))
        try:
            ups = producer.build(self.metadata)
        except NotFoundError:
            self._ops.append(producer)
            if not self._replayable() or not self._rebuilt_after_missing_file():
                self._ops.pop()
                raise
            return self
        self.metadata = apply_updates(self.metadata, ups)
        self._updates.extend(ups)
        self._ops.append(producer)
        return self

    def _rebuilt_after_missing_file(self) -> bool:
        """After a file of the metadata this transaction builds on was not found: when the
        table has moved since, rebuild every change on its newest state (again if that state
        loses a file meanwhile, a few times) and return True; False when it has not moved (a
        file missing from the current state is damage, not a race)."""
        for _ in range(_REBUILDS_AFTER_MISSING_FILES):
            was = self.table.metadata_location
            try:
                self.table.refresh()
            except NoSuchTableError:
                self._table_gone = True
                raise
            if self.table.metadata_location == was:
                return False
            self.table.load_every_snapshot()
            try:
                self._replay()
            except NotFoundError:
                continue
            return True
        return False

    def add_read_check(self, branch: str, check: Validator) -> None:
        """Checks what a change that wrote nothing read (a delete whose filter matched no
        row) against what others commit meanwhile, as if it had made a snapshot: the
        transaction's snapshots on ``branch`` (those before it, else the next one) carry the
        check, so a commit retried on a newer state fails if it would now change the answer.
        A transaction making no snapshot on the branch needs no check: nothing it commits is
        ordered after the others' commits there."""
        made = [p for p in self._producers() if p.branch == branch]
        if made:
            made[-1].validate(check)
        else:
            self._pending_checks.append((branch, check))

    def _producers(self) -> list[SnapshotProducer]:
        from icefloe.table.producer import SnapshotProducer

        return [op for op in self._ops if isinstance(op, SnapshotProducer)]

    @property
    def may_have_committed(self) -> bool:
        """True once the commit happened or may have happened (its outcome is unknown).

        Files written for the transaction must then be kept: the table's current metadata may
        reference them. False while the transaction is open or after a commit that is known
        not to have happened.
        """
        return self._may_have_committed

    def _own_file(self, path: str) -> None:
        """Register a file written for a change of this transaction outside its producers
        (a statistics file): deleted with the producers' files when the commit fails for good
        or the transaction is discarded, kept once the commit may have happened."""
        self._owned_files.append(path)

    def _abort_producers(self) -> None:
        """Delete what the producers and the other changes wrote; only while the commit cannot
        have happened."""
        if self._may_have_committed:
            return
        for p in self._producers():
            p.abort()
        owned, self._owned_files = self._owned_files, []
        for path in owned:
            self.table.io.delete_quietly(path)
        self._delete_emptied_dirs(owned)
        if self._new_directory:
            # a staged create that never happened: the directories its writes made go too (on
            # a file-system catalog a left directory reads as a namespace); only empty ones
            with contextlib.suppress(IcebergError):
                self.table.io.delete_empty_dirs(self._new_directory)

    def _delete_emptied_dirs(self, deleted: Iterable[str]) -> None:
        """Once the table is gone: remove the directories the ``deleted`` files were in, up
        to the table's location, each only if empty (never one holding another file)."""
        if not self._table_gone:
            return
        from icefloe.table_paths import data_location, metadata_location

        meta = self.table.metadata
        within = (
            data_location(meta.location, meta.properties),
            metadata_location(meta.location, meta.properties),
            meta.location,
        )
        with contextlib.suppress(IcebergError):
            self.table.io.delete_emptied_dirs(deleted, within)

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
        self._base, self._base_location = self.table.metadata_and_location()
        self.metadata = self._base
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
        """Write ``data`` (any input :meth:`Table.append` accepts) as data files and add them
        in an ``append`` snapshot; data without rows adds nothing (no snapshot; checked against
        the schema all the same)."""
        from icefloe.table import operations

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
        (any input :meth:`Table.append` accepts) in one ``overwrite`` snapshot (files partly
        matching are rewritten)."""
        from icefloe.table import operations

        self._check_open()
        if data is None:
            # an unset variable must not empty the table: deleting rows is delete()'s job
            from icefloe.write.input import ACCEPTED_INPUT

            raise ValidationError(
                f"overwrite needs the rows to write ({ACCEPTED_INPUT}), got None; to remove "
                "rows without writing any, use delete()"
            )
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
        """Replace the partitions ``data`` touches by ``data`` (any input
        :meth:`Table.append` accepts)."""
        from icefloe.table import operations

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
        from icefloe.table import operations

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
        from icefloe.table.row_level import delete

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
        join_cols: str | Sequence[str] | None = None,
        when_matched_update_all: bool = True,
        when_not_matched_insert_all: bool = True,
        case_sensitive: bool = True,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> UpsertResult:
        """Update or insert rows by key (see :meth:`Table.upsert`)."""
        from icefloe.table.row_level import upsert

        self._check_open()
        return upsert(
            self,
            data,
            join_cols,
            when_matched_update_all=when_matched_update_all,
            when_not_matched_insert_all=when_not_matched_insert_all,
            case_sensitive=case_sensitive,
            branch=branch,
            snapshot_properties=snapshot_properties,
        )

    def delete_by_keys(
        self,
        keys: Any,
        join_cols: str | Sequence[str] | None = None,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
    ) -> Transaction:
        """Delete rows by key with equality delete files (see :meth:`Table.delete_by_keys`)."""
        from icefloe.table.row_level import delete_by_keys

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
        progress: ProgressArg = None,
        remove_dangling_deletes: bool = False,
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
            progress=progress,
            remove_dangling_deletes=remove_dangling_deletes,
        )

    def compute_statistics(
        self,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        *,
        compression_codec: str | None = "zstd",
    ) -> StatisticsFile:
        """Theta sketches of ``columns`` (default: every top-level primitive column) over the
        live rows of ``snapshot_id`` (default: current), written as a Puffin file and registered
        with ``set-statistics`` (see :mod:`icefloe.table.statistics`). The file is deleted again
        when the transaction is discarded or its commit is refused."""
        from icefloe.table.statistics import compute_statistics

        self._check_open()
        return compute_statistics(self, columns, snapshot_id, compression_codec)

    def compute_partition_statistics(
        self, snapshot_id: int | None = None, *, incremental: bool = True
    ) -> PartitionStatisticsFile | None:
        """Partition statistics of ``snapshot_id`` (default: current), written as a Parquet
        file and registered with ``set-partition-statistics`` (see
        :mod:`icefloe.table.partition_statistics`); None when the snapshot has no files. A new
        file is deleted again when the transaction is discarded or its commit is refused."""
        from icefloe.table.partition_statistics import compute_partition_statistics

        self._check_open()
        return compute_partition_statistics(self, snapshot_id, incremental)

    def remove_statistics(self, snapshot_id: int) -> Transaction:
        """Unregister the statistics file of ``snapshot_id`` (the file itself is left for
        orphan removal)."""
        from icefloe.metadata import RemoveStatistics

        self.apply([RemoveStatistics(snapshot_id)])
        return self

    def remove_partition_statistics(self, snapshot_id: int) -> Transaction:
        """Unregister the partition statistics file of ``snapshot_id``."""
        from icefloe.metadata import RemovePartitionStatistics

        self.apply([RemovePartitionStatistics(snapshot_id)])
        return self

    def set_properties(
        self, properties: Mapping[str, str] | None = None, /, **kwargs: str
    ) -> Transaction:
        """Set table properties: from a mapping, keyword arguments, or both (``properties``
        is positional, so a property may be named ``properties``)."""
        merged = {**string_map(properties, "table properties"), **kwargs}
        for key, value in merged.items():
            if not isinstance(value, str):
                raise ValidationError(f"table property {key!r} must be a string, got {value!r}")
        if not merged:
            return self
        merged = resolve_table_paths(self.metadata.location, merged)
        return self.apply([SetProperties(merged)])

    def remove_properties(self, *keys: str) -> Transaction:
        """Remove table properties (missing keys are ignored)."""
        if not keys:
            return self
        for key in keys:
            _property_key(key)
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
        """Upgrade the format version (2 or 3, an integer; never down)."""
        from icefloe.metadata import UpgradeFormatVersion
        from icefloe.properties import parse_format_version

        format_version = parse_format_version(format_version)  # 2.0 or True: refused
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
        if not self._updates and self.table.metadata_location:
            return self.table  # nothing to commit (a staged create still creates its table)
        policy = RetryPolicy.from_properties(self._base.properties)
        # Pure additions (appends) always apply: they retry until the total timeout instead of
        # giving up after commit.retry.num-retries lost races.
        always = self._replayable() and all(p.always_applies for p in self._producers())
        deadline = time.monotonic() + policy.total_timeout_ms / 1000.0
        if policy.num_retries <= 0 and self.table.metadata_location and self._producers():
            self._rebuild_on_current()
        attempt = 0
        while True:
            requirements = requirements_for(self._base, self._updates) + self._requirements
            try:
                self.table._do_commit(requirements, self._updates)
            except CommitConflictError:
                # Another writer moved the table: producers rebuild on the new state.
                attempt += 1
                wait = policy.wait_ms(min(attempt, 5) if always else attempt) / 1000.0
                late = time.monotonic() + wait > deadline
                # others stop at num-retries, or at the total timeout once retried (as Java's
                # Tasks: attempts >= max, or duration > max and attempt > 1)
                retried_out = attempt > policy.num_retries or (late and attempt > 1)
                exhausted = (late and attempt > 1) if always else retried_out
                if not self._replayable() or exhausted:
                    self._abort_producers()
                    raise
                time.sleep(wait)
                try:
                    self.table.refresh()
                    # the checks walk the new commits back to the base: a REST catalog in refs
                    # mode leaves those no ref points at out of the refreshed metadata
                    self.table.load_every_snapshot()
                except BaseException as exc:
                    if commit_did_not_happen(exc):  # the table was dropped or replaced
                        self._table_gone = isinstance(exc, NoSuchTableError)
                        self._abort_producers()
                        raise
                    # without the table's state, that the commit reported lost did not land
                    # after all (see _landed) cannot be checked: its files stay
                    self._may_have_committed = True
                    if isinstance(exc, Exception):
                        raise CommitStateUnknownError(
                            "a commit was reported lost, and reloading the table to check "
                            f"failed: {exc}"
                        ) from exc
                    raise
                try:
                    if self._landed():
                        return self._finish()
                    try:
                        self._replay()
                    except NotFoundError:
                        # an expiry committed since the refresh deleted a file it read
                        if not self._rebuilt_after_missing_file():
                            raise
                except BaseException:
                    self._abort_producers()  # the last commit was refused: nothing committed
                    raise
                continue
            except BaseException as exc:
                # Only an error proving the pointer did not move allows deleting the files (a
                # REST server that does not offer commits is refused before any request). Any
                # other (CommitStateUnknownError, an I/O error, KeyboardInterrupt, SystemExit)
                # may have arrived after the swap: the new metadata may reference every file.
                if commit_did_not_happen(exc) or isinstance(exc, OperationNotOfferedError):
                    self._table_gone = isinstance(exc, NoSuchTableError)
                    self._abort_producers()
                else:
                    self._may_have_committed = True
                raise
            return self._finish()

    def _rebuild_on_current(self) -> None:
        """Before the only attempt of a commit without retries (``commit.retry.num-retries``
        0): rebuild the snapshots on the table's current state when it moved since they were
        made, as Java's snapshot producers and transactions refresh before every attempt, the
        first included. A stale handle then commits when nothing conflicts; a real conflict
        (another writer deleted the files this change deletes) fails while rebuilding, as on a
        retry. With retries the lost race itself leads to the rebuild: no extra read there.
        Changes that cannot be rebuilt are checked against the current state by the catalog."""
        if not self._replayable():
            return
        try:
            self.table.refresh()
            # the table may have moved before the refresh too (a commit through the same
            # object after this transaction began): compare with what the changes were built on
            if self.table.metadata_location == self._base_location:
                return
            # the checks walk the new commits back to the base (see commit_transaction)
            self.table.load_every_snapshot()
            try:
                self._replay()
            except NotFoundError:
                if not self._rebuilt_after_missing_file():
                    raise
        except BaseException as exc:
            # nothing was sent to the catalog: the files written for the change go
            self._table_gone = isinstance(exc, NoSuchTableError)
            self._abort_producers()
            if isinstance(exc, Exception) and not commit_did_not_happen(exc):
                raise state_read_failed(exc) from exc
            raise

    def _finish(self) -> Table:
        """The commit happened: the producers drop what the committed table does not use."""
        self._may_have_committed = True
        for p in self._producers():
            p.committed(True, self.table.metadata)
        return self.table

    def _landed(self) -> bool:
        """After a commit reported lost and a refresh: whether the table holds the commit
        anyway (its snapshots are in the table; a store that lost the answer to a write that
        happened can make a catalog report it so). Rebuilding would apply the changes twice
        and delete the files of snapshots in the table."""
        landed = [p.landed_in(self.table.metadata) for p in self._producers()]
        if any(landed) and not all(landed):
            self._may_have_committed = True
            raise CommitStateUnknownError(
                "the commit was reported lost, but the table holds some of its snapshots"
            )
        return any(landed)


def _property_key(key: object) -> None:
    if not isinstance(key, str):
        raise ValidationError(f"a table property's name is a string, got {key!r}")


class UpdateProperties(PendingUpdate):
    """A property change: ``set(key, value)`` and ``remove(key)``, committed on ``commit()``."""

    def __init__(self, transaction: Transaction, autocommit: bool = False) -> None:
        self._tx = transaction
        self._autocommit = autocommit
        self._set: dict[str, str] = {}
        self._remove: set[str] = set()

    def set(self, key: str, value: str) -> UpdateProperties:
        """Set one property."""
        _property_key(key)
        if key in self._remove:
            raise ValidationError(f"property {key!r} is both set and removed")
        self._set[key] = value
        return self

    def remove(self, key: str) -> UpdateProperties:
        """Remove one property."""
        _property_key(key)
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


def _first_missing_directory(io: FileIO, location: str) -> str | None:
    """The outermost directory missing on the way to ``location`` (``location`` itself when
    only it is missing); None when it exists or that cannot be told."""

    def missing(candidate: str) -> bool:
        fs, path = io.resolve(candidate)
        return bool(fs.get_file_info(path).type == pafs.FileType.NotFound)

    try:
        if not missing(location):
            return None
        top = location.rstrip("/")
        while True:
            parent = top.rsplit("/", 1)[0]
            if not parent or parent.endswith((":", ":/", "//")) or not missing(parent):
                return top
            top = parent
    except Exception:
        return None
