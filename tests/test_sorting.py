"""Sort orders: Appendix C JSON, golden round trips, defaults and the unsorted order."""

from __future__ import annotations

import json
from typing import Any

import pytest

from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.sorting import (
    UNSORTED_SORT_ORDER,
    NullOrder,
    SortDirection,
    SortField,
    SortOrder,
)
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    TruncateTransform,
    UnknownTransform,
)
from icefloe.types import LongType, MapType, NestedField, StringType, TimestampType
from support.testdata import TESTDATA

GOLDEN = sorted(
    [
        *(TESTDATA / "iceberg-java" / "metadata").glob("*.json"),
        *(TESTDATA / "iceberg-rust" / "table_metadata").glob("*.json"),
    ]
)


def golden_orders() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in GOLDEN:
        meta = json.loads(path.read_text())
        for o in meta.get("sort-orders") or []:
            out.append((f"{path.name}:{o.get('order-id')}", o))
    return out


@pytest.mark.parametrize(
    ("name", "obj"), golden_orders(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_golden_orders_round_trip(name: str, obj: dict[str, Any]) -> None:
    order = SortOrder.from_json(obj)
    assert order.to_json() == obj
    assert SortOrder.from_json(order.to_json()) == order


def test_golden_v2_order() -> None:
    meta = json.loads((TESTDATA / "iceberg-java/metadata/TableMetadataV2Valid.json").read_text())
    order = SortOrder.from_json(meta["sort-orders"][0])
    assert order == SortOrder(
        SortField(2, IdentityTransform(), SortDirection.ASC, NullOrder.NULLS_FIRST),
        SortField(3, BucketTransform(4), SortDirection.DESC, NullOrder.NULLS_LAST),
        order_id=3,
    )
    assert list(order.to_json()["fields"][0]) == [
        "transform",
        "source-id",
        "direction",
        "null-order",
    ]


def test_defaults() -> None:
    assert SortField(1).null_order is NullOrder.NULLS_FIRST
    assert SortField(1, direction=SortDirection.DESC).null_order is NullOrder.NULLS_LAST
    assert SortField(1).transform == IdentityTransform()
    assert SortOrder(SortField(1)).order_id == 1
    assert SortOrder().order_id == 0 and SortOrder().is_unsorted


def test_unsorted() -> None:
    assert UNSORTED_SORT_ORDER.order_id == 0
    assert UNSORTED_SORT_ORDER.fields == ()
    assert UNSORTED_SORT_ORDER.to_json() == {"order-id": 0, "fields": []}
    with pytest.raises(ValidationError, match="reserved for the unsorted"):
        SortOrder(SortField(1), order_id=0)
    with pytest.raises(ValidationError, match="must have id 0"):
        SortOrder(order_id=2)
    with pytest.raises(ValidationError, match="must have id 0"):
        SortOrder.from_json({"order-id": 1, "fields": []})


def test_multi_arg_and_unknown_transform() -> None:
    obj = {
        "order-id": 2,
        "fields": [
            {
                "transform": "zorder",
                "source-ids": [1, 2],
                "direction": "desc",
                "null-order": "nulls-first",
            }
        ],
    }
    order = SortOrder.from_json(obj)
    assert order.fields[0].transform == UnknownTransform("zorder")
    assert order.fields[0].all_source_ids == (1, 2)
    assert order.to_json() == obj


def test_case_insensitive_enums_and_errors() -> None:
    f = SortField.from_json(
        {"transform": "identity", "source-id": 1, "direction": "ASC", "null-order": "NULLS-LAST"}
    )
    assert f.direction is SortDirection.ASC and f.null_order is NullOrder.NULLS_LAST
    for bad in (
        {"transform": "identity", "source-id": 1, "direction": "up", "null-order": "nulls-last"},
        {"transform": "identity", "source-id": 1, "direction": "asc", "null-order": "first"},
        {"transform": "identity", "direction": "asc", "null-order": "nulls-last"},
        {"source-id": 1, "direction": "asc", "null-order": "nulls-last"},
        {"transform": "identity", "source-id": 1, "null-order": "nulls-last"},
        {"transform": "identity", "source-id": 1, "direction": "asc"},
        {
            "transform": "identity",
            "source-id": True,
            "direction": "asc",
            "null-order": "nulls-last",
        },
    ):
        with pytest.raises(ValidationError):
            SortField.from_json(bad)
    with pytest.raises(ValidationError, match="order-id"):
        SortOrder.from_json({"fields": []})


def test_satisfies() -> None:
    by_day = SortOrder(SortField(1, DayTransform()), SortField(2), order_id=1)
    by_hour = SortOrder(SortField(1, HourTransform()), order_id=2)
    assert by_hour.satisfies(SortOrder(SortField(1, DayTransform())))
    assert not by_day.satisfies(by_hour)
    assert by_day.satisfies(UNSORTED_SORT_ORDER)
    trunc = SortOrder(SortField(3, TruncateTransform(10)))
    assert trunc.satisfies(SortOrder(SortField(3, TruncateTransform(10)), order_id=5))
    assert not by_day.satisfies(SortOrder(SortField(1, DayTransform(), SortDirection.DESC)))
    assert by_day.same_order(SortOrder(*by_day.fields, order_id=9))


def test_validate() -> None:
    schema = Schema(
        NestedField(1, "ts", TimestampType()),
        NestedField(2, "s", StringType()),
        NestedField(3, "m", MapType(4, StringType(), 5, LongType())),
    )
    SortOrder(SortField(1, DayTransform()), SortField(2)).validate(schema)
    with pytest.raises(ValidationError, match="non-primitive"):
        SortOrder(SortField(3)).validate(schema)
    with pytest.raises(ValidationError, match="cannot find source column 9"):
        SortOrder(SortField(9)).validate(schema)
    with pytest.raises(ValidationError, match="invalid source type string"):
        SortOrder(SortField(2, DayTransform())).validate(schema)
    assert "day(1) asc nulls-first" in str(SortOrder(SortField(1, DayTransform())))
