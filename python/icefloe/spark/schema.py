"""Spark schemas from Iceberg schemas, and Arrow batches shaped for them.

Type mapping (Iceberg -> Spark), as Iceberg's own Spark runtime does where Spark has a type:

========================  =====================================================================
boolean, int, long        BooleanType, IntegerType, LongType
float, double             FloatType, DoubleType
decimal(P,S)              DecimalType(P, S)
date                      DateType
time                      LongType (microseconds from midnight: Spark has no time of day type
                          that Arrow exchange supports)
timestamp                 TimestampNTZType
timestamptz               TimestampType (instants; shown in the session time zone)
timestamp_ns(tz)          TimestampNTZType / TimestampType (Spark keeps microseconds: values
                          are rounded down to the microsecond, as Iceberg Java does)
string                    StringType
uuid                      StringType (canonical 36-character form)
fixed[L], binary          BinaryType
geometry, geography       BinaryType (WKB)
variant                   VariantType (Spark's Arrow form: ``struct<value, metadata>``, the
                          same encoding, the metadata field tagged ``variant: true``)
unknown                   NullType
struct, list, map         StructType, ArrayType, MapType (nullability from ``required``)
========================  =====================================================================

Every Spark field keeps its Iceberg field id in its metadata under ``iceberg.id`` (and
``iceberg.element-id``, ``iceberg.key-id``, ``iceberg.value-id`` for the list or map it holds),
so a DataFrame column can be traced back to the table column it came from.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import UnsupportedFeatureError
from icefloe.schema import Schema
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
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
    VariantType,
)

__all__ = [
    "FIELD_ID",
    "arrow_for_spark",
    "spark_arrow_type",
    "spark_schema",
    "spark_type",
    "to_spark_batch",
    "without_metadata",
]

FIELD_ID = "iceberg.id"
ELEMENT_ID = "iceberg.element-id"
KEY_ID = "iceberg.key-id"
VALUE_ID = "iceberg.value-id"


def _field_metadata(f: NestedField) -> dict[str, Any]:
    meta: dict[str, Any] = {FIELD_ID: f.field_id}
    t = f.field_type
    if isinstance(t, ListType):
        meta[ELEMENT_ID] = t.element_id
    elif isinstance(t, MapType):
        meta[KEY_ID] = t.key_id
        meta[VALUE_ID] = t.value_id
    if f.doc is not None:
        meta["comment"] = f.doc
    return meta


def spark_type(t: IcebergType) -> Any:
    """The ``pyspark.sql.types.DataType`` of an Iceberg type."""
    from pyspark.sql import types as T

    if isinstance(t, StructType):
        return T.StructType(
            [
                T.StructField(f.name, spark_type(f.field_type), not f.required, _field_metadata(f))
                for f in t.fields
            ]
        )
    if isinstance(t, ListType):
        return T.ArrayType(spark_type(t.element_type), not t.element_required)
    if isinstance(t, MapType):
        return T.MapType(spark_type(t.key_type), spark_type(t.value_type), not t.value_required)
    if isinstance(t, DecimalType):
        return T.DecimalType(t.precision, t.scale)
    if isinstance(t, VariantType):
        return T.VariantType()
    simple = {
        BooleanType: T.BooleanType,
        IntegerType: T.IntegerType,
        LongType: T.LongType,
        FloatType: T.FloatType,
        DoubleType: T.DoubleType,
        DateType: T.DateType,
        TimeType: T.LongType,
        TimestampType: T.TimestampNTZType,
        TimestampNanoType: T.TimestampNTZType,
        TimestamptzType: T.TimestampType,
        TimestamptzNanoType: T.TimestampType,
        StringType: T.StringType,
        UUIDType: T.StringType,
        FixedType: T.BinaryType,
        BinaryType: T.BinaryType,
        GeometryType: T.BinaryType,
        GeographyType: T.BinaryType,
        UnknownType: T.NullType,
    }.get(type(t))
    if simple is None:
        raise UnsupportedFeatureError(f"Iceberg type {t} has no Spark type")
    return simple()


def spark_schema(schema: Schema) -> Any:
    """The Spark ``StructType`` of an Iceberg schema (field ids in column metadata)."""
    return spark_type(schema.as_struct())


# ------------------------------------------------------------------------ Arrow for Spark


def spark_arrow_type(t: IcebergType) -> pa.DataType:
    """The Arrow type Spark exchanges for the Spark type of ``t`` (see the module table)."""
    if isinstance(t, StructType):
        return pa.struct([_arrow_field(f) for f in t.fields])
    if isinstance(t, ListType):
        return pa.list_(pa.field("element", spark_arrow_type(t.element_type)))
    if isinstance(t, MapType):
        return pa.map_(
            pa.field("key", spark_arrow_type(t.key_type), nullable=False),
            pa.field("value", spark_arrow_type(t.value_type)),
        )
    if isinstance(t, VariantType):
        return _SPARK_VARIANT
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    simple = {
        BooleanType: pa.bool_(),
        IntegerType: pa.int32(),
        LongType: pa.int64(),
        FloatType: pa.float32(),
        DoubleType: pa.float64(),
        DateType: pa.date32(),
        TimeType: pa.int64(),
        TimestampType: pa.timestamp("us"),
        TimestampNanoType: pa.timestamp("us"),
        TimestamptzType: pa.timestamp("us", tz="UTC"),
        TimestamptzNanoType: pa.timestamp("us", tz="UTC"),
        StringType: pa.string(),
        UUIDType: pa.string(),
        FixedType: pa.binary(),
        BinaryType: pa.binary(),
        GeometryType: pa.binary(),
        GeographyType: pa.binary(),
        UnknownType: pa.null(),
    }.get(type(t))
    if simple is None:
        raise UnsupportedFeatureError(f"Iceberg type {t} has no Spark type")
    return simple


#: How PySpark exchanges ``VariantType`` through Arrow (``pyspark.sql.pandas.types``): the
#: value first, then the metadata, whose field metadata marks the struct as a variant.
_SPARK_VARIANT = pa.struct(
    [
        pa.field("value", pa.binary(), nullable=False),
        pa.field("metadata", pa.binary(), nullable=False, metadata={b"variant": b"true"}),
    ]
)


def _variant_for_spark(arr: pa.Array) -> pa.Array:
    """An encoded variant column (``struct<metadata, value>``) in Spark's Arrow form; null
    rows get empty bytes in both (Spark's fields are not nullable)."""
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    mask = arr.is_null() if arr.null_count else None
    children = [
        pc.fill_null(arr.field(name), b"").cast(pa.binary()) for name in ("value", "metadata")
    ]
    return pa.StructArray.from_arrays(children, fields=list(_SPARK_VARIANT), mask=mask)


def _arrow_field(f: NestedField) -> pa.Field:
    return pa.field(f.name, spark_arrow_type(f.field_type), nullable=not f.required)


def without_metadata(t: Any) -> Any:
    """A Spark data type with the metadata of its fields (ids, comments) removed, at every
    level: what two types are compared by when only names, types and nullability matter."""
    from pyspark.sql import types as T

    if isinstance(t, T.StructType):
        return T.StructType(
            [T.StructField(f.name, without_metadata(f.dataType), f.nullable) for f in t.fields]
        )
    if isinstance(t, T.ArrayType):
        return T.ArrayType(without_metadata(t.elementType), t.containsNull)
    if isinstance(t, T.MapType):
        return T.MapType(
            without_metadata(t.keyType), without_metadata(t.valueType), t.valueContainsNull
        )
    return t


def arrow_for_spark(fields: list[NestedField]) -> pa.Schema:
    """The Arrow schema of batches handed to Spark for columns ``fields``."""
    return pa.schema([_arrow_field(f) for f in fields])


_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
# Positions of the 32 hex digits inside the 36-character canonical UUID form.
_UUID_SLOTS = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])


