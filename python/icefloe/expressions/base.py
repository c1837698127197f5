"""The expression tree: constants, ``And``/``Or``/``Not`` and predicates, unbound and bound.

Expressions are immutable values with structural equality and no truth value (``and``,
``or``, ``not`` on them raise: combine them with ``&``, ``|``, ``~``). Constructors simplify as
they build: ``And(x, AlwaysTrue())`` is ``x``, ``Or(x, AlwaysTrue())`` is ``AlwaysTrue()``,
``Not(Not(x))`` is ``x``, ``in`` with one value is ``==`` and with none is ``AlwaysFalse()``.
:func:`~icefloe.expressions.rewrite.rewrite_not` pushes ``Not`` down to the predicates by
negating them (the reference's two-valued logic: a comparison with a null value is false, its
negation true).

``str(expr)`` is text that :func:`icefloe.expressions.parse` reads back to an equal expression
(for literals the parser can write: ints, decimals, floats, strings, booleans, bytes); ``repr``
shows the structure.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from decimal import Decimal
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar

from icefloe.exceptions import ValidationError
from icefloe.expressions.literals import Nanos, plain_scalar
from icefloe.types import DoubleType, FloatType, TimestampNanoType, TimestamptzNanoType

if TYPE_CHECKING:
    from icefloe.types import IcebergType

__all__ = [
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BooleanExpression",
    "BoundPredicate",
    "BoundReference",
    "Not",
    "Op",
    "Or",
    "Predicate",
    "UnboundPredicate",
]


class Op(str, Enum):
    """Predicate operations; values are the names used by the REST spec's expression JSON."""

    LT = "lt"
    LT_EQ = "lt-eq"
    GT = "gt"
    GT_EQ = "gt-eq"
    EQ = "eq"
    NOT_EQ = "not-eq"
    IN = "in"
    NOT_IN = "not-in"
    IS_NULL = "is-null"
    NOT_NULL = "not-null"
    IS_NAN = "is-nan"
    NOT_NAN = "not-nan"
    STARTS_WITH = "starts-with"
    NOT_STARTS_WITH = "not-starts-with"
    #: Spatial: the value's bounding box intersects (is disjoint from) a query box.
    ST_INTERSECTS = "st-intersects"
    ST_DISJOINT = "st-disjoint"

    @property
    def is_unary(self) -> bool:
        return self in _UNARY

    @property
    def is_set(self) -> bool:
        return self in (Op.IN, Op.NOT_IN)

    @property
    def is_literal(self) -> bool:
        return not self.is_unary and not self.is_set

    @property
    def is_spatial(self) -> bool:
        """``st_intersects`` / ``st_disjoint``: the literal is a bounding box."""
        return self in (Op.ST_INTERSECTS, Op.ST_DISJOINT)

    def negate(self) -> Op:
        return _NEGATE[self]

    def flip(self) -> Op:
        """The operation with its operands swapped (``5 < x`` is ``x > 5``)."""
        return _FLIP.get(self, self)


_UNARY = frozenset({Op.IS_NULL, Op.NOT_NULL, Op.IS_NAN, Op.NOT_NAN})
_NEGATE = {
    Op.LT: Op.GT_EQ,
    Op.GT_EQ: Op.LT,
    Op.LT_EQ: Op.GT,
    Op.GT: Op.LT_EQ,
    Op.EQ: Op.NOT_EQ,
    Op.NOT_EQ: Op.EQ,
    Op.IN: Op.NOT_IN,
    Op.NOT_IN: Op.IN,
    Op.IS_NULL: Op.NOT_NULL,
    Op.NOT_NULL: Op.IS_NULL,
    Op.IS_NAN: Op.NOT_NAN,
    Op.NOT_NAN: Op.IS_NAN,
    Op.STARTS_WITH: Op.NOT_STARTS_WITH,
    Op.NOT_STARTS_WITH: Op.STARTS_WITH,
    Op.ST_INTERSECTS: Op.ST_DISJOINT,
    Op.ST_DISJOINT: Op.ST_INTERSECTS,
}
_FLIP = {Op.LT: Op.GT, Op.GT: Op.LT, Op.LT_EQ: Op.GT_EQ, Op.GT_EQ: Op.LT_EQ}
_SYMBOL = {Op.LT: "<", Op.LT_EQ: "<=", Op.GT: ">", Op.GT_EQ: ">=", Op.EQ: "=", Op.NOT_EQ: "!="}

