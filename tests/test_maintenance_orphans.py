"""remove_orphan_files: only unreachable, old enough files go; the table still reads the same."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import NotFoundError, ValidationError
from icefloe.io import FileIO
from icefloe.table.orphan_files import reachable_files, remove_orphan_files
from support.manifest_tables import make_table


def _age(path: Path, days: float) -> None:
    t = time.time() - days * 86400
    os.utime(path, (t, t))


def _all_files(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("version", [1, 2])
def test_orphans_listed_then_removed(tmp_path: Path, version: int) -> None:
    ptable = make_table(tmp_path, version, "identity", appends=3)
    if version == 2:
        ptable.delete("id < 5")
        ptable = ptable.catalog.load_table(ptable.name())
    expected_rows = ptable.scan().to_arrow().num_rows
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/cat.db", warehouse=f"file://{tmp_path}/wh")
    table = cat.load_table(".".join(ptable.name()))
    root = Path(table.location.removeprefix("file://"))
    before = _all_files(root)
    # our reachable set equals the one PyIceberg's inspect tables describe
    reach = {
        p.removeprefix("file://")
        for p in reachable_files(FileIO(), table.metadata, table.metadata_location).to_pylist()
    }
    oracle = {
        *ptable.inspect.all_manifests().column("path").to_pylist(),
        *ptable.inspect.all_files().column("file_path").to_pylist(),
        *(s.manifest_list for s in ptable.metadata.snapshots),
        *(e.metadata_file for e in ptable.metadata.metadata_log),
        ptable.metadata_location,
    }
    hint = str(root / "metadata" / "version-hint.text")
    assert reach - {hint} == {p.removeprefix("file://") for p in oracle}
    # PyIceberg leaves the manifests it merged away behind: those are orphans already
    stale = before - reach
    orphan_data = root / "data" / "name=n1" / "orphan.parquet"
    orphan_meta = root / "metadata" / "stray-m0.avro"
    young = root / "data" / "young.parquet"
    for p in (orphan_data, orphan_meta, young):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x")
    for p in (*(Path(x) for x in before), orphan_data, orphan_meta):
        _age(p, 10)

    listed = remove_orphan_files(FileIO(), table.metadata, table.metadata_location, dry_run=True)
    assert [p.removeprefix("file://") for p in listed] == sorted(
        [str(orphan_data), str(orphan_meta), *stale]
    )
    assert orphan_data.exists() and orphan_meta.exists()

    # a threshold before the orphans' mtime keeps them
    assert (
        remove_orphan_files(
            FileIO(), table.metadata, table.metadata_location, older_than=timedelta(days=20)
        )
        == []
    )
    removed = remove_orphan_files(FileIO(), table.metadata, table.metadata_location)
    assert len(removed) == 2 + len(stale)
    assert not orphan_data.exists() and not orphan_meta.exists() and young.exists()
    assert _all_files(root) == (before - stale) | {str(young)}
    # the young file goes with an explicit recent threshold
    removed = remove_orphan_files(
        FileIO(),
        table.metadata,
        table.metadata_location,
        older_than=datetime.now() + timedelta(minutes=1),
    )
    assert [p.removeprefix("file://") for p in removed] == [str(young)]
    assert ptable.catalog.load_table(ptable.name()).scan().to_arrow().num_rows == expected_rows
    cat.close()


def test_bad_threshold(tmp_path: Path) -> None:
    ptable = make_table(tmp_path, 2, "unpartitioned", appends=1)
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/cat.db", warehouse=f"file://{tmp_path}/wh")
    table = cat.load_table(".".join(ptable.name()))
    with pytest.raises(ValidationError, match="older_than"):
        remove_orphan_files(FileIO(), table.metadata, table.metadata_location, older_than="soon")  # type: ignore[arg-type]
    cat.close()


def test_registered_statistics_kept_replaced_ones_removed(tmp_path: Path) -> None:
    import pyarrow as pa

    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/s.db", warehouse=f"file://{tmp_path}/wh")
    cat.create_namespace("ns")
    t = cat.create_table("ns.s", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": pa.array([1, 2, 2], pa.int64())}))
    replaced = t.compute_statistics()
    kept = t.compute_statistics()  # same snapshot: replaces the first file
    root = Path(t.location.removeprefix("file://"))
    for p in root.rglob("*"):
        _age(p, 5)
    removed = t.remove_orphan_files(older_than=timedelta(days=1))
    assert [Path(p.removeprefix("file://")) for p in removed] == [
        Path(replaced.statistics_path.removeprefix("file://"))
    ]
    assert Path(kept.statistics_path.removeprefix("file://")).exists()
    assert t.statistics() == {"id": 2}


def test_partition_statistics_kept_unregistered_ones_removed(tmp_path: Path) -> None:
    from support.write_util import SCHEMA, SPEC, catalog, rows

    t = catalog(tmp_path).create_table("ns.p", SCHEMA, partition_spec=SPEC)
    t.append(rows(0, 20))
    dropped = t.compute_partition_statistics(incremental=False)
    assert dropped is not None
    with t.transaction() as tx:
        tx.remove_partition_statistics(dropped.snapshot_id)
    kept = t.compute_partition_statistics(incremental=False)
    assert kept is not None and kept.statistics_path != dropped.statistics_path
    root = Path(t.location.removeprefix("file://"))
    for p in root.rglob("*"):
        _age(p, 5)
    removed = t.remove_orphan_files(older_than=timedelta(days=1))
    assert [Path(p.removeprefix("file://")) for p in removed] == [
        Path(dropped.statistics_path.removeprefix("file://"))
    ]
    assert Path(kept.statistics_path.removeprefix("file://")).exists()
    assert t.partition_statistics() is not None


def test_a_location_outside_the_table_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``location`` may narrow the listing to a directory of the table, never widen it: the
    warehouse root holds the catalog's database and other tables, a directory elsewhere
    someone else's files; nothing is listed or deleted there."""
    ptable = make_table(tmp_path, 2, "unpartitioned", appends=1)
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/cat.db", warehouse=f"file://{tmp_path}/wh")
    table = cat.load_table(".".join(ptable.name()))
    root = Path(table.location.removeprefix("file://"))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    precious = outside / "precious.txt"
    precious.write_bytes(b"x")
    _age(precious, 10)
    elsewhere = f"s3://another-bucket{root}"  # the same path in another bucket
    for where in (
        str(outside),
        f"file:{outside}",
        f"file://{tmp_path}/wh",
        f"{root}-other",
        str(tmp_path),
        elsewhere,
    ):
        with pytest.raises(ValidationError, match="outside the table"):
            remove_orphan_files(FileIO(), table.metadata, table.metadata_location, location=where)
    # through the table's own directory, with `..`, or a link in its data directory
    for where in (f"{root}/data/../../../../elsewhere", f"file://{root}/./data"):
        with pytest.raises(ValidationError, match=r"'\.\.'|'\.'"):
            remove_orphan_files(FileIO(), table.metadata, table.metadata_location, location=where)
    (root / "data").mkdir(exist_ok=True)
    (root / "data" / "link").symlink_to(outside, target_is_directory=True)
    removed = remove_orphan_files(FileIO(), table.metadata, table.metadata_location)
    assert not any("precious" in p for p in removed)
    assert precious.exists() and (tmp_path / "cat.db").exists()
    (root / "data" / "link").unlink()
    stray = root / "data" / "stray.parquet"
    stray.write_bytes(b"x")
    _age(stray, 10)
    monkeypatch.chdir(tmp_path)
    relative = os.path.relpath(root / "data", tmp_path)
    # inside the table: allowed (a relative path from the working directory too, and the
    # file:/x form Iceberg Java writes locations in)
    for where in (
        f"file://{root}/data/",
        f"file:{root}/data",
        str(root),
        relative,
        f"./{relative}",
    ):
        got = remove_orphan_files(
            FileIO(), table.metadata, table.metadata_location, location=where, dry_run=True
        )
        assert [p.removeprefix("file://").removeprefix("file:") for p in got] == [str(stray)]
    cat.close()


