"""Deleting files in bulk (expiry, orphan-file removal), in parallel on the shared I/O executor
(:mod:`icefloe._concurrency`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from icefloe._concurrency import parallel_map
from icefloe.exceptions import IcebergError, ValidationError
from icefloe.io import FileIO
from icefloe.progress import Progress, ProgressArg, check_progress
from icefloe.s3client import DELETE_BATCH

__all__ = ["check_delete_args", "delete_all"]

_log = logging.getLogger(__name__)


def check_delete_args(threads: int | None, progress: ProgressArg) -> None:
    """Refuses a bad ``max_workers`` or ``progress`` before an operation commits anything
    (they are used only once its files are deleted, after the commit)."""
    if threads is not None and (
        isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
    ):
        raise ValidationError(f"max_workers must be a positive integer, got {threads!r}")
    check_progress(progress)


def delete_all(
    io: FileIO,
    paths: Iterable[str],
    *,
    threads: int | None = None,
    progress: ProgressArg = None,
    what: str = "deleting files",
    keep_going: bool = False,
) -> list[str]:
    """Delete ``paths`` in parallel threads (a missing file is not an error), reporting each
    deletion to ``progress`` (see :mod:`icefloe.progress`). On S3 each thread sends
    ``DeleteObjects`` requests of up to 1,000 files.

    A failed deletion raises, unless ``keep_going``: then every path is tried, the ones that
    could not be deleted are returned and a warning names how many (for clean-up after a
    commit, which has happened whatever the deletions do; as Iceberg Java, which logs them).
    """
    todo = list(paths)
    if not todo:
        return []
    failed: list[str] = []
    errors: list[Exception] = []
    lock = threading.Lock()

    def failing(items: list[str], exc: Exception) -> None:
        if not keep_going:
            raise exc
        with lock:
            failed.extend(items)
            errors.append(exc)

    with Progress(progress, len(todo), what) as bar:
        if io.s3_client(todo[0]) is not None:
            # An object store that deletes in batches: one request per 1,000 files.
            batches = [todo[i : i + DELETE_BATCH] for i in range(0, len(todo), DELETE_BATCH)]

            def delete_batch(batch: list[str]) -> None:
                try:
                    io.delete_files(batch, bar.advance)
                except IcebergError as exc:
                    failing(batch, exc)

            parallel_map(delete_batch, batches, threads=threads)
        else:

            def delete(path: str) -> None:
                try:
                    io.delete_if_exists(path)  # a failure is reported, not counted as deleted
                except IcebergError as exc:
                    failing([path], exc)
                    return
                bar.advance()

            parallel_map(delete, todo, threads=threads)
    if failed:
        _log.warning(
            "%s: %d of %d files could not be deleted (first: %s: %s)",
            what,
            len(failed),
            len(todo),
            failed[0],
            errors[0],
        )
    return failed
