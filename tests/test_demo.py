"""The README's main job runs the whole pipeline on a small table and reports true figures."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe import demo
from icefloe.transforms import parse_transform


def test_demo_pipeline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = demo.main(["--rows", "20000", "--batches", "2", "--warehouse", str(tmp_path)])
    out = capsys.readouterr().out
    # The model: both batches, minus the replaced (day, bucket) partitions, plus the fix.
    data = pa.concat_tables([demo.generate(0, 10000, seed=0), demo.generate(10000, 10000, seed=1)])
    fixed = demo.generate(10**12, 20000 // (demo.DAYS * 10), seed=99)
    bucket = parse_transform("bucket[4]")
    day = (demo.START + dt.timedelta(days=3)).date()
    days = parse_transform("day").apply(data["ts"])
    hit = pc.unique(bucket.apply(fixed["customer_id"])).to_pylist()
    replaced = pc.and_(
        pc.equal(days.cast(pa.int32()), (day - dt.date(1970, 1, 1)).days),
        pc.is_in(bucket.apply(data["customer_id"]), value_set=pa.array(hit, pa.int32())),
    )
    kept = data.filter(pc.invert(replaced))
    assert report["rows"] == kept.num_rows + fixed.num_rows
    assert report["first_snapshot_rows"] == 10000
    assert report["snapshots"] == 3
    assert report["total_amount"] == (
        pc.sum(kept["amount_cents"]).as_py() + pc.sum(fixed["amount_cents"]).as_py()
    )
    assert 0 < int(report["filtered_files"]) < int(report["data_files"])  # type: ignore[call-overload]
    assert int(report["next_row_id"]) >= 20000 + fixed.num_rows  # type: ignore[call-overload]
    assert "rows in the table" in out and "ingest [" in out
