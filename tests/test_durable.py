"""Durability on local file systems: a commit names only files (and directory entries) that
were put on stable storage first."""

from __future__ import annotations

import errno
import os
import select
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from icefloe import durable
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import FileIOError
from icefloe.io import FileIO
from icefloe.table import Table
from support.write_util import SCHEMA, SPEC, catalog, checksum, rows


class _Recorder:
    """Replaces ``durable._fsync``: the synced paths, in order. With ``fail``, the syncs of
    paths ending so fail (only the first of each path with ``once``)."""

    def __init__(self, fail: str | None = None, once: bool = False) -> None:
        self.paths: list[str] = []
        self.fail = fail
        self.once = once
        self._lock = threading.Lock()
        self._real = durable._fsync

    def install(self, monkeypatch: pytest.MonkeyPatch) -> _Recorder:
        """Stands in for the one-file sync and for the batches synced in one native call."""
        monkeypatch.setattr(durable, "_fsync", self)
        monkeypatch.setattr(durable, "_fsync_batch", lambda paths: [self(p) for p in paths])
        return self

    def __call__(self, path: str) -> None:
        failing = self.fail is not None and path.endswith(self.fail)
        if failing and not (self.once and path in self.paths):
            with self._lock:
                self.paths.append(path)
            raise OSError(errno.EIO, "Input/output error", path)
        self._real(path)
        with self._lock:
            self.paths.append(path)


_SWAP = "<the catalog names the new metadata>"


def _mark_swaps(monkeypatch: pytest.MonkeyPatch, rec: _Recorder) -> None:
    """Records the catalog's pointer swap, the moment a commit becomes visible, among the
    synced paths."""
    real = SqlCatalog._swap_pointer

    def swap(self: SqlCatalog, *args: Any, **kwargs: Any) -> None:
        rec.paths.append(_SWAP)
        real(self, *args, **kwargs)

    monkeypatch.setattr(SqlCatalog, "_swap_pointer", swap)


def _synced_before_the_swap(rec: _Recorder) -> set[str]:
    assert rec.paths.count(_SWAP) == 1
    return set(rec.paths[: rec.paths.index(_SWAP)])


def test_an_append_syncs_its_files_and_their_directories_before_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The data files are synced while the manifests are written; all of it, with the
    directories naming them, is on stable storage before the catalog names the snapshot."""
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=2)
    rec = _Recorder()
    rec.install(monkeypatch)
    _mark_swaps(monkeypatch, rec)
    t.append(rows(0, 200))
    files = t.inspect.data_files().column("file_path").to_pylist()
    assert len(files) > 4  # several partition directories
    local = [p.removeprefix("file://") for p in files]
    metadata_dir = os.path.join(t.location.removeprefix("file://"), "metadata")
    synced_before = _synced_before_the_swap(rec)
    for path in local:
        assert path in synced_before
        # the partition directories, up to the root, name what is under them
        parent = os.path.dirname(path)
        while parent != "/":
            assert parent in synced_before, parent
            parent = os.path.dirname(parent)
    # the metadata files are linked into place and their directory synced after each
    before = rec.paths[: rec.paths.index(_SWAP)]
    assert before.count(metadata_dir) >= 3  # manifest, manifest list, metadata file


def test_a_failed_sync_fails_the_commit_and_the_table_keeps_its_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=2)
    t.append(rows(0, 50))
    before = t.current_snapshot()
    want = checksum(t.scan().to_arrow())
    metadata_dir = Path(t.location.removeprefix("file://")) / "metadata"
    files_before = sorted(p.name for p in metadata_dir.iterdir())
    _Recorder(fail=".parquet").install(monkeypatch)
    with pytest.raises(FileIOError) as info:
        t.append(rows(50, 50))
    assert "sync" in str(info.value) and ".parquet" in str(info.value)
    # the manifests written while the files were syncing are gone with them
    assert sorted(p.name for p in metadata_dir.iterdir()) == files_before
    monkeypatch.undo()
    again = cat.load_table("ns.t")
    assert again.current_snapshot() == before
    assert checksum(again.scan().to_arrow()) == want == (50, sum(range(50)))


def test_a_failed_background_sync_of_a_written_file_fails_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer starts each file's sync as it closes it; the kernel reports a write-back
    error once, so the commit must not rely on a second fsync to see it."""
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=2)
    rec = _Recorder(fail=".parquet", once=True)
    rec.install(monkeypatch)
    with pytest.raises(FileIOError):
        t.append(rows(0, 50))
    assert cat.load_table("ns.t").current_snapshot() is None
    assert not durable._STARTED


