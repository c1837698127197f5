"""Scan planning on hand-built tables: snapshot selection, pruning and delete scoping.

Expected results come from the spec's rules ("Scan Planning", "Snapshot References",
Appendix F), written out per case; the tables are written with icefloe's manifest writer.
"""

from __future__ import annotations

import datetime as dt
import pickle
from pathlib import Path
from typing import Any

import pytest

from icefloe.exceptions import CorruptFileError, NoSuchSnapshotError, ValidationError
from icefloe.expressions.base import AlwaysTrue
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.scan.tasks import DeleteContent, FileScanTask
from icefloe.schema import Schema
from icefloe.table.scan import TableScan
from icefloe.transforms import BucketTransform, IdentityTransform, parse_transform
from icefloe.types import IntegerType, LongType, NestedField, StringType
from icefloe.values import to_bytes
from support.plan_tables import HandTable, entry

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "cat", StringType(), required=False),
    NestedField(3, "n", IntegerType(), required=False),
)
UNPART = PartitionSpec(spec_id=0)
BY_CAT = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"), spec_id=1)


def files(tasks: list[FileScanTask]) -> list[str]:
    return sorted(t.data_file.file_path for t in tasks)


def deletes(tasks: list[FileScanTask]) -> dict[str, list[str]]:
    return {
        t.data_file.file_path: sorted(d.file_path for d in t.delete_files)
        for t in tasks
        if t.delete_files
    }


def long_bounds(lo: int, hi: int, field: int = 1) -> dict[str, Any]:
    return {
        "lower_bounds": [(field, to_bytes(LongType(), lo))],
        "upper_bounds": [(field, to_bytes(LongType(), hi))],
        "value_counts": [(field, 10)],
        "null_value_counts": [(field, 0)],
    }


def table(tmp_path: Path, version: int = 2, specs: list[PartitionSpec] | None = None) -> HandTable:
    return HandTable(tmp_path, SCHEMA, specs or [UNPART, BY_CAT], version)


def test_empty_table_plans_nothing(tmp_path: Path) -> None:
    t = table(tmp_path)
    scan = TableScan(t)
    assert scan.snapshot() is None
    assert scan.plan_files() == []
    assert scan.plan_table().num_rows == 0


def test_snapshot_selection(tmp_path: Path) -> None:
    t = table(tmp_path)
    s1 = t.commit([(1, 0, [entry("a", {"cat": "x"})])], timestamp_ms=10_000)
    s2 = t.commit([(1, 0, [entry("b", {"cat": "y"})])], timestamp_ms=20_000)
    t.tag("first", s1)
    assert files(TableScan(t).plan_files()) == ["a", "b"]
    assert files(TableScan(t, snapshot_id=s1).plan_files()) == ["a"]
    assert files(TableScan(t, ref="first").plan_files()) == ["a"]
    assert files(TableScan(t, ref="main").plan_files()) == ["a", "b"]
    assert files(TableScan(t, as_of=15_000).plan_files()) == ["a"]
    assert files(TableScan(t, as_of=20_000).plan_files()) == ["a", "b"]
    when = dt.datetime(1970, 1, 1, 0, 0, 15, tzinfo=dt.timezone.utc)
    assert files(TableScan(t, as_of=when).plan_files()) == ["a"]
    assert TableScan(t).use_ref("first").snapshot().snapshot_id == s1  # type: ignore[union-attr]
    assert TableScan(t).with_snapshot(s2).snapshot().snapshot_id == s2  # type: ignore[union-attr]
    with pytest.raises(NoSuchSnapshotError, match="9999"):
        TableScan(t, as_of=9_999).plan_files()
    with pytest.raises(NoSuchSnapshotError, match="nope"):
        TableScan(t, ref="nope").snapshot()
    with pytest.raises(NoSuchSnapshotError, match="77"):
        TableScan(t, snapshot_id=77).snapshot()
    with pytest.raises(ValidationError, match="choose one"):
        TableScan(t, snapshot_id=s1, ref="main")


