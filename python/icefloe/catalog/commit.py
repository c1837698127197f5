"""The commit protocol (spec "Optimistic Concurrency" and "Commit Conflict Resolution and Retry").

A commit validates the requirements against a base, applies the updates, writes the new
metadata file and asks the catalog to swap its pointer from the base's file to the new one.
When another writer won the race (:class:`CommitFailedError`) the file of the attempt is
deleted, the table is refreshed, the requirements are checked again (a failure now is a real
conflict: :class:`CommitConflictError`) and the updates are re-applied, waiting with exponential
backoff between attempts as the table's ``commit.retry.*`` properties say. A refresh that fails
after swaps the catalog knows did not happen (``CommitFailedError.nothing_committed``) ends the
commit with :class:`CommitFailedError`, so the caller deletes its files. When it cannot be known
whether the pointer moved (:class:`CommitStateUnknownError`) nothing is cleaned up. Without
retries (``commit.retry.num-retries`` 0) the single attempt starts from the refreshed table, as
Java's commits refresh before every attempt: only a race lost during it fails.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import fields

from icefloe.exceptions import (
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
    commit_did_not_happen,
    state_read_failed,
)
from icefloe.metadata import (
    AddSnapshot,
    RemoveSnapshotRef,
    RemoveSnapshots,
    SetSnapshotRef,
    SnapshotRef,
    SummaryKeys,
    TableMetadata,
    TableRequirement,
    TableUpdate,
    apply_updates,
)
from icefloe.metadata import validate_requirements as _validate_requirements
from icefloe.metadata.snapshots import BRANCH
from icefloe.properties import TableProperties, bool_property
from icefloe.table.committer import CommitResult, RetryPolicy

__all__ = [
    "CommitResult",
    "RetryPolicy",
    "check_refs_as_planned",
    "check_updates_fit",
    "files_to_delete_after_commit",
    "run_commit",
]

_T = TableProperties


def run_commit(
    base: TableMetadata,
    base_location: str,
    requirements: Iterable[TableRequirement],
    updates: Iterable[TableUpdate],
    write_and_swap: Callable[[TableMetadata, str, TableMetadata], str],
    refresh: Callable[[], tuple[TableMetadata, str]],
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[CommitResult, TableMetadata, str]:
    """Commit ``updates`` on top of ``base`` with retries; returns the result and the final base.

    ``write_and_swap(base, base_location, new)`` writes ``new`` and swaps the pointer, returning
    the new file's location; it raises :class:`CommitFailedError` after cleaning up its own file
    when it lost the race (with ``nothing_committed`` when the catalog knows the pointer did not
    move). ``refresh()`` reads the catalog's current metadata and location.
    """
    reqs = list(requirements)
    ups = list(updates)
    planned = base
    policy = RetryPolicy.from_properties(base.properties)
    deadline = time.monotonic() + policy.total_timeout_ms / 1000.0
    attempt = 0
    nothing_committed = True  # every attempt so far known not to have moved the pointer
    if policy.num_retries <= 0:
        # No retry will absorb a stale base: as Java's commits, which refresh before every
        # attempt (the first included), start from the catalog's current state. With retries
        # a stale base is one lost race, retried on the refreshed state: no extra read there.
        try:
            base, base_location = refresh()
        except Exception as exc:
            if isinstance(exc, CommitStateUnknownError) or commit_did_not_happen(exc):
                raise
            raise state_read_failed(exc) from exc
    while True:
        try:
            _validate_requirements(reqs, base)
        except CommitFailedError as exc:
            raise CommitConflictError(
                f"commit conflicts with the table's current state ({base_location}): {exc}; "
                "another writer changed it: refresh the table (table.refresh()) and make the "
                "change again"
            ) from exc
        check_refs_as_planned(planned, base, ups)
        check_updates_fit(base, ups)
        try:
            new = apply_updates(base, ups, base_location)
            if _unchanged(base, new):  # as Java's servers and clients: nothing to commit
                return CommitResult(base, base_location), base, base_location
            location = write_and_swap(base, base_location, new)
            return CommitResult(new, location), base, base_location
        except CommitFailedError as exc:
            nothing_committed = nothing_committed and exc.nothing_committed
            attempt += 1
            if attempt > policy.num_retries or not exc.retryable:
                raise
            wait = policy.wait_ms(attempt) / 1000.0
            if attempt > 1 and time.monotonic() + wait > deadline:
                raise  # the total timeout ends retries once one has happened, as Java's
            sleep(wait)
            try:
                base, base_location = refresh()
            except Exception as reload_exc:
                unknown = isinstance(reload_exc, CommitStateUnknownError)
                if not nothing_committed or unknown or commit_did_not_happen(reload_exc):
                    raise
                # The catalog knows no attempt moved the pointer: the commit did not happen,
                # whatever keeps the table from reloading (the caller may delete its files).
                failed = CommitFailedError(
                    f"{exc}; reloading the table to try again failed: {reload_exc}"
                )
                failed.nothing_committed = True
                raise failed from reload_exc


def _unchanged(base: TableMetadata, new: TableMetadata) -> bool:
    """Whether ``new`` only logs ``base``'s file and stamps a new time: updates that were all
    already true (none at all, a current schema set current again) write no new version, which
    would push a real one out of the metadata log and invalidate every reader's cached copy."""
    if new is base:
        return True
    stamps = ("last_updated_ms", "metadata_log")
    return all(
        getattr(new, f.name) == getattr(base, f.name)
        for f in fields(base)
        if f.compare and f.name not in stamps
    )


def _ref_settings(ref: SnapshotRef) -> tuple[str, int | None, int | None, int | None]:
    return (ref.ref_type, ref.min_snapshots_to_keep, ref.max_snapshot_age_ms, ref.max_ref_age_ms)


