"""Opening a Parquet file defensively: footer checked, page checksums verified, errors typed.

The footer is read once and checked in Rust (:func:`icefloe._native.parquet_check_footer`)
before pyarrow builds any column-chunk metadata from it: pyarrow aborts the process on some
malformed footers (``RowGroupMetaData.column`` does not catch the C++ exception). The check
returns the page offsets of every column chunk, so the reader never needs ``column()`` for
them; statistics are read through pyarrow only after the check passed. Data pages are read with
CRC verification (icefloe writes page checksums). Every failure is a
:class:`~icefloe.exceptions.CorruptFileError` or :class:`~icefloe.exceptions.FileIOError`
naming the file (an :class:`~icefloe.exceptions.UnsupportedFeatureError` for a schema nested
deeper than pyarrow's Parquet reader opens).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from icefloe import _native
from icefloe.arrow_schema import FIELD_IDS_DIGEST_KEY, field_ids_digest
from icefloe.exceptions import (
    CorruptFileError,
    FileIOError,
    IcebergError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.io import FileIO, file_io_error, is_io_failure
from icefloe.nesting import MAX_PARQUET_LEVELS
from icefloe.schema import Schema, walk_fields
from icefloe.types import NestedField, StructType, TimestampNanoType, TimestamptzNanoType

__all__ = ["CheckedParquetFile", "corrupt_error", "open_checked", "open_file", "open_parquet"]

_MAGIC = b"PAR1"
#: Bytes read from the end of a file in one request (most footers fit).
_TAIL = 64 * 1024
#: A file at most this large is read whole, in one request: the footer is checked from those
#: bytes and pyarrow decodes from memory (parsing the footer itself), instead of the footer
#: being read, checked and parsed into a separate ``FileMetaData`` first (about 0.15 ms a
#: file, most of the cost of opening the small files of a finely partitioned table).
WHOLE_FILE_BYTES = 1024 * 1024
#: Exceptions pyarrow raises on bytes that are not what they claim (UnicodeDecodeError comes
#: from column names or key-value metadata that are not UTF-8), and on failures to read them
#: (an ``OSError`` too: :func:`corrupt_error` tells them apart).
DECODE_ERRORS = (pa.ArrowException, OSError, UnicodeDecodeError, ValueError, IndexError)
#: What pyarrow's Parquet reader says of a schema nested deeper than it opens.
_TOO_DEEP = "Parquet schema too deeply nested"


def corrupt_error(
    path: str, e: BaseException
) -> CorruptFileError | FileIOError | UnsupportedFeatureError:
    """``e`` raised while decoding ``path`` as the typed error naming the file: a failure to
    read it (network, timeout, an error the store answered, ``EIO``) is a
    :class:`FileIOError`, a valid schema nested deeper than pyarrow's Parquet reader opens an
    :class:`UnsupportedFeatureError`, bytes that do not decode a :class:`CorruptFileError`."""
    if isinstance(e, OSError) and _TOO_DEEP in str(e):
        return UnsupportedFeatureError(
            f"cannot read Parquet file {path}: its schema nests more than {MAX_PARQUET_LEVELS} "
            "levels deep, and pyarrow's Parquet reader opens no such file, whichever of its "
            "columns are read"
        )
    if is_io_failure(e):
        return file_io_error(e, path, "read")
    return CorruptFileError(f"cannot read Parquet file {path}: {type(e).__name__}: {e}")


@dataclass(frozen=True)
class CheckedParquetFile:
    """An open Parquet file and the facts of its checked footer."""

    file: pq.ParquetFile
    #: Per row group: (row count, data page offset per leaf, dictionary page offset or -1).
    row_groups: list[tuple[int, list[int], list[int]]]
    #: What ``file`` reads from (the file, or its bytes in memory): pass it to reopen.
    source: pa.NativeFile
    #: ``file.schema_arrow`` (each call of which converts the Parquet schema again).
    schema: pa.Schema

    def chunk_start(self, group: int, leaf: int) -> int:
        """Where the pages of a column chunk start (its dictionary page, if any)."""
        _, data, dicts = self.row_groups[group]
        return min(data[leaf], dicts[leaf]) if dicts[leaf] > 0 else data[leaf]


#: Schemas whose field ids matched their stored digest, by digest: the files of one write
#: share a schema, so the digest is computed once per schema instead of once per file.
_VERIFIED: OrderedDict[bytes, pa.Schema] = OrderedDict()
_VERIFIED_LOCK = threading.Lock()
_VERIFIED_SIZE = 64


def _check_field_ids(pf: pq.ParquetFile, schema: pa.Schema, path: str) -> None:
    """Compares the field ids with the digest icefloe wrote (files of other writers have none)."""
    kv = pf.metadata.metadata or {}
    stored = kv.get(FIELD_IDS_DIGEST_KEY.encode())
    if stored is None:
        return
    with _VERIFIED_LOCK:
        seen = _VERIFIED.get(stored)
    # equal with their metadata (field ids included) and nullability: the same digest
    if seen is not None and seen.equals(schema, check_metadata=True):
        return
    if stored.decode(errors="replace") != field_ids_digest(schema):
        raise CorruptFileError(
            f"{path}: the field ids in the footer do not match their checksum "
            f"({FIELD_IDS_DIGEST_KEY})"
        )
    with _VERIFIED_LOCK:
        _VERIFIED[stored] = schema
        _VERIFIED.move_to_end(stored)
        while len(_VERIFIED) > _VERIFIED_SIZE:
            _VERIFIED.popitem(last=False)


def _read_footer(handle: pa.NativeFile, path: str) -> bytes:
    size = handle.size()
    if size < 12:
        raise CorruptFileError(f"{path} is not a Parquet file: {size} bytes")
    start = max(0, size - _TAIL)
    handle.seek(start)
    # a buffer (a slice, not a copy, of a file read into memory): only the footer is copied
    tail = memoryview(handle.read_buffer(size - start))
    if tail[-4:] != _MAGIC:
        raise CorruptFileError(f"{path} is not a Parquet file: no magic at the end")
    length = int.from_bytes(tail[-8:-4], "little")
    if length + 12 > size:
        raise CorruptFileError(f"{path}: footer length {length} exceeds the file ({size} bytes)")
    if length + 8 > len(tail):
        handle.seek(size - length - 8)
        tail = memoryview(handle.read_buffer(length + 8))
    return bytes(tail[-length - 8 : -8])


def open_file(io: FileIO, path: str, size: int | None = None) -> pa.NativeFile:
    """Opens a file for random access (``size`` from the manifest saves object stores a
    request), mapping IO errors to typed errors naming it."""
    try:
        return io.new_input(path).open(size=size)
    except IcebergError:
        raise
    except OSError as e:
        raise FileIOError(f"cannot open {path}: {e}") from e


def open_checked(
    io: FileIO,
    path: str,
    read_dictionary: list[str] | None = None,
    metadata: pq.FileMetaData | None = None,
    size: int | None = None,
    handle: pa.NativeFile | None = None,
    int96_unit: str = "us",
) -> CheckedParquetFile:
    """Opens ``path`` after checking its footer and field ids. ``metadata``, if given, comes
    from an earlier ``open_checked`` of the same file: it is reused, and neither is re-checked.
    ``read_dictionary`` columns read as Arrow dictionaries; ``size`` from the manifest saves
    object stores a request; ``handle`` reuses an open file. INT96 timestamps (old Spark, Hive,
    Impala files) read in ``int96_unit`` (see :func:`int96_unit`)."""
    if handle is None:
        handle = open_file(io, path, size)
    reopened = metadata is not None  # opened and checked before: the footer is the same
    source = handle
    try:
        if metadata is None:
            length = handle.size()
            whole = None
            if length <= WHOLE_FILE_BYTES:
                handle.seek(0)
                whole = handle.read(length)
                source = pa.BufferReader(whole)
            footer = _read_footer(source, path)
            groups = _native.parquet_check_footer(footer)
            # page headers have no checksum: a damaged value count would shift a column's
            # values to other rows in pyarrow's decoders, silently
            if whole is not None:
                _native.parquet_check_page_counts(footer, data=whole)
            elif (local := _local_path(io, path)) is not None:
                _native.parquet_check_page_counts(footer, path=local)
            if source is handle:
                shell = _MAGIC + footer + len(footer).to_bytes(4, "little") + _MAGIC
                metadata = pq.read_metadata(pa.BufferReader(shell))
            # else pyarrow parses the checked footer from the bytes in memory
        else:
            groups = []
        pf = pq.ParquetFile(
            source,
            read_dictionary=read_dictionary,
            metadata=metadata,
            page_checksum_verification=True,
            coerce_int96_timestamp_unit=int96_unit,
        )
        # Decoding the schema reads column names and metadata (UTF-8 errors surface here).
        schema = pf.schema_arrow
        if not reopened:
            _check_field_ids(pf, schema, path)
            check_size(handle, path, size)
    except IcebergError as e:
        handle.close()
        if isinstance(e, CorruptFileError) and path not in str(e):
            raise CorruptFileError(f"{path}: {e}") from e
        raise
    except DECODE_ERRORS as e:
        handle.close()
        raise corrupt_error(path, e) from e
    return CheckedParquetFile(pf, groups, source, schema)


def check_size(handle: pa.NativeFile, path: str, size: int | None) -> None:
    """Refuses a data file whose length is not the ``size`` its manifest entry says (None or
    0: not known): another file put in its place, whose rows are not the table's."""
    length = handle.size()
    if size and length != size:
        raise CorruptFileError(f"{path} is {length} bytes, its manifest entry says {size}")


