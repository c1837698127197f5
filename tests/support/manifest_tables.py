"""Helpers for the manifest tests: tables written by PyIceberg 0.12 and value conversions."""

from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform
from pyiceberg.types import (
    DoubleType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "ts", TimestampType(), required=False),
    NestedField(4, "score", DoubleType(), required=False),
)

SPECS = {
    "unpartitioned": PartitionSpec(),
    "identity": PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="name")
    ),
    "multi": PartitionSpec(
        PartitionField(source_id=1, field_id=1000, transform=BucketTransform(4), name="id_b"),
        PartitionField(source_id=3, field_id=1001, transform=DayTransform(), name="ts_day"),
    ),
}


def arrow_data(n: int, offset: int = 0) -> pa.Table:
    base = dt.datetime(2024, 1, 1)
    return pa.table(
        {
            "id": pa.array([offset + i for i in range(n)], pa.int64()),
            "name": pa.array([None if i % 5 == 0 else f"n{i % 3}" for i in range(n)]),
            "ts": pa.array(
                [base + dt.timedelta(hours=7 * i) for i in range(n)], pa.timestamp("us")
            ),
            "score": pa.array(
                [float("nan") if i % 7 == 0 else i * 0.5 for i in range(n)], pa.float64()
            ),
        }
    )


def make_table(tmp_path: Path, version: int, spec: str, appends: int = 2) -> Table:
    """A PyIceberg table with ``appends`` appends (and one delete for v2)."""
    warehouse = tmp_path / "wh"
    warehouse.mkdir(exist_ok=True)
    cat = SqlCatalog(
        "t",
        uri=f"sqlite:///{tmp_path}/cat.db",
        warehouse=f"file://{warehouse}",
    )
    with contextlib.suppress(Exception):
        cat.create_namespace("db")
    name = f"db.t_{version}_{spec}"
    table = cat.create_table(
        name,
        schema=SCHEMA,
        partition_spec=SPECS[spec],
        properties={
            "format-version": str(version),
            "commit.manifest-merge.enabled": "true",
            "commit.manifest.min-count-to-merge": "2",
        },
    )
    for k in range(appends):
        table.append(arrow_data(30, offset=100 * k))
    return cat.load_table(name)


def read_bytes(table: Table, path: str) -> bytes:
    with table.io.new_input(path).open() as f:
        data: bytes = f.read()
    return data


def plain(v: Any) -> Any:
    """PyIceberg values as plain Python (enums to their value, records to lists)."""
    if hasattr(v, "value") and type(v).__module__.startswith("pyiceberg"):
        return v.value
    return v
