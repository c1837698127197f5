"""``write.delete.granularity`` on v2 merge-on-read deletes: ``file`` (the default, as Spark
with Iceberg Java writes) gives one position delete file per data file, each merged with and
superseding the file-scoped deletes before it; ``partition`` gives one file per partition,
kept alongside the older ones. Both read the same in icefloe, PyIceberg 0.12 and DuckDB."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import icefloe.write.delete_files as delete_files
from icefloe.exceptions import ValidationError
from icefloe.partitioning import PartitionSpec
from support.rowlevel_util import live_data_files, live_deletes, ours
from support.write_util import SCHEMA, catalog, checksum, duckdb_checksum, pyiceberg_read, rows

MOR = {"format-version": "2", "write.delete.mode": "merge-on-read"}


def _table(tmp_path: Path, **props: str) -> Any:
    """An unpartitioned v2 table of three data files (ids 0-299, 100 per file)."""
    t = catalog(tmp_path).create_table(
        "ns.t", SCHEMA, partition_spec=PartitionSpec(), properties={**MOR, **props}
    )
    for start in (0, 100, 200):
        t.append(rows(start, 100))
    return t


def _without(ids: list[int]) -> pa.Table:
    data = rows(0, 300)
    return data.filter(pc.invert(pc.is_in(data["id"], value_set=pa.array(ids, pa.int64()))))


def _check_peers(t: Any, deleted: list[int], duckdb_con: Any) -> None:
    want = checksum(_without(deleted))
    assert checksum(ours(t)) == want
    assert checksum(pyiceberg_read(t)) == want
    assert duckdb_checksum(duckdb_con, t) == want


def _named_paths(location: str) -> set[str]:
    table = pq.read_table(location.removeprefix("file://"), columns=["file_path"])
    return set(table.column(0).to_pylist())


def test_file_granularity_is_the_default_and_supersedes(tmp_path: Path, duckdb_con: Any) -> None:
    t = _table(tmp_path)
    t.delete("id in (1, 2, 150, 250, 299)")
    dels = live_deletes(t)
    refs = dels.column("referenced_data_file").to_pylist()
    assert dels.num_rows == 3 and sorted(refs) == sorted(live_data_files(t))
    for path, ref in zip(dels.column("file_path").to_pylist(), refs, strict=True):
        assert _named_paths(path) == {ref}
    assert sorted(dels.column("record_count").to_pylist()) == [1, 2, 2]
    _check_peers(t, [1, 2, 150, 250, 299], duckdb_con)

    # a second delete touching two of the files: their files are replaced by merged ones
    first = set(dels.column("file_path").to_pylist())
    t.delete("id in (3, 151)")
    summary = t.current_snapshot().summary
    assert summary.get_int("removed-delete-files") == 2
    assert summary.get_int("added-delete-files") == 2
    dels = live_deletes(t)
    assert dels.num_rows == 3
    assert len(set(dels.column("referenced_data_file").to_pylist())) == 3
    assert len(first & set(dels.column("file_path").to_pylist())) == 1  # the untouched one
    assert sorted(dels.column("record_count").to_pylist()) == [2, 2, 3]
    _check_peers(t, [1, 2, 3, 150, 151, 250, 299], duckdb_con)


def test_partition_granularity_keeps_one_file_per_partition(
    tmp_path: Path, duckdb_con: Any
) -> None:
    t = _table(tmp_path, **{"write.delete.granularity": "partition"})
    t.delete("id in (1, 150, 250)")
    dels = live_deletes(t)
    assert dels.num_rows == 1 and dels.column("referenced_data_file").to_pylist() == [None]
    assert len(_named_paths(dels.column("file_path")[0].as_py())) == 3
    t.delete("id in (2, 151)")
    assert live_deletes(t).num_rows == 2  # older deletes stay
    _check_peers(t, [1, 2, 150, 151, 250], duckdb_con)

    # switching to file granularity: new files merge only the file-scoped deletes; the
    # partition-scoped ones stay and readers union them
    t.set_properties({"write.delete.granularity": "file"})
    t.delete("id in (4, 152)")
    dels = live_deletes(t)
    scoped = [r for r in dels.column("referenced_data_file").to_pylist() if r is not None]
    assert len(scoped) == 2 and dels.num_rows == 4
    assert t.current_snapshot().summary.get_int("removed-delete-files") in (None, 0)
    t.delete("id in (5, 153)")  # now the file-scoped ones are superseded
    assert t.current_snapshot().summary.get_int("removed-delete-files") == 2
    assert live_deletes(t).num_rows == 4
    _check_peers(t, [1, 2, 4, 5, 150, 151, 152, 153, 250], duckdb_con)


def test_bad_granularity_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"write\.delete\.granularity"):
        _table(tmp_path, **{"write.delete.granularity": "row"})


def test_failed_file_write_leaves_no_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path)
    head = t.current_snapshot().snapshot_id
    data_dir = tmp_path / "wh"
    before = {p for p in data_dir.rglob("*") if p.is_file()}
    real = delete_files.write_position_deletes
    calls = 0

    def flaky(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(delete_files, "write_position_deletes", flaky)
    with pytest.raises(OSError, match="disk full"):
        t.delete("id in (1, 150, 250)")
    assert calls >= 2
    t.refresh()
    assert t.current_snapshot().snapshot_id == head
    assert {p for p in data_dir.rglob("*") if p.is_file()} == before
    monkeypatch.undo()
    t.delete("id in (1, 150, 250)")
    assert checksum(ours(t)) == checksum(_without([1, 150, 250]))
