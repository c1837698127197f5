"""Filters whose literals sit at the edges of their types, read and deleted by, checked
against pyarrow filtering the same rows and PyIceberg reading the result: decimal(38) values
with more digits than Python's default decimal context keeps, doubles that must reach the
planner bit for bit, infinities, uuids, and wide chains of equalities."""

from __future__ import annotations

import random
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.expressions import BoundPredicate, Op, Or, bind, col
from icefloe.expressions.rewrite import balance
from icefloe.schema import Schema
from icefloe.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    UUIDType,
)
from support.write_util import catalog, pyiceberg_read

BIG = Decimal("12345678901234567890123.456789")  # 29 digits: more than the default context's 28


def _ids(table: Any, row_filter: Any) -> list[int]:
    return sorted(table.scan(row_filter=row_filter).to_arrow()["id"].to_pylist())


def test_decimal38_literals_keep_every_digit(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("amount", pa.decimal128(38, 6))])
    t = catalog(tmp_path).create_table("ns.t", schema)
    t.append(pa.table({"id": [1, 2, 3], "amount": [Decimal(1), BIG, Decimal(-5)]}, schema=schema))
    assert _ids(t, col("amount") == BIG) == [2]
    assert _ids(t, col("amount") < BIG) == [1, 3]
    assert _ids(t, col("amount") >= BIG) == [2]
    assert _ids(t, col("amount") != BIG) == [1, 3]
    assert _ids(t, col("amount") > Decimal("12345678901234567890123.456788")) == [2]
    assert _ids(t, col("amount") < Decimal("-99999999999999999999999999999999")) == []
    t.delete(col("amount") != BIG)
    assert pyiceberg_read(t).to_pylist() == [{"id": 2, "amount": BIG}]


def test_double_literals_prune_files_exactly(tmp_path: Path) -> None:
    """One file per value: a literal parsed one unit in the last place off would prune the
    file holding it (its bounds are exact)."""
    rnd = random.Random(1)
    values = [-1e-30, 3.4028234663852886e38, 0.1, 1.2345678e103, 6.02214076e23]
    values += [rnd.uniform(-1e6, 1e6) * 10 ** rnd.randint(-40, 40) for _ in range(20)]
    t = catalog(tmp_path).create_table("ns.t", pa.schema([("id", pa.int64()), ("d", pa.float64())]))
    with t.transaction() as tx:
        for i, v in enumerate(values):
            tx.append(pa.table({"id": pa.array([i], pa.int64()), "d": pa.array([v])}))
    for i, v in enumerate(values):
        assert _ids(t, col("d") == v) == [i], v
        want = sorted(j for j, w in enumerate(values) if w >= v)
        assert _ids(t, col("d") >= v) == want, v
    t.delete(col("d") == -1e-30)
    assert -1e-30 not in pyiceberg_read(t)["d"].to_pylist()


def test_infinite_literals_filter_and_delete(tmp_path: Path) -> None:
    inf = float("inf")
    t = catalog(tmp_path).create_table("ns.t", pa.schema([("id", pa.int64()), ("d", pa.float64())]))
    t.append(pa.table({"id": [1, 2, 3, 4], "d": [1.0, inf, -inf, float("nan")]}))
    assert _ids(t, col("d") < inf) == [1, 3]
    assert _ids(t, col("d") == inf) == [2]
    assert _ids(t, col("d").isin([-inf, 1.0])) == [1, 3]
    assert _ids(t, "d > 1e400") == []  # parses as infinity
    # decimals beyond every double compare exactly, as integers that large do (they became
    # infinity: `d > 10**400` dropped the infinite row, `d = ...` selected it)
    huge = Decimal("1e400")
    assert _ids(t, col("d") > huge) == _ids(t, col("d") > 10**400) == [2]
    assert _ids(t, col("d") < -huge) == [3]
    assert _ids(t, col("d") == huge) == []
    assert _ids(t, "d > " + "1" + "0" * 400 + ".0") == [2]
    assert _ids(t, col("d") <= "1e400") == [1, 3]
    assert str(col("d") == Decimal("Infinity")) == "d = inf"
    assert _ids(t, col("d") != -inf) == [1, 2, 4]
    t.delete(col("d") == -inf)
    assert sorted(pyiceberg_read(t)["id"].to_pylist()) == [1, 2, 4]


