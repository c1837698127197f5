"""Filter literals a user hands over without thinking about the column's type, read and deleted
by real tables and checked against pyarrow evaluating the same rows: decimal literals beyond
the column's precision (which must not select the nulls), expressions used where Python wants
a truth value (``and``/``or``/``not``, chained comparisons: refused, never half applied), and
NumPy scalars and arrays (``df.id.max()``, ``df.id.unique()``, ``numpy.datetime64``)."""

from __future__ import annotations

import datetime as dt
import math
import operator
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.exceptions import ValidationError
from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    BooleanExpression,
    BoundPredicate,
    Op,
    UnboundPredicate,
    bind,
    col,
    parse,
)
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import DecimalType, LongType, NestedField
from support.write_util import catalog

DEC = pa.decimal128(10, 2)
DEC_SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("amount", DEC)])
#: Written as three files: values, nulls only, and the extremes of decimal(10,2) with a null.
DEC_FILES = [
    [Decimal("5.00"), Decimal("-7.25"), Decimal("0.00"), Decimal("0.01")],
    [None, None],
    [Decimal("99999999.99"), None, Decimal("-99999999.99")],
]
BIG = Decimal("100000000000")  # 12 digits: beyond decimal(10,2) (at most 8 before the point)
NO_TRUTH = "has no truth value"

_WIDE = pa.decimal128(38, 6)  # the oracle compares in a type that holds every literal exactly
_COMPARE = {
    Op.LT: pc.less,
    Op.LT_EQ: pc.less_equal,
    Op.GT: pc.greater,
    Op.GT_EQ: pc.greater_equal,
    Op.EQ: pc.equal,
}


def _ids(table: Any, row_filter: Any) -> list[int]:
    return sorted(table.scan(row_filter=row_filter).to_arrow()["id"].to_pylist())


def _selected(rows: pa.Table, mask: pa.ChunkedArray | pa.Array) -> list[int]:
    return sorted(rows.filter(mask)["id"].to_pylist())


def _oracle_mask(values: pa.ChunkedArray, op: Op, lits: list[Decimal], negated: bool) -> Any:
    """The rows a predicate selects, computed by pyarrow: a comparison, ``=`` and ``in`` select
    the rows where SQL's three-valued logic makes them TRUE (never a null); ``!=``, ``not in``
    and ``not (...)`` are the exact complement of what they negate (the guide's "Negative
    predicates match nulls", the Iceberg reference's semantics)."""
    wide = values.cast(_WIDE)
    complement = negated
    if op in (Op.NOT_EQ, Op.NOT_IN):
        op, complement = (Op.EQ if op is Op.NOT_EQ else Op.IN), not complement
    if op is Op.IN:
        sql = pc.is_in(wide, value_set=pa.array(lits, _WIDE))
        sql = pc.if_else(pc.is_null(wide), pa.scalar(None, pa.bool_()), sql)
    else:
        sql = _COMPARE[op](wide, pa.scalar(lits[0], _WIDE))
    true = pc.fill_null(sql, False)
    return pc.invert(true) if complement else true


def _predicate(op: Op, lits: list[Any], negated: bool) -> BooleanExpression:
    expr = UnboundPredicate(op, "amount", lits if op.is_set else lits[0])
    return ~expr if negated else expr


@pytest.fixture(scope="module")
def dec_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, pa.Table]:
    t = catalog(tmp_path_factory.mktemp("dec")).create_table("ns.t", DEC_SCHEMA)
    parts = []
    start = 1
    for values in DEC_FILES:
        ids = list(range(start, start + len(values)))
        start += len(values)
        part = pa.table({"id": ids, "amount": values}, schema=DEC_SCHEMA)
        t.append(part)
        parts.append(part)
    return t, pa.concat_tables(parts)


# --- decimal literals beyond the column's precision ------------------------------------------