def _uuid_strings(arr: pa.Array) -> pa.Array:
    """16-byte UUIDs as canonical lower-case strings (vectorised: no per-value Python)."""
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    n = len(arr)
    if n == 0:
        return pa.array([], pa.string())
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * 16 : (arr.offset + n) * 16]
    raw = raw.reshape(n, 16)
    digits = np.empty((n, 32), dtype=np.uint8)
    digits[:, 0::2] = _HEX[raw >> 4]
    digits[:, 1::2] = _HEX[raw & 15]
    out = np.full((n, 36), ord("-"), dtype=np.uint8)
    out[:, _UUID_SLOTS] = digits
    offsets = np.arange(0, 36 * (n + 1), 36, dtype=np.int32)
    validity = arr.buffers()[0] if arr.null_count else None
    if validity is not None and arr.offset:
        validity = pa.array(arr.is_valid()).buffers()[1]
    return pa.StringArray.from_buffers(
        n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(out.tobytes()), validity, arr.null_count
    )


def _floor_micros(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """Nanosecond timestamps as microseconds rounded down (toward the past, as Java's
    ``Math.floorDiv``; Arrow's cast rounds toward zero, moving values before 1970 forward)."""
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    nanos = arr.view(pa.int64())
    quotient = pc.divide(nanos, 1000)  # integer division: toward zero
    below = pc.less(pc.subtract(nanos, pc.multiply(quotient, 1000)), 0)
    micros = pc.subtract(quotient, below.cast(pa.int64()))
    return micros.cast(target)


def _convert(arr: pa.Array, t: IcebergType, target: pa.DataType) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(t, UUIDType):
        return _uuid_strings(arr)
    if isinstance(t, TimeType):
        return arr.cast(pa.int64())
    if isinstance(t, TimestampNanoType | TimestamptzNanoType):
        return _floor_micros(arr, target)
    if isinstance(t, VariantType):
        return _variant_for_spark(arr)
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    if isinstance(t, StructType):
        children = [
            _convert(arr.field(i), f.field_type, target.field(i).type)
            for i, f in enumerate(t.fields)
        ]
        # a struct of no fields (the _partition of an unpartitioned table) takes its length
        # from the mask alone
        mask = arr.is_null() if arr.null_count or not children else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if isinstance(t, ListType | MapType) and arr.offset:
        arr = pa.concat_arrays([arr])  # a copy starting at offset 0: values line up
    mask = arr.is_null() if arr.null_count else None
    if isinstance(t, ListType):
        if not pa.types.is_list(arr.type):
            arr = arr.cast(pa.list_(arr.type.value_field))
        values = _convert(arr.values, t.element_type, target.value_type)
        return pa.ListArray.from_arrays(arr.offsets, values, type=target, mask=mask)
    if isinstance(t, MapType):
        keys = _convert(arr.keys, t.key_type, target.key_type)
        items = _convert(arr.items, t.value_type, target.item_type)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=mask)
    if arr.type != target:
        return arr.cast(target)
    return arr


def to_spark_batch(
    batch: pa.RecordBatch, fields: list[NestedField], target: pa.Schema
) -> pa.RecordBatch:
    """``batch`` (columns in the order of ``fields``) converted to ``target`` for Spark."""
    columns = [
        _convert(batch.column(i), f.field_type, target.field(i).type) for i, f in enumerate(fields)
    ]
    return pa.RecordBatch.from_arrays(columns, schema=target)
