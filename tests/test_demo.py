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
    model = pa.concat_tables([kept, fixed])
    # delete by filter, then upsert by order_id
    gone = pc.and_(pc.equal(model["region"], "sa-east"), pc.less(model["amount_cents"], 200000))
    model = model.filter(pc.invert(pc.fill_null(gone, False)))
    src = demo.upsert_source(20000)
    matched = pc.is_in(model["order_id"], value_set=src["order_id"])
    updated = pc.sum(matched.cast(pa.int64())).as_py()
    model = pa.concat_tables([model.filter(pc.invert(matched)), src])
    assert report["rows"] == model.num_rows == report["rows_after_compaction"]
    assert (report["rows_updated"], report["rows_inserted"]) == (updated, src.num_rows - updated)
    assert int(report["dvs_written"]) > 0  # type: ignore[call-overload]
    assert report["first_snapshot_rows"] == 10000
    # 2 appends, overwrite, delete, upsert, compaction; then all but the current one expire
    assert report["snapshots_before_expiry"] == 6
    assert (report["snapshots_expired"], report["snapshots"]) == (5, 1)
    assert int(report["files_deleted_by_expiry"]) > 0  # type: ignore[call-overload]
    assert report["rows_after_expiry"] == report["rows"]
    assert report["total_amount"] == pc.sum(model["amount_cents"]).as_py()
    assert int(report["files_compacted"]) > 0  # type: ignore[call-overload]
    assert report["orphan_files"] == 0
    assert 0 < int(report["filtered_files"]) < int(report["data_files"])  # type: ignore[call-overload]
    assert int(report["next_row_id"]) >= 20000 + fixed.num_rows  # type: ignore[call-overload]
    assert "rows in the table" in out and "ingest [" in out