def check_refs_as_planned(
    planned: TableMetadata, base: TableMetadata, updates: Iterable[TableUpdate]
) -> None:
    """Raise :class:`CommitConflictError` when a ref the updates move kept the settings it had
    in ``planned`` (the state they were made on: a write copies its branch's retention) but
    another writer changed them in ``base`` since (retention set, a branch turned into a tag
    at the same snapshot). Applying the updates would undo that change; rebuilt on ``base``,
    they keep it (or refuse to write to a tag)."""
    if planned is base:
        return
    for u in updates:
        if not isinstance(u, SetSnapshotRef):
            continue
        before, now = planned.refs.get(u.ref_name), base.refs.get(u.ref_name)
        if before is None or now is None:
            continue  # created or removed meanwhile: the requirements decide
        copied = _ref_settings(u.ref()) == _ref_settings(before)
        if copied and _ref_settings(now) != _ref_settings(before):
            raise CommitConflictError(
                f"another writer changed {now.ref_type} {u.ref_name!r} (its type or retention) "
                "after this change was made: rebuild it"
            )


def check_updates_fit(base: TableMetadata, updates: Iterable[TableUpdate]) -> None:
    """Raise :class:`CommitConflictError` when ``updates`` were planned on an older state of
    the table than ``base`` in a way the requirements of a commit do not show:

    - a snapshot's sequence number is not past the table's last one, or (v3) its first row id
      is behind the table's next row id: another writer committed to a different branch, and
      the snapshot must be rebuilt (the transaction does so on this error), not re-applied,
      which the metadata rules refuse;
    - a removed snapshot is the head of a ref the updates neither move nor remove: another
      writer created the ref (a tag of an old snapshot) after the expiration was planned, and
      removing the snapshot would drop the ref with it;
    - a snapshot the updates add is set as the head of a branch whose name is a tag of the
      table (one the updates do not remove first): another writer made the tag after the
      write was planned, and the write would turn it back into a branch and move it.
    """
    ups = list(updates)
    removed: set[str] = set()
    added = {u.snapshot.snapshot_id for u in ups if isinstance(u, AddSnapshot)}
    for u in ups:
        if isinstance(u, RemoveSnapshotRef):
            removed.add(u.ref_name)
        elif isinstance(u, SetSnapshotRef) and u.snapshot_id in added and u.type == BRANCH:
            ref = base.refs.get(u.ref_name)
            if ref is not None and not ref.is_branch and u.ref_name not in removed:
                raise CommitConflictError(
                    f"{u.ref_name!r} is a tag of the table now (another writer made it after "
                    "this write was planned): a write cannot move it"
                )
    # refs the updates move or remove (anywhere among them) were known to their writer
    touched = {u.ref_name for u in ups if isinstance(u, RemoveSnapshotRef | SetSnapshotRef)}
    for u in ups:
        if isinstance(u, RemoveSnapshots):
            gone = set(u.snapshot_ids)
            kept = [n for n, r in base.refs.items() if r.snapshot_id in gone]
            kept = [n for n in kept if n not in touched]
            if kept:
                raise CommitConflictError(
                    f"the snapshots to remove include the head of {', '.join(sorted(kept))}, "
                    "which the commit neither moves nor removes (perhaps created after the "
                    "removal was planned): remove or move the ref in the same commit"
                )
        if not isinstance(u, AddSnapshot):
            continue
        s = u.snapshot
        # built on a snapshot another writer expired since (a staged write whose parent was
        # rolled back and expired), or a cherry-pick of one: the files it names may be deleted
        source = s.summary.get(SummaryKeys.SOURCE_SNAPSHOT_ID) if s.summary else None
        picked = int(source) if source is not None and source.lstrip("-").isdigit() else None
        for needed, what in ((s.parent_snapshot_id, "parent"), (picked, "cherry-picked")):
            if needed is None or needed in added or base.snapshot_by_id(needed) is not None:
                continue
            raise CommitConflictError(
                f"snapshot {s.snapshot_id} was built on its {what} snapshot {needed}, which "
                "another writer expired meanwhile: rebuild it"
            )
        stale_seq = (
            base.format_version >= 2
            and s.parent_snapshot_id is not None
            and s.sequence_number <= base.last_sequence_number
        )
        stale_rows = (
            base.format_version >= 3
            and s.first_row_id is not None
            and base.next_row_id is not None
            and s.first_row_id < base.next_row_id
        )
        # built for an older format version (another writer upgraded the table to v3): the
        # snapshot needs row ids and v3 manifests
        upgraded = base.format_version >= 3 and s.first_row_id is None
        if stale_seq or stale_rows or upgraded:
            raise CommitConflictError(
                f"snapshot {s.snapshot_id} was built on an older state of the table (another "
                f"writer committed sequence number {base.last_sequence_number}): rebuild it"
            )


def files_to_delete_after_commit(
    base: TableMetadata, base_location: str, new: TableMetadata
) -> list[str]:
    """Old metadata files to delete when ``write.metadata.delete-after-commit.enabled`` is on.

    Those of ``base``'s metadata-log (and the base file itself) that the new metadata-log no
    longer lists, as the Java reference does after a successful commit.
    """
    if not bool_property(
        new.properties,
        _T.METADATA_DELETE_AFTER_COMMIT_ENABLED,
        _T.METADATA_DELETE_AFTER_COMMIT_ENABLED_DEFAULT,
        lenient=True,
    ):
        return []
    kept = {entry.metadata_file for entry in new.metadata_log}
    previous = [entry.metadata_file for entry in base.metadata_log] + [base_location]
    return [loc for loc in previous if loc not in kept]
