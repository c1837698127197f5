"""A process forked after icefloe has planned and read (``multiprocessing`` with ``fork``, the
default on Linux before Python 3.14) plans and reads again instead of waiting forever on thread
pools whose threads stayed in the parent."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pyarrow as pa
import pytest

from _read_tables import build
from icefloe import StaticTable, _native

pytestmark = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs os.fork"
)


def _read_in_child(metadata: str, expected: int) -> None:
    paths = [pa.array([f"p{i}" for i in range(50_000)]), pa.array(["q"])]
    _native.plan_check_unique_paths(paths)  # parallel work on the extension's thread pool
    scan = StaticTable.from_metadata(metadata).scan()
    rows = scan.to_arrow().num_rows
    os._exit(0 if rows == expected and len(list(scan.plan_files())) == 3 else 3)


def test_forked_child_plans_and_reads(tmp_path: Path) -> None:
    table = build(tmp_path, version=3, files=3, rows=2_000, dv=0.1, seed=5)
    parent = StaticTable.from_metadata(table.metadata_path).scan()
    expected = parent.to_arrow().num_rows
    assert expected == 3 * (2_000 - 200)
    # the parent's pools exist and have run work before the fork
    _native.plan_check_unique_paths([pa.array([f"p{i}" for i in range(50_000)])])
    assert len(list(parent.plan_files())) == 3

    child = multiprocessing.get_context("fork").Process(
        target=_read_in_child, args=(table.metadata_path, expected)
    )
    child.start()
    child.join(timeout=30)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("the forked child hung planning or reading")
    assert child.exitcode == 0
