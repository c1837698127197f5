"""Delta schema JSON to Iceberg: ids, nested ids, types, defaults, name mapping."""

from __future__ import annotations

import pytest

from icefloe.delta.schema import convert_schema, leaf_columns, name_mapping
from icefloe.exceptions import UnsupportedFeatureError, ValidationError
from icefloe.types import (
    IntegerType,
    ListType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    VariantType,
)
from support.delta import field


def with_default(name: str, type_: str, fid: int, default: str) -> dict[str, object]:
    f = field(name, type_, fid)
    f["metadata"]["CURRENT_DEFAULT"] = default  # type: ignore[index]
    return f


def test_types_ids_and_literal_defaults() -> None:
    schema = convert_schema(
        {
            "type": "struct",
            "fields": [
                field("b", "byte", 1),
                field("s", "short", 2, nullable=False),
                field("ts", "timestamp", 3),
                field("ntz", "timestamp_ntz", 4),
                field("v", "variant", 5),
                with_default("n", "long", 6, "42"),
                with_default("t", "string", 7, "'it''s'"),
                field(
                    "m",
                    {
                        "type": "map",
                        "keyType": "string",
                        "valueType": {
                            "type": "array",
                            "elementType": "integer",
                            "containsNull": False,
                        },
                        "valueContainsNull": True,
                    },
                    8,
                    {"col-m.key": 9, "col-m.value": 10, "col-m.value.element": 11},
                ),
                field("st", {"type": "struct", "fields": [field("x", "integer", 12)]}, 13),
            ],
        }
    )
    f = schema.find_field
    assert f("b").field_type == IntegerType() and f("b").field_id == 1
    assert f("s").required and f("s").field_type == IntegerType()
    assert f("ts").field_type == TimestamptzType() and f("ntz").field_type == TimestampType()
    assert f("v").field_type == VariantType()
    assert f("n").field_type == LongType() and f("n").write_default == 42
    assert f("n").initial_default is None
    assert f("t").field_type == StringType() and f("t").write_default == "it's"
    m = f("m").field_type
    assert isinstance(m, MapType) and (m.key_id, m.value_id) == (9, 10)
    assert isinstance(m.value_type, ListType) and m.value_type.element_id == 11
    assert m.value_type.element_required
    st = f("st").field_type
    assert isinstance(st, StructType) and st.fields[0].field_id == 12
    leaves = {
        c.field_id: c.physical_path
        for c in leaf_columns(
            {
                "type": "struct",
                "fields": [
                    field("st", {"type": "struct", "fields": [field("x", "integer", 12)]}, 13)
                ],
            }
        )
    }
    assert leaves == {12: ("col-st", "col-x")}
    mapping = name_mapping({"type": "struct", "fields": [field("b", "byte", 1)]}).to_json()
    assert mapping == [{"field-id": 1, "names": ["b", "col-b"]}]


def test_refusals() -> None:
    with pytest.raises(UnsupportedFeatureError, match="default"):
        convert_schema({"type": "struct", "fields": [with_default("n", "long", 1, "rand()")]})
    with pytest.raises(UnsupportedFeatureError, match="interval"):
        convert_schema({"type": "struct", "fields": [field("i", "interval", 1)]})
    with pytest.raises(ValidationError, match="element"):
        convert_schema(
            {
                "type": "struct",
                "fields": [
                    field("a", {"type": "array", "elementType": "integer", "containsNull": True}, 1)
                ],
            }
        )
    plain = {"name": "x", "type": "long", "nullable": True, "metadata": {}}
    with pytest.raises(ValidationError, match="column mapping is off"):
        convert_schema({"type": "struct", "fields": [plain]})
