"""A converted Delta table stays the Delta table's mirror: Iceberg maintenance never deletes
the Delta table's files, a foreign write to the mirror is named when it blocks a sync, and
Delta numbers that cannot be right (negative sizes and row ids, commit versions from the
future, field ids out of range, files that are not Parquet) are typed errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import icefloe.delta
from icefloe.catalog.sql import SqlCatalog
from icefloe.delta.target import DirectoryCatalog
from icefloe.exceptions import (
    CommitStateUnknownError,
    CorruptFileError,
    DeltaLogError,
    ValidationError,
)
from support.delta import fixture


def _parquet_files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*.parquet") if "_icefloe" not in p.parts}


def _catalog(tmp_path: Path) -> SqlCatalog:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    return cat


def test_purge_and_expiry_of_the_mirror_keep_the_delta_files(tmp_path: Path) -> None:
    root = fixture("dml", tmp_path)
    cat = _catalog(tmp_path)
    table = icefloe.delta.convert(str(root), catalog=cat, identifier="db.t").table
    assert table.properties["gc.enabled"] == "false"
    files = _parquet_files(root)
    with pytest.raises(ValidationError, match=r"gc\.enabled is false"):
        table.expire_snapshots(retain_last=1)
    cat.drop_table("db.t", purge=True)
    assert _parquet_files(root) == files
    assert icefloe.delta.DeltaLog(str(root)).snapshot().files.num_rows > 0
    # a caller may still choose otherwise
    again = icefloe.delta.convert(
        str(root), catalog=cat, identifier="db.u", properties={"gc.enabled": "true"}
    )
    assert again.table.properties["gc.enabled"] == "true"


def test_a_converted_table_stores_zstd_as_javas_conversion_does(tmp_path: Path) -> None:
    """Java's Delta conversion creates its table through a catalog create, which stores
    ``write.parquet.compression-codec=zstd``; a codec the caller gives wins, and syncs keep it."""
    root = fixture("dml", tmp_path)
    cat = _catalog(tmp_path)
    codec = "write.parquet.compression-codec"
    table = icefloe.delta.convert(str(root), catalog=cat, identifier="db.t", up_to_version=2).table
    assert table.properties[codec] == "zstd"
    assert (
        icefloe.delta.convert(str(root), catalog=cat, identifier="db.t").table.properties[codec]
        == "zstd"
    )
    given = icefloe.delta.convert(
        str(root), catalog=cat, identifier="db.u", properties={codec: "snappy"}
    )
    assert cat.load_table("db.u").properties[codec] == "snappy" == given.table.properties[codec]


def test_a_foreign_write_to_the_mirror_is_named_when_it_blocks_a_sync(tmp_path: Path) -> None:
    root = fixture("dml", tmp_path)
    cat = _catalog(tmp_path)
    table = icefloe.delta.convert(str(root), catalog=cat, identifier="db.t", up_to_version=3).table
    table.rewrite_data_files(min_input_files=1)
    with pytest.raises(ValidationError, match="which the converter did not make"):
        icefloe.delta.convert(str(root), catalog=cat, identifier="db.t")


def _edit_add(root: Path, version: int, key: str, value: int) -> None:
    file = root / "_delta_log" / f"{version:020d}.json"
    lines = [json.loads(line) for line in file.read_text().splitlines()]
    for action in lines:
        if "add" in action:
            action["add"][key] = value
            break
    file.write_text("\n".join(json.dumps(a) for a in lines) + "\n")


@pytest.mark.parametrize(
    ("key", "value"), [("size", -1), ("baseRowId", -10), ("defaultRowCommitVersion", 50)]
)
@pytest.mark.parametrize("incremental", [False, True])
def test_impossible_add_numbers_are_refused(
    tmp_path: Path, key: str, value: int, incremental: bool
) -> None:
    root = fixture("dml", tmp_path)
    if incremental:
        icefloe.delta.convert(str(root), up_to_version=0)
    _edit_add(root, 1, key, value)
    with pytest.raises(DeltaLogError, match=f"malformed Delta add action.*{key} is {value}"):
        icefloe.delta.convert(str(root), up_to_version=1)


@pytest.mark.parametrize("value", [-5, 0, 2**40])
def test_column_mapping_ids_outside_the_field_id_range_are_refused(
    tmp_path: Path, value: int
) -> None:
    root = fixture("dml", tmp_path)
    file = root / "_delta_log" / f"{0:020d}.json"
    lines = [json.loads(line) for line in file.read_text().splitlines()]
    for action in lines:
        if "metaData" in action:
            schema = json.loads(action["metaData"]["schemaString"])
            schema["fields"][0]["metadata"]["delta.columnMapping.id"] = value
            action["metaData"]["schemaString"] = json.dumps(schema)
    file.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    with pytest.raises(DeltaLogError, match=f"is {value}, outside 1..2147483647"):
        icefloe.delta.convert(str(root))


def test_the_file_check_names_a_file_that_is_not_parquet(tmp_path: Path) -> None:
    root = fixture("dml", tmp_path)
    live = icefloe.delta.DeltaLog(str(root)).snapshot().files.column("path")[0].as_py()
    (root / live).write_bytes(b"not parquet at all")
    with pytest.raises(CorruptFileError, match="not a readable Parquet file"):
        icefloe.delta.check_iceberg_compat_v3(str(root), files=True)


def _rows(table: Any) -> list[dict[str, Any]]:
    return sorted(table.scan().to_arrow().to_pylist(), key=repr)


_KILLED_RUN = """
import os, sys
import icefloe.delta
from icefloe.catalog.sql import SqlCatalog
from icefloe.delta.target import DirectoryCatalog

