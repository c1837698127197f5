"""Conversion between Iceberg schemas and Arrow schemas (spec Appendix A, Parquet mapping).

Field ids travel as Arrow field metadata ``PARQUET:field_id`` (a decimal string) on every field,
including list elements and map keys and values, which is how pyarrow reads and writes Parquet
field ids. Type mapping (Iceberg -> Arrow):

========================  ============================================================
boolean, int, long        bool, int32, int64
float, double             float32, float64
decimal(P,S)              decimal128(P, S)
date, time                date32, time64[us]
timestamp / timestamptz   timestamp[us] / timestamp[us, tz=UTC]
timestamp_ns (tz)         timestamp[ns] / timestamp[ns, tz=UTC]
string, binary            string, binary (large_string, large_binary with large_types)
uuid                      the canonical ``arrow.uuid`` extension (fixed_size_binary[16]
                          storage, written to Parquet as UUID), or fixed_size_binary[16]
fixed[L]                  fixed_size_binary[L]
unknown                   null
variant                   struct<metadata: binary, value: binary> tagged with extension name
                          ``arrow.parquet.variant`` (its children carry no field ids)
geometry, geography       the ``geoarrow.wkb`` extension (:class:`icefloe.geo.WkbType`,
                          binary storage, CRS and edges in its metadata), written to
                          Parquet as GEOMETRY / GEOGRAPHY; geography with an edge algorithm
                          pyarrow cannot write (not spherical) is binary tagged
                          ``geoarrow.wkb`` by field metadata
struct, list, map         struct, list<element>, map<key, value>
========================  ============================================================

Arrow -> Iceberg also accepts large/view string and binary types, large and fixed-size lists,
smaller integer types (int8/int16/uint8/uint16 -> int, uint32 -> long), float16, date64,
time32, s/ms timestamps (-> timestamp), any time zone (-> timestamptz: Arrow stores instants in
UTC), decimal32/64/256 up to precision 38 and dictionary-encoded values.
"""

from __future__ import annotations

import collections
import functools
import itertools
import json
import zlib
from collections.abc import Iterator

import pyarrow as pa

from icefloe.exceptions import ValidationError
from icefloe.geo import parse_metadata, wkb_type
from icefloe.name_mapping import MappedField, NameMapping
from icefloe.schema import Schema
from icefloe.types import (
    DEFAULT_EDGE_ALGORITHM,
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
    "FIELD_IDS_DIGEST_KEY",
    "FIELD_ID_KEY",
    "apply_name_mapping",
    "arrow_to_schema",
    "field_id_of",
    "field_ids_digest",
    "has_field_ids",
    "not_a_schema",
    "schema_to_arrow",
    "to_schema",
    "type_to_arrow",
]

#: The Arrow field metadata key pyarrow maps to Parquet field ids.
FIELD_ID_KEY = b"PARQUET:field_id"
DOC_KEY = b"doc"
EXTENSION_NAME_KEY = b"ARROW:extension:name"
EXTENSION_METADATA_KEY = b"ARROW:extension:metadata"
VARIANT_EXTENSION = b"arrow.parquet.variant"
WKB_EXTENSION = b"geoarrow.wkb"


# --------------------------------------------------------------------------------- to Arrow


def schema_to_arrow(
    schema: Schema,
    include_field_ids: bool = True,
    large_types: bool = False,
    uuid_extension: bool = True,
) -> pa.Schema:
    """The Arrow schema of ``schema``: field ids as ``PARQUET:field_id`` metadata (unless
    ``include_field_ids`` is false), docs as ``doc`` metadata, required fields non-nullable."""
    opts = _Opts(include_field_ids, large_types, uuid_extension)
    return pa.schema([_field_to_arrow(f, opts) for f in schema.fields])


def type_to_arrow(
    t: IcebergType, large_types: bool = False, uuid_extension: bool = True
) -> pa.DataType:
    """The Arrow type of an Iceberg type (nested fields carry their field ids). Memoized:
    readers ask for it per column of every file."""
    try:
        return _cached_type_to_arrow(t, large_types, uuid_extension)
    except TypeError:  # unhashable: a nested field's default is a JSON object or list
        return _type_to_arrow(t, _Opts(True, large_types, uuid_extension))[0]


@functools.lru_cache(maxsize=1024)
def _cached_type_to_arrow(t: IcebergType, large_types: bool, uuid_extension: bool) -> pa.DataType:
    return _type_to_arrow(t, _Opts(True, large_types, uuid_extension))[0]


