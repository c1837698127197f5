"""Iceberg types: JSON form per spec Appendix C, parsing and validation."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.exceptions import ValidationError
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
    type_from_json,
)

PRIMITIVES = [
    ("unknown", UnknownType()),
    ("boolean", BooleanType()),
    ("int", IntegerType()),
    ("long", LongType()),
    ("float", FloatType()),
    ("double", DoubleType()),
    ("date", DateType()),
    ("time", TimeType()),
    ("timestamp", TimestampType()),
    ("timestamptz", TimestamptzType()),
    ("timestamp_ns", TimestampNanoType()),
    ("timestamptz_ns", TimestamptzNanoType()),
    ("string", StringType()),
    ("uuid", UUIDType()),
    ("fixed[16]", FixedType(16)),
    ("binary", BinaryType()),
    ("decimal(9,2)", DecimalType(9, 2)),
    ("variant", VariantType()),
    ("geometry(OGC:CRS84)", GeometryType()),  # as Java writes it (``geometry`` is read too)
    ("geometry(srid:4326)", GeometryType("srid:4326")),
    ("geography(OGC:CRS84, spherical)", GeographyType()),
    ("geography(srid:4326, karney)", GeographyType("srid:4326", "karney")),
]


@pytest.mark.parametrize(("text", "typ"), PRIMITIVES)
def test_primitive_round_trip(text: str, typ: Any) -> None:
    assert type_from_json(text) == typ
    assert str(typ) == text
    assert typ.to_json() == text


def test_decimal_with_spaces_and_case() -> None:
    assert type_from_json("decimal(9, 2)") == DecimalType(9, 2)
    assert type_from_json(" Decimal( 38 ,0 ) ") == DecimalType(38, 0)
    assert type_from_json("geography(srid:4326)") == GeographyType("srid:4326", "spherical")


@pytest.mark.parametrize(
    "bad", ["decimal(39,0)", "decimal(5,6)", "fixed[0]", "varchar", "geography(x, flat)", 7, None]
)
def test_invalid_types_raise(bad: Any) -> None:
    with pytest.raises(ValidationError):
        type_from_json(bad)


def test_v3_types_report_min_format_version() -> None:
    assert TimestampNanoType().min_format_version == 3
    assert UnknownType().min_format_version == 3
    assert LongType().min_format_version == 1


def test_nested_round_trip_matches_spec_examples() -> None:
    doc = {
        "type": "struct",
        "fields": [
            {
                "id": 1,
                "name": "id",
                "required": True,
                "type": "uuid",
                "initial-default": "0db3e2a8-9d1d-42b9-aa7b-74ebe558dceb",
                "write-default": "ec5911be-b0a7-458c-8438-c9a3e53cffae",
            },
            {
                "id": 2,
                "name": "tags",
                "required": False,
                "type": {
                    "type": "list",
                    "element-id": 3,
                    "element": "string",
                    "element-required": True,
                },
                "doc": "labels",
            },
            {
                "id": 4,
                "name": "props",
                "required": False,
                "type": {
                    "type": "map",
                    "key-id": 5,
                    "key": "string",
                    "value-id": 6,
                    "value": "double",
                    "value-required": False,
                },
            },
        ],
    }
    t = type_from_json(doc)
    assert isinstance(t, StructType)
    assert t.fields[0] == NestedField(
        1,
        "id",
        UUIDType(),
        required=True,
        initial_default="0db3e2a8-9d1d-42b9-aa7b-74ebe558dceb",
        write_default="ec5911be-b0a7-458c-8438-c9a3e53cffae",
    )
    assert t.fields[1].field_type == ListType(3, StringType(), True)
    assert t.fields[2].field_type == MapType(5, StringType(), 6, DoubleType(), False)
    assert t.to_json() == doc
    assert t.field_by_name("PROPS", case_sensitive=False) is t.fields[2]
    assert t.field_by_name("PROPS") is None
    assert t.field_by_id(2) is t.fields[1]


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "struct", "fields": [{"id": "1", "name": "a", "required": True, "type": "int"}]},
        {"type": "struct", "fields": [{"id": 1, "required": True, "type": "int"}]},
        {"type": "list", "element-id": 3, "element": "string"},
        {"type": "tuple"},
    ],
)
def test_invalid_nested_raise(bad: Any) -> None:
    with pytest.raises(ValidationError):
        type_from_json(bad)


@pytest.mark.parametrize(
    "make",
    [
        lambda: DecimalType(9.0, 2),
        lambda: DecimalType(True, 1),
        lambda: DecimalType("9", "2"),
        lambda: DecimalType(9, 2.5),
        lambda: FixedType(1.5),
        lambda: FixedType("4"),
        lambda: FixedType(None),
    ],
)
def test_type_parameters_that_are_not_integers_are_refused(make: Any) -> None:
    """``FixedType(1.5)`` and ``DecimalType(9.0, 2)`` were accepted and written into the
    metadata as ``fixed[1.5]`` and ``decimal(9.0,2)``: the table could not be loaded again,
    by icefloe or any engine. Strings raised a bare ``TypeError``."""
    with pytest.raises(ValidationError, match="must be an integer"):
        make()


def test_numpy_integer_type_parameters_are_taken_as_ints() -> None:
    import numpy as np

    assert str(DecimalType(np.int32(9), np.int64(2))) == "decimal(9,2)"
    assert FixedType(np.int64(4)) == FixedType(4) and type(FixedType(np.int64(4)).length) is int
