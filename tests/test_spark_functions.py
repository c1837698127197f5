"""icefloe.spark.functions: transform UDFs checked against icefloe.transforms and Iceberg Java."""

from __future__ import annotations

import datetime as dt
import decimal
import random
from typing import Any

import pyarrow as pa
import pytest

from icefloe.exceptions import ValidationError
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)
from support.spark import JavaCatalog

pytest.importorskip("pyspark")

from icefloe.spark import functions as ifn

pytestmark = pytest.mark.spark

N = 400


def _rows() -> list[tuple[Any, ...]]:
    rng = random.Random(7)
    epoch = dt.datetime(1970, 1, 1)
    rows = []
    for i in range(N):
        null = i % 37 == 0
        ts = epoch + dt.timedelta(microseconds=rng.randint(-(10**15), 3 * 10**15))
        rows.append(
            (
                None if null else rng.randint(-(2**31), 2**31 - 1),
                None if null else rng.randint(-(2**63), 2**63 - 1),
                None if null else "".join(rng.choice("aé€😀xyz") for _ in range(rng.randint(0, 9))),
                None if null else rng.randbytes(rng.randint(0, 9)),
                None if null else decimal.Decimal(rng.randint(-(10**9), 10**9)).scaleb(-2),
                None if null else ts.date(),
                None if null else ts.replace(tzinfo=dt.timezone.utc),
                None if null else ts,
            )
        )
    return rows


SCHEMA = (
    "i int, l long, s string, b binary, d decimal(11,2), dt date, ts timestamp, ntz timestamp_ntz"
)


@pytest.fixture(scope="module")
def frame(spark: Any) -> Any:
    return spark.createDataFrame(_rows(), SCHEMA).cache()


def _arrow(frame: Any, *cols: Any) -> pa.Table:
    return frame.select(*cols).toArrow()


def test_udfs_equal_icefloe_transforms(frame: Any) -> None:
    got = _arrow(
        frame,
        ifn.bucket(16, "i").alias("bi"),
        ifn.bucket(7, "l").alias("bl"),
        ifn.bucket(5, "s").alias("bs"),
        ifn.bucket(3, "b").alias("bb"),
        ifn.bucket(9, "d").alias("bd"),
        ifn.bucket(11, "dt").alias("bdt"),
        ifn.bucket(13, "ts").alias("bts"),
        ifn.truncate(10, "i", "int").alias("ti"),
        ifn.truncate(100, "l", "bigint").alias("tl"),
        ifn.truncate(2, "s").alias("ts_"),
        ifn.truncate(3, "b", "binary").alias("tb"),
        ifn.truncate(50, "d", "decimal(11,2)").alias("td"),
        ifn.years("ts").alias("y"),
        ifn.months("dt").alias("m"),
        ifn.days("ntz").alias("dd"),
        ifn.hours("ts").alias("h"),
    )
    src = _arrow(frame, "i", "l", "s", "b", "d", "dt", "ts", "ntz")
    expect = {
        "bi": BucketTransform(16).apply(src["i"]),
        "bl": BucketTransform(7).apply(src["l"]),
        "bs": BucketTransform(5).apply(src["s"]),
        "bb": BucketTransform(3).apply(src["b"]),
        "bd": BucketTransform(9).apply(src["d"]),
        "bdt": BucketTransform(11).apply(src["dt"]),
        "bts": BucketTransform(13).apply(src["ts"]),
        "ti": TruncateTransform(10).apply(src["i"]),
        "tl": TruncateTransform(100).apply(src["l"]),
        "ts_": TruncateTransform(2).apply(src["s"]),
        "tb": TruncateTransform(3).apply(src["b"]),
        "td": TruncateTransform(50).apply(src["d"]),
        "y": YearTransform().apply(src["ts"]),
        "m": MonthTransform().apply(src["dt"]),
        "dd": DayTransform().apply(src["ntz"]).cast(pa.date32()),
        "h": HourTransform().apply(src["ts"]),
    }
    for name, want in expect.items():
        assert got[name].to_pylist() == want.to_pylist(), name
    # Not vacuous: nulls stay null, other values spread over the buckets.
    assert got["bi"].null_count == len([r for r in range(N) if r % 37 == 0])
    assert len(set(got["bi"].to_pylist())) == 17


