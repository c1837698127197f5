"""Schema evolution that must not change what rows read or which columns key them: a float
default widened to double keeps its value, and an identifier field named twice is one field
(Iceberg Java keeps identifier field ids in a set)."""

from __future__ import annotations

import datetime as dt
import json
import struct
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe import values
from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.evolution import check_schema_evolution
from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.types import (
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    UnknownType,
)

FLOAT_1_1 = struct.unpack("<f", struct.pack("<f", 1.1))[0]  # 1.100000023841858


def _catalog(tmp_path: Path) -> HadoopCatalog:
    cat = _catalog_at(tmp_path)
    cat.create_namespace("db")
    return cat


def _catalog_at(tmp_path: Path) -> HadoopCatalog:
    return HadoopCatalog("c", warehouse=str(tmp_path / "wh"))


def _field_json(metadata_location: str, name: str) -> dict:
    with open(metadata_location, encoding="utf-8") as f:
        meta = json.load(f)
    schema = next(s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"])
    return next(f for f in schema["fields"] if f["name"] == name)


def test_a_float_default_widened_to_double_keeps_the_value_rows_read(tmp_path: Path) -> None:
    t = _catalog(tmp_path).create_table(
        "db.t", Schema(NestedField(1, "id", LongType())), format_version=3
    )
    t.append(pa.table({"id": [1]}))  # a file without the column: reads its initial-default
    with t.update_schema() as u:
        u.add_column("f", FloatType(), initial_default=1.1)
    t.append(pa.table({"id": [2]}))  # the write-default stored as a float
    with t.update_schema() as u:
        u.update_column("f", DoubleType())
    t.append(pa.table({"id": [3]}))  # the write-default stored as a double

    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [r["f"] for r in rows] == [FLOAT_1_1] * 3
    field = _field_json(t.metadata_location, "f")
    assert field["type"] == "double"
    assert field["initial-default"] == FLOAT_1_1
    assert field["write-default"] == FLOAT_1_1
    ids = t.scan(row_filter=f"f = {FLOAT_1_1!r}").to_arrow().column("id").to_pylist()
    assert sorted(ids) == [1, 2, 3]


def test_a_writer_that_keeps_the_float_default_as_written_is_accepted() -> None:
    old = Schema(NestedField(1, "f", FloatType(), initial_default=1.1, write_default=1.1))
    for kept in (FLOAT_1_1, 1.1):
        new = Schema(NestedField(1, "f", DoubleType(), initial_default=kept, write_default=kept))
        check_schema_evolution(old, new, 3)
    changed = Schema(NestedField(1, "f", DoubleType(), initial_default=2.0, write_default=2.0))
    with pytest.raises(Exception, match="initial-default"):
        check_schema_evolution(old, changed, 3)


@pytest.mark.parametrize("names", [("id", "id"), ("id", "key")])
def test_an_identifier_field_named_twice_is_one_key(tmp_path: Path, names: tuple[str, str]) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "v", StringType())
    )
    t = _catalog(tmp_path).create_table("db.t", schema, format_version=2)
    with t.update_schema() as u:
        if "key" in names:
            u.rename_column("id", "key")
        u.set_identifier_fields(*names)  # the old and the new name of one column
    assert t.schema().identifier_field_ids == (1,)
    with open(t.metadata_location, encoding="utf-8") as f:
        meta = json.load(f)
    assert meta["schemas"][-1]["identifier-field-ids"] == [1]

    key = t.schema().find_field(1).name
    arrow = pa.schema([pa.field(key, pa.int64(), False), pa.field("v", pa.string())])
    t.append(pa.table({key: [1, 2, 3], "v": ["a", "b", "c"]}, schema=arrow))
    t.upsert(pa.table({key: [2], "v": ["B"]}, schema=arrow))
    t.delete_by_keys({key: [1]})
    got = sorted((r[key], r["v"]) for r in t.scan().to_arrow().to_pylist())
    assert got == [(2, "B"), (3, "c")]


def test_metadata_naming_an_identifier_field_twice_reads_as_one() -> None:
    schema = Schema.from_json(
        {
            "type": "struct",
            "schema-id": 0,
            "identifier-field-ids": [1, 1],
            "fields": [{"id": 1, "name": "id", "type": "long", "required": True}],
        }
    )
    assert schema.identifier_field_ids == (1,)
    assert schema.to_json()["identifier-field-ids"] == [1]


