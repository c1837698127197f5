"""``Table.rewrite_manifests``: data manifests regrouped by partition in one ``replace``
snapshot, with every entry's snapshot id, sequence numbers and row ids kept, the data unchanged
for icefloe, PyIceberg and DuckDB, and concurrent commits folded in on retry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from icefloe.catalog.sql import SqlCatalog
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField, StringType
from support.peers import duckdb_connect

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "region", StringType()),
)
REGIONS = ["ap", "eu", "sa", "us"]


def _batch(start: int, n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "region": [REGIONS[(start + i) % len(REGIONS)] for i in range(n)],
        },
        schema=pa.schema([pa.field("id", pa.int64(), nullable=False), ("region", pa.string())]),
    )


def _table(tmp_path: Path, version: int, appends: int = 6) -> tuple[SqlCatalog, Table]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    t = _new_table(cat, version, appends)
    t.delete("id in (0, 7, 21, 49, 77, 105)")
    return cat, t


def _new_table(cat: Any, version: int, appends: int) -> Table:
    """``db.t`` partitioned by region, merge-on-read deletes, one manifest per commit."""
    cat.create_namespace("db")
    spec = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "region"))
    t = cat.create_table(
        "db.t",
        SCHEMA,
        partition_spec=spec,
        format_version=version,
        properties={"write.delete.mode": "merge-on-read", "commit.manifest-merge.enabled": "false"},
    )
    for i in range(appends):
        t.append(_batch(i * 20, 20))
    return t


def _entries(t: Table) -> dict[str, tuple[Any, ...]]:
    e = t.inspect.entries().to_pylist()
    return {
        r["data_file"]["file_path"] + f"@{r['data_file'].get('content_offset')}": (
            r["status"] != 2,
            r["snapshot_id"],
            r["sequence_number"],
            r["file_sequence_number"],
            r["data_file"].get("first_row_id"),
        )
        for r in e
        if r["status"] != 2
    }


def _rows(t: Table, *meta: str) -> pa.Table:
    return t.scan(selected_fields=("*", *meta)).to_arrow().sort_by("id")


def test_regroups_by_partition_and_keeps_every_entry(tmp_path: Path) -> None:
    _, t = _table(tmp_path, 3)
    before_rows = _rows(t, "_row_id", "_last_updated_sequence_number")
    before_entries = _entries(t)
    before = t.inspect.manifests()
    data_before = pc.sum(pc.equal(before.column("content"), 0)).as_py()
    assert data_before == 6
    next_row_id = t.metadata.next_row_id

    # a target a quarter of the manifests' size: four manifests of six entries, one per region
    target = -(-pc.sum(before.column("length")).as_py() // 4)
    plan = t.rewrite_manifests(target_manifest_size=target, dry_run=True)
    assert plan.dry_run and plan.rewritten_manifests == 6
    assert len(t.snapshots()) == 7  # the dry run committed nothing

    result = t.rewrite_manifests(target_manifest_size=target)
    assert result.rewritten_manifests == 6
    assert result.added_manifests == plan.added_manifests == 4
    assert result.entries == 6 * 4
    snap = t.current_snapshot()
    assert snap.operation == "replace"
    assert snap.snapshot_id == result.snapshot_id
    summary = snap.summary.to_json()
    assert summary["manifests-created"] == "4"
    assert summary["manifests-replaced"] == "6"
    assert summary["manifests-kept"] == "1"  # the delete manifest
    assert summary["entries-processed"] == "24"
    assert summary["total-records"] == t.snapshot_by_id(snap.parent_snapshot_id).summary.get(
        "total-records"
    )
    assert t.metadata.next_row_id == next_row_id  # no row ids assigned to existing rows

    after = t.inspect.manifests()
    data = after.filter(pc.equal(after.column("content"), 0)).to_pylist()
    assert len(data) == 4
    ranges = []
    for m in data:
        assert m["added_data_files_count"] == 0 and m["existing_data_files_count"] == 6
        (summ,) = m["partition_summaries"]
        assert summ["lower_bound"] == summ["upper_bound"]  # one region each
        ranges.append(summ["lower_bound"])
    assert len(set(ranges)) == 4
    assert _entries(t) == before_entries
    assert _rows(t, "_row_id", "_last_updated_sequence_number").equals(before_rows)


def test_default_target_merges_into_one_manifest(tmp_path: Path) -> None:
    _, t = _table(tmp_path, 2)
    before = _rows(t)
    result = t.rewrite_manifests()
    assert (result.rewritten_manifests, result.added_manifests) == (6, 1)
    m = t.inspect.manifests()
    assert pc.sum(pc.equal(m.column("content"), 0)).as_py() == 1
    assert _rows(t).equals(before)
    # one manifest that fits the target: nothing left to gain, nothing committed
    n = len(t.snapshots())
    again = t.rewrite_manifests()
    assert (again.rewritten_manifests, again.added_manifests) == (0, 0)
    assert len(t.snapshots()) == n


@pytest.mark.interop
def test_peers_read_the_rewritten_table(tmp_path: Path) -> None:
    from pyiceberg.table import StaticTable as PyStatic

    _, t2 = _table(tmp_path / "v2", 2)
    _, t3 = _table(tmp_path / "v3", 3)
    expected = {2: _rows(t2), 3: _rows(t3)}
    t2.rewrite_manifests(target_manifest_size=1)
    t3.rewrite_manifests(target_manifest_size=1)
    theirs = PyStatic.from_metadata(t2.metadata_location).scan().to_arrow().sort_by("id")
    assert theirs.equals(expected[2])
    con = duckdb_connect()
    for version, t in ((2, t2), (3, t3)):
        duck = con.execute(
            f"select * from iceberg_scan('{t.metadata_location}') order by id"
        ).to_arrow_table()
        assert duck.column("id").to_pylist() == expected[version].column("id").to_pylist()
        assert duck.column("region").to_pylist() == expected[version].column("region").to_pylist()


def test_a_concurrent_append_is_regrouped_on_retry(tmp_path: Path) -> None:
    cat, t = _table(tmp_path, 3)
    from icefloe.table.rewrite_manifests import rewrite_manifests

    tx = t.transaction()
    first = rewrite_manifests(tx)
    assert (first.rewritten_manifests, first.added_manifests) == (6, 1)
    other = cat.load_table("db.t")
    other.append(_batch(1000, 8))  # wins the race
    expected = _rows(other)
    tx.commit_transaction()
    t.refresh()
    assert t.current_snapshot().operation == "replace"
    assert t.current_snapshot().parent_snapshot_id == other.current_snapshot().snapshot_id
    m = t.inspect.manifests()
    assert pc.sum(pc.equal(m.column("content"), 0)).as_py() == 1  # 7 regrouped into 1
    assert t.current_snapshot().summary.get("manifests-replaced") == "7"
    assert _rows(t).equals(expected)
    # the first attempt's manifests were deleted; only reachable manifests remain
    meta_dir = Path(t.location.removeprefix("file://"), "metadata")
    on_disk = {p.name for p in meta_dir.glob("*-m*.avro")}
    reachable = set()
    for s in t.snapshots():
        reachable |= {
            Path(p).name for p in t.inspect.manifests(s.snapshot_id).column("path").to_pylist()
        }
    assert on_disk == reachable


def test_bad_arguments(tmp_path: Path) -> None:
    from icefloe.exceptions import ValidationError

    _, t = _table(tmp_path, 2, appends=2)
    with pytest.raises(ValidationError, match="no partition spec with id 9"):
        t.rewrite_manifests(spec_id=9)
    with pytest.raises(ValidationError, match="must be a partition spec id"):
        t.rewrite_manifests(spec_id="0")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="must be positive"):
        t.rewrite_manifests(target_manifest_size=0)


def test_each_partition_spec_is_regrouped_on_its_own(tmp_path: Path) -> None:
    _, t = _table(tmp_path, 3, appends=3)
    with t.update_spec() as s:
        s.add_field("id", "bucket[4]", "id_bucket")
    for i in range(3):
        t.append(_batch(500 + i * 20, 20))
    before_entries = _entries(t)
    before_rows = _rows(t, "_row_id")
    m = t.inspect.manifests().to_pylist()
    per_spec = {
        s: sum(1 for r in m if r["content"] == 0 and r["partition_spec_id"] == s) for s in (0, 1)
    }
    assert per_spec == {0: 3, 1: 3}
    result = t.rewrite_manifests()
    assert (result.rewritten_manifests, result.added_manifests) == (6, 2)
    after = [r for r in t.inspect.manifests().to_pylist() if r["content"] == 0]
    assert sorted(r["partition_spec_id"] for r in after) == [0, 1]
    assert _entries(t) == before_entries
    assert _rows(t, "_row_id").equals(before_rows)
    # only one spec: the other's manifest is kept as it is
    for i in range(2):
        t.append(_batch(900 + i * 20, 20))
    kept = {r["path"] for r in t.inspect.manifests().to_pylist() if r["partition_spec_id"] == 0}
    result = t.rewrite_manifests(spec_id=1)
    assert result.rewritten_manifests == 3 and result.added_manifests == 1
    now = {r["path"] for r in t.inspect.manifests().to_pylist() if r["partition_spec_id"] == 0}
    assert kept <= now


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.integers(1, 30)),
            st.tuples(st.just("delete"), st.integers(0, 200)),
            st.tuples(st.just("evolve"), st.just(0)),
        ),
        min_size=2,
        max_size=7,
    ),
    parts=st.integers(1, 5),
    version=st.sampled_from([2, 3]),
)
# 4 entries into 3 manifests once came out as 2 (chunks of ceil(4/3)), unlike the dry run
@example(steps=[("evolve", 0), ("evolve", 0)], parts=4, version=3)
def test_random_histories_keep_entries_and_rows(
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[tuple[str, int]],
    parts: int,
    version: int,
) -> None:
    tmp = tmp_path_factory.mktemp("random")
    _, t = _table(tmp, version, appends=1)
    start, evolved = 1000, False
    for kind, n in steps:
        if kind == "append":
            t.append(_batch(start, n))
            start += n
        elif kind == "delete":
            t.delete(f"id = {n}")
        elif not evolved:
            with t.update_spec() as s:
                s.add_field("id", "bucket[3]", "id_bucket")
            evolved = True
    entries, rows = _entries(t), _rows(t)
    total = pc.sum(t.inspect.manifests().column("length")).as_py()
    plan = t.rewrite_manifests(target_manifest_size=-(-total // parts), dry_run=True)
    result = t.rewrite_manifests(target_manifest_size=-(-total // parts))
    assert (result.rewritten_manifests, result.added_manifests) == (
        plan.rewritten_manifests,
        plan.added_manifests,
    )
    assert _entries(t) == entries
    assert _rows(t).equals(rows)


def test_a_v1_table(tmp_path: Path) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    spec = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "region"))
    t = cat.create_table("db.t", SCHEMA, partition_spec=spec, format_version=1)
    for i in range(3):
        t.append(_batch(i * 10, 10))
    rows, entries = _rows(t), _entries(t)
    result = t.rewrite_manifests()
    assert (result.rewritten_manifests, result.added_manifests) == (3, 1)
    assert _rows(t).equals(rows) and _entries(t) == entries


def _delete_manifests(t: Table) -> int:
    m = t.inspect.manifests()
    return int(pc.sum(pc.equal(m.column("content"), 1)).as_py() or 0)


@pytest.mark.interop
@pytest.mark.parametrize("version", [2, 3])
def test_delete_manifests_are_regrouped_too(iceberg_spark: Any, version: int) -> None:
    """Position deletes or DVs and equality deletes of many commits end in one delete manifest
    per spec, every entry with its sequence numbers; Iceberg Java reads the same rows."""
    t = _new_table(iceberg_spark.icefloe(), version, 3)
    for ids in ("0, 5", "21, 22", "43"):
        t.delete(f"id in ({ids})")
    t.delete_by_keys(pa.table({"id": pa.array([9, 30], pa.int64())}), ["id"])
    t.append(_batch(9, 1))  # after the equality delete: its id 9 stays
    assert _delete_manifests(t) == 4
    entries = _entries(t)
    rows = _rows(t, "_row_id") if version == 3 else _rows(t)
    next_row_id = t.metadata.next_row_id

    result = t.rewrite_manifests()
    assert result.rewritten_manifests == 4 + 4 and result.added_manifests == 2
    assert _delete_manifests(t) == 1
    summary = t.current_snapshot().summary.to_json()
    assert summary["total-delete-files"] == t.snapshot_by_id(
        t.current_snapshot().parent_snapshot_id
    ).summary.get("total-delete-files")
    assert _entries(t) == entries
    assert (_rows(t, "_row_id") if version == 3 else _rows(t)).equals(rows)
    assert t.metadata.next_row_id == next_row_id
    java = [r.id for r in iceberg_spark.sql("select id from {c}.db.t order by id").collect()]
    assert java == rows.column("id").to_pylist()
    assert 9 in java and 30 not in java
    # a lone delete manifest that fits the target is left as it is
    t.append(_batch(100, 5))
    kept = {r["path"] for r in t.inspect.manifests().to_pylist() if r["content"] == 1}
    t.rewrite_manifests()
    assert {r["path"] for r in t.inspect.manifests().to_pylist() if r["content"] == 1} == kept
