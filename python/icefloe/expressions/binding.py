"""Binding: resolving column names to fields of a schema and converting literals to their types.

``bind(schema, expr, case_sensitive=True)`` takes a ``Schema`` (anything with ``as_struct()``)
or a ``StructType`` (for example a partition type) and returns an expression whose predicates
are :class:`~icefloe.expressions.base.BoundPredicate`. Nested struct fields are named with dots
(``"location.lat"``); fields inside lists and maps cannot be filtered on.

Simplifications made while binding, as the reference makes them: a comparison with a literal
above the type's maximum or below its minimum becomes ``AlwaysTrue``/``AlwaysFalse``;
out-of-range values are dropped from ``in``/``not in`` lists; ``is_null`` on a required field is
``AlwaysFalse`` and ``not_null`` on it ``AlwaysTrue``.

Decimals are the exception for ``<``, ``<=``, ``>`` and ``>=``: with a literal beyond the
column's precision (``amount < 100000000000`` on ``decimal(10,2)``) the comparison that every
value satisfies becomes ``not_null`` (``AlwaysTrue`` on a required column), so it selects the
rows the exact comparison selects, and nulls are not among them (the reference compares such a
decimal exactly rather than folding it). ``=`` such a literal is ``AlwaysFalse``, ``!=`` it
``AlwaysTrue`` (``!=`` keeps nulls, as for any literal), and ``not (...)`` stays the exact
complement (``not (amount < 100000000000)`` selects the nulls).
"""

from __future__ import annotations

import math
from typing import Any

from icefloe.exceptions import UnsupportedFeatureError, ValidationError
from icefloe.expressions.base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    BoundReference,
    Not,
    Op,
    Or,
    UnboundPredicate,
)
from icefloe.expressions.literals import (
    ABOVE_MAX,
    ABOVE_ZERO,
    BELOW_MIN,
    BELOW_ZERO,
    OutOfRange,
    convert_literal,
)
from icefloe.expressions.rewrite import balance
from icefloe.types import (
    DoubleType,
    FloatType,
    GeographyType,
    GeometryType,
    NestedField,
    StringType,
    StructType,
    VariantType,
)

__all__ = ["bind", "field_index"]

_IndexEntry = tuple[NestedField, tuple[str, ...]]
_ABOVE = {Op.LT: True, Op.LT_EQ: True, Op.NOT_EQ: True, Op.GT: False, Op.GT_EQ: False}
_ABOVE[Op.EQ] = False
_BELOW = {Op.GT: True, Op.GT_EQ: True, Op.NOT_EQ: True, Op.LT: False, Op.LT_EQ: False}
_BELOW[Op.EQ] = False
_ORDERING = frozenset({Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ})


def _struct_of(schema: Any) -> StructType:
    if isinstance(schema, StructType):
        return schema
    as_struct = getattr(schema, "as_struct", None)
    if as_struct is None:
        raise ValidationError(f"can only bind to a Schema or StructType, got {schema!r}")
    struct = as_struct()
    if not isinstance(struct, StructType):
        raise ValidationError(f"as_struct() of {schema!r} is not a StructType")
    return struct


def field_index(schema: Any) -> dict[str, _IndexEntry]:
    """Full dotted name -> (field, struct path) for every field reachable through structs."""
    out: dict[str, _IndexEntry] = {}

    def walk(struct: StructType, path: tuple[str, ...]) -> None:
        for f in struct.fields:
            p = (*path, f.name)
            out[".".join(p)] = (f, p)
            if isinstance(f.field_type, StructType):
                walk(f.field_type, p)

    walk(_struct_of(schema), ())
    return out


