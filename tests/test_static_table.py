"""StaticTable: tables opened from a metadata file or a Hadoop-layout directory, read-only."""

from __future__ import annotations

import datetime
import gzip
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import icefloe
from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import (
    CorruptFileError,
    NoSuchTableError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.table.static import StaticTable, resolve_metadata_location

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])


def _hadoop_table(tmp_path: Path, commits: int = 2) -> tuple[HadoopCatalog, Path]:
    cat = HadoopCatalog("h", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    table = cat.create_table("db.t", SCHEMA)
    for i in range(commits):
        table.set_properties(step=str(i))
    return cat, tmp_path / "wh" / "db" / "t"


def test_from_metadata_file_equals_catalog_load(tmp_path: Path) -> None:
    cat, _ = _hadoop_table(tmp_path)
    loaded = cat.load_table("db.t")
    static = icefloe.StaticTable.from_metadata(loaded.metadata_location)
    assert static.metadata == loaded.metadata
    assert static.metadata_location == loaded.metadata_location
    assert static.schema() == loaded.schema()
    assert static.properties["step"] == "1"
    assert "static" in repr(static).lower()


def test_from_directory_follows_version_hint(tmp_path: Path) -> None:
    _, table_dir = _hadoop_table(tmp_path, commits=2)  # v1 (create), v2, v3
    meta = table_dir / "metadata"
    assert (meta / "version-hint.text").read_text().strip() == "3"
    for where in (str(table_dir), str(meta), f"file://{table_dir}", str(table_dir) + "/"):
        static = StaticTable.from_metadata(where)
        assert static.metadata_location.endswith("v3.metadata.json")
        assert static.properties["step"] == "1"
    # A stale hint: the newer versions written after it are found (as Java does).
    (meta / "version-hint.text").write_text("1")
    assert StaticTable.from_metadata(str(table_dir)).metadata_location.endswith("v3.metadata.json")
    # A hint naming a file (some writers do) and a hint that is garbage or missing.
    (meta / "version-hint.text").write_text("v2.metadata.json")
    (meta / "v3.metadata.json").rename(meta / "v3.metadata.json.bak")
    assert StaticTable.from_metadata(str(table_dir)).properties["step"] == "0"
    (meta / "v3.metadata.json.bak").rename(meta / "v3.metadata.json")
    (meta / "version-hint.text").write_text("not a number")
    assert StaticTable.from_metadata(str(table_dir)).metadata_location.endswith("v3.metadata.json")
    (meta / "version-hint.text").unlink()
    assert StaticTable.from_metadata(str(table_dir)).metadata_location.endswith("v3.metadata.json")


def test_gzip_versions_and_refresh(tmp_path: Path) -> None:
    _, table_dir = _hadoop_table(tmp_path, commits=1)  # v1, v2
    meta = table_dir / "metadata"
    raw = (meta / "v2.metadata.json").read_bytes()
    (meta / "v3.gz.metadata.json").write_bytes(gzip.compress(raw.replace(b'"0"', b'"gz"')))
    static = StaticTable.from_metadata(str(table_dir))
    assert static.metadata_location.endswith("v3.gz.metadata.json")
    assert static.properties["step"] == "gz"
    (meta / "v4.metadata.json.gz").write_bytes(gzip.compress(raw.replace(b'"0"', b'"four"')))
    static.refresh()
    assert static.metadata_location.endswith("v4.metadata.json.gz")
    assert static.properties["step"] == "four"


def test_pyiceberg_written_metadata_file(tmp_path: Path) -> None:
    pytest.importorskip("pyiceberg")
    from pyiceberg.catalog.sql import SqlCatalog

    (tmp_path / "wh").mkdir()
    cat = SqlCatalog("p", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    cat.create_namespace("db")
    table = cat.create_table("db.p", SCHEMA, properties={"format-version": "2"})
    table.append(pa.table({"id": [1, 2, 3], "s": ["a", "b", None]}, schema=SCHEMA))
    table = cat.load_table("db.p")
    static = StaticTable.from_metadata(table.metadata_location)
    snap = static.current_snapshot()
    assert snap is not None and snap.snapshot_id == table.current_snapshot().snapshot_id
    assert [f.name for f in static.schema().fields] == ["id", "s"]
    assert static.format_version == 2
    got = static.scan().to_arrow()
    assert sorted(got.column("id").to_pylist()) == [1, 2, 3]
    assert static.scan(row_filter="s = 'b'").to_arrow().column("id").to_pylist() == [2]
    assert static.scan().count() == 3
    frame = static.scan(selected_fields=("id",)).to_pandas()
    assert sorted(frame["id"].tolist()) == [1, 2, 3]


def test_errors_name_the_location(tmp_path: Path) -> None:
    with pytest.raises(NoSuchTableError, match=r"nope\.metadata\.json"):
        StaticTable.from_metadata(str(tmp_path / "nope.metadata.json"))
    with pytest.raises(NoSuchTableError, match="empty"):
        StaticTable.from_metadata(str(tmp_path / "empty"))
    (tmp_path / "empty" / "metadata").mkdir(parents=True)
    with pytest.raises(NoSuchTableError, match="version-hint"):
        StaticTable.from_metadata(str(tmp_path / "empty"))
    (tmp_path / "bad.metadata.json").write_text("{not json")
    with pytest.raises(CorruptFileError, match=r"bad\.metadata\.json"):
        StaticTable.from_metadata(str(tmp_path / "bad.metadata.json"))


def test_a_metadata_file_opens_whatever_its_name(tmp_path: Path) -> None:
    """A metadata file not named ``*.metadata.json`` (Java's golden files, an exported copy)
    was taken for a table directory and refused as neither; a file given is now read as a
    metadata file, and one that is none is bad input that names it."""
    cat, _ = _hadoop_table(tmp_path)
    loaded = cat.load_table("db.t")
    for name, data in (
        ("exported.json", Path(loaded.metadata_location.removeprefix("file://")).read_bytes()),
        ("v1-copy", Path(loaded.metadata_location.removeprefix("file://")).read_bytes()),
        (
            "with-bom.json",  # saved by an editor that marks UTF-8
            b"\xef\xbb\xbf" + Path(loaded.metadata_location.removeprefix("file://")).read_bytes(),
        ),
    ):
        (tmp_path / name).write_bytes(data)
        static = StaticTable.from_metadata(str(tmp_path / name))
        assert static.metadata == loaded.metadata
        assert static.metadata_location == str(tmp_path / name)
        assert static.refresh().metadata == loaded.metadata
    with gzip.open(tmp_path / "zipped.json.gz", "wb") as f:
        f.write((tmp_path / "exported.json").read_bytes())
    assert StaticTable.from_metadata(str(tmp_path / "zipped.json.gz")).metadata == loaded.metadata
    (tmp_path / "other.json").write_text('{"a": 1}')
    with pytest.raises(ValidationError, match=r"other\.json is not a table metadata file"):
        StaticTable.from_metadata(str(tmp_path / "other.json"))
    (tmp_path / "data.parquet").write_bytes(b"PAR1" + bytes(100_000))
    with pytest.raises(ValidationError, match=r"data\.parquet is not a table metadata file"):
        StaticTable.from_metadata(str(tmp_path / "data.parquet"))
    with pytest.raises(NoSuchTableError, match="neither a metadata file nor a table directory"):
        StaticTable.from_metadata(str(tmp_path / "missing.json"))


def test_a_catalog_tables_directory_points_to_its_catalog(tmp_path: Path) -> None:
    """A SQL catalog's table directory has no current version of its own: the error says to
    open the table through its catalog or to name a metadata file, and names the newest."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    table = cat.create_table("db.t", SCHEMA)
    for i in range(11):  # numbers past 9: the newest is found by number, not by name
        table.set_properties(step=str(i))
    newest = table.refresh().metadata_location.rsplit("/", 1)[-1]
    assert newest.startswith("00011-")
    with pytest.raises(NoSuchTableError, match="open the table by its name") as info:
        StaticTable.from_metadata(str(tmp_path / "wh" / "db" / "t"))
    assert str(info.value).endswith(f"/metadata/{newest})")


def test_static_tables_are_read_only(tmp_path: Path) -> None:
    _, table_dir = _hadoop_table(tmp_path, commits=0)
    copy = tmp_path / "copy"
    shutil.copytree(table_dir, copy)
    static = StaticTable.from_metadata(str(copy))
    with pytest.raises(UnsupportedFeatureError, match="read-only"):
        static.set_properties(a="b")
    with pytest.raises(UnsupportedFeatureError, match="read-only"):
        static.transaction()
    # Deleting orphans from a metadata file that may be stale would delete newer versions'
    # files; listing them is allowed.
    before = sorted(p for p in copy.rglob("*") if p.is_file())
    with pytest.raises(UnsupportedFeatureError, match="read-only"):
        static.remove_orphan_files(datetime.timedelta(0))
    assert sorted(p for p in copy.rglob("*") if p.is_file()) == before
    assert resolve_metadata_location(str(copy), static.io).endswith("v1.metadata.json")


def test_a_relative_path_opens_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat, table_dir = _hadoop_table(tmp_path, commits=1)
    t = cat.load_table("db.t")
    t.append(pa.table({"id": pa.array([1], pa.int64()), "s": ["a"]}))
    monkeypatch.chdir(tmp_path)
    current = Path(t.metadata_location.removeprefix("file://")).relative_to(tmp_path)
    for where in (str(current), str(table_dir.relative_to(tmp_path))):
        static = StaticTable.from_metadata(where)
        assert Path(static.metadata_location) == tmp_path / current
        # Its own metadata file is not an orphan of it, nor any file of the table.
        assert static.remove_orphan_files(datetime.timedelta(0), dry_run=True) == []
        assert static.scan().to_arrow().num_rows == 1
