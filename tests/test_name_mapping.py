"""Name mapping JSON (Appendix C), building from a schema (checked against PyIceberg), updates."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from pyiceberg.schema import Schema as PySchema
from pyiceberg.table.name_mapping import create_mapping_from_schema, parse_mapping_from_json

from icefloe.exceptions import ValidationError
from icefloe.name_mapping import (
    DEFAULT_NAME_MAPPING_PROPERTY,
    MappedField,
    NameMapping,
    create_mapping,
    update_mapping,
)
from icefloe.schema import Schema
from icefloe.types import (
    DoubleType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)
from support.schema_strategies import schemas

SPEC_EXAMPLE = """[ { "field-id": 1, "names": ["id", "record_id"] },
  { "field-id": 2, "names": ["data"] },
  { "field-id": 3, "names": ["location"], "fields": [
    { "field-id": 4, "names": ["latitude", "lat"] },
    { "field-id": 5, "names": ["longitude", "long"] }
  ] } ]"""


def test_spec_example() -> None:
    m = NameMapping.from_json(SPEC_EXAMPLE)
    assert m.find("record_id") == MappedField(("id", "record_id"), 1)
    assert m.find("location", "lat") == MappedField(("latitude", "lat"), 4)
    assert m.find("location", "height") is None
    assert m.find("location.lat") is None  # a dot is part of a name, never a path
    assert m.id_by_path()[("location", "longitude")] == 5
    assert m.to_json() == json.loads(SPEC_EXAMPLE)
    assert NameMapping.from_json(m.to_json_string()) == m
    assert list(m.to_json()[2]) == ["field-id", "names", "fields"]
    assert DEFAULT_NAME_MAPPING_PROPERTY == "schema.name-mapping.default"


def test_optional_parts() -> None:
    m = NameMapping.from_json([{"names": ["only_in_file"]}, {"field-id": 7, "names": []}])
    assert m.fields[0].field_id is None and m.fields[1].names == ()
    assert m.to_json() == [{"names": ["only_in_file"]}, {"field-id": 7, "names": []}]
    assert m.find("a.b") is None
    dotted = NameMapping.from_json([{"field-id": 1, "names": ["a.b"]}])
    assert dotted.find("a.b") == MappedField(("a.b",), 1)


@pytest.mark.parametrize(
    "bad",
    [
        "{not json",
        {"field-id": 1},
        [1],
        [{"field-id": "1", "names": ["a"]}],
        [{"field-id": 1, "names": "a"}],
        [{"field-id": 1, "names": [1]}],
        [{"field-id": 1, "names": ["a"], "fields": {}}],
        [{"field-id": 1, "names": ["a"]}, {"field-id": 2, "names": ["a"]}],
    ],
)
def test_invalid(bad: object) -> None:
    with pytest.raises(ValidationError):
        NameMapping.from_json(bad)


SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "loc", StructType(NestedField(3, "lat", DoubleType()))),
    NestedField(4, "tags", ListType(5, StringType())),
    NestedField(6, "props", MapType(7, StringType(), 8, IntegerType())),
)


def test_create_mapping() -> None:
    assert create_mapping(SCHEMA).to_json() == [
        {"field-id": 1, "names": ["id"]},
        {"field-id": 2, "names": ["loc"], "fields": [{"field-id": 3, "names": ["lat"]}]},
        {"field-id": 4, "names": ["tags"], "fields": [{"field-id": 5, "names": ["element"]}]},
        {
            "field-id": 6,
            "names": ["props"],
            "fields": [{"field-id": 7, "names": ["key"]}, {"field-id": 8, "names": ["value"]}],
        },
    ]


@given(schemas())
@settings(max_examples=40, deadline=None)
def test_create_mapping_matches_pyiceberg(schema: Schema) -> None:
    theirs = create_mapping_from_schema(PySchema.model_validate(schema.to_json()))
    ours = create_mapping(schema)
    assert ours.to_json() == json.loads(theirs.model_dump_json(by_alias=True, exclude_none=True))
    # And PyIceberg parses what we write to the same mapping.
    assert parse_mapping_from_json(ours.to_json_string()) == theirs


def test_update_mapping_keeps_old_names_as_aliases() -> None:
    old = create_mapping(SCHEMA)
    renamed = Schema(
        NestedField(1, "identifier", LongType(), required=True),
        NestedField(2, "loc", StructType(NestedField(3, "latitude", DoubleType()))),
        NestedField(9, "new_col", StringType()),
    )
    new = update_mapping(old, renamed)
    assert new.find("identifier") == new.find("id") == MappedField(("identifier", "id"), 1)
    assert new.find("loc", "lat") == MappedField(("latitude", "lat"), 3)
    assert new.find("new_col") == MappedField(("new_col",), 9)
    assert new.find("tags", "element") == MappedField(("element",), 5)  # dropped, still mapped
    # A new column that takes a dropped column's name claims it.
    reuse = Schema(NestedField(10, "tags", StringType()))
    after = update_mapping(old, reuse)
    found = after.find("tags")
    assert found is not None and found.field_id == 10
