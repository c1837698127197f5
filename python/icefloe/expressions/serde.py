"""A compact, JSON-compatible form of bound expressions, for the Rust core's filter evaluation.

``to_dict(bound)`` gives plain dicts, lists, strings, numbers and booleans (``json.dumps`` it as
is); ``from_dict`` reads it back to an equal bound expression. The form, version 1:

- constants: ``true`` / ``false`` (JSON booleans)
- ``{"type": "and" | "or", "left": E, "right": E}`` and ``{"type": "not", "child": E}``
- predicates: ``{"type": OP, "term": TERM}`` for ``is-null``, ``not-null``, ``is-nan``,
  ``not-nan``; ``{"type": OP, "term": TERM, "value": V}`` for ``lt``, ``lt-eq``, ``gt``,
  ``gt-eq``, ``eq``, ``not-eq``, ``starts-with``, ``not-starts-with``; and
  ``{"type": "in" | "not-in", "term": TERM, "values": [V, ...]}`` (values sorted).
  Operation names are those of the REST catalog's expression JSON.
- ``TERM`` is ``{"id": field id, "path": [struct names from the root], "type": type string}``,
  the type in the spec's JSON form (``"long"``, ``"decimal(9,2)"``, ``"timestamptz"``), so a
  consumer needs no schema to decode literals.
- ``V`` is the literal in the spec's JSON single-value form (Appendix D): JSON booleans and
  numbers for boolean/int/long/float/double; strings for decimal (``"14.20"``, at the type's
  scale), date (``"2017-11-16"``), time (``"22:31:08.123456"``), timestamp
  (``"2017-11-16T22:31:08.123456"``), timestamptz (``"...+00:00"``), the ``_ns`` timestamps
  (nine fractional digits), string, uuid (``"f79c3e09-677c-4bbd-a479-3f349cb785e7"``), and
  lowercase hex for fixed and binary (``"000102ff"``).
"""

from __future__ import annotations

import uuid
from typing import Any

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
from icefloe.expressions.literals import convert_literal
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
    type_from_json,
)

__all__ = ["from_dict", "literal_from_json", "literal_to_json", "to_dict"]


def civil_from_days(z: int) -> tuple[int, int, int]:
    """(year, month, day) of the proleptic Gregorian date ``z`` days after 1970-01-01."""
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return (y + (m <= 2), m, d)


def _date_text(days: int) -> str:
    y, m, d = civil_from_days(days)
    year = f"{y:04d}" if 0 <= y <= 9999 else f"{y:+05d}"
    return f"{year}-{m:02d}-{d:02d}"


def _clock_text(units: int, digits: int) -> str:
    scale = 10**digits
    secs, frac = divmod(units, scale)
    h, rem = divmod(secs, 3600)
    mi, s = divmod(rem, 60)
    return f"{h:02d}:{mi:02d}:{s:02d}.{frac:0{digits}d}"


def _timestamp_text(units: int, digits: int, zone: bool) -> str:
    days, rest = divmod(units, 86400 * 10**digits)
    text = f"{_date_text(days)}T{_clock_text(rest, digits)}"
    return text + "+00:00" if zone else text


def literal_to_json(value: Any, t: IcebergType) -> Any:
    """An internal-representation literal of type ``t`` in JSON single-value form."""
    if isinstance(t, BooleanType | IntegerType | LongType | FloatType | DoubleType | StringType):
        return value
    if isinstance(t, DecimalType):
        return format(value, "f")
    if isinstance(t, DateType):
        return _date_text(value)
    if isinstance(t, TimeType):
        return _clock_text(value, 6)
    if isinstance(t, TimestampType | TimestamptzType):
        return _timestamp_text(value, 6, isinstance(t, TimestamptzType))
    if isinstance(t, TimestampNanoType | TimestamptzNanoType):
        return _timestamp_text(value, 9, isinstance(t, TimestamptzNanoType))
    if isinstance(t, UUIDType):
        return str(value)
    if isinstance(t, FixedType | BinaryType):
        return bytes(value).hex()
    raise ValidationError(f"no JSON literal form for type {t}")


def literal_from_json(obj: Any, t: IcebergType) -> Any:
    """The internal representation of a JSON single-value literal of type ``t``."""
    if isinstance(t, FixedType | BinaryType):
        if not isinstance(obj, str):
            raise ValidationError(f"a {t} literal must be a hex string, got {obj!r}")
        try:
            obj = bytes.fromhex(obj)
        except ValueError:
            raise ValidationError(f"bad hex in {t} literal {obj!r}") from None
    elif isinstance(t, DateType | TimeType | UUIDType | DecimalType) and not isinstance(obj, str):
        raise ValidationError(f"a {t} literal must be a JSON string, got {obj!r}")
    elif isinstance(t, IntegerType | LongType) and not isinstance(obj, int):
        raise ValidationError(f"a {t} literal must be a JSON integer, got {obj!r}")
    value = convert_literal(obj, t)
    if isinstance(t, UUIDType):
        return uuid.UUID(str(value))
    return value


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
    if expr.op.is_set:
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
        if op.is_set:
            return BoundPredicate(op, ref, [literal_from_json(v, t) for v in obj["values"]])
        if op.is_literal:
            return BoundPredicate(op, ref, literal_from_json(obj["value"], t))
        return BoundPredicate(op, ref)
    except KeyError as e:
        raise ValidationError(f"serialised {kind!r} expression is missing {e.args[0]!r}") from None
