"""The builder API: ``col("id") > 5``, ``col("a").isin([1, 2])``, ``col("s").starts_with("ab")``.

``col(name)`` names a column (nested fields with dots: ``col("location.lat")``); its comparison
operators build :class:`~icefloe.expressions.base.UnboundPredicate` values, which combine with
``&``, ``|`` and ``~``. Literals on the left work too: ``5 < col("id")`` is ``col("id") > 5``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from icefloe.expressions.base import BooleanExpression, Op, UnboundPredicate

__all__ = ["Column", "col"]


class Column:
    """A reference to a column by name, for building predicates."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _pred(self, op: Op, value: Any = None) -> BooleanExpression:
        return UnboundPredicate(op, self.name, value)

    def __lt__(self, value: Any) -> BooleanExpression:
        return self._pred(Op.LT, value)

    def __le__(self, value: Any) -> BooleanExpression:
        return self._pred(Op.LT_EQ, value)

    def __gt__(self, value: Any) -> BooleanExpression:
        return self._pred(Op.GT, value)

    def __ge__(self, value: Any) -> BooleanExpression:
        return self._pred(Op.GT_EQ, value)

    def __eq__(self, value: Any) -> BooleanExpression:  # type: ignore[override]
        return self._pred(Op.EQ, value)

    def __ne__(self, value: Any) -> BooleanExpression:  # type: ignore[override]
        return self._pred(Op.NOT_EQ, value)

    def __hash__(self) -> int:
        return hash(("col", self.name))

    def isin(self, values: Iterable[Any]) -> BooleanExpression:
        return self._pred(Op.IN, values)

    def notin(self, values: Iterable[Any]) -> BooleanExpression:
        return self._pred(Op.NOT_IN, values)

    not_in = notin

    def is_null(self) -> BooleanExpression:
        return self._pred(Op.IS_NULL)

    def not_null(self) -> BooleanExpression:
        return self._pred(Op.NOT_NULL)

    is_not_null = not_null

    def is_nan(self) -> BooleanExpression:
        return self._pred(Op.IS_NAN)

    def not_nan(self) -> BooleanExpression:
        return self._pred(Op.NOT_NAN)

    is_not_nan = not_nan

    def starts_with(self, prefix: str) -> BooleanExpression:
        return self._pred(Op.STARTS_WITH, prefix)

    def not_starts_with(self, prefix: str) -> BooleanExpression:
        return self._pred(Op.NOT_STARTS_WITH, prefix)

    def __repr__(self) -> str:
        return f"col({self.name!r})"


def col(name: str) -> Column:
    """A column reference for the builder API."""
    return Column(name)
