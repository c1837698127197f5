"""Bounds taken from the Parquet footer's statistics equal bounds computed from the data.

The writer reads each column's bounds from the minima and maxima Parquet already wrote (per row
group) and computes them from the Arrow data only where the footer has none. The data path is
the oracle: for random tables of every type with bounds (nulls, NaN, signed zeros, infinities,
non-ASCII and over-long strings, chunks of only nulls or NaN) split into random row groups, both
give the same metrics under every metrics mode.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.io import FileIO
from icefloe.metadata import new_table_metadata
from icefloe.partitioning import UNPARTITIONED_PARTITION_SPEC
from icefloe.schema import Schema
from icefloe.sorting import UNSORTED_SORT_ORDER
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
from icefloe.write import write_data_files
from icefloe.write.input import to_table_schema
from icefloe.write.metrics import MetricsConfig, compute_metrics

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


_ROW = st.fixed_dictionaries(
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


def _table(rows: list[dict[str, Any]]) -> pa.Table:
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


@pytest.mark.parametrize("mode", ["truncate(16)", "full", "truncate(2)", "counts"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(_ROW, min_size=1, max_size=40),
    group_rows=st.integers(1, 16),
)
def test_footer_bounds_equal_data_bounds(
    tmp_path_factory: pytest.TempPathFactory, mode: str, rows: list[dict[str, Any]], group_rows: int
) -> None:
    props = {
        "write.metadata.metrics.default": mode,
        "write.parquet.row-group-limit": str(group_rows),
    }
    base = tmp_path_factory.mktemp("footer")
    md = new_table_metadata(
        SCHEMA, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, base.as_uri(), props, 3
    )
    data = to_table_schema(_table(rows), SCHEMA, 3)
    (written,) = write_data_files(md, FileIO(), data)
    footer = pq.ParquetFile(written.file_path.removeprefix("file://")).metadata
    assert footer.num_row_groups == -(-len(rows) // group_rows)
    config = MetricsConfig(md.current_schema(), props)  # the table's (reassigned) field ids
    oracle = compute_metrics(data, footer, config, footer_bounds=False)
    assert written.lower_bounds == oracle.lower_bounds
    assert written.upper_bounds == oracle.upper_bounds
    assert written.null_value_counts == oracle.null_value_counts
    assert written.nan_value_counts == oracle.nan_value_counts
    assert written.value_counts == oracle.value_counts


def test_footer_bounds_are_used_where_the_footer_has_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Columns whose every row group has statistics take no Arrow min/max; a row group of
    only NaN (no statistics) sends that column to the data path."""
    import icefloe.write.metrics as metrics

    seen: list[str] = []
    real = metrics._bounds

    def spy(arr: Any, t: Any, mode: Any, nan_count: int) -> Any:
        seen.append(str(t))
        return real(arr, t, mode, nan_count)

    monkeypatch.setattr(metrics, "_bounds", spy)
    schema = Schema(
        NestedField(1, "l", LongType()),
        NestedField(2, "s", StringType()),
        NestedField(3, "x", DoubleType()),
        NestedField(4, "u", UUIDType()),
    )
    props = {"write.parquet.row-group-limit": "2"}
    md = new_table_metadata(
        schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, tmp_path.as_uri(), props, 2
    )
    data = pa.table(
        {
            "l": pa.array([3, 1, 2, 9], pa.int64()),
            "s": ["b", "a", "d", "c"],
            "x": [float("nan"), float("nan"), 1.0, 2.0],
            "u": pa.array([bytes([k]) * 16 for k in range(4)], pa.binary(16)),
        }
    )
    (written,) = write_data_files(md, FileIO(), data)
    assert sorted(seen) == ["double", "uuid"]
    assert written.lower_bounds[1] == (1).to_bytes(8, "little", signed=True)
    assert written.upper_bounds[2] == b"d"
    assert written.nan_value_counts[3] == 2


def test_footer_metrics_of_files_in_other_units(tmp_path: Path) -> None:
    """Files written elsewhere (``add_files``) may store times and timestamps in other units:
    their footer bounds, converted to Iceberg's unit, equal the bounds the writer computes for
    the same values; a unit finer than Iceberg's gives no bounds rather than wrong ones."""
    from icefloe.write.metrics import footer_metrics, iter_leaf_ids

    schema = Schema(
        NestedField(1, "ms", TimestampType()),
        NestedField(2, "us", TimestamptzType()),
        NestedField(3, "ns", TimestampNanoType()),
        NestedField(4, "t", TimeType()),
        NestedField(5, "d", DateType()),
        NestedField(6, "fine", TimestampType()),
    )
    stamps = [dt.datetime(2021, 3, 4, 5, 6, 7, 8000), None, dt.datetime(1969, 12, 31, 23, 59)]
    foreign = pa.table(
        {
            "ms": pa.array(stamps, pa.timestamp("ms")),
            "us": pa.array(stamps, pa.timestamp("us", tz="UTC")),
            "ns": pa.array(stamps, pa.timestamp("ns")),
            "t": pa.array([dt.time(1, 2, 3, 4000), None, dt.time(23, 0)], pa.time32("ms")),
            "d": pa.array([dt.date(2021, 3, 4), None, dt.date(1960, 1, 1)], pa.date32()),
            "fine": pa.array([1_500, None, -2_500], pa.timestamp("ns")),
        }
    )
    path = tmp_path / "foreign.parquet"
    pq.write_table(foreign, path, store_schema=False)
    config = MetricsConfig(schema, {})
    got = footer_metrics(pq.ParquetFile(path).metadata, list(iter_leaf_ids(schema)), config)

    md = new_table_metadata(
        schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, tmp_path.as_uri(), {}, 3
    )
    ours = foreign.drop_columns(["fine"]).cast(
        pa.schema(
            [
                ("ms", pa.timestamp("us")),
                ("us", pa.timestamp("us", tz="UTC")),
                ("ns", pa.timestamp("ns")),
                ("t", pa.time64("us")),
                ("d", pa.date32()),
            ]
        )
    )
    ours = ours.append_column("fine", pa.nulls(3, pa.timestamp("us")))
    (written,) = write_data_files(md, FileIO(), to_table_schema(ours, schema, 3))
    for fid in range(1, 6):
        assert got.lower_bounds[fid] == written.lower_bounds[fid], fid
        assert got.upper_bounds[fid] == written.upper_bounds[fid], fid
    assert 6 not in got.lower_bounds and 6 not in got.upper_bounds
