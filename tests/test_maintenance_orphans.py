"""remove_orphan_files: only unreachable, old enough files go; the table still reads the same."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import ValidationError
from icefloe.io import FileIO
from icefloe.table.maintenance import reachable_files, remove_orphan_files
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


def test_a_location_outside_the_table_is_refused(tmp_path: Path) -> None:
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
    for where in (str(outside), f"file://{tmp_path}/wh", f"{root}-other", str(tmp_path), elsewhere):
        with pytest.raises(ValidationError, match="outside the table"):
            remove_orphan_files(FileIO(), table.metadata, table.metadata_location, location=where)
    assert precious.exists() and (tmp_path / "cat.db").exists()
    stray = root / "data" / "stray.parquet"
    stray.write_bytes(b"x")
    _age(stray, 10)
    for where in (f"file://{root}/data/", str(root)):  # inside the table: allowed
        got = remove_orphan_files(
            FileIO(), table.metadata, table.metadata_location, location=where, dry_run=True
        )
        assert [p.removeprefix("file://") for p in got] == [str(stray)]
    cat.close()
