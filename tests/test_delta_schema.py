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
                with_default("t", "string", 7, r"'it\'s'"),
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


#: Spark SQL DEFAULT texts and the values Spark 4.1's ``SELECT <text>`` gives for them.
SPARK_STRING_DEFAULTS = [
    (r"'it\'s'", "it's"),
    (r"'C:\\tmp'", "C:\\tmp"),
    (r"'tab\there'", "tab\there"),
    (r"'\n\r\b'", "\n\r\b"),
    (r"'\0end'", "\x00end"),
    (r"'a\Zb'", "a\x1ab"),
    (r"'a\%b\_c'", "a\\%b\\_c"),
    (r"'\q\y'", "qy"),
    (r"'\u00e9\u0041'", "\u00e9A"),
    (r"'\101\060x'", "A0x"),
    (r"'\777'", "777"),
    (r"'\\'", "\\"),
    ('"dq"', "dq"),
    (r'"say \"hi\""', 'say "hi"'),
    (r"'dq\"in'", 'dq"in'),
    (r"r'raw\n'", "raw\\n"),
    ("'a' 'b'", "ab"),
]


@pytest.mark.parametrize(("text", "value"), SPARK_STRING_DEFAULTS)
def test_string_defaults_read_as_spark_reads_them(text: str, value: str) -> None:
    """A Delta column default is the SQL text of its DEFAULT clause: backslash escapes were
    kept as written ('it\\'s' became it\\'s, 'C:\\\\tmp' kept both backslashes)."""
    schema = convert_schema({"type": "struct", "fields": [with_default("s", "string", 1, text)]})
    assert schema.find_field("s").write_default == value


@pytest.mark.parametrize("text", ["'it''s'", '"a""b"', r"'\U0001F600'", r"'\u12'", r"'\ud83d'"])
def test_string_defaults_whose_value_depends_on_the_spark_version_are_refused(text: str) -> None:
    """Doubled quotes are an escaped quote in Spark 4.1 but two literals before; \\U escapes
    and \\u without four hex digits differ between versions too."""
    with pytest.raises(UnsupportedFeatureError, match="default"):
        convert_schema({"type": "struct", "fields": [with_default("s", "string", 1, text)]})


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
