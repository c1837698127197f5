"""Row-level matching of many files at once through the native reader: the same positions and
key matches as the per-task functions (the oracle), every task the native path cannot read left
to them, and deletes and upserts that leave the same table either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe import _native
from icefloe.expressions import col
from icefloe.io import FileIO
from icefloe.read import DeleteCache, native_files
from icefloe.scan import DataFileRef, FileScanTask
from icefloe.scan.tasks import METADATA_COLUMNS, ROW_ID
from icefloe.schema import Schema
from icefloe.types import LongType, NestedField, StringType, StructType
from icefloe.write.matching import (
    KeySet,
    bind_filter,
    matching_key_positions,
    matching_positions,
    native_matching_key_positions,
    native_matching_positions,
)
from support.read_util import write_data, write_dv
from support.write_util import catalog

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "v", LongType(), required=False),
)
NESTED = Schema(*SCHEMA.fields, NestedField(4, "st", StructType(NestedField(5, "a", LongType()))))


def _rows(start: int, n: int) -> list[dict[str, Any]]:
    return [
        {"id": i, "name": None if i % 5 == 0 else f"n{i % 3}", "v": None if i % 7 == 3 else i * 10}
        for i in range(start, start + n)
    ]


def _tasks(tmp: Path, sizes: list[int], deleted: list[list[int]]) -> list[FileScanTask]:
    tasks, start = [], 0
    for k, (n, gone) in enumerate(zip(sizes, deleted, strict=True)):
        df = write_data(tmp / f"d{k}.parquet", SCHEMA, _rows(start, n), row_group_size=9)
        df = DataFileRef(
            df.file_path,
            record_count=n,
            file_size_in_bytes=df.file_size_in_bytes,
            first_row_id=10_000 * k,
        )
        gone = sorted({g for g in gone if g < n})
        dv = (write_dv(tmp / f"dv{k}.bin", gone, df.file_path),) if gone else ()
        tasks.append(FileScanTask(df, dv))
        start += n
    return tasks


class _Calls:
    """Counts the files the native reader read and left."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read = 0
        self.left = 0
        real = _native.parquet_read_files

        def spy(*args: Any, **kwargs: Any) -> list[list[pa.RecordBatch] | None]:
            out = real(*args, **kwargs)
            self.read += sum(f is not None for f in out)
            self.left += sum(f is None for f in out)
            return out

        monkeypatch.setattr(_native, "parquet_read_files", spy)


FILTERS = [
    "id < {cut}",
    "name = 'n1' or v > {cut}0",
    "not (v >= {cut}0)",  # null v: not(unknown) does not match
    "name != 'n2' and id >= {cut}",
    "v is null or id = {cut}",
    "name in ('n0', 'n2') and not name = 'n0'",
]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(1, 40), min_size=1, max_size=6),
    st.lists(st.lists(st.integers(0, 39), max_size=8), min_size=6, max_size=6),
    st.integers(-3, 150),
    st.sampled_from(FILTERS),
    st.integers(1, 3),
)
def test_positions_match_the_per_task_function(
    tmp_path_factory: pytest.TempPathFactory,
    sizes: list[int],
    deleted: list[list[int]],
    cut: int,
    text: str,
    chunk: int,
) -> None:
    tmp = tmp_path_factory.mktemp("p")
    tasks = _tasks(tmp, sizes, deleted[: len(sizes)])
    bound = bind_filter(SCHEMA, text.format(cut=cut))
    old = native_files.CHUNK_FILES
    native_files.CHUNK_FILES = chunk  # several calls, one decoded ahead
    try:
        got = native_matching_positions(FileIO(), tasks, SCHEMA, bound, cache=DeleteCache())
    finally:
        native_files.CHUNK_FILES = old
    want = [matching_positions(FileIO(), t, SCHEMA, bound) for t in tasks]
    assert [g.to_pylist() if g is not None else None for g in got] == [w.to_pylist() for w in want]
    assert all(g is not None and g.type == pa.int64() for g in got)


@settings(max_examples=20, deadline=None)
@given(
    st.lists(st.integers(1, 40), min_size=1, max_size=5),
    st.lists(st.lists(st.integers(0, 39), max_size=8), min_size=5, max_size=5),
    st.lists(st.integers(-2, 130), max_size=30),
    st.booleans(),
    st.booleans(),
)
def test_key_matches_and_row_ids_match_the_per_task_function(
    tmp_path_factory: pytest.TempPathFactory,
    sizes: list[int],
    deleted: list[list[int]],
    ids: list[int],
    with_row_ids: bool,
    reverse: bool,
) -> None:
    tmp = tmp_path_factory.mktemp("k")
    tasks = _tasks(tmp, sizes, deleted[: len(sizes)])
    names = [None if i % 5 == 0 else f"n{i % 3}" for i in ids]
    key_table = pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.string())})
    # join columns in the schema's order or the other way round (matched by name in Rust)
    join = ["name", "id"] if reverse else ["id", "name"]
    keys = KeySet(key_table.select(join), join)
    got = native_matching_key_positions(
        FileIO(), tasks, SCHEMA, keys, cache=DeleteCache(), with_row_ids=with_row_ids
    )
    for g, t in zip(got, tasks, strict=True):
        want = matching_key_positions(FileIO(), t, SCHEMA, keys, with_row_ids=with_row_ids)
        assert g is not None
        assert g.schema.equals(want.schema, check_metadata=True)
        assert g.equals(want)


