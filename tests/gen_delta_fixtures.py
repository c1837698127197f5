"""Writes the Delta test tables of ``tests/data/delta/`` with real Delta Lake (Spark + Delta 4.4.0).

Usage: ``python tests/gen_delta_fixtures.py OUT_DIR [SCENARIO ...]``

Each scenario becomes ``OUT_DIR/<scenario>/table`` (a relocatable Delta table: its log holds
relative paths) and ``OUT_DIR/<scenario>/expected/v<N>.parquet``: Delta's own read of every
version ``N`` (``VERSION AS OF N``) with ``_row_id`` and ``_row_commit_version`` from Delta's
``_metadata`` row-tracking fields. Delta's jars are fetched from Maven Central and checked
against their published ``.sha1`` (see ``tests/support/spark.py``); they run in a Spark session of
this process only, with Delta's SQL extension and catalog, which the shared test session
(Iceberg's extension) does not carry; so the live test runs this script in a subprocess.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from support.spark import fetch_jar

DELTA_JARS = (
    ("io.delta", "delta-spark_4.1_2.13", "4.4.0"),
    ("io.delta", "delta-storage", "4.4.0"),
    ("io.delta", "delta-kernel-api", "4.4.0"),
    ("io.delta", "delta-kernel-defaults", "4.4.0"),
    ("io.delta", "delta-kernel-unitycatalog", "4.4.0"),
    ("io.unitycatalog", "unitycatalog-client", "0.6.0"),
    ("io.unitycatalog", "unitycatalog-hadoop", "0.6.0"),
    ("com.fasterxml.jackson.datatype", "jackson-datatype-jdk8", "2.13.5"),
)

V3 = (
    "'delta.enableIcebergCompatV3'='true', 'delta.enableDeletionVectors'='true', "
    "'delta.columnMapping.mode'='{mode}'"
)


def delta_jars() -> list[Path]:
    """The Delta jars, fetched once and sha1-checked (``OSError``/``ValueError`` when not)."""
    return [fetch_jar(g, a, v) for g, a, v in DELTA_JARS]


def session(work: Path) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    jars = ",".join(str(p) for p in delta_jars())
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("icefloe-delta-fixtures")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.sql.warehouse.dir", str(work / "warehouse"))
        .config("spark.jars", jars)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        .config("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class Scenario:
    def __init__(self, spark: Any, root: Path) -> None:
        self.spark = spark
        self.root = root
        self.table = root / "table"
        self.t = f"delta.`{self.table}`"

    def sql(self, text: str) -> None:
        self.spark.sql(text.replace("{t}", self.t))

    def expected(self) -> None:
        """Delta's read of every version, with the row-tracking fields."""
        import pyarrow.parquet as pq

        out = self.root / "expected"
        out.mkdir(parents=True, exist_ok=True)
        history = self.spark.sql(f"DESCRIBE HISTORY {self.t}").collect()
        for v in sorted(int(r["version"]) for r in history):
            df = self.spark.sql(
                f"SELECT *, _metadata.row_id AS _row_id, "
                f"_metadata.row_commit_version AS _row_commit_version "
                f"FROM {self.t} VERSION AS OF {v}"
            )
            pq.write_table(df.toArrow(), out / f"v{v}.parquet", compression="zstd")

    def clean(self) -> None:
        """Drop checksum side files (Hadoop's hidden ``.crc`` and Delta's optional version
        checksums ``_delta_log/N.crc``) and empty directories: no reader needs them."""
        for p in self.table.rglob("*.crc"):
            p.unlink()
        for d in sorted(self.table.rglob("*"), reverse=True):
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()


