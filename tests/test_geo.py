"""Geometry and geography columns: the Parquet GEOMETRY/GEOGRAPHY annotation, bounds in
manifests computed from WKB (shapely as the oracle), and ``st_intersects`` file pruning that
never skips a file holding a match (hypothesis over random points and boxes)."""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

shapely = pytest.importorskip("shapely")

from icefloe.catalog.sql import SqlCatalog  # noqa: E402
from icefloe.exceptions import UnsupportedFeatureError, ValidationError  # noqa: E402
from icefloe.expressions import (  # noqa: E402
    BoundingBox,
    Not,
    bind,
    col,
    parse,
    st_disjoint,
    st_intersects,
)
from icefloe.expressions.evaluator import evaluate  # noqa: E402
from icefloe.expressions.serde import from_dict, to_dict  # noqa: E402
from icefloe.geo import WkbType, wkb_bounds  # noqa: E402
from icefloe.schema import Schema  # noqa: E402
from icefloe.types import (  # noqa: E402
    GeographyType,
    GeometryType,
    LongType,
    NestedField,
    StringType,
)
from icefloe.values import point_from_bytes  # noqa: E402

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "g", GeometryType("srid:3857")),
    NestedField(3, "geo", GeographyType()),
    NestedField(4, "name", StringType()),
)


def _catalog(tmp_path: Path) -> SqlCatalog:
    cat = SqlCatalog("geo", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    return cat


def _rows(points: list[Any], start: int = 0) -> pa.Table:
    wkb = [None if p is None else shapely.to_wkb(p) for p in points]
    return pa.table(
        {
            "id": pa.array(range(start, start + len(points)), pa.int64()),
            "g": pa.array(wkb, pa.binary()),
            "geo": pa.array(wkb, pa.binary()),
            "name": pa.array([None] * len(points), pa.string()),
        }
    )


def _files(table: Any) -> list[dict[str, Any]]:
    return sorted(table.inspect.files().to_pylist(), key=lambda f: f["file_path"])


def _bounds(f: dict[str, Any], field_id: int) -> tuple[Any, Any] | None:
    lo = dict(f["lower_bounds"] or []).get(field_id)
    hi = dict(f["upper_bounds"] or []).get(field_id)
    if lo is None and hi is None:
        return None
    return point_from_bytes(lo), point_from_bytes(hi)


# -------------------------------------------------------------------------- Parquet and Arrow


def test_columns_carry_the_parquet_geo_annotation_and_read_back(tmp_path: Path) -> None:
    t = _catalog(tmp_path).create_table("db.t", SCHEMA, format_version=3)
    pts = [shapely.Point(1, 2), None, shapely.LineString([(0, 0), (5, 7)])]
    t.append(_rows(pts))
    (f,) = _files(t)
    md = pq.read_metadata(f["file_path"].removeprefix("file://"))
    types = {md.schema.column(i).name: str(md.schema.column(i).logical_type) for i in range(4)}
    assert types["g"] == "Geometry(crs=srid:3857)"
    # OGC:CRS84 is Parquet's default CRS, written as an empty one
    assert types["geo"] == "Geography(crs=, algorithm=spherical)"
    out = t.scan().to_arrow()
    assert isinstance(out.schema.field("g").type, WkbType)
    assert out.schema.field("g").type.crs == "srid:3857"
    assert out.schema.field("geo").type.edges == "spherical"
    got = [None if v is None else shapely.from_wkb(v) for v in out.column("g").to_pylist()]
    assert [None if p is None else p.wkt for p in got] == [
        None if p is None else p.wkt for p in pts
    ]


def test_geography_with_an_algorithm_pyarrow_cannot_write_stays_tagged_binary(
    tmp_path: Path,
) -> None:
    schema = Schema(NestedField(1, "geo", GeographyType("srid:4326", "karney")))
    t = _catalog(tmp_path).create_table("db.k", schema, format_version=3)
    t.append(pa.table({"geo": pa.array([shapely.to_wkb(shapely.Point(1, 2))], pa.binary())}))
    (f,) = _files(t)
    md = pq.read_metadata(f["file_path"].removeprefix("file://"))
    assert str(md.schema.column(0).logical_type) == "None"
    assert t.scan().to_arrow().column("geo").to_pylist() == [shapely.Point(1, 2).wkb]
    assert t.schema().find_field("geo").field_type == GeographyType("srid:4326", "karney")


def test_arrow_schema_round_trips_crs_and_edges() -> None:
    from icefloe.arrow_schema import arrow_to_schema, schema_to_arrow

    schema = Schema(
        NestedField(1, "a", GeometryType()),
        NestedField(2, "b", GeometryType("srid:3857")),
        NestedField(3, "c", GeographyType("srid:4326")),
    )
    assert arrow_to_schema(schema_to_arrow(schema)) == schema


# -------------------------------------------------------------------------- bounds


def test_geometry_bounds_in_the_manifest_and_none_for_geography(tmp_path: Path) -> None:
    t = _catalog(tmp_path).create_table("db.t", SCHEMA, format_version=3)
    pts = [
        shapely.Point(3, -1),
        shapely.Polygon([(0, 0), (10, 0), (10, 4), (0, 0)]),
        shapely.Point(math.nan, math.nan),  # POINT EMPTY
        None,
    ]
    t.append(_rows(pts))
    (f,) = _files(t)
    assert _bounds(f, 2) == ((0.0, -1.0, None, None), (10.0, 4.0, None, None))
    assert _bounds(f, 3) is None
    assert dict(f["null_value_counts"])[2] == 1


def _oracle_bounds(geoms: list[Any]) -> tuple[Any, Any] | None:
    """Per-dimension NaN-skipping min/max of every coordinate (shapely as the oracle)."""
    coords = [shapely.get_coordinates(g, include_z=True) for g in geoms if g is not None]
    if not coords:
        return None
    xyz = np.concatenate(coords)
    with np.errstate(invalid="ignore"):
        lo = [
            float(np.nanmin(xyz[:, d])) if not np.isnan(xyz[:, d]).all() else None
            for d in (0, 1, 2)
        ]
        hi = [
            float(np.nanmax(xyz[:, d])) if not np.isnan(xyz[:, d]).all() else None
            for d in (0, 1, 2)
        ]
    if lo[0] is None or lo[1] is None:
        return None
    return (lo[0], lo[1], lo[2], None), (hi[0], hi[1], hi[2], None)


_coord = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.just(math.nan))