@pytest.mark.parametrize("value", [1e39, -3.5e38])
def test_a_float_default_beyond_float_range_is_refused(tmp_path: Path, value: float) -> None:
    """Narrowed to float, the value is an infinity, which metadata JSON cannot hold (a bare
    ``Infinity`` token makes the file unreadable to strict JSON parsers)."""
    t = _catalog(tmp_path).create_table(
        "db.t", Schema(NestedField(1, "id", LongType())), format_version=3
    )
    before = t.metadata_location
    with pytest.raises(ValidationError, match="not a finite float"), t.update_schema() as u:
        u.add_column("f", FloatType(), initial_default=value)
    assert t.refresh().metadata_location == before
    # within range it is kept, as a float
    with t.update_schema() as u:
        u.add_column("f", FloatType(), initial_default=3.4e38)
    json.loads(Path(t.metadata_location).read_text(encoding="utf-8"), parse_constant=_no_constants)


def _no_constants(token: str) -> None:
    raise AssertionError(f"metadata JSON holds {token}")


@pytest.mark.parametrize(
    ("field_type", "default"),
    [
        (MapType(10, StringType(), 11, IntegerType()), {"a": 1}),
        (MapType(10, StringType(), 11, IntegerType()), {}),
        (MapType(10, StringType(), 11, IntegerType()), {None: 1}),
        (ListType(10, IntegerType(), element_required=True), [1, 3]),
        (ListType(10, IntegerType()), []),
        (ListType(10, StructType(NestedField(12, "x", LongType(), required=True))), [{"x": 1}]),
    ],
)
def test_a_list_or_map_default_is_refused(
    tmp_path: Path, field_type: IcebergType, default: object
) -> None:
    """Iceberg Java (every nested type's default must be null) and PyIceberg refuse to load a
    table whose schemas give a list or map column a default, so one is refused when the column
    is added or created, as an initial or a write default; the table is left as it was."""
    t = _catalog(tmp_path).create_table(
        "db.t", Schema(NestedField(1, "id", LongType(), required=True)), format_version=3
    )
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    before = t.metadata_location
    refused = r"column 'c': a (list|map) column's initial-default"
    with pytest.raises(ValidationError, match=refused), t.update_schema() as u:
        u.add_column("c", field_type, initial_default=default)
    assert t.refresh().metadata_location == before
    assert t.scan().to_arrow().column("id").to_pylist() == [1]
    bad = Schema(
        NestedField(1, "id", LongType()), NestedField(2, "c", field_type, write_default=[])
    )
    with pytest.raises(ValidationError, match=r"column 'c': .* write-default must be null"):
        t.catalog.create_table("db.u", bad, format_version=3)
    assert not t.catalog.table_exists("db.u")


def test_an_unknown_column_cannot_key_a_change(tmp_path: Path) -> None:
    """An ``unknown`` column is always null: equality deletes keyed on it cannot be compared,
    so committed they made every later read fail."""
    t = _catalog(tmp_path).create_table(
        "db.t",
        Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "u", UnknownType())),
        format_version=3,
        properties={"write.upsert.mode": "equality"},
    )
    t.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    before = t.metadata_location
    with pytest.raises(ValidationError, match=r"'u' .* cannot be a key column"):
        t.delete_by_keys(pa.table({"u": pa.nulls(1)}), ["u"])
    new = pa.table({"id": pa.array([5], pa.int64()), "u": pa.nulls(1)})
    with pytest.raises(ValidationError, match=r"'u' .* cannot be a key column"):
        t.upsert(new, join_cols=["u"])
    assert t.refresh().metadata_location == before
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2]


def test_a_date_default_after_year_9999_is_read_and_written(tmp_path: Path) -> None:
    """Another engine's ``"+10000-01-01"`` default: Python's dates cannot hold it, so as a
    Python value it is a typed error, while reads and writes fill the column with it."""
    t = _catalog(tmp_path).create_table(
        "db.t", Schema(NestedField(1, "id", LongType(), required=True)), format_version=3
    )
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    with t.update_schema() as u:
        u.add_column("d", DateType(), initial_default=dt.date(9999, 12, 31))
    path = Path(t.metadata_location)
    meta = json.loads(path.read_text(encoding="utf-8"))
    field = meta["schemas"][-1]["fields"][-1]
    field["initial-default"] = field["write-default"] = "+10000-01-01"  # as Java writes it
    path.write_text(json.dumps(meta), encoding="utf-8")
    t = _catalog_at(tmp_path).load_table("db.t")
    t.append(pa.table({"id": pa.array([2], pa.int64())}))  # the write-default fills d
    got = t.scan().to_arrow().sort_by("id")
    days = got.column("d").cast(pa.int32()).to_pylist()
    assert days == [(dt.date(9999, 12, 31) - dt.date(1970, 1, 1)).days + 1] * 2
    with pytest.raises(ValidationError, match="outside the years 1 to 9999"):
        values.from_json(DateType(), "+10000-01-01")
