"""The rows a row-level change selects, evaluated in Rust while the filter's columns decode
(``_native.row_selection``): the same positions as Arrow's kernels (``selection_mask``, the
general path) and the reference row evaluator, on every type the native evaluator takes, with
nulls, NaN, signed zeros, long ``in`` lists and deleted rows; what it refuses falls back."""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe import _native
from icefloe.arrow_schema import schema_to_arrow
from icefloe.expressions import (
    And,
    BooleanExpression,
    Not,
    Op,
    Or,
    UnboundPredicate,
    bind,
)
from icefloe.expressions.arrow import selection_mask
from icefloe.expressions.base import BoundPredicate
from icefloe.expressions.evaluator import evaluate
from icefloe.expressions.serde import to_dict
from icefloe.io import FileIO
from icefloe.read import DeleteCache
from icefloe.scan import DataFileRef, FileScanTask
from icefloe.scan.filters import referenced_field_ids
from icefloe.schema import Schema
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimeType,
)
from icefloe.write.matching import native_matching_positions
from support.read_util import write_dv

SCHEMA = Schema(
    NestedField(1, "b", BooleanType()),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "l", LongType()),
    NestedField(4, "f", FloatType()),
    NestedField(5, "d", DoubleType()),
    NestedField(6, "dec", DecimalType(9, 2)),
    NestedField(7, "day", DateType()),
    NestedField(8, "t", TimeType()),
    NestedField(9, "ts", TimestampType()),
    NestedField(10, "tsn", TimestampNanoType()),
    NestedField(11, "s", StringType()),
    NestedField(12, "bin", BinaryType()),
)
EPOCH = dt.datetime(1970, 1, 1)

# physical values (ints for the temporal columns), None for null
DOMAINS: dict[str, list[Any]] = {
    "b": [True, False],
    "i": [-(2**31), -1, 0, 1, 7, 2**31 - 1],
    "l": [-(2**62), -1, 0, 1, 7, 2**62],
    "f": [math.nan, -0.0, 0.0, 1.5, -2.5, 3.25],
    "d": [math.nan, -0.0, 0.0, 1.5, -2.5, 1e300],
    "dec": [Decimal("-1.00"), Decimal("0.00"), Decimal("2.50"), Decimal("9999999.99")],
    "day": [-1, 0, 1, 19_000],
    "t": [0, 1, 3_600_000_000, 86_399_999_999],
    "ts": [-1, 0, 1, 1_700_000_000_000_000],
    "tsn": [-1, 0, 1, 1_700_000_000_000_000_001],
    "s": ["", "a", "ab", "b", "é", "\U0001f600"],
    "bin": [b"", b"a"],
}
NATIVE = [n for n in DOMAINS if n != "bin"]


def _literal(name: str, v: Any) -> Any:
    """A filter literal for physical value ``v`` of column ``name``."""
    if name == "day":
        return (EPOCH.date() + dt.timedelta(days=v)).isoformat()
    if name == "t":
        return (EPOCH + dt.timedelta(microseconds=v)).time().isoformat(timespec="microseconds")
    if name == "ts":
        return (EPOCH + dt.timedelta(microseconds=v)).isoformat(timespec="microseconds")
    if name == "tsn":
        seconds, nanos = divmod(v, 10**9)
        return f"{EPOCH + dt.timedelta(seconds=seconds):%Y-%m-%dT%H:%M:%S}.{nanos:09d}"
    return v


def _column(name: str, values: list[Any]) -> pa.Array:
    t = schema_to_arrow(SCHEMA).field(name).type
    if name in ("day", "t", "ts", "tsn"):
        storage = pa.int32() if name == "day" else pa.int64()
        return pa.array(values, storage).cast(t)
    return pa.array(values, t)


@st.composite
def predicates(draw: st.DrawFn, names: list[str]) -> BooleanExpression:
    name = draw(st.sampled_from(names))
    ops = [op for op in Op if not op.is_spatial]
    if name not in ("f", "d"):
        ops = [op for op in ops if op not in (Op.IS_NAN, Op.NOT_NAN)]
    if name != "s":
        ops = [op for op in ops if op not in (Op.STARTS_WITH, Op.NOT_STARTS_WITH)]
    op = draw(st.sampled_from(ops))
    if op.is_unary:
        return UnboundPredicate(op, name)
    plain = [v for v in DOMAINS[name] if not (isinstance(v, float) and math.isnan(v))]
    value = st.sampled_from(plain).map(lambda v: _literal(name, v))
    if op.is_set:
        extra: Any = st.just(None)
        if name in ("i", "l"):
            extra = st.integers(-(2**31), 2**31 - 1)
        elif name in ("f", "d"):
            extra = st.floats(-4, 4, width=32)
        some = st.one_of(value, extra).filter(lambda v: v is not None)
        return UnboundPredicate(op, name, draw(st.lists(some, max_size=12)))
    return UnboundPredicate(op, name, draw(value))