#: Why an expression (or a builder column) has no truth value.
NO_TRUTH_VALUE = (
    "an icefloe filter expression has no truth value: combine filters with &, | and ~ "
    "(not `and`, `or`, `not`), and write a range as (col('x') >= a) & (col('x') < b)"
)

# Precedence for printing: or < and < not < atoms.
_PREC_OR, _PREC_AND, _PREC_NOT, _PREC_ATOM = 1, 2, 3, 4


class BooleanExpression(ABC):
    """Base of every expression; ``&``, ``|`` and ``~`` build ``And``, ``Or`` and ``Not``."""

    _prec = _PREC_ATOM

    @abstractmethod
    def negate(self) -> BooleanExpression:
        """The logical negation, with ``Not`` pushed into the children."""

    @abstractmethod
    def _key(self) -> tuple[Any, ...]:
        """What equality and hashing compare."""

    def _children(self) -> tuple[BooleanExpression, ...]:
        """The sub-expressions (of ``and``, ``or`` and ``not``); none for the others."""
        return ()

    def _node_key(self) -> tuple[Any, ...]:
        """What equality compares besides the children (all of :meth:`_key` for a leaf)."""
        return self._key()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BooleanExpression) and _equal(self, other)

    def __hash__(self) -> int:
        return _hash(self)

    def __and__(self, other: BooleanExpression) -> BooleanExpression:
        return And(self, other)

    def __or__(self, other: BooleanExpression) -> BooleanExpression:
        return Or(self, other)

    def __invert__(self) -> BooleanExpression:
        return Not(self)

    def __bool__(self) -> bool:
        """Refused: Python's ``and``/``or``/``not`` and chained comparisons would silently
        drop conditions (``2 <= col("x") <= 3`` keeps only ``col("x") <= 3``)."""
        raise ValidationError(NO_TRUTH_VALUE)


class AlwaysTrue(BooleanExpression):
    """The expression that every row satisfies."""

    _instance: AlwaysTrue | None = None

    def __new__(cls) -> AlwaysTrue:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def negate(self) -> BooleanExpression:
        return AlwaysFalse()

    def _key(self) -> tuple[Any, ...]:
        return ("true",)

    def __str__(self) -> str:
        return "true"

    def __repr__(self) -> str:
        return "AlwaysTrue()"


class AlwaysFalse(BooleanExpression):
    """The expression that no row satisfies."""

    _instance: AlwaysFalse | None = None

    def __new__(cls) -> AlwaysFalse:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def negate(self) -> BooleanExpression:
        return AlwaysTrue()

    def _key(self) -> tuple[Any, ...]:
        return ("false",)

    def __str__(self) -> str:
        return "false"

    def __repr__(self) -> str:
        return "AlwaysFalse()"