root, db, warehouse = sys.argv[1:4]
if db:
    cat = SqlCatalog("c", uri=f"sqlite:///{db}", warehouse=warehouse)
    SqlCatalog._swap_pointer = lambda *a, **k: os._exit(9)  # killed as the snapshot commits
    icefloe.delta.convert(root, catalog=cat, identifier="db.t")
else:
    def write(self, version, metadata):
        if version == 2:
            os._exit(9)
        return original(self, version, metadata)
    original, DirectoryCatalog._write = DirectoryCatalog._write, write
    icefloe.delta.convert(root)
"""


@pytest.mark.parametrize("target", ["directory", "catalog"])
def test_a_first_conversion_killed_before_its_snapshot_is_done_again(
    tmp_path: Path, target: str
) -> None:
    """A run killed after creating the table and before committing its first snapshot leaves
    a table with no sync state; the next run converts (it used to answer "unchanged" for
    good, with no rows)."""
    root = fixture("dml", tmp_path)
    expected = _rows(icefloe.delta.convert(str(root), metadata_location=str(tmp_path / "ok")).table)
    assert expected
    db = str(tmp_path / "c.db") if target == "catalog" else ""
    warehouse = (tmp_path / "wh").as_uri()
    kwargs: dict[str, Any] = {}
    if db:
        cat = SqlCatalog("c", uri=f"sqlite:///{db}", warehouse=warehouse)
        cat.create_namespace("db")
        kwargs = {"catalog": cat, "identifier": "db.t"}
    run = subprocess.run(
        [sys.executable, "-c", _KILLED_RUN, str(root), db, warehouse],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 9, run.stderr
    again = icefloe.delta.convert(str(root), **kwargs)
    assert again.mode == "full"
    assert _rows(again.table) == expected
    assert icefloe.delta.convert(str(root), **kwargs).mode == "unchanged"


@pytest.mark.parametrize("error", [CommitStateUnknownError, KeyboardInterrupt])
def test_a_commit_that_landed_keeps_its_files_when_an_error_follows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: type[BaseException]
) -> None:
    """An unknown commit outcome, or an interrupt after the commit, deletes nothing the
    committed metadata may use (the deletion vectors' Puffin files were deleted, and the
    table could no longer be read)."""
    root = fixture("dml", tmp_path)
    expected = _rows(icefloe.delta.convert(str(root), metadata_location=str(tmp_path / "ok")).table)
    original = DirectoryCatalog._write

    def write_then_fail(self: DirectoryCatalog, version: int, metadata: Any) -> str:
        location = original(self, version, metadata)
        if version == 2:
            raise error("the answer was lost")
        return location

    monkeypatch.setattr(DirectoryCatalog, "_write", write_then_fail)
    with pytest.raises(error):
        icefloe.delta.convert(str(root))
    monkeypatch.undo()
    puffins = list((root / "_icefloe" / "metadata").glob("*.puffin"))
    assert puffins  # the fixture's deletion vectors
    again = icefloe.delta.convert(str(root))
    assert again.mode == "unchanged"
    assert _rows(again.table) == expected
