"""Avro data and delete files written by fastavro, laid out as Iceberg's Avro mapping lays
them out: field ids in ``field-id``/``element-id``/``key-id``/``value-id``, optional values as
``["null", T]`` unions, logical types for dates, times, timestamps (``adjust-to-utc``),
decimals and UUIDs, string-keyed maps as Avro maps and other maps as arrays of key/value
records marked ``"logicalType": "map"``. An independent writer for the reader's tests."""

from __future__ import annotations

import datetime as dt
import itertools
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa

_ID = b"PARQUET:field_id"
_names = itertools.count()
_EPOCH_DAY = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _id(f: pa.Field) -> int | None:
    meta = f.metadata or {}
    return int(meta[_ID]) if _ID in meta else None


def _decimal_bytes(precision: int) -> int:
    """The fewest bytes holding every unscaled value of ``precision`` digits (Java's rule)."""
    n = 1
    while 2 ** (8 * n - 1) <= 10**precision:
        n += 1
    return n


def avro_type(t: pa.DataType) -> Any:
    """The Avro schema of values of ``t`` (not optional)."""
    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type  # arrow.uuid: fixed[16]
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t):
        return "string"
    if pa.types.is_binary(t):
        return "bytes"
    if pa.types.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_time64(t):
        return {"type": "long", "logicalType": "time-micros"}
    if pa.types.is_timestamp(t):
        logical = "timestamp-micros" if t.unit == "us" else "timestamp-nanos"
        return {"type": "long", "logicalType": logical, "adjust-to-utc": t.tz is not None}
    if pa.types.is_decimal(t):
        return {
            "type": "fixed",
            "name": f"decimal_{t.precision}_{t.scale}_{next(_names)}",
            "size": _decimal_bytes(t.precision),
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if pa.types.is_fixed_size_binary(t):
        if t.byte_width == 16:
            return {
                "type": "fixed",
                "name": f"uuid_fixed_{next(_names)}",
                "size": 16,
                "logicalType": "uuid",
            }
        return {"type": "fixed", "name": f"fixed_{next(_names)}", "size": t.byte_width}
    if pa.types.is_struct(t):
        return record(list(t), f"r{next(_names)}")
    if pa.types.is_list(t):
        return {
            "type": "array",
            "items": optional(t.value_field),
            "element-id": _id(t.value_field),
        }
    if pa.types.is_map(t):
        if pa.types.is_string(t.key_type):
            return {
                "type": "map",
                "values": optional(t.item_field),
                "key-id": _id(t.key_field),
                "value-id": _id(t.item_field),
            }
        kid, vid = _id(t.key_field), _id(t.item_field)
        return {
            "type": "array",
            "logicalType": "map",
            "items": {
                "type": "record",
                "name": f"k{kid}_v{vid}",
                "fields": [
                    {"name": "key", "type": avro_type(t.key_type), "field-id": kid},
                    {"name": "value", "type": optional(t.item_field), "field-id": vid},
                ],
            },
        }
    raise TypeError(f"no Avro mapping for {t}")


def optional(f: pa.Field) -> Any:
    return ["null", avro_type(f.type)] if f.nullable else avro_type(f.type)


def record(fields: list[pa.Field], name: str) -> dict[str, Any]:
    out = []
    for f in fields:
        entry: dict[str, Any] = {"name": f.name, "type": optional(f)}
        if f.nullable:
            entry["default"] = None
        fid = _id(f)
        if fid is not None:
            entry["field-id"] = fid
        out.append(entry)
    return {"type": "record", "name": name, "fields": out}


def _value(v: Any, t: pa.DataType) -> Any:
    """A Python value of ``t`` (from ``to_pylist``) as fastavro takes it."""
    if v is None:
        return None
    if pa.types.is_date32(t):
        return (v - _EPOCH_DAY).days
    if pa.types.is_timestamp(t):
        epoch = _EPOCH if v.tzinfo is None else _EPOCH_UTC
        return (v - epoch) // dt.timedelta(microseconds=1)
    if pa.types.is_time64(t):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    if pa.types.is_struct(t):
        return {f.name: _value(v[f.name], f.type) for f in t}
    if pa.types.is_list(t):
        return [_value(x, t.value_type) for x in v]
    if pa.types.is_map(t):
        pairs = [(_value(k, t.key_type), _value(x, t.item_type)) for k, x in v]
        if pa.types.is_string(t.key_type):
            return dict(pairs)
        return [{"key": k, "value": x} for k, x in pairs]
    return v


def _raw(col: pa.ChunkedArray | pa.Array) -> list[Any]:
    """Timestamps as integers (fastavro would read naive datetimes as local), the rest as
    Python values."""
    t = col.type
    if isinstance(t, pa.BaseExtensionType):
        col = pa.chunked_array([c.storage for c in pa.chunked_array(col).chunks], t.storage_type)
        t = t.storage_type
    if pa.types.is_timestamp(t):
        return col.cast(pa.int64()).to_pylist()
    return [_value(v, t) for v in col.to_pylist()]


def write_avro(
    t: pa.Table, path: Path | str, codec: str = "deflate", block_rows: int = 1000
) -> None:
    """``t`` (columns with ``PARQUET:field_id``) written as an Iceberg Avro data file."""
    schema = record(list(t.schema), "table")
    cols = [_raw(t.column(i)) for i in range(t.num_columns)]
    rows = (dict(zip(t.column_names, r, strict=True)) for r in zip(*cols, strict=True))
    parsed = fastavro.parse_schema(schema)
    with open(path, "wb") as out:
        fastavro.writer(out, parsed, rows, codec=codec, sync_interval=max(1, block_rows) * 16)
