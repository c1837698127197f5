"""Inclusive and strict projection of bound predicates through partition transforms.

An *inclusive* projection selects every partition that may hold a matching row (it may select
more); a *strict* projection selects only partitions whose every row matches (it may select
fewer). Per transform (``None`` = no projection: ``AlwaysTrue`` when inclusive, ``AlwaysFalse``
when strict):

- identity: the same predicate on the partition field.
- bucket: inclusive ``=`` and ``in`` (on the bucketed literals); strict ``!=`` and ``not in``.
- truncate on numbers: ``<``/``>`` become ``<=``/``>=`` of the literal moved by one unit, then
  truncated; strict uses ``<``/``>`` with the opposite adjustment, and ``!=``/``not in``.
- truncate on strings and binary: ranges project on the truncated literal, ``starts_with``
  compares the literal's length with the width, ``not_starts_with`` likewise.
- year/month/day/hour: as truncate on numbers, then the reference's adjustment for values
  before 1970 (which older writers rounded towards zero): inclusive ``<``/``<=``/``=``/``in``
  with a negative partition value also admit the next partition; strict ``>``/``>=`` of a value
  <= 0 skip the next one, and ``!=``/``not in`` of a negative value exclude it too.
  ``day`` on a ``date`` column is exact and takes no adjustment.
- void and unknown transforms: no projection.
- ``is_null``/``not_null`` project as themselves for every transform but void and unknown.

Transformed literals come from ``transform.apply`` on a one-element Arrow array.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Any

import pyarrow as pa

from icefloe.exceptions import ValidationError
from icefloe.expressions.arrow import arrow_array
from icefloe.expressions.base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    Not,
    Op,
    Or,
    UnboundPredicate,
)
from icefloe.expressions.binding import bind
from icefloe.expressions.rewrite import rewrite_not
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    IdentityTransform,
    Transform,
    TruncateTransform,
)
from icefloe.types import (
    BinaryType,
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
)

__all__ = [
    "inclusive_projection",
    "project",
    "project_predicate",
    "strict_projection",
]

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


def transform_literal(transform: Transform, source: IcebergType, value: Any) -> Any:
    """``transform`` applied to one internal-representation value of type ``source``."""
    if isinstance(source, IntegerType) and not isinstance(transform, TruncateTransform):
        source = LongType()  # int and long transform identically; the wider type cannot overflow
    out = transform.apply(arrow_array([value], source))
    if pa.types.is_date32(out.type):
        out = out.cast(pa.int32())
    elif pa.types.is_timestamp(out.type) or pa.types.is_time64(out.type):
        out = out.cast(pa.int64())
    return out[0].as_py()


def _step(value: Any, t: IcebergType, delta: int) -> Any:
    """The next (delta=1) or previous (delta=-1) value of an ordered numeric type, or None."""
    if isinstance(t, DecimalType):
        with localcontext() as ctx:
            ctx.prec = 100  # exact for any decimal(38) value (the default keeps 28 digits)
            out = value + Decimal(delta).scaleb(-t.scale)
            # past the type's largest or smallest value: no such value (as for int and long)
            return out if abs(out) < Decimal(10) ** (t.precision - t.scale) else None
    out = value + delta
    low, high = (_INT_MIN, _INT_MAX) if isinstance(t, IntegerType) else (_LONG_MIN, _LONG_MAX)
    return out if low <= out <= high else None


def _numeric_inclusive(name: str, pred: BoundPredicate, tr: Transform) -> BooleanExpression | None:
    t = pred.ref.field_type
    op, lit = pred.op, pred.literal
    if op is Op.LT:
        prev = _step(lit, t, -1)
        return None if prev is None else _mk(Op.LT_EQ, name, transform_literal(tr, t, prev))
    if op is Op.GT:
        nxt = _step(lit, t, 1)
        return None if nxt is None else _mk(Op.GT_EQ, name, transform_literal(tr, t, nxt))
    if op in (Op.LT_EQ, Op.GT_EQ, Op.EQ):
        return _mk(op, name, transform_literal(tr, t, lit))
    return None


def _numeric_strict(name: str, pred: BoundPredicate, tr: Transform) -> BooleanExpression | None:
    t = pred.ref.field_type
    op, lit = pred.op, pred.literal
    if op in (Op.LT, Op.GT, Op.NOT_EQ):
        return _mk(op, name, transform_literal(tr, t, lit))
    if op is Op.LT_EQ:
        nxt = _step(lit, t, 1)
        return None if nxt is None else _mk(Op.LT, name, transform_literal(tr, t, nxt))
    if op is Op.GT_EQ:
        prev = _step(lit, t, -1)
        return None if prev is None else _mk(Op.GT, name, transform_literal(tr, t, prev))
    return None


def _truncate_wrap(t: IcebergType, tr: TruncateTransform) -> tuple[int, int] | None:
    """Where ``truncate[W]`` of an int or long column wraps: ``v - (v mod W)`` is computed in
    the column's type (as the reference does, and the stored partition values are), so the
    values below ``MIN - (MIN mod W) + W`` truncate past the minimum and wrap to the largest
    partition value. (That end (exclusive), the partition value they share), or None when
    no value wraps (``W`` divides the minimum) or the column is not an int or long."""
    if not isinstance(t, IntegerType | LongType):
        return None
    low = _INT_MIN if isinstance(t, IntegerType) else _LONG_MIN
    m0 = low % tr.width
    if m0 == 0:
        return None
    return low - m0 + tr.width, low - m0 - 2 * low


def _unwrapped(
    name: str,
    pred: BoundPredicate,
    tr: TruncateTransform,
    strict: bool,
    projected: BooleanExpression | None,
) -> BooleanExpression | None:
    """``projected`` (a numeric truncate projection) corrected for the partition the lowest
    values wrap to (see :func:`_truncate_wrap`), which is out of order with the rest."""
    wrap = _truncate_wrap(pred.ref.field_type, tr)
    if wrap is None or projected is None:
        return projected
    end, wrapped = wrap
    op, low = pred.op, pred.literal < end
    if op in (Op.LT, Op.LT_EQ):
        if low:
            return None
        # rows of the wrapped partition are below any literal: not all rows match (strict),
        # but some may (inclusive)
        return projected if strict else Or(projected, _mk(Op.EQ, name, wrapped))
    if op in (Op.GT, Op.GT_EQ):
        if low:
            return None
        # the wrapped partition is above every projected literal, its rows below the literal
        return And(projected, _mk(Op.NOT_EQ, name, wrapped)) if strict else projected
    return projected  # `=` and `!=` compare with the literal's own wrapped partition


def _int_wrap_of_long(
    name: str,
    pred: BoundPredicate,
    tr: TruncateTransform,
    strict: bool,
    projected: BooleanExpression | None,
) -> BooleanExpression | None:
    """``projected`` for a long column corrected for files written while it was an int: their
    lowest values truncated in int arithmetic and wrapped to the int's partition (see
    :func:`_truncate_wrap`), which a long's projection never names. Inclusive projections add
    that partition where its rows may match; strict ones leave it out where they may not."""
    if not isinstance(pred.ref.field_type, LongType) or projected is None:
        return projected
    wrap = _truncate_wrap(IntegerType(), tr)
    if wrap is None:
        return projected
    end, wrapped = wrap
    op = pred.op
    values = pred.literals if op.is_set else (pred.literal,)
    zone = [v for v in values if _INT_MIN <= v < end]
    # (ranges always take the wrapped partition into account: it is rare, and costs nothing)
    if strict:
        may_fail = op in (Op.GT, Op.GT_EQ) or (op in (Op.NOT_EQ, Op.NOT_IN) and bool(zone))
        return And(projected, _mk(Op.NOT_EQ, name, wrapped)) if may_fail else projected
    may_match = op in (Op.LT, Op.LT_EQ) or (op in (Op.EQ, Op.IN) and bool(zone))
    return Or(projected, _mk(Op.EQ, name, wrapped)) if may_match else projected


def _mk(op: Op, name: str, value: Any = None) -> BooleanExpression:
    return UnboundPredicate(op, name, value)


def _set(name: str, pred: BoundPredicate, tr: Transform) -> BooleanExpression:
    t = pred.ref.field_type
    return _mk(pred.op, name, {transform_literal(tr, t, v) for v in pred.literals})


def _width(value: str | bytes) -> int:
    return len(value)


def _truncate_array(
    name: str, pred: BoundPredicate, tr: TruncateTransform, strict: bool
) -> BooleanExpression | None:
    t = pred.ref.field_type
    op, lit = pred.op, pred.literal
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        n = _width(lit)
        positive = op is Op.STARTS_WITH
        if n < tr.width:
            return _mk(op, name, lit)
        if n == tr.width:
            return _mk(Op.EQ if positive else Op.NOT_EQ, name, lit)
        if positive and not strict:
            return _mk(op, name, transform_literal(tr, t, lit))
        if not positive and strict:
            return _mk(op, name, transform_literal(tr, t, lit))
        return None
    if strict:
        if op in (Op.LT, Op.LT_EQ):
            return _mk(Op.LT, name, transform_literal(tr, t, lit))
        if op in (Op.GT, Op.GT_EQ):
            return _mk(Op.GT, name, transform_literal(tr, t, lit))
        if op is Op.NOT_EQ:
            return _mk(Op.NOT_EQ, name, transform_literal(tr, t, lit))
        return None
    if op in (Op.LT, Op.LT_EQ):
        return _mk(Op.LT_EQ, name, transform_literal(tr, t, lit))
    if op in (Op.GT, Op.GT_EQ):
        return _mk(Op.GT_EQ, name, transform_literal(tr, t, lit))
    if op is Op.EQ:
        return _mk(Op.EQ, name, transform_literal(tr, t, lit))
    return None


def _fix_inclusive_time(p: BooleanExpression | None) -> BooleanExpression | None:
    if not isinstance(p, UnboundPredicate):
        return p
    if p.op in (Op.LT, Op.LT_EQ) and p.literal < 0:
        return _mk(p.op, p.term, p.literal + 1)
    if p.op is Op.EQ and p.literal < 0:
        return _mk(Op.IN, p.term, {p.literal, p.literal + 1})
    if p.op is Op.IN and any(v < 0 for v in p.literals):
        return _mk(Op.IN, p.term, set(p.literals) | {v + 1 for v in p.literals if v < 0})
    return p


def _fix_strict_time(p: BooleanExpression | None) -> BooleanExpression | None:
    if not isinstance(p, UnboundPredicate):
        return p
    if p.op in (Op.GT, Op.GT_EQ) and p.literal <= 0:
        return _mk(p.op, p.term, p.literal + 1)
    if p.op is Op.NOT_EQ and p.literal < 0:
        return _mk(Op.NOT_IN, p.term, {p.literal, p.literal + 1})
    if p.op is Op.NOT_IN and any(v < 0 for v in p.literals):
        return _mk(Op.NOT_IN, p.term, set(p.literals) | {v + 1 for v in p.literals if v < 0})
    if p.op in (Op.EQ, Op.IN):
        return None
    return p


_TIME_SOURCES = (DateType, TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)


def project_predicate(
    transform: Transform, name: str, pred: BoundPredicate, strict: bool = False
) -> BooleanExpression | None:
    """The projection of ``pred`` onto partition field ``name``, or None when there is none."""
    if transform.is_void or transform.is_unknown:
        return None
    t = pred.ref.field_type
    op = pred.op
    if not transform.can_transform(t):
        return None
    if isinstance(transform, IdentityTransform):
        return pred.as_unbound(name)
    if op.is_unary:
        return _mk(op, name) if op in (Op.IS_NULL, Op.NOT_NULL) else None
    if isinstance(transform, BucketTransform):
        if (not strict and op is Op.EQ) or (strict and op is Op.NOT_EQ):
            return _mk(op, name, transform_literal(transform, t, pred.literal))
        if (not strict and op is Op.IN) or (strict and op is Op.NOT_IN):
            return _set(name, pred, transform)
        return None
    if isinstance(transform, TruncateTransform):
        if (not strict and op is Op.IN) or (strict and op is Op.NOT_IN):
            return _int_wrap_of_long(name, pred, transform, strict, _set(name, pred, transform))
        if op.is_set:
            return None
        if isinstance(t, StringType | BinaryType):
            return _truncate_array(name, pred, transform, strict)
        numeric = (_numeric_strict if strict else _numeric_inclusive)(name, pred, transform)
        unwrapped = _unwrapped(name, pred, transform, strict, numeric)
        return _int_wrap_of_long(name, pred, transform, strict, unwrapped)
    if isinstance(t, _TIME_SOURCES) and transform.preserves_order:
        exact = isinstance(transform, DayTransform) and isinstance(t, DateType)
        projected: BooleanExpression | None
        if (not strict and op is Op.IN) or (strict and op is Op.NOT_IN):
            projected = _set(name, pred, transform)
        elif op.is_set or op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
            projected = None
        elif strict:
            projected = _numeric_strict(name, pred, transform)
        else:
            projected = _numeric_inclusive(name, pred, transform)
        if exact:
            return projected
        return _fix_strict_time(projected) if strict else _fix_inclusive_time(projected)
    return None


def _fields(spec: Any) -> tuple[Any, ...]:
    fields = getattr(spec, "fields", None)
    if fields is None:
        raise ValidationError(f"expected a PartitionSpec, got {spec!r}")
    return tuple(fields)


def project(expr: BooleanExpression, spec: Any, strict: bool = False) -> BooleanExpression:
    """Projects bound ``expr`` onto ``spec``'s partition fields (unbound, by partition name)."""
    fields = _fields(spec)

    def visit(e: BooleanExpression) -> BooleanExpression:
        if isinstance(e, And):
            return And(visit(e.left), visit(e.right))
        if isinstance(e, Or):
            return Or(visit(e.left), visit(e.right))
        if isinstance(e, AlwaysTrue | AlwaysFalse):
            return e
        if isinstance(e, Not):  # pragma: no cover - removed by rewrite_not
            raise ValidationError(f"cannot project {e!r}")
        if not isinstance(e, BoundPredicate):
            raise ValidationError(f"can only project bound expressions, got {e!r}")
        result: BooleanExpression = AlwaysFalse() if strict else AlwaysTrue()
        for f in fields:
            if f.source_id != e.ref.field_id or getattr(f, "source_ids", None):
                continue  # multi-argument (v3) transforms do not project single predicates
            p = project_predicate(f.transform, f.name, e, strict)
            if p is not None:
                result = Or(result, p) if strict else And(result, p)
        return result

    return visit(rewrite_not(expr))


def _projection(
    schema: Any, spec: Any, expr: BooleanExpression, case_sensitive: bool, strict: bool
) -> BooleanExpression:
    bound = bind(schema, expr, case_sensitive)
    projected = project(bound, spec, strict)
    return bind(spec.partition_type(schema), projected, case_sensitive=True)


def inclusive_projection(
    schema: Any, spec: Any, expr: BooleanExpression, case_sensitive: bool = True
) -> BooleanExpression:
    """Binds ``expr`` to ``schema`` and projects it inclusively, bound to the partition type."""
    return _projection(schema, spec, expr, case_sensitive, strict=False)


def strict_projection(
    schema: Any, spec: Any, expr: BooleanExpression, case_sensitive: bool = True
) -> BooleanExpression:
    """Binds ``expr`` to ``schema`` and projects it strictly, bound to the partition type."""
    return _projection(schema, spec, expr, case_sensitive, strict=True)
