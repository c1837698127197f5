"""Residuals on random filters and rows: sound for every transform, and as decided as PyIceberg's.

Soundness is the defining property: for a row whose partition tuple is ``p``, the residual for
``p`` evaluates on that row exactly as the whole filter does (in its Not-free form, which is what
scans evaluate, as in the reference).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    Not,
    Op,
    Or,
    UnboundPredicate,
    bind,
    rewrite_not,
)
from icefloe.expressions.evaluator import evaluate
from icefloe.expressions.projection import transform_literal
from icefloe.expressions.residual import ResidualEvaluator
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)
from icefloe.types import DateType, LongType, NestedField, StringType, TimestampType

SCHEMA = Schema(
    NestedField(1, "id", LongType()),
    NestedField(2, "ts", TimestampType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "d", DateType()),
)
TYPES = {1: LongType(), 2: TimestampType(), 3: StringType(), 4: DateType()}
NAMES = {1: "id", 2: "ts", 3: "s", 4: "d"}
DAY_US = 86_400_000_000
TIME_SPEC = PartitionSpec(
    PartitionField(1, 1000, TruncateTransform(10), "id_t"),
    PartitionField(2, 1001, DayTransform(), "ts_day"),
    PartitionField(2, 1002, YearTransform(), "ts_year"),
    PartitionField(3, 1003, TruncateTransform(2), "s_t"),
    PartitionField(4, 1004, MonthTransform(), "d_month"),
)
PLAIN_SPEC = PartitionSpec(
    PartitionField(1, 1000, BucketTransform(4), "id_b"),
    PartitionField(3, 1001, TruncateTransform(2), "s_t"),
    PartitionField(4, 1002, IdentityTransform(), "d"),
    PartitionField(1, 1003, TruncateTransform(5), "id_t"),
)

values = {
    1: st.integers(-40, 40),
    2: st.integers(-3 * DAY_US, 3 * DAY_US).map(lambda v: v - v % 3_600_000_000),
    3: st.text("abc", max_size=3),
    4: st.integers(-400, 400),
}


@st.composite
def predicates(draw: st.DrawFn, fids: tuple[int, ...] = (1, 2, 3, 4)) -> BooleanExpression:
    fid = draw(st.sampled_from(fids))
    ops = [op for op in Op if op not in (Op.IS_NAN, Op.NOT_NAN) and not op.is_spatial]
    if fid != 3:
        ops = [op for op in ops if op not in (Op.STARTS_WITH, Op.NOT_STARTS_WITH)]
    op = draw(st.sampled_from(ops))
    if op.is_unary:
        return UnboundPredicate(op, NAMES[fid])
    if op.is_set:
        return UnboundPredicate(op, NAMES[fid], draw(st.lists(values[fid], max_size=3)))
    return UnboundPredicate(op, NAMES[fid], draw(values[fid]))


@st.composite
def trees(
    draw: st.DrawFn, depth: int = 2, fids: tuple[int, ...] = (1, 2, 3, 4)
) -> BooleanExpression:
    if depth == 0 or draw(st.booleans()):
        return draw(predicates(fids))
    kind = draw(st.sampled_from(["and", "or", "not"]))
    left = draw(trees(depth - 1, fids))
    if kind == "not":
        return Not(left)
    right = draw(trees(depth - 1, fids))
    return And(left, right) if kind == "and" else Or(left, right)


rows = st.fixed_dictionaries({k: st.one_of(st.none(), v) for k, v in values.items()})
# PyIceberg's residual evaluator raises on null partition values, so compare without them.
full_rows = st.fixed_dictionaries(values)


def partition_of(spec: PartitionSpec, row: dict[int, Any]) -> tuple[Any, ...]:
    out = []
    for f in spec.fields:
        v = row[f.source_id]
        out.append(None if v is None else transform_literal(f.transform, TYPES[f.source_id], v))
    return tuple(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees(), st.lists(rows, min_size=1, max_size=5), st.sampled_from([TIME_SPEC, PLAIN_SPEC]))
def test_residuals_are_sound(
    expr: BooleanExpression, data: list[dict[int, Any]], spec: PartitionSpec
) -> None:
    # Scans mean a filter by its Not-free form (the reference rewrites before planning).
    bound = rewrite_not(bind(SCHEMA, expr))
    ev = ResidualEvaluator(SCHEMA, spec, expr)
    for row in data:
        residual = ev.residual_for(partition_of(spec, row))
        assert evaluate(residual, row) == evaluate(bound, row), (residual, row)


def _pyiceberg(expr: BooleanExpression) -> Any:
    from pyiceberg.expressions import parser

    return parser.parse(str(expr))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees(fids=(1, 3)), full_rows)
def test_residual_decisions_match_pyiceberg(expr: BooleanExpression, row: dict[int, Any]) -> None:
    from pyiceberg import expressions as px
    from pyiceberg.expressions.visitors import residual_evaluator_of
    from pyiceberg.partitioning import PartitionField as PyField
    from pyiceberg.partitioning import PartitionSpec as PySpec
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.transforms import parse_transform
    from pyiceberg.typedef import Record
    from pyiceberg.types import DateType as PyDate
    from pyiceberg.types import LongType as PyLong
    from pyiceberg.types import NestedField as PyNested
    from pyiceberg.types import StringType as PyString
    from pyiceberg.types import TimestampType as PyTs

    py_schema = PySchema(
        PyNested(1, "id", PyLong(), required=False),
        PyNested(2, "ts", PyTs(), required=False),
        PyNested(3, "s", PyString(), required=False),
        PyNested(4, "d", PyDate(), required=False),
    )
    py_spec = PySpec(
        *(
            PyField(f.source_id, f.field_id, parse_transform(str(f.transform)), f.name)
            for f in PLAIN_SPEC.fields
        )
    )
    # Filters on id and s print the same for both parsers (no `like`: PyIceberg's differs).
    if "like" in str(expr):
        return
    py_expr = _pyiceberg(expr)
    partition = partition_of(PLAIN_SPEC, row)
    ours = ResidualEvaluator(SCHEMA, PLAIN_SPEC, expr).residual_for(partition)
    theirs = residual_evaluator_of(py_spec, py_expr, True, py_schema).residual_for(
        Record(*partition)
    )
    if isinstance(theirs, px.AlwaysTrue):
        assert ours is AlwaysTrue(), (ours, theirs)
    elif isinstance(theirs, px.AlwaysFalse):
        assert ours is AlwaysFalse(), (ours, theirs)
    else:
        assert ours not in (AlwaysTrue(), AlwaysFalse()), (ours, theirs)
