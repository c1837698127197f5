"""Maintenance and commits through a REST client with ``snapshot-loading-mode=refs``, whose
loaded tables hold only the snapshots refs point at: whatever needs the whole history (orphan
removal, expiry, partition statistics, the checks of a retried commit) loads it first, as Iceberg
Java's metadata does on first use of ``snapshots()``."""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.exceptions import FileIOError
from support.rest import RestServer, new_warehouse

pytestmark = pytest.mark.rest

ROWS = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())])


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "v": [f"r{i}" for i in ids]}, schema=ROWS)


@pytest.fixture
def cats(rest_server: RestServer) -> Iterator[tuple[RestCatalog, RestCatalog]]:
    """A full client and a refs-mode client of one fresh warehouse."""
    warehouse = new_warehouse()
    full = RestCatalog("full", uri=rest_server.url, warehouse=warehouse)
    refs = RestCatalog(
        "refs", uri=rest_server.url, warehouse=warehouse, **{"snapshot-loading-mode": "refs"}
    )
    full.create_namespace("db")
    yield full, refs
    full.close()
    refs.close()


def _history(full: RestCatalog, n: int = 3) -> list[int]:
    from icefloe.partitioning import PartitionField, PartitionSpec
    from icefloe.transforms import parse_transform

    spec = PartitionSpec(PartitionField(1, 1000, parse_transform("identity"), "id_part"))
    t = full.create_table("db.t", ROWS, partition_spec=spec, properties={"format-version": "2"})
    for i in range(n):
        t.append(_rows([i]))
    return [s.snapshot_id for s in t.snapshots()]


def test_orphan_removal_keeps_the_files_of_snapshots_no_ref_points_at(
    cats: tuple[RestCatalog, RestCatalog],
) -> None:
    full, refs = cats
    ids = _history(full)
    t = refs.load_table("db.t")
    assert len(t.metadata.snapshots) == 1  # only main's head was loaded
    planted = f"{t.metadata.location}/data/planted-orphan.parquet"
    with t.io.new_output(planted).create() as f:
        f.write(b"not referenced")
    time.sleep(0.01)
    deleted = t.remove_orphan_files(older_than=datetime.timedelta(0))
    assert deleted == [planted]
    # every snapshot still reads (their manifest lists and manifests were kept)
    again = full.load_table("db.t")
    for n, sid in enumerate(ids, start=1):
        assert again.scan(snapshot_id=sid).to_arrow().num_rows == n


def test_orphan_removal_keeps_the_statistics_of_snapshots_no_ref_points_at(
    cats: tuple[RestCatalog, RestCatalog],
) -> None:
    """The server leaves the statistics of left-out snapshots out too; the client takes them
    back with the snapshots, so their files are not orphans."""
    import os

    full, refs = cats
    _history(full, 1)
    t = full.load_table("db.t")
    t.compute_statistics()
    t.compute_partition_statistics()
    t.append(_rows([7]))  # main moves on: the statistics are of a snapshot no ref points at
    kept = [f.statistics_path for f in (*t.metadata.statistics, *t.metadata.partition_statistics)]
    assert len(kept) == 2
    r = refs.load_table("db.t")
    assert not r.metadata.statistics and not r.metadata.partition_statistics
    time.sleep(0.01)
    r.remove_orphan_files(older_than=datetime.timedelta(0))
    assert all(os.path.exists(p.removeprefix("file://")) for p in kept)


def test_expiry_sees_every_snapshot(cats: tuple[RestCatalog, RestCatalog]) -> None:
    full, refs = cats
    ids = _history(full, 4)
    t = refs.load_table("db.t")
    result = t.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1, retain_last=1)
    assert sorted(result.snapshot_ids) == sorted(ids[:3])
    assert result.manifest_lists and not result.files_not_deleted
    after = full.load_table("db.t")
    assert [s.snapshot_id for s in after.snapshots()] == [ids[3]]
    assert after.scan().to_arrow().num_rows == 4


def test_a_retried_commit_checks_commits_no_ref_points_at(
    cats: tuple[RestCatalog, RestCatalog],
) -> None:
    """Two commits land while a refs-mode client deletes: the retry's conflict check walks
    back through both, the first of which no ref points at, and the delete then commits."""
    full, refs = cats
    _history(full, 1)
    mine = refs.load_table("db.t")
    other = full.load_table("db.t")
    other.append(_rows([10]))
    other.append(_rows([11]))
    mine.delete("id = 0")  # stale: conflicts, refreshes, checks the two new snapshots, commits
    ids = sorted(full.load_table("db.t").scan().to_arrow().column("id").to_pylist())
    assert ids == [10, 11]


