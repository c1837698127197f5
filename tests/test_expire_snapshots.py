"""``expire_snapshots()``: the spec's retention algorithm on hand-made metadata, and file
clean-up on tables PyIceberg 0.12 writes, checked against the files PyIceberg says the kept
snapshots reach (nothing reachable is deleted, nothing unreachable is left)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.exceptions import ValidationError
from icefloe.metadata import (
    SetStatistics,
    Snapshot,
    SnapshotRef,
    StatisticsFile,
    Summary,
    TableMetadata,
)
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.table.expire import expire_snapshots, retained_snapshots
from support.evolution import SIMPLE_SCHEMA, Catalogs, append_rows, local_path, shared_catalogs
from support.testdata import TESTDATA

DAY = 86_400_000
NOW = 100 * DAY


def _meta(
    chain: dict[int, tuple[int | None, int]],
    refs: dict[str, SnapshotRef],
    props: dict[str, str] | None = None,
) -> TableMetadata:
    """Metadata whose snapshots are ``id -> (parent, age in days)``."""
    snaps = tuple(
        Snapshot(
            sid,
            NOW - age * DAY,
            f"file:///ml-{sid}.avro",
            sequence_number=i + 1,
            parent_snapshot_id=parent,
            summary=Summary("append"),
        )
        for i, (sid, (parent, age)) in enumerate(sorted(chain.items()))
    )
    return TableMetadata(
        format_version=2,
        table_uuid="9c12d441-03fe-4693-9a96-a0705ddf69c1",
        location="file:///t",
        last_updated_ms=NOW,
        last_column_id=1,
        schemas=(Schema.from_json(SIMPLE_SCHEMA),),
        current_schema_id=0,
        partition_specs=(PartitionSpec(),),
        default_spec_id=0,
        last_partition_id=999,
        last_sequence_number=len(snaps),
        properties=props or {},
        current_snapshot_id=refs["main"].snapshot_id if "main" in refs else None,
        snapshots=snaps,
        refs=refs,
    )


# main: 1 <- 2 <- 3 <- 4 (ages 10, 8, 6, 1 days); side: 1 <- 5 (age 9) ; 6 orphan (age 2)
CHAIN = {1: (None, 10), 2: (1, 8), 3: (2, 6), 4: (3, 1), 5: (1, 9), 6: (None, 2)}


@pytest.mark.parametrize(
    ("refs", "props", "older_than", "retain_last", "kept", "removed_refs"),
    [
        # defaults: 5 days max age, keep at least 1; orphan 6 is young: kept
        ({"main": SnapshotRef(4)}, {}, None, None, {4, 6}, []),
        # table default age 7 days keeps 3 (6 days old) too
        (
            {"main": SnapshotRef(4)},
            {"history.expire.max-snapshot-age-ms": str(7 * DAY)},
            None,
            None,
            {3, 4, 6},
            [],
        ),
        # min-snapshots-to-keep from the table keeps the 3 newest of main
        (
            {"main": SnapshotRef(4)},
            {"history.expire.min-snapshots-to-keep": "3"},
            None,
            None,
            {2, 3, 4, 6},
            [],
        ),
        # retain_last and an explicit cut-off override the table defaults
        (
            {"main": SnapshotRef(4)},
            {"history.expire.min-snapshots-to-keep": "3"},
            NOW - 9 * DAY,
            2,
            {2, 3, 4, 5, 6},
            [],
        ),
        # a branch's own settings win: keep 5 and its parent 1 (min 2)
        (
            {"main": SnapshotRef(4), "side": SnapshotRef(5, "branch", 2)},
            {},
            None,
            None,
            {1, 4, 5, 6},
            [],
        ),
        (
            {"main": SnapshotRef(4), "side": SnapshotRef(5, "branch", None, 20 * DAY)},
            {},
            None,
            None,
            {1, 4, 5, 6},
            [],
        ),
        # tags keep just their snapshot
        ({"main": SnapshotRef(4), "v1": SnapshotRef(2, "tag")}, {}, None, None, {2, 4, 6}, []),
        # max-ref-age removes old refs (never main), from the ref or the table default
        # (4 is then reached by no ref, but young: kept like the reference keeps staged ones)
        (
            {"main": SnapshotRef(1), "v1": SnapshotRef(2, "tag", max_ref_age_ms=7 * DAY)},
            {},
            None,
            None,
            {1, 4, 6},
            ["v1"],
        ),
        (
            {"main": SnapshotRef(1), "v1": SnapshotRef(2, "tag")},
            {"history.expire.max-ref-age-ms": str(9 * DAY)},
            None,
            None,
            {1, 2, 4, 6},
            [],
        ),
        (
            {"main": SnapshotRef(1), "b": SnapshotRef(5, "branch")},
            {"history.expire.max-ref-age-ms": str(8 * DAY)},
            None,
            None,
            {1, 4, 6},
            ["b"],
        ),
    ],
)
def test_retention_algorithm(
    refs: dict[str, SnapshotRef],
    props: dict[str, str],
    older_than: int | None,
    retain_last: int | None,
    kept: set[int],
    removed_refs: list[str],
) -> None:
    m = _meta(CHAIN, refs, props)
    got, gone_refs = retained_snapshots(m, NOW, older_than, retain_last)
    assert got == kept
    assert gone_refs == removed_refs


@pytest.mark.parametrize(
    ("refs", "props", "kept", "removed_refs"),
    [
        # 0 days of age (Java reads 0 as a value): everything but main's head is old
        ({"main": SnapshotRef(4)}, {"history.expire.max-snapshot-age-ms": "0"}, {4}, []),
        (
            {"main": SnapshotRef(4)},
            {
                "history.expire.min-snapshots-to-keep": "0",
                "history.expire.max-snapshot-age-ms": str(7 * DAY),
            },
            {3, 4, 6},
            [],
        ),
        (
            {"main": SnapshotRef(4), "v1": SnapshotRef(2, "tag")},
            {"history.expire.max-ref-age-ms": "0"},
            {4, 6},
            ["v1"],
        ),
    ],
)
def test_zero_retention_properties_are_values(
    refs: dict[str, SnapshotRef], props: dict[str, str], kept: set[int], removed_refs: list[str]
) -> None:
    """Java accepts 0 for the three retention properties (and tables it wrote may carry it):
    they are read as values, not refused or taken as unset."""
    got, gone_refs = retained_snapshots(_meta(CHAIN, refs, props), NOW)
    assert got == kept
    assert gone_refs == removed_refs


def test_a_tag_references_only_its_own_snapshot() -> None:
    """As in Java, a tag's ancestors are not referenced by it: an unreferenced snapshot younger
    than the age limit is kept (1 is main's old ancestor: expired)."""
    chain = {1: (None, 10), 2: (1, 1), 3: (2, 1), 7: (1, 1)}
    m = _meta(chain, {"main": SnapshotRef(7), "t": SnapshotRef(3, "tag")})
    assert retained_snapshots(m, NOW) == ({2, 3, 7}, [])


def test_retention_rejects_bad_settings() -> None:
    m = _meta(CHAIN, {"main": SnapshotRef(4)}, {"history.expire.min-snapshots-to-keep": "x"})
    with pytest.raises(ValidationError, match=r"min-snapshots-to-keep='x' is invalid"):
        retained_snapshots(m, NOW)
    with pytest.raises(ValidationError, match="retain_last must be an integer of at least 1"):
        retained_snapshots(_meta(CHAIN, {"main": SnapshotRef(4)}), NOW, retain_last=0)


# ---------------------------------------------------------------- on real tables


def _table_files(t: Table) -> set[str]:
    """Every file under the table's location except metadata JSON and version hints."""
    root = local_path(t.location)
    return {
        p.as_uri()
        for p in root.rglob("*")
        if p.is_file() and not p.name.endswith(".metadata.json") and not p.name.startswith(".")
    }


def _reachable(c: Catalogs, name: str) -> set[str]:
    """Files the table's snapshots reach, as PyIceberg reads them."""
    t = c.theirs.load_table(f"db.{name}")
    out: set[str] = set()
    for s in t.metadata.snapshots:
        out.add(s.manifest_list)
        for m in s.manifests(t.io):
            out.add(m.manifest_path)
            for e in m.fetch_manifest_entry(t.io, discard_deleted=True):
                out.add(e.data_file.file_path)
    for st in t.metadata.statistics:
        out.add(st.statistics_path)
    return {_norm(p) for p in out}


def _norm(p: str) -> str:
    return local_path(p).as_uri()


def _history_table(tmp_path: Path) -> tuple[Catalogs, Table, list[int]]:
    """Appends [1, 2] (s1) and [3] (s2), an overwrite with [10] (PyIceberg commits a delete
    and an append: s3 is the latter) and an append of [11] (s4)."""
    c = shared_catalogs(tmp_path)
    c.ours.create_table("db.t", Schema.from_json(SIMPLE_SCHEMA))
    s1 = append_rows(c, "t", [1, 2])
    s2 = append_rows(c, "t", [3])
    theirs = c.theirs.load_table("db.t")
    theirs.overwrite(pa.table({"id": pa.array([10], pa.int64()), "data": ["x"]}))
    s3 = c.theirs.load_table("db.t").metadata.current_snapshot_id
    s4 = append_rows(c, "t", [11])
    return c, c.ours.load_table("db.t"), [s1, s2, int(s3), s4]


def _all_but(t: Table, *keep: int) -> set[int]:
    return {s.snapshot_id for s in t.snapshots()} - set(keep)


def _rows(c: Catalogs) -> list[int]:
    return sorted(c.theirs.load_table("db.t").scan().to_arrow().column("id").to_pylist())


def test_expire_deletes_exactly_the_unreachable_files(tmp_path: Path) -> None:
    c, t, (_s1, _s2, _s3, s4) = _history_table(tmp_path)
    before = _table_files(t)
    assert before == _reachable(c, "t")
    future = int(time.time() * 1000) + 1000
    dry = t.expire_snapshots(older_than_ms=future, dry_run=True)
    assert dry.dry_run and set(dry.snapshot_ids) == _all_but(t, s4)
    assert len(dry.snapshot_ids) == 4  # s1, s2, the overwrite's delete, s3
    assert _table_files(t) == before and len(t.refresh().snapshots()) == 5
    result = t.expire_snapshots(older_than_ms=future)
    assert set(result.snapshot_ids) == set(dry.snapshot_ids)
    assert [s.snapshot_id for s in t.snapshots()] == [s4]
    assert result.all_files == dry.all_files  # the dry run listed exactly what went
    assert len(result.manifest_lists) == 4 and len(result.data_files) == 2
    after = _table_files(t)
    assert after == _reachable(c, "t")  # nothing reachable lost, nothing unreachable left
    assert {_norm(p) for p in result.all_files} == before - after
    assert _rows(c) == [10, 11]
    assert result.files_deleted


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"max_workers": -1}, "max_workers"),
        ({"max_workers": 1.5}, "max_workers"),
        ({"progress": 123}, "progress"),
    ],
)
def test_bad_deletion_arguments_are_refused_before_the_commit(
    tmp_path: Path, args: dict[str, object], match: str
) -> None:
    """They are used only to delete the files, after the commit: checked first, so a bad one
    leaves the snapshots in place (not expired with their files never deleted)."""
    _, t, _ = _history_table(tmp_path)
    future = int(time.time() * 1000) + 1000
    with pytest.raises(ValidationError, match=match):
        t.expire_snapshots(older_than_ms=future, **args)
    assert len(t.refresh().snapshots()) == 5