def basic(s: Scenario) -> None:
    s.sql(
        "CREATE TABLE {t} (id BIGINT, name STRING, ts TIMESTAMP, ntz TIMESTAMP_NTZ, d DATE, "
        "amount DECIMAL(10,2), flag BOOLEAN, score DOUBLE, small SMALLINT, tiny TINYINT, "
        "f FLOAT, bin BINARY) USING delta TBLPROPERTIES (" + V3.format(mode="name") + ")"
    )
    s.sql(
        "INSERT INTO {t} VALUES (1, 'alpha', TIMESTAMP'2024-01-01 00:00:00.123456', "
        "TIMESTAMP_NTZ'2024-01-01 10:00:00.999999', DATE'2024-01-01', 12.34, true, 1.5, 7, 1, "
        "2.5, X'0102'), (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
    )
    s.sql(
        "INSERT INTO {t} VALUES (3, 'gamma', TIMESTAMP'2024-06-30 23:59:59.999999', "
        "TIMESTAMP_NTZ'2024-06-30 23:59:59.999999', DATE'2024-06-30', -5.00, false, -2.25, "
        "-3, -1, -0.5, X'FF')"
    )


def partitioned(s: Scenario) -> None:
    s.sql(
        "CREATE TABLE {t} (id INT, v STRING, p_int INT, p_str STRING, p_date DATE, "
        "p_ts TIMESTAMP) USING delta PARTITIONED BY (p_int, p_str, p_date, p_ts) "
        "TBLPROPERTIES (" + V3.format(mode="name") + ")"
    )
    s.sql(
        "INSERT INTO {t} VALUES (1, 'a', 1, 'x', DATE'2024-01-01', "
        "TIMESTAMP'2024-01-01 12:00:00.123456'), (2, 'b', 2, 'y y/z', DATE'2024-01-02', "
        "TIMESTAMP'2024-01-02 00:00:00'), (3, 'c', NULL, NULL, NULL, NULL)"
    )
    s.sql("INSERT INTO {t} VALUES (4, 'd', 1, 'x', DATE'2024-01-01', NULL)")
    s.sql("DELETE FROM {t} WHERE id = 2")


