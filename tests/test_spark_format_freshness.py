"""Which table state a DataFrame read through the ``icefloe`` format sees: the schema it was
defined with (columns added before its first query are not read; incompatible changes raise
``ValidationError``), and the snapshot of its first plan, which Spark keeps for later queries
(once that snapshot's files are gone, a typed error says to read the table again)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.spark import JavaCatalog
from support.spark_format import fmt_read
from support.spark_util import icefloe_catalog

pytest.importorskip("pyspark")

import icefloe.spark as ispark
from icefloe.exceptions import StaleReadError
from icefloe.schema import Schema
from icefloe.spark.errors import icefloe_errors
from icefloe.types import IntegerType, LongType, NestedField, StringType

pytestmark = pytest.mark.spark

SCHEMA = Schema(
    NestedField(1, "id", LongType()),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "s", StringType()),
)
ROWS = pa.table(
    {
        "id": pa.array([1, 2], pa.int64()),
        "i": pa.array([10, 20], pa.int32()),
        "s": ["x", "y"],
    }
)


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def test_columns_added_before_the_first_query_are_not_read(
    spark: Any, iceberg_spark: JavaCatalog
) -> None:
    ispark.register(spark)
    jc = iceberg_spark
    cat = jc.icefloe()
    jc.sql("CREATE NAMESPACE IF NOT EXISTS {c}.db")
    jc.sql("CREATE TABLE {c}.db.t (id bigint, i int, s string) USING iceberg")
    jc.sql("INSERT INTO {c}.db.t VALUES (1, 10, 'x'), (2, 20, 'y')")
    ice = fmt_read(spark, cat, "db.t")
    with_pos = fmt_read(spark, cat, "db.t", metadata_columns="_pos")
    java = jc.sql("SELECT * FROM {c}.db.t")
    jc.sql("ALTER TABLE {c}.db.t ADD COLUMN z int FIRST")
    jc.sql("INSERT INTO {c}.db.t VALUES (7, 3, 30, 'w')")
    assert ice.columns == ["id", "i", "s"]
    assert _rows(ice) == _rows(java) == [(1, 10, "x"), (2, 20, "y"), (3, 30, "w")]
    assert sorted(r[:3] for r in _rows(with_pos)) == _rows(java)
    assert with_pos.columns == ["id", "i", "s", "_pos"]


def _rename(t: Any) -> None:
    with t.update_schema() as u:
        u.rename_column("s", "s2")


def _promote(t: Any) -> None:
    with t.update_schema() as u:
        u.update_column("i", LongType())


def _drop_and_add_again(t: Any) -> None:
    with t.update_schema() as u:
        u.delete_column("s")
    with t.refresh().update_schema() as u:
        u.add_column("s", StringType())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_rename, "column 's' was renamed to 's2'"),
        (_promote, "column 'i' changed from int to bigint"),
        (_drop_and_add_again, "column 's' is no longer in it"),
    ],
)
def test_incompatible_changes_before_the_first_query_raise(
    spark: Any, tmp_path: Path, change: Callable[[Any], None], message: str
) -> None:
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name="changed")
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, format_version=2)
    t.append(ROWS)
    df = fmt_read(spark, cat, "db.t")
    change(t.refresh())
    with pytest.raises(Exception, match="ValidationError") as info:
        df.collect()
    assert message in str(info.value)
    assert "read the table again" in str(info.value)
    # a new read of the table sees its new schema
    assert len(fmt_read(spark, cat, "db.t").collect()) == 2


def test_a_comment_change_before_the_first_query_is_no_schema_change(
    spark: Any, tmp_path: Path
) -> None:
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name="doc")
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, format_version=2)
    t.append(ROWS)
    df = fmt_read(spark, cat, "db.t")
    with t.update_schema() as u:
        u.update_column_doc("i", "a comment")
    assert _rows(df) == [(1, 10, "x"), (2, 20, "y")]


def test_a_queried_dataframe_keeps_its_snapshot_until_its_files_are_gone(
    spark: Any, iceberg_spark: JavaCatalog
) -> None:
    ispark.register(spark)
    jc = iceberg_spark
    cat = jc.icefloe()
    jc.sql("CREATE NAMESPACE IF NOT EXISTS {c}.db")
    jc.sql("CREATE TABLE {c}.db.t (id bigint) USING iceberg")
    jc.sql("INSERT INTO {c}.db.t VALUES (1), (2)")
    df = fmt_read(spark, cat, "db.t")
    assert df.count() == 2
    jc.sql("INSERT INTO {c}.db.t VALUES (3)")
    # PySpark keeps the first plan of a Python source's read for the DataFrame's later queries
    assert df.count() == 2
    assert fmt_read(spark, cat, "db.t").count() == 3
    jc.sql(
        "CALL {c}.system.rewrite_data_files(table => 'db.t', options => map('rewrite-all','true'))"
    )
    jc.sql(
        "CALL {c}.system.expire_snapshots(table => 'db.t', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)"
    )
    with pytest.raises(StaleReadError) as info, icefloe_errors():
        df.collect()
    assert "read the table again" in str(info.value)
    assert _rows(fmt_read(spark, cat, "db.t")) == _rows(jc.sql("SELECT * FROM {c}.db.t"))
