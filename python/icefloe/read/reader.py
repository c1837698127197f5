"""Reading one planned data file to Arrow record batches (streaming, bounded memory).

Per batch of the Parquet file: project the file's columns onto the table schema by field id,
compute the keep-mask of every delete that applies (deletion vectors, position delete files,
equality delete files: all in Rust), then the residual filter, then the requested columns and
metadata columns. Delete files are read before the first batch, so a missing or corrupt delete
file fails the read before any row is returned.

Two things keep deletes cheap. Deleted positions (deletion vectors, position delete files) are
applied to the file's batch as read, before projection, so only the surviving rows are
projected and copied. And string/binary columns that the file stores dictionary-encoded (every
row group with a small dictionary page) are read as Arrow dictionaries and decoded in Rust
in the same call as that filter (``rust/deletes/dictionary.rs``), deleted rows skipped while
gathering; decoding indices is cheaper than pyarrow's direct string decoding anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from functools import partial
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe import _native
from icefloe._identity_memo import IdentityMemo
from icefloe.arrow_schema import apply_name_mapping, has_field_ids, schema_to_arrow
from icefloe.deletes import DeletionVector
from icefloe.exceptions import CorruptFileError, ValidationError
from icefloe.expressions.arrow import selection_mask
from icefloe.expressions.base import AlwaysTrue
from icefloe.io import WHOLE_READ_BYTES, FileIO
from icefloe.read.avro_file import AvroFile
from icefloe.read.deletes import DeleteCache, TaskDeletes, dropped_field
from icefloe.read.orc_file import OrcFile
from icefloe.read.parquet_file import (
    DECODE_ERRORS,
    CheckedParquetFile,
    check_size,
    corrupt_error,
    has_nanos,
    int96_unit,
    open_checked,
    open_file,
)
from icefloe.read.prefetch import prefetched
from icefloe.read.projection import FileColumns, constant_array, project_field
from icefloe.read.rowgroups import RowGroupFilter, leaves_by_field_id
from icefloe.scan.filters import referenced_field_ids
from icefloe.scan.tasks import (
    DELETED,
    FILE,
    LAST_UPDATED_SEQUENCE_NUMBER,
    METADATA_COLUMNS,
    PARTITION,
    POS,
    ROW_ID,
    SPEC_ID,
    FileScanTask,
    ReadOptions,
    metadata_field,
)
from icefloe.schema import Schema
from icefloe.transforms import IdentityTransform
from icefloe.types import IcebergType, NestedField, StructType

__all__ = ["output_schema", "prefetch_file", "read_task", "read_tasks"]

T = TypeVar("T")

BATCH_SIZE = 131_072

#: Batches decoded ahead of the one being filtered and projected, on a helper thread per file
#: (0: decode in the reading thread). A file of at most one batch is decoded in the reading
#: thread: there is nothing to overlap, and the thread hop costs more than it saves when a
#: scan reads hundreds of small partition files.
PREFETCH = 1

#: A column chunk whose dictionary page is larger (compressed) may have outgrown its dictionary
#: and fallen back to plain pages, which pyarrow would hash back into a dictionary: read it plain.
MAX_DICTIONARY_PAGE = 64 * 1024

#: Dictionary columns are read as Arrow dictionaries and decoded in Rust only when the file
#: has at least this many of their values: the file is opened a second time for it, which
#: costs more than the decode saves on a small file (6,110 rows, one such column: 15% slower;
#: 100,000 rows: 12% faster).
MIN_DICTIONARY_VALUES = 32_768


def _partition_type(options: ReadOptions, spec_id: int) -> IcebergType:
    if options.partition_type is not None:
        return options.partition_type
    spec = options.specs.get(spec_id)
    if spec is None:
        return StructType()
    return spec.partition_type(options.schema)


def _metadata_fields(options: ReadOptions, spec_id: int) -> list[NestedField]:
    return [
        metadata_field(n, _partition_type(options, spec_id) if n == PARTITION else None)
        for n in options.metadata_columns
    ]


#: Schemas worked out once per scan, not once per file, by read options object.
_MEMO = IdentityMemo(256)


def _memo(options: ReadOptions, key: Hashable, build: Callable[[], T]) -> T:
    return _MEMO.get((options,), key, build)


def _has_nanos(options: ReadOptions) -> bool:
    """:func:`has_nanos` of the scan's table, worked out once per scan: without a nanosecond
    timestamp, INT96 timestamps read in microseconds and files need no look at them."""
    return _memo(options, "nanos", partial(has_nanos, options.schema.fields))


def _work_schema(options: ReadOptions, extra_ids: set[int]) -> tuple[Schema, pa.Schema]:
    """The projection plus the columns filters and equality deletes need, and its Arrow form."""
    projected = options.projected_schema()
    if not extra_ids:
        return projected, schema_to_arrow(projected)
    # Selected by their innermost fields, so nested columns stay pruned as projected.
    ids = projected.field_ids | extra_ids
    parents = {options.schema.find_parent_id(i) for i in ids}
    names = [options.schema.find_column_name(i) or "" for i in sorted(ids) if i not in parents]
    work = options.schema.select(*names)
    return work, schema_to_arrow(work)


def _out_schema(options: ReadOptions, spec_id: int) -> tuple[list[NestedField], pa.Schema]:
    meta_fields = _metadata_fields(options, spec_id)
    fields = list(options.projected_schema().fields) + meta_fields
    return meta_fields, schema_to_arrow(Schema(*fields))


def output_schema(options: ReadOptions, spec_id: int = 0) -> pa.Schema:
    """The Arrow schema of the batches :func:`read_task` yields for ``options``."""
    return _out_schema(options, spec_id)[1]


def read_tasks(
    io: FileIO, tasks: Iterable[FileScanTask], options: ReadOptions
) -> Iterator[pa.RecordBatch]:
    """Reads tasks in order, sharing one delete-file cache (each delete file is read once)."""
    cache = DeleteCache()
    for task in tasks:
        yield from read_task(io, task, options, cache)


def read_task(
    io: FileIO,
    task: FileScanTask,
    options: ReadOptions,
    cache: DeleteCache | None = None,
    handle: pa.NativeFile | None = None,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``task`` that survive its deletes and residual, as record batches typed
    exactly as :func:`output_schema` (``handle``: the data file already open, see
    :func:`prefetch_file`). Errors (missing or corrupt files, schema conflicts) raise typed
    :mod:`icefloe.exceptions` naming the file."""
    return _TaskReader(io, task, options, cache or DeleteCache(), handle).run()


