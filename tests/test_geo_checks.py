"""Checks that keep geo columns readable: CRS and edge algorithm of the types (only type strings
that read back are written, in the reference's form), WKB that GEOS and DuckDB read, every
binary layout checked, nulls of parent structs, the CRS of ``geoarrow.wkb`` input, and finite
query boxes."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import ValidationError
from icefloe.expressions import BoundingBox, st_intersects
from icefloe.geo import WkbType
from icefloe.schema import Schema
from icefloe.types import (
    GeographyType,
    GeometryType,
    ListType,
    LongType,
    NestedField,
    StructType,
    type_from_json,
)


def _catalog(tmp_path: Path) -> SqlCatalog:
    tmp_path.mkdir(parents=True, exist_ok=True)
    cat = SqlCatalog("g", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    return cat


def _point(x: float, y: float) -> bytes:
    return struct.pack("<BIdd", 1, 1, x, y)


def _ids(n: int) -> pa.Array:
    return pa.array(range(n), pa.int64())


# -------------------------------------------------------------------------- types


@pytest.mark.parametrize(
    "make",
    [
        lambda: GeometryType("EPSG:4326 (WGS 84)"),
        lambda: GeometryType(""),
        lambda: GeometryType(" "),
        lambda: GeometryType(" srid:4326"),
        lambda: GeometryType("srid:4326\n"),
        lambda: GeometryType("a)b"),
        lambda: GeometryType(4326),
        lambda: GeographyType("x,y"),
        lambda: GeographyType(""),
        lambda: GeographyType("srid:4326", "flat"),
        lambda: GeographyType("srid:4326", ""),
    ],
)
def test_geo_types_that_would_not_read_back_are_refused(make: Any) -> None:
    with pytest.raises(ValidationError, match=r"CRS|edge algorithm"):
        make()


_CRS_TEXT = st.text(alphabet=st.sampled_from("(), \t\n:_-aZ09\u00e9\x00"), max_size=8)


@settings(max_examples=300, deadline=None)
@given(crs=_CRS_TEXT | st.sampled_from(["srid:3857", "srid: 3857", "projjson:p", "OGC:CRS84"]))
def test_every_accepted_geo_type_round_trips_its_string(crs: str) -> None:
    for make in (GeometryType, lambda c: GeographyType(c, "karney"), GeographyType):
        try:
            typ = make(crs)
        except ValidationError:
            continue
        assert type_from_json(str(typ)) == typ
        assert type_from_json(json.loads(json.dumps(typ.to_json()))) == typ


def test_geo_type_strings_are_the_references() -> None:
    # Types.GeometryType / GeographyType.toString: every parameter spelled out
    assert str(GeometryType()) == "geometry(OGC:CRS84)"
    assert str(GeometryType("srid:4326")) == "geometry(srid:4326)"
    assert str(GeographyType()) == "geography(OGC:CRS84, spherical)"
    assert str(GeographyType("srid:4326")) == "geography(srid:4326, spherical)"
    assert str(GeographyType("srid:4326", "karney")) == "geography(srid:4326, karney)"
    # None is the default, not the text "None"; algorithms in any case
    assert GeometryType(None) == GeometryType()
    assert GeographyType(None, None) == GeographyType()
    assert GeographyType("srid:4326", "KARNEY").algorithm == "karney"


@pytest.mark.parametrize(
    ("text", "typ"),
    [
        ("geometry", GeometryType()),
        ("Geometry", GeometryType()),
        ("geometry(OGC:CRS84)", GeometryType()),
        ("geometry ( srid:3857 )", GeometryType("srid:3857")),
        ("geometry( srid: 3857 )", GeometryType("srid: 3857")),
        ("Geometry( projjson:TestIdentifier )", GeometryType("projjson:TestIdentifier")),
        ("geography", GeographyType()),
        ("geography(srid:4269)", GeographyType("srid:4269")),
        ("geography ( srid:4269 , karney )", GeographyType("srid:4269", "karney")),
        ("geography(srid:4269,vincenty)", GeographyType("srid:4269", "vincenty")),
        (
            "Geography(projjson: TestIdentifier, KARNEY)",
            GeographyType("projjson: TestIdentifier", "karney"),
        ),
    ],
)
def test_every_form_the_reference_reads_is_read(text: str, typ: Any) -> None:
    assert type_from_json(text) == typ


@pytest.mark.parametrize(
    "text",
    ["geometry()", "geometry( )", "geography()", "geography( , spherical)", "geography(x, )"],
)
def test_empty_parameters_are_refused_as_by_the_reference(text: str) -> None:
    with pytest.raises(ValidationError, match=r"CRS cannot be empty|edge algorithm must be"):
        type_from_json(text)


def test_a_crs_only_the_references_pattern_reads_still_loads() -> None:
    # another engine may have written it: the table must stay loadable, the string unchanged
    for text in ["geometry(a,b)", "geography(a(b), karney)"]:
        assert str(type_from_json(text)) == text


def test_a_crs_that_cannot_be_read_back_is_never_committed(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", Schema(NestedField(1, "id", LongType(), True)), format_version=3)
    t.append(pa.table({"id": _ids(3)}))
    with pytest.raises(ValidationError, match="CRS"), t.update_schema() as u:
        u.add_column("g", GeometryType("EPSG:4326 (WGS 84)"))
    assert cat.load_table("db.t").scan().to_arrow().num_rows == 3
    with pytest.raises(ValidationError, match="CRS"):
        cat.create_table("db.t2", Schema(NestedField(1, "g", GeometryType(""))), format_version=3)


def test_metadata_holds_the_references_type_strings(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "a", GeographyType("srid:4326", "spherical")),
        NestedField(2, "b", GeometryType(None)),
    )
    t = _catalog(tmp_path).create_table("db.t", schema, format_version=3)
    md = json.loads(Path(t.metadata_location.removeprefix("file://")).read_text())
    assert [f["type"] for f in md["schemas"][0]["fields"]] == [
        "geography(srid:4326, spherical)",
        "geometry(OGC:CRS84)",
    ]


# -------------------------------------------------------------------------- WKB


_LINE = struct.pack("<BII", 1, 2, 2) + struct.pack("<dddd", 0, 0, 1, 1)


@pytest.mark.parametrize(
    ("wkb", "why"),
    [
        (struct.pack("<BII", 1, 4, 1) + _LINE, "MultiPoint holds only Points"),
        (struct.pack("<BII", 1, 6, 1) + _point(1, 2), "MultiPolygon holds only Polygons"),
        (struct.pack("<BII", 1, 5, 1) + _point(1, 2), "MultiLineString holds only LineStrings"),
        (
            struct.pack("<BII", 1, 4, 1) + struct.pack("<BIddd", 1, 1001, 1, 2, 3),
            "parent's Z/M dimensions",
        ),
        (struct.pack("<BII", 1, 2, 1) + struct.pack("<dd", 1, 2), "0 or at least 2 points"),
        (struct.pack("<BIII", 1, 3, 1, 2) + struct.pack("<dddd", 0, 0, 0, 0), "ring has 0"),
    ],
)
def test_wkb_that_other_engines_cannot_read_is_refused(
    tmp_path: Path, wkb: bytes, why: str
) -> None:
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "g", GeometryType()))
    t = _catalog(tmp_path).create_table("db.t", schema, format_version=3)
    data = pa.table({"id": _ids(2), "g": pa.array([_point(0, 0), wkb], pa.binary())})
    with pytest.raises(ValidationError, match=f"column 'g'.*value 1: malformed WKB.*{why}"):
        t.append(data)
    assert t.current_snapshot() is None


@pytest.mark.parametrize("typ", [GeometryType(), GeographyType()], ids=str)
def test_malformed_wkb_is_refused_in_binary_views(tmp_path: Path, typ: Any) -> None:
    storage = pa.binary_view()
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "h", typ))
    t = _catalog(tmp_path).create_table("db.t", schema, format_version=3)
    bad = pa.table({"id": _ids(2), "h": pa.array([_point(1, 2), b"\x01garbage"], storage)})
    with pytest.raises(ValidationError, match=r"column 'h'.*value 1: malformed WKB"):
        t.append(bad)
    assert t.current_snapshot() is None
    t.append(pa.table({"id": _ids(1), "h": pa.array([_point(1, 2)], storage)}))
    assert t.scan().to_arrow().column("h").to_pylist() == [_point(1, 2)]


def test_nulls_of_a_parent_struct_hide_no_wkb(tmp_path: Path) -> None:
    inner = StructType(NestedField(3, "g", GeometryType()))
    schema = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "s", inner),
        NestedField(4, "l", ListType(5, StructType(NestedField(6, "g", GeometryType())), False)),
        NestedField(
            7, "o", StructType(NestedField(8, "i", StructType(NestedField(9, "g", GeometryType()))))
        ),
    )
    t = _catalog(tmp_path).create_table("db.t", schema, format_version=3)
    p = _point(1, 2)
    sg = pa.struct([("g", pa.binary())])
    # a null struct over a child holding placeholder (empty) bytes
    s = pa.StructArray.from_arrays(
        [pa.array([p, b""], pa.binary())], names=["g"], mask=pa.array([False, True])
    )
    elems = pa.StructArray.from_arrays(
        [pa.array([p, b"", p], pa.binary())], names=["g"], mask=pa.array([False, True, False])
    )
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 3], pa.int32()), elems)
    o = pa.StructArray.from_arrays([s], names=["i"], mask=pa.array([False, True]))
    data = pa.table({"id": _ids(2), "s": s, "l": lists, "o": o})
    t.append(data)
    out = t.scan().to_arrow().sort_by("id").to_pylist()
    assert [r["s"] for r in out] == [{"g": p}, None]
    assert [r["l"] for r in out] == [[{"g": p}, None], [{"g": p}]]
    assert [r["o"] for r in out] == [{"i": {"g": p}}, None]
    # built from Python dicts, the null struct's child holds empty bytes
    t2 = _catalog(tmp_path / "2").create_table(
        "db.t",
        Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", inner)),
        format_version=3,
    )
    t2.append(pa.table({"id": _ids(2), "s": pa.array([{"g": p}, None], sg)}))
    assert t2.scan().to_arrow().column("s").to_pylist() == [{"g": p}, None]
    # a non-null struct over malformed WKB is still refused
    bad = pa.StructArray.from_arrays(
        [pa.array([p, b""], pa.binary())], names=["g"], mask=pa.array([False, False])
    )
    with pytest.raises(ValidationError, match=r"column 's.g'.*value 1: malformed WKB"):
        t.append(pa.table({"id": _ids(2), "s": bad}))
    bad_o = pa.StructArray.from_arrays([bad], names=["i"], mask=pa.array([False, False]))
    with pytest.raises(ValidationError, match=r"column 'o.i.g'.*value 1: malformed WKB"):
        t.append(pa.table({"id": _ids(2), "o": bad_o, "s": s, "l": lists}))
    # only the outer struct is null: its valid child struct hides the bytes as well
    hidden = pa.StructArray.from_arrays([bad], names=["i"], mask=pa.array([False, True]))
    t.append(pa.table({"id": _ids(2), "o": hidden, "s": s, "l": lists}))
    assert t.scan().to_arrow().column("o").to_pylist() == [{"i": {"g": p}}, None] * 2


# -------------------------------------------------------------------------- CRS of input


def test_wkb_types_compare_crs_and_edges() -> None:
    assert WkbType("srid:3857") != WkbType("OGC:CRS84")
    assert WkbType() != WkbType("OGC:CRS84", "spherical")
    assert WkbType() == WkbType("OGC:CRS84", "planar")
    assert WkbType("srid:3857") == WkbType("srid:3857")
    assert hash(WkbType("srid:3857")) == hash(WkbType("srid:3857"))
    assert WkbType() != WkbType(storage=pa.large_binary())


def test_geo_types_compare_their_crs_ignoring_case_as_the_reference(tmp_path: Path) -> None:
    assert GeometryType("OGC:CRS84") == GeometryType("ogc:crs84")
    assert hash(GeometryType("OGC:CRS84")) == hash(GeometryType("ogc:crs84"))
    assert GeographyType("EPSG:4326") == GeographyType("epsg:4326")
    assert GeographyType("EPSG:4326") != GeographyType("epsg:4326", "vincenty")
    assert GeometryType("EPSG:4326") != GeometryType("EPSG:3857")
    assert GeometryType("EPSG:4326") != GeographyType("EPSG:4326")
    # evolving a table by an Arrow schema whose CRS differs in case changes nothing
    t = _catalog(tmp_path).create_table(
        "db.t",
        Schema(NestedField(1, "id", LongType()), NestedField(2, "g", GeometryType("EPSG:4326"))),
        format_version=3,
    )
    with t.update_schema() as update:
        update.union_by_name(pa.schema([("id", pa.int64()), ("g", WkbType("epsg:4326"))]))
    assert t.refresh().schema().find_field("g").field_type == GeometryType("EPSG:4326")
    assert t.metadata.current_schema_id == 0


def test_geoarrow_input_with_another_crs_or_edges_is_refused(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "g", GeometryType()),
        NestedField(3, "h", GeographyType()),
    )
    t = _catalog(tmp_path).create_table("db.t", schema, format_version=3)
    w = pa.array([_point(1, 2)], pa.binary())

    def typed(crs: str, edges: str | None = None) -> pa.Array:
        return pa.ExtensionArray.from_storage(WkbType(crs, edges), w)

    with pytest.raises(ValidationError, match=r"column 'g'.*'srid:3857'.*'OGC:CRS84'"):
        t.append(pa.table({"id": _ids(1), "g": typed("srid:3857")}))
    with pytest.raises(ValidationError, match=r"column 'h'.*planar.*spherical"):
        t.append(pa.table({"id": _ids(1), "h": typed("OGC:CRS84")}))
    assert t.current_snapshot() is None
    # the column's own CRS (in any case, as the reference compares) and plain WKB are taken
    t.append(pa.table({"id": _ids(1), "g": typed("ogc:crs84"), "h": w}))
    t.append(pa.table({"id": _ids(1), "g": w, "h": typed("OGC:CRS84", "spherical")}))
    out = t.scan().to_arrow()
    assert out.column("g").to_pylist() == [_point(1, 2)] * 2
    assert out.schema.field("g").type.crs == "OGC:CRS84"


@pytest.mark.parametrize("storage", [pa.binary(), pa.large_binary(), pa.binary_view()], ids=str)
def test_a_table_made_from_geoarrow_input_keeps_its_crs(tmp_path: Path, storage: Any) -> None:
    """GeoArrow allows each binary layout as the storage of ``geoarrow.wkb``: each makes a
    geometry column of the input's CRS, not a plain binary one."""
    wkb = pa.array([_point(1, 2), None], storage)
    data = pa.table(
        {"g": pa.ExtensionArray.from_storage(WkbType("srid:3857", storage=storage), wkb)}
    )
    t = _catalog(tmp_path).create_table("db.t", data.schema, format_version=3)
    assert t.schema().find_field("g").field_type == GeometryType("srid:3857")
    t.append(data)
    out = t.scan(row_filter=st_intersects("g", (0, 0, 5, 5))).to_arrow()
    assert out.column("g").to_pylist() == [_point(1, 2)]
    assert out.schema.field("g").type.crs == "srid:3857"


