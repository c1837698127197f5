"""Evaluating a bound expression on one row of values (partition tuples, single records).

This is for per-partition and per-file decisions, where there is one row; data rows are filtered
vectorised with :func:`icefloe.expressions.arrow.to_arrow_expression`.

Semantics are the reference's two-valued logic: a comparison, ``in`` or ``starts_with`` with a
null value is false; ``!=``, ``not in`` and ``not_starts_with`` with a null value are true;
``is_nan`` of null is false and ``not_nan`` of null true. NaN compares as IEEE 754 does (every
ordering comparison with NaN is false, ``!=`` is true). ``st_intersects`` holds when the value's
bounding box intersects the query box (false on null); ``st_disjoint`` is its negation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from icefloe.exceptions import ValidationError
from icefloe.expressions.base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    Not,
    Op,
    Or,
)
from icefloe.geo import intersects_mask

__all__ = ["evaluate", "evaluate_predicate"]


def _isnan(v: Any) -> bool:
    return isinstance(v, float) and v != v


_COMPARE: dict[Op, Callable[[Any, Any], bool]] = {
    Op.LT: lambda a, b: bool(a < b),
    Op.LT_EQ: lambda a, b: bool(a <= b),
    Op.GT: lambda a, b: bool(a > b),
    Op.GT_EQ: lambda a, b: bool(a >= b),
    Op.EQ: lambda a, b: bool(a == b),
    Op.NOT_EQ: lambda a, b: bool(a != b),
}


def evaluate_predicate(pred: BoundPredicate, value: Any) -> bool:
    """Whether ``value`` (internal representation, ``None`` for null) satisfies ``pred``."""
    op = pred.op
    if op is Op.IS_NULL:
        return value is None
    if op is Op.NOT_NULL:
        return value is not None
    if op is Op.IS_NAN:
        return _isnan(value)
    if op is Op.NOT_NAN:
        return not _isnan(value)
    if value is None:
        return op in (Op.NOT_EQ, Op.NOT_IN, Op.NOT_STARTS_WITH, Op.ST_DISJOINT)
    if op.is_spatial:
        hit = bool(intersects_mask(pa.array([value], pa.binary()), pred.literal)[0].as_py())
        return hit == (op is Op.ST_INTERSECTS)
    if op is Op.IN:
        return value in pred.literals
    if op is Op.NOT_IN:
        return value not in pred.literals
    if op is Op.STARTS_WITH:
        return bool(value.startswith(pred.literal))
    if op is Op.NOT_STARTS_WITH:
        return not value.startswith(pred.literal)
    return _COMPARE[op](value, pred.literal)


def evaluate(expr: BooleanExpression, row: Mapping[int, Any]) -> bool:
    """Evaluates a bound expression on a row given as ``{field_id: value}`` (missing = null)."""
    if expr is AlwaysTrue():
        return True
    if expr is AlwaysFalse():
        return False
    if isinstance(expr, And):
        return evaluate(expr.left, row) and evaluate(expr.right, row)
    if isinstance(expr, Or):
        return evaluate(expr.left, row) or evaluate(expr.right, row)
    if isinstance(expr, Not):
        return not evaluate(expr.child, row)
    if isinstance(expr, BoundPredicate):
        return evaluate_predicate(expr, row.get(expr.ref.field_id))
    raise ValidationError(f"can only evaluate bound expressions, got {expr!r}")
