"""Large files streamed natively (their columns decoded in parallel, a batch at a time): the
same batches as the general reader, with every kind of delete, for whole files and splits,
and a stream that fails part way handing the rest of its file to the general reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe import _native
from icefloe.exceptions import CorruptFileError
from icefloe.expressions.base import AlwaysTrue
from icefloe.read import native_files
from icefloe.scan import FileScanTask
from support.write_util import catalog


class _Streams:
    """Records the streams the native path opened (None: refused) and whether each failed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened: list[Any] = []
        self.ranges: list[tuple[int, int | None]] = []  # (start, length) of each stream
        real = _native.parquet_open_stream

        def spy(*args: Any, **kwargs: Any) -> Any:
            out = real(*args, **kwargs)
            self.opened.append(out)
            self.ranges.append((kwargs.get("start", 0), kwargs.get("length")))
            return out

        monkeypatch.setattr(native_files._native, "parquet_open_stream", spy)

    @property
    def all_read(self) -> bool:
        return bool(self.opened) and all(s is not None and not s.failed for s in self.opened)


def _general(monkeypatch: pytest.MonkeyPatch, read: Any) -> Any:
    with monkeypatch.context() as m:
        m.setattr(native_files, "ENABLED", False)
        return read()


def _data(rows: int, start: int = 0) -> pa.Table:
    ids = pa.array(range(start, start + rows), pa.int64())
    return pa.table(
        {
            "id": ids,
            "s": pa.array([None if i % 11 == 3 else f"v{i % 97}" for i in range(rows)]),
            "d": pa.array([i / 7 for i in range(rows)], pa.float64()),
            "ts": pa.array([1_700_000_000_000_000 + i for i in range(rows)], pa.timestamp("us")),
        }
    )


def _table(tmp_path: Path, rows: int, version: int = 2, **props: str) -> Any:
    """A table of one file in row groups of 1,000 rows."""
    props = {"write.parquet.row-group-limit": "1000", **props}
    t = catalog(tmp_path).create_table(
        "ns.t", _data(1).schema, properties=props, format_version=version
    )
    t.append(_data(rows))
    return t.refresh()


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> _Streams:
    """Every file is streamed, in batches smaller than a row group."""
    monkeypatch.setattr(native_files, "MAX_FILE_BYTES", 0)
    monkeypatch.setattr(native_files, "BATCH_SIZE", 300)
    return _Streams(monkeypatch)


def test_a_large_file_streams_as_the_general_reader_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: _Streams
) -> None:
    t = _table(tmp_path, 4500)
    assert pq.ParquetFile(_paths(t)[0]).metadata.num_row_groups == 5
    for fields in [("*",), ("ts", "id"), ("s",)]:
        streamed.opened.clear()
        got = t.scan(selected_fields=fields).to_arrow()
        assert streamed.all_read, fields
        want = _general(monkeypatch, lambda f=fields: t.scan(selected_fields=f).to_arrow())
        assert got.schema.equals(want.schema, check_metadata=True)
        assert got.equals(want)
    assert t.scan().to_arrow()["id"].to_pylist() == list(range(4500))
    batches = list(t.scan().to_batches())
    assert max(b.num_rows for b in batches) <= 300  # streamed, never the file at once


@pytest.mark.parametrize("version", [2, 3])
def test_streams_drop_deleted_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: _Streams, version: int
) -> None:
    """Deletion vectors or position delete files, then equality deletes on a column the scan
    does not project: the same rows as the general reader."""
    t = _table(tmp_path, 5000, version, **{"write.delete.mode": "merge-on-read"})
    t.delete("id < 700 or (id > 2990 and id < 3020) or id >= 4990")
    t.refresh().delete_by_keys(pa.table({"s": ["v5", "v6"]}), ["s"])
    t = t.refresh()
    kinds = {d.content.value for task in t.scan().plan_files() for d in task.delete_files}
    assert kinds == {"position-deletes", "equality-deletes"}
    for fields in [("*",), ("id",), ("d", "ts")]:
        streamed.opened.clear()
        got = t.scan(selected_fields=fields).to_arrow()
        assert streamed.all_read, fields
        want = _general(monkeypatch, lambda f=fields: t.scan(selected_fields=f).to_arrow())
        assert got.equals(want)
    ids = t.scan().to_arrow()["id"].to_pylist()
    assert ids[0] == 700 and 3000 not in ids and 3020 in ids and ids[-1] < 4990
    assert t.scan().count() == len(ids)