def test_decimal_comparisons_beyond_the_precision_never_select_nulls(
    dec_table: tuple[Any, pa.Table],
) -> None:
    """The reported data loss: ``amount < 100000000000`` on decimal(10,2) selected (and so
    deleted) the rows whose amount is null. Checked against pyarrow's comparison, where a
    null compares as neither true nor false."""
    t, rows = dec_table
    non_null = _selected(rows, pc.is_valid(rows["amount"]))
    nulls = _selected(rows, pc.is_null(rows["amount"]))
    for text in (
        "amount < 100000000000",
        "amount <= 100000000000",
        "amount > -100000000000",
        "amount >= -100000000000",
        "amount < 1e40",
        "amount > -1e40",
    ):
        assert _ids(t, text) == non_null, text
    for text in ("amount > 100000000000", "amount < -100000000000", "amount = 100000000000"):
        assert _ids(t, text) == [], text
    # negations stay the exact complement, as for a literal inside the range
    assert _ids(t, "not (amount < 100000000000)") == nulls
    assert _ids(t, "not (amount < 100000000000)") == _ids(t, "not (amount <= 99999999.99)")
    assert _ids(t, "amount != 100000000000") == _ids(t, "amount != 12345.67")
    assert _ids(t, "amount in (100000000000, 5)") == [1]
    assert _ids(t, "amount not in (100000000000, 5)") == _ids(t, "amount != 5")
    assert _ids(t, col("amount") < float("inf")) == non_null


def test_decimal_beyond_the_precision_binds_to_not_null() -> None:
    schema = Schema(
        NestedField(1, "opt", DecimalType(10, 2)),
        NestedField(2, "req", DecimalType(10, 2), required=True),
    )
    bound = bind(schema, parse("opt < 100000000000"))
    assert isinstance(bound, BoundPredicate) and bound.op is Op.NOT_NULL
    assert bind(schema, parse("opt >= -100000000000")) == bound
    assert bind(schema, parse("opt > 100000000000")) is AlwaysFalse()
    assert bind(schema, parse("req < 100000000000")) is AlwaysTrue()
    assert bind(schema, parse("req = 100000000000")) is AlwaysFalse()


def test_delete_with_a_decimal_beyond_the_precision_keeps_the_nulls(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    data = pa.table({"id": [1, 2, 3], "amount": [Decimal(5), None, Decimal("-7.25")]}, DEC_SCHEMA)
    t = cat.create_table("ns.t", DEC_SCHEMA)
    t.append(data)
    t.delete("amount < 100000000000")
    assert t.scan().to_arrow().to_pylist() == [{"id": 2, "amount": None}]

    # identity-partitioned on the decimal: the null partition is neither read nor deleted
    spec = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "amount"))
    p = cat.create_table("ns.p", DEC_SCHEMA, partition_spec=spec)
    p.append(data)
    assert _ids(p, "amount > -100000000000") == [1, 3]
    p.delete(col("amount") > -BIG)
    assert p.scan().to_arrow().to_pylist() == [{"id": 2, "amount": None}]


def test_decimal_literals_finer_than_the_scale_are_refused(dec_table: tuple[Any, pa.Table]) -> None:
    """Kept as documented: a literal with more fractional digits than the scale raises rather
    than round (the reference's long and double literals round half up, which changes rows)."""
    t, _ = dec_table
    with pytest.raises(ValidationError, match="more than 2 digits after the point"):
        t.scan(row_filter="amount < 5.001").to_arrow()


_LITERAL = st.one_of(
    st.decimals(-(10**9), 10**9, places=2, allow_nan=False, allow_infinity=False),
    st.integers(-(10**13), 10**13).map(Decimal),
    st.sampled_from(
        [Decimal(v) for v in ("99999999.99", "100000000", "100000000.01", "-100000000", "5")]
        + [Decimal("99999999.99").copy_negate(), BIG, -BIG]
    ),
)