def test_refs_keep_their_files(tmp_path: Path) -> None:
    c, t, (s1, s2, s3, s4) = _history_table(tmp_path)
    with t.manage_snapshots() as ms:
        ms.create_tag("old", s1)
    future = int(time.time() * 1000) + 1000
    expected = _all_but(t, s1, s4)
    result = t.expire_snapshots(older_than_ms=future)
    assert set(result.snapshot_ids) == expected and s2 in expected and s3 in expected
    assert _table_files(t) == _reachable(c, "t")
    old = c.theirs.load_table("db.t")
    assert sorted(old.scan(snapshot_id=s1).to_arrow().column("id").to_pylist()) == [1, 2]
    # dropping the tag and expiring again frees s1's data file
    with t.manage_snapshots() as ms:
        ms.remove_tag("old")
    again = t.expire_snapshots(older_than_ms=future)
    assert again.snapshot_ids == (s1,) and len(again.data_files) == 1
    assert _table_files(t) == _reachable(c, "t")


def test_explicit_ids_and_metadata_only(tmp_path: Path) -> None:
    c, t, (_s1, s2, _s3, s4) = _history_table(tmp_path)
    with pytest.raises(ValidationError, match=f"cannot expire snapshot {s4}: still referenced"):
        t.expire_snapshots(snapshot_ids=[s4])
    with pytest.raises(ValidationError, match="no such snapshot"):
        t.expire_snapshots(snapshot_ids=[42])
    before = _table_files(t)
    result = t.expire_snapshots(snapshot_ids=[s2], delete_files=False)
    assert result.snapshot_ids == (s2,) and not result.files_deleted
    assert _all_but(t, s2) == _all_but(t)  # s2 is gone
    assert len(t.snapshots()) == 4  # the young ones are kept
    assert _table_files(t) == before
    assert _rows(c) == [10, 11]


