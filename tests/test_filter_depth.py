"""Wide and deep filters: 10,000-term chains and sets work end to end (parse, bind, the Rust
planner's JSON, metrics and partition evaluation, residuals, row-level deletes); deep nesting
never raises a bare ``RecursionError``."""

from __future__ import annotations

import copy
import functools
import operator
import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.exceptions import ValidationError
from icefloe.expressions import col, parse
from icefloe.expressions.base import (
    And,
    BooleanExpression,
    Not,
    Or,
)
from icefloe.expressions.rewrite import MAX_DEPTH, balance
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField
from support.write_util import catalog

N = 10_000
SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "g", LongType()))
SPEC = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "g"))


def _ids(t: Any, row_filter: str | BooleanExpression) -> list[int]:
    return sorted(t.scan(row_filter=row_filter).to_arrow()["id"].to_pylist())


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """3,000 rows in 3 partitions, one file each, with a merge-on-read delete (a DV)."""
    root: Path = tmp_path_factory.mktemp("wide")
    t = catalog(root).create_table(
        "ns.t",
        SCHEMA,
        partition_spec=SPEC,
        properties={"format-version": "3", "write.delete.mode": "merge-on-read"},
    )
    ids = pa.array(range(3000), pa.int64())
    t.append(pa.table({"id": ids, "g": pa.array([i // 1000 for i in range(3000)], pa.int64())}))
    t.delete("id = 7")
    return t


def test_ten_thousand_or_terms(table: Any) -> None:
    text = " or ".join(f"id = {i * 3}" for i in range(N))
    assert _ids(table, text) == [i * 3 for i in range(1000) if i * 3 != 7 and i * 3 < 3000]


def test_ten_thousand_and_terms(table: Any) -> None:
    text = " and ".join(f"id != {i}" for i in range(5, N + 5))
    assert _ids(table, text) == [0, 1, 2, 3, 4]


def test_ten_thousand_values_in_and_not_in(table: Any) -> None:
    values = ", ".join(str(i * 2) for i in range(N))
    assert _ids(table, f"id in ({values})") == list(range(0, 3000, 2))
    odd = [i for i in range(1, 3000, 2) if i != 7]
    assert _ids(table, f"id not in ({values})") == odd


def test_a_left_deep_chain_built_in_a_loop(table: Any) -> None:
    expr: BooleanExpression = col("id") == 0
    for i in range(1, N):
        expr = expr | (col("id") == i)
    assert _ids(table, expr) == [i for i in range(3000) if i != 7]


@pytest.mark.parametrize("op", [operator.or_, operator.and_])
def test_a_chain_built_in_a_loop_prints_hashes_pickles_and_copies(table: Any, op: Any) -> None:
    """A 10,000-term chain built with ``|`` or ``&`` in a loop scanned fine, but ``str()``,
    ``repr()``, ``hash()``, pickling, ``copy.deepcopy`` and ``repr()`` of a scan with it
    raised RecursionError."""
    terms = [col("id") == i for i in range(N)]
    built = functools.reduce(op, terms)
    word = " or " if op is operator.or_ else " and "
    assert str(built) == word.join(f"id = {i}" for i in range(N))
    name = "Or(" if op is operator.or_ else "And("
    assert repr(built) == name * (N - 1) + repr(terms[0]) + "".join(f", {t!r})" for t in terms[1:])
    again = functools.reduce(op, [col("id") == i for i in range(N)])
    assert hash(built) == hash(again) and built == again
    assert built != functools.reduce(op, [col("id") == i for i in range(1, N + 1)])
    for copied in (pickle.loads(pickle.dumps(built)), copy.deepcopy(built), copy.copy(built)):
        assert copied == built and hash(copied) == hash(built)
        assert isinstance(copied, type(built)) and str(copied) == str(built)
    assert pickle.loads(pickle.dumps(~built)) == ~built
    assert str(built.negate()).startswith("id != 0")
    assert str(table.scan(row_filter=built)).startswith("TableScan(filter='id = 0")
    # and the text parses back into the same filter
    assert _ids(table, str(built)) == _ids(table, built)


def test_deep_parentheses_and_not_chains(table: Any) -> None:
    assert _ids(table, "(" * 1000 + "id < 3" + ")" * 1000) == [0, 1, 2]
    assert _ids(table, "not " * 1000 + "id < 2998") == [i for i in range(2998) if i != 7]
    assert _ids(table, "not " * 1001 + "id < 2998") == [2998, 2999]
    nested = "not (" * 500 + "id < 3" + ")" * 500
    assert _ids(table, nested) == [0, 1, 2]


def test_deep_alternation_is_a_typed_error(table: Any) -> None:
    def alternate(depth: int) -> str:
        text = "id = 0"
        for i in range(1, depth):
            word = "or" if i % 2 else "and"
            text = f"(id >= {i} {word} {text})"
        return text

    assert _ids(table, alternate(40))  # deep, but within the limit
    with pytest.raises(ValidationError, match=f"at most {MAX_DEPTH}"):
        table.scan(row_filter=alternate(MAX_DEPTH + 50)).to_arrow()
    with pytest.raises(ValidationError, match="nests"):
        table.scan(row_filter=alternate(3000)).to_arrow()


def test_row_level_delete_with_a_wide_filter(tmp_path: Path) -> None:
    t = catalog(tmp_path).create_table(
        "ns.d", SCHEMA, properties={"format-version": "2", "write.delete.mode": "merge-on-read"}
    )
    t.append(pa.table({"id": pa.array(range(100), pa.int64()), "g": pa.array([0] * 100)}))
    t.delete(" or ".join(f"id = {i}" for i in range(50, 50 + N)))
    assert _ids(t, "true") == list(range(50))
    expr = functools.reduce(operator.or_, [col("id") == i for i in range(N)])
    t.delete(expr)
    assert _ids(t, "true") == []


# ---------------------------------------------------------------- property: any shape


@st.composite
def _filters(draw: st.DrawFn) -> tuple[BooleanExpression, set[int]]:
    """A random filter over ids 0..99 of random depth and width, with the ids it matches,
    built bottom-up so the expected set is computed alongside."""
    universe = set(range(100))
    steps = draw(st.integers(1, 400))
    k = draw(st.integers(0, 99))
    expr: BooleanExpression = col("id") < k
    want = set(range(k))
    for _ in range(steps):
        kind = draw(st.sampled_from(["and", "or", "not", "wrap-or", "wrap-and"]))
        k = draw(st.integers(0, 99))
        leaf: BooleanExpression = col("id") == k
        if kind == "not":
            expr, want = Not(expr), universe - want
        elif kind == "and":
            expr, want = And(expr, col("id") != k), want - {k}
        elif kind == "or":
            expr, want = Or(expr, leaf), want | {k}
        elif kind == "wrap-or":
            expr, want = Or(leaf, expr), want | {k}
        else:
            expr, want = And(col("id") != k, expr), want - {k}
    return expr, want


@settings(max_examples=60, deadline=None)
@given(case=_filters())
def test_any_filter_shape_evaluates_or_fails_typed(tmp_path_factory: Any, case: Any) -> None:
    expr, want = case
    t = _small(tmp_path_factory)
    try:
        got = _ids(t, expr)
    except ValidationError as e:
        assert "nests" in str(e)
        with pytest.raises(ValidationError, match="nests"):
            balance(expr)
        return
    assert got == sorted(want)
    assert _ids(t, parse(str(balance(expr)))) == sorted(want)


@functools.cache
def _small_table(root: str) -> Any:
    t = catalog(Path(root)).create_table("ns.s", SCHEMA, properties={"format-version": "2"})
    t.append(pa.table({"id": pa.array(range(100), pa.int64()), "g": pa.array([1] * 100)}))
    return t


def _small(factory: Any) -> Any:
    return _small_table(str(factory.getbasetemp() / "small-filters"))
