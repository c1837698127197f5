"""Delta file statistics as Iceberg metrics, vectorised over every file at once.

The stats JSON strings of all files are parsed in one call by Arrow's JSON reader (C++,
multi-threaded) against a schema derived from the Delta schema, the bounds are serialised to
the spec's single-value binary form by the Rust core (``_native.encode_values``) and assembled
into the manifest's ``map<int, ...>`` columns with numpy; no Python code runs per file.

Rules (Delta PROTOCOL "Per-file Statistics" -> Iceberg metrics):

* ``record_count`` = ``numRecords`` (the physical row count, DV-deleted rows included);
* ``null_value_counts`` only when the bounds are tight, or the count is 0 or ``numRecords``
  (wide statistics after a DV may over-count);
* lower/upper bounds for int, long, float, double, decimal, date, timestamp(_ntz), string;
  Delta truncates timestamps to milliseconds, so upper bounds get +999 µs (a truncated max would
  otherwise prune a matching row); Delta truncates strings to 32 characters, so string upper
  bounds of 32 or more characters are dropped (lower bounds, prefixes, stay valid); NaN bounds
  are dropped; float bounds widen by one ulp when narrowing to float32 is inexact.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from icefloe import _native
from icefloe.delta.schema import DeltaColumn, json_arrow_type, stats_arrow_type
from icefloe.types import (
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
_FEW = 32  # up to this many files, stats are parsed with json.loads
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


def _json_stream(stats: pa.Array) -> pa.Buffer:
    """The stats strings back to back (missing or empty stats become ``{}``): a stream of JSON
    objects, taken from the string array's data buffer without copying."""
    blank = pc.fill_null(pc.equal(stats, ""), True)
    filled = pc.if_else(blank, "{}", stats)
    if isinstance(filled, pa.ChunkedArray):
        filled = filled.combine_chunks()
    n = len(filled)
    offsets = np.frombuffer(filled.buffers()[1], dtype=np.int32)
    start, end = int(offsets[filled.offset]), int(offsets[filled.offset + n])
    data: pa.Buffer = filled.buffers()[2]
    return data.slice(start, end - start)


def _schema(columns: list[DeltaColumn]) -> pa.Schema:
    return pa.schema(
        [
            pa.field("numRecords", pa.int64()),
            pa.field("minValues", stats_arrow_type(columns, "bounds")),
            pa.field("maxValues", stats_arrow_type(columns, "bounds")),
            pa.field("nullCount", stats_arrow_type(columns, "counts")),
            pa.field("tightBounds", pa.bool_()),
        ]
    )


def _sanitize(obj: Any, columns_schema: pa.DataType) -> Any:
    """A parsed stats object (numbers as ``Decimal``) with values of the wrong JSON kind (e.g.
    ``"NaN"`` for a double) nulled and numbers in the column's Python type."""
    if not isinstance(obj, dict):
        return None
    out = {}
    for f in columns_schema:
        v: Any = obj.get(f.name)
        number = isinstance(v, int | Decimal) and not isinstance(v, bool)
        if pa.types.is_struct(f.type):
            out[f.name] = _sanitize(v, f.type)
        elif pa.types.is_floating(f.type):
            out[f.name] = float(v) if number else None
        elif pa.types.is_integer(f.type):
            out[f.name] = v if isinstance(v, int) and not isinstance(v, bool) else None
        elif pa.types.is_boolean(f.type):
            out[f.name] = v if isinstance(v, bool) else None
        elif pa.types.is_decimal(f.type):
            out[f.name] = Decimal(v) if number else None
        else:
            out[f.name] = v if isinstance(v, str) else None
    return out


def _parse(stats: pa.Array, schema: pa.Schema) -> pa.Table:
    n = len(stats)
    if n == 0:
        return schema.empty_table()
    if n <= _FEW:  # a commit's few files: starting Arrow's reader costs more than json.loads
        return _parse_slowly(stats, schema)
    try:
        parsed = pj.read_json(
            pa.BufferReader(_json_stream(stats)),
            read_options=pj.ReadOptions(block_size=1 << 22),
            parse_options=pj.ParseOptions(
                explicit_schema=schema,
                unexpected_field_behavior="ignore",
                newlines_in_values=True,
            ),
        )
        if parsed.num_rows == n:
            return parsed
    except pa.ArrowInvalid:
        pass
    # A value of an unexpected JSON kind (Spark writes NaN bounds as strings) or a stats
    # string that is not one object: parse in Python and drop just the bad values. Rare, so
    # the per-file path is acceptable here.
    return _parse_slowly(stats, schema)


