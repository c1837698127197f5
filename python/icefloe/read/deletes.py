"""Loading the delete files of a scan task into keep-masks (decoded once, cached by path).

Deletion vectors are read from ``content_offset``/``content_size_in_bytes`` alone (no Puffin
footer), position delete files into a :class:`~icefloe.deletes.PositionDeleteIndex` over every
data file they name, equality delete files into Arrow tables whose columns are named by field
id (``"<id>"``), so a column renamed or dropped later in the table still matches.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe import _native
from icefloe._identity_memo import IdentityMemo
from icefloe.arrow_schema import apply_name_mapping, field_id_of, has_field_ids, type_to_arrow
from icefloe.deletes import DeletionVector, EqualityDeleteSet, PositionDeleteIndex
from icefloe.exceptions import CorruptFileError, FileIOError, IcebergError, ValidationError
from icefloe.io import FileIO
from icefloe.name_mapping import NameMapping
from icefloe.read.avro_file import AvroFile, open_avro
from icefloe.read.orc_file import OrcFile, open_orc
from icefloe.read.parquet_file import (
    DECODE_ERRORS,
    WHOLE_FILE_BYTES,
    corrupt_error,
    open_checked,
    open_file,
)
from icefloe.read.projection import project_field
from icefloe.scan.tasks import (
    DELETE_FILE_PATH_ID,
    DELETE_FILE_POS_ID,
    DeleteContent,
    DeleteFileRef,
    FileScanTask,
    ReadOptions,
)
from icefloe.types import NestedField, StructType

__all__ = [
    "DeleteCache",
    "TaskDeletes",
    "dropped_field",
    "equality_field",
    "open_file",
    "preload_position_deletes",
]

#: Fields of equality delete columns worked out once per scan, by read options object.
_FIELDS = IdentityMemo(256)


def dropped_field(
    options: ReadOptions, field_id: int
) -> tuple[NestedField, tuple[str, ...]] | None:
    """The field ``field_id`` that the scan's schema no longer has, as the newest of the
    table's schemas holding it defines it: the top-level field holding it, pruned to the path
    down to it, and the names of that path below the top level (empty for a top-level field).
    None when no schema of ``options.schemas`` holds it. Worked out once per scan."""
    return _FIELDS.get((options,), ("dropped", field_id), partial(_dropped, options, field_id))


def _dropped(options: ReadOptions, field_id: int) -> tuple[NestedField, tuple[str, ...]] | None:
    for schema in sorted(options.schemas, key=lambda s: s.schema_id, reverse=True):
        if field_id not in schema.field_ids:
            continue
        chain = [*schema.ancestors(field_id), schema.find_field(field_id)]
        field = chain[-1]
        for parent in reversed(chain[:-1]):
            if not isinstance(parent.field_type, StructType):
                raise ValidationError(
                    f"equality delete field id {field_id} is not a column or a field of structs"
                )
            field = dataclasses.replace(parent, field_type=StructType(field))
        return field, tuple(f.name for f in chain[1:])
    return None


def equality_field(options: ReadOptions, field_id: int) -> NestedField | None:
    """The field an equality delete column ``field_id`` is compared as: the scan schema's, or
    for a field it no longer has, the one :func:`dropped_field` finds (None: neither)."""
    if field_id in options.schema.field_ids:
        return options.schema.find_field(field_id)
    found = dropped_field(options, field_id)
    if found is None:
        return None
    field = found[0]
    for _ in found[1]:
        assert isinstance(field.field_type, StructType)
        field = field.field_type.fields[0]
    return field


def _equality_fields(
    options: ReadOptions, ids: set[int]
) -> tuple[dict[str, NestedField], tuple[tuple[str, str], ...]]:
    """The fields of equality delete columns ``ids`` (see :func:`equality_field`) by column
    name (the id as text), and their names and types; worked out once per scan."""

    def build() -> tuple[dict[str, NestedField], tuple[tuple[str, str], ...]]:
        fields = {}
        for fid in sorted(ids):
            field = equality_field(options, fid)
            if field is not None:
                fields[str(fid)] = field
        return fields, tuple((k, str(f.field_type)) for k, f in fields.items())

    return _FIELDS.get((options,), ("fields", frozenset(ids)), build)


def _converted(src: pa.DataType, target: pa.DataType) -> bool:
    """Whether a delete file's key column of Arrow type ``src`` is converted to the table's
    ``target`` before matching: timestamps and times of another unit (ORC stores timestamps
    in nanoseconds, some Parquet writers in milliseconds) and times stored as integers (ORC
    stores an Iceberg time as a long of microseconds), as their data files are read."""
    if src == target:
        return False
    if pa.types.is_timestamp(target):
        return bool(pa.types.is_timestamp(src))
    if pa.types.is_time(target):
        return bool(pa.types.is_time(src) or pa.types.is_integer(src))
    return False


def _as_table_types(table: pa.Table, fields: dict[str, NestedField], path: str) -> pa.Table:
    """``table`` (equality delete columns named by field id) with the columns whose type
    :func:`_converted` says converted to the table's type, by the rules data files are read
    with (exact conversions only: a value the table's type cannot hold is refused)."""
    for i, f in enumerate(table.schema):
        field = fields.get(f.name)
        if field is None:
            continue
        target = type_to_arrow(field.field_type)
        if not _converted(f.type, target):
            continue
        key = dataclasses.replace(field, required=False, initial_default=None)
        col = project_field(table.column(i), key, table.num_rows, path, {})
        table = table.set_column(i, pa.field(f.name, target, f.nullable), col)
    return table


class DeleteCache:
    """A small LRU of decoded delete files keyed by path (and blob offset for DVs).

    Thread-safe: tasks read in parallel share one cache, and a delete file wanted by several
    threads at once is loaded by one of them while the others wait for it. Small facts read
    from delete file footers (which data file a position delete file names) are kept in
    ``footers``, a separate, larger LRU, so they never evict decoded deletes.
    """

    def __init__(self, capacity: int = 64, footer_capacity: int | None = 4096) -> None:
        self.capacity = capacity
        self._items: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[Any, threading.Lock] = {}
        self.loads = 0
        self.footers = (
            self if footer_capacity is None else DeleteCache(footer_capacity, footer_capacity=None)
        )

    def __contains__(self, key: Any) -> bool:
        with self._lock:
            return key in self._items

    def get(self, key: Any, load: Callable[[], Any]) -> Any:
        """The cached value of ``key``, loading (and caching) it on a miss."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            key_lock = self._loading.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key]
            try:
                value = load()
            except BaseException:
                with self._lock:
                    self._loading.pop(key, None)
                raise
            with self._lock:
                self.loads += 1
                self._items[key] = value
                if len(self._items) > self.capacity:
                    self._items.popitem(last=False)
                self._loading.pop(key, None)
            return value


#: The largest deletion vector blob read (Java's ``BaseDeleteLoader`` refuses DVs over 2 GB).
MAX_DV_BYTES = 2**31 - 1
_INT64_MAX = 2**63 - 1


def _check_dv_entry(d: DeleteFileRef) -> None:
    """Refuses, before any read, a DV entry whose ``content_offset`` /
    ``content_size_in_bytes`` / ``record_count`` cannot locate or describe a blob (as Java's
    ``BaseDeleteLoader.validateDV``); a range past the end of the file when its size is known."""
    offset, size, count = d.content_offset, d.content_size_in_bytes, d.record_count
    problem = None
    if not isinstance(offset, int) or not 0 <= offset <= _INT64_MAX:
        problem = f"content_offset {offset!r} is not a position in the file"
    elif not isinstance(size, int) or not 0 < size <= MAX_DV_BYTES:
        problem = f"content_size_in_bytes {size!r} is not from 1 to {MAX_DV_BYTES}"
    elif d.file_size_in_bytes and offset + size > d.file_size_in_bytes:
        problem = (
            f"the blob at offset {offset} length {size} lies outside the file "
            f"({d.file_size_in_bytes} bytes)"
        )
    elif not isinstance(count, int) or not 0 <= count <= _INT64_MAX:
        problem = f"record_count {count!r} is not a count of deleted rows"
    if problem is not None:
        raise CorruptFileError(f"{d.file_path}: invalid deletion vector entry: {problem}")


def _read_dv(io: FileIO, d: DeleteFileRef) -> DeletionVector:
    _check_dv_entry(d)
    assert d.content_offset is not None and d.content_size_in_bytes is not None
    try:
        with io.new_input(d.file_path).open() as f:
            f.seek(d.content_offset)
            blob = f.read(d.content_size_in_bytes)
    except IcebergError:
        raise
    except OSError as e:
        raise FileIOError(f"cannot read deletion vector from {d.file_path}: {e}") from e
    if len(blob) != d.content_size_in_bytes:
        raise CorruptFileError(
            f"{d.file_path}: deletion vector at offset {d.content_offset} is truncated "
            f"({len(blob)} of {d.content_size_in_bytes} bytes)"
        )
    try:
        return DeletionVector.from_blob(blob, d.record_count)
    except IcebergError as e:
        raise type(e)(f"{d.file_path} (offset {d.content_offset}): {e}") from e


def _check_rows(
    path: str, what: str, rows: int, file_rows: int, record_count: int | None = None
) -> None:
    """Refuses a delete file that decoded to another number of rows than its footer (or
    header) says, or than its manifest entry's ``record_count`` (when known: above 0). A
    damaged page header can decode to no rows at all without any error, and every delete of
    the file would be lost silently (and made permanent by a compaction)."""
    if rows != file_rows:
        raise CorruptFileError(
            f"{path}: {what} file decoded to {rows} rows, the file says {file_rows}"
        )
    _check_record_count(path, what, rows, record_count)


def _check_record_count(path: str, what: str, rows: int, record_count: int | None) -> None:
    """Refuses a delete file of ``rows`` rows whose manifest entry says another
    ``record_count`` (0 or None: not known)."""
    if record_count is not None and record_count > 0 and rows != record_count:
        raise CorruptFileError(
            f"{path}: {what} file holds {rows} rows, its manifest entry's record_count "
            f"says {record_count}"
        )


def _equality_ids(d: DeleteFileRef) -> tuple[int, ...]:
    """The equality ids of ``d`` once each, in order: Java projects them as a set, so an entry
    listing an id twice deletes as if it listed it once."""
    return tuple(dict.fromkeys(d.equality_ids))


def _columns_by_id(schema: pa.Schema, mapping: NameMapping | None) -> dict[int, str]:
    if mapping is not None and not has_field_ids(schema):
        schema = apply_name_mapping(schema, mapping)
    out: dict[int, str] = {}
    for f in schema:
        fid = field_id_of(f)
        if fid is not None:
            out[fid] = f.name
    return out


def _equality_columns(schema: pa.Schema, mapping: NameMapping | None) -> dict[int, tuple[str, ...]]:
    """The path of names to each column of ``schema`` an equality delete can name, by field
    id: top-level columns and fields of structs at any depth (never inside a list or a map,
    where the spec allows no equality column)."""
    if mapping is not None and not has_field_ids(schema):
        schema = apply_name_mapping(schema, mapping)
    out: dict[int, tuple[str, ...]] = {}

    def walk(fields: Sequence[pa.Field], prefix: tuple[str, ...]) -> None:
        for f in fields:
            path = (*prefix, f.name)
            fid = field_id_of(f)
            if fid is not None:
                out.setdefault(fid, path)
            if pa.types.is_struct(f.type):
                walk([f.type.field(i) for i in range(f.type.num_fields)], path)

    walk(list(schema), ())
    return out


def _key_columns(
    path: str,
    read: Callable[[list[str]], pa.Table],
    eq_ids: Sequence[int],
    by_id: dict[int, tuple[str, ...]],
) -> pa.Table:
    """The ``eq_ids`` columns of a delete file, named by field id, from ``read`` (which reads
    the named top-level columns). A field nested in structs is taken out of them, null where
    any struct above it is null (the spec: a null parent implies a null leaf). The columns
    carry no schema or field metadata: a damaged one (a key that is not UTF-8) must not reach
    the native sets."""
    missing = [i for i in eq_ids if i not in by_id]
    if missing:
        raise ValidationError(
            f"equality delete file {path} has no column for equality ids {missing}"
        )
    tops = list(dict.fromkeys(by_id[i][0] for i in eq_ids))
    table = read(tops)
    fields: list[pa.Field] = []
    columns: list[pa.ChunkedArray] = []
    for i in eq_ids:
        top, *inner = by_id[i]
        col = table.column(tops.index(top))
        field = table.schema.field(tops.index(top))
        for name in inner:
            index = field.type.get_field_index(name)
            field = field.type.field(index)
            col = pc.struct_field(col, [index])
        fields.append(pa.field(str(i), field.type, field.nullable or bool(inner)))
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def _single_data_file(pf: pq.ParquetFile, path_col: str) -> str | None:
    """The one data file every row of a position delete file names, when the ``file_path``
    column statistics prove it (no nulls, and min equal to max in every row group); else None.
    The common case (one delete file per data file) then reads only ``pos``."""
    meta = pf.metadata
    if meta.num_row_groups == 0:
        return None
    leaf = next(
        (i for i in range(meta.num_columns) if meta.schema.column(i).path == path_col), None
    )
    if leaf is None:
        return None
    value: bytes | None = None
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        st = rg.column(leaf).statistics
        if (
            st is None
            or not st.has_min_max
            or not st.has_null_count
            or st.null_count != 0
            or st.min_raw != st.max_raw
            or (value is not None and st.min_raw != value)
        ):
            return None
        value = st.min_raw
    if value is None:
        return None
    try:
        return value.decode() if isinstance(value, bytes) else str(value)
    except UnicodeDecodeError:
        return None


def _open_positions(
    io: FileIO, path: str, dictionary_paths: bool = False
) -> tuple[pq.ParquetFile, str, str]:
    """A position delete file opened (footer checked), with its ``file_path`` and ``pos``
    column names. With ``dictionary_paths`` its ``file_path`` column reads as an Arrow
    dictionary: a file naming many data files repeats a few paths, which are then decoded
    once each instead of once per row (ten times faster for a million rows)."""
    checked = open_checked(io, path)
    ids = _columns_by_id(checked.schema, None)
    names = checked.schema.names
    path_col = ids.get(DELETE_FILE_PATH_ID, "file_path" if "file_path" in names else None)
    pos_col = ids.get(DELETE_FILE_POS_ID, "pos" if "pos" in names else None)
    if path_col is None or pos_col is None:
        raise ValidationError(f"position delete file {path} lacks file_path/pos columns")
    if not dictionary_paths:
        return checked.file, path_col, pos_col
    try:
        pf = pq.ParquetFile(
            checked.source,
            read_dictionary=[path_col],
            metadata=checked.file.metadata,
            page_checksum_verification=True,
        )
    except DECODE_ERRORS as e:
        raise corrupt_error(path, e) from e
    return pf, path_col, pos_col


def _position_target(
    io: FileIO, d: DeleteFileRef, data_path: str, cache: DeleteCache
) -> tuple[str | None]:
    """From the footer alone: ``(data file,)`` when the statistics prove that every row of the
    position delete file names that one data file, else ``(None,)``. Cheap (no column is
    decoded), so a task whose delete files each name another data file skips them unread.
    When the file names ``data_path`` (the task asking), its positions are read in the same
    open and cached for :func:`_read_single_file_positions`."""
    pf, path_col, pos_col = _open_positions(io, d.file_path)
    try:
        target = _single_data_file(pf, path_col)
    except DECODE_ERRORS as e:
        raise corrupt_error(d.file_path, e) from e
    if target is not None and target == data_path:
        _check_entry_rows(pf, d)
        dv = _positions(pf, pos_col, d.file_path)
        cache.get(("pos-single", d.file_path), lambda: dv)
    return (target,)


def _read_single_file_positions(io: FileIO, d: DeleteFileRef) -> DeletionVector:
    """The positions of a position delete file whose rows all name one data file (read by its
    ``pos`` column alone)."""
    pf, _, pos_col = _open_positions(io, d.file_path)
    _check_entry_rows(pf, d)
    return _positions(pf, pos_col, d.file_path)


def _check_entry_rows(pf: pq.ParquetFile, d: DeleteFileRef) -> None:
    """Refuses a position delete file whose footer counts other rows than its manifest entry
    (:func:`_positions` then checks the rows decoded against the footer)."""
    _check_record_count(d.file_path, "position delete", pf.metadata.num_rows, d.record_count)


def _positions(pf: pq.ParquetFile, pos_col: str, path: str) -> DeletionVector:
    try:
        positions = pf.read(columns=[pos_col], use_threads=False).column(0)
    except DECODE_ERRORS as e:
        raise CorruptFileError(f"{path}: cannot read position deletes: {e}") from e
    if len(positions) != pf.metadata.num_rows:
        # one column read alone has nothing to check its length against: a damaged page
        # header can give no values at all, and every delete of the file would be lost
        raise CorruptFileError(
            f"{path}: position delete column holds {len(positions)} values for "
            f"{pf.metadata.num_rows} rows"
        )
    if positions.null_count:
        raise ValidationError(f"position delete file {path} has null positions")
    return DeletionVector.from_positions(positions)


def _read_position_deletes(io: FileIO, d: DeleteFileRef) -> PositionDeleteIndex:
    """Every (data file, positions) of a position delete file."""
    pf, path_col, pos_col = _open_positions(io, d.file_path, dictionary_paths=True)
    index = PositionDeleteIndex()
    rows = 0
    try:
        for batch in pf.iter_batches(columns=[path_col, pos_col], batch_size=1 << 20):
            rows += batch.num_rows
            index.add(
                pa.RecordBatch.from_arrays(
                    [batch.column(0), batch.column(1)], names=["file_path", "pos"]
                )
            )
    except DECODE_ERRORS as e:
        raise CorruptFileError(f"{d.file_path}: cannot read position deletes: {e}") from e
    _check_rows(d.file_path, "position delete", rows, pf.metadata.num_rows, d.record_count)
    return index


def _read_referenced_positions(io: FileIO, d: DeleteFileRef) -> DeletionVector | None:
    """The positions of a position delete file whose manifest entry names one data file, in
    one open: None when its ``file_path`` statistics do not prove that every row names it."""
    pf, path_col, pos_col = _open_positions(io, d.file_path)
    try:
        target = _single_data_file(pf, path_col)
    except DECODE_ERRORS as e:
        raise corrupt_error(d.file_path, e) from e
    if target != d.referenced_data_file:
        return None
    _check_entry_rows(pf, d)
    return _positions(pf, pos_col, d.file_path)


def preload_position_deletes(
    io: FileIO, tasks: Sequence[FileScanTask], cache: DeleteCache, threads: int
) -> None:
    """Decodes into ``cache``, in Rust and in parallel, the local position delete files of
    ``tasks`` whose manifest entry names the task's data file (the common v2 layout), so the
    tasks' :meth:`TaskDeletes.load` finds them decoded. A file the native reader does not
    prove to name only that data file is left for the load to read as usual."""
    keys, paths, targets, counts = [], [], [], []
    for task in tasks:
        data_path = task.data_file.file_path
        for d in task.delete_files:
            if (
                d.content is DeleteContent.POSITION_DELETES
                and d.referenced_data_file == data_path
                and not d.is_deletion_vector
                and d.file_format.lower() == "parquet"
            ):
                key = ("pos-referenced", d.file_path)
                local = io.local_path(d.file_path)
                if local is not None and key not in cache:
                    keys.append(key)
                    paths.append(local)
                    targets.append(data_path)
                    counts.append(d.record_count)
    if not keys:
        return
    # a file whose rows differ from its entry's count is left to the load, which names it
    found = _native.parquet_read_position_deletes(paths, targets, threads, counts)
    for key, bitmap in zip(keys, found, strict=True):
        if bitmap is not None:
            cache.get(key, partial(DeletionVector, bitmap))


def _position_deletes_of(
    io: FileIO, d: DeleteFileRef, data_path: str, cache: DeleteCache
) -> DeletionVector | None:
    """The positions that the position delete file ``d`` deletes from ``data_path``."""
    if d.referenced_data_file == data_path:
        # The common case (one delete file per data file, named in the manifest): footer check
        # and positions in one open of the file.
        found: DeletionVector | None = cache.get(
            ("pos-referenced", d.file_path), partial(_read_referenced_positions, io, d)
        )
        if found is not None:
            return found
    (target,) = cache.footers.get(
        ("pos-target", d.file_path), partial(_position_target, io, d, data_path, cache)
    )
    if target is not None:
        if target != data_path:
            return None
        dv: DeletionVector = cache.get(
            ("pos-single", d.file_path), partial(_read_single_file_positions, io, d)
        )
        return dv
    index: PositionDeleteIndex = cache.get(
        ("pos", d.file_path), partial(_read_position_deletes, io, d)
    )
    return index.get(data_path)


def _read_equality_deletes(
    io: FileIO, d: DeleteFileRef, mapping: NameMapping | None, cache: DeleteCache
) -> pa.Table:
    """The equality columns of ``d``, named by field id.

    A small file is read whole first: a delete whose keys do not determine the partition
    writes the same bytes to a file in every partition, and a file whose bytes equal one
    decoded before (for the same equality ids) gets that file's table without a decode."""
    eq_ids = _equality_ids(d)
    handle = open_file(io, d.file_path, d.file_size_in_bytes or None)
    same: list[tuple[pa.Buffer, pa.Table]] | None = None
    try:
        size = handle.size()
        if size <= WHOLE_FILE_BYTES:
            handle.seek(0)
            data = handle.read_buffer(size)
            handle.close()
            handle = pa.BufferReader(data)
            # The footer's end tells most different files apart; the bytes decide.
            tail = data.slice(max(0, size - 64)).to_pybytes()
            same = cache.get(("eq-bytes", eq_ids, size, tail), list)
            for seen, table in list(same):
                if seen.equals(data):
                    # the same bytes decoded and checked before: only the entry is new
                    _check_record_count(
                        d.file_path, "equality delete", table.num_rows, d.record_count
                    )
                    return table
    except OSError as e:
        handle.close()
        raise FileIOError(f"cannot read {d.file_path}: {e}") from e
    checked = open_checked(io, d.file_path, handle=handle)
    pf = checked.file

    def read(names: list[str]) -> pa.Table:
        try:
            table = pf.read(columns=names)
        except DECODE_ERRORS as e:
            raise CorruptFileError(f"{d.file_path}: cannot read equality deletes: {e}") from e
        _check_rows(
            d.file_path, "equality delete", table.num_rows, pf.metadata.num_rows, d.record_count
        )
        return table

    table = _key_columns(d.file_path, read, eq_ids, _equality_columns(checked.schema, mapping))
    if same is not None:
        same.append((data, table))
    return table


def _open_whole(io: FileIO, d: DeleteFileRef) -> OrcFile | AvroFile:
    """The ORC or Avro delete file ``d``, opened to be read whole."""
    size = d.file_size_in_bytes or None
    if d.file_format == "avro":
        return open_avro(io, d.file_path, size)
    return open_orc(io, d.file_path, size)


def _read_whole_position_deletes(io: FileIO, d: DeleteFileRef) -> PositionDeleteIndex:
    """Every (data file, positions) of an ORC or Avro position delete file."""
    f = _open_whole(io, d)
    ids = _columns_by_id(f.schema, None)
    names = f.schema.names
    path_col = ids.get(DELETE_FILE_PATH_ID, "file_path" if "file_path" in names else None)
    pos_col = ids.get(DELETE_FILE_POS_ID, "pos" if "pos" in names else None)
    if path_col is None or pos_col is None:
        raise ValidationError(f"position delete file {d.file_path} lacks file_path/pos columns")
    index = PositionDeleteIndex()
    table = f.read([path_col, pos_col])
    _check_rows(d.file_path, "position delete", table.num_rows, f.num_rows, d.record_count)
    for batch in table.to_batches():
        index.add(
            pa.RecordBatch.from_arrays(
                [batch.column(0), batch.column(1)], names=["file_path", "pos"]
            )
        )
    return index


def _read_whole_eq(
    io: FileIO, d: DeleteFileRef, mapping: NameMapping | None, cache: DeleteCache
) -> pa.Table:
    """The equality columns of the ORC or Avro equality delete file ``d``, by field id."""
    f = _open_whole(io, d)

    def read(names: list[str]) -> pa.Table:
        table = f.read(names)
        _check_rows(d.file_path, "equality delete", table.num_rows, f.num_rows, d.record_count)
        return table

    return _key_columns(d.file_path, read, _equality_ids(d), _equality_columns(f.schema, mapping))


def _content_key(table: pa.Table) -> tuple[Any, ...]:
    """A cheap summary of an equality delete table: equal tables have equal summaries."""
    n = table.num_rows
    ends = table.slice(0, 1).to_pylist() + table.slice(n - 1, 1).to_pylist() if n else []
    return (tuple(table.column_names), tuple(str(t) for t in table.schema.types), n, repr(ends))


def _shared_equality_set(
    cache: DeleteCache, tables: list[pa.Table], paths: Sequence[str]
) -> EqualityDeleteSet:
    """The equality delete set of ``tables``, shared with an earlier set of equal tables.

    A delete whose keys do not determine the partition writes the same keys to a file in every
    partition (an equality delete applies only within its own): those files are read one by
    one, but hashed once. Equal summaries are only candidates; the tables are compared.

    Files written before and after a v3 date -> timestamp promotion hold the column as dates
    and as timestamps: the dates are taken as the midnight of their day."""
    tables = _dates_as_timestamps(tables)
    entries: list[tuple[list[pa.Table], EqualityDeleteSet]] = cache.get(
        ("eq-content", tuple(_content_key(t) for t in tables)), list
    )
    for seen, found in list(entries):
        if all(a is b or a.equals(b) for a, b in zip(seen, tables, strict=True)):
            return found
    built = EqualityDeleteSet()
    for t, path in zip(tables, paths, strict=True):
        try:
            built.add(t)
        except IcebergError:
            raise
        except DECODE_ERRORS as e:
            raise CorruptFileError(f"{path}: cannot hash equality deletes: {e}") from e
    entries.append((tables, built))
    return built


_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}
_LONG_MAX = 2**63 - 1


