"""``Table.incremental_append_scan``: the rows the ``append`` snapshots between two snapshots
added, against a model of what each commit wrote (Iceberg Java's incremental append scan is the
oracle in ``test_incremental_scan_spark.py``)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import NoSuchSnapshotError, ValidationError
from icefloe.types import IntegerType

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def _catalog(path: Path) -> SqlCatalog:
    path.mkdir(parents=True, exist_ok=True)
    cat = SqlCatalog("inc", uri=f"sqlite:///{path / 'c.db'}", warehouse=str(path / "wh"))
    cat.create_namespace("db")
    return cat


def _rows(start: int, n: int, tag: str) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "s": [tag] * n})


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


_OPS = st.lists(
    st.sampled_from(["append", "append", "append", "delete", "overwrite", "compact"]),
    min_size=1,
    max_size=8,
)


@settings(max_examples=12, deadline=None)
@given(ops=_OPS, merge=st.booleans(), version=st.sampled_from([1, 2, 3]))
def test_rows_are_those_the_appends_in_the_range_wrote(
    tmp_path_factory: pytest.TempPathFactory, ops: list[str], merge: bool, version: int
) -> None:
    """Any history of appends, deletes, overwrites and compactions (with manifest merging on
    or off, so that appends also write manifests of earlier files): for every pair of
    snapshots on the history, the scan returns exactly the rows the ``append`` commits after
    the first and up to the second wrote, deletes notwithstanding."""
    cat = _catalog(tmp_path_factory.mktemp("model"))
    props = {"format-version": str(version)}
    if merge:
        props |= {
            "commit.manifest-merge.enabled": "true",
            "commit.manifest.min-count-to-merge": "2",
        }
    t = cat.create_table("db.t", SCHEMA, properties=props)
    written: dict[int, list[int]] = {}  # snapshot id -> ids its commit wrote
    start = 0
    for op in ops:
        before = t.current_snapshot()
        if op == "append":
            batch = _rows(start, 3, "a")
            t.append(batch)
        elif op == "overwrite":
            batch = _rows(start, 2, "o")
            t.overwrite(batch, f"id < {start // 2}")
        elif op == "delete":
            batch = _rows(0, 0, "")
            t.delete(f"id in ({start - 10}, {start - 9}, {start // 3})")
        else:
            batch = _rows(0, 0, "")
            t.rewrite_data_files()
        start += 10
        snap = t.current_snapshot()
        if snap is not None and (before is None or snap.snapshot_id != before.snapshot_id):
            written[snap.snapshot_id] = batch.column("id").to_pylist()
    chain = (
        [s.snapshot_id for s in reversed(t.metadata.ancestors_of(t.current_snapshot().snapshot_id))]
        if t.current_snapshot()
        else []
    )
    ops_of = {s.snapshot_id: s.summary.operation for s in t.snapshots()}
    for i, j in itertools.combinations_with_replacement(range(-1, len(chain)), 2):
        if j < 0:
            continue
        frm = chain[i] if i >= 0 else None
        expected = sorted(
            v for k in chain[i + 1 : j + 1] if ops_of[k] == "append" for v in written.get(k, [])
        )
        scan = t.incremental_append_scan(frm, chain[j])
        assert _ids(scan.to_arrow()) == expected, (ops, i, j)
        assert scan.count() == len(expected)
        if i >= 0:  # inclusive start: the same as exclusive from its parent
            inclusive = t.incremental_append_scan(chain[i], chain[j], from_inclusive=True)
            with_first = sorted(
                v for k in chain[i : j + 1] if ops_of[k] == "append" for v in written.get(k, [])
            )
            assert _ids(inclusive.to_arrow()) == with_first


@pytest.fixture
def history(tmp_path: Path) -> tuple[Any, list[int]]:
    """A v3 table: append, append, delete, append (add column first), compaction."""
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", SCHEMA, properties={"format-version": "3"})
    t.append(_rows(0, 10, "a"))
    t.append(_rows(10, 10, "b"))
    t.delete("id < 15")
    with t.update_schema() as u:
        u.add_column("extra", IntegerType())
    t.append(
        pa.table(
            {
                "id": pa.array([100, 101], pa.int64()),
                "s": ["c", "d"],
                "extra": pa.array([1, 2], pa.int32()),
            }
        )
    )
    t.rewrite_data_files()
    ids = [
        s.snapshot_id for s in reversed(t.metadata.ancestors_of(t.current_snapshot().snapshot_id))
    ]
    return t, ids


def test_filters_projections_and_schema(history: tuple[Any, list[int]]) -> None:
    """Rows come in the current schema (older files read by field id), deleted rows of
    appended files included; filters prune and filter, projections project, limits limit."""
    t, ids = history
    assert [s.summary.operation for s in t.snapshots()][-1] == "replace"
    every = t.incremental_append_scan().to_arrow()
    assert every.column_names == ["id", "s", "extra"]
    assert _ids(every) == [*range(20), 100, 101]
    assert every.filter(pa.compute.equal(every.column("id"), 100)).column("extra").to_pylist() == [
        1
    ]
    after_first = t.incremental_append_scan(
        ids[0], row_filter="(id >= 12 and id < 100) or extra = 2"
    )
    assert _ids(after_first.to_arrow()) == [*range(12, 20), 101]
    assert after_first.select("s").to_arrow().column_names == ["s"]
    assert after_first.filter("s = 'b'").count() == 8
    assert t.incremental_append_scan(ids[0], limit=3).to_arrow().num_rows == 3
    # the compaction and the delete add no rows
    assert t.incremental_append_scan(ids[3], ids[4]).to_arrow().num_rows == 0
    assert t.incremental_append_scan(ids[1], ids[2]).count() == 0
    # a tag names a snapshot too
    t.manage_snapshots().create_tag("v1", ids[1]).commit()
    assert _ids(t.incremental_append_scan("v1").to_arrow()) == [100, 101]


def test_bad_ranges_are_clear_errors(history: tuple[Any, list[int]]) -> None:
    t, ids = history
    with pytest.raises(ValidationError, match="not an ancestor"):
        t.incremental_append_scan(ids[3], ids[1]).to_arrow()
    with pytest.raises(ValidationError, match="not an ancestor"):
        t.incremental_append_scan(ids[3], ids[1], from_inclusive=True).to_arrow()
    with pytest.raises(NoSuchSnapshotError):
        t.incremental_append_scan(ids[0], 12345)
    with pytest.raises(NoSuchSnapshotError):
        t.incremental_append_scan(12345, from_inclusive=True)
    with pytest.raises(NoSuchSnapshotError, match="not in the table's metadata"):
        t.incremental_append_scan(12345).to_arrow()
    with pytest.raises(NoSuchSnapshotError, match="tag"):
        t.incremental_append_scan("nope")
    with pytest.raises(ValidationError, match="branch"):
        t.incremental_append_scan("main")
    with pytest.raises(ValidationError, match="takes no"):
        t.incremental_append_scan(ids[0]).with_snapshot(ids[1])
    assert t.incremental_append_scan(ids[-1], ids[-1]).to_arrow().num_rows == 0


def test_a_snapshot_id_given_as_a_string_says_ids_are_integers(
    history: tuple[Any, list[int]],
) -> None:
    t, ids = history
    with pytest.raises(NoSuchSnapshotError) as info:
        t.incremental_append_scan(str(ids[0]))
    message = str(info.value)
    assert f"no tag named '{ids[0]}'" in message
    assert f"a snapshot id is given as an integer: from_snapshot_id={ids[0]}" in message
    with pytest.raises(NoSuchSnapshotError, match="to_snapshot_id=12"):
        t.incremental_append_scan(ids[0], "12")
    with pytest.raises(NoSuchSnapshotError) as info:
        t.incremental_append_scan("nope")
    assert "integer" not in str(info.value)  # a name that is no number: only the tag
    t.manage_snapshots().create_tag("2024", ids[1]).commit()  # a numeric tag is a tag
    assert _ids(t.incremental_append_scan("2024").to_arrow()) == [100, 101]


def test_an_expired_start_still_bounds_the_range(history: tuple[Any, list[int]]) -> None:
    """A pipeline's last consumed snapshot may have been expired since: as the parent of a
    snapshot still in the history it still says where the new appends begin."""
    t, ids = history
    t.expire_snapshots(snapshot_ids=[ids[0]])
    assert t.metadata.snapshot_by_id(ids[0]) is None
    assert _ids(t.incremental_append_scan(ids[0]).to_arrow()) == [*range(10, 20), 100, 101]


def test_a_file_appended_again_is_read_once_per_append(tmp_path: Path) -> None:
    """A file added, removed whole and added again (``add_files`` of the same file): each
    append reads it, as Iceberg Java's incremental scan does."""
    import pyarrow.parquet as pq

    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    from icefloe.arrow_schema import schema_to_arrow

    path = tmp_path / "ext.parquet"
    pq.write_table(_rows(1, 2, "x").cast(schema_to_arrow(t.schema())), path)  # with field ids
    t.add_files([str(path)])
    first = t.current_snapshot().snapshot_id
    t.delete("id >= 1")
    t.add_files([str(path)])
    assert _ids(t.incremental_append_scan().to_arrow()) == [1, 1, 2, 2]
    assert _ids(t.incremental_append_scan(first).to_arrow()) == [1, 2]


def test_a_scan_and_its_copies_read_the_metadata_it_was_made_with(tmp_path: Path) -> None:
    """A commit or expiry through the same table object after the scan was made moves neither
    its end nor the range its ``filter``/``select`` copies check (as a plain scan's)."""
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", SCHEMA)
    ids = []
    for i in range(3):
        t.append(_rows(i * 10, 2, "a"))
        ids.append(t.current_snapshot().snapshot_id)
    to_now = t.incremental_append_scan(ids[0])
    ranged = t.incremental_append_scan(ids[0], ids[1])
    t.expire_snapshots(snapshot_ids=[ids[1]], delete_files=False)
    t.append(_rows(30, 2, "b"))
    assert _ids(to_now.to_arrow()) == [10, 11, 20, 21]
    assert _ids(to_now.filter("id > 10").to_arrow()) == [11, 20, 21]
    assert _ids(ranged.filter("id > 10").select("id").to_arrow()) == [11]
