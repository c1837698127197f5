"""The Rust scan task classes ``DataFileRef`` / ``FileScanTask``: construction, defaults and
validation as the frozen dataclasses they replaced, value equality and hashing, immutability,
printing, copying and pickling (also across a real subprocess with cloudpickle, as Spark ships
tasks), and tasks built in bulk from a planned batch against constructor-built ones."""

from __future__ import annotations

import copy
import datetime as dt
import gc
import pickle
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe import _native
from icefloe.exceptions import ValidationError
from icefloe.expressions.base import AlwaysTrue
from icefloe.scan.tasks import (
    DataFileRef,
    DeleteContent,
    DeleteFileRef,
    FileScanTask,
    replace_task,
)

POS = DeleteFileRef(DeleteContent.POSITION_DELETES, "s3://b/d.parquet", record_count=3)


def _full() -> DataFileRef:
    return DataFileRef("s3://b/f.parquet", "orc", 10, 2048, 2, (1, "x"), 100, 7, 8)


def test_defaults_and_fields() -> None:
    d = DataFileRef("a.parquet")
    assert (d.file_path, d.file_format, d.record_count, d.file_size_in_bytes) == (
        "a.parquet",
        "parquet",
        0,
        0,
    )
    assert (d.spec_id, d.partition, d.first_row_id) == (0, (), None)
    assert (d.data_sequence_number, d.file_sequence_number) == (None, None)
    t = FileScanTask(_full())
    assert t.delete_files == () and t.start == 0 and t.length is None
    assert t.residual is AlwaysTrue() and t.spec_id == 2  # spec id from the data file
    assert FileScanTask(_full(), spec_id=5).spec_id == 5
    kw = FileScanTask(data_file=_full(), delete_files=[POS], start=4, length=9, residual="r")
    assert kw.delete_files == (POS,) and isinstance(kw.delete_files, tuple)  # coerced
    assert (kw.start, kw.length, kw.residual) == (4, 9, "r")
    f = _full()
    assert (f.file_format, f.record_count, f.file_size_in_bytes, f.spec_id) == ("orc", 10, 2048, 2)
    assert (f.partition, f.first_row_id, f.data_sequence_number, f.file_sequence_number) == (
        (1, "x"),
        100,
        7,
        8,
    )


def test_bad_arguments_raise_validation_errors() -> None:
    with pytest.raises(ValidationError, match="file_path must be a str, got 3"):
        DataFileRef(3)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="record_count must be an int, got 'ten'"):
        DataFileRef("a", record_count="ten")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="first_row_id"):
        DataFileRef("a", first_row_id=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="data_file must be a DataFileRef"):
        FileScanTask("a.parquet")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="delete_files must be an iterable"):
        FileScanTask(_full(), delete_files=3)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="length"):
        FileScanTask(_full(), length="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        DataFileRef("a", colour="red")  # type: ignore[call-arg]


def test_equality_hash_and_repr() -> None:
    a, b = FileScanTask(_full(), (POS,)), FileScanTask(_full(), (POS,))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != FileScanTask(_full(), (POS,), start=1)
    assert a != FileScanTask(_full())
    assert _full() != DataFileRef("s3://b/f.parquet")
    assert a != "task" and _full() != ("s3://b/f.parquet",)
    assert repr(DataFileRef("a", partition=(1,))) == (
        "DataFileRef(file_path='a', file_format='parquet', record_count=0, "
        "file_size_in_bytes=0, spec_id=0, partition=(1,), first_row_id=None, "
        "data_sequence_number=None, file_sequence_number=None)"
    )
    assert repr(FileScanTask(DataFileRef("a"), residual="r")).startswith(
        "FileScanTask(data_file=DataFileRef(file_path='a', "
    )
    assert repr(FileScanTask(DataFileRef("a"), residual="r")).endswith(
        ", delete_files=(), start=0, length=None, residual='r', spec_id=0)"
    )


def test_immutable() -> None:
    t = FileScanTask(_full())
    with pytest.raises(AttributeError):
        t.start = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        t.data_file.file_path = "b"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        t.extra = 1  # type: ignore[attr-defined]


def test_copy_replace_pickle_and_match() -> None:
    t = FileScanTask(_full(), (POS,), 3, 4, "r", 9)
    for other in (copy.copy(t), copy.deepcopy(t), pickle.loads(pickle.dumps(t, protocol=5))):
        assert other == t and type(other) is FileScanTask
    assert pickle.loads(pickle.dumps(t.data_file)) == t.data_file
    r = replace_task(t, residual=AlwaysTrue(), start=0, length=None)
    assert (r.residual, r.start, r.length, r.spec_id, r.delete_files) == (
        AlwaysTrue(),
        0,
        None,
        9,
        (POS,),
    )
    assert t.start == 3  # the original is unchanged
    assert t.data_file.__replace__(record_count=1).record_count == 1
    with pytest.raises(TypeError, match="colour"):
        replace_task(t, colour="red")
    match t:
        case FileScanTask(DataFileRef(path, fmt), deletes, start):
            assert (path, fmt, deletes, start) == ("s3://b/f.parquet", "orc", (POS,), 3)
        case _:
            pytest.fail("the task did not match its fields")


def _entries() -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "file_path": [f"s3://b/data/f{i}.parquet" for i in range(6)],
            "file_format": ["PARQUET", "parquet", "Avro", "parquet", "orc", "parquet"],
            "record_count": pa.array(range(6), pa.int64()),
            "file_size_in_bytes": pa.array([100 * i for i in range(6)], pa.int64()),
            "first_row_id": pa.array([None, 5, None, 7, 8, None], pa.int64()),
            "sequence_number": pa.array([1, 1, 2, 2, None, 3], pa.int64()),
            "file_sequence_number": pa.array([1, 1, 2, 2, 4, None], pa.int64()),
            "partition": pa.array(
                [
                    {"d": 1, "s": "a", "t": 5, "b": b"\x00"},
                    {"d": 1, "s": "a", "t": 5, "b": b"\x00"},
                    {"d": None, "s": "a", "t": 5, "b": b"\x00"},
                    {"d": 1, "s": None, "t": -1, "b": None},
                    {"d": 1, "s": "a", "t": 5, "b": b"\x00"},
                    {"d": -3, "s": "é", "t": 0, "b": b""},
                ],
                pa.struct(
                    [
                        ("d", pa.date32()),
                        ("s", pa.string()),
                        ("t", pa.timestamp("us", "UTC")),
                        ("b", pa.binary()),
                    ]
                ),
            ),
        }
    )


