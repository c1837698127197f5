"""The extension's cache of large freed blocks: filtered columns reuse it, and it stays bounded."""

from __future__ import annotations

from pathlib import Path

import icefloe
from icefloe import _native
from icefloe.deletes import DeletionVector
from support.read_tables import build

CACHE_BYTES = 64 * 1024 * 1024


def test_filtered_reads_reuse_freed_blocks(tmp_path: Path) -> None:
    built = build(tmp_path, version=3, files=2, rows=300_000, seed=3, dv=0.1)
    want = built.expected_rows().sort_by("id")
    icefloe.release_memory()
    assert _native._block_cache_stats()[0] == 0

    first = icefloe.StaticTable.from_metadata(built.metadata_path).scan().to_arrow()
    rows = first.num_rows
    del first
    held, hits = _native._block_cache_stats()
    assert 0 < held <= CACHE_BYTES

    second = icefloe.StaticTable.from_metadata(built.metadata_path).scan().to_arrow()
    assert _native._block_cache_stats()[1] > hits
    # Reused blocks hold the right rows.
    assert second.num_rows == rows == want.num_rows
    got = second.sort_by("id")
    for name in ("id", "k", "s"):
        assert got.column(name).to_pylist() == want.column(name).to_pylist()
    del second

    icefloe.release_memory()
    assert _native._block_cache_stats()[0] == 0


def test_large_native_allocations_stay_correct_when_reused() -> None:
    # Arrays built in Rust (keep-masks of 3M rows: 375 KiB) come from reused blocks too.
    dv = DeletionVector.from_positions(list(range(0, 3_000_000, 7)))
    for _ in range(3):
        mask = dv.keep_mask(0, 3_000_000)
        assert mask.true_count == 3_000_000 - len(range(0, 3_000_000, 7))
        assert not mask[0].as_py() and mask[1].as_py()
        del mask
