"""Batch reads through the ``icefloe`` format equal ``icefloe.spark.read``, icefloe's own
single-process read and Spark with Iceberg's Java runtime; filters Spark pushes are taken
only where icefloe evaluates them as Spark does, and prune the scan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.spark import JavaCatalog
from support.spark_format import catalog_options, fmt_read, optimized_plan
from support.spark_tables import java_tables
from support.spark_util import (
    SPEC,
    all_types_rows,
    all_types_schema,
    arrow_rows,
    icefloe_catalog,
    single_process,
    spark_rows,
)

pytest.importorskip("pyspark")

import icefloe.spark as ispark
from icefloe.exceptions import (
    NoSuchSnapshotError,
    NoSuchTableError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.spark.errors import icefloe_errors
from icefloe.spark.schema import FIELD_ID
from icefloe.spark.source import IcefloeDataSource

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path_factory.mktemp("fmt") / "wh", name="fmt")
    cat.create_namespace("db")
    schema = all_types_schema()
    for version in (2, 3):
        t = cat.create_table(f"db.p{version}", schema, partition_spec=SPEC, format_version=version)
        t.append(all_types_rows(0, 150, schema))
        t.append(all_types_rows(150, 90, schema))
    u = cat.create_table("db.u", schema, format_version=2)
    u.append(all_types_rows(0, 40, schema))
    return cat


@pytest.mark.parametrize("name", ["p2", "u"])
def test_format_read_equals_function_and_single_process(spark: Any, tables: Any, name: str) -> None:
    t = tables.load_table(f"db.{name}")
    df = fmt_read(spark, tables, f"db.{name}")
    got = spark_rows(df)
    assert got == spark_rows(ispark.read(spark, t)) == arrow_rows(single_process(t))
    assert len(got) == (240 if name != "u" else 40)
    assert df.schema == ispark.read(spark, t).schema
    assert [f.metadata[FIELD_ID] for f in df.schema.fields] == [
        f.field_id for f in t.schema().fields
    ]


#: Predicates compared with Spark evaluating them itself over ``icefloe.spark.read``; the
#: second item says whether the format takes them (pushed: gone from Spark's plan).
PREDICATES = [
    ("id >= 100 AND id < 130", True),
    ("id IN (1, 2, 3, 200, 1000)", True),
    ("s LIKE 's1%'", True),
    ("s LIKE '%1é'", False),  # ends-with: Spark's
    ("NOT (i = 7)", True),  # SQL NOT: rows with a null i are not kept
    ("b", True),
    ("i IS NULL", True),
    ("dt >= DATE'2024-02-01'", True),
    ("ts < TIMESTAMP_NTZ'2024-01-05 00:00:00'", True),
    ("tz >= TIMESTAMP'2024-02-01 00:00:00Z'", True),
    ("dec > 0.5", True),
    ("st.a > 100", True),
    ("d > 30.0", False),  # NaN orders differently in Spark and Iceberg: Spark's
    ("u = '00000000-0000-0000-0000-000000009aac'", False),  # uuid is a string in Spark
    ("id < 10 OR id > 230", False),  # Spark pushes no OR
]


def test_filters_equal_spark_evaluation(spark: Any, tables: Any) -> None:
    from functools import reduce

    from pyspark.sql import functions as F

    t = tables.load_table("db.p3")
    base = ispark.read(spark, t).cache()
    ours, theirs = [], []
    for i, (predicate, pushed) in enumerate(PREDICATES):
        df = fmt_read(spark, tables, "db.p3", filter_pushdown="true").where(predicate)
        plan = optimized_plan(df)
        # A filter the source took is no longer in the Filter above the scan.
        assert ("Filter" not in plan.split("RelationV2")[0]) == pushed, (predicate, plan)
        ours.append(df.select(F.lit(i).alias("k"), "id"))
        theirs.append(base.where(predicate).select(F.lit(i).alias("k"), "id"))
    got = sorted(map(tuple, reduce(lambda a, b: a.unionByName(b), ours).collect()))
    want = sorted(map(tuple, reduce(lambda a, b: a.unionByName(b), theirs).collect()))
    base.unpersist()
    assert got == want
    assert {k for k, _ in want} == set(range(len(PREDICATES))), "each predicate keeps rows"


def test_a_dataframe_queried_again_reads_every_row(spark: Any, tables: Any) -> None:
    """PySpark 4.1 keeps the read a filter pushdown planned on the DataFrame's source and
    reuses it for the DataFrame's later queries that push nothing: by default the format
    takes no pushed filters, so a DataFrame queried with a filter, then without, then with an
    OR, and written out, gives every row each time; the ``filter`` option prunes instead,
    as part of the DataFrame."""
    n = len(tables.load_table("db.p2").scan().to_arrow())
    df = fmt_read(spark, tables, "db.p2")
    assert [r["id"] for r in df.where("id = 5").collect()] == [5]
    assert df.count() == n
    assert df.where("id = 5 OR id > -1").count() == n
    assert len(df.collect()) == n
    pruned = fmt_read(spark, tables, "db.p2", split_size=1, filter="id = 5")
    assert pruned.rdd.getNumPartitions() == 1
    assert [r["id"] for r in pruned.collect()] == [5] and pruned.count() == 1
    # what the pushdown reader does with a reused DataFrame (why it is an opt-in)
    once = fmt_read(spark, tables, "db.p2", filter_pushdown="true")
    assert [r["id"] for r in once.where("id = 5").collect()] == [5]


def test_selective_filter_plans_fewer_tasks(spark: Any, tables: Any) -> None:
    # split-size 1: one Spark partition per planned task (file), so the partition count
    # shows how many files the scan reads.
    every = fmt_read(spark, tables, "db.p2", split_size=1)
    one = fmt_read(spark, tables, "db.p2", split_size=1, filter_pushdown="true").where("id = 5")
    n_all = every.rdd.getNumPartitions()
    n_one = one.rdd.getNumPartitions()
    assert n_all == len(tables.load_table("db.p2").scan().plan_files()) > 4
    assert n_one == len(tables.load_table("db.p2").scan(row_filter="id = 5").plan_files()) == 1
    assert [r["id"] for r in one.collect()] == [5]
    # Default split size: the table's small files are packed into one partition per core
    # (the split size adapted to the session's parallelism, 2 on the tests' local[2]).
    assert fmt_read(spark, tables, "db.p2").rdd.getNumPartitions() == 2
    assert fmt_read(spark, tables, "db.p2", split_size=1 << 30).rdd.getNumPartitions() == 1


def test_options_snapshot_branch_columns_metadata(spark: Any, tables: Any) -> None:
    t = tables.load_table("db.p3")
    first, second = t.snapshots()[0], t.snapshots()[1]
    assert fmt_read(spark, tables, "db.p3", snapshot_id=first.snapshot_id).count() == 150
    assert fmt_read(spark, tables, "db.p3", as_of_timestamp=first.timestamp_ms).count() == 150
    t.manage_snapshots().create_branch("old", first.snapshot_id).commit()
    assert fmt_read(spark, tables, "db.p3", branch="old").count() == 150
    assert fmt_read(spark, tables, "db.p3", branch="main").count() == 240
    df = fmt_read(
        spark,
        tables,
        "db.p3",
        columns="id,st.a",
        metadata_columns="_file,_pos,_row_id,_last_updated_sequence_number",
    )
    assert df.columns == ["id", "st", "_file", "_pos", "_row_id", "_last_updated_sequence_number"]
    rows = df.collect()
    assert all(set(r["st"].asDict()) == {"a"} for r in rows if r["st"] is not None)
    by_id = {r["id"]: r for r in rows}
    assert by_id[5]["_last_updated_sequence_number"] == 1
    assert by_id[200]["_last_updated_sequence_number"] == second.sequence_number
    assert sorted(r["_row_id"] for r in rows) == list(range(240))
    want = ispark.read(spark, t, selected_fields=["id"], metadata_columns=["_file", "_pos"])
    got = df.select("id", "_file", "_pos")
    assert sorted(map(tuple, got.collect())) == sorted(map(tuple, want.collect()))


def test_errors_are_clear(spark: Any, tables: Any) -> None:
    with pytest.raises(NoSuchTableError), icefloe_errors():
        fmt_read(spark, tables, "db.nope").collect()
    with pytest.raises(NoSuchSnapshotError), icefloe_errors():
        fmt_read(spark, tables, "db.p2", snapshot_id=1).collect()
    with pytest.raises(Exception, match="metadata column"):
        fmt_read(spark, tables, "db.p2", metadata_columns="_nope").collect()
    # options Iceberg's runtime reads and this source would otherwise ignore: refused
    t = tables.load_table("db.p2")
    first = t.snapshots()[0].snapshot_id
    with pytest.raises(UnsupportedFeatureError, match="changelog reads"), icefloe_errors():
        fmt_read(spark, tables, "db.p2", start_timestamp=1).collect()
    with pytest.raises(ValidationError, match="needs a start snapshot"), icefloe_errors():
        fmt_read(spark, tables, "db.p2", end_snapshot_id=first).collect()
    with pytest.raises(ValidationError, match="cannot also choose"), icefloe_errors():
        fmt_read(spark, tables, "db.p2", start_snapshot_id=first, branch="main").collect()
    with pytest.raises(ValidationError, match="choose one of"), icefloe_errors():
        fmt_read(spark, tables, "db.p2", branch="main", tag="main").collect()


def test_equals_iceberg_java_on_java_tables(spark: Any, iceberg_spark: JavaCatalog) -> None:
    """Merge-on-read v2 (position deletes) and v3 (deletion vectors) tables with evolved
    partitioning and schema, written by Iceberg Java: the format reads Java's rows, with and
    without filters, and the selective filter reads fewer files."""
    ispark.register(spark)
    names = java_tables(iceberg_spark, rows=120)
    cat = iceberg_spark.icefloe()
    for version, java_name in names.items():
        iceberg_spark.sql(f"ALTER TABLE {java_name} RENAME COLUMN name TO label")
        iceberg_spark.sql(f"ALTER TABLE {java_name} ADD COLUMN extra int")
        iceberg_spark.sql(
            f"INSERT INTO {java_name} SELECT id + 10000, label, ts, amount, tags, attrs, point, "
            f"flag, day, bin, CAST(id AS int) FROM {java_name} WHERE id < 5"
        )
        java = iceberg_spark.spark.table(java_name)
        ours = fmt_read(spark, cat, f"db.{version}")
        assert ours.columns == java.columns
        assert spark_rows(ours) == spark_rows(java)
        predicate = "id > 100 AND extra IS NULL AND label LIKE 'n1%'"
        assert spark_rows(ours.where(predicate)) == spark_rows(java.where(predicate))
        few = fmt_read(spark, cat, f"db.{version}", split_size=1, filter="id = 150")
        assert [r["id"] for r in few.collect()] == [150]
        every = fmt_read(spark, cat, f"db.{version}", split_size=1)
        assert few.rdd.getNumPartitions() < every.rdd.getNumPartitions()


def test_empty_table_and_unicode_catalog_options(spark: Any, tmp_path: Path) -> None:
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh é", name="e")
    cat.create_namespace("db")
    schema = all_types_schema()
    cat.create_table("db.empty", schema, format_version=2)
    df = spark.read.format("icefloe").options(**catalog_options(cat)).load("db.empty")
    assert df.count() == 0
    assert df.columns[:3] == ["id", "b", "i"]


def test_read_options_match_names_as_the_session_says(spark: Any, tables: Any) -> None:
    """The ``columns`` and ``filter`` options name columns ignoring case under Spark's default
    ``spark.sql.caseSensitive=false``, as the format's writes and Iceberg Java's reads match
    them (the read has the table's names); option ``case-sensitive`` or a case-sensitive
    session matches exactly. Streams resolve their ``filter`` the same way."""
    assert spark.conf.get("spark.sql.caseSensitive") == "false"
    ispark.register(spark)
    df = fmt_read(spark, tables, "db.u", columns="ID,St.A", filter="ID < 5")
    assert df.columns == ["id", "st"]
    assert sorted(r["id"] for r in df.collect()) == [0, 1, 2, 3, 4]
    with pytest.raises(ValidationError, match="ID"), icefloe_errors():
        fmt_read(spark, tables, "db.u", columns="ID", case_sensitive="true").collect()
    # a stream's filter is bound with the registered setting too (checked without a query)
    opts = {**catalog_options(tables), "path": "db.u", "filter": "ID < 5"}
    for exact in (False, True):
        source = type("Registered", (IcefloeDataSource,), {"case_sensitive": exact})
        stream = source(opts).streamReader(None)
        assert (stream._refused is not None) == exact
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        ispark.register(spark)
        with pytest.raises(ValidationError, match="ID"), icefloe_errors():
            fmt_read(spark, tables, "db.u", columns="ID").collect()
        assert fmt_read(spark, tables, "db.u", columns="ID", case_sensitive="false").columns == [
            "id"
        ]
    finally:
        spark.conf.unset("spark.sql.caseSensitive")
        ispark.register(spark)
