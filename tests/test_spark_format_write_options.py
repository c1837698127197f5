"""Writes through the ``icefloe`` format: Iceberg Java's write options act as the table
properties they stand for, a DataFrame carrying another table's row-lineage columns is refused
(its row ids would not be unique here) and a column named twice is a typed error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.spark_format import catalog_options, fmt_read
from support.spark_util import icefloe_catalog

pytest.importorskip("pyspark")

import icefloe.spark as ispark
from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.spark.errors import icefloe_errors
from icefloe.types import LongType, NestedField, StringType

pytestmark = pytest.mark.spark

KV = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "s", StringType()))


def _save(df: Any, catalog: Any, table: str, **options: str) -> None:
    with icefloe_errors():
        df.write.format("icefloe").options(**catalog_options(catalog)).options(**options).mode(
            "append"
        ).save(table)


def test_java_write_options_set_format_size_and_codec_for_one_write(
    spark: Any, tmp_path: Path
) -> None:
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name="wo")
    cat.create_namespace("db")
    t = cat.create_table("db.t", KV, format_version=2)
    df = spark.sql("SELECT id, sha2(CAST(id AS string), 256) s FROM range(200000)").coalesce(1)
    _save(df, cat, "db.t", **{"write-format": "avro", "compression-codec": "zstd"})
    files = t.refresh().inspect.files().to_pylist()
    assert {f["file_format"] for f in files} == {"AVRO"}
    assert "write.format.default" not in t.metadata.properties  # one write only
    with pytest.raises(ValidationError, match="codec"):
        _save(df, cat, "db.t", **{"compression-codec": "nope"})
    _save(df, cat, "db.t", **{"target-file-size-bytes": "1000000"})
    parquet = [f for f in t.refresh().inspect.files().to_pylist() if f["file_format"] == "PARQUET"]
    assert len(parquet) > 3  # 200,000 rows of ~70 bytes rolled at about 1 MB
    assert fmt_read(spark, cat, "db.t").count() == 400_000  # the refused write added nothing


def test_row_lineage_columns_of_another_table_are_refused(spark: Any, tmp_path: Path) -> None:
    """Appending rows read with their ``_row_id`` to another v3 table wrote the source's ids
    (duplicates in the target); Java refuses the extra columns."""
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name="lin")
    cat.create_namespace("db")
    a = cat.create_table("db.a", KV, format_version=3)
    b = cat.create_table("db.b", KV, format_version=3)
    a.append(spark.range(5).selectExpr("id", "'x' s").toArrow())
    b.append(spark.range(5).selectExpr("id", "'y' s").toArrow())
    src = fmt_read(spark, cat, "db.a", metadata_columns="_row_id,_last_updated_sequence_number")
    for df in (src, src.select("id", "s", "_row_id")):
        with pytest.raises(ValidationError, match="row-lineage"):
            _save(df, cat, "db.b")
        with pytest.raises(ValidationError, match="row-lineage"):
            ispark.write(df, b)
    ids = fmt_read(spark, cat, "db.b", metadata_columns="_row_id").select("_row_id").collect()
    assert sorted(r[0] for r in ids) == [0, 1, 2, 3, 4]  # only b's own rows, unique ids


def test_a_column_named_twice_is_a_typed_error(spark: Any, tmp_path: Path) -> None:
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name="dup")
    cat.create_namespace("db")
    cat.create_table("db.t", KV, format_version=2)
    df = spark.sql("SELECT 1L id, 2L id, 'a' s")
    with pytest.raises(ValidationError, match="more than once"):
        _save(df, cat, "db.t", **{"case-sensitive": "true"})
    with pytest.raises(ValidationError, match="differ only in case"):
        _save(df, cat, "db.t", **{"case-sensitive": "false"})


def test_overwrite_options_checked_up_front_and_dynamic_as_java(spark: Any, tmp_path: Path) -> None:
    """A bad ``overwrite-filter`` is refused before the job runs; a dynamic overwrite of an
    unpartitioned table replaces every row and one that writes nothing commits nothing, as
    Java's replacePartitions does."""
    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name="ov")
    cat.create_namespace("db")
    t = cat.create_table("db.t", KV, format_version=2)
    t.append(spark.range(5).selectExpr("id", "'old' s").toArrow())
    calls = spark.sparkContext.accumulator(0)

    def counted(it: Any) -> Any:
        for batch in it:
            calls.add(1)
            yield batch

    df = spark.range(3).selectExpr("id + 10 id", "'new' s").mapInArrow(counted, "id long, s string")
    opts = catalog_options(cat)

    def writer() -> Any:
        return df.write.format("icefloe").options(**opts).mode("overwrite")

    for bad in ("nope = 1", "id = 'x'", "id >"):
        with pytest.raises(ValidationError), icefloe_errors():
            writer().option("overwrite-filter", bad).save("db.t")
    assert calls.value == 0 and len(t.refresh().snapshots()) == 1
    writer().option("overwrite-mode", "dynamic").save("db.t")
    rows = sorted(r[0] for r in fmt_read(spark, cat, "db.t").select("id").collect())
    assert rows == [10, 11, 12]
    before = len(t.refresh().snapshots())
    empty = spark.range(0).selectExpr("id", "'x' s")
    empty.write.format("icefloe").options(**opts).mode("overwrite").option(
        "overwrite-mode", "dynamic"
    ).save("db.t")
    assert len(t.refresh().snapshots()) == before
