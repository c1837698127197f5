"""The converted table's name mapping keeps every column files may hold: a column Delta dropped
stays mapped (files written before the drop still have it, and a reader that falls back to the
mapping, such as PyIceberg on a file with the change data feed's columns, needs all of them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.delta import convert
from icefloe.delta.schema import name_mapping
from icefloe.delta.table_metadata import merge_mapping
from icefloe.name_mapping import MappedField, NameMapping
from support.delta import (
    PROTOCOL,
    DeltaTableWriter,
    add,
    commit_info,
    field,
    metadata,
    row_tracking,
)

MAP = {"type": "map", "keyType": "string", "valueType": "string", "valueContainsNull": True}
EXTRA: dict[str, tuple[Any, dict[str, int], pa.DataType, Any]] = {
    "int": ("integer", {}, pa.int32(), 7),
    "map": (
        MAP,
        {"col-extra.key": 4, "col-extra.value": 5},
        pa.map_(pa.string(), pa.string()),
        [("k", "x")],
    ),
}


def schema(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


def dropped_column_table(root: Path, kind: str) -> None:
    """Version 0: columns id, v, extra and one file (with the change data feed's column, no
    field ids); version 1 drops extra; version 2 adds a new column named extra."""
    delta_type, nested, arrow_type, value = EXTRA[kind]
    top = 5 if nested else 3
    base = [field("id", "long", 1), field("v", "string", 2)]
    first = schema(*base, field("extra", delta_type, 3, nested or None))
    again = field("extra", "long", top + 1)
    again["metadata"]["delta.columnMapping.physicalName"] = "col-extra-2"
    root.mkdir(parents=True)
    pq.write_table(
        pa.table(
            {
                "col-id": pa.array([1, 2], pa.int64()),
                "col-v": ["a", "b"],
                "col-extra": pa.array([value, value], arrow_type),
                "_change_type": pa.array([None, None], pa.string()),
            }
        ),
        root / "a.parquet",
    )
    w = DeltaTableWriter(root)
    mid = str(top)
    w.commit(
        0,
        commit_info(op="CREATE TABLE"),
        {"protocol": PROTOCOL},
        {"metaData": metadata(first, **{"delta.columnMapping.maxColumnId": mid})},
        add("a.parquet", 2, base_row_id=0, version=0, size=(root / "a.parquet").stat().st_size),
        row_tracking(1),
    )
    drop = metadata(schema(*base), **{"delta.columnMapping.maxColumnId": mid})
    w.commit(1, commit_info(op="DROP COLUMNS"), {"metaData": drop})
    added = metadata(schema(*base, again), **{"delta.columnMapping.maxColumnId": str(top + 1)})
    w.commit(2, commit_info(op="ADD COLUMNS"), {"metaData": added})


def names_by_id(location: str) -> dict[int, list[str]]:
    from pyiceberg.table import StaticTable

    props = StaticTable.from_metadata(location).metadata.properties
    mapping = json.loads(props["schema.name-mapping.default"])
    return {m["field-id"]: m["names"] for m in mapping}


def pyiceberg_rows(location: str) -> list[dict[str, Any]]:
    from pyiceberg.table import StaticTable

    got = StaticTable.from_metadata(location).scan().to_arrow()
    return sorted(got.to_pylist(), key=lambda r: r["id"])


WANT = [{"id": 1, "v": "a", "extra": None}, {"id": 2, "v": "b", "extra": None}]


@pytest.mark.parametrize("kind", sorted(EXTRA))
@pytest.mark.parametrize("mode", ["full", "incremental"])
def test_dropped_column_stays_in_the_mapping(tmp_path: Path, kind: str, mode: str) -> None:
    root = tmp_path / "t"
    dropped_column_table(root, kind)
    if mode == "incremental":
        assert convert(str(root), up_to_version=0).mode == "full"
    result = convert(str(root))
    assert result.mode == mode and result.delta_version == 2
    location = result.table.metadata_location
    assert pyiceberg_rows(location) == WANT
    assert sorted(result.table.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == WANT
    by_id = names_by_id(location)
    # the dropped column keeps its physical name; its logical one is the new column's now
    assert by_id[3] == ["col-extra"]
    assert by_id[6 if kind == "map" else 4] == ["extra", "col-extra-2"]
    if kind == "map":
        entry = next(
            m
            for m in json.loads(result.table.properties["schema.name-mapping.default"])
            if m["field-id"] == 3
        )
        assert [(c["names"], c["field-id"]) for c in entry["fields"]] == [
            (["key"], 4),
            (["value"], 5),
        ]


def test_merge_keeps_old_names_and_dropped_fields() -> None:
    old = NameMapping(
        [
            MappedField(("a", "col-a"), 1),
            MappedField(
                ("s", "col-s"), 2, (MappedField(("x", "col-x"), 3), MappedField(("y", "col-y"), 4))
            ),
            MappedField(("gone", "col-gone"), 5),
        ]
    )
    new = NameMapping(
        [
            MappedField(("b", "col-a"), 1),  # renamed
            MappedField(("s", "col-s"), 2, (MappedField(("x", "col-x"), 3),)),  # s.y dropped
            MappedField(("gone", "col-new"), 6),  # a new column takes the dropped one's name
        ]
    )
    merged = merge_mapping(old, new).to_json()
    assert merged == [
        {"field-id": 1, "names": ["b", "a", "col-a"]},  # the physical name stays last
        {
            "field-id": 2,
            "names": ["s", "col-s"],
            "fields": [
                {"field-id": 3, "names": ["x", "col-x"]},
                {"field-id": 4, "names": ["y", "col-y"]},
            ],
        },
        {"field-id": 6, "names": ["gone", "col-new"]},
        {"field-id": 5, "names": ["col-gone"]},
    ]
    assert merge_mapping(new, new) == new


def test_a_logical_name_that_is_another_columns_physical_name_maps_to_that_column() -> None:
    """A table upgraded to column mapping keeps its old names as physical names; after
    renaming ``a`` to ``b`` and adding a new ``a``, files' ``a`` is ``b``'s data (the mapping
    used to list ``a`` twice and every conversion failed)."""

    def column(name: str, physical: str, fid: int, type_: Any = "string") -> dict[str, Any]:
        meta = {"delta.columnMapping.id": fid, "delta.columnMapping.physicalName": physical}
        return {"name": name, "type": type_, "nullable": True, "metadata": meta}

    inner = {"type": "struct", "fields": [column("y", "x", 5), column("x", "col-x", 6)]}
    schema = {
        "type": "struct",
        "fields": [
            column("b", "a", 2),
            column("a", "col-new", 3),
            column("s", "s", 4, inner),
        ],
    }
    mapping = name_mapping(schema)
    assert [(f.names, f.field_id) for f in mapping.fields] == [
        (("b", "a"), 2),
        (("col-new",), 3),
        (("s",), 4),
    ]
    assert [(f.names, f.field_id) for f in mapping.fields[2].fields] == [
        (("y", "x"), 5),
        (("col-x",), 6),
    ]
