"""Avro data files written for tables whose ``write.format.default`` is ``avro``: the rows read
back equal (icefloe's reader, checked against fastavro-written files in
``tests/test_read_avro.py``, and fastavro reading icefloe's files), metrics equal the Parquet
path's and the layout is Iceberg Java's (rolling, pruning, row-level changes and compaction:
``tests/test_orc_avro_tables.py``). Iceberg Java reads them in ``tests/test_spark_interop.py``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import UnsupportedFeatureError, ValidationError
from icefloe.io import FileIO
from icefloe.metadata import new_table_metadata
from icefloe.partitioning import UNPARTITIONED_PARTITION_SPEC
from icefloe.schema import Schema
from icefloe.sorting import UNSORTED_SORT_ORDER
from icefloe.types import LongType, MapType, NestedField, StringType, StructType, VariantType
from icefloe.write import write_data_files
from icefloe.write.input import to_table_schema
from icefloe.write.metrics import MetricsConfig, compute_metrics
from support.metric_rows import ROW, SCHEMA, rows_table

pytestmark = pytest.mark.interop  # fastavro reads the files

AVRO = {"write.format.default": "avro"}
_CODECS = {"gzip": "deflate", "zstd": "zstandard", "snappy": "snappy", "uncompressed": "null"}


def _plain(v: Any) -> Any:
    """Rows comparable with ``==`` (NaN equal to NaN)."""
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def _avro(
    path: str, records: bool = True
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, bytes]]:
    """The writer schema, the records (fastavro here reads only deflate and null blocks) and
    the header metadata of an Avro file."""
    with open(path.removeprefix("file://"), "rb") as f:
        r = fastavro.reader(f)
        return r.writer_schema, list(r) if records else [], r.metadata  # type: ignore[return-value]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(ROW, min_size=1, max_size=40), codec=st.sampled_from(sorted(_CODECS)))
def test_rows_and_metrics_equal_the_parquet_oracle(
    tmp_path_factory: pytest.TempPathFactory, rows: list[dict[str, Any]], codec: str
) -> None:
    props = {**AVRO, "write.metadata.metrics.default": "truncate(16)"}
    props["write.avro.compression-codec"] = codec
    base = tmp_path_factory.mktemp("avro")
    md = new_table_metadata(
        SCHEMA, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, base.as_uri(), props, 3
    )
    data = to_table_schema(rows_table(rows), SCHEMA, 3)
    (written,) = write_data_files(md, FileIO(), data)
    assert written.file_format == "AVRO" and written.file_path.endswith(".avro")
    assert written.record_count == len(rows)
    # fastavro, an independent reader, takes the file: its codec, and the plain columns.
    readable = codec in ("gzip", "uncompressed")
    _, records, meta = _avro(written.file_path, records=readable)
    assert meta["avro.codec"] == _CODECS[codec]
    if readable:
        assert len(records) == len(rows)
        for name in ("i", "l", "s", "b", "flag"):
            assert [r[name] for r in records] == [r[name] for r in rows], name
        assert _plain([r["x"] for r in records]) == _plain([r["x"] for r in rows])
    # The Parquet writer's metrics of the same rows (computed from the data) are the oracle.
    parquet = base / "oracle.parquet"
    pq.write_table(data, parquet)
    config = MetricsConfig(md.current_schema(), props)
    oracle = compute_metrics(data, pq.ParquetFile(parquet).metadata, config, footer_bounds=False)
    assert written.lower_bounds == oracle.lower_bounds
    assert written.upper_bounds == oracle.upper_bounds
    assert written.nan_value_counts == oracle.nan_value_counts
    # The rows come back as written, through icefloe's reader.
    cat = SqlCatalog("c", uri=f"sqlite:///{base}/c.db", warehouse=(base / "wh").as_uri())
    cat.create_namespace("db")
    table = cat.create_table("db.t", SCHEMA, format_version=3, properties=props)
    table.append(data)
    assert {df.data_file.file_format for df in table.scan().plan_files()} == {"avro"}
    got = table.scan().to_arrow()
    assert _plain(got.to_pylist()) == _plain(data.to_pylist())


def test_avro_layout_as_iceberg_java_writes_it(tmp_path: Path) -> None:
    """Field ids, logical types, named types defined once, map layouts, names Avro refuses."""
    schema = Schema(
        *SCHEMA.fields,
        NestedField(30, "odd-name", LongType()),
        NestedField(31, "1st", StringType()),
        NestedField(32, "by_int", MapType(33, LongType(), 34, StringType(), False)),
        NestedField(
            35, "again", StructType(NestedField(36, "u2", SCHEMA.find_field("u").field_type))
        ),
    )
    md = new_table_metadata(
        schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, tmp_path.as_uri(), AVRO, 3
    )
    table_schema = md.current_schema()  # ids reassigned by the new table
    row = dict.fromkeys([f.name for f in SCHEMA.fields])
    base = to_table_schema(rows_table([row]), SCHEMA, 3)
    data = base.append_column("odd-name", pa.array([7], pa.int64()))
    data = data.append_column("1st", pa.array(["x"]))
    data = data.append_column("by_int", pa.array([[(1, "a")]], pa.map_(pa.int64(), pa.string())))
    data = data.append_column("again", pa.array([{"u2": None}]))
    data = to_table_schema(data, table_schema, 3)
    (written,) = write_data_files(md, FileIO(), data)
    writer_schema, records, meta = _avro(written.file_path)
    fields = {f["name"]: f for f in writer_schema["fields"]}
    assert fields["l"]["type"] == ["null", "long"] and fields["l"]["default"] is None
    assert fields["l"]["field-id"] == table_schema.find_field("l").field_id
    assert fields["ts"]["type"][1]["adjust-to-utc"] is False
    assert fields["tz"]["type"][1]["adjust-to-utc"] is True
    assert fields["ns"]["type"][1]["logicalType"] == "timestamp-nanos"
    assert fields["t"]["type"][1]["logicalType"] == "time-micros"
    assert fields["d"]["type"][1]["logicalType"] == "date"
    dec = fields["dec"]["type"][1]
    assert (dec["type"], dec["size"], dec["precision"], dec["scale"]) == ("fixed", 4, 9, 2)
    assert fields["big"]["type"][1]["size"] == 13
    assert fields["u"]["type"][1] == {
        "type": "fixed",
        "name": "uuid_fixed",
        "size": 16,
        "logicalType": "uuid",
    }
    # The second UUID refers to the type defined by the first.
    assert fields["again"]["type"][1]["fields"][0]["type"] == ["null", "uuid_fixed"]
    m = fields["m"]["type"][1]
    assert m["type"] == "map" and m["key-id"] == table_schema.find_field("m.key").field_id
    tags = fields["tags"]["type"][1]
    assert tags["element-id"] == table_schema.find_field("tags.element").field_id
    by_int = fields["by_int"]["type"][1]
    assert by_int["logicalType"] == "map" and by_int["type"] == "array"
    assert [f["name"] for f in by_int["items"]["fields"]] == ["key", "value"]
    assert "odd_x2Dname" in fields and "_1st" in fields
    assert records[0]["odd_x2Dname"] == 7 and records[0]["by_int"] == [{"key": 1, "value": "a"}]
    assert json.loads(meta["iceberg.schema"])["fields"][0]["name"] == "i"


def test_types_avro_cannot_hold_and_bad_settings_are_refused(tmp_path: Path) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "v", VariantType()))
    t = cat.create_table("db.v", schema, format_version=3, properties=AVRO)
    with pytest.raises(UnsupportedFeatureError, match="Avro"):
        t.append(pa.table({"id": pa.array([1], pa.int64()), "v": pa.nulls(1)}))
    assert t.current_snapshot() is None
    plain = Schema(NestedField(1, "id", LongType(), True))
    with pytest.raises(ValidationError, match=r"write\.avro\.compression-codec"):
        cat.create_table(
            "db.bad", plain, properties={**AVRO, "write.avro.compression-codec": "rar"}
        )
    # A required column with a null is refused before anything is committed.
    r = cat.create_table("db.r", plain, properties=AVRO)
    with pytest.raises(ValidationError):
        r.append(pa.table({"id": pa.array([1, None], pa.int64())}))
    assert r.current_snapshot() is None
