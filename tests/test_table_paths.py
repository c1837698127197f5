"""Relative ``write.data.path`` / ``write.metadata.path`` resolve under the table location and
are stored absolute, so the table loads and reads from any working directory (and in other
engines); ``.``/``..`` segments are refused. Relative table locations and warehouses are made
absolute when the table is created."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import ValidationError
from icefloe.properties import InvalidPropertyWarning
from icefloe.table_paths import data_location, metadata_location

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def _local(location: str) -> Path:
    return Path(location.removeprefix("file://"))


@pytest.mark.interop
def test_relative_write_paths_are_stored_under_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cwd1").mkdir()
    (tmp_path / "cwd2").mkdir()
    monkeypatch.chdir(tmp_path / "cwd1")
    uri = f"sqlite:///{tmp_path}/c.db"
    cat = SqlCatalog("c", uri=uri, warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    props = {"write.metadata.path": "meta", "write.data.path": "files/data/"}
    t = cat.create_table("db.t", SCHEMA, properties=props)
    t.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    root = _local(t.location)
    assert t.properties["write.metadata.path"] == f"{t.location}/meta"
    assert t.properties["write.data.path"] == f"{t.location}/files/data"
    assert _local(t.metadata_location).parent == root / "meta"
    for path in t.inspect.files().column("file_path").to_pylist():
        assert _local(path).parent == root / "files" / "data"
    assert list((tmp_path / "cwd1").iterdir()) == []  # nothing landed in the working directory
    monkeypatch.chdir(tmp_path / "cwd2")
    t2 = SqlCatalog("c", uri=uri, warehouse=(tmp_path / "wh").as_uri()).load_table("db.t")
    assert sorted(t2.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    # set later: resolved the same way
    t2.set_properties({"write.data.path": "later"})
    assert t2.properties["write.data.path"] == f"{t2.location}/later"
    t2.append(pa.table({"id": pa.array([3], pa.int64())}))
    assert (root / "later").is_dir()
    from pyiceberg.table import StaticTable

    theirs = StaticTable.from_metadata(t2.metadata_location).scan().to_arrow()
    assert sorted(theirs.column("id").to_pylist()) == [1, 2, 3]
    cat.close()


@pytest.mark.parametrize("value", ["../escape", "a/../../b", "./x", "..", " ", "a/./b"])
@pytest.mark.parametrize("key", ["write.data.path", "write.metadata.path"])
def test_relative_paths_cannot_leave_the_table(tmp_path: Path, key: str, value: str) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    with pytest.raises(ValidationError, match=key):
        cat.create_table("db.t", SCHEMA, properties={key: value})
    assert not cat.table_exists("db.t")
    t = cat.create_table("db.t", SCHEMA)
    with pytest.raises(ValidationError, match=key):
        t.set_properties({key: value})
    assert key not in cat.load_table("db.t").properties
    cat.close()


@pytest.mark.parametrize("key", ["write.data.path", "write.metadata.path"])
def test_uri_paths_with_control_characters_are_refused_up_front(tmp_path: Path, key: str) -> None:
    """A tab in a URI path property (or location) is refused when the table is created or the
    property set, not at the first write: URI parsers drop it, and files would land elsewhere."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    bad = (tmp_path / "else").as_uri() + "\twhere"
    with pytest.raises(ValidationError, match="control character"):
        cat.create_table("db.t", SCHEMA, properties={key: bad})
    with pytest.raises(ValidationError, match="control character"):
        cat.create_table("db.t", SCHEMA, location=bad)
    assert not cat.table_exists("db.t")
    t = cat.create_table("db.t", SCHEMA)
    with pytest.raises(ValidationError, match="control character"):
        t.set_properties({key: bad})
    assert key not in cat.load_table("db.t").properties
    cat.close()


def test_absolute_paths_are_kept(tmp_path: Path) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    elsewhere = (tmp_path / "elsewhere").as_uri()
    t = cat.create_table("db.t", SCHEMA, properties={"write.data.path": elsewhere})
    assert t.properties["write.data.path"] == elsewhere
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    assert any((tmp_path / "elsewhere").iterdir())
    cat.close()


def test_stored_relative_values_resolve_under_the_table_location() -> None:
    """Metadata written by another engine with a relative value never resolves against the
    working directory."""
    props = {"write.data.path": "d", "write.metadata.path": "m/"}
    assert data_location("s3://b/wh/t", props) == "s3://b/wh/t/d"
    assert metadata_location("s3://b/wh/t", props) == "s3://b/wh/t/m"


@pytest.mark.parametrize("key", ["write.data.path", "write.metadata.path"])
def test_a_stored_relative_path_leaving_the_table_is_refused_at_write(
    tmp_path: Path, key: str
) -> None:
    """Another engine stored a relative path with ``..`` (icefloe refuses it when set): an
    append wrote its data files (or metadata) outside the table location. A data write is
    now refused, metadata goes to the default directory with a warning (as other commit-path
    properties are read), nothing is written outside, and the property can be repaired."""
    from support.write_util import catalog, set_properties_elsewhere

    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA)
    set_properties_elsewhere(tmp_path, "ns.t", {key: "../../escape"})
    t = cat.load_table("ns.t")
    if key == "write.data.path":
        with pytest.raises(ValidationError, match="outside the table location"):
            t.append(pa.table({"id": pa.array([1], pa.int64())}))
    else:
        with pytest.warns(InvalidPropertyWarning, match="outside the table location"):
            t.append(pa.table({"id": pa.array([0], pa.int64())}))
        assert "/ns/t/metadata/" in cat.load_table("ns.t").metadata_location
    assert not (tmp_path / "escape").exists() and not (tmp_path / "wh" / "escape").exists()
    t.remove_properties(key)
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    assert 1 in cat.load_table("ns.t").scan().to_arrow()["id"].to_pylist()


def test_relative_table_location_and_warehouse_are_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    sql = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse="rel-wh")
    sql.create_namespace("db")
    a = sql.create_table("db.a", SCHEMA)
    b = sql.create_table("db.b", SCHEMA, location="tables/b")
    fs = HadoopCatalog("fs", warehouse="fs-wh")
    fs.create_namespace("db")
    c = fs.create_table("db.c", SCHEMA)
    assert a.location == str(tmp_path / "rel-wh" / "db" / "a")
    assert b.location == str(tmp_path / "tables" / "b")
    assert c.location == str(tmp_path / "fs-wh" / "db" / "c")
    for t in (a, b, c):
        t.append(pa.table({"id": pa.array([1], pa.int64())}))
    monkeypatch.chdir("/")
    assert sql.load_table("db.b").scan().to_arrow().num_rows == 1
    assert fs.load_table("db.c").scan().to_arrow().num_rows == 1
    sql.close()
