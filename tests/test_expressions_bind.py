"""Binding: name resolution, literal conversion per type, and out-of-range simplification."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
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
    bind,
    col,
    parse,
)
from icefloe.expressions.literals import ABOVE_MAX, BELOW_MIN, convert_literal, days_from_civil
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

SCHEMA = StructType(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "f", FloatType()),
    NestedField(4, "d", DoubleType()),
    NestedField(5, "dec", DecimalType(9, 2)),
    NestedField(6, "day", DateType()),
    NestedField(7, "t", TimeType()),
    NestedField(8, "ts", TimestampType()),
    NestedField(9, "tstz", TimestamptzType()),
    NestedField(10, "tsn", TimestampNanoType()),
    NestedField(11, "tstzn", TimestamptzNanoType()),
    NestedField(12, "s", StringType()),
    NestedField(13, "u", UUIDType()),
    NestedField(14, "fx", FixedType(3)),
    NestedField(15, "bin", BinaryType()),
    NestedField(16, "b", BooleanType()),
    NestedField(
        17,
        "loc",
        StructType(NestedField(18, "lat", DoubleType()), NestedField(19, "Name", StringType())),
    ),
    NestedField(20, "tags", ListType(21, StringType())),
)


def lit(expr: BooleanExpression) -> Any:
    assert isinstance(expr, BoundPredicate), expr
    return expr.literal


def test_bind_resolves_ids_names_and_nested_paths() -> None:
    e = bind(SCHEMA, col("loc.lat") > 1.5)
    assert isinstance(e, BoundPredicate)
    assert e.ref.field_id == 18
    assert e.ref.path == ("loc", "lat")
    assert e.ref.field_type == DoubleType()
    assert e.literal == 1.5
    assert str(e) == "loc.lat > 1.5"
    both = bind(SCHEMA, parse("id > 5 and s like 'ab%' or not b = true"))
    assert str(both) == "id > 5 and s like 'ab%' or not b = true"


def test_case_sensitivity() -> None:
    with pytest.raises(ValidationError, match=r"'LOC.name'"):
        bind(SCHEMA, col("LOC.name") == "x")
    e = bind(SCHEMA, col("LOC.name") == "x", case_sensitive=False)
    assert isinstance(e, BoundPredicate) and e.ref.field_id == 19
    twins = StructType(NestedField(1, "a", LongType()), NestedField(2, "A", LongType()))
    with pytest.raises(ValidationError, match=r"ambiguous"):
        bind(twins, col("a") == 1, case_sensitive=False)


def test_unknown_and_nested_columns_raise_naming_them() -> None:
    with pytest.raises(ValidationError, match=r"'nope'"):
        bind(SCHEMA, col("nope") == 1)
    with pytest.raises(ValidationError, match=r"'loc'.*nested"):
        bind(SCHEMA, col("loc").is_null())
    with pytest.raises(ValidationError, match=r"'tags.element'"):
        bind(SCHEMA, col("tags.element") == "x")


def test_is_nan_needs_floats() -> None:
    assert bind(SCHEMA, col("f").is_nan()) != AlwaysFalse()
    assert isinstance(bind(SCHEMA, col("d").not_nan()), BoundPredicate)
    with pytest.raises(ValidationError, match=r"'id'"):
        bind(SCHEMA, col("id").is_nan())
    with pytest.raises(ValidationError, match=r"'s'"):
        bind(SCHEMA, col("s").not_nan())
    with pytest.raises(ValidationError, match=r"'id'"):
        bind(SCHEMA, col("id").starts_with("1"))


def test_required_null_checks_simplify() -> None:
    assert bind(SCHEMA, col("id").is_null()) is AlwaysFalse()
    assert bind(SCHEMA, col("id").not_null()) is AlwaysTrue()
    assert isinstance(bind(SCHEMA, col("i").is_null()), BoundPredicate)


@pytest.mark.parametrize(
    ("op", "above", "below"),
    [
        (Op.LT, AlwaysTrue(), AlwaysFalse()),
        (Op.LT_EQ, AlwaysTrue(), AlwaysFalse()),
        (Op.GT, AlwaysFalse(), AlwaysTrue()),
        (Op.GT_EQ, AlwaysFalse(), AlwaysTrue()),
        (Op.EQ, AlwaysFalse(), AlwaysFalse()),
        (Op.NOT_EQ, AlwaysTrue(), AlwaysTrue()),
    ],
)
def test_out_of_range_literals_simplify(
    op: Op, above: BooleanExpression, below: BooleanExpression
) -> None:
    from icefloe.expressions import UnboundPredicate

    ordering = op in (Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ)

    def keeps_out_nulls(name: str, result: BooleanExpression) -> BooleanExpression:
        """A comparison every value satisfies still keeps out the nulls of an optional
        column (as ``i < 5`` does)."""
        if ordering and result is AlwaysTrue():
            return bind(SCHEMA, col(name).not_null())
        return result

    assert bind(SCHEMA, UnboundPredicate(op, "i", 2**31)) == keeps_out_nulls("i", above)
    assert bind(SCHEMA, UnboundPredicate(op, "i", -(2**31) - 1)) == keeps_out_nulls("i", below)
    assert bind(SCHEMA, UnboundPredicate(op, "id", 2**63)) is above  # required: no nulls
    dec_above = keeps_out_nulls("dec", above)
    dec_below = keeps_out_nulls("dec", below)
    assert bind(SCHEMA, UnboundPredicate(op, "dec", Decimal("10000000.00"))) == dec_above
    assert bind(SCHEMA, UnboundPredicate(op, "dec", -(10**7))) == dec_below
    # In range: bound, not simplified.
    assert isinstance(bind(SCHEMA, UnboundPredicate(op, "i", 2**31 - 1)), BoundPredicate)
    assert isinstance(bind(SCHEMA, UnboundPredicate(op, "dec", "9999999.99")), BoundPredicate)


INF = float("inf")


@pytest.mark.parametrize(
    ("op", "above", "below"),
    [
        (Op.LT, (Op.LT, INF), (Op.EQ, -INF)),
        (Op.LT_EQ, (Op.LT, INF), (Op.EQ, -INF)),
        (Op.GT, (Op.EQ, INF), (Op.GT, -INF)),
        (Op.GT_EQ, (Op.EQ, INF), (Op.GT, -INF)),
    ],
)
def test_literals_beyond_a_float_columns_range_compare_as_its_infinity(
    op: Op, above: tuple[Op, float], below: tuple[Op, float]
) -> None:
    """A float column holds infinities and NaN: ``f < 1e39`` is not true of every row, but of
    the rows below float infinity (an int beyond every double likewise on a double column)."""
    from icefloe.expressions import UnboundPredicate

    for name, big in (("f", 1e39), ("d", 10**400)):
        want_above = bind(SCHEMA, UnboundPredicate(above[0], name, above[1]))
        want_below = bind(SCHEMA, UnboundPredicate(below[0], name, below[1]))
        assert bind(SCHEMA, UnboundPredicate(op, name, big)) == want_above
        assert bind(SCHEMA, UnboundPredicate(op, name, -big)) == want_below
        assert bind(SCHEMA, UnboundPredicate(Op.EQ, name, big)) is AlwaysFalse()
        assert bind(SCHEMA, UnboundPredicate(Op.NOT_EQ, name, big)) is AlwaysTrue()


def test_out_of_range_literals_select_the_rows_in_range_literals_do(tmp_path: Path) -> None:
    """Rows of a scan: nulls, NaN and infinities compare with a literal beyond the column's
    range as they compare with one at its edge."""
    from icefloe.catalog.sql import SqlCatalog

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=tmp_path.as_uri())
    cat.create_namespace("db")
    data = pa.table(
        {
            "id": pa.array(range(5), pa.int64()),
            "g": pa.array([1.0, INF, None, float("nan"), -INF], pa.float32()),
            "f": [1.0, INF, None, float("nan"), -INF],
            "i": pa.array([1, 2, None, 4, 5], pa.int32()),
        }
    )
    t = cat.create_table("db.t", data.schema)
    t.append(data)

    def ids(expr: BooleanExpression) -> list[int]:
        return sorted(t.scan(row_filter=expr).to_arrow()["id"].to_pylist())

    for name, big in (("g", 1e39), ("f", 10**400)):
        assert ids(col(name) < big) == ids(col(name) < INF) == [0, 4]
        assert ids(col(name) >= big) == [1]
        assert ids(col(name) > -big) == [0, 1]
        assert ids(col(name) < -big) == [4]
    assert ids(col("i") < 10**12) == ids(col("i") < 10**9) == [0, 1, 3, 4]
    assert ids(col("i") > -(10**12)) == [0, 1, 3, 4]


def test_out_of_range_set_values_are_dropped() -> None:
    assert bind(SCHEMA, col("i").isin([2**40, -(2**40)])) is AlwaysFalse()
    assert bind(SCHEMA, col("i").notin([2**40, -(2**40)])) is AlwaysTrue()
    e = bind(SCHEMA, col("i").isin([2**40, 7, 8]))
    assert isinstance(e, BoundPredicate) and e.literals == frozenset({7, 8})
    assert bind(SCHEMA, col("i").isin([2**40, 7])) == bind(SCHEMA, col("i") == 7)


PLUS_ONE = dt.timezone(dt.timedelta(hours=1))
UUID_TEXT = "f79c3e09-677c-4bbd-a479-3f349cb785e7"
TS_2024 = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z in microseconds


@pytest.mark.parametrize(
    ("t", "value", "expected"),
    [
        (IntegerType(), 7, 7),
        (IntegerType(), "-12", -12),
        (IntegerType(), Decimal("3.0"), 3),
        (LongType(), 2**63 - 1, 2**63 - 1),
        (LongType(), -(2**63) - 1, BELOW_MIN),
        (FloatType(), 0.1, 0.10000000149011612),
        (FloatType(), 3.5e38, 3.5e38 if 3.5e38 < 3.4028234663852886e38 else ABOVE_MAX),
        (DoubleType(), Decimal("0.1"), 0.1),
        (DoubleType(), 3, 3.0),
        (DoubleType(), "1e10", 1e10),
        (DecimalType(9, 2), 1.5, Decimal("1.50")),
        (DecimalType(9, 2), "-3.1", Decimal("-3.10")),
        (DecimalType(9, 2), 12, Decimal("12.00")),
        (DecimalType(9, 2), Decimal("1.230"), Decimal("1.23")),
        (DecimalType(4, 0), 10**4, ABOVE_MAX),
        (DateType(), "2024-01-01", 19723),
        (DateType(), dt.date(1969, 12, 31), -1),
        (DateType(), 5, 5),
        (TimeType(), "12:30", 45_000_000_000),
        (TimeType(), "00:00:01.5", 1_500_000),
        (TimeType(), dt.time(0, 0, 0, 7), 7),
        (TimestampType(), "2024-01-01T00:00:00", TS_2024),
        (TimestampType(), "2024-01-01", TS_2024),
        (TimestampType(), "2024-01-01 00:00:00.000001", TS_2024 + 1),
        (TimestampType(), dt.datetime(2024, 1, 1), TS_2024),
        (TimestampType(), "1969-12-31T23:59:59.999999", -1),
        (TimestamptzType(), "2024-01-01T01:00:00+01:00", TS_2024),
        (TimestamptzType(), "2024-01-01T00:00:00Z", TS_2024),
        (TimestamptzType(), "2024-01-01T00:00:00", TS_2024),
        (TimestamptzType(), dt.datetime(2024, 1, 1, 1, tzinfo=PLUS_ONE), TS_2024),
        (TimestampNanoType(), "2024-01-01T00:00:00.123456789", TS_2024 * 1000 + 123456789),
        (TimestamptzNanoType(), "2023-12-31T23:00:00-01:00", TS_2024 * 1000),
        (TimestampNanoType(), dt.datetime(2024, 1, 1, 0, 0, 0, 1), TS_2024 * 1000 + 1000),
        (StringType(), "héllo", "héllo"),
        (UUIDType(), UUID_TEXT, uuid.UUID(UUID_TEXT)),
        (UUIDType(), b"\x01" * 16, uuid.UUID(bytes=b"\x01" * 16)),
        (FixedType(3), b"abc", b"abc"),
        (BinaryType(), bytearray(b"\x00"), b"\x00"),
        (BooleanType(), "TRUE", True),
        (BooleanType(), False, False),
    ],
)
def test_convert_literal(t: IcebergType, value: Any, expected: Any) -> None:
    got = convert_literal(value, t)
    assert got == expected
    assert type(got) is type(expected)


@pytest.mark.parametrize(
    ("t", "value", "fragment"),
    [
        (IntegerType(), 1.5, "expected an integer"),
        (IntegerType(), True, "True"),
        (IntegerType(), "1.5", "expected an integer"),
        (DecimalType(9, 2), "1.234", "more than 2 digits"),
        (DecimalType(9, 2), "abc", "not a number"),
        (DateType(), "2024-02-30", "ISO date"),
        (DateType(), dt.datetime(2024, 1, 1), "got a datetime"),
        (TimeType(), "25:00", "ISO time"),
        (TimeType(), "00:00:00.0000001", "fractional"),
        (TimestampType(), "2024-01-01T00:00:00+01:00", "without time zone"),
        (TimestampType(), dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc), "aware"),
        (TimestampType(), "yesterday", "ISO-8601"),
        (StringType(), 5, "expected a string"),
        (UUIDType(), "not-a-uuid", "UUID"),
        (FixedType(3), b"ab", "3 bytes"),
        (BinaryType(), "ab", "bytes"),
        (BooleanType(), 1, "boolean"),
        (DoubleType(), "nan", "NaN"),
    ],
)
def test_impossible_literals_raise(t: IcebergType, value: Any, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        convert_literal(value, t)
    assert fragment in str(info.value)
    assert repr(value) in str(info.value)


def test_bind_error_names_the_column() -> None:
    with pytest.raises(ValidationError, match=r"column 'day'.*'nope'"):
        bind(SCHEMA, col("day") == "nope")


@settings(deadline=None)
@given(st.dates(min_value=dt.date(1, 1, 1), max_value=dt.date(9999, 12, 31)))
def test_days_from_civil_matches_datetime(d: dt.date) -> None:
    assert days_from_civil(d.year, d.month, d.day) == (d - dt.date(1970, 1, 1)).days


@settings(deadline=None)
@given(st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31)))
def test_timestamp_strings_match_pyiceberg(value: dt.datetime) -> None:
    from pyiceberg.expressions.literals import literal
    from pyiceberg.types import TimestampType as PyTimestamp

    text = value.isoformat()
    assert convert_literal(text, TimestampType()) == literal(text).to(PyTimestamp()).value


# ---------------------------------------------------------------------------------------------
# integer literals on nanosecond timestamps: microseconds, as in the Java reference


@pytest.mark.parametrize("t", [TimestampNanoType(), TimestamptzNanoType()])
def test_int_literals_are_micros_for_nanosecond_timestamps(t: IcebergType) -> None:
    # Java: LongLiteral.to(TIMESTAMP_NANO) "assume[s] micros and convert[s] to nanos".
    assert convert_literal(TS_2024, t) == TS_2024 * 1000
    assert convert_literal(-1, t) == -1000
    # The same int means the same instant as on a microsecond column and as a datetime.
    when = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc if t == TimestamptzNanoType() else None)
    assert convert_literal(TS_2024, t) == convert_literal(when, t)
    assert convert_literal(TS_2024, t) == convert_literal(TS_2024, TimestampType()) * 1000
    # Nanosecond-exact literals: an ISO string with nine fraction digits.
    assert convert_literal("2024-01-01T00:00:00.000000001", TimestampNanoType()) == (
        TS_2024 * 1000 + 1
    )


def test_int_literal_filters_on_nanosecond_columns_select_the_same_instant() -> None:
    by_int = bind(SCHEMA, col("tsn") >= TS_2024)
    by_text = bind(SCHEMA, parse("tsn >= '2024-01-01T00:00:00'"))
    assert by_int == by_text
    assert bind(SCHEMA, parse(f"tstzn < {TS_2024}")) == bind(
        SCHEMA, col("tstzn") < dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    )


def test_int_literals_beyond_the_nanosecond_range_are_out_of_range() -> None:
    limit = (2**63 - 1) // 1000  # the last microsecond a nanosecond long holds
    assert convert_literal(limit, TimestampNanoType()) == limit * 1000
    assert convert_literal(limit + 1, TimestampNanoType()) is ABOVE_MAX
    assert convert_literal(-limit - 1, TimestampNanoType()) is BELOW_MIN
    # true of every value, the nulls of the optional column aside
    assert bind(SCHEMA, col("tsn") < limit + 1) == bind(SCHEMA, col("tsn").not_null())
    assert bind(SCHEMA, col("tsn") > -limit - 1) == bind(SCHEMA, col("tsn").not_null())
    assert convert_literal(2**63, TimestampType()) is ABOVE_MAX


def test_pandas_timestamps_keep_their_nanoseconds() -> None:
    pd = pytest.importorskip("pandas")
    value = pd.Timestamp("2024-01-01T00:00:00.123456789")
    assert convert_literal(value, TimestampNanoType()) == TS_2024 * 1000 + 123456789
    with pytest.raises(ValidationError, match="more than 6 fractional digits"):
        convert_literal(value, TimestampType())  # never silently truncated
    assert convert_literal(pd.Timestamp("2024-01-01T00:00:01"), TimestampType()) == TS_2024 + 10**6


def test_pyiceberg_has_no_rule_for_long_literals_on_nanosecond_timestamps() -> None:
    """Why the Java rule is the one to follow: PyIceberg 0.12 refuses the conversion."""
    literals = pytest.importorskip("pyiceberg.expressions.literals")
    from pyiceberg.types import TimestampNanoType as TheirNano

    with pytest.raises(TypeError):
        literals.literal(TS_2024).to(TheirNano())
