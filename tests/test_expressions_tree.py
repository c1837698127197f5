"""The expression tree: simplification, equality, negation, the builder API and printing."""

from __future__ import annotations

import pickle
from decimal import Decimal

import pytest

from icefloe.exceptions import ValidationError
from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Not,
    Op,
    Or,
    UnboundPredicate,
    col,
    rewrite_not,
)

T, F = AlwaysTrue(), AlwaysFalse()
a = col("a") > 5
b = col("b") == "x"


def test_constant_simplification() -> None:
    assert And(a, T) == a
    assert And(T, a) == a
    assert And(a, F) is F
    assert Or(a, T) is T
    assert Or(F, a) == a
    assert Not(T) is F
    assert Not(F) is T
    assert Not(Not(a)) == a
    assert And(a, b, a) == And(And(a, b), a)


def test_set_simplification() -> None:
    assert col("a").isin([]) is F
    assert col("a").notin([]) is T
    assert col("a").isin([3]) == (col("a") == 3)
    assert col("a").notin([3]) == (col("a") != 3)
    assert col("a").isin([1, 2, 2]) == col("a").isin({2, 1})


def test_equality_distinguishes_ops_terms_literals_and_bools() -> None:
    assert (col("a") > 5) == UnboundPredicate(Op.GT, "a", 5)
    assert (col("a") > 5) != (col("a") >= 5)
    assert (col("a") > 5) != (col("b") > 5)
    assert (col("a") > 5) != (col("a") > 6)
    assert (col("a") == 1) != (col("a") == True)  # noqa: E712
    assert (col("a") == 1) == (col("a") == Decimal(1))
    assert hash(col("a") > 5) == hash(UnboundPredicate("gt", "a", 5))
    assert And(a, b) != And(b, a)
    assert And(a, b) != Or(a, b)


def test_builder_operators() -> None:
    assert (a & b) == And(a, b)
    assert (a | b) == Or(a, b)
    assert ~a == Not(a)
    assert (5 < col("a")) == (col("a") > 5)  # noqa: SIM300
    assert col("s").starts_with("ab").op is Op.STARTS_WITH
    assert col("s").not_starts_with("ab").op is Op.NOT_STARTS_WITH
    assert col("x").is_null().op is Op.IS_NULL
    assert col("x").not_null().op is Op.NOT_NULL
    assert col("x").is_nan().op is Op.IS_NAN
    assert col("x").not_nan().op is Op.NOT_NAN
    assert col("x").not_in([1, 2]).op is Op.NOT_IN


@pytest.mark.parametrize(
    "bad",
    [
        lambda: col("a") == None,  # noqa: E711
        lambda: col("a") < float("nan"),
        lambda: col("a").isin([1, None]),
        lambda: col("a").isin("abc"),
        lambda: UnboundPredicate(Op.IS_NULL, "a", 5),
        lambda: UnboundPredicate(Op.LT, "", 5),
        lambda: And(a, "x"),  # type: ignore[arg-type]
    ],
)
def test_invalid_predicates_raise(bad: object) -> None:
    with pytest.raises(ValidationError):
        bad()  # type: ignore[operator]


def test_rewrite_not_pushes_negation_down() -> None:
    e = Not(And(col("a") < 5, Or(col("b").is_null(), Not(col("c").isin([1, 2])))))
    expected = Or(col("a") >= 5, And(col("b").not_null(), col("c").isin([1, 2])))
    assert rewrite_not(e) == expected
    for op in Op:
        assert Op(op).negate().negate() is op
    assert rewrite_not(Not(col("s").starts_with("x"))) == col("s").not_starts_with("x")
    assert rewrite_not(Not(col("f").is_nan())) == col("f").not_nan()


def test_str_and_repr() -> None:
    assert str(col("id") > 5) == "id > 5"
    assert str(col("weird name") == "it's") == "\"weird name\" = 'it''s'"
    assert str(col("and") == 1) == '"and" = 1'
    assert str(Or(a, b) & (col("c") <= 1.5)) == "(a > 5 or b = 'x') and c <= 1.5"
    assert str(And(a, And(b, a))) == "a > 5 and (b = 'x' and a > 5)"
    assert str(Not(And(a, b))) == "not (a > 5 and b = 'x')"
    assert str(col("s").starts_with("1%_")) == "s like '1\\\\%\\\\_%'"
    assert str(col("x").isin([3, 1, 2])) == "x in (1, 2, 3)"
    assert str(col("x").notin(["b", "a"])) == "x not in ('a', 'b')"
    assert str(col("x").not_null()) == "x is not null"
    assert repr(a) == "UnboundPredicate('gt', 'a', 5)"
    assert repr(And(a, T.negate())) == "AlwaysFalse()"
    assert repr(Not(a)) == "Not(UnboundPredicate('gt', 'a', 5))"


def test_repr_of_sets_shows_values_ordered_by_value() -> None:
    """``repr`` of an ``in`` predicate showed its values as quoted strings ordered as text:
    ``isin([10, 9, 1])`` read ``['1', '10', '9']``."""
    assert repr(col("id").isin([10, 9, 1])) == "UnboundPredicate('in', 'id', [1, 9, 10])"
    assert repr(col("s").notin(["b", "a"])) == "UnboundPredicate('not-in', 's', ['a', 'b'])"
    # values of kinds that do not compare: ordered by their repr
    assert repr(col("m").isin([2, "1"])) == "UnboundPredicate('in', 'm', ['1', 2])"
    values = [Decimal("10.5"), Decimal("9.25"), Decimal("-1")]
    expected = f"UnboundPredicate('in', 'd', {sorted(values)!r})"
    assert repr(col("d").isin(values)) == expected


def test_pickle_round_trip() -> None:
    e = Or(And(a, Not(b)), col("c").isin([1, 2]))
    assert pickle.loads(pickle.dumps(e)) == e
    assert pickle.loads(pickle.dumps(T)) is T


def test_floats_equal_the_decimals_they_print_as() -> None:
    assert (col("a") < 1.1) == (col("a") < Decimal("1.1"))
    assert hash(col("a") < 1.1) == hash(col("a") < Decimal("1.1"))
    assert (col("a") < 0.1 + 0.2) != (col("a") < Decimal("0.3"))
    assert col("a").isin([1.5, 2]) == col("a").isin([Decimal("1.5"), 2])
