"""The compact JSON form of bound expressions: exact values and round trips."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe import values
from icefloe.exceptions import ValidationError
from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    BoundReference,
    Not,
    Op,
    Or,
    bind,
    col,
    parse,
)
from icefloe.expressions.literals import convert_literal
from icefloe.expressions.serde import from_dict, literal_from_json, literal_to_json, to_dict
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

# Appendix D examples of the JSON single-value form.
APPENDIX_D = [
    (BooleanType(), True, True),
    (IntegerType(), 1, 1),
    (LongType(), 34, 34),
    (FloatType(), 1.0, 1.0),
    (DoubleType(), 1.0, 1.0),
    (DecimalType(9, 2), Decimal("14.20"), "14.20"),
    (DateType(), 17486, "2017-11-16"),
    (TimeType(), 81068123456, "22:31:08.123456"),
    (TimestampType(), 1510871468123456, "2017-11-16T22:31:08.123456"),
    (TimestamptzType(), 1510871468123456, "2017-11-16T22:31:08.123456+00:00"),
    (TimestampNanoType(), 1510871468123456789, "2017-11-16T22:31:08.123456789"),
    (TimestamptzNanoType(), 1510871468123456789, "2017-11-16T22:31:08.123456789+00:00"),
    (StringType(), "iceberg", "iceberg"),
    (
        UUIDType(),
        uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
        "f79c3e09-677c-4bbd-a479-3f349cb785e7",
    ),
    (FixedType(4), b"\x00\x01\x02\xff", "000102ff"),
    (BinaryType(), b"\x00\x01\x02\xff", "000102ff"),
]


@pytest.mark.parametrize(("t", "value", "json_value"), APPENDIX_D)
def test_literal_json_matches_appendix_d(t: IcebergType, value: Any, json_value: Any) -> None:
    assert literal_to_json(value, t) == json_value
    assert literal_from_json(json_value, t) == value


@pytest.mark.parametrize(
    ("t", "days_or_units", "text"),
    [
        (DateType(), -1, "1969-12-31"),
        (DateType(), -719528, "0000-01-01"),
        (TimestampType(), -1, "1969-12-31T23:59:59.999999"),
        (TimestampNanoType(), -1, "1969-12-31T23:59:59.999999999"),
    ],
)
def test_pre_epoch_values(t: IcebergType, days_or_units: int, text: str) -> None:
    assert literal_to_json(days_or_units, t) == text
    assert literal_from_json(text, t) == days_or_units


SCHEMA = StructType(
    NestedField(1, "id", LongType()),
    NestedField(2, "s", StringType()),
    NestedField(3, "x", DoubleType()),
    NestedField(4, "st", StructType(NestedField(5, "dec", DecimalType(9, 2)))),
    NestedField(6, "ts", TimestamptzType()),
    NestedField(7, "u", UUIDType()),
    NestedField(8, "bin", BinaryType()),
)


def test_example_form() -> None:
    e = bind(SCHEMA, parse("id > 5 and (st.dec in (1.5, 2) or not x is nan)"))
    assert to_dict(e) == {
        "type": "and",
        "left": {
            "type": "gt",
            "term": {"id": 1, "path": ["id"], "type": "long"},
            "value": 5,
        },
        "right": {
            "type": "or",
            "left": {
                "type": "in",
                "term": {"id": 5, "path": ["st", "dec"], "type": "decimal(9,2)"},
                "values": ["1.50", "2.00"],
            },
            "right": {
                "type": "not",
                "child": {"type": "is-nan", "term": {"id": 3, "path": ["x"], "type": "double"}},
            },
        },
    }
    assert to_dict(AlwaysTrue()) is True
    assert to_dict(AlwaysFalse()) is False


uuids = st.uuids().map(str)
leaves = st.one_of(
    st.builds(lambda v: col("id") < v, st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda v: col("s").starts_with(v), st.text(max_size=5)),
    st.builds(lambda v: col("s").notin(v), st.lists(st.text(max_size=3), max_size=3)),
    st.builds(lambda v: col("x") >= v, st.floats(allow_nan=False, allow_infinity=False)),
    st.builds(lambda v: col("st.dec") != v, st.decimals(-(10**6), 10**6, places=2)),
    st.builds(lambda v: col("ts") == v, st.integers(-(2**62), 2**62)),
    st.builds(lambda v: col("u").isin(v), st.lists(uuids, max_size=3)),
    st.builds(lambda v: col("bin") > v, st.binary(max_size=4)),
    st.sampled_from([col("x").is_nan(), col("s").is_null(), col("id").not_null()]),
)
exprs = st.recursive(
    leaves,
    lambda sub: st.one_of(st.builds(And, sub, sub), st.builds(Or, sub, sub), st.builds(Not, sub)),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(exprs)
def test_round_trip(expr: BooleanExpression) -> None:
    bound = bind(SCHEMA, expr)
    form = to_dict(bound)
    again = from_dict(json.loads(json.dumps(form)))
    assert again == bound
    assert to_dict(again) == form


@pytest.mark.parametrize(
    "bad",
    [
        None,
        {"type": "gt"},
        {"type": "between", "term": {"id": 1, "path": ["id"], "type": "long"}},
        {"type": "gt", "term": {"id": 1, "path": ["id"], "type": "long"}, "value": "5"},
        {"type": "eq", "term": {"id": 1, "path": [], "type": "long"}, "value": 5},
        {"type": "eq", "term": {"id": 8, "path": ["b"], "type": "binary"}, "value": "zz"},
        {"type": "and", "left": True},
    ],
)
def test_malformed_forms_raise(bad: Any) -> None:
    with pytest.raises(ValidationError):
        from_dict(bad)


def test_bound_predicate_json_keeps_the_type() -> None:
    ref = BoundReference(9, "d", DateType())
    form = to_dict(BoundPredicate(Op.LT, ref, 17486))
    assert form["value"] == "2017-11-16"
    assert form["term"]["type"] == "date"


@given(st.integers(-(10**8), 10**8))
def test_date_literals_round_trip(days: int) -> None:
    text = literal_to_json(days, DateType())
    assert literal_from_json(text, DateType()) == days
    if -719162 <= days <= 2932896:  # within datetime.date's years 1..9999: an independent oracle
        assert text == (dt.date(1970, 1, 1) + dt.timedelta(days=days)).isoformat()


@given(
    st.sampled_from(
        [
            (DecimalType(9, 2), st.decimals("-9999999.99", "9999999.99", places=2)),
            (DateType(), st.dates()),
            (TimeType(), st.times()),
            (TimestampType(), st.datetimes()),
            (UUIDType(), st.uuids()),
        ]
    ).flatmap(lambda ts: st.tuples(st.just(ts[0]), ts[1]))
)
def test_literal_json_is_the_shared_serialiser(case: tuple[IcebergType, Any]) -> None:
    """Bound literals serialise exactly as :mod:`icefloe.values` serialises the same value."""
    t, value = case
    internal = convert_literal(value, t)
    assert literal_to_json(internal, t) == values.to_json(t, value)


@pytest.mark.parametrize(
    ("t", "internal", "text"),
    [
        (DecimalType(38, 10), Decimal("1234567890123456789012345678.9012345678"), None),
        (DecimalType(38, 0), Decimal(-(10**38) + 1), None),
        (DecimalType(12, 10), Decimal("0.0000000001"), "0.0000000001"),  # as Java writes it
        (TimeType(), 81068000000, "22:31:08"),
        (FloatType(), 1.100000023841858, 1.1),
    ],
)
def test_literal_json_exact_forms(t: IcebergType, internal: Any, text: Any) -> None:
    form = literal_to_json(internal, t)
    if text is not None:
        assert form == text
    assert literal_from_json(json.loads(json.dumps(form)), t) == internal


def test_infinite_literals_travel_as_strings() -> None:
    # JSON numbers have no infinity: the literal is the string Jackson writes for it, and the
    # form stays standard JSON (no bare ``Infinity`` token).
    for value, text in ((float("inf"), "Infinity"), (float("-inf"), "-Infinity")):
        e = bind(SCHEMA, col("x") >= value)
        form = to_dict(e)
        assert form["value"] == text
        assert from_dict(json.loads(json.dumps(form, allow_nan=False))) == e


@pytest.mark.parametrize(
    ("t", "obj"),
    [
        (DecimalType(9, 2), "1.5"),  # the scale must be the type's
        (TimestamptzType(), "2017-11-16T22:31:08+01:00"),  # only +00:00
        (TimeType(), "22:31:08.1234567"),
        (DoubleType(), float("nan")),
        (LongType(), True),
        (DateType(), ["2017-11-16"]),
        (UUIDType(), "not-a-uuid"),
    ],
)
def test_bad_json_literals_raise(t: IcebergType, obj: Any) -> None:
    with pytest.raises(ValidationError):
        literal_from_json(obj, t)
