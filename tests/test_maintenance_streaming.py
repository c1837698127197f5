"""Compaction writes a group of files as their rows are read: its memory follows the row-group
size, not the group's size, and a failure part way leaves neither new files nor a new
snapshot."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.rowlevel_util import live_data_files, ours
from support.write_util import catalog

_COLUMNS = 8
_ROWS = 25_000
_FILES = 80

_COMPACT = textwrap.dedent(
    """
    import gc, json, resource, sys
    from icefloe.catalog.sql import SqlCatalog

    directory = sys.argv[1]
    cat = SqlCatalog("c", uri=f"sqlite:///{directory}/c.db", warehouse=sys.argv[2])
    t = cat.load_table("ns.t")
    t.scan(limit=10).to_arrow()  # the read path loaded and warmed up
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = t.rewrite_data_files()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"grown": (after - before) * 1024, "added": result.added_data_files}))
    """
)


def test_compaction_memory_follows_the_row_group_size(tmp_path: Path) -> None:
    """Eighty files of random doubles (128 MB of Arrow data in all) compact into one file
    while the process grows by a fraction of that: before, the group's rows were all read
    before the file was written (2.2 times the data)."""
    cat = catalog(tmp_path)
    rng = np.random.default_rng(7)

    def batch() -> pa.Table:
        return pa.table({f"c{i}": pa.array(rng.random(_ROWS)) for i in range(_COLUMNS)})

    first = batch()
    t = cat.create_table(
        "ns.t", first.schema, properties={"write.parquet.row-group-size-bytes": str(4 << 20)}
    )
    t.append(first)
    for _ in range(_FILES - 1):
        t.append(batch())
    data = _FILES * _ROWS * _COLUMNS * 8
    run = subprocess.run(
        [sys.executable, "-c", _COMPACT, str(tmp_path), (tmp_path / "wh").as_uri()],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    import json

    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["added"] == 1
    assert got["grown"] < data * 0.4, (got["grown"], data)
    t.refresh()
    (path,) = live_data_files(t)
    md = pq.read_metadata(path.removeprefix("file://"))
    assert md.num_rows == _FILES * _ROWS
    assert md.num_row_groups > 10


def test_a_failure_part_way_leaves_no_new_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import icefloe.table.maintenance as maintenance

    t = catalog(tmp_path).create_table(
        "ns.t",
        pa.schema([pa.field("id", pa.int64())]),
        properties={"write.parquet.row-group-size-bytes": "800"},  # a row group per input file
    )
    for i in range(6):
        t.append(pa.table({"id": pa.array(range(i * 100, (i + 1) * 100), pa.int64())}))
    snapshot = t.current_snapshot().snapshot_id
    data = Path(t.metadata.location.removeprefix("file://")) / "data"
    files = {p for p in data.rglob("*") if p.is_file()}
    real = maintenance.surviving_rows
    calls = 0

    def failing(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls == 4:
            raise OSError("the disk went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(maintenance, "surviving_rows", failing)
    with pytest.raises(OSError, match="went away"):
        t.rewrite_data_files()
    assert calls == 4
    assert {p for p in data.rglob("*") if p.is_file()} == files
    assert t.refresh().current_snapshot().snapshot_id == snapshot
    assert ours(t)["id"].to_pylist() == list(range(600))


def test_a_sorted_table_is_still_compacted_in_order(tmp_path: Path) -> None:
    """A sort order orders a group's rows as a whole: such groups are read whole first."""
    t = catalog(tmp_path).create_table("ns.t", pa.schema([pa.field("id", pa.int64())]))
    t.replace_sort_order().asc("id").commit()
    for i in range(5):
        t.append(pa.table({"id": pa.array(range(i, 500, 5), pa.int64())}))
    t.rewrite_data_files()
    (path,) = live_data_files(t)
    ids = pq.read_table(path.removeprefix("file://")).column("id").to_pylist()
    assert ids == list(range(500))