@settings(max_examples=80, deadline=None)
@given(
    op=st.sampled_from([Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ, Op.IN, Op.NOT_IN]),
    lits=st.lists(_LITERAL, min_size=1, max_size=3),
    negated=st.booleans(),
)
def test_decimal_literals_around_the_precision_match_pyarrow(
    dec_table: tuple[Any, pa.Table], op: Op, lits: list[Decimal], negated: bool
) -> None:
    t, rows = dec_table
    if op.is_set and len(set(lits)) == 1:
        op = Op.EQ if op is Op.IN else Op.NOT_EQ  # what the predicate simplifies to
    want = _selected(rows, _oracle_mask(rows["amount"], op, lits, negated))
    assert _ids(t, _predicate(op, lits, negated)) == want


# --- expressions have no truth value ---------------------------------------------------------


def test_python_boolean_operators_on_expressions_raise() -> None:
    a, b = col("region") == "eu", col("amount") < 500
    attempts = [
        lambda: a and b,
        lambda: a or b,
        lambda: not a,
        lambda: 2 <= col("id") <= 3,
        lambda: bool(col("id")),
        lambda: bool(AlwaysTrue()),
        lambda: bool(parse("id > 1")),
        lambda: [x for x in [1] if a],
    ]
    for attempt in attempts:
        with pytest.raises(ValidationError, match=NO_TRUTH):
            attempt()
    # equality and membership still answer with a bool
    assert (col("id") > 1) == parse("id > 1")
    assert (col("id") > 1) in [parse("id > 1")]
    assert ((col("id") >= 2) & (col("id") <= 3)) == parse("id >= 2 and id <= 3")


def test_a_delete_written_with_and_deletes_nothing(tmp_path: Path) -> None:
    """``col('region') == 'eu' and col('amount') < 500`` used to be ``col('amount') < 500``
    alone, and deleted the rows of every region."""
    t = catalog(tmp_path).create_table(
        "ns.orders",
        pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.int64())]),
    )
    t.append(
        pa.table(
            {"id": [1, 2, 3, 4], "region": ["eu", "us", "eu", "us"], "amount": [100, 100, 900, 900]}
        )
    )
    with pytest.raises(ValidationError, match=NO_TRUTH):
        t.delete((col("region") == "eu") and (col("amount") < 500))
    with pytest.raises(ValidationError, match=NO_TRUTH):
        t.scan(row_filter=2 <= col("id") <= 3)
    assert _ids(t, AlwaysTrue()) == [1, 2, 3, 4]
    t.delete((col("region") == "eu") & (col("amount") < 500))
    assert _ids(t, AlwaysTrue()) == [2, 3, 4]
    assert _ids(t, (col("id") >= 2) & (col("id") <= 3)) == [2, 3]


# --- NumPy and pandas literals ---------------------------------------------------------------


@pytest.fixture(scope="module")
def typed_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, pa.Table]:
    base = dt.datetime(2024, 1, 1)
    ns0 = int(np.datetime64(base, "ns").astype("int64"))
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("i", pa.int32()),
            ("x", pa.float64()),
            ("f", pa.float32()),
            ("amount", DEC),
            ("flag", pa.bool_()),
            ("day", pa.date32()),
            ("ts", pa.timestamp("us")),
            ("tz", pa.timestamp("us", tz="UTC")),
            ("ns", pa.timestamp("ns")),
        ]
    )
    rows = pa.table(
        {
            "id": [1, 2, 3, 4],
            "i": [10, 20, None, 40],
            "x": [0.5, 1.5, 2.5, None],
            "f": [0.5, 1.5, None, 3.5],
            "amount": [Decimal("1.00"), Decimal("2.50"), None, Decimal("4.00")],
            "flag": [True, False, None, True],
            "day": [dt.date(2024, 1, 1), dt.date(2024, 1, 2), None, dt.date(2024, 1, 4)],
            "ts": [base, base + dt.timedelta(microseconds=1), None, base + dt.timedelta(days=1)],
            "tz": [base, base + dt.timedelta(hours=1), None, base + dt.timedelta(days=1)],
            "ns": pa.array([ns0, ns0 + 1, None, ns0 + 2], pa.int64()).cast(pa.timestamp("ns")),
        },
        schema=schema,
    )
    t = catalog(tmp_path_factory.mktemp("np")).create_table("ns.t", schema, format_version=3)
    t.append(rows)
    return t, rows


