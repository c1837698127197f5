"""The ``icefloe`` format against Iceberg Java on what Spark hands it: a stream's ``filter``
option applied as a batch read applies it, decimals of other precisions and scales and integers
written to decimal columns, DataFrame columns matched case-insensitively as the session says,
nanosecond timestamps before 1970 rounded down to microseconds."""

from __future__ import annotations

import itertools
import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.spark import JavaCatalog
from support.spark_format import catalog_options, fmt_read
from support.spark_util import icefloe_catalog

pytest.importorskip("pyspark")

import icefloe.spark as ispark
from icefloe.schema import Schema
from icefloe.types import LongType, NestedField, TimestampNanoType, TimestamptzNanoType

pytestmark = pytest.mark.spark

_NAMES = itertools.count()


def _memory(df: Any) -> list[tuple[Any, ...]]:
    """The rows a stream reads until it has nothing more (memory sink), sorted."""
    name = f"checks_{next(_NAMES)}"
    q = df.writeStream.format("memory").queryName(name).start()
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    return sorted(tuple(r) for r in df.sparkSession.table(name).collect())


def _icefloe_stream(spark: Any, catalog: Any, table: str, **options: str) -> Any:
    r = spark.readStream.format("icefloe").options(**catalog_options(catalog))
    return r.options(**{k.replace("_", "-"): v for k, v in options.items()}).load(table)


def test_a_stream_applies_the_filter_option_as_java_applies_where(
    spark: Any, iceberg_spark: JavaCatalog
) -> None:
    """Rows of every micro-batch filtered, also in snapshots written before a column the filter
    names was added (bound to the stream's schema); a malformed filter stops the query."""
    ispark.register(spark)
    j = iceberg_spark
    j.sql("CREATE TABLE {c}.db.src (id bigint, p string) USING iceberg PARTITIONED BY (p)")
    j.sql("INSERT INTO {c}.db.src VALUES (1, 'a'), (2, 'b')")
    j.sql("INSERT INTO {c}.db.src VALUES (3, 'a'), (4, 'b')")
    j.sql("ALTER TABLE {c}.db.src ADD COLUMN x int")
    j.sql("INSERT INTO {c}.db.src VALUES (5, 'b', 50), (6, 'a', 60), (7, 'a', 10)")
    cat = j.icefloe()
    where = "p = 'b' or x > 55"
    java = _memory(spark.readStream.format("iceberg").load(f"{j.name}.db.src").where(where))
    assert [r[0] for r in java] == [2, 4, 5, 6]
    assert _memory(_icefloe_stream(spark, cat, "db.src", filter=where)) == java
    one_file = {"filter": where, "max_files_per_micro_batch": "1"}
    assert _memory(_icefloe_stream(spark, cat, "db.src", **one_file)) == java
    batch = fmt_read(spark, cat, "db.src", filter=where)
    assert sorted(tuple(r) for r in batch.collect()) == java
    with pytest.raises(Exception, match=r"ParseError.*option 'filter'"):
        _memory(_icefloe_stream(spark, cat, "db.src", filter="id >= 8 and"))
    with pytest.raises(Exception, match="cannot find column 'nosuch'"):
        _memory(_icefloe_stream(spark, cat, "db.src", filter="nosuch > 1"))


def test_a_streams_filter_prunes_files(tmp_path: Path) -> None:
    """The planner prunes the files a stream's filter rules out (partitions, metrics); the
    offsets still count every added file."""
    from icefloe.partitioning import PartitionField, PartitionSpec
    from icefloe.spark.streaming import IcefloeStreamReader
    from icefloe.transforms import IdentityTransform
    from icefloe.types import StringType

    cat = icefloe_catalog(tmp_path / "wh")
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "p", StringType()))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "p"))
    t = cat.create_table("db.src", schema, partition_spec=spec)
    for lo, p in ((0, "a"), (10, "b"), (20, "a"), (30, "b")):
        t.refresh().append(
            pa.table({"id": pa.array(range(lo, lo + 10), pa.int64()), "p": [p] * 10})
        )
    options = {**catalog_options(cat), "path": "db.src", "max-files-per-micro-batch": "3"}

    def planned(reader: IcefloeStreamReader) -> list[list[str]]:
        start = reader.initialOffset()
        out = []
        while (end := reader.latestOffset()) != start:
            parts = reader.partitions(start, end)
            out.append(
                [task.data_file.partition[0] for p in parts for task in pickle.loads(p.tasks)]
            )
            start = end
        return out

    assert planned(IcefloeStreamReader(options)) == [["a", "b", "a"], ["b"]]
    assert planned(IcefloeStreamReader({**options, "filter": "p = 'b'"})) == [["b"], ["b"]]
    # metrics: no file holds ids above 35
    assert planned(IcefloeStreamReader({**options, "filter": "id > 35"})) == [[], ["b"]]


