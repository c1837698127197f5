"""Partition values past year 9999, which Iceberg Java writes (a "far future" sentinel
timestamp partitioned by day) and Python's date types cannot hold: metadata tables and
snapshot summaries name them as Java does instead of failing with a bare OverflowError."""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.catalog.sql import SqlCatalog
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import DateType, LongType, NestedField, TimestampType, TimestamptzType
from icefloe.write.partition_names import human_partition_value

fastavro = pytest.importorskip("fastavro")

#: 10000-01-02, in days and hours after the epoch
DAY = (dt.date(9999, 12, 31) - dt.date(1970, 1, 1)).days + 2
HOUR = DAY * 24


def _rewrite(path: str, change: Callable[[dict[str, Any]], None]) -> None:
    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        schema = reader.writer_schema
        meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
        records = list(reader)
    for record in records:
        change(record)
    with open(path, "wb") as fh:
        fastavro.writer(fh, schema, records, metadata=meta)


def _far_future_table(tmp_path: Path) -> Any:
    """A table whose one file is in partition day 10000-01-02, hour 0 of it, as a Java writer
    would leave it (icefloe's writers refuse such values: the manifests are edited)."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=tmp_path.as_uri())
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "ts", TimestampType()))
    spec = PartitionSpec(
        PartitionField(2, 1000, parse_transform("day"), "ts_day"),
        PartitionField(2, 1001, parse_transform("hour"), "ts_hour"),
    )
    t = cat.create_table("db.t", schema, partition_spec=spec)
    t.append(
        pa.table({"id": pa.array([1, 2], pa.int64()), "ts": pa.array([0, 1], pa.timestamp("us"))})
    )

    def manifest(record: dict[str, Any]) -> None:
        _rewrite(
            record["manifest_path"].removeprefix("file://"),
            lambda e: e["data_file"]["partition"].update(ts_day=DAY, ts_hour=HOUR),
        )
        for summary, value in zip(record["partitions"], (DAY, HOUR), strict=True):
            summary.update(
                lower_bound=struct.pack("<i", value), upper_bound=struct.pack("<i", value)
            )

    _rewrite(t.current_snapshot().manifest_list.removeprefix("file://"), manifest)
    return cat.load_table("db.t")


def test_metadata_tables_and_summaries_name_them_as_java(tmp_path: Path) -> None:
    t = _far_future_table(tmp_path)
    for table in (t.inspect.manifests(), t.inspect.all_manifests()):
        (summaries,) = table.column("partition_summaries").to_pylist()
        assert [(s["lower_bound"], s["upper_bound"]) for s in summaries] == [
            ("10000-01-02", "10000-01-02"),
            ("10000-01-02-00", "10000-01-02-00"),
        ]
    t.set_properties({"write.summary.partition-limit": "10"})
    t.delete("id = 1")
    summary = t.refresh().current_snapshot().summary
    key = "partitions.ts_day=10000-01-02/ts_hour=10000-01-02-00"
    assert key in summary.properties, sorted(summary.properties)
    assert t.scan().to_arrow().column("id").to_pylist() == [2]


@given(st.integers(-(10**8), 10**8))
def test_days_are_named_as_calendar_dates(days: int) -> None:
    """Within Python's dates, the same as its calendar; past them, the same rules (checked
    by the year's 400-year period, which repeats exactly)."""
    pf = PartitionField(1, 1000, parse_transform("day"), "d")
    shift = 0
    while not -719_162 <= days - shift <= 2_932_896:  # 0001-01-01 .. 9999-12-31
        shift += 146_097 if days - shift > 0 else -146_097
    base = dt.date(1970, 1, 1) + dt.timedelta(days - shift)
    year = base.year + 400 * (shift // 146_097)
    assert human_partition_value(pf, days) == f"{year:04d}-{base.month:02d}-{base.day:02d}"


def test_identity_dates_and_timestamps_past_9999() -> None:
    pf = PartitionField(1, 1000, parse_transform("identity"), "i")
    micros = DAY * 86_400_000_000 + 1000
    assert human_partition_value(pf, DAY, DateType()) == "10000-01-02"
    assert human_partition_value(pf, micros, TimestamptzType()) == "+10000-01-02T00:00:00.001+00:00"
    assert human_partition_value(pf, micros, TimestampType()) == "+10000-01-02T00:00:00.001"
    first = (dt.date(1, 1, 1) - dt.date(1970, 1, 1)).days - 1  # 0000-12-31
    midnight = human_partition_value(pf, first * 86_400_000_000, TimestampType())
    assert midnight == "0000-12-31T00:00:00"
    assert human_partition_value(pf, dt.datetime(2024, 1, 2, 3, 4), TimestampType()) == (
        "2024-01-02T03:04:00"
    )
