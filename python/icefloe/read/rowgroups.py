"""Row-group pruning: skip Parquet row groups whose statistics prove the residual filter false.

The evaluation is inclusive ("rows might match"): a row group is skipped only when the column
statistics of its chunk (min, max, null count) show that no row can satisfy the filter. Anything
the statistics cannot decide (no statistics, NaN bounds, columns inside lists or maps, columns
the file lacks, ``!=``, ``not in``, NaN tests, ``st_disjoint``) keeps the row group;
``st_intersects`` prunes on the chunk's Parquet geospatial statistics (its X/Y box). Under
``Not`` a comparison is negated null-aware (``not (x < 5)`` also holds for a null ``x``, as in
the row filter). The residual filter is still applied to every row read, so pruning never
changes a result, only what is read.

Statistics are matched to the filter's columns by field id (so renamed columns are pruned too),
converted from the file's Arrow type to the table's (int->long, float->double, decimal widening,
date->timestamp) and compared with the literals in the table type. The loop is per row group and
per predicate (a file has few row groups), never per row.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.arrow_schema import field_id_of
from icefloe.expressions.arrow import PredicateCache, arrow_array, arrow_type, per_predicate
from icefloe.expressions.base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    Not,
    Op,
    Or,
)
from icefloe.schema import Schema
from icefloe.types import BinaryType, FixedType, PrimitiveType, StringType

__all__ = ["RowGroupFilter", "leaves_by_field_id"]

_UNKNOWN = object()
#: Arrow types whose statistics pyarrow already gives as the Python value of the type.
_PLAIN_STATS = frozenset(
    {pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.string(), pa.bool_()}
)
#: A predicate's literals as Python values, by predicate object.
#: A set predicate's literals as Python values, while the predicate lives (a filter of 200,000
#: values is megabytes: a bounded memo of such holding their predicates grew by gigabytes).
_LITERALS: PredicateCache = {}
_FALSE_ON_NULL = frozenset(
    {Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.IN, Op.STARTS_WITH, Op.ST_INTERSECTS}
)


def leaves_by_field_id(
    schema: pa.Schema, table: Schema | None = None
) -> dict[int, tuple[int, pa.DataType]]:
    """Field id -> (Parquet leaf column index, file Arrow type) of every leaf outside lists/maps
    (pass it to :class:`RowGroupFilter` for the files of one schema). With the ``table``
    schema, only leaves where readers find them: each enclosing struct carrying the id of the
    table's (a top-level column with the id of a nested field is never read)."""
    out: dict[int, tuple[int, pa.DataType]] = {}
    counter = [0]

    def placed(fid: int, path: tuple[int | None, ...]) -> bool:
        if table is None or fid not in table.field_ids:
            return True
        return path == tuple(a.field_id for a in table.ancestors(fid))

    def walk(f: pa.Field, repeated: bool, path: tuple[int | None, ...]) -> None:
        t = f.type
        if isinstance(t, pa.BaseExtensionType):
            t = t.storage_type
        if pa.types.is_struct(t):
            inner = (*path, field_id_of(f))
            for i in range(t.num_fields):
                walk(t.field(i), repeated, inner)
        elif pa.types.is_map(t):
            walk(t.key_field, True, path)
            walk(t.item_field, True, path)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            walk(t.value_field, True, path)
        else:
            fid = field_id_of(f)
            if fid is not None and not repeated and placed(fid, path):
                out[fid] = (counter[0], t)
            counter[0] += 1

    for f in schema:
        walk(f, False, ())
    return out


