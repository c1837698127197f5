"""Statistics against Iceberg Java 1.12 through Spark: icefloe's theta sketches are the bytes
``compute_table_stats`` writes for the same rows, icefloe reads Spark's statistics, and Java
reads icefloe's (``StatisticsFile``, the Puffin blobs through DataSketches, Spark's CBO)."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.puffin import PuffinReader
from support.spark import JavaCatalog

pytest.importorskip("pyspark")

pytestmark = pytest.mark.spark

COLUMNS = """
    id BIGINT, i INT, s STRING, d DATE, dec DECIMAL(20, 2), b BINARY, f DOUBLE, fl FLOAT,
    bo BOOLEAN, ts TIMESTAMP, tsn TIMESTAMP_NTZ
"""


# binary with empty values; double with 0.0 and -0.0 (two values: raw bits are fed)
BINARY = (
    "CASE WHEN id % 3 = 0 THEN X'' ELSE unhex(lpad(hex(id % 9), 2 * CAST(id % 3 AS INT), '0')) END"
)
DOUBLE = (
    "CASE WHEN id % 4 = 0 THEN CAST(0.0 AS DOUBLE) WHEN id % 4 = 1 THEN -CAST(0.0 AS DOUBLE) "
    "ELSE CAST(id % 20 AS DOUBLE) END"
)


def _select(lo: int, hi: int) -> str:
    def n(expr: str) -> str:  # every column has nulls
        return f"CASE WHEN id % 13 = 5 THEN NULL ELSE {expr} END"

    return f"""
    SELECT id,
      {n("CAST(id % 50 - 25 AS INT)")},
      {n("CASE WHEN id % 4 = 0 THEN '' WHEN id % 4 = 1 THEN 'bé' ELSE concat('s', id % 40) END")},
      {n("date_add(DATE'2024-01-01', CAST(id % 30 AS INT))")},
      {n("CAST((id % 60 - 30) / 4 AS DECIMAL(20, 2))")},
      {n(BINARY)},
      {n(DOUBLE)},
      {n("CAST(id % 17 AS FLOAT) / 3")},
      {n("id % 3 = 0")},
      {n("TIMESTAMP'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, CAST(id % 70 AS INT))")},
      {n("TIMESTAMP_NTZ'2024-01-01 00:00:00' + make_interval(0, 0, 0, CAST(id % 33 AS INT))")}
    FROM range({lo}, {hi})
    """


def _blobs(table: Any, path: str) -> dict[tuple[int, ...], tuple[bytes, dict[str, str]]]:
    reader = PuffinReader(table.io.new_input(path).read())
    return {b.fields: (reader.read_blob(b), dict(b.properties)) for b in reader.blobs}


def _java_estimates(spark: Any, location: str) -> dict[int, tuple[str, float]]:
    """field id -> (ndv property, DataSketches estimate of the blob), as Java reads the table."""
    jvm = spark._jvm
    table = jvm.org.apache.iceberg.hadoop.HadoopTables(spark._jsc.hadoopConfiguration()).load(
        location
    )
    files = table.statisticsFiles()
    assert files.size() == 1
    stats = files.get(0)
    assert stats.snapshotId() == table.currentSnapshot().snapshotId()
    ndv = {
        m.fields().get(0): m.properties().get("ndv")
        for m in [stats.blobMetadata().get(k) for k in range(stats.blobMetadata().size())]
    }
    reader = jvm.org.apache.iceberg.puffin.Puffin.read(
        jvm.org.apache.iceberg.Files.localInput(stats.path().removeprefix("file:"))
    ).build()
    pairs = reader.readAll(reader.fileMetadata().blobs()).iterator()
    sketches = jvm.org.apache.iceberg.shaded.org.apache.datasketches
    out = {}
    while pairs.hasNext():
        pair = pairs.next()
        data = jvm.org.apache.iceberg.util.ByteBuffers.toByteArray(pair.second())
        sketch = sketches.theta.CompactSketch.wrap(sketches.memory.Memory.wrap(data))
        fid = pair.first().inputFields().get(0)
        out[fid] = (ndv[fid], sketch.getEstimate())
    reader.close()
    return out


def _cbo_distinct_counts(spark: Any, name: str) -> dict[str, int]:
    spark.conf.set("spark.sql.cbo.enabled", "true")
    try:
        plan = spark.table(name)._jdf.queryExecution().optimizedPlan()
        it = plan.stats().attributeStats().iterator()
        out = {}
        while it.hasNext():
            pair = it.next()
            count = pair._2().distinctCount()
            if count.isDefined():
                out[pair._1().name()] = int(str(count.get()))
        return out
    finally:
        spark.conf.unset("spark.sql.cbo.enabled")


def test_sketch_bytes_equal_java_and_each_reads_the_other(
    spark: Any, iceberg_spark: JavaCatalog
) -> None:
    c = iceberg_spark
    c.sql("CREATE NAMESPACE IF NOT EXISTS {c}.db")
    c.sql(
        f"CREATE TABLE {{c}}.db.t ({COLUMNS}) USING iceberg TBLPROPERTIES "
        "('format-version'='3', 'write.delete.mode'='merge-on-read')"
    )
    c.sql(f"INSERT INTO {{c}}.db.t {_select(0, 150)}")
    c.sql(f"INSERT INTO {{c}}.db.t {_select(150, 300)}")
    c.sql("DELETE FROM {c}.db.t WHERE id % 10 = 3 OR id >= 290")  # deletion vectors
    c.sql("CALL {c}.system.compute_table_stats(table => 'db.t')")

    t = c.icefloe().load_table("db.t")
    snap = t.current_snapshot()
    (java_file,) = t.metadata.statistics
    assert java_file.snapshot_id == snap.snapshot_id
    java = _blobs(t, java_file.statistics_path)
    schema = t.schema()
    names = {f.field_id: f.name for f in schema.fields}
    assert {f[0] for f in java} == set(names)
    # icefloe reads Spark's statistics
    spark_ndv = {names[f[0]]: int(props["ndv"]) for f, (_, props) in java.items()}
    assert t.statistics() == spark_ndv
    assert spark_ndv["bo"] == 2 and spark_ndv["id"] == 261

    ours = t.compute_statistics()
    assert [s.statistics_path for s in t.metadata.statistics] == [ours.statistics_path]
    mine = _blobs(t, ours.statistics_path)
    for fields, (data, props) in java.items():
        assert mine[fields] == (data, props), names[fields[0]]

    # Java loads the table icefloe committed and reads icefloe's file
    location = t.location
    assert c.sql("SELECT count(*) AS n FROM {c}.db.t").collect()[0]["n"] == 261
    for fid, (ndv, estimate) in _java_estimates(spark, location).items():
        assert ndv == str(spark_ndv[names[fid]]) and estimate == float(ndv)
    assert _cbo_distinct_counts(spark, f"{c.name}.db.t") == spark_ndv
