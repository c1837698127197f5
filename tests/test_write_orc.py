"""ORC data files written for tables whose ``write.format.default`` is ``orc``.

Oracles: the rows written (read back through icefloe's ORC reader and through pyarrow's ORC
reader by field id), the metrics of the same rows written as Parquet (bounds, null and NaN
counts; the Parquet path's own data-computed metrics), and the count of each list's and map's
elements. Tables Iceberg Java reads are in ``tests/test_spark_interop.py``; PyIceberg reads
one here.
"""

from __future__ import annotations

import datetime as dt
import math
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
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
from icefloe.types import LongType, NestedField, StringType, VariantType
from icefloe.write import write_data_files
from icefloe.write.input import to_table_schema
from icefloe.write.metrics import MetricsConfig, compute_metrics
from support.metric_rows import ROW, SCHEMA, rows_table

ORC = {"write.format.default": "orc"}


def _plain(v: Any) -> Any:
    """Rows comparable with ``==`` (NaN equal to NaN)."""
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def _readable_instant(v: dt.datetime | None) -> bool:
    """Whether pyarrow's ORC reader can give back this timestamp (it uses nanoseconds) and
    Java's reads it right (not before 1970 with a fraction of a second)."""
    if v is None:
        return True
    plain = v.replace(tzinfo=None)
    fraction_before_1970 = plain < dt.datetime(1970, 1, 1) and plain.microsecond != 0
    return dt.datetime(1677, 9, 22) <= plain <= dt.datetime(2262, 4, 10) and not (
        fraction_before_1970
    )


@pytest.mark.parametrize("mode", ["truncate(16)", "full", "truncate(2)", "counts"])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(ROW, min_size=1, max_size=40), codec=st.sampled_from(["zlib", "zstd", "none"]))
def test_rows_and_metrics_equal_the_parquet_oracle(
    tmp_path_factory: pytest.TempPathFactory, mode: str, rows: list[dict[str, Any]], codec: str
) -> None:
    props = {**ORC, "write.metadata.metrics.default": mode, "write.orc.compression-codec": codec}
    base = tmp_path_factory.mktemp("orc")
    md = new_table_metadata(
        SCHEMA, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, base.as_uri(), props, 3
    )
    data = to_table_schema(rows_table(rows), SCHEMA, 3)
    ns_early = any(r["ns"] is not None and r["ns"] < 0 and r["ns"] % 10**9 for r in rows)
    if ns_early or not all(_readable_instant(r[c]) for r in rows for c in ("ts", "tz")):
        with pytest.raises(UnsupportedFeatureError, match=r"1677|1970"):
            write_data_files(md, FileIO(), data)
        assert not list((base / "data").glob("*")) if (base / "data").exists() else True
        return
    (written,) = write_data_files(md, FileIO(), data)
    assert written.file_format == "ORC" and written.file_path.endswith(".orc")
    assert written.record_count == len(rows) and not written.column_sizes
    local = written.file_path.removeprefix("file://")
    f = orc.ORCFile(local)
    assert f.nrows == len(rows)
    assert f.compression == {"zlib": "ZLIB", "zstd": "ZSTD", "none": "UNCOMPRESSED"}[codec]
    # The Parquet writer's metrics of the same rows (computed from the data) are the oracle.
    parquet = base / "oracle.parquet"
    pq.write_table(data, parquet)
    config = MetricsConfig(md.current_schema(), props)
    oracle = compute_metrics(data, pq.ParquetFile(parquet).metadata, config, footer_bounds=False)
    assert written.lower_bounds == oracle.lower_bounds
    assert written.upper_bounds == oracle.upper_bounds
    assert written.nan_value_counts == oracle.nan_value_counts
    # Counts: a list's or map's leaves count their elements (Parquet counts a slot for an
    # empty or null list as well); every other leaf, one value per row.
    table_schema = md.current_schema()  # ids reassigned by the new table

    def fid_of(name: str) -> int:
        return table_schema.find_field(name).field_id

    in_lists = sum(len(r["tags"]) for r in rows if r["tags"] is not None)
    in_maps = sum(len(r["m"]) for r in rows if r["m"] is not None)
    elements = {fid_of("tags.element"): in_lists, fid_of("m.key"): in_maps}
    elements[fid_of("m.value")] = in_maps
    for fid, count in written.value_counts.items():
        if fid in elements:
            assert count == elements[fid], fid
        else:
            assert count == len(rows), fid
            assert written.null_value_counts[fid] == oracle.null_value_counts[fid], fid
    # The rows come back as written, through icefloe's reader.
    cat = SqlCatalog("c", uri=f"sqlite:///{base}/c.db", warehouse=(base / "wh").as_uri())
    cat.create_namespace("db")
    table = cat.create_table("db.t", SCHEMA, format_version=3, properties=props)
    table.append(data)
    got = table.scan().to_arrow()
    assert {df.data_file.file_format for df in table.scan().plan_files()} == {"orc"}
    assert _plain(got.to_pylist()) == _plain(data.to_pylist())


