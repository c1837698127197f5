"""Bound expressions as ``pyarrow.compute.Expression``, for vectorised row filtering.

``to_arrow_expression(bound)`` references columns by their struct path (``pc.field("a", "b")``
for ``a.b``), so it applies to a table read with the schema's names. The result never yields
null: it follows the reference's two-valued logic (see :mod:`icefloe.expressions.evaluator`):
comparisons, ``in`` and ``starts_with`` are false on null, their negations true; NaN follows IEEE
754 (ordering comparisons false, ``!=`` true); ``not_nan`` of null is true.
"""

from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

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
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = ["arrow_type", "arrow_value", "to_arrow_expression"]


def arrow_type(t: IcebergType) -> pa.DataType:
    """The Arrow type a literal of Iceberg type ``t`` is held in (uuid as fixed_size_binary(16))."""
    simple: dict[type, pa.DataType] = {
        BooleanType: pa.bool_(),
        IntegerType: pa.int32(),
        LongType: pa.int64(),
        FloatType: pa.float32(),
        DoubleType: pa.float64(),
        DateType: pa.date32(),
        TimeType: pa.time64("us"),
        TimestampType: pa.timestamp("us"),
        TimestamptzType: pa.timestamp("us", tz="UTC"),
        TimestampNanoType: pa.timestamp("ns"),
        TimestamptzNanoType: pa.timestamp("ns", tz="UTC"),
        StringType: pa.string(),
        BinaryType: pa.binary(),
        UUIDType: pa.binary(16),
    }
    if type(t) in simple:
        return simple[type(t)]
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    raise ValidationError(f"no Arrow literal type for Iceberg type {t}")


def arrow_value(value: Any, t: IcebergType) -> Any:
    """An internal-representation value as Python input for ``pa.array(..., arrow_type(t))``."""
    if isinstance(value, uuid.UUID):
        return value.bytes
    return value


def arrow_array(values: list[Any], t: IcebergType) -> pa.Array:
    """Internal-representation values as an Arrow array of ``arrow_type(t)``."""
    at = arrow_type(t)
    conv = [arrow_value(v, t) for v in values]
    if pa.types.is_date32(at) or pa.types.is_time64(at) or pa.types.is_timestamp(at):
        storage = pa.int32() if pa.types.is_date32(at) else pa.int64()
        return pa.array(conv, type=storage).cast(at)
    return pa.array(conv, type=at)


def _scalar(value: Any, t: IcebergType) -> pa.Scalar:
    return arrow_array([value], t)[0]


def _predicate(pred: BoundPredicate) -> pc.Expression:
    f = pc.field(*pred.ref.path)
    t = pred.ref.field_type
    op = pred.op
    valid = f.is_valid()
    if op is Op.IS_NULL:
        return f.is_null()
    if op is Op.NOT_NULL:
        return valid
    if op is Op.IS_NAN:
        return f.is_nan() & valid
    if op is Op.NOT_NAN:
        return ~f.is_nan() | f.is_null()
    if op.is_set:
        value_set = arrow_array(sorted(pred.literals, key=_sort_key), t)
        hit = pc.is_in(f, value_set=value_set)
        return (hit & valid) if op is Op.IN else (~hit | f.is_null())
    if op is Op.STARTS_WITH:
        return pc.starts_with(f, pattern=pred.literal) & valid
    if op is Op.NOT_STARTS_WITH:
        return ~pc.starts_with(f, pattern=pred.literal) | f.is_null()
    lit = _scalar(pred.literal, t)
    if op is Op.LT:
        return (f < lit) & valid
    if op is Op.LT_EQ:
        return (f <= lit) & valid
    if op is Op.GT:
        return (f > lit) & valid
    if op is Op.GT_EQ:
        return (f >= lit) & valid
    if op is Op.EQ:
        return (f == lit) & valid
    return (f != lit) | f.is_null()


def _sort_key(v: Any) -> Any:
    return v.bytes if isinstance(v, uuid.UUID) else v


def to_arrow_expression(expr: BooleanExpression) -> pc.Expression:
    """A ``pyarrow.compute.Expression`` selecting the rows that satisfy bound ``expr``."""
    if expr is AlwaysTrue():
        return pc.scalar(True)
    if expr is AlwaysFalse():
        return pc.scalar(False)
    if isinstance(expr, And):
        return to_arrow_expression(expr.left) & to_arrow_expression(expr.right)
    if isinstance(expr, Or):
        return to_arrow_expression(expr.left) | to_arrow_expression(expr.right)
    if isinstance(expr, Not):
        return ~to_arrow_expression(expr.child)
    if isinstance(expr, BoundPredicate):
        return _predicate(expr)
    raise ValidationError(f"only bound expressions convert to Arrow, got {expr!r}")