def test_bulk_built_tasks_equal_constructed_ones() -> None:
    b = _entries()
    refs = [POS, DeleteFileRef(DeleteContent.POSITION_DELETES, "d2.parquet")]
    deletes = pa.array([[0], [], [0, 1], [], [1], []], pa.list_(pa.int32()))
    residuals = ["r0", "r1"]
    index = pa.array([0, 1, 0, 1, 0, 0], pa.int32())
    tasks = _native.plan_build_tasks(4, b, index, residuals, deletes, refs)
    assert tasks is not None
    rows = b.to_pylist()
    micros = b.column("partition").field("t").cast(pa.int64()).to_pylist()
    expected = []
    for i, row in enumerate(rows):
        p = row["partition"]
        days = None if p["d"] is None else (p["d"] - dt.date(1970, 1, 1)).days
        part = (days, p["s"], micros[i], p["b"])
        data = DataFileRef(
            row["file_path"],
            row["file_format"].lower(),
            row["record_count"],
            row["file_size_in_bytes"],
            4,
            part,
            row["first_row_id"],
            row["sequence_number"],
            row["file_sequence_number"],
        )
        dels = tuple(refs[j] for j in deletes[i].as_py())
        expected.append(FileScanTask(data, dels, residual=residuals[index[i].as_py()]))
    assert tasks == expected
    assert [hash(t) for t in tasks] == [hash(t) for t in expected]
    assert [repr(t) for t in tasks] == [repr(t) for t in expected]
    assert [pickle.loads(pickle.dumps(t)) for t in tasks] == expected
    # equal partitions share one tuple; the formats one string per distinct spelling
    assert tasks[0].data_file.partition is tasks[1].data_file.partition
    assert tasks[0].data_file.partition is tasks[4].data_file.partition
    assert tasks[1].data_file.file_format is tasks[3].data_file.file_format
    # the tasks outlive the batch they were built from
    del b
    gc.collect()
    assert [t.data_file.file_path for t in tasks] == [e.data_file.file_path for e in expected]


def test_cloudpickle_across_a_subprocess(tmp_path: Path) -> None:
    try:
        import cloudpickle
    except ImportError:  # PySpark ships its own copy, the one that pickles Spark's tasks
        cloudpickle = pytest.importorskip("pyspark.cloudpickle")
    tasks = _native.plan_build_tasks(0, _entries(), pa.array([0] * 6, pa.int32()), [AlwaysTrue()])
    assert tasks is not None
    payload = tmp_path / "tasks.pkl"
    payload.write_bytes(cloudpickle.dumps(tasks))
    code = (
        "import pickle, sys\n"
        "tasks = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "print(type(tasks[0]).__module__, type(tasks[0]).__qualname__)\n"
        "print(ascii(tasks))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(payload)], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    assert out[0] == "icefloe.scan.tasks FileScanTask"
    assert out[1] == ascii(tasks)
