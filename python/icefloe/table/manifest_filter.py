"""What a new snapshot keeps of its parent's manifests: :class:`ManifestFilter` reads the live
manifests of the branch head, keeps those that hold no removed file as they are, rewrites the
others with the removed entries marked ``DELETED`` (and the rest ``EXISTING``), and fails the
build when a file asked to be removed is not live (Iceberg Java's manifest filter manager).
:class:`~icefloe.table.producer.SnapshotProducer` inherits it and holds the files and
predicates to remove; a producer that carries the manifests over otherwise overrides
:meth:`ManifestFilter._filter` (a manifest rewrite regroups them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import CommitConflictError
from icefloe.manifest import ManifestFile, manifest_files
from icefloe.metadata import Snapshot, TableMetadata
from icefloe.scan.manifests import read_manifest_entries, written_manifest_list

if TYPE_CHECKING:
    from icefloe.io import FileIO

__all__ = ["EntryPredicate", "ManifestFilter"]

EntryPredicate = Callable[[pa.RecordBatch], pa.Array]

EXISTING, DELETED = 0, 2


class ManifestFilter:
    """Removes files from the manifests of the snapshot a producer builds on (see the module
    docstring). The producer provides the attributes and the manifest writer declared here."""

    io: FileIO
    branch: str
    snapshot_id: int
    _removed_paths: set[str]
    _remove_predicates: list[EntryPredicate]
    #: predicates that only ever select delete entries (data manifests need no reading)
    _delete_predicates: list[EntryPredicate]

    if TYPE_CHECKING:

        def _write(
            self,
            metadata: TableMetadata,
            batch: pa.RecordBatch,
            spec_id: int,
            content: int,
        ) -> dict[str, Any]: ...

    def _filter(
        self, metadata: TableMetadata, parent: Snapshot | None, written: list[str]
    ) -> tuple[list[dict[str, Any]], list[str], list[pa.RecordBatch], int]:
        """Kept manifest rows, replaced paths, removed entries, entries processed."""
        lst = written_manifest_list(self.io, parent)
        if lst is None:
            if self._removed_paths:
                missing = sorted(self._removed_paths)[0]
                raise CommitConflictError(f"cannot remove {missing}: the table has no snapshot")
            return [], [], [], 0
        rows: list[dict[str, Any]] = list(lst.to_pylist())
        mfs = manifest_files(lst)
        # A manifest with no live files (only the DELETED entries of an earlier delete or
        # compaction) is left out of the new snapshot, as Java's merging producers do.
        live = [
            i
            for i, m in enumerate(mfs)
            if (m.added_files_count or 0) + (m.existing_files_count or 0) > 0
            or m.added_files_count is None
            or m.existing_files_count is None
        ]
        if not self._removed_paths and not self._remove_predicates:
            if not self._delete_predicates:
                return [rows[i] for i in live], [], [], 0  # nothing to filter
            # only delete manifests can hold what is removed: data manifests stay unread
            kept_data = [rows[i] for i in live if not mfs[i].content]
            live = [i for i in live if mfs[i].content]
        else:
            kept_data = []
        batches = read_manifest_entries(self.io, [mfs[i] for i in live])
        wanted = pa.array(sorted(self._removed_paths), pa.string())
        found: set[str] = set()
        kept: list[dict[str, Any]] = kept_data
        replaced: list[str] = []
        removed: list[pa.RecordBatch] = []
        processed = 0
        for i, batch in zip(live, batches, strict=True):
            processed += batch.num_rows
            alive = pc.not_equal(batch.column("status"), DELETED)
            mask = pc.is_in(batch.column("file_path"), value_set=wanted)
            for pred in self._remove_predicates:
                mask = pc.or_(mask, pred(batch))
            if mfs[i].content:
                for pred in self._delete_predicates:
                    mask = pc.or_(mask, pred(batch))
            mask = pc.and_(pc.fill_null(mask, False), alive)
            if not pc.any(mask).as_py():
                kept.append(rows[i])
                continue
            gone = batch.filter(mask)
            found.update(str(p) for p in gone.column("file_path").to_pylist())
            removed.append(gone)
            replaced.append(rows[i]["manifest_path"])
            row = self._rewrite(metadata, mfs[i], batch, mask, alive)
            written.append(row["manifest_path"])
            kept.append(row)
        not_live = self._removed_paths - found
        if not_live:
            raise CommitConflictError(
                f"cannot remove {sorted(not_live)[0]}: it is not a live file of the table "
                f"(branch {self.branch!r}); another commit may have removed it"
            )
        return kept, replaced, removed, processed

    def _rewrite(
        self,
        metadata: TableMetadata,
        mf: ManifestFile,
        batch: pa.RecordBatch,
        mask: pa.Array,
        alive: pa.Array,
    ) -> dict[str, Any]:
        keep = pc.or_(mask, alive)
        sub = batch.filter(keep)
        sub_mask = mask.filter(keep)
        status = pc.if_else(sub_mask, DELETED, EXISTING).cast(pa.int32())
        snap = pc.if_else(
            sub_mask, pa.scalar(self.snapshot_id, pa.int64()), sub.column("snapshot_id")
        )
        sub = sub.set_column(sub.schema.get_field_index("status"), "status", status)
        sub = sub.set_column(sub.schema.get_field_index("snapshot_id"), "snapshot_id", snap)
        content = 1 if mf.content else 0
        row = self._write(metadata, sub, mf.partition_spec_id, content)
        # Every entry keeps the explicit first_row_id it was read with, so the manifest's own
        # value is never inherited: keeping the old one spares assigning (and wasting) a new
        # range for existing rows. Entries without one (not possible after inheritance in v3,
        # but in a table upgraded from v2) need a fresh range.
        ids = sub.column("first_row_id") if "first_row_id" in sub.schema.names else None
        keep = content == 0 and ids is not None and ids.null_count == 0 and sub.num_rows > 0
        row["first_row_id"] = mf.first_row_id if keep else None
        return row