def _sql_table(tmp_path: Path):  # type: ignore[no-untyped-def]
    import pyarrow as pa

    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    cat.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    return cat.create_table("db.t", schema), schema


def test_files_only_expired_snapshots_read_are_orphans(tmp_path: Path) -> None:
    # an expiration that did not delete its files (killed after its commit, or
    # delete_files=False) leaves them to orphan removal, though the current manifests still
    # record their removal (DELETED entries)
    import pyarrow as pa

    t, schema = _sql_table(tmp_path)
    for i in range(3):
        t.overwrite(pa.table({"id": [i]}, schema=schema))
    t.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1, delete_files=False)
    root = tmp_path / "wh" / "db" / "t"
    assert len(list(root.rglob("*.parquet"))) == 3
    removed = t.remove_orphan_files(older_than=int(time.time() * 1000) + 1)
    assert len([r for r in removed if r.endswith(".parquet")]) == 2
    assert len(list(root.rglob("*.parquet"))) == 1
    assert t.scan().to_arrow().column("id").to_pylist() == [2]


def test_temporary_files_of_killed_writes_are_orphans(tmp_path: Path) -> None:
    t, _ = _sql_table(tmp_path)
    meta = tmp_path / "wh" / "db" / "t" / "metadata"
    leftover = meta / f".00002-x.metadata.json.{'ab' * 16}.tmp"
    marker = meta / ".keep"  # other hidden files are never a table's
    for p in (leftover, marker):
        p.write_bytes(b"x")
        _age(p, 4)
    removed = t.remove_orphan_files()
    assert [r.removeprefix("file://") for r in removed] == [str(leftover)]
    assert marker.exists()