def test_splits_of_a_file_stream_their_own_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: _Streams
) -> None:
    t = _table(tmp_path, 9000, **{"read.split.target-size": "20000"})
    tasks = list(t.scan().plan_tasks())
    assert len(tasks) > 2 and len({task.data_file.file_path for task in tasks}) == 1
    got = t.scan().to_arrow()
    assert len(streamed.opened) == len(tasks) and streamed.all_read
    assert got["id"].to_pylist() == list(range(9000))
    assert got.equals(_general(monkeypatch, lambda: t.scan().to_arrow()))
    # row-level matching streams the file too: positions are the file's
    streamed.opened.clear()
    t.delete("id in (0, 999, 1000, 4321, 8999)")
    assert streamed.all_read
    assert t.refresh().scan().to_arrow()["id"].to_pylist() == [
        i for i in range(9000) if i not in (0, 999, 1000, 4321, 8999)
    ]


def test_a_damaged_page_ends_the_stream_and_the_general_reader_names_it(
    tmp_path: Path, streamed: _Streams
) -> None:
    t = _table(tmp_path, 4000, **{"write.parquet.compression-codec": "uncompressed"})
    path = Path(_paths(t)[0])
    data = bytearray(path.read_bytes())
    at = data.index((3777).to_bytes(8, "little"))  # an id in the fourth row group
    data[at] ^= 1  # a plausible value: only the page checksum can tell
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match=str(path)):
        t.scan().to_arrow()
    assert streamed.opened and streamed.opened[0].failed


def _num_values_at(data: bytes, start: int) -> int:
    """Where the ``num_values`` varint of the data page header at ``start`` begins (Thrift
    compact: the header's i32 fields, then the data page header struct, whose first field it
    is)."""
    pos = start
    while data[pos] & 0x0F != 0x0C:
        assert data[pos] & 0x0F == 0x05, "only i32 fields come before the struct"
        pos += 1
        while data[pos] & 0x80:
            pos += 1
        pos += 1
    assert data[pos + 1] & 0x0F == 0x05, "num_values is the struct's first field"
    return pos + 2


def test_a_damaged_page_count_is_refused_before_any_batch(
    tmp_path: Path, streamed: _Streams
) -> None:
    """Page headers carry no checksum and a stream counts a chunk's pages only at its end,
    after handing out the batches before (where a padding level taken as a value shifts the
    column's later values to other rows). A value count one too high in the last row group's
    ``s`` page: the stream refuses the file at open, and the general reader names it before
    any batch."""
    t = _table(tmp_path, 4000, **{"write.parquet.compression-codec": "uncompressed"})
    path = Path(_paths(t)[0])
    data = bytearray(path.read_bytes())
    start = pq.ParquetFile(path).metadata.row_group(3).column(1).data_page_offset
    at = _num_values_at(bytes(data), start)
    assert data[at : at + 2] == bytes([0xD0, 0x0F])  # 1,000 values (zigzag 2,000)
    data[at] = 0xD2
    path.write_bytes(bytes(data))
    got = []
    with pytest.raises(CorruptFileError, match=str(path)):
        for batch in t.scan().to_batches():
            got.append(batch)
    assert streamed.opened == [None]
    assert got == []


def test_filtered_streams_read_only_the_row_groups_the_statistics_leave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: _Streams
) -> None:
    """A large file with a residual filter streams natively, one split per run of row groups
    whose statistics might match (ids sorted, 1,000 per row group): the rows the general
    reader gives, which prunes by the same statistics."""
    t = _table(tmp_path, 5000)
    begins = [
        rg.column(0).dictionary_page_offset or rg.column(0).data_page_offset
        for rg in (pq.ParquetFile(_paths(t)[0]).metadata.row_group(g) for g in range(5))
    ]
    cases = {
        "id >= 1500 and id < 2200": [(begins[1], begins[3] - begins[1])],
        "id < 300 or id >= 4800": [(begins[0], begins[1] - begins[0]), (begins[4], None)],
        "id > 4000": [(begins[4], None)],
        "id > 99999": [],
        "s = 'v5' or d < 1": [(0, None)],  # every row group may match: the file whole
    }
    for expr, ranges in cases.items():
        for fields in [("*",), ("s",)]:
            streamed.opened.clear()
            streamed.ranges.clear()
            got = t.scan(row_filter=expr, selected_fields=fields).to_arrow()
            assert streamed.ranges == ranges and streamed.all_read == bool(ranges), expr
            want = _general(
                monkeypatch, lambda e=expr, f=fields: t.scan(row_filter=e, selected_fields=f)
            ).to_arrow()
            assert got.equals(want), expr
            assert pa.Table.from_batches(
                list(t.scan(row_filter=expr, selected_fields=fields).to_batches()), got.schema
            ).equals(want)
    assert t.scan(row_filter="id >= 1500 and id < 2200").to_arrow()["id"].to_pylist() == list(
        range(1500, 2200)
    )


