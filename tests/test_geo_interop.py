"""Geometry columns icefloe writes, read by DuckDB 1.5.5 (iceberg + spatial extensions, loaded
offline by path: the values, the manifest bounds as DuckDB decodes them, and DuckDB's own file
pruning on those bounds) and by Iceberg Java 1.12 through Spark 4.1 (the values and bounds)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.expressions import BoundingBox, st_intersects
from icefloe.schema import Schema
from icefloe.types import GeometryType, LongType, NestedField
from support.peers import duckdb_connect, duckdb_load

pytestmark = pytest.mark.interop


def _point(x: float, y: float) -> bytes:
    return struct.pack("<BIdd", 1, 1, x, y)


def _line(*pts: tuple[float, float]) -> bytes:
    out = struct.pack("<BII", 1, 2, len(pts))
    for x, y in pts:
        out += struct.pack("<dd", x, y)
    return out


#: three files with disjoint clusters of geometries
FILES = [
    [(1, _point(1, 1)), (2, _line((0, 0), (2, 3)))],
    [(3, _point(50, 50)), (4, None)],
    [(5, _point(-80, 10)), (6, _point(-70, 20))],
]


def _table(tmp_path: Path) -> Any:
    cat = SqlCatalog("geo", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "g", GeometryType()))
    t = cat.create_table("db.t", schema, format_version=3)
    for rows in FILES:
        t.append(
            pa.table(
                {
                    "id": pa.array([r[0] for r in rows], pa.int64()),
                    "g": pa.array([r[1] for r in rows], pa.binary()),
                }
            )
        )
    return t


@pytest.fixture
def duck() -> Any:
    pytest.importorskip("duckdb_extension_spatial")
    con = duckdb_connect()
    duckdb_load(con, "spatial")
    try:
        yield con
    finally:
        con.close()


def test_duckdb_reads_icefloe_geometry_and_prunes_with_its_bounds(
    tmp_path: Path, duck: Any
) -> None:
    t = _table(tmp_path)
    scan = f"iceberg_scan('{t.metadata_location}')"
    rows = duck.execute(f"select id, ST_AsText(g) from {scan} order by id").fetchall()
    assert rows == [
        (1, "POINT (1 1)"),
        (2, "LINESTRING (0 0, 2 3)"),
        (3, "POINT (50 50)"),
        (4, None),
        (5, "POINT (-80 10)"),
        (6, "POINT (-70 20)"),
    ]
    # DuckDB decodes the manifest bounds icefloe wrote
    stats = duck.execute(
        "select lower_bound, upper_bound from iceberg_column_stats(?) where column_name = 'g'",
        [t.metadata_location],
    ).fetchall()
    boxes = sorted(
        tuple(json.loads(b)[k] for b in (lo, hi) for k in ("bbox_x", "bbox_y")) for lo, hi in stats
    )
    assert boxes == [(-80.0, 10.0, -70.0, 20.0), (0.0, 0.0, 2.0, 3.0), (50.0, 50.0, 50.0, 50.0)]
    # and its own planning skips the two files whose bounds cannot intersect the box
    duck.execute("set enable_logging = true")
    duck.execute("set logging_level = 'debug'")
    got = duck.execute(
        f"select id from {scan} where g && ST_MakeEnvelope(-1, -1, 3, 3) order by id"
    ).fetchall()
    assert got == [(1,), (2,)]
    skipped = duck.execute(
        "select message from duckdb_logs() where message like '%skipped ''data_file''%'"
    ).fetchall()
    near = {
        f.data_file.file_path
        for f in t.scan(st_intersects("g", BoundingBox(-1, -1, 3, 3))).plan_files()
    }
    assert len(skipped) == 2 and not any(p in m for (m,) in skipped for p in near), skipped


@pytest.mark.spark
def test_iceberg_java_reads_the_table_and_its_geometry_bounds(iceberg_spark: Any) -> None:
    """Iceberg Java 1.12 through Spark 4.1 loads icefloe's geometry table, decodes its bound
    points with its own classes and reads the column."""
    cat = iceberg_spark.icefloe()
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "g", GeometryType()))
    t = cat.create_table("db.t", schema, format_version=3)
    for rows in FILES:
        t.append(
            pa.table(
                {
                    "id": pa.array([r[0] for r in rows], pa.int64()),
                    "g": pa.array([r[1] for r in rows], pa.binary()),
                }
            )
        )
    spark = iceberg_spark.spark
    jvm = spark.sparkContext._jvm
    # the Java API loads the table and decodes icefloe's bound points with its own classes
    java_table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        spark._jsparkSession, f"{iceberg_spark.name}.db.t"
    )
    assert str(java_table.schema().findField(2).type()) == "geometry(OGC:CRS84)"
    boxes = []
    tasks = java_table.newScan().includeColumnStats().planFiles().iterator()
    while tasks.hasNext():
        f = tasks.next().file()
        geo_type = java_table.schema().findField(2).type()
        conv = jvm.org.apache.iceberg.types.Conversions
        lo = conv.fromByteBuffer(geo_type, f.lowerBounds().get(2))
        hi = conv.fromByteBuffer(geo_type, f.upperBounds().get(2))
        boxes.append((lo.x(), lo.y(), hi.x(), hi.y()))
    assert sorted(boxes) == [
        (-80.0, 10.0, -70.0, 20.0),
        (0.0, 0.0, 2.0, 3.0),
        (50.0, 50.0, 50.0, 50.0),
    ]
    # Spark 4.1 reads the column as its GEOMETRY type: the same WKB, SRID 4326 for OGC:CRS84
    rows = iceberg_spark.sql("select id, g from {c}.db.t order by id").collect()
    want = {i: wkb for f in FILES for i, wkb in f}
    assert [r.id for r in rows] == sorted(want)
    for r in rows:
        if want[r.id] is None:
            assert r.g is None
        else:
            assert bytes(r.g.getBytes()) == want[r.id]
            assert r.g.getSrid() == 4326
