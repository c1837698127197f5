"""Snapshot producers: the code that turns added and removed files into a new snapshot.

A producer collects changes, then builds (against the metadata of a
:class:`~icefloe.table.Transaction`) the manifests, the manifest list and the ``add-snapshot``
and ``set-snapshot-ref`` updates of one snapshot. When the commit loses a race, the transaction
refreshes the table and asks every producer to build again on the new base: the producer
re-runs its validations (removed files must still be live, plus any registered validator),
reuses the manifests of its added files, rewrites only what depends on the base, and deletes
the manifest lists and manifests of attempts that were not committed.

API (used by ``Table.append``/``overwrite``/``add_files`` and by the row-level operations)::

    from icefloe.table.producer import SnapshotProducer

    with table.transaction() as tx:
        p = SnapshotProducer(tx, branch="main", snapshot_properties={"k": "v"})
        p.add_data_files(files)           # list[icefloe.write.DataFile] (content 0)
        p.add_delete_files(deletes)       # content 1 (position deletes / DVs) or 2 (equality)
        p.remove_files(paths)             # data or delete files that must be live in the base
        p.remove_files_where(predicate)   # remove every live file whose entry matches
        p.validate(fn)                    # fn(metadata, parent_snapshot, since)
        p.set_operation("replace")        # optional: otherwise derived (append/overwrite/delete)
        p.add_entries(batch, content=0)   # columnar: manifest-layout rows (files.entries_batch)
        p.set_sequence_number(n)          # optional: an explicit (larger) sequence number
        p.set_next_row_id(n)              # optional (v3): reserve row ids up to n (exclusive)
        p.owns_files(paths)               # files this operation wrote: deleted if it fails
        p.commit()                        # builds and applies to the transaction
    # the transaction commits on exit; ``p.snapshot_id`` is the new snapshot

``remove_files_where(predicate)`` takes a function of a decoded manifest batch (see
:mod:`icefloe.manifest`) returning a boolean mask of entries to remove; it runs once per
manifest on every build, so it sees files that concurrent commits added.

The operation written to the summary is ``append`` when only data files are added, ``delete``
when only files are removed or only delete files are added, ``overwrite`` otherwise (or what
:meth:`SnapshotProducer.set_operation` says, e.g. ``replace`` for compaction). The summary carries
the Appendix F counts (added/removed data files, delete files by kind, DVs, records, file sizes,
position and equality deletes, changed partitions, manifests created/kept/replaced) and the
running totals. In v3 the snapshot gets ``first-row-id`` (the table's ``next-row-id``) and
``added-rows`` (rows of the data manifests assigned ids in its manifest list).

Write-audit-publish: on a table with ``write.wap.enabled=true``, a snapshot whose properties
carry a ``wap.id`` is *staged*, as Iceberg Java stages Spark's ``spark.wap.id`` writes: it is
added to the table with ``main``'s head as its parent, but no branch moves to it until it is
published (``manage_snapshots().publish_changes(wap_id)`` or ``cherry_pick``).

``commit.manifest-merge.enabled`` (true by default, as in the reference's merge append) merges
data manifests of a spec once there are ``commit.manifest.min-count-to-merge`` (100) of them,
bin-packed to ``commit.manifest.target-size-bytes`` (8 MiB); ``fast_append=True`` never merges.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe._concurrency import io_executor
from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.manifest import (
    write_manifest,
    write_manifest_list,
)
from icefloe.metadata import (
    MAIN_BRANCH,
    AddSnapshot,
    Operation,
    SetSnapshotRef,
    Snapshot,
    SnapshotRef,
    Summary,
    SummaryKeys,
    TableMetadata,
    TableUpdate,
)
from icefloe.properties import (
    TableProperties,
    bool_property,
    enum_property,
    int_property,
    manifest_compression_level,
)
from icefloe.table.branch_heads import parent_snapshot
from icefloe.table.concurrent_commits import Since
from icefloe.table.manifest_filter import EntryPredicate, ManifestFilter
from icefloe.table.manifest_merge import merge_manifests, rows_batch
from icefloe.table.manifest_partitions import cast_partition_type, spec_schema
from icefloe.table.rebuild_checks import check_delete_formats, check_written_types
from icefloe.table.snapshot_summary import computed_summary_key, snapshot_summary
from icefloe.table_paths import metadata_location
from icefloe.write.files import DataFile, entries_batch

#: Summary property naming a write-audit-publish job's snapshot (Spark's ``spark.wap.id``).
WAP_ID = "wap.id"
#: Table property: snapshots with a ``wap.id`` are staged rather than committed to ``main``.
WAP_ENABLED = TableProperties.WAP_ENABLED

if TYPE_CHECKING:
    from icefloe._native import DataFileRef
    from icefloe.schema import Schema
    from icefloe.table.table import Transaction

__all__ = ["SnapshotProducer", "Validator"]

#: ``fn(metadata, parent, since)``: raise CommitConflictError when the change can no longer be
#: applied on ``metadata`` (whose branch head is ``parent``); ``since.snapshots(metadata,
#: parent)`` are the commits of others it did not see (:mod:`icefloe.table.concurrent_commits`).
Validator = Callable[[TableMetadata, Snapshot | None, Since], None]

ADDED, EXISTING, DELETED = 1, 0, 2


@dataclass
class _Attempt:
    snapshot: Snapshot
    manifest_list: str
    written: list[str] = field(default_factory=list)  # base-dependent manifests
    listed: frozenset[str] = frozenset()  # every manifest of its manifest list


class SnapshotProducer(ManifestFilter):
    """Builds one snapshot from added and removed files (see the module docstring)."""

    #: Whether the producer copies another snapshot's files (a cherry-pick): only then may
    #: the snapshot name its source (``source-snapshot-id``).
    _picks = False

    def __init__(
        self,
        tx: Transaction,
        *,
        branch: str = MAIN_BRANCH,
        snapshot_properties: Mapping[str, str] | None = None,
        fast_append: bool = False,
    ) -> None:
        if not isinstance(branch, str) or not branch:
            raise ValidationError(f"branch must be a non-empty string, got {branch!r}")
        _branch_ref(tx.metadata, branch)
        self.tx = tx
        self.io = tx.table.io
        self.branch = branch
        if snapshot_properties is not None and not isinstance(snapshot_properties, Mapping):
            raise ValidationError(
                "snapshot_properties must be a mapping of strings to strings, got "
                f"{snapshot_properties!r}"
            )
        self.snapshot_properties = dict(snapshot_properties or {})
        for k, v in self.snapshot_properties.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValidationError(f"bad snapshot property {k!r}: {v!r} (both must be strings)")
            try:
                (k + v).encode("utf-8")
            except UnicodeEncodeError:
                raise ValidationError(
                    f"snapshot property {k!r}: {v!r} holds a lone UTF-16 surrogate, which the "
                    "metadata cannot hold"
                ) from None
            if computed_summary_key(k):
                raise ValidationError(
                    f"snapshot property {k!r} is one the commit computes (operation, counts, "
                    "totals, partition summaries): choose another name"
                )
            if k == SummaryKeys.SOURCE_SNAPSHOT_ID and not self._picks:
                # a commit checks the snapshot it names is still in the table (a pick copies
                # its files): set on any other write it would conflict on every attempt
                raise ValidationError(
                    f"snapshot property {k!r} is set by cherry-picks only: choose another name"
                )
        #: A write-audit-publish snapshot: added without moving any branch (see above).
        self.staged = WAP_ID in self.snapshot_properties and bool_property(
            tx.metadata.properties, WAP_ENABLED, TableProperties.WAP_ENABLED_DEFAULT, lenient=True
        )
        if self.staged and not self.snapshot_properties[WAP_ID]:
            # staged under "", it could be published only by its snapshot id
            raise ValidationError(
                f"a {WAP_ID!r} names the staged write for publish_changes: give a non-empty one"
            )
        if self.staged and branch != MAIN_BRANCH:
            raise ValidationError(
                f"a write with a {WAP_ID!r} on a table with {WAP_ENABLED}=true is staged for "
                f"main and cannot also go to branch {branch!r}: leave out one of them"
            )
        self.fast_append = fast_append
        self.snapshot_id = _new_snapshot_id(tx.metadata)
        self.commit_uuid = uuid.uuid4()
        self._operation: str | None = None
        self._added: list[DataFile] = []
        self._added_deletes: list[DataFile] = []
        self._removed_paths: set[str] = set()
        self._remove_predicates: list[EntryPredicate] = []
        #: predicates that only ever select delete entries (data manifests need no reading)
        self._delete_predicates: list[EntryPredicate] = []
        self._validators: list[Validator] = []
        self._owned: list[str] = []
        #: the table's schema at the first build, which the files it adds were written with
        self._written_schema: Schema | None = None
        self._new_manifests: pa.RecordBatch | None = None  # reused across attempts
        self._manifests_version: int | None = None  # the format version they were written in
        self._new_manifest_paths: list[str] = []
        self._attempts: list[_Attempt] = []
        #: Where the checks of what others committed meanwhile start: the branch head of the
        #: first build, below the snapshots of this transaction's earlier changes. Fixed by
        #: that build even when it failed (a file of that state expired) and a later one runs
        #: on a newer head.
        self._since: Since | None = None
        #: The producers of this transaction whose snapshots the first build stood on.
        self._built_on: list[SnapshotProducer] = []
        self._copies_rows = False
        self._manifest_count = 0
        self._committed_to_tx = False
        self._pending: list[Future[None]] = []
        self._added_batches: list[pa.RecordBatch] = []
        self._entry_batches: list[tuple[int, int, pa.RecordBatch]] = []  # content, spec, rows
        self._sequence_number: int | None = None
        self._next_row_id: int | None = None

    # -- staging --------------------------------------------------------------------------------
    def add_data_files(self, files: Iterable[DataFile]) -> SnapshotProducer:
        """Data files (content 0) to add."""
        for f in files:
            if f.content != 0:
                raise ValidationError(f"{f.file_path}: not a data file (content {f.content})")
            self._added.append(f)
        return self

    def add_delete_files(self, files: Iterable[DataFile]) -> SnapshotProducer:
        """Position delete files / deletion vectors (content 1) or equality deletes (2)."""
        for f in files:
            if f.content not in (1, 2):
                raise ValidationError(f"{f.file_path}: not a delete file (content {f.content})")
            if f.content == 2 and not f.equality_ids:
                raise ValidationError(f"{f.file_path}: equality delete file without equality_ids")
            self._added_deletes.append(f)
        return self

    def add_entries(
        self, batch: pa.RecordBatch, *, content: int, spec_id: int = 0
    ) -> SnapshotProducer:
        """Files to add given as manifest-layout rows (the schema of
        :func:`icefloe.write.files.entries_batch`, status 1), all of one ``content`` (0 data,
        1 position deletes / DVs) and spec: the columnar path for many files. An entry may
        carry an explicit ``sequence_number`` (its data sequence number, kept instead of the
        snapshot's, as compaction that keeps sequence numbers writes it)."""
        if content not in (0, 1):
            raise ValidationError(f"add_entries takes content 0 or 1, got {content}")
        if batch.num_rows:
            got = pc.unique(batch.column("content")).to_pylist()
            if got != [content]:
                raise ValidationError(f"entries of content {got} given as content {content}")
            self._entry_batches.append((content, spec_id, batch))
        return self

    def set_sequence_number(self, sequence_number: int) -> SnapshotProducer:
        """Commit with this sequence number (it must exceed the table's last one, unless the
        snapshot has no parent)."""
        self._sequence_number = sequence_number
        return self

    def set_next_row_id(self, next_row_id: int) -> SnapshotProducer:
        """(v3) Make the table's ``next-row-id`` at least ``next_row_id`` after this snapshot:
        row ids below it were assigned explicitly (``first_row_id`` of the added files)."""
        self._next_row_id = next_row_id
        return self

    def copies_rows(self) -> SnapshotProducer:
        """Declare that the added data files hold rows copied with an identity the
        transaction's earlier changes gave them when built: v3 ``_row_id`` values of their
        files, or the data sequence number of the state they made (compaction). A lost race
        renumbers those changes, so this change then fails with :class:`CommitConflictError`
        instead of being rebuilt."""
        self._copies_rows = True
        return self

    def transaction_paths(self) -> set[str]:
        """The data files this change's transaction added before it (see
        :meth:`copies_rows`)."""
        return set().union(*(p.added_data_paths() for p in self.tx._producers() if p is not self))

    def copies_rows_of(self, files: Iterable[DataFile | DataFileRef]) -> SnapshotProducer:
        """Declare that the added data files carry the v3 ``_row_id`` of rows read from
        ``files``; :meth:`copies_rows` when one of those ids came from the transaction's
        earlier changes. That is so for the files those changes added, and for files that got
        their ``first_row_id`` from them: ids at or above the ``next-row-id`` the transaction
        started from, such as those a table upgraded to v3 gives its older files at its
        first v3 snapshot."""
        if self.tx.metadata.format_version < 3:
            return self
        base = self.tx._base
        start = (base.next_row_id or 0) if base.format_version >= 3 else 0
        own = self.transaction_paths()
        for f in files:
            first = f.first_row_id
            if f.file_path in own or (first is not None and first >= start):
                return self.copies_rows()
        return self

    def remove_files(self, paths: Iterable[str | DataFile]) -> SnapshotProducer:
        """Data or delete files to remove; each must be live in the base of every attempt."""
        for p in paths:
            self._removed_paths.add(p.file_path if isinstance(p, DataFile) else p)
        return self

    def remove_files_where(
        self, predicate: EntryPredicate, *, deletes_only: bool = False
    ) -> SnapshotProducer:
        """Remove every live entry for which ``predicate(batch)`` is true; with
        ``deletes_only`` it is asked about delete manifests' entries only."""
        (self._delete_predicates if deletes_only else self._remove_predicates).append(predicate)
        return self

    def validate(self, fn: Validator) -> SnapshotProducer:
        """Register a validation run on every build (first attempt and retries)."""
        self._validators.append(fn)
        return self

    def owns_files(self, paths: Iterable[str]) -> SnapshotProducer:
        """Files this operation wrote: deleted when it is abandoned."""
        self._owned.extend(paths)
        return self

    def set_operation(self, operation: str) -> SnapshotProducer:
        if operation not in Operation.ALL:
            raise ValidationError(f"unknown snapshot operation {operation!r}")
        self._operation = operation
        return self

    @property
    def always_applies(self) -> bool:
        """True when the change only adds files (nothing to validate against a newer base)."""
        return not (
            self._removed_paths
            or self._remove_predicates
            or self._delete_predicates
            or self._validators
        )

    @property
    def added_files(self) -> list[DataFile]:
        return list(self._added)

    def added_data_paths(self) -> set[str]:
        """The paths of the data files this change adds (given as files or as entries)."""
        paths = {f.file_path for f in self._added}
        for content, _, batch in self._entry_batches:
            if content == 0:
                paths.update(str(x) for x in batch.column("file_path").to_pylist())
        return paths

    @property
    def head_id(self) -> int:
        """The id of the snapshot this change's last build made the head of its branch: its
        own new snapshot (a fast-forwarding cherry-pick moves the branch to another one)."""
        return self.snapshot_id

    # -- building -------------------------------------------------------------------------------
    def commit(self) -> Transaction:
        """Build against the transaction's metadata and apply the updates to it."""
        return self.tx._apply_producer(self)

    def build(self, metadata: TableMetadata) -> list[TableUpdate]:
        """The updates of this snapshot on top of ``metadata`` (validations included)."""
        parent = parent_snapshot(metadata, self.branch)
        parent_id = parent.snapshot_id if parent is not None else None
        earlier = {p.head_id: p for p in self.tx._producers() if p is not self}
        tx_own = frozenset(earlier)
        on_own = Since.own_below(metadata, parent, tx_own)
        if self._since is None:
            self._since = Since.planned_on(metadata, parent, tx_own)
            self._built_on = [earlier[i] for i in on_own]
            self._written_schema = metadata.current_schema()
        else:
            self._check_rebuildable(on_own)
            check_written_types(self._written_schema, self._adds_files(), metadata)
        check_delete_formats(self._added_deletes, self._entry_batches, metadata)
        since = Since(self._since.start, tx_own)  # own ids change when a rebuild renumbers them
        for fn in self._validators:
            fn(metadata, parent, since)
        if metadata.snapshot_by_id(self.snapshot_id) is not None:
            # the new manifests name the old id: written again, deleted unless the snapshot in
            # the table is this producer's own (a commit reported lost that landed uses them)
            mine = self.landed_in(metadata)
            self.snapshot_id = _new_snapshot_id(metadata)
            self._discard_new_manifests(delete=not mine)
        version = metadata.format_version
        seq = metadata.last_sequence_number + 1 if version >= 2 else 0
        if self._sequence_number is not None:
            # As the metadata builder (and Java): only a snapshot without a parent may take a
            # sequence number not above the table's last one (a Delta version 0, say).
            behind = self._sequence_number <= metadata.last_sequence_number
            if version < 2 or self._sequence_number < 0 or (behind and parent is not None):
                raise CommitConflictError(
                    f"cannot commit sequence number {self._sequence_number}: the table's last "
                    f"sequence number is {metadata.last_sequence_number}"
                )
            seq = self._sequence_number
        new_rows = self._write_new_manifests(metadata)
        written: list[str] = []
        kept, replaced, removed, processed = self._filter(metadata, parent, written)
        data_new = [r for r in new_rows if r["content"] == 0]
        delete_new = [r for r in new_rows if r["content"] == 1]
        data_kept = [r for r in kept if r["content"] == 0]
        delete_kept = [r for r in kept if r["content"] == 1]
        if not self.fast_append and bool_property(
            metadata.properties,
            TableProperties.MANIFEST_MERGE_ENABLED,
            TableProperties.MANIFEST_MERGE_ENABLED_DEFAULT,
        ):
            own = set(self._new_manifest_paths)
            data_new, data_kept, merged = merge_manifests(
                metadata,
                data_new,
                data_kept,
                written,
                io=self.io,
                own=own,
                write=self._write,
                flush=self._flush,
                snapshot_id=self.snapshot_id,
            )
            replaced += merged
            delete_new, delete_kept, merged = merge_manifests(
                metadata,
                delete_new,
                delete_kept,
                written,
                io=self.io,
                own=own,
                write=self._write,
                flush=self._flush,
                content=1,
                snapshot_id=self.snapshot_id,
            )
            replaced += merged
        rows = data_new + delete_new + data_kept + delete_kept
        props = metadata.properties
        list_path = (
            f"{metadata_location(metadata.location, props)}/snap-{self.snapshot_id}-"
            f"{len(self._attempts) + 1}-{self.commit_uuid}.avro"
        )
        first_row_id = metadata.next_row_id if version >= 3 else None
        lst = rows_batch(rows)
        codec, level = _manifest_codec(props)
        data, next_row = write_manifest_list(
            lst,
            format_version=version,
            snapshot_id=self.snapshot_id,
            sequence_number=seq,
            parent_snapshot_id=parent_id,
            first_row_id=first_row_id,
            codec=codec,
            level=level,
        )
        self._put(list_path, data)
        try:
            self._flush()
        except BaseException:
            # nothing names them: this attempt is not recorded
            for p in (list_path, *written):
                self.io.delete_quietly(p)
            raise
        written_now = [*written]
        summary = snapshot_summary(
            added=self._added_batches,
            removed=removed,
            adds_data=bool(self._added) or any(c == 0 for c, _, _ in self._entry_batches),
            adds_deletes=bool(self._added_deletes)
            or any(c == 1 for c, _, _ in self._entry_batches),
            created=len(new_rows) + len(written),
            replaced=replaced,
            properties=self.snapshot_properties,
            operation=self._operation,
            parent=parent,
            partition_limit=int_property(
                props,
                TableProperties.SUMMARY_PARTITION_LIMIT,
                TableProperties.SUMMARY_PARTITION_LIMIT_DEFAULT,
                lenient=True,
            ),
            metadata=metadata,
        )
        summary_props = dict(summary.properties)
        summary_props["manifests-kept"] = str(
            sum(1 for r in data_kept + delete_kept if r["manifest_path"] not in written)
        )
        summary_props["entries-processed"] = str(processed)
        snapshot = Snapshot(
            snapshot_id=self.snapshot_id,
            timestamp_ms=max(int(time.time() * 1000), metadata.last_updated_ms),
            manifest_list=list_path,
            sequence_number=seq,
            parent_snapshot_id=parent_id,
            summary=Summary(summary.operation, summary_props),
            schema_id=metadata.current_schema_id,
            first_row_id=first_row_id,
            added_rows=(max(next_row, self._next_row_id or 0) - first_row_id)
            if first_row_id is not None and next_row is not None
            else None,
        )
        listed = frozenset(r["manifest_path"] for r in rows)
        self._attempts.append(_Attempt(snapshot, list_path, written_now, listed))
        if self.staged:
            return [AddSnapshot(snapshot)]
        ref = _branch_ref(metadata, self.branch)  # perhaps made a tag since the write began
        return [
            AddSnapshot(snapshot),
            SetSnapshotRef(
                self.branch,
                self.snapshot_id,
                "branch",
                ref.min_snapshots_to_keep if ref else None,
                ref.max_snapshot_age_ms if ref else None,
                ref.max_ref_age_ms if ref else None,
            ),
        ]

    def _check_rebuildable(self, on_own: list[int]) -> None:
        """On a rebuild: the transaction's earlier changes this one was made on must still be
        below it, and it must not carry values they received when first built."""
        if not self._built_on:
            return
        missing = [p for p in self._built_on if p.head_id not in on_own]
        if missing:
            raise CommitConflictError(
                f"this change to {self.branch!r} was made on top of the transaction's earlier "
                "change, which a concurrent commit left off that branch: run the transaction "
                "again"
            )
        if self._copies_rows or self._sequence_number is not None or self._next_row_id is not None:
            raise CommitConflictError(
                "a concurrent commit renumbered the transaction's earlier changes, whose rows "
                "this change copied with their row ids or sequence numbers: run the "
                "transaction again"
            )

    def _adds_files(self) -> bool:
        return bool(self._added or self._added_deletes or self._entry_batches)

    def _put(self, path: str, data: bytes) -> None:
        """Write a file in the background: the durable writes (fsync) of one build overlap."""
        self._pending.append(io_executor().submit(self.io.new_output(path).write, data, True))

    def _flush(self) -> None:
        """Wait for the background writes; the first error is raised."""
        pending, self._pending = self._pending, []
        errors = [e for e in (f.exception() for f in pending) if e is not None]
        if errors:
            raise errors[0]

    def _manifest_path(self, metadata: TableMetadata) -> str:
        self._manifest_count += 1
        loc = metadata_location(metadata.location, metadata.properties)
        return f"{loc}/{self.commit_uuid}-m{self._manifest_count - 1}.avro"

    def _write(
        self,
        metadata: TableMetadata,
        batch: pa.RecordBatch,
        spec_id: int,
        content: int,
    ) -> dict[str, Any]:
        spec = metadata.spec_by_id(spec_id)
        if spec is None:
            raise ValidationError(f"unknown partition spec id {spec_id}")
        schema = spec_schema(metadata, spec)
        import json

        path = self._manifest_path(metadata)
        codec, level = _manifest_codec(metadata.properties)
        batch = cast_partition_type(batch, metadata.format_version, schema, spec)
        data, row = write_manifest(
            batch,
            format_version=metadata.format_version,
            schema_json=json.dumps(schema.to_json()),
            spec_json=json.dumps(spec.to_json()),
            spec_id=spec_id,
            path=path,
            content=content,
            snapshot_id=self.snapshot_id,
            schema_id=schema.schema_id,
            codec=codec,
            level=level,
        )
        self._put(path, data)
        out: dict[str, Any] = row.to_pylist()[0]
        out["manifest_length"] = len(data)
        # min_sequence_number: the lowest of the live entries' (the writer leaves deleted ones
        # out; none known: the manifest list gives it the snapshot's number)
        return out

    def _write_new_manifests(self, metadata: TableMetadata) -> list[dict[str, Any]]:
        if self._new_manifests is not None and self._manifests_version != metadata.format_version:
            # the table was upgraded since they were written: rewritten in the new format
            self._discard_new_manifests()
        self._manifests_version = metadata.format_version
        if self._new_manifests is not None:
            cached: list[dict[str, Any]] = self._new_manifests.to_pylist()
            for r in cached:
                r["added_snapshot_id"] = self.snapshot_id
            return cached
        # The new files reach stable storage while the manifests are written; the build waits
        # for both before the snapshot exists (once: a retry reuses these manifests).
        self._pending.append(io_executor().submit(self.io.sync, self._new_file_paths()))
        version = metadata.format_version
        rows: list[dict[str, Any]] = []
        for content, files in ((0, self._added), (1, self._added_deletes)):
            by_spec: dict[int, list[DataFile]] = {}
            for f in files:
                by_spec.setdefault(f.spec_id, []).append(f)
            for spec_id, group in sorted(by_spec.items()):
                spec = metadata.spec_by_id(spec_id)
                if spec is None:
                    raise ValidationError(
                        f"{group[0].file_path}: unknown partition spec id {spec_id}"
                    )
                if version < 2 and content:
                    raise ValidationError("delete files need format version 2 or later")
                batch = entries_batch(
                    group, version=version, schema=spec_schema(metadata, spec), spec=spec
                )
                self._added_batches.append(batch)
                row = self._write(metadata, batch, spec_id, content)
                self._new_manifest_paths.append(row["manifest_path"])
                rows.append(row)
        for content, spec_id, batch in self._entry_batches:
            if version < 2 and content:
                raise ValidationError("delete files need format version 2 or later")
            self._added_batches.append(batch)
            row = self._write(metadata, batch, spec_id, content)
            self._new_manifest_paths.append(row["manifest_path"])
            rows.append(row)
        self._new_manifests = rows_batch(rows) if rows else pa.RecordBatch.from_pylist([])
        return rows

    def _new_file_paths(self) -> list[str]:
        """The files to sync before the commit. Not those of :meth:`add_entries`: that is how
        a converted table's files come in (a Delta table's, say, hundreds of thousands of
        them), written and committed by the other format's writers."""
        return [f.file_path for f in (*self._added, *self._added_deletes)]

    def _discard_new_manifests(self, delete: bool = True) -> None:
        for p in self._new_manifest_paths if delete else ():
            self.io.delete_quietly(p)
        self._new_manifest_paths = []
        self._new_manifests = None
        self._added_batches = []

    # -- outcome --------------------------------------------------------------------------------
    def landed_in(self, metadata: TableMetadata) -> bool:
        """Whether ``metadata`` holds the snapshot of this producer's last attempt: that commit
        happened although it was reported lost."""
        if not self._attempts:
            return False
        last = self._attempts[-1]
        found = metadata.snapshot_by_id(last.snapshot.snapshot_id)
        return found is not None and found.manifest_list == last.manifest_list

    def committed(self, snapshot_id_in_table: bool, metadata: TableMetadata | None = None) -> None:
        """Called after the transaction's commit: delete the manifest lists of superseded
        attempts and every manifest this producer wrote that the committed manifest list does
        not name (those of superseded attempts, and new manifests merged into others).

        With the committed ``metadata``: when it names a superseded attempt's manifest list
        (a commit reported lost that happened), nothing is deleted; its snapshots need them.
        """
        if not snapshot_id_in_table:
            self.abort()
            return
        if not self._attempts:
            return
        if metadata is not None:
            named = {s.manifest_list for s in metadata.snapshots}
            if any(a.manifest_list in named for a in self._attempts[:-1]):
                return
        final = self._attempts[-1]
        for a in self._attempts[:-1]:
            self.io.delete_quietly(a.manifest_list)
        wrote = {p for a in self._attempts for p in a.written} | set(self._new_manifest_paths)
        for p in sorted(wrote - final.listed):
            self.io.delete_quietly(p)

    def abort(self) -> None:
        """Delete everything this producer wrote (the commit failed for good)."""
        for f in self._pending:
            f.exception()  # let background writes finish before deleting their files
        self._pending = []
        deleted = [
            *(p for a in self._attempts for p in (a.manifest_list, *a.written)),
            *self._new_manifest_paths,
            *self._owned,
        ]
        for a in self._attempts:
            self.io.delete_quietly(a.manifest_list)
            for p in a.written:
                self.io.delete_quietly(p)
        self._discard_new_manifests()
        for p in self._owned:
            self.io.delete_quietly(p)
        self.tx._delete_emptied_dirs(deleted)


def _branch_ref(metadata: TableMetadata, branch: str) -> SnapshotRef | None:
    """The ref ``branch`` names in ``metadata`` (None: a branch to fork); a tag refuses writes."""
    ref = metadata.refs.get(branch)
    if ref is not None and not ref.is_branch:
        raise ValidationError(f"cannot write to {branch!r}: it is a tag, not a branch")
    return ref


def _manifest_codec(props: Mapping[str, str]) -> tuple[str, int | None]:
    codec = enum_property(
        props, TableProperties.MANIFEST_COMPRESSION, TableProperties.MANIFEST_COMPRESSION_DEFAULT
    )
    return codec, manifest_compression_level(props)


def _new_snapshot_id(metadata: TableMetadata) -> int:
    while True:
        sid = random.getrandbits(63)
        if sid and metadata.snapshot_by_id(sid) is None:
            return sid