def test_orc_layout_as_iceberg_java_writes_it(tmp_path: Path) -> None:
    """Attributes on every ORC type, times as longs, fixed and UUID as binary, time zones."""
    md = new_table_metadata(
        SCHEMA, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, tmp_path.as_uri(), ORC, 3
    )
    row = dict.fromkeys([f.name for f in SCHEMA.fields])
    data = to_table_schema(rows_table([row]), SCHEMA, 3)
    (written,) = write_data_files(md, FileIO(), data)
    schema = orc.ORCFile(written.file_path.removeprefix("file://")).schema

    def attrs(name: str) -> dict[bytes, bytes]:
        return dict(schema.field(name).metadata)

    assert attrs("l") == {
        b"iceberg.id": b"2",
        b"iceberg.required": b"false",
        b"iceberg.long-type": b"LONG",
    }
    assert attrs("t")[b"iceberg.long-type"] == b"TIME" and schema.field("t").type == pa.int64()
    assert (
        attrs("fx")[b"iceberg.binary-type"] == b"FIXED" and attrs("fx")[b"iceberg.length"] == b"3"
    )
    assert attrs("u")[b"iceberg.binary-type"] == b"UUID" and schema.field("u").type == pa.binary()
    assert attrs("ts")[b"iceberg.timestamp-unit"] == b"MICROS"
    assert schema.field("tz").type.tz == "UTC" and schema.field("ts").type.tz is None
    assert attrs("ns")[b"iceberg.timestamp-unit"] == b"NANOS"
    inner = schema.field("st").type.field(0)
    ids = md.current_schema()  # nested ids reassigned by the new table
    assert int(dict(inner.metadata)[b"iceberg.id"]) == ids.find_field("st.inner").field_id
    key = schema.field("m").type.key_field
    assert int(dict(key.metadata)[b"iceberg.id"]) == ids.find_field("m.key").field_id
    assert dict(schema.field("tags").type.value_field.metadata)[b"iceberg.required"] == b"false"


def test_types_orc_cannot_hold_and_bad_settings_are_refused(tmp_path: Path) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "v", VariantType()))
    t = cat.create_table("db.v", schema, format_version=3, properties=ORC)
    with pytest.raises(UnsupportedFeatureError, match="ORC"):
        t.append(pa.table({"id": pa.array([1], pa.int64()), "v": pa.nulls(1)}))
    assert t.current_snapshot() is None
    plain = Schema(NestedField(1, "id", LongType(), True))
    with pytest.raises(ValidationError, match=r"write\.orc\.compression-codec"):
        cat.create_table("db.bad", plain, properties={**ORC, "write.orc.compression-codec": "rar"})


def test_pyiceberg_reads_icefloe_orc_files(tmp_path: Path) -> None:
    pytest.importorskip("pyiceberg")
    from pyiceberg.table import StaticTable

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType()))
    t = cat.create_table("db.t", schema, properties=ORC)
    rows = pa.table({"id": pa.array(range(100), pa.int64()), "s": [f"v{i}" for i in range(100)]})
    t.append(to_table_schema(rows, schema, 2))
    t.delete("id < 10")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = StaticTable.from_metadata(t.metadata_location).scan().to_arrow()
    assert sorted(theirs.column("id").to_pylist()) == list(range(10, 100))
    assert sorted(theirs.column("s").to_pylist()) == sorted(f"v{i}" for i in range(10, 100))


def test_timestamps_java_would_read_a_second_early_are_refused(tmp_path: Path) -> None:
    """Before 1970 with a fraction of a second, the ORC C++ writer's encoding reads one second
    early in Iceberg Java: refused (nothing committed); whole seconds and later instants are
    written."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    schema = pa.schema([("ts", pa.timestamp("us"))])
    t = cat.create_table("db.early", schema, properties=ORC)
    for bad in (dt.datetime(1969, 12, 31, 23, 59, 59, 500000), dt.datetime(1950, 5, 5, 5, 5, 5, 1)):
        with pytest.raises(UnsupportedFeatureError, match="1970"):
            t.append(pa.table({"ts": pa.array([bad], pa.timestamp("us"))}))
    assert t.current_snapshot() is None
    good = [dt.datetime(1969, 12, 31, 23, 59, 59), dt.datetime(1970, 1, 1, 0, 0, 0, 1)]
    t.append(pa.table({"ts": pa.array(good, pa.timestamp("us"))}))
    assert t.scan().to_arrow()["ts"].to_pylist() == good


def test_unknown_list_elements_and_map_values_are_refused_typed(tmp_path: Path) -> None:
    """ORC has no null-only type: ``unknown`` columns and struct fields are left out of the
    file, a list element or map value cannot be, and pyarrow's own error was untyped."""
    from icefloe.catalog import load_catalog
    from icefloe.exceptions import UnsupportedFeatureError
    from icefloe.schema import Schema
    from icefloe.types import ListType, LongType, MapType, NestedField, StringType, UnknownType

    cat = load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    cat.create_namespace("db")
    cases = {
        "l": (ListType(3, UnknownType(), False), pa.array([[None], None], pa.list_(pa.null()))),
        "m": (
            MapType(3, StringType(), 4, UnknownType(), False),
            pa.array([[("a", None)], None], pa.map_(pa.string(), pa.null())),
        ),
    }
    for name, (typ, values) in cases.items():
        schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "c", typ))
        t = cat.create_table(
            f"db.{name}", schema, format_version=3, properties={"write.format.default": "orc"}
        )
        with pytest.raises(UnsupportedFeatureError, match="type unknown cannot be written to ORC"):
            t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "c": values}))
        assert t.refresh().current_snapshot() is None