def test_bucket_matches_spec_vectors(spark: Any) -> None:
    # Spec Appendix B: bucket hash values (mod 2^31 after dropping the sign bit).
    df = spark.createDataFrame(
        [(34, 34, "iceberg", dt.date(2017, 11, 16))], "i int, l long, s string, d date"
    )
    row = df.select(
        ifn.bucket(2**31 - 1, "i"),
        ifn.bucket(2**31 - 1, "l"),
        ifn.bucket(2**31 - 1, "s"),
        ifn.bucket(2**31 - 1, "d"),
    ).first()
    assert list(row) == [2017239379, 2017239379, 1210000089, (-653330422) & 0x7FFFFFFF]


def test_sql_registration(spark: Any, frame: Any) -> None:
    names = ifn.register_functions(spark)
    assert "icefloe_bucket" in names and "icefloe_days" in names
    frame.createOrReplaceTempView("fn_src")
    got = spark.sql(
        "SELECT icefloe_bucket(16, i) AS b, icefloe_truncate(2, s) AS t, "
        "icefloe_truncate_long(100, l) AS tl, icefloe_days(ts) AS d, icefloe_hours(ts) AS h "
        "FROM fn_src"
    ).toArrow()
    src = _arrow(frame, "i", "s", "l", "ts")
    assert got["b"].to_pylist() == BucketTransform(16).apply(src["i"]).to_pylist()
    assert got["t"].to_pylist() == TruncateTransform(2).apply(src["s"]).to_pylist()
    assert got["tl"].to_pylist() == TruncateTransform(100).apply(src["l"]).to_pylist()
    want_days = DayTransform().apply(src["ts"]).cast(pa.date32())
    assert got["d"].to_pylist() == want_days.to_pylist()
    assert got["h"].to_pylist() == HourTransform().apply(src["ts"]).to_pylist()


def test_bad_parameters_raise_validation_errors() -> None:
    with pytest.raises(ValidationError, match="num_buckets"):
        ifn.bucket(0, "i")
    with pytest.raises(ValidationError, match="width"):
        ifn.truncate(-3, "s")


def test_udfs_equal_iceberg_java_system_functions(iceberg_spark: JavaCatalog, frame: Any) -> None:
    frame.createOrReplaceTempView("fn_java")
    c = iceberg_spark.name
    java = iceberg_spark.spark.sql(
        f"SELECT {c}.system.bucket(16, i) AS bi, {c}.system.bucket(7, l) AS bl, "
        f"{c}.system.bucket(5, s) AS bs, {c}.system.bucket(3, b) AS bb, "
        f"{c}.system.bucket(9, d) AS bd, {c}.system.bucket(11, dt) AS bdt, "
        f"{c}.system.bucket(13, ts) AS bts, {c}.system.bucket(13, ntz) AS bntz, "
        f"{c}.system.truncate(10, i) AS ti, {c}.system.truncate(100, l) AS tl, "
        f"{c}.system.truncate(2, s) AS ts_, {c}.system.truncate(3, b) AS tb, "
        f"{c}.system.truncate(50, d) AS td, "
        f"{c}.system.years(ts) AS y, {c}.system.months(dt) AS m, "
        f"{c}.system.days(ntz) AS dd, {c}.system.hours(ts) AS h, {c}.system.hours(ntz) AS hn "
        "FROM fn_java"
    ).toArrow()
    ours = _arrow(
        frame,
        ifn.bucket(16, "i").alias("bi"),
        ifn.bucket(7, "l").alias("bl"),
        ifn.bucket(5, "s").alias("bs"),
        ifn.bucket(3, "b").alias("bb"),
        ifn.bucket(9, "d").alias("bd"),
        ifn.bucket(11, "dt").alias("bdt"),
        ifn.bucket(13, "ts").alias("bts"),
        ifn.bucket(13, "ntz").alias("bntz"),
        ifn.truncate(10, "i", "int").alias("ti"),
        ifn.truncate(100, "l", "bigint").alias("tl"),
        ifn.truncate(2, "s").alias("ts_"),
        ifn.truncate(3, "b", "binary").alias("tb"),
        ifn.truncate(50, "d", "decimal(11,2)").alias("td"),
        ifn.years("ts").alias("y"),
        ifn.months("dt").alias("m"),
        ifn.days("ntz").alias("dd"),
        ifn.hours("ts").alias("h"),
        ifn.hours("ntz").alias("hn"),
    )
    for name in java.column_names:
        assert ours[name].to_pylist() == java[name].to_pylist(), name
