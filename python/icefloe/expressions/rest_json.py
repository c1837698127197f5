"""Iceberg expressions in the REST spec's expression JSON (Iceberg Java's ``ExpressionParser``
form), as scan planning requests and answers carry them: ``{"type": "lt", "term": "id",
"value": 5}``, ``and`` / ``or`` / ``not``, ``true`` / ``false``. Written from bound expressions
with literals in the spec's single-value JSON of their column's type; read into unbound
expressions whose literals are converted when bound (numbers mean days or microseconds for
dates and timestamps, as in Java).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
    UnboundPredicate,
)
from icefloe.expressions.serde import literal_to_json
from icefloe.schema import Schema
from icefloe.types import BinaryType, FixedType

__all__ = ["expression_from_json", "expression_to_json"]


def expression_from_json(
    obj: Any, schemas: Sequence[Schema] = (), case_sensitive: bool = True
) -> BooleanExpression:
    """An unbound expression from the REST spec's expression JSON (Iceberg Java's
    ``ExpressionParser`` form); literals are taken as JSON gives them (numbers, strings,
    booleans) and converted to the column's type when the expression is bound. A string on a
    column that is ``binary`` or ``fixed`` in one of ``schemas`` is read as the hex JSON form
    of its bytes (as Java writes them)."""
    return _expression(obj, schemas, case_sensitive)


def _expression(obj: Any, schemas: Sequence[Schema], case_sensitive: bool) -> BooleanExpression:
    """Walked with an explicit stack: ``and``/``or``/``not`` nest as deep as the client built
    them (Java's ``Expressions.or`` folds a list to the left), deeper than Python's recursion
    limit allows at two frames a level."""
    todo: list[tuple[Any, bool]] = [(obj, False)]
    done: list[BooleanExpression] = []
    while todo:
        node, children_done = todo.pop()
        kind = _kind(node)
        if kind in ("and", "or"):
            if children_done:
                right, left = done.pop(), done.pop()
                done.append(And(left, right) if kind == "and" else Or(left, right))
            else:
                todo += [
                    (node, True),
                    (_child(node, "right"), False),
                    (_child(node, "left"), False),
                ]
        elif kind == "not":
            if children_done:
                done.append(Not(done.pop()))
            else:
                todo += [(node, True), (_child(node, "child"), False)]
        else:
            done.append(_leaf(node, kind, schemas, case_sensitive))
    return done[0]


def _kind(obj: Any) -> str:
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise ValidationError(f"not an expression: {obj!r}")
    return str(obj["type"]).lower()


def _leaf(
    obj: Any, kind: str, schemas: Sequence[Schema], case_sensitive: bool
) -> BooleanExpression:
    if kind == "literal":
        value = obj.get("value")
        if not isinstance(value, bool):
            raise ValidationError(f"a literal expression needs a boolean value: {obj!r}")
        return AlwaysTrue() if value else AlwaysFalse()
    if kind in ("true", "false"):
        return AlwaysTrue() if kind == "true" else AlwaysFalse()
    try:
        op = Op(kind)
    except ValueError:
        raise ValidationError(f"unknown expression type {obj['type']!r}") from None
    if op.is_spatial:
        raise ValidationError(f"{op.value} has no form in the REST expression JSON")
    name = _term(obj.get("term"))
    bytes_typed = any(
        s.find_field_id(name, case_sensitive) is not None
        and isinstance(s.find_type(name, case_sensitive), BinaryType | FixedType)
        for s in schemas
    )

    def _literal(value: Any) -> Any:
        if isinstance(value, dict) and value.get("type") == "literal":
            value = value.get("value")
        if bytes_typed and isinstance(value, str):
            try:
                return bytes.fromhex(value)
            except ValueError:
                raise ValidationError(f"{name}: {value!r} is not hex-encoded bytes") from None
        if isinstance(value, bool | int | float | str):
            return value
        raise ValidationError(f"not a literal value: {value!r}")

    if op.is_unary:
        if "value" in obj or "values" in obj:
            raise ValidationError(f"{op.value} takes no value: {obj!r}")
        return UnboundPredicate(op, name)
    if op.is_set:
        values = obj.get("values")
        if not isinstance(values, list) or "value" in obj:
            raise ValidationError(f"{op.value} needs a list of values: {obj!r}")
        return UnboundPredicate(op, name, [_literal(v) for v in values])
    if "value" not in obj or "values" in obj:
        raise ValidationError(f"{op.value} needs one value: {obj!r}")
    return UnboundPredicate(op, name, _literal(obj["value"]))


def _child(obj: dict[str, Any], key: str) -> Any:
    if key not in obj:
        raise ValidationError(f"a {obj['type']} expression needs {key!r}: {obj!r}")
    return obj[key]


def _term(term: Any) -> str:
    if isinstance(term, str) and term:
        return term
    if isinstance(term, dict) and term.get("type") == "reference":
        return _term(term.get("term"))
    if isinstance(term, dict) and term.get("type") == "transform":
        raise ValidationError(
            f"filters on a transform ({term.get('transform')!r}) are not supported in planning"
        )
    raise ValidationError(f"not a column reference: {term!r}")


def expression_to_json(expr: BooleanExpression) -> Any:
    """A bound (or unbound) expression in the REST expression JSON, literals in the spec's
    single-value JSON of their column's type, as Iceberg Java writes a residual."""
    if isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, And | Or):
        # a chain of one operator is written balanced (the same expression): JSON parsers
        # limit nesting (Python's and Jackson's near 1,000 levels), a folded chain of 500
        # terms would pass none
        return _balanced("and" if isinstance(expr, And) else "or", _operands(expr))
    if isinstance(expr, Not):
        return {"type": "not", "child": expression_to_json(expr.child)}
    if isinstance(expr, BoundPredicate | UnboundPredicate):
        if expr.op.is_spatial:
            raise ValidationError(f"{expr.op.value} has no form in the REST expression JSON")
        out: dict[str, Any] = {"type": expr.op.value, "term": expr.term_name}
        if isinstance(expr, BoundPredicate):
            t = expr.ref.field_type
            if expr.op.is_set:
                out["values"] = [literal_to_json(v, t) for v in sorted(expr.literals, key=repr)]
            elif expr.op.is_literal:
                out["value"] = literal_to_json(expr.literal, t)
        elif expr.op.is_set:
            out["values"] = sorted(expr.literals, key=repr)
        elif expr.op.is_literal:
            out["value"] = expr.literal
        return out
    raise ValidationError(f"cannot write {expr!r} as REST expression JSON")


def _operands(expr: And | Or) -> list[BooleanExpression]:
    """The operands of the chain of ``expr``'s operator that ``expr`` heads, left to right."""
    kind = type(expr)
    out: list[BooleanExpression] = []
    todo: list[BooleanExpression] = [expr]
    while todo:
        e = todo.pop()
        if type(e) is kind:
            todo += [e.right, e.left]
        else:
            out.append(e)
    return out


def _balanced(kind: str, operands: list[BooleanExpression]) -> Any:
    if len(operands) == 1:
        return expression_to_json(operands[0])
    mid = len(operands) // 2
    return {
        "type": kind,
        "left": _balanced(kind, operands[:mid]),
        "right": _balanced(kind, operands[mid:]),
    }