class _Opts:
    __slots__ = ("field_ids", "large", "uuid_extension")

    def __init__(self, field_ids: bool, large: bool, uuid_extension: bool) -> None:
        self.field_ids = field_ids
        self.large = large
        self.uuid_extension = uuid_extension


def _field_to_arrow(f: NestedField, opts: _Opts) -> pa.Field:
    arrow_type, extra = _type_to_arrow(f.field_type, opts)
    meta: dict[bytes, bytes] = {}
    if opts.field_ids:
        meta[FIELD_ID_KEY] = str(f.field_id).encode()
    if f.doc is not None:
        meta[DOC_KEY] = f.doc.encode()
    meta.update(extra)
    return pa.field(f.name, arrow_type, nullable=not f.required, metadata=meta or None)


def _type_to_arrow(t: IcebergType, opts: _Opts) -> tuple[pa.DataType, dict[bytes, bytes]]:
    """The Arrow type and any extra field metadata (extension tags) for ``t``."""
    if isinstance(t, StructType):
        return pa.struct([_field_to_arrow(c, opts) for c in t.fields]), {}
    if isinstance(t, ListType):
        element = _field_to_arrow(t.element_field, opts)
        return (pa.large_list(element) if opts.large else pa.list_(element)), {}
    if isinstance(t, MapType):
        key = _field_to_arrow(t.key_field, opts)
        value = _field_to_arrow(t.value_field, opts)
        return pa.map_(key, value), {}
    if isinstance(t, VariantType):
        storage = pa.struct(
            [pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary())]
        )
        return storage, {EXTENSION_NAME_KEY: VARIANT_EXTENSION}
    if isinstance(t, GeometryType | GeographyType):
        edges = t.algorithm if isinstance(t, GeographyType) else None
        ext = wkb_type(t.crs, edges, opts.large)
        if ext is not None:
            return ext, {}
        meta = json.dumps({"crs": t.crs, "edges": edges}).encode()
        return pa.binary(), {EXTENSION_NAME_KEY: WKB_EXTENSION, EXTENSION_METADATA_KEY: meta}
    if isinstance(t, UUIDType):
        return (pa.uuid() if opts.uuid_extension else pa.binary(16)), {}
    if isinstance(t, StringType):
        return (pa.large_string() if opts.large else pa.string()), {}
    if isinstance(t, BinaryType):
        return (pa.large_binary() if opts.large else pa.binary()), {}
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale), {}
    if isinstance(t, FixedType):
        return pa.binary(t.length), {}
    simple = _SIMPLE_TO_ARROW.get(type(t))
    if simple is None:
        raise ValidationError(f"no Arrow type for Iceberg type {t}")
    return simple, {}


_SIMPLE_TO_ARROW: dict[type, pa.DataType] = {
    UnknownType: pa.null(),
    BooleanType: pa.bool_(),
    IntegerType: pa.int32(),
    LongType: pa.int64(),
    FloatType: pa.float32(),
    DoubleType: pa.float64(),
    DateType: pa.date32(),
    TimeType: pa.time64("us"),
    TimestampType: pa.timestamp("us"),
    TimestamptzType: pa.timestamp("us", tz="UTC"),
    TimestampNanoType: pa.timestamp("ns"),
    TimestamptzNanoType: pa.timestamp("ns", tz="UTC"),
}


# --------------------------------------------------------------------------------- from Arrow


#: Parquet key-value metadata icefloe writes: :func:`field_ids_digest` of the file's schema.
FIELD_IDS_DIGEST_KEY = "icefloe.field-ids.crc32"


def field_ids_digest(schema: pa.Schema) -> str:
    """A CRC-32 (hex) of every field's id and nullability, nested fields included, in order.

    Parquet footers carry no checksum: a damaged field id would silently move or null a
    column. Written into each file's key-value metadata and compared on read."""
    parts: list[str] = []
    todo: list[pa.Field | str] = list(reversed(list(schema)))
    while todo:
        f = todo.pop()
        if isinstance(f, str):
            parts.append(f)
            continue
        parts.append(f"{f.metadata.get(FIELD_ID_KEY, b'-').decode() if f.metadata else '-'}")
        parts.append("" if f.nullable else "!")
        t = f.type
        children = [t.field(i) for i in range(t.num_fields)] if t.num_fields else []
        if pa.types.is_map(t):
            children = [t.key_field, t.item_field]
        if children:
            todo.append(")")
            todo.extend(reversed(children))
            todo.append("(")
        else:
            todo.append(",")
    return format(zlib.crc32("".join(parts).encode()), "08x")