def dml(s: Scenario) -> None:
    s.sql(
        "CREATE TABLE {t} (id INT, grp STRING, val DOUBLE) USING delta "
        "TBLPROPERTIES (" + V3.format(mode="id") + ")"
    )
    s.spark.range(0, 40, 1, 2).selectExpr(
        "CAST(id AS INT) AS id", "CAST(id % 3 AS STRING) AS grp", "CAST(id AS DOUBLE) AS val"
    ).write.format("delta").mode("append").save(str(s.table))
    s.sql("DELETE FROM {t} WHERE id % 5 = 0")
    s.sql("UPDATE {t} SET val = val * 10 WHERE id IN (3, 27)")
    s.spark.createDataFrame(
        [(4, "m", 400.0), (100, "new", 1.0), (7, "m", 700.0)], "id INT, grp STRING, val DOUBLE"
    ).createOrReplaceTempView("src")
    s.sql(
        "MERGE INTO {t} t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    s.sql("DELETE FROM {t} WHERE id = 11")


def optimize(s: Scenario) -> None:
    s.sql(
        "CREATE TABLE {t} (id INT, v STRING) USING delta TBLPROPERTIES ("
        + V3.format(mode="name")
        + ")"
    )
    for i in range(3):
        s.sql(f"INSERT INTO {{t}} VALUES ({3 * i}, 'a{i}'), ({3 * i + 1}, 'b{i}')")
    s.sql("DELETE FROM {t} WHERE id = 3")
    s.sql("UPDATE {t} SET v = 'upd' WHERE id = 6")
    s.sql("OPTIMIZE {t}")
    s.sql("INSERT INTO {t} VALUES (50, 'after')")


def evolution(s: Scenario) -> None:
    s.sql(
        "CREATE TABLE {t} (id INT, a STRING, b INT) USING delta TBLPROPERTIES ("
        + V3.format(mode="name")
        + ", 'delta.enableTypeWidening'='true')"
    )
    s.sql("INSERT INTO {t} VALUES (1, 'one', 10), (2, 'two', 20)")
    s.sql("ALTER TABLE {t} ADD COLUMNS (c DOUBLE)")
    s.sql("INSERT INTO {t} VALUES (3, 'three', 30, 3.5)")
    s.sql("ALTER TABLE {t} RENAME COLUMN a TO a_renamed")
    s.sql("ALTER TABLE {t} DROP COLUMN c")
    s.sql("ALTER TABLE {t} ADD COLUMNS (c STRING)")
    s.sql("INSERT INTO {t} VALUES (4, 'four', 40, 'new c')")
    try:
        s.sql("ALTER TABLE {t} ALTER COLUMN b TYPE BIGINT")
        s.sql("INSERT INTO {t} VALUES (5, 'five', 5000000000, 'wide')")
    except Exception as e:  # Delta may refuse widening under IcebergCompatV3
        print(f"evolution: type widening refused: {str(e).splitlines()[0]}", file=sys.stderr)


def nested(s: Scenario) -> None:
    s.sql(
        "CREATE TABLE {t} (id INT, s STRUCT<a: INT, b: STRUCT<c: STRING, d: DOUBLE>>, "
        "arr ARRAY<INT>, m MAP<STRING, INT>, deep ARRAY<MAP<STRING, STRUCT<x: INT>>>) "
        "USING delta TBLPROPERTIES (" + V3.format(mode="id") + ")"
    )
    s.sql(
        "INSERT INTO {t} VALUES (1, named_struct('a', 1, 'b', named_struct('c', 'c1', 'd', 1.5)),"
        " array(1, 2), map('k1', 1), array(map('x', named_struct('x', 10)))), "
        "(2, NULL, NULL, NULL, NULL), (3, named_struct('a', NULL, 'b', NULL), array(), map(), "
        "array(map('y', named_struct('x', NULL))))"
    )
    s.sql("DELETE FROM {t} WHERE id = 2")
    s.sql("ALTER TABLE {t} ADD COLUMNS (s.e STRING)")
    s.sql(
        "INSERT INTO {t} VALUES (4, named_struct('a', 4, 'b', named_struct('c', 'c4', 'd', 4.0),"
        " 'e', 'e4'), array(4), map('k4', 4), array())"
    )


def checkpoints(s: Scenario) -> None:
    s.sql(
        "CREATE TABLE {t} (id INT, v STRING) USING delta TBLPROPERTIES ("
        + V3.format(mode="name")
        + ", 'delta.checkpointInterval'='2')"
    )
    for i in range(4):
        s.sql(f"INSERT INTO {{t}} VALUES ({i}, 'v{i}')")
    s.sql("DELETE FROM {t} WHERE id = 1")


def multipart(s: Scenario) -> None:
    s.spark.conf.set("spark.databricks.delta.checkpoint.partSize", "1")
    try:
        s.sql(
            "CREATE TABLE {t} (id INT, v STRING) USING delta TBLPROPERTIES ("
            + V3.format(mode="name")
            + ", 'delta.checkpointInterval'='3')"
        )
        for i in range(3):
            s.sql(f"INSERT INTO {{t}} VALUES ({i}, 'v{i}')")
        s.sql("INSERT INTO {t} VALUES (10, 'after')")
    finally:
        s.spark.conf.unset("spark.databricks.delta.checkpoint.partSize")


def v2checkpoint(s: Scenario) -> None:
    s.sql(
        "CREATE TABLE {t} (id INT, v STRING) USING delta TBLPROPERTIES ("
        + V3.format(mode="name")
        + ", 'delta.checkpointPolicy'='v2', 'delta.checkpointInterval'='3')"
    )
    for i in range(3):
        s.sql(f"INSERT INTO {{t}} VALUES ({i}, 'v{i}')")
    s.sql("DELETE FROM {t} WHERE id = 0")


SCENARIOS: dict[str, Callable[[Scenario], None]] = {
    "basic": basic,
    "partitioned": partitioned,
    "dml": dml,
    "optimize": optimize,
    "evolution": evolution,
    "nested": nested,
    "checkpoints": checkpoints,
    "multipart": multipart,
    "v2checkpoint": v2checkpoint,
}


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    names = argv[1:] or list(SCENARIOS)
    spark = session(out / "_work")
    try:
        for name in names:
            root = out / name
            shutil.rmtree(root, ignore_errors=True)
            s = Scenario(spark, root)
            SCENARIOS[name](s)
            s.expected()
            s.clean()
            print(f"{name}: done", flush=True)
    finally:
        spark.stop()
        shutil.rmtree(out / "_work", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