class _FailingStream:
    """A stream that gives some batches, then fails (as on a damaged page)."""

    def __init__(self, batches: list[pa.RecordBatch]) -> None:
        self.batches = batches
        self.failed = False

    def __iter__(self) -> Any:
        yield from self.batches
        self.failed = True


def test_the_general_reader_resumes_after_the_rows_a_stream_gave(tmp_path: Path) -> None:
    t = _table(tmp_path, 2000)
    task = next(iter(t.scan().plan_files()))
    whole = t.scan().to_arrow()
    given = whole.slice(0, 700).to_batches(max_chunksize=300)

    def decoded() -> Any:
        yield 0, [_FailingStream(given)]

    def fallback(rest: Any) -> Any:
        assert list(rest) == [task]
        return iter(whole.to_batches(max_chunksize=256))

    out = native_files._batches([task], decoded(), fallback, None)
    assert pa.Table.from_batches(list(out)).equals(whole)


def test_the_general_reader_resumes_after_the_filtered_rows_a_stream_gave(
    tmp_path: Path,
) -> None:
    """With a residual filter the rows given out are fewer than the stream's: the general
    reader (which filters too) resumes after those given out, none twice, none lost."""
    t = _table(tmp_path, 2000)
    task = next(iter(t.scan(row_filter="s = 'v5'").plan_files()))
    assert not isinstance(task.residual, AlwaysTrue)
    whole = t.scan().to_arrow()
    wanted = t.scan(row_filter="s = 'v5'").to_arrow()
    given = whole.slice(0, 700).to_batches(max_chunksize=300)  # 7 of its rows match

    def decoded() -> Any:
        yield 0, [_FailingStream(given)]

    def fallback(rest: Any) -> Any:
        assert list(rest) == [task]
        return iter(wanted.to_batches(max_chunksize=4))

    out = pa.Table.from_batches(list(native_files._batches([task], decoded(), fallback, None)))
    assert out["id"].to_pylist() == wanted["id"].to_pylist()
    assert len(out) == 19 and out["id"].to_pylist()[:8] == [5, 199, 296, 393, 490, 587, 684, 781]


def test_files_streamed_together_read_as_the_general_reader_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: _Streams
) -> None:
    """A whole-table read of several large files decodes a few of them at once: the same rows,
    in order, as the general reader and as a streamed read of one file at a time."""
    t = _table(tmp_path, 2500)
    for k in range(1, 4):
        t.append(_data(2500, start=2500 * k))
    t = t.refresh()
    assert len(_paths(t)) == 4
    ahead: list[Any] = []
    real = native_files._Ahead

    def spy(stream: Any, window: Any) -> Any:
        ahead.append(len(window.decoding))
        return real(stream, window)

    monkeypatch.setattr(native_files, "_Ahead", spy)
    for fields in [("id",), ("s", "d"), ("*",)]:
        streamed.opened.clear()
        got = t.scan(selected_fields=fields).to_arrow()
        assert streamed.all_read and len(streamed.opened) == 4
        want = _general(monkeypatch, lambda f=fields: t.scan(selected_fields=f).to_arrow())
        assert got.equals(want)
        assert pa.Table.from_batches(list(t.scan(selected_fields=fields).to_batches())).equals(want)
    assert ahead and max(ahead) >= 1  # a stream was opened while another was being read
    assert t.scan().count() == 10_000
    assert sorted(t.scan(selected_fields=("id",)).to_arrow()["id"].to_pylist()) == list(
        range(10_000)
    )


