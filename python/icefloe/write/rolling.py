"""Rows written as they arrive, into Parquet files that stay open across pieces.

:func:`~icefloe.write.writer.write_parquet_files` writes the rows it is given and closes every
file it opened, so rows that come in pieces make files that follow the pieces. A
:class:`RollingWriter` instead keeps one file open per partition: each piece's rows are routed
to their partition, buffered up to a row group (``write.parquet.row-group-size-bytes`` of Arrow
data) and written as a row group of the open file, which closes when it holds
``rows_per_file`` rows or reaches ``max_file_bytes`` on disk. Memory holds at most a row group
per open partition, however many rows pass through.

Files are written by pyarrow's Parquet writer with the options, names and footers of the other
writes. Metrics come from the footer; NaN counts and UUID bounds are counted as row groups are
written, and what the footer still lacks (geometry bounds) is read back from the closed file,
a column at a time.

Compaction writes its groups of files through it (see :mod:`icefloe.table.maintenance`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import threading
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe._concurrency import parallel_map, work_threads
from icefloe.arrow_schema import FIELD_IDS_DIGEST_KEY, field_ids_digest
from icefloe.io import FileIO
from icefloe.metadata import TableMetadata
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema
from icefloe.write.columns import stored_columns, with_lineage_columns
from icefloe.write.encoding import dictionary_columns
from icefloe.write.files import DataFile
from icefloe.write.grouping import partition_arrays, partition_group_codes, partition_values
from icefloe.write.input import STREAM_CHUNK_BYTES
from icefloe.write.metrics import (
    LeafValues,
    UuidBounds,
    compute_metrics,
    float_leaves,
    leaf_values,
    nan_count,
)
from icefloe.write.properties import target_file_size
from icefloe.write.regroup import regroup
from icefloe.write.variant_footer import TailHoldingSink
from icefloe.write.writer import FileWriter, WriteOptions, write_apart

__all__ = ["RollingWriter", "split_by_partition", "write_pieces", "write_stream"]


def split_by_partition(
    table: pa.Table, schema: Schema, spec: PartitionSpec, threads: int
) -> list[tuple[dict[str, Any], pa.Table]]:
    """``table``'s rows (in ``schema``'s Arrow form) by partition of ``spec``: each
    partition's values and rows, rows in their order."""
    if not spec.fields:
        return [({}, table)]
    parts = partition_arrays(table, schema, spec)
    group = partition_group_codes(parts)
    assert group is not None
    if pc.all(pc.equal(group, group[0])).as_py():
        rows = [table]
        parts = [p.slice(0, 1) for p in parts]
        bounds = [(0, table.num_rows)]
    else:
        grouped, bounds, firsts = regroup(table, group, threads)
        parts = [p.take(firsts) for p in parts]
        rows = [grouped.slice(start, end - start) for start, end in bounds]
    values = [partition_values(pf, p) for pf, p in zip(spec.fields, parts, strict=True)]
    return [
        ({pf.name: values[i][g] for i, pf in enumerate(spec.fields)}, rows[g])
        for g in range(len(bounds))
    ]


class _OpenFile:
    """One partition's file being written: its stream, Parquet writer and NaN counts."""

    def __init__(
        self, writer: FileWriter, partition: dict[str, Any], schema: pa.Schema, rows: int
    ) -> None:
        self.path = writer.path(partition)
        self._stack = contextlib.ExitStack()
        # an I/O failure is a FileIOError, and leaves no incomplete upload behind
        sink = self._stack.enter_context(writer.io.new_output(self.path).writing())
        writer.created.append(self.path)
        self.held = TailHoldingSink(sink) if writer.variant_ids else None
        self.sink = sink
        self.out = self.held or sink
        try:
            # Bloom filters (one per row group) are sized for ``rows``, a row group's rows
            self.parquet = pq.ParquetWriter(self.out, schema, **writer.parquet_options(rows))
        except BaseException:
            self.abandon()
            raise
        self.rows = 0
        self.floats = float_leaves(writer.metrics)
        self.nans = {fid: 0 for fid, _ in self.floats}
        self.uuids = UuidBounds(writer.metrics)

    def write(self, rows: pa.Table, limit: int) -> None:
        self.parquet.write_table(rows, row_group_size=max(1, min(limit, rows.num_rows)))
        self.rows += rows.num_rows
        self.uuids.add(rows)
        if self.floats:
            get = leaf_values(rows)
            for fid, path in self.floats:
                self.nans[fid] += nan_count(get(path))

    def size(self) -> int:
        return int(self.out.tell())

    def close(self, digest: str, variant_ids: Any) -> tuple[pq.FileMetaData, int]:
        """Finishes the file: its footer and size."""
        self.parquet.add_key_value_metadata({FIELD_IDS_DIGEST_KEY: digest})
        self.parquet.close()
        md = self.parquet.writer.metadata
        size = self.held.finish(variant_ids) if self.held else int(self.sink.tell())
        self._stack.close()
        return md, size

    def abandon(self) -> None:
        """Gives the file up (after a failure): its upload aborted, what was written deleted."""
        parquet = getattr(self, "parquet", None)
        if parquet is not None:
            parquet.is_open = False  # no footer: pyarrow would write one when collected
        with contextlib.suppress(Exception):
            self._stack.__exit__(RuntimeError, RuntimeError("abandoned"), None)


