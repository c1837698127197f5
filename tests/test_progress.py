"""Progress reporting of long maintenance: the bar, the callback, and the counts each
operation reports (they match what it did)."""

from __future__ import annotations

import datetime as dt
import io
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from icefloe.exceptions import ValidationError
from icefloe.progress import Progress
from support.write_util import catalog, rows


class _Calls:
    """A thread-safe record of ``(done, total)`` callback calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            self.calls.append((done, total))

    def check_complete(self, total: int) -> None:
        assert len(self.calls) == total
        assert [d for d, _ in self.calls] == list(range(1, total + 1))
        assert {t for _, t in self.calls} == {total}


def test_callback_sees_every_step_in_order_across_threads() -> None:
    calls = _Calls()
    with Progress(calls, 200, "work") as bar:
        workers = [threading.Thread(target=lambda: [bar.advance() for _ in range(50)])]
        workers += [threading.Thread(target=lambda: [bar.advance() for _ in range(50)])]
        workers += [threading.Thread(target=lambda: bar.advance(100))]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    assert calls.calls[-1] == (200, 200)
    assert [d for d, _ in calls.calls] == sorted(d for d, _ in calls.calls)
    assert len(calls.calls) == 101


def test_bar_draws_on_the_stream_and_ends_the_line() -> None:
    out = io.StringIO()
    with Progress(True, 1234, "deleting files", stream=out) as bar:
        bar.advance(1000)
        bar.advance(234)
    text = out.getvalue()
    assert text.startswith("\rdeleting files  0/1,234 [")
    assert text.endswith("1,234/1,234 [====================] 100%\n")


def test_off_and_empty_are_silent() -> None:
    out = io.StringIO()
    with Progress(False, 10, "x", stream=out) as bar:
        bar.advance(10)
    with Progress(True, 0, "x", stream=out):
        pass
    assert out.getvalue() == ""


@pytest.mark.parametrize("bad", ["yes", 3, 1.5])
def test_bad_progress_argument_is_a_typed_error(bad: Any) -> None:
    with pytest.raises(ValidationError, match="progress must be"):
        Progress(bad, 1, "x")


def _table(tmp_path: Path, version: int = 2) -> Any:
    t = catalog(tmp_path).create_table(
        "ns.t", _schema(), properties={"format-version": str(version)}
    )
    for i in range(4):
        t.append(rows(i * 10, 10))
    return t


def _schema() -> Any:
    from support.write_util import SCHEMA

    return SCHEMA


def test_expire_snapshots_reports_each_deleted_file(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.overwrite(rows(100, 5))  # the four appended files become unreachable once expired
    old = [s.snapshot_id for s in t.snapshots()[:-1]]
    calls = _Calls()
    result = t.expire_snapshots(snapshot_ids=old, progress=calls)
    assert len(result.all_files) >= 4 + len(old)  # data files, manifests, manifest lists
    calls.check_complete(len(result.all_files))
    assert not any(os.path.exists(p.removeprefix("file://")) for p in result.all_files)


def test_remove_orphan_files_reports_each_deletion(tmp_path: Path) -> None:
    t = _table(tmp_path)
    root = Path(t.location.removeprefix("file://"))
    stray = [root / "data" / f"orphan-{i}.parquet" for i in range(7)]
    old = time.time() - 10 * 86400
    for p in stray:
        p.write_bytes(b"x")
        os.utime(p, (old, old))
    calls = _Calls()
    removed = t.remove_orphan_files(dt.timedelta(days=3), max_workers=3, progress=calls)
    assert sorted(p.removeprefix("file://") for p in removed) == sorted(map(str, stray))
    calls.check_complete(7)
    assert not any(p.exists() for p in stray)


def test_rewrite_data_files_reports_each_input_file(tmp_path: Path) -> None:
    t = _table(tmp_path)
    calls = _Calls()
    result = t.rewrite_data_files(progress=calls)
    assert result.rewritten_data_files == 4
    calls.check_complete(4)
    assert t.scan().to_arrow().num_rows == 40
