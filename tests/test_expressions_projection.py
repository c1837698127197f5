"""Inclusive and strict projection through each transform.

Three kinds of evidence: the spec's rules on hand-checked cases; the defining property on
randomised predicates (a row that matches has its partition selected by the inclusive
projection, a partition selected by the strict projection has only matching rows); and agreement
with PyIceberg 0.12's ``project``/``strict_project``, compared by evaluating both projections on
the same partition values. PyIceberg does not make the reference's pre-1970 adjustments for
year/month/day/hour, so there ours must select at least as much (inclusive) or at most as much
(strict), and exactly as much when no adjustment applies.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.expressions import (
    AlwaysFalse,
    BooleanExpression,
    BoundPredicate,
    Op,
    UnboundPredicate,
    bind,
    col,
)
from icefloe.expressions.evaluator import evaluate, evaluate_predicate
from icefloe.expressions.projection import project_predicate, transform_literal
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
)
from icefloe.types import (
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)

TYPES: dict[str, IcebergType] = {
    "i": IntegerType(),
    "l": LongType(),
    "dec": DecimalType(9, 2),
    "d": DateType(),
    "ts": TimestampType(),
    "tz": TimestamptzType(),
    "s": StringType(),
}
SCHEMA = StructType(*(NestedField(n + 1, k, t) for n, (k, t) in enumerate(TYPES.items())))
TRANSFORMS: dict[str, list[Transform]] = {
    "i": [IdentityTransform(), BucketTransform(4), TruncateTransform(10)],
    "l": [IdentityTransform(), BucketTransform(7), TruncateTransform(3)],
    "dec": [IdentityTransform(), BucketTransform(4), TruncateTransform(50)],
    "d": [IdentityTransform(), YearTransform(), MonthTransform(), DayTransform()],
    "ts": [YearTransform(), MonthTransform(), DayTransform(), HourTransform(), BucketTransform(3)],
    "tz": [DayTransform(), HourTransform(), IdentityTransform()],
    "s": [IdentityTransform(), BucketTransform(5), TruncateTransform(2)],
}


def bound(expr: BooleanExpression) -> BoundPredicate:
    b = bind(SCHEMA, expr)
    assert isinstance(b, BoundPredicate), b
    return b


def proj(t: Transform, expr: BooleanExpression, strict: bool = False) -> str | None:
    p = project_predicate(t, "p", bound(expr), strict)
    return None if p is None else str(p)


# --- the spec's rules on hand-checked cases ------------------------------------------------


@pytest.mark.parametrize(
    ("transform", "expr", "inclusive", "strict"),
    [
        (IdentityTransform(), col("l") < 5, "p < 5", "p < 5"),
        (IdentityTransform(), col("s").isin(["a", "b"]), "p in ('a', 'b')", "p in ('a', 'b')"),
        (IdentityTransform(), col("s").starts_with("ab"), "p like 'ab%'", "p like 'ab%'"),
        (BucketTransform(4), col("l") == 34, "p = 3", None),
        (BucketTransform(4), col("l") != 34, None, "p != 3"),
        (BucketTransform(4), col("l").isin([34, 1]), "p in (0, 3)", None),
        (BucketTransform(4), col("l").notin([34, 1]), None, "p not in (0, 3)"),
        (BucketTransform(4), col("l") < 34, None, None),
        (BucketTransform(4), col("l").is_null(), "p is null", "p is null"),
        # the lowest ints (below -2147483640) truncate past the minimum and wrap to 2147483646
        (TruncateTransform(10), col("i") < 100, "p <= 90 or p = 2147483646", "p < 100"),
        (TruncateTransform(10), col("i") <= 100, "p <= 100 or p = 2147483646", "p < 100"),
        (TruncateTransform(10), col("i") > 100, "p >= 100", "p > 100 and p != 2147483646"),
        (TruncateTransform(10), col("i") >= 100, "p >= 100", "p > 90 and p != 2147483646"),
        (TruncateTransform(10), col("i") == -(2**31), "p = 2147483646", None),
        (TruncateTransform(10), col("i") < -2147483645, None, None),
        (TruncateTransform(8), col("i") < 100, "p <= 96", "p < 96"),  # 8 divides the minimum
        (TruncateTransform(10), col("i") == 105, "p = 100", None),
        (TruncateTransform(10), col("i") != 105, None, "p != 100"),
        (TruncateTransform(10), col("i") < -5, "p <= -10 or p = 2147483646", "p < -10"),
        (TruncateTransform(10), col("i").isin([1, 15]), "p in (0, 10)", None),
        (TruncateTransform(10), col("i").notin([1, 15]), None, "p not in (0, 10)"),
        (TruncateTransform(50), col("dec") < Decimal("1.00"), "p <= 0.50", "p < 1.00"),
        (TruncateTransform(50), col("dec") > Decimal("1.00"), "p >= 1.00", "p > 1.00"),
        (TruncateTransform(2), col("s") < "abc", "p <= 'ab'", "p < 'ab'"),
        (TruncateTransform(2), col("s") >= "abc", "p >= 'ab'", "p > 'ab'"),
        (TruncateTransform(2), col("s") == "abc", "p = 'ab'", None),
        (TruncateTransform(2), col("s") != "abc", None, "p != 'ab'"),
        (TruncateTransform(2), col("s").starts_with("a"), "p like 'a%'", "p like 'a%'"),
        (TruncateTransform(2), col("s").starts_with("ab"), "p = 'ab'", "p = 'ab'"),
        (TruncateTransform(2), col("s").starts_with("abc"), "p like 'ab%'", None),
        (TruncateTransform(2), col("s").not_starts_with("a"), "p not like 'a%'", "p not like 'a%'"),
        (TruncateTransform(2), col("s").not_starts_with("ab"), "p != 'ab'", "p != 'ab'"),
        (TruncateTransform(2), col("s").not_starts_with("abc"), None, "p not like 'ab%'"),
        # 2017-11-16 is day 17486, month 574, year 47.
        (DayTransform(), col("d") < "2017-11-16", "p <= 17485", "p < 17486"),
        (MonthTransform(), col("d") < "2017-11-16", "p <= 574", "p < 574"),
        (MonthTransform(), col("d") >= "2017-11-01", "p >= 574", "p > 573"),
        (YearTransform(), col("d") == "2017-11-16", "p = 47", None),
        (YearTransform(), col("d") != "2017-11-16", None, "p != 47"),
        (HourTransform(), col("ts") > "1970-01-01T01:30:00", "p >= 1", "p > 1"),
        # Before 1970: the reference's adjustments.
        (MonthTransform(), col("d") < "1969-06-15", "p <= -6", "p < -7"),
        (MonthTransform(), col("d") <= "1969-06-15", "p <= -6", "p < -7"),
        (MonthTransform(), col("d") == "1969-06-15", "p in (-7, -6)", None),
        (MonthTransform(), col("d").isin(["1969-06-15", "1970-03-01"]), "p in (-7, -6, 2)", None),
        (MonthTransform(), col("d") > "1969-06-15", "p >= -7", "p > -6"),
        (MonthTransform(), col("d") >= "1969-06-15", "p >= -7", "p > -6"),
        (MonthTransform(), col("d") != "1969-06-15", None, "p not in (-7, -6)"),
        (YearTransform(), col("ts") >= "1970-01-01", "p >= 0", "p > 0"),
        (YearTransform(), col("ts") > "1970-01-01", "p >= 0", "p > 1"),
        (DayTransform(), col("d") < "1969-06-15", "p <= -201", "p < -200"),
        (DayTransform(), col("d") == "1969-06-15", "p = -200", None),
        # Void and unknown transforms never project.
        (VoidTransform(), col("l") == 1, None, None),
        (VoidTransform(), col("l").is_null(), None, None),
        (UnknownTransform("zorder"), col("l") == 1, None, None),
    ],
)
def test_projection_rules(
    transform: Transform, expr: BooleanExpression, inclusive: str | None, strict: str | None
) -> None:
    assert proj(transform, expr) == inclusive
    assert proj(transform, expr, strict=True) == strict


def test_bucket_values_match_the_spec() -> None:
    # Spec Appendix B: bucket(34) for long = 2017239379 -> mod 4 = 3; "iceberg" = 1210000089.
    assert transform_literal(BucketTransform(4), LongType(), 34) == 2017239379 % 4
    assert transform_literal(BucketTransform(100), StringType(), "iceberg") == 1210000089 % 100


# --- randomised predicates: the defining property, and PyIceberg ----------------------------

EPOCH = dt.datetime(1970, 1, 1)
NUMERIC = {"i", "l", "dec", "d", "ts", "tz"}


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, Transform, UnboundPredicate, list[Any]]:
    column = draw(st.sampled_from(sorted(TYPES)))
    transform = draw(st.sampled_from(TRANSFORMS[column]))
    ops = [op for op in Op if op not in (Op.IS_NAN, Op.NOT_NAN) and not op.is_spatial]
    if column != "s":
        ops = [op for op in ops if op not in (Op.STARTS_WITH, Op.NOT_STARTS_WITH)]
    op = draw(st.sampled_from(ops))
    unit = {"dec": Decimal("0.01"), "ts": 1, "tz": 1}.get(column, 1)
    if column == "s":
        value_st: st.SearchStrategy[Any] = st.text("abc", max_size=4)
    elif column in ("ts", "tz"):
        big = 3 * 365 * 86_400_000_000
        value_st = st.one_of(
            st.integers(-big, big),
            st.integers(-3, 3).map(lambda k: k * 3_600_000_000),
            st.integers(-3, 3).map(lambda k: k * 86_400_000_000),
        )
    elif column == "d":
        value_st = st.integers(-800, 800)
    elif column == "dec":
        # the type's ends too (decimal(9, 2): +-9999999.99), where no next value exists
        top = 10**9 - 1
        value_st = st.one_of(
            st.integers(-300, 300), st.integers(top - 40, top), st.integers(-top, -top + 40)
        ).map(lambda k: Decimal(k).scaleb(-2))
    else:
        value_st = st.integers(-120, 120)
        if column in ("i", "l"):
            # the type's ends too, where truncate wraps (as stored) below the minimum
            low = -(2 ** (31 if column == "i" else 63))
            value_st = st.one_of(
                value_st, st.integers(low, low + 40), st.integers(-low - 41, -low - 1)
            )
    if op.is_unary:
        pred = UnboundPredicate(op, column)
        lits: list[Any] = []
    elif op.is_set:
        lits = draw(st.lists(value_st, min_size=2, max_size=3, unique=True))
        pred = UnboundPredicate(op, column, lits)  # type: ignore[assignment]
    else:
        lits = [draw(value_st)]
        pred = UnboundPredicate(op, column, lits[0])  # type: ignore[assignment]
    # Source values to check: around every literal, plus some spread out, plus null.
    if column == "s":
        values: list[Any] = draw(st.lists(st.text("abc", max_size=4), min_size=5, max_size=15))
        values += lits
        values += [lit[:k] for lit in lits for k in range(len(lit))]
    else:
        values = [lit + k * unit for lit in lits for k in range(-2, 3)]
        values += draw(st.lists(value_st, min_size=3, max_size=10))
    if column in ("ts", "tz", "d") and not isinstance(transform, IdentityTransform):
        # Partition boundaries near each literal.
        span = 86_400_000_000 if column != "d" else 1
        values += [lit + k * span for lit in lits for k in (-40, -31, -1, 1, 31, 40)]
    # values past the type's range do not exist
    if column == "dec":
        values = [v for v in values if abs(v) < Decimal(10) ** 7]
    elif column in ("i", "l"):
        bits = 31 if column == "i" else 63
        values = [v for v in values if -(2**bits) <= v < 2**bits]
    values.append(None)
    return column, transform, pred, values


def _partition_struct(transform: Transform, column: str) -> StructType:
    return StructType(NestedField(1000, "p", transform.result_type(TYPES[column])))


def _apply(transform: Transform, column: str, value: Any) -> Any:
    if value is None:
        return None
    return transform_literal(transform, TYPES[column], value)


def _eval(p: BooleanExpression | None, struct: StructType, value: Any, default: bool) -> bool:
    if p is None:
        return default
    return evaluate(bind(struct, p), {1000: value})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_projections_are_inclusive_and_strict(
    case: tuple[str, Transform, UnboundPredicate, list[Any]],
) -> None:
    column, transform, pred, values = case
    b = bind(SCHEMA, pred)
    if not isinstance(b, BoundPredicate):
        return
    struct = _partition_struct(transform, column)
    inclusive = project_predicate(transform, "p", b)
    strict = project_predicate(transform, "p", b, strict=True)
    for v in values:
        if v is not None and column == "i" and not -(2**31) <= v < 2**31:
            continue
        if v is not None and column == "l" and not -(2**63) <= v < 2**63:
            continue
        matches = evaluate_predicate(b, v)
        part = _apply(transform, column, v)
        if isinstance(part, Decimal) and abs(part) >= Decimal(10) ** 7:
            continue  # truncated past the type's range: such values are refused on write
        if matches:
            assert _eval(inclusive, struct, part, True), (v, part, inclusive)
        if _eval(strict, struct, part, False):
            assert matches, (v, part, strict)


# --- differential against PyIceberg ---------------------------------------------------------


def _pyiceberg_pred(pred: UnboundPredicate) -> Any:
    from pyiceberg import expressions as px

    names = {
        Op.LT: px.LessThan,
        Op.LT_EQ: px.LessThanOrEqual,
        Op.GT: px.GreaterThan,
        Op.GT_EQ: px.GreaterThanOrEqual,
        Op.EQ: px.EqualTo,
        Op.NOT_EQ: px.NotEqualTo,
        Op.IN: px.In,
        Op.NOT_IN: px.NotIn,
        Op.IS_NULL: px.IsNull,
        Op.NOT_NULL: px.NotNull,
        Op.STARTS_WITH: px.StartsWith,
        Op.NOT_STARTS_WITH: px.NotStartsWith,
    }
    cls = names[pred.op]
    t = TYPES[pred.term]

    def conv(v: Any) -> Any:
        if isinstance(t, DateType):
            return (dt.date(1970, 1, 1) + dt.timedelta(days=v)).isoformat()
        if isinstance(t, TimestampType | TimestamptzType):
            text = (EPOCH + dt.timedelta(microseconds=v)).isoformat()
            return text + "+00:00" if isinstance(t, TimestamptzType) else text
        return v

    if pred.op.is_unary:
        return cls(pred.term)
    if pred.op.is_set:
        return cls(pred.term, {conv(v) for v in pred.literals})
    return cls(pred.term, conv(pred.literal))


def _from_pyiceberg(e: Any) -> BooleanExpression | None:
    if e is None:
        return None
    ops = {
        "LessThan": Op.LT,
        "LessThanOrEqual": Op.LT_EQ,
        "GreaterThan": Op.GT,
        "GreaterThanOrEqual": Op.GT_EQ,
        "EqualTo": Op.EQ,
        "NotEqualTo": Op.NOT_EQ,
        "In": Op.IN,
        "NotIn": Op.NOT_IN,
        "IsNull": Op.IS_NULL,
        "NotNull": Op.NOT_NULL,
        "StartsWith": Op.STARTS_WITH,
        "NotStartsWith": Op.NOT_STARTS_WITH,
    }
    op = ops[type(e).__name__]
    name = e.term.name
    if op.is_unary:
        return UnboundPredicate(op, name)
    if op.is_set:
        return UnboundPredicate(op, name, {lit.value for lit in e.literals})
    return UnboundPredicate(op, name, e.literal.value)


def _pyiceberg_schema() -> Any:
    from pyiceberg import types as pt
    from pyiceberg.schema import Schema as PySchema

    py_types = [
        pt.IntegerType(),
        pt.LongType(),
        pt.DecimalType(9, 2),
        pt.DateType(),
        pt.TimestampType(),
        pt.TimestamptzType(),
        pt.StringType(),
    ]
    fields = zip(TYPES, py_types, strict=True)
    return PySchema(
        *(pt.NestedField(n + 1, k, t, required=False) for n, (k, t) in enumerate(fields))
    )


PY_SCHEMA = _pyiceberg_schema()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_projection_agrees_with_pyiceberg(
    case: tuple[str, Transform, UnboundPredicate, list[Any]],
) -> None:
    from pyiceberg.expressions import BoundPredicate as PyBoundPredicate
    from pyiceberg.expressions.visitors import bind as py_bind
    from pyiceberg.transforms import parse_transform as py_parse_transform

    column, transform, pred, values = case
    ours_bound = bind(SCHEMA, pred)
    theirs_bound = py_bind(PY_SCHEMA, _pyiceberg_pred(pred), case_sensitive=True)
    if not isinstance(ours_bound, BoundPredicate):
        assert not isinstance(theirs_bound, PyBoundPredicate)
        return
    assert isinstance(theirs_bound, PyBoundPredicate)
    py_transform = py_parse_transform(str(transform))
    struct = _partition_struct(transform, column)
    time_adjusted = isinstance(
        transform, YearTransform | MonthTransform | DayTransform | HourTransform
    ) and not (isinstance(transform, DayTransform) and column == "d")
    partitions = {_apply(transform, column, v) for v in values}
    # decimals truncated past the type's range: such values are refused on write
    partitions = {p for p in partitions if not (isinstance(p, Decimal) and abs(p) >= 10**7)}
    # truncate of an int or long wraps below the type's minimum, as Java computes it and
    # icefloe stores it; PyIceberg's Python integers do not wrap: there ours is looser
    wrapped, wrap_end = None, None
    if isinstance(transform, TruncateTransform) and column in ("i", "l"):
        bits = 32 if column == "i" else 64
        low = -(2 ** (bits - 1))
        if low % transform.width:
            wrapped = low - low % transform.width + 2**bits
            wrap_end = low - low % transform.width + transform.width
    literals = [pred.literal] if pred.op.is_literal and not pred.op.is_set else []
    wrapping_literal = wrap_end is not None and any(v < wrap_end for v in literals)
    for strict in (False, True):
        ours = project_predicate(transform, "p", ours_bound, strict)
        if strict:
            theirs = _from_pyiceberg(py_transform.strict_project("p", theirs_bound))
        else:
            theirs = _from_pyiceberg(py_transform.project("p", theirs_bound))
        if isinstance(ours, UnboundPredicate):
            lits = ours.literals or {ours.literal}
            partitions |= {v + k for v in lits if isinstance(v, int) for k in (-1, 0, 1)}
        for part in sorted(
            partitions, key=lambda v: (v is None, str(type(v)), 0 if v is None else v)
        ):
            a = _eval(ours, struct, part, not strict)
            b = _eval(theirs, struct, part, not strict)
            if time_adjusted:
                # Ours may widen (inclusive) or narrow (strict) around values before 1970:
                # partition values <= 0, or 1 for a strict `> 0`.
                assert (a >= b) if not strict else (a <= b), (part, ours, theirs)
                if a != b:
                    assert isinstance(part, int) and part <= 1, (part, ours, theirs)
            elif wrapping_literal or (wrapped is not None and part == wrapped):
                assert (a >= b) if not strict else (a <= b), (part, ours, theirs)
            elif ours is None and literals and _at_type_end(column, literals[0]):
                # no next value past the type's end: ours makes no projection (looser for an
                # inclusive one, narrower for a strict one, never wrong)
                assert (a >= b) if not strict else (a <= b), (part, ours, theirs)
            else:
                assert a == b, (strict, part, ours, theirs)


def _at_type_end(column: str, literal: Any) -> bool:
    """Whether ``literal`` is the largest or smallest value of ``column``'s type."""
    ends = {
        "i": (-(2**31), 2**31 - 1),
        "l": (-(2**63), 2**63 - 1),
        "dec": (Decimal("-9999999.99"), Decimal("9999999.99")),
    }.get(column)
    return ends is not None and literal in ends


def test_constants_do_not_project() -> None:
    assert bind(SCHEMA, col("l") < 2**63) == bind(SCHEMA, col("l").not_null())
    assert bind(SCHEMA, col("l") > 2**63) is AlwaysFalse()


@pytest.mark.parametrize(
    ("op", "literal", "strict"),
    [
        (Op.GT, "99.99", False),
        (Op.LT, "-99.99", False),
        (Op.LT_EQ, "99.99", True),
        (Op.GT_EQ, "-99.99", True),
    ],
)
def test_decimal_literals_at_the_types_ends_have_no_next_value(
    op: Op, literal: str, strict: bool
) -> None:
    """`> 99.99` on decimal(4, 2) has no next value to project (100.00 does not fit the type):
    no projection is made, as for an int or long at its end, and nothing raises."""
    struct = StructType(NestedField(1, "a", DecimalType(4, 2)))
    b = bind(struct, UnboundPredicate(op, "a", Decimal(literal)))
    assert isinstance(b, BoundPredicate)
    for tr in (TruncateTransform(50), IdentityTransform(), BucketTransform(4)):
        projected = project_predicate(tr, "p", b, strict=strict)
        assert projected is None or isinstance(projected, BooleanExpression)