class _Partition:
    """The rows of one partition on their way to files: a buffer of at most a row group and
    the file open now."""

    def __init__(self, partition: dict[str, Any], index: int) -> None:
        self.partition = partition
        self.index = index
        self.made = 0  # files closed
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.pending_bytes = 0
        self.file: _OpenFile | None = None
        self.used = 0  # when a row group last went to its file (a count of flushes)
        self.fresh = 0  # buffered tables that are slices of the piece being written


class RollingWriter:
    """Writes rows of ``schema``'s Arrow form (with ``_row_id`` and
    ``_last_updated_sequence_number`` when they are kept) in pieces into Parquet files of
    ``spec``, one file open per partition.

    A file closes once it holds ``rows_per_file`` rows (None: no limit) or reaches
    ``max_file_bytes`` on disk. A partition's rows are buffered until they make a row group;
    with ``buffer_bytes``, once the rows buffered over all partitions pass it, the largest
    buffers are written until half of it is left. At most ``max_open`` files are open at once:
    past it, the file a row group went to longest ago closes. Use as a context manager, or call
    :meth:`finish` (the files written) or :meth:`abort` (every file deleted)."""

    def __init__(
        self,
        metadata: TableMetadata,
        io: FileIO,
        spec: PartitionSpec,
        *,
        max_file_bytes: int,
        rows_per_file: int | None = None,
        buffer_bytes: int | None = None,
        max_open: int | None = None,
        options: WriteOptions | None = None,
    ) -> None:
        opts = options or WriteOptions()
        self._metadata = metadata
        self._io = io
        self._schema = metadata.current_schema()
        self._spec = spec
        self._max_bytes = max_file_bytes
        self._rows_per_file = rows_per_file
        self._buffer_bytes = buffer_bytes
        self._max_open = max_open
        self._options = dataclasses.replace(opts, target_file_size=max_file_bytes, sort=False)
        self._threads = opts.max_workers or work_threads()
        self._writer: FileWriter | None = None
        self._arrow: pa.Schema | None = None
        self._partitions: dict[str, _Partition] = {}
        self._pending_bytes = 0
        self._flushes = itertools.count(1)
        self._seen = itertools.count()  # partitions in the order their rows first came
        self._lock = threading.Lock()
        self._made: list[tuple[int, int, DataFile]] = []  # partition index, file index, file
        self.files: list[DataFile] = []

    def __enter__(self) -> RollingWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if kind is not None:
            self.abort()

    def write(self, rows: pa.Table) -> None:
        """Routes ``rows`` to their partitions' files."""
        if rows.num_rows == 0:
            return
        due: list[_Partition] = []
        for partition, part in split_by_partition(rows, self._schema, self._spec, self._threads):
            table, file_schema = stored_columns(*with_lineage_columns(part, self._schema))
            writer = self._file_writer(table, file_schema)
            p = self._partitions.get(repr(partition))
            if p is None:
                p = self._partitions[repr(partition)] = _Partition(partition, next(self._seen))
            self._buffer(p, table)
            if self._file_full(p) or p.pending_bytes >= self._row_group_bytes(writer):
                due.append(p)
        if self._buffer_bytes is not None and self._pending_bytes > self._buffer_bytes:
            left = self._pending_bytes - sum(p.pending_bytes for p in due)
            chosen = {id(p) for p in due}
            for p in sorted(self._partitions.values(), key=lambda p: -p.pending_bytes):
                if left <= self._buffer_bytes // 2 or not p.pending:
                    break
                if id(p) not in chosen:
                    due.append(p)
                    left -= p.pending_bytes
        self._flush_all(due)
        # Rows left buffered are slices of this piece: copied, so that the piece is freed
        for p in self._partitions.values():
            if p.fresh:
                p.pending[-p.fresh :] = [_copied(t) for t in p.pending[-p.fresh :]]
                p.fresh = 0

    def finish(self) -> list[DataFile]:
        """Writes what is buffered, closes every file and gives all files written: by
        partition in the order their rows first came, each partition's in the order they were
        written (so row ids assigned in file order do not depend on thread timing)."""
        parts = list(self._partitions.values())
        # the open files first: the others open theirs only as those close
        self._flush_all([p for p in parts if p.file is not None], last=True)
        self._flush_all([p for p in parts if p.file is None], last=True)
        self._partitions.clear()
        self.files = [f for _, _, f in sorted(self._made, key=lambda m: m[:2])]
        return self.files

    def abort(self) -> None:
        """Deletes every file written or being written."""
        for p in self._partitions.values():
            if p.file is not None:
                p.file.abandon()
                p.file = None
        self._partitions.clear()
        self._made.clear()
        if self._writer is not None:
            for path in self._writer.created:
                self._io.delete_quietly(path)
            self._writer.created.clear()
        self.files = []

    def _file_writer(self, table: pa.Table, file_schema: Schema) -> FileWriter:
        if self._writer is None:
            self._arrow = table.schema
            self._writer = FileWriter(
                self._metadata,
                self._io,
                file_schema,
                self._spec,
                self._options,
                None,
                dictionary_columns(table),  # sampled once, from the first rows
                field_ids_digest(table.schema),
            )
        return self._writer

    def _file_full(self, p: _Partition) -> bool:
        """Whether the rows buffered fill the rest of the open (or next) file."""
        if self._rows_per_file is None:
            return False
        written = p.file.rows if p.file is not None else 0
        return p.pending_rows >= self._rows_per_file - written

    def _flush_all(self, due: list[_Partition], *, last: bool = False) -> None:
        """Writes the buffered rows of ``due``, a partition per thread (and, when ``last``,
        closes their files), at most ``max_open`` partitions at a time, each time first closing
        the files a row group went to longest ago to stay within ``max_open`` open files."""
        due = [p for p in due if p.pending or (last and p.file is not None)]
        writer = self._writer
        if not due or writer is None:
            return
        step = self._max_open or len(due)
        for start in range(0, len(due), step):
            batch = due[start : start + step]
            if self._max_open is not None and not last:
                self._make_room(batch)

            def run(p: _Partition, writer: FileWriter = writer) -> None:
                self._flush(p, writer, last=last)
                if last and p.file is not None:
                    self._close(p, writer)

            parallel_map(run, batch, threads=self._threads, kind="work")

    def _make_room(self, batch: list[_Partition]) -> None:
        """Closes the least recently used open files of partitions not in ``batch`` so that
        ``batch`` can open theirs within ``max_open``."""
        assert self._max_open is not None
        opening = sum(1 for p in batch if p.file is None)
        open_now = [p for p in self._partitions.values() if p.file is not None]
        excess = len(open_now) + opening - self._max_open
        if excess > 0:
            flushing = {id(p) for p in batch}
            idle = sorted((p for p in open_now if id(p) not in flushing), key=lambda p: p.used)
            self._close_all(idle[:excess])

    def _close_all(self, parts: list[_Partition]) -> None:
        writer = self._writer
        if parts and writer is not None:
            parallel_map(
                lambda p: self._close(p, writer), parts, threads=self._threads, kind="work"
            )

    def _flush(self, p: _Partition, writer: FileWriter, *, last: bool = False) -> None:
        """Writes ``p``'s buffered rows as row groups, closing files as they fill; rows left
        after a file closed that make less than a row group stay buffered (unless ``last``)."""
        if not p.pending:
            return
        rows = pa.concat_tables(p.pending)
        with self._lock:
            self._pending_bytes -= p.pending_bytes
        p.pending, p.pending_rows, p.pending_bytes, p.fresh = [], 0, 0, 0
        p.used = next(self._flushes)
        limit = writer.parquet.row_group_limit
        # rows of a row group: a row group's bytes, at the rows' average width
        per_row = max(1.0, int(rows.nbytes) / max(1, rows.num_rows))
        group = max(1, min(limit, int(self._row_group_bytes(writer) / per_row)))
        pos = 0
        while pos < rows.num_rows:
            if p.file is None:
                assert self._arrow is not None
                p.file = _OpenFile(writer, p.partition, self._arrow, group)
            take = min(rows.num_rows - pos, group)
            if self._rows_per_file is not None:
                take = min(take, self._rows_per_file - p.file.rows)
            p.file.write(rows.slice(pos, take), limit)
            pos += take
            full = self._rows_per_file is not None and p.file.rows >= self._rows_per_file
            if full or p.file.size() >= self._max_bytes:
                self._close(p, writer)
                rest = rows.slice(pos)
                if not last and not self._file_full_after(rest, writer):
                    self._buffer(p, rest)
                    return

    def _row_group_bytes(self, writer: FileWriter) -> int:
        """The Arrow bytes buffered that make a row group: ``write.parquet.row-group-size-bytes``,
        or less for a smaller target (Arrow data is rarely smaller on disk, so a file then
        rolls at about the target rather than at the row group)."""
        return min(writer.parquet.row_group_size_bytes, self._max_bytes)

    def _file_full_after(self, rest: pa.Table, writer: FileWriter) -> bool:
        """Whether ``rest`` (rows for a new file) make a row group or a file of their own."""
        if self._rows_per_file is not None and rest.num_rows >= self._rows_per_file:
            return True
        return int(rest.nbytes) >= self._row_group_bytes(writer)

    def _buffer(self, p: _Partition, rows: pa.Table) -> None:
        if rows.num_rows:
            size = int(rows.nbytes)
            p.pending.append(rows)
            p.fresh += 1
            p.pending_rows += rows.num_rows
            p.pending_bytes += size
            with self._lock:
                self._pending_bytes += size

    def _close(self, p: _Partition, writer: FileWriter) -> None:
        f = p.file
        assert f is not None
        md, size = f.close(writer.digest, writer.variant_ids)  # failing, left to abort()
        p.file = None
        self._io.sync_soon(f.path)  # the disk writes it while the next rows are encoded
        m = compute_metrics(
            _read_back(self._io, f.path, writer.schema),
            md,
            writer.metrics,
            nan_counts=f.nans,
            known_bounds=f.uuids.bounds,
            own_file=True,
        )
        p.made += 1
        made = writer.parquet_file(f.path, size, md, p.partition, m)
        with self._lock:
            self._made.append((p.index, p.made, made))


