"""Residual evaluation: what remains of a filter for the rows of one partition.

For each predicate on a partitioned column the evaluator checks the partition value against the
predicate's strict projection (if every row of the partition matches, the predicate becomes
``AlwaysTrue``) and its inclusive projection (if no row can match, ``AlwaysFalse``); otherwise
the predicate stays and must be applied to the rows. ``And``/``Or`` then simplify, so a filter
fully decided by the partition leaves ``AlwaysTrue`` or ``AlwaysFalse``.
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
    Or,
)
from icefloe.expressions.binding import bind
from icefloe.expressions.evaluator import evaluate
from icefloe.expressions.projection import project_predicate
from icefloe.expressions.rewrite import rewrite_not

__all__ = ["ResidualEvaluator"]

_Checks = list[tuple[BooleanExpression | None, BooleanExpression | None]]


class ResidualEvaluator:
    """Computes per-partition residuals of ``expr`` for partition spec ``spec`` of ``schema``.

    ``residual_for(partition)`` takes the partition tuple (values in the spec's field order, in
    Iceberg's internal representation, ``None`` for null) and returns a bound expression.
    """

    def __init__(
        self, schema: Any, spec: Any, expr: BooleanExpression, case_sensitive: bool = True
    ) -> None:
        self.expr = rewrite_not(bind(schema, expr, case_sensitive))
        self.fields = tuple(spec.fields)
        partition_type = spec.partition_type(schema)
        self._checks: dict[BoundPredicate, _Checks] = {}
        self._collect(self.expr, partition_type)

    def _collect(self, e: BooleanExpression, partition_type: Any) -> None:
        if isinstance(e, And | Or):
            self._collect(e.left, partition_type)
            self._collect(e.right, partition_type)
            return
        if not isinstance(e, BoundPredicate) or e in self._checks:
            return
        checks: _Checks = []
        for f in self.fields:
            if f.source_id != e.ref.field_id or getattr(f, "source_ids", None):
                continue
            strict = project_predicate(f.transform, f.name, e, strict=True)
            inclusive = project_predicate(f.transform, f.name, e, strict=False)
            checks.append(
                (
                    None if strict is None else bind(partition_type, strict),
                    None if inclusive is None else bind(partition_type, inclusive),
                )
            )
        self._checks[e] = checks

    def residual_for(self, partition: Sequence[Any]) -> BooleanExpression:
        if len(partition) != len(self.fields):
            raise ValidationError(
                f"partition tuple has {len(partition)} values, the spec has {len(self.fields)}"
            )
        row = {f.field_id: v for f, v in zip(self.fields, partition, strict=True)}
        return self._visit(self.expr, row)

    def _visit(self, e: BooleanExpression, row: dict[int, Any]) -> BooleanExpression:
        if isinstance(e, And):
            return And(self._visit(e.left, row), self._visit(e.right, row))
        if isinstance(e, Or):
            return Or(self._visit(e.left, row), self._visit(e.right, row))
        if not isinstance(e, BoundPredicate):
            return e
        for strict, inclusive in self._checks[e]:
            if strict is not None and evaluate(strict, row):
                return AlwaysTrue()
            if inclusive is not None and not evaluate(inclusive, row):
                return AlwaysFalse()
        return e
