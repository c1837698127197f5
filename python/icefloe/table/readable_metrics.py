"""The ``readable_metrics`` column of the file-level metadata tables (``files()``,
``entries()``, ``all_files()``...): a file's column metrics by column name, with its bounds as
values of the column's type, as Java's ``MetricsUtil.readableMetricsSchema`` gives them.

One field per primitive column of the table's current schema, nested ones included (struct
fields, list elements and map keys and values, as ``s.x``, ``l.element``, ``m.key``; variant
columns are not primitive in Java and have none), named by the column's full name and sorted
by name as Java sorts them (UTF-16 code units). Each is a struct of ``column_size``,
``value_count``, ``null_value_count``, ``nan_value_count`` (int64) and ``lower_bound``,
``upper_bound`` (the column's Arrow type), looked up by field id in the file's metric maps.

Bounds are decoded column-wise (no loop over the files): fixed-width values through numpy
views of the bytes, strings by a checked cast, decimals by sign-extending their big-endian
bytes to 16. A bound written before a type promotion is decoded by its length, as the spec
says: 4 bytes under a ``long`` are an ``int``, under a ``double`` a ``float``, under a
timestamp a ``date`` (its first instant). A bound that cannot be read as the column's type (a
length no type of the column has, a string bound that is not UTF-8, a ``fixed`` bound of
another length) is null, as is a metric whose map holds the field id twice.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_schema import type_to_arrow
from icefloe.exceptions import ValidationError
from icefloe.schema import Schema, walk_fields
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    GeographyType,
    GeometryType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
    VariantType,
)

__all__ = ["readable_metrics", "readable_metrics_type"]

#: The count metrics: (readable field, manifest map column).
_COUNTS = (
    ("column_size", "column_sizes"),
    ("value_count", "value_counts"),
    ("null_value_count", "null_value_counts"),
    ("nan_value_count", "nan_value_counts"),
)
_BOUNDS = (("lower_bound", "lower_bounds"), ("upper_bound", "upper_bounds"))
_DAY_US = 86_400_000_000
_DAY_NS = 86_400_000_000_000


def _leaves(schema: Schema) -> list[tuple[str, int, PrimitiveType]]:
    """(full name, field id, type) of each primitive column, sorted by name as Java's
    ``String.compareTo`` (UTF-16 code units)."""
    out = [
        (schema.find_column_name(f.field_id) or f.name, f.field_id, f.field_type)
        for _, f in walk_fields(schema.as_struct())
        if isinstance(f.field_type, PrimitiveType) and not isinstance(f.field_type, VariantType)
    ]
    return sorted(out, key=lambda leaf: leaf[0].encode("utf-16-be"))


def _column_type(t: PrimitiveType) -> pa.StructType:
    bound = type_to_arrow(t)  # (a geometry or geography bound, a point, as a WKB point)
    return pa.struct(
        [
            *(pa.field(name, pa.int64()) for name, _ in _COUNTS),
            *(pa.field(name, bound) for name, _ in _BOUNDS),
        ]
    )


def readable_metrics_type(schema: Schema) -> pa.StructType:
    """The type of the ``readable_metrics`` column for a table of ``schema``."""
    return pa.struct([pa.field(n, _column_type(t)) for n, _, t in _leaves(schema)])


def readable_metrics(schema: Schema, files: pa.Table) -> pa.Array:
    """The ``readable_metrics`` of each row of decoded manifest entries ``files`` (their
    ``column_sizes`` ... ``upper_bounds`` map columns; a missing one gives nulls)."""
    leaves = _leaves(schema)
    n = files.num_rows
    ids = [fid for _, fid, _ in leaves]
    counts = [_Lookup(_map_column(files, col), ids, n) for _, col in _COUNTS]
    bounds = [_Lookup(_map_column(files, col), ids, n) for _, col in _BOUNDS]
    columns = []
    for k, (_, _, t) in enumerate(leaves):
        children = [c.counts(k) for c in counts]
        children += [_decode(t, b.bounds(k)) for b in bounds]
        columns.append(pa.StructArray.from_arrays(children, fields=list(_column_type(t))))
    rtype = readable_metrics_type(schema)
    if not columns:
        return pa.array([{}] * n, rtype)
    return pa.StructArray.from_arrays(columns, fields=list(rtype))


def _map_column(files: pa.Table, name: str) -> pa.MapArray | None:
    if name not in files.column_names:
        return None
    col = files.column(name)
    return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)


class _Lookup:
    """For one int-keyed metrics map column, where the value of each field id of ``ids`` is
    for each row: the entries sorted by field id and row once, then a slice per id."""

    def __init__(self, col: pa.MapArray | None, ids: list[int], n: int) -> None:
        self.n = n
        self.items: pa.Array = pa.array([], pa.int64())
        self.entry = self.row = np.empty(0, np.int64)
        self.start = self.end = np.zeros(len(ids), np.int64)
        if col is None or len(col) == 0 or not ids:
            return
        # (``list_flatten`` and ``list_parent_indices`` take no maps: the offsets do)
        offsets = col.offsets.to_numpy().astype(np.int64)
        first, last = int(offsets[0]), int(offsets[-1])
        keys = col.keys.slice(first, last - first)
        self.items = col.items.slice(first, last - first)
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
        # field id -> position in ids, -1 for untracked ones (by a binary search: field ids
        # may be as large as 2**31 - 1, too many for a table indexed by id)
        order_ids = np.argsort(np.asarray(ids, np.int64), kind="stable")
        sorted_ids = np.asarray(ids, np.int64)[order_ids]
        key = keys.to_numpy(zero_copy_only=False).astype(np.int64)
        at = np.minimum(np.searchsorted(sorted_ids, key), len(ids) - 1)
        slots = np.where(sorted_ids[at] == key, order_ids[at], -1)
        valid = slots >= 0
        if self.items.null_count:
            valid &= self.items.is_valid().to_numpy(zero_copy_only=False)
        if col.null_count:
            valid &= col.is_valid().to_numpy(zero_copy_only=False)[rows]
        keep = np.flatnonzero(valid)
        # entries come in row order: a stable sort by slot (a radix sort for small ints)
        # orders them by slot, then row
        narrow = np.uint16 if len(ids) < 2**16 else np.int64
        order = np.argsort(slots[keep].astype(narrow), kind="stable")
        entry, row, slot = keep[order], rows[keep][order], slots[keep][order]
        # a damaged map holding a key twice has no one value: unknown
        same = (slot[1:] == slot[:-1]) & (row[1:] == row[:-1])
        if same.any():
            twice = np.zeros(len(entry), bool)
            twice[1:] |= same
            twice[:-1] |= same
            entry, row, slot = entry[~twice], row[~twice], slot[~twice]
        self.entry, self.row = entry, row
        edges = np.searchsorted(slot, np.arange(len(ids) + 1))
        self.start, self.end = edges[:-1], edges[1:]

    def index(self, k: int) -> np.ndarray:
        """For each row, the position in ``items`` of the value for ``ids[k]``, or -1."""
        idx = np.full(self.n, -1, np.int64)
        s = slice(self.start[k], self.end[k])
        idx[self.row[s]] = self.entry[s]
        return idx

    def counts(self, k: int) -> pa.Array:
        """The (int64) values for ``ids[k]``, null where none."""
        if not len(self.items):
            return pa.nulls(self.n, pa.int64())
        idx = self.index(k)
        if not hasattr(self, "_values"):
            self._values = pc.fill_null(self.items.cast(pa.int64()), 0).to_numpy()
        return pa.array(self._values[np.maximum(idx, 0)], pa.int64(), mask=idx < 0)

    def bounds(self, k: int) -> _Raw:
        """The serialized values for ``ids[k]``."""
        if not hasattr(self, "_binary"):
            items = self.items if len(self.items) else pa.array([], pa.binary())
            self._binary = _Binary(items.cast(pa.binary()))
        return _Raw(self._binary, self.index(k))


class _Binary:
    """A binary array's value offsets and data as numpy arrays."""

    def __init__(self, arr: pa.Array) -> None:
        self.arr = arr
        bufs = arr.buffers()
        n = len(arr)
        offsets = np.frombuffer(bufs[1], np.int32, n + 1, arr.offset * 4).astype(np.int64)
        self.starts = offsets[:-1]
        self.lengths = np.diff(offsets)
        self.data = (
            np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
        )


