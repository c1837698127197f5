"""Scan output over planned tasks: streaming reader, limit, parallel files, count, pandas."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.exceptions import CorruptFileError, FileIOError
from icefloe.expressions.binding import bind
from icefloe.expressions.builder import col
from icefloe.io import FileIO
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.read import (
    DeleteCache,
    count,
    read_tasks,
    scan_schema,
    to_arrow,
    to_batches,
    to_pandas,
)
from icefloe.read.scan_output import iter_batches, max_tasks_ahead
from icefloe.scan import DataFileRef, FileScanTask, ReadOptions
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import IntegerType, LongType, NestedField, StringType
from support.read_util import write_data, write_dv, write_eq_deletes, write_pos_deletes

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "cat", StringType()),
    NestedField(3, "n", IntegerType()),
)


def _files(tmp_path: Path, k: int, per: int = 50) -> list[FileScanTask]:
    tasks = []
    for f in range(k):
        rows = [{"id": f * per + i, "cat": f"c{i % 3}", "n": i % 4} for i in range(per)]
        tasks.append(
            FileScanTask(write_data(tmp_path / f"d{f}.parquet", SCHEMA, rows, row_group_size=20))
        )
    return tasks


def _reader_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith("icefloe-read-"))


def test_batches_stream_in_task_order_with_schema_up_front(tmp_path: Path) -> None:
    tasks = _files(tmp_path, 7)
    opts = ReadOptions(SCHEMA, metadata_columns=("_file", "_pos"))
    reader = to_batches(FileIO(), tasks, opts, max_workers=3)
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema == scan_schema(opts)
    assert reader.schema.names == ["id", "cat", "n", "_file", "_pos"]
    got = reader.read_all()
    assert got.column("id").to_pylist() == list(range(350))
    sequential = pa.Table.from_batches(list(read_tasks(FileIO(), tasks, opts)))
    assert got.equals(sequential)


def test_parallel_equals_single_worker_with_shared_deletes(tmp_path: Path) -> None:
    tasks = _files(tmp_path, 6)
    paths = [t.data_file.file_path for t in tasks]
    pos = write_pos_deletes(tmp_path / "pos.parquet", [(p, 3) for p in paths])
    eq = write_eq_deletes(tmp_path / "eq.parquet", SCHEMA, (3,), [{"n": 1}])
    dv = write_dv(tmp_path / "dv.puffin", [0, 49], paths[2])
    with_deletes = [
        FileScanTask(t.data_file, (pos, eq) + ((dv,) if i == 2 else ()))
        for i, t in enumerate(tasks)
    ]
    opts = ReadOptions(SCHEMA)
    cache = DeleteCache()
    parallel = pa.Table.from_batches(
        list(iter_batches(FileIO(), with_deletes, opts, max_workers=4, cache=cache)),
        schema=scan_schema(opts),
    )
    single = to_arrow(FileIO(), with_deletes, opts, max_workers=1)
    assert parallel.equals(single)
    expected = [
        f * 50 + i
        for f in range(6)
        for i in range(50)
        if i != 3 and i % 4 != 1 and not (f == 2 and i in (0, 49))
    ]
    assert parallel.column("id").to_pylist() == expected
    # The shared files were decoded once although four threads wanted them.
    # pos file, eq file (and the entry that shares its table by bytes), the eq set (and the
    # entry that shares it by content), the DV
    assert cache.loads == 6


def test_limit_stops_reading_and_workers(tmp_path: Path) -> None:
    tasks = _files(tmp_path, 8)
    opts = ReadOptions(SCHEMA, projected_field_ids=(1,))
    assert to_arrow(FileIO(), tasks, opts, limit=0).num_rows == 0
    got = to_arrow(FileIO(), tasks, opts, limit=123, max_workers=3)
    assert got.column("id").to_pylist() == list(range(123))
    reader = to_batches(FileIO(), tasks, opts, max_workers=3)
    first = reader.read_next_batch()
    assert first.num_rows > 0
    reader.close()
    deadline = time.monotonic() + 5
    while _reader_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _reader_threads() == 0


def test_workers_are_bounded(tmp_path: Path) -> None:
    tasks = _files(tmp_path, 12, per=20)
    seen = []
    reader = to_batches(FileIO(), tasks, ReadOptions(SCHEMA), max_workers=2)
    for _ in reader:
        seen.append(_reader_threads())
    assert max(seen) <= max_tasks_ahead(2)


def test_reader_threads_are_reused_across_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many small tasks are read by at most ``max_tasks_ahead`` threads in all, not one
    thread per task, and the rows still come in task order."""
    from icefloe.read import scan_output

    readers: set[str] = set()

    def one_batch(
        io: object, task: FileScanTask, options: object, cache: object, handle: object = None
    ) -> Any:
        readers.add(threading.current_thread().name)  # idents are recycled, names are not
        yield pa.record_batch({"id": pa.array([int(task.data_file.file_path[1:-8])], pa.int64())})

    monkeypatch.setattr(scan_output, "read_task", one_batch)
    tasks = [FileScanTask(DataFileRef(f"x{i}.parquet")) for i in range(200)]
    got = list(iter_batches(FileIO(), tasks, ReadOptions(SCHEMA), max_workers=2))
    assert [b.column(0)[0].as_py() for b in got] == list(range(200))
    assert 1 <= len(readers) <= max_tasks_ahead(2)


