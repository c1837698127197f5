"""Arrow data from Spark back to the Iceberg forms Spark has no type for (inverse of
:func:`icefloe.spark.schema.to_spark_batch`): ``uuid`` columns arrive as canonical strings,
``time`` as microseconds (long), ``timestamp_ns`` as microsecond timestamps, ``fixed[L]``
as binary (checked to have ``L`` bytes). Other types pass
through unchanged and are validated and cast by :func:`icefloe.write.input.to_table_schema`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.types import (
    FixedType,
    IcebergType,
    ListType,
    MapType,
    StructType,
    TimestampNanoType,
    TimestamptzNanoType,
    TimeType,
    UUIDType,
)

__all__ = ["from_spark", "parse_uuids"]

_NIBBLE = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _NIBBLE[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _NIBBLE[_c] = 10 + _i
_HEX_SLOTS = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])
_DASHES = np.array([8, 13, 18, 23])


def parse_uuids(arr: pa.Array, path: str = "uuid") -> pa.Array:
    """Canonical UUID strings (``8-4-4-4-12`` hex) to 16-byte values, vectorised."""
    arr = arr.cast(pa.string())
    n = len(arr)
    valid = arr.is_valid()
    filled = pc.if_else(valid, arr, "00000000-0000-0000-0000-000000000000")
    lengths = pc.utf8_length(filled)
    if (n and pc.min(lengths).as_py() != 36) or (n and pc.max(lengths).as_py() != 36):
        bad = filled.filter(pc.not_equal(lengths, 36))[0].as_py()
        raise ValidationError(f"column {path!r}: {bad!r} is not a UUID")
    chars = np.frombuffer(pa.concat_arrays([filled]).buffers()[2], dtype=np.uint8)[: n * 36]
    chars = chars.reshape(n, 36)
    nibbles = _NIBBLE[chars[:, _HEX_SLOTS]]
    bad_rows = (nibbles == 255).any(axis=1) | (chars[:, _DASHES] != ord("-")).any(axis=1)
    if bad_rows.any():
        raise ValidationError(
            f"column {path!r}: {filled[int(np.argmax(bad_rows))].as_py()!r} is not a UUID"
        )
    raw = (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]
    validity = None if arr.null_count == 0 else pa.array(valid).buffers()[1]
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(16), n, [validity, pa.py_buffer(raw.tobytes())], arr.null_count
    )


def _needs(t: IcebergType) -> bool:
    if isinstance(t, UUIDType | TimeType | TimestampNanoType | TimestamptzNanoType | FixedType):
        return True
    if isinstance(t, StructType):
        return any(_needs(f.field_type) for f in t.fields)
    if isinstance(t, ListType):
        return _needs(t.element_type)
    if isinstance(t, MapType):
        return _needs(t.key_type) or _needs(t.value_type)
    return False


def _convert(arr: pa.Array, t: IcebergType, path: str) -> pa.Array:
    if isinstance(t, UUIDType) and (
        pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
    ):
        return parse_uuids(arr, path)
    is_bytes = pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)
    if isinstance(t, FixedType) and is_bytes:
        lengths = pc.binary_length(arr)
        bad = arr.filter(pc.not_equal(lengths, t.length))
        if len(bad):
            raise ValidationError(
                f"column {path!r}: value {bad[0].as_py()!r} does not have the {t.length} bytes "
                f"of {t}"
            )
        return arr.cast(pa.binary(t.length))
    if isinstance(t, TimeType) and pa.types.is_integer(arr.type):
        return arr.cast(pa.int64()).view(pa.time64("us"))
    if isinstance(t, TimestampNanoType | TimestamptzNanoType) and pa.types.is_timestamp(arr.type):
        tz = "UTC" if isinstance(t, TimestamptzNanoType) else None
        if (arr.type.tz is None) != (tz is None):
            return arr  # an instant for a local time or the reverse: the write refuses it
        try:
            return arr.cast(pa.timestamp("ns", tz=tz))
        except pa.ArrowInvalid:
            raise ValidationError(
                f"column {path!r} ({t}): a value is outside the years 1677-2262 that a "
                "nanosecond timestamp holds"
            ) from None
    if not _needs(t):
        return arr
    mask = arr.is_null() if arr.null_count else None
    if isinstance(t, StructType) and pa.types.is_struct(arr.type):
        names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
        children, fields = [], []
        for i, name in enumerate(names):
            f = t.field_by_name(name)
            child = arr.field(i)
            if f is not None:
                child = _convert(child, f.field_type, f"{path}.{name}")
            children.append(child)
            fields.append(pa.field(name, child.type))
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    if arr.offset:
        arr = pa.concat_arrays([arr])
    if isinstance(t, ListType) and pa.types.is_list(arr.type):
        values = _convert(arr.values, t.element_type, f"{path}.element")
        return pa.ListArray.from_arrays(arr.offsets, values, mask=mask)
    if isinstance(t, MapType) and pa.types.is_map(arr.type):
        keys = _convert(arr.keys, t.key_type, f"{path}.key")
        items = _convert(arr.items, t.value_type, f"{path}.value")
        return pa.MapArray.from_arrays(arr.offsets, keys, items, mask=mask)
    return arr


def from_spark(table: pa.Table, schema: Schema) -> pa.Table:
    """``table`` (columns named as in ``schema``) with uuid, time and ns timestamp columns
    turned back into their Iceberg Arrow forms."""
    columns = []
    for name in table.column_names:
        col = table.column(name)
        try:
            f = schema.find_field(name)
        except ValidationError:
            columns.append(col)
            continue
        if _needs(f.field_type):
            col = pa.chunked_array(
                [_convert(c, f.field_type, name) for c in col.chunks] or [pa.array([], col.type)]
            )
        columns.append(col)
    return pa.Table.from_arrays(columns, names=table.column_names)
