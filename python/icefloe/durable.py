"""Stable storage on local file systems: what ``fsync`` a commit needs.

Object stores make a write durable when it returns; a local file system keeps it in the page
cache until the kernel writes it back, and a new file's name lives in its directory, which is
written back separately. A power loss after a commit could otherwise leave a snapshot (or the
catalog's pointer to a metadata file) naming a file that is empty or missing. So:

- :func:`sync_files` puts written files, and every directory on the way to them, on stable
  storage (in parallel: a disk takes several ``fsync`` calls at once). Snapshot producers call
  it for the files a snapshot adds before they write its manifests.
- :func:`sync_soon` starts the ``fsync`` of a file its writer has just closed, in the
  background, so the disk works while the next files are encoded; :func:`sync_files` then
  waits for it (and reports its error).
- :func:`sync_soon_all` does that for many files just written at once, in one job.
- :func:`sync_directories` does the same for directory entries alone, after a file is renamed
  or linked into place.
- :func:`writeback_file` opens a file whose bytes the kernel is asked to start writing back
  every :data:`WRITEBACK_BYTES` as they are written, so a large file is mostly on the disk by
  the time its ``fsync`` runs (Linux; elsewhere a plain file).

On POSIX systems the calls of many files run in Rust, on a few threads, in one call: a Python
thread making a few system calls per file hands the GIL back and forth with the threads doing
the rest of a write, and slows them.

Directories cannot be opened for ``fsync`` on Windows; there only the files are synced.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from functools import partial
from typing import Any

from icefloe import _native
from icefloe._concurrency import IO_THREADS, io_executor

__all__ = ["sync_directories", "sync_files", "sync_soon", "sync_soon_all", "writeback_file"]

_DIRECTORIES_SYNC = os.name == "posix"


# The file system has nothing to sync (read-only) or cannot sync this kind of file (some FUSE
# and network file systems refuse directories): nothing more can be done for it.
_UNSYNCABLE = frozenset({errno.EINVAL, errno.EROFS, errno.ENOTSUP, errno.EOPNOTSUPP})


# Windows commits a file's buffers only through a handle that can write.
_OPEN_FLAGS = os.O_RDONLY if os.name == "posix" else os.O_RDWR | getattr(os, "O_BINARY", 0)


def _fsync(path: str) -> None:
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return  # nothing to make durable (checking that files exist is not this module's job)
    except PermissionError:
        if os.path.isdir(path):
            return  # a directory above the table this user may pass through but not read
        raise
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _UNSYNCABLE:
            raise OSError(exc.errno, exc.strerror, path) from exc  # naming the file
    finally:
        os.close(fd)


def _ancestors(paths: Iterable[str]) -> set[str]:
    """Every directory above ``paths`` (their entries name the directories under them)."""
    out: set[str] = set()
    for path in paths:
        parent = os.path.dirname(path)
        while parent and parent not in out:
            out.add(parent)
            up = os.path.dirname(parent)
            if up == parent:
                break
            parent = up
    return out


#: Background syncs of :func:`sync_soon` not yet known to have succeeded, by path (a failed
#: one stays until :func:`sync_files` reports it: the kernel tells a write-back error once).
_STARTED: dict[str, Future[None]] = {}
_STARTED_LOCK = threading.Lock()


def sync_soon(path: str) -> None:
    """Start the ``fsync`` of the local file ``path`` (just closed by its writer)."""
    _start(path, partial(_fsync_all, [path]))


def sync_soon_all(paths: Sequence[str]) -> None:
    """Start the ``fsync`` of the local files ``paths`` (just written), in one background job."""
    if len(paths) <= 1 or not _DIRECTORIES_SYNC:
        for path in paths:
            sync_soon(path)
        return
    job = io_executor().submit(_fsync_all, list(paths))
    with _STARTED_LOCK:
        for path in paths:
            _STARTED[path] = job
    for path in paths:
        job.add_done_callback(partial(_settled, path))


def _start(path: str, fn: Callable[[], None]) -> None:
    job = io_executor().submit(fn)
    with _STARTED_LOCK:
        _STARTED[path] = job
    job.add_done_callback(partial(_settled, path))


def _settled(path: str, job: Future[None]) -> None:
    if job.cancelled() or job.exception() is None:
        with _STARTED_LOCK:
            if _STARTED.get(path) is job:
                del _STARTED[path]


def _forget_in_child() -> None:
    """A forked child has none of the parent's threads: their jobs would never finish."""
    global _STARTED_LOCK
    _STARTED_LOCK = threading.Lock()
    _STARTED.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def sync_files(paths: Iterable[str]) -> None:
    """``fsync`` the files at the local ``paths`` and every directory above them (waiting for
    the syncs :func:`sync_soon` started).

    Missing files are skipped; other errors (a write-back error, say) raise ``OSError``.
    """
    files = list(dict.fromkeys(paths))
    if not files:
        return
    with _STARTED_LOCK:
        started = [_STARTED.pop(path, None) for path in files]
    for job in started:
        # a cancelled one (at interpreter exit) is synced by the pass below anyway
        if job is not None and not job.cancelled():
            job.result()
    jobs = files + (sorted(_ancestors(files)) if _DIRECTORIES_SYNC else [])
    if _DIRECTORIES_SYNC or len(jobs) <= 2:
        _fsync_all(jobs)  # on POSIX one native call for them all
        return
    # elsewhere a few threads, each taking its share in turn (a job of its own per file costs
    # more than the fsync of a file already written back)
    threads = min(IO_THREADS, len(jobs))
    for _ in io_executor().map(_fsync_all, [jobs[i::threads] for i in range(threads)]):
        pass