class _Junction(BooleanExpression):
    """``and`` / ``or``: ``cls(a, b, c, ...)`` is a balanced tree; a constant that decides the
    result (false for ``and``, true for ``or``) absorbs the other side, its negation drops
    away."""

    _word: ClassVar[str]
    left: BooleanExpression
    right: BooleanExpression

    @classmethod
    @abstractmethod
    def _absorbing(cls) -> BooleanExpression:
        """The constant that decides the result whatever the other side is."""

    @classmethod
    @abstractmethod
    def _dual(cls) -> type[_Junction]:
        """The connective of the negation (De Morgan)."""

    def __new__(  # type: ignore[misc]
        cls, left: BooleanExpression, right: BooleanExpression, *rest: BooleanExpression
    ) -> BooleanExpression:
        if rest:
            return _balanced(cls, [left, right, *rest])
        _check_expr(left)
        _check_expr(right)
        absorbing = cls._absorbing()
        identity = absorbing.negate()
        if left is absorbing or right is absorbing:
            return absorbing
        if left is identity:
            return right
        if right is identity:
            return left
        obj = super().__new__(cls)
        obj.left, obj.right = left, right
        return obj

    def negate(self) -> BooleanExpression:
        done: list[BooleanExpression] = []
        for node in _postorder(self, _Junction):
            if isinstance(node, _Junction):
                right = done.pop()
                done.append(node._dual()(done.pop(), right))
            else:
                done.append(node.negate())
        return done[0]

    def _key(self) -> tuple[Any, ...]:
        return (self._word, self.left, self.right)

    def _children(self) -> tuple[BooleanExpression, ...]:
        return (self.left, self.right)

    def _node_key(self) -> tuple[Any, ...]:
        return (self._word,)

    def __str__(self) -> str:
        return _render(self, text=True)

    def __repr__(self) -> str:
        return _render(self, text=False)

    def __reduce__(self) -> tuple[Any, ...]:
        return _from_postfix, (_postfix(self),)


class And(_Junction):
    """Conjunction; ``And(a, b, c, ...)`` builds a balanced tree. Constants simplify away."""

    _prec = _PREC_AND
    _word = "and"

    @classmethod
    def _absorbing(cls) -> BooleanExpression:
        return AlwaysFalse()

    @classmethod
    def _dual(cls) -> type[_Junction]:
        return Or


class Or(_Junction):
    """Disjunction; ``Or(a, b, c, ...)`` builds a balanced tree. Constants simplify away."""

    _prec = _PREC_OR
    _word = "or"

    @classmethod
    def _absorbing(cls) -> BooleanExpression:
        return AlwaysTrue()

    @classmethod
    def _dual(cls) -> type[_Junction]:
        return And


class Not(BooleanExpression):
    """Negation; ``Not(Not(x))`` is ``x`` and ``Not`` of a constant is the other constant."""

    _prec = _PREC_NOT
    child: BooleanExpression

    def __new__(cls, child: BooleanExpression) -> BooleanExpression:  # type: ignore[misc]
        _check_expr(child)
        if child is AlwaysTrue():
            return AlwaysFalse()
        if child is AlwaysFalse():
            return AlwaysTrue()
        if isinstance(child, Not):
            return child.child
        obj = super().__new__(cls)
        obj.child = child
        return obj

    def negate(self) -> BooleanExpression:
        return self.child

    def _key(self) -> tuple[Any, ...]:
        return ("not", self.child)

    def _children(self) -> tuple[BooleanExpression, ...]:
        return (self.child,)

    def _node_key(self) -> tuple[Any, ...]:
        return ("not",)

    def __str__(self) -> str:
        return _render(self, text=True)

    def __repr__(self) -> str:
        return _render(self, text=False)

    def __reduce__(self) -> tuple[Any, ...]:
        return _from_postfix, (_postfix(self),)


# ``and``, ``or`` and ``not`` are walked without recursion: a chain of 10,000 terms built with
# ``|`` in a loop nests 10,000 levels deep until it is balanced.


def _postorder(
    expr: BooleanExpression, kinds: type | tuple[type, ...] = (_Junction, Not)
) -> Iterator[BooleanExpression]:
    """``expr``'s nodes, children before parents, descending only into ``kinds``."""
    todo: list[tuple[BooleanExpression, bool]] = [(expr, False)]
    while todo:
        node, expanded = todo.pop()
        if expanded or not isinstance(node, kinds):
            yield node
        else:
            todo.append((node, True))
            todo.extend((c, False) for c in reversed(node._children()))


