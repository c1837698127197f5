"""Delta statistics to Iceberg metrics: the vectorised parse, its slow path, and the bound rules."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe.delta.schema import DeltaColumn
from icefloe.delta.stats import file_metrics
from icefloe.types import DoubleType, FloatType, LongType, StringType, TimestamptzType
from icefloe.values import from_bytes

COLS = [
    DeltaColumn(1, LongType(), "long", ("c1",), ("id",)),
    DeltaColumn(2, StringType(), "string", ("c2",), ("s",)),
    DeltaColumn(3, TimestamptzType(), "timestamp", ("c3",), ("ts",)),
    DeltaColumn(4, DoubleType(), "double", ("st", "c4"), ("st", "x")),
    DeltaColumn(5, FloatType(), "float", ("c5",), ("f",)),
]


def stats(
    n: int, lo: object, hi: object, nulls: int = 0, tight: bool = True, **extra: object
) -> str:
    return json.dumps(
        {
            "numRecords": n,
            "minValues": {
                "c1": lo,
                "c2": "a" * 40,
                "c3": "2024-01-01T00:00:00.123Z",
                "st": {"c4": -0.0},
                "c5": 0.1,
            },
            "maxValues": {
                "c1": hi,
                "c2": "abc",
                "c3": "2024-01-01T00:00:00.123Z",
                "st": {"c4": 2.5},
                "c5": 0.1,
            },
            "nullCount": {"c1": nulls, "c2": 0, "c3": 0, "st": {"c4": 1}, "c5": 0},
            "tightBounds": tight,
            **extra,
        }
    )


def decode(m: pa.Array, i: int, fid: int, t: object) -> object:
    got = dict(m[i].as_py())
    return from_bytes(t, got[fid]) if fid in got else None  # type: ignore[arg-type]


def check(values: list[str | None]) -> None:
    m = file_metrics(pa.array(values, pa.string()), COLS)
    assert m.num_records.to_pylist()[:4] == [10, None, 7, None]
    # long bounds kept; 40-char string prefix kept as lower bound, dropped as upper bound.
    assert decode(m.lower_bounds, 0, 1, LongType()) == 1
    assert decode(m.upper_bounds, 0, 1, LongType()) == 9
    assert decode(m.lower_bounds, 0, 2, StringType()) == "a" * 40
    assert decode(m.upper_bounds, 0, 2, StringType()) == "abc"
    # Timestamps truncated to ms: the upper bound covers the whole millisecond.
    lo, hi = (
        decode(m.lower_bounds, 0, 3, TimestamptzType()),
        decode(m.upper_bounds, 0, 3, TimestamptzType()),
    )
    assert (hi - lo).microseconds == 999  # type: ignore[operator]
    # -0.0 / +0.0 rule and float32 widening: 0.1 is not a float32, so the bounds straddle it.
    assert math.copysign(1, decode(m.lower_bounds, 0, 4, DoubleType())) == -1  # type: ignore[arg-type]
    flo, fhi = decode(m.lower_bounds, 0, 5, FloatType()), decode(m.upper_bounds, 0, 5, FloatType())
    assert flo < 0.1 < fhi  # type: ignore[operator]
    # Null counts: trusted when tight, or when 0 / numRecords; a wide count is dropped.
    assert dict(m.null_value_counts[0].as_py()) == {1: 0, 2: 0, 3: 0, 4: 1, 5: 0}
    assert dict(m.null_value_counts[2].as_py()) == {1: 7, 2: 0, 3: 0, 5: 0}
    assert m.lower_bounds[1].as_py() == [] and m.null_value_counts[3].as_py() == []


def test_parse() -> None:
    check([stats(10, 1, 9), None, stats(7, 1, 2, nulls=7, tight=False), ""] * 20)


def test_bad_values_are_dropped_alone() -> None:
    # "NaN" where a number belongs (Spark writes NaN bounds so): only that bound is lost; a
    # string that is not JSON is a file without statistics.
    bad = stats(7, 1, 2, nulls=7, tight=False).replace('"c4": 2.5', '"c4": "NaN"')
    check([stats(10, 1, 9), None, bad, "not json"])


def test_float_bounds_at_float32_maximum_warn_nothing() -> None:
    # Spark writes float32's maximum as 3.4028235E38, a double just above it: the upper bound
    # widens to +inf, the lower one narrows to the maximum, and numpy's overflow stays silent.
    col = [DeltaColumn(1, FloatType(), "float", ("f",), ("f",))]
    text = '{"numRecords":1,"minValues":{"f":3.4028235E38},"maxValues":{"f":3.4028235E38}}'
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = file_metrics(pa.array([text]), col)
    fmax = float(np.finfo(np.float32).max)
    assert decode(m.lower_bounds, 0, 1, FloatType()) == fmax
    assert decode(m.upper_bounds, 0, 1, FloatType()) == math.inf


def test_decimal_bounds_are_exact_or_absent() -> None:
    from decimal import Decimal

    from icefloe.types import DecimalType

    cols = [
        DeltaColumn(1, DecimalType(10, 2), "decimal(10,2)", ("a",), ("a",)),
        DeltaColumn(2, DecimalType(20, 2), "decimal(20,2)", ("b",), ("b",)),
        DeltaColumn(3, DecimalType(20, 0), "decimal(20,0)", ("c",), ("c",)),
    ]
    text = (
        '{"numRecords":1,"minValues":'
        '{"a":-12.34,"b":123456789012345678.91,"c":12345678901234567890}}'
    )
    m = file_metrics(pa.array([text]), cols)
    assert decode(m.lower_bounds, 0, 1, cols[0].type) == Decimal("-12.34")
    assert decode(m.lower_bounds, 0, 2, cols[1].type) is None  # not exact in a double: no bound
    assert decode(m.lower_bounds, 0, 3, cols[2].type) == Decimal("12345678901234567890")


def test_checkpoint_stats_parsed_equals_the_json() -> None:
    """Delta's checkpoints carry ``stats_parsed``: metrics from it equal those from the JSON,
    also when only some files have it (commits after the checkpoint)."""
    import pyarrow.compute as pc

    from icefloe.delta import DeltaLog
    from icefloe.delta.schema import leaf_columns
    from support.delta import FIXTURES

    for name in ("checkpoints", "multipart", "v2checkpoint"):
        snap = DeltaLog(str(FIXTURES / name / "table")).snapshot()
        files = snap.files
        assert "stats_parsed" in files.column_names, name
        parsed = files.column("stats_parsed").combine_chunks()
        assert parsed.null_count < len(parsed), name  # the checkpoint's files have it
        cols = leaf_columns(snap.metadata.schema)
        from_json = file_metrics(files.column("stats"), cols)
        mixed = file_metrics(files.column("stats"), cols, parsed)
        half = pc.if_else(
            pa.array([i % 2 == 0 for i in range(len(parsed))]),
            parsed,
            pa.nulls(len(parsed), parsed.type),
        )
        halves = file_metrics(files.column("stats"), cols, half)
        for m in (mixed, halves):
            assert m.num_records.equals(from_json.num_records), name
            assert m.lower_bounds.equals(from_json.lower_bounds), name
            assert m.upper_bounds.equals(from_json.upper_bounds), name
            assert m.null_value_counts.equals(from_json.null_value_counts), name


def test_absolute_and_relative_paths() -> None:
    from icefloe.delta.files import absolute_paths

    got = absolute_paths(
        "/r", pa.array(["a/b.parquet", "/abs/c.parquet", "s3://b/k.parquet", "file:/t/x", "a:b/c"])
    )
    assert got.to_pylist() == [
        "/r/a/b.parquet",
        "/abs/c.parquet",
        "s3://b/k.parquet",
        "file:/t/x",
        "/r/a:b/c",
    ]


@pytest.mark.parametrize("scenario", ["checkpoints", "multipart", "v2checkpoint"])
def test_checkpoint_read_without_json_stats_gives_the_same_metrics(
    scenario: str, tmp_path: Path
) -> None:
    """The converter skips the ``stats`` text of checkpoints written by Delta (which carry
    ``stats_parsed`` too); the metrics are the ones the JSON gives."""
    from icefloe.delta import DeltaLog
    from icefloe.delta.stats import file_metrics
    from icefloe.delta.table_metadata import stats_columns
    from support.delta import fixture

    log = DeltaLog(str(fixture(scenario, tmp_path)))
    full = log.snapshot()
    lean = log.snapshot(json_stats=False)
    assert full.checkpoint is not None
    from_ckpt = pc.equal(lean.files.column("version"), full.checkpoint.version)
    assert pc.all(pc.is_null(lean.files.column("stats").filter(from_ckpt))).as_py()
    assert lean.files.column("path").equals(full.files.column("path"))
    columns = stats_columns(full.metadata)
    want = file_metrics(full.files.column("stats"), columns)  # the JSON only
    got = file_metrics(lean.files.column("stats"), columns, lean.files.column("stats_parsed"))
    for name in ("num_records", "null_value_counts", "lower_bounds", "upper_bounds"):
        assert getattr(got, name).equals(getattr(want, name)), name


def test_bounds_of_a_double_widened_from_float_hold_the_float32_values() -> None:
    """A double column Delta widened from float: statistics written before (JSON or a
    checkpoint's ``stats_parsed``) hold the shortest text of float32 values, 0.1 for the
    stored 0.1f (0.10000000149011612); taken as exact doubles, the upper bound was below the
    stored value and filters skipped the file. A double column never widened keeps its exact
    bounds."""
    widened = DeltaColumn(1, DoubleType(), "double", ("w",), ("w",), from_float=True)
    plain = DeltaColumn(2, DoubleType(), "double", ("d",), ("d",))
    cols = [widened, plain]
    text = '{"numRecords":1,"minValues":{"w":0.1,"d":0.1},"maxValues":{"w":0.1,"d":0.1}}'
    parsed = pa.array(
        [{"numRecords": 1, "minValues": {"w": 0.1, "d": 0.1}, "maxValues": {"w": 0.1, "d": 0.1}}]
    )
    stored = float(np.float32(0.1))
    for m in (file_metrics(pa.array([text]), cols), file_metrics(pa.array([None]), cols, parsed)):
        lo = decode(m.lower_bounds, 0, 1, DoubleType())
        hi = decode(m.upper_bounds, 0, 1, DoubleType())
        assert lo <= 0.1 < stored <= hi  # type: ignore[operator]
        assert decode(m.lower_bounds, 0, 2, DoubleType()) == 0.1
        assert decode(m.upper_bounds, 0, 2, DoubleType()) == 0.1