def test_uuid_filters_compare_the_values(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "u", UUIDType())
    )
    t = catalog(tmp_path).create_table("ns.t", schema)
    a, b, c = (uuid.UUID(int=i) for i in (1, 2, 3))
    u = pa.array([a.bytes, b.bytes, c.bytes, None], pa.uuid())
    t.append(pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "u": u}))
    assert _ids(t, f"u = '{a}'") == [1]
    assert _ids(t, f"u != '{a}'") == [2, 3, 4]
    assert _ids(t, f"u > '{a}'") == [2, 3]
    assert _ids(t, col("u").isin([a, c])) == [1, 3]
    assert _ids(t, col("u").notin([a, c])) == [2, 4]
    t.delete(f"u = '{b}'")
    assert sorted(pyiceberg_read(t)["id"].to_pylist()) == [1, 3, 4]


def _schema() -> Schema:
    return Schema(NestedField(1, "id", LongType()), NestedField(2, "d", DoubleType()))


def test_wide_equality_chains_merge_into_set_predicates() -> None:
    ors = col("id") == 0
    for i in range(1, 40):
        ors = ors | (col("id") == i)
    bound = bind(_schema(), ors | (col("d") == 1.5))
    assert isinstance(bound, Or)
    preds = [bound.left, bound.right]
    assert {(p.op, len(p.literals) or 1) for p in preds} == {(Op.IN, 40), (Op.EQ, 1)}
    ands = col("id") != 0
    for i in range(1, 40):
        ands = ands & (col("id") != i)
    merged = bind(_schema(), ands)
    assert isinstance(merged, BoundPredicate) and merged.op is Op.NOT_IN
    assert len(merged.literals) == 40
    short = bind(_schema(), (col("id") == 1) | (col("id") == 2))
    assert isinstance(short, Or)  # short chains keep the shape the user wrote
    assert balance(merged) == merged


@pytest.mark.parametrize("negated", [False, True])
def test_merged_chains_select_the_same_rows(tmp_path: Path, negated: bool) -> None:
    """A wide ``or`` of equalities (and its negation) over many small files, with nulls and
    NaN, selects what pyarrow's own filter of the same rows selects."""
    t = catalog(tmp_path).create_table("ns.t", pa.schema([("id", pa.int64()), ("d", pa.float64())]))
    rows = pa.table(
        {
            "id": pa.array([*range(60), None, 7], pa.int64()),
            "d": [*(float(i % 5) for i in range(60)), None, float("nan")],
        }
    )
    with t.transaction() as tx:
        for k in range(0, rows.num_rows, 4):
            tx.append(rows.slice(k, 4))
    keys = list(range(0, 60, 3))
    text = " or ".join(f"id = {k}" for k in keys) + " or d = 4.0"
    if negated:
        text = f"not ({text})"
    got = t.scan(row_filter=text).to_arrow()
    hit = pc.or_kleene(pc.is_in(rows["id"], pa.array(keys, pa.int64())), pc.equal(rows["d"], 4.0))
    want = rows.filter(pc.invert(pc.fill_null(hit, False)) if negated else pc.fill_null(hit, False))

    def rows_of(table: pa.Table) -> list[tuple[Any, str]]:
        return sorted((r["id"] is None, r["id"] or 0, repr(r["d"])) for r in table.to_pylist())

    assert rows_of(got) == rows_of(want)