def _postfix(expr: BooleanExpression) -> list[Any]:
    """``expr`` flattened: leaves, each ``and``/``or``/``not`` as its class after its operands."""
    return [type(n) if n._children() else n for n in _postorder(expr)]


def _from_postfix(items: list[Any]) -> BooleanExpression:
    """The expression :func:`_postfix` flattened."""
    done: list[BooleanExpression] = []
    for item in items:
        if item is Not:
            done.append(Not(done.pop()))
        elif isinstance(item, type) and issubclass(item, _Junction):
            right = done.pop()
            done.append(item(done.pop(), right))
        else:
            done.append(item)
    return done[0]


def _hash(expr: BooleanExpression) -> int:
    """The hash of ``expr``, kept on each ``and``/``or``/``not`` node (they are immutable)."""
    if not expr._children():
        return hash(expr._key())
    done: list[int] = []
    todo: list[tuple[BooleanExpression, bool]] = [(expr, False)]
    while todo:
        node, expanded = todo.pop()
        children = node._children()
        if not children:
            done.append(hash(node._key()))
        elif "_hash" in node.__dict__:
            done.append(node.__dict__["_hash"])
        elif not expanded:
            todo.append((node, True))
            todo.extend((c, False) for c in reversed(children))
        else:
            parts = done[len(done) - len(children) :]
            del done[len(done) - len(children) :]
            node.__dict__["_hash"] = h = hash((node._node_key(), *parts))
            done.append(h)
    return done[0]


def _equal(a: BooleanExpression, b: BooleanExpression) -> bool:
    todo = [(a, b)]
    while todo:
        x, y = todo.pop()
        if x is y:
            continue
        hx, hy = x.__dict__.get("_hash"), y.__dict__.get("_hash")
        if hx is not None and hy is not None and hx != hy:
            return False
        if x._node_key() != y._node_key():
            return False
        cx, cy = x._children(), y._children()
        if len(cx) != len(cy):
            return False
        todo.extend(zip(cx, cy, strict=True))
    return True


def _render(expr: BooleanExpression, text: bool) -> str:
    """``str(expr)`` (``text``) or ``repr(expr)``."""
    out: list[str] = []
    # an expression with its parent's precedence and whether it is a right operand, or a piece
    todo: list[tuple[BooleanExpression, int, bool] | str] = [(expr, 0, False)]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        node, parent_prec, right = item
        if not text:
            if isinstance(node, _Junction):
                todo += [")", (node.right, 0, False), ", ", (node.left, 0, False)]
                todo.append(f"{type(node).__name__}(")
            elif isinstance(node, Not):
                todo += [")", (node.child, 0, False), "Not("]
            else:
                out.append(repr(node))
            continue
        wrap = node._prec < parent_prec or (right and node._prec == parent_prec)
        if wrap:
            todo.append(")")
        if isinstance(node, _Junction):
            todo += [
                (node.right, node._prec, True),
                f" {node._word} ",
                (node.left, node._prec, False),
            ]
        elif isinstance(node, Not):
            todo += [(node.child, _PREC_NOT, False), "not "]
        else:
            todo.append(str(node))
        if wrap:
            todo.append("(")
    return "".join(out)


def _check_expr(e: object) -> None:
    if not isinstance(e, BooleanExpression):
        raise ValidationError(f"expected an expression, got {e!r} ({type(e).__name__})")


def literal_key(value: Any) -> tuple[bool, Any]:
    """Equality key of a literal: numbers compare by value, but booleans differ from 0 and 1.

    A float compares as the decimal it prints as (``1.1`` equals ``Decimal("1.1")``): the two
    bind to the same value of every column type, and the parser reads ``1.1`` as a decimal.
    """
    if isinstance(value, float):
        return (False, Decimal(repr(value)))
    return (isinstance(value, bool), value)


