"""Task building: the streamed tasks of ``plan_files`` (built per batch while later manifests
decode) and the Rust task builder with shared partition tuples, checked against the Python
builder of :mod:`icefloe.scan.columnar` as the oracle."""

from __future__ import annotations

import datetime as dt
import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe import _native
from icefloe.exceptions import ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.scan import columnar, planner
from icefloe.scan.tasks import FileScanTask, replace_task
from icefloe.schema import Schema
from icefloe.table import scan as scan_module
from icefloe.table.scan import TableScan
from icefloe.transforms import IdentityTransform
from icefloe.types import LongType, NestedField, StringType
from icefloe.values import to_bytes
from support.plan_tables import HandTable, entry

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
        assert task._values() == want._values()
        assert task.data_file._values() == want.data_file._values()
        assert pickle.loads(pickle.dumps(task)) == task
        assert replace_task(task, start=5).start == 5
    # the files of one partition in one manifest share their partition tuple
    by_manifest: dict[tuple[str, tuple[object, ...]], tuple[object, ...]] = {}
    for task in streamed:
        key = (task.data_file.file_path.split("-")[0], task.data_file.partition)
        assert by_manifest.setdefault(key, task.data_file.partition) is task.data_file.partition


def _entries(partition: pa.Array | None = None) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "file_path": ["a"],
            "file_format": ["PARQUET"],
            "record_count": pa.array([1], pa.int64()),
            "file_size_in_bytes": pa.array([2], pa.int64()),
            "first_row_id": pa.array([None], pa.int64()),
            "sequence_number": pa.array([1], pa.int64()),
            "file_sequence_number": pa.array([1], pa.int64()),
            "partition": partition
            if partition is not None
            else pa.array([{"p": "x"}], pa.struct([("p", pa.string())])),
        }
    )


def test_build_tasks_rejects_bad_indices() -> None:
    b, zero = _entries(), pa.array([0], pa.int32())
    parts = (pa.array([3], pa.int32()), [()])
    with pytest.raises(ValidationError, match="partition index"):
        _native.plan_build_tasks(0, b, zero, [None], None, [], parts)
    (task,) = _native.plan_build_tasks(0, b, zero, ["r"]) or []
    assert task.data_file.partition == ("x",) and task.residual == "r"
    assert task.data_file.file_format == "parquet"  # lower-cased
    with pytest.raises(ValidationError, match="residual index"):
        _native.plan_build_tasks(0, b, pa.array([1], pa.int32()), ["r"])
    with pytest.raises(ValidationError, match="residual_index has 2 rows"):
        _native.plan_build_tasks(0, b, pa.array([0, 0], pa.int32()), ["r"])
    with pytest.raises(ValidationError, match="delete file index"):
        _native.plan_build_tasks(0, b, zero, ["r"], pa.array([[0]], pa.list_(pa.int32())), [])
    with pytest.raises(ValidationError, match="record_count"):
        _native.plan_build_tasks(0, b.drop_columns(["record_count"]), zero, ["r"])
    nulls = b.set_column(0, "file_path", pa.array([None], pa.string()))
    with pytest.raises(ValidationError, match="null file_path"):
        _native.plan_build_tasks(0, nulls, zero, ["r"])
    # a partition type without a Rust conversion: None, then built from given tuples
    dec = pa.array([{"d": 1}], pa.struct([("d", pa.decimal128(9, 2))]))
    assert _native.plan_build_tasks(0, _entries(dec), zero, ["r"]) is None


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
    # the Rust builder makes the same tuples, shared by the rows of one partition
    n = len(rows)
    entries = pa.RecordBatch.from_pydict(
        {
            "file_path": pa.array([f"f{i}" for i in range(n)], pa.string()),
            "file_format": pa.array(["parquet"] * n, pa.string()),
            "record_count": pa.array([1] * n, pa.int64()),
            "file_size_in_bytes": pa.array([1] * n, pa.int64()),
            "sequence_number": pa.array([1] * n, pa.int64()),
            "file_sequence_number": pa.array([1] * n, pa.int64()),
            "partition": partition,
        }
    )
    tasks = _native.plan_build_tasks(3, entries, pa.array([0] * n, pa.int32()), [None])
    assert tasks is not None
    parts = [t.data_file.partition for t in tasks]
    assert [repr(p) for p in parts] == [repr(e) for e in expected]
    assert len({id(p) for p in parts}) == len(distinct) or n == 0
    assert all(t.spec_id == 3 and t.data_file.first_row_id is None for t in tasks)


UNPART = PartitionSpec(spec_id=1)
BY_ID = PartitionSpec(PartitionField(1, 1001, IdentityTransform(), "id"), spec_id=2)


def _evolved(tmp_path: Path) -> HandTable:
    """Manifests of three specs in the order unpartitioned, by cat, by id: the partition union
    of the plan table grows batch after batch."""
    t = HandTable(tmp_path, SCHEMA, [BY_CAT, UNPART, BY_ID], 2)
    t.commit([(1, 0, [entry("u0"), entry("u1", record_count=3)])])
    t.commit([(0, 0, [entry("c0", {"cat": "x"}), entry("c1", {"cat": None})])])
    t.commit([(2, 0, [entry("i0", {"id": 7}, file_format="PARQUET")])])
    return t


@pytest.mark.parametrize("evolved", [False, True])
@pytest.mark.parametrize("row_filter", ["true", "cat = 'x'", "id >= 250", "cat is null or id < 30"])
def test_streamed_plan_table_equals_the_columnar_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row_filter: str, evolved: bool
) -> None:
    monkeypatch.setattr(planner, "_CHUNK", 1)  # one batch per chunk: conversion runs ahead
    t = _evolved(tmp_path) if evolved else _table(tmp_path)
    calls: list[int] = []
    real = columnar._batch_columns

    def counted(b: pa.RecordBatch, union: pa.StructType) -> dict[str, pa.Array]:
        calls.append(b.num_rows)
        return real(b, union)

    monkeypatch.setattr(columnar, "_batch_columns", counted)
    streamed = TableScan(t, row_filter=row_filter).plan_table()
    n_batches = len(calls)
    # the oracle: a planned scan converts its whole plan at the end
    scan = TableScan(t, row_filter=row_filter)
    plan = scan.plan()
    calls.clear()
    expected = scan.plan_table()
    assert len(calls) == len(plan.batches) == n_batches  # the stream converted every batch
    assert streamed.schema.equals(expected.schema, check_metadata=True)
    assert streamed.equals(expected)
    assert streamed.num_rows == sum(b.entries.num_rows for b in plan.batches)
    if evolved and row_filter == "true":
        assert sorted(f.name for f in streamed.schema.field("partition").type) == ["cat", "id"]
        rows = streamed.select(["file_path", "partition", "file_format"]).to_pylist()
        assert {r["file_path"]: r["partition"] for r in rows}["i0"] == {"cat": None, "id": 7}
        assert {r["file_format"] for r in rows} == {"parquet"}


def test_stream_missing_batches_falls_back(tmp_path: Path) -> None:
    scan = TableScan(_table(tmp_path))
    plan = scan.plan()
    stream = columnar.TableStream()
    stream(plan.batches[0], plan.residuals)  # saw only the first batch: not used
    assert columnar.plan_to_table(plan, None, stream).equals(columnar.plan_to_table(plan))