def test_a_set_predicates_values_are_converted_once_per_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 5,000-value ``in`` read over 30 files sorts and converts its values once, not once
    per batch (which made reads cost files x values)."""
    import icefloe.expressions.arrow as ea

    t = catalog(tmp_path).create_table("ns.t", pa.schema([("id", pa.int64()), ("s", pa.string())]))
    with t.transaction() as tx:
        for k in range(30):
            ids = list(range(k * 100, k * 100 + 100))
            tx.append(pa.table({"id": ids, "s": [f"k{i}" for i in ids]}))
    keys = [f"k{i}" for i in range(0, 10_000, 2)]
    calls: list[int] = []
    real = ea.arrow_array

    def counting(values: list[Any], t: Any) -> pa.Array:
        calls.append(len(values))
        return real(values, t)

    monkeypatch.setattr(ea, "arrow_array", counting)
    got = t.scan(row_filter=col("s").isin(keys)).to_arrow()
    assert sorted(got["id"].to_pylist()) == list(range(0, 3000, 2))
    assert sum(1 for n in calls if n == len(keys)) == 1


_PROBED_TYPES = [
    (LongType(), st.integers(-(2**63), 2**63 - 1)),
    (IntegerType(), st.integers(-(2**31), 2**31 - 1)),
    (StringType(), st.text(max_size=6)),
    (BinaryType(), st.binary(max_size=6)),
    (DoubleType(), st.floats(allow_nan=False, width=64)),
    (DateType(), st.integers(-100_000, 100_000)),
    (DecimalType(20, 3), st.decimals(-(10**16), 10**16, places=3, allow_nan=False)),
]


@settings(max_examples=60, deadline=None)
@given(data=st.data(), which=st.sampled_from(range(len(_PROBED_TYPES))), negated=st.booleans())
def test_large_sets_probed_in_rust_select_what_is_in_selects(
    data: st.DataObject, which: int, negated: bool
) -> None:
    """A set predicate large enough for the Rust probe selects the rows ``pc.is_in`` selects
    (nulls, both zeros), for ``in`` and ``not in``, on a table of several chunks."""
    import icefloe.expressions.arrow as ea

    t, values = _PROBED_TYPES[which]
    literals = data.draw(st.lists(values, min_size=1, max_size=12, unique=True))
    column = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(literals), values)))
    if isinstance(t, DoubleType):
        column += [0.0, -0.0, None]
    schema = Schema(NestedField(1, "v", t, required=False))
    pred = col("v").isin(literals)
    bound = bind(schema, ~pred if negated else pred)
    arrow = ea.arrow_array([c for c in column], t) if column else ea.arrow_array([], t)
    table = pa.Table.from_batches(
        [
            pa.record_batch([arrow.slice(0, len(arrow) // 2)], names=["v"]),
            pa.record_batch([arrow.slice(len(arrow) // 2)], names=["v"]),
        ]
    )
    old = ea.PROBED_SET_SIZE
    try:
        ea.PROBED_SET_SIZE = 10**9
        want = ea.selection_mask(bound, table).to_pylist()
        ea.PROBED_SET_SIZE = 1
        got = ea.selection_mask(bound, table).to_pylist()
    finally:
        ea.PROBED_SET_SIZE = old
    assert got == want


def test_a_large_set_is_hashed_once_in_rust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read with a set of ``PROBED_SET_SIZE`` values or more builds one Rust set for every
    batch of every file and selects the rows pyarrow's ``is_in`` does."""
    import icefloe.expressions.arrow as ea

    t = catalog(tmp_path).create_table("ns.t", pa.schema([("id", pa.int64())]))
    with t.transaction() as tx:
        for k in range(20):
            tx.append(pa.table({"id": pa.array([*range(k * 50, k * 50 + 50), None], pa.int64())}))
    keys = list(range(-3000, 3000, 3))
    built: list[int] = []
    real = ea._native.EqualityDeleteSet

    def counting() -> Any:
        built.append(1)
        return real()

    monkeypatch.setattr(ea._native, "EqualityDeleteSet", counting)
    got = t.scan(row_filter=col("id").isin(keys)).to_arrow()["id"].to_pylist()
    assert sorted(got) == [i for i in range(1000) if i % 3 == 0]
    assert len(built) == 1
    got = t.scan(row_filter=~col("id").isin(keys)).to_arrow()["id"].to_pylist()
    # `not in` selects nulls, as Iceberg's evaluators do
    assert sorted(got, key=lambda v: -1 if v is None else v) == [None] * 20 + [
        i for i in range(1000) if i % 3 != 0
    ]


