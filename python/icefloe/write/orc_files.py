"""ORC data files, for tables whose ``write.format.default`` is ``orc``.

Files are laid out as Iceberg Java's ORC writer lays them out, so that Java, PyIceberg and
icefloe read them by field id: every ORC type carries ``iceberg.id`` and ``iceberg.required``
attributes, longs ``iceberg.long-type`` (``LONG``, or ``TIME`` for a time stored as
microseconds: ORC has no time type), timestamps ``iceberg.timestamp-unit``, binaries
``iceberg.binary-type`` (``BINARY``, ``UUID`` or ``FIXED`` with ``iceberg.length``: ORC has no
fixed-length binary). Timestamps with a zone are ORC ``timestamp with local time zone``, those
without plain ``timestamp``, as in Java. pyarrow's ORC reader gives every timestamp in
nanoseconds, so instants outside 1677-2262 are refused rather than written unreadable; so are
instants before 1970 with a fraction of a second, which Iceberg Java's ORC reader reads one
second early from files of the ORC C++ writer.

pyarrow's ORC writer (the ORC C++ library) encodes the file; ``write.orc.compression-codec``
(default ``zlib``, as Java) and ``write.orc.stripe-size-bytes`` (default 64 MiB) configure it.
The writer does not hand back ORC's column statistics, so the file's metrics come from the Arrow
data written (:func:`icefloe.write.metrics.compute_metrics` without a footer): the same counts
and bounds as for Parquet, no column sizes. Variant and geometry columns have no ORC mapping and
are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc

from icefloe.exceptions import UnsupportedFeatureError
from icefloe.properties import ORC_CODECS, TableProperties, enum_property, int_property
from icefloe.schema import Schema
from icefloe.types import (
    BinaryType,
    FixedType,
    GeographyType,
    GeometryType,
    IcebergType,
    ListType,
    LongType,
    MapType,
    NestedField,
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

__all__ = ["OrcOptions", "is_orc", "orc_arrow_schema", "to_orc_table", "write_orc"]

_T = TableProperties


@dataclass(frozen=True)
class OrcOptions:
    """The ORC writer settings of a table's ``write.orc.*`` properties."""

    compression: str = "zlib"
    stripe_size_bytes: int = _T.ORC_STRIPE_SIZE_BYTES_DEFAULT

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> OrcOptions:
        codec = enum_property(props, _T.ORC_COMPRESSION, _T.ORC_COMPRESSION_DEFAULT)
        return OrcOptions(
            compression=ORC_CODECS[codec],
            stripe_size_bytes=int_property(
                props, _T.ORC_STRIPE_SIZE_BYTES, _T.ORC_STRIPE_SIZE_BYTES_DEFAULT
            ),
        )


def is_orc(props: Mapping[str, str]) -> bool:
    """Whether a table's new data files are ORC (``write.format.default``)."""
    fmt = enum_property(props, _T.DEFAULT_FILE_FORMAT, _T.DEFAULT_FILE_FORMAT_DEFAULT)
    return fmt == "orc"


def _attributes(f: NestedField) -> dict[bytes, bytes]:
    t = f.field_type
    meta = {
        b"iceberg.id": str(f.field_id).encode(),
        b"iceberg.required": b"true" if f.required else b"false",
    }
    if isinstance(t, LongType):
        meta[b"iceberg.long-type"] = b"LONG"
    elif isinstance(t, TimeType):
        meta[b"iceberg.long-type"] = b"TIME"
    elif isinstance(t, (TimestampType, TimestamptzType)):
        meta[b"iceberg.timestamp-unit"] = b"MICROS"
    elif isinstance(t, (TimestampNanoType, TimestamptzNanoType)):
        meta[b"iceberg.timestamp-unit"] = b"NANOS"
    elif isinstance(t, BinaryType):
        meta[b"iceberg.binary-type"] = b"BINARY"
    elif isinstance(t, UUIDType):
        meta[b"iceberg.binary-type"] = b"UUID"
    elif isinstance(t, FixedType):
        meta[b"iceberg.binary-type"] = b"FIXED"
        meta[b"iceberg.length"] = str(t.length).encode()
    return meta


def _orc_type(t: IcebergType, arrow: pa.DataType) -> pa.DataType:
    """The Arrow type pyarrow writes as the ORC type Java uses for Iceberg type ``t``."""
    if isinstance(t, StructType):
        return pa.struct([_orc_field(c, arrow.field(i)) for i, c in enumerate(t.fields)])
    if isinstance(t, ListType):
        return pa.list_(_orc_field(t.element_field, arrow.value_field))
    if isinstance(t, MapType):
        return pa.map_(
            _orc_field(t.key_field, arrow.key_field), _orc_field(t.value_field, arrow.item_field)
        )
    if isinstance(t, TimeType):
        return pa.int64()
    if isinstance(t, (UUIDType, FixedType)):
        return pa.binary()
    if isinstance(t, (VariantType, GeometryType, GeographyType)):
        raise UnsupportedFeatureError(
            f"{t} columns cannot be written to ORC files (icefloe writes them to Parquet "
            "only); set write.format.default=parquet"
        )
    if isinstance(t, UnknownType):
        # (unknown columns and struct fields are left out of files; a list element or map
        # value cannot be: ORC has no null-only type)
        raise UnsupportedFeatureError(
            "a list element or map value of type unknown cannot be written to ORC files; "
            "set write.format.default=parquet"
        )
    return arrow