def field_id_of(f: pa.Field) -> int | None:
    """The ``PARQUET:field_id`` of an Arrow field, or ``None``; raises on a malformed id."""
    meta = f.metadata
    if not meta or FIELD_ID_KEY not in meta:
        return None
    raw = meta[FIELD_ID_KEY]
    try:
        return int(raw)
    except ValueError:
        raise ValidationError(
            f"Arrow field {f.name!r} has a non-integer field id {raw!r}"
        ) from None


def arrow_to_schema(
    arrow_schema: pa.Schema, name_mapping: NameMapping | None = None, schema_id: int = 0
) -> Schema:
    """The Iceberg schema of an Arrow schema whose fields carry ``PARQUET:field_id``.

    With ``name_mapping``, fields without an id get the id the mapping gives their name path,
    and fields the mapping does not know are left out (spec "Column Projection"). Without it,
    a field without an id raises :class:`ValidationError` naming the field.
    """
    if not isinstance(arrow_schema, pa.Schema):
        raise ValidationError(f"expected a pyarrow.Schema, got {type(arrow_schema).__name__}")
    mapped = name_mapping.fields if name_mapping is not None else None
    fields = _fields_from_arrow(list(arrow_schema), mapped, "", name_mapping is not None)
    return Schema(*fields, schema_id=schema_id)


def _fields_from_arrow(
    fields: list[pa.Field],
    mapping: tuple[MappedField, ...] | None,
    prefix: str,
    mapped_mode: bool,
) -> list[NestedField]:
    out: list[NestedField] = []
    for f in fields:
        converted = _field_from_arrow(f, mapping, prefix, mapped_mode)
        if converted is not None:
            out.append(converted)
    return out


def _field_from_arrow(
    f: pa.Field,
    mapping: tuple[MappedField, ...] | None,
    prefix: str,
    mapped_mode: bool,
    name: str | None = None,
) -> NestedField | None:
    """Converts one field; ``None`` when it has no id and the mapping does not cover it."""
    name = f.name if name is None else name
    path = prefix + name
    mf = next((m for m in mapping if name in m.names), None) if mapping is not None else None
    fid = field_id_of(f)
    if fid is None:
        fid = mf.field_id if mf is not None else None
    if fid is None:
        if mapped_mode:
            return None
        raise ValidationError(f"Arrow field {path!r} has no field id ({FIELD_ID_KEY.decode()})")
    children = mf.fields if mf is not None else (None if not mapped_mode else ())
    t = _type_from_arrow(f, children, path + ".", mapped_mode)
    meta = f.metadata or {}
    doc = meta[DOC_KEY].decode() if DOC_KEY in meta else None
    required = not f.nullable and not isinstance(t, UnknownType)
    return NestedField(fid, name, t, required, doc)


def _type_from_arrow(
    f: pa.Field,
    mapping: tuple[MappedField, ...] | None,
    prefix: str,
    mapped_mode: bool,
) -> IcebergType:
    meta = f.metadata or {}
    ext = meta.get(EXTENSION_NAME_KEY)
    ext_meta = meta.get(EXTENSION_METADATA_KEY)
    t = f.type
    if isinstance(t, pa.BaseExtensionType):
        if t.extension_name == "arrow.uuid":
            return UUIDType()
        ext = t.extension_name.encode()
        serialize = getattr(t, "__arrow_ext_serialize__", None)
        ext_meta = serialize() if serialize is not None else ext_meta
        t = t.storage_type
    if ext == VARIANT_EXTENSION and pa.types.is_struct(t):
        return VariantType()
    if ext == WKB_EXTENSION and (
        pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
    ):
        return _geo_type(ext_meta)
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_struct(t):
        children = [t.field(i) for i in range(t.num_fields)]
        return StructType(*_fields_from_arrow(children, mapping, prefix, mapped_mode))
    if pa.types.is_map(t):
        key = _field_from_arrow(t.key_field, mapping, prefix, mapped_mode, "key")
        value = _field_from_arrow(t.item_field, mapping, prefix, mapped_mode, "value")
        if key is None or value is None:
            raise ValidationError(f"map {prefix[:-1]!r} has no field ids for its key and value")
        return MapType(
            key.field_id, key.field_type, value.field_id, value.field_type, value.required
        )
    if (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    ):
        element = _field_from_arrow(t.value_field, mapping, prefix, mapped_mode, "element")
        if element is None:
            raise ValidationError(f"list {prefix[:-1]!r} has no field id for its element")
        return ListType(element.field_id, element.field_type, element.required)
    return _primitive_from_arrow(t, prefix[:-1])