def test_explicit_ids_of_the_wrong_type(tmp_path: Path) -> None:
    _c, t, (_s1, s2, _s3, _s4) = _history_table(tmp_path)
    bad: list[object] = [s2, str(s2), [str(s2)], [float(s2)], [True]]
    messages = ["a collection of snapshot ids", "a collection of snapshot ids"] + [
        "a snapshot id is an integer"
    ] * 3
    for arg, message in zip(bad, messages, strict=True):
        with pytest.raises(ValidationError, match=message):
            t.expire_snapshots(snapshot_ids=arg, dry_run=True)  # type: ignore[arg-type]
    assert len(t.snapshots()) == 5
    assert t.expire_snapshots(snapshot_ids=(s2,), dry_run=True).snapshot_ids == (s2,)


def test_statistics_files_of_expired_snapshots_are_deleted(tmp_path: Path) -> None:
    c, t, (s1, _s2, _s3, s4) = _history_table(tmp_path)
    paths = {}
    for sid in (s1, s4):
        p = local_path(t.location) / "metadata" / f"stats-{sid}.puffin"
        p.write_bytes(b"PFA1")
        paths[sid] = p
        stats = StatisticsFile(sid, p.as_uri(), 4, 0)
        with t.transaction() as tx:
            tx.apply([SetStatistics(stats)])
    future = int(time.time() * 1000) + 1000
    result = t.expire_snapshots(older_than_ms=future)
    assert result.statistics_files == (paths[s1].as_uri(),)
    assert not paths[s1].exists() and paths[s4].exists()
    assert [s.snapshot_id for s in t.metadata.statistics] == [s4]
    assert _table_files(t) == _reachable(c, "t")


