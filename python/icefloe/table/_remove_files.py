"""Deleting files in bulk (expiry, orphan-file removal), in parallel on the shared I/O executor
(:mod:`icefloe._concurrency`)."""

from __future__ import annotations

from collections.abc import Iterable

from icefloe._concurrency import parallel_map
from icefloe.io import FileIO
from icefloe.progress import Progress, ProgressArg

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
    deletion to ``progress`` (see :mod:`icefloe.progress`)."""
    todo = list(paths)
    if not todo:
        return
    with Progress(progress, len(todo), what) as bar:

        def delete(path: str) -> None:
            io.delete_quietly(path)
            bar.advance()

        parallel_map(delete, todo, threads=threads)
