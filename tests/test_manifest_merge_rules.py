"""Which manifests a new snapshot keeps and merges, by the Java reference's rules: manifests
with no live files are left out; the manifests of each spec are packed from the oldest, and
only the bin holding the newest manifest waits for ``commit.manifest.min-count-to-merge``, so
an older spec's manifests are merged too. PyIceberg 0.12 ports the same rules and is the
oracle for the counts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from icefloe.manifest import manifest_files, read_manifest, read_manifest_list
from icefloe.table.manifest_merge import pack_from_end
from support.write_util import (
    SCHEMA,
    catalog,
    checksum,
    duckdb_checksum,
    pyiceberg_read,
    rows,
)


def _manifests(t: Any) -> list[Any]:
    snap = t.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    return manifest_files(read_manifest_list(t.io.new_input(snap.manifest_list).read()))


def test_manifests_without_live_files_leave_the_next_snapshot(
    tmp_path: Path, duckdb_con: Any
) -> None:
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, format_version=2)
    for i in range(5):
        t.append(rows(i * 10, 10))
    before_delete = t.current_snapshot().snapshot_id
    t.delete("id < 30")  # three whole files: their manifests keep only DELETED entries
    deleted_in = t.current_snapshot().snapshot_id
    assert len(_manifests(t)) == 5
    t.append(rows(100, 10))
    lst = _manifests(t)
    assert all(m.added_files_count + m.existing_files_count > 0 for m in lst)
    assert len(lst) == 3  # the new one and the two with live files
    want = checksum(pa.concat_tables([rows(30, 20), rows(100, 10)]))
    assert checksum(t.scan().to_arrow()) == want
    assert checksum(pyiceberg_read(t)) == want
    assert duckdb_checksum(duckdb_con, t) == want
    # the older snapshots still name them: time travel and the delete's changelog are whole
    assert checksum(t.scan(snapshot_id=before_delete).to_arrow()) == checksum(rows(0, 50))
    changes = t.changelog_scan(from_snapshot_id=before_delete, to_snapshot_id=deleted_in)
    assert checksum(changes.to_arrow().select(["id"])) == checksum(rows(0, 30).select(["id"]))


def test_min_sequence_number_counts_only_live_entries(tmp_path: Path) -> None:
    """A manifest a copy-on-write delete rewrote listed the removed file's older sequence
    number as its ``min_sequence_number``, which the spec defines over live files only (as
    Java's and PyIceberg's writers compute it); planners and Java's obsolete-delete cleanup
    pruned less for it. A manifest without live files gets the snapshot's number."""
    props = {"format-version": "2", "commit.manifest.min-count-to-merge": "2"}
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, properties=props)
    t.append(rows(0, 10))  # sequence number 1
    t.append(rows(100, 10))  # 2: merged with the first into one manifest
    t.delete("id < 10")  # 3: the first file removed whole
    for m in _manifests(t):
        batch = read_manifest(t.io.new_input(m.manifest_path).read(), manifest=m)
        entries = list(
            zip(batch["status"].to_pylist(), batch["sequence_number"].to_pylist(), strict=True)
        )
        assert (2, 1) in entries, entries  # the removed file, written at sequence number 1
        assert m.min_sequence_number == min(q for s, q in entries if s != 2) == 2, entries


def _pyiceberg_counts(tmp_path: Path, props: dict[str, str]) -> Counter[int]:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.transforms import BucketTransform

    cat = SqlCatalog("p", uri=f"sqlite:///{tmp_path}/p.db", warehouse=(tmp_path / "pwh").as_uri())
    cat.create_namespace("db")
    # PyIceberg merges only when asked (Java and icefloe merge by default)
    merging = {**props, "commit.manifest-merge.enabled": "true"}
    t = cat.create_table("db.t", rows(0, 1).schema, properties=merging)
    for i in range(6):
        t.append(rows(i * 10, 10))
    with t.update_spec() as u:
        u.add_field("id", BucketTransform(4), "id_b")
    t.append(rows(60, 10))
    counts = Counter(m.partition_spec_id for m in t.current_snapshot().manifests(t.io))
    cat.engine.dispose()
    return counts


def test_an_older_specs_manifests_are_merged(tmp_path: Path, duckdb_con: Any) -> None:
    props = {"format-version": "2", "commit.manifest.min-count-to-merge": "10"}
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, properties=props)
    for i in range(6):
        t.append(rows(i * 10, 10))
    with t.update_spec() as u:
        u.add_field("id", "bucket[4]", "id_b")
    t.append(rows(60, 10))
    counts = Counter(m.partition_spec_id for m in _manifests(t))
    assert counts == {0: 1, 1: 1}
    assert counts == _pyiceberg_counts(tmp_path, props)
    want = checksum(rows(0, 70))
    assert checksum(t.scan().to_arrow()) == want
    assert checksum(pyiceberg_read(t)) == want
    assert duckdb_checksum(duckdb_con, t) == want
    assert checksum(t.scan(row_filter="id >= 55").to_arrow()) == checksum(rows(55, 15))


def test_the_newest_bin_waits_for_the_minimum_count(tmp_path: Path) -> None:
    props = {"format-version": "2", "commit.manifest.min-count-to-merge": "4"}
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, properties=props)
    counts = []
    for i in range(6):
        t.append(rows(i * 10, 10))
        counts.append(len(_manifests(t)))
    assert counts == [1, 2, 3, 1, 2, 3]  # the fourth commit merged all four
    assert checksum(t.scan().to_arrow()) == checksum(rows(0, 60))


@given(
    st.lists(st.integers(min_value=1, max_value=300), max_size=40),
    st.integers(min_value=1, max_value=600),
)
def test_packing_from_the_end(lengths: list[int], target: int) -> None:
    items = [{"manifest_path": str(i), "manifest_length": n} for i, n in enumerate(lengths)]
    bins = pack_from_end(items, target)
    assert [r for b in bins for r in b] == items  # every manifest once, in order
    sizes = [sum(r["manifest_length"] for r in b) for b in bins]
    for b, size in zip(bins, sizes, strict=True):
        assert b and (size <= target or len(b) == 1)
    for k in range(1, len(bins)):
        # filled from the end: a bin took every manifest before it that fitted
        assert sizes[k] + bins[k - 1][-1]["manifest_length"] > target