def prefetch_file(io: FileIO, task: FileScanTask) -> pa.NativeFile | None:
    """The data file of ``task`` fetched into memory when it is on an object store and small
    (one request, see :meth:`~icefloe.io.InputFile.open`), else None: the read then opens it.
    Fetching needs no CPU, so a scan fetches files ahead without holding a decode slot."""
    size = task.data_file.file_size_in_bytes
    path = task.data_file.file_path
    if not size or size > WHOLE_READ_BYTES or io.s3_client(path) is None:
        return None
    return open_file(io, path, size)


class _TaskReader:
    def __init__(
        self,
        io: FileIO,
        task: FileScanTask,
        options: ReadOptions,
        cache: DeleteCache,
        handle: pa.NativeFile | None = None,
    ) -> None:
        self.io = io
        self.task = task
        self.options = options
        self.cache = cache
        self.path = task.data_file.file_path
        self.spec_id = task.spec_id if task.spec_id is not None else task.data_file.spec_id
        self._handle: pa.NativeFile | None = handle
        self._int96 = "us"  # the unit the file's INT96 timestamps are read in

    # ------------------------------------------------------------------ setup

    def _layout(self, schema: pa.Schema) -> _FileLayout:
        """The layout of a file of Arrow schema ``schema``, worked out once per scan for
        each distinct schema (the files of one write share theirs)."""
        layouts: list[tuple[pa.Schema, _FileLayout]] = _memo(self.options, "layouts", list)
        for seen, layout in list(layouts):
            if seen.equals(schema, check_metadata=True):  # field ids included
                return layout
        layout = _FileLayout(self._file_schema(schema), schema, self.options.schema)
        layouts.append((schema, layout))
        if len(layouts) > _LAYOUTS_PER_SCAN:
            del layouts[0]
        return layout

    def _file_schema(self, schema: pa.Schema) -> pa.Schema:
        """``schema`` with the field ids the file is read by: its own when it has any (at any
        depth), else the name mapping's."""
        if has_field_ids(schema):
            return schema
        if self.options.name_mapping is not None:
            return apply_name_mapping(schema, self.options.name_mapping)
        raise ValidationError(
            f"data file {self.path} has no field ids and the table has no name mapping "
            "(schema.name-mapping.default)"
        )

    def _constants(self) -> dict[int, Any]:
        spec = self.options.specs.get(self.spec_id)
        out: dict[int, Any] = {}
        if spec is None:
            return out
        partition = self.task.data_file.partition
        for i, pf in enumerate(spec.fields):
            if isinstance(pf.transform, IdentityTransform) and i < len(partition):
                out[pf.source_id] = partition[i]
        return out

    def _select_rows_groups(
        self,
        checked: CheckedParquetFile,
        prune: RowGroupFilter | None = None,
        deleted: DeletionVector | None = None,
    ) -> list[tuple[int, int]]:
        """(row group, first row position) of the row groups in the task's split that the
        residual filter might match (by their statistics) and that have a row not in
        ``deleted``."""
        groups = checked.row_groups
        out: list[tuple[int, int]] = []
        pos = 0
        start = self.task.start
        end = None if self.task.length is None else start + self.task.length
        whole = start == 0 and end is None
        for i, (num_rows, _, _) in enumerate(groups):
            if whole:
                out.append((i, pos))
            else:
                offset = checked.chunk_start(i, 0)
                if start <= offset and (end is None or offset < end):
                    out.append((i, pos))
            pos += num_rows
        if prune is not None and not prune.trivial:
            out = [g for g in out if prune.might_match(g[0])]
        if deleted is not None:
            # Row groups whose every row is deleted are not read at all (only a group with no
            # more rows than the file has deletes can be; the others need no mask).
            total = deleted.cardinality
            out = [
                g
                for g in out
                if (rows := groups[g[0]][0]) > total or deleted.keep_mask(g[1], rows).true_count > 0
            ]
        return out

    # ------------------------------------------------------------------ run

    def run(self) -> Iterator[pa.RecordBatch]:
        options, task = self.options, self.task
        file_format = task.data_file.file_format.lower()
        if file_format not in ("parquet", "orc", "avro"):
            raise ValidationError(
                f"data file {self.path} has format {task.data_file.file_format}; "
                "only Parquet, ORC and Avro are supported"
            )
        if file_format != "parquet" and task.start > 0:
            # ORC and Avro files are read whole, by the split that starts at their first byte.
            return
        deletes = TaskDeletes.load(
            self.io, self.path, task.delete_files, self.cache, options.name_mapping, options
        )
        if self._handle is None:
            size = task.data_file.file_size_in_bytes or None
            self._handle = open_file(self.io, self.path, size)
        checked: CheckedParquetFile | None = None
        other: OrcFile | AvroFile | None = None  # ORC and Avro: no row groups to prune
        if file_format == "orc":
            other = OrcFile(self.path, self._handle)
            num_rows, schema = other.num_rows, other.schema
        elif file_format == "avro":
            other = AvroFile(self.path, self._handle)
            num_rows, schema = other.num_rows, other.schema
        else:
            checked = open_checked(self.io, self.path, handle=self._handle)
            num_rows, schema = checked.file.metadata.num_rows, checked.schema
        if task.data_file.record_count and num_rows != task.data_file.record_count:
            raise CorruptFileError(
                f"data file {self.path} has {num_rows} rows but its manifest entry says "
                f"{task.data_file.record_count}"
            )
        check_size(self._handle, self.path, task.data_file.file_size_in_bytes or None)
        layout = self._layout(schema)
        file_schema = layout.file_schema
        raw_names, mapped = layout.raw_names, layout.mapped
        columns = layout.columns

        projected = _memo(options, "projected", options.projected_schema)
        residual = task.residual
        filter_ids = set(referenced_field_ids(residual))
        table_ids = options.schema.field_ids
        extra_ids = (filter_ids | set(deletes.equality_ids)) & table_ids
        extra_ids -= projected.field_ids
        work, work_arrow = _memo(
            options, ("work", tuple(sorted(extra_ids))), partial(_work_schema, options, extra_ids)
        )
        # Equality delete fields the table dropped still apply (spec): read as the newest
        # schema holding them defines them, from the top-level column holding them.
        dropped = {i: dropped_field(options, i) for i in deletes.equality_ids if i not in table_ids}
        for i, found in dropped.items():
            if found is None and columns.top_level(i) is None:
                raise ValidationError(
                    f"data file {self.path} has no column for equality delete field id {i}, "
                    "which no schema of the table has"
                )
        dropped_eq = [i if found is None else found[0].field_id for i, found in dropped.items()]

        meta_fields, out_schema = _memo(
            options, ("out", self.spec_id), partial(_out_schema, options, self.spec_id)
        )
        wanted_meta = set(options.metadata_columns)
        # File columns to read: ancestors of everything needed, plus row lineage if stored.
        read_ids = [f.field_id for f in work.fields] + dropped_eq
        if ROW_ID in wanted_meta:
            read_ids.append(METADATA_COLUMNS[ROW_ID])
        if LAST_UPDATED_SEQUENCE_NUMBER in wanted_meta:
            read_ids.append(METADATA_COLUMNS[LAST_UPDATED_SEQUENCE_NUMBER])
        read_names: list[str] = []
        for fid in read_ids:
            hit = columns.top_level(fid)
            if hit is not None and file_schema.field(hit[0]).name not in read_names:
                read_names.append(raw_names[hit[0]])
        if checked is not None and _has_nanos(options):
            tops = {raw_names.index(name) for name in read_names}
            self._int96 = int96_unit(checked.file, file_schema, options.schema, self.path, tops)
            if self._int96 != "us":
                pf = open_checked(
                    self.io,
                    self.path,
                    metadata=checked.file.metadata,
                    handle=checked.source,
                    int96_unit=self._int96,
                ).file
                schema = pf.schema_arrow
                checked = CheckedParquetFile(pf, checked.row_groups, checked.source, schema)
                layout = self._layout(checked.schema)
                file_schema, columns = layout.file_schema, layout.columns
                raw_names, mapped = layout.raw_names, layout.mapped
        constants = self._constants()
        filter_expr = None if isinstance(residual, AlwaysTrue) else residual
        keep_deleted = DELETED in wanted_meta

        prune = None
        if filter_expr is not None and checked is not None:
            try:
                prune = RowGroupFilter(
                    checked.file.metadata, file_schema, residual, self.task.data_file, layout.leaves
                )
            except DECODE_ERRORS as e:
                raise corrupt_error(self.path, e) from e
        skip_deleted = None if keep_deleted else deletes.positions
        # Deleted positions are dropped from the batch as read (unless _deleted marks them).
        early = skip_deleted
        need_rows = POS in wanted_meta or ROW_ID in wanted_meta
        dict_cols = [] if checked is None else _dictionary_columns(checked, layout, read_names)
        # Equality deletes on columns stored as the table reads them are matched on the batch
        # as read, so deleted rows are dropped in the pass that decodes dictionary columns.
        eq_early = (
            _early_equality_columns(deletes, columns, raw_names, work, work_arrow)
            if early is None and not keep_deleted
            else None
        )
        if other is not None:
            batches = other.batches(read_names, BATCH_SIZE)
            rows_to_read = num_rows
        else:
            assert checked is not None
            batches = self._batches(checked, read_names, prune, skip_deleted, dict_cols)
            rows_to_read = sum(g[0] for g in checked.row_groups)
        if PREFETCH and rows_to_read > BATCH_SIZE:
            batches = prefetched(batches, PREFETCH, name=f"icefloe-decode {self.path}")
        for batch, base in batches:
            n = batch.num_rows
            if n == 0:
                continue
            rows: np.ndarray[Any, Any] | None = None  # file positions, when not base + range(n)
            # Dictionary columns are decoded in Rust, in the same call as the filter if any.
            decoded = not dict_cols
            try:
                # Rows dropped as read through a keep-mask, which gives their file positions
                # (deleted positions when _pos or _row_id is asked for; equality deletes).
                read_keep: pa.BooleanArray | None = None
                if early is not None and not need_rows:
                    batch = early.filter_rows(batch, base, dict_cols)
                    decoded = True
                    n = batch.num_rows
                    if n == 0:
                        continue
                elif early is not None:
                    read_keep = early.keep_mask(base, n)
                elif eq_early is not None:
                    assert deletes.equality is not None
                    read_keep = deletes.equality.keep_mask(
                        pa.RecordBatch.from_arrays(
                            [batch.column(name) for name in eq_early],
                            names=[str(i) for i in deletes.equality_ids],
                        )
                    )
                if read_keep is not None:
                    kept = read_keep.true_count
                    if kept == 0:
                        continue
                    if kept < n:
                        if need_rows:
                            mask = read_keep.to_numpy(zero_copy_only=False)
                            rows = np.flatnonzero(mask).astype(np.int64) + base
                        batch = _native.filter_batch(batch, read_keep, dict_cols)
                        decoded = True
                        n = kept
                if not decoded:
                    batch = _native.decode_dictionaries(batch, dict_cols)
            except CorruptFileError as e:
                # a dictionary key outside its dictionary: the pages are damaged
                raise CorruptFileError(f"cannot read data file {self.path}: {e}") from e
            except pa.ArrowException as e:
                # the batch's schema does not cross into Rust (footer metadata that is not
                # UTF-8)
                raise corrupt_error(self.path, e) from e
            by_name = {name: batch.column(i) for i, name in enumerate(batch.schema.names)}

            def file_col(fid: int, by_name: dict[str, pa.Array] = by_name) -> pa.Array | None:
                hit = columns.top_level(fid)
                if hit is None:
                    return None
                col = by_name.get(raw_names[hit[0]])
                if mapped and col is not None and pa.types.is_nested(col.type):
                    col = _with_mapped_ids(col, hit[1].type)
                return col

            work_cols = [
                project_field(file_col(f.field_id), f, n, self.path, constants) for f in work.fields
            ]
            wb = _make_batch(work_cols, work_arrow, n)

            def dropped_col(fid: int, file_col: Any = file_col, n: int = n) -> pa.Array:
                found = dropped.get(fid)
                if found is None:
                    # no schema of the options holds it: the file's top-level column as stored
                    return file_col(fid)
                top, names = found
                arr = project_field(file_col(top.field_id), top, n, self.path, constants)
                for _ in names:  # each struct of the pruned path holds one field
                    arr = pc.struct_field(arr, [0])
                return arr

            keep = self._keep_mask(
                deletes, wb, work, dropped_col, base, n, early is None, eq_early is None
            )
            out_cols: list[pa.Array] = []
            for f in projected.fields:
                idx = work_arrow.get_field_index(f.name)
                if work.fields[idx] == f:
                    out_cols.append(wb.column(idx))
                else:
                    out_cols.append(project_field(file_col(f.field_id), f, n, self.path, constants))
            for mf in meta_fields:
                out_cols.append(self._metadata_column(mf, n, base, rows, keep, file_col))
            out = _make_batch(out_cols, out_schema, n)
            if keep is not None and not keep_deleted:
                # In Rust, all columns in one pass with the GIL released.
                out = _native.filter_batch(out, keep)
                if filter_expr is not None:
                    wb = _native.filter_batch(wb, keep)
            if filter_expr is not None and out.num_rows:
                out = out.filter(selection_mask(filter_expr, wb))
            if out.num_rows:
                yield out

    def _batches(
        self,
        checked: CheckedParquetFile,
        names: list[str],
        prune: RowGroupFilter | None = None,
        deleted: DeletionVector | None = None,
        dict_cols: list[str] | None = None,
    ) -> Iterator[tuple[pa.RecordBatch, int]]:
        """Batches of the split's row groups with the file position of their first row
        (``dict_cols`` read as Arrow dictionaries)."""
        pf = checked.file
        try:
            groups = self._select_rows_groups(checked, prune, deleted)
        except DECODE_ERRORS as e:
            raise corrupt_error(self.path, e) from e
        if dict_cols and groups:
            pf = open_checked(
                self.io,
                self.path,
                dict_cols,
                pf.metadata,
                handle=checked.source,
                int96_unit=self._int96,
            ).file
        # A split of at most one batch is decoded on this thread: handing its few columns to
        # pyarrow's pool costs more than decoding them (the scan already reads files in
        # parallel); larger splits decode their columns in parallel.
        threaded = sum(checked.row_groups[g[0]][0] for g in groups) > BATCH_SIZE
        for run in _runs(groups, checked):
            base = run[0][1]
            # a damaged page header can make pyarrow yield fewer rows without an error
            expected = base + sum(checked.row_groups[g[0]][0] for g in run)
            try:
                it = pf.iter_batches(
                    batch_size=BATCH_SIZE,
                    row_groups=[g[0] for g in run],
                    columns=names,
                    use_threads=threaded,
                )
                for batch in it:
                    yield batch, base
                    base += batch.num_rows
            except DECODE_ERRORS as e:
                raise corrupt_error(self.path, e) from e
            if base != expected:
                raise CorruptFileError(
                    f"cannot read data file {self.path}: row groups {[g[0] for g in run]} "
                    f"gave {base - run[0][1]} rows, the footer says {expected - run[0][1]}"
                )

    def _keep_mask(
        self,
        deletes: TaskDeletes,
        wb: pa.RecordBatch,
        work: Schema,
        dropped_col: Callable[[int], pa.Array],
        base: int,
        n: int,
        positions: bool = True,
        equality: bool = True,
    ) -> pa.Array | None:
        """The keep-mask of the batch: equality deletes and deleted positions, unless they
        were already dropped (``equality``, ``positions`` false). ``dropped_col`` gives the
        column of an equality field the table dropped."""
        keep: pa.Array | None = None
        if positions and deletes.positions is not None:
            keep = deletes.positions.keep_mask(base, n)
        if equality and deletes.equality is not None:
            arrays = []
            for fid in deletes.equality_ids:
                if fid in work.field_ids:
                    arrays.append(_column_by_id(wb, work, fid))
                else:
                    arrays.append(dropped_col(fid))
            eq_batch = pa.RecordBatch.from_arrays(
                arrays, names=[str(i) for i in deletes.equality_ids]
            )
            eq_keep = deletes.equality.keep_mask(eq_batch)
            keep = eq_keep if keep is None else pc.and_(keep, eq_keep)
        return keep

    def _metadata_column(
        self,
        mf: NestedField,
        n: int,
        base: int,
        rows: np.ndarray[Any, Any] | None,
        keep: pa.Array | None,
        file_col: Any,
    ) -> pa.Array:
        """Metadata column ``mf`` of a batch whose rows sit at file positions ``rows`` (or
        ``base + range(n)`` when ``rows`` is None)."""
        df = self.task.data_file
        positions = np.arange(base, base + n, dtype=np.int64) if rows is None else rows
        name = mf.name
        if name == FILE:
            return constant_array(df.file_path, mf.field_type, pa.string(), n)
        if name == SPEC_ID:
            return constant_array(self.spec_id, mf.field_type, pa.int32(), n)
        if name == POS:
            return pa.array(positions)
        if name == DELETED:
            if keep is None:
                return constant_array(False, mf.field_type, pa.bool_(), n)
            return pc.invert(keep)
        if name == PARTITION:
            return self._partition_column(mf, n)
        if name in (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER):
            first_row_id = df.first_row_id
            if first_row_id is None:
                # a file without a first row id (added before the table's upgrade to v3): both
                # lineage columns are null, whatever it stores (spec; as Iceberg Java reads them)
                return pa.nulls(n, pa.int64())
            stored = file_col(METADATA_COLUMNS[name])
            if name == ROW_ID:
                return _fill(stored, pa.array(positions + first_row_id), n)
            seq = df.data_sequence_number
            inherited = None if seq is None else constant_array(seq, mf.field_type, pa.int64(), n)
            return _fill(stored, inherited, n)
        raise ValidationError(f"unknown metadata column {name!r}")

    def _partition_column(self, mf: NestedField, n: int) -> pa.Array:
        ptype = mf.field_type
        assert isinstance(ptype, StructType)
        target = schema_to_arrow(Schema(mf)).field(0).type
        spec = self.options.specs.get(self.spec_id)
        values = self.task.data_file.partition
        index = {pf.field_id: i for i, pf in enumerate(spec.fields)} if spec is not None else {}
        children = []
        for child, arrow_child in zip(ptype.fields, target, strict=True):
            i = index.get(child.field_id)
            value = values[i] if i is not None and i < len(values) else None
            children.append(constant_array(value, child.field_type, arrow_child.type, n))
        if not children:
            return pa.StructArray.from_buffers(pa.struct([]), n, [None])
        return pa.StructArray.from_arrays(children, fields=list(target))