def test_a_file_not_named_in_utf8_is_an_orphan(tmp_path: Path) -> None:
    """A file whose name is not UTF-8 in the data directory made orphan removal (a dry run
    too) fail with a bare UnicodeEncodeError, so no orphan of the table could be listed or
    removed. No metadata names such a file: it is listed as Python lists it (surrogate
    escaped) and deleted by its bytes, with the other orphans."""
    import pyarrow as pa

    t, schema = _sql_table(tmp_path)
    t.append(pa.table({"id": [1]}, schema=schema))
    data = bytes(tmp_path / "wh" / "db" / "t" / "data")
    odd, plain = data + b"/junk\xff.parquet", data + b"/junk.parquet"
    for p in (odd, plain):
        with open(p, "wb") as f:
            f.write(b"x")
        _age(Path(os.fsdecode(p)), 4)
    listed = t.remove_orphan_files(dry_run=True)
    expected = sorted(map(os.fsdecode, [odd, plain]))
    assert sorted(r.removeprefix("file://") for r in listed) == expected
    removed = t.remove_orphan_files()
    assert removed == listed
    assert sorted(n for n in os.listdir(data) if n.startswith(b"junk")) == []
    assert t.scan().to_arrow().num_rows == 1


def test_hidden_paths_of_other_jobs_are_kept(tmp_path: Path) -> None:
    """As the reference's hidden-path filter: files named ``_x``/``.x`` or below such a
    directory (another engine's ``_temporary/`` job output, ``_SUCCESS`` markers) are never a
    table's orphans; only the partition directories of fields named ``_x`` are not hidden."""
    import pyarrow as pa

    from icefloe.partitioning import PartitionField, PartitionSpec
    from icefloe.transforms import parse_transform

    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    cat.create_namespace("db")
    schema = pa.schema([pa.field("_p", pa.int64()), pa.field("id", pa.int64())])
    spec = PartitionSpec(PartitionField(1, 1000, parse_transform("identity"), "_p"))
    t = cat.create_table("db.t", schema, partition_spec=spec)
    t.append(pa.table({"_p": [1, 2], "id": [1, 2]}, schema=schema))
    data = tmp_path / "wh" / "db" / "t" / "data"
    hex32 = "ab" * 16
    kept = [
        data / "_temporary" / "0" / "part-0.parquet",
        data / ".staging" / "part-1.parquet",
        data / "_SUCCESS",
        data / "_p=1" / "_SUCCESS",
        data / "_temporary" / f".part-2.parquet.{hex32}.tmp",
        data / "_p=1" / "_c=3" / "part-3.parquet",
    ]
    removed_expected = [
        data / "_p=1" / "orphan.parquet",
        data / "x" / "orphan.parquet",
        data / "_p=2" / f".part-4.parquet.{hex32}.tmp",
    ]
    for p in kept + removed_expected:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x")
        _age(p, 4)
    rows = t.scan().to_arrow().num_rows
    removed = t.remove_orphan_files()
    assert sorted(r.removeprefix("file://") for r in removed) == sorted(
        str(p) for p in removed_expected
    )
    assert all(p.exists() for p in kept)
    assert t.scan().to_arrow().num_rows == rows == 2