class _Binder:
    def __init__(self, schema: Any, case_sensitive: bool) -> None:
        self.index = field_index(schema)
        self.case_sensitive = case_sensitive
        self.lower: dict[str, list[str]] = {}
        if not case_sensitive:
            for name in self.index:
                self.lower.setdefault(name.lower(), []).append(name)

    def resolve(self, name: str) -> tuple[NestedField, tuple[str, ...]]:
        if self.case_sensitive:
            entry = self.index.get(name)
        else:
            names = self.lower.get(name.lower(), [])
            if len(names) > 1:
                raise ValidationError(
                    f"column {name!r} is ambiguous without case sensitivity: {sorted(names)}"
                )
            entry = self.index[names[0]] if names else None
        if entry is None:
            raise ValidationError(f"cannot find column {name!r} in the schema")
        return entry

    def bind(self, expr: BooleanExpression) -> BooleanExpression:
        if isinstance(expr, And):
            return And(self.bind(expr.left), self.bind(expr.right))
        if isinstance(expr, Or):
            return Or(self.bind(expr.left), self.bind(expr.right))
        if isinstance(expr, Not):
            return Not(self.bind(expr.child))
        if isinstance(expr, UnboundPredicate):
            return self.bind_predicate(expr)
        if isinstance(expr, AlwaysTrue | AlwaysFalse | BoundPredicate):
            return expr
        raise ValidationError(f"cannot bind {expr!r}")

    def bind_predicate(self, pred: UnboundPredicate) -> BooleanExpression:
        field, path = self.resolve(pred.term)
        t = field.field_type
        name = ".".join(path)
        if not t.is_primitive:
            raise ValidationError(f"cannot filter on column {name!r} of nested type {t}")
        ref = BoundReference(field.field_id, name, t, path, field.required)
        op = pred.op
        if isinstance(t, VariantType) and op not in (Op.IS_NULL, Op.NOT_NULL):
            raise UnsupportedFeatureError(
                f"cannot filter on variant column {name!r} with {op.value}: only is_null and "
                "not_null are supported on variant columns (decode the values with "
                "icefloe.variant.to_pylist or to_json and filter those)"
            )
        if op in (Op.IS_NULL, Op.NOT_NULL):
            if field.required:
                return AlwaysFalse() if op is Op.IS_NULL else AlwaysTrue()
            return BoundPredicate(op, ref)
        if op in (Op.IS_NAN, Op.NOT_NAN):
            if not isinstance(t, FloatType | DoubleType):
                raise ValidationError(
                    f"{op.value} needs a float or double column, but {name!r} is {t}"
                )
            return BoundPredicate(op, ref)
        if op.is_spatial:
            if isinstance(t, GeographyType):
                raise UnsupportedFeatureError(
                    f"{op.name.lower()} on geography column {name!r}: geography has spherical "
                    "edges and no bounds; only geometry columns take spatial filters"
                )
            if not isinstance(t, GeometryType):
                raise ValidationError(f"{op.value} needs a geometry column, but {name!r} is {t}")
            return BoundPredicate(op, ref, pred.literal)
        if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH) and not isinstance(t, StringType):
            raise ValidationError(f"{op.value} needs a string column, but {name!r} is {t}")
        try:
            if op.is_set:
                values = [convert_literal(v, t) for v in pred.literals]
                kept = [v for v in values if not isinstance(v, OutOfRange)]
                return BoundPredicate(op, ref, kept)
            value = convert_literal(pred.literal, t)
        except ValidationError as e:
            raise ValidationError(f"column {name!r}: {e}") from None
        if value is ABOVE_MAX or value is BELOW_MIN:
            above = value is ABOVE_MAX
            holds = (_ABOVE if above else _BELOW)[op]
            if op in _ORDERING and isinstance(t, FloatType | DoubleType):
                # beyond every finite value, short of the infinity, NaN above everything: the
                # same rows as a comparison with that infinity
                inf = math.inf if above else -math.inf
                if holds:
                    return BoundPredicate(Op.LT if above else Op.GT, ref, inf)
                return BoundPredicate(Op.EQ, ref, inf)
            if holds and op in _ORDERING:
                # every value of the column compares so, but a null compares as nothing does
                return AlwaysTrue() if field.required else BoundPredicate(Op.NOT_NULL, ref)
            return AlwaysTrue() if holds else AlwaysFalse()
        if value is ABOVE_ZERO or value is BELOW_ZERO:
            # a nonzero literal too small for a float column: equal to none of its values, and
            # compared as the same rows are by the zero on its side (0.0 above -0.0 in
            # Iceberg's order; both are zero to IEEE comparisons)
            if op not in _ORDERING:
                return AlwaysTrue() if op is Op.NOT_EQ else AlwaysFalse()
            if value is ABOVE_ZERO:
                less = Op.LT_EQ, 0.0
                more = Op.GT, 0.0
            else:
                less = Op.LT, -0.0
                more = Op.GT_EQ, -0.0
            new_op, zero = less if op in (Op.LT, Op.LT_EQ) else more
            return BoundPredicate(new_op, ref, zero)
        return BoundPredicate(op, ref, value)


def bind(schema: Any, expr: BooleanExpression, case_sensitive: bool = True) -> BooleanExpression:
    """Binds ``expr`` to ``schema`` (a Schema or StructType); see the module docstring.

    Chains of ``and``/``or`` are balanced first (:func:`~icefloe.expressions.base.balance`), so
    wide filters bind however they were built; bound, they are balanced again, which merges
    the equality tests of a wide chain into set predicates."""
    return balance(_Binder(schema, case_sensitive).bind(balance(expr)))
