"""Cherry-picking an ``append`` snapshot onto ``main`` as a new snapshot.

The data files the picked snapshot added (the ``ADDED`` entries of the data manifests it wrote)
are added again by a :class:`~icefloe.table.producer.SnapshotProducer` on ``main``: new
manifests with the new snapshot's id and sequence number (so deletes committed to ``main``
before the pick do not apply to the picked rows), row ids assigned afresh in v3, and the summary
properties ``source-snapshot-id`` and (for a snapshot staged with a ``wap.id``)
``published-wap-id``. The producer rebuilds on a newer ``main`` when the commit loses
a race; the duplicate-pick check runs again then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow.compute as pc

from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.metadata import MAIN_BRANCH, Snapshot, TableMetadata
from icefloe.scan.manifests import manifest_list_of, read_entries

if TYPE_CHECKING:
    from icefloe.table.table import Transaction

__all__ = ["PUBLISHED_WAP_ID", "SOURCE_SNAPSHOT_ID", "WAP_ID", "cherry_pick_snapshot"]

#: Summary property of a snapshot made by cherry-picking another one.
SOURCE_SNAPSHOT_ID = "source-snapshot-id"
#: Summary property of a snapshot staged by a write-audit-publish job (Spark's ``spark.wap.id``).
WAP_ID = "wap.id"
#: Summary property of the snapshot that published a staged one by cherry-picking it.
PUBLISHED_WAP_ID = "published-wap-id"
ADDED = 1


def cherry_pick_snapshot(
    tx: Transaction,
    snapshot: Snapshot,
    check: Callable[[TableMetadata, Snapshot], None],
) -> None:
    """Add ``snapshot``'s added data files to ``main`` in a new snapshot of ``tx``."""
    from icefloe.table.producer import SnapshotProducer
    from icefloe.write.files import DataFile

    io = tx.table.io
    ml = manifest_list_of(io, snapshot)
    mine = pc.and_(
        pc.equal(ml.column("added_snapshot_id"), snapshot.snapshot_id),
        pc.equal(ml.column("content"), 0),
    )
    own = ml.filter(mine)
    files: list[DataFile] = []
    batches = read_entries(io, own)
    for batch, spec_id in zip(batches, own.column("partition_spec_id").to_pylist(), strict=True):
        added = batch.filter(
            pc.and_(
                pc.equal(batch.column("status"), ADDED),
                pc.equal(batch.column("snapshot_id"), snapshot.snapshot_id),
            )
        )
        files.extend(
            replace(DataFile.from_entry(row, spec_id), first_row_id=None)
            for row in added.to_pylist()
        )
    if not files:
        raise ValidationError(
            f"cannot cherry-pick snapshot {snapshot.snapshot_id}: it added no data files"
        )

    def revalidate(meta: TableMetadata, parent: Snapshot | None, start: int | None) -> None:
        try:
            check(meta, snapshot)
        except ValidationError as e:
            raise CommitConflictError(str(e)) from e

    props = {SOURCE_SNAPSHOT_ID: str(snapshot.snapshot_id)}
    wap_id = snapshot.summary.get(WAP_ID) if snapshot.summary else None
    if wap_id is not None:
        props[PUBLISHED_WAP_ID] = wap_id
    producer = SnapshotProducer(tx, branch=MAIN_BRANCH, snapshot_properties=props, fast_append=True)
    producer.add_data_files(files)
    producer.validate(revalidate)
    producer.commit()