def test_row_level_matching_drains_streams_alongside_small_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large files (streamed, drained on threads of their own) between small ones (decoded
    whole): a delete and an upsert change exactly the rows they name."""
    t = _table(tmp_path, 3000, 3, **{"write.delete.mode": "merge-on-read"})
    want = set(range(3000))
    for k, rows in enumerate([40, 3000, 3000, 50, 3000], start=1):
        t.append(_data(rows, start=10_000 * k))
        want |= set(range(10_000 * k, 10_000 * k + rows))
    t = t.refresh()
    sizes = sorted(task.data_file.file_size_in_bytes for task in t.scan().plan_files())
    monkeypatch.setattr(native_files, "MAX_FILE_BYTES", (sizes[1] + sizes[2]) // 2)
    monkeypatch.setattr(native_files, "BATCH_SIZE", 300)
    spy = _Streams(monkeypatch)
    lanes: list[int] = []
    from icefloe.read import column_chunks

    real = column_chunks.drained_alongside

    def alongside(decoded: Any, each: Any, workers: int) -> Any:
        lanes.append(workers)
        return real(decoded, each, workers)

    monkeypatch.setattr(column_chunks, "drained_alongside", alongside)
    gone = {7, 2999, 10_039, 20_000, 22_999, 30_001, 40_049, 50_123}
    gone |= set(range(30_101, 30_200))
    t.delete(
        "id in (7, 2999, 10039, 20000, 22999, 30001, 40049, 50123) or (id > 30100 and id < 30200)"
    )
    want -= gone
    assert len(spy.opened) == 4 and spy.all_read and lanes and lanes[0] >= 2
    spy.opened.clear()
    # planned by the keys' range (as many keys are), so every file is matched against them
    import icefloe.table.key_columns as key_columns

    monkeypatch.setattr(key_columns, "EXACT_KEY_VALUES", 0)
    up = _data(3).set_column(0, "id", pa.array([5, 20_001, 60_000], pa.int64()))
    result = t.refresh().upsert(up, ["id"])
    assert (result.rows_updated, result.rows_inserted) == (2, 1)
    assert len(spy.opened) == 4 and spy.all_read
    got = t.refresh().scan().to_arrow().sort_by("id")
    assert got["id"].to_pylist() == sorted(want | {60_000})
    by_id = dict(zip(got["id"].to_pylist(), got["s"].to_pylist(), strict=True))
    assert [by_id[i] for i in (5, 20_001, 60_000)] == up["s"].to_pylist()


def test_a_stream_failing_among_streams_read_together_resumes_in_order(tmp_path: Path) -> None:
    """Two streams read together, the second failing part way: the first's rows, the second's
    rows it gave, then the general reader's from the second file on, skipping those."""
    t = _table(tmp_path, 1200)
    t.append(_data(1300, start=1200))
    t = t.refresh()
    tasks = list(t.scan().plan_files())
    whole = t.scan().to_arrow().sort_by("id")
    parts = [whole.slice(0, 1200), whole.slice(1200)]
    if tasks[0].data_file.record_count != 1200:
        tasks.reverse()

    class _Whole(_FailingStream):
        def __iter__(self) -> Any:
            yield from self.batches

    window = native_files._Window(iter(()), 2)  # type: ignore[arg-type]
    streams = [
        native_files._Ahead(_Whole(parts[0].to_batches(max_chunksize=300)), window),
        native_files._Ahead(
            _FailingStream(parts[1].slice(0, 500).to_batches(max_chunksize=200)), window
        ),
    ]

    def runs() -> Any:
        yield 0, [streams[0]]
        yield 1, [streams[1]]

    def fallback(rest: Any) -> Any:
        assert list(rest) == tasks[1:]
        return iter(parts[1].to_batches(max_chunksize=256))

    out = pa.Table.from_batches(list(native_files._batches(tasks, runs(), fallback, None)))
    assert out["id"].to_pylist() == list(range(2500))


@settings(max_examples=12, deadline=None)
@given(
    skip=st.integers(0, 60),
    sizes=st.lists(st.integers(0, 25), min_size=1, max_size=6),
)
def test_skip_rows_drops_exactly_the_first_rows(skip: int, sizes: list[int]) -> None:
    start = 0
    batches = []
    for n in sizes:
        batches.append(pa.record_batch({"x": pa.array(range(start, start + n), pa.int64())}))
        start += n
    got = [v for b in native_files._skip_rows(iter(batches), skip) for v in b["x"].to_pylist()]
    assert got == list(range(min(skip, start), start))


def _paths(t: Any) -> list[str]:
    return [
        task.data_file.file_path.removeprefix("file://")
        for task in t.scan().plan_files()
        if isinstance(task, FileScanTask)
    ]
