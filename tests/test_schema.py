"""Schemas: JSON per Appendix C, golden-file round trips, lookups and identifier-field rules."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.schema import Schema as PySchema
from pyiceberg.schema import index_by_name as py_index_by_name

from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.types import (
    BooleanType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)
from support.schema_strategies import schemas
from support.testdata import TESTDATA

GOLDEN = sorted(
    [
        *(TESTDATA / "iceberg-java" / "metadata").glob("*.json"),
        *(TESTDATA / "iceberg-rust" / "table_metadata").glob("*.json"),
    ]
)


def golden_schemas() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in GOLDEN:
        meta = json.loads(path.read_text())
        if isinstance(meta.get("schema"), dict):
            out.append((f"{path.name}:schema", meta["schema"]))
        for s in meta.get("schemas") or []:
            out.append((f"{path.name}:schemas[{s.get('schema-id')}]", s))
    return out


def nested_schema() -> Schema:
    """A schema with every nesting kind (ids 1..14)."""
    return Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "data", StringType()),
        NestedField(
            3,
            "location",
            StructType(
                NestedField(4, "lat", DoubleType(), required=True),
                NestedField(5, "Long", DoubleType(), required=True),
            ),
            required=True,
        ),
        NestedField(6, "tags", ListType(7, StringType(), element_required=True)),
        NestedField(
            8,
            "points",
            ListType(
                9,
                StructType(
                    NestedField(10, "x", LongType(), required=True),
                    NestedField(11, "y", LongType(), required=True),
                ),
            ),
        ),
        NestedField(12, "props", MapType(13, StringType(), 14, IntegerType(), False)),
        schema_id=7,
        identifier_field_ids=[1],
    )


@pytest.mark.parametrize(
    ("name", "obj"), golden_schemas(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_golden_schemas_round_trip(name: str, obj: dict[str, Any]) -> None:
    schema = Schema.from_json(obj)
    out = schema.to_json()
    # Same content; schema-id is always written (v1 files may omit it, meaning 0).
    expected = {"type": "struct", "schema-id": obj.get("schema-id", 0), **obj}
    if not expected.get("identifier-field-ids"):
        expected.pop("identifier-field-ids", None)
    assert out == expected
    assert list(out) == [
        k for k in ("type", "schema-id", "identifier-field-ids", "fields") if k in out
    ]
    assert Schema.from_json(out) == schema
    assert Schema.from_json(json.loads(json.dumps(out))) == schema


def test_golden_v2_schema_with_identifier_fields() -> None:
    meta = json.loads((TESTDATA / "iceberg-java/metadata/TableMetadataV2Valid.json").read_text())
    schema = Schema.from_json(meta["schemas"][1])
    assert schema.schema_id == 1
    assert schema.identifier_field_ids == (1, 2)
    assert schema.identifier_field_names == ("x", "y")
    assert schema.find_field("y").doc == "comment"
    assert schema.highest_field_id == 3


def test_key_order_and_identifier_ids_only_when_present() -> None:
    s = Schema(NestedField(1, "a", LongType(), required=True), schema_id=3)
    assert json.dumps(s.to_json()) == (
        '{"type": "struct", "schema-id": 3, "fields": '
        '[{"id": 1, "name": "a", "required": true, "type": "long"}]}'
    )
    s2 = Schema(NestedField(1, "a", LongType(), required=True), identifier_field_ids=[1])
    assert list(s2.to_json()) == ["type", "schema-id", "identifier-field-ids", "fields"]


def test_from_json_rejects_bad_input() -> None:
    with pytest.raises(ValidationError, match="struct"):
        Schema.from_json({"type": "list", "fields": []})
    with pytest.raises(ValidationError, match="fields"):
        Schema.from_json({"type": "struct"})
    with pytest.raises(ValidationError, match="schema-id"):
        Schema.from_json({"type": "struct", "schema-id": "0", "fields": []})
    with pytest.raises(ValidationError, match="identifier-field-ids"):
        Schema.from_json({"type": "struct", "identifier-field-ids": 1, "fields": []})
    # A missing 'type' is tolerated, as in TableMetadataV1MissingSchemaType.json.
    assert Schema.from_json({"fields": []}) == Schema()


def test_lookup_by_id_and_name() -> None:
    s = nested_schema()
    assert s.find_field(4).name == "lat"
    assert s.find_field("location.lat").field_id == 4
    assert s.find_type("location.lat") == DoubleType()
    assert s.find_field("tags.element").field_id == 7
    assert s.find_field("points.element.x").field_id == 10
    assert s.find_field("points.x").field_id == 10  # short name: element is a struct
    assert s.find_field("props.key").field_id == 13
    assert s.find_field("props.value").field_id == 14
    assert s.find_column_name(10) == "points.element.x"
    assert s.find_column_name(14) == "props.value"
    assert s.find_column_name(99) is None
    assert s.highest_field_id == 14
    assert s.field_ids == frozenset(range(1, 15))
    assert set(s.index_by_id()) == set(range(1, 15))
    assert s.find_parent_id(10) == 9
    assert s.find_parent_id(9) == 8
    assert s.find_parent_id(1) is None


def test_case_insensitive_lookup() -> None:
    s = nested_schema()
    with pytest.raises(ValidationError, match=r"LOCATION\.LAT"):
        s.find_field("LOCATION.LAT")
    assert s.find_field("LOCATION.LAT", case_sensitive=False).field_id == 4
    assert s.find_field("location.long", case_sensitive=False).field_id == 5
    with pytest.raises(ValidationError, match=r"location\.long"):
        s.find_field("location.long")


def test_missing_field_errors_name_the_column() -> None:
    s = nested_schema()
    with pytest.raises(ValidationError, match="'nope'"):
        s.find_field("nope")
    with pytest.raises(ValidationError, match="id 99"):
        s.find_field(99)
    with pytest.raises(ValidationError, match="id 99"):
        s.find_type(99)


def test_equality_str_and_same_schema() -> None:
    a = nested_schema()
    b = Schema.from_json(a.to_json())
    assert a == b and hash(a) == hash(b)
    # Struct and list defaults are JSON objects and lists: the schema still hashes.
    with_defaults = Schema(
        NestedField(1, "s", StructType(NestedField(2, "x", LongType())), False, None, {}, {}),
        NestedField(3, "l", ListType(4, LongType()), False, None, [1], [1]),
    )
    assert hash(with_defaults) == hash(Schema.from_json(with_defaults.to_json()))
    assert hash(with_defaults.as_struct()) == hash(
        Schema.from_json(with_defaults.to_json()).as_struct()
    )
    assert len({with_defaults.fields[0], Schema.from_json(with_defaults.to_json()).fields[0]}) == 1
    c = Schema(*a.fields, schema_id=8, identifier_field_ids=[1])
    assert a != c
    assert a.same_schema(c)
    assert a != Schema(*a.fields, schema_id=7)
    text = str(a)
    assert "1: id: required long" in text and "schema 7" in text
    assert "Schema(" in repr(a)
    assert a.as_struct() == StructType(*a.fields)
    assert len(a) == 6 and list(a) == list(a.fields)


def test_duplicate_ids_and_names_rejected() -> None:
    with pytest.raises(ValidationError, match="field id 1"):
        Schema(NestedField(1, "a", LongType()), NestedField(1, "b", LongType()))
    with pytest.raises(ValidationError, match="field id 3"):
        Schema(NestedField(1, "a", ListType(3, LongType())), NestedField(3, "b", LongType()))
    with pytest.raises(ValidationError, match="'a'"):
        Schema(NestedField(1, "a", LongType()), NestedField(2, "a", LongType()))
    # A top-level name containing a dot collides with the nested column of the same full name.
    with pytest.raises(ValidationError, match=r"'a\.b'"):
        Schema(
            NestedField(1, "a", StructType(NestedField(2, "b", LongType()))),
            NestedField(3, "a.b", LongType()),
        )


def req(fid: int, name: str, t: Any) -> NestedField:
    return NestedField(fid, name, t, required=True)


@pytest.mark.parametrize(
    ("fields", "ident", "message"),
    [
        ([req(1, "f", FloatType())], 1, "float or double"),
        ([req(1, "d", DoubleType())], 1, "float or double"),
        ([NestedField(1, "o", LongType())], 1, "not a required field"),
        ([req(1, "s", StructType(req(2, "x", LongType())))], 1, "not a primitive"),
        ([NestedField(1, "s", StructType(req(2, "x", LongType())))], 2, "optional field 's'"),
        ([req(1, "l", ListType(2, LongType()))], 2, "nested in list"),
        ([req(1, "m", MapType(2, LongType(), 3, LongType()))], 2, "nested in map"),
        ([req(1, "m", MapType(2, LongType(), 3, LongType()))], 3, "nested in map"),
        ([req(1, "a", LongType())], 5, "not found"),
    ],
)
def test_identifier_field_rules(fields: list[NestedField], ident: int, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Schema(*fields, identifier_field_ids=[ident])


def test_identifier_fields_allowed() -> None:
    s = Schema(
        req(1, "a", LongType()),
        req(2, "s", StructType(req(3, "x", StringType()), req(4, "b", BooleanType()))),
        identifier_field_ids=[1, 3, 4],
    )
    assert s.identifier_field_names == ("a", "s.x", "s.b")


def test_select() -> None:
    s = nested_schema()
    sub = s.select("location.lat", "props")
    assert [f.name for f in sub.fields] == ["location", "props"]
    assert sub.find_field("location").field_type == StructType(req(4, "lat", DoubleType()))
    assert sub.find_field(14).field_type == IntegerType()
    assert sub.identifier_field_ids == ()
    assert s.select("id").identifier_field_ids == (1,)


@given(schemas())
@settings(max_examples=40, deadline=None)
def test_name_index_matches_pyiceberg(schema: Schema) -> None:
    py = PySchema.model_validate(schema.to_json())
    assert schema.index_by_name() == py_index_by_name(py)
    for fid in schema.field_ids:
        assert schema.find_column_name(fid) == py.find_column_name(fid)


def test_select_prunes_list_elements_and_map_values() -> None:
    s = nested_schema()
    only_x = ListType(9, StructType(req(10, "x", LongType())))
    assert s.select("points.element.x").find_field("points").field_type == only_x
    assert s.select("points.x").find_field("points").field_type == only_x
    # the element, or a map's key or value, named itself keeps the whole list or map
    assert s.select("points.element").find_field(8) == s.find_field(8)
    assert s.select("props.key").find_field(12) == s.find_field(12)
    assert s.select("props.value").find_field(12) == s.find_field(12)


@given(schemas(), st.data())
@settings(max_examples=60, deadline=None)
def test_select_matches_pyiceberg(schema: Schema, data: st.DataObject) -> None:
    # PyIceberg's select prunes as Iceberg Java's TypeUtil.select: through structs, list
    # elements and map values (a map keeps its key)
    names = sorted(schema.index_by_name())
    if not names:
        return
    chosen = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))
    py = PySchema.model_validate(schema.to_json())
    theirs = json.loads(py.select(*chosen).model_dump_json(by_alias=True))
    assert schema.select(*chosen).as_struct() == Schema.from_json(theirs).as_struct()


def test_identifier_fields_are_a_set_when_schemas_are_compared() -> None:
    # as Iceberg Java's sameSchema: the same identifier fields in another order are the same
    # schema (re-declaring them wrote a new schema and metadata version)
    fields = [NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType(), True)]
    a = Schema(*fields, identifier_field_ids=[1, 2])
    b = Schema(*fields, identifier_field_ids=[2, 1])
    assert a.same_schema(b) and a == b and hash(a) == hash(b)
    assert not a.same_schema(Schema(*fields, identifier_field_ids=[1]))