def check_literal(value: Any) -> Any:
    """Rejects literals no predicate can hold (null, NaT, NaN, containers); a NumPy scalar
    becomes the Python value it holds (:func:`~icefloe.expressions.literals.plain_scalar`)."""
    value = plain_scalar(value)
    if value is None:
        raise ValidationError("a predicate literal cannot be null: use is_null/not_null")
    if type(value).__name__ == "datetime64" and value != value:
        raise ValidationError("a predicate literal cannot be null (NaT): use is_null/not_null")
    if isinstance(value, float) and math.isnan(value):
        raise ValidationError("a predicate literal cannot be NaN: use is_nan/not_nan")
    if isinstance(value, Decimal) and value.is_nan():
        raise ValidationError("a predicate literal cannot be NaN: use is_nan/not_nan")
    ndim: int = getattr(value, "ndim", 0)  # a NumPy array or pandas Series is no single value
    if isinstance(value, list | tuple | set | frozenset | dict) or ndim > 0:
        raise ValidationError(f"a predicate literal must be a single value, got {value!r}")
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return value


_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
KEYWORDS = frozenset(
    {"and", "or", "not", "in", "is", "null", "nan", "like", "between", "true", "false"}
)


def format_name(name: str) -> str:
    """A column name as the parser reads it: bare when possible, else double-quoted."""
    if _BARE.fullmatch(name) and not any(p.lower() in KEYWORDS for p in name.split(".")):
        return name
    return '"' + name.replace('"', '""') + '"'


def format_string(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "''") + "'"


