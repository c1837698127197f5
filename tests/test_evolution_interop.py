"""Evolved tables shared with PyIceberg 0.12 in both directions: icefloe evolves schema, spec,
sort order and refs between its own appends and PyIceberg reads every version correctly; PyIceberg
evolves and writes a table that icefloe opens, evolves further and expires, and PyIceberg keeps
reading."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.schema import Schema
from icefloe.types import DoubleType, LongType, StringType
from support.evolution import shared_catalogs

pytestmark = pytest.mark.interop


def test_pyiceberg_reads_a_table_icefloe_evolved(tmp_path: Path) -> None:
    c = shared_catalogs(tmp_path)
    schema = pa.schema(
        [
            pa.field("id", pa.int32(), nullable=False),
            pa.field("name", pa.string()),
            pa.field("score", pa.float32()),
        ]
    )
    t = c.ours.create_table("db.t", schema)
    t.append(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int32()),
                "name": ["a", "b"],
                "score": pa.array([1.5, 2.5], pa.float32()),
            }
        )
    )
    v1 = t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    with t.transaction() as tx:
        with tx.update_schema() as u:
            u.update_column("id", LongType()).update_column("score", DoubleType())
            u.rename_column("name", "label").add_column("city", StringType())
            u.move_first("city")
        with tx.update_spec() as s:
            s.add_field("city", "identity")
        with tx.replace_sort_order() as o:
            o.asc("id")
    t.append(
        pa.table(
            {
                "city": ["x"],
                "id": pa.array([3], pa.int64()),
                "label": ["c"],
                "score": pa.array([3.5], pa.float64()),
            }
        )
    )
    with t.update_schema() as u:
        u.delete_column("score")
    with t.manage_snapshots() as ms:
        ms.create_tag("v1", v1)

    theirs = c.theirs.load_table("db.t")
    assert [f.name for f in theirs.schema().fields] == ["city", "id", "label"]
    assert theirs.spec().fields[0].name == "city"
    assert theirs.sort_order().order_id == 1
    rows = theirs.scan().to_arrow().sort_by("id").to_pylist()
    assert rows == [
        {"city": None, "id": 1, "label": "a"},
        {"city": None, "id": 2, "label": "b"},
        {"city": "x", "id": 3, "label": "c"},
    ]
    old = theirs.scan(snapshot_id=theirs.metadata.refs["v1"].snapshot_id).to_arrow()
    assert sorted(old.column("id").to_pylist()) == [1, 2]
    # PyIceberg commits on top: icefloe sees it
    with theirs.update_schema() as pu:
        from pyiceberg.types import IntegerType

        pu.add_column("n", IntegerType())
    assert c.ours.load_table("db.t").schema().find_field("n").field_id == 5


def test_icefloe_evolves_a_pyiceberg_table(tmp_path: Path) -> None:
    from pyiceberg.schema import Schema as PSchema
    from pyiceberg.transforms import BucketTransform
    from pyiceberg.types import LongType as PLong
    from pyiceberg.types import NestedField as PField
    from pyiceberg.types import StringType as PString

    c = shared_catalogs(tmp_path)
    pt = c.theirs.create_table(
        "db.p",
        PSchema(
            PField(1, "id", PLong(), required=False), PField(2, "s", PString(), required=False)
        ),
        properties={"format-version": "2"},
    )
    with pt.update_spec() as ps:
        ps.add_field("id", BucketTransform(4), "id_b")
    pt.append(pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}))
    pt = c.theirs.load_table("db.p")
    first = pt.current_snapshot().snapshot_id
    pt.manage_snapshots().create_tag(first, "t1").commit()
    pt.append(pa.table({"id": pa.array([3], pa.int64()), "s": ["c"]}))

    t = c.ours.load_table("db.p")
    assert t.spec().fields[0].name == "id_b" and t.refs()["t1"].snapshot_id == first
    assert t.inspect.files().num_rows == c.theirs.load_table("db.p").inspect.files().num_rows
    with t.update_schema() as u:
        u.rename_column("s", "text").add_column("extra", StringType())
    with t.update_spec() as s:
        s.remove_field("id_b").add_field("text", "truncate[1]")
    t.append(pa.table({"id": pa.array([4], pa.int64()), "text": ["d"], "extra": ["e"]}))
    with t.manage_snapshots() as ms:
        ms.remove_tag("t1")
    result = t.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1000)
    assert first in result.snapshot_ids
    theirs = c.theirs.load_table("db.p")
    rows = theirs.scan().to_arrow().sort_by("id").to_pylist()
    assert rows == [
        {"id": 1, "text": "a", "extra": None},
        {"id": 2, "text": "b", "extra": None},
        {"id": 3, "text": "c", "extra": None},
        {"id": 4, "text": "d", "extra": "e"},
    ]
    assert [f.name for f in theirs.spec().fields] == ["text_trunc_1"]
    assert len(theirs.metadata.snapshots) == 1
    assert (
        Schema.from_json(json.loads(theirs.schema().model_dump_json(by_alias=True))) == t.schema()
    )
