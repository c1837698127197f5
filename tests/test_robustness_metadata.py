"""Hostile table metadata JSON: integers out of the Java reader's range, lone surrogates and
over-long number literals are a :class:`ValidationError` when the file is parsed (a
:class:`CorruptFileError` through a catalog), never an untyped error later in a scan.

The oracle is Java's ``JsonUtil``: ``getInt`` refuses a value that fails ``canConvertToInt()``
(ids, ``format-version`` ...), ``getLong`` one that fails ``canConvertToLong()`` (every other
integer field).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.exceptions import CorruptFileError, IcebergError, ValidationError
from icefloe.metadata import TableMetadata

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

BASE: dict[str, Any] = {
    "format-version": 2,
    "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
    "location": "s3://bucket/test/location",
    "last-sequence-number": 34,
    "last-updated-ms": 1602638573590,
    "last-column-id": 7,
    "current-schema-id": 1,
    "schemas": [
        {
            "type": "struct",
            "schema-id": 0,
            "fields": [{"id": 1, "name": "x", "required": True, "type": "long"}],
        },
        {
            "type": "struct",
            "schema-id": 1,
            "identifier-field-ids": [1],
            "fields": [
                {"id": 1, "name": "x", "required": True, "type": "long"},
                {"id": 2, "name": "y", "required": False, "type": "string"},
                {
                    "id": 3,
                    "name": "l",
                    "required": False,
                    "type": {
                        "type": "list",
                        "element-id": 4,
                        "element": "int",
                        "element-required": False,
                    },
                },
                {
                    "id": 5,
                    "name": "m",
                    "required": False,
                    "type": {
                        "type": "map",
                        "key-id": 6,
                        "key": "string",
                        "value-id": 7,
                        "value": "int",
                        "value-required": False,
                    },
                },
            ],
        },
    ],
    "default-spec-id": 0,
    "partition-specs": [
        {
            "spec-id": 0,
            "fields": [{"name": "x", "transform": "identity", "source-id": 1, "field-id": 1000}],
        }
    ],
    "last-partition-id": 1000,
    "default-sort-order-id": 3,
    "sort-orders": [
        {
            "order-id": 3,
            "fields": [
                {
                    "transform": "identity",
                    "source-id": 2,
                    "direction": "asc",
                    "null-order": "nulls-first",
                }
            ],
        }
    ],
    "properties": {"k": "v"},
    "current-snapshot-id": 3055729675574597004,
    "snapshots": [
        {
            "snapshot-id": 3051729675574597004,
            "timestamp-ms": 1515100955770,
            "sequence-number": 0,
            "summary": {"operation": "append"},
            "manifest-list": "s3://a/b/1.avro",
        },
        {
            "snapshot-id": 3055729675574597004,
            "parent-snapshot-id": 3051729675574597004,
            "timestamp-ms": 1555100955770,
            "sequence-number": 1,
            "summary": {"operation": "append"},
            "manifest-list": "s3://a/b/2.avro",
            "schema-id": 1,
        },
    ],
    "refs": {"main": {"snapshot-id": 3055729675574597004, "type": "branch"}},
    "statistics": [
        {
            "snapshot-id": 3055729675574597004,
            "statistics-path": "s3://a/b/stats.puffin",
            "file-size-in-bytes": 413,
            "file-footer-size-in-bytes": 42,
            "blob-metadata": [
                {
                    "type": "ndv",
                    "snapshot-id": 3055729675574597004,
                    "sequence-number": 1,
                    "fields": [1],
                }
            ],
        }
    ],
    "snapshot-log": [
        {"snapshot-id": 3051729675574597004, "timestamp-ms": 1515100955770},
        {"snapshot-id": 3055729675574597004, "timestamp-ms": 1555100955770},
    ],
    "metadata-log": [],
}

# (label, path to the integer in BASE, the smallest magnitude the Java reader refuses)
INT32_PATHS: list[tuple[str, tuple[Any, ...]]] = [
    ("format-version", ("format-version",)),
    ("last-column-id", ("last-column-id",)),
    ("current-schema-id", ("current-schema-id",)),
    ("default-spec-id", ("default-spec-id",)),
    ("last-partition-id", ("last-partition-id",)),
    ("default-sort-order-id", ("default-sort-order-id",)),
    ("schema-id", ("schemas", 1, "schema-id")),
    ("identifier-field-ids", ("schemas", 1, "identifier-field-ids", 0)),
    ("field id", ("schemas", 1, "fields", 1, "id")),
    ("element-id", ("schemas", 1, "fields", 2, "type", "element-id")),
    ("key-id", ("schemas", 1, "fields", 3, "type", "key-id")),
    ("value-id", ("schemas", 1, "fields", 3, "type", "value-id")),
    ("spec-id", ("partition-specs", 0, "spec-id")),
    ("partition source-id", ("partition-specs", 0, "fields", 0, "source-id")),
    ("partition field-id", ("partition-specs", 0, "fields", 0, "field-id")),
    ("order-id", ("sort-orders", 0, "order-id")),
    ("sort source-id", ("sort-orders", 0, "fields", 0, "source-id")),
    ("snapshot schema-id", ("snapshots", 1, "schema-id")),
    ("blob field id", ("statistics", 0, "blob-metadata", 0, "fields", 0)),
]
INT64_PATHS: list[tuple[str, tuple[Any, ...]]] = [
    ("last-sequence-number", ("last-sequence-number",)),
    ("last-updated-ms", ("last-updated-ms",)),
    ("current-snapshot-id", ("current-snapshot-id",)),
    ("snapshot-id", ("snapshots", 0, "snapshot-id")),
    ("parent-snapshot-id", ("snapshots", 1, "parent-snapshot-id")),
    ("timestamp-ms", ("snapshots", 0, "timestamp-ms")),
    ("sequence-number", ("snapshots", 1, "sequence-number")),
    ("ref snapshot-id", ("refs", "main", "snapshot-id")),
    ("snapshot-log snapshot-id", ("snapshot-log", 0, "snapshot-id")),
    ("statistics file-size-in-bytes", ("statistics", 0, "file-size-in-bytes")),
    ("blob sequence-number", ("statistics", 0, "blob-metadata", 0, "sequence-number")),
]


def _with(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


def _parse(doc: dict[str, Any]) -> TableMetadata:
    return TableMetadata.parse(json.dumps(doc).encode())


def test_base_document_parses() -> None:
    md = _parse(BASE)
    assert md.current_schema().schema_id == 1
    assert TableMetadata.parse(md.to_bytes()) == md


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 2**63, 10**30])
@pytest.mark.parametrize(("label", "path"), INT32_PATHS, ids=[p[0] for p in INT32_PATHS])
def test_int32_fields_refuse_values_beyond_an_int(
    label: str, path: tuple[Any, ...], value: int
) -> None:
    with pytest.raises(ValidationError, match="out of range"):
        _parse(_with(path, value))


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
@pytest.mark.parametrize(("label", "path"), INT64_PATHS, ids=[p[0] for p in INT64_PATHS])
def test_int64_fields_refuse_values_beyond_a_long(
    label: str, path: tuple[Any, ...], value: int
) -> None:
    with pytest.raises(ValidationError, match="out of range"):
        _parse(_with(path, value))


def test_range_limits_themselves_are_accepted() -> None:
    doc = _with(("schemas", 1, "fields", 1, "id"), INT32_MAX)
    doc["last-column-id"] = INT32_MAX
    doc["schemas"][1]["schema-id"] = -(2**31)
    doc["schemas"][0]["schema-id"] = INT32_MAX
    doc["current-schema-id"] = -(2**31)
    doc["snapshots"][0]["snapshot-id"] = INT64_MAX
    doc["snapshots"][1]["parent-snapshot-id"] = INT64_MAX
    doc["snapshot-log"][0]["snapshot-id"] = INT64_MAX
    doc["last-updated-ms"] = INT64_MAX
    md = _parse(doc)
    assert md.current_schema().find_field("y").field_id == INT32_MAX
    assert md.snapshots[0].snapshot_id == INT64_MAX
    assert TableMetadata.parse(md.to_bytes()) == md


def test_field_id_beyond_an_int_fails_at_load_not_in_the_scan(tmp_path: Path) -> None:
    """The tester's case: the catalog loaded the table and the scan hit OverflowError."""
    from icefloe.catalog import load_catalog

    cat = load_catalog(
        "c", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/w"
    )
    cat.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    table = cat.create_table("db.t", schema, format_version=2)
    table.append(pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=schema))
    path = Path(table.metadata_location.removeprefix("file://"))
    doc = json.loads(path.read_text())
    doc["schemas"][0]["fields"][1]["id"] = 2**31
    path.write_text(json.dumps(doc))
    with pytest.raises(CorruptFileError, match="out of range"):
        cat.load_table("db.t").scan().to_arrow()