def _runs(
    groups: list[tuple[int, int]], checked: CheckedParquetFile
) -> list[list[tuple[int, int]]]:
    """The selected row groups in reads of one ``iter_batches`` call each: consecutive row
    groups join while the read has at most :data:`BATCH_SIZE` rows. pyarrow keeps the buffers
    of every row group of one call until the call ends, so a file of large row groups read in
    one call would hold most of itself; read one by one, a large row group is freed before
    the next is decoded, and small row groups still fill whole batches."""
    runs: list[list[tuple[int, int]]] = []
    rows = 0
    for g in groups:
        n = checked.row_groups[g[0]][0]
        if runs and runs[-1][-1][0] + 1 == g[0] and rows + n <= BATCH_SIZE:
            runs[-1].append(g)
            rows += n
        else:
            runs.append([g])
            rows = n
    return runs


def _make_batch(columns: list[pa.Array], schema: pa.Schema, n: int) -> pa.RecordBatch:
    """A batch of ``n`` rows (also when there are no columns, as for ``count()``)."""
    if columns:
        return pa.RecordBatch.from_arrays(columns, schema=schema)
    return pa.RecordBatch.from_arrays([pa.nulls(n)], names=["_"]).select([])


#: Distinct file schemas whose layout a scan keeps.
_LAYOUTS_PER_SCAN = 8


