"""Spark's pushed-down filters (``pyspark.sql.datasource.Filter``) as icefloe expressions.

A filter is taken by the ``icefloe`` data source only when icefloe evaluates it exactly as
Spark would, because Spark does not evaluate a filter again once the source took it:

- comparisons, ``IN``, ``IS [NOT] NULL`` and ``LIKE 'abc%'`` on columns whose Spark type is
  their Iceberg type (not ``uuid``, ``time``, ``fixed`` or nanosecond timestamps, which Spark
  sees in another form);
- no ordering comparison on ``float``/``double`` columns (Spark orders NaN above every number,
  Iceberg does not), and no NaN or null literal;
- ``NOT`` of one of those, as SQL means it: true only where the column is not null;
- the literal binds to the column's type (icefloe's binding checks it); an instant
  (``timestamptz``) literal must carry its time zone.

Everything else is left to Spark. A filter the source takes is used to prune manifests, files
and row groups when planning, and applied to the rows as the task's residual.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from icefloe.exceptions import IcebergError
from icefloe.expressions.base import And, BooleanExpression, Op, UnboundPredicate
from icefloe.expressions.binding import bind
from icefloe.schema import Schema
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)

__all__ = ["to_expression"]

#: Iceberg types whose Spark form is the same value (filters on them can be taken).
_SAME_IN_SPARK = (
    BooleanType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    DateType,
    TimestampType,
    TimestamptzType,
    StringType,
    BinaryType,
)
_COMPARE = {
    "EqualTo": Op.EQ,
    "GreaterThan": Op.GT,
    "GreaterThanOrEqual": Op.GT_EQ,
    "LessThan": Op.LT,
    "LessThanOrEqual": Op.LT_EQ,
}
_LITERALS = (bool, int, float, Decimal, str, bytes, dt.date, dt.datetime)


def _name(schema: Schema, path: Sequence[str]) -> str | None:
    """The dotted column name of a Spark column path, if icefloe can take filters on it."""
    if not path or any("." in p or not p for p in path):
        return None
    name = ".".join(path)
    try:
        field = schema.find_field(name)
    except IcebergError:
        return None
    if not isinstance(field.field_type, _SAME_IN_SPARK):
        return None
    return name


def _literal(value: Any, field_type: Any) -> bool:
    if isinstance(value, bytearray):
        return True
    if not isinstance(value, _LITERALS):
        return False
    if isinstance(field_type, TimestamptzType) and not (
        isinstance(value, dt.datetime) and value.tzinfo is not None
    ):
        return False  # a naive instant: its zone is Spark's, not known here
    return not (isinstance(value, float) and math.isnan(value))


def _leaf(f: Any, schema: Schema) -> BooleanExpression | None:
    kind = type(f).__name__
    name = _name(schema, getattr(f, "attribute", ()))
    if name is None:
        return None
    field_type = schema.find_field(name).field_type
    is_float = isinstance(field_type, FloatType | DoubleType)
    if kind in _COMPARE:
        op = _COMPARE[kind]
        if not _literal(f.value, field_type) or (is_float and op is not Op.EQ):
            return None
        value = bytes(f.value) if isinstance(f.value, bytearray) else f.value
        return UnboundPredicate(op, name, value)
    if kind == "In":
        values = tuple(f.value)
        if not values or not all(_literal(v, field_type) for v in values):
            return None
        return UnboundPredicate(Op.IN, name, values)
    if kind == "IsNull":
        return UnboundPredicate(Op.IS_NULL, name)
    if kind == "IsNotNull":
        return UnboundPredicate(Op.NOT_NULL, name)
    if kind == "StringStartsWith" and isinstance(f.value, str) and f.value:
        return UnboundPredicate(Op.STARTS_WITH, name, f.value)
    return None


def _convert(f: Any, schema: Schema) -> BooleanExpression | None:
    if type(f).__name__ == "Not":
        inner = f.child
        if type(inner).__name__ == "Not":
            return _convert(inner.child, schema)
        if type(inner).__name__ in ("IsNull", "IsNotNull"):
            leaf = _leaf(inner, schema)
            return None if leaf is None else leaf.negate()
        leaf = _leaf(inner, schema)
        if leaf is None:
            return None
        # SQL: NOT p is true only where p is false, never where the column is null
        column = ".".join(inner.attribute)
        return And(UnboundPredicate(Op.NOT_NULL, column), leaf.negate())
    return _leaf(f, schema)


def to_expression(f: Any, schema: Schema) -> BooleanExpression | None:
    """The icefloe expression of Spark filter ``f`` on ``schema``, or None when icefloe
    cannot evaluate it exactly as Spark does (see the module docs)."""
    try:
        expr = _convert(f, schema)
        if expr is None:
            return None
        bind(schema, expr, True)  # the literal must fit the column's type
    except (IcebergError, TypeError, ValueError):
        return None
    return expr