@st.composite
def _geometries(draw: Any) -> Any:
    kind = draw(st.sampled_from(["point", "line", "multi", "empty", "null", "z"]))
    if kind == "null":
        return None
    if kind == "empty":
        return shapely.from_wkt(draw(st.sampled_from(["POINT EMPTY", "LINESTRING EMPTY"])))
    if kind == "point":
        return shapely.Point(draw(_coord), draw(_coord))
    if kind == "z":
        return shapely.Point(draw(_coord), draw(_coord), draw(_coord))
    pts = draw(st.lists(st.tuples(_coord, _coord), min_size=2, max_size=5))
    with np.errstate(invalid="ignore"):  # NaN coordinates are the point of the test
        line = shapely.LineString(pts)
        return shapely.MultiLineString([line, line]) if kind == "multi" else line


@settings(max_examples=60, deadline=None)
@given(st.lists(_geometries(), max_size=12))
def test_wkb_bounds_equal_shapely(geoms: list[Any]) -> None:
    # shapely writes EWKB for Z (its default flavour), ISO for the rest: both are read
    with np.errstate(invalid="ignore"):
        arr = pa.array([None if g is None else shapely.to_wkb(g) for g in geoms], pa.binary())
    got = wkb_bounds(arr)
    want = _oracle_bounds(geoms)
    if want is None:
        assert got is None
        return
    assert got is not None
    assert (point_from_bytes(got[0]), point_from_bytes(got[1])) == want


def test_xym_and_xyzm_bounds_serialise_as_the_spec_says() -> None:
    def wkb(code: int, *xs: float) -> bytes:
        return struct.pack(f"<BI{len(xs)}d", 1, code, *xs)

    lo, hi = wkb_bounds(pa.array([wkb(2001, 1, 2, 7), wkb(2001, 3, 0, 9)]))  # XYM
    assert len(lo) == 32 and math.isnan(struct.unpack("<4d", lo)[2])  # x:y:NaN:m
    assert point_from_bytes(lo) == (1.0, 0.0, None, 7.0)
    assert point_from_bytes(hi) == (3.0, 2.0, None, 9.0)
    lo, hi = wkb_bounds(pa.array([wkb(3001, 1, 2, 3, 4)]))  # XYZM
    assert point_from_bytes(lo) == (1.0, 2.0, 3.0, 4.0)


@pytest.mark.parametrize(
    "bad",
    [b"", b"\x01", b"\x02\x01\x00\x00\x00", struct.pack("<BII", 1, 2, 2**31), b"\x01" * 40],
)
@pytest.mark.parametrize(
    ("column", "props"),
    [("g", {}), ("g", {"write.metadata.metrics.column.g": "none"}), ("geo", {})],
    ids=["geometry", "geometry-without-bounds", "geography"],
)
def test_malformed_wkb_is_refused_and_nothing_is_committed(
    tmp_path: Path, bad: bytes, column: str, props: dict[str, str]
) -> None:
    t = _catalog(tmp_path).create_table("db.t", SCHEMA, format_version=3, properties=props)
    data = _rows([shapely.Point(1, 1), shapely.Point(2, 2)])
    index = data.schema.get_field_index(column)
    good = data.column(column)[0].as_py()
    data = data.set_column(index, column, pa.array([good, bad], pa.binary()))
    with pytest.raises(ValidationError, match=f"column '{column}'.*value 1: malformed WKB"):
        t.append(data)
    assert t.current_snapshot() is None
    data_dir = tmp_path / "wh" / "db" / "t" / "data"
    assert not data_dir.exists() or not any(data_dir.rglob("*.parquet"))