def test_partition_statistics_of_a_refs_mode_table_match_a_full_one(
    cats: tuple[RestCatalog, RestCatalog],
) -> None:
    """Each partition's last update time and snapshot come from the snapshots that added its
    files, which a refs-mode table loads first."""
    import pyarrow.parquet as pq

    full, refs = cats
    _history(full)
    ours = refs.load_table("db.t").compute_partition_statistics(incremental=False)
    theirs = full.load_table("db.t").compute_partition_statistics(incremental=False)
    assert ours is not None and theirs is not None
    assert ours.statistics_path != theirs.statistics_path
    a, b = (pq.read_table(f.statistics_path.removeprefix("file://")) for f in (ours, theirs))
    assert a.sort_by("last_updated_snapshot_id") == b.sort_by("last_updated_snapshot_id")
    assert a.column("last_updated_at").null_count == 0


def test_expiry_commits_even_when_files_cannot_be_deleted(
    cats: tuple[RestCatalog, RestCatalog],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The expiry is committed before its files are deleted: a file that cannot be deleted is
    named in the result and a warning, not an error (the snapshots are gone all the same)."""
    from icefloe.io import FileIO

    full, _ = cats
    ids = _history(full, 3)
    t = full.load_table("db.t")
    real = FileIO.delete_if_exists

    def failing(self: FileIO, location: str) -> bool:
        if location.endswith(".avro") and "snap-" in location:
            raise FileIOError(f"cannot delete {location}: injected")
        return real(self, location)

    monkeypatch.setattr(FileIO, "delete_if_exists", failing)
    result = t.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1, retain_last=1)
    assert sorted(result.snapshot_ids) == sorted(ids[:2])
    assert len(result.files_not_deleted) == 2
    assert all("snap-" in p for p in result.files_not_deleted)
    assert "could not be deleted" in caplog.text
    assert [s.snapshot_id for s in full.load_table("db.t").snapshots()] == [ids[2]]


def test_with_snapshot_loads_snapshots_no_ref_points_at(
    cats: tuple[RestCatalog, RestCatalog],
) -> None:
    """``scan(snapshot_id=...)`` loaded the full history for such a snapshot; the builder
    ``scan().with_snapshot(...)`` looked only at the loaded ones and said it did not exist."""
    full, refs = cats
    ids = _history(full)
    t = refs.load_table("db.t")
    assert len(t.metadata.snapshots) == 1
    assert t.scan().with_snapshot(ids[0]).to_arrow().column("id").to_pylist() == [0]


def test_a_catalog_transaction_rebuilt_after_a_lost_race_sees_every_snapshot(
    cats: tuple[RestCatalog, RestCatalog],
) -> None:
    """The rebuild's conflict checks walk the new commits back to the transaction's base; in
    refs mode the refreshed tables lacked them, and a delete that conflicts with nothing was
    refused as if its history had been expired."""
    full, refs = cats
    for name in ("db.a", "db.b"):
        full.create_table(name, ROWS).append(_rows([1, 2]))
    tx = refs.transaction()
    tx.table("db.a").append(_rows([3]))
    tx.table("db.b").delete("id = 2")
    other = full.load_table("db.b")
    other.append(_rows([8]))
    other.append(_rows([9]))
    tx.commit()
    ids = lambda n: sorted(full.load_table(n).scan().to_arrow()["id"].to_pylist())  # noqa: E731
    assert ids("db.a") == [1, 2, 3] and ids("db.b") == [1, 8, 9]


def test_publish_changes_finds_a_staged_snapshot_no_ref_points_at(
    cats: tuple[RestCatalog, RestCatalog],
) -> None:
    """A write-audit-publish job's staged snapshot is referenced by no branch; in refs mode
    ``publish_changes`` said no snapshot was staged with its ``wap.id`` (while
    ``cherry_pick`` of its id worked)."""
    full, refs = cats
    t = full.create_table("db.t", ROWS, properties={"write.wap.enabled": "true"})
    t.append(_rows([1]))
    t.append(_rows([2]), snapshot_properties={"wap.id": "w1"})
    assert full.load_table("db.t").scan().to_arrow()["id"].to_pylist() == [1]
    staged = refs.load_table("db.t")
    assert len(staged.metadata.snapshots) == 1  # only main's head was loaded
    staged.manage_snapshots().publish_changes("w1").commit()
    published = full.load_table("db.t")
    assert sorted(published.scan().to_arrow()["id"].to_pylist()) == [1, 2]
    # the staged snapshot's parent is main's head: main fast-forwards to it
    assert published.current_snapshot().summary.properties["wap.id"] == "w1"
