"""Scan filters per partition spec: the filter projected onto a spec's partition tuples (for
manifest summaries and partition values), and the per-predicate strict and inclusive checks that
give each planned file its residual."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from icefloe import _native
from icefloe.exceptions import IcebergError
from icefloe.expressions.base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    Not,
    Or,
)
from icefloe.expressions.binding import bind
from icefloe.expressions.projection import project, project_predicate
from icefloe.expressions.serde import to_dict
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema
from icefloe.types import StructType

__all__ = ["SpecFilters", "bool_numpy", "expr_json", "referenced_field_ids"]


def expr_json(expr: BooleanExpression) -> str:
    return json.dumps(to_dict(expr))


def _bool_mask(arr: Any) -> pa.BooleanArray:
    return arr if isinstance(arr, pa.BooleanArray) else pa.array(arr)


def _predicates(expr: BooleanExpression, out: list[BoundPredicate]) -> None:
    """Appends the distinct predicates of ``expr`` in order (linear: wide filters have
    thousands)."""
    seen = set(out)
    todo = [expr]
    while todo:
        e = todo.pop()
        if isinstance(e, And | Or):
            todo.append(e.right)
            todo.append(e.left)
        elif isinstance(e, BoundPredicate) and e not in seen:
            seen.add(e)
            out.append(e)


class SpecFilters:
    """The filter's forms for one partition spec: the inclusive partition projection (for
    manifest summaries and partition tuples) and the per-predicate strict/inclusive checks that
    give each file's residual."""

    def __init__(self, schema: Schema, spec: PartitionSpec, bound_filter: BooleanExpression):
        self.spec = spec
        self.bound_filter = bound_filter
        self.partition_type: StructType | None
        try:
            self.partition_type = spec.partition_type(schema)
        except IcebergError:
            # a source column of this (old) spec is gone from the schema: no partition pruning
            self.partition_type = None
        self.field_ids = [f.field_id for f in spec.fields]
        self.partition_filter: BooleanExpression = AlwaysTrue()
        self.partition_json: str | None = None
        self._checks: list[list[tuple[str | None, str | None]]] = []
        self._preds: list[BoundPredicate] = []
        if self.partition_type is None or not spec.fields:
            return
        projected = project(bound_filter, spec, strict=False)
        self.partition_filter = bind(self.partition_type, projected, case_sensitive=True)
        if not isinstance(self.partition_filter, AlwaysTrue):
            self.partition_json = expr_json(self.partition_filter)
        preds: list[BoundPredicate] = []
        _predicates(bound_filter, preds)
        for p in preds:
            checks: list[tuple[str | None, str | None]] = []
            for f in spec.fields:
                if f.source_id != p.ref.field_id or getattr(f, "source_ids", None):
                    continue
                strict = project_predicate(f.transform, f.name, p, strict=True)
                incl = project_predicate(f.transform, f.name, p, strict=False)
                checks.append(
                    (
                        None
                        if strict is None
                        else expr_json(bind(self.partition_type, strict, case_sensitive=True)),
                        None
                        if incl is None
                        else expr_json(bind(self.partition_type, incl, case_sensitive=True)),
                    )
                )
            if checks:
                self._preds.append(p)
                self._checks.append(checks)

    @property
    def prunes(self) -> bool:
        """Whether the partition filter can exclude anything."""
        return self.partition_json is not None

    def manifest_mask(self, summaries: pa.Array) -> pa.BooleanArray:
        """Which manifests (their ``partitions`` summaries) may hold a matching file."""
        assert self.partition_json is not None
        return _bool_mask(
            _native.expr_manifest_mask(summaries, self.partition_json, self.field_ids)
        )

    def partition_mask(self, partition: pa.Array) -> pa.BooleanArray:
        """Which partition tuples satisfy the projected filter."""
        assert self.partition_json is not None
        return _bool_mask(_native.expr_partition_mask(partition, self.partition_json))

    def residuals(
        self, partition: pa.Array, cache: dict[tuple[int, ...], BooleanExpression]
    ) -> tuple[np.ndarray, list[BooleanExpression]]:
        """Per row, an index into the returned residual expressions (shared across rows with
        the same outcome of every predicate's strict and inclusive projections)."""
        n = len(partition)
        if not self._preds or n == 0:
            return np.zeros(n, dtype=np.int32), [self.bound_filter]
        # state per predicate: 0 keep, 1 decided true, 2 decided false
        states = np.zeros((n, len(self._preds)), dtype=np.int8)
        for i, checks in enumerate(self._checks):
            undecided = np.ones(n, dtype=bool)
            for strict, incl in checks:
                if strict is not None:
                    m = bool_numpy(_native.expr_partition_mask(partition, strict)) & undecided
                    states[m, i] = 1
                    undecided &= ~m
                if incl is not None:
                    m = ~bool_numpy(_native.expr_partition_mask(partition, incl)) & undecided
                    states[m, i] = 2
                    undecided &= ~m
        uniq, inverse = np.unique(states, axis=0, return_inverse=True)
        exprs = []
        for row in uniq:
            key = tuple(int(x) for x in row)
            e = cache.get(key)
            if e is None:
                subst = {
                    p: (AlwaysTrue() if s == 1 else AlwaysFalse())
                    for p, s in zip(self._preds, key, strict=True)
                    if s
                }
                e = _substitute(self.bound_filter, subst)
                cache[key] = e
            exprs.append(e)
        return inverse.reshape(-1).astype(np.int32), exprs


def referenced_field_ids(expr: BooleanExpression) -> list[int]:
    """The sorted field ids the predicates of a bound filter reference, under ``not`` too."""
    ids: set[int] = set()
    todo = [expr]
    while todo:
        e = todo.pop()
        if isinstance(e, And | Or):
            todo += (e.left, e.right)
        elif isinstance(e, Not):
            todo.append(e.child)
        elif isinstance(e, BoundPredicate):
            ids.add(e.ref.field_id)
    return sorted(ids)


def bool_numpy(arr: Any) -> np.ndarray:
    a = _bool_mask(arr)
    out: np.ndarray = a.to_numpy(zero_copy_only=False)
    return out


def _substitute(
    e: BooleanExpression, subst: Mapping[BoundPredicate, BooleanExpression]
) -> BooleanExpression:
    if isinstance(e, And):
        return And(_substitute(e.left, subst), _substitute(e.right, subst))
    if isinstance(e, Or):
        return Or(_substitute(e.left, subst), _substitute(e.right, subst))
    if isinstance(e, BoundPredicate):
        return subst.get(e, e)
    return e