def test_table_defaults_and_nothing_to_do(tmp_path: Path) -> None:
    c, t, ids = _history_table(tmp_path)
    # defaults: 5 days, so nothing written just now expires
    loc = t.metadata_location
    assert t.expire_snapshots().snapshot_ids == ()
    assert t.refresh().metadata_location == loc
    t.set_properties(
        {"history.expire.max-snapshot-age-ms": "1", "history.expire.min-snapshots-to-keep": "2"}
    )
    time.sleep(0.01)
    expected = _all_but(t, ids[2], ids[3])
    result = t.expire_snapshots()
    assert set(result.snapshot_ids) == expected
    assert _table_files(t) == _reachable(c, "t")


def test_expire_with_a_fixed_clock_and_max_ref_age(tmp_path: Path) -> None:
    c, t, (s1, s2, _s3, s4) = _history_table(tmp_path)
    with t.manage_snapshots() as ms:
        ms.create_tag("short", s2, max_ref_age_ms=1000)
        ms.create_branch("keep", s1)
    now = t.snapshot_by_id(s4).timestamp_ms + 10 * DAY  # type: ignore[union-attr]
    result = expire_snapshots(t, now_ms=now)
    assert result.removed_refs == ("short",)
    assert {s.snapshot_id for s in t.snapshots()} == {s1, s4}
    assert set(t.refs()) == {"main", "keep"}
    assert _table_files(t) == _reachable(c, "t")
    meta = json.loads(local_path(t.metadata_location).read_text())
    assert sorted(meta["refs"]) == ["keep", "main"]


def test_computed_statistics_follow_their_snapshots(tmp_path: Path) -> None:
    from support.write_util import catalog

    t = catalog(tmp_path).create_table("ns.s", pa.schema([("id", pa.int64())]))
    for i in range(3):
        t.append(pa.table({"id": pa.array([i, i + 10], pa.int64())}))
    s1, _, s3 = (s.snapshot_id for s in t.snapshots())
    old = t.compute_statistics(snapshot_id=s1)
    new = t.compute_statistics()
    assert {s.snapshot_id for s in t.metadata.statistics} == {s1, s3}
    result = t.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1000)
    assert result.statistics_files == (old.statistics_path,)
    assert not local_path(old.statistics_path).exists()
    assert local_path(new.statistics_path).exists()
    assert [s.snapshot_id for s in t.metadata.statistics] == [s3]
    assert t.statistics() == {"id": 6}