def _dv_table(tmp_path: Path) -> tuple[SqlCatalog, Table]:
    """A catalog and a v3 merge-on-read table of 100 rows (deletes write DVs)."""
    cat = catalog(tmp_path)
    props = {"write.delete.mode": "merge-on-read"}
    t = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, format_version=3, properties=props)
    t.append(rows(0, 100))
    return cat, t


def test_a_deletion_vector_file_is_synced_before_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, t = _dv_table(tmp_path)
    rec = _Recorder().install(monkeypatch)
    _mark_swaps(monkeypatch, rec)
    t = t.delete("id < 30")
    assert t.scan().to_arrow().num_rows == 70
    listed = t.inspect.delete_files().column("file_path").to_pylist()
    puffins = {p.removeprefix("file://") for p in listed}
    assert len(puffins) == 1 and next(iter(puffins)).endswith(".puffin")
    synced_before = _synced_before_the_swap(rec)
    assert puffins <= synced_before
    assert os.path.dirname(next(iter(puffins))) in synced_before


def test_a_failed_background_sync_of_a_deletion_vector_fails_the_delete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat, t = _dv_table(tmp_path)
    before = t.current_snapshot()
    _Recorder(fail=".puffin", once=True).install(monkeypatch)
    with pytest.raises(FileIOError, match=r"\.puffin"):
        t.delete("id < 30")
    monkeypatch.undo()
    again = cat.load_table("ns.t")
    assert again.current_snapshot() == before
    assert checksum(again.scan().to_arrow()) == (100, sum(range(100)))
    data = Path(t.location.removeprefix("file://")) / "data"
    assert not list(data.rglob("*.puffin"))  # the failed commit removed its file
    assert not durable._STARTED


def test_a_metadata_write_syncs_the_directories_it_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _Recorder()
    rec.install(monkeypatch)
    target = tmp_path / "a" / "b" / "m.json"
    FileIO().new_output(str(target)).write(b"{}")
    assert target.read_bytes() == b"{}"
    # the new name in b, b's name in a, a's name in tmp_path
    assert set(rec.paths) == {str(tmp_path / "a" / "b"), str(tmp_path / "a"), str(tmp_path)}
    rec.paths.clear()
    FileIO().new_output(str(tmp_path / "a" / "b" / "n.json")).write(b"{}")
    assert rec.paths == [str(tmp_path / "a" / "b")]


def test_sync_skips_missing_files_and_object_store_locations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _Recorder()
    rec.install(monkeypatch)
    present = tmp_path / "x.parquet"
    present.write_bytes(b"data")
    FileIO().sync([str(present), (tmp_path / "gone.parquet").as_uri(), "s3://bucket/key.parquet"])
    assert str(present) in rec.paths
    assert str(tmp_path) in rec.paths
    assert not any("bucket" in p for p in rec.paths)


@pytest.mark.parametrize("code", [errno.EIO, errno.EINVAL])
def test_an_fsync_error_names_the_file_and_unsyncable_files_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    """A write-back error fails with the file's name; a file system that cannot sync a file
    (EINVAL, as some FUSE and network file systems answer) has nothing more to do."""
    files = [tmp_path / f"f{i}.parquet" for i in range(3)]
    for f in files:
        f.write_bytes(b"x")
    bad = str(files[1])

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}") == bad:
            raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", fsync)
    # the Python path (one file at a time, and every file on Windows)
    monkeypatch.setattr(durable, "_fsync_batch", lambda paths: [durable._fsync(p) for p in paths])
    if code == errno.EINVAL:
        FileIO().sync([str(f) for f in files])
        return
    with pytest.raises(FileIOError, match=r"f1\.parquet"):
        FileIO().sync([str(f) for f in files])


