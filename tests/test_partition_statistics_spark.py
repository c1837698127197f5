"""Partition statistics against Iceberg Java 1.12's ``PartitionStatsHandler`` on the same table:
full and incremental rows equal Java's through appends by both engines, deletion vectors, a
whole-partition delete and a compaction; Java's incremental compute reads icefloe's file and
icefloe's reads Java's; Java's ``PartitionStatisticsScan`` reads icefloe's file."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.read.partition_statistics import read_partition_statistics
from icefloe.table.partition_statistics import _file_schema, partition_statistics_rows
from support.spark import JavaCatalog

pytest.importorskip("pyspark")

pytestmark = pytest.mark.spark


def _jtable(spark: Any, location: str) -> Any:
    jvm = spark._jvm
    return jvm.org.apache.iceberg.hadoop.HadoopTables(spark._jsc.hadoopConfiguration()).load(
        location
    )


def _java_rows(spark: Any, t: Any, snapshot_id: int, commit: bool = False) -> list[dict[str, Any]]:
    """Java's ``computeAndWriteStatsFile`` for ``snapshot_id`` (incremental when the table has
    a partition statistics file on its ancestry), its file read back by field id."""
    jt = _jtable(spark, t.location)
    handler = spark._jvm.org.apache.iceberg.PartitionStatsHandler
    f = handler.computeAndWriteStatsFile(jt, snapshot_id)
    if commit:
        jt.updatePartitionStatistics().setPartitionStatistics(f).commit()
    t.refresh()
    rows = read_partition_statistics(t.io, f.path(), _file_schema(t.metadata))
    return rows.to_pylist()


def _ours(t: Any, snapshot_id: int, incremental: bool) -> list[dict[str, Any]]:
    rows, existing = partition_statistics_rows(t.io, t.metadata, snapshot_id, incremental)
    assert existing is None and rows is not None
    return rows.to_pylist()


def _java_scan(spark: Any, t: Any, snapshot_id: int) -> list[tuple[Any, ...]]:
    """What Java's ``PartitionStatisticsScan`` reads from the table's registered file."""
    jt = _jtable(spark, t.location)
    obj = spark._jvm.java.lang.Class.forName("java.lang.Object")
    it = jt.newPartitionStatisticsScan().useSnapshot(snapshot_id).scan().iterator()
    out = []
    while it.hasNext():
        s = it.next()
        part = s.partition()
        out.append(
            (
                tuple(part.get(i, obj) for i in range(part.size())),
                s.specId(),
                s.dataRecordCount(),
                s.dataFileCount(),
                s.totalDataFileSizeInBytes(),
                s.positionDeleteRecordCount(),
                s.positionDeleteFileCount(),
                s.equalityDeleteRecordCount(),
                s.equalityDeleteFileCount(),
                s.totalRecords(),
                s.lastUpdatedAt(),
                s.lastUpdatedSnapshotId(),
                s.dvCount(),
            )
        )
    return out


def _as_tuples(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(tuple(r["partition"].values()), *list(r.values())[1:]) for r in rows]


def test_rows_equal_java_full_and_incremental(spark: Any, iceberg_spark: JavaCatalog) -> None:
    c = iceberg_spark
    c.sql("CREATE NAMESPACE IF NOT EXISTS {c}.db")
    c.sql(
        "CREATE TABLE {c}.db.t (id BIGINT, p STRING, v STRING) USING iceberg "
        "PARTITIONED BY (p, bucket(2, id)) TBLPROPERTIES ('format-version'='3', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"
    )
    c.sql(
        "INSERT INTO {c}.db.t SELECT id, CASE WHEN id % 3 = 0 THEN 'a' WHEN id % 3 = 1 THEN 'b' "
        "ELSE 'c' END, CAST(id AS STRING) FROM range(0, 60)"
    )
    t = c.icefloe().load_table("db.t")
    import pyarrow as pa

    more = pa.table(
        {
            "id": pa.array(range(60, 90), pa.int64()),
            "p": pa.array(["a", "d", None] * 10, pa.string()),
            "v": pa.array([str(i) for i in range(60, 90)], pa.string()),
        }
    )
    t.append(more)  # icefloe's manifests, a new partition and a null one
    first = t.current_snapshot().snapshot_id
    assert _ours(t, first, False) == _java_rows(spark, t, first)

    # icefloe registers a full compute at `first`
    mine = t.compute_partition_statistics()
    assert mine is not None and mine.snapshot_id == first
    assert [s.snapshot_id for s in t.metadata.partition_statistics] == [first]
    assert _java_scan(spark, t, first) == _as_tuples(t.partition_statistics().to_pylist())

    c.sql("DELETE FROM {c}.db.t WHERE id % 7 = 1")  # deletion vectors
    t.refresh()
    t.delete("id in (2, 13, 24, 35, 62, 73, 84)")  # icefloe's deletion vectors
    c.sql("DELETE FROM {c}.db.t WHERE p = 'c'")  # whole partitions: DELETED entries
    t.refresh()
    mid = t.current_snapshot().snapshot_id
    ours_full = _ours(t, mid, False)
    assert any(r["dv_count"] for r in ours_full)
    assert any(
        r["partition"]["p"] == "c" and r["data_file_count"] == 0 for r in ours_full
    )  # a row of zeros for the emptied partition
    # incremental from icefloe's file: Java reads it and gets icefloe's incremental rows
    ours_inc = _ours(t, mid, True)
    assert _java_rows(spark, t, mid) == ours_inc
    counts = ("data_record_count", "data_file_count", "dv_count")
    assert [[r[k] for k in counts] for r in ours_inc] == [[r[k] for k in counts] for r in ours_full]

    # compaction by icefloe, an append by Spark; Java commits its incremental file
    t.rewrite_data_files(min_input_files=2)
    c.sql("INSERT INTO {c}.db.t VALUES (100, 'a', 'x'), (101, 'e', 'y')")
    t.refresh()
    last = t.current_snapshot().snapshot_id
    java_inc = _java_rows(spark, t, last, commit=True)
    assert {s.snapshot_id for s in t.metadata.partition_statistics} == {first, last}
    # icefloe's incremental from its own file at `first` equals Java's
    with t.transaction() as tx:
        tx.remove_partition_statistics(last)
    assert _ours(t, last, True) == java_inc
    # full computes agree too (no file on the ancestry for Java)
    with t.transaction() as tx:
        tx.remove_partition_statistics(first)
    assert _ours(t, last, False) == _java_rows(spark, t, last)

    # icefloe's incremental compute reads Java's file
    c.sql("INSERT INTO {c}.db.t VALUES (102, 'b', 'z')")
    t.refresh()
    _java_rows(spark, t, t.snapshots()[-2].snapshot_id, commit=True)
    newest = t.current_snapshot().snapshot_id
    ours = t.compute_partition_statistics()
    assert ours is not None and ours.snapshot_id == newest
    rows = t.partition_statistics().to_pylist()
    with t.transaction() as tx:
        tx.remove_partition_statistics(newest)
    assert rows == _java_rows(spark, t, newest)


def test_float_partitions_are_ordered_as_java_orders_them(
    spark: Any, iceberg_spark: JavaCatalog
) -> None:
    """Rows of double partitions in Java's order (``Double.compare``, nulls first): the same
    sequence of values, signed zeros and NaN included, as ``PartitionStatsHandler`` writes."""
    import math

    import pyarrow as pa

    c = iceberg_spark
    c.sql("CREATE NAMESPACE IF NOT EXISTS {c}.db")
    c.sql("CREATE TABLE {c}.db.f (id BIGINT, x DOUBLE) USING iceberg PARTITIONED BY (x)")
    t = c.icefloe().load_table("db.f")
    values = [1.5, math.nan, None, 0.0, -math.inf, -0.0, math.inf, -2.0]
    t.append(pa.table({"id": pa.array(range(len(values)), pa.int64()), "x": pa.array(values)}))
    snapshot_id = t.current_snapshot().snapshot_id

    def order(rows: list[dict[str, Any]]) -> list[str]:
        out = []
        for r in rows:
            x = r["partition"]["x"]
            out.append("null" if x is None else f"{x!r}/{math.copysign(1, x):+.0f}")
        return out

    ours = order(_ours(t, snapshot_id, False))
    assert ours[0] == "null" and ours[-1].startswith("nan")
    assert ours == order(_java_rows(spark, t, snapshot_id))
