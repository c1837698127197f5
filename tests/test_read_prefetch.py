"""The reader's one-step-ahead decode thread: order, errors, early close, and only for files
of more than one batch."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import CorruptFileError
from icefloe.read.prefetch import prefetched


def _threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


@pytest.mark.parametrize("depth", [1, 3])
def test_items_arrive_in_order(depth: int) -> None:
    assert list(prefetched(iter(range(1000)), depth)) == list(range(1000))
    assert list(prefetched(iter([]), depth)) == []


def test_errors_arrive_after_the_items_before_them() -> None:
    def source() -> Iterator[int]:
        yield 1
        yield 2
        raise CorruptFileError("bad page in f.parquet")

    got: list[int] = []
    with pytest.raises(CorruptFileError, match=r"f\.parquet"):
        for item in prefetched(source()):
            got.append(item)
    assert got == [1, 2]


def test_closing_early_stops_the_thread_and_closes_the_source() -> None:
    closed = threading.Event()
    produced: list[int] = []

    def source() -> Iterator[int]:
        try:
            i = 0
            while True:
                produced.append(i)
                yield i
                i += 1
        finally:
            closed.set()

    name = "test-prefetch-close"
    it = prefetched(source(), 1, name=name)
    assert [next(it), next(it), next(it)] == [0, 1, 2]
    assert _threads(name)
    it.close()
    assert closed.wait(5)
    deadline = time.monotonic() + 5
    while _threads(name) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _threads(name)
    # Produced at most the items handed out, one in the queue and one blocked on it.
    assert len(produced) <= 3 + 2


@pytest.mark.parametrize(("rows", "threaded"), [(50, False), (1_000, True)])
def test_only_files_of_several_batches_decode_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: int, threaded: bool
) -> None:
    import icefloe.read.reader as reader
    from icefloe.read import native_files

    monkeypatch.setattr(native_files, "ENABLED", False)  # the general reader's decode thread
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "w").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": pa.array(range(rows), pa.int64())}))
    monkeypatch.setattr(reader, "BATCH_SIZE", 100)
    started: list[str] = []

    def spy(source: Iterator[object], depth: int, name: str) -> Iterator[object]:
        started.append(name)
        return prefetched(source, depth, name=name)

    monkeypatch.setattr(reader, "prefetched", spy)
    got = t.scan().to_arrow().column("id").to_pylist()
    assert got == list(range(rows))
    assert bool(started) is threaded


@pytest.mark.parametrize(("rows", "threaded"), [(50, False), (1_000, True)])
def test_only_splits_of_several_batches_use_pyarrows_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: int, threaded: bool
) -> None:
    """A split of one batch is decoded on the reading thread; larger ones decode their
    columns on pyarrow's pool."""
    import pyarrow.parquet as pq

    import icefloe.read.reader as reader
    from icefloe.read import native_files

    monkeypatch.setattr(native_files, "ENABLED", False)  # the general reader's splits
    from icefloe.read import native_files

    monkeypatch.setattr(native_files, "ENABLED", False)  # the general reader's decode thread
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "w").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("s", pa.string())]))
    t.append(
        pa.table({"id": pa.array(range(rows), pa.int64()), "s": [str(i) for i in range(rows)]})
    )
    monkeypatch.setattr(reader, "BATCH_SIZE", 100)
    seen: list[bool] = []
    real = pq.ParquetFile.iter_batches

    def spy(self: pq.ParquetFile, *args: object, **kwargs: object) -> object:
        seen.append(bool(kwargs.get("use_threads")))
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    got = t.scan().to_arrow()
    assert got.column("id").to_pylist() == list(range(rows))
    assert got.column("s").to_pylist() == [str(i) for i in range(rows)]
    assert seen and set(seen) == {threaded}