def test_a_stream_with_two_starting_points_is_refused(tmp_path: Path) -> None:
    from icefloe.exceptions import ValidationError
    from icefloe.spark.streaming import IcefloeStreamReader

    cat = icefloe_catalog(tmp_path / "wh")
    cat.create_namespace("db")
    t = cat.create_table("db.src", Schema(NestedField(1, "id", LongType())))
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    first = t.refresh().metadata.current_snapshot()
    assert first is not None
    options = {**catalog_options(cat), "path": "db.src"}
    both = {"start-snapshot-id": str(first.snapshot_id), "stream-from-timestamp": "0"}
    # refused by the first call Spark makes (raised by the constructor, PySpark's stream
    # runner would report its own error first)
    refused = IcefloeStreamReader({**options, **both})
    for call in (refused.initialOffset, refused.latestOffset, lambda: refused.commit({})):
        with pytest.raises(ValidationError, match="give one"):
            call()
    for one in both:
        assert IcefloeStreamReader({**options, one: both[one]}).initialOffset()


_DECIMAL_CASES = {
    "literal decimal(2,1)": "SELECT 'a' k, 5.5 amt",
    "sum decimal(20,2)": (
        "SELECT k, sum(v) amt FROM VALUES ('b', CAST(1.25 AS decimal(10,2))) AS t(k, v) GROUP BY k"
    ),
    "bigint": "SELECT 'c' k, 7L amt",
}


def test_decimals_of_other_types_and_integers_are_written_as_java_writes_them(
    spark: Any, iceberg_spark: JavaCatalog
) -> None:
    ispark.register(spark)
    j = iceberg_spark
    for name in ("ours", "java"):
        j.sql(f"CREATE TABLE {{c}}.db.{name} (k string, amt decimal(10,2)) USING iceberg")
    cat = j.icefloe()
    for query in _DECIMAL_CASES.values():
        df = spark.sql(query)
        df.write.format("icefloe").options(**catalog_options(cat)).mode("append").save("db.ours")
        df.writeTo(f"{j.name}.db.java").append()
    ours = sorted(tuple(r) for r in j.sql("SELECT * FROM {c}.db.ours").collect())
    assert ours == sorted(tuple(r) for r in j.sql("SELECT * FROM {c}.db.java").collect())
    assert len(ours) == 3
    too_wide = spark.sql("SELECT 'd' k, CAST(123456789.5 AS decimal(12,1)) amt")
    with pytest.raises(Exception, match=r"value 123456789.5 cannot be written as decimal\(10, 2\)"):
        too_wide.write.format("icefloe").options(**catalog_options(cat)).mode("append").save(
            "db.ours"
        )


def test_columns_differing_in_case_are_matched_as_the_session_says(
    spark: Any, iceberg_spark: JavaCatalog
) -> None:
    """Under Spark's default ``spark.sql.caseSensitive=false`` DataFrame columns match the
    table's ignoring case, as Java's writes match them; columns equal but for case are
    refused; a case-sensitive session matches exactly."""
    j = iceberg_spark
    for name in ("ours", "java"):
        j.sql(f"CREATE TABLE {{c}}.db.{name} (id bigint, name string) USING iceberg")
    cat = j.icefloe()
    opts = catalog_options(cat)
    assert spark.conf.get("spark.sql.caseSensitive") == "false"
    ispark.register(spark)
    df = spark.sql("SELECT 1L AS ID, 'x' AS Name")
    df.write.format("icefloe").options(**opts).mode("append").save("db.ours")
    df.writeTo(f"{j.name}.db.java").append()
    java = sorted(tuple(r) for r in j.sql("SELECT * FROM {c}.db.java").collect())
    assert sorted(tuple(r) for r in j.sql("SELECT * FROM {c}.db.ours").collect()) == java
    ispark.write(df, cat.load_table("db.ours"))  # the mapInArrow writer matches the same way
    assert sorted(tuple(r) for r in j.sql("SELECT * FROM {c}.db.ours").collect()) == java * 2
    both = spark.sql("SELECT 2L AS id, 3L AS ID")
    with pytest.raises(Exception, match="'id' and 'ID' differ only in case"):
        both.write.format("icefloe").options(**opts).mode("append").save("db.ours")
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        ispark.register(spark)
        with pytest.raises(Exception, match="DataFrame column 'ID' is not in the schema"):
            df.write.format("icefloe").options(**opts).mode("append").save("db.ours")
        with pytest.raises(Exception, match="DataFrame column 'ID' is not in the schema"):
            ispark.write(df, cat.load_table("db.ours"))
    finally:
        spark.conf.unset("spark.sql.caseSensitive")
        ispark.register(spark)


def _nanosecond_table(spark: Any, tmp_path: Path, zoned: str, local: str) -> tuple[Any, Any]:
    """A catalog and its v3 table ``db.t`` of ``id``, a ``timestamptz_ns`` column ``zoned``
    and a ``timestamp_ns`` column ``local``."""
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh")
    cat.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, zoned, TimestamptzNanoType()),
        NestedField(3, local, TimestampNanoType()),
    )
    return cat, cat.create_table("db.t", schema, format_version=3)


