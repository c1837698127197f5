"""A converted Delta table stays the Delta table's mirror: Iceberg maintenance never deletes
the Delta table's files, a foreign write to the mirror is named when it blocks a sync, and
Delta numbers that cannot be right (negative sizes and row ids, commit versions from the
future, field ids out of range, files that are not Parquet) are typed errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import icefloe.delta
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import CorruptFileError, DeltaLogError, ValidationError
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