class RowGroupFilter:
    """Decides per row group whether ``residual`` might match, from the file's statistics.

    ``file_schema`` is the file's Arrow schema carrying field ids (after name mapping); it must
    list the columns in the file's order, as ``ParquetFile.schema_arrow`` does.
    """

    def __init__(
        self,
        metadata: pq.FileMetaData,
        file_schema: pa.Schema,
        residual: BooleanExpression,
        data_file: Any = None,
        leaves: dict[int, tuple[int, pa.DataType]] | None = None,
    ) -> None:
        self.metadata = metadata
        self.expr = residual
        self.leaves = leaves_by_field_id(file_schema) if leaves is None else leaves
        self.data_file = data_file
        self._trusted: bool | None = None

    @property
    def trivial(self) -> bool:
        """True when the filter keeps every row group (nothing to evaluate)."""
        return isinstance(self.expr, AlwaysTrue)

    def might_match(self, row_group: int) -> bool:
        """False only when the statistics of ``row_group`` prove that no row matches, and the
        footer's statistics agree with the manifest's metrics of the data file (see
        :mod:`icefloe.read.footer_trust`; without a ``data_file`` they are trusted)."""
        rg = self.metadata.row_group(row_group)
        return self._eval(self.expr, rg) or not self.statistics_trusted()

    def statistics_trusted(self) -> bool:
        """Whether the statistics of the filter's columns agree with the data file's metrics
        (checked once per file)."""
        if self._trusted is None:
            from icefloe.read.footer_trust import statistics_consistent

            columns: dict[int, tuple[int, pa.DataType, PrimitiveType]] = {}
            for pred in _predicates(self.expr):
                leaf = self.leaves.get(pred.ref.field_id)
                if leaf is not None and isinstance(pred.ref.field_type, PrimitiveType):
                    columns[pred.ref.field_id] = (leaf[0], leaf[1], pred.ref.field_type)
            self._trusted = self.data_file is None or statistics_consistent(
                self.metadata, columns, self.data_file, _converted
            )
        return self._trusted

    # ------------------------------------------------------------------ evaluation

    def _eval(self, expr: BooleanExpression, rg: Any, negated: bool = False) -> bool:
        """Might some row of ``rg`` satisfy ``expr`` (or, when ``negated``, fail it)?"""
        if isinstance(expr, AlwaysTrue):
            return not negated
        if isinstance(expr, AlwaysFalse):
            return negated
        if isinstance(expr, Not):
            return self._eval(expr.child, rg, not negated)
        if isinstance(expr, And):
            if negated:  # not (a and b) = not a or not b
                return self._eval(expr.left, rg, True) or self._eval(expr.right, rg, True)
            return self._eval(expr.left, rg) and self._eval(expr.right, rg)
        if isinstance(expr, Or):
            if negated:
                return self._eval(expr.left, rg, True) and self._eval(expr.right, rg, True)
            return self._eval(expr.left, rg) or self._eval(expr.right, rg)
        if isinstance(expr, BoundPredicate):
            try:
                if not negated:
                    return self._predicate(expr, rg)
                # A row fails a comparison also when its value is null: negating the operation
                # alone (Iceberg's rewrite) would lose those rows, which the row filter keeps.
                if expr.op in _FALSE_ON_NULL and self._nulls_possible(expr, rg):
                    return True
                negation = expr.negate()
                if not isinstance(negation, BoundPredicate):
                    return self._eval(negation, rg)
                return self._predicate(negation, rg)
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                return True  # statistics we cannot interpret never prune
        return True

    def _nulls_possible(self, pred: BoundPredicate, rg: Any) -> bool:
        leaf = self.leaves.get(pred.ref.field_id)
        if leaf is None:
            return True
        stats = rg.column(leaf[0]).statistics
        return stats is None or not stats.has_null_count or stats.null_count > 0

    def _predicate(self, pred: BoundPredicate, rg: Any) -> bool:
        leaf = self.leaves.get(pred.ref.field_id)
        t = pred.ref.field_type
        if leaf is None or not isinstance(t, PrimitiveType):
            return True
        index, file_type = leaf
        stats = rg.column(index).statistics
        if stats is None:
            return True
        rows = rg.num_rows
        nulls = stats.null_count if stats.has_null_count else None
        op = pred.op
        if op is Op.IS_NULL:
            return nulls is None or nulls > 0
        if op is Op.NOT_NULL:
            return nulls is None or nulls < rows
        if op in (Op.NOT_EQ, Op.NOT_IN, Op.NOT_STARTS_WITH, Op.IS_NAN, Op.NOT_NAN, Op.ST_DISJOINT):
            return True
        if op is Op.ST_INTERSECTS:
            if nulls is not None and nulls >= rows:
                return False
            return _box_might_intersect(rg.column(index), pred.literal)
        # The remaining predicates are false on null.
        if nulls is not None and nulls >= rows:
            return False
        if not stats.has_min_max:
            return True
        lo = self._stat(stats.min, file_type, t)
        hi = self._stat(stats.max, file_type, t)
        if lo is _UNKNOWN or hi is _UNKNOWN or _is_nan(lo) or _is_nan(hi):
            return True
        if op is Op.STARTS_WITH:
            return _prefix_might_match(pred.literal, lo, hi, t)
        values = self._literals(pred)
        if values is None:
            return True
        if op is Op.IN:
            return any(lo <= v <= hi for v in values)
        (v,) = values
        if _is_nan(v):
            return True
        if op is Op.LT:
            return bool(lo < v)
        if op is Op.LT_EQ:
            return bool(lo <= v)
        if op is Op.GT:
            return bool(hi > v)
        if op is Op.GT_EQ:
            return bool(hi >= v)
        return bool(lo <= v <= hi)  # Op.EQ

    @staticmethod
    def _literals(pred: BoundPredicate) -> list[Any] | None:
        """The predicate's literals as Python values of its Arrow type, converted once per
        predicate object (the files of a scan share their residual)."""

        def convert() -> list[Any] | None:
            raw = list(pred.literals) if pred.op.is_set else [pred.literal]
            try:
                values: list[Any] = arrow_array(raw, pred.ref.field_type).to_pylist()
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                return None
            return values

        out: list[Any] | None = per_predicate(_LITERALS, pred, convert)
        return out

    @staticmethod
    def _stat(value: Any, file_type: pa.DataType, t: PrimitiveType) -> Any:
        """A statistic converted from the file's Arrow type to the table type's Python value."""
        if value is None:
            return _UNKNOWN
        target = arrow_type(t)
        if file_type == target and file_type in _PLAIN_STATS:
            return value  # already the Python value the round trip below would give
        arr = pa.array([value], file_type)
        if arr.type != target:
            arr = arr.cast(target)
        return arr[0].as_py()


