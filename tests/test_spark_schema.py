"""icefloe.spark.schema: Spark types from Iceberg types, and Arrow batches shaped for Spark."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.arrow_schema import schema_to_arrow
from icefloe.schema import Schema
from icefloe.types import (
    BinaryType,
    DecimalType,
    FixedType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

pytest.importorskip("pyspark")

from pyspark.sql import types as T

from icefloe.spark.schema import (
    FIELD_ID,
    arrow_for_spark,
    spark_schema,
    to_spark_batch,
)

pytestmark = pytest.mark.spark

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "u", UUIDType()),
    NestedField(3, "t", TimeType()),
    NestedField(4, "tsn", TimestampNanoType()),
    NestedField(5, "tz", TimestamptzType()),
    NestedField(6, "f", FixedType(3)),
    NestedField(7, "d", DecimalType(9, 2)),
    NestedField(
        8,
        "s",
        StructType(
            NestedField(9, "a", IntegerType(), required=True),
            NestedField(10, "uu", UUIDType()),
        ),
    ),
    NestedField(11, "l", ListType(12, UUIDType(), element_required=False)),
    NestedField(13, "m", MapType(14, StringType(), 15, BinaryType(), value_required=True)),
)


def test_spark_schema_types_and_field_ids() -> None:
    st = spark_schema(SCHEMA)
    by_name = {f.name: f for f in st.fields}
    assert by_name["id"].dataType == T.LongType() and not by_name["id"].nullable
    assert by_name["u"].dataType == T.StringType()
    assert by_name["t"].dataType == T.LongType()
    assert by_name["tsn"].dataType == T.TimestampNTZType()
    assert by_name["tz"].dataType == T.TimestampType()
    assert by_name["f"].dataType == T.BinaryType()
    assert by_name["d"].dataType == T.DecimalType(9, 2)
    assert by_name["l"].dataType == T.ArrayType(T.StringType(), True)
    assert by_name["m"].dataType == T.MapType(T.StringType(), T.BinaryType(), False)
    assert [f.metadata[FIELD_ID] for f in st.fields] == [1, 2, 3, 4, 5, 6, 7, 8, 11, 13]
    assert by_name["s"].dataType.fields[1].metadata[FIELD_ID] == 10
    assert by_name["l"].metadata["iceberg.element-id"] == 12
    assert by_name["m"].metadata["iceberg.key-id"] == 14


NANOS = 1_700_000_000_123_456_789


def _rows() -> list[dict[str, Any]]:
    rows = []
    for i in range(7):
        null = i == 3
        rows.append(
            {
                "id": i,
                "u": None if null else uuid.UUID(int=i * 0x1234567890ABCDEF1234567).bytes,
                "t": None if null else dt.time(1, 2, i, 5),
                "tsn": None if null else pa.scalar(NANOS + i, pa.timestamp("ns")),
                "tz": None if null else dt.datetime(2024, 1, 1, i, tzinfo=dt.timezone.utc),
                "f": None if null else bytes([i, i, i]),
                "d": None,
                "s": None if null else {"a": i, "uu": uuid.UUID(int=i).bytes},
                "l": None if null else [uuid.UUID(int=i + 1).bytes, None],
                "m": None if null else {f"k{i}": b"v"},
            }
        )
    return rows


def test_to_spark_batch_converts_and_spark_accepts(spark: Any) -> None:
    arrow = schema_to_arrow(SCHEMA, uuid_extension=False)
    rows = _rows()
    for r in rows:
        if r["tsn"] is not None:
            r["tsn"] = r["tsn"].as_py()
    table = pa.Table.from_pylist(rows, schema=arrow)
    batch = table.to_batches()[0].slice(1)  # a slice: offsets must be honoured
    fields = list(SCHEMA.fields)
    out = to_spark_batch(batch, fields, arrow_for_spark(fields))
    got = out.to_pylist()
    for src, row in zip(rows[1:], got, strict=True):
        if src["u"] is None:
            assert row["u"] is None and row["s"] is None and row["l"] is None
            continue
        assert row["u"] == str(uuid.UUID(bytes=src["u"]))
        assert row["s"] == {"a": src["s"]["a"], "uu": str(uuid.UUID(bytes=src["s"]["uu"]))}
        assert row["l"] == [str(uuid.UUID(bytes=src["l"][0])), None]
        t = src["t"]
        assert row["t"] == ((t.hour * 60 + t.minute) * 60 + t.second) * 10**6 + t.microsecond
        assert row["m"] == list(src["m"].items())
    # The nanosecond timestamp keeps its microseconds.
    assert got[0]["tsn"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123456)
    # Spark takes the batch with the derived schema.
    df = spark.createDataFrame(pa.Table.from_batches([out]), schema=spark_schema(SCHEMA))
    collected = df.orderBy("id").collect()
    assert [r["id"] for r in collected] == [1, 2, 3, 4, 5, 6]
    assert collected[0]["u"] == str(uuid.UUID(bytes=rows[1]["u"]))


def test_a_struct_of_no_fields_keeps_its_rows() -> None:
    """The ``_partition`` of an unpartitioned table is a struct of no fields: converted for
    Spark it still has a value per row (nulls kept)."""
    fields = [
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "_partition", StructType(), required=False),
    ]
    empty = pa.StructArray.from_buffers(pa.struct([]), 4, [None])
    for part in (
        empty,
        pa.StructArray.from_arrays([], fields=[], mask=pa.array([False, True] * 2)),
    ):
        batch = pa.record_batch([pa.array(range(4), pa.int64()), part], names=["id", "_partition"])
        out = to_spark_batch(batch, fields, arrow_for_spark(fields))
        assert out.num_rows == 4
        assert out.column(1).to_pylist() == part.to_pylist()


@settings(max_examples=100, deadline=None)
@given(nanos=st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), max_size=8))
def test_nanosecond_timestamps_round_down_to_microseconds(nanos: list[int | None]) -> None:
    """As Iceberg Java's ``DateTimeUtil.nanosToMicros`` (``Math.floorDiv``): toward the past,
    also before 1970, where rounding toward zero would move values forward."""
    fields = [
        NestedField(1, "tz", TimestamptzNanoType()),
        NestedField(2, "ntz", TimestampNanoType()),
    ]
    batch = pa.record_batch(
        [
            pa.array(nanos, pa.int64()).view(pa.timestamp("ns", tz="UTC")),
            pa.array(nanos, pa.int64()).view(pa.timestamp("ns")),
        ],
        names=["tz", "ntz"],
    )
    out = to_spark_batch(batch, fields, arrow_for_spark(fields))
    want = [None if n is None else n // 1000 for n in nanos]
    assert [c.view(pa.int64()).to_pylist() for c in out.columns] == [want, want]
