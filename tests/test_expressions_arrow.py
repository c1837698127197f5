"""Row evaluation: the Arrow compute expression agrees with the one-row evaluator, nulls and NaN
follow the reference's two-valued logic."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.expressions import (
    And,
    BooleanExpression,
    Not,
    Op,
    Or,
    UnboundPredicate,
    bind,
    col,
    parse,
    rewrite_not,
)
from icefloe.expressions.arrow import filter_mask, selection, selection_mask, to_arrow_expression
from icefloe.expressions.evaluator import evaluate
from icefloe.types import (
    DateType,
    DecimalType,
    DoubleType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)

SCHEMA = StructType(
    NestedField(1, "n", LongType()),
    NestedField(2, "x", DoubleType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "st", StructType(NestedField(5, "dec", DecimalType(9, 2)))),
    NestedField(6, "day", DateType()),
    NestedField(7, "ts", TimestamptzType()),
)
ARROW_SCHEMA = pa.schema(
    [
        ("n", pa.int64()),
        ("x", pa.float64()),
        ("s", pa.string()),
        ("st", pa.struct([("dec", pa.decimal128(9, 2))])),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)


def table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)


def select(expr: BooleanExpression, t: pa.Table) -> list[int]:
    bound = bind(SCHEMA, expr)
    mask = t.filter(to_arrow_expression(bound))
    return mask.column("n").to_pylist()


def rows_of(data: list[tuple[Any, Any, Any]]) -> list[dict[str, Any]]:
    return [
        {"n": i, "x": x, "s": s, "st": None if d is None else {"dec": d}}
        for i, (x, s, d) in enumerate(data)
    ]


BASIC = table(
    rows_of(
        [
            (1.0, "abc", Decimal("1.50")),
            (None, None, None),
            (math.nan, "abd", Decimal("-2.00")),
            (-3.0, "xbc", Decimal("0.01")),
        ]
    )
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x < 2", [0, 3]),
        ("x >= -3", [0, 3]),
        ("x > -3", [0]),
        ("x != 1", [1, 2, 3]),
        ("not x = 1", [1, 2, 3]),
        ("x is nan", [2]),
        ("x is not nan", [0, 1, 3]),
        ("x is null", [1]),
        ("x is not null", [0, 2, 3]),
        ("s like 'ab%'", [0, 2]),
        ("s not like 'ab%'", [1, 3]),
        ("s in ('abc', 'xbc')", [0, 3]),
        ("s not in ('abc', 'xbc')", [1, 2]),
        ("st.dec > 0.5", [0]),
        ("st.dec <= 0.01 or x is nan", [2, 3]),
        ("not (x < 2 and s like 'a%')", [1, 2, 3]),  # null and NaN fail x < 2
        ("not (x >= -3)", [1, 2]),
        ("not (st.dec > 0.5)", [1, 2, 3]),
        ("n >= 2 and true", [2, 3]),
    ],
)
def test_null_and_nan_semantics(text: str, expected: list[int]) -> None:
    """``not`` is the exact complement, evaluated over rows and after the bound rewrite the
    planner prunes with."""
    assert select(parse(text), BASIC) == expected
    bound = rewrite_not(bind(SCHEMA, parse(text)))
    rows = BASIC.to_pylist()
    by_row = [r["n"] for r in rows if evaluate(bound, _row(r))]
    assert by_row == expected


def _row(r: dict[str, Any]) -> dict[int, Any]:
    return {1: r["n"], 2: r["x"], 3: r["s"], 5: (r["st"] or {}).get("dec")}


def test_temporal_literals() -> None:
    import datetime as dt

    utc = dt.timezone.utc
    t = pa.Table.from_pylist(
        [
            {"n": 0, "day": dt.date(2024, 1, 1), "ts": dt.datetime(2024, 1, 1, tzinfo=utc)},
            {"n": 1, "day": dt.date(1969, 12, 31), "ts": dt.datetime(1969, 12, 31, tzinfo=utc)},
        ],
        schema=ARROW_SCHEMA,
    )
    assert select(col("day") >= "2000-01-01", t) == [0]
    assert select(col("ts") < "1970-01-01T00:00:00+00:00", t) == [1]
    assert select(col("ts").isin(["2024-01-01T01:00:00+01:00"]), t) == [0]


xs = st.one_of(st.none(), st.just(math.nan), st.floats(-5, 5).map(lambda v: round(v, 1)))
ss = st.one_of(st.none(), st.sampled_from(["", "a", "ab", "abc", "b", "ba"]))
ds = st.one_of(st.none(), st.sampled_from([Decimal("-1.00"), Decimal("0.00"), Decimal("2.50")]))


@st.composite
def predicates(draw: st.DrawFn) -> BooleanExpression:
    column = draw(st.sampled_from(["x", "s", "st.dec"]))
    ops = [
        op
        for op in Op
        if not (op in (Op.IS_NAN, Op.NOT_NAN) and column != "x") and not op.is_spatial
    ]
    if column != "s":
        ops = [op for op in ops if op not in (Op.STARTS_WITH, Op.NOT_STARTS_WITH)]
    op = draw(st.sampled_from(ops))
    values: Any = {
        "x": st.floats(-5, 5).map(lambda v: round(v, 1)),
        "s": st.sampled_from(["", "a", "ab", "b", "abc"]),
        "st.dec": st.sampled_from([Decimal("-1.00"), Decimal("0.00"), Decimal("1.00")]),
    }[column]
    if op.is_unary:
        return UnboundPredicate(op, column)
    if op.is_set:
        return UnboundPredicate(op, column, draw(st.lists(values, max_size=3)))
    return UnboundPredicate(op, column, draw(values))


@st.composite
def trees(draw: st.DrawFn, depth: int = 2) -> BooleanExpression:
    if depth == 0 or draw(st.booleans()):
        return draw(predicates())
    kind = draw(st.sampled_from(["and", "or", "not"]))
    left = draw(trees(depth - 1))
    if kind == "not":
        return Not(left)
    right = draw(trees(depth - 1))
    return And(left, right) if kind == "and" else Or(left, right)


@settings(max_examples=150, deadline=None)
@given(trees(), st.lists(st.tuples(xs, ss, ds), min_size=1, max_size=12))
def test_arrow_matches_row_evaluator(expr: BooleanExpression, data: list[Any]) -> None:
    t = table(rows_of(data))
    bound = bind(SCHEMA, expr)
    got = pc.fill_null(
        pa.compute.is_in(t.column("n"), value_set=t.filter(to_arrow_expression(bound))["n"]),
        False,
    ).to_pylist()
    expected = [evaluate(bound, _row(r)) for r in t.to_pylist()]
    assert got == expected
    # The Arrow expression never yields null, so Not composes: Not(e) selects the complement.
    neg = t.filter(to_arrow_expression(Not(bound)))["n"].to_pylist()
    assert sorted(neg) == [i for i, e in enumerate(expected) if not e]


def _scan_mask(bound: BooleanExpression, t: pa.Table) -> list[Any]:
    """The expression evaluated by a dataset scan (nulls kept), the oracle of filter_mask."""
    import pyarrow.dataset as pads

    return pads.dataset(t).to_table(columns={"m": to_arrow_expression(bound)})["m"].to_pylist()


@settings(max_examples=150, deadline=None)
@given(trees(), st.lists(st.tuples(xs, ss, ds), min_size=0, max_size=12), st.booleans())
def test_filter_mask_equals_the_scanned_expression(
    expr: BooleanExpression, data: list[Any], as_batch: bool
) -> None:
    """filter_mask evaluates kernel by kernel what the expression computes in a scan: the
    same values and the same nulls, on a table of several chunks or on one batch."""
    t = table(rows_of(data))
    if len(t) > 2:  # several chunks
        t = pa.concat_tables([t.slice(0, 2), t.slice(2)])
    bound = bind(SCHEMA, expr)
    got = filter_mask(bound, t.combine_chunks().to_batches()[0] if as_batch and len(t) else t)
    assert got.type == pa.bool_()
    assert got.to_pylist() == _scan_mask(bound, t)


def test_filter_mask_falls_back_to_the_scan_and_its_errors() -> None:
    """What the kernels refuse goes through the dataset scan, whose answer or error counts:
    an int32 column compared with a long literal is cast by both; a column the data lacks is
    the scan's error."""
    t = pa.table({"n": pa.array([1, 5, None], pa.int32())})
    bound = bind(SCHEMA, parse("n > 2"))
    assert filter_mask(bound, t).to_pylist() == [False, True, None]
    with pytest.raises(pa.ArrowInvalid):
        filter_mask(bind(SCHEMA, parse("x > 2")), t)
    assert filter_mask(bind(SCHEMA, parse("true")), t).to_pylist() == [True] * 3


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.booleans()), max_size=200),
    st.integers(0, 70),
    st.integers(0, 200),
)
def test_selection_is_the_mask_with_nulls_false_and_no_validity(
    values: list[bool | None], offset: int, length: int
) -> None:
    """A selection selects what ``fill_null(mask, False)`` selects, of a sliced mask too (a
    bit offset into its buffers), with no validity buffer (Arrow's filter then takes its
    fast path); a filter by it keeps the same rows."""
    mask = pa.array(values, pa.bool_()).slice(offset, length)
    got = selection(mask)
    assert got.buffers()[0] is None
    assert got.null_count == 0
    assert got.to_pylist() == [bool(v) for v in mask.to_pylist()]
    rows = pa.array(range(len(mask)), pa.int64())
    assert rows.filter(got).equals(rows.filter(pc.fill_null(mask, False)))


def test_selection_mask_of_an_optional_column() -> None:
    """Rows whose filter is unknown (a null value) are not selected."""
    t = pa.table({"n": pa.array([1, 5, None, 7], pa.int32())})
    got = selection_mask(bind(SCHEMA, parse("n > 2")), t)
    assert got.to_pylist() == [False, True, False, True]
    assert got.buffers()[0] is None
