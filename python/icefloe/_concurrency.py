"""The thread pools icefloe shares, and how many threads each kind of work uses.

Every parallel step (manifest reads in planning and commits, background manifest writes, file
deletes in expiry and orphan removal, Parquet file writing, row-level rewrites, describing added
files) runs on one of two kinds of process-wide executor, one per width asked for (the default
widths are :data:`IO_THREADS` and :func:`work_threads`; threads start only as work needs them):

- :func:`io_executor`: blocking reads, writes and deletes of whole files. Its jobs never wait
  on other jobs of the pool.
- :func:`work_executor`: per-file jobs that encode or decode (the GIL is released in pyarrow
  and Rust). They may wait on :func:`io_executor` jobs, and run nested :func:`parallel_map`
  calls without deadlock (see there).

plus :func:`decode_executor`, the planner's two threads that decode manifests ahead of the
planning thread while their reads wait on :func:`io_executor`.

Executors are created on first use and rebuilt when the process id changes: a child forked
after a scan or a commit has none of its parent's threads, so executors inherited from the
parent would queue work that never runs. The creation lock is replaced in the child too (the
parent may have held it while forking).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Literal, TypeVar

__all__ = [
    "IO_THREADS",
    "decode_executor",
    "io_executor",
    "parallel_map",
    "work_executor",
    "work_threads",
]

T = TypeVar("T")
R = TypeVar("R")

#: Files read, written or deleted at once by one call (object stores are latency bound).
IO_THREADS = 8
#: Threads of the planner's decode-ahead executor (one chunk planned, two decoding).
_DECODE_THREADS = 2


def work_threads() -> int:
    """Per-file CPU jobs run at once by one call: the cores, at most 8."""
    return max(1, min(8, os.cpu_count() or 1))


class _Executors:
    """Executors by name, for the process that created them."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.pools: dict[str, ThreadPoolExecutor] = {}


_STATE = _Executors()


def _forget_in_child() -> None:
    global _STATE
    _STATE = _Executors()


os.register_at_fork(after_in_child=_forget_in_child)


def _executor(name: str, threads: int) -> ThreadPoolExecutor:
    global _STATE
    state = _STATE
    if state.pid != os.getpid():  # forked without the at-fork hook (e.g. from C)
        state = _STATE = _Executors()
    with state.lock:
        pool = state.pools.get(name)
        if pool is None:
            pool = state.pools[name] = ThreadPoolExecutor(
                max_workers=threads, thread_name_prefix=f"icefloe-{name}"
            )
        return pool


def io_executor(threads: int = IO_THREADS) -> ThreadPoolExecutor:
    """The executor (``threads`` wide) for whole-file reads, writes and deletes: jobs that never
    wait on other jobs of it."""
    return _executor(f"io-{threads}", threads)


def work_executor(threads: int | None = None) -> ThreadPoolExecutor:
    """The executor (``threads`` wide, default :func:`work_threads`) for per-file encode and
    decode jobs."""
    n = threads or work_threads()
    return _executor(f"work-{n}", n)


def decode_executor() -> ThreadPoolExecutor:
    """The planner's decode-ahead executor (separate from :func:`io_executor`, whose reads its
    jobs wait on)."""
    return _executor("decode", _DECODE_THREADS)


def parallel_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    threads: int | None = None,
    kind: Literal["io", "work"] = "io",
) -> list[R]:
    """``[fn(x) for x in items]``, with up to ``threads`` calls at once on the ``threads``-wide
    :func:`io_executor` or :func:`work_executor` (by ``kind``; the default width is theirs); once
    a call fails no more start, and when the calls under way end the error of the earliest item
    that failed is raised.

    The calling thread takes items too, and runners that have not started when it runs out of
    items are cancelled: a call made from inside a job of the same executor (all of whose
    threads may be busy) still finishes, on the calling thread alone if need be."""
    todo = list(items)
    width = threads or (IO_THREADS if kind == "io" else work_threads())
    limit = min(width, len(todo))
    if limit <= 1:
        return [fn(x) for x in todo]
    out: list[R | None] = [None] * len(todo)
    errors: list[tuple[int, BaseException]] = []
    lock = threading.Lock()
    following = iter(range(len(todo)))

    def run() -> None:
        while True:
            with lock:
                if errors:
                    return
                i = next(following, None)
            if i is None:
                return
            try:
                out[i] = fn(todo[i])
            except BaseException as e:  # raised by the caller below
                with lock:
                    errors.append((i, e))
                return

    pool = io_executor(width) if kind == "io" else work_executor(width)
    runners: list[Future[None]] = [pool.submit(run) for _ in range(limit - 1)]
    run()
    for f in runners:
        if not f.cancel():
            f.result()
    if errors:
        raise min(errors, key=lambda x: x[0])[1]
    return out  # type: ignore[return-value]