def _converted(value: Any, file_type: pa.DataType, t: PrimitiveType) -> Any:
    """A statistic as a value of the table type, or None when it cannot be converted."""
    try:
        out = RowGroupFilter._stat(value, file_type, t)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    return None if out is _UNKNOWN else out


def _predicates(expr: BooleanExpression) -> list[BoundPredicate]:
    """The bound predicates of ``expr`` (iteratively: filters may be deep)."""
    out: list[BoundPredicate] = []
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, BoundPredicate):
            out.append(e)
        elif isinstance(e, Not):
            stack.append(e.child)
        elif isinstance(e, And | Or):
            stack.extend((e.left, e.right))
    return out


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def _prefix_might_match(prefix: Any, lo: Any, hi: Any, t: PrimitiveType) -> bool:
    if not isinstance(t, (StringType, BinaryType, FixedType)):
        return True
    if isinstance(prefix, str) and isinstance(lo, str) and isinstance(hi, str):
        p: Any = prefix
    elif isinstance(prefix, bytes) and isinstance(lo, bytes) and isinstance(hi, bytes):
        p = prefix
    else:
        return True
    # Every value with the prefix lies in [prefix, prefix + max suffix]: compare truncated bounds.
    return bool(lo[: len(p)] <= p <= hi[: len(p)])


def _box_might_intersect(chunk: Any, box: Any) -> bool:
    """Whether a column chunk's geospatial statistics (X/Y box) may intersect ``box``."""
    geo = getattr(chunk, "geo_statistics", None)
    if geo is None:
        return True
    xmin, xmax, ymin, ymax = geo.xmin, geo.xmax, geo.ymin, geo.ymax
    if any(v is None or v != v for v in (xmin, xmax, ymin, ymax)):
        return True
    return bool(xmin <= box.xmax and xmax >= box.xmin and ymin <= box.ymax and ymax >= box.ymin)