def _parse_slowly(stats: pa.Array, schema: pa.Schema) -> pa.Table:
    rows = []
    for s in stats.to_pylist():
        try:
            obj = json.loads(s, parse_float=Decimal) if s else {}
        except ValueError:
            obj = {}
        obj = obj if isinstance(obj, dict) else {}
        nr = obj.get("numRecords")
        tight = obj.get("tightBounds")
        rows.append(
            {
                "numRecords": nr if isinstance(nr, int) and not isinstance(nr, bool) else None,
                "minValues": _sanitize(obj.get("minValues"), schema.field("minValues").type),
                "maxValues": _sanitize(obj.get("maxValues"), schema.field("maxValues").type),
                "nullCount": _sanitize(obj.get("nullCount"), schema.field("nullCount").type),
                "tightBounds": tight if isinstance(tight, bool) else None,
            }
        )
    return pa.Table.from_pylist(rows, schema=schema)


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
        return pc.cast(raw, pa.int32())
    if isinstance(t, LongType):
        return raw
    if isinstance(t, DoubleType | FloatType):
        vals = pc.if_else(pc.is_nan(raw), pa.scalar(None, pa.float64()), raw)
        if isinstance(t, FloatType):
            wide = vals.to_numpy(zero_copy_only=False)
            narrow = wide.astype(np.float32)
            with np.errstate(invalid="ignore"):
                if upper:
                    bad = narrow.astype(np.float64) < wide
                    narrow = np.where(bad, np.nextafter(narrow, np.float32(np.inf)), narrow)
                else:
                    bad = narrow.astype(np.float64) > wide
                    narrow = np.where(bad, np.nextafter(narrow, np.float32(-np.inf)), narrow)
            vals = pa.array(narrow, pa.float32(), mask=pc.is_null(vals).to_numpy(False))
        zero = pc.equal(vals, pa.scalar(0, vals.type))
        signed = pa.scalar(0.0 if upper else -0.0, vals.type)
        return pc.if_else(zero, signed, vals)
    if isinstance(t, DecimalType):
        return raw if pa.types.is_decimal(raw.type) else None
    if isinstance(t, DateType):
        return pc.cast(raw, pa.date32())
    if isinstance(t, TimestamptzType | TimestampType):
        tz = "UTC" if isinstance(t, TimestamptzType) else None
        ts = pc.cast(raw, pa.timestamp("us", tz))
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
    stacked = pa.concat_arrays([c.cast(value_type) for c in columns])  # column-major
    order = (np.arange(n)[:, None] + np.arange(k)[None, :] * n).ravel()  # file-major
    values = stacked.take(pa.array(order))
    keys = np.tile(np.asarray(ids, dtype=np.int32), n)
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    counts = valid.reshape(n, k).sum(axis=1)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return pa.MapArray.from_arrays(
        pa.array(offsets), pa.array(keys[valid]), values.filter(pa.array(valid)), type=map_type
    )


def _metrics(parsed: pa.Table | pa.StructArray, columns: list[DeltaColumn], n: int) -> FileMetrics:
    """Metrics from parsed statistics (the JSON read, or a checkpoint's ``stats_parsed``)."""
    num = _column(parsed, "numRecords", n, pa.int64()).cast(pa.int64())
    tight = pc.fill_null(_column(parsed, "tightBounds", n, pa.bool_()), True)
    mins = _column(parsed, "minValues", n, pa.struct([]))
    maxs = _column(parsed, "maxValues", n, pa.struct([]))
    nulls = _column(parsed, "nullCount", n, pa.struct([]))
    ids: list[int] = []
    lows: list[pa.Array] = []
    highs: list[pa.Array] = []
    count_ids: list[int] = []
    counts: list[pa.Array] = []
    for c in columns:  # one iteration per column, vectorised over all files
        cnt = _leaf(nulls, c.physical_path, pa.int64()).cast(pa.int64())
        trusted = pc.or_(tight, pc.or_(pc.equal(cnt, 0), pc.equal(cnt, num)))
        count_ids.append(c.field_id)
        counts.append(pc.if_else(pc.fill_null(trusted, False), cnt, pa.scalar(None, pa.int64())))
        json_type = json_arrow_type(c)
        lo = _typed(c, _leaf(mins, c.physical_path, json_type), upper=False)
        hi = _typed(c, _leaf(maxs, c.physical_path, json_type), upper=True)
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


def _from_json(stats: pa.Array, columns: list[DeltaColumn]) -> FileMetrics:
    n = len(stats)
    return _metrics(_parse(stats, _schema(columns)).combine_chunks(), columns, n)


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
    if parsed is None or not pa.types.is_struct(parsed.type) or parsed.null_count == len(parsed):
        return _from_json(stats, columns)
    if parsed.null_count == 0:
        return _metrics(parsed, columns, len(parsed))
    have = parsed.is_valid()
    idx_p = pc.indices_nonzero(have)
    idx_j = pc.indices_nonzero(pc.invert(have))
    a = _metrics(parsed.take(idx_p), columns, len(idx_p))
    b = _from_json(stats.take(idx_j), columns)
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
