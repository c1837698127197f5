"""The builder API: ``col("id") > 5``, ``col("a").isin([1, 2])``, ``col("s").starts_with("ab")``.

``col(name)`` names a column (nested fields with dots: ``col("location.lat")``); its comparison
operators build :class:`~icefloe.expressions.base.UnboundPredicate` values, which combine with
``&``, ``|`` and ``~``. Literals on the left work too: ``5 < col("id")`` is ``col("id") > 5``.

Expressions and columns have no truth value: Python's ``and``, ``or``, ``not`` and chained
comparisons (``2 <= col("id") <= 3``) raise :class:`~icefloe.exceptions.ValidationError`
rather than silently drop a condition; write ``(col("id") >= 2) & (col("id") <= 3)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from icefloe.exceptions import ValidationError
from icefloe.expressions.base import NO_TRUTH_VALUE, BooleanExpression, Op, UnboundPredicate

__all__ = ["Column", "col", "st_disjoint", "st_intersects"]


class Column:
    """A reference to a column by name, for building predicates."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _pred(self, op: Op, value: Any = None) -> BooleanExpression:
        return UnboundPredicate(op, self.name, value)

    def __lt__(self, value: Any) -> BooleanExpression:
        """``column < value``: an unbound ``<`` predicate."""
        return self._pred(Op.LT, value)

    def __le__(self, value: Any) -> BooleanExpression:
        """``column <= value``: an unbound ``<=`` predicate."""
        return self._pred(Op.LT_EQ, value)

    def __gt__(self, value: Any) -> BooleanExpression:
        """``column > value``: an unbound ``>`` predicate."""
        return self._pred(Op.GT, value)

    def __ge__(self, value: Any) -> BooleanExpression:
        """``column >= value``: an unbound ``>=`` predicate."""
        return self._pred(Op.GT_EQ, value)

    def __eq__(self, value: Any) -> BooleanExpression:  # type: ignore[override]
        """``column == value``: an unbound ``=`` predicate (not a bool)."""
        return self._pred(Op.EQ, value)

    def __ne__(self, value: Any) -> BooleanExpression:  # type: ignore[override]
        """``column != value``: an unbound ``!=`` predicate (not a bool)."""
        return self._pred(Op.NOT_EQ, value)

    def __hash__(self) -> int:
        return hash(("col", self.name))

    def __bool__(self) -> bool:
        """Refused, as for expressions: ``if col("x"):`` or ``col("x") and ...`` is a mistake."""
        raise ValidationError(NO_TRUTH_VALUE)

    def isin(self, values: Iterable[Any]) -> BooleanExpression:
        """An ``in`` predicate: rows whose value is one of ``values``."""
        return self._pred(Op.IN, values)

    def notin(self, values: Iterable[Any]) -> BooleanExpression:
        """A ``not in`` predicate: rows whose value is none of ``values`` (alias ``not_in``)."""
        return self._pred(Op.NOT_IN, values)

    not_in = notin

    def is_null(self) -> BooleanExpression:
        """An ``is null`` predicate: rows where the column is null."""
        return self._pred(Op.IS_NULL)

    def not_null(self) -> BooleanExpression:
        """An ``is not null`` predicate: rows where the column is set (alias ``is_not_null``)."""
        return self._pred(Op.NOT_NULL)

    is_not_null = not_null

    def is_nan(self) -> BooleanExpression:
        """An ``is nan`` predicate: rows where the float or double column is NaN."""
        return self._pred(Op.IS_NAN)

    def not_nan(self) -> BooleanExpression:
        """An ``is not nan`` predicate: rows where the column is not NaN (alias ``is_not_nan``)."""
        return self._pred(Op.NOT_NAN)

    is_not_nan = not_nan

    def starts_with(self, prefix: str) -> BooleanExpression:
        """A ``starts with`` predicate: rows whose string starts with ``prefix``."""
        return self._pred(Op.STARTS_WITH, prefix)

    def not_starts_with(self, prefix: str) -> BooleanExpression:
        """A ``not starts with`` predicate: rows whose string does not start with ``prefix``."""
        return self._pred(Op.NOT_STARTS_WITH, prefix)

    def st_intersects(self, box: Any) -> BooleanExpression:
        """Rows whose geometry's bounding box intersects ``box`` (a
        :class:`~icefloe.geo.BoundingBox` or ``(xmin, ymin, xmax, ymax)``)."""
        return self._pred(Op.ST_INTERSECTS, box)

    def st_disjoint(self, box: Any) -> BooleanExpression:
        """The negation of :meth:`st_intersects` (true on null)."""
        return self._pred(Op.ST_DISJOINT, box)

    def __repr__(self) -> str:
        return f"col({self.name!r})"


def col(name: str) -> Column:
    """A column reference for the builder API."""
    return Column(name)


def st_intersects(column: str, box: Any) -> BooleanExpression:
    """``st_intersects(col, bbox)``: rows of geometry column ``column`` whose bounding box
    intersects ``box`` (closed ranges; Z and M only when both the value and ``box`` have them),
    the bounding-box predicate of DuckDB's ``&&``. Files whose bounds cannot intersect ``box``
    are skipped when planning."""
    return UnboundPredicate(Op.ST_INTERSECTS, column, box)


def st_disjoint(column: str, box: Any) -> BooleanExpression:
    """The negation of :func:`st_intersects`: also true for null and empty geometries."""
    return UnboundPredicate(Op.ST_DISJOINT, column, box)
