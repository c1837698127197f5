"""Delta file statistics as Iceberg metrics, vectorised over every file at once.

The stats JSON strings of all files are parsed in one call by the Rust core
(``_native.delta_parse_stats``) into one Arrow column per leaf and kind (checkpoints' typed
``stats_parsed`` copy needs no parsing at all), the bounds are serialised to the spec's
single-value binary form in Rust (``_native.encode_values``) and assembled into the manifest's
``map<int, ...>`` columns with numpy; no Python code runs per file.

Rules (Delta PROTOCOL "Per-file Statistics" -> Iceberg metrics):

* ``record_count`` = ``numRecords`` (the physical row count, DV-deleted rows included);
* ``null_value_counts`` only when the bounds are tight, or the count is 0 or ``numRecords``
  (wide statistics after a DV may over-count);
* lower/upper bounds for int, long, float, double, decimal, date, timestamp(_ntz), string;
  Delta truncates timestamps to milliseconds, so upper bounds get +999 µs (a truncated max would
  otherwise prune a matching row); Delta truncates strings to 32 characters, so string upper
  bounds of 32 or more characters are dropped (lower bounds, prefixes, stay valid); NaN bounds
  are dropped; float bounds widen by one ulp when narrowing to float32 is inexact, and so do
  the bounds of a double column Delta's type widening made of a float one (statistics written
  before hold float32 values as their shortest decimal text: 0.1 for 0.1f, which is above it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe import _native
from icefloe.delta.schema import DeltaColumn, json_arrow_type
from icefloe.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)

__all__ = ["FileMetrics", "file_metrics"]

_STRING_PREFIX = 32
_MS = 999
_BOUND_TYPES = (
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    DateType,
    TimestampType,
    TimestamptzType,
    StringType,
)


@dataclass
class FileMetrics:
    """Per-file metric columns, aligned with the input files."""

    num_records: pa.Array  # int64, null when the file has no stats
    null_value_counts: pa.Array  # map<int32, int64>
    lower_bounds: pa.Array  # map<int32, binary>
    upper_bounds: pa.Array  # map<int32, binary>


@dataclass
class _Stats:
    """Parsed statistics as flat columns: one array per leaf column for each section."""

    num: pa.Array
    tight: pa.Array
    nulls: list[pa.Array]
    mins: list[pa.Array]
    maxs: list[pa.Array]


def _kind(c: DeltaColumn) -> str:
    t = c.type
    if isinstance(t, IntegerType | LongType):
        return "int"
    if isinstance(t, FloatType | DoubleType):
        return "float"
    if isinstance(t, BooleanType):
        return "bool"
    if isinstance(t, DecimalType):
        return f"decimal({t.precision})"
    return "string"  # strings, dates, timestamps (binary and variant have no bounds)


def _decimals(c: DeltaColumn, text: pa.Array) -> pa.Array:
    """Decimal bounds from their JSON text; a value that does not fit the type is no bound."""
    t = c.type
    assert isinstance(t, DecimalType)
    target = (
        pa.decimal128(t.precision, t.scale)
        if t.precision <= 38
        else pa.decimal256(t.precision, t.scale)
    )
    return _cast_or_null(text, target)


def _cast_or_null(raw: pa.Array, target: pa.DataType) -> pa.Array:
    """``raw`` cast to ``target``, a value that does not cast (a malformed or out-of-range
    statistic: a date such as ``2024-13-45``, a timestamp without the zone its type needs or
    with one it must not have, an int beyond int32) null: statistics are optional, so that
    file's bound is dropped and the other files keep theirs."""
    try:
        return pc.cast(raw, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        pass
    out = []  # rare (a broken statistic): value by value, to drop only the bad ones
    for i in range(len(raw)):
        try:
            out.append(pc.cast(raw.slice(i, 1), target))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            out.append(pa.nulls(1, target))
    return pa.concat_arrays(out) if out else pa.array([], target)


def _from_json(stats: pa.Array, columns: list[DeltaColumn]) -> _Stats:
    if stats.type != pa.string():
        stats = stats.cast(pa.string())
    num, tight, nulls, mins, maxs = _native.delta_parse_stats(
        stats, [list(c.physical_path) for c in columns], [_kind(c) for c in columns]
    )
    for i, c in enumerate(columns):
        if isinstance(c.type, DecimalType):
            mins[i], maxs[i] = _decimals(c, mins[i]), _decimals(c, maxs[i])
    return _Stats(num, tight, nulls, mins, maxs)


def _leaf(struct: pa.Array, path: tuple[str, ...], type_: pa.DataType) -> pa.Array:
    """The values at ``path`` in a stats struct, nulls where a level is missing (Delta keeps
    statistics for the first columns only)."""
    arr = struct
    for p in path:
        if not pa.types.is_struct(arr.type) or arr.type.get_field_index(p) < 0:
            return pa.nulls(len(struct), type_)
        arr = pc.struct_field(arr, p)
    return arr


def _column(table: pa.Table | pa.StructArray, name: str, n: int, type_: pa.DataType) -> pa.Array:
    names = table.column_names if isinstance(table, pa.Table) else [f.name for f in table.type]
    if name not in names:
        return pa.nulls(n, type_)
    col = table.column(name) if isinstance(table, pa.Table) else pc.struct_field(table, name)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _typed(c: DeltaColumn, raw: pa.Array, upper: bool) -> pa.Array | None:
    """Bound values of column ``c`` in the Arrow type ``encode_values`` takes, or None."""
    t = c.type
    if not isinstance(t, _BOUND_TYPES):
        return None
    if isinstance(t, IntegerType):
        return _cast_or_null(raw, pa.int32())
    if isinstance(t, LongType):
        return raw
    if isinstance(t, DoubleType | FloatType):
        vals = pc.if_else(pc.is_nan(raw), pa.scalar(None, pa.float64()), raw)
        # A double column widened from float may have float32 statistics written as text
        # (0.1 for the stored 0.1f, 0.10000000149011612): the float32 bounds around the
        # value hold both the float32 it stands for and a double written later.
        if isinstance(t, FloatType) or c.from_float:
            wide = vals.to_numpy(zero_copy_only=False)
            # rounding past float32's maximum gives the right bound (infinity): no warning
            with np.errstate(invalid="ignore", over="ignore"):
                narrow = wide.astype(np.float32)
                if upper:
                    bad = narrow.astype(np.float64) < wide
                    narrow = np.where(bad, np.nextafter(narrow, np.float32(np.inf)), narrow)
                else:
                    bad = narrow.astype(np.float64) > wide
                    narrow = np.where(bad, np.nextafter(narrow, np.float32(-np.inf)), narrow)
            vals = pa.array(narrow, pa.float32(), mask=pc.is_null(vals).to_numpy(False))
            if isinstance(t, DoubleType):
                vals = vals.cast(pa.float64())  # exact
        zero = pc.equal(vals, pa.scalar(0, vals.type))
        signed = pa.scalar(0.0 if upper else -0.0, vals.type)
        return pc.if_else(zero, signed, vals)
    if isinstance(t, DecimalType):
        return raw if pa.types.is_decimal(raw.type) else None
    if isinstance(t, DateType):
        return _cast_or_null(raw, pa.date32())
    if isinstance(t, TimestamptzType | TimestampType):
        tz = "UTC" if isinstance(t, TimestamptzType) else None
        ts = _cast_or_null(raw, pa.timestamp("us", tz))
        if upper:
            micros = pc.add(pc.cast(ts, pa.int64()), _MS)
            ts = pc.cast(micros, pa.timestamp("us", tz))
        return ts
    if isinstance(t, StringType):
        if upper:
            short = pc.less(pc.utf8_length(raw), _STRING_PREFIX)
            return pc.if_else(short, raw, pa.scalar(None, pa.string()))
        return raw
    raise AssertionError(f"unhandled bound type {t}")


def _map(ids: list[int], columns: list[pa.Array], value_type: pa.DataType, n: int) -> pa.Array:
    """A ``map<int32, value_type>`` per file from ``k`` aligned columns (nulls left out)."""
    map_type = pa.map_(pa.int32(), value_type)
    k = len(columns)
    if k == 0:
        return pa.array([[]] * n, map_type) if n else pa.array([], map_type)
    stacked = pa.concat_arrays([_as_type(c, value_type) for c in columns])  # column-major
    # Validity per (file, column), file-major; only the indices go through numpy, and the
    # values are copied once, by one take of the non-null ones in file-major order.
    valid = np.empty((n, k), dtype=bool)
    for j, c in enumerate(columns):  # one iteration per column
        valid[:, j] = c.is_valid().to_numpy(zero_copy_only=False) if c.null_count else True
    order = np.arange(n)[:, None] + np.arange(k)[None, :] * n
    picked = order[valid]
    keys = np.broadcast_to(np.asarray(ids, dtype=np.int32), (n, k))[valid]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(valid.sum(axis=1), out=offsets[1:])
    return pa.MapArray.from_arrays(
        pa.array(offsets), pa.array(keys), stacked.take(pa.array(picked)), type=map_type
    )


def _as_type(a: pa.Array, t: pa.DataType) -> pa.Array:
    return a if a.type == t else a.cast(t)


def _from_struct(parsed: pa.StructArray, columns: list[DeltaColumn]) -> _Stats:
    """Flat columns from a checkpoint's typed ``stats_parsed`` struct."""
    n = len(parsed)
    mins = _column(parsed, "minValues", n, pa.struct([]))
    maxs = _column(parsed, "maxValues", n, pa.struct([]))
    nulls = _column(parsed, "nullCount", n, pa.struct([]))
    return _Stats(
        _column(parsed, "numRecords", n, pa.int64()).cast(pa.int64()),
        _column(parsed, "tightBounds", n, pa.bool_()),
        [_leaf(nulls, c.physical_path, pa.int64()).cast(pa.int64()) for c in columns],
        [_leaf(mins, c.physical_path, json_arrow_type(c)) for c in columns],
        [_leaf(maxs, c.physical_path, json_arrow_type(c)) for c in columns],
    )


def _metrics(st: _Stats, columns: list[DeltaColumn], n: int) -> FileMetrics:
    """Iceberg metrics from parsed statistics."""
    num = st.num
    tight = pc.fill_null(st.tight, True)
    ids: list[int] = []
    lows: list[pa.Array] = []
    highs: list[pa.Array] = []
    count_ids: list[int] = []
    counts: list[pa.Array] = []
    for i, c in enumerate(columns):  # one iteration per column, vectorised over all files
        cnt = st.nulls[i]
        trusted = pc.or_(tight, pc.or_(pc.equal(cnt, 0), pc.equal(cnt, num)))
        count_ids.append(c.field_id)
        counts.append(pc.if_else(pc.fill_null(trusted, False), cnt, pa.scalar(None, pa.int64())))
        lo = _typed(c, st.mins[i], upper=False)
        hi = _typed(c, st.maxs[i], upper=True)
        if lo is None or hi is None:
            continue
        type_str = str(c.type)
        ids.append(c.field_id)
        lows.append(_native.encode_values(type_str, lo))
        highs.append(_native.encode_values(type_str, hi))
    return FileMetrics(
        num,
        _map(count_ids, counts, pa.int64(), n),
        _map(ids, lows, pa.binary(), n),
        _map(ids, highs, pa.binary(), n),
    )


def file_metrics(
    stats: pa.Array | pa.ChunkedArray,
    columns: list[DeltaColumn],
    parsed: pa.Array | pa.ChunkedArray | None = None,
) -> FileMetrics:
    """Iceberg metrics for files with Delta ``stats`` strings; ``columns`` are the table's
    stats columns (:func:`icefloe.delta.schema.leaf_columns`, partition columns excluded).
    ``parsed`` (a checkpoint's ``stats_parsed``, aligned with ``stats``) is used where it is
    set: no JSON to parse for those files."""
    if isinstance(stats, pa.ChunkedArray):
        stats = stats.combine_chunks() if stats.num_chunks else pa.array([], pa.string())
    if isinstance(parsed, pa.ChunkedArray):
        parsed = parsed.combine_chunks() if parsed.num_chunks else None
    n = len(stats)
    if parsed is None or not pa.types.is_struct(parsed.type) or parsed.null_count == len(parsed):
        return _metrics(_from_json(stats, columns), columns, n)
    if parsed.null_count == 0:
        return _metrics(_from_struct(parsed, columns), columns, n)
    have = parsed.is_valid()
    idx_p = pc.indices_nonzero(have)
    idx_j = pc.indices_nonzero(pc.invert(have))
    a = _metrics(_from_struct(parsed.take(idx_p), columns), columns, len(idx_p))
    b = _metrics(_from_json(stats.take(idx_j), columns), columns, len(idx_j))
    order = np.argsort(np.concatenate([idx_p.to_numpy(), idx_j.to_numpy()]), kind="stable")
    back = pa.array(order)

    def merge(x: pa.Array, y: pa.Array) -> pa.Array:
        return pa.concat_arrays([x, y.cast(x.type)]).take(back)

    return FileMetrics(
        merge(a.num_records, b.num_records),
        merge(a.null_value_counts, b.null_value_counts),
        merge(a.lower_bounds, b.lower_bounds),
        merge(a.upper_bounds, b.upper_bounds),
    )