def test_partition_and_metrics_pruning_with_residuals(tmp_path: Path) -> None:
    t = table(tmp_path)
    t.commit(
        [
            (
                1,
                0,
                [
                    entry("x1", {"cat": "x"}, **long_bounds(0, 9)),
                    entry("x2", {"cat": "x"}, **long_bounds(10, 19)),
                    entry("y1", {"cat": "y"}, **long_bounds(0, 9)),
                    entry("nul", {"cat": None}, **long_bounds(0, 9)),
                    entry("nostats", {"cat": "x"}),
                ],
            )
        ]
    )
    scan = TableScan(t, row_filter="cat = 'x' and id >= 10")
    tasks = scan.plan_files()
    assert files(tasks) == ["nostats", "x2"]
    # the partition decides cat = 'x': only the id predicate remains
    for task in tasks:
        assert str(task.residual) == "id >= 10"
    assert files(TableScan(t, row_filter="cat is null").plan_files()) == ["nul"]
    assert files(TableScan(t, row_filter="cat != 'x'").plan_files()) == ["nul", "y1"]
    assert files(TableScan(t, row_filter="id < 0").plan_files()) == ["nostats"]
    every = TableScan(t).plan_files()
    assert len(every) == 5 and all(isinstance(x.residual, AlwaysTrue) for x in every)
    # tasks carry what the reader and writers need, and pickle
    task = next(x for x in every if x.data_file.file_path == "x1")
    assert task.data_file.partition == ("x",)
    assert task.data_file.spec_id == 1 and task.spec_id == 1
    assert (task.data_file.record_count, task.data_file.file_size_in_bytes) == (10, 1000)
    assert task.data_file.data_sequence_number == 1
    assert pickle.loads(pickle.dumps(task)) == task


def test_deleted_entries_are_ignored_and_duplicates_rejected(tmp_path: Path) -> None:
    t = table(tmp_path)
    t.commit([(0, 0, [entry("a"), entry("gone", status=2, sequence_number=1)])])
    assert files(TableScan(t).plan_files()) == ["a"]
    t.commit([(0, 0, [entry("a")])])
    with pytest.raises(CorruptFileError, match="a is listed twice"):
        TableScan(t).plan_files()


@pytest.mark.parametrize(
    "spellings",
    # one file however it is spelled: the second spelling used to be read as another file
    [("dup", "dup"), ("/w//dup", "file:///w/dup"), ("s3://b/dup", "S3A://b/dup")],
)
@pytest.mark.parametrize("with_deletes", [False, True])
def test_duplicate_path_across_manifests_rejected(
    tmp_path: Path, with_deletes: bool, spellings: tuple[str, str]
) -> None:
    # the duplicate sits in two manifests of different specs among distinct paths; without
    # delete files the check runs per batch in place, with them inside delete matching
    t = table(tmp_path)
    one, other = spellings
    first = [entry(f"f{i}") for i in range(50)] + [entry(one)]
    second = [entry(f"g{i}", {"cat": "x"}) for i in range(50)] + [entry(other, {"cat": "y"})]
    t.commit([(0, 0, first)])
    manifests = [(1, 0, second)]
    if with_deletes:
        manifests.append((1, 1, [entry("eq", {"cat": "x"}, content=2, equality_ids=[1])]))
    t.commit(manifests)
    for plan in (TableScan(t).plan_files, TableScan(t).plan_table):
        with pytest.raises(CorruptFileError, match=r"data file \S*dup is listed twice"):
            plan()


