"""overwrite(data, filter) on merge-on-read tables: deletes instead of rewrites.

With ``write.delete.mode=merge-on-read`` the rows an overwrite replaces in files that only
partly match get deletion vectors (v3) or position delete files (v2); files the partition proves
matching are dropped; no surviving row is rewritten. The table must read exactly as the same
overwrite on a copy-on-write table (property test), and as PyIceberg and DuckDB read it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionField, PartitionSpec
from icefloe.transforms import parse_transform
from support.write_util import (
    SCHEMA,
    SPEC,
    catalog,
    checksum,
    duckdb_checksum,
    pyiceberg_read,
    rows,
)

MOR = {"write.delete.mode": "merge-on-read"}
DAY = PartitionSpec(PartitionField(3, 1000, parse_transform("day"), "ts_day"))
SPECS = {"none": UNPARTITIONED_PARTITION_SPEC, "day": DAY, "day+bucket": SPEC}


def _sorted(t: pa.Table) -> pa.Table:
    """Rows in id order, ``x`` as text so NaN compares equal to NaN."""
    t = t.sort_by([("id", "ascending")])
    return t.set_column(3, "x", t["x"].cast(pa.string()))


def _added_rows(table: Any) -> int:
    summary = table.current_snapshot().summary
    return summary.get_int("added-records") or 0


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    n=st.integers(1, 120),
    new=st.integers(0, 20),
    cut=st.integers(0, 130),
    by_time=st.booleans(),
    layout=st.sampled_from(sorted(SPECS)),
    version=st.sampled_from([2, 3]),
)
def test_merge_on_read_overwrite_matches_copy_on_write(
    tmp_path_factory: pytest.TempPathFactory,
    n: int,
    new: int,
    cut: int,
    by_time: bool,
    layout: str,
    version: int,
) -> None:
    cat = catalog(tmp_path_factory.mktemp("mor"))
    spec = SPECS[layout]
    mor = cat.create_table(
        "ns.mor", SCHEMA, partition_spec=spec, format_version=version, properties=MOR
    )
    cow = cat.create_table("ns.cow", SCHEMA, partition_spec=spec, format_version=version)
    data = rows(0, n)
    for t in (mor, cow):
        t.append(data.slice(0, n // 2))
        t.append(data.slice(n // 2))
    if by_time:
        bound = dt.datetime(2024, 1, 1) + dt.timedelta(hours=cut)
        flt = f"ts < '{bound.isoformat()}'"
        keep = pc.greater_equal(data["ts"], pa.scalar(bound, pa.timestamp("us")))
    else:
        flt = f"id < {cut}"
        keep = pc.greater_equal(data["id"], cut)
    replacement = rows(1000, new)
    before = len(mor.snapshots())
    for t in (mor, cow):
        t.overwrite(replacement, flt)
    want = _sorted(pa.concat_tables([data.filter(keep), replacement]))
    assert _sorted(mor.scan().to_arrow()).to_pylist() == want.to_pylist()
    assert _sorted(cow.scan().to_arrow()).to_pylist() == want.to_pylist()
    # one snapshot each, even when there is nothing to replace and no data (as copy-on-write)
    assert len(mor.snapshots()) == before + 1 == len(cow.snapshots())
    assert mor.current_snapshot().summary.operation == "overwrite"
    # nothing rewritten: the only rows added are the replacement's
    assert _added_rows(mor) == new


@pytest.mark.parametrize("version", [2, 3])
def test_merge_on_read_overwrite_reads_alike_in_peers(
    tmp_path: Path, version: int, duckdb_con: Any
) -> None:
    t = catalog(tmp_path).create_table(
        "ns.t", SCHEMA, partition_spec=SPEC, format_version=version, properties=MOR
    )
    t.append(rows(0, 200))
    # files partly matching get deletes, emptied ones are dropped; nothing is rewritten
    t.overwrite(rows(1000, 10), "id < 50")
    summary = t.current_snapshot().summary
    assert summary.get_int("added-delete-files") and summary.get_int("added-records") == 10
    want = pa.concat_tables([rows(50, 150), rows(1000, 10)])
    assert checksum(t.scan().to_arrow()) == checksum(want)
    assert checksum(pyiceberg_read(t)) == checksum(want)
    assert duckdb_checksum(duckdb_con, t) == checksum(want)


def test_merge_on_read_overwrite_drops_whole_partitions_unread(tmp_path: Path) -> None:
    t = catalog(tmp_path).create_table(
        "ns.t", SCHEMA, partition_spec=DAY, format_version=3, properties=MOR
    )
    t.append(rows(0, 72))  # three days of hourly rows
    t.overwrite(rows(1000, 5), "ts < '2024-01-02T00:00:00'")
    summary = t.current_snapshot().summary
    assert summary.get_int("deleted-data-files") == 1
    assert not summary.get_int("added-delete-files")
    assert t.scan().to_arrow().num_rows == 48 + 5


@pytest.mark.parametrize("failing", ["delete", "write"])
def test_merge_on_read_overwrite_failure_leaves_no_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """The new rows are written while the matching rows are found: when either side fails,
    the overwrite raises that error, commits nothing and leaves no new data file behind."""
    import icefloe.table.row_level as row_level

    t = catalog(tmp_path).create_table(
        "ns.t", SCHEMA, partition_spec=DAY, format_version=3, properties=MOR
    )
    t.append(rows(0, 72))
    before = t.current_snapshot().snapshot_id
    files_before = {p for p in tmp_path.rglob("*.parquet")}
    real_delta, real_write = row_level._delete_delta, row_level.write_data_files

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError(f"{failing} failed")

    def slow_delta(*args: Any, **kwargs: Any) -> Any:
        import time

        time.sleep(0.2)  # the write finishes first, so its files exist when this fails
        raise OSError("delete failed")

    if failing == "delete":
        monkeypatch.setattr(row_level, "_delete_delta", slow_delta)
    else:
        monkeypatch.setattr(row_level, "write_data_files", broken)
    with pytest.raises(OSError, match=f"{failing} failed"):
        t.overwrite(rows(1000, 50), "id < 10")
    assert t.refresh().current_snapshot().snapshot_id == before
    assert {p for p in tmp_path.rglob("*.parquet")} == files_before
    monkeypatch.setattr(row_level, "_delete_delta", real_delta)
    monkeypatch.setattr(row_level, "write_data_files", real_write)
    t.overwrite(rows(1000, 5), "id < 10")
    assert t.scan().to_arrow().num_rows == 72 - 10 + 5