@pytest.mark.parametrize(("column", "width"), [("n", 10), ("l", 7)])
def test_truncate_partitions_of_the_lowest_values_are_found(
    tmp_path: Path, column: str, width: int
) -> None:
    """``truncate[W]`` wraps the lowest ints and longs to the largest partition value (as the
    reference computes it): filters and deletes still find those rows, checked against
    pyarrow's filter of the same rows."""
    low = -(2 ** (31 if column == "n" else 63))
    arrow_type = pa.int32() if column == "n" else pa.int64()
    rows = pa.table(
        {
            "id": pa.array(range(6), pa.int64()),
            column: pa.array([5, low, low + 3, -1, 2**20, None], arrow_type),
        }
    )
    t = catalog(tmp_path).create_table("ns.t", rows.schema)
    with t.update_spec() as u:
        u.add_field(column, f"truncate[{width}]")
    with t.transaction() as tx:
        for i in range(rows.num_rows):
            tx.append(rows.slice(i, 1))
    v = rows[column]
    cases = {
        f"{column} = {low}": pc.equal(v, low),
        f"{column} < 0": pc.less(v, 0),
        f"{column} <= -1": pc.less_equal(v, -1),
        f"{column} >= {low}": pc.greater_equal(v, low),
        f"{column} > {low}": pc.greater(v, low),
        f"{column} > 3": pc.greater(v, 3),
        f"{column} < {low + 2}": pc.less(v, low + 2),
    }
    for text, mask in cases.items():
        want = sorted(rows.filter(pc.fill_null(mask, False))["id"].to_pylist())
        assert _ids(t, text) == want, text
    t.delete(f"{column} > 3")  # strict projection: the wrapped partition is not all > 3
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 5]


@pytest.mark.parametrize("width", [10, 7, 1000])
def test_truncate_wrap_of_an_int_column_promoted_to_long(tmp_path: Path, width: int) -> None:
    """Files written while the column was an int hold the int's wrapped partition; after the
    promotion to long, filters, deletes and overwrites still find their lowest rows."""
    low = -(2**31)
    values = [5, low, low + 3, low + 1_000, -1, 2**20, None]
    rows = pa.table(
        {"id": pa.array(range(len(values)), pa.int64()), "n": pa.array(values, pa.int32())}
    )
    t = catalog(tmp_path).create_table("ns.t", rows.schema)
    with t.update_spec() as u:
        u.add_field("n", f"truncate[{width}]")
    t.append(rows.slice(0, 3))  # the lowest values share a file (and their partition)
    with t.transaction() as tx:
        for i in range(3, rows.num_rows):
            tx.append(rows.slice(i, 1))
    t.update_schema().update_column("n", LongType()).commit()
    t.append(pa.table({"id": pa.array([100], pa.int64()), "n": pa.array([low - 5], pa.int64())}))
    every = pa.concat_tables(
        [
            rows.cast(pa.schema([("id", pa.int64()), ("n", pa.int64())])),
            t.scan(row_filter="id = 100").to_arrow().select(["id", "n"]),
        ]
    )
    v = every["n"]
    cases = {
        f"n = {low}": pc.equal(v, low),
        f"n in ({low}, {low + 3}, 5)": pc.is_in(v, pa.array([low, low + 3, 5])),
        # negative predicates keep nulls (Iceberg's semantics, see the guide)
        f"n != {low}": pc.or_kleene(pc.not_equal(v, low), pc.is_null(v)),
        f"n not in ({low}, 5)": pc.invert(pc.is_in(v, pa.array([low, 5]))),
        "n < 0": pc.less(v, 0),
        f"n <= {low}": pc.less_equal(v, low),
        f"n >= {low}": pc.greater_equal(v, low),
        f"n > {low}": pc.greater(v, low),
        "n > 3": pc.greater(v, 3),
        f"n < {low + 2}": pc.less(v, low + 2),
    }
    for text, mask in cases.items():
        want = sorted(every.filter(pc.fill_null(mask, False))["id"].to_pylist())
        assert _ids(t, text) == want, text
    t.delete("n > 3")  # strict projection: the int-wrapped partition is not all > 3
    t.delete(f"n != {low}")
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1]


