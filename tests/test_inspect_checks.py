"""``table.inspect`` and ``manage_snapshots()`` edge cases: tables a REST catalog loaded with
``snapshot-loading-mode=refs``, files whose snapshot was expired, tables without a snapshot,
partition field names reused by a newer field, and typed errors for bad snapshot ids."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.rest import RestCatalog
from icefloe.exceptions import NoSuchSnapshotError, ValidationError
from icefloe.metadata import Snapshot
from icefloe.table import Table
from support.rest import RestServer, new_warehouse

ROWS = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.string())])


def _rows(ids: list[int], p: str = "a") -> pa.Table:
    return pa.table({"id": ids, "p": [p] * len(ids)}, schema=ROWS)


def _hadoop(tmp_path: Path) -> HadoopCatalog:
    cat = HadoopCatalog("cat", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


def _head(t: Table) -> Snapshot:
    s = t.current_snapshot()
    assert s is not None
    return s


def _partitioned(cat: HadoopCatalog | RestCatalog, name: str = "db.t") -> Table:
    t = cat.create_table(name, ROWS, properties={"format-version": "2"})
    with t.update_spec() as u:
        u.add_field("p", "identity")
    return cat.load_table(name)


# ---------------------------------------------------------------- snapshot-loading-mode=refs


@pytest.fixture
def rest(rest_server: RestServer) -> tuple[RestCatalog, RestCatalog]:
    """A catalog loading every snapshot and one loading only those refs point at."""
    warehouse = new_warehouse()
    full = RestCatalog("full", uri=rest_server.url, warehouse=warehouse)
    full.create_namespace("db")
    refs = RestCatalog(
        "refs", uri=rest_server.url, warehouse=warehouse, **{"snapshot-loading-mode": "refs"}
    )
    return full, refs


def _three_appends(full: RestCatalog) -> list[int]:
    t = _partitioned(full)
    for i, p in enumerate("abc"):
        t.append(_rows([i], p))
    return [s.snapshot_id for s in full.load_table("db.t").snapshots()]


@pytest.mark.rest
def test_refs_mode_inspect_sees_every_snapshot(rest: tuple[RestCatalog, RestCatalog]) -> None:
    full, refs = rest
    first, second, _ = _three_appends(full)
    whole = full.load_table("db.t")
    partial = refs.load_table("db.t")
    assert len(partial.metadata.snapshots) == 1  # the server left two out
    assert [s.snapshot_id for s in partial.snapshots()] == [
        s.snapshot_id for s in whole.snapshots()
    ]
    assert refs.load_table("db.t").snapshot_by_id(first) is not None

    assert refs.load_table("db.t").inspect.snapshots() == whole.inspect.snapshots()
    history = refs.load_table("db.t").inspect.history()
    assert history == whole.inspect.history()
    assert history["is_current_ancestor"].to_pylist() == [True, True, True]
    assert history["parent_id"].to_pylist()[1:] == [first, second]

    for name in ("files", "entries", "manifests", "partitions"):
        ours = getattr(refs.load_table("db.t").inspect, name)(snapshot_id=first)
        assert ours == getattr(whole.inspect, name)(snapshot_id=first), name
    # the current snapshot's partitions: each row's last update is a snapshot that exists
    parts = refs.load_table("db.t").inspect.partitions(use_statistics=False)
    assert parts.sort_by("last_updated_snapshot_id") == whole.inspect.partitions(
        use_statistics=False
    ).sort_by("last_updated_snapshot_id")
    assert parts["last_updated_at"].null_count == 0
    # table statistics of a tagged ancestor, past an ancestor the catalog left out (the server
    # leaves out the statistics of snapshots no ref points at)
    full.load_table("db.t").compute_statistics(snapshot_id=first)
    full.load_table("db.t").manage_snapshots().create_tag("t1", first).commit()
    stats = refs.load_table("db.t").inspect.column_statistics()
    assert stats == full.load_table("db.t").inspect.column_statistics()
    assert stats.num_rows == 2 and set(stats["snapshots_behind"].to_pylist()) == {2}


@pytest.mark.rest
def test_refs_mode_manage_snapshots_finds_every_snapshot(
    rest: tuple[RestCatalog, RestCatalog],
) -> None:
    full, refs = rest
    first, second, third = _three_appends(full)
    # snapshots no ref points at
    with refs.load_table("db.t").manage_snapshots() as ms:
        ms.create_tag("t1", first)
        ms.create_branch("b1", first)
    assert {n: r.snapshot_id for n, r in full.load_table("db.t").refs().items()} == {
        "main": third,
        "t1": first,
        "b1": first,
    }
    # a loaded snapshot, but main's ancestry between them was left out
    t = refs.load_table("db.t")
    assert [s.snapshot_id for s in t.metadata.ancestors_of(third)] == [third]
    with t.manage_snapshots() as ms:
        ms.rollback_to(first)
    assert _head(full.load_table("db.t")).snapshot_id == first
    with refs.load_table("db.t").manage_snapshots() as ms:
        ms.set_current_snapshot(third)  # no ref points at it now
    second_ms = full.load_table("db.t").metadata.snapshot(second).timestamp_ms
    with refs.load_table("db.t").manage_snapshots() as ms:
        ms.rollback_to_time(second_ms + 1)
    t = full.load_table("db.t")
    assert _head(t).snapshot_id == second
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [0, 1]
    with refs.load_table("db.t").manage_snapshots() as ms:
        ms.set_current_snapshot(third)
        ms.fast_forward("b1", "main")  # b1 is an ancestor of main, past a left-out snapshot
    assert full.load_table("db.t").refs()["b1"].snapshot_id == third


@pytest.mark.rest
def test_refs_mode_cherry_pick(rest: tuple[RestCatalog, RestCatalog]) -> None:
    full, refs = rest
    first, _, _ = _three_appends(full)
    t = full.load_table("db.t")
    with t.manage_snapshots() as ms:
        ms.create_branch("staged", first)
    t.append(_rows([9], "z"), branch="staged")
    picked = full.load_table("db.t").refs()["staged"].snapshot_id
    with full.load_table("db.t").manage_snapshots() as ms:
        ms.remove_branch("staged")  # no ref points at the staged snapshot any more

    with refs.load_table("db.t").manage_snapshots() as ms:
        ms.cherry_pick(picked)
    assert sorted(full.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [0, 1, 2, 9]
    refs.load_table("db.t").append(_rows([10]))
    with full.load_table("db.t").manage_snapshots() as ms:
        ms.create_tag("again", picked)
    # the picked snapshot is loaded (a tag), the snapshot that picked it (main's parent) is not
    t = refs.load_table("db.t")
    assert t.snapshot_by_id(picked) is not None
    assert len(t.metadata.ancestors_of(_head(t).snapshot_id)) == 1
    with (
        pytest.raises(ValidationError, match="already in main's history"),
        t.manage_snapshots() as ms,
    ):
        ms.cherry_pick(picked)


# ---------------------------------------------------------------- partitions' last update


def test_partitions_last_update_skips_expired_snapshots(tmp_path: Path) -> None:
    cat = _hadoop(tmp_path)
    t = _partitioned(cat)
    t.append(_rows([1], "a"))
    s1 = _head(t).snapshot_id
    t.append(_rows([2], "a"))
    s2 = _head(t).snapshot_id
    t.append(_rows([3], "b"))
    t.append(_rows([4], "c"))
    t.expire_snapshots(snapshot_ids=[s1, s2])
    t = cat.load_table("db.t")
    kept = {s.snapshot_id: s.timestamp_ms for s in t.snapshots()}
    rows = {r["partition"]["p"]: r for r in t.inspect.partitions(use_statistics=False).to_pylist()}
    # p=a: both files live, neither snapshot kept: counted, with no last update
    assert rows["a"]["file_count"] == 2 and rows["a"]["record_count"] == 2
    assert rows["a"]["last_updated_snapshot_id"] is None
    assert rows["a"]["last_updated_at"] is None
    for p in "bc":
        sid = rows[p]["last_updated_snapshot_id"]
        assert sid in kept
        assert rows[p]["last_updated_at"].timestamp() * 1000 == kept[sid]


def test_partitions_last_update_is_the_newest_kept_commit(tmp_path: Path) -> None:
    cat = _hadoop(tmp_path)
    t = _partitioned(cat)
    t.append(_rows([1], "a"))
    s1 = _head(t)
    t.append(_rows([2], "a"))
    s2 = _head(t).snapshot_id
    t.append(_rows([3], "b"))
    t.expire_snapshots(snapshot_ids=[s2])  # the newer file of p=a stays live
    t = cat.load_table("db.t")
    assert t.snapshot_by_id(s1.snapshot_id) is not None
    (row,) = [
        r
        for r in t.inspect.partitions(use_statistics=False).to_pylist()
        if r["partition"] == {"p": "a"}
    ]
    assert row["file_count"] == 2
    assert row["last_updated_snapshot_id"] == s1.snapshot_id
    assert row["last_updated_at"].timestamp() * 1000 == s1.timestamp_ms


# ---------------------------------------------------------------- tables without a snapshot


_FILE_TABLES = ("files", "data_files", "delete_files", "entries", "partitions", "manifests")


@pytest.mark.parametrize("version", [1, 2, 3])
def test_no_snapshot_has_every_column(tmp_path: Path, version: int) -> None:
    cat = _hadoop(tmp_path)
    t = cat.create_table("db.t", ROWS, properties={"format-version": str(version)})
    with t.update_spec() as u:
        u.add_field("p", "identity")
    with t.update_spec() as u:
        u.add_field("id", "bucket[4]")
    t = cat.load_table("db.t")
    empty = {n: getattr(t.inspect, n)() for n in _FILE_TABLES}
    t.append(_rows([1, 2], "a"))
    t.delete("id = 1")
    t = cat.load_table("db.t")
    for n in _FILE_TABLES:
        full = getattr(t.inspect, n)()
        assert empty[n].num_rows == 0 and (full.num_rows > 0 or n == "delete_files"), n
        assert empty[n].schema == full.schema, (n, empty[n].schema, full.schema)


def test_no_snapshot_unpartitioned(tmp_path: Path) -> None:
    cat = _hadoop(tmp_path)
    t = cat.create_table("db.u", ROWS)
    before = {n: getattr(t.inspect, n)() for n in ("files", "entries", "partitions", "manifests")}
    t.append(_rows([1]))
    t = cat.load_table("db.u")
    for n, empty in before.items():
        assert empty.num_rows == 0
        assert empty.schema == getattr(t.inspect, n)().schema, n


# ---------------------------------------------------------------- a reused partition name


def test_reused_partition_name_gets_a_unique_name(tmp_path: Path) -> None:
    cat = _hadoop(tmp_path)
    t = cat.create_table("db.t", ROWS, properties={"format-version": "2"})
    with t.update_spec() as u:
        u.add_field("id", "bucket[4]", "part")
    t.append(_rows([1], "abc"))
    with t.update_spec() as u:
        u.remove_field("part")
    with t.update_spec() as u:
        u.add_field("p", "truncate[1]", "part")
    t.append(_rows([2], "xyz"))
    t = cat.load_table("db.t")
    old, new = (
        f.field_id for s in sorted(t.specs().values(), key=lambda s: s.spec_id) for f in s.fields
    )
    parts = t.inspect.partitions(use_statistics=False)
    ptype = parts.schema.field("partition").type
    assert [(f.name, f.metadata[b"PARQUET:field_id"]) for f in ptype] == [
        (f"part_{old}", str(old).encode()),
        ("part", str(new).encode()),
    ]
    assert sorted(
        (r["partition"][f"part_{old}"] is None, r["partition"]["part"]) for r in parts.to_pylist()
    ) == [(False, None), (True, "x")]
    for name in ("files", "entries"):
        assert len(getattr(t.inspect, name)().to_pylist()) == 2


# ---------------------------------------------------------------- snapshot ids


@pytest.mark.parametrize("name", ["files", "entries", "partitions", "manifests", "data_files"])
def test_unknown_snapshot_id_is_no_such_snapshot(tmp_path: Path, name: str) -> None:
    cat = _hadoop(tmp_path)
    t = _partitioned(cat)
    t.append(_rows([1]))
    with pytest.raises(NoSuchSnapshotError, match="123"):
        getattr(t.inspect, name)(snapshot_id=123)
    for bad in ("123", True, 1.5):
        with pytest.raises(ValidationError, match="snapshot_id must be an integer"):
            getattr(t.inspect, name)(snapshot_id=bad)


def test_a_ref_that_is_not_a_name_is_a_validation_error(tmp_path: Path) -> None:
    cat = _hadoop(tmp_path)
    t = _partitioned(cat)
    t.append(_rows([1]))
    for bad in (["main"], {"main": 1}, 7):
        with pytest.raises(ValidationError, match="ref must be a branch or tag name"):
            t.scan(ref=bad).to_arrow()  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="ref must be a branch or tag name"):
            t.scan().use_ref(bad)  # type: ignore[arg-type]
    assert t.scan(ref="main").to_arrow().num_rows == 1


def test_column_statistics_snapshot_id_checks(tmp_path: Path) -> None:
    cat = _hadoop(tmp_path)
    t = _partitioned(cat)
    t.append(_rows([1]))
    with pytest.raises(NoSuchSnapshotError):
        t.inspect.column_statistics(snapshot_id=123)
    with pytest.raises(ValidationError, match="snapshot_id must be an integer"):
        t.inspect.column_statistics(snapshot_id="123")  # type: ignore[arg-type]


@pytest.mark.rest
def test_refs_mode_incremental_and_changelog_scans_see_every_snapshot(
    rest: tuple[RestCatalog, RestCatalog],
) -> None:
    """A stretch of history needs every snapshot of it: the scans load those the server left
    out, and read what a table loaded whole reads."""
    full, refs = rest
    first, second, third = _three_appends(full)
    whole = full.load_table("db.t")

    def ids(t: pa.Table) -> list[int]:
        return sorted(t.column("id").to_pylist())

    for start, end in ((None, None), (first, None), (first, second), (None, second)):
        expected = ids(whole.incremental_append_scan(start, end).to_arrow())
        assert ids(refs.load_table("db.t").incremental_append_scan(start, end).to_arrow()) == (
            expected
        ), (start, end)
        changes = refs.load_table("db.t").changelog_scan(start, end).to_arrow()
        assert changes.num_rows == whole.changelog_scan(start, end).to_arrow().num_rows
    assert ids(refs.load_table("db.t").incremental_append_scan().to_arrow()) == [0, 1, 2]
    assert third == whole.current_snapshot().snapshot_id
