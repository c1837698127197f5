"""Name mapping JSON (Appendix C), building from a schema (checked against PyIceberg), updates."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
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
    table_mapping,
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
from support.write_util import catalog, set_properties_elsewhere

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
        # one field id on two fields, at one level or two (Java: "ID 1 is not unique")
        [{"field-id": 1, "names": ["a"]}, {"field-id": 1, "names": ["b"]}],
        [{"field-id": 1, "names": ["a"], "fields": [{"field-id": 1, "names": ["b"]}]}],
        # a field id beyond Java's int
        [{"field-id": 2**31, "names": ["a"]}],
        # nesting too deep to parse
        "[" * 5000 + "]" * 5000,
        "[" + '{"names":["a"],"fields":[' * 1500 + "]}" * 1500 + "]",
    ],
)
def test_invalid(bad: object) -> None:
    """Each is a ValidationError: a mapping giving one id to two columns read one column's
    values as the other's, and deep nesting raised a bare RecursionError."""
    with pytest.raises(ValidationError):
        NameMapping.from_json(bad)
    text = bad if isinstance(bad, str) else json.dumps(bad)
    with pytest.raises(ValidationError, match="is not a name mapping"):
        table_mapping({DEFAULT_NAME_MAPPING_PROPERTY: text})


def test_a_name_listed_twice_in_one_field_is_listed_once() -> None:
    """Names are a set, as in Iceberg Java and PyIceberg: such a mapping was refused, and a
    table whose property held one (set by another engine) could not be read at all."""
    text = '[{"field-id": 1, "names": ["a", "a", "b"]}]'
    m = NameMapping.from_json(text)
    assert m.find("a") == m.find("b") == MappedField(("a", "b"), 1)
    assert [(f.field_id, f.names) for f in parse_mapping_from_json(text)] == [(1, ["a", "a", "b"])]


def test_an_invalid_mapping_fails_only_reads_that_need_it(tmp_path: Path) -> None:
    """A mapping another engine stored that icefloe refuses made every scan fail, even of
    files carrying field ids, which never use it (Java parses it only for files without)."""
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", pa.schema([pa.field("a", pa.int64())]))
    t.append(pa.table({"a": [1, 2]}))
    bad = '[{"field-id":1,"names":["a"]},{"field-id":1,"names":["b"]}]'
    set_properties_elsewhere(tmp_path, "ns.t", {DEFAULT_NAME_MAPPING_PROPERTY: bad})
    t = cat.load_table("ns.t")
    assert sorted(t.scan().to_arrow().column("a").to_pylist()) == [1, 2]
    assert t.scan(row_filter="a = 2").to_arrow().to_pylist() == [{"a": 2}]
    t.delete("a = 1")
    assert t.scan().to_arrow().to_pylist() == [{"a": 2}]
    # a file without field ids needs the mapping: its read names the property
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"a": [7]}), path)
    t.set_properties({DEFAULT_NAME_MAPPING_PROPERTY: '[{"field-id":1,"names":["a"]}]'})
    t.add_files([str(path)])
    set_properties_elsewhere(tmp_path, "ns.t", {DEFAULT_NAME_MAPPING_PROPERTY: bad})
    with pytest.raises(ValidationError, match="is not a name mapping"):
        cat.load_table("ns.t").scan().to_arrow()


@pytest.mark.parametrize("value", ["", " ", '[{"field-id": 2147483648, "names": ["a"]}]'])
def test_set_properties_refuses_what_java_cannot_parse(tmp_path: Path, value: str) -> None:
    """An empty value and a field id beyond Java's int were accepted; Iceberg Java's parser
    refuses both, so Java engines could not read the table."""
    t = catalog(tmp_path).create_table("ns.t", pa.schema([pa.field("a", pa.int64())]))
    with pytest.raises(ValidationError, match="is not a name mapping"):
        t.set_properties({DEFAULT_NAME_MAPPING_PROPERTY: value})
    assert DEFAULT_NAME_MAPPING_PROPERTY not in t.refresh().properties


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
    new = update_mapping(old, renamed, SCHEMA)
    assert new.find("identifier") == new.find("id") == MappedField(("identifier", "id"), 1)
    assert new.find("loc", "lat") == MappedField(("latitude", "lat"), 3)
    assert new.find("new_col") == MappedField(("new_col",), 9)
    assert new.find("tags", "element") == MappedField(("element",), 5)  # dropped, still mapped
    # A new column that takes a dropped column's name claims it.
    reuse = Schema(NestedField(10, "tags", StringType()))
    after = update_mapping(old, reuse, SCHEMA)
    found = after.find("tags")
    assert found is not None and found.field_id == 10


def test_a_schema_change_touches_only_what_it_changes_in_a_custom_mapping(
    tmp_path: Path,
) -> None:
    """Adding a column rewrote the rest of a hand-written mapping: a name it gave another id
    moved to the current column of that name and columns it left out were mapped, so old files
    read other values. As Iceberg Java's mapping update, only the added column joins, and a
    rename adds its new name, taken from the other fields of its level."""
    cat = catalog(tmp_path)
    t = cat.create_table(
        "ns.t",
        pa.schema(
            [pa.field("a", pa.int64()), pa.field("b", pa.int64()), pa.field("c", pa.int64())]
        ),
    )
    # the files' column 'a' holds the table's b, 'old_a' its a; their 'c' is not the table's
    mapping = [{"field-id": 1, "names": ["old_a"]}, {"field-id": 2, "names": ["b", "a"]}]
    t.set_properties({DEFAULT_NAME_MAPPING_PROPERTY: json.dumps(mapping)})
    path = tmp_path / "legacy.parquet"
    pq.write_table(pa.table({"old_a": [1], "a": [200], "c": [-999]}), path)
    t.add_files([str(path)])
    before = t.scan().to_arrow().to_pylist()
    assert before == [{"a": 1, "b": 200, "c": None}]
    with t.update_schema() as u:
        u.add_column("z", LongType())
    added = [*mapping, {"field-id": 4, "names": ["z"]}]
    assert json.loads(t.properties[DEFAULT_NAME_MAPPING_PROPERTY]) == added
    assert t.scan().to_arrow().select(["a", "b", "c"]).to_pylist() == before
    with t.update_schema() as u:
        u.rename_column("z", "old_a")
    renamed = [{"field-id": 1, "names": []}, mapping[1], {"field-id": 4, "names": ["old_a", "z"]}]
    assert json.loads(t.properties[DEFAULT_NAME_MAPPING_PROPERTY]) == renamed