def test_overlapping_position_deletes_do_not_cut_the_output_into_small_files(
    tmp_path: Path,
) -> None:
    """Two position delete files (written by two engines, say) deleting the same half of a
    file: the rows per output file do not follow from subtracting both (which made 77 files of
    100-200 rows where three were planned)."""
    from icefloe.table.producer import SnapshotProducer
    from icefloe.write.delete_files import write_position_deletes

    t = catalog(tmp_path).create_table(
        "ns.t",
        pa.schema([pa.field("id", pa.int64()), pa.field("x", pa.float64())]),
        properties={"format-version": "2", "write.delete.mode": "merge-on-read"},
    )
    n = 30_000
    rng = np.random.default_rng(1)
    t.append(pa.table({"id": pa.array(np.arange(n)), "x": pa.array(rng.random(n))}))
    (f,) = t.inspect.data_files().to_pylist()
    gone = list(range(int(n * 0.49)))
    for j in range(2):
        df = write_position_deletes(
            t.io, f"{t.location}/data/pos-{j}.parquet", {f["file_path"]: gone}, 0, {}
        )
        with t.transaction() as tx:
            SnapshotProducer(tx).add_delete_files([df]).commit()
    result = t.refresh().rewrite_data_files(target_file_size=f["file_size_in_bytes"] // 3)
    counts = sorted(t.refresh().inspect.data_files().column("record_count").to_pylist())
    assert result.added_data_files <= 3
    assert sum(counts) == n - len(gone)
    assert min(counts) >= 5000
    assert ours(t)["id"].to_pylist() == list(range(len(gone), n))


def _half_files(tmp_path: Path, sort: bool) -> tuple[object, int]:
    """A table of three files of about half of the target size each (returned)."""
    t = catalog(tmp_path).create_table("ns.t", pa.schema([pa.field("id", pa.int64())]))
    if sort:
        t.replace_sort_order().asc("id").commit()
    for i in range(3):
        t.append(pa.table({"id": pa.array(range(i * 20_000, (i + 1) * 20_000), pa.int64())}))
    sizes = [f["file_size_in_bytes"] for f in t.inspect.data_files().to_pylist()]
    return t, max(sizes) * 2 + 16


def test_small_files_of_a_partition_make_one_group_as_in_java(tmp_path: Path) -> None:
    """Three files of half the target: Iceberg Java packs them into one group of 1.5 times the
    target and writes it as two files; packing groups to the target size wrote one file and
    left the third file alone, small."""
    t, target = _half_files(tmp_path, sort=False)
    plan = t.plan_rewrite_data_files(target_file_size=target)  # type: ignore[attr-defined]
    assert (plan.groups, plan.data_files) == (1, 3)
    result = t.rewrite_data_files(target_file_size=target)  # type: ignore[attr-defined]
    assert (result.rewritten_data_files, result.added_data_files) == (3, 2)
    counts = sorted(f["record_count"] for f in t.inspect.data_files().to_pylist())  # type: ignore[attr-defined]
    assert counts == [30_000, 30_000]
    assert sorted(ours(t)["id"].to_pylist()) == list(range(60_000))


def test_groups_read_whole_are_still_packed_to_the_target(tmp_path: Path) -> None:
    """A sorted table's groups are sorted as a whole in memory: they stay within the target."""
    t, target = _half_files(tmp_path, sort=True)
    assert t.plan_rewrite_data_files(target_file_size=target).groups == 1  # type: ignore[attr-defined]
    result = t.rewrite_data_files(target_file_size=target)  # type: ignore[attr-defined]
    assert (result.rewritten_data_files, result.added_data_files) == (2, 1)


def test_a_group_that_would_not_make_fewer_files_is_left_alone(tmp_path: Path) -> None:
    """Two files of 0.7 times the target make a group of 1.4 times it, written as two files
    of 0.7 again: every compaction rewrote them and committed a snapshot."""
    t = catalog(tmp_path).create_table("ns.t", pa.schema([pa.field("id", pa.int64())]))
    for i in range(2):
        t.append(pa.table({"id": pa.array(range(i * 20_000, (i + 1) * 20_000), pa.int64())}))
    size = max(f["file_size_in_bytes"] for f in t.inspect.data_files().to_pylist())
    target = int(size / 0.7)
    snapshot = t.current_snapshot().snapshot_id
    assert t.plan_rewrite_data_files(target_file_size=target).groups == 0
    assert t.rewrite_data_files(target_file_size=target).rewritten_data_files == 0
    assert t.current_snapshot().snapshot_id == snapshot
    # with more files than the rewrite makes, the group is rewritten
    t.append(pa.table({"id": pa.array(range(40_000, 41_000), pa.int64())}))
    assert t.rewrite_data_files(target_file_size=target).rewritten_data_files == 3


def test_compacted_files_keep_bloom_filters_sized_for_their_rows(tmp_path: Path) -> None:
    """A streamed group's file was given Bloom filters sized for one value (a few dozen bytes,
    saturated: they pruned nothing); they are sized for a row group's rows, as appends' are."""
    t = catalog(tmp_path).create_table(
        "ns.t",
        pa.schema([pa.field("id", pa.int64())]),
        properties={"write.parquet.bloom-filter-enabled.column.id": "true"},
    )
    for i in range(4):
        t.append(pa.table({"id": pa.array(range(i * 50_000, (i + 1) * 50_000), pa.int64())}))

    def bloom_bytes(path: str) -> int:
        md = pq.read_metadata(path.removeprefix("file://"))
        return sum(
            md.row_group(g).column(0).to_dict().get("bloom_filter_length") or 0
            for g in range(md.num_row_groups)
        )

    appended = [bloom_bytes(p) for p in live_data_files(t)]
    t.rewrite_data_files()
    (compacted,) = [bloom_bytes(p) for p in live_data_files(t)]
    assert compacted >= 3 * min(appended)  # 200,000 rows, where each append had 50,000
