"""Snapshot expiration (spec "Snapshot Retention Policy") and the clean-up of unreachable files.

Which snapshots are kept:

1. refs other than ``main`` whose snapshot is older than their ``max-ref-age-ms`` (default: table
   property ``history.expire.max-ref-age-ms``, unset = forever) are removed;
2. every remaining ref's snapshot is kept;
3. for each remaining branch, its ancestors are kept while they are among the first
   ``min-snapshots-to-keep`` (ref setting, else ``retain_last``, else
   ``history.expire.min-snapshots-to-keep``, default 1) or not older than the branch's
   ``max-snapshot-age-ms`` (ref setting, else ``older_than_ms``, else now minus
   ``history.expire.max-snapshot-age-ms``, default 5 days);
4. snapshots no ref reaches are kept while younger than that table-wide age limit (as the Java
   reference does, so staged snapshots survive), and ``snapshot_ids`` are expired in any case
   (refusing one that a kept ref points at);
5. everything else is removed with a ``remove-snapshots`` update.

After the commit, files that only expired snapshots reached are deleted in parallel: their
manifest lists, the manifests no kept snapshot lists, the data and delete files of those
manifests that no kept manifest still lists as live (``ADDED``/``EXISTING``), and statistics
files no kept snapshot has. The file sets are computed with Arrow over the decoded manifests.
With ``dry_run`` nothing is committed or deleted and the result lists what would be.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import (
    CommitConflictError,
    IcebergError,
    ValidationError,
)
from icefloe.metadata import (
    MAIN_BRANCH,
    AssertRefSnapshotId,
    RemoveSnapshotRef,
    RemoveSnapshots,
    Snapshot,
    TableMetadata,
    TableRequirement,
    TableUpdate,
)
from icefloe.progress import ProgressArg
from icefloe.properties import TableProperties, gc_enabled, int_property
from icefloe.scan.manifests import manifest_lists, read_entries, unique_manifests
from icefloe.table._remove_files import check_delete_args, delete_all
from icefloe.table.manage_snapshots import check_snapshot_id
from icefloe.table_paths import same_file_locations
from icefloe.values import epoch_ms

if TYPE_CHECKING:
    from icefloe.table.table import Table

__all__ = [
    "DEFAULT_MAX_SNAPSHOT_AGE_MS",
    "ExpireResult",
    "expire_snapshots",
    "retained_snapshots",
]

MAX_SNAPSHOT_AGE_MS = TableProperties.MAX_SNAPSHOT_AGE_MS
MIN_SNAPSHOTS_TO_KEEP = TableProperties.MIN_SNAPSHOTS_TO_KEEP
MAX_REF_AGE_MS = TableProperties.MAX_REF_AGE_MS
DEFAULT_MAX_SNAPSHOT_AGE_MS = TableProperties.MAX_SNAPSHOT_AGE_MS_DEFAULT
DEFAULT_MIN_SNAPSHOTS_TO_KEEP = TableProperties.MIN_SNAPSHOTS_TO_KEEP_DEFAULT
CONFLICT_RETRIES = 4


log = logging.getLogger("icefloe.maintenance")


@dataclass(frozen=True)
class ExpireResult:
    """What an expiration removed (or, with ``dry_run``, would remove). With
    ``delete_files=False`` the file tuples are empty: the expired snapshots' files are not
    looked for (no manifest is read)."""

    snapshot_ids: tuple[int, ...] = ()
    removed_refs: tuple[str, ...] = ()
    manifest_lists: tuple[str, ...] = ()
    manifests: tuple[str, ...] = ()
    data_files: tuple[str, ...] = ()
    delete_files: tuple[str, ...] = ()
    statistics_files: tuple[str, ...] = ()
    dry_run: bool = False
    files_deleted: bool = field(default=False)
    #: Files of the expired snapshots that could not be deleted (the expiry is committed all
    #: the same; they are left to :meth:`~icefloe.table.Table.remove_orphan_files`).
    files_not_deleted: tuple[str, ...] = ()
    #: Why the expired snapshots' files could not be worked out (their manifests could not be
    #: read): the expiry is committed all the same and no file was deleted; they are left to
    #: :meth:`~icefloe.table.Table.remove_orphan_files`. Empty when they could.
    files_error: str = ""

    @property
    def all_files(self) -> tuple[str, ...]:
        """Every file path in the result."""
        return (
            self.manifest_lists
            + self.manifests
            + self.data_files
            + self.delete_files
            + self.statistics_files
        )


def _prop(meta: TableMetadata, key: str) -> int | None:
    """A non-negative integer property, ``None`` when unset (0 is a value: Java reads
    ``history.expire.max-snapshot-age-ms=0`` as "expire everything older than now")."""
    if key not in meta.properties:
        return None
    return int_property(meta.properties, key, 0)


def _first_set(*values: int | None) -> int:
    return next(v for v in values if v is not None)


def retained_snapshots(
    meta: TableMetadata,
    now_ms: int,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
) -> tuple[set[int], list[str]]:
    """The snapshot ids the retention policy keeps, and the refs it removes (steps 1-4)."""
    if retain_last is not None and (
        isinstance(retain_last, bool) or not isinstance(retain_last, int) or retain_last < 1
    ):
        raise ValidationError(f"retain_last must be an integer of at least 1, got {retain_last!r}")
    max_age = _first_set(_prop(meta, MAX_SNAPSHOT_AGE_MS), DEFAULT_MAX_SNAPSHOT_AGE_MS)
    default_older_than = now_ms - max_age if older_than_ms is None else older_than_ms
    default_min = _first_set(
        retain_last, _prop(meta, MIN_SNAPSHOTS_TO_KEEP), DEFAULT_MIN_SNAPSHOTS_TO_KEEP
    )
    default_ref_age = _prop(meta, MAX_REF_AGE_MS)

    removed_refs: list[str] = []
    kept_refs = {}
    for name, ref in meta.refs.items():
        snap = meta.snapshot_by_id(ref.snapshot_id)
        if name != MAIN_BRANCH:
            max_ref_age = _first_set(ref.max_ref_age_ms, default_ref_age, -1)  # -1: no limit
            if snap is None or (max_ref_age >= 0 and now_ms - snap.timestamp_ms > max_ref_age):
                removed_refs.append(name)
                continue
        kept_refs[name] = ref

    retain: set[int] = set()
    # as in Java, a branch references its snapshot's ancestors, a tag only its own snapshot:
    # the unreferenced snapshots younger than the age limit are kept
    reachable: set[int] = set()
    for ref in kept_refs.values():
        retain.add(ref.snapshot_id)
        if not ref.is_branch:
            reachable.add(ref.snapshot_id)
            continue
        chain = meta.ancestors_of(ref.snapshot_id)
        reachable.update(s.snapshot_id for s in chain)
        older_than = (
            now_ms - ref.max_snapshot_age_ms
            if ref.max_snapshot_age_ms is not None
            else default_older_than
        )
        min_keep = _first_set(ref.min_snapshots_to_keep, default_min)
        for count, s in enumerate(chain):
            if count < min_keep or s.timestamp_ms >= older_than:
                retain.add(s.snapshot_id)
            else:
                break
    for s in meta.snapshots:
        if s.snapshot_id not in reachable and s.timestamp_ms >= default_older_than:
            retain.add(s.snapshot_id)
    return retain, removed_refs


def _plan(
    meta: TableMetadata,
    now_ms: int,
    older_than_ms: int | None,
    retain_last: int | None,
    snapshot_ids: set[int],
) -> tuple[list[int], list[str]]:
    retain, removed_refs = retained_snapshots(meta, now_ms, older_than_ms, retain_last)
    for sid in snapshot_ids:
        if meta.snapshot_by_id(sid) is None:
            raise ValidationError(f"cannot expire snapshot {sid}: no such snapshot")
        holders = [
            n for n, r in meta.refs.items() if r.snapshot_id == sid and n not in removed_refs
        ]
        if holders:
            raise ValidationError(
                f"cannot expire snapshot {sid}: still referenced by {', '.join(sorted(holders))}"
            )
    expired = [
        s.snapshot_id
        for s in meta.snapshots
        if s.snapshot_id not in retain or s.snapshot_id in snapshot_ids
    ]
    return expired, removed_refs


def expire_snapshots(
    table: Table,
    *,
    older_than_ms: int | datetime.datetime | None = None,
    retain_last: int | None = None,
    snapshot_ids: Iterable[int] | None = None,
    delete_files: bool = True,
    dry_run: bool = False,
    max_workers: int | None = None,
    now_ms: int | None = None,
    progress: ProgressArg = None,
) -> ExpireResult:
    """Expire ``table``'s snapshots (see the module docstring) and return what was removed.

    ``older_than_ms`` replaces the table-wide age limit (epoch ms or a datetime), ``retain_last``
    the table-wide minimum number of snapshots per branch; ``snapshot_ids`` are expired
    explicitly. ``delete_files=False`` only changes metadata; a table with ``gc.enabled=false``
    refuses anything else but a dry run (``ValidationError``). A concurrent change to a ref (a
    new tag of an expired snapshot included) makes the expiration start over from the
    refreshed table.
    ``progress`` reports the file deletions (``True`` for a bar on stderr, or a
    ``fn(done, total)``; see :mod:`icefloe.progress`).
    """
    check_delete_args(max_workers, progress)
    if delete_files and not dry_run and not gc_enabled(table.metadata.properties):
        raise ValidationError(
            "cannot expire snapshots and delete their files: gc.enabled is false (the files may "
            "be shared with other tables); delete_files=False only removes the snapshots"
        )
    if older_than_ms is not None:
        older_than_ms = epoch_ms(older_than_ms, "older_than_ms")
    explicit = _snapshot_ids(snapshot_ids)
    if not dry_run:
        table.refresh()  # plan on the table as it is (a branch forked meanwhile is kept)
    for attempt in range(CONFLICT_RETRIES + 1):
        table.load_every_snapshot()  # a REST catalog in refs mode left some out
        base = table.metadata
        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        expired, removed_refs = _plan(base, now, older_than_ms, retain_last, explicit)
        if dry_run:
            gone = set(expired)
            after = [s for s in base.snapshots if s.snapshot_id not in gone]
            files = None
            if delete_files:
                files = _unreachable_files(
                    table, base, after, _stats_paths(base, after), max_workers
                )
            return _result(expired, removed_refs, files, dry_run=True, deleted=False)
        if not expired and not removed_refs:
            return ExpireResult()
        updates: list[TableUpdate] = [RemoveSnapshotRef(n) for n in removed_refs]
        if expired:
            updates.append(RemoveSnapshots(tuple(expired)))
        requirements: list[TableRequirement] = [
            AssertRefSnapshotId(n, r.snapshot_id) for n, r in base.refs.items()
        ]
        tx = table.transaction()
        tx.apply(updates, requirements)
        try:
            tx.commit_transaction()
        except CommitConflictError:
            if attempt == CONFLICT_RETRIES:
                raise
            table.refresh()
            continue
        files = None
        if delete_files:
            # what the committed metadata still reaches is live, snapshots committed by
            # others since ``base`` included (their manifests may name older files)
            committed = table.metadata
            try:
                files = _unreachable_files(
                    table,
                    base,
                    committed.snapshots,
                    _stats_paths(committed, committed.snapshots),
                    max_workers,
                )
            except IcebergError as exc:
                # committed: a manifest that cannot be read now (a snapshot still in the table
                # lost a file: the table is damaged, or another writer expired it since) leaves
                # the files to orphan removal; raising would report the committed expiry as
                # failed
                log.warning(
                    "expire_snapshots of %s: committed, files not deleted: %s", table.name, exc
                )
                return replace(
                    _result(expired, removed_refs, None, dry_run=False, deleted=False),
                    files_error=str(exc),
                )
            # committed: a file that cannot be deleted now is an orphan, not a failure
            failed = delete_all(
                table.io,
                files.all_files,
                threads=max_workers,
                progress=progress,
                what="expire_snapshots: deleting files",
                keep_going=True,
            )
            files = replace(files, files_not_deleted=tuple(failed))
        return _result(expired, removed_refs, files, dry_run=False, deleted=delete_files)
    raise AssertionError("unreachable")  # pragma: no cover


def _snapshot_ids(snapshot_ids: Iterable[int] | None) -> set[int]:
    """The explicit ids to expire, each checked to be an integer."""
    if snapshot_ids is None:
        return set()
    if isinstance(snapshot_ids, str | bytes | int) or not isinstance(snapshot_ids, Iterable):
        raise ValidationError(
            f"snapshot_ids is a collection of snapshot ids (integers), got {snapshot_ids!r}"
        )
    return {check_snapshot_id(i) for i in snapshot_ids}


def _result(
    expired: list[int],
    removed_refs: list[str],
    files: ExpireResult | None,
    *,
    dry_run: bool,
    deleted: bool,
) -> ExpireResult:
    f = files or ExpireResult()
    return ExpireResult(
        snapshot_ids=tuple(expired),
        removed_refs=tuple(removed_refs),
        manifest_lists=f.manifest_lists,
        manifests=f.manifests,
        data_files=f.data_files,
        delete_files=f.delete_files,
        statistics_files=f.statistics_files,
        dry_run=dry_run,
        files_deleted=deleted,
        files_not_deleted=f.files_not_deleted,
    )


def _stats_paths(meta: TableMetadata, snapshots: Iterable[Snapshot]) -> set[str]:
    """The statistics and partition statistics files of ``snapshots`` in ``meta``."""
    ids = {s.snapshot_id for s in snapshots}
    paths = {s.statistics_path for s in meta.statistics if s.snapshot_id in ids}
    return paths | {s.statistics_path for s in meta.partition_statistics if s.snapshot_id in ids}


def _unreachable_files(
    table: Table,
    base: TableMetadata,
    live: Sequence[Snapshot],
    live_stats: set[str],
    threads: int | None,
) -> ExpireResult:
    """Files the snapshots of ``base`` missing from ``live`` reach and no snapshot of ``live``
    (the snapshots left after the expiry, wherever they come from) reaches."""
    kept = {s.snapshot_id for s in live}
    gone = [s for s in base.snapshots if s.snapshot_id not in kept]
    if not gone:
        return ExpireResult()
    io = table.io
    lists = manifest_lists(io, live, threads)
    # a file of an expired snapshot that is gone was deleted by another writer's expiry of the
    # same snapshot (with what only it reached); the rest of what it reached is still listed
    gone_lists = manifest_lists(io, gone, threads, missing_ok=True)
    kept_lists = {s.manifest_list for s in live if s.manifest_list}
    dead_lists = _not_in(
        {s.manifest_list for s in gone if s.manifest_list and s.snapshot_id in gone_lists},
        kept_lists,
    )

    gone_manifests = unique_manifests(gone_lists.values())
    live_manifests = unique_manifests(lists[s.snapshot_id] for s in live)
    # paths compared as the files they name: ``/x`` and ``file:///x`` are one file (add_files
    # takes either spelling, so a file may be referenced under both)
    live_paths = same_file_locations(live_manifests.column("manifest_path"))
    dead_mask = pc.invert(
        pc.is_in(same_file_locations(gone_manifests.column("manifest_path")), value_set=live_paths)
    )
    dead_manifests = gone_manifests.filter(dead_mask)

    data_files: list[str] = []
    delete_files: list[str] = []
    if dead_manifests.num_rows:
        entries = read_entries(io, dead_manifests, threads, missing_ok=True)
        candidates = _entry_columns(entries)
        live_entries = _entry_columns(read_entries(io, live_manifests, threads))
        live_files = live_entries.filter(pc.not_equal(live_entries.column("status"), 2)).column(
            "file_path"
        )
        reached = pc.is_in(
            same_file_locations(candidates.column("file_path")),
            value_set=same_file_locations(live_files),
        )
        unreachable = candidates.filter(pc.invert(reached))
        for content, out in ((0, data_files), (1, delete_files), (2, delete_files)):
            paths = unreachable.filter(pc.equal(unreachable.column("content"), content))
            out.extend(paths.column("file_path").to_pylist())
    dead_stats = _not_in(_stats_paths(base, gone), live_stats)
    return ExpireResult(
        manifest_lists=tuple(dead_lists),
        manifests=tuple(sorted(dead_manifests.column("manifest_path").to_pylist())),
        data_files=tuple(sorted(set(data_files))),
        delete_files=tuple(sorted(set(delete_files))),
        statistics_files=tuple(dead_stats),
    )


def _not_in(paths: set[str], kept: set[str]) -> list[str]:
    """``paths`` (sorted) without those naming a file of ``kept`` under another spelling
    (``/x`` and ``file:///x``: writers spell a file either way, so one may be referenced
    under both)."""
    if not paths:
        return []
    ordered = sorted(paths)
    named = same_file_locations(pa.array(ordered, pa.string()))
    live = same_file_locations(pa.array(sorted(kept), pa.string()))
    keep = pc.is_in(named, value_set=live).to_pylist()
    return [p for p, k in zip(ordered, keep, strict=True) if not k]


def _entry_columns(batches: list[pa.RecordBatch]) -> pa.Table:
    """``file_path``, ``status`` and ``content`` of many manifests' entries, as one table."""
    cols = ["file_path", "status", "content"]
    if not batches:
        return pa.table(
            {
                "file_path": pa.array([], pa.string()),
                "status": pa.array([], pa.int32()),
                "content": pa.array([], pa.int32()),
            }
        )
    return pa.Table.from_batches([b.select(cols) for b in batches])
