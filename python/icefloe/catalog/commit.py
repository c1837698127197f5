"""The commit protocol (spec "Optimistic Concurrency" and "Commit Conflict Resolution and Retry").

A commit validates the requirements against a base, applies the updates, writes the new
metadata file and asks the catalog to swap its pointer from the base's file to the new one.
When another writer won the race (:class:`CommitFailedError`) the file of the attempt is
deleted, the table is refreshed, the requirements are checked again (a failure now is a real
conflict: :class:`CommitConflictError`) and the updates are re-applied, waiting with exponential
backoff between attempts as the table's ``commit.retry.*`` properties say. When it cannot be known
whether the pointer moved (:class:`CommitStateUnknownError`) nothing is cleaned up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from icefloe.exceptions import CommitConflictError, CommitFailedError
from icefloe.metadata import TableMetadata, TableRequirement, TableUpdate, apply_updates
from icefloe.metadata import validate_requirements as _validate_requirements
from icefloe.table.committer import CommitResult, RetryPolicy

__all__ = [
    "CommitResult",
    "RetryPolicy",
    "files_to_delete_after_commit",
    "run_commit",
]

DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"


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
    when it lost the race. ``refresh()`` reads the catalog's current metadata and location.
    """
    reqs = list(requirements)
    ups = list(updates)
    policy = RetryPolicy.from_properties(base.properties)
    deadline = time.monotonic() + policy.total_timeout_ms / 1000.0
    attempt = 0
    while True:
        try:
            _validate_requirements(reqs, base)
        except CommitFailedError as exc:
            raise CommitConflictError(
                f"commit conflicts with the table's current state ({base_location}): {exc}"
            ) from exc
        try:
            new = apply_updates(base, ups, base_location)
            location = write_and_swap(base, base_location, new)
            return CommitResult(new, location), base, base_location
        except CommitFailedError:
            attempt += 1
            if attempt > policy.num_retries:
                raise
            wait = policy.wait_ms(attempt) / 1000.0
            if time.monotonic() + wait > deadline:
                raise
            sleep(wait)
            base, base_location = refresh()


def files_to_delete_after_commit(
    base: TableMetadata, base_location: str, new: TableMetadata
) -> list[str]:
    """Old metadata files to delete when ``write.metadata.delete-after-commit.enabled`` is on.

    Those of ``base``'s metadata-log (and the base file itself) that the new metadata-log no
    longer lists, as the Java reference does after a successful commit.
    """
    if new.properties.get(DELETE_AFTER_COMMIT, "false").lower() != "true":
        return []
    kept = {entry.metadata_file for entry in new.metadata_log}
    previous = [entry.metadata_file for entry in base.metadata_log] + [base_location]
    return [loc for loc in previous if loc not in kept]
