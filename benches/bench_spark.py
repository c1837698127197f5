"""Spark: icefloe's PySpark integration against Iceberg's Java runtime on ``local[2]``.

One v3 table (10M rows / ``--quick`` 200k: ``id`` long, ``v`` double, ``s`` string) is
written by Spark + Iceberg Java on a file-system catalog, then 10% of its rows are deleted with
merge-on-read (deletion vectors). Cases:

- ``read_dv_10pct``: ``icefloe.spark.read`` vs Spark + Iceberg Java reading the same table, both
  aggregating every column (``sum(v)``, ``max(length(s))``, ``count``) so every row is read.
- ``write``: ``icefloe.spark.write`` (append) vs ``DataFrame.writeTo(...).append()`` of the same
  generated rows into equally empty tables.
- ``mor_delete_1pct``: a merge-on-read ``DELETE`` of 1% of the rows (``v`` in a band of width 10
  of its uniform 0..1000 range, a new band each run, so every file has matches) from a copy of
  the DV-deleted table: ``icefloe.spark.delete`` vs Spark SQL ``DELETE FROM`` with Iceberg Java
  (``write.delete.mode=merge-on-read``), both writing DVs merged with the ones already there.
  Units are the table's rows (every file is scanned).

- ``format_read_dv_10pct`` / ``format_write``: the same read and write through the
  ``icefloe`` format (``spark.read.format("icefloe")`` / ``df.write.format("icefloe")``,
  PySpark's Python Data Source API) vs the same Iceberg Java paths.
- ``stream_append``: one Structured Streaming micro-batch (``trigger(availableNow=True)``)
  carrying the table's appended rows (the format's streaming source over the first table)
  into a new table: the ``icefloe`` sink vs Iceberg Java's streaming sink, same source.

The session is the tests' (``local[2]``) with :func:`icefloe.spark.configure` applied (Arrow
batches of 100,000 rows, no per-row byte-size check in the JVM; Iceberg Java's read and write
paths exchange no Arrow batches, so the settings do not touch the peer).

``ICEFLOE_BENCH_SPARK_ROWS`` overrides the size. Needs pyspark, Java 17 and the Iceberg runtime
jar (fetched by ``tests/support/spark.py``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness import Harness

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def run(h: Harness) -> None:
    from pyspark.sql import functions as F

    import icefloe.spark as ispark
    from support import spark as _spark

    n = int(os.environ.get("ICEFLOE_BENCH_SPARK_ROWS") or h.size(10_000_000, 200_000))
    base = Path(tempfile.mkdtemp(prefix="bench_spark_"))
    spark = _spark.spark_session(base)
    ispark.configure(spark)  # Arrow batch settings; Iceberg Java's paths do not use Arrow
    cat = _spark.java_catalog(spark, base)
    c = cat.name
    cat.sql("CREATE NAMESPACE {c}.db")
    cat.sql(
        "CREATE TABLE {c}.db.t (id bigint, v double, s string) USING iceberg "
        "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')"
    )
    source = spark.range(0, n, 1, 4).selectExpr(
        "id", "rand(7) * 1000 AS v", "concat('row-', CAST(id % 100000 AS string)) AS s"
    )
    props = "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')"
    source.writeTo(f"{c}.db.t").append()
    cat.sql("DELETE FROM {c}.db.t WHERE id % 10 = 3")
    # Two more such tables for the delete case, one per implementation.
    for name in ("del_ours", "del_java"):
        cat.sql(
            f"CREATE TABLE {{c}}.db.{name} (id bigint, v double, s string) USING iceberg {props}"
        )
        source.writeTo(f"{c}.db.{name}").append()
        cat.sql(f"DELETE FROM {{c}}.db.{name} WHERE id % 10 = 3")
    table = cat.icefloe().load_table(("db", "t"))

    def agg(df: Any) -> Any:
        return df.agg(F.count(F.lit(1)), F.sum("v"), F.max(F.length("s"))).collect()

    live = n - n // 10
    h.compare(
        "read_dv_10pct",
        live,
        "rows",
        ours=lambda: agg(ispark.read(spark, table)),
        peers={"iceberg-java": lambda: agg(spark.table(f"{c}.db.t"))},
        target="within 1.5x of Iceberg Java",
    )

    schema_ddl = "id bigint, v double, s string"
    counter = iter(range(1000))

    def ours_write() -> None:
        i = next(counter)
        t = cat.icefloe().create_table(("db", f"o{i}"), table.schema(), format_version=3)
        ispark.write(source, t)

    def java_write() -> None:
        i = next(counter)
        cat.sql(
            f"CREATE TABLE {{c}}.db.j{i} ({schema_ddl}) USING iceberg "
            "TBLPROPERTIES ('format-version'='3')"
        )
        source.writeTo(f"{c}.db.j{i}").append()

    h.compare(
        "write",
        n,
        "rows",
        ours=ours_write,
        peers={"iceberg-java": java_write},
        target="within 1.5x of Iceberg Java",
    )

    opts = {"catalog": c, "catalog.type": "hadoop", "catalog.warehouse": str(cat.warehouse)}
    h.compare(
        "format_read_dv_10pct",
        live,
        "rows",
        ours=lambda: agg(spark.read.format("icefloe").options(**opts).load("db.t")),
        peers={"iceberg-java": lambda: agg(spark.table(f"{c}.db.t"))},
        target="at least 1.1x Iceberg Java",
    )

    def ours_format_write() -> None:
        i = next(counter)
        cat.icefloe().create_table(("db", f"o{i}"), table.schema(), format_version=3)
        source.write.format("icefloe").options(**opts).mode("append").save(f"db.o{i}")

    h.compare(
        "format_write",
        n,
        "rows",
        ours=ours_format_write,
        peers={"iceberg-java": java_write},
        target="at least 1.1x Iceberg Java",
    )

    def stream(sink: str) -> None:
        i = next(counter)
        name = f"s{sink[0]}{i}"
        cat.icefloe().create_table(("db", name), table.schema(), format_version=3)
        rows = (
            spark.readStream.format("icefloe")
            .options(**opts)
            .option("skip-delete-snapshots", "true")
            .load("db.t")
        )
        w = rows.writeStream.option("checkpointLocation", str(base / "ck" / name))
        if sink == "icefloe":
            q = w.format("icefloe").options(**opts).trigger(availableNow=True).start(f"db.{name}")
        else:
            q = w.format("iceberg").trigger(availableNow=True).toTable(f"{c}.db.{name}")
        q.awaitTermination()

    h.compare(
        "stream_append",
        n,
        "rows",
        ours=lambda: stream("icefloe"),
        peers={"iceberg-java": lambda: stream("java")},
        target="at least 1.1x Iceberg Java",
    )

    ours_table = cat.icefloe().load_table(("db", "del_ours"))

    def band(k: int) -> str:  # 1% of the rows, spread over every file (v is uniform)
        return f"v >= {10 * k} and v < {10 * k + 10}"

    ours_k = iter(range(11, 100))
    java_k = iter(range(11, 100))
    h.compare(
        "mor_delete_1pct",
        live,
        "rows",
        ours=lambda: ispark.delete(spark, ours_table, band(next(ours_k))),
        peers={
            "iceberg-java": lambda: cat.sql(
                f"DELETE FROM {{c}}.db.del_java WHERE {band(next(java_k))}"
            )
        },
        target="ahead of Iceberg Java",
    )
