"""Random rows of every type that has bounds (nulls, NaN, signed zeros, infinities, non-ASCII
and over-long strings, nested structs, lists and maps) and their table schema, for the metrics
tests of the Parquet and ORC writers."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from icefloe.schema import Schema
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = ["ROW", "SCHEMA", "rows_table"]

SCHEMA = Schema(
    NestedField(1, "i", IntegerType()),
    NestedField(2, "l", LongType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "b", BinaryType()),
    NestedField(5, "fx", FixedType(3)),
    NestedField(6, "d", DateType()),
    NestedField(7, "t", TimeType()),
    NestedField(8, "ts", TimestampType()),
    NestedField(9, "tz", TimestamptzType()),
    NestedField(10, "ns", TimestampNanoType()),
    NestedField(11, "dec", DecimalType(9, 2)),
    NestedField(12, "big", DecimalType(30, 4)),
    NestedField(13, "flag", BooleanType()),
    NestedField(14, "f", FloatType()),
    NestedField(15, "x", DoubleType()),
    NestedField(16, "u", UUIDType()),
    NestedField(17, "st", StructType(NestedField(18, "inner", StringType()))),
    NestedField(19, "tags", ListType(20, LongType(), False)),
    NestedField(21, "m", MapType(22, StringType(), 23, DoubleType(), False)),
)

_FLOATS = st.sampled_from([0.0, -0.0, 1.5, -2.25, float("inf"), float("-inf"), float("nan")])
_TEXT = st.one_of(
    st.text(max_size=20),
    # around 4,096 bytes, where the Parquet writer stops keeping statistics
    st.builds(
        lambda c, n: c * n,
        st.sampled_from(["a", "z", "é", "\U0001f600"]),
        st.integers(1020, 4100),
    ),
)


def _column(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A value or null (small row groups then hold chunks of only nulls or only NaN)."""
    return st.one_of(st.none(), values)


ROW = st.fixed_dictionaries(
    {
        "i": _column(st.integers(-(2**31), 2**31 - 1)),
        "l": _column(st.integers(-(2**63), 2**63 - 1)),
        "s": _column(_TEXT),
        "b": _column(st.binary(max_size=20)),
        "fx": _column(st.binary(min_size=3, max_size=3)),
        "d": _column(st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))),
        "t": _column(st.times()),
        "ts": _column(st.datetimes(dt.datetime(1, 1, 2), dt.datetime(9999, 12, 30))),
        "tz": _column(st.datetimes(dt.datetime(1, 1, 2), dt.datetime(9999, 12, 30))),
        "ns": _column(st.integers(-(2**62), 2**62)),
        "dec": _column(st.integers(-(10**9) + 1, 10**9 - 1)),
        "big": _column(st.integers(-(10**30) + 1, 10**30 - 1)),
        "flag": _column(st.booleans()),
        "f": _column(_FLOATS),
        "x": _column(st.one_of(_FLOATS, st.floats(allow_nan=False))),
        "u": _column(st.uuids()),
        "st": _column(st.fixed_dictionaries({"inner": _column(_TEXT)})),
        "tags": _column(st.lists(_column(st.integers(-5, 5)), max_size=3)),
        "m": _column(st.dictionaries(st.text(max_size=3), _column(_FLOATS), max_size=3)),
    }
)


def rows_table(rows: list[dict[str, Any]]) -> pa.Table:
    cols = {name: [r[name] for r in rows] for name in rows[0]}
    typed = ("tz", "ns", "dec", "big", "m", "u", "f", "fx")
    tz = [None if v is None else v.replace(tzinfo=dt.UTC) for v in cols["tz"]]
    return pa.table(
        {
            **{k: v for k, v in cols.items() if k not in typed},
            "fx": pa.array(cols["fx"], pa.binary(3)),
            "f": pa.array(cols["f"], pa.float32()),
            "tz": pa.array(tz, pa.timestamp("us", tz="UTC")),
            "ns": pa.array(cols["ns"], pa.int64()).cast(pa.timestamp("ns")),
            "dec": pa.array(
                [None if v is None else Decimal(f"{v}e-2") for v in cols["dec"]],
                pa.decimal128(9, 2),
            ),
            "big": pa.array(
                [None if v is None else Decimal(f"{v}e-4") for v in cols["big"]],
                pa.decimal128(30, 4),
            ),
            "u": pa.array([None if v is None else v.bytes for v in cols["u"]], pa.binary(16)),
            "m": pa.array(
                [None if v is None else list(v.items()) for v in cols["m"]],
                pa.map_(pa.string(), pa.float64()),
            ),
        }
    )