class _Raw:
    """The serialized bound of each row: ``index`` into ``binary``'s values, -1 for none."""

    def __init__(self, binary: _Binary, index: np.ndarray) -> None:
        self.binary = binary
        self.index = index
        some = index >= 0
        pick = np.maximum(index, 0)
        self.starts = np.where(some, binary.starts[pick] if len(binary.arr) else 0, 0)
        self.lengths = np.where(some, binary.lengths[pick] if len(binary.arr) else 0, -1)

    def __len__(self) -> int:
        return len(self.index)

    def array(self) -> pa.Array:
        """The bounds as a binary array."""
        idx = self.index
        return pc.take(self.binary.arr, pa.array(idx, mask=idx < 0))


def _decode(t: PrimitiveType, raw: _Raw) -> pa.Array:
    """Serialized bounds ``raw`` as values of the column type."""
    at = type_to_arrow(t)
    n = len(raw)
    if isinstance(t, UnknownType) or not (raw.index >= 0).any():
        return pa.nulls(n, at)
    if isinstance(t, BinaryType):
        return raw.array()
    if isinstance(t, StringType):
        return _utf8(raw.array())
    if isinstance(t, DecimalType):
        return _decimals(raw, at)
    if isinstance(t, GeometryType | GeographyType):
        return _points(raw.array(), at)
    if isinstance(t, BooleanType):
        vals, ok = _fixed(raw, 1, "u1")
        return pa.array(vals != 0, pa.bool_(), mask=~ok)
    if isinstance(t, IntegerType | DateType):
        vals, ok = _fixed(raw, 4, "<i4")
        return pa.array(vals, pa.int32(), mask=~ok).view(at)
    if isinstance(t, FloatType):
        vals, ok = _fixed(raw, 4, "<f4")
        return pa.array(vals, pa.float32(), mask=~ok)
    if isinstance(t, DoubleType):
        wide, ok8 = _fixed(raw, 8, "<f8")
        narrow, ok4 = _fixed(raw, 4, "<f4")  # a float bound written before promotion
        values = np.where(ok4, narrow.astype(np.float64), wide)
        return pa.array(values, pa.float64(), mask=~(ok8 | ok4))
    if isinstance(t, (LongType, TimeType, *_TIMESTAMPS)):
        wide, ok8 = _fixed(raw, 8, "<i8")
        if isinstance(t, TimeType):
            return pa.array(wide, pa.int64(), mask=~ok8).view(at)
        narrow, ok4 = _fixed(raw, 4, "<i4")  # an int (or, under a timestamp, a date) bound
        per = 1 if isinstance(t, LongType) else _DAY_NS if isinstance(t, _NANOS) else _DAY_US
        small = narrow.astype(np.int64)
        if per != 1:
            # a date outside the timestamp's range has no value of the column's type
            ok4 &= np.abs(small) <= np.iinfo(np.int64).max // per
            small = np.where(ok4, small, 0) * per
        return pa.array(np.where(ok4, small, wide), pa.int64(), mask=~(ok8 | ok4)).view(at)
    if isinstance(t, UUIDType | FixedType):
        width = 16 if isinstance(t, UUIDType) else t.length
        vals, ok = _fixed(raw, width, "u1")
        validity = pa.array(ok).buffers()[1]
        storage = pa.Array.from_buffers(
            pa.binary(width), n, [validity, pa.py_buffer(vals.tobytes())]
        )
        if isinstance(at, pa.BaseExtensionType):
            return pa.ExtensionArray.from_storage(at, storage)
        return storage
    return pa.nulls(n, at)