def _copied(table: pa.Table) -> pa.Table:
    """``table`` in buffers of its own (a slice keeps the whole of the buffers it is cut from
    alive)."""
    columns = [pa.concat_arrays(c.chunks) if c.num_chunks else c for c in table.columns]
    return pa.Table.from_arrays(columns, schema=table.schema)


def _read_back(io: FileIO, path: str, schema: Schema) -> LeafValues:
    """The leaf columns of the Parquet file at ``path`` (written in ``schema``) by path, read
    from the file a top-level column at a time when asked for (only the last one kept: the
    metrics ask for leaves in column order)."""
    read: dict[int, pa.Table] = {}

    def values(path_in: tuple[int, ...]) -> pa.ChunkedArray:
        top = path_in[0]
        if top not in read:
            read.clear()
            name = schema.fields[top].name
            with io.new_input(path).open() as f:
                read[top] = pq.ParquetFile(f).read(columns=[name])
        return leaf_values(read[top])((0, *path_in[1:]))

    return values


def write_pieces(writer: RollingWriter, pieces: Iterable[pa.Table]) -> list[DataFile]:
    """Writes ``pieces`` through ``writer`` and finishes it (every file deleted on error)."""
    with writer:
        for piece in pieces:
            writer.write(piece)
        return writer.finish()