def _geo_type(raw: bytes | None) -> IcebergType:
    crs, edges = parse_metadata(raw)
    if edges is None:
        return GeometryType(crs)
    return GeographyType(crs, edges or DEFAULT_EDGE_ALGORITHM)


def _primitive_from_arrow(t: pa.DataType, path: str) -> IcebergType:
    types = pa.types
    if types.is_null(t):
        return UnknownType()
    if types.is_boolean(t):
        return BooleanType()
    if types.is_int8(t) or types.is_int16(t) or types.is_int32(t):
        return IntegerType()
    if types.is_uint8(t) or types.is_uint16(t):
        return IntegerType()
    if types.is_int64(t) or types.is_uint32(t):
        return LongType()
    if types.is_float16(t) or types.is_float32(t):
        return FloatType()
    if types.is_float64(t):
        return DoubleType()
    if types.is_decimal(t):
        if t.precision > 38:
            raise ValidationError(
                f"column {path!r}: decimal precision {t.precision} exceeds Iceberg's 38"
            )
        return DecimalType(t.precision, t.scale)
    if types.is_date(t):
        return DateType()
    if types.is_time(t):
        return TimeType()
    if types.is_timestamp(t):
        nano = t.unit == "ns"
        if t.tz is None:
            return TimestampNanoType() if nano else TimestampType()
        return TimestamptzNanoType() if nano else TimestamptzType()
    if types.is_string(t) or types.is_large_string(t) or types.is_string_view(t):
        return StringType()
    if types.is_fixed_size_binary(t):
        return FixedType(t.byte_width)
    if types.is_binary(t) or types.is_large_binary(t) or types.is_binary_view(t):
        return BinaryType()
    raise ValidationError(f"column {path!r}: Arrow type {t} has no Iceberg equivalent")


# --------------------------------------------------------------------------------- name mapping


def has_field_ids(arrow_schema: pa.Schema) -> bool:
    """Whether any field of ``arrow_schema``, at any depth, carries a field id. As in Iceberg
    Java, a file with one is read by its field ids alone; only a file with none at all is read
    through the table's name mapping."""
    todo = list(arrow_schema)
    while todo:
        f = todo.pop()
        if f.metadata and FIELD_ID_KEY in f.metadata:
            return True
        t = f.type.storage_type if isinstance(f.type, pa.BaseExtensionType) else f.type
        if pa.types.is_map(t):
            todo.extend((t.key_field, t.item_field))
        elif isinstance(t, pa.ListType | pa.LargeListType | pa.FixedSizeListType):
            todo.append(t.value_field)
        elif pa.types.is_struct(t):
            todo.extend(t.field(i) for i in range(t.num_fields))
    return False


def apply_name_mapping(arrow_schema: pa.Schema, name_mapping: NameMapping) -> pa.Schema:
    """``arrow_schema`` with ``PARQUET:field_id`` set from ``name_mapping`` on every field
    (nested ones included) that has no id yet; fields the mapping does not know keep no id."""
    return pa.schema(
        [_map_field(f, name_mapping.fields, f.name) for f in arrow_schema],
        metadata=arrow_schema.metadata,
    )


def _map_field(f: pa.Field, mapping: tuple[MappedField, ...], name: str) -> pa.Field:
    mf = next((m for m in mapping if name in m.names), None)
    children = mf.fields if mf is not None else ()
    t = f.type
    if pa.types.is_struct(t):
        t = pa.struct(
            [_map_field(t.field(i), children, t.field(i).name) for i in range(t.num_fields)]
        )
    elif pa.types.is_map(t):
        t = pa.map_(
            _map_field(t.key_field, children, "key"),
            _map_field(t.item_field, children, "value"),
            keys_sorted=t.keys_sorted,
        )
    elif pa.types.is_list(t):
        t = pa.list_(_map_field(t.value_field, children, "element"))
    elif pa.types.is_large_list(t):
        t = pa.large_list(_map_field(t.value_field, children, "element"))
    elif pa.types.is_fixed_size_list(t):
        t = pa.list_(_map_field(t.value_field, children, "element"), t.list_size)
    meta = dict(f.metadata or {})
    if FIELD_ID_KEY not in meta and mf is not None and mf.field_id is not None:
        meta[FIELD_ID_KEY] = str(mf.field_id).encode()
    return pa.field(f.name, t, nullable=f.nullable, metadata=meta or None)


