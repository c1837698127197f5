"""Filter evaluation for scan planning, column-wise in Rust over the manifest reader's Arrow data.

Three masks, one boolean per row, each with the spec's "may match" semantics where it applies:

- :func:`manifest_mask` prunes a manifest list: over the ``partitions`` field summaries of the
  manifests of one partition spec, given the filter already projected inclusively onto that
  spec (:func:`icefloe.expressions.projection.inclusive_projection`). Missing summaries may
  match.
- :func:`partition_mask` evaluates a projected partition filter exactly over a manifest's
  ``partition`` struct column (a null compared with anything is false; ``!=``, ``not in`` and
  ``not_starts_with`` of a null are true).
- :func:`metrics_mask` evaluates a table filter against the column metrics of each entry
  (value, null and NaN counts, lower and upper bounds), as the reference's inclusive metrics
  evaluator: a file is excluded only when its statistics prove no row can match. Bounds written
  before a type promotion (int under long, float under double, date under timestamp) are
  decoded by their stored length.

Filters are bound expressions (``Not`` is pushed down to the predicates first); they cross to
Rust in the compact JSON form of :func:`icefloe.expressions.serde.to_dict`.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from icefloe import _native
from icefloe.exceptions import ValidationError
from icefloe.expressions.base import BooleanExpression
from icefloe.expressions.serde import to_dict
from icefloe.types import StructType

__all__ = ["manifest_mask", "metrics_mask", "partition_mask"]


def _json(expr: BooleanExpression) -> str:
    return json.dumps(to_dict(expr))


def _array(column: Any, what: str) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not isinstance(column, pa.Array):
        raise ValidationError(f"{what} must be a pyarrow Array or ChunkedArray, got {column!r}")
    return column


def manifest_mask(
    summaries_column: pa.Array | pa.ChunkedArray,
    bound_partition_filter: BooleanExpression,
    partition_type: StructType,
) -> pa.BooleanArray:
    """Which manifests may hold a file matching ``bound_partition_filter``.

    ``summaries_column`` is the manifest list's ``partitions`` column (list of
    ``contains_null``/``contains_nan``/``lower_bound``/``upper_bound`` structs, one per field of
    ``partition_type``) for manifests written with one partition spec; the filter is bound to
    ``partition_type`` (term ids are partition field ids).
    """
    if not isinstance(partition_type, StructType):
        raise ValidationError(f"partition_type must be a StructType, got {partition_type!r}")
    ids = [f.field_id for f in partition_type.fields]
    arr = _array(summaries_column, "summaries_column")
    result: pa.BooleanArray = pa.array(
        _native.expr_manifest_mask(arr, _json(bound_partition_filter), ids)
    )
    return result


def partition_mask(
    partition_column: pa.Array | pa.ChunkedArray, bound_partition_filter: BooleanExpression
) -> pa.BooleanArray:
    """Which entries' partition tuples satisfy ``bound_partition_filter`` (bound to the
    partition type; children of ``partition_column`` are matched by field-id metadata, else by
    name)."""
    arr = _array(partition_column, "partition_column")
    result: pa.BooleanArray = pa.array(
        _native.expr_partition_mask(arr, _json(bound_partition_filter))
    )
    return result


def metrics_mask(
    batch: pa.RecordBatch | pa.Table, bound_filter: BooleanExpression
) -> pa.BooleanArray:
    """Which entries of a decoded manifest ``batch`` may hold a row matching ``bound_filter``
    (bound to the table schema), from ``record_count`` and the metrics maps; absent columns or
    map entries count as missing statistics, which never exclude a file."""
    if isinstance(batch, pa.Table):
        batch = (
            batch.combine_chunks().to_batches()[0]
            if batch.num_rows
            else pa.RecordBatch.from_pylist([], schema=batch.schema)
        )
    if not isinstance(batch, pa.RecordBatch):
        raise ValidationError(f"batch must be a pyarrow RecordBatch or Table, got {batch!r}")
    wanted = [
        n
        for n in (
            "record_count",
            "value_counts",
            "null_value_counts",
            "nan_value_counts",
            "lower_bounds",
            "upper_bounds",
        )
        if n in batch.schema.names
    ]
    entries = pa.StructArray.from_arrays(
        [batch.column(n) for n in wanted] or [pa.nulls(batch.num_rows, pa.int8())],
        names=wanted or ["_"],
    )
    result: pa.BooleanArray = pa.array(_native.expr_metrics_mask(entries, _json(bound_filter)))
    return result
