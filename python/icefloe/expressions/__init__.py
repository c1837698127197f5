"""Iceberg filter expressions: build, parse, bind, project, evaluate and serialise.

- :mod:`~icefloe.expressions.base`: the tree (``And``, ``Or``, ``Not``, ``AlwaysTrue``,
  ``AlwaysFalse``, ``UnboundPredicate``, ``BoundPredicate``) and :func:`rewrite_not`.
- :mod:`~icefloe.expressions.builder`: ``col("id") > 5``, ``st_intersects("geom", box)``.
- :mod:`~icefloe.expressions.parser`: ``parse("id > 5 and name like 'abc%'")``.
- :mod:`~icefloe.expressions.binding` / :mod:`~icefloe.expressions.literals`: :func:`bind`.
- :mod:`~icefloe.expressions.projection`: inclusive and strict projection through transforms.
- :mod:`~icefloe.expressions.residual`: per-partition residual filters.
- :mod:`~icefloe.expressions.evaluator` and :mod:`~icefloe.expressions.arrow`: evaluation on one
  row and vectorised over Arrow.
- :mod:`~icefloe.expressions.serde`: the compact JSON form the Rust core reads.
"""

from __future__ import annotations

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
from icefloe.expressions.binding import bind
from icefloe.expressions.builder import Column, col, st_disjoint, st_intersects
from icefloe.expressions.parser import parse
from icefloe.expressions.rewrite import rewrite_not
from icefloe.geo import BoundingBox

__all__ = [
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BooleanExpression",
    "BoundPredicate",
    "BoundReference",
    "BoundingBox",
    "Column",
    "Not",
    "Op",
    "Or",
    "UnboundPredicate",
    "bind",
    "col",
    "parse",
    "rewrite_not",
    "st_disjoint",
    "st_intersects",
]
