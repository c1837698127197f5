"""Avro data files, for tables whose ``write.format.default`` is ``avro``.

Files are laid out as Iceberg Java's Avro writer lays them out, so that Java and icefloe read
them by field id: every record field carries ``field-id``, arrays ``element-id``, maps
``key-id`` and ``value-id``; optional values are ``["null", T]`` unions with a null default;
dates, times, timestamps (``adjust-to-utc`` true for zoned ones), decimals (fixed of the
fewest bytes the precision needs) and UUIDs (``uuid_fixed``) carry Avro logical types; maps
with string keys are Avro maps, others arrays of ``k<id>_v<id>`` key/value records marked
``"logicalType": "map"``; names Avro does not allow are rewritten as Java rewrites them
(``a-b`` -> ``a_x2Db``), the ids still naming the columns. The header keeps the table schema as
``iceberg.schema``.

The records are encoded in Rust (blocks of about 1 MiB, encoded and compressed in parallel);
``write.avro.compression-codec`` (default ``gzip``, i.e. deflate, as Java) and
``write.avro.compression-level`` configure it. Avro keeps no column statistics, so the file's
metrics come from the Arrow data written, as for ORC. Variant, geometry, geography and unknown
columns have no Avro mapping here and are refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from icefloe import _native
from icefloe.exceptions import UnsupportedFeatureError
from icefloe.properties import TableProperties, avro_compression_level, enum_property
from icefloe.schema import Schema
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
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
    UUIDType,
)

__all__ = ["AvroOptions", "avro_schema_json", "is_avro", "write_avro"]

_T = TableProperties

_PRIMITIVE: dict[type[IcebergType], Any] = {
    BooleanType: "boolean",
    IntegerType: "int",
    LongType: "long",
    FloatType: "float",
    DoubleType: "double",
    StringType: "string",
    BinaryType: "bytes",
    DateType: {"type": "int", "logicalType": "date"},
    TimeType: {"type": "long", "logicalType": "time-micros"},
    TimestampType: {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": False},
    TimestamptzType: {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": True},
    TimestampNanoType: {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": False},
    TimestamptzNanoType: {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": True},
}


@dataclass(frozen=True)
class AvroOptions:
    """The Avro writer settings of a table's ``write.avro.*`` properties."""

    codec: str = "gzip"
    level: int | None = None

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> AvroOptions:
        codec = enum_property(props, _T.AVRO_COMPRESSION, _T.AVRO_COMPRESSION_DEFAULT)
        return AvroOptions(codec=codec, level=avro_compression_level(props))


def is_avro(props: Mapping[str, str]) -> bool:
    """Whether a table's new data files are Avro (``write.format.default``)."""
    fmt = enum_property(props, _T.DEFAULT_FILE_FORMAT, _T.DEFAULT_FILE_FORMAT_DEFAULT)
    return fmt == "avro"


def _compatible_name(name: str) -> str:
    """``name`` as an Avro name: characters Avro does not allow become ``_x<HEX>``, a leading
    digit gets a ``_`` before it (Iceberg Java's rule)."""

    def ok(c: str, first: bool) -> bool:
        return c == "_" or ("a" <= c.lower() <= "z") or (not first and "0" <= c <= "9")

    if name and all(ok(c, i == 0) for i, c in enumerate(name)):
        return name
    out = []
    for i, c in enumerate(name):
        if ok(c, i == 0):
            out.append(c)
        elif i == 0 and "0" <= c <= "9":
            out.append("_" + c)
        else:
            out.append(f"_x{ord(c):X}")
    return "".join(out) or "_"


def _decimal_size(precision: int) -> int:
    """The fewest bytes whose two's complement holds every value of ``precision`` digits."""
    size = 1
    while 2 ** (8 * size - 1) - 1 < 10**precision - 1:
        size += 1
    return size


