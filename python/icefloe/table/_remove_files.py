"""Deleting files in bulk (expiry, orphan-file removal), in parallel on the shared I/O executor
(:mod:`icefloe._concurrency`)."""

from __future__ import annotations

from collections.abc import Iterable

from icefloe._concurrency import parallel_map
from icefloe.io import FileIO
from icefloe.progress import Progress, ProgressArg
from icefloe.s3client import DELETE_BATCH

__all__ = ["delete_all"]


def delete_all(
    io: FileIO,
    paths: Iterable[str],
    *,
    threads: int | None = None,
    progress: ProgressArg = None,
    what: str = "deleting files",
) -> None:
    """Delete ``paths`` in parallel threads (a missing file is not an error), reporting each
    deletion to ``progress`` (see :mod:`icefloe.progress`). On S3 each thread sends
    ``DeleteObjects`` requests of up to 1,000 files."""
    todo = list(paths)
    if not todo:
        return
    with Progress(progress, len(todo), what) as bar:
        if io.s3_client(todo[0]) is not None:
            # An object store that deletes in batches: one request per 1,000 files.
            batches = [todo[i : i + DELETE_BATCH] for i in range(0, len(todo), DELETE_BATCH)]
            parallel_map(
                lambda batch: io.delete_files(batch, bar.advance), batches, threads=threads
            )
            return

        def delete(path: str) -> None:
            io.delete_if_exists(path)  # a failure is reported, not counted as deleted
            bar.advance()

        parallel_map(delete, todo, threads=threads)