def test_at_most_max_workers_tasks_decode_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read-ahead starts more threads than ``max_workers`` but only ``max_workers`` of them
    produce batches at any moment (the others wait for a slot or on a full queue)."""
    from icefloe.read import scan_output

    active = [0]
    worst = [0]
    lock = threading.Lock()

    def busy_batches(
        io: object, task: FileScanTask, options: object, cache: object, handle: object = None
    ) -> Any:
        for i in range(6):
            with lock:
                active[0] += 1
                worst[0] = max(worst[0], active[0])
            time.sleep(0.001)
            with lock:
                active[0] -= 1
            yield pa.record_batch({"id": pa.array([i], pa.int64())})

    monkeypatch.setattr(scan_output, "read_task", busy_batches)
    tasks = [FileScanTask(DataFileRef(f"x{i}.parquet")) for i in range(10)]
    got = list(iter_batches(FileIO(), tasks, ReadOptions(SCHEMA), max_workers=2))
    assert [b.column(0)[0].as_py() for b in got] == list(range(6)) * 10
    assert worst[0] <= 2


def test_later_tasks_read_ahead_while_an_earlier_task_is_slow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the consumer waits on task 0, task 1 filling its queue lends its slot, so tasks 2
    and 3 are read meanwhile (the slot is not left idle); output stays in task order."""
    from icefloe.read import scan_output

    events: list[str] = []
    lock = threading.Lock()
    release = threading.Event()

    def batches(
        io: object, task: FileScanTask, options: object, cache: object, handle: object = None
    ) -> Any:
        name = task.data_file.file_path
        if name == "x0.parquet":
            assert release.wait(10)
        # x1 overfills its queue (and must lend its slot); x2 and x3 fit in theirs.
        many = name in ("x0.parquet", "x1.parquet") or name >= "x4"
        for i in range(scan_output.QUEUE_DEPTH + (3 if many else 0)):
            yield pa.record_batch({"id": pa.array([i], pa.int64())})
        with lock:
            events.append(name)
            if name == "x3.parquet":
                release.set()

    monkeypatch.setattr(scan_output, "read_task", batches)
    tasks = [FileScanTask(DataFileRef(f"x{i}.parquet")) for i in range(6)]
    got = list(iter_batches(FileIO(), tasks, ReadOptions(SCHEMA), max_workers=2))
    assert len(got) == 6 * scan_output.QUEUE_DEPTH + 4 * 3
    # x3 finished producing before x0 did: the read-ahead ran while task 0 was blocked.
    assert events.index("x3.parquet") < events.index("x0.parquet")


def test_error_in_a_later_task_names_file_and_gives_no_table(tmp_path: Path) -> None:
    tasks = _files(tmp_path, 4)
    missing = FileScanTask(DataFileRef(str(tmp_path / "missing.parquet")))
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 but not really")
    junk = FileScanTask(DataFileRef(str(tmp_path / "junk.parquet")))
    with pytest.raises(FileIOError, match=r"missing\.parquet"):
        to_arrow(FileIO(), [*tasks, missing], ReadOptions(SCHEMA), max_workers=2)
    with pytest.raises(CorruptFileError, match=r"junk\.parquet"):
        to_arrow(FileIO(), [tasks[0], junk, tasks[1]], ReadOptions(SCHEMA), max_workers=3)
    reader = to_batches(FileIO(), [tasks[0], missing], ReadOptions(SCHEMA), max_workers=2)
    rows = 0
    with pytest.raises(FileIOError, match=r"missing\.parquet"):
        for batch in reader:
            rows += batch.num_rows
    assert rows == 50  # the first file's rows came out, then the stream failed (not ended)
    with pytest.raises(FileIOError):
        count(FileIO(), [missing], ReadOptions(SCHEMA))


