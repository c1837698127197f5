"""Scans of whole local Parquet files decoded in Rust, many files per call, without the GIL.

On a table of many small files the general reader's per-file work (opening, checking and
projecting each file in Python) holds the GIL, so reader threads wait on each other. When a
scan reads whole top-level columns of primitive types (or structs, lists and maps of them),
with equality deletes and residual filters on primitive columns at most and no metadata
columns, :func:`native_batches` hands the files to
:func:`icefloe._native.parquet_read_files` a chunk at a time: each file is opened, its footer,
field-id digest and page checksums are checked, its columns decoded on the Rust thread pool
and the rows its deletion vector or position deletes name dropped, and the batches come back
typed as the scan outputs them. The deletes of a chunk's files are loaded (through the scan's
delete cache) on the I/O threads first. One chunk is decoded while the consumer takes the
previous one. A file larger than :data:`MAX_FILE_BYTES` (or a split of one) is streamed
instead: :func:`icefloe._native.parquet_open_stream` decodes its columns in parallel one batch
at a time, so a large file uses every core and is never held whole. A task's residual filter
is evaluated on its batches after the decode (its columns read and dropped when not
projected); a large file with one is left to the general reader, whose row-group statistics
can skip what the filter rules out.

A file the native path does not read (a column missing or of another type after schema
evolution, a file without field ids, a codec not built in, any damage) is read by the general
reader, which applies the evolution rules or raises the typed error naming the file; from
that file on, the rest of the scan goes through the general reader too. A stream that fails
part way (a damaged page) hands the rest of its file, after the rows it gave, to the general
reader the same way.

The row-level operations read the columns a filter or a join key needs the same way
(:mod:`icefloe.read.column_chunks`).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import cast

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe import _native
from icefloe._concurrency import parallel_map
from icefloe.arrow_schema import schema_to_arrow
from icefloe.exceptions import IcebergError
from icefloe.expressions.arrow import selection_mask
from icefloe.expressions.base import AlwaysTrue, BooleanExpression
from icefloe.io import FileIO
from icefloe.name_mapping import NameMapping
from icefloe.read.deletes import DeleteCache, TaskDeletes, preload_position_deletes
from icefloe.read.parquet_file import DECODE_ERRORS, has_nanos, open_checked
from icefloe.read.reader import BATCH_SIZE, output_schema
from icefloe.read.rowgroups import RowGroupFilter
from icefloe.scan.filters import referenced_field_ids
from icefloe.scan.tasks import DeleteContent, FileScanTask, ReadOptions, replace_task
from icefloe.schema import Schema
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
    NestedField,
    NestedType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = [
    "ENABLED",
    "MAX_FILE_BYTES",
    "POSITION_COLUMN",
    "decode_chunks",
    "drained_alongside",
    "native_batches",
    "plain_field",
    "row_file",
    "streamed_task",
    "top_level_fields",
    "whole_file",
]

#: Whether scans use this path at all (tests of the general reader turn it off).
ENABLED = True

#: Files larger than this are streamed (their columns decoded in parallel, a batch at a time)
#: rather than decoded whole, many files per call.
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
#: Per task of a chunk: its batches, the stream of a large file, or None (not read natively).
Decoded = list[list[pa.RecordBatch] | _native.ParquetFileStream | None]

#: The column :func:`icefloe.read.column_chunks.column_chunks` adds: each row's position in
#: its data file.
POSITION_COLUMN = "__icefloe_pos"


def plain_field(field: NestedField) -> bool:
    """Whether the native path reads ``field`` (a top-level column of one of the plain types)."""
    return isinstance(field.field_type, _PLAIN_TYPES)


def _scan_field(field: NestedField) -> bool:
    """Whether a scan reads ``field`` natively: a plain type, or a struct, list or map of such
    types at every level."""
    t = field.field_type
    if isinstance(t, NestedType):
        return all(_scan_field(c) for c in t.fields)
    return isinstance(t, _PLAIN_TYPES)


def _extension(t: pa.DataType) -> bool:
    """Whether ``t`` is, or holds, an Arrow extension type."""
    if isinstance(t, pa.BaseExtensionType):
        return True
    if pa.types.is_struct(t):
        return any(_extension(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _extension(t.key_type) or _extension(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _extension(t.value_type)
    return False


def _projection(options: ReadOptions) -> tuple[list[int], pa.Schema] | None:
    """The field ids and output schema of a scan whose columns all come straight from the
    files (whole top-level columns: a struct pruned to some of its fields is not), else
    None."""
    if options.metadata_columns:
        return None
    fields = options.projected_schema().fields
    schema = output_schema(options)
    if len(schema) != len(fields):
        return None
    table = {f.field_id: f for f in options.schema.fields}
    for f, out in zip(fields, schema, strict=True):
        whole = table.get(f.field_id)
        if (
            whole is None
            or whole.field_type != f.field_type
            or not _scan_field(f)
            or _extension(out.type)
        ):
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


def streamed_task(task: FileScanTask) -> bool:
    """Whether ``task`` is read by a stream (a large file, or a split of one) rather than
    decoded whole."""
    return not whole_file(task) or task.data_file.file_size_in_bytes > MAX_FILE_BYTES


def _parquet_path(io: FileIO, task: FileScanTask, nanos: bool = False) -> str | None:
    """The local path of a task's data file when it is a Parquet file of known record count
    and of the size its manifest entry says, else None (another file put in its place is the
    general reader's to refuse). With ``nanos`` (nanosecond timestamps read), also None for a
    file with INT96 columns, which the native decoder reads in nanoseconds without checking
    that they fit (the general reader does: see :func:`int96_unit`)."""
    df = task.data_file
    if df.record_count <= 0 or df.file_format.lower() != "parquet":
        return None
    local = io.local_path(df.file_path)
    if local is not None and df.file_size_in_bytes > 0:
        try:
            if os.stat(local).st_size != df.file_size_in_bytes:
                return None
        except OSError:
            return None
    if local is not None and nanos and _has_int96(local):
        return None
    return local


def _has_int96(local: str) -> bool:
    """Whether the local Parquet file ``local`` has an INT96 column (True when its footer
    cannot be read: the general reader reports why)."""
    try:
        kinds = pq.read_metadata(local).schema
    except (*DECODE_ERRORS, IcebergError):
        return True
    return any(kinds.column(i).physical_type == "INT96" for i in range(len(kinds)))


def _scan_parts(io: FileIO, task: FileScanTask) -> list[FileScanTask] | None:
    """The parts of ``task`` a scan streams or decodes: the task itself, or for a streamed
    file with a residual filter the splits of the runs of consecutive row groups whose
    statistics might match it (none when no row group can; the statistics are trusted only
    when they agree with the manifest's metrics, see :class:`RowGroupFilter`). None when the
    footer cannot be read or checked here (the general reader reports why)."""
    if not streamed_task(task) or isinstance(task.residual, AlwaysTrue):
        return [task]
    df = task.data_file
    try:
        checked = open_checked(io, df.file_path, size=df.file_size_in_bytes or None)
    except (IcebergError, *DECODE_ERRORS):
        return None
    try:
        prune = RowGroupFilter(checked.file.metadata, checked.schema, task.residual, df)
        groups = len(checked.row_groups)
        begins = [checked.chunk_start(g, 0) for g in range(groups)]
        end = None if task.length is None else task.start + task.length
        inside = [
            g
            for g, b in enumerate(begins)
            if whole_file(task) or (task.start <= b and (end is None or b < end))
        ]
        kept = [g for g in inside if prune.might_match(g)]
    except (IcebergError, *DECODE_ERRORS):
        return None
    finally:
        checked.source.close()
    if kept == inside:
        return [task]
    parts = []
    for run in _runs(kept):
        first, last = run[0], run[-1]
        length = begins[last + 1] - begins[first] if last + 1 < groups else None
        parts.append(replace_task(task, start=begins[first], length=length))
    return parts


def _runs(groups: list[int]) -> Iterator[list[int]]:
    """``groups`` (ascending) cut into runs of consecutive numbers."""
    run: list[int] = []
    for g in groups:
        if run and g != run[-1] + 1:
            yield run
            run = []
        run.append(g)
    if run:
        yield run


def row_file(io: FileIO, task: FileScanTask, nanos: bool = False) -> str | None:
    """:func:`_parquet_path` of a task with at most position deletes, else None."""
    if any(d.content is DeleteContent.EQUALITY_DELETES for d in task.delete_files):
        return None
    return _parquet_path(io, task, nanos)


def _plain_columns(schema: Schema, ids: set[int]) -> list[NestedField] | None:
    """The fields of ``ids`` sorted by id when each is a top-level column of ``schema`` of a
    plain type (see :func:`plain_field`), else None."""
    fields = top_level_fields(schema, sorted(ids))
    return fields if fields is not None and all(plain_field(f) for f in fields) else None


def _residual_fields(tasks: Sequence[FileScanTask], schema: Schema) -> list[NestedField] | None:
    """The columns the residual filters of ``tasks`` read (see :func:`_plain_columns`)."""
    ids: set[int] = set()
    for task in tasks:
        if not isinstance(task.residual, AlwaysTrue):
            ids.update(referenced_field_ids(task.residual))
    return _plain_columns(schema, ids)


def top_level_fields(schema: Schema, ids: Iterable[int]) -> list[NestedField] | None:
    """The top-level fields of ``schema`` with ``ids`` (in that order); None when one of them
    is not a top-level field."""
    by_id = {f.field_id: f for f in schema.fields}
    fields = [by_id.get(i) for i in ids]
    return None if any(f is None for f in fields) else [f for f in fields if f is not None]


def _equality_fields(tasks: Sequence[FileScanTask], schema: Schema) -> list[NestedField] | None:
    """The columns the equality deletes of ``tasks`` compare (see :func:`_plain_columns`)."""
    ids: set[int] = set()
    for task in tasks:
        for d in task.delete_files:
            if d.content is DeleteContent.EQUALITY_DELETES:
                ids.update(d.equality_ids)
    return _plain_columns(schema, ids)


def _chunks(
    tasks: Sequence[FileScanTask], first: int, streamed: Sequence[bool] = ()
) -> Iterator[tuple[int, int]]:
    """(start, end) of consecutive tasks to decode per call; a streamed task is a chunk of its
    own."""
    start = 0
    limit = first
    while start < len(tasks):
        end, used = start, 0
        while end < len(tasks) and end - start < limit:
            if streamed and streamed[end]:
                end += end == start
                break
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
    together: bool = False,
) -> Iterator[pa.RecordBatch] | None:
    """The batches of ``tasks`` in order, decoded natively on ``workers`` threads (delete
    files read through ``cache``); None when the scan does not fit the native path (then
    nothing was read). ``fallback`` reads the tasks from the first file the native path leaves
    to the general reader. With ``together`` (a caller keeping every row anyway), up to
    ``workers`` streamed files or splits decode at once (see :func:`_stream_window`)."""
    projection = _projection(options) if ENABLED else None
    if projection is None or not tasks:
        return None
    equality = _equality_fields(tasks, options.schema)
    filtered = _residual_fields(tasks, options.schema)
    if equality is None or filtered is None:
        return None
    nanos = has_nanos([*options.projected_schema().fields, *equality, *filtered])
    paths: list[str] = []
    parts: list[FileScanTask] = []
    for task in tasks:
        path = _parquet_path(io, task, nanos)
        if path is None:
            return None
        split = _scan_parts(io, task)
        if split is None:
            return None
        parts.extend(split)
        paths.extend([path] * len(split))
    tasks = parts
    field_ids, schema = projection
    width = len(field_ids)
    # the columns equality deletes compare and residual filters read, after the projected
    # ones, dropped once used
    extra = [f for f in _unique([*equality, *filtered]) if f.field_id not in field_ids]
    if extra:
        field_ids = field_ids + [f.field_id for f in extra]
        for f in schema_to_arrow(Schema(*extra)):
            schema = schema.append(f)
    decoded = decode_chunks(
        io,
        tasks,
        paths,
        field_ids,
        schema,
        workers,
        cache,
        options.name_mapping,
        streamed=[streamed_task(t) for t in tasks],
        options=options,
    )
    window = _stream_window(decoded, workers if together else 1)
    return _batches(tasks, window, fallback, width if extra else None)


def _unique(fields: Iterable[NestedField]) -> list[NestedField]:
    """``fields`` without repeated field ids, in order."""
    return list({f.field_id: f for f in fields}.values())


def _output(
    batches: Iterable[pa.RecordBatch], residual: BooleanExpression, width: int | None
) -> Iterator[pa.RecordBatch]:
    """``batches`` with the rows ``residual`` rules out dropped, only the first ``width``
    columns of each when given."""
    test = None if isinstance(residual, AlwaysTrue) else residual
    for batch in batches:
        if test is not None:
            batch = batch.filter(selection_mask(test, batch))
            if not batch.num_rows:
                continue
        yield batch if width is None else batch.select(range(width))


def _batches(
    tasks: Sequence[FileScanTask],
    decoded: Generator[tuple[int, Decoded], None, None],
    fallback: Fallback,
    width: int | None,
) -> Iterator[pa.RecordBatch]:
    """The batches of ``decoded``, filtered by each task's residual, only the first ``width``
    columns of each when given; from the first task the native path does not read (or a
    stream that fails), ``fallback``'s."""
    for a, done in decoded:
        k = 0
        while k < len(done):
            i, got = a + k, done[k]
            residual = tasks[i].residual
            if isinstance(got, list):
                # the batches of the next files with the same residual filter, joined and
                # filtered together: a filter's set-up costs more than a small file's rows,
                # and thousands of tiny batches slow down whatever takes them
                k += 1
                run = list(got)
                while (
                    k < len(done)
                    and isinstance(done[k], list)
                    and _same(tasks[a + k].residual, residual)
                ):
                    run.extend(cast(list[pa.RecordBatch], done[k]))
                    k += 1
                tiny = TINY_ROWS if isinstance(residual, AlwaysTrue) else MERGE_ROWS
                yield from _output(_merged(run, tiny), residual, width)
                continue
            k += 1
            # the rows given out, which the general reader gives first when a stream fails
            given = 0
            if got is not None:
                for batch in _output(got, residual, width):
                    given += batch.num_rows
                    yield batch
                if not got.failed:
                    continue
            decoded.close()
            yield from _skip_rows(fallback(tasks[i:]), given)
            return


#: Consecutive small batches sharing a residual filter are concatenated up to this many rows,
#: and the filter evaluated once over them.
MERGE_ROWS = 1 << 16
#: Without a filter, only batches below this many rows are joined: joining copies the rows,
#: which costs more than it saves for files of thousands of rows (480 files of 2,000 rows:
#: 61 against 71 ms), and less than thousands of ten-row chunks cost every later step.
TINY_ROWS = 1 << 10


def _same(a: BooleanExpression, b: BooleanExpression) -> bool:
    return a is b or a == b


def _merged(batches: list[pa.RecordBatch], small: int) -> Iterator[pa.RecordBatch]:
    """``batches`` with runs of those below ``small`` rows, of one schema, concatenated up to
    :data:`MERGE_ROWS` rows each; larger batches as they are."""
    run: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if batch.num_rows >= small:
            yield from _concat(run)
            run, rows = [], 0
            yield batch
            continue
        if run and (rows + batch.num_rows > MERGE_ROWS or not batch.schema.equals(run[0].schema)):
            yield from _concat(run)
            run, rows = [], 0
        run.append(batch)
        rows += batch.num_rows
    yield from _concat(run)


def _concat(run: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    if len(run) <= 1:
        yield from run
        return
    try:
        if _CONCAT_BATCHES is not None:
            merged = [_CONCAT_BATCHES(run)]
        else:  # pyarrow < 19
            merged = pa.Table.from_batches(run).combine_chunks().to_batches()
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # (field metadata that differs)
        merged = []
    if len(merged) == 1:
        yield merged[0]
    else:
        yield from run


#: ``pyarrow.concat_batches`` (pyarrow 19 and later).
_CONCAT_BATCHES: Callable[[list[pa.RecordBatch]], pa.RecordBatch] | None = getattr(
    pa, "concat_batches", None
)


def _skip_rows(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """``batches`` without their first ``rows`` rows."""
    for batch in batches:
        if rows >= batch.num_rows:
            rows -= batch.num_rows
            continue
        yield batch.slice(rows) if rows else batch
        rows = 0


def decode_chunks(
    io: FileIO,
    tasks: Sequence[FileScanTask],
    paths: Sequence[str],
    field_ids: list[int],
    schema: pa.Schema,
    workers: int,
    cache: DeleteCache,
    name_mapping: NameMapping | None,
    optional: list[bool] | None = None,
    positions: bool = False,
    streamed: Sequence[bool] = (),
    selection: _native.RowSelection | None = None,
    options: ReadOptions | None = None,
) -> Generator[tuple[int, Decoded], None, None]:
    """(index of the first task, what :func:`icefloe._native.parquet_read_files` gave for each
    task) a chunk of tasks at a time, the next chunk decoded while the caller takes one; the
    deletes of a chunk's files are loaded through ``cache`` first, and the rows they name
    (positions, equality deletes on the columns of ``field_ids``) dropped in the decode. A
    task flagged in ``streamed`` is a chunk of its own, given as the stream
    :func:`icefloe._native.parquet_open_stream` opened (or None). With a ``selection``, the
    batches hold only the positions of the live rows it selects. ``options`` (the scan's) gives
    the types equality delete keys are compared as (see :meth:`TaskDeletes.load`)."""
    rows = [t.data_file.record_count for t in tasks]

    def load(task: FileScanTask) -> TaskDeletes | None:
        if not task.delete_files:
            return None
        path = task.data_file.file_path
        return TaskDeletes.load(io, path, task.delete_files, cache, name_mapping, options)

    def decode(span: tuple[int, int]) -> Decoded:
        a, b = span
        chunk = tasks[a:b]
        loaded: list[TaskDeletes | None] = [None] * len(chunk)
        if any(t.delete_files for t in chunk):
            preload_position_deletes(io, chunk, cache, workers)
            # Local delete files load fastest on this thread: what is left after the preload
            # is short Python work, and threads waiting on each other for the GIL took 5x
            # longer (480 files of equality deletes: 261 against 46 ms). Remote ones wait on
            # requests, which threads overlap.
            remote = any(io.local_path(d.file_path) is None for t in chunk for d in t.delete_files)
            loaded = parallel_map(load, chunk) if remote else [load(t) for t in chunk]
        bitmaps = [None if d is None or d.positions is None else d.positions.bitmap for d in loaded]
        sets = [None if d is None or d.equality is None else d.equality.native for d in loaded]
        if streamed and streamed[a]:
            task = chunk[0]
            return [
                _native.parquet_open_stream(
                    paths[a],
                    rows[a],
                    bitmaps[0],
                    field_ids,
                    schema,
                    BATCH_SIZE,
                    workers,
                    optional=optional,
                    positions=positions,
                    equality=sets[0],
                    start=task.start,
                    length=task.length,
                    selection=selection,
                )
            ]
        out: Decoded = _native.parquet_read_files(  # type: ignore[assignment]
            list(paths[a:b]),
            rows[a:b],
            bitmaps,
            field_ids,
            schema,
            BATCH_SIZE,
            workers,
            optional=optional,
            positions=positions,
            equality=sets if any(s is not None for s in sets) else None,
            selection=selection,
        )
        return out

    spans = list(_chunks(tasks, 2 * workers, streamed))
    if not spans:
        return
    with ThreadPoolExecutor(1, thread_name_prefix="icefloe-native-read") as pool:
        ahead: Future[Decoded] = pool.submit(decode, spans[0])
        try:
            for k, (a, _) in enumerate(spans):
                done = ahead.result()
                if k + 1 < len(spans):
                    ahead = pool.submit(decode, spans[k + 1])
                yield a, done
        finally:
            ahead.cancel()


def _drained(
    got: list[pa.RecordBatch] | _native.ParquetFileStream | None,
    each: Callable[[pa.RecordBatch], pa.RecordBatch] | None = None,
) -> list[pa.RecordBatch] | None:
    """The batches of a task as :func:`decode_chunks` gave them, passed through ``each``: a
    stream read to its end (None when it failed part way), ``each`` running on a batch while
    the stream's readers decode the next ones."""
    if got is None:
        return None
    if isinstance(got, list):
        return got if each is None else [each(b) for b in got]
    batches = [b if each is None else each(b) for b in got]
    return None if got.failed else batches


def _single_stream(done: Decoded) -> _native.ParquetFileStream | None:
    """The stream of a chunk that is one streamed task (see :func:`decode_chunks`), else
    None."""
    if len(done) == 1 and isinstance(done[0], _native.ParquetFileStream):
        return done[0]
    return None


class _Window:
    """The streamed tasks read alongside the one being taken (see :func:`_stream_window`): at
    most ``lanes`` streams still decoding, the tasks after them opened as soon as one ends."""

    def __init__(self, decoded: Generator[tuple[int, Decoded], None, None], lanes: int) -> None:
        self.decoded = decoded
        self.lanes = lanes
        self.decoding: list[_Ahead] = []
        self.queued: deque[tuple[int, Decoded]] = deque()
        self._streaming = False  # whether the last task queued is a stream
        self._exhausted = False

    def refill(self) -> None:
        """Queues tasks until one is queued and, while the last queued is a stream, until
        ``lanes`` streams decode (never past a chunk of small files)."""
        while not self._exhausted and (
            not self.queued or (self._streaming and len(self.decoding) < self.lanes)
        ):
            item = next(self.decoded, None)
            if item is None:
                self._exhausted = True
                return
            a, done = item
            stream = _single_stream(done)
            self._streaming = stream is not None
            if stream is not None:
                done = [_Ahead(stream, self)]  # type: ignore[list-item]
            self.queued.append((a, done))


class _Ahead:
    """A stream of a :class:`_Window`: iterated like the stream, and each batch it gives takes
    one from every other decoding stream of the window into that stream's buffer, so that
    they all keep decoding (a stream decodes only a few batches ahead of its reader)."""

    def __init__(self, stream: _native.ParquetFileStream, window: _Window) -> None:
        self._stream = stream
        self._it = iter(stream)
        self._window = window
        self._ready: deque[pa.RecordBatch] = deque()
        self._ended = False
        window.decoding.append(self)

    @property
    def failed(self) -> bool:
        return bool(self._stream.failed)

    def _next(self) -> pa.RecordBatch | None:
        batch = None if self._ended else next(self._it, None)
        if batch is None and not self._ended:
            self._ended = True
            self._window.decoding.remove(self)
            self._window.refill()  # a lane is free: the next stream starts
        return batch

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        while True:
            if self._ready:
                yield self._ready.popleft()
                continue
            batch = self._next()
            if batch is None:
                return
            for other in list(self._window.decoding):
                if other is not self and (got := other._next()) is not None:
                    other._ready.append(got)
            yield batch


def _stream_window(
    decoded: Generator[tuple[int, Decoded], None, None], lanes: int
) -> Generator[tuple[int, Decoded], None, None]:
    """``decoded`` with up to ``lanes`` of the next streamed tasks opened and read alongside
    the one being taken, their batches held until it is their turn (see :class:`_Window`).
    With one lane, ``decoded`` as it is."""
    if lanes <= 1:
        yield from decoded
        return
    window = _Window(decoded, lanes)
    try:
        while True:
            window.refill()
            if not window.queued:
                return
            yield window.queued.popleft()
    finally:
        decoded.close()  # the chunk decoded ahead is dropped


def drained_alongside(
    decoded: Generator[tuple[int, Decoded], None, None],
    each: Callable[[pa.RecordBatch], pa.RecordBatch] | None,
    workers: int,
) -> Iterator[tuple[int, list[list[pa.RecordBatch] | None]]]:
    """:func:`_drained` of every task of ``decoded``, in order; streamed tasks are drained on
    up to ``workers`` threads at once, each stream decoding and passing its batches through
    ``each`` on its own (a caller's work per batch, such as matching keys, would otherwise
    leave the decoders waiting on one thread)."""
    if workers <= 1:
        for a, done in decoded:
            yield a, [_drained(got, each) for got in done]
        return
    Drain = Future[list[pa.RecordBatch] | None]

    def result(got: Drain | Decoded) -> list[list[pa.RecordBatch] | None]:
        if isinstance(got, Future):
            return [got.result()]
        return [_drained(g, each) for g in got]

    pending: deque[tuple[int, Drain | Decoded]] = deque()
    pool = ThreadPoolExecutor(workers, thread_name_prefix="icefloe-drain")
    try:
        for a, done in decoded:
            if (stream := _single_stream(done)) is not None:
                pending.append((a, pool.submit(_drained, stream, each)))
            else:
                pending.append((a, done))
            # a chunk of small files waits for the streams before it (its decode, started
            # ahead, goes on meanwhile)
            while pending and (len(pending) > workers or not isinstance(pending[-1][1], Future)):
                b, got = pending.popleft()
                yield b, result(got)
        while pending:
            b, got = pending.popleft()
            yield b, result(got)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        decoded.close()