def _dates_as_timestamps(tables: list[pa.Table]) -> list[pa.Table]:
    """``tables`` with date columns that other tables hold as timestamps (the same field
    before and after a promotion) turned into timestamps at midnight; a date no timestamp of
    that unit can hold leaves the table (it can match no row)."""
    if len(tables) < 2:
        return tables
    stamps: dict[str, pa.DataType] = {}
    for t in tables:
        for f in t.schema:
            if pa.types.is_timestamp(f.type):
                stamps.setdefault(f.name, f.type)
    if not stamps:
        return tables
    out = []
    for t in tables:
        for name, target in stamps.items():
            i = t.schema.get_field_index(name)
            if i < 0 or not pa.types.is_date32(t.schema.field(i).type):
                continue
            day = _DAY[target.unit]
            days = t.column(i).cast(pa.int32()).cast(pa.int64())
            fits = pc.or_kleene(pc.is_null(days), pc.less_equal(pc.abs(days), _LONG_MAX // day))
            if not pc.all(fits).as_py():
                t = t.filter(fits)
                days = t.column(i).cast(pa.int32()).cast(pa.int64())
            stamp = pc.multiply(days, day).cast(target)
            t = t.set_column(i, t.schema.field(i).with_type(target), stamp)
        out.append(t)
    return out


class TaskDeletes:
    """The deletes of one data file: merged positions and an equality delete set."""

    __slots__ = ("equality", "equality_ids", "positions")

    def __init__(
        self,
        positions: DeletionVector | None,
        equality: EqualityDeleteSet | None,
        equality_ids: tuple[int, ...],
    ) -> None:
        self.positions = positions
        self.equality = equality
        self.equality_ids = equality_ids

    @property
    def empty(self) -> bool:
        return self.positions is None and self.equality is None

    @staticmethod
    def load(
        io: FileIO,
        data_path: str,
        delete_files: Sequence[DeleteFileRef],
        cache: DeleteCache,
        mapping: NameMapping | None,
        options: ReadOptions | None = None,
    ) -> TaskDeletes:
        """Reads (or takes from ``cache``) every delete file of the task. With ``options``
        (the scan's), equality delete columns stored as another unit of time or timestamp
        than the table's (see :func:`_converted`) are converted to the table's type."""
        positions: DeletionVector | None = None
        eq_files: list[DeleteFileRef] = []
        for d in delete_files:
            if d.content is DeleteContent.EQUALITY_DELETES:
                eq_files.append(d)
                continue
            if d.is_deletion_vector:
                if d.referenced_data_file not in (None, data_path):
                    raise ValidationError(
                        f"deletion vector {d.file_path} references {d.referenced_data_file}, "
                        f"not {data_path}"
                    )
                dv = cache.get(("dv", d.file_path, d.content_offset), partial(_read_dv, io, d))
            elif d.file_format in ("orc", "avro"):
                index: PositionDeleteIndex = cache.get(
                    ("pos-whole", d.file_path), partial(_read_whole_position_deletes, io, d)
                )
                found = index.get(data_path)
                if found is None:
                    continue
                dv = found
            elif d.file_format == "parquet":
                found = _position_deletes_of(io, d, data_path, cache)
                if found is None:
                    continue
                dv = found
            else:
                raise ValidationError(
                    f"position delete file {d.file_path} has unsupported format {d.file_format}"
                )
            positions = dv if positions is None else positions.union(dv)
        equality: EqualityDeleteSet | None = None
        eq_ids: set[int] = set()
        if eq_files:
            for d in eq_files:
                eq_ids.update(_equality_ids(d))
            fields, types = ({}, ()) if options is None else _equality_fields(options, eq_ids)
            # the types keys are converted to belong to the set (another scan's may differ)
            key = ("eqset", tuple(sorted(d.file_path for d in eq_files)), types)

            def build() -> EqualityDeleteSet:
                tables = []
                for d in eq_files:
                    if d.file_format not in ("parquet", "orc", "avro"):
                        raise ValidationError(
                            f"equality delete file {d.file_path} has unsupported format "
                            f"{d.file_format}"
                        )
                    read = _read_equality_deletes if d.file_format == "parquet" else _read_whole_eq
                    table = cache.get(("eq", d.file_path), partial(read, io, d, mapping, cache))
                    tables.append(_as_table_types(table, fields, d.file_path))
                return _shared_equality_set(cache, tables, [d.file_path for d in eq_files])

            equality = cache.get(key, build)
        return TaskDeletes(positions, equality, tuple(sorted(eq_ids)))
