"""The filter-string parser: grammar, literals, errors with positions, and round trips."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.exceptions import ParseError
from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    Not,
    Op,
    Or,
    UnboundPredicate,
    col,
    parse,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id > 5", col("id") > 5),
        ("id>=-5", col("id") >= -5),
        ("ID < 1.50", col("ID") < Decimal("1.50")),
        ("x <= 1e3", col("x") <= 1000.0),
        ("x = -2.5E-2", col("x") == -0.025),
        ("x == .5", col("x") == Decimal("0.5")),
        ("x != 'a''b'", col("x") != "a'b"),
        ("x <> 'a\\'b\\\\c'", col("x") != "a'b\\c"),
        ("5 < x", col("x") > 5),
        ("'2024-01-01' >= ts", col("ts") <= "2024-01-01"),
        ("b = TRUE", col("b") == True),  # noqa: E712
        ("b = false", col("b") == False),  # noqa: E712
        ("bin = X'00ff'", col("bin") == b"\x00\xff"),
        ("x IN (1, 2, 3)", col("x").isin([1, 2, 3])),
        ("x not in ('a', 'b')", col("x").notin(["a", "b"])),
        ("x in ()", AlwaysFalse()),
        ("x is null", col("x").is_null()),
        ("x IS NOT NULL", col("x").not_null()),
        ("x is nan", col("x").is_nan()),
        ("x is not NaN", col("x").not_nan()),
        ("name like 'abc%'", col("name").starts_with("abc")),
        ("name not like 'a\\%b\\_%'", col("name").not_starts_with("a%b_")),
        ("name like '%'", col("name").starts_with("")),
        ("x between 1 and 5", And(col("x") >= 1, col("x") <= 5)),
        (
            "x NOT BETWEEN 'a' and 'c' and y = 1",
            And(Not(And(col("x") >= "a", col("x") <= "c")), col("y") == 1),
        ),
        ('"between" = 1', col("between") == 1),
        ('"my col" = 1', col("my col") == 1),
        ('"a""b" = 1', col('a"b') == 1),
        ("`select` = 1", col("select") == 1),
        ("loc.lat > 1", col("loc.lat") > 1),
        ('loc."lat itude" > 1', col("loc.lat itude") > 1),  # plain and quoted parts mixed
        ("`a b`.c.`d` = 1", col("a b.c.d") == 1),
        ('"a b".c = 1', col("a b.c") == 1),
        ("größe > 3 and ville.nom = 'Zürich'", And(col("größe") > 3, col("ville.nom") == "Zürich")),
        ("true", AlwaysTrue()),
        ("not false", AlwaysTrue()),
        ("a = 1 and true", col("a") == 1),
        (
            "a = 1 or b = 2 and c = 3",
            Or(col("a") == 1, And(col("b") == 2, col("c") == 3)),
        ),
        (
            "(a = 1 or b = 2) and not c = 3",
            And(Or(col("a") == 1, col("b") == 2), Not(col("c") == 3)),
        ),
        ("NOT NOT a = 1", col("a") == 1),
        (
            "id > 5 and ts >= '2024-01-01T00:00:00' and name like 'abc%'",
            And(col("id") > 5, col("ts") >= "2024-01-01T00:00:00", col("name").starts_with("abc")),
        ),
    ],
)
def test_parse(text: str, expected: BooleanExpression) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "position", "fragment"),
    [
        ("", 0, "expected an expression"),
        ("id >", 4, "end of input"),
        ("id > and x", 5, "expected a literal"),
        ("id 5", 3, "expected a comparison"),
        ("(a = 1", 6, "')'"),
        ("a = 1)", 5, "expected 'and', 'or'"),
        ("a = 'abc", 4, "unterminated string"),
        ('"abc = 1', 0, "unterminated quoted name"),
        ("a = 1 & b = 2", 6, "unexpected character '&'"),
        ("a is 5", 5, "'null' or 'nan'"),
        ("a not = 5", 6, "'in', 'like' or 'between'"),
        ("a in 1, 2", 5, "'('"),
        ("a in (1 2)", 8, "',' or ')'"),
        ("s like 'a%b'", 9, "prefix"),
        ("s like 'a_b%'", 9, "'_'"),
        ("s like 'abc'", 7, "ending in '%'"),
        ("s like 5", 7, "quoted pattern"),
        ("x = 12abc", 6, "in number"),
        ("x = X'abc'", 4, "even number"),
        ("x = -", 4, "unexpected character '-'"),
        ("and = 1", 0, "expected a column name"),
        ('a."" = 1', 2, "empty quoted name"),
        ("a. = 1", 1, "unexpected character '.'"),
        ("x between 1 or 2", 12, "expected 'and' between the bounds"),
        ("x between and 2", 10, "expected a literal"),
    ],
)
def test_parse_errors_point_at_the_problem(text: str, position: int, fragment: str) -> None:
    with pytest.raises(ParseError) as info:
        parse(text)
    assert info.value.position == position, str(info.value)
    assert fragment in str(info.value)
    # The message shows the text with a caret under the offending character.
    lines = str(info.value).splitlines()
    assert lines[-1].index("^") - 2 == position


names = st.one_of(
    st.sampled_from(["id", "a", "b.c", "x_1", "and", "In", "weird name", 'q"uote', "é"]),
    st.text(min_size=1, max_size=8),
)
literals = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),  # infinities print as inf and -inf, which parse back
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
    st.text(max_size=10),
    st.binary(max_size=6),
    st.booleans(),
)


def _pred(draw: st.DrawFn) -> BooleanExpression:
    op = draw(st.sampled_from([op for op in Op if not op.is_spatial]))
    name = draw(names)
    if op.is_unary:
        return UnboundPredicate(op, name)
    if op.is_set:
        return UnboundPredicate(op, name, draw(st.lists(literals, max_size=4)))
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        return UnboundPredicate(op, name, draw(st.text(max_size=8)))
    return UnboundPredicate(op, name, draw(literals))


@st.composite
def expressions(draw: st.DrawFn, depth: int = 3) -> BooleanExpression:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.one_of(st.builds(lambda: _pred(draw)), st.just(AlwaysTrue())))
    kind = draw(st.sampled_from(["and", "or", "not"]))
    left = draw(expressions(depth - 1))
    if kind == "not":
        return Not(left)
    right = draw(expressions(depth - 1))
    return And(left, right) if kind == "and" else Or(left, right)


@settings(max_examples=200, deadline=None)
@given(expressions())
def test_str_round_trips_through_parse(expr: BooleanExpression) -> None:
    assert parse(str(expr)) == expr


def test_infinite_literals_print_and_parse_as_inf() -> None:
    """``str`` wrote ``inf``, which the parser refused (and ``-inf`` an unexpected '-');
    ``inf`` is read only where a literal must be: a column may be called inf."""
    assert str(col("d") > float("inf")) == "d > inf"
    assert parse("d > inf") == (col("d") > float("inf"))
    assert parse("d in (-inf, 1.0, Infinity)") == col("d").isin([float("-inf"), 1.0, float("inf")])
    assert parse("inf > 3") == (col("inf") > 3)
    # before a comparison with a column, the number (as `5 < d` is d > 5; it was refused)
    assert parse("inf > d") == (col("d") < float("inf"))
    assert parse("INFINITY >= d and -inf < d") == (
        (col("d") <= float("inf")) & (col("d") > float("-inf"))
    )


@pytest.mark.parametrize(
    ("text", "fix"),
    [
        ("s = null", "write 's is null'"),
        ("s == NULL", "write 's is null'"),
        ("s != null", "write 's is not null'"),
        ('"a b" <> null', """write '"a b" is not null'"""),
        ("s < null", "'s is null' or 's is not null'"),
        ("d = nan", "write 'd is nan'"),
    ],
)
def test_comparing_with_null_says_to_use_is_null(text: str, fix: str) -> None:
    with pytest.raises(ParseError) as info:
        parse(text)
    assert "expected a literal value" in str(info.value)
    assert fix in str(info.value)
    assert info.value.position == text.rindex(" ") + 1  # at the null


def test_non_string_input() -> None:
    with pytest.raises(ParseError):
        parse(5)  # type: ignore[arg-type]
