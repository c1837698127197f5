"""Adding existing Parquet files to tables with geometry and geography columns: the files are
checked as appended data is (CRS, edges, well-formed WKB) and get the bounds our writer gives."""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import ValidationError
from icefloe.expressions import st_intersects
from icefloe.geo import WkbType
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.types import GeographyType, GeometryType, LongType, NestedField

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "g", GeometryType()),
    NestedField(3, "h", GeographyType()),
)


def _table(tmp_path: Path) -> Table:
    cat = SqlCatalog("g", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    return cat.create_table("db.t", SCHEMA, format_version=3)


def _point(x: float, y: float) -> bytes:
    return struct.pack("<BIdd", 1, 1, x, y)


def _file(tmp_path: Path, name: str, g: pa.Array, h: pa.Array | None = None) -> str:
    """A Parquet file of the table's columns (with field ids), as another engine writes it."""
    n = len(g)
    h = pa.array([_point(0, 0)] * n, pa.binary()) if h is None else h
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), False, {"PARQUET:field_id": "1"}),
            pa.field("g", g.type, True, {"PARQUET:field_id": "2"}),
            pa.field("h", h.type, True, {"PARQUET:field_id": "3"}),
        ]
    )
    path = str(tmp_path / f"{name}.parquet")
    data = pa.table([pa.array(range(n), pa.int64()), g, h], schema=schema)
    pq.write_table(data, path, store_schema=False)
    return path


def _typed(typ: WkbType, values: list[bytes | None]) -> pa.Array:
    return pa.ExtensionArray.from_storage(typ, pa.array(values, typ.storage_type))


def test_a_file_of_another_crs_or_edges_is_refused(tmp_path: Path) -> None:
    """Readers label a column's values with the table column's CRS and edges: a file
    annotated with others would have its coordinates read in the wrong system."""
    t = _table(tmp_path)
    other_crs = _file(tmp_path, "crs", _typed(WkbType("srid:3857"), [_point(4e5, 5e6)]))
    with pytest.raises(ValidationError, match=r"crs\.parquet: column 'g'.*'srid:3857'"):
        t.add_files([other_crs])
    planar = _file(tmp_path, "edges", pa.array([_point(1, 2)]), h=_typed(WkbType(), [_point(1, 2)]))
    with pytest.raises(ValidationError, match=r"edges\.parquet: column 'h'.*planar"):
        t.add_files([planar])
    assert t.current_snapshot() is None
    # the column's own CRS and edges, in the file's annotation, are taken
    same = _file(
        tmp_path,
        "same",
        _typed(WkbType("ogc:crs84"), [_point(1, 2)]),
        h=_typed(WkbType("OGC:CRS84", "spherical"), [_point(1, 2)]),
    )
    t.add_files([same])
    assert t.scan().to_arrow().column("g").to_pylist() == [_point(1, 2)]


def test_a_file_of_malformed_wkb_is_refused(tmp_path: Path) -> None:
    """Appends refuse values other engines cannot read; a file holding them is refused too."""
    t = _table(tmp_path)
    bad = _file(tmp_path, "bad", pa.array([_point(1, 2), b"\x01\x01\x00"], pa.binary()))
    with pytest.raises(ValidationError, match=r"bad\.parquet: column 'g'.*malformed WKB"):
        t.add_files([bad])
    assert t.current_snapshot() is None


def test_an_added_file_gets_the_bounds_an_append_gets(tmp_path: Path) -> None:
    t = _table(tmp_path)
    values = [_point(1, 2), None, _point(-3, 7)]
    t.append(pa.table({"id": pa.array(range(3), pa.int64()), "g": values, "h": values}))
    appended = t.inspect.files().to_pylist()[0]
    t.add_files([_file(tmp_path, "added", pa.array(values, pa.binary()))])
    added = next(
        f for f in t.inspect.files().to_pylist() if f["file_path"].endswith("added.parquet")
    )
    for key in ("lower_bounds", "upper_bounds"):
        have, want = dict(added[key]), dict(appended[key])
        assert have[2] == want[2]
        assert 3 not in have and 3 not in want  # no bounds for geography
    # and they prune: a box far from every point plans neither file
    assert not list(t.scan(st_intersects("g", (50, 50, 60, 60))).plan_files())
    assert len(list(t.scan(st_intersects("g", (-4, 6, -2, 8))).plan_files())) == 2


def test_geoarrow_edges_are_compared_ignoring_case_as_the_reference(tmp_path: Path) -> None:
    t = _table(tmp_path)
    typ = WkbType.__arrow_ext_deserialize__(pa.binary(), b'{"edges": "SPHERICAL"}')
    assert typ == WkbType("OGC:CRS84", "spherical")
    t.append(pa.table({"id": pa.array([1], pa.int64()), "h": _typed(typ, [_point(1, 2)])}))
    assert t.scan().to_arrow().column("h").to_pylist() == [_point(1, 2)]