#: Arrow data a partitioned stream buffers over all its partitions before it writes the
#: largest buffers: half a piece of the stream (``STREAM_CHUNK_BYTES``).
STREAM_BUFFER_BYTES = STREAM_CHUNK_BYTES // 2
#: The most files a partitioned stream keeps open at once.
STREAM_OPEN_FILES = 64


def write_stream(
    metadata: TableMetadata,
    io: FileIO,
    pieces: Iterator[pa.Table],
    spec: PartitionSpec,
    options: WriteOptions | None = None,
) -> list[DataFile]:
    """A partitioned stream's pieces (in the current schema's Arrow form, read as they are
    needed) written into files of about ``write.target-file-size-bytes`` kept open across
    pieces, when it has more than one piece and its first piece holds at most
    :data:`STREAM_OPEN_FILES` partitions. Otherwise each piece's files are written apart (see
    :func:`~icefloe.write.writer.write_apart`): a stream of more partitions than files it may
    keep open could not keep its files open anyway."""
    opts = options or WriteOptions()
    first = next(pieces)
    second = next(pieces, None)
    ahead = [first] if second is None else [first, second]
    rolls = second is not None and (
        _partition_count(first, metadata.current_schema(), spec) <= STREAM_OPEN_FILES
    )
    stream = itertools.chain(ahead, pieces)
    del first, second, ahead  # the pieces are freed once written
    if not rolls:
        return write_apart(metadata, io, stream, spec, options)
    writer = RollingWriter(
        metadata,
        io,
        spec,
        max_file_bytes=opts.target_file_size or target_file_size(metadata.properties),
        buffer_bytes=STREAM_BUFFER_BYTES,
        max_open=STREAM_OPEN_FILES,
        options=opts,
    )
    return write_pieces(writer, stream)


def _partition_count(table: pa.Table, schema: Schema, spec: PartitionSpec) -> int:
    group = partition_group_codes(partition_arrays(table, schema, spec))
    return 1 if group is None else int(pc.count_distinct(group).as_py())
