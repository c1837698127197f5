"""A parser for filter strings: ``parse("id > 5 and name like 'abc%'")``.

Grammar (keywords are case-insensitive)::

    expr      := or
    or        := and ("or" and)*
    and       := not ("and" not)*
    not       := "not" not | primary
    primary   := "(" expr ")" | "true" | "false" | predicate | spatial
    spatial   := ("st_intersects" | "st_disjoint") "(" column "," box ")"
    box       := xmin "," ymin "," xmax "," ymax ["," zmin "," zmax ["," mmin "," mmax]]
                 (numbers; ``nan`` for a Z range left out before an M range)

Chains of ``and`` / ``or`` come out as balanced trees and neither long chains nor deep
parentheses are limited by the Python stack (the parser keeps explicit stacks).
    predicate := column cmp literal | literal cmp column
               | column ["not"] "in" "(" [literal ("," literal)*] ")"
               | column "is" ["not"] ("null" | "nan")
               | column ["not"] "like" string
               | column ["not"] "between" literal "and" literal
    cmp       := "<" | "<=" | ">" | ">=" | "=" | "==" | "!=" | "<>"
    column    := part ("." part)*
    part      := name | '"' quoted name ('""' for a quote) '"' | `backquoted`
    literal   := number | string | X'hex bytes' | "true" | "false"

Numbers: ``5`` and ``-5`` are ints, ``1.50`` a ``Decimal`` (exact), ``1e3`` / ``1.5E-2`` floats,
``inf`` and ``-inf`` (also ``infinity``) the infinite floats.
Strings are single-quoted; a quote is written ``''`` or ``\\'`` and a backslash ``\\\\``.
``like`` takes a prefix pattern only (``'abc%'``, with ``\\%``, ``\\_`` and ``\\\\`` for the
literal characters) and becomes ``starts_with``; any other pattern raises ``ParseError``.
``x between a and b`` is ``x >= a and x <= b``, and ``x not between a and b`` is
``not (x between a and b)`` (which, like ``!=``, keeps nulls).
Errors are :class:`~icefloe.exceptions.ParseError` with ``.position`` at the offending character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from icefloe.exceptions import ParseError, ValidationError
from icefloe.expressions.base import (
    KEYWORDS,
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    Not,
    Op,
    Or,
    UnboundPredicate,
)
from icefloe.expressions.rewrite import balance
from icefloe.geo import BoundingBox

__all__ = ["parse", "parse_filter"]

_SPATIAL = {"st_intersects": Op.ST_INTERSECTS, "st_disjoint": Op.ST_DISJOINT}

_CMP = {"<": Op.LT, "<=": Op.LT_EQ, ">": Op.GT, ">=": Op.GT_EQ, "=": Op.EQ, "==": Op.EQ}
_CMP.update({"!=": Op.NOT_EQ, "<>": Op.NOT_EQ})
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
#: ``-inf`` (a column name cannot start with ``-``); ``inf`` alone is read where a literal
#: must be (it could name a column elsewhere)
_MINUS_INF = re.compile(r"-\s*(?:inf|infinity)(?![\w.])", re.IGNORECASE)
_INF_WORDS = ("inf", "infinity")
# a name part: letters (any script), digits and underscores, not starting with a digit
_IDENT = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
_PART = re.compile(r"[^\W\d]\w*")
_HEX = re.compile(r"[xX]'([0-9A-Fa-f]*)'")


@dataclass(frozen=True)
class _Tok:
    kind: str  # ident, kw, str, num, bytes, op, "(", ")", ",", eof
    value: Any
    pos: int
    offsets: tuple[int, ...] = ()  # for strings: source position of each character


def _error(text: str, pos: int, message: str) -> ParseError:
    line = text.replace("\n", " ").replace("\t", " ")
    return ParseError(f"{message} at position {pos}:\n  {line}\n  {' ' * pos}^", pos)


def _read_quoted(
    text: str, start: int, quote: str, backslash: bool
) -> tuple[str, int, tuple[int, ...]]:
    """Reads a quoted token at ``start``: (content, end position, source offset of each char)."""
    out: list[str] = []
    offsets: list[int] = []
    i = start + 1
    n = len(text)
    while i < n:
        c = text[i]
        offsets.append(i)
        if c == quote:
            if i + 1 < n and text[i + 1] == quote:
                out.append(quote)
                i += 2
                continue
            offsets.pop()
            return "".join(out), i + 1, tuple(offsets)
        if backslash and c == "\\" and i + 1 < n and text[i + 1] in (quote, "\\"):
            out.append(text[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    what = "string" if quote == "'" else "quoted name"
    raise _error(text, start, f"unterminated {what}")


def _more_parts(text: str, name: str, i: int) -> tuple[str, int]:
    """``name`` extended by the ``.part`` s that follow it at ``i``, each plain or quoted
    (``a."b c".d`` is the nested field ``d`` of ``b c`` of ``a``); and the end position."""
    while i + 1 < len(text) and text[i] == ".":
        if text[i + 1] in '"`':
            part, end, _ = _read_quoted(text, i + 1, text[i + 1], backslash=False)
            if not part:
                raise _error(text, i + 1, "empty quoted name")
        elif (m := _PART.match(text, i + 1)) is not None:
            part, end = m.group(0), m.end()
        else:
            break
        name, i = f"{name}.{part}", end
    return name, i


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "(),":
            toks.append(_Tok(c, c, i))
            i += 1
        elif c in "<>=!":
            two = text[i : i + 2]
            if two in _CMP:
                toks.append(_Tok("op", two, i))
                i += 2
            elif c in _CMP:
                toks.append(_Tok("op", c, i))
                i += 1
            else:
                raise _error(text, i, f"unexpected character {c!r}")
        elif c == "'":
            s, end, offsets = _read_quoted(text, i, "'", backslash=True)
            toks.append(_Tok("str", s, i, offsets))
            i = end
        elif c in '"`':
            s, end, _ = _read_quoted(text, i, c, backslash=False)
            if not s:
                raise _error(text, i, "empty quoted name")
            s, end = _more_parts(text, s, end)
            toks.append(_Tok("ident", s, i))
            i = end
        elif (m := _HEX.match(text, i)) is not None:
            digits = m.group(1)
            if len(digits) % 2:
                raise _error(text, i, "hex bytes literal needs an even number of digits")
            toks.append(_Tok("bytes", bytes.fromhex(digits), i))
            i = m.end()
        elif c == "-" and (m := _MINUS_INF.match(text, i)) is not None:
            toks.append(_Tok("num", float("-inf"), i))
            i = m.end()
        elif c in "0123456789" or (c in "-." and (m := _NUMBER.match(text, i)) is not None):
            m = _NUMBER.match(text, i)
            if m is None:  # pragma: no cover - guarded by the condition above
                raise _error(text, i, "bad number")
            s = m.group(0)
            end = m.end()
            if end < n and (text[end].isalnum() or text[end] in "_."):
                raise _error(text, end, f"unexpected character {text[end]!r} in number")
            value: Any
            if "e" in s or "E" in s:
                value = float(s)
            elif "." in s:
                value = Decimal(s)
            else:
                value = int(s)
            toks.append(_Tok("num", value, i))
            i = end
        elif (m := _IDENT.match(text, i)) is not None:
            word, end = _more_parts(text, m.group(0), m.end())
            low = word.lower()
            kw = low in KEYWORDS and end == m.end()
            toks.append(_Tok("kw", low, i) if kw else _Tok("ident", word, i))
            i = end
        else:
            raise _error(text, i, f"unexpected character {c!r}")
    toks.append(_Tok("eof", None, n))
    return toks


def _like_prefix(text: str, tok: _Tok) -> str:
    """The prefix of a ``like`` pattern that must be ``prefix%``."""
    pattern: str = tok.value
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern) and pattern[i + 1] in "\\%_":
            out.append(pattern[i + 1])
            i += 2
            continue
        if c == "%":
            if i != len(pattern) - 1:
                raise _error(
                    text,
                    tok.offsets[i],
                    "like supports only prefix patterns ('abc%'); '%' must come last",
                )
            return "".join(out)
        if c == "_":
            raise _error(
                text,
                tok.offsets[i],
                "like supports only prefix patterns ('abc%'); '_' is not supported",
            )
        out.append(c)
        i += 1
    raise _error(
        text,
        tok.pos,
        "like supports only prefix patterns ending in '%' (use = for an exact match)",
    )


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def advance(self) -> _Tok:
        t = self.toks[self.i]
        self.i = min(self.i + 1, len(self.toks) - 1)
        return t

    def is_kw(self, word: str, tok: _Tok | None = None) -> bool:
        t = tok or self.tok
        return t.kind == "kw" and t.value == word

    def fail(self, message: str, tok: _Tok | None = None) -> ParseError:
        t = tok or self.tok
        snippet = self.text[t.pos : t.pos + 12].split()
        found = repr(snippet[0]) if t.kind != "eof" and snippet else "end of input"
        return _error(self.text, t.pos, f"{message}, found {found}")

    def expect(self, kind: str, what: str) -> _Tok:
        if self.tok.kind != kind:
            raise self.fail(f"expected {what}")
        return self.advance()

    def parse(self) -> BooleanExpression:
        """``or`` / ``and`` / ``not`` / parentheses without recursion (operator-precedence
        parsing over explicit stacks), so neither long chains nor deep parentheses exhaust the
        Python stack; associative chains come out balanced (:func:`balance`)."""
        if self.tok.kind == "eof":
            raise self.fail("expected an expression")
        operands: list[BooleanExpression] = []
        ops: list[_Tok] = []  # "(" tokens and the "not" / "and" / "or" keywords
        opened = 0  # "(" tokens on ops

        def reduce() -> None:
            op = ops.pop()
            right, left = operands.pop(), operands.pop()
            operands.append(And(left, right) if op.value == "and" else Or(left, right))

        while True:
            while self.is_kw("not") or self.tok.kind == "(":
                opened += self.tok.kind == "("
                ops.append(self.advance())
            operands.append(self.parse_atom())
            # The operand is complete: apply the "not"s before it, close the groups it ends.
            while True:
                while ops and self.is_kw("not", ops[-1]):
                    ops.pop()
                    operands.append(Not(operands.pop()))
                if self.tok.kind != ")" or not opened:
                    break
                while ops[-1].kind != "(":
                    reduce()
                ops.pop()
                opened -= 1
                self.advance()
            if not (self.is_kw("and") or self.is_kw("or")):
                break
            word = self.tok.value
            while ops and ops[-1].kind == "kw" and (ops[-1].value == "and" or word == "or"):
                reduce()
            ops.append(self.advance())
        while ops:
            if ops[-1].kind == "(":
                raise self.fail("expected ')' to close the '(' at position " + str(ops[-1].pos))
            reduce()
        if self.tok.kind != "eof":
            raise self.fail("expected 'and', 'or' or the end of the expression")
        return balance(operands[0])

    def is_literal(self, t: _Tok) -> bool:
        return t.kind in ("str", "num", "bytes") or self.is_kw("true", t) or self.is_kw("false", t)

    def literal(self) -> Any:
        t = self.tok
        if t.kind == "ident" and t.value.lower() in _INF_WORDS:
            self.advance()
            return float("inf")
        if not self.is_literal(t):
            raise self.fail("expected a literal value (number, 'string', true or false)")
        self.advance()
        if t.kind == "kw":
            return t.value == "true"
        return t.value

    def parse_atom(self) -> BooleanExpression:
        """A predicate or a constant."""
        t = self.tok
        # `inf > d`: a bare inf before a comparison with a column is the number (no column is
        # compared with a column), while `inf > 1` names a column called inf
        inf = (
            t.kind == "ident"
            and t.value.lower() in _INF_WORDS
            and self.peek(2).kind == "ident"
            and self.peek(2).value.lower() not in _INF_WORDS
        )
        if (inf or self.is_literal(t)) and self.peek().kind == "op":
            value = self.literal()
            op = _CMP[self.advance().value]
            name = self.expect("ident", "a column name after the comparison")
            return self.make(op.flip(), name, value)
        if self.is_kw("true"):
            self.advance()
            return AlwaysTrue()
        if self.is_kw("false"):
            self.advance()
            return AlwaysFalse()
        if t.kind != "ident":
            raise self.fail("expected a column name, 'not', '(' or true/false")
        if t.value.lower() in _SPATIAL and self.peek().kind == "(":
            return self.parse_spatial()
        name = self.advance()
        return self.parse_predicate(name)

    def parse_spatial(self) -> BooleanExpression:
        op = _SPATIAL[self.advance().value.lower()]
        self.advance()  # "("
        name = self.expect("ident", "a geometry column name")
        nums: list[float | None] = []
        while self.tok.kind == ",":
            self.advance()
            if self.is_kw("nan"):
                self.advance()
                nums.append(None)
                continue
            t = self.expect("num", "a number of the bounding box")
            nums.append(float(t.value))
        self.expect(")", "',' or ')' after the bounding box")
        if len(nums) not in (4, 6, 8) or None in nums[:4]:
            raise _error(
                self.text,
                name.pos,
                f"{op.name.lower()} needs xmin, ymin, xmax, ymax (then "
                f"optionally zmin, zmax and mmin, mmax), got {len(nums)} numbers",
            )
        return self.make(op, name, BoundingBox.from_args(nums))

    def make(self, op: Op, name: _Tok, value: Any = None) -> BooleanExpression:
        return UnboundPredicate(op, name.value, value)

    def compared_with_null(self, name: _Tok, op: _Tok) -> ParseError:
        """The error for ``name = null`` (or ``nan``, or another comparison): null and NaN are
        tested with ``is``, as in SQL."""
        word = self.tok.value.lower()
        column = self.text[name.pos : op.pos].strip()
        if op.value in ("=", "=="):
            fix = f"write '{column} is {word}'"
        elif op.value in ("!=", "<>"):
            fix = f"write '{column} is not {word}'"
        else:
            fix = f"test it with '{column} is {word}' or '{column} is not {word}'"
        return _error(
            self.text,
            self.tok.pos,
            f"expected a literal value (number, 'string', true or false), found {word!r}: "
            f"{word} is not a value to compare with; {fix}",
        )

    def parse_predicate(self, name: _Tok) -> BooleanExpression:
        t = self.tok
        if t.kind == "op":
            self.advance()
            if self.is_kw("null") or self.is_kw("nan"):
                raise self.compared_with_null(name, t)
            return self.make(_CMP[t.value], name, self.literal())
        if self.is_kw("is"):
            self.advance()
            negated = self.is_kw("not")
            if negated:
                self.advance()
            if self.is_kw("null"):
                self.advance()
                return self.make(Op.NOT_NULL if negated else Op.IS_NULL, name)
            if self.is_kw("nan"):
                self.advance()
                return self.make(Op.NOT_NAN if negated else Op.IS_NAN, name)
            raise self.fail("expected 'null' or 'nan' after 'is'")
        negated = False
        if self.is_kw("not"):
            negated = True
            self.advance()
            if not (self.is_kw("in") or self.is_kw("like") or self.is_kw("between")):
                raise self.fail("expected 'in', 'like' or 'between' after 'not'")
        if self.is_kw("between"):
            self.advance()
            low = self.literal()
            if not self.is_kw("and"):
                raise self.fail("expected 'and' between the bounds of 'between'")
            self.advance()
            high = self.literal()
            inside = And(self.make(Op.GT_EQ, name, low), self.make(Op.LT_EQ, name, high))
            return Not(inside) if negated else inside
        if self.is_kw("in"):
            self.advance()
            self.expect("(", "'(' after 'in'")
            values: list[Any] = []
            if self.tok.kind != ")":
                values.append(self.literal())
                while self.tok.kind == ",":
                    self.advance()
                    values.append(self.literal())
            self.expect(")", "',' or ')' in the value list")
            return self.make(Op.NOT_IN if negated else Op.IN, name, values)
        if self.is_kw("like"):
            self.advance()
            pat = self.tok
            if pat.kind != "str":
                raise self.fail("expected a quoted pattern after 'like'")
            self.advance()
            prefix = _like_prefix(self.text, pat)
            return self.make(Op.NOT_STARTS_WITH if negated else Op.STARTS_WITH, name, prefix)
        raise self.fail(
            f"expected a comparison, 'in', 'is', 'like' or 'between' after column {name.value!r}"
        )


def parse(text: str) -> BooleanExpression:
    """Parses a filter string into an unbound expression (see the module docstring)."""
    if not isinstance(text, str):
        raise ParseError(f"a filter string must be a str, got {type(text).__name__}", None)
    return _Parser(text).parse()


def parse_filter(expr: str | BooleanExpression) -> BooleanExpression:
    """A row filter given as a filter string (parsed) or an expression; anything else (None,
    a tuple) is refused with a :class:`ValidationError`."""
    if isinstance(expr, str):
        return parse(expr)
    if not isinstance(expr, BooleanExpression):
        raise ValidationError(f"a row filter must be a string or an expression, got {expr!r}")
    return expr
