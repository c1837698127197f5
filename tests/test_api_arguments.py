"""Maintenance calls with arguments of the wrong type fail with a ValidationError naming the
argument, before anything is changed or deleted (not a TypeError or AttributeError from
deep inside)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import ValidationError
from icefloe.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])

CALLS: list[tuple[str, Callable[[Table], Any], str]] = [
    ("manifest-size-text", lambda t: t.rewrite_manifests(target_manifest_size="8MB"), "an int"),
    ("manifest-size-bool", lambda t: t.rewrite_manifests(target_manifest_size=True), "an int"),
    ("orphans-location-int", lambda t: t.remove_orphan_files(location=123), "location"),
    (
        "compaction-properties-text",
        lambda t: t.rewrite_data_files(snapshot_properties="ab"),
        "snapshot_properties",
    ),
    (
        "append-properties-list",
        lambda t: t.append(pa.table({"id": [9]}, schema=SCHEMA), snapshot_properties=[("a", "b")]),
        "snapshot_properties",
    ),
]


@pytest.mark.parametrize("call,needle", [c[1:] for c in CALLS], ids=[c[0] for c in CALLS])
def test_wrong_types_are_validation_errors(
    tmp_path: Path, call: Callable[[Table], Any], needle: str
) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    for i in range(3):
        t.append(pa.table({"id": [i]}, schema=SCHEMA))
    files = sorted(p for p in (tmp_path / "wh").rglob("*") if p.is_file())
    with pytest.raises(ValidationError, match=needle):
        call(t)
    t = cat.load_table("db.t")
    assert len(t.snapshots()) == 3
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2]
    assert sorted(p for p in (tmp_path / "wh").rglob("*") if p.is_file()) == files


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"partition_spec": [("id", "identity")]}, "partition_spec must be a PartitionSpec"),
        ({"sort_order": ["id"]}, "sort_order must be a SortOrder"),
        ({"properties": [("a", "b")]}, "properties must be a Mapping"),
    ],
    ids=["spec-list", "order-list", "properties-list"],
)
def test_create_table_with_wrong_types(tmp_path: Path, kwargs: dict[str, Any], needle: str) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    with pytest.raises(ValidationError, match=needle):
        cat.create_table("db.t", SCHEMA, **kwargs)
    assert not cat.table_exists("db.t")