# -------------------------------------------------------------------------- expressions


def test_predicate_text_json_negation_and_binding() -> None:
    box = BoundingBox(0, 0, 10, 5)
    e = st_intersects("g", box)
    assert e == col("g").st_intersects((0, 0, 10, 5))
    assert str(e) == "st_intersects(g, 0.0, 0.0, 10.0, 5.0)"
    assert parse(str(e)) == e
    m_only = st_disjoint("g", BoundingBox(0, 0, 1, 1, mmin=2, mmax=3))
    assert parse(str(m_only)) == m_only
    assert Not(e).negate() == e and e.negate() == st_disjoint("g", box)
    bound = bind(SCHEMA, e)
    assert from_dict(to_dict(bound)) == bound
    assert to_dict(bound)["value"] == {"xmin": 0.0, "ymin": 0.0, "xmax": 10.0, "ymax": 5.0}
    with pytest.raises(UnsupportedFeatureError, match="geography"):
        bind(SCHEMA, st_intersects("geo", box))
    with pytest.raises(ValidationError, match="needs a geometry column"):
        bind(SCHEMA, st_intersects("name", box))
    for bad in [(1, 0, 0, 1), (0, 0, 1), (0, math.nan, 1, 1), "box"]:
        with pytest.raises(ValidationError):
            st_intersects("g", bad)
    # one-row evaluation: false on null and empty for intersects, true for disjoint
    inside = shapely.Point(1, 1).wkb
    assert evaluate(bound, {2: inside}) and not evaluate(bound, {2: None})
    assert not evaluate(bound, {2: shapely.from_wkt("POINT EMPTY").wkb})
    assert evaluate(bind(SCHEMA, st_disjoint("g", box)), {2: None})


# -------------------------------------------------------------------------- pruning


def _hits(points: list[tuple[float, float] | None], box: BoundingBox) -> list[bool]:
    return [
        p is not None and box.xmin <= p[0] <= box.xmax and box.ymin <= p[1] <= box.ymax
        for p in points
    ]


_xy = st.floats(-100, 100, allow_nan=False)


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    files=st.lists(
        st.lists(st.one_of(st.none(), st.tuples(_xy, _xy)), min_size=1, max_size=6),
        min_size=1,
        max_size=5,
    ),
    boxes=st.lists(
        st.tuples(_xy, _xy, _xy, _xy).map(
            lambda b: BoundingBox(
                min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])
            )
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_bbox_pruning_skips_only_files_that_cannot_match(
    tmp_path_factory: pytest.TempPathFactory, files: list[Any], boxes: list[BoundingBox]
) -> None:
    cat = _catalog(tmp_path_factory.mktemp("prune"))
    t = cat.create_table("db.t", SCHEMA, format_version=3)
    start = 0
    by_path: dict[str, list[Any]] = {}
    for pts in files:
        t.append(_rows([None if p is None else shapely.Point(*p) for p in pts], start))
        start += len(pts)
    for f in _files(t):
        ids = pa.table(pq.read_table(f["file_path"].removeprefix("file://"), columns=["id"]))
        by_path[f["file_path"]] = [files_flat(files)[i] for i in ids.column("id").to_pylist()]
    for box in boxes:
        planned = {
            task.data_file.file_path for task in t.scan(st_intersects("g", box)).plan_files()
        }
        for path, pts in by_path.items():
            real = [p for p in pts if p is not None]
            may = bool(real) and (
                min(p[0] for p in real) <= box.xmax
                and max(p[0] for p in real) >= box.xmin
                and min(p[1] for p in real) <= box.ymax
                and max(p[1] for p in real) >= box.ymin
            )
            if any(_hits(pts, box)):
                assert path in planned  # never prunes a match
            assert (path in planned) == may  # and prunes every file that cannot intersect
        got = sorted(t.scan(st_intersects("g", box)).to_arrow().column("id").to_pylist())
        flat = files_flat(files)
        assert got == [i for i, hit in enumerate(_hits(flat, box)) if hit]
        neg = sorted(t.scan(st_disjoint("g", box)).to_arrow().column("id").to_pylist())
        assert neg == [i for i, hit in enumerate(_hits(flat, box)) if not hit]


def files_flat(files: list[list[Any]]) -> list[Any]:
    return [p for pts in files for p in pts]


def test_scan_reports_leave_spatial_predicates_out() -> None:
    from icefloe.catalog.rest.metrics import filter_json

    e = st_intersects("g", (0, 0, 1, 1)) & (col("id") > 5)
    assert filter_json(e) == {
        "type": "and",
        "left": True,
        "right": {"type": "gt", "term": "id", "value": "(1-digit-int)"},
    }