def test_nanosecond_timestamps_before_1970_are_rounded_down(spark: Any, tmp_path: Path) -> None:
    """As Iceberg Java's ``DateTimeUtil.nanosToMicros`` (a floor division): -1 ns is -1 us."""
    cat, t = _nanosecond_table(spark, tmp_path, "tz", "ntz")
    nanos = [-1, -1500, -1000, 1999]
    t.append(
        pa.table(
            {
                "id": pa.array(range(4), pa.int64()),
                "tz": pa.array(nanos, pa.timestamp("ns", tz="UTC")),
                "ntz": pa.array(nanos, pa.timestamp("ns")),
            }
        )
    )
    df = fmt_read(spark, cat, "db.t").selectExpr(
        "id",
        "unix_micros(tz)",
        "unix_micros(CAST(ntz AS timestamp))",  # a UTC session
    )
    got = sorted(tuple(r) for r in df.collect())
    assert got == [(i, n // 1000, n // 1000) for i, n in enumerate(nanos)]


def test_nanosecond_columns_refuse_what_microsecond_columns_refuse(
    spark: Any, tmp_path: Path
) -> None:
    """Spark's TIMESTAMP (an instant) written to a ``timestamp_ns`` column, or TIMESTAMP_NTZ
    to a ``timestamptz_ns`` one, was stored shifted by the session's zone (the microsecond
    columns and ``Table.append`` refuse it), and a year outside 1677-2262 failed with a bare
    Arrow error: both are ``ValidationError``s naming the column, nothing committed."""
    from icefloe.exceptions import ValidationError
    from icefloe.spark.errors import icefloe_errors

    cat, t = _nanosecond_table(spark, tmp_path, "tz", "ts")
    opts = catalog_options(cat)
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        for sql, match in (
            ("timestamp'2024-01-01 10:00:00' ts, timestamp'2024-01-01 10:00:00' tz", "'ts'"),
            ("timestamp_ntz'2024-01-01 10:00' ts, timestamp_ntz'2024-01-01 10:00' tz", "'tz'"),
            ("timestamp_ntz'2300-01-01 00:00' ts, timestamp'2024-01-01 10:00' tz", "1677-2262"),
        ):
            df = spark.sql(f"SELECT 1L id, {sql}")
            with pytest.raises(ValidationError, match=match), icefloe_errors():
                df.write.format("icefloe").options(**opts).mode("append").save("db.t")
        assert t.refresh().current_snapshot() is None
        ok = "timestamp_ntz'2024-01-01 10:00' ts, timestamp'2024-01-01 10:00' tz"
        spark.sql(f"SELECT 1L id, {ok}").write.format("icefloe").options(**opts).mode(
            "append"
        ).save("db.t")
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    (row,) = t.refresh().scan().to_arrow().to_pylist()
    assert str(row["ts"]) == "2024-01-01 10:00:00" and str(row["tz"]) == "2024-01-01 18:00:00+00:00"


_VARIANTS = (
    'SELECT 1L id, parse_json(\'{"a": 1, "b": [true, null, "x"]}\') v '
    "UNION ALL SELECT 2L, parse_json('12345678901234567890') "
    "UNION ALL SELECT 3L, CAST(NULL AS variant) "
    'UNION ALL SELECT 4L, parse_json(\'{"a": 2.5, "c": {"d": "e"}}\')'
)


def test_variant_columns_are_sparks_variant_type_both_ways(
    spark: Any, iceberg_spark: JavaCatalog
) -> None:
    """Variant columns reach Spark as ``VariantType`` (its functions apply) from both the
    format and ``icefloe.spark.read``, and Spark's variants are written through the format
    and ``icefloe.spark.write`` as Iceberg Java reads them."""
    from pyspark.sql.types import VariantType

    ispark.register(spark)
    j = iceberg_spark
    ddl = "(id bigint, v variant) USING iceberg TBLPROPERTIES ('format-version'='3')"
    for name in ("vjava", "vfmt", "vmap"):
        j.sql(f"CREATE TABLE {{c}}.db.{name} {ddl}")
    j.sql(f"INSERT INTO {{c}}.db.vjava {_VARIANTS}")
    cat = j.icefloe()
    query = "SELECT id, to_json(v) j, variant_get(v, '$.a', 'double') a FROM {} ORDER BY id"
    java = [tuple(r) for r in j.sql(query.format("{c}.db.vjava")).collect()]
    assert java[0] == (1, '{"a":1,"b":[true,null,"x"]}', 1.0) and java[2] == (3, None, None)
    for df in (
        fmt_read(spark, cat, "db.vjava"),
        ispark.read(spark, cat.load_table("db.vjava")),
    ):
        assert isinstance(df.schema["v"].dataType, VariantType)
        df.createOrReplaceTempView("ours")
        assert [tuple(r) for r in spark.sql(query.format("ours")).collect()] == java
    source = spark.sql(_VARIANTS)
    source.write.format("icefloe").options(**catalog_options(cat)).mode("append").save("db.vfmt")
    ispark.write(source, cat.load_table("db.vmap"))
    for name in ("vfmt", "vmap"):
        assert [tuple(r) for r in j.sql(query.format(f"{{c}}.db.{name}")).collect()] == java