def test_count_from_metadata_and_by_reading(tmp_path: Path) -> None:
    # Files that do not exist: a metadata-only count never opens them.
    ghosts = [
        FileScanTask(DataFileRef(str(tmp_path / f"ghost{i}.parquet"), record_count=10 + i))
        for i in range(3)
    ]
    assert count(FileIO(), ghosts, ReadOptions(SCHEMA)) == 33
    tasks = _files(tmp_path, 3)
    df = tasks[0].data_file
    pos = write_pos_deletes(tmp_path / "pos.parquet", [(df.file_path, 1), (df.file_path, 2)])
    eq = write_eq_deletes(tmp_path / "eq.parquet", SCHEMA, (2,), [{"cat": "c0"}])
    filtered = FileScanTask(tasks[2].data_file, residual=bind(SCHEMA, col("n") == 0))
    mixed = [FileScanTask(df, (pos,)), FileScanTask(tasks[1].data_file, (eq,)), filtered]
    expected = to_arrow(FileIO(), mixed, ReadOptions(SCHEMA)).num_rows
    assert expected == 48 + 33 + 13
    assert count(FileIO(), mixed, ReadOptions(SCHEMA, projected_field_ids=(1,))) == expected
    assert count(FileIO(), [], ReadOptions(SCHEMA)) == 0


def test_to_pandas(tmp_path: Path) -> None:
    tasks = _files(tmp_path, 2)
    df = to_pandas(FileIO(), tasks, ReadOptions(SCHEMA), limit=60)
    assert list(df.columns) == ["id", "cat", "n"]
    assert df["id"].tolist() == list(range(60))


def test_partition_column_has_one_type_across_specs(tmp_path: Path) -> None:
    s0 = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "cat"), spec_id=0)
    s1 = PartitionSpec(
        PartitionField(2, 1000, parse_transform("identity"), "cat"),
        PartitionField(3, 1001, parse_transform("identity"), "n"),
        spec_id=1,
    )
    a = write_data(tmp_path / "a.parquet", SCHEMA, [{"id": 1, "cat": "x", "n": 5}])
    b = write_data(tmp_path / "b.parquet", SCHEMA, [{"id": 2, "cat": "y", "n": 6}])
    tasks = [
        FileScanTask(DataFileRef(a.file_path, record_count=1, spec_id=0, partition=("x",))),
        FileScanTask(DataFileRef(b.file_path, record_count=1, spec_id=1, partition=("y", 6))),
    ]
    opts = ReadOptions(
        SCHEMA, specs={0: s0, 1: s1}, projected_field_ids=(1,), metadata_columns=("_partition",)
    )
    got = to_arrow(FileIO(), tasks, opts, max_workers=2)
    assert got.column("_partition").to_pylist() == [
        {"cat": "x", "n": None},
        {"cat": "y", "n": 6},
    ]


def test_empty_projection_keeps_row_counts(tmp_path: Path) -> None:
    tasks = _files(tmp_path, 2)
    got = to_arrow(FileIO(), tasks, ReadOptions(SCHEMA, projected_field_ids=()))
    assert got.num_columns == 0
    assert got.num_rows == 100