class _SchemaBuilder:
    """Iceberg types to Avro schema JSON; a named type is defined once, then referenced."""

    def __init__(self) -> None:
        self.defined: set[str] = set()

    def named(self, name: str, body: dict[str, Any]) -> Any:
        if name in self.defined:
            return name
        self.defined.add(name)
        return {**body, "name": name}

    def field(self, f: NestedField) -> dict[str, Any]:
        t = self.type(f.field_type, f.field_id)
        out: dict[str, Any] = {"name": _compatible_name(f.name)}
        if f.required:
            out["type"] = t
        else:
            out["type"] = ["null", t]
            out["default"] = None
        out["field-id"] = f.field_id
        return out

    def optional(self, t: IcebergType, required: bool, field_id: int) -> Any:
        inner = self.type(t, field_id)
        return inner if required else ["null", inner]

    def type(self, t: IcebergType, field_id: int) -> Any:
        prim = _PRIMITIVE.get(type(t))
        if prim is not None:
            return prim
        if isinstance(t, DecimalType):
            return self.named(
                f"decimal_{t.precision}_{t.scale}",
                {
                    "type": "fixed",
                    "size": _decimal_size(t.precision),
                    "logicalType": "decimal",
                    "precision": t.precision,
                    "scale": t.scale,
                },
            )
        if isinstance(t, UUIDType):
            return self.named("uuid_fixed", {"type": "fixed", "size": 16, "logicalType": "uuid"})
        if isinstance(t, FixedType):
            return self.named(f"fixed_{t.length}", {"type": "fixed", "size": t.length})
        if isinstance(t, StructType):
            return self.named(
                f"r{field_id}",
                {"type": "record", "fields": [self.field(f) for f in t.fields]},
            )
        if isinstance(t, ListType):
            return {
                "type": "array",
                "items": self.optional(t.element_type, t.element_required, t.element_id),
                "element-id": t.element_id,
            }
        if isinstance(t, MapType):
            value = self.optional(t.value_type, t.value_required, t.value_id)
            if isinstance(t.key_type, StringType):
                return {
                    "type": "map",
                    "values": value,
                    "key-id": t.key_id,
                    "value-id": t.value_id,
                }
            pair = self.named(
                f"k{t.key_id}_v{t.value_id}",
                {
                    "type": "record",
                    "fields": [
                        {
                            "name": "key",
                            "type": self.type(t.key_type, t.key_id),
                            "field-id": t.key_id,
                        },
                        {"name": "value", "type": value, "field-id": t.value_id},
                    ],
                },
            )
            return {"type": "array", "items": pair, "logicalType": "map"}
        raise UnsupportedFeatureError(
            f"{t} columns cannot be written to Avro data files; "
            "set write.format.default to parquet for this table"
        )


def avro_schema_json(schema: Schema) -> str:
    """The Avro writer schema of data files of ``schema`` (see the module docs)."""
    b = _SchemaBuilder()
    root = {"type": "record", "name": "table", "fields": [b.field(f) for f in schema.fields]}
    return json.dumps(root, separators=(",", ":"))


def _plain(table: pa.Table) -> list[pa.RecordBatch]:
    """``table``'s batches with extension columns (UUID) as their storage."""
    fields = []
    for f in table.schema:
        t = f.type.storage_type if isinstance(f.type, pa.BaseExtensionType) else f.type
        fields.append(pa.field(f.name, t, f.nullable))
    plain = pa.schema(fields)
    out = []
    for batch in table.to_batches():
        cols = [c.storage if isinstance(c.type, pa.BaseExtensionType) else c for c in batch.columns]
        out.append(pa.RecordBatch.from_arrays(cols, schema=plain))
    return out


def write_avro(
    sink: pa.NativeFile, table: pa.Table, schema: Schema, schema_json: str, options: AvroOptions
) -> None:
    """``table`` (in the Arrow schema of ``schema``) written to ``sink`` as one Avro file."""
    meta = [("iceberg.schema", json.dumps(schema.to_json()).encode())]
    data = _native.write_avro_file(
        _plain(table), schema_json, metadata=meta, codec=options.codec, level=options.level
    )
    sink.write(data)