def _fsync_all(paths: list[str]) -> None:
    """``fsync`` ``paths`` (on POSIX in one Rust call, a few at once, the GIL released once
    rather than at each system call)."""
    if _DIRECTORIES_SYNC and paths:
        _fsync_batch(paths)
        return
    for path in paths:
        _fsync(path)


def _fsync_batch(paths: list[str]) -> None:
    """:func:`_fsync` of each of ``paths``, in one Rust call on a few threads."""
    _native.sync_paths_local(paths, min(IO_THREADS, len(paths)))


def sync_directories(paths: Iterable[str]) -> None:
    """``fsync`` the local directories ``paths`` (and nothing above them)."""
    if not _DIRECTORIES_SYNC:
        return
    _fsync_all(list(dict.fromkeys(paths)))


#: Bytes written to a file between two requests that the kernel start writing them back.
WRITEBACK_BYTES = 8 << 20

_FADVISE = getattr(os, "posix_fadvise", None)


class _WritebackRaw(io.FileIO):
    """A file that asks the kernel to start writing back each :data:`WRITEBACK_BYTES` written
    (``POSIX_FADV_DONTNEED`` on a range of dirty pages starts their write-back without waiting
    and drops none of them; write-back errors stay for the ``fsync`` to report)."""

    def __init__(self, fd: int) -> None:
        super().__init__(fd, "wb")
        self._flushed = 0
        self._written = 0

    def write(self, data: Any) -> int:
        n = super().write(data)
        if n:
            self._written += n
            if self._written - self._flushed >= WRITEBACK_BYTES:
                self._start_writeback()
        return n or 0

    def _start_writeback(self) -> None:
        if _FADVISE is not None:
            with contextlib.suppress(OSError):  # advice only: the fsync still makes it durable
                _FADVISE(self.fileno(), self._flushed, self._written - self._flushed, _DONTNEED)
        self._flushed = self._written


_DONTNEED = getattr(os, "POSIX_FADV_DONTNEED", 4)


def writeback_file(fd: int) -> io.BufferedWriter:
    """A buffered binary file over the descriptor ``fd`` (it takes ownership of it), written
    back as it grows where the system allows it (see :data:`WRITEBACK_BYTES`)."""
    if _FADVISE is None or not sys.platform.startswith("linux"):
        return io.BufferedWriter(io.FileIO(fd, "wb"))
    return io.BufferedWriter(_WritebackRaw(fd))