def test_position_and_equality_sequence_boundaries(tmp_path: Path) -> None:
    t = table(tmp_path)
    t.commit([(1, 0, [entry("d1", {"cat": "x"}), entry("other", {"cat": "y"})])])  # seq 1
    t.commit(
        [
            (1, 1, [entry("pos1", {"cat": "x"}, content=1)]),
            (1, 1, [entry("eq1", {"cat": "x"}, content=2, equality_ids=[1])]),
        ]
    )  # seq 2
    t.commit([(1, 0, [entry("d3", {"cat": "x"})])])  # seq 3
    # same sequence number: the position delete applies, the equality delete does not
    t.commit(
        [
            (1, 0, [entry("d4", {"cat": "x"})]),
            (1, 1, [entry("pos4", {"cat": "x"}, content=1)]),
            (1, 1, [entry("eq4", {"cat": "x"}, content=2, equality_ids=[1])]),
        ]
    )  # seq 4
    got = deletes(TableScan(t).plan_files())
    assert got == {
        "d1": ["eq1", "eq4", "pos1", "pos4"],
        "d3": ["eq4", "pos4"],
        "d4": ["pos4"],
    }
    tasks = TableScan(t).plan_files()
    eq = next(d for x in tasks for d in x.delete_files if d.file_path == "eq1")
    assert eq.content is DeleteContent.EQUALITY_DELETES and eq.equality_ids == (1,)
    assert eq.data_sequence_number == 2 and eq.partition == ("x",)


def test_global_equality_deletes_and_partition_evolution(tmp_path: Path) -> None:
    t = table(tmp_path)
    t.commit([(0, 0, [entry("old")]), (1, 0, [entry("new", {"cat": "x"})])])
    t.commit(
        [
            # unpartitioned spec: applies to every data file with a lower sequence number
            (0, 1, [entry("geq", content=2, equality_ids=[1])]),
            # position deletes are scoped by spec and partition: this one only hits "old"
            (0, 1, [entry("upos", content=1)]),
            (1, 1, [entry("xpos", {"cat": "x"}, content=1)]),
        ]
    )
    got = deletes(TableScan(t).plan_files())
    assert got == {"old": ["geq", "upos"], "new": ["geq", "xpos"]}
    # a filter on the new partition column cannot prune files of the unpartitioned spec
    assert files(TableScan(t, row_filter="cat = 'q'").plan_files()) == ["old"]


def test_deletion_vectors(tmp_path: Path) -> None:
    t = table(tmp_path, version=3)
    t.commit([(1, 0, [entry("d1", {"cat": "x"}), entry("d2", {"cat": "x"})])])

    def dv(name: str, target: str) -> dict[str, Any]:
        return entry(
            name,
            {"cat": "x"},
            content=1,
            file_format="PUFFIN",
            referenced_data_file=target,
            content_offset=4,
            content_size_in_bytes=40,
            record_count=2,
        )

    t.commit(
        [
            (1, 1, [dv("dv1.puffin", "d1")]),
            (1, 1, [entry("pos", {"cat": "x"}, content=1)]),
        ]
    )
    tasks = TableScan(t).plan_files()
    # a DV replaces position delete files for its data file
    assert deletes(tasks) == {"d1": ["dv1.puffin"], "d2": ["pos"]}
    ref = next(d for x in tasks for d in x.delete_files if d.file_path == "dv1.puffin")
    assert ref.is_deletion_vector and ref.referenced_data_file == "d1"
    assert (ref.content_offset, ref.content_size_in_bytes) == (4, 40)
    assert next(x for x in tasks if x.data_file.file_path == "d1").data_file.first_row_id == 0
    t.commit([(1, 1, [dv("dv2.puffin", "d1")])])
    with pytest.raises(CorruptFileError, match=r"two deletion vectors for data file d1"):
        TableScan(t).plan_files()


def test_unknown_transform_never_prunes(tmp_path: Path) -> None:
    spec = PartitionSpec(PartitionField(1, 1000, parse_transform("zorder"), "z"), spec_id=0)
    t = HandTable(tmp_path, SCHEMA, [spec], 2)
    t.commit([(0, 0, [entry("a", {"z": None})])])
    assert files(TableScan(t, row_filter="id = 5").plan_files()) == ["a"]


