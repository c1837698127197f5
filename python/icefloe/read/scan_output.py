"""What a scan returns: a streaming ``RecordBatchReader``, a table, a DataFrame or a count.

All of them work over planned tasks (``io``, ``tasks``, ``options``), so ``TableScan`` only
delegates here. Files are read by worker threads (pyarrow's Parquet decoding and icefloe's Rust
keep-masks release the GIL). Each task hands its batches to the consumer through a small bounded
queue, and batches come out in task order. At most ``max_workers`` tasks decode at once (a
semaphore of "slots"), but up to ``READ_AHEAD x max_workers`` tasks may be started ahead of the
consumer: a task whose queue is full (the consumer is still on an earlier task) gives its slot
to a later task instead of idling a core. Only a task of more than ``QUEUE_DEPTH`` batches can
fill its queue, so when none of the next tasks can, at most ``max_workers`` are started. The
reader threads are kept from task to task (one per task that may be started ahead; starting a
thread per task cost more than reading a small file) and end after ``IDLE_SECONDS`` without
work. Each task's reader also decodes up to
``reader.PREFETCH`` batches ahead on a helper thread. A task in flight holds a few batches
and the row group pyarrow is decoding, so tasks are started ahead only while their compressed
bytes, with the task being consumed, fit in ``READ_AHEAD_BYTES`` (files of a partitioned table
are small and read ahead freely; the splits of a large file are read one at a time, each
decoding its columns on pyarrow's threads). Memory stays bounded by that and by
``READ_AHEAD x max_workers x (QUEUE_DEPTH + PREFETCH + 2)`` batches however large the table is.
On S3, ``REMOTE_READ_AHEAD`` small files (at most 4 MiB each) are fetched ahead, each with one
request, while earlier ones decode.
The schema is known before the first file is opened.

A failure (missing or corrupt file, schema conflict) is raised by the reader when the consumer
reaches that task; ``to_arrow`` and ``count`` therefore never return a partial result.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import MissingDependencyError, ValidationError
from icefloe.expressions.base import AlwaysTrue
from icefloe.io import FileIO
from icefloe.nesting import check_nesting
from icefloe.read.deletes import DeleteCache
from icefloe.read.native_files import native_batches, whole_file
from icefloe.read.reader import BATCH_SIZE, output_schema, prefetch_file, read_task
from icefloe.scan.tasks import PARTITION, FileScanTask, ReadOptions, union_partition_type

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "QUEUE_DEPTH",
    "READ_AHEAD",
    "arrow_to_pandas",
    "count",
    "default_workers",
    "max_tasks_ahead",
    "require_pandas",
    "scan_options",
    "scan_schema",
    "to_arrow",
    "to_batches",
    "to_pandas",
]

#: Batches a worker may have ready before it waits for the consumer.
QUEUE_DEPTH = 2

#: Tasks that may be started ahead of the consumer, per worker slot.
READ_AHEAD = 2

#: Compressed bytes of the tasks started ahead of the one being consumed, at most (a task
#: is started ahead only if it fits; tasks of small files are not limited by it). Each task in
#: flight holds a decoded row group, so large splits of wide rows would otherwise hold several
#: hundred MB each.
READ_AHEAD_BYTES = 128 * 1024 * 1024

#: Seconds a reader thread waits for a task to be allowed before it ends.
IDLE_SECONDS = 1.0

#: Tasks started ahead on an object store, at least: their files (at most 4 MiB each) are
#: fetched while earlier ones decode, so a scan of many files is not bound by request latency.
REMOTE_READ_AHEAD = 16


def default_workers() -> int:
    """Files read at once by default: the CPU count, at least 2, at most 8."""
    return max(2, min(8, os.cpu_count() or 1))


def scan_options(options: ReadOptions) -> ReadOptions:
    """``options`` with a fixed ``_partition`` type (the union over specs) when it is requested,
    so every task yields batches of one schema."""
    if PARTITION in options.metadata_columns and options.partition_type is None:
        return dataclasses.replace(
            options, partition_type=union_partition_type(options.schema, options.specs)
        )
    return options


def scan_schema(options: ReadOptions) -> pa.Schema:
    """The Arrow schema of every batch a scan with ``options`` returns."""
    _check_readable(options)
    return output_schema(scan_options(options))


def _check_readable(options: ReadOptions) -> None:
    """Refuses columns nested deeper than pyarrow takes (a table another engine wrote)."""
    check_nesting(options.projected_schema(), "cannot read the table")


class _Done:
    __slots__ = ()


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_DONE = _Done()


def _put(q: queue.Queue[Any], item: Any, stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            q.put(item, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False


def _acquire(slots: threading.Semaphore, stop: threading.Event) -> bool:
    while not stop.is_set():
        if slots.acquire(timeout=0.05):
            return True
    return False


def _worker(
    io: FileIO,
    task: FileScanTask,
    options: ReadOptions,
    cache: DeleteCache,
    q: queue.Queue[Any],
    stop: threading.Event,
    slots: threading.Semaphore,
) -> None:
    """Reads ``task`` into ``q`` while holding one of the decode ``slots``; while ``q`` is full
    (the consumer is on an earlier task) the slot is lent to another task. A small file on an
    object store is fetched before a slot is taken: waiting on the network needs no core."""
    try:
        handle = prefetch_file(io, task)
    except BaseException as e:  # handed to the consumer, which re-raises it
        _put(q, _Failed(e), stop)
        return
    if not _acquire(slots, stop):
        return
    held = True
    try:
        for batch in read_task(io, task, options, cache, handle):
            try:
                q.put_nowait(batch)
                continue
            except queue.Full:
                pass
            slots.release()
            held = False
            if not _put(q, batch, stop) or not _acquire(slots, stop):
                return
            held = True
        slots.release()
        held = False
        _put(q, _DONE, stop)
    except BaseException as e:  # handed to the consumer, which re-raises it
        if held:
            slots.release()
            held = False
        _put(q, _Failed(e), stop)
    finally:
        if held:
            slots.release()


def max_tasks_ahead(workers: int) -> int:
    """Tasks started but not yet consumed, at most, with ``workers`` decode slots."""
    return READ_AHEAD * workers


def iter_batches(
    io: FileIO,
    tasks: Iterable[FileScanTask],
    options: ReadOptions,
    *,
    max_workers: int | None = None,
    cache: DeleteCache | None = None,
    together: bool = False,
) -> Iterator[pa.RecordBatch]:
    """The batches of every task, in task order, decoding up to ``max_workers`` files at once
    (and starting up to ``max_tasks_ahead(max_workers)`` ahead of the consumer). ``together``:
    the caller keeps every batch, so large files of few columns may be decoded several at
    once (see :func:`native_batches`)."""
    _check_readable(options)
    options = scan_options(options)
    cache = cache if cache is not None else DeleteCache()
    workers = default_workers() if max_workers is None else max_workers
    if workers < 1:
        raise ValidationError(f"max_workers must be at least 1, got {workers}")
    todo: Sequence[FileScanTask] = list(tasks)

    def general(rest: Sequence[FileScanTask]) -> Iterator[pa.RecordBatch]:
        return _general_batches(io, rest, options, workers, cache)

    native = native_batches(io, todo, options, workers, cache, general, together)
    yield from native if native is not None else general(todo)


def _general_batches(
    io: FileIO,
    todo: Sequence[FileScanTask],
    options: ReadOptions,
    workers: int,
    cache: DeleteCache,
) -> Iterator[pa.RecordBatch]:
    """:func:`iter_batches` through the general reader, a task per thread."""
    if workers == 1 or len(todo) <= 1:
        for task in todo:
            yield from read_task(io, task, options, cache)
        return
    ahead = max_tasks_ahead(workers)
    remote = io.s3_client(todo[0].data_file.file_path) is not None
    if remote:
        ahead = max(ahead, REMOTE_READ_AHEAD)
    # Only a task that can fill its queue lends its slot; tasks of at most QUEUE_DEPTH batches
    # never do, so more of them ahead of the consumer only adds threads contending for the
    # GIL (a scan of 480 small files: 10-15% slower with them).
    lending = [not 0 < t.data_file.record_count <= QUEUE_DEPTH * BATCH_SIZE for t in todo]
    stop = threading.Event()
    slots = threading.Semaphore(workers)
    queues: list[queue.Queue[Any]] = [queue.Queue(maxsize=QUEUE_DEPTH) for _ in todo]
    # Tasks below ``allowed`` may start. Reader threads take them in order and are kept from
    # task to task (starting a thread per task cost more than reading a small file); a thread
    # with nothing allowed for IDLE_SECONDS ends, so a reader the consumer dropped without
    # closing leaves no threads behind. At most ``ahead`` threads: one per task that may be
    # started ahead, each holding a decode slot only while it decodes.
    turn = threading.Condition()
    sizes = [_task_bytes(t) for t in todo]

    def allowed_from(first: int) -> int:
        """The end of the tasks that may be started while ``first`` is being consumed: at
        most ``ahead`` of them (``workers`` when none of the next ones can lend its slot),
        those after ``first`` only within :data:`READ_AHEAD_BYTES`."""
        limit = ahead
        if not remote and not any(lending[first + 1 : first + 1 + workers]):
            limit = workers
        end, used = first, 0
        while end < len(todo) and end - first < limit:
            used += sizes[end]
            if end > first and used > READ_AHEAD_BYTES:
                break
            end += 1
        return end

    state = {"next": 0, "allowed": allowed_from(0), "live": 0}
    threads: list[threading.Thread] = []

    def pool_thread() -> None:
        while True:
            with turn:
                idle_since = time.monotonic()
                while not stop.is_set() and state["next"] >= state["allowed"]:
                    if state["next"] >= len(todo) or time.monotonic() - idle_since >= IDLE_SECONDS:
                        state["live"] -= 1
                        return
                    turn.wait(0.05)
                if stop.is_set():
                    state["live"] -= 1
                    return
                i = state["next"]
                state["next"] = i + 1
            _worker(io, todo[i], options, cache, queues[i], stop, slots)

    def spawn(first: int) -> None:
        """Under ``turn``: a thread for each task that may be started and is not consumed
        (``first`` is the one being consumed); idle threads would only contend for the GIL."""
        while state["live"] < state["allowed"] - first and state["next"] < state["allowed"]:
            t = threading.Thread(
                target=pool_thread, name=f"icefloe-read-{len(threads)}", daemon=True
            )
            threads.append(t)
            state["live"] += 1
            t.start()

    try:
        with turn:
            spawn(0)
        for i in range(len(todo)):
            q = queues[i]
            while True:
                item = q.get()
                if item is _DONE:
                    break
                if isinstance(item, _Failed):
                    raise item.error
                yield item
            with turn:
                state["allowed"] = max(state["allowed"], allowed_from(i + 1))
                spawn(i + 1)
                turn.notify_all()
    finally:
        stop.set()
        with turn:
            turn.notify_all()
        for t in threads:
            t.join()


def _task_bytes(task: FileScanTask) -> int:
    """The compressed bytes a task reads, at most (its split, or its whole file)."""
    if task.length is not None:
        return max(0, task.length)
    return max(0, task.data_file.file_size_in_bytes)


def _limited(batches: Iterator[pa.RecordBatch], limit: int | None) -> Iterator[pa.RecordBatch]:
    if limit is None:
        yield from batches
        return
    if limit < 0:
        raise ValidationError(f"limit must be >= 0, got {limit}")
    left = limit
    if left == 0:
        return
    try:
        for batch in batches:
            if batch.num_rows >= left:
                yield batch.slice(0, left)
                return
            left -= batch.num_rows
            yield batch
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()


def to_batches(
    io: FileIO,
    tasks: Iterable[FileScanTask],
    options: ReadOptions,
    *,
    limit: int | None = None,
    max_workers: int | None = None,
) -> pa.RecordBatchReader:
    """A streaming ``pyarrow.RecordBatchReader`` over the tasks' rows (schema known up front).

    At most ``max_workers`` files are read at once and each keeps at most a few batches ready,
    so memory stays bounded; ``limit`` stops reading after that many rows.
    """
    schema = scan_schema(options)
    batches = iter_batches(io, tasks, options, max_workers=max_workers)
    return pa.RecordBatchReader.from_batches(schema, _limited(batches, limit))


def to_arrow(
    io: FileIO,
    tasks: Iterable[FileScanTask],
    options: ReadOptions,
    *,
    limit: int | None = None,
    max_workers: int | None = None,
) -> pa.Table:
    """Every row of the tasks as one ``pyarrow.Table`` (an error leaves no partial table)."""
    if limit is not None:
        reader = to_batches(io, tasks, options, limit=limit, max_workers=max_workers)
        return reader.read_all()
    batches = iter_batches(io, tasks, options, max_workers=max_workers, together=True)
    return pa.Table.from_batches(list(batches), scan_schema(options))


def require_pandas(what: str = "to_pandas()") -> None:
    """Raise :class:`~icefloe.exceptions.MissingDependencyError` naming the ``pandas`` extra
    unless pandas can be imported (checked before any file is read)."""
    try:
        import pandas  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError.install(
            f"{what} needs pandas ({exc})", "pandas", name=exc.name or "pandas"
        ) from exc


def to_pandas(
    io: FileIO,
    tasks: Iterable[FileScanTask],
    options: ReadOptions,
    *,
    limit: int | None = None,
    max_workers: int | None = None,
    **kwargs: Any,
) -> pd.DataFrame:
    """The rows as a pandas ``DataFrame`` (``kwargs`` go to ``pyarrow.Table.to_pandas``)."""
    require_pandas()
    table = to_arrow(io, tasks, options, limit=limit, max_workers=max_workers)
    return arrow_to_pandas(table, **kwargs)


def arrow_to_pandas(table: pa.Table, **kwargs: Any) -> pd.DataFrame:
    """``table.to_pandas(**kwargs)``; a date (or, with ``timestamp_as_object=True``, a
    timestamp) outside Python's years 1 to 9999, which pyarrow fails to make a Python object,
    raises :class:`ValidationError` naming its columns and the remedies instead of pyarrow's
    bare ``ValueError``."""
    try:
        frame: pd.DataFrame = table.to_pandas(**kwargs)
    except (ValueError, OverflowError) as exc:
        found: dict[str, None] = {}
        timestamps = bool(kwargs.get("timestamp_as_object", False))
        for name, column in zip(table.column_names, table.columns, strict=True):
            for chunk in column.chunks:
                _outside_python_dates(chunk, name, timestamps, found)
        if not found:
            raise
        names = ", ".join(repr(n) for n in found)
        which = f"columns {names}: they hold" if len(found) > 1 else f"column {names}: it holds"
        kinds = "dates or timestamps" if timestamps else "dates"
        raise ValidationError(
            f"to_pandas() cannot convert {which} {kinds} outside the years 1 to 9999, which "
            "Python's datetime cannot hold (pyarrow makes dates datetime.date objects unless "
            "date_as_object=False): to_pandas(date_as_object=False) gives top-level date "
            "columns as datetime64 values"
            + (
                " (and timestamps are datetime64 without timestamp_as_object=True)"
                if timestamps
                else ""
            )
            + f", and to_arrow() reads every value ({exc})"
        ) from exc
    return frame


#: 0001-01-01 and 9999-12-31, Python's first and last dates, in days since 1970-01-01.
_PYTHON_DAYS = (-719_162, 2_932_896)

_UNITS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _outside_python_dates(
    arr: pa.Array, path: str, timestamps: bool, found: dict[str, None]
) -> None:
    """Adds ``path`` (dotted through structs, ``element``, ``key`` and ``value``) to ``found``
    when ``arr`` holds dates (and, if ``timestamps``, timestamps) outside Python's years."""
    t = arr.type
    if isinstance(t, pa.BaseExtensionType):
        arr, t = arr.storage, t.storage_type
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            _outside_python_dates(arr.field(i), f"{path}.{t.field(i).name}", timestamps, found)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        _outside_python_dates(arr.flatten(), f"{path}.element", timestamps, found)
    elif pa.types.is_map(t):
        _outside_python_dates(arr.keys, f"{path}.key", timestamps, found)
        _outside_python_dates(arr.items, f"{path}.value", timestamps, found)
    elif pa.types.is_dictionary(t):
        _outside_python_dates(arr.dictionary, path, timestamps, found)
    else:
        if pa.types.is_date32(t):
            per_day, ints = 1, arr.view(pa.int32())
        elif pa.types.is_date64(t):
            per_day, ints = 86_400_000, arr.view(pa.int64())
        elif timestamps and pa.types.is_timestamp(t):
            per_day, ints = 86_400 * _UNITS_PER_SECOND[t.unit], arr.view(pa.int64())
        else:
            return
        bounds = pc.min_max(ints)
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if low is None or high is None:
            return
        if low < _PYTHON_DAYS[0] * per_day or high >= (_PYTHON_DAYS[1] + 1) * per_day:
            found[path] = None


def count(
    io: FileIO,
    tasks: Iterable[FileScanTask],
    options: ReadOptions,
    *,
    max_workers: int | None = None,
) -> int:
    """The number of rows the tasks yield.

    A whole data file without deletes or residual filter counts its manifest ``record_count``
    without being opened; the other tasks are read with no data columns projected (only the
    columns their deletes and residual need).
    """
    total = 0
    to_read: list[FileScanTask] = []
    for task in tasks:
        if not task.delete_files and isinstance(task.residual, AlwaysTrue) and whole_file(task):
            total += task.data_file.record_count
        else:
            to_read.append(task)
    if to_read:
        bare = dataclasses.replace(options, projected_field_ids=(), metadata_columns=())
        for batch in iter_batches(io, to_read, bare, max_workers=max_workers, together=True):
            total += batch.num_rows
    return total