_TIMESTAMPS = (TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)
_NANOS = (TimestampNanoType, TimestamptzNanoType)


def _fixed(raw: _Raw, width: int, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The bounds that are ``width`` bytes long, read as ``dtype`` (zero elsewhere), and
    which rows have one."""
    ok = raw.lengths == width
    out = np.zeros(len(raw) * width, np.uint8)
    if ok.any() and width:
        picks = (raw.starts[ok][:, None] + np.arange(width)).ravel()
        out.reshape(-1, width)[ok] = raw.binary.data[picks].reshape(-1, width)
    return out.view(dtype), ok


def _utf8(raw: pa.Array) -> pa.Array:
    try:
        return raw.cast(pa.string())
    except pa.ArrowInvalid:  # a bound that is not UTF-8: null (decoded one by one)
        out = []
        for v in raw.to_pylist():
            try:
                out.append(None if v is None else v.decode("utf-8"))
            except UnicodeDecodeError:
                out.append(None)
        return pa.array(out, pa.string())


def _decimals(raw: _Raw, at: pa.DataType) -> pa.Array:
    """Big-endian two's-complement unscaled values (1 to 16 bytes) as decimal128 ``at``."""
    starts, lengths, data = raw.starts, raw.lengths, raw.binary.data
    ok = (lengths >= 1) & (lengths <= 16)
    n = len(raw)
    be = np.zeros((n, 16), np.uint8)
    if ok.any():
        rows = np.flatnonzero(ok)
        lens = lengths[rows]
        negative = data[starts[rows]] >= 0x80
        be[rows[negative]] = 0xFF  # sign extension
        total = int(lens.sum())
        row_of = np.repeat(rows, lens)
        within = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
        be[row_of, 16 - lengths[row_of] + within] = data[starts[row_of] + within]
    le = np.ascontiguousarray(be[:, ::-1])
    validity = pa.array(ok).buffers()[1]
    return pa.Array.from_buffers(at, n, [validity, pa.py_buffer(le.tobytes())])


def _points(raw: pa.Array, at: pa.DataType) -> pa.Array:
    """Geometry/geography bounds (``x:y[:z][:m]`` points) as WKB points."""
    import struct

    from icefloe.values import point_from_bytes

    out: list[bytes | None] = []
    for v in raw.to_pylist():
        try:
            x, y, z, m = point_from_bytes(v) if v is not None else (None,) * 4
        except ValidationError:  # a damaged bound shows as null
            x = None
        if x is None:
            out.append(None)
            continue
        coords = [c for c in (x, y, z, m) if c is not None]
        kind = 1 + (1000 if z is not None else 0) + (2000 if m is not None else 0)
        out.append(struct.pack(f"<BI{len(coords)}d", 1, kind, *coords))
    storage = pa.array(out, at.storage_type if isinstance(at, pa.BaseExtensionType) else at)
    if isinstance(at, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(at, storage)
    return storage
