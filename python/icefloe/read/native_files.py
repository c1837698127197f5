"""Scans of whole local Parquet files decoded in Rust, many files per call, without the GIL.

On a table of many small files the general reader's per-file work (opening, checking and
projecting each file in Python) holds the GIL, so reader threads wait on each other. When a
scan only needs top-level primitive columns of whole files, with no equality deletes, no
residual filter and no metadata columns, :func:`native_batches` hands the files to
:func:`icefloe._native.parquet_read_files` a chunk at a time: each file is opened, its footer,
field-id digest and page checksums are checked, its columns decoded on the Rust thread pool
and the rows its deletion vector or position deletes name dropped, and the batches come back
typed as the scan outputs them. The deletes of a chunk's files are loaded (through the scan's
delete cache) on the I/O threads first. One chunk is decoded while the consumer takes the
previous one.

A file the native path does not read (a column missing or of another type after schema
evolution, a file without field ids, a codec not built in, any damage) is read by the general
reader, which applies the evolution rules or raises the typed error naming the file; from
that file on, the rest of the scan goes through the general reader too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa

from icefloe import _native
from icefloe._concurrency import parallel_map
from icefloe.expressions.base import AlwaysTrue
from icefloe.io import FileIO
from icefloe.read.deletes import DeleteCache, TaskDeletes
from icefloe.read.reader import BATCH_SIZE, output_schema
from icefloe.scan.tasks import DeleteContent, FileScanTask, ReadOptions
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = ["ENABLED", "MAX_FILE_BYTES", "native_batches", "whole_file"]

#: Whether scans use this path at all (tests of the general reader turn it off).
ENABLED = True

#: Files larger than this are left to the general reader, which decodes the columns of one
#: large file on several threads.
MAX_FILE_BYTES = 16 * 1024 * 1024
#: Files and file bytes decoded per native call (the first call takes fewer files, so the
#: first batch comes soon); one call is decoded ahead of the consumer.
CHUNK_FILES = 64
CHUNK_BYTES = 32 * 1024 * 1024

#: Iceberg types whose Parquet column decodes straight to the Arrow type the scan outputs.
_PLAIN_TYPES = (
    BooleanType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    DateType,
    TimeType,
    TimestampType,
    TimestamptzType,
    TimestampNanoType,
    TimestamptzNanoType,
    StringType,
    BinaryType,
    FixedType,
    UUIDType,
)

Fallback = Callable[[Sequence[FileScanTask]], Iterator[pa.RecordBatch]]


def _projection(options: ReadOptions) -> tuple[list[int], pa.Schema] | None:
    """The field ids and output schema of a scan whose columns all come straight from the
    files, else None."""
    if options.metadata_columns:
        return None
    fields = options.projected_schema().fields
    schema = output_schema(options)
    if len(schema) != len(fields):
        return None
    for f, out in zip(fields, schema, strict=True):
        if not isinstance(f.field_type, _PLAIN_TYPES) or isinstance(out.type, pa.BaseExtensionType):
            return None
    return [f.field_id for f in fields], schema


def whole_file(task: FileScanTask) -> bool:
    """Whether ``task`` reads all of a data file whose record count is known."""
    df = task.data_file
    if task.start != 0 or df.record_count <= 0:  # 0: unknown count (hand-built tasks)
        return False
    return task.length is None or (
        df.file_size_in_bytes > 0 and task.length >= df.file_size_in_bytes
    )


def _local_file(io: FileIO, task: FileScanTask) -> str | None:
    """The local path of a task that reads a whole Parquet file with at most position deletes
    and no residual filter, else None."""
    df = task.data_file
    if (
        any(d.content is DeleteContent.EQUALITY_DELETES for d in task.delete_files)
        or not isinstance(task.residual, AlwaysTrue)
        or not whole_file(task)
        or df.file_size_in_bytes > MAX_FILE_BYTES
        or df.file_format.lower() != "parquet"
    ):
        return None
    return io.local_path(df.file_path)


def _chunks(tasks: Sequence[FileScanTask], first: int) -> Iterator[tuple[int, int]]:
    """(start, end) of consecutive tasks to decode per call."""
    start = 0
    limit = first
    while start < len(tasks):
        end, used = start, 0
        while end < len(tasks) and end - start < limit:
            used += tasks[end].data_file.file_size_in_bytes
            if end > start and used > CHUNK_BYTES:
                break
            end += 1
        yield start, end
        start, limit = end, CHUNK_FILES


def native_batches(
    io: FileIO,
    tasks: Sequence[FileScanTask],
    options: ReadOptions,
    workers: int,
    cache: DeleteCache,
    fallback: Fallback,
) -> Iterator[pa.RecordBatch] | None:
    """The batches of ``tasks`` in order, decoded natively on ``workers`` threads (delete
    files read through ``cache``); None when the scan does not fit the native path (then
    nothing was read). ``fallback`` reads the tasks from the first file the native path leaves
    to the general reader."""
    projection = _projection(options) if ENABLED else None
    if projection is None or not tasks:
        return None
    paths = []
    for task in tasks:
        path = _local_file(io, task)
        if path is None:
            return None
        paths.append(path)

    def deleted(task: FileScanTask) -> _native.PositionBitmap | None:
        if not task.delete_files:
            return None
        path = task.data_file.file_path
        found = TaskDeletes.load(io, path, task.delete_files, cache, options.name_mapping)
        return None if found.positions is None else found.positions.bitmap

    return _batches(tasks, paths, projection, workers, deleted, fallback)


def _batches(
    tasks: Sequence[FileScanTask],
    paths: list[str],
    projection: tuple[list[int], pa.Schema],
    workers: int,
    deleted: Callable[[FileScanTask], _native.PositionBitmap | None],
    fallback: Fallback,
) -> Iterator[pa.RecordBatch]:
    field_ids, schema = projection
    rows = [t.data_file.record_count for t in tasks]

    def decode(span: tuple[int, int]) -> list[list[pa.RecordBatch] | None]:
        a, b = span
        chunk = tasks[a:b]
        if any(t.delete_files for t in chunk):
            bitmaps = parallel_map(deleted, chunk)
        else:
            bitmaps = [None] * len(chunk)
        return _native.parquet_read_files(
            paths[a:b], rows[a:b], bitmaps, field_ids, schema, BATCH_SIZE, workers
        )

    spans = list(_chunks(tasks, 2 * workers))
    with ThreadPoolExecutor(1, thread_name_prefix="icefloe-native-read") as pool:
        ahead: Future[list[list[pa.RecordBatch] | None]] = pool.submit(decode, spans[0])
        for k, (a, _) in enumerate(spans):
            done = ahead.result()
            if k + 1 < len(spans):
                ahead = pool.submit(decode, spans[k + 1])
            for i, batches in enumerate(done, start=a):
                if batches is None:
                    ahead.cancel()
                    yield from fallback(tasks[i:])
                    return
                yield from batches