def _local_path(io: FileIO, path: str) -> str | None:
    """The file-system path of ``path`` when it is on a local disk."""
    try:
        fs, local = io.resolve(path)
    except IcebergError:
        return None
    return local if isinstance(fs, pafs.LocalFileSystem) else None


_NANOS = (TimestampNanoType, TimestamptzNanoType)


def has_nanos(fields: Iterable[NestedField]) -> bool:
    """Whether ``fields`` hold a nanosecond timestamp (at any depth): only then may a file's
    INT96 timestamps be read in nanoseconds (see :func:`int96_unit`)."""
    struct = StructType(*fields)
    return any(isinstance(f.field_type, _NANOS) for _, f in walk_fields(struct))


def _leaf_fields(field: pa.Field) -> list[pa.Field]:
    """The leaf fields of ``field`` in Parquet column order."""
    t = field.type
    if pa.types.is_struct(t):
        return [x for i in range(t.num_fields) for x in _leaf_fields(t.field(i))]
    if pa.types.is_map(t):
        return _leaf_fields(t.key_field) + _leaf_fields(t.item_field)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _leaf_fields(t.value_field)
    return [field]


def _leaf_arrays(arr: pa.Array) -> list[pa.Array]:
    """The leaf values of ``arr`` in Parquet column order (a struct's nulls on its fields)."""
    t = arr.type
    if pa.types.is_struct(t):
        return [x for c in arr.flatten() for x in _leaf_arrays(c)]
    if pa.types.is_map(t):
        return _leaf_arrays(arr.keys) + _leaf_arrays(arr.items)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _leaf_arrays(arr.flatten())
    return [arr]


