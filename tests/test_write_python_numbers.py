"""Python numbers in a mapping of columns (as JSON decoding gives them) for ``double`` and
``float`` fields convert alike at any depth: integers to a ``double`` when exact (up to 2**53 in
magnitude), to a ``float`` up to 2**24, and floats to a ``float`` only when exact in 32 bits;
anything else is refused naming the value and why. Arrow input keeps its own types' rules."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.types import (
    DoubleType,
    FloatType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)
from icefloe.write.input import to_table_schema

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "x", DoubleType()),
    NestedField(3, "geo", StructType(NestedField(4, "lat", DoubleType()))),
    NestedField(5, "xs", ListType(6, DoubleType(), element_required=False)),
    NestedField(7, "m", MapType(8, StringType(), 9, DoubleType(), value_required=False)),
    NestedField(10, "f", FloatType()),
    NestedField(
        11,
        "deep",
        StructType(
            NestedField(12, "f", FloatType()),
            NestedField(13, "ps", ListType(14, StructType(NestedField(15, "v", DoubleType())))),
        ),
    ),
)


def _column(data: dict[str, Any], name: str) -> list[Any]:
    out: list[Any] = to_table_schema(data, SCHEMA).column(name).to_pylist()
    return out


@pytest.mark.parametrize(
    ("name", "values", "expected"),
    [
        ("x", [5, 6], [5.0, 6.0]),
        ("geo", [{"lat": 5}, {"lat": 6}], [{"lat": 5.0}, {"lat": 6.0}]),
        ("geo", [{"lat": 5}, None, {"lat": None}], [{"lat": 5.0}, None, {"lat": None}]),
        ("xs", [[1, 2], None, [], [3]], [[1.0, 2.0], None, [], [3.0]]),
        ("m", [{"a": 1}, [("b", 2)], None], [[("a", 1.0)], [("b", 2.0)], None]),
        ("f", [5, 0.5, None], [5.0, 0.5, None]),
        (
            "deep",
            [{"f": 1, "ps": [{"v": 2}, {"v": -(2**53)}]}],
            [{"f": 1.0, "ps": [{"v": 2.0}, {"v": float(-(2**53))}]}],
        ),
        ("deep", [{"f": 0.25, "ps": [{"v": 2**53}]}], [{"f": 0.25, "ps": [{"v": float(2**53)}]}]),
    ],
)
def test_python_ints_convert_to_double_and_float_at_any_depth(
    name: str, values: list[Any], expected: list[Any]
) -> None:
    n = len(values)
    assert _column({"id": list(range(n)), name: values}, name) == expected


@pytest.mark.parametrize(
    ("name", "values", "path"),
    [
        ("x", [1, 2**53 + 1], "x"),
        ("geo", [{"lat": 2**53 + 1}], "geo.lat"),
        ("geo", [{"lat": -(2**53) - 1}, {"lat": 1}], "geo.lat"),
        ("xs", [[1], [2**60]], "xs.element"),
        ("m", [{"a": 2**53 + 1}], "'m'"),  # pyarrow converts maps: its message says why
        ("deep", [{"ps": [{"v": 2**53 + 1}]}], "deep.ps.element.v"),
    ],
)
def test_ints_a_double_cannot_hold_exactly_are_refused_saying_so(
    name: str, values: list[Any], path: str
) -> None:
    with pytest.raises(ValidationError) as e:
        to_table_schema({"id": list(range(len(values))), name: values}, SCHEMA)
    message = str(e.value)
    assert path in message
    assert "exactly" in message and "represent" in message
    assert "cannot be written as" not in message


@pytest.mark.parametrize(
    ("name", "values", "path"),
    [
        ("f", [0.5, 0.1], "f"),
        ("f", [2**24 + 1], "f"),
        ("deep", [{"f": 0.1}], "deep.f"),
        ("deep", [{"f": 2**24 + 1}], "deep.f"),
    ],
)
def test_python_numbers_a_float_would_round_are_refused_saying_why(
    name: str, values: list[Any], path: str
) -> None:
    with pytest.raises(ValidationError) as e:
        to_table_schema({"id": list(range(len(values))), name: values}, SCHEMA)
    message = str(e.value)
    assert repr(path) in message
    assert "cannot be represented exactly" in message


def test_nan_and_infinity_convert_to_float() -> None:
    got = _column({"id": [1, 2], "f": [float("nan"), float("inf")]}, "f")
    assert got[0] != got[0] and got[1] == float("inf")


def test_arrow_ints_for_double_fields_stay_refused() -> None:
    with pytest.raises(ValidationError, match="cannot be written as double"):
        to_table_schema({"id": [1], "x": pa.array([5])}, SCHEMA)
    geo = pa.array([{"lat": 5}])
    with pytest.raises(ValidationError, match="cannot be written as double"):
        to_table_schema(pa.table({"id": [1], "geo": geo}), SCHEMA)


def test_a_daily_json_batch_appends_whatever_its_numbers_happen_to_be(tmp_path: Any) -> None:
    cat = load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    cat.create_namespace("n")
    table = cat.create_table("n.t", SCHEMA)
    table.append({"id": [1, 2], "geo": [{"lat": 5}, {"lat": 6}], "xs": [[1], [2, 3]]})
    table.append({"id": [3], "geo": [{"lat": 6.5}], "xs": [[0.5]]})
    rows = table.scan().to_arrow().sort_by("id").select(["geo", "xs"]).to_pylist()
    assert rows == [
        {"geo": {"lat": 5.0}, "xs": [1.0]},
        {"geo": {"lat": 6.0}, "xs": [2.0, 3.0]},
        {"geo": {"lat": 6.5}, "xs": [0.5]},
    ]
