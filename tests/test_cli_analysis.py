"""The pure parts behind the pictures: time-axis positions, size histogram buckets, size
parsing and the heat map's cap."""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.cli.analysis import (
    SIZE_EDGES,
    PartitionRow,
    PartitionStats,
    SnapshotPoint,
    _histogram,
    axis_positions,
    timeline,
)
from icefloe.cli.render import bar, parse_size
from icefloe.cli.report_svg import heatmap_svg
from icefloe.exceptions import ValidationError


def _point(i: int, ts: int) -> SnapshotPoint:
    return SnapshotPoint(i, None, ts, "append", i, "main", 0, 0, None, None, 0, 0)


@given(
    times=st.lists(st.integers(0, 10**12), min_size=1, max_size=60).map(sorted),
    width=st.integers(2, 200),
)
def test_axis_positions_are_ordered_and_inside_the_axis(times: list[int], width: int) -> None:
    points = tuple(_point(i, t) for i, t in enumerate(times))
    cols = axis_positions(points, width)
    assert len(cols) == len(points)
    assert cols[0] == 0
    assert all(0 <= c <= width - 1 for c in cols)
    assert cols == sorted(cols)
    if 2 * (len(points) - 1) <= width - 1:  # room for two columns per step: all apart
        assert all(b - a >= 2 for a, b in itertools.pairwise(cols))


def test_histogram_buckets_are_upper_exclusive() -> None:
    sizes = pa.array([0, 4095, 4096, 16383, 16384, 5 << 30], pa.int64())
    h = _histogram(sizes)
    assert h[0] == (0, 4096, 2)
    assert h[1] == (4096, 16384, 2)
    assert h[2] == (16384, 65536, 1)
    assert h[-1] == (SIZE_EDGES[-1], None, 1)
    assert sum(n for _, _, n in h) == len(sizes)
    assert _histogram(pa.array([], pa.int64())) == []


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("128MiB", 128 << 20),
        ("512 MB", 512 * 10**6),
        ("1g", 1 << 30),
        ("4096", 4096),
        ("1.5KiB", 1536),
        ("2PiB", 2 << 50),
        ("1EiB", 1 << 60),
        ("3 EB", 3 * 10**18),
    ],
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "0", "-1MiB", "12 parsecs", "MiB"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValidationError, match="not a size"):
        parse_size(text)


def test_parse_size_range() -> None:
    """The range the error states is the range accepted: 8 EiB is one byte past it."""
    assert parse_size(f"{(1 << 63) - 1}") == (1 << 63) - 1
    with pytest.raises(ValidationError, match="out of range"):
        parse_size("8EiB")


def test_bars() -> None:
    assert str(bar(0, 10, 4)) == "    "
    assert str(bar(10, 10, 4)) == "████"
    assert str(bar(5, 10, 4)) == "██  "
    assert str(bar(1, 1000, 4)) == "▏   "  # anything above zero shows


def test_the_heat_map_draws_the_largest_partitions() -> None:
    rows = [PartitionRow(f"p={i}", 0, i, 1, 10, 0, 0) for i in range(500, 0, -1)]
    svg = heatmap_svg(PartitionStats(rows))
    assert svg.count('data-mark="partition"') == 400
    assert "the largest 400 of 500 partitions" in svg


def test_a_tag_off_every_branch_has_a_lane_of_its_own(tmp_path: Path) -> None:
    """A snapshot a tag keeps past a rollback is on that tag's lane, not ``unreferenced``
    (which stays for snapshots no ref reaches)."""
    from icefloe.catalog.hadoop import HadoopCatalog

    cat = HadoopCatalog("h", warehouse=str(tmp_path))
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
    ids = []
    for i in range(4):
        t.append(pa.table({"id": [i]}))
        ids.append(t.current_snapshot().snapshot_id)
    with t.manage_snapshots() as ms:
        ms.create_tag("release-1", ids[2])
    with t.manage_snapshots() as ms:
        ms.rollback_to(ids[0])
    t.append(pa.table({"id": [9]}))
    tl = timeline(t.metadata)
    lane = {p.snapshot_id: p.lane for p in tl.points}
    assert tl.lanes == ("main", "release-1", "unreferenced")
    assert [lane[i] for i in ids] == ["main", "release-1", "release-1", "unreferenced"]
    assert lane[t.current_snapshot().snapshot_id] == "main"


def test_human_size_picks_the_unit_after_rounding() -> None:
    """1,048,575 bytes showed as ``1024.0 KiB``: the unit was chosen before rounding."""
    from icefloe.cli.render import human_size

    assert human_size(1_048_575) == "1.0 MiB"
    assert human_size(1024**3 - 1) == "1.0 GiB"
    assert human_size(1_048_524) == "1023.9 KiB"  # rounds to under 1024: stays in KiB
    assert human_size(1023) == "1023 B" and human_size(1024) == "1.0 KiB"
    for n in range(0, 2**40, 2**40 // 997):
        number, _unit = human_size(n).split()
        assert float(number) < 1024, n