def test_a_native_batch_sync_names_the_failing_path_and_skips_missing_ones(
    tmp_path: Path,
) -> None:
    files = [tmp_path / f"f{i}.parquet" for i in range(3)]
    for f in files:
        f.write_bytes(b"x")
    FileIO().sync([*map(str, files), str(tmp_path / "gone.parquet")])
    bad = str(files[1] / "under")  # through a regular file: ENOTDIR, a real failure
    with pytest.raises(FileIOError, match=r"f1\.parquet/under"):
        FileIO().sync([str(files[0]), bad, str(files[2])])


def test_files_synced_soon_together_are_waited_for_and_their_failure_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = [str(tmp_path / f"f{i}.parquet") for i in range(4)]
    for f in files:
        Path(f).write_bytes(b"x")
    rec = _Recorder().install(monkeypatch)
    durable.sync_soon_all(files)
    durable.sync_files(files)
    assert set(files) <= set(rec.paths)
    assert not durable._STARTED
    failing = _Recorder(fail="f2.parquet", once=True).install(monkeypatch)
    durable.sync_soon_all(files)
    with pytest.raises(OSError, match="f2"):
        durable.sync_files(files)
    assert "f2" in " ".join(failing.paths)
    assert not durable._STARTED


@pytest.mark.skipif(
    durable._FADVISE is None or not sys.platform.startswith("linux"),
    reason="write-back advice is for Linux",
)
def test_a_large_local_file_is_written_back_as_it_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every WRITEBACK_BYTES written, the kernel is asked to start writing that range back;
    the bytes of the file are what was written."""
    calls: list[tuple[int, int]] = []
    real = durable._FADVISE
    assert real is not None

    def spy(fd: int, offset: int, length: int, advice: int) -> None:
        calls.append((offset, length))
        real(fd, offset, length, advice)

    monkeypatch.setattr(durable, "_FADVISE", spy)
    data = os.urandom(durable.WRITEBACK_BYTES * 2 + 12345)
    path = tmp_path / "big.parquet"
    with FileIO().new_output(str(path)).create() as out:
        for i in range(0, len(data), 100_000):
            out.write(data[i : i + 100_000])
    assert path.read_bytes() == data
    assert len(calls) == 2
    assert calls[0][0] == 0 and calls[1][0] == sum(calls[0])
    assert all(length >= durable.WRITEBACK_BYTES for _, length in calls)
    assert sum(calls[-1]) <= len(data)


def test_a_forked_child_does_not_wait_for_the_parents_background_syncs(tmp_path: Path) -> None:
    """The child has none of the parent's threads: a sync started in the parent must not
    leave the child waiting on a job that never finishes."""
    gate = threading.Event()
    path = str(tmp_path / "x.parquet")
    (tmp_path / "x.parquet").write_bytes(b"x")
    durable._start(path, gate.wait)  # a background job that cannot finish yet
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: how many jobs it still knew of, after a sync that must return
        try:
            os.close(read)
            left = len(durable._STARTED)
            durable.sync_files([path])
            os.write(write, f"{left} synced".encode())
        finally:
            os._exit(0)
    os.close(write)
    gate.set()
    ready, _, _ = select.select([read], [], [], 30)
    if not ready:
        os.kill(pid, signal.SIGKILL)  # waiting forever on the parent's job
    got = os.read(read, 64) if ready else b"(the child hung)"
    os.close(read)
    os.waitpid(pid, 0)
    assert got == b"0 synced"
    durable.sync_files([path])  # the parent's job finished; nothing left behind
    assert path not in durable._STARTED
