"""The README's main job runs end to end on a small table and reports real partition counts."""

from __future__ import annotations

import pytest

from icefloe import demo


def test_demo_partitions_a_generated_table(capsys: pytest.CaptureFixture[str]) -> None:
    demo.main(["--rows", "20000"])
    out = capsys.readouterr().out
    assert "20,000 rows fall into" in out
    assert "distinct customer_id_bucket: 16" in out
    assert "distinct region_truncate: 7" in out
    assert "bytes=" in out and "json=" in out