def _leaves(t: pa.DataType) -> int:
    """The Parquet leaf columns an Arrow type is stored in."""
    if pa.types.is_map(t):
        return _leaves(t.key_type) + _leaves(t.item_type)
    if t.num_fields:
        return sum(_leaves(t.field(i).type) for i in range(t.num_fields))
    return 1


def _with_mapped_ids(col: pa.Array, mapped: pa.DataType) -> pa.Array:
    """``col`` (a nested column of a file without field ids) typed as the name mapping made
    its type, whose nested fields carry the ids the projection looks children up by: the
    same layout, so a view, not a copy."""
    if col.type.equals(mapped, check_metadata=True) or not col.type.equals(mapped):
        return col
    return col.view(mapped)


class _FileLayout:
    """What a reader works out from a file's Arrow schema: the schema with field ids (name
    mapping applied), its column names, the field-id index, and the Parquet leaf of each
    top-level string or binary column."""

    __slots__ = (
        "_leaves",
        "columns",
        "file_schema",
        "mapped",
        "raw_names",
        "string_leaves",
        "table",
    )

    def __init__(self, file_schema: pa.Schema, schema: pa.Schema, table: Schema) -> None:
        self.file_schema = file_schema
        self.table = table
        # the ids come from the name mapping: the columns read carry none in nested fields
        self.mapped = file_schema is not schema
        self.raw_names = file_schema.names  # the file's own names (name mapping renames none)
        self.columns = FileColumns(file_schema)
        self.string_leaves: dict[str, int] = {}
        leaf = 0
        for f in schema:
            if f.type in (pa.string(), pa.binary()):
                self.string_leaves[f.name] = leaf
            leaf += _leaves(f.type)
        self._leaves: dict[int, tuple[int, pa.DataType]] | None = None

    @property
    def leaves(self) -> dict[int, tuple[int, pa.DataType]]:
        """Field id -> (Parquet leaf index, Arrow type), for row-group pruning."""
        if self._leaves is None:
            self._leaves = leaves_by_field_id(self.file_schema, self.table)
        return self._leaves


