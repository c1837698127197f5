"""A commit leaves no file its snapshot does not reference: neither the manifests of a
superseded attempt (a retried commit after a concurrent one) nor new manifests merged into
others. An empty append commits an empty ``append`` snapshot, as PyIceberg 0.12 and Java's
``AppendFiles`` do."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.table import Table
from icefloe.table.maintenance import reachable_files

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def _ids(values: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())}, schema=SCHEMA)


def _unreferenced(t: Table) -> list[str]:
    t = t.catalog.load_table(t.identifier)
    reach = {
        p.removeprefix("file://")
        for p in reachable_files(t.io, t.metadata, t.metadata_location).to_pylist()
    }
    root = Path(t.location.removeprefix("file://"))
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and str(p) not in reach
    )


@pytest.mark.parametrize("merge", ["2", "100"], ids=["merging", "not-merging"])
def test_no_manifest_leaks_from_merges_or_retried_commits(tmp_path: Path, merge: str) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    props = {
        "commit.manifest.min-count-to-merge": merge,
        "write.delete.isolation-level": "snapshot",
    }
    t = cat.create_table("db.t", SCHEMA, properties=props)
    t.append(_ids([1]))
    for i in range(3):
        stale = cat.load_table("db.t")
        cat.load_table("db.t").append(_ids([10 + i]))  # a concurrent commit wins the race
        stale.append(_ids([20 + i]))  # retried on the new state
        assert _unreferenced(t) == []
    stale = cat.load_table("db.t")
    cat.load_table("db.t").append(_ids([30]))
    stale.delete("id = 1")  # a retried commit that rewrites a manifest
    assert _unreferenced(t) == []
    rows = sorted(cat.load_table("db.t").scan().to_arrow().column("id").to_pylist())
    assert rows == [10, 11, 12, 20, 21, 22, 30]
    cat.close()


@pytest.mark.interop
def test_empty_append_commits_an_empty_snapshot_like_pyiceberg(tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog as TheirCatalog

    uri = f"sqlite:///{tmp_path}/c.db"
    wh = (tmp_path / "wh").as_uri()
    ours = SqlCatalog("c", uri=uri, warehouse=wh)
    ours.create_namespace("db")
    for name in ("ours", "theirs"):
        ours.create_table(f"db.{name}", SCHEMA).append(_ids([1]))
    ours.load_table("db.ours").append(_ids([]))
    TheirCatalog("c", uri=uri, warehouse=wh).load_table("db.theirs").append(_ids([]))
    a, b = ours.load_table("db.ours"), ours.load_table("db.theirs")
    assert len(a.snapshots()) == len(b.snapshots()) == 2
    for t in (a, b):
        snap = t.current_snapshot()
        assert snap is not None and snap.summary.operation == "append"
        assert snap.summary.properties.get("added-data-files", "0") == "0"
        assert snap.summary.properties["total-records"] == "1"
    assert _unreferenced(a) == []
    ours.close()