def test_a_filter_under_not_reads_its_columns(tmp_path: Path) -> None:
    """The columns a filter names only under ``not`` are read for it (a chunk without them
    could not be filtered)."""
    tasks = _tasks(tmp_path, [30, 12], [[3], []])
    bound = bind_filter(SCHEMA, "not (v >= 100 or name = 'n1')")
    got = native_matching_positions(FileIO(), tasks, SCHEMA, bound, cache=DeleteCache())
    want = [matching_positions(FileIO(), t, SCHEMA, bound) for t in tasks]
    assert [g.to_pylist() if g is not None else None for g in got] == [w.to_pylist() for w in want]
    assert got[0] is not None and got[0].to_pylist()


def test_stored_row_ids_win_over_inherited_ones(tmp_path: Path) -> None:
    """A file rewritten with row lineage stores its rows' ids (some null: inherited)."""
    row_id = NestedField(METADATA_COLUMNS[ROW_ID], ROW_ID, LongType(), required=False)
    stored = Schema(*SCHEMA.fields, row_id)
    rows = [{**r, ROW_ID: None if r["id"] % 4 == 0 else 777 + r["id"]} for r in _rows(0, 30)]
    df = write_data(tmp_path / "r.parquet", stored, rows)
    task = FileScanTask(
        DataFileRef(
            df.file_path,
            record_count=30,
            file_size_in_bytes=df.file_size_in_bytes,
            first_row_id=5000,
        )
    )
    keys = KeySet(pa.table({"id": pa.array([0, 1, 4, 9, 50], pa.int64())}), ["id"])
    got = native_matching_key_positions(
        FileIO(), [task], SCHEMA, keys, cache=DeleteCache(), with_row_ids=True
    )[0]
    want = matching_key_positions(FileIO(), task, SCHEMA, keys, with_row_ids=True)
    assert got is not None and got.equals(want)
    assert got.column(ROW_ID).to_pylist() == [5000, 778, 5004, 786]


def test_tasks_the_native_path_cannot_read_are_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = _tasks(tmp_path, [10, 10], [[], [1]])
    calls = _Calls(monkeypatch)
    bound = bind_filter(SCHEMA, col("v") > 20)
    io = FileIO()
    # a file that lacks a filter column (written before the column was added)
    old = Schema(*SCHEMA.fields[:2])
    df = write_data(tmp_path / "old.parquet", old, [{"id": 1, "name": "x"}])
    lacking = FileScanTask(
        DataFileRef(df.file_path, record_count=1, file_size_in_bytes=df.file_size_in_bytes)
    )
    # a task over part of a file (streamed: its row groups), one whose record count is unknown
    part = FileScanTask(tasks[0].data_file, start=4, length=10)
    unknown = FileScanTask(DataFileRef(tasks[0].data_file.file_path))
    got = native_matching_positions(
        io, [*tasks, lacking, part, unknown], SCHEMA, bound, cache=DeleteCache()
    )
    assert [g is None for g in got] == [False, False, True, False, True]
    assert calls.left == 1  # only the lacking file reached the native reader and was refused
    # the split holds the first row group (rows 0-8; row 3's v is null)
    assert got[3] is not None and got[3].to_pylist() == [4, 5, 6, 7, 8]
    # a filter on a nested field: nothing native
    nested = bind_filter(NESTED, col("st.a") > 1)
    assert native_matching_positions(io, tasks, NESTED, nested, cache=DeleteCache()) == [
        None,
        None,
    ]
    monkeypatch.setattr(native_files, "ENABLED", False)
    assert native_matching_positions(io, tasks, SCHEMA, bound, cache=DeleteCache()) == [
        None,
        None,
    ]


@pytest.mark.parametrize("version", [2, 3])
def test_deletes_and_upserts_leave_the_same_table_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    """End to end on a partitioned merge-on-read table (position deletes on v2, DVs on v3,
    row lineage on v3): the native matching and the per-task path commit the same rows."""
    data = pa.table(
        {
            "id": pa.array(range(2000), pa.int64()),
            "part": pa.array([i % 8 for i in range(2000)], pa.int32()),
            "v": pa.array([None if i % 11 == 0 else i / 7 for i in range(2000)]),
        }
    )
    props = {f"write.{op}.mode": "merge-on-read" for op in ("delete", "update", "merge")}
    results = []
    for native in (True, False):
        cat = catalog(tmp_path / f"n{native}")
        t = cat.create_table("ns.t", data.schema, properties=props, format_version=version)
        with t.update_spec() as u:
            u.add_field("part")
        t = t.refresh()
        t.append(data)
        monkeypatch.setattr(native_files, "ENABLED", native)
        calls = _Calls(monkeypatch)
        t.refresh().delete("v < 50 or v > 250")
        upd = pa.table(
            {
                "id": pa.array(range(1500, 2600, 3), pa.int64()),
                "part": pa.array([i % 8 for i in range(1500, 2600, 3)], pa.int32()),
                "v": pa.array([-1.0] * len(range(1500, 2600, 3))),
            }
        )
        t.refresh().upsert(upd, ["id"])
        t.refresh().delete("id >= 1900 and id < 1950")
        assert (calls.read > 0) == native
        out = t.refresh().scan(selected_fields=("*", "_row_id") if version == 3 else ("*",))
        results.append(out.to_arrow().sort_by("id"))
    assert results[0].equals(results[1])
    assert 0 < results[0].num_rows < 2100
    assert pa.compute.max(results[0]["v"]).as_py() <= 250
