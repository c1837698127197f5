"""Bound expressions as ``pyarrow.compute.Expression``, for vectorised row filtering.

``to_arrow_expression(bound)`` references columns by their struct path (``pc.field("a", "b")``
for ``a.b``), so it applies to a table read with the schema's names. It selects the rows the
reference's two-valued logic selects (see :mod:`icefloe.expressions.evaluator`): comparisons,
``in`` and ``starts_with`` are false on null, their negations true; NaN follows IEEE 754
(ordering comparisons false, ``!=`` true); ``not_nan`` of null is true.

Use the result as a filter (``table.filter(expr)``): it may be null for a row it does not select.
Outside ``Not`` a null acts as false through ``and``/``or`` (Kleene logic is monotone), so only
the negated predicates need a null check there; under ``Not`` every predicate of an optional
column is made null-free, so the negation is exact. Required columns need no checks.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe import _native
from icefloe.arrow_schema import type_to_arrow
from icefloe.exceptions import ValidationError
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
from icefloe.expressions.rewrite import balance
from icefloe.geo import intersects_mask
from icefloe.types import (
    DoubleType,
    FloatType,
    GeographyType,
    GeometryType,
    IcebergType,
    PrimitiveType,
    UnknownType,
    UUIDType,
    VariantType,
)

__all__ = [
    "PredicateCache",
    "arrow_type",
    "arrow_value",
    "filter_mask",
    "per_predicate",
    "selection",
    "selection_mask",
    "to_arrow_expression",
]


def arrow_type(t: IcebergType) -> pa.DataType:
    """The Arrow type a literal of Iceberg type ``t`` is held in (uuid as fixed_size_binary(16))."""
    if not isinstance(t, PrimitiveType) or isinstance(
        t, UnknownType | VariantType | GeometryType | GeographyType
    ):
        raise ValidationError(f"no Arrow literal type for Iceberg type {t}")
    return type_to_arrow(t, uuid_extension=False)


def arrow_value(value: Any, t: IcebergType) -> Any:
    """An internal-representation value as Python input for ``pa.array(..., arrow_type(t))``."""
    if isinstance(value, uuid.UUID):
        return value.bytes
    return value


def arrow_array(values: list[Any], t: IcebergType) -> pa.Array:
    """Internal-representation values as an Arrow array of ``arrow_type(t)``."""
    at = arrow_type(t)
    conv = [arrow_value(v, t) for v in values]
    if pa.types.is_date32(at) or pa.types.is_time64(at) or pa.types.is_timestamp(at):
        storage = pa.int32() if pa.types.is_date32(at) else pa.int64()
        return pa.array(conv, type=storage).cast(at)
    return pa.array(conv, type=at)


def _scalar(value: Any, t: IcebergType) -> pa.Scalar:
    return arrow_array([value], t)[0]


#: Column names under which :func:`filter_mask` holds evaluated spatial predicates.
_SPATIAL = dict[BoundPredicate, str]


class _Eager:
    """An Arrow array standing where :func:`_predicate` puts ``pc.field``: each operator of
    ``pc.Expression`` it applies runs the same compute kernel at once (``&``/``|`` are Kleene
    in both), so one predicate tree serves as an expression and as an evaluation."""

    __slots__ = ("a",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, a: Any) -> None:
        self.a = a

    @staticmethod
    def _raw(v: Any) -> Any:
        return v.a if isinstance(v, _Eager) else v

    def __lt__(self, v: Any) -> _Eager:
        return _Eager(pc.less(self.a, v))

    def __le__(self, v: Any) -> _Eager:
        return _Eager(pc.less_equal(self.a, v))

    def __gt__(self, v: Any) -> _Eager:
        return _Eager(pc.greater(self.a, v))

    def __ge__(self, v: Any) -> _Eager:
        return _Eager(pc.greater_equal(self.a, v))

    def __eq__(self, v: Any) -> _Eager:  # type: ignore[override]
        return _Eager(pc.equal(self.a, v))

    def __ne__(self, v: Any) -> _Eager:  # type: ignore[override]
        return _Eager(pc.not_equal(self.a, v))

    def __and__(self, o: Any) -> _Eager:
        return _Eager(pc.and_kleene(self.a, self._raw(o)))

    def __or__(self, o: Any) -> _Eager:
        return _Eager(pc.or_kleene(self.a, self._raw(o)))

    def __invert__(self) -> _Eager:
        return _Eager(pc.invert(self.a))

    def is_null(self) -> _Eager:
        return _Eager(pc.is_null(self.a))

    def is_valid(self) -> _Eager:
        return _Eager(pc.is_valid(self.a))

    def is_nan(self) -> _Eager:
        return _Eager(pc.is_nan(self.a))


class _Fields:
    """Column references and constants as ``pc.Expression`` (:class:`_EagerFields` evaluates
    them over data)."""

    def ref(self, path: tuple[str, ...]) -> Any:
        return pc.field(*path)

    def const(self, value: bool) -> Any:
        return pc.scalar(value)

    @staticmethod
    def call(fn: Callable[..., Any], f: Any, **options: Any) -> Any:
        if isinstance(f, _Eager):
            return _Eager(fn(f.a, **options))
        return fn(f, **options)


class _EagerFields(_Fields):
    def __init__(self, data: pa.Table | pa.RecordBatch) -> None:
        self.data = data

    def ref(self, path: tuple[str, ...]) -> Any:
        col = self.data.column(path[0])
        for step in path[1:]:
            col = pc.struct_field(col, step)
        return _Eager(col)

    def const(self, value: bool) -> Any:
        return _Eager(pa.repeat(value, self.data.num_rows))


_EXPRESSION = _Fields()


def _predicate(
    pred: BoundPredicate, under_not: bool, spatial: _SPATIAL | None, fields: _Fields = _EXPRESSION
) -> Any:
    if pred.op.is_spatial:
        if spatial is None or pred not in spatial:
            raise ValidationError(
                f"{pred} cannot be an Arrow expression (it reads WKB): filter with filter_mask"
            )
        return fields.ref((spatial[pred],))  # null-free: exact under `not` too
    f = fields.ref(pred.ref.path)
    t = pred.ref.field_type
    if isinstance(t, UUIDType):
        # read as the arrow.uuid extension type, compared as the 16 bytes literals are held in
        f = fields.call(_uuid_bytes, f)
    op = pred.op
    nullable = not pred.ref.required
    if op is Op.IS_NULL:
        return f.is_null()
    if op is Op.NOT_NULL:
        return f.is_valid()
    if op is Op.IS_NAN or op is Op.NOT_NAN:
        nan = f.is_nan()
        if op is Op.IS_NAN:
            return (nan & f.is_valid()) if nullable and under_not else nan
        return (~nan | f.is_null()) if nullable else ~nan
    if op.is_set:
        # is_in gives false (not null) for a null input, so neither form needs a null check;
        # nor does the Rust probe of a large set (a null is in no set of literals)
        probe = _key_set(pred) if isinstance(f, _Eager) else None
        if probe is not None and f.a.type == probe[1]:
            hit = _Eager(_probe(probe[0], f.a))
        else:
            hit = fields.call(pc.is_in, f, value_set=_value_set(pred), skip_nulls=False)
        return hit if op is Op.IN else ~hit
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        hit = fields.call(pc.starts_with, f, pattern=pred.literal)
    else:
        hit = _COMPARE[op](f, _scalar(pred.literal, t))
    if op in (Op.NOT_EQ, Op.NOT_STARTS_WITH):
        if op is Op.NOT_STARTS_WITH:
            hit = ~hit
        return (hit | f.is_null()) if nullable else hit
    return (hit & f.is_valid()) if nullable and under_not else hit


_COMPARE: dict[Op, Callable[[pc.Expression, pa.Scalar], pc.Expression]] = {
    Op.LT: lambda f, v: f < v,
    Op.LT_EQ: lambda f, v: f <= v,
    Op.GT: lambda f, v: f > v,
    Op.GT_EQ: lambda f, v: f >= v,
    Op.EQ: lambda f, v: f == v,
    Op.NOT_EQ: lambda f, v: f != v,
}


def _value_set(pred: BoundPredicate) -> pa.Array:
    """The literals of set predicate ``pred`` as an Arrow array, made once per predicate: a
    read evaluates the predicate on every batch of every file, and a
    50,000-value set took 18 ms to sort and convert."""

    def build() -> pa.Array:
        t = pred.ref.field_type
        literals = list(pred.literals)
        if isinstance(t, FloatType | DoubleType) and any(v == 0.0 for v in literals):
            # is_in hashes float bits, so 0.0 and -0.0 differ there; `=` compares as IEEE 754
            # (0.0 == -0.0). Listing both zeros makes `in` agree with a chain of `=`.
            literals = [v for v in literals if v != 0.0] + [0.0, -0.0]
        return arrow_array(sorted(literals, key=_sort_key), t)

    out: pa.Array = per_predicate(_VALUE_SETS, pred, build)
    return out


PredicateCache = dict[int, tuple["weakref.ref[BoundPredicate]", Any]]
#: Set predicate (by identity, while it lives) -> what is derived from it (not kept on the
#: predicate, which is pickled into Spark tasks): its value set, its Rust key set.
_VALUE_SETS: PredicateCache = {}
_KEY_SETS: PredicateCache = {}


def per_predicate(cache: PredicateCache, pred: BoundPredicate, build: Callable[[], Any]) -> Any:
    """``build()`` for ``pred``, made once while ``pred`` lives."""
    key = id(pred)
    hit = cache.get(key)
    if hit is not None and hit[0]() is pred:
        return hit[1]
    out = build()
    cache[key] = (weakref.ref(pred, lambda _: cache.pop(key, None)), out)
    return out


#: Set predicates of at least this many literals are evaluated over data by a hash set built
#: once in Rust: ``pc.is_in`` hashes its value set again on every call, about 1 ms a batch
#: for 50,000 values.
PROBED_SET_SIZE = 1024


def _key_set(pred: BoundPredicate) -> tuple[_native.EqualityDeleteSet, pa.DataType] | None:
    """A Rust hash set of the literals of set predicate ``pred`` (null equals nothing, float
    keys by their bits as ``is_in`` hashes them) and their Arrow type, made once per predicate;
    None for a set smaller than :data:`PROBED_SET_SIZE`."""
    if len(pred.literals) < PROBED_SET_SIZE:
        return None

    def build() -> tuple[_native.EqualityDeleteSet, pa.DataType]:
        values = _value_set(pred)
        keys = _native.EqualityDeleteSet()
        keys.add_batch(pa.record_batch([values], names=["v"]))
        return keys, values.type

    out: tuple[_native.EqualityDeleteSet, pa.DataType] = per_predicate(_KEY_SETS, pred, build)
    return out


def _probe(keys: _native.EqualityDeleteSet, data: pa.Array | pa.ChunkedArray) -> pa.Array:
    """True where a value of ``data`` is in ``keys``, false elsewhere (nulls included)."""
    chunks = data.chunks if isinstance(data, pa.ChunkedArray) else [data]
    masks = [keys.keep_mask(pa.record_batch([c], names=["v"])) for c in chunks]
    keep = pa.concat_arrays(masks) if masks else pa.array([], pa.bool_())
    return pc.invert(keep)


def _uuid_bytes(f: Any) -> Any:
    """A uuid column (expression or array, extension-typed or not) as fixed_size_binary(16)."""
    return f.cast(pa.binary(16))


def _sort_key(v: Any) -> Any:
    return v.bytes if isinstance(v, uuid.UUID) else v


def to_arrow_expression(expr: BooleanExpression) -> pc.Expression:
    """A ``pyarrow.compute.Expression`` selecting the rows that satisfy bound ``expr``."""
    return _convert(expr, under_not=False, spatial=None)


def _spatial_columns(expr: BooleanExpression, table: pa.Table) -> tuple[pa.Table, _SPATIAL]:
    """``table`` with one boolean column per distinct spatial predicate of ``expr`` (its
    two-valued result, computed in Rust), and the column name of each predicate."""
    names: _SPATIAL = {}
    todo = [expr]
    while todo:
        e = todo.pop()
        if isinstance(e, And | Or):
            todo += [e.left, e.right]
        elif isinstance(e, Not):
            todo.append(e.child)
        elif isinstance(e, BoundPredicate) and e.op.is_spatial and e not in names:
            col = table.column(e.ref.path[0])
            for step in e.ref.path[1:]:
                col = pc.struct_field(col, step)
            hit = intersects_mask(col, e.literal)
            if e.op is Op.ST_DISJOINT:
                hit = pc.fill_null(pc.invert(hit), True)
            else:
                hit = pc.fill_null(hit, False)
            names[e] = f"__icefloe_spatial_{len(names)}"
            table = table.append_column(names[e], hit)
    return table, names


#: Predicates per Arrow expression in :func:`filter_mask`: Arrow's expression simplification
#: recurses once per operand of an ``and``/``or`` chain it flattens, so one expression of
#: 10,000 terms overflows a thread's stack.
_CHUNK = 128


def filter_mask(expr: BooleanExpression, data: pa.Table | pa.RecordBatch) -> pa.Array:
    """Bound ``expr`` over ``data`` as a boolean array, null where Kleene logic leaves a row
    undecided (a row it does not select, like :func:`to_arrow_expression` as a filter).

    Evaluated with Arrow's compute kernels, the ones :func:`to_arrow_expression` calls. What
    they refuse is evaluated as that expression by a dataset scan (which raises the error if
    it refuses too), wide expressions in parts of at most 128 predicates combined with
    ``and_kleene`` / ``or_kleene``, so any number of terms works."""
    table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
    table, spatial = _spatial_columns(expr, table)
    balanced = balance(expr)
    # Evaluated kernel by kernel: a dataset scan of the batch costs about 0.4 ms however small
    # the batch. Anything the kernels refuse goes through the scan, which raises the error.
    try:
        out = _convert(balanced, False, spatial, _EagerFields(table)).a
    except (pa.ArrowException, KeyError):
        out = None
    if isinstance(out, pa.ChunkedArray):
        out = out.combine_chunks()
    if isinstance(out, pa.Array) and out.type == pa.bool_() and len(out) == table.num_rows:
        return out
    sizes: dict[int, int] = {}

    def size(e: BooleanExpression) -> int:
        n = sizes.get(id(e))
        if n is None:
            if isinstance(e, And | Or):
                n = size(e.left) + size(e.right)
            elif isinstance(e, Not):
                n = size(e.child)
            else:
                n = 1
            sizes[id(e)] = n
        return n

    # imported on first use: pyarrow.dataset imports pandas, a cost every process that only
    # plans (Spark's planner workers) would pay
    import pyarrow.dataset as ds

    def evaluate(e: BooleanExpression, under_not: bool) -> pa.Array:
        if size(e) <= _CHUNK:
            out = ds.dataset(table).to_table(columns={"m": _convert(e, under_not, spatial)})
            return out.column("m").combine_chunks()
        if isinstance(e, And):
            return pc.and_kleene(evaluate(e.left, under_not), evaluate(e.right, under_not))
        if isinstance(e, Or):
            return pc.or_kleene(evaluate(e.left, under_not), evaluate(e.right, under_not))
        assert isinstance(e, Not)
        return pc.invert(evaluate(e.child, True))

    return evaluate(balanced, False)


def selection(mask: pa.Array) -> pa.BooleanArray:
    """``mask`` as a selection: null rows false, and no validity buffer. Arrow's filter kernels
    take a slower path (three times slower on a 10% selection) for a mask that has a validity
    buffer, even one with no nulls, which is what ``fill_null`` and most kernels return."""
    if mask.null_count:
        mask = pc.fill_null(mask, False)
    validity, values = mask.buffers()
    if validity is None:
        return mask
    return pa.Array.from_buffers(pa.bool_(), len(mask), [None, values], 0, mask.offset)


def selection_mask(expr: BooleanExpression, data: pa.Table | pa.RecordBatch) -> pa.BooleanArray:
    """The rows of ``data`` that bound ``expr`` selects, as a :func:`selection`."""
    return selection(filter_mask(expr, data))


def _convert(
    expr: BooleanExpression,
    under_not: bool,
    spatial: _SPATIAL | None,
    fields: _Fields = _EXPRESSION,
) -> Any:
    """``expr`` as a ``pc.Expression`` (or, with :class:`_EagerFields`, evaluated)."""
    if expr is AlwaysTrue():
        return fields.const(True)
    if expr is AlwaysFalse():
        return fields.const(False)
    if isinstance(expr, And):
        left = _convert(expr.left, under_not, spatial, fields)
        return left & _convert(expr.right, under_not, spatial, fields)
    if isinstance(expr, Or):
        left = _convert(expr.left, under_not, spatial, fields)
        return left | _convert(expr.right, under_not, spatial, fields)
    if isinstance(expr, Not):
        return ~_convert(expr.child, True, spatial, fields)
    if isinstance(expr, BoundPredicate):
        return _predicate(expr, under_not, spatial, fields)
    raise ValidationError(f"only bound expressions convert to Arrow, got {expr!r}")