def test_bucket_pruning_and_plan_table(tmp_path: Path) -> None:
    spec = PartitionSpec(PartitionField(1, 1000, BucketTransform(4), "b"), spec_id=0)
    t = HandTable(tmp_path, SCHEMA, [spec], 2)
    bucket = BucketTransform(4)
    import pyarrow as pa

    b5 = bucket.apply(pa.array([5], pa.int64()))[0].as_py()
    t.commit([(0, 0, [entry(f"f{b}", {"b": b}) for b in range(4)])])
    assert files(TableScan(t, row_filter="id = 5").plan_files()) == [f"f{b5}"]
    table_ = TableScan(t, row_filter="id = 5").plan_table()
    assert table_.column("file_path").to_pylist() == [f"f{b5}"]
    assert table_.column("partition").to_pylist() == [{"b": b5}]


def test_v1_snapshot_listing_manifests_directly(tmp_path: Path) -> None:
    import dataclasses

    t = table(tmp_path, version=1)
    t.commit([(1, 0, [entry("a", {"cat": "x"}), entry("b", {"cat": "y"})])])
    snap = t.metadata.current_snapshot()
    assert snap is not None
    paths = tuple(r["manifest_path"] for r in t.manifests)
    legacy = dataclasses.replace(snap, manifest_list=None, manifests=paths)
    t.metadata = dataclasses.replace(t.metadata, snapshots=(legacy,))
    assert files(TableScan(t).plan_files()) == ["a", "b"]
    tasks = TableScan(t, row_filter="cat = 'y'").plan_files()
    assert files(tasks) == ["b"] and tasks[0].spec_id == 1
    assert tasks[0].data_file.data_sequence_number == 0


def test_split_ranges() -> None:
    from icefloe.scan.columnar import split_ranges

    assert split_ranges(100, [4, 50], 200) == [(0, 100)]
    # row-group offsets: adjacent ranges combined up to the target
    assert split_ranges(100, [4, 30, 60, 90], 40) == [(0, 30), (30, 30), (60, 40)]
    # a single range larger than the target stays whole
    assert split_ranges(100, [4, 80], 30) == [(0, 80), (80, 20)]
    # invalid offsets (unsorted, past the end): fixed ranges
    assert split_ranges(100, [50, 10], 40) == [(0, 40), (40, 40), (80, 20)]
    assert split_ranges(100, [4, 120], 40) == [(0, 40), (40, 40), (80, 20)]
    assert split_ranges(100, None, 60) == [(0, 60), (60, 40)]


def test_plan_tasks_splits_large_files(tmp_path: Path) -> None:
    t = HandTable(tmp_path, SCHEMA, [UNPART], 2, {"read.split.target-size": "100"})
    t.commit(
        [
            (
                0,
                0,
                [
                    entry("big", file_size_in_bytes=250, split_offsets=[4, 90, 180]),
                    entry("small", file_size_in_bytes=80),
                ],
            ),
            (0, 1, [entry("pos", content=1)]),
        ]
    )
    scan = TableScan(t)
    assert [(x.data_file.file_path, x.start, x.length) for x in scan.plan_files()] == [
        ("big", 0, None),
        ("small", 0, None),
    ]
    tasks = scan.plan_tasks()
    assert [(x.data_file.file_path, x.start, x.length) for x in tasks] == [
        ("big", 0, 90),
        ("big", 90, 90),
        ("big", 180, 70),
        ("small", 0, None),
    ]
    assert all([d.file_path for d in x.delete_files] == ["pos"] for x in tasks)
    other = TableScan(t, options={"read.split.target-size": "1000"}).plan_tasks()
    assert len(other) == 2
    with pytest.raises(ValidationError, match=r"read\.split\.target-size"):
        TableScan(t, options={"read.split.target-size": "x"}).plan_tasks()
