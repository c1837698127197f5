"""Partition transforms over Arrow: icefloe's Rust kernels against pyiceberg-core's Arrow
transforms (iceberg-rust) and PyIceberg's own paths (its pyarrow transform, which calls
pyiceberg-core, and its per-value Python transform on a smaller input)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyiceberg.transforms as pt
import pyiceberg.types as pty
import pyiceberg_core.transform as pcore

from harness import Harness
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    TruncateTransform,
)


def _short_strings(n: int, rng: np.random.Generator) -> pa.Array:
    # 6-14 ASCII characters ("user-<number>"), the shape of ids and short codes
    ids = rng.integers(0, 10**9, size=n)
    return pa.array(np.char.add("user-", ids.astype(str)).astype(object), pa.string())


def _timestamps(n: int, rng: np.random.Generator) -> pa.Array:
    lo, hi = 1_500_000_000_000_000, 1_800_000_000_000_000  # 2017..2027 in micros
    return pa.array(rng.integers(lo, hi, size=n), pa.int64()).view(pa.timestamp("us"))


def _per_value(fn: Callable[[Any], Any], values: list[Any]) -> Callable[[], object]:
    return lambda: [None if v is None else fn(v) for v in values]


def run(h: Harness) -> None:
    rng = np.random.default_rng(42)
    n = h.size(10_000_000, 200_000)
    longs = pa.array(rng.integers(-(2**62), 2**62, size=n), pa.int64())
    strings = _short_strings(n, rng)
    ts = _timestamps(n, rng)

    b16 = BucketTransform(16)
    p_b16 = pt.BucketTransform(16)
    h.compare(
        "bucket[16] int64",
        n,
        "values",
        ours=lambda: b16.apply(longs),
        peers={
            "pyiceberg-core": lambda: pcore.bucket(longs, 16),
            "pyiceberg (pyarrow_transform)": lambda: p_b16.pyarrow_transform(pty.LongType())(longs),
        },
        target="5x pyiceberg-core",
    )
    h.compare(
        "bucket[16] short strings",
        n,
        "values",
        ours=lambda: b16.apply(strings),
        peers={
            "pyiceberg-core": lambda: pcore.bucket(strings, 16),
            "pyiceberg (pyarrow_transform)": lambda: p_b16.pyarrow_transform(pty.StringType())(
                strings
            ),
        },
        target="3x pyiceberg-core",
    )
    day, hour = DayTransform(), HourTransform()
    h.compare(
        "day timestamp[us]",
        n,
        "values",
        ours=lambda: day.apply(ts),
        peers={
            "pyiceberg-core": lambda: pcore.day(ts),
            "pyiceberg (pyarrow_transform)": lambda: pt.DayTransform().pyarrow_transform(
                pty.TimestampType()
            )(ts),
        },
    )
    h.compare(
        "hour timestamp[us]",
        n,
        "values",
        ours=lambda: hour.apply(ts),
        peers={
            "pyiceberg-core": lambda: pcore.hour(ts),
            "pyiceberg (pyarrow_transform)": lambda: pt.HourTransform().pyarrow_transform(
                pty.TimestampType()
            )(ts),
        },
    )
    t4 = TruncateTransform(4)
    h.compare(
        "truncate[4] short strings",
        n,
        "values",
        ours=lambda: t4.apply(strings),
        peers={
            "pyiceberg-core": lambda: pcore.truncate(strings, 4),
            "pyiceberg (pyarrow_transform)": lambda: pt.TruncateTransform(4).pyarrow_transform(
                pty.StringType()
            )(strings),
        },
    )

    # PyIceberg's per-value Python transform, on a smaller input so the run stays short.
    m = h.size(200_000, 20_000)
    small_longs, small_strs = longs.slice(0, m), strings.slice(0, m)
    long_vals, str_vals = small_longs.to_pylist(), small_strs.to_pylist()
    h.compare(
        f"bucket[16] int64 ({m:,})",
        m,
        "values",
        ours=lambda: b16.apply(small_longs),
        peers={"pyiceberg (per value)": _per_value(p_b16.transform(pty.LongType()), long_vals)},
    )
    h.compare(
        f"bucket[16] short strings ({m:,})",
        m,
        "values",
        ours=lambda: b16.apply(small_strs),
        peers={"pyiceberg (per value)": _per_value(p_b16.transform(pty.StringType()), str_vals)},
    )
