"""Iceberg <-> Arrow schema conversion: type mapping, field ids everywhere, Parquet round trip,
name mapping, and PyIceberg as an independent reader of our Arrow schemas."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from pyiceberg.io.pyarrow import pyarrow_to_schema, schema_to_pyarrow
from pyiceberg.schema import Schema as PySchema

from icefloe.arrow_schema import (
    FIELD_ID_KEY,
    apply_name_mapping,
    arrow_to_schema,
    field_id_of,
    schema_to_arrow,
    type_to_arrow,
)
from icefloe.exceptions import ValidationError
from icefloe.name_mapping import NameMapping, create_mapping
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
from support.schema_strategies import PRIMITIVES, schemas


def fid(n: int) -> dict[bytes, bytes]:
    return {FIELD_ID_KEY: str(n).encode()}


@pytest.mark.parametrize(
    ("iceberg", "arrow"),
    [
        (UnknownType(), pa.null()),
        (BooleanType(), pa.bool_()),
        (IntegerType(), pa.int32()),
        (LongType(), pa.int64()),
        (FloatType(), pa.float32()),
        (DoubleType(), pa.float64()),
        (DecimalType(9, 2), pa.decimal128(9, 2)),
        (DecimalType(38, 0), pa.decimal128(38, 0)),
        (DateType(), pa.date32()),
        (TimeType(), pa.time64("us")),
        (TimestampType(), pa.timestamp("us")),
        (TimestamptzType(), pa.timestamp("us", tz="UTC")),
        (TimestampNanoType(), pa.timestamp("ns")),
        (TimestamptzNanoType(), pa.timestamp("ns", tz="UTC")),
        (StringType(), pa.string()),
        (UUIDType(), pa.uuid()),
        (FixedType(5), pa.binary(5)),
        (BinaryType(), pa.binary()),
    ],
)
def test_primitive_mapping(iceberg: IcebergType, arrow: pa.DataType) -> None:
    assert type_to_arrow(iceberg) == arrow
    schema = Schema(NestedField(1, "c", iceberg))
    assert arrow_to_schema(schema_to_arrow(schema)) == schema


def test_uuid_as_fixed_and_large_types() -> None:
    schema = Schema(
        NestedField(1, "u", UUIDType()),
        NestedField(2, "s", StringType()),
        NestedField(3, "b", BinaryType()),
        NestedField(4, "l", ListType(5, StringType())),
    )
    a = schema_to_arrow(schema, large_types=True, uuid_extension=False)
    assert a.field("u").type == pa.binary(16)
    assert a.field("s").type == pa.large_string()
    assert a.field("b").type == pa.large_binary()
    assert pa.types.is_large_list(a.field("l").type)
    back = arrow_to_schema(a)
    assert back.find_type("u") == FixedType(16)  # plain fixed[16] cannot be told from uuid
    assert back.find_type("s") == StringType() and back.find_type("b") == BinaryType()
    assert back.find_type("l") == ListType(5, StringType())


def test_field_ids_on_every_nested_field() -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True, doc="the id"),
        NestedField(2, "loc", StructType(NestedField(3, "lat", DoubleType(), required=True))),
        NestedField(4, "tags", ListType(5, StringType(), element_required=False)),
        NestedField(6, "props", MapType(7, StringType(), 8, IntegerType(), value_required=True)),
    )
    a = schema_to_arrow(schema)
    assert a.field("id").metadata == {FIELD_ID_KEY: b"1", b"doc": b"the id"}
    assert not a.field("id").nullable and a.field("loc").nullable
    assert field_id_of(a.field("loc").type.field("lat")) == 3
    assert not a.field("loc").type.field("lat").nullable
    element = a.field("tags").type.value_field
    assert element.name == "element" and field_id_of(element) == 5 and element.nullable
    m = a.field("props").type
    assert field_id_of(m.key_field) == 7 and field_id_of(m.item_field) == 8
    assert not m.item_field.nullable
    assert arrow_to_schema(a) == schema
    bare = schema_to_arrow(schema, include_field_ids=False)
    assert field_id_of(bare.field("id")) is None
    assert field_id_of(bare.field("tags").type.value_field) is None


def test_parquet_round_trip_keeps_ids() -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "tags", ListType(3, StringType())),
        NestedField(4, "m", MapType(5, StringType(), 6, LongType(), value_required=False)),
        NestedField(7, "s", StructType(NestedField(8, "x", DoubleType()))),
        NestedField(9, "u", UUIDType()),
        NestedField(10, "ts", TimestamptzType()),
    )
    table = schema_to_arrow(schema).empty_table()
    buf = io.BytesIO()
    pq.write_table(table, buf)
    text = str(pq.ParquetFile(io.BytesIO(buf.getvalue())).schema)
    for i in range(1, 11):
        assert f"field_id={i} " in text
    assert "(UUID)" in text
    read = pq.read_table(io.BytesIO(buf.getvalue())).schema
    assert arrow_to_schema(read) == schema


def test_geo_and_variant() -> None:
    schema = Schema(
        NestedField(1, "g", GeometryType()),
        NestedField(2, "g2", GeometryType("srid:3857")),
        NestedField(3, "geo", GeographyType("srid:4326", "karney")),
        NestedField(4, "v", VariantType()),
    )
    a = schema_to_arrow(schema)
    assert a.field("g").type == pa.binary()
    assert a.field("g").metadata[b"ARROW:extension:name"] == b"geoarrow.wkb"
    assert json.loads(a.field("geo").metadata[b"ARROW:extension:metadata"]) == {
        "crs": "srid:4326",
        "edges": "karney",
    }
    v = a.field("v").type
    assert [v.field(i).name for i in range(2)] == ["metadata", "value"]
    assert all(field_id_of(v.field(i)) is None for i in range(2))  # spec: no ids on these
    assert arrow_to_schema(a) == schema


def test_accepted_input_types() -> None:
    cases = [
        (pa.int8(), IntegerType()),
        (pa.int16(), IntegerType()),
        (pa.uint8(), IntegerType()),
        (pa.uint16(), IntegerType()),
        (pa.uint32(), LongType()),
        (pa.float16(), FloatType()),
        (pa.date64(), DateType()),
        (pa.time32("ms"), TimeType()),
        (pa.time64("ns"), TimeType()),
        (pa.timestamp("ms"), TimestampType()),
        (pa.timestamp("s", tz="America/New_York"), TimestamptzType()),
        (pa.timestamp("ns", tz="+00:00"), TimestamptzNanoType()),
        (pa.large_string(), StringType()),
        (pa.string_view(), StringType()),
        (pa.large_binary(), BinaryType()),
        (pa.binary_view(), BinaryType()),
        (pa.decimal256(20, 4), DecimalType(20, 4)),
        (pa.dictionary(pa.int32(), pa.string()), StringType()),
    ]
    for arrow, iceberg in cases:
        s = arrow_to_schema(pa.schema([pa.field("c", arrow, metadata=fid(1))]))
        assert s.find_type("c") == iceberg, arrow
    fixed_list = pa.list_(pa.field("element", pa.int32(), metadata=fid(2)), 3)
    s = arrow_to_schema(pa.schema([pa.field("c", fixed_list, metadata=fid(1))]))
    assert s.find_type("c") == ListType(2, IntegerType(), element_required=False)


@pytest.mark.parametrize(
    ("arrow", "message"),
    [
        (pa.uint64(), "no Iceberg equivalent"),
        (pa.decimal256(40, 2), "exceeds"),
        (pa.duration("us"), "no Iceberg equivalent"),
    ],
)
def test_rejected_input_types(arrow: pa.DataType, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        arrow_to_schema(pa.schema([pa.field("c", arrow, metadata=fid(1))]))


def test_missing_or_bad_ids_rejected() -> None:
    with pytest.raises(ValidationError, match="'c' has no field id"):
        arrow_to_schema(pa.schema([pa.field("c", pa.int32())]))
    nested = pa.struct([pa.field("x", pa.int32())])
    with pytest.raises(ValidationError, match=r"'s\.x' has no field id"):
        arrow_to_schema(pa.schema([pa.field("s", nested, metadata=fid(1))]))
    with pytest.raises(ValidationError, match="non-integer field id"):
        arrow_to_schema(pa.schema([pa.field("c", pa.int32(), metadata={FIELD_ID_KEY: b"x"})]))
    with pytest.raises(ValidationError, match=r"pyarrow\.Schema"):
        arrow_to_schema("nope")  # type: ignore[arg-type]


def test_name_mapping_applied() -> None:
    mapping = NameMapping.from_json(
        [
            {"field-id": 1, "names": ["id", "record_id"]},
            {"field-id": 2, "names": ["data"]},
            {
                "field-id": 3,
                "names": ["location"],
                "fields": [
                    {"field-id": 4, "names": ["latitude", "lat"]},
                    {"field-id": 5, "names": ["longitude", "long"]},
                ],
            },
            {
                "field-id": 6,
                "names": ["tags"],
                "fields": [{"field-id": 7, "names": ["element"]}],
            },
            {
                "field-id": 8,
                "names": ["props"],
                "fields": [
                    {"field-id": 9, "names": ["key"]},
                    {"field-id": 10, "names": ["value"]},
                ],
            },
        ]
    )
    file_schema = pa.schema(
        [
            pa.field("record_id", pa.int64(), nullable=False),
            pa.field("extra", pa.string()),
            pa.field(
                "location",
                pa.struct([pa.field("lat", pa.float64()), pa.field("alt", pa.float64())]),
            ),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("props", pa.map_(pa.string(), pa.int32())),
        ]
    )
    expected = Schema(
        NestedField(1, "record_id", LongType(), required=True),
        NestedField(3, "location", StructType(NestedField(4, "lat", DoubleType()))),
        NestedField(6, "tags", ListType(7, StringType(), element_required=False)),
        NestedField(8, "props", MapType(9, StringType(), 10, IntegerType(), value_required=False)),
    )
    assert arrow_to_schema(file_schema, name_mapping=mapping) == expected
    with_ids = apply_name_mapping(file_schema, mapping)
    assert field_id_of(with_ids.field("record_id")) == 1
    assert field_id_of(with_ids.field("extra")) is None
    assert field_id_of(with_ids.field("location").type.field("lat")) == 4
    assert field_id_of(with_ids.field("location").type.field("alt")) is None
    assert field_id_of(with_ids.field("tags").type.value_field) == 7
    assert field_id_of(with_ids.field("props").type.key_field) == 9
    assert field_id_of(with_ids.field("props").type.item_field) == 10
    # Ids already in the file win over the mapping.
    own = pa.schema([pa.field("id", pa.int64(), metadata=fid(42))])
    assert arrow_to_schema(own, name_mapping=mapping).find_field("id").field_id == 42


@given(schemas())
@settings(max_examples=40, deadline=None)
def test_round_trip_property(schema: Schema) -> None:
    arrow = schema_to_arrow(schema)
    back = arrow_to_schema(arrow, schema_id=schema.schema_id)
    assert back == schema
    # Without ids, the schema's own name mapping restores them.
    bare = schema_to_arrow(schema, include_field_ids=False)
    mapped = arrow_to_schema(bare, name_mapping=create_mapping(schema), schema_id=schema.schema_id)
    assert mapped == schema
    assert apply_name_mapping(bare, create_mapping(schema)) == arrow


# PyIceberg 0.12 reads our Arrow schemas to the same Iceberg schema (types it supports).
PYICEBERG_TYPES = [t for t in PRIMITIVES if not isinstance(t, UnknownType | UUIDType)]


@given(schemas(primitives=PYICEBERG_TYPES))
@settings(max_examples=40, deadline=None)
def test_pyiceberg_reads_our_arrow_schemas(schema: Schema) -> None:
    theirs = pyarrow_to_schema(schema_to_arrow(schema), format_version=3)
    parsed = Schema.from_json(json.loads(theirs.model_dump_json(by_alias=True)))
    assert parsed.same_schema(schema)


@given(schemas())
@settings(max_examples=40, deadline=None)
def test_we_read_pyiceberg_arrow_schemas(schema: Schema) -> None:
    # PyIceberg writes large types, the uuid extension and its own map entry names.
    theirs = schema_to_pyarrow(PySchema.model_validate(schema.to_json()))
    assert arrow_to_schema(theirs, schema_id=schema.schema_id) == schema
