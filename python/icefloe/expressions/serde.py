"""A compact, JSON-compatible form of bound expressions, for the Rust core's filter evaluation.

``to_dict(bound)`` gives plain dicts, lists, strings, numbers and booleans (``json.dumps`` it as
is); ``from_dict`` reads it back to an equal bound expression. The form, version 1:

- constants: ``true`` / ``false`` (JSON booleans)
- ``{"type": "and" | "or", "left": E, "right": E}`` and ``{"type": "not", "child": E}``
- predicates: ``{"type": OP, "term": TERM}`` for ``is-null``, ``not-null``, ``is-nan``,
  ``not-nan``; ``{"type": OP, "term": TERM, "value": V}`` for ``lt``, ``lt-eq``, ``gt``,
  ``gt-eq``, ``eq``, ``not-eq``, ``starts-with``, ``not-starts-with``; and
  ``{"type": "in" | "not-in", "term": TERM, "values": [V, ...]}`` (values sorted); and
  ``{"type": "st-intersects" | "st-disjoint", "term": TERM, "value": BOX}`` on geometry, where
  ``BOX`` is ``{"xmin", "ymin", "xmax", "ymax"}`` plus ``"zmin", "zmax"`` / ``"mmin", "mmax"``
  when the box constrains Z / M (:meth:`icefloe.geo.BoundingBox.to_dict`).
  Operation names are those of the REST catalog's expression JSON.
- ``TERM`` is ``{"id": field id, "path": [struct names from the root], "type": type string}``,
  the type in the spec's JSON form (``"long"``, ``"decimal(9,2)"``, ``"timestamptz"``), so a
  consumer needs no schema to decode literals.
- ``V`` is the literal in the spec's JSON single-value form (Appendix D), written and read by
  the shared serialiser of :mod:`icefloe.values` (the Rust core's ``serde::json``, which also
  decodes the form when it evaluates a filter): JSON booleans and numbers for
  boolean/int/long/float/double (a float by its shortest float32 text); strings for decimal
  (``"14.20"``, at the type's scale, in Java ``BigDecimal`` form), date (``"2017-11-16"``),
  time (``"22:31:08.123456"``, trailing zeros dropped), timestamp
  (``"2017-11-16T22:31:08.123456"``), timestamptz (``"...+00:00"``), the ``_ns`` timestamps
  (up to nine fractional digits), string, uuid (``"f79c3e09-677c-4bbd-a479-3f349cb785e7"``),
  and lowercase hex for fixed and binary (``"000102ff"``).
"""

from __future__ import annotations

import math
import uuid
from decimal import Decimal, localcontext
from typing import Any

from icefloe import _native
from icefloe.exceptions import ValidationError
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
)
from icefloe.geo import BoundingBox
from icefloe.types import (
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    PrimitiveType,
    UUIDType,
    type_from_json,
)

__all__ = ["from_dict", "literal_from_json", "literal_to_json", "to_dict"]


def _physical(value: Any, t: PrimitiveType) -> Any:
    """The physical value the shared serialiser takes for an internal-representation literal:
    unscaled ints for decimals, the 16 bytes of a uuid; everything else already is one."""
    if isinstance(t, DecimalType):
        with localcontext() as ctx:
            ctx.prec = 100  # exact for any decimal(38) value
            return int(Decimal(value).scaleb(t.scale))
    if isinstance(t, UUIDType):
        return value.bytes if isinstance(value, uuid.UUID) else value
    return value


def _primitive(t: IcebergType) -> PrimitiveType:
    if not isinstance(t, PrimitiveType):
        raise ValidationError(f"no JSON literal form for type {t}")
    return t


_INFINITIES = {False: "-Infinity", True: "Infinity"}


def literal_to_json(value: Any, t: IcebergType) -> Any:
    """An internal-representation literal of type ``t`` in JSON single-value form.

    The text forms are those of :func:`icefloe.values.to_json` (the Rust core's Appendix D
    serialiser, which also reads them back when it evaluates a filter)."""
    p = _primitive(t)
    if isinstance(value, float) and math.isinf(value) and isinstance(p, FloatType | DoubleType):
        return _INFINITIES[value > 0]  # JSON numbers have none; Jackson writes these strings
    return _native.value_to_json(str(p), _physical(value, p))


