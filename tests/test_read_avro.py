"""Avro data and delete files (Iceberg's Avro mapping: field ids in the writer schema, logical
types for dates, times, timestamps, decimals and UUIDs), written by fastavro as an independent
writer: every type against the rows written, name mapping and damage (every kind of delete
and metadata columns: ``tests/test_orc_avro_tables.py``). Tables Iceberg Java writes in Avro
are read in ``tests/test_spark_interop.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import icefloe
from icefloe.arrow_schema import schema_to_arrow
from icefloe.exceptions import CorruptFileError, UnsupportedFeatureError, ValidationError
from icefloe.partitioning import PartitionSpec
from icefloe.read.avro_file import avro_to_arrow_schema
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
from support import metric_rows
from support.avro_files import write_avro
from support.plan_tables import HandTable, entry
from support.read_tables import SCHEMA, build

pytestmark = pytest.mark.interop  # fastavro writes the files


def _hand_table(
    tmp_path: Path,
    path: Path,
    rows: int,
    schema: Schema = SCHEMA,
    properties: dict[str, str] | None = None,
) -> str:
    table = HandTable(tmp_path, schema, [PartitionSpec()], 2, properties)
    size = path.stat().st_size
    files = [entry(str(path), file_format="AVRO", record_count=rows, file_size_in_bytes=size)]
    table.commit([(0, 0, files)])
    return table.metadata_path


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    rows=st.lists(metric_rows.ROW, min_size=1, max_size=40),
    block_rows=st.integers(1, 50),
    codec=st.sampled_from(["null", "deflate"]),
)
def test_every_type_reads_as_written(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[dict[str, Any]],
    block_rows: int,
    codec: str,
) -> None:
    tmp = tmp_path_factory.mktemp("avro")
    target = schema_to_arrow(metric_rows.SCHEMA)
    data = metric_rows.rows_table(rows).select(target.names).cast(target)
    path = tmp / "data.avro"
    write_avro(data, path, codec=codec, block_rows=block_rows)
    meta = _hand_table(tmp, path, data.num_rows, metric_rows.SCHEMA)
    got = icefloe.StaticTable.from_metadata(meta).scan().to_arrow()
    assert got.schema.names == data.schema.names
    # repr: NaN equals NaN; UUIDs compare as the same UUID objects.
    assert repr(got.to_pylist()) == repr(data.to_pylist())
    # A projection of nested and scalar columns, and a count.
    table = icefloe.StaticTable.from_metadata(meta)
    some = table.scan(selected_fields=("m", "i", "st")).to_arrow()
    assert repr(some.to_pylist()) == repr(data.select(["i", "st", "m"]).to_pylist())
    assert table.scan().count() == data.num_rows


def test_files_without_ids_read_through_the_name_mapping(tmp_path: Path) -> None:
    schema = {
        "type": "record",
        "name": "plain",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "k", "type": ["null", "int"]},
            {"name": "s", "type": ["null", "string"]},
        ],
    }
    rows = [
        {"id": 1, "k": 4, "s": "a"},
        {"id": 2, "k": None, "s": "b"},
        {"id": 3, "k": 6, "s": None},
    ]
    path = tmp_path / "plain.avro"
    with open(path, "wb") as out:
        fastavro.writer(out, fastavro.parse_schema(schema), rows)
    mapping = json.dumps(
        [{"field-id": i + 1, "names": [n]} for i, n in enumerate(["id", "k", "s"])]
    )
    mapped = tmp_path / "mapped"
    mapped.mkdir()
    meta = _hand_table(mapped, path, 3, properties={"schema.name-mapping.default": mapping})
    got = icefloe.StaticTable.from_metadata(meta).scan().to_arrow()
    assert got.to_pylist() == rows
    unmapped = tmp_path / "unmapped"
    unmapped.mkdir()
    meta = _hand_table(unmapped, path, 3)
    with pytest.raises(ValidationError, match="no field ids"):
        icefloe.StaticTable.from_metadata(meta).scan().to_arrow()


def test_schema_mapping_of_iceberg_avro_conventions() -> None:
    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {
                "name": "ts",
                "type": {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": False},
                "field-id": 1,
            },
            {
                "name": "tz",
                "type": {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": True},
                "field-id": 2,
            },
            {
                "name": "u",
                "type": [
                    "null",
                    {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"},
                ],
                "default": None,
                "field-id": 3,
            },
            {"name": "u2", "type": ["null", "uuid_fixed"], "field-id": 4},
            {
                "name": "m",
                "type": {
                    "type": "array",
                    "logicalType": "map",
                    "items": {
                        "type": "record",
                        "name": "k6_v7",
                        "fields": [
                            {"name": "key", "type": "int", "field-id": 6},
                            {"name": "value", "type": ["null", "string"], "field-id": 7},
                        ],
                    },
                },
                "field-id": 5,
            },
            {"name": "gone", "type": "null", "field-id": 8},
        ],
    }
    arrow = avro_to_arrow_schema(json.dumps(schema))
    assert arrow.names == ["ts", "tz", "u", "u2", "m"]  # an always-null field is left out
    assert arrow.field("ts").type == pa.timestamp("us")
    assert arrow.field("tz").type == pa.timestamp("us", tz="UTC")
    assert arrow.field("u2").type == pa.binary(16) and arrow.field("u2").nullable
    m = arrow.field("m").type
    assert m == pa.map_(pa.int32(), pa.string())
    assert m.key_field.metadata[b"PARQUET:field_id"] == b"6"
    assert m.item_field.metadata[b"PARQUET:field_id"] == b"7"
    bad = dict(schema, fields=[{"name": "x", "type": ["int", "string"], "field-id": 1}])
    with pytest.raises(UnsupportedFeatureError, match="union"):
        avro_to_arrow_schema(json.dumps(bad))
    with pytest.raises(CorruptFileError):
        avro_to_arrow_schema("{not json")


def test_damage_is_a_typed_error(tmp_path: Path) -> None:
    t = build(tmp_path, version=2, files=1, rows=5000, seed=1, file_format="avro")
    path = Path(t.paths[0])
    good = path.read_bytes()
    for damaged in (good[: len(good) // 2], good[:10], good[: len(good) - 5]):
        path.write_bytes(damaged)
        with pytest.raises(CorruptFileError, match=path.name):
            icefloe.StaticTable.from_metadata(t.metadata_path).scan().to_arrow()
    # A flipped byte inside a block: an error naming the file, or (where the bytes still
    # decode) rows, never a crash.
    for at in range(len(good) // 2, len(good) - 20, max(1, len(good) // 40)):
        flipped = bytearray(good)
        flipped[at] ^= 0x5A
        path.write_bytes(bytes(flipped))
        try:
            icefloe.StaticTable.from_metadata(t.metadata_path).scan().to_arrow()
        except CorruptFileError as e:
            assert path.name in str(e)
    path.write_bytes(good)
    # A row count that disagrees with the manifest.
    other = tmp_path / "other"
    other.mkdir()
    meta = _hand_table(other, path, 4999)
    with pytest.raises(CorruptFileError, match="4999"):
        icefloe.StaticTable.from_metadata(meta).scan().to_arrow()


def test_nested_collections_and_maps_with_other_keys(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "by_int", MapType(3, IntegerType(), 4, StringType(), False)),
        NestedField(
            5,
            "points",
            ListType(
                6,
                StructType(NestedField(7, "x", DoubleType()), NestedField(8, "tag", StringType())),
                False,
            ),
        ),
        NestedField(9, "nested", ListType(10, ListType(11, LongType(), False), False)),
        NestedField(
            12, "m", MapType(13, StringType(), 14, ListType(15, IntegerType(), False), False)
        ),
    )
    rows = [
        {
            "id": 1,
            "by_int": [(1, "a"), (-5, None)],
            "points": [{"x": 1.5, "tag": None}, None],
            "nested": [[1, None], [], None],
            "m": [("k", [1, 2]), ("z", None)],
        },
        {"id": 2, "by_int": None, "points": [], "nested": None, "m": []},
        {"id": 3, "by_int": [], "points": None, "nested": [[7]], "m": None},
    ]
    data = pa.Table.from_pylist(rows, schema=schema_to_arrow(schema))
    path = tmp_path / "nested.avro"
    write_avro(data, path, block_rows=1)
    meta = _hand_table(tmp_path, path, 3, schema)
    got = icefloe.StaticTable.from_metadata(meta).scan().to_arrow()
    assert got.to_pylist() == data.to_pylist()
    with open(path, "rb") as f:
        assert '"logicalType": "map"' in json.dumps(fastavro.reader(f).writer_schema)
