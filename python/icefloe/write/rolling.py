"""Rows written as they arrive, into Parquet files that stay open across pieces.

:func:`~icefloe.write.writer.write_parquet_files` writes the rows it is given and closes every
file it opened, so rows that come in pieces make files that follow the pieces. A
:class:`RollingWriter` instead keeps one file open per partition: each piece's rows are routed
to their partition, buffered up to a row group (``write.parquet.row-group-size-bytes`` of Arrow
data) and written as a row group of the open file, which closes when it holds
``rows_per_file`` rows or reaches ``max_file_bytes`` on disk. Memory holds at most a row group
per open partition, however many rows pass through.

Files are written by pyarrow's Parquet writer with the options, names and footers of the other
writes. Metrics come from the footer; the NaN counts are counted as row groups are written, and
what the footer lacks (UUID and geometry bounds, a row group without statistics) is read back
from the closed file, column by column.

Compaction writes its groups of files through it (see :mod:`icefloe.table.maintenance`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from types import TracebackType
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe._concurrency import work_threads
from icefloe.arrow_schema import FIELD_IDS_DIGEST_KEY, field_ids_digest
from icefloe.io import FileIO
from icefloe.metadata import TableMetadata
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema
from icefloe.write.encoding import dictionary_columns
from icefloe.write.files import DataFile
from icefloe.write.grouping import partition_arrays, partition_group_codes, partition_values
from icefloe.write.metrics import (
    LeafValues,
    compute_metrics,
    float_leaves,
    leaf_values,
    nan_count,
)
from icefloe.write.regroup import regroup
from icefloe.write.variant_footer import TailHoldingSink
from icefloe.write.writer import FileWriter, WriteOptions, stored_columns, with_lineage_columns

__all__ = ["RollingWriter", "split_by_partition", "write_pieces"]


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

    def __init__(self, writer: FileWriter, partition: dict[str, Any], schema: pa.Schema) -> None:
        self.path = writer.path(partition)
        self._stack = contextlib.ExitStack()
        # an I/O failure is a FileIOError, and leaves no incomplete upload behind
        sink = self._stack.enter_context(writer.io.new_output(self.path).writing())
        writer.created.append(self.path)
        self.held = TailHoldingSink(sink) if writer.variant_ids else None
        self.sink = sink
        self.out = self.held or sink
        self.parquet = pq.ParquetWriter(self.out, schema, **writer.parquet_options())
        self.rows = 0
        self.nans = {fid: 0 for fid, _ in float_leaves(writer.metrics)}
        self.floats = float_leaves(writer.metrics)

    def write(self, rows: pa.Table, limit: int) -> None:
        self.parquet.write_table(rows, row_group_size=max(1, min(limit, rows.num_rows)))
        self.rows += rows.num_rows
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
        with contextlib.suppress(Exception):
            self._stack.__exit__(RuntimeError, RuntimeError("abandoned"), None)


class _Partition:
    """The rows of one partition on their way to files: a buffer of at most a row group and
    the file open now."""

    def __init__(self, partition: dict[str, Any]) -> None:
        self.partition = partition
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.pending_bytes = 0
        self.file: _OpenFile | None = None


class RollingWriter:
    """Writes rows of ``schema``'s Arrow form (with ``_row_id`` and
    ``_last_updated_sequence_number`` when they are kept) in pieces into Parquet files of
    ``spec``, one file open per partition.

    A file closes once it holds ``rows_per_file`` rows (None: no limit) or reaches
    ``max_file_bytes`` on disk. Use as a context manager, or call :meth:`finish` (the files
    written) or :meth:`abort` (every file deleted)."""

    def __init__(
        self,
        metadata: TableMetadata,
        io: FileIO,
        spec: PartitionSpec,
        *,
        max_file_bytes: int,
        rows_per_file: int | None = None,
    ) -> None:
        self._metadata = metadata
        self._io = io
        self._schema = metadata.current_schema()
        self._spec = spec
        self._max_bytes = max_file_bytes
        self._rows_per_file = rows_per_file
        self._threads = work_threads()
        self._writer: FileWriter | None = None
        self._arrow: pa.Schema | None = None
        self._partitions: dict[str, _Partition] = {}
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
        for partition, part in split_by_partition(rows, self._schema, self._spec, self._threads):
            table, file_schema = stored_columns(*with_lineage_columns(part, self._schema))
            writer = self._file_writer(table, file_schema)
            p = self._partitions.get(repr(partition))
            if p is None:
                p = self._partitions[repr(partition)] = _Partition(partition)
            self._buffer(p, table)
            if self._file_full(p, writer) or p.pending_bytes >= writer.parquet.row_group_size_bytes:
                self._flush(p, writer)

    def finish(self) -> list[DataFile]:
        """Writes what is buffered, closes every file and gives all files written."""
        for p in self._partitions.values():
            if self._writer is not None:
                self._flush(p, self._writer, last=True)
                if p.file is not None:
                    self._close(p, self._writer)
        self._partitions.clear()
        return self.files

    def abort(self) -> None:
        """Deletes every file written or being written."""
        for p in self._partitions.values():
            if p.file is not None:
                p.file.abandon()
                p.file = None
        self._partitions.clear()
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
                WriteOptions(target_file_size=self._max_bytes, sort=False),
                None,
                dictionary_columns(table),  # sampled once, from the first rows
                field_ids_digest(table.schema),
            )
        elif not table.schema.equals(self._arrow):
            raise AssertionError("rows of another Arrow schema than the first")  # pragma: no cover
        return self._writer

    def _file_full(self, p: _Partition, writer: FileWriter) -> bool:
        """Whether the rows buffered fill the rest of the open (or next) file."""
        if self._rows_per_file is None:
            return False
        written = p.file.rows if p.file is not None else 0
        return p.pending_rows >= self._rows_per_file - written

    def _flush(self, p: _Partition, writer: FileWriter, *, last: bool = False) -> None:
        """Writes ``p``'s buffered rows as row groups, closing files as they fill; rows left
        after a file closed that make less than a row group stay buffered (unless ``last``)."""
        if not p.pending:
            return
        rows = pa.concat_tables(p.pending)
        p.pending, p.pending_rows, p.pending_bytes = [], 0, 0
        limit = writer.parquet.row_group_limit
        pos = 0
        while pos < rows.num_rows:
            if p.file is None:
                assert self._arrow is not None
                p.file = _OpenFile(writer, p.partition, self._arrow)
            take = rows.num_rows - pos
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

    def _file_full_after(self, rest: pa.Table, writer: FileWriter) -> bool:
        """Whether ``rest`` (rows for a new file) make a row group or a file of their own."""
        if self._rows_per_file is not None and rest.num_rows >= self._rows_per_file:
            return True
        return int(rest.nbytes) >= writer.parquet.row_group_size_bytes

    @staticmethod
    def _buffer(p: _Partition, rows: pa.Table) -> None:
        if rows.num_rows:
            p.pending.append(rows)
            p.pending_rows += rows.num_rows
            p.pending_bytes += int(rows.nbytes)

    def _close(self, p: _Partition, writer: FileWriter) -> None:
        f = p.file
        assert f is not None
        p.file = None
        md, size = f.close(writer.digest, writer.variant_ids)
        self._io.sync_soon(f.path)  # the disk writes it while the next rows are encoded
        m = compute_metrics(
            _read_back(self._io, f.path, writer.schema),
            md,
            writer.metrics,
            nan_counts=f.nans,
        )
        self.files.append(writer.parquet_file(f.path, size, md, p.partition, m))


def _read_back(io: FileIO, path: str, schema: Schema) -> LeafValues:
    """The leaf columns of the Parquet file at ``path`` (written in ``schema``) by path, read
    from the file a top-level column at a time when asked for."""
    read: dict[int, pa.Table] = {}

    def values(path_in: tuple[int, ...]) -> pa.ChunkedArray:
        top = path_in[0]
        if top not in read:
            name = schema.fields[top].name
            with io.new_input(path).open() as f:
                read[top] = pq.ParquetFile(f).read(columns=[name])
        return leaf_values(read[top])((0, *path_in[1:]))

    return values


def write_pieces(
    writer: RollingWriter, pieces: Iterable[pa.Table | pa.RecordBatch]
) -> list[DataFile]:
    """Writes ``pieces`` through ``writer`` and finishes it (every file deleted on error)."""
    with writer:
        for piece in pieces:
            writer.write(piece if isinstance(piece, pa.Table) else pa.Table.from_batches([piece]))
        return writer.finish()