def int96_unit(
    pf: pq.ParquetFile,
    file_schema: pa.Schema,
    table: Schema,
    path: str,
    tops: Collection[int] | None = None,
) -> str:
    """The unit to read the INT96 timestamps (old Spark, Hive, Impala files) of ``pf`` in, a
    file opened in microseconds whose columns have the field ids of ``file_schema``, only its
    top-level columns ``tops`` read (None: all). Microseconds, Iceberg's unit, unless every
    INT96 column read goes to a nanosecond timestamp of ``table``: then nanoseconds, their
    sub-microsecond digits kept. An INT96 value headed for a nanosecond timestamp that
    nanoseconds cannot hold (outside 1677-09-21 to 2262-04-11) is refused."""
    kinds = pf.metadata.schema
    leaf = 0
    nanos: dict[int, list[tuple[int, int]]] = {}  # top-level column -> (leaf in it, field id)
    micros = False
    for top, f in enumerate(file_schema):
        for k, lf in enumerate(_leaf_fields(f)):
            stored = kinds.column(leaf).physical_type
            leaf += 1
            if stored != "INT96" or (tops is not None and top not in tops):
                continue
            fid = int((lf.metadata or {}).get(b"PARQUET:field_id", -1))
            want = table.find_field(fid).field_type if fid in table.field_ids else None
            if isinstance(want, _NANOS):
                nanos.setdefault(top, []).append((k, fid))
            elif want is not None:
                micros = True
    for top, leaves in nanos.items():
        try:
            values = pf.read(columns=[file_schema.names[top]], use_threads=False).column(0)
        except DECODE_ERRORS as e:
            raise corrupt_error(path, e) from e
        for chunk in values.chunks:
            arrays = _leaf_arrays(chunk)
            for k, fid in leaves:
                got = arrays[k]
                try:
                    pc.cast(got, pa.timestamp("ns", got.type.tz))
                except pa.ArrowInvalid:
                    lo, hi = pc.min_max(got).values()
                    raise ValidationError(
                        f"{path}: column {table.find_column_name(fid)!r} holds INT96 "
                        f"timestamps from {lo} to {hi}, outside 1677-09-21 to 2262-04-11, "
                        "which a nanosecond timestamp cannot hold"
                    ) from None
    return "ns" if nanos and not micros else "us"


def open_parquet(
    io: FileIO,
    path: str,
    read_dictionary: list[str] | None = None,
    metadata: pq.FileMetaData | None = None,
    size: int | None = None,
    handle: pa.NativeFile | None = None,
) -> pq.ParquetFile:
    """:func:`open_checked` without the footer facts."""
    return open_checked(io, path, read_dictionary, metadata, size, handle).file