def not_a_schema(value: object) -> str:
    """What ``value``, given where a schema is wanted, is (its kind, never its data: a
    DataFrame's rows would reach the logs), with the schema of data that has one."""
    kind = type(value).__name__
    if hasattr(value, "schema") or hasattr(value, "dtypes"):
        return (
            f"a {kind}: give its schema (pyarrow.Schema.from_pandas(df) for a pandas DataFrame, "
            "table.schema for Arrow data)"
        )
    return f"a {kind}"


def to_schema(schema: Schema | pa.Schema) -> Schema:
    """An icefloe Schema from an icefloe or pyarrow schema.

    Arrow fields need no ``PARQUET:field_id``. Ids given are kept (a partition spec or sort
    order may refer to them); fields without one, nested ones included, are numbered in field
    order (a field before its children) from one above the largest given id, or from 1. The
    new table assigns fresh ids anyway. Fixed-size lists and list views are lists. Duplicate
    column names at one level (names are case-sensitive), a field id used twice and types
    without an Iceberg equivalent are a :class:`ValidationError`.
    """
    if isinstance(schema, Schema):
        return schema
    if not isinstance(schema, pa.Schema):
        raise ValidationError(
            "a table schema must be an icefloe.schema.Schema or a pyarrow.Schema, got "
            f"{not_a_schema(schema)}"
        )
    given: list[int] = []
    _check_fields([(f.name, f) for f in schema], "", given)
    next_id = itertools.count(max([0, *given]) + 1)
    return arrow_to_schema(pa.schema([_numbered(f, next_id) for f in schema]))


def _id_children(f: pa.Field) -> list[tuple[str, pa.Field]]:
    """The nested fields of ``f`` that take Iceberg field ids, with their Iceberg names (none
    in a variant or an extension type)."""
    t = f.type
    if isinstance(t, pa.BaseExtensionType) or (
        f.metadata and f.metadata.get(EXTENSION_NAME_KEY) == VARIANT_EXTENSION
    ):
        return []
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_struct(t):
        return [(t.field(i).name, t.field(i)) for i in range(t.num_fields)]
    if pa.types.is_map(t):
        return [("key", t.key_field), ("value", t.item_field)]
    if (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    ):
        return [("element", t.value_field)]
    return []


def _check_fields(fields: list[tuple[str, pa.Field]], prefix: str, ids: list[int]) -> None:
    """Refuses duplicate names among sibling ``fields`` (and their children's); collects the
    field ids they give into ``ids``."""
    counts = collections.Counter(name for name, _ in fields)
    dups = [repr(prefix + name) for name, n in counts.items() if n > 1]
    if dups:
        raise ValidationError(f"the schema has duplicate column names: {', '.join(dups)}")
    for name, f in fields:
        fid = field_id_of(f)
        if fid is not None:
            ids.append(fid)
        _check_fields(_id_children(f), f"{prefix}{name}.", ids)


def _numbered(f: pa.Field, next_id: Iterator[int]) -> pa.Field:
    """``f`` with a field id on itself and every nested field (from ``next_id`` where it has
    none); a dictionary becomes its value type and any list layout a list when it has nested
    fields."""
    meta = dict(f.metadata or {})
    if FIELD_ID_KEY not in meta:
        meta[FIELD_ID_KEY] = str(next(next_id)).encode()
    children = [_numbered(c, next_id) for _, c in _id_children(f)]
    t = f.type
    if children:
        t = t.value_type if pa.types.is_dictionary(t) else t
        if pa.types.is_struct(t):
            t = pa.struct(children)
        elif pa.types.is_map(t):
            t = pa.map_(children[0], children[1], keys_sorted=t.keys_sorted)
        else:
            t = pa.list_(children[0])
    return pa.field(f.name, t, nullable=f.nullable, metadata=meta)