def test_numpy_integers_are_integers(typed_table: tuple[Any, pa.Table]) -> None:
    t, _ = typed_table
    assert _ids(t, col("id") == np.int64(3)) == [3]
    assert _ids(t, col("id") >= np.uint8(3)) == [3, 4]
    assert _ids(t, col("i") < np.int16(25)) == [1, 2]
    assert _ids(t, col("amount") >= np.int32(2)) == [2, 4]
    assert _ids(t, col("x") > np.int64(1)) == [2, 3]
    assert _ids(t, col("f") > np.float32(1.5)) == [4]
    assert _ids(t, col("amount") == np.float64(2.5)) == [2]
    assert _ids(t, col("flag") == np.bool_(True)) == [1, 4]
    assert _ids(t, col("day") == np.int64(19724)) == [2]  # days from 1970-01-01
    # a numpy bool is no integer, as a Python bool is not
    with pytest.raises(ValidationError, match="cannot convert literal"):
        t.scan(row_filter=col("id") == np.bool_(True)).to_arrow()
    # the literal prints (and parses back) as the Python number
    assert str(col("id") == np.int64(3)) == "id = 3"
    assert parse(str(col("x") > np.float64(1.5))) == (col("x") > 1.5)


def test_numpy_arrays_and_pandas_values_as_sets(typed_table: tuple[Any, pa.Table]) -> None:
    pd = pytest.importorskip("pandas")
    t, _ = typed_table
    df = pd.DataFrame({"id": [2, 3, 3]})
    assert _ids(t, col("id") == df.id.max()) == [3]
    assert _ids(t, col("id").isin(df.id.unique())) == [2, 3]
    assert _ids(t, col("id").notin(df.id)) == [1, 4]
    assert _ids(t, col("id").isin(np.arange(2, 4))) == [2, 3]
    assert _ids(t, col("id").isin(range(3, 9))) == [3, 4]
    with pytest.raises(ValidationError, match="single value"):
        col("id") == np.array([1, 2])  # noqa: B015
    with pytest.raises(ValidationError, match="needs a collection"):
        col("id").isin(np.int64(3))
    with pytest.raises(ValidationError, match="needs a collection"):
        col("id").isin("abc")


def test_numpy_datetime64_by_its_unit(typed_table: tuple[Any, pa.Table]) -> None:
    t, rows = typed_table
    base = np.datetime64("2024-01-01T00:00:00", "s")
    assert _ids(t, col("day") == np.datetime64("2024-01-02")) == [2]
    assert _ids(t, col("day") >= np.datetime64("2024-01-02T00:00:00.000000000")) == [2, 4]
    assert _ids(t, col("day") < np.datetime64("2024-01", "M")) == []
    assert _ids(t, col("ts") == base) == [1]
    assert _ids(t, col("ts") == np.datetime64("2024-01-01T00:00:00.000001")) == [2]
    assert _ids(t, col("ts") > np.datetime64("2024-01-01T00:00:00.000000000", "ns")) == [2, 4]
    assert _ids(t, col("tz") >= np.datetime64("2024-01-01T01:00")) == [2, 4]
    # nanoseconds are kept for timestamp_ns, as pyarrow compares them
    for k in range(3):
        lit = np.datetime64("2024-01-01T00:00:00", "ns") + np.timedelta64(k, "ns")
        want = _selected(rows, pc.fill_null(pc.equal(rows["ns"], pa.scalar(lit)), False))
        assert _ids(t, col("ns") == lit) == want == [[1], [2], [4]][k]
    assert _ids(t, col("ns").isin(rows["ns"].to_numpy()[:2])) == [1, 2]
    with pytest.raises(ValidationError, match="more than 6 fractional digits"):
        t.scan(row_filter=col("ts") > np.datetime64("2024-01-01T00:00:00.000000001")).to_arrow()
    with pytest.raises(ValidationError, match="time of day"):
        t.scan(row_filter=col("day") > np.datetime64("2024-01-01T12:00")).to_arrow()
    for nat in (np.datetime64("NaT"), np.datetime64("NaT", "ns")):
        with pytest.raises(ValidationError, match="NaT"):
            col("ts") == nat  # noqa: B015
        with pytest.raises(ValidationError, match="NaT"):
            col("ns").isin([nat, base])


