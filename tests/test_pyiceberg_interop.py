"""PyIceberg 0.12 and icefloe share one SQL catalog database, in both directions."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.schema import Schema
from icefloe.types import LongType, NestedField, StringType

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")

pytestmark = pytest.mark.interop


def _uris(tmp_path: Path) -> tuple[str, str]:
    return f"sqlite:///{tmp_path / 'shared.db'}", (tmp_path / "warehouse").as_uri()


def test_pyiceberg_reads_icefloe_catalog(tmp_path: Path) -> None:
    uri, warehouse = _uris(tmp_path)
    ours = SqlCatalog("shared", uri=uri, warehouse=warehouse)
    ours.create_namespace("db", {"owner": "icefloe"})
    ours.create_namespace("db.inner")
    t = ours.create_table(
        "db.events",
        Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType())),
        properties={"k": "v"},
    )
    t.set_properties(k2="v2")
    ours.close()

    theirs = pyiceberg_sql.SqlCatalog("shared", uri=uri, warehouse=warehouse)
    assert sorted(theirs.list_namespaces()) == [("db",)]
    assert theirs.list_namespaces("db") == [("db", "inner")]
    # every namespace stores Java's reserved exists=true, which PyIceberg shows and Java hides
    assert theirs.load_namespace_properties("db") == {"owner": "icefloe", "exists": "true"}
    assert theirs.list_tables("db") == [("db", "events")]
    table = theirs.load_table("db.events")
    assert table.metadata_location == t.metadata_location
    assert str(table.metadata.table_uuid) == t.metadata.table_uuid
    assert [f.name for f in table.schema().fields] == ["id", "s"]
    assert table.properties["k"] == "v" and table.properties["k2"] == "v2"
    assert len(table.metadata.metadata_log) == 1
    # PyIceberg commits on top of icefloe's metadata; icefloe sees it
    table.transaction().set_properties(from_pyiceberg="yes").commit_transaction()
    again = SqlCatalog("shared", uri=uri, warehouse=warehouse)
    loaded = again.load_table("db.events")
    assert loaded.properties["from_pyiceberg"] == "yes"
    assert loaded.metadata_log()[-1].metadata_file == t.metadata_location
    again.close()


def test_icefloe_reads_pyiceberg_catalog(tmp_path: Path) -> None:
    import pyarrow as pa

    uri, warehouse = _uris(tmp_path)
    theirs = pyiceberg_sql.SqlCatalog("shared", uri=uri, warehouse=warehouse)
    theirs.create_namespace("sales", {"region": "eu"})
    arrow = pa.schema([pa.field("order_id", pa.int64()), pa.field("item", pa.string())])
    ptable = theirs.create_table("sales.orders", schema=arrow)
    ptable.append(pa.table({"order_id": [1, 2], "item": ["a", "b"]}, schema=arrow))
    ptable = theirs.load_table("sales.orders")

    ours = SqlCatalog("shared", uri=uri, warehouse=warehouse)
    assert ours.list_namespaces() == [("sales",)]
    assert ours.load_namespace_properties("sales") == {"region": "eu"}
    assert ours.list_tables("sales") == [("sales", "orders")]
    t = ours.load_table("sales.orders")
    assert t.metadata_location == ptable.metadata_location
    assert [f.name for f in t.schema().fields] == ["order_id", "item"]
    snap = t.current_snapshot()
    assert snap is not None and snap.snapshot_id == ptable.current_snapshot().snapshot_id
    assert snap.summary.get("added-records") == "2"
    assert len(t.history()) == 1
    # icefloe commits on top of PyIceberg's metadata; PyIceberg sees it and keeps the snapshot
    t.set_properties(from_icefloe="yes")
    reloaded = theirs.load_table("sales.orders")
    assert reloaded.properties["from_icefloe"] == "yes"
    assert reloaded.current_snapshot().snapshot_id == snap.snapshot_id
    assert reloaded.scan().to_arrow().num_rows == 2
    ours.close()
