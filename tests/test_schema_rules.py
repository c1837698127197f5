"""User-schema rules: reserved ids, types per format version, defaults, fresh id assignment."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from pyiceberg.schema import Schema as PySchema
from pyiceberg.schema import assign_fresh_schema_ids, index_name_by_id

from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.schema_rules import (
    MAX_USER_FIELD_ID,
    METADATA_COLUMNS,
    assign_fresh_ids,
    min_format_version,
    validate_schema,
)
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
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
    TimestamptzNanoType,
    TimestamptzType,
    UnknownType,
    UUIDType,
    VariantType,
)
from support.schema_strategies import schemas


def test_metadata_columns_match_spec() -> None:
    assert METADATA_COLUMNS[2147483646][0] == "_file"
    assert METADATA_COLUMNS[2147483645][0] == "_pos"
    assert METADATA_COLUMNS[2147483540][0] == "_row_id"
    assert METADATA_COLUMNS[2147483539][0] == "_last_updated_sequence_number"
    assert MAX_USER_FIELD_ID == 2**31 - 1 - 200
    assert all(i > MAX_USER_FIELD_ID for i in METADATA_COLUMNS)


@pytest.mark.parametrize("field_id", [*METADATA_COLUMNS, MAX_USER_FIELD_ID + 1, -1])
def test_reserved_ids_rejected(field_id: int) -> None:
    s = Schema(NestedField(1, "s", StructType(NestedField(field_id, "x", LongType()))))
    with pytest.raises(ValidationError, match=rf"'s\.x'.*{field_id}"):
        validate_schema(s, 2)


def test_reserved_id_names_metadata_column() -> None:
    with pytest.raises(ValidationError, match="_row_id"):
        validate_schema(Schema(NestedField(2147483540, "r", LongType())), 3)
    validate_schema(Schema(NestedField(MAX_USER_FIELD_ID, "r", LongType())), 3)


@pytest.mark.parametrize(
    "t",
    [
        UnknownType(),
        VariantType(),
        GeometryType(),
        GeographyType(),
        TimestampNanoType(),
        TimestamptzNanoType(),
    ],
)
def test_v3_types_need_v3(t: IcebergType) -> None:
    s = Schema(NestedField(1, "l", ListType(2, t, element_required=False)))
    for version in (1, 2):
        with pytest.raises(ValidationError, match="format version 3"):
            validate_schema(s, version)
    validate_schema(s, 3)
    assert min_format_version(s) == 3


def test_unknown_must_be_optional() -> None:
    with pytest.raises(ValidationError, match="must be optional"):
        NestedField(1, "u", UnknownType(), required=True)
    validate_schema(Schema(NestedField(1, "u", UnknownType())), 3)


def field(t: IcebergType, initial: Any = None, write: Any = None, required: bool = False) -> Schema:
    return Schema(NestedField(1, "c", t, required, None, initial, write))


def test_defaults_need_v3() -> None:
    s = field(LongType(), 1, 1, required=True)
    assert min_format_version(s) == 3
    validate_schema(s, 3)
    with pytest.raises(ValidationError, match="default value, which needs format version 3"):
        validate_schema(s, 2)
    assert min_format_version(field(LongType())) == 1


@pytest.mark.parametrize("t", [UnknownType(), VariantType(), GeometryType(), GeographyType()])
@pytest.mark.parametrize("which", ["initial", "write"])
def test_null_only_defaults(t: IcebergType, which: str) -> None:
    kwargs = {which: "x"}
    with pytest.raises(ValidationError, match="must default to null"):
        validate_schema(field(t, **kwargs), 3)


def test_struct_defaults() -> None:
    point = StructType(
        NestedField(2, "x", LongType(), False, None, 0, 0),
        NestedField(3, "y", LongType(), False, None, 0, 0),
    )
    validate_schema(field(point, {}, {}), 3)
    validate_schema(field(point), 3)
    with pytest.raises(ValidationError, match="empty struct"):
        validate_schema(field(point, {"2": 1}), 3)
    with pytest.raises(ValidationError, match="empty struct"):
        validate_schema(field(point, None, {"x": 1}), 3)


@pytest.mark.parametrize(
    ("t", "good", "bad"),
    [
        (BooleanType(), True, 1),
        (IntegerType(), 34, True),
        (LongType(), 9999999, "1"),
        (DoubleType(), 1.5, "1.5"),
        (DecimalType(9, 2), "1.23", 1.23),
        (DateType(), "2007-12-03", 13850),
        (StringType(), "foo", 3),
        (BinaryType(), "0000ff", [0]),
        # Appendix D examples (spec-facts 3.4): values are parsed, not only shape-checked.
        (FixedType(2), "111f", "111ff"),
        (TimestamptzType(), "2007-12-03T10:15:30+00:00", "2007-12-03T10:15:30+01:00"),
        (DecimalType(9, 4), "123.4500", 123.45),
        (DateType(), "2007-12-03", "2007-13-03"),
        (TimestampNanoType(), "2007-12-03T10:15:30.123456789", "yesterday"),
        (UUIDType(), "eb26bdb1-a1d8-4aa6-990e-da940875492c", "eb26bdb1"),
    ],
)
def test_default_shapes(t: IcebergType, good: Any, bad: Any) -> None:
    validate_schema(field(t, good, good), 3)
    with pytest.raises(ValidationError, match="not a valid"):
        validate_schema(field(t, bad), 3)
    with pytest.raises(ValidationError, match="write-default"):
        validate_schema(field(t, None, bad), 3)


@pytest.mark.parametrize(
    ("t", "value"),
    [
        (ListType(2, IntegerType()), [1, 2, 3]),
        (ListType(2, IntegerType()), []),
        (MapType(2, IntegerType(), 3, StringType()), {"keys": [1], "values": ["a"]}),
        (MapType(2, IntegerType(), 3, StringType()), {"keys": [], "values": []}),
    ],
)
def test_list_and_map_defaults_must_be_null(t: IcebergType, value: Any) -> None:
    """Iceberg Java refuses every non-null default of a nested type and PyIceberg cannot
    parse one of a list or map: a schema holding one could not be loaded by either."""
    validate_schema(field(t, None, None), 3)
    with pytest.raises(ValidationError, match="initial-default must be null"):
        validate_schema(field(t, value), 3)
    with pytest.raises(ValidationError, match="write-default must be null"):
        validate_schema(field(t, None, value), 3)


def test_assign_fresh_ids_reference_order() -> None:
    s = Schema(
        NestedField(10, "a", LongType(), required=True),
        NestedField(
            20,
            "s",
            StructType(
                NestedField(21, "x", ListType(22, LongType())),
                NestedField(23, "y", MapType(24, StringType(), 25, LongType())),
            ),
        ),
        NestedField(30, "b", StringType()),
        schema_id=4,
        identifier_field_ids=[10],
    )
    fresh = assign_fresh_ids(s)
    # Top-level fields first (1..3), then the struct's fields (4, 5), then list/map children.
    assert [f.field_id for f in fresh.fields] == [1, 2, 3]
    assert fresh.find_field("s.x").field_id == 4
    assert fresh.find_field("s.y").field_id == 5
    assert fresh.find_field("s.x.element").field_id == 6
    assert fresh.find_field("s.y.key").field_id == 7
    assert fresh.find_field("s.y.value").field_id == 8
    assert fresh.identifier_field_ids == (1,)
    assert fresh.schema_id == 4
    assert assign_fresh_ids(s, schema_id=0).schema_id == 0


def test_assign_fresh_ids_reuses_base_ids() -> None:
    base = Schema(NestedField(5, "a", LongType()), NestedField(9, "b", StringType()))
    new = Schema(NestedField(1, "b", StringType()), NestedField(2, "c", LongType()))
    counter = iter(range(10, 100))
    fresh = assign_fresh_ids(new, next_id=lambda: next(counter), base_schema=base)
    assert [(f.name, f.field_id) for f in fresh.fields] == [("b", 9), ("c", 10)]


@given(schemas())
@settings(max_examples=40, deadline=None)
def test_assign_fresh_ids_matches_pyiceberg(schema: Schema) -> None:
    ours = assign_fresh_ids(schema)
    theirs = assign_fresh_schema_ids(PySchema.model_validate(schema.to_json()))
    assert index_name_by_id(theirs) == {i: ours.find_column_name(i) for i in ours.field_ids}
    # Only ids change.
    assert ours.highest_field_id == schema.highest_field_id == len(schema.field_ids)
