"""Delta logs at the edges of the protocol: a commit that adds live files again without
removing them, column mapping set in the configuration but not enabled by the protocol, a
row-id high-water mark of 0, and malformed actions."""

from __future__ import annotations

import datetime
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import icefloe.delta
from icefloe.exceptions import DeltaLogError, NotIcebergCompatibleError
from support.delta import FIXTURES

BASIC = FIXTURES / "basic" / "table"


def _copy(tmp_path: Path) -> Path:
    d = tmp_path / "delta"
    shutil.copytree(BASIC, d)
    return d


def _append_commit(d: Path, actions: list[dict[str, object]]) -> None:
    log = d / "_delta_log"
    version = max(int(p.stem) for p in log.glob("*.json")) + 1
    with open(log / f"{version:020d}.json", "w") as f:
        for a in actions:
            f.write(json.dumps(a) + "\n")


def test_a_commit_adding_live_files_again_changes_nothing(tmp_path: Path) -> None:
    """Delta's statistics recompute and row-tracking backfill add live files again with
    ``dataChange=false`` and no remove; the newest add replaces the earlier one. The sync
    listed every file twice (a table PyIceberg and DuckDB read doubled)."""
    d = _copy(tmp_path)
    first = icefloe.delta.convert(str(d))
    rows = first.table.scan().to_arrow().sort_by("id")
    live = set(icefloe.delta.DeltaLog(str(d)).snapshot().files.column("path").to_pylist())
    adds = []
    for p in sorted((d / "_delta_log").glob("*.json")):
        for line in p.read_text().splitlines():
            a = json.loads(line)
            if "add" in a and a["add"]["path"] in live:
                adds.append({"add": dict(a["add"], dataChange=False)})
    _append_commit(d, [{"commitInfo": {"operation": "COMPUTE STATS"}}, *adds])
    again = icefloe.delta.convert(str(d))
    assert again.mode == "incremental"
    assert again.table.scan().to_arrow().sort_by("id") == rows
    paths = again.table.inspect.data_files().column("file_path").to_pylist()
    assert len(paths) == len(set(paths)) == len(live)


def test_column_mapping_the_protocol_does_not_enable_is_refused_even_unchecked(
    tmp_path: Path,
) -> None:
    """delta-rs keeps ``delta.columnMapping.mode=name`` in the configuration of a protocol
    without the feature: Delta readers ignore it (files use logical names), so reading by the
    physical names gave every partition value as null."""
    deltalake = pytest.importorskip("deltalake")
    d = tmp_path / "ntz"
    t = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "s": ["a", "b", "c"],
            "ntz": pa.array([datetime.datetime(2022, 2, 2, 1, 2, 3)] * 3, pa.timestamp("us")),
        }
    )
    deltalake.write_deltalake(
        str(d), t, partition_by=["s"], configuration={"delta.columnMapping.mode": "name"}
    )
    snap = icefloe.delta.DeltaLog(str(d)).snapshot()
    assert "columnMapping" not in snap.protocol.reader_features
    with pytest.raises(NotIcebergCompatibleError, match="does not enable column mapping"):
        icefloe.delta.convert(str(d), check=False)


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ({"add": None}, "add action without a file path"),
        ({"add": {"size": 1}}, "add action without a file path"),
        ({"remove": {"path": ""}}, "remove action without a file path"),
        ({"commitInfo": "x"}, "commitInfo is not an object"),
        ({"domainMetadata": {"configuration": "{}"}}, "domainMetadata action without"),
    ],
)
def test_malformed_actions_are_delta_log_errors(
    tmp_path: Path, line: dict[str, object], what: str
) -> None:
    d = _copy(tmp_path)
    _append_commit(d, [{"commitInfo": {"operation": "WRITE"}}, line])
    with pytest.raises(DeltaLogError, match=what):
        icefloe.delta.DeltaLog(str(d)).snapshot()
    with pytest.raises(DeltaLogError, match=what):
        icefloe.delta.convert(str(d))


def test_a_high_water_mark_of_zero_is_recorded(tmp_path: Path) -> None:
    """The first row ever written has row id 0, so the first high-water mark is 0: it was
    read as no mark and the sync state lost it."""
    import pyarrow.parquet as pq

    from support.delta import DeltaTableWriter, add, commit_info, row_tracking

    root = tmp_path / "hwm0"
    w = DeltaTableWriter(root)
    w.create()
    rows = pa.table(
        {
            "col-id": pa.array([100], pa.int64()),
            "col-name": ["n"],
            "col-part": pa.array([0], pa.int32()),
        }
    )
    pq.write_table(rows, root / "a.parquet")
    w.commit(
        1,
        commit_info(op="WRITE"),
        add("a.parquet", 1, base_row_id=0, version=1),
        row_tracking(0),
    )
    icefloe.delta.convert(str(root), up_to_version=0)
    r = icefloe.delta.convert(str(root), up_to_version=1)
    assert r.mode == "incremental"
    assert r.table.properties.get("delta-high-water-mark") == "0"
    assert r.table.metadata.next_row_id == 1