SURROGATE_EDITS: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    (
        "summary operation",
        lambda d: d["snapshots"][0]["summary"].__setitem__("operation", "\ud800"),
    ),
    ("field name", lambda d: d["schemas"][1]["fields"][1].__setitem__("name", "a\udfffb")),
    ("field doc", lambda d: d["schemas"][1]["fields"][1].__setitem__("doc", "\udc00")),
    ("property value", lambda d: d["properties"].__setitem__("k", "\udbff")),
    ("property key", lambda d: d["properties"].__setitem__("\ud800k", "v")),
    ("location", lambda d: d.__setitem__("location", "s3://b/\ud800")),
    ("manifest-list", lambda d: d["snapshots"][1].__setitem__("manifest-list", "\ud83d")),
]


@pytest.mark.parametrize(("label", "edit"), SURROGATE_EDITS, ids=[e[0] for e in SURROGATE_EDITS])
def test_lone_surrogates_are_refused(label: str, edit: Callable[[dict[str, Any]], None]) -> None:
    doc = copy.deepcopy(BASE)
    edit(doc)
    text = json.dumps(doc)  # ensure_ascii: the surrogate is a \\udXXX escape, as in a file
    assert "\\ud" in text
    with pytest.raises(ValidationError, match="surrogate"):
        TableMetadata.parse(text.encode())
    with pytest.raises(ValidationError, match="surrogate"):
        TableMetadata.parse(text)  # str input too