def literal_from_json(obj: Any, t: IcebergType) -> Any:
    """The internal representation of a JSON single-value literal of type ``t``."""
    p = _primitive(t)
    if obj is None or isinstance(obj, list | dict):
        raise ValidationError(f"a {t} literal must be a JSON scalar, got {obj!r}")
    if isinstance(p, FloatType | DoubleType) and obj in ("Infinity", "-Infinity"):
        return math.inf if obj == "Infinity" else -math.inf
    v = _native.value_from_json(str(p), obj)
    if isinstance(v, float) and math.isnan(v):
        raise ValidationError(f"NaN is not a {t} literal (use is_nan)")
    if isinstance(p, DecimalType):
        assert isinstance(v, int)
        return Decimal(f"{v}e-{p.scale}")
    if isinstance(p, UUIDType):
        assert isinstance(v, bytes)
        return uuid.UUID(bytes=v)
    return v


def _term(ref: BoundReference) -> dict[str, Any]:
    return {"id": ref.field_id, "path": list(ref.path), "type": ref.field_type.to_json()}


def to_dict(expr: BooleanExpression) -> Any:
    """The JSON-compatible form of a bound expression (see the module docstring)."""
    if expr is AlwaysTrue():
        return True
    if expr is AlwaysFalse():
        return False
    if isinstance(expr, And | Or):
        kind = "and" if isinstance(expr, And) else "or"
        return {"type": kind, "left": to_dict(expr.left), "right": to_dict(expr.right)}
    if isinstance(expr, Not):
        return {"type": "not", "child": to_dict(expr.child)}
    if not isinstance(expr, BoundPredicate):
        raise ValidationError(f"only bound expressions serialise, got {expr!r}")
    t = expr.ref.field_type
    out: dict[str, Any] = {"type": expr.op.value, "term": _term(expr.ref)}
    if expr.op.is_spatial:
        out["value"] = expr.literal.to_dict()
    elif expr.op.is_set:
        values = [literal_to_json(v, t) for v in expr.literals]
        out["values"] = sorted(values, key=lambda v: (str(type(v)), v))
    elif expr.op.is_literal:
        out["value"] = literal_to_json(expr.literal, t)
    return out


def from_dict(obj: Any) -> BooleanExpression:
    """Reads the form :func:`to_dict` writes back into a bound expression."""
    if obj is True:
        return AlwaysTrue()
    if obj is False:
        return AlwaysFalse()
    if not isinstance(obj, dict) or "type" not in obj:
        raise ValidationError(f"not a serialised expression: {obj!r}")
    kind = obj["type"]
    try:
        if kind in ("and", "or"):
            left, right = from_dict(obj["left"]), from_dict(obj["right"])
            return And(left, right) if kind == "and" else Or(left, right)
        if kind == "not":
            return Not(from_dict(obj["child"]))
        try:
            op = Op(kind)
        except ValueError:
            raise ValidationError(f"unknown expression type {kind!r}") from None
        term = obj["term"]
        t = type_from_json(term["type"])
        path = tuple(term["path"])
        if not isinstance(term["id"], int) or not path or not all(isinstance(p, str) for p in path):
            raise ValidationError(f"bad term in serialised expression: {term!r}")
        ref = BoundReference(term["id"], ".".join(path), t, path)
        if op.is_spatial:
            return BoundPredicate(op, ref, BoundingBox.of(obj["value"]))
        if op.is_set:
            return BoundPredicate(op, ref, [literal_from_json(v, t) for v in obj["values"]])
        if op.is_literal:
            return BoundPredicate(op, ref, literal_from_json(obj["value"], t))
        return BoundPredicate(op, ref)
    except KeyError as e:
        raise ValidationError(f"serialised {kind!r} expression is missing {e.args[0]!r}") from None
