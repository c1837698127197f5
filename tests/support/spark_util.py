"""Helpers for the Spark tests: an all-types icefloe table and row comparisons."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa

from icefloe.arrow_schema import schema_to_arrow
from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.read import read_tasks
from icefloe.schema import Schema
from icefloe.spark.schema import arrow_for_spark, to_spark_batch
from icefloe.transforms import BucketTransform, MonthTransform
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
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)


def all_types_schema(with_time: bool = True) -> Schema:
    fields = [
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "b", BooleanType()),
        NestedField(3, "i", IntegerType()),
        NestedField(4, "f", FloatType()),
        NestedField(5, "d", DoubleType()),
        NestedField(6, "dec", DecimalType(10, 3)),
        NestedField(7, "dt", DateType()),
        NestedField(8, "ts", TimestampType()),
        NestedField(9, "tz", TimestamptzType()),
        NestedField(10, "s", StringType()),
        NestedField(11, "u", UUIDType()),
        NestedField(12, "fx", FixedType(4)),
        NestedField(13, "bin", BinaryType()),
        NestedField(
            14,
            "st",
            StructType(NestedField(15, "a", IntegerType()), NestedField(16, "z", StringType())),
        ),
        NestedField(17, "l", ListType(18, LongType(), element_required=False)),
        NestedField(19, "m", MapType(20, StringType(), 21, DoubleType(), value_required=False)),
    ]
    if with_time:
        fields.append(NestedField(22, "t", TimeType()))
    return Schema(*fields)


SPEC = PartitionSpec(
    PartitionField(1, 1000, BucketTransform(4), "id_bucket"),
    PartitionField(9, 1001, MonthTransform(), "tz_month"),
)


def all_types_rows(start: int, count: int, schema: Schema) -> pa.Table:
    """Deterministic rows of :func:`all_types_schema` (every 9th row mostly null)."""
    base = dt.datetime(2024, 1, 1)
    rows = []
    for i in range(start, start + count):
        null = i % 9 == 4
        r: dict[str, Any] = {
            "id": i,
            "b": None if null else i % 2 == 0,
            "i": None if null else i * 3 - 50,
            "f": None if null else i / 4,
            "d": None if null else i * 1.5,
            "dec": None if null else decimal.Decimal(i * 7).scaleb(-3),
            "dt": None if null else (base + dt.timedelta(days=i % 90)).date(),
            "ts": None if null else base + dt.timedelta(hours=i * 5, microseconds=i),
            "tz": base.replace(tzinfo=dt.timezone.utc) + dt.timedelta(days=i % 80, seconds=i),
            "s": None if null else f"s{i}é",
            "u": None if null else uuid.UUID(int=i * 7919 + 1).bytes,
            "fx": None if null else i.to_bytes(4, "big"),
            "bin": None if null else bytes(range(i % 7)),
            "st": None if null else {"a": i, "z": None if i % 3 else f"z{i}"},
            "l": None if null else [i, None, -i],
            "m": None if null else {"x": float(i), "y": None},
        }
        if "t" in schema.index_by_name():
            r["t"] = None if null else dt.time(i % 24, i % 60, 0, i)
        rows.append(r)
    return pa.Table.from_pylist(rows, schema=schema_to_arrow(schema))


def icefloe_catalog(warehouse: Path, name: str = "local") -> HadoopCatalog:
    warehouse.mkdir(parents=True, exist_ok=True)
    return HadoopCatalog(name, warehouse=str(warehouse))


def single_process(table: Any, **scan_args: Any) -> list[dict[str, Any]]:
    """icefloe's own single-process read, shaped as Spark rows (sorted by ``id``)."""
    scan = table.scan(**scan_args)
    options = scan.read_options()
    batches = list(read_tasks(table.io, scan.plan_files(), options))
    fields = list(options.projected_schema().fields)
    target = arrow_for_spark(fields)
    rows: list[dict[str, Any]] = []
    for b in batches:
        rows.extend(to_spark_batch(b.select(range(len(fields))), fields, target).to_pylist())
    return sorted(rows, key=lambda r: r["id"])


def spark_rows(df: Any) -> list[dict[str, Any]]:
    """A DataFrame's rows as plain dicts (maps as sorted item lists), sorted by ``id``."""
    out = [_plain(r.asDict(recursive=True)) for r in df.collect()]
    return sorted(out, key=lambda r: r["id"])


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, bytearray):
        return bytes(v)
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return v


def arrow_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows from Arrow ``to_pylist`` made comparable with :func:`spark_rows`."""
    out = []
    for r in rows:
        d = {}
        for k, v in r.items():
            if isinstance(v, list) and v and isinstance(v[0], tuple):
                v = dict(v)
            d[k] = _plain(v)
        out.append(d)
    return out