def test_lone_surrogate_escape_in_upper_case_is_refused() -> None:
    text = json.dumps(BASE).replace('"operation": "append"', '"operation": "\\uD800"', 1)
    with pytest.raises(ValidationError, match="surrogate"):
        TableMetadata.parse(text)


def test_surrogate_pairs_and_non_ascii_text_are_accepted() -> None:
    doc = copy.deepcopy(BASE)
    doc["schemas"][1]["fields"][1]["name"] = "y\U0001f600é"
    doc["properties"]["emoji \U0001f600"] = "\U00010348"
    text = json.dumps(doc)  # pairs as escapes: \\ud83d\\ude00
    assert "\\ud83d\\ude00" in text
    md = TableMetadata.parse(text.encode())
    assert md.current_schema().fields[1].name == "y\U0001f600é"
    assert TableMetadata.parse(md.to_bytes()) == md
    # and the same text as raw UTF-8, without escapes
    assert TableMetadata.parse(json.dumps(doc, ensure_ascii=False).encode()) == md


def test_escaped_backslash_before_u_d800_is_plain_text() -> None:
    doc = copy.deepcopy(BASE)
    doc["properties"]["k"] = "\\ud800"  # a backslash, then the letters: no surrogate
    md = _parse(doc)
    assert md.properties["k"] == "\\ud800"


@pytest.mark.parametrize("digits", [4301, 5000, 100_000])
def test_over_long_integer_literal_is_a_validation_error(digits: int) -> None:
    text = json.dumps(BASE).replace(
        '"format-version"', '"x-big": ' + "9" * digits + ', "format-version"', 1
    )
    with pytest.raises(ValidationError, match="not valid JSON"):
        TableMetadata.parse(text.encode())


def test_huge_integer_in_unknown_field_within_parser_limits_is_ignored() -> None:
    # Java's Jackson keeps an unknown big number as a BigIntegerNode and ignores it.
    doc = dict(BASE, **{"x-big": 10**100})
    assert _parse(doc) == _parse(BASE)


def test_errors_are_iceberg_errors_with_the_field_name() -> None:
    with pytest.raises(IcebergError, match="snapshot-id"):
        _parse(_with(("snapshots", 0, "snapshot-id"), 2**63))
    with pytest.raises(IcebergError, match="field id"):
        _parse(_with(("schemas", 1, "fields", 1, "id"), 2**31))


def test_spec_and_sort_order_ids_beyond_32_bits_are_refused_in_updates_too() -> None:
    """A REST client's add-spec or add-sort-order with an id beyond 32 bits is refused when
    the update is parsed: applied, it would make metadata no reader accepts."""
    from icefloe.metadata import update_from_json

    spec = {
        "action": "add-spec",
        "spec": {
            "spec-id": 1,
            "fields": [{"source-id": 1, "field-id": 2**40, "name": "x", "transform": "identity"}],
        },
    }
    with pytest.raises(ValidationError, match="32-bit"):
        update_from_json(spec)
    order = {
        "action": "add-sort-order",
        "sort-order": {
            "order-id": 2**33,
            "fields": [
                {
                    "source-id": 1,
                    "transform": "identity",
                    "direction": "asc",
                    "null-order": "nulls-first",
                }
            ],
        },
    }
    with pytest.raises(ValidationError, match="32-bit"):
        update_from_json(order)