@st.composite
def trees(draw: st.DrawFn, names: list[str], depth: int = 2) -> BooleanExpression:
    if depth == 0 or draw(st.booleans()):
        return draw(predicates(names))
    kind = draw(st.sampled_from(["and", "or", "not"]))
    left = draw(trees(names, depth - 1))
    if kind == "not":
        return Not(left)
    right = draw(trees(names, depth - 1))
    return And(left, right) if kind == "and" else Or(left, right)


def _table(columns: dict[str, list[Any]]) -> pa.Table:
    return pa.table({n: _column(n, v) for n, v in columns.items()}, schema=schema_to_arrow(SCHEMA))


def _task(tmp: Path, table: pa.Table, gone: list[int]) -> FileScanTask:
    path = tmp / "data.parquet"
    # small row groups: selections span several batches
    pq.write_table(table, str(path), row_group_size=7)
    df = DataFileRef(str(path), "parquet", table.num_rows, path.stat().st_size)
    gone = sorted({g for g in gone if g < table.num_rows})
    return FileScanTask(df, (write_dv(tmp / "dv.bin", gone, df.file_path),) if gone else ())


def _native_filter(bound: BooleanExpression, names: list[str]) -> _native.RowSelection | None:
    fields = [SCHEMA.find_field(n) for n in names]
    arrow = schema_to_arrow(Schema(*fields))
    return _native.row_selection(json.dumps(to_dict(bound)), [f.field_id for f in fields], arrow)


def _rows(n: int) -> st.SearchStrategy[dict[str, list[Any]]]:
    return st.fixed_dictionaries(
        {
            name: st.lists(st.one_of(st.none(), st.sampled_from(d)), min_size=n, max_size=n)
            for name, d in DOMAINS.items()
        }
    )


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 30).flatmap(lambda n: st.tuples(_rows(n), st.lists(st.integers(0, 29)))),
    st.data(),
)
def test_native_selection_matches_arrow_and_the_row_evaluator(
    tmp_path_factory: pytest.TempPathFactory,
    rows: tuple[dict[str, list[Any]], list[int]],
    data: Any,
) -> None:
    columns, gone = rows
    expr = data.draw(trees(NATIVE))
    bound = bind(SCHEMA, expr)
    refs = sorted(set(referenced_field_ids(bound)))
    names = [SCHEMA.find_field(i).name for i in refs]
    table = _table(columns)
    # booleans have no native ordering: those trees take Arrow's path; every other one is native
    ordered_bool = _has_bool_ordering(bound)
    assert (_native_filter(bound, names) is None) == ordered_bool
    task = _task(tmp_path_factory.mktemp("sel"), table, gone)
    got = native_matching_positions(FileIO(), [task], SCHEMA, bound, cache=DeleteCache())[0]
    assert got is not None
    live = set(range(table.num_rows)) - set(gone)
    mask = selection_mask(bound, table).to_pylist()
    want = [p for p in range(table.num_rows) if mask[p] and p in live]
    assert got.to_pylist() == want
    # the reference evaluator takes physical values (days, microseconds, nanoseconds)
    ids = {n: SCHEMA.find_field(n).field_id for n in columns}
    by_id = {p: {ids[n]: v[p] for n, v in columns.items()} for p in live}
    assert want == [p for p in sorted(live) if evaluate(bound, by_id[p])]


def _has_bool_ordering(e: BooleanExpression) -> bool:
    todo = [e]
    while todo:
        x = todo.pop()
        if isinstance(x, And | Or):
            todo += [x.left, x.right]
        elif isinstance(x, Not):
            todo.append(x.child)
        elif (
            isinstance(x, BoundPredicate)
            and x.ref.path == ("b",)
            and x.op in (Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ)
        ):
            return True
    return False


def test_types_the_native_evaluator_refuses_fall_back(tmp_path: Path) -> None:
    table = _table({n: [d[i % len(d)] for i in range(10)] for n, d in DOMAINS.items()})
    bound = bind(SCHEMA, And(UnboundPredicate(Op.EQ, "bin", b"a"), UnboundPredicate(Op.GT, "i", 0)))
    assert _native_filter(bound, ["i", "bin"]) is None
    task = _task(tmp_path, table, [1])
    got = native_matching_positions(FileIO(), [task], SCHEMA, bound, cache=DeleteCache())[0]
    mask = selection_mask(bound, table).to_pylist()
    assert got is not None
    assert got.to_pylist() == [p for p in range(10) if mask[p] and p != 1]
    assert got.to_pylist(), "the example selects rows"