def test_nat_and_impossible_offsets_are_refused(tmp_path: Path) -> None:
    """``pandas.NaT`` is no instant and an offset beyond 18:00 no offset (Java refuses both):
    typed errors, not a ValueError or a silently shifted filter."""
    pd = pytest.importorskip("pandas")
    from icefloe.exceptions import ValidationError
    from icefloe.expressions.builder import col

    t = catalog(tmp_path).create_table(
        "ns.t", pa.schema([("ts", pa.timestamp("us")), ("tz", pa.timestamp("us", tz="UTC"))])
    )
    for f in (col("ts") == pd.NaT, col("tz") >= pd.NaT):
        with pytest.raises(ValidationError, match="not a time"):
            t.scan(row_filter=f).to_arrow()
    with pytest.raises(ValidationError, match="at most 18:00"):
        t.scan(row_filter="tz > '2024-01-01T00:00:00+25:00'").to_arrow()
    assert t.scan(row_filter="tz > '2024-01-01T00:00:00-18:00'").to_arrow().num_rows == 0


def test_nanosecond_instants_beyond_the_type_are_above_or_below_every_value(
    tmp_path: Path,
) -> None:
    """A timestamp_ns literal past 2262 or before 1677, written as a datetime, a date or an
    ISO string, filters as an integer or datetime64 of that instant does (true for every
    value, a null compared with it false; or false for every row), in a day-partitioned and an
    unpartitioned table; it failed the read."""
    import datetime as dt

    import numpy as np

    from icefloe.exceptions import ValidationError

    cat = catalog(tmp_path)
    sch = pa.schema([("id", pa.int64()), ("tn", pa.timestamp("ns"))])
    rows = pa.table(
        {"id": [1, 2, 3], "tn": pa.array([0, 1_700_000_000_000_000_000, None], pa.timestamp("ns"))},
        schema=sch,
    )
    plain = cat.create_table("ns.plain", sch, format_version=3)
    by_day = cat.create_table("ns.by_day", sch, format_version=3)
    with by_day.update_spec() as u:
        u.add_field("tn", "day", "tn_day")
    for t in (plain, by_day):
        t.append(rows)
        for late in (dt.datetime(2500, 1, 1), dt.date(2500, 1, 1), "2500-01-01T00:00:00"):
            assert _ids(t, col("tn") < late) == [1, 2]
            assert _ids(t, col("tn") == late) == []
            assert _ids(t, col("tn") != late) == [1, 2, 3]
            assert _ids(t, col("tn") < late) == _ids(t, col("tn") < np.datetime64("2500-01-01"))
        for early in (dt.datetime(1000, 1, 1), "1000-01-01"):
            assert _ids(t, col("tn") > early) == [1, 2]
            assert _ids(t, col("tn").isin([early])) == []
    with pytest.raises(ValidationError, match="cannot convert literal"):
        bind(plain.schema(), col("tn") == np.timedelta64(5, "s"))  # was a TypeError