def test_partition_statistics_follow_their_snapshots(tmp_path: Path) -> None:
    from support.write_util import SCHEMA, SPEC, catalog, rows

    t = catalog(tmp_path).create_table("ns.p", SCHEMA, partition_spec=SPEC)
    for i in range(3):
        t.append(rows(i * 10, 10))
    s1, s2, s3 = (s.snapshot_id for s in t.snapshots())
    old = t.compute_partition_statistics(snapshot_id=s1)
    table_old = t.compute_statistics(snapshot_id=s2)
    new = t.compute_partition_statistics()  # incremental from s1's file
    table_new = t.compute_statistics()
    assert old is not None and new is not None
    assert {s.snapshot_id for s in t.metadata.partition_statistics} == {s1, s3}
    dry = t.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1000, dry_run=True)
    assert set(dry.statistics_files) == {old.statistics_path, table_old.statistics_path}
    assert local_path(old.statistics_path).exists()
    result = t.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1000)
    assert set(result.statistics_files) == {old.statistics_path, table_old.statistics_path}
    for gone in (old, table_old):
        assert not local_path(gone.statistics_path).exists()
    for kept in (new, table_new):
        assert local_path(kept.statistics_path).exists()
    assert [s.snapshot_id for s in t.metadata.partition_statistics] == [s3]
    assert sum(t.partition_statistics().column("data_record_count").to_pylist()) == 30


def test_a_stale_table_object_keeps_the_files_of_a_branch_forked_meanwhile(
    tmp_path: Path,
) -> None:
    """Another writer forks a branch from an old snapshot and appends to it while a
    maintenance job holds an older table object: the job's expiry removes the old snapshots
    (as Java would: the branch keeps one snapshot) but deletes none of the files the
    branch's new snapshot reads."""
    from icefloe.catalog.hadoop import HadoopCatalog

    cat = HadoopCatalog("x", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]), format_version=2)
    t.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    t.append(pa.table({"id": pa.array([3], pa.int64())}))
    fork = t.current_snapshot().snapshot_id
    t.overwrite(pa.table({"id": pa.array([10], pa.int64())}))
    job = cat.load_table("db.t")
    other = cat.load_table("db.t")
    with other.manage_snapshots() as ms:
        ms.create_branch("fix", fork)
    other.append(pa.table({"id": pa.array([20], pa.int64())}), branch="fix")
    result = job.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1, retain_last=1)
    assert fork in result.snapshot_ids
    assert result.data_files == ()
    fresh = cat.load_table("db.t")
    assert sorted(fresh.scan(ref="fix").to_arrow().column("id").to_pylist()) == [1, 2, 3, 20]
    assert fresh.scan().to_arrow().column("id").to_pylist() == [10]


def test_statistics_files_spelled_two_ways_are_one_file(tmp_path: Path) -> None:
    """Another writer registered one statistics file (and one partition statistics file) for
    two snapshots, as ``/x`` and ``file:///x``: expiring one snapshot deleted the file the
    other still names. Paths are compared as the files they name, as manifests are."""
    import os
    import shutil

    import pyarrow.parquet as pq

    from icefloe.catalog.sql import SqlCatalog

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("ns")
    t = cat.create_table("ns.t", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1]}))
    t.append(pa.table({"id": [2]}))
    meta = json.loads(local_path(t.metadata_location).read_text())
    first, current = meta["snapshots"][0]["snapshot-id"], meta["current-snapshot-id"]
    metadata_dir = f"{local_path(meta['location'])}/metadata"
    puffin = f"{metadata_dir}/shared.puffin"
    shutil.copy(TESTDATA / "iceberg-java" / "puffin" / "empty-puffin-uncompressed.bin", puffin)
    parts = f"{metadata_dir}/shared-partition-stats.parquet"
    pq.write_table(pa.table({"x": [1]}), parts)

    def stats(snapshot: int, path: str) -> dict[str, object]:
        size = os.path.getsize(local_path(path))
        return {
            "snapshot-id": snapshot,
            "statistics-path": path,
            "file-size-in-bytes": size,
            "file-footer-size-in-bytes": 0,
            "blob-metadata": [],
        }

    meta["statistics"] = [stats(first, puffin), stats(current, "file://" + puffin)]
    meta["partition-statistics"] = [
        {"snapshot-id": first, "statistics-path": "file://" + parts, "file-size-in-bytes": 1},
        {"snapshot-id": current, "statistics-path": parts, "file-size-in-bytes": 1},
    ]
    foreign = Path(metadata_dir) / "00099-foreign.metadata.json"
    foreign.write_text(json.dumps(meta))
    t = cat.register_table("ns.foreign", str(foreign))
    result = t.expire_snapshots(snapshot_ids=[first])
    assert result.statistics_files == ()
    assert Path(puffin).exists() and Path(parts).exists()
    kept = cat.load_table("ns.foreign").metadata
    assert [s.snapshot_id for s in kept.statistics] == [current]