def _early_equality_columns(
    deletes: TaskDeletes,
    columns: FileColumns,
    raw_names: list[str],
    work: Schema,
    work_arrow: pa.Schema,
) -> list[str] | None:
    """The file columns holding the equality delete columns, in ``deletes.equality_ids``
    order, when each is a top-level column of the type the table reads (a dictionary of
    strings or binaries counts as its value type); else None (the keys are matched after
    projection)."""
    if deletes.equality is None:
        return None
    top = {f.field_id: i for i, f in enumerate(work.fields)}
    names: list[str] = []
    for fid in deletes.equality_ids:
        hit = columns.top_level(fid)
        if hit is None or fid not in top:
            return None
        stored = hit[1].type
        wanted = work_arrow.field(top[fid]).type
        if stored != wanted and not (
            pa.types.is_dictionary(stored) and stored.value_type == wanted
        ):
            return None
        names.append(raw_names[hit[0]])
    return names


def _dictionary_columns(
    checked: CheckedParquetFile, layout: _FileLayout, names: list[str]
) -> list[str]:
    """The top-level string/binary columns among ``names`` stored dictionary-encoded in every
    row group with a small dictionary page (see :data:`MAX_DICTIONARY_PAGE`), from the checked
    footer's page offsets; none when the file holds fewer than :data:`MIN_DICTIONARY_VALUES`
    of their values."""
    groups = checked.row_groups
    if not groups:
        return []
    rows = sum(g[0] for g in groups)
    out: list[str] = []
    for name in names:
        leaf = layout.string_leaves.get(name)
        if leaf is None:
            continue
        if all(
            dicts[leaf] > 0 and 0 < data[leaf] - dicts[leaf] <= MAX_DICTIONARY_PAGE
            for _, data, dicts in groups
        ):
            out.append(name)
    if rows * len(out) < MIN_DICTIONARY_VALUES:
        return []
    return out


def _fill(stored: pa.Array | None, inherited: pa.Array | None, n: int) -> pa.Array:
    if stored is not None:
        stored = stored.cast(pa.int64())
        if inherited is None or stored.null_count == 0:
            return stored
        return pc.coalesce(stored, inherited)
    return inherited if inherited is not None else pa.nulls(n, pa.int64())


def _column_by_id(wb: pa.RecordBatch, work: Schema, fid: int) -> pa.Array:
    """Column ``fid`` of ``wb``, a field nested in structs taken out of them: null where a
    struct above it is null (the spec: a null parent implies a null leaf)."""
    path = [a.name for a in work.ancestors(fid)] + [work.find_field(fid).name]
    arr: pa.Array = wb.column(path[0])
    for name in path[1:]:
        if not pa.types.is_struct(arr.type):
            raise ValidationError(
                f"equality delete field id {fid} is not a column or a field of structs"
            )
        arr = pc.struct_field(arr, [arr.type.get_field_index(name)])
    return arr