def format_literal(value: Any) -> str:
    """A literal as the parser reads it back (ints, decimals, floats, strings, bytes, booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"  # as the parser reads them
        return repr(value)
    if isinstance(value, Decimal):
        if value.is_infinite():
            return "inf" if value > 0 else "-inf"
        text = format(value, "f")
        return text if "." in text else text + ".0"
    if isinstance(value, bytes):
        return "X'" + value.hex() + "'"
    if isinstance(value, str):
        return format_string(value)
    return format_string(str(value))


def _escape_like(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def format_predicate(op: Op, name: str, literal: Any, literals: Iterable[Any]) -> str:
    """The text of a predicate, shared by the unbound and bound forms."""
    n = format_name(name)
    if op.is_spatial:
        nums = ", ".join("nan" if v is None else repr(v) for v in literal.args())
        return f"{op.name.lower()}({n}, {nums})"
    if op is Op.IS_NULL:
        return f"{n} is null"
    if op is Op.NOT_NULL:
        return f"{n} is not null"
    if op is Op.IS_NAN:
        return f"{n} is nan"
    if op is Op.NOT_NAN:
        return f"{n} is not nan"
    if op.is_set:
        try:
            items = [format_literal(v) for v in sorted(literals)]
        except TypeError:  # mixed kinds: order by text
            items = sorted((format_literal(v) for v in literals), key=lambda s: (len(s), s))
        word = "in" if op is Op.IN else "not in"
        return f"{n} {word} ({', '.join(items)})"
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH) and isinstance(literal, str):
        word = "like" if op is Op.STARTS_WITH else "not like"
        return f"{n} {word} {format_string(_escape_like(literal) + '%')}"
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        return f"{n} {op.value} {format_literal(literal)}"
    return f"{n} {_SYMBOL[op]} {format_literal(literal)}"


def _set_repr(literals: Iterable[Any]) -> str:
    """A set's literals as a list of their reprs, ordered by value when they are comparable
    (``[1, 9, 10]``), else by repr."""
    try:
        ordered = sorted(literals)
    except TypeError:
        ordered = sorted(literals, key=repr)
    return f"[{', '.join(map(repr, ordered))}]"


class Predicate(BooleanExpression):
    """Shared shape of unbound and bound predicates: an op, a term, and its literal(s)."""

    op: Op
    literal: Any
    literals: frozenset[Any]

    @property
    @abstractmethod
    def term_name(self) -> str:
        """The column name the predicate is printed with."""

    def _lit_key(self) -> Any:
        if self.op.is_set:
            # kept: equality and hashing of a 50,000-value set re-keyed every value each time
            key = self.__dict__.get("_set_key")
            if key is None:
                key = self.__dict__["_set_key"] = frozenset(map(literal_key, self.literals))
            return key
        if self.op.is_literal:
            return literal_key(self.literal)
        return None

    def __str__(self) -> str:
        return format_predicate(self.op, self.term_name, self.literal, self.literals)


def _simplify_set(op: Op, values: frozenset[Any]) -> tuple[Op, Any] | BooleanExpression:
    if not values:
        return AlwaysFalse() if op is Op.IN else AlwaysTrue()
    if len(values) == 1:
        return (Op.EQ if op is Op.IN else Op.NOT_EQ), next(iter(values))
    return op, None


class UnboundPredicate(Predicate):
    """A predicate on a column name: ``UnboundPredicate(Op.LT, "id", 5)``.

    Set operations take an iterable of values; ``in``/``not in`` with one value become
    ``==``/``!=`` and with none ``AlwaysFalse()``/``AlwaysTrue()``.
    """

    term: str

    def __new__(  # type: ignore[misc]
        cls, op: Op | str, term: str, value: Any = None
    ) -> BooleanExpression:
        op = Op(op)
        if not isinstance(term, str) or not term:
            raise ValidationError(f"a predicate term must be a non-empty column name, got {term!r}")
        literal: Any = None
        literals: frozenset[Any] = frozenset()
        if op.is_set:
            # any iterable but a string (a list, a set, a NumPy array, a pandas Series)
            if (
                isinstance(value, str | bytes)
                or not isinstance(value, Iterable)
                or getattr(value, "ndim", 1) == 0
            ):
                raise ValidationError(f"{op.value} on {term!r} needs a collection, got {value!r}")
            literals = frozenset(check_literal(v) for v in value)
            simple = _simplify_set(op, literals)
            if isinstance(simple, BooleanExpression):
                return simple
            op, literal = simple
            if literal is not None:
                return UnboundPredicate(op, term, literal)
        elif op.is_spatial:
            from icefloe.geo import BoundingBox

            literal = BoundingBox.of(value)
        elif op.is_literal:
            literal = check_literal(value)
        elif value is not None:
            raise ValidationError(f"{op.value} on {term!r} takes no literal, got {value!r}")
        obj = super().__new__(cls)
        obj.op, obj.term, obj.literal, obj.literals = op, term, literal, literals
        return obj

    @property
    def term_name(self) -> str:
        return self.term

    def negate(self) -> BooleanExpression:
        arg = self.literals if self.op.is_set else self.literal
        return UnboundPredicate(self.op.negate(), self.term, arg)

    def _key(self) -> tuple[Any, ...]:
        return ("unbound", self.op, self.term, self._lit_key())

    def __repr__(self) -> str:
        if self.op.is_set:
            lits = _set_repr(self.literals)
            return f"UnboundPredicate({self.op.value!r}, {self.term!r}, {lits})"
        if self.op.is_literal:
            return f"UnboundPredicate({self.op.value!r}, {self.term!r}, {self.literal!r})"
        return f"UnboundPredicate({self.op.value!r}, {self.term!r})"

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (self.op, self.term, self.literals if self.op.is_set else self.literal)


class BoundReference:
    """A resolved column: field id, full dotted name, type, and the struct path from the root."""

    __slots__ = ("field_id", "field_type", "name", "path", "required")

    def __init__(
        self,
        field_id: int,
        name: str,
        field_type: IcebergType,
        path: tuple[str, ...] | None = None,
        required: bool = False,
    ) -> None:
        self.field_id = field_id
        self.name = name
        self.field_type = field_type
        self.path = path if path is not None else (name,)
        self.required = required

    def _key(self) -> tuple[Any, ...]:
        return (self.field_id, self.field_type)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BoundReference) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"BoundReference(field_id={self.field_id}, name={self.name!r}, type={self.field_type})"
        )


class BoundPredicate(Predicate):
    """A predicate on a resolved field; literals are in Iceberg's internal representation.

    Internal representation: int for int/long, days for date, microseconds for time, timestamp
    and timestamptz, nanoseconds for the ``_ns`` timestamps, ``Decimal`` at the type's scale,
    ``uuid.UUID``, ``bytes`` for fixed/binary, ``str``, ``bool``, ``float``.
    """

    ref: BoundReference

    def __new__(  # type: ignore[misc]
        cls, op: Op | str, ref: BoundReference, value: Any = None
    ) -> BooleanExpression:
        op = Op(op)
        literal: Any = None
        literals: frozenset[Any] = frozenset()
        if op.is_set:
            literals = frozenset(value)
            simple = _simplify_set(op, literals)
            if isinstance(simple, BooleanExpression):
                return simple
            op, literal = simple
            if literal is not None:
                literals = frozenset()
        elif op.is_literal:
            literal = value
        obj = super().__new__(cls)
        obj.op, obj.ref, obj.literal, obj.literals = op, ref, literal, literals
        return obj

    @property
    def term_name(self) -> str:
        return self.ref.name

    def negate(self) -> BooleanExpression:
        """The exact complement: an ordering comparison is false on null and NaN, and so is
        the comparison it negates into, so those values are added back (``not (a > 3)`` is
        ``a <= 3 or a is null``, ``or a is nan`` too for floating columns), as
        :func:`icefloe.expressions.arrow.selection_mask` evaluates a ``Not``."""
        arg = self.literals if self.op.is_set else self.literal
        out = BoundPredicate(self.op.negate(), self.ref, arg)
        if self.op in _ORDERING:
            if isinstance(self.ref.field_type, FloatType | DoubleType):
                out = Or(out, BoundPredicate(Op.IS_NAN, self.ref))
            if not self.ref.required:
                out = Or(out, BoundPredicate(Op.IS_NULL, self.ref))
        return out

    def as_unbound(self, name: str | None = None) -> BooleanExpression:
        arg = self.literals if self.op.is_set else self.literal
        if not self.op.is_unary and isinstance(
            self.ref.field_type, TimestampNanoType | TimestamptzNanoType
        ):
            # bound nanoseconds: a plain int would be read as microseconds when bound again
            if self.op.is_set:
                arg = frozenset(Nanos(v) for v in self.literals)
            else:
                arg = Nanos(self.literal)
        return UnboundPredicate(self.op, name or self.ref.name, arg)

    def _key(self) -> tuple[Any, ...]:
        return ("bound", self.op, self.ref, self._lit_key())

    def __repr__(self) -> str:
        if self.op.is_set:
            lits = _set_repr(self.literals)
            return f"BoundPredicate({self.op.value!r}, {self.ref!r}, {lits})"
        if self.op.is_literal:
            return f"BoundPredicate({self.op.value!r}, {self.ref!r}, {self.literal!r})"
        return f"BoundPredicate({self.op.value!r}, {self.ref!r})"

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (self.op, self.ref, self.literals if self.op.is_set else self.literal)


#: Comparisons false on null and NaN whose negations are too.
_ORDERING = frozenset({Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ})


def _balanced(cls: type[_Junction], items: list[BooleanExpression]) -> BooleanExpression:
    """``items`` joined by ``cls`` as a balanced tree (depth log2 of their number)."""
    while len(items) > 1:
        items = [
            cls(*items[i : i + 2]) if i + 1 < len(items) else items[i]
            for i in range(0, len(items), 2)
        ]
    return items[0]
