"""Clean-install smoke test of the Spark integration after ``pip install 'icefloe[spark]'``.

A local Spark session writes a table through icefloe, reads it back and merges into it. Runs in
a virtualenv holding only icefloe with its ``spark`` extra (scripts/smoke.sh).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
from pyspark.sql import SparkSession

import icefloe.spark as ispark
from icefloe.catalog import load_catalog


def main() -> None:
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("icefloe-smoke")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            catalog = load_catalog(
                "smoke",
                type="sql",
                uri=f"sqlite:///{tmp}/c.db",
                warehouse=Path(tmp, "wh").as_uri(),
            )
            catalog.create_namespace("db")
            schema = pa.schema(
                [pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())]
            )
            table = catalog.create_table("db.t", schema, properties={"format-version": "3"})
            df = spark.createDataFrame([(i, f"v{i}") for i in range(100)], "id long, s string")
            ispark.write(df, table)
            back = ispark.read(spark, catalog.load_table("db.t"))
            assert back.count() == 100
            src = spark.createDataFrame([(5, "five"), (500, "new")], "id long, s string")
            ispark.merge(src, catalog.load_table("db.t"), on=["id"])
            rows = dict(ispark.read(spark, catalog.load_table("db.t")).select("id", "s").collect())
            assert len(rows) == 101 and rows[5] == "five" and rows[500] == "new", rows
    finally:
        spark.stop()
    print("smoke spark: write, read, merge ok")


if __name__ == "__main__":
    main()
