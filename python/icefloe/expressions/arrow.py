"""Bound expressions as ``pyarrow.compute.Expression``, for vectorised row filtering.

``to_arrow_expression(bound)`` references columns by their struct path (``pc.field("a", "b")``
for ``a.b``), so it applies to a table read with the schema's names. It selects the rows the
reference's two-valued logic selects (see :mod:`icefloe.expressions.evaluator`): comparisons,
``in`` and ``starts_with`` are false on null, their negations true; NaN follows IEEE 754
(ordering comparisons false, ``!=`` true); ``not_nan`` of null is true.

Use the result as a filter (``table.filter(expr)``): it may be null for a row it does not select.
Outside ``Not`` a null acts as false through ``and``/``or`` (Kleene logic is monotone), so only
the negated predicates need a null check there; under ``Not`` every predicate of an optional
column is made null-free, so the negation is exact. Required columns need no checks.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_schema import type_to_arrow
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
    balance,
)
from icefloe.geo import intersects_mask
from icefloe.types import (
    DoubleType,
    FloatType,
    GeographyType,
    GeometryType,
    IcebergType,
    PrimitiveType,
    UnknownType,
    VariantType,
)

__all__ = ["arrow_type", "arrow_value", "filter_mask", "to_arrow_expression"]


def arrow_type(t: IcebergType) -> pa.DataType:
    """The Arrow type a literal of Iceberg type ``t`` is held in (uuid as fixed_size_binary(16))."""
    if not isinstance(t, PrimitiveType) or isinstance(
        t, UnknownType | VariantType | GeometryType | GeographyType
    ):
        raise ValidationError(f"no Arrow literal type for Iceberg type {t}")
    return type_to_arrow(t, uuid_extension=False)


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


#: Column names under which :func:`filter_mask` holds evaluated spatial predicates.
_SPATIAL = dict[BoundPredicate, str]


def _predicate(pred: BoundPredicate, under_not: bool, spatial: _SPATIAL | None) -> pc.Expression:
    if pred.op.is_spatial:
        if spatial is None or pred not in spatial:
            raise ValidationError(
                f"{pred} cannot be an Arrow expression (it reads WKB): filter with filter_mask"
            )
        return pc.field(spatial[pred])  # null-free: exact under `not` too
    f = pc.field(*pred.ref.path)
    t = pred.ref.field_type
    op = pred.op
    nullable = not pred.ref.required
    if op is Op.IS_NULL:
        return f.is_null()
    if op is Op.NOT_NULL:
        return f.is_valid()
    if op is Op.IS_NAN or op is Op.NOT_NAN:
        nan = pc.is_nan(f)
        if op is Op.IS_NAN:
            return (nan & f.is_valid()) if nullable and under_not else nan
        return (~nan | f.is_null()) if nullable else ~nan
    if op.is_set:
        # is_in gives false (not null) for a null input, so neither form needs a null check.
        literals = list(pred.literals)
        if isinstance(t, FloatType | DoubleType) and any(v == 0.0 for v in literals):
            # is_in hashes float bits, so 0.0 and -0.0 differ there; `=` compares as IEEE 754
            # (0.0 == -0.0). Listing both zeros makes `in` agree with a chain of `=`.
            literals = [v for v in literals if v != 0.0] + [0.0, -0.0]
        value_set = arrow_array(sorted(literals, key=_sort_key), t)
        hit = pc.is_in(f, value_set=value_set, skip_nulls=False)
        return hit if op is Op.IN else ~hit
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        hit = pc.starts_with(f, pattern=pred.literal)
    else:
        hit = _COMPARE[op](f, _scalar(pred.literal, t))
    if op in (Op.NOT_EQ, Op.NOT_STARTS_WITH):
        if op is Op.NOT_STARTS_WITH:
            hit = ~hit
        return (hit | f.is_null()) if nullable else hit
    return (hit & f.is_valid()) if nullable and under_not else hit


_COMPARE: dict[Op, Callable[[pc.Expression, pa.Scalar], pc.Expression]] = {
    Op.LT: lambda f, v: f < v,
    Op.LT_EQ: lambda f, v: f <= v,
    Op.GT: lambda f, v: f > v,
    Op.GT_EQ: lambda f, v: f >= v,
    Op.EQ: lambda f, v: f == v,
    Op.NOT_EQ: lambda f, v: f != v,
}


def _sort_key(v: Any) -> Any:
    return v.bytes if isinstance(v, uuid.UUID) else v


def to_arrow_expression(expr: BooleanExpression) -> pc.Expression:
    """A ``pyarrow.compute.Expression`` selecting the rows that satisfy bound ``expr``."""
    return _convert(expr, under_not=False, spatial=None)


def _spatial_columns(expr: BooleanExpression, table: pa.Table) -> tuple[pa.Table, _SPATIAL]:
    """``table`` with one boolean column per distinct spatial predicate of ``expr`` (its
    two-valued result, computed in Rust), and the column name of each predicate."""
    names: _SPATIAL = {}
    todo = [expr]
    while todo:
        e = todo.pop()
        if isinstance(e, And | Or):
            todo += [e.left, e.right]
        elif isinstance(e, Not):
            todo.append(e.child)
        elif isinstance(e, BoundPredicate) and e.op.is_spatial and e not in names:
            col = table.column(e.ref.path[0])
            for step in e.ref.path[1:]:
                col = pc.struct_field(col, step)
            hit = intersects_mask(col, e.literal)
            if e.op is Op.ST_DISJOINT:
                hit = pc.fill_null(pc.invert(hit), True)
            else:
                hit = pc.fill_null(hit, False)
            names[e] = f"__icefloe_spatial_{len(names)}"
            table = table.append_column(names[e], hit)
    return table, names


#: Predicates per Arrow expression in :func:`filter_mask`: Arrow's expression simplification
#: recurses once per operand of an ``and``/``or`` chain it flattens, so one expression of
#: 10,000 terms overflows a thread's stack.
_CHUNK = 128


def filter_mask(expr: BooleanExpression, data: pa.Table | pa.RecordBatch) -> pa.Array:
    """Bound ``expr`` over ``data`` as a boolean array, null where Kleene logic leaves a row
    undecided (a row it does not select, like :func:`to_arrow_expression` as a filter). Wide
    expressions are evaluated by Arrow in parts of at most 128 predicates, combined with
    ``and_kleene`` / ``or_kleene``, so any number of terms works."""
    table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
    table, spatial = _spatial_columns(expr, table)
    sizes: dict[int, int] = {}

    def size(e: BooleanExpression) -> int:
        n = sizes.get(id(e))
        if n is None:
            if isinstance(e, And | Or):
                n = size(e.left) + size(e.right)
            elif isinstance(e, Not):
                n = size(e.child)
            else:
                n = 1
            sizes[id(e)] = n
        return n

    # imported on first use: pyarrow.dataset imports pandas, a cost every process that only
    # plans (Spark's planner workers) would pay
    import pyarrow.dataset as ds

    def evaluate(e: BooleanExpression, under_not: bool) -> pa.Array:
        if size(e) <= _CHUNK:
            out = ds.dataset(table).to_table(columns={"m": _convert(e, under_not, spatial)})
            return out.column("m").combine_chunks()
        if isinstance(e, And):
            return pc.and_kleene(evaluate(e.left, under_not), evaluate(e.right, under_not))
        if isinstance(e, Or):
            return pc.or_kleene(evaluate(e.left, under_not), evaluate(e.right, under_not))
        assert isinstance(e, Not)
        return pc.invert(evaluate(e.child, True))

    return evaluate(balance(expr), False)


def _convert(expr: BooleanExpression, under_not: bool, spatial: _SPATIAL | None) -> pc.Expression:
    if expr is AlwaysTrue():
        return pc.scalar(True)
    if expr is AlwaysFalse():
        return pc.scalar(False)
    if isinstance(expr, And):
        return _convert(expr.left, under_not, spatial) & _convert(expr.right, under_not, spatial)
    if isinstance(expr, Or):
        return _convert(expr.left, under_not, spatial) | _convert(expr.right, under_not, spatial)
    if isinstance(expr, Not):
        return ~_convert(expr.child, True, spatial)
    if isinstance(expr, BoundPredicate):
        return _predicate(expr, under_not, spatial)
    raise ValidationError(f"only bound expressions convert to Arrow, got {expr!r}")