def test_a_naive_cutoff_is_utc_whatever_the_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    """``older_than`` as a naive datetime means UTC, as in ``scan(as_of=...)``,
    ``expire_snapshots`` and the CLI: read as local time west of UTC, a cutoff of an hour ago
    fell hours in the future and deleted files being written."""
    from datetime import timezone

    from icefloe.table.orphan_files import _threshold_ms

    monkeypatch.setenv("TZ", "America/St_Johns")
    time.tzset()
    try:
        naive = datetime(2026, 1, 1, 12, 0)
        utc_ms = int(naive.replace(tzinfo=timezone.utc).timestamp() * 1000)
        assert _threshold_ms(naive) == utc_ms
        assert _threshold_ms(naive.replace(tzinfo=timezone.utc)) == utc_ms
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_failed_delete_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Orphan removal whose deletes fail raises (it does not report the files as deleted)."""
    from icefloe.exceptions import FileIOError

    t, _ = _sql_table(tmp_path)
    stray = Path(t.location.removeprefix("file://")) / "data" / "stray.parquet"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"x")

    def refuse(self: FileIO, location: str) -> None:
        raise FileIOError(f"cannot delete {location}: access denied")

    monkeypatch.setattr(FileIO, "delete", refuse)
    with pytest.raises(FileIOError, match="access denied"):
        t.remove_orphan_files(older_than=int(time.time() * 1000) + 1)
    assert stray.exists()


def test_a_table_sharing_the_location_is_never_deleted(tmp_path: Path) -> None:
    """A table renamed and another created under its old name share one directory: orphan
    removal of either is refused (the other's metadata sits in its metadata directory), and
    both still read their rows."""
    import pyarrow as pa

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64())])
    old = cat.create_table("db.t", schema)
    old.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    cat.rename_table("db.t", "db.t_old")
    new = cat.create_table("db.t", schema)
    new.append(pa.table({"id": pa.array([9], pa.int64())}))
    assert new.location == cat.load_table("db.t_old").location
    future = datetime.now() + timedelta(days=1)
    for name in ("db.t", "db.t_old"):
        with pytest.raises(ValidationError, match="another table"):
            cat.load_table(name).remove_orphan_files(older_than=future)
    assert sorted(cat.load_table("db.t_old").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    assert cat.load_table("db.t").scan().to_arrow()["id"].to_pylist() == [9]


def test_old_metadata_versions_are_read_for_their_uuid_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old metadata versions of a table with many commits (past the metadata log) are
    orphans; checking that each is this table's read only its ``table-uuid``. Parsing each
    whole (every snapshot it lists) made a dry run quadratic in the number of commits:
    15 seconds at 1,200 commits. A version of another table is still refused."""
    import pyarrow as pa

    from icefloe.metadata import Snapshot, TableMetadata

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    table = cat.create_table(
        "db.t",
        pa.schema([pa.field("id", pa.int64())]),
        properties={"write.metadata.previous-versions-max": "3"},
    )
    for i in range(40):
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
    built: list[int] = []
    real = Snapshot.from_json
    monkeypatch.setattr(Snapshot, "from_json", staticmethod(lambda *a: built.append(1) or real(*a)))
    future = datetime.now() + timedelta(days=1)
    found = table.remove_orphan_files(older_than=future, dry_run=True)
    assert sum(f.endswith(".metadata.json") for f in found) >= 30
    assert len(built) <= 41  # at most the current version's snapshots, never each old one's

    metadata_dir = Path(table.metadata_location.removeprefix("file://")).parent
    other = TableMetadata.parse(Path(table.metadata_location.removeprefix("file://")).read_bytes())
    stranger = other.dumps().replace(other.table_uuid, "00000000-0000-4000-8000-000000000001")
    (metadata_dir / "99999-stranger.metadata.json").write_text(stranger)
    with pytest.raises(ValidationError, match="another table"):
        table.remove_orphan_files(older_than=future, dry_run=True)


def test_orphans_left_in_the_default_data_directory_after_the_data_path_moved(
    tmp_path: Path,
) -> None:
    """After ``write.data.path`` moved to another directory of the table, the orphans in the
    old ``data/`` directory (which still holds live files) were never listed; Java lists the
    whole table location. Live files there stay."""
    import pyarrow as pa

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    t.set_properties({"write.data.path": "custom"})
    t.append(pa.table({"id": pa.array([2], pa.int64())}))
    old_data = Path(t.location.removeprefix("file://")) / "data"
    stray = old_data / "stray.parquet"
    stray.write_bytes(b"x")
    future = datetime.now() + timedelta(days=1)
    found = t.remove_orphan_files(older_than=future, dry_run=True)
    assert [f for f in found if f.endswith(".parquet")] == [stray.as_uri()]
    t.remove_orphan_files(older_than=future)
    assert not stray.exists() and any(old_data.iterdir())
    assert sorted(cat.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 2]


def test_a_location_that_does_not_exist_is_not_found(tmp_path: Path) -> None:
    """Nothing listed because the location does not exist returned no orphans, as if the
    storage had been looked at and found clean: it raises NotFoundError naming the location
    (an existing directory holding nothing orphaned still gives [])."""
    import dataclasses

    table, _ = _sql_table(tmp_path)
    nope = f"{table.location}/data/nope"
    for dry_run in (True, False):
        with pytest.raises(NotFoundError, match=f"location {nope} does not exist$"):
            table.remove_orphan_files(location=nope, dry_run=dry_run)
    gone = (tmp_path / "nowhere").as_uri()
    moved = dataclasses.replace(table.metadata, location=gone)
    with pytest.raises(NotFoundError, match=f"the table's location {gone} does not exist"):
        remove_orphan_files(FileIO(), moved, table.metadata_location, dry_run=True)
    # metadata and data written outside the table location (which was never made): nothing
    # says files belong there, so there is nothing to look for
    elsewhere = {
        "write.metadata.path": str(tmp_path / "meta"),
        "write.data.path": str(tmp_path / "data"),
    }
    outside = dataclasses.replace(
        table.metadata, location=gone, properties={**table.metadata.properties, **elsewhere}
    )
    assert remove_orphan_files(FileIO(), outside, table.metadata_location, dry_run=True) == []
    assert table.remove_orphan_files(dry_run=True) == []
    assert table.remove_orphan_files(location=f"{table.location}/metadata", dry_run=True) == []
