"""Writing Arrow data as Parquet data files of a table.

:func:`write_data_files` validates and casts the input (:mod:`icefloe.write.input`), computes the
partition values with the Rust transforms, orders the rows by partition (and by the table's sort
order when it has one) with one Arrow sort (keys from :mod:`icefloe.write.grouping`), and writes
each partition's rows into Parquet files of about ``write.target-file-size-bytes``, rolling over
to a new file when the bytes written so far reach the target (below the row-group size, row
groups are cut from the bytes a row took on disk so that files close near the target; see
:class:`_SizeModel`; ORC and Avro files are cut from the bytes a row took on disk in the last
file, see :meth:`FileWriter._row_file_rows`), or, as compaction asks, into a given number of
files per partition of about equal rows each (``WriteOptions.file_count``). New files go where
:mod:`icefloe.write.locations` says (hashed directories with ``write.object-storage.enabled``).
Files are encoded in parallel; with fewer partitions than threads, a large partition's rows are
split into one file per thread. Small partitions of flat primitive columns are encoded in Rust,
many per call (:mod:`icefloe.write.native_writer`). Each file gets its metrics
(:mod:`icefloe.write.metrics`), split offsets and partition tuple, and comes back as a
:class:`~icefloe.write.files.DataFile`.

It writes files only; committing them is the job of a producer
(:mod:`icefloe.table.producer`). It is what a Spark executor calls for its partition of rows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe._concurrency import parallel_map, work_threads
from icefloe.arrow_schema import (
    FIELD_IDS_DIGEST_KEY,
    field_ids_digest,
    schema_to_arrow,
)
from icefloe.exceptions import ValidationError
from icefloe.io import FileIO
from icefloe.metadata import TableMetadata
from icefloe.nesting import check_nesting
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema, walk_fields
from icefloe.types import (
    BooleanType,
    StructType,
)
from icefloe.write import native_writer
from icefloe.write.avro_files import AvroOptions, avro_schema_json, is_avro, write_avro
from icefloe.write.columns import stored_columns, with_lineage_columns
from icefloe.write.encoding import dictionary_columns
from icefloe.write.files import DataFile
from icefloe.write.grouping import (
    group_bounds,
    partition_arrays,
    partition_group_codes,
    partition_values,
    sort_keys,
)
from icefloe.write.input import invalid_values, to_table_schema_chunks
from icefloe.write.locations import LocationProvider
from icefloe.write.metrics import ColumnMetrics, MetricsConfig, compute_metrics, split_offsets
from icefloe.write.orc_files import OrcOptions, is_orc, orc_arrow_schema, to_orc_table, write_orc
from icefloe.write.partition_names import partition_path
from icefloe.write.properties import ParquetOptions, target_file_size
from icefloe.write.regroup import regroup, take_rows
from icefloe.write.variant_footer import TailHoldingSink, variant_field_ids

__all__ = [
    "WriteOptions",
    "write_data_files",
    "write_parquet_files",
]


@dataclass(frozen=True)
class WriteOptions:
    """Knobs of one write; the defaults come from the table properties."""

    target_file_size: int | None = None
    sort: bool = True
    task_id: int = 0
    #: Files written at once (default: one per core, at most 8).
    max_workers: int | None = None
    #: With fewer partitions than workers, a large partition is written as several files at
    #: once (see :data:`SPLIT_BYTES`). Spark tasks turn it off (their parallelism is the
    #: tasks').
    spread: bool = True
    #: How many files a partition of this many rows is written as (rows split evenly, in
    #: order; a file still rolls over past ``target_file_size``), instead of files cut to the
    #: target by their size: compaction sizes its output by its input's bytes. No spreading.
    file_count: Callable[[int], int] | None = None


def write_data_files(
    metadata: TableMetadata,
    io: FileIO,
    data: Any,
    *,
    options: WriteOptions | None = None,
    spec: PartitionSpec | None = None,
) -> list[DataFile]:
    """Write ``data`` as Parquet files for ``metadata``'s current schema and default spec (a
    stream in pieces, as it is read: see :func:`~icefloe.write.input.to_table_schema_chunks`;
    the pieces of a partitioned stream go to files kept open across pieces, see
    :mod:`icefloe.write.rolling`).

    Nothing is registered in the table. On error every file written so far is deleted.
    """
    schema = metadata.current_schema()
    check_nesting(schema, "cannot write to the table")
    spec = spec or metadata.spec()
    pieces = to_table_schema_chunks(data, schema, metadata.format_version)
    if _fans_out(metadata, spec, options or WriteOptions()):
        from icefloe.write.rolling import write_stream

        return write_stream(metadata, io, pieces, spec, options)
    return write_apart(metadata, io, pieces, spec, options)


def write_apart(
    metadata: TableMetadata,
    io: FileIO,
    pieces: Iterable[pa.Table],
    spec: PartitionSpec,
    options: WriteOptions | None = None,
) -> list[DataFile]:
    """Each of ``pieces`` (in the current schema's Arrow form) written into files of its own;
    on error every file written so far is deleted."""
    schema = metadata.current_schema()
    files: list[DataFile] = []
    try:
        for table in pieces:
            files += write_parquet_files(
                metadata, io, table, schema=schema, spec=spec, options=options
            )
    except BaseException:
        for f in files:
            io.delete_quietly(f.file_path)
        raise
    return files


def _fans_out(metadata: TableMetadata, spec: PartitionSpec, opts: WriteOptions) -> bool:
    """Whether a stream of several pieces is written through files kept open across pieces
    (:mod:`icefloe.write.rolling`): partitioned Parquet writes whose rows are not sorted (a
    sort orders each piece's rows as a whole) and whose files are cut by size."""
    props = metadata.properties
    sorted_ = opts.sort and metadata.sort_order().is_sorted
    return bool(
        spec.fields
        and not sorted_
        and opts.file_count is None
        and not is_orc(props)
        and not is_avro(props)
    )


def write_parquet_files(
    metadata: TableMetadata,
    io: FileIO,
    table: pa.Table,
    *,
    schema: Schema,
    spec: PartitionSpec,
    options: WriteOptions | None = None,
) -> list[DataFile]:
    """Write an Arrow table already in ``schema``'s Arrow form (see :func:`write_data_files`)."""
    opts = options or WriteOptions()
    if table.num_rows == 0:
        return []
    table, file_schema = with_lineage_columns(table, schema)
    order = metadata.sort_order()
    sort_here = opts.sort and order.is_sorted
    use_dictionary = dictionary_columns(table)  # sampled once, before rows are regrouped
    parts = partition_arrays(table, schema, spec) if spec.fields else []
    group = partition_group_codes(parts)
    if group is not None and not sort_here and pc.all(pc.equal(group, group[0])).as_py():
        group = None  # one partition: nothing to reorder
        parts = [p.slice(0, 1) for p in parts]
        bounds = [(0, table.num_rows)]
    elif group is not None and not sort_here:
        # Rows are scattered to their partitions in one pass (see icefloe.write.regroup).
        table, bounds, firsts = regroup(table, group, opts.max_workers or work_threads())
        parts = [p.take(firsts) for p in parts]
    elif group is not None or sort_here:
        # Rows are grouped by one int64 partition key (dense codes: Arrow sorts it by counting)
        # and then ordered by the table's sort order inside each partition.
        key_cols: list[tuple[pa.Array | pa.ChunkedArray, str]] = []
        if group is not None:
            key_cols.append((group, "ascending"))
        if sort_here:
            key_cols += sort_keys(table, schema, order)
        keys = pa.table({f"k{i}": c for i, (c, _) in enumerate(key_cols)})
        idx = pc.sort_indices(
            keys,
            sort_keys=[(f"k{i}", d) for i, (_, d) in enumerate(key_cols)],
        )
        table = take_rows(table, idx, opts.max_workers or work_threads())
        if group is not None:
            group = group.take(idx)
            bounds = group_bounds([group], table.num_rows)
            firsts = pa.array([s for s, _ in bounds], pa.int64())
            parts = [p.take(idx.take(firsts)) for p in parts]
        else:
            bounds = [(0, table.num_rows)]
    else:
        bounds = [(0, table.num_rows)]
    # (after partition and sort keys were taken by position from the whole schema)
    table, file_schema = stored_columns(table, file_schema)
    values = [partition_values(pf, p) for pf, p in zip(spec.fields, parts, strict=True)]
    writer = FileWriter(
        metadata,
        io,
        file_schema,
        spec,
        opts,
        order.order_id if sort_here else None,
        use_dictionary,
        field_ids_digest(table.schema),
    )
    partitions = [
        {pf.name: values[i][g] for i, pf in enumerate(spec.fields)} if parts else {}
        for g in range(len(bounds))
    ]
    spread = opts.spread and opts.file_count is None
    if opts.file_count is not None:
        bounds, partitions = _divided(bounds, partitions, opts.file_count)
    threads = opts.max_workers or work_threads()
    # Partitions _spread would split over the threads stay with pyarrow's writer.
    spreading = spread and threads >= 2 and len(bounds) < threads
    native = writer.native_groups(table, bounds, 2 * SPLIT_BYTES - 1 if spreading else None)
    files: dict[int, list[DataFile]] = {}
    try:
        if native:
            files.update(
                writer.write_native(table, [bounds[g] for g in native], native, partitions, threads)
            )
        groups = [
            (g, table.slice(start, end - start), partitions[g])
            for g, (start, end) in enumerate(bounds)
            if g not in files
        ]
        # Parquet encoding and the metric kernels release the GIL: files are written in
        # parallel, results kept in partition order.
        results = parallel_map(
            lambda g: (g[0], writer.write_group(g[1], g[2])),
            _spread(groups, threads) if spread else groups,
            threads=threads,
            kind="work",
        )
    except BaseException:
        for path in list(writer.created):
            io.delete_quietly(path)
        raise
    for g, written in results:
        files.setdefault(g, []).extend(written)
    return [f for g in sorted(files) for f in files[g]]


#: With fewer partitions than threads, a partition of at least twice this much Arrow data is
#: written as up to one file per thread (contiguous rows, encoded at once): a Parquet file is
#: encoded on one core, and pieces this large still make files of several megabytes.
SPLIT_BYTES = 32 << 20


_Group = tuple[int, pa.Table, dict[str, Any]]  # group index, its rows, its partition


def _divided(
    bounds: list[tuple[int, int]],
    partitions: list[dict[str, Any]],
    file_count: Callable[[int], int],
) -> tuple[list[tuple[int, int]], list[dict[str, Any]]]:
    """``bounds`` (rows of one partition each) cut into ``file_count(rows)`` runs of about
    equal rows each (at least one row), one file each, with their partitions."""
    out_bounds: list[tuple[int, int]] = []
    out_partitions: list[dict[str, Any]] = []
    for (start, end), partition in zip(bounds, partitions, strict=True):
        n = max(1, min(end - start, file_count(end - start)))
        cuts = [start + (end - start) * i // n for i in range(n + 1)]
        out_bounds += itertools.pairwise(cuts)
        out_partitions += [partition] * n
    return out_bounds, out_partitions


def _spread(groups: list[_Group], threads: int) -> list[_Group]:
    """``groups`` (rows of one partition each) with large ones split so that ``threads``
    files can be encoded at once; the rows keep their order."""
    if threads < 2 or len(groups) >= threads:
        return groups
    out: list[_Group] = []
    for g, table, partition in groups:
        pieces = min(threads, int(table.nbytes) // SPLIT_BYTES)
        if pieces < 2:
            out.append((g, table, partition))
            continue
        step = -(-table.num_rows // pieces)
        out += [(g, table.slice(s, step), partition) for s in range(0, table.num_rows, step)]
    return out


#: A file cut to a target below the row-group size closes once it is within 1/4 of the target
#: (another row group would be a small one).
_CLOSE_SHORT_BY = 4
#: The most encodings of the rows of one ORC or Avro file before it is written.
_ROW_FILE_TRIES = 3
#: Rows of the sample that checks that rows about to be written compress as the last ones did.
_PROBE_ROWS = 1024
#: The fewest rows a row group cut to the target takes (Java's rolling writer checks the size
#: every 1,000 rows): a target smaller than a few rows' encoding is not a file per row.
_MIN_ROWS = 1000


class _SizeModel:
    """How many rows of one partition's table fill the room left in a file, for targets below
    the row-group size (where a file's size is only known once a row group is written).

    A row takes the bytes on disk a row of the last row group of this table took (its Arrow
    size before the first: Arrow data rarely grows on disk, so the first guess makes a row group
    too small rather than too large, and the next one fills the rest). Learning per partition
    and per row group follows data that compresses differently, but rows ahead may compress
    much worse than those behind (sorted rows going from constant to random values): before a
    row group of many rows, a sample spread over them is encoded (``encoded_size``), and where
    its rows take more than twice the bytes, the row group is sized by the sample instead."""

    def __init__(self, table: pa.Table, encoded_size: Callable[[pa.Table], int]) -> None:
        self.table = table
        self.per_row = max(1e-3, int(table.nbytes) / max(1, table.num_rows))
        self.encoded_size = encoded_size

    def rows_for(self, pos: int, room: int, at_most: int) -> int:
        """Rows from ``pos`` expected to take ``room`` bytes on disk (at least
        :data:`_MIN_ROWS`, at most ``at_most``)."""
        least = min(at_most, _MIN_ROWS)
        take = max(least, min(at_most, int(room / self.per_row)))
        if take >= 2 * _PROBE_ROWS:
            picks = np.linspace(pos, pos + take - 1, _PROBE_ROWS).astype(np.int64)
            sample = self.table.take(picks)
            per_row = self.encoded_size(sample) / _PROBE_ROWS
            if per_row > 2 * self.per_row:
                take = max(least, min(take, int(room / per_row)))
        return take

    def learn(self, disk: int, rows: int) -> None:
        """Counts a row group of ``rows`` rows written as ``disk`` bytes."""
        if disk > 0:
            self.per_row = disk / rows


class FileWriter:
    """Writes the files of one write: paths, encodings and metrics under the table's properties."""

    def __init__(
        self,
        metadata: TableMetadata,
        io: FileIO,
        schema: Schema,
        spec: PartitionSpec,
        opts: WriteOptions,
        sort_order_id: int | None,
        use_dictionary: bool | list[str],
        digest: str,
    ) -> None:
        props = metadata.properties
        for path, f in walk_fields(schema.as_struct()):
            if isinstance(f.field_type, StructType) and not f.field_type.fields:
                name = ".".join(p.name for p in (*path, f))
                raise ValidationError(
                    f"column {name!r} is a struct with no fields, which data files cannot store: "
                    "add a field to it or drop it before writing"
                )
        self.use_dictionary = use_dictionary
        self.io = io
        self.schema = schema
        self.spec = spec
        self.parquet = _without_boolean_bloom_filters(ParquetOptions.from_properties(props), schema)
        self.target = opts.target_file_size or target_file_size(props)
        self.by_size = opts.file_count is None  # files cut to the target by their size
        self.metrics = MetricsConfig(schema, props, metadata.sort_order())
        self.locations = LocationProvider.of(metadata.location, props)
        self.write_id = uuid.uuid4()
        self.task_id = opts.task_id
        # rows of an unsorted table are in its order 0, the id Java and Trino write for them
        unsorted = not metadata.sort_order().is_sorted
        self.sort_order_id = 0 if sort_order_id is None and unsorted else sort_order_id
        self._counter = itertools.count(1)
        self.created: list[str] = []
        self.variant_ids = variant_field_ids(schema)
        self.digest = digest  # of the Arrow schema the files are written in
        self.orc: OrcOptions | None = None
        self._orc_schemas: dict[pa.Schema, pa.Schema] = {}
        if is_orc(props):
            self.orc = OrcOptions.from_properties(props)
            orc_arrow_schema(schema, schema_to_arrow(schema))  # refuses types ORC cannot hold
        self.avro: AvroOptions | None = None
        self.avro_schema = ""
        if is_avro(props):
            self.avro = AvroOptions.from_properties(props)
            self.avro_schema = avro_schema_json(schema)  # refuses types it cannot hold
        self.native = (
            None
            if self.variant_ids or self.orc is not None or self.avro is not None
            else native_writer.native_columns(schema, self.metrics, self.parquet)
        )

    def path(self, partition: Mapping[str, Any]) -> str:
        """The location of a new file of ``partition``."""
        ext = "orc" if self.orc is not None else "avro" if self.avro is not None else "parquet"
        name = f"00000-{self.task_id}-{self.write_id}-{next(self._counter):05d}.{ext}"
        directory = partition_path(self.spec, partition, self.schema) if self.spec.fields else ""
        return self.locations.new_location(name, directory)

    def _rows_per_group(self, table: pa.Table) -> int:
        limit = self.parquet.row_group_limit
        if table.get_total_buffer_size() <= self.parquet.row_group_size_bytes:
            # its buffers (whole, even where only a slice is used) fit: so do its rows
            return max(1, min(limit, int(table.num_rows)))
        per_row = max(1, int(table.nbytes) // max(1, table.num_rows))
        by_bytes: int = self.parquet.row_group_size_bytes // per_row
        return max(1, min(limit, by_bytes))

    def native_groups(
        self, table: pa.Table, bounds: list[tuple[int, int]], at_most: int | None = None
    ) -> list[int]:
        """The groups (by index into ``bounds``) small enough for the native encoder (and of
        at most ``at_most`` bytes): one file each, in row groups of
        ``write.parquet.row-group-limit`` rows."""
        if self.native is None or table.num_rows == 0:
            return []
        per_row = int(table.nbytes) / table.num_rows
        limit = min(native_writer.NATIVE_MAX_BYTES, self.target, self.parquet.row_group_size_bytes)
        if at_most is not None:
            limit = min(limit, at_most)
        return [g for g, (start, end) in enumerate(bounds) if (end - start) * per_row <= limit]

    def write_native(
        self,
        table: pa.Table,
        slices: list[tuple[int, int]],
        groups: list[int],
        partitions: list[dict[str, Any]],
        threads: int,
    ) -> dict[int, list[DataFile]]:
        """The rows ``[start, end)`` of ``table`` of each of ``slices`` (group ``groups[k]``)
        encoded natively and written, one file per group."""
        assert self.native is not None
        batches = table.to_batches()
        per_row = int(table.nbytes) / max(1, table.num_rows)
        sizes = [int((end - start) * per_row) for start, end in slices]
        out: dict[int, list[DataFile]] = {}
        for wave in native_writer.waves(sizes):
            encoded = native_writer.encode_files(
                batches,
                [(slices[k][0], slices[k][1] - slices[k][0]) for k in wave],
                self.native,
                self.parquet,
                self.use_dictionary,
                {FIELD_IDS_DIGEST_KEY: self.digest},
                threads,
            )
            paths = [self.path(partitions[groups[k]]) for k in wave]

            items = [(p, f["data"]) for p, f in zip(paths, encoded, strict=True)]
            self.io.write_new_all(items, self.created)
            self.io.sync_soon_all(paths)  # the disk writes them while the next are encoded
            for k, path, f in zip(wave, paths, encoded, strict=True):
                out[groups[k]] = [
                    DataFile(
                        file_path=path,
                        record_count=f["record_count"],
                        file_size_in_bytes=len(f["data"]),
                        spec_id=self.spec.spec_id,
                        partition=partitions[groups[k]],
                        column_sizes=f["column_sizes"],
                        value_counts=f["value_counts"],
                        null_value_counts=f["null_value_counts"],
                        nan_value_counts=f["nan_value_counts"],
                        lower_bounds=f["lower_bounds"],
                        upper_bounds=f["upper_bounds"],
                        split_offsets=f["split_offsets"],
                        sort_order_id=self.sort_order_id,
                    )
                ]
        return out

    def write_group(self, table: pa.Table, partition: dict[str, Any]) -> list[DataFile]:
        if self.orc is not None or self.avro is not None:
            return self._write_row_files(table, partition)
        rows = self._rows_per_group(table)
        # Below the row-group size, files are cut to the target from the bytes a row takes on
        # disk (see _SizeModel); at or above it, or when the rows were already divided into
        # files, row groups are written whole until the file reaches the target.
        sized = (
            _SizeModel(table, self._encoded_size)
            if self.by_size and self.target < self.parquet.row_group_size_bytes
            else None
        )
        out: list[DataFile] = []
        pos = 0
        n = table.num_rows
        while pos < n:
            path = self.path(partition)
            pos, written = self._write_file(path, table, pos, rows, partition, sized)
            out.append(written)
        return out

    def parquet_options(self, rows: int = 0) -> dict[str, Any]:
        """The options of pyarrow's Parquet writer for data files of at most ``rows`` rows."""
        p = self.parquet
        return {
            "bloom_filter_options": p.bloom_filter_options(rows),
            "compression": p.compression,
            "compression_level": p.compression_level,
            "data_page_size": p.page_size_bytes,
            "write_batch_size": p.write_batch_size,  # so small pages are cut near their size
            "dictionary_pagesize_limit": p.dict_size_bytes,
            "use_dictionary": self.use_dictionary,
            "write_statistics": True,
            "store_schema": False,
            "write_page_checksum": True,  # page CRCs, verified on read (as Java writes them)
            # decimal(P<=9) as INT32 and decimal(P<=18) as INT64, as the spec's Parquet type
            # table says (and the native writer and Java write them)
            "store_decimal_as_integer": True,
        }

    def _encoded_size(self, rows: pa.Table) -> int:
        """The bytes ``rows`` take encoded as the data files are (in memory)."""
        buf = pa.BufferOutputStream()
        with pq.ParquetWriter(buf, rows.schema, **self.parquet_options()) as w:
            w.write_table(rows)
        return int(buf.tell())

    def _write_file(
        self,
        path: str,
        table: pa.Table,
        pos: int,
        rows: int,
        partition: dict[str, Any],
        sized: _SizeModel | None = None,
    ) -> tuple[int, DataFile]:
        chunks = []
        # an I/O failure is a FileIOError, and leaves no incomplete upload behind
        with self.io.new_output(path).writing() as sink:
            self.created.append(path)
            # Variant columns get the Parquet VARIANT annotation, patched into the footer.
            held = TailHoldingSink(sink) if self.variant_ids else None
            out = held or sink
            options = self.parquet_options(table.num_rows - pos)
            with pq.ParquetWriter(out, table.schema, **options) as w:
                n = table.num_rows
                while pos < n:
                    take = min(rows, n - pos)
                    before = out.tell()
                    if sized is not None:
                        take = sized.rows_for(pos, self.target - before, take)
                    chunk = table.slice(pos, take)
                    w.write_table(chunk, row_group_size=chunk.num_rows)
                    chunks.append(chunk)
                    pos += chunk.num_rows
                    if sized is not None:
                        sized.learn(out.tell() - before, chunk.num_rows)
                        if out.tell() >= self.target - self.target // _CLOSE_SHORT_BY:
                            break
                    elif out.tell() >= self.target:
                        break
                w.add_key_value_metadata({FIELD_IDS_DIGEST_KEY: self.digest})
            md = w.writer.metadata
            size = held.finish(self.variant_ids) if held else sink.tell()
        self.io.sync_soon(path)  # the disk writes it while the next files are encoded
        written = pa.concat_tables(chunks)
        m = compute_metrics(written, md, self.metrics, own_file=True)
        return pos, self.parquet_file(path, size, md, partition, m)

    def parquet_file(
        self,
        path: str,
        size: int,
        md: pq.FileMetaData,
        partition: dict[str, Any],
        m: ColumnMetrics,
    ) -> DataFile:
        """The entry of the Parquet file at ``path`` (``size`` bytes, footer ``md``)."""
        return DataFile(
            file_path=path,
            record_count=md.num_rows,
            file_size_in_bytes=size,
            spec_id=self.spec.spec_id,
            partition=partition,
            column_sizes=m.column_sizes,
            value_counts=m.value_counts,
            null_value_counts=m.null_value_counts,
            nan_value_counts=m.nan_value_counts,
            lower_bounds=m.lower_bounds,
            upper_bounds=m.upper_bounds,
            split_offsets=split_offsets(md),
            sort_order_id=self.sort_order_id,
        )

    def _write_row_files(self, table: pa.Table, partition: dict[str, Any]) -> list[DataFile]:
        """One partition's rows as ORC or Avro files of about the target size on disk (or as
        one file when the rows were already divided into files)."""
        out: list[DataFile] = []
        pos = 0
        per_row: float | None = None  # bytes on disk a row of the last file took
        while pos < table.num_rows:
            rows, encoded, per_row = self._row_file_rows(table, pos, per_row)
            written = table.slice(pos, rows)
            out.append(self._write_row_file(self.path(partition), written, partition, encoded))
            pos += rows
        return out

    def _row_file_rows(
        self, table: pa.Table, pos: int, per_row: float | None
    ) -> tuple[int, pa.Buffer | None, float | None]:
        """How many rows from ``pos`` make the next ORC or Avro file, those rows already
        encoded (``None`` when they are to be encoded into the file directly), and the bytes
        on disk a row took.

        A file's size is only known once its rows are encoded. When the rows left fit the
        target by their Arrow size (and nothing was encoded yet), they make one file. Otherwise
        rows are taken by the bytes a row of this partition took in the last file (by its Arrow
        size before the first), encoded, and, when the file misses the target by more than a
        quarter, taken again by the bytes a row took in that encoding."""
        left = table.num_rows - pos
        if not self.by_size:
            return left, None, per_row
        guess = per_row or max(1e-3, int(table.nbytes) / max(1, table.num_rows))
        least = min(left, _MIN_ROWS)
        take = max(least, min(left, int(self.target / guess)))
        if per_row is None and take == left:
            return left, None, None
        short, over = self.target - self.target // _CLOSE_SHORT_BY, self.target * 5 // 4
        for _ in range(_ROW_FILE_TRIES):
            buf = pa.BufferOutputStream()
            self._encode_rows(table.slice(pos, take), buf)
            encoded = buf.getvalue()
            per_row = max(1e-3, encoded.size / take)
            if (encoded.size >= short or take == left) and (encoded.size <= over or take == least):
                break
            again = max(least, min(left, int(self.target / per_row)))
            if again == take:
                break
            take = again
        return take, encoded, per_row

    def _encode_rows(self, rows: pa.Table, out: pa.NativeFile) -> None:
        """``rows`` encoded as one ORC or Avro file into ``out``."""
        with _refusing_invalid(rows):
            if self.orc is not None:
                orc_schema = self._orc_schemas.get(rows.schema)
                if orc_schema is None:
                    orc_schema = self._orc_schemas[rows.schema] = orc_arrow_schema(
                        self.schema, rows.schema
                    )
                write_orc(out, to_orc_table(rows, orc_schema), self.orc)
            else:
                assert self.avro is not None
                write_avro(out, rows, self.schema, self.avro_schema, self.avro)

    def _write_row_file(
        self, path: str, written: pa.Table, partition: dict[str, Any], encoded: pa.Buffer | None
    ) -> DataFile:
        """``written`` as one ORC or Avro file at ``path`` (``encoded``: its bytes, when they
        were encoded already)."""
        with self.io.new_output(path).writing() as sink:
            self.created.append(path)
            if encoded is None:
                self._encode_rows(written, sink)
            else:
                sink.write(encoded)
            size = sink.tell()
        self.io.sync_soon(path)
        with _refusing_invalid(written):
            m = compute_metrics(written, None, self.metrics)
        return DataFile(
            file_path=path,
            file_format="ORC" if self.orc is not None else "AVRO",
            record_count=written.num_rows,
            file_size_in_bytes=size,
            spec_id=self.spec.spec_id,
            partition=partition,
            column_sizes=m.column_sizes,
            value_counts=m.value_counts,
            null_value_counts=m.null_value_counts,
            nan_value_counts=m.nan_value_counts,
            lower_bounds=m.lower_bounds,
            upper_bounds=m.upper_bounds,
            sort_order_id=self.sort_order_id,
        )


@contextlib.contextmanager
def _refusing_invalid(rows: pa.Table) -> Iterator[None]:
    """Invalid input (a string that is not UTF-8), failing in Arrow's or Python's codecs,
    raised as the :class:`ValidationError` naming its column."""
    try:
        yield
    except (pa.ArrowException, UnicodeDecodeError) as exc:
        invalid = invalid_values(zip(rows.column_names, rows.columns, strict=True))
        if invalid is not None:
            raise invalid from exc
        raise


def _without_boolean_bloom_filters(options: ParquetOptions, schema: Schema) -> ParquetOptions:
    """``options`` without Bloom filters on boolean columns: Parquet defines none for them
    (pyarrow refuses to write one), and Iceberg Java writes such columns without a filter."""
    kept = tuple(
        (name, fpp)
        for name, fpp in options.bloom_filters
        if schema.find_field_id(name) is None or not isinstance(schema.find_type(name), BooleanType)
    )
    return (
        options
        if kept == options.bloom_filters
        else dataclasses.replace(options, bloom_filters=kept)
    )
