"""Cherry-picking a snapshot onto ``main``, decided again on every commit attempt.

:class:`CherryPick` is a :class:`~icefloe.table.producer.SnapshotProducer` on ``main`` whose
every build (the first and each retry on a newer ``main``) chooses, as Java's cherry-pick does:

* a fast-forward when the picked snapshot's parent is ``main``'s head (any operation): ``main``
  moves to the picked snapshot, no snapshot is written;
* otherwise, for an ``append``, a new snapshot adding the same data files;
* otherwise, for a dynamic partition overwrite (an ``overwrite`` whose summary has
  ``replace-partitions=true``), a new ``overwrite`` snapshot adding the same data files and
  replacing the partitions they cover: the data files the picked snapshot removed must still be
  live, every data and delete file of ``main`` in those partitions is removed, and the pick is
  refused when ``main`` added data to one of them after the picked snapshot's parent (which
  must be ``main``'s ancestor);
* anything else is refused.

A new snapshot's files get manifests with its id and sequence number (so deletes committed to
``main`` before the pick do not apply to the picked rows), row ids assigned afresh in v3, and
the summary properties ``source-snapshot-id`` and (for a snapshot staged with a ``wap.id``)
``published-wap-id``. A snapshot already in ``main``'s history, picked before, or whose
``wap.id`` ``main`` already has, is refused on every attempt. A refusal on the first attempt is
a :class:`~icefloe.exceptions.ValidationError`; on a retry (another writer changed ``main``) a
:class:`~icefloe.exceptions.CommitConflictError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.metadata import (
    MAIN_BRANCH,
    Operation,
    SetSnapshotRef,
    Snapshot,
    Summary,
    TableMetadata,
    TableUpdate,
)
from icefloe.scan.manifests import manifest_list_of, partition_keys, read_entries
from icefloe.table.branch_heads import parent_snapshot
from icefloe.table.concurrent_commits import Since
from icefloe.table.producer import ADDED, DELETED, WAP_ID, SnapshotProducer
from icefloe.table_paths import same_file_locations

if TYPE_CHECKING:
    from icefloe.table.table import Transaction

__all__ = [
    "PUBLISHED_WAP_ID",
    "REPLACE_PARTITIONS",
    "SOURCE_SNAPSHOT_ID",
    "WAP_ID",
    "CherryPick",
    "check_not_picked",
    "is_replace_partitions",
]

#: Summary property of a snapshot made by cherry-picking another one.
SOURCE_SNAPSHOT_ID = "source-snapshot-id"
#: Summary property of the snapshot that published a staged one by cherry-picking it.
PUBLISHED_WAP_ID = "published-wap-id"
#: Summary property of a dynamic partition overwrite's snapshot.
REPLACE_PARTITIONS = "replace-partitions"

#: ``fn(metadata)``: ``main``'s history in ``metadata`` (newest first) and the metadata it comes
#: from (``metadata`` with every snapshot when a catalog left some out).
MainHistory = Callable[[TableMetadata], tuple[TableMetadata, list[Snapshot]]]
#: ``fn(metadata)``: ``metadata`` with the snapshots a catalog left out of it.
EverySnapshot = Callable[[TableMetadata], TableMetadata]


def is_replace_partitions(snapshot: Snapshot) -> bool:
    """Whether ``snapshot`` is a dynamic partition overwrite (``replace-partitions=true``)."""
    flag = snapshot.summary.get(REPLACE_PARTITIONS) if snapshot.summary else None
    return snapshot.operation == Operation.OVERWRITE and (flag or "").lower() == "true"


def check_not_picked(history: Iterable[Snapshot], snapshot: Snapshot) -> None:
    """Refuse a cherry-pick of a snapshot that ``main`` (its ``history``, newest first) already
    has, directly or picked, or whose write-audit-publish id (``wap.id``) ``main`` already
    staged or published (a retried job staging the same changes twice), as Java's check
    does."""
    snapshot_id = snapshot.snapshot_id
    wap_id = snapshot.summary.get(WAP_ID) if snapshot.summary else None
    for anc in history:
        summary = anc.summary or Summary(None)
        picked = summary.get(SOURCE_SNAPSHOT_ID)
        if anc.snapshot_id == snapshot_id or picked == str(snapshot_id):
            raise ValidationError(
                f"cannot cherry-pick snapshot {snapshot_id}: it is already in main's history"
                + (f" (picked as {anc.snapshot_id})" if picked else "")
            )
        if wap_id is not None and wap_id in (summary.get(WAP_ID), summary.get(PUBLISHED_WAP_ID)):
            raise ValidationError(
                f"cannot cherry-pick snapshot {snapshot_id}: its wap.id {wap_id!r} was already "
                f"published to main (snapshot {anc.snapshot_id})"
            )


def _null_column(batch: pa.RecordBatch, name: str) -> pa.RecordBatch:
    i = batch.schema.get_field_index(name)
    if i < 0:
        return batch
    return batch.set_column(
        i, batch.schema.field(i), pa.nulls(batch.num_rows, batch.column(i).type)
    )


class CherryPick(SnapshotProducer):
    """Picks ``snapshot`` onto ``main`` (see the module docstring); ``main_history`` gives
    ``main``'s history for the duplicate-pick and ancestry checks, ``every_snapshot`` the
    metadata with the snapshots a catalog left out (to fast-forward to one of them)."""

    _picks = True

    def __init__(
        self,
        tx: Transaction,
        snapshot: Snapshot,
        main_history: MainHistory,
        every_snapshot: EverySnapshot,
    ) -> None:
        props = {SOURCE_SNAPSHOT_ID: str(snapshot.snapshot_id)}
        wap_id = snapshot.summary.get(WAP_ID) if snapshot.summary else None
        if wap_id is not None:
            props[PUBLISHED_WAP_ID] = wap_id
        super().__init__(tx, branch=MAIN_BRANCH, snapshot_properties=props, fast_append=True)
        self.picked = snapshot
        self._main_history = main_history
        self._every_snapshot = every_snapshot
        self._replaces = is_replace_partitions(snapshot)
        self._files_read = False
        self._builds = 0
        #: True when the last build moved ``main`` to the picked snapshot (no new snapshot).
        self.fast_forwarded = False

    @property
    def always_applies(self) -> bool:
        return False  # the duplicate-pick check may fail on a newer main

    @property
    def head_id(self) -> int:
        return self.picked.snapshot_id if self.fast_forwarded else self.snapshot_id

    def build(self, metadata: TableMetadata) -> list[TableUpdate]:
        """A fast-forward of ``main`` or a new snapshot, decided on ``metadata``."""
        self._builds += 1
        try:
            return self._build(metadata)
        except ValidationError as e:
            if self._builds == 1:
                raise
            raise CommitConflictError(f"{e} (after a concurrent commit to main)") from e

    def _build(self, metadata: TableMetadata) -> list[TableUpdate]:
        s = self.picked
        check_not_picked(self._main_history(metadata)[1], s)
        head = parent_snapshot(metadata, MAIN_BRANCH)
        if (head.snapshot_id if head else None) == s.parent_snapshot_id:
            self.fast_forwarded = True
            if metadata.snapshot_by_id(s.snapshot_id) is None:
                # left out by the catalog: the transaction's metadata must have it to move main
                self._with_snapshot(metadata)
            ref = metadata.refs.get(MAIN_BRANCH)
            return [
                SetSnapshotRef(
                    MAIN_BRANCH,
                    s.snapshot_id,
                    "branch",
                    ref.min_snapshots_to_keep if ref else None,
                    ref.max_snapshot_age_ms if ref else None,
                    ref.max_ref_age_ms if ref else None,
                )
            ]
        self.fast_forwarded = False
        if metadata.snapshot_by_id(s.snapshot_id) is None and (
            self._every_snapshot(metadata).snapshot_by_id(s.snapshot_id) is None
        ):  # another writer expired it (and deleted the files only it reached)
            raise CommitConflictError(
                f"cannot cherry-pick snapshot {s.snapshot_id}: the table no longer has it"
            )
        if s.operation != Operation.APPEND and not self._replaces:
            raise ValidationError(
                f"cannot cherry-pick snapshot {s.snapshot_id}: only append snapshots and dynamic "
                f"partition overwrites can be cherry-picked onto a newer main, it is "
                f"{s.operation!r}"
            )
        if not self._files_read:
            self._read_files(metadata)
        return super().build(metadata)

    def _with_snapshot(self, metadata: TableMetadata) -> None:
        """Make the transaction's metadata (``metadata``, being built on) hold the picked
        snapshot, which the catalog left out of it."""
        full = self._every_snapshot(metadata)
        if full.snapshot_by_id(self.picked.snapshot_id) is None:
            raise CommitConflictError(
                f"cannot cherry-pick snapshot {self.picked.snapshot_id}: the table no longer has it"
            )
        self.tx.metadata = full

    def _read_files(self, metadata: TableMetadata) -> None:
        """Stage the picked snapshot's added data files (and, for a dynamic partition
        overwrite, the removal of what it replaced and its validation), columnar."""
        s = self.picked
        io = self.io
        ml = manifest_list_of(io, s)
        own = ml.filter(
            pc.and_(
                pc.equal(ml.column("added_snapshot_id"), s.snapshot_id),
                pc.equal(ml.column("content"), 0),
            )
        )
        keys: list[pa.Array] = []
        removed: list[pa.Array] = []
        added_paths: list[pa.Array] = []
        added_any = False
        spec_ids = own.column("partition_spec_id").to_pylist()
        for batch, spec_id in zip(read_entries(io, own), spec_ids, strict=True):
            mine = pc.equal(batch.column("snapshot_id"), s.snapshot_id)
            added = batch.filter(pc.and_(mine, pc.equal(batch.column("status"), ADDED)))
            if added.num_rows:
                added_any = True
                for name in ("snapshot_id", "sequence_number", "file_sequence_number"):
                    added = _null_column(added, name)
                # new rows of the table: v3 assigns them new row ids
                self.add_entries(_null_column(added, "first_row_id"), content=0, spec_id=spec_id)
                keys.append(partition_keys(added, spec_id))
                added_paths.append(added.column("file_path"))
            if self._replaces:
                gone = batch.filter(pc.and_(mine, pc.equal(batch.column("status"), DELETED)))
                removed.append(gone.column("file_path"))
        if not added_any:
            raise ValidationError(
                f"cannot cherry-pick snapshot {s.snapshot_id}: it added no data files"
            )
        self._files_read = True
        from icefloe.table.operations import not_live

        # main may hold them already (added there too, or picked by way of a merged branch):
        # a file live twice is a corrupt table to every reader
        picked = same_file_locations(pa.chunked_array(added_paths, pa.string()).combine_chunks())
        self.validate(not_live(io, picked, "main"))
        if self._replaces:
            replaced = pc.unique(pa.chunked_array(keys, pa.binary()).combine_chunks())
            self.remove_files(pa.chunked_array(removed, pa.string()).to_pylist())
            # with the data files of a replaced partition go its delete files (they can only
            # apply to those), as a dynamic partition overwrite does
            self.remove_files_where(
                lambda batch: pc.is_in(partition_keys(batch), value_set=replaced)
            )
            self.validate(self._partitions_unchanged(replaced))
            self.set_operation(Operation.OVERWRITE)

    def _partitions_unchanged(
        self, replaced: pa.Array
    ) -> Callable[[TableMetadata, Snapshot | None, Since], None]:
        from icefloe.table.operations import added_in_partitions

        s = self.picked

        def validate(metadata: TableMetadata, head: Snapshot | None, since: Since) -> None:
            full, history = self._main_history(metadata)
            parent = s.parent_snapshot_id
            if parent is not None and parent not in {a.snapshot_id for a in history}:
                raise ValidationError(
                    f"cannot cherry-pick snapshot {s.snapshot_id}: a dynamic partition overwrite "
                    f"can only be picked while its parent {parent} is an ancestor of main"
                )
            path = added_in_partitions(self.io, full, head, Since(parent), replaced)
            if path is not None:
                raise ValidationError(
                    f"cannot cherry-pick snapshot {s.snapshot_id}: main changed a partition "
                    f"it replaces after its parent {parent} ({path} was added)"
                )

        return validate

    def committed(self, snapshot_id_in_table: bool, metadata: TableMetadata | None = None) -> None:
        # a fast-forward writes nothing: every manifest of earlier attempts goes
        super().committed(snapshot_id_in_table and not self.fast_forwarded, metadata)
