"""Row-group pruning by Parquet statistics for the residual filter.

Soundness is checked against an oracle that evaluates the filter on every row of each row
group (pyarrow compute): a row group holding a matching row is never skipped; and the rows read
with pruning equal the rows of the file filtered without it."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.arrow_schema import schema_to_arrow
from icefloe.expressions.arrow import to_arrow_expression
from icefloe.expressions.base import BooleanExpression
from icefloe.expressions.binding import bind
from icefloe.expressions.builder import col
from icefloe.read.rowgroups import RowGroupFilter
from icefloe.scan import DataFileRef, FileScanTask, ReadOptions
from icefloe.schema import Schema
from icefloe.types import (
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
)
from support.read_util import read, write_data

SCHEMA = Schema(
    NestedField(1, "k", IntegerType()),
    NestedField(2, "s", StringType()),
    NestedField(3, "x", DoubleType()),
)


def _kept(path: str, expr: BooleanExpression) -> list[bool]:
    pf = pq.ParquetFile(path)
    f = RowGroupFilter(pf.metadata, pf.schema_arrow, expr)
    return [f.might_match(i) for i in range(pf.metadata.num_row_groups)]


def _oracle(path: str, expr: BooleanExpression) -> list[bool]:
    pf = pq.ParquetFile(path)
    arrow_expr = to_arrow_expression(expr)
    out = []
    for i in range(pf.metadata.num_row_groups):
        out.append(pf.read_row_group(i).filter(arrow_expr).num_rows > 0)
    return out


def test_sorted_file_prunes_row_groups(tmp_path: Path) -> None:
    rows = [{"k": i, "s": f"s{i:04d}", "x": i / 2} for i in range(1000)]
    df = write_data(tmp_path / "d.parquet", SCHEMA, rows, row_group_size=100)
    cases: list[tuple[BooleanExpression, list[int]]] = [
        (col("k") >= 850, [8, 9]),
        (col("k") < 100, [0]),
        (col("k") == 555, [5]),
        (col("k").isin([5, 999]), [0, 9]),
        ((col("k") < 100) | (col("k") > 950), [0, 9]),
        (~(col("k") < 900), [9]),
        (col("s").starts_with("s03"), [3]),
        (col("x") > 449.0, [8, 9]),
        (col("k").is_null(), []),
        (col("k") != 5, list(range(10))),
    ]
    for expr, groups in cases:
        bound = bind(SCHEMA, expr)
        kept = _kept(df.file_path, bound)
        assert [i for i, k in enumerate(kept) if k] == groups, expr
        assert kept == [k or o for k, o in zip(kept, _oracle(df.file_path, bound), strict=True)]
        out = read(
            FileScanTask(df, residual=bound), ReadOptions(SCHEMA, metadata_columns=("_pos",))
        )
        full = pq.read_table(df.file_path)
        expected = full.filter(to_arrow_expression(bound)).column("k").to_pylist()
        assert out.column("k").to_pylist() == expected
        assert out.column("_pos").to_pylist() == expected  # k == position


def test_pruning_by_field_id_after_rename_and_promotion(tmp_path: Path) -> None:
    old = Schema(
        NestedField(1, "a", IntegerType()),
        NestedField(2, "d", DateType()),
        NestedField(3, "st", StructType(NestedField(4, "inner", IntegerType()))),
    )
    rows = [
        {"a": i, "d": dt.date(2024, 1, 1) + dt.timedelta(days=i), "st": {"inner": -i}}
        for i in range(300)
    ]
    df = write_data(tmp_path / "d.parquet", old, rows, row_group_size=100)
    new = Schema(
        NestedField(1, "renamed", LongType()),
        NestedField(2, "when", TimestampType()),
        NestedField(3, "st", StructType(NestedField(4, "inner", LongType()))),
    )
    exprs = [
        col("renamed") >= 250,
        col("when") < dt.datetime(2024, 2, 1).isoformat(),
        col("st.inner") > -50,
    ]
    for expr, groups in zip(exprs, [[2], [0], [0]], strict=True):
        bound = bind(new, expr)
        kept = _kept(df.file_path, bound)
        assert [i for i, k in enumerate(kept) if k] == groups, expr
        out = read(FileScanTask(df, residual=bound), ReadOptions(new, projected_field_ids=(1,)))
        assert out.num_rows == {0: 50, 1: 31, 2: 50}[exprs.index(expr)]


def test_missing_statistics_and_nan_bounds_keep_row_groups(tmp_path: Path) -> None:
    rows = [{"k": i, "s": None, "x": float("nan") if i % 2 else 1.0} for i in range(100)]
    path = tmp_path / "nostats.parquet"
    table = pa.Table.from_pylist(rows, schema=schema_to_arrow(SCHEMA))
    pq.write_table(table, str(path), row_group_size=50, write_statistics=False)
    assert _kept(str(path), bind(SCHEMA, col("k") > 1000)) == [True, True]
    df = write_data(tmp_path / "nan.parquet", SCHEMA, rows, row_group_size=50)
    assert _kept(df.file_path, bind(SCHEMA, col("x").is_nan())) == [True, True]
    # All-null column: predicates false on null prune, is_null keeps.
    assert _kept(df.file_path, bind(SCHEMA, col("s") == "a")) == [False, False]
    assert _kept(df.file_path, bind(SCHEMA, col("s").is_null())) == [True, True]
    assert _kept(df.file_path, bind(SCHEMA, col("s").not_null())) == [False, False]
    # A column the file lacks is never pruned on (its values are constants or defaults).
    wider = Schema(*SCHEMA.fields, NestedField(9, "new", IntegerType()))
    assert _kept(df.file_path, bind(wider, col("new") == 3)) == [True, True]


_values = st.one_of(st.none(), st.integers(-20, 20))
_strings = st.one_of(st.none(), st.sampled_from(["", "a", "ab", "abc", "b", "ba", "c"]))


@st.composite
def _predicates(draw: st.DrawFn) -> Any:
    which = draw(st.integers(0, 9))
    v = draw(st.integers(-25, 25))
    k, s = col("k"), col("s")
    simple = [
        k < v,
        k <= v,
        k > v,
        k >= v,
        k == v,
        k != v,
        k.isin(draw(st.lists(st.integers(-25, 25), min_size=1, max_size=3))),
        k.is_null(),
        s.starts_with(draw(st.sampled_from(["", "a", "ab", "b", "bb", "d"]))),
        s == draw(st.sampled_from(["a", "abc", "zz"])),
    ]
    expr = simple[which]
    if draw(st.booleans()):
        other = draw(st.sampled_from([k.not_null(), s.is_null(), k > 0, ~(k < -5)]))
        expr = (expr & other) if draw(st.booleans()) else (expr | other)
    if draw(st.booleans()):
        expr = ~expr
    return expr


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(_values, _strings), min_size=1, max_size=120),
    group=st.integers(1, 40),
    expr=_predicates(),
)
def test_pruning_never_drops_a_matching_row(
    rows: list[tuple[int | None, str | None]], group: int, expr: Any
) -> None:
    data = [{"k": k, "s": s, "x": 0.0} for k, s in rows]
    bound = bind(SCHEMA, expr)
    with tempfile.TemporaryDirectory() as d:
        df = write_data(Path(d) / "p.parquet", SCHEMA, data, row_group_size=group)
        kept = _kept(df.file_path, bound)
        oracle = _oracle(df.file_path, bound)
        assert all(k for k, o in zip(kept, oracle, strict=True) if o)
        out = read(FileScanTask(DataFileRef(df.file_path), residual=bound), ReadOptions(SCHEMA))
        expected = pq.read_table(df.file_path).filter(to_arrow_expression(bound))
    assert out.to_pylist() == expected.to_pylist()
