"""Evolution and history on every kind of catalog (SQLite file and memory, PostgreSQL, the
file-system catalog): schema, spec and sort changes, appends, refs, expiry and inspect."""

from __future__ import annotations

import time

import pyarrow as pa

from icefloe.catalog import Catalog
from icefloe.types import LongType


def test_evolve_write_branch_expire(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table(
        "db.t", pa.schema([pa.field("id", pa.int32()), pa.field("s", pa.string())])
    )
    t.append(pa.table({"id": pa.array([1, 2], pa.int32()), "s": ["a", "b"]}))
    first = t.current_snapshot()
    assert first is not None
    with t.transaction() as tx:
        with tx.update_schema() as u:
            u.update_column("id", LongType()).add_column("n", LongType())
        with tx.update_spec() as s:
            s.add_field("id", "bucket[2]")
        with tx.replace_sort_order() as o:
            o.desc("id")
    t.append(pa.table({"id": pa.array([3], pa.int64()), "s": ["c"], "n": pa.array([7])}))
    with t.manage_snapshots() as ms:
        ms.create_tag("first", first.snapshot_id).create_branch("b")
    loaded = catalog.load_table("db.t")
    assert loaded.schema().find_type("id") == LongType()
    assert loaded.spec().spec_id == 1 and loaded.sort_order().order_id == 1
    assert set(loaded.refs()) == {"main", "first", "b"}
    assert loaded.inspect.files().num_rows == 2  # one file per append
    assert loaded.inspect.snapshots().num_rows == 2
    with loaded.manage_snapshots() as ms:
        ms.remove_tag("first").remove_branch("b")
    result = loaded.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1000)
    assert result.snapshot_ids == (first.snapshot_id,)
    assert len(result.manifest_lists) == 1
    final = catalog.load_table("db.t")
    assert [s.snapshot_id for s in final.snapshots()] == [final.current_snapshot().snapshot_id]  # type: ignore[union-attr]
    assert final.inspect.files().num_rows == 2
    assert final.inspect.history().num_rows == 1
