"""An append interrupted at each step of the commit (after its data files and manifests, after
its metadata file, after the pointer swap) leaves the table at the previous or the new committed
state, never broken; PyIceberg 0.12 reads it consistently and the next append works. A commit
that fails cleanly removes every file it wrote; one whose outcome is unknown removes none."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import CommitFailedError, CommitStateUnknownError
from icefloe.schema import Schema
from support.evolution import SIMPLE_SCHEMA, local_path, pyiceberg_sql


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "data": [f"r{i}" for i in ids]})


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _crashing_append(uri: str, warehouse: str, when: str) -> None:
    """Child process: append and die abruptly at ``when``."""
    import os

    catalog = SqlCatalog("crash", uri=uri, warehouse=warehouse)
    real_write_and_swap = catalog._write_and_swap
    real_swap = catalog._swap_pointer

    def write_and_swap(*args: Any) -> str:
        if when == "after-manifests":
            os._exit(3)  # data files, manifests and manifest list are written; nothing else
        return real_write_and_swap(*args)

    def swap(identifier: Any, expected: str, new: str) -> None:
        if when == "after-metadata-file":
            os._exit(4)
        real_swap(identifier, expected, new)
        os._exit(5)

    catalog._write_and_swap = write_and_swap  # type: ignore[method-assign]
    catalog._swap_pointer = swap  # type: ignore[method-assign]
    catalog.load_table("db.t").append(_rows([2, 3]))


@pytest.mark.parametrize(
    ("when", "code"), [("after-manifests", 3), ("after-metadata-file", 4), ("after-swap", 5)]
)
def test_append_interrupted_by_process_death(tmp_path: Path, when: str, code: int) -> None:
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    warehouse = (tmp_path / "warehouse").as_uri()
    catalog = SqlCatalog("crash", uri=uri, warehouse=warehouse)
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", Schema.from_json(SIMPLE_SCHEMA))
    t.append(_rows([1]))
    before = t.metadata_location
    root = local_path(t.location)
    files_before = _files(root)
    proc = multiprocessing.get_context("spawn").Process(
        target=_crashing_append, args=(uri, warehouse, when)
    )
    proc.start()
    proc.join(timeout=300)
    assert proc.exitcode == code
    after = catalog.load_table("db.t")
    new_files = _files(root) - files_before
    assert any(f.endswith(".parquet") for f in new_files)  # the attempt got that far
    theirs = pyiceberg_sql.SqlCatalog("crash", uri=uri, warehouse=warehouse).load_table("db.t")
    ids = sorted(theirs.scan().to_arrow().column("id").to_pylist())
    if when == "after-swap":
        assert after.metadata_log()[-1].metadata_file == before
        assert ids == [1, 2, 3] and len(after.snapshots()) == 2
    else:
        assert after.metadata_location == before
        assert ids == [1] and len(after.snapshots()) == 1
        has_metadata = any(f.endswith(".metadata.json") for f in new_files)
        assert has_metadata == (when == "after-metadata-file")
    # every file the committed state references exists; the table keeps working
    for path in after.inspect.files().column("file_path").to_pylist():
        assert local_path(path).exists()
    after.append(_rows([9]))
    theirs = pyiceberg_sql.SqlCatalog("crash", uri=uri, warehouse=warehouse).load_table("db.t")
    expected = [1, 2, 3, 9] if when == "after-swap" else [1, 9]
    assert sorted(theirs.scan().to_arrow().column("id").to_pylist()) == expected
    catalog.close()


def test_failed_append_removes_its_files(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    catalog = SqlCatalog("fail", uri=uri, warehouse=(tmp_path / "warehouse").as_uri())
    catalog.create_namespace("db")
    t = catalog.create_table(
        "db.t", Schema.from_json(SIMPLE_SCHEMA), properties={"commit.retry.num-retries": "1"}
    )
    t.append(_rows([1]))
    root = local_path(t.location)
    files_before = _files(root)
    calls: list[str] = []

    def always_lose(identifier: Any, expected: str, new: str) -> None:
        calls.append(new)
        raise CommitFailedError("another writer won")

    catalog._swap_pointer = always_lose  # type: ignore[method-assign]
    with pytest.raises(CommitFailedError):
        t.append(_rows([2]))
    assert len(calls) == 2  # first attempt + 1 retry
    assert _files(root) == files_before  # data files, manifests, lists and metadata: all gone
    assert catalog.load_table("db.t").metadata_location == t.metadata_location


def test_unknown_outcome_keeps_its_files(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    catalog = SqlCatalog("unknown", uri=uri, warehouse=(tmp_path / "warehouse").as_uri())
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", Schema.from_json(SIMPLE_SCHEMA))
    t.append(_rows([1]))
    root = local_path(t.location)
    files_before = _files(root)
    written: list[str] = []

    def unknown(identifier: Any, expected: str, new: str) -> None:
        written.append(new)
        raise CommitStateUnknownError("connection lost during the update")

    catalog._swap_pointer = unknown  # type: ignore[method-assign]
    with pytest.raises(CommitStateUnknownError):
        t.append(_rows([2]))
    new_files = _files(root) - files_before
    assert any(f.endswith(".parquet") for f in new_files)
    assert any(f.endswith(".metadata.json") for f in new_files)
    assert local_path(written[0]).exists()  # it may be the current metadata: kept
