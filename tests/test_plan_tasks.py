"""Task building: the streamed tasks of ``plan_files`` (built per batch while later manifests
decode) and the Rust task builder with shared partition tuples, checked against the Python
builder of :mod:`icefloe.scan.columnar` as the oracle."""

from __future__ import annotations

import dataclasses
import datetime as dt
import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _plan_tables import HandTable, entry
from icefloe import _native
from icefloe.exceptions import ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.scan import columnar, planner
from icefloe.scan import scan as scan_module
from icefloe.scan.scan import TableScan
from icefloe.scan.tasks import DataFileRef, FileScanTask
from icefloe.schema import Schema
from icefloe.transforms import IdentityTransform
from icefloe.types import LongType, NestedField, StringType
from icefloe.values import to_bytes

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "cat", StringType(), required=False),
)
BY_CAT = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"), spec_id=0)


def _table(tmp_path: Path) -> HandTable:
    t = HandTable(tmp_path, SCHEMA, [BY_CAT], 2)
    cats = ["x", "y", None, "x"]
    for m in range(7):  # seven manifests over several snapshots
        files = [
            entry(
                f"m{m}-f{i}",
                {"cat": cats[(m + i) % len(cats)]},
                record_count=10 + i,
                lower_bounds=[(1, to_bytes(LongType(), 100 * m + 10 * i))],
                upper_bounds=[(1, to_bytes(LongType(), 100 * m + 10 * i + 9))],
            )
            for i in range(5)
        ]
        t.commit([(0, 0, files)])
    return t


def _oracle(scan: TableScan) -> list[FileScanTask]:
    """The tasks of the Python builder (per-row loop, ``__dict__`` filled directly)."""
    plan = scan.plan()
    assert plan.assignment is not None and not plan.deletes
    out: list[FileScanTask] = []
    for pb in plan.batches:
        n = pb.entries.num_rows
        none = pa.ListArray.from_arrays(
            pa.array([0] * (n + 1), pa.int32()), pa.array([], pa.int32())
        )
        out += columnar._python_tasks(pb, plan, none, [], None)
    return out


@pytest.mark.parametrize("row_filter", ["true", "cat = 'x'", "id >= 250", "cat is null or id < 30"])
def test_streamed_tasks_equal_the_python_builder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row_filter: str
) -> None:
    monkeypatch.setattr(planner, "_CHUNK", 2)  # several chunks: decode runs ahead of tasks
    t = _table(tmp_path)
    with monkeypatch.context() as m:  # a new plan without deletes streams: no columnar pass
        m.setattr(scan_module, "plan_to_tasks", None)
        streamed = TableScan(t, row_filter=row_filter).plan_files()
    expected = _oracle(TableScan(t, row_filter=row_filter))
    assert streamed == expected  # same order, every field equal
    assert streamed, "the filters keep some files"
    # a planned scan builds the same tasks again from its columnar plan
    scan = TableScan(t, row_filter=row_filter)
    scan.plan()
    assert scan.plan_files() == expected
    for task, want in zip(streamed, expected, strict=True):
        assert vars(task) == vars(want) and list(vars(task)) == [
            f.name for f in dataclasses.fields(FileScanTask)
        ]
        assert list(vars(task.data_file)) == [f.name for f in dataclasses.fields(DataFileRef)]
        assert pickle.loads(pickle.dumps(task)) == task
        assert dataclasses.replace(task, start=5).start == 5
    # the files of one partition in one manifest share their partition tuple
    by_manifest: dict[tuple[str, tuple[object, ...]], tuple[object, ...]] = {}
    for task in streamed:
        key = (task.data_file.file_path.split("-")[0], task.data_file.partition)
        assert by_manifest.setdefault(key, task.data_file.partition) is task.data_file.partition


def test_build_tasks_rejects_bad_indices() -> None:
    cols = pa.RecordBatch.from_pydict(
        {
            "file_path": ["a"],
            "file_format": ["parquet"],
            "record_count": pa.array([1], pa.int64()),
            "file_size_in_bytes": pa.array([2], pa.int64()),
            "first_row_id": pa.array([None], pa.int64()),
            "sequence_number": pa.array([1], pa.int64()),
            "file_sequence_number": pa.array([1], pa.int64()),
            "residual_index": pa.array([0], pa.int32()),
            "partition_index": pa.array([3], pa.int32()),
            "deletes": pa.array([[]], pa.list_(pa.int32())),
        }
    )
    with pytest.raises(ValidationError, match="partition index"):
        _native.plan_build_tasks(FileScanTask, DataFileRef, 0, cols, [()], [None], [])
    ok = cols.set_column(8, "partition_index", pa.array([0], pa.int32()))
    (task,) = _native.plan_build_tasks(FileScanTask, DataFileRef, 0, ok, [("p",)], ["r"], [])
    assert task.data_file.partition == ("p",) and task.residual == "r"
    bad = ok.set_column(7, "residual_index", pa.array([1], pa.int32()))
    with pytest.raises(ValidationError, match="residual index"):
        _native.plan_build_tasks(FileScanTask, DataFileRef, 0, bad, [()], ["r"], [])


_PART = pa.struct(
    [
        pa.field("d", pa.date32()),
        pa.field("s", pa.string()),
        pa.field("f", pa.float64()),
        pa.field("b", pa.int32()),
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.none() | st.dates(dt.date(1960, 1, 1), dt.date(1960, 1, 4)),
            st.none() | st.sampled_from(["", "a", "b"]),
            st.none() | st.sampled_from([0.0, -0.0, 1.5, float("nan")]),
            st.none() | st.integers(-2, 2),
        ),
        max_size=40,
    )
)
def test_distinct_partitions_reconstruct_every_row(rows: list[tuple[object, ...]]) -> None:
    partition = pa.array([dict(zip("dsfb", r, strict=True)) for r in rows], _PART)
    index, distinct = columnar._distinct_partitions(partition)
    expected = columnar._partition_tuples(partition)
    got = [distinct[i] for i in np.asarray(index)]
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        # NaN != NaN: compare the representations (which tell -0.0 from 0.0 too)
        assert repr(g) == repr(e)
    assert len(distinct) == len({repr(e) for e in expected}) or len(rows) == 0