def _orc_field(f: NestedField, arrow: pa.Field) -> pa.Field:
    return pa.field(arrow.name, _orc_type(f.field_type, arrow.type), not f.required, _attributes(f))


def orc_arrow_schema(schema: Schema, arrow: pa.Schema) -> pa.Schema:
    """The Arrow schema an ORC file of ``schema`` is written in (``arrow``: the schema's own
    Arrow form, the rows' schema)."""
    return pa.schema([_orc_field(f, arrow.field(i)) for i, f in enumerate(schema.fields)])


def _to_orc_array(arr: pa.Array, target: pa.DataType) -> pa.Array:
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    if arr.offset:
        # pyarrow's ORC writer reads a struct's children from offset 0 whatever their own
        # offset (a partition's rows sliced from a larger batch came out as another
        # partition's): every array it gets starts at 0
        arr = pa.concat_arrays([arr])
    if pa.types.is_struct(target):
        # flatten: the children cut to the array's offset and length (``field`` is not)
        children = [
            _to_orc_array(child, target.field(i).type) for i, child in enumerate(arr.flatten())
        ]
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(target):
        keys = _to_orc_array(arr.keys, target.key_type)
        items = _to_orc_array(arr.items, target.item_type)
        mask = arr.is_null() if arr.null_count else None
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=mask)
    if pa.types.is_list(target):
        values = _to_orc_array(arr.values, target.value_type)
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(arr.offsets, values, type=target, mask=mask)
    if pa.types.is_timestamp(arr.type) and arr.type.unit == "us":
        _check_nanosecond_range(arr)
    if pa.types.is_timestamp(arr.type):
        _check_pre_epoch_fractions(arr)
    if pa.types.is_time64(arr.type):
        return arr.view(pa.int64()) if target == pa.int64() else arr
    if arr.type != target:
        return arr.cast(target)
    return arr


#: Microseconds of the furthest instants pyarrow's ORC reader can give (it reads every ORC
#: timestamp as nanoseconds: 1677-09-21 to 2262-04-11).
_NANOSECOND_RANGE_US = (-(2**63) // 1000 + 1, (2**63 - 1) // 1000)


def _check_nanosecond_range(arr: pa.Array) -> None:
    """Refuses microsecond timestamps outside what the ORC reader can give back."""
    if arr.null_count == len(arr):
        return
    bounds = pc.min_max(arr.view(pa.int64()))
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    if lo < _NANOSECOND_RANGE_US[0] or hi > _NANOSECOND_RANGE_US[1]:
        raise UnsupportedFeatureError(
            "timestamps before 1677-09-21 or after 2262-04-11 cannot be written to ORC files: "
            "pyarrow's ORC reader (icefloe's and PyIceberg's) reads ORC timestamps as "
            "nanoseconds; set write.format.default=parquet for such values"
        )


_TICKS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _check_pre_epoch_fractions(arr: pa.Array) -> None:
    """Refuses timestamps before 1970 with a fraction of a second: the ORC C++ writer encodes
    them so that Iceberg Java's ORC reader reads them one second early (pyarrow reads them
    right), which would corrupt the table for Java silently."""
    per_second = _TICKS_PER_SECOND[arr.type.unit]
    if per_second == 1 or arr.null_count == len(arr):
        return
    ticks = arr.view(pa.int64())
    if (pc.min(ticks).as_py() or 0) >= 0:
        return
    whole = pc.multiply(pc.divide(ticks, per_second), per_second)
    bad = pc.and_(pc.less(ticks, 0), pc.not_equal(ticks, whole))
    if pc.any(bad).as_py():
        raise UnsupportedFeatureError(
            "timestamps before 1970 with a fraction of a second cannot be written to ORC files "
            "that Iceberg Java reads right (its ORC reader reads them one second early); set "
            "write.format.default=parquet for such values"
        )


def to_orc_table(table: pa.Table, orc_schema: pa.Schema) -> pa.Table:
    """``table``'s rows in ``orc_schema`` (times as longs, UUIDs and fixed as binary)."""
    columns = [
        pa.chunked_array(
            [_to_orc_array(c, orc_schema.field(i).type) for c in col.chunks],
            type=orc_schema.field(i).type,
        )
        for i, col in enumerate(table.columns)
    ]
    return pa.Table.from_arrays(columns, schema=orc_schema)


def write_orc(sink: pa.NativeFile, table: pa.Table, options: OrcOptions) -> None:
    """``table`` (already in its ORC schema) as one ORC file into ``sink``."""
    writer = orc.ORCWriter(
        sink, compression=options.compression, stripe_size=options.stripe_size_bytes
    )
    writer.write(table)
    writer.close()