def test_read_chunks_carry_the_columns_crs(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), True), NestedField(2, "g", GeometryType("EPSG:4326"))
    )
    t = _catalog(tmp_path).create_table("db.t", schema, format_version=3)
    t.append(pa.table({"id": _ids(2), "g": pa.array([_point(1, 2), _point(3, 4)], pa.binary())}))
    out = t.scan().to_arrow()
    assert out.schema.field("g").type.crs == "EPSG:4326"
    assert all(c.type.crs == "EPSG:4326" for c in out.column("g").chunks)
    assert out.sort_by("id").schema.field("g").type.crs == "EPSG:4326"


# -------------------------------------------------------------------------- query boxes


@pytest.mark.parametrize(
    "args",
    [
        (0, float("-inf"), float("inf"), float("inf")),
        (0, 0, 1, 1, float("-inf"), 1),
        (0, 0, float("nan"), 1),
        (0, 0, 10**400, 1),  # an int no double holds
    ],
)
def test_query_boxes_must_be_finite(args: tuple[float, ...]) -> None:
    with pytest.raises(ValidationError, match="finite"):
        BoundingBox.from_args(list(args))
    with pytest.raises(ValidationError, match="finite"):
        st_intersects("g", BoundingBox.from_args(list(args)))


def test_lists_of_structs_of_geometries_are_written_with_and_without_values(
    tmp_path: Path,
) -> None:
    """A list of structs holding a geometry field, left out of an append (all null) or given:
    pyarrow's list flatten cannot build such elements, which failed the write untyped."""
    element = StructType(NestedField(4, "g", GeometryType()))
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "l", ListType(3, element, element_required=False)),
    )
    t = _catalog(tmp_path).create_table("db.t", schema, format_version=3)
    t.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    point = struct.pack("<BIdd", 1, 1, 1.0, 2.0)
    given = pa.array([[{"g": point}, {"g": None}], None], pa.list_(pa.struct([("g", pa.binary())])))
    t.append(pa.table({"id": pa.array([3, 4], pa.int64()), "l": given}))
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [r["l"] for r in rows] == [None, None, [{"g": point}, {"g": None}], None]