def test_integral_numbers_bind_for_every_integer_taking_type() -> None:
    from icefloe.expressions.literals import convert_literal
    from icefloe.types import DateType, TimestampNanoType, TimestampType, TimeType

    assert convert_literal(np.int64(7), LongType()) == 7
    assert convert_literal(np.int64(7), DecimalType(5, 2)) == Decimal("7.00")
    assert convert_literal(np.int32(3), DateType()) == 3
    assert convert_literal(np.int64(5), TimeType()) == 5
    assert convert_literal(np.int64(5), TimestampType()) == 5
    assert convert_literal(np.int64(5), TimestampNanoType()) == 5000  # micros, as for an int
    assert convert_literal(np.datetime64(5, "ns"), TimestampNanoType()) == 5
    assert convert_literal(np.datetime64(1, "D"), TimestampNanoType()) == 86_400 * 10**9
    assert convert_literal(np.datetime64(-1, "W"), DateType()) == -7


# --- double literals closer to zero than any float -------------------------------------------

_TINY_FLOATS = [
    -math.inf,
    -1.0,
    -(2.0**-149),  # the negative float nearest zero
    -0.0,
    0.0,
    2.0**-149,  # the smallest positive float
    0.5,
    math.inf,
    math.nan,
    None,
]
_PY_COMPARE = {
    Op.LT: operator.lt,
    Op.LT_EQ: operator.le,
    Op.GT: operator.gt,
    Op.GT_EQ: operator.ge,
    Op.EQ: operator.eq,
}


@pytest.mark.parametrize("literal", [1e-50, -1e-50, "5e-46", "-5e-46"])
def test_tiny_literals_on_a_float_column_compare_exactly(tmp_path: Path, literal: Any) -> None:
    """A double literal closer to zero than any float rounded to 0.0 when bound to a float
    column, so ``f < 1e-50`` dropped the rows holding 0.0, ``f = 1e-50`` selected them and
    ``f > -1e-50`` dropped them. Checked against Python comparing the float32 values with the
    double exactly (one file per value, so file pruning is exercised too)."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("f", pa.float32())])
    t = catalog(tmp_path).create_table("ns.tiny", schema)
    for i, v in enumerate(_TINY_FLOATS):
        t.append(pa.table({"id": [i], "f": pa.array([v], pa.float32())}, schema=schema))
    d = float(literal)
    everything = list(range(len(_TINY_FLOATS)))
    for op, compare in _PY_COMPARE.items():
        expected = [i for i, v in enumerate(_TINY_FLOATS) if v is not None and compare(v, d)]
        expr = UnboundPredicate(op, "f", literal)
        assert _ids(t, expr) == expected, (op, literal)
        # a negation is the exact complement (nulls and NaN included)
        assert _ids(t, ~expr) == [i for i in everything if i not in expected], (op, literal)
    assert _ids(t, col("f") != literal) == everything
    assert _ids(t, col("f").isin([literal, 0.5])) == [_TINY_FLOATS.index(0.5)]
    assert _ids(t, col("f").notin([literal, 0.5])) == [
        i for i in everything if i != _TINY_FLOATS.index(0.5)
    ]
