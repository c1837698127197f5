"""``Table.changelog_scan``: replaying the changes of a stretch of history on the rows of its
start gives the rows of its end (Iceberg Java's changelog is the oracle in
``test_changelog_scan_spark.py``)."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import NoSuchSnapshotError, UnsupportedFeatureError, ValidationError
from icefloe.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def _table(path: Path, version: int, **props: str) -> Table:
    path.mkdir(parents=True, exist_ok=True)
    cat = SqlCatalog("cl", uri=f"sqlite:///{path / 'c.db'}", warehouse=str(path / "wh"))
    cat.create_namespace("db")
    return cat.create_table("db.t", SCHEMA, properties={"format-version": str(version), **props})


def _rows(start: int, n: int, tag: str) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "s": [tag] * n})


def _state(t: Table, snapshot_id: int | None) -> Counter[tuple[int, str]]:
    if snapshot_id is None:
        return Counter()
    rows = t.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()
    return Counter((r["id"], r["s"]) for r in rows)


_OPS = st.lists(
    st.sampled_from(["append", "append", "delete", "overwrite", "compact", "update"]),
    min_size=1,
    max_size=7,
)


@settings(max_examples=10, deadline=None)
@given(ops=_OPS, version=st.sampled_from([1, 2, 3]))
def test_replaying_the_changes_gives_the_end_state(
    tmp_path_factory: pytest.TempPathFactory, ops: list[str], version: int
) -> None:
    """Any copy-on-write history: for every pair of snapshots, the rows at the first plus the
    changelog's inserts minus its deletes are the rows at the second; every deleted row
    existed just before its snapshot; ordinals follow the history, compactions excluded."""
    t = _table(tmp_path_factory.mktemp("changelog"), version)
    start = 0
    for op in ops:
        if op == "append":
            t.append(_rows(start, 4, "a"))
        elif op == "overwrite":
            t.overwrite(_rows(start, 2, "o"), f"id < {start // 2}")
        elif op == "delete":
            t.delete(f"id in ({start - 10}, {start - 8}, {start // 3})")
        elif op == "update":
            t.upsert(_rows(max(0, start - 10), 2, "u"), join_cols=["id"])
        else:
            t.rewrite_data_files()
        start += 10
    current = t.current_snapshot()
    if current is None:
        return
    chain = [s.snapshot_id for s in reversed(t.metadata.ancestors_of(current.snapshot_id))]
    ops_of = {s.snapshot_id: s.summary.operation for s in t.snapshots()}
    for i, j in itertools.combinations_with_replacement(range(-1, len(chain)), 2):
        if j < 0:
            continue
        frm = chain[i] if i >= 0 else None
        changes = t.changelog_scan(frm, chain[j]).to_arrow().to_pylist()
        state = _state(t, frm)
        inserted = Counter((r["id"], r["s"]) for r in changes if r["_change_type"] == "INSERT")
        deleted = Counter((r["id"], r["s"]) for r in changes if r["_change_type"] == "DELETE")
        assert state + inserted - deleted == _state(t, chain[j]), (ops, i, j)
        assert not deleted - (state + inserted), (ops, i, j)
        counted = [k for k in chain[i + 1 : j + 1] if ops_of[k] != "replace"]
        for r in changes:
            assert counted[r["_change_ordinal"]] == r["_commit_snapshot_id"]


def test_columns_filters_and_errors(tmp_path: Path) -> None:
    t = _table(tmp_path, 3)
    t.append(_rows(0, 4, "a"))
    first = t.current_snapshot().snapshot_id
    t.delete("id = 1")
    scan = t.changelog_scan(first, row_filter="id >= 1", selected_fields=["id"])
    assert scan.schema().names == ["id", "_change_type", "_change_ordinal", "_commit_snapshot_id"]
    got = sorted((r["id"], r["_change_type"]) for r in scan.to_arrow().to_pylist())
    # the rewritten file's other rows are deleted and inserted again (carry-over rows)
    assert got == [(1, "DELETE"), (2, "DELETE"), (2, "INSERT"), (3, "DELETE"), (3, "INSERT")]
    assert scan.count() == 5
    # change columns are chosen like any other (all three when none is named)
    picked = t.changelog_scan(first, selected_fields=["_change_type", "id"]).to_arrow()
    assert picked.column_names == ["id", "_change_type"]
    only = t.changelog_scan(first, selected_fields=["_commit_snapshot_id"]).to_arrow()
    assert only.column_names == ["_commit_snapshot_id"] and only.num_rows == 7
    assert t.changelog_scan(first, first).to_arrow().num_rows == 0
    with pytest.raises(ValidationError, match="not an ancestor"):
        t.changelog_scan(t.current_snapshot().snapshot_id, first).to_arrow()
    with pytest.raises(NoSuchSnapshotError):
        t.changelog_scan(to_snapshot_id=42)


def test_merge_on_read_deletes_are_refused(tmp_path: Path) -> None:
    t = _table(tmp_path, 3, **{"write.delete.mode": "merge-on-read"})
    t.append(_rows(0, 4, "a"))
    first = t.current_snapshot().snapshot_id
    t.delete("id = 1")
    with pytest.raises(UnsupportedFeatureError, match="delete files"):
        t.changelog_scan().to_arrow()
    assert t.changelog_scan(to_snapshot_id=first).count() == 4


def test_a_scan_reads_the_history_it_was_made_with(tmp_path: Path) -> None:
    """Commits through the same table object after the scan was made do not join it (the
    default end is the current snapshot when the scan was made, as a plain scan's)."""
    t = _table(tmp_path, 2)
    t.append(_rows(0, 2, "a"))
    first = t.current_snapshot().snapshot_id
    t.append(_rows(10, 2, "b"))
    scan = t.changelog_scan(first)
    t.append(_rows(20, 2, "c"))
    with t.update_spec() as spec:
        spec.add_field("s")
    t.append(_rows(30, 1, "d"))
    assert sorted(scan.to_arrow().column("id").to_pylist()) == [10, 11]
    assert scan.count() == 2


@pytest.mark.parametrize("name", ["_change_type", "_change_ordinal", "_commit_snapshot_id"])
def test_a_column_named_as_a_change_column_is_refused(tmp_path: Path, name: str) -> None:
    """A table column named like a change column would be hidden behind it (its values lost
    in every output): refused, as Iceberg Java's changelog schema refuses duplicate names."""
    path = tmp_path / "c"
    path.mkdir()
    cat = SqlCatalog("cl", uri=f"sqlite:///{path / 'c.db'}", warehouse=str(path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), (name, pa.string())]))
    t.append(pa.table({"id": [1], name: ["mine"]}))
    with pytest.raises(ValidationError, match=f"named '{name}'"):
        t.changelog_scan()
