"""Bounds taken from the Parquet footer's statistics equal bounds computed from the data.

The writer reads each column's bounds from the minima and maxima Parquet already wrote (per row
group) and computes them from the Arrow data only where the footer has none. The data path is
the oracle: for random tables of every type with bounds (nulls, NaN, signed zeros, infinities,
non-ASCII and over-long strings, chunks of only nulls or NaN) split into random row groups, both
give the same metrics under every metrics mode.
"""

from __future__ import annotations

import datetime as dt
import struct
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
    DateType,
    DoubleType,
    LongType,
    NestedField,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from icefloe.write import write_data_files
from icefloe.write.input import to_table_schema
from icefloe.write.metrics import MetricsConfig, compute_metrics
from support.metric_rows import ROW, SCHEMA, rows_table


@pytest.mark.parametrize("mode", ["truncate(16)", "full", "truncate(2)", "counts"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(ROW, min_size=1, max_size=40),
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
    data = to_table_schema(rows_table(rows), SCHEMA, 3)
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
    """Columns whose every row group has statistics take no Arrow min/max, nor does a float
    column with a row group of only NaN (pyarrow leaves NaN out of the footer's minimum and
    maximum, so such a row group adds no bound)."""
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
    assert sorted(seen) == ["uuid"]
    assert written.lower_bounds[3] == struct.pack("<d", 1.0)
    assert written.upper_bounds[3] == struct.pack("<d", 2.0)
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
