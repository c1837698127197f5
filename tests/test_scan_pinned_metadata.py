"""A scan reads the table as it was when the scan was made: a schema change through the same
table object later changed the names the read bound to but not the plan, so the scan filtered
on another column (two renamed columns swapping names) or failed untyped."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from icefloe.catalog.sql import SqlCatalog


def _table(tmp_path: Path):  # type: ignore[no-untyped-def]
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("x", pa.int64())]))
    t.append(pa.table({"id": [1, 2, 3], "x": [1, 5, 9]}))
    return t


def test_a_scan_keeps_its_schema_after_the_table_changes(tmp_path: Path) -> None:
    t = _table(tmp_path)
    scan = t.scan(row_filter="x > 2")
    assert scan.count() == 2  # planned
    for old, new in (("x", "tmp"), ("id", "x"), ("tmp", "id")):
        with t.update_schema() as u:
            u.rename_column(old, new)
    expected = [{"id": 2, "x": 5}, {"id": 3, "x": 9}]
    assert scan.to_arrow().to_pylist() == expected
    assert scan.select("x").to_arrow().column("x").to_pylist() == [5, 9]  # copies too
    # a new scan binds to the new names
    assert t.scan(row_filter="id > 2").to_arrow().to_pylist() == [
        {"x": 2, "id": 5},
        {"x": 3, "id": 9},
    ]
    planned = t.scan(row_filter="x > 2")
    planned.plan_files()
    with t.update_schema() as u:
        u.rename_column("x", "z")
    assert planned.to_arrow().to_pylist() == [{"x": 3, "id": 9}]


def test_a_scan_reads_the_snapshot_it_was_made_at(tmp_path: Path) -> None:
    t = _table(tmp_path)
    scan = t.scan()
    t.append(pa.table({"id": [4], "x": [16]}))
    assert scan.count() == 3
    assert t.scan().count() == 4


def test_main_of_a_table_without_snapshots_reads_nothing(tmp_path: Path) -> None:
    """As in Java (``useRef(MAIN_BRANCH)`` is the current snapshot): not a missing ref."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.empty", pa.schema([("id", pa.int64())]))
    assert t.scan(ref="main").to_arrow().num_rows == 0
    assert t.scan().use_ref("main").to_arrow().num_rows == 0