def test_memory_bound_batches_ahead_of_consumer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers stop producing when their queues are full: the batches produced but not yet
    consumed never exceed max_tasks_ahead(max_workers) x (QUEUE_DEPTH + 1)."""
    from icefloe.read import scan_output

    produced = [0]
    lock = threading.Lock()

    def many_batches(
        io: object, task: FileScanTask, options: object, cache: object, handle: object = None
    ) -> Any:
        for i in range(40):
            with lock:
                produced[0] += 1
            yield pa.record_batch({"id": pa.array([i], pa.int64())})

    monkeypatch.setattr(scan_output, "read_task", many_batches)
    tasks = [FileScanTask(DataFileRef(f"x{i}.parquet")) for i in range(6)]
    workers = 3
    consumed = 0
    worst = 0
    for _ in iter_batches(FileIO(), tasks, ReadOptions(SCHEMA), max_workers=workers):
        consumed += 1
        time.sleep(0.002)
        with lock:
            worst = max(worst, produced[0] - consumed)
    assert consumed == 240
    assert worst <= scan_output.max_tasks_ahead(workers) * (scan_output.QUEUE_DEPTH + 1)


@pytest.mark.parametrize("mib, started_ahead", [(100, False), (1, True)])
def test_large_tasks_are_not_started_ahead(
    monkeypatch: pytest.MonkeyPatch, mib: int, started_ahead: bool
) -> None:
    """Tasks started ahead of the consumer must fit in READ_AHEAD_BYTES together with the
    one being consumed: splits of 100 MiB (each holding a decoded row group while in flight)
    start one at a time; files of 1 MiB are read ahead."""
    from icefloe.read import scan_output

    per_task = 3
    consumed = [0]
    seen_at_start: list[int] = []
    lock = threading.Lock()

    def batches(
        io: object, task: FileScanTask, options: object, cache: object, handle: object = None
    ) -> Any:
        with lock:
            seen_at_start.append(consumed[0])
        for i in range(per_task):
            yield pa.record_batch({"id": pa.array([i], pa.int64())})

    monkeypatch.setattr(scan_output, "read_task", batches)
    size = mib * 1024 * 1024
    tasks = [FileScanTask(DataFileRef(f"x{i}.parquet", file_size_in_bytes=size)) for i in range(6)]
    for _ in iter_batches(FileIO(), tasks, ReadOptions(SCHEMA), max_workers=2):
        time.sleep(0.01)
        with lock:
            consumed[0] += 1
    assert consumed[0] == 6 * per_task
    # A task started ahead began before the consumer had every batch of the earlier tasks.
    ahead = [i for i, seen in enumerate(sorted(seen_at_start)) if seen < per_task * i]
    assert bool(ahead) is started_ahead


def test_large_row_groups_are_read_one_call_each() -> None:
    """pyarrow holds every row group of one ``iter_batches`` call until it ends: row groups
    larger than a batch get a call each, small consecutive ones share one up to a batch."""
    from icefloe.read.parquet_file import CheckedParquetFile
    from icefloe.read.reader import BATCH_SIZE, _runs

    big, small = BATCH_SIZE + 1, BATCH_SIZE // 4
    sizes = [big, big, small, small, small, small, small, big]
    checked = CheckedParquetFile(None, [(n, [], []) for n in sizes], None, None)  # type: ignore[arg-type]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    groups = [(i, starts[i]) for i in range(len(sizes)) if i != 5]  # 5 pruned
    runs = [[g[0] for g in run] for run in _runs(groups, checked)]
    assert runs == [[0], [1], [2, 3, 4], [6], [7]]


@pytest.mark.parametrize("record_count, most_ahead", [(100, 2), (10_000_000, 4)])
def test_tasks_that_cannot_lend_their_slot_are_not_started_further_ahead(
    monkeypatch: pytest.MonkeyPatch, record_count: int, most_ahead: int
) -> None:
    """Only a task that can fill its queue (more than QUEUE_DEPTH batches) lends its slot, so
    only such tasks are started up to READ_AHEAD x max_workers ahead of the consumer; small
    files stay within max_workers (more threads would only contend for the GIL), and so do
    the reader threads."""
    from icefloe.read import scan_output

    consumed = [0]
    worst = [0, 0]  # tasks started ahead of the consumer, reader threads
    lock = threading.Lock()

    def batches(
        io: object, task: FileScanTask, options: object, cache: object, handle: object = None
    ) -> Any:
        i = int(task.data_file.file_path[1:-8])
        with lock:
            worst[0] = max(worst[0], i - consumed[0] + 1)
            worst[1] = max(worst[1], _reader_threads())
        yield pa.record_batch({"id": pa.array([i], pa.int64())})

    monkeypatch.setattr(scan_output, "read_task", batches)
    tasks = [
        FileScanTask(DataFileRef(f"x{i}.parquet", record_count=record_count)) for i in range(12)
    ]
    for _ in iter_batches(FileIO(), tasks, ReadOptions(SCHEMA), max_workers=2):
        time.sleep(0.01)
        with lock:
            consumed[0] += 1
    assert consumed[0] == 12
    assert worst[0] == most_ahead
    assert worst[1] <= most_ahead
