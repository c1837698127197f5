"""Filters on identity partitions of types whose bound literals and partition values differ in
form, and decimal literals at the top of a decimal(38): each case pruned or deleted whole files
of rows the filter did not match.

- an identity partition of a nanosecond timestamp: the projected predicate was bound again with
  the rule that an integer on a timestamp column is microseconds (the literal became 1000 times
  larger), so scans missed rows and ``delete(ts != x)`` removed every file;
- an identity partition of a uuid: the partition tuple holds 16 bytes, the bound literal a
  ``uuid.UUID``; ``!=`` inside a compound delete was always true (whole files dropped) and
  ordering comparisons raised a raw ``TypeError``;
- a decimal literal within a few units of ``10**38`` was checked against its type's range at
  28 digits and read as out of range.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.expressions import col
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import (
    DecimalType,
    IcebergType,
    LongType,
    NestedField,
    TimestampNanoType,
    TimestamptzNanoType,
    UUIDType,
)


def _table(tmp_path: Path, t: IcebergType, data: pa.Table, mode: str = "merge-on-read"):  # type: ignore[no-untyped-def]
    """A v3 table of ``data`` (columns ``id`` and a second one of type ``t``, its identity
    partition)."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("ns")
    column = data.column_names[1]
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, column, t))
    spec = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), column))
    table = cat.create_table(
        "ns.t",
        schema,
        partition_spec=spec,
        format_version=3,
        properties={"write.delete.mode": mode},
    )
    table.append(data)
    return table


def _ids(table, row_filter) -> list[int]:  # type: ignore[no-untyped-def]
    return sorted(table.scan(row_filter=row_filter).to_arrow().column("id").to_pylist())


@pytest.mark.parametrize("zone", [None, "UTC"])
def test_identity_partition_of_nanosecond_timestamps(tmp_path: Path, zone: str | None) -> None:
    t = TimestamptzNanoType() if zone else TimestampNanoType()
    suffix = "+00:00" if zone else ""
    values = ["2024-01-01T00:00:00.000000001", "2024-01-01T00:00:00", "2024-06-01T12:00:00"]
    arrow = pa.array([v + suffix if zone else v for v in values]).cast(pa.timestamp("ns", zone))
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": arrow})
    table = _table(tmp_path, t, data)
    assert _ids(table, f"v = '2024-01-01T00:00:00.000000001{suffix}'") == [1]
    assert _ids(table, f"v = '2024-06-01T12:00:00{suffix}'") == [3]
    assert _ids(table, f"v < '2024-06-01T12:00:00{suffix}'") == [1, 2]
    assert _ids(table, f"v in ('2024-01-01T00:00:00{suffix}')") == [2]
    table.delete(f"v != '2024-06-01T12:00:00{suffix}'")
    assert _ids(table, "true") == [3]


A = uuid.UUID("12345678-1234-5678-1234-567812345678")
B = uuid.UUID("7fffffff-ffff-ffff-ffff-ffffffffffff")


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
@pytest.mark.parametrize(
    "row_filter",
    [
        (col("u") != A) | (col("id") > 100),
        col("u").notin([A]) | (col("id") > 100),
        col("u") >= B,
        col("u").isin([B]),
    ],
    ids=["ne-or", "not-in-or", "gte", "in"],
)
def test_identity_partition_of_uuids(tmp_path: Path, mode: str, row_filter: object) -> None:
    data = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "u": pa.array([A.bytes, B.bytes], pa.binary(16)).cast(pa.uuid()),
        }
    )
    table = _table(tmp_path, UUIDType(), data, mode)
    table.delete(row_filter)  # type: ignore[arg-type]
    assert _ids(table, "true") == [1]


@pytest.mark.parametrize("scale", [0, 10])
def test_decimal_literals_at_the_top_of_the_range(tmp_path: Path, scale: int) -> None:
    digits = "9" * 38  # 10**38 - 1 unscaled (scaleb would round it to 28 digits)
    top = Decimal(f"{digits[: 38 - scale]}.{digits[38 - scale :]}" if scale else digits)
    data = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "v": pa.array([top, Decimal(0)], pa.decimal128(38, scale)),
        }
    )
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("ns")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "v", DecimalType(38, scale)),
    )
    table = cat.create_table("ns.d", schema, format_version=3)
    table.append(data)
    assert _ids(table, col("v") == top) == [1]
    assert _ids(table, col("v") >= top) == [1]
    assert _ids(table, col("v") < top) == [2]
    table.delete(col("v") != top)
    assert _ids(table, "true") == [1]
