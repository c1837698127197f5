"""Incremental append reads equal Iceberg Java's (its Spark options ``start-snapshot-id`` /
``end-snapshot-id``) on a history written by both, through ``Table.incremental_append_scan``,
the ``icefloe`` Spark format and ``icefloe.spark.read``."""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
import pytest

from support.spark import JavaCatalog
from support.spark_format import fmt_read
from support.spark_util import spark_rows

pytest.importorskip("pyspark")

import icefloe.spark as ispark

pytestmark = pytest.mark.spark


def _java_rows(cat: JavaCatalog, start: int, end: int | None) -> list[tuple[int, str]]:
    reader = cat.spark.read.format("iceberg").option("start-snapshot-id", str(start))
    if end is not None:
        reader = reader.option("end-snapshot-id", str(end))
    df = reader.load(f"{cat.name}.db.t")
    return sorted((r["id"], r["s"]) for r in df.collect())


def _rows(table: pa.Table) -> list[tuple[int, str]]:
    return sorted(zip(table.column("id").to_pylist(), table.column("s").to_pylist(), strict=True))


def test_incremental_reads_equal_iceberg_java(spark: Any, iceberg_spark: JavaCatalog) -> None:
    """A v2 merge-on-read table whose history mixes Java and icefloe appends, deletes of both,
    a Java compaction, and Java appends that merge earlier manifests into theirs (min count
    2): for every pair of snapshots on the history, icefloe's rows equal Java's."""
    ispark.register(spark)
    c = iceberg_spark
    c.sql(
        "CREATE TABLE {c}.db.t (id bigint, s string) USING iceberg TBLPROPERTIES ("
        "'format-version'='2', 'write.delete.mode'='merge-on-read', "
        "'commit.manifest.min-count-to-merge'='2')"
    )
    c.sql("INSERT INTO {c}.db.t VALUES (1, 'a'), (2, 'b')")
    c.sql("INSERT INTO {c}.db.t VALUES (3, 'c')")
    c.sql("DELETE FROM {c}.db.t WHERE id = 2")
    cat = c.icefloe()
    t = cat.load_table("db.t")
    t.append(pa.table({"id": pa.array(range(10, 15), pa.int64()), "s": ["i"] * 5}))
    t.delete("id = 11")
    c.sql("INSERT INTO {c}.db.t VALUES (20, 'x')")
    c.sql(
        "CALL {c}.system.rewrite_data_files(table => 'db.t', "
        "options => map('min-input-files', '1'))"
    )
    c.sql("INSERT INTO {c}.db.t VALUES (30, 'y'), (31, 'z')")
    t.refresh()
    chain = [
        s.snapshot_id for s in reversed(t.metadata.ancestors_of(t.current_snapshot().snapshot_id))
    ]
    ops = [t.metadata.snapshot(s).summary.operation for s in chain]
    assert ops == ["append", "append", "delete", "append", "delete", "append", "replace", "append"]
    for i, j in itertools.combinations(range(len(chain)), 2):
        java = _java_rows(c, chain[i], chain[j])
        assert _rows(t.incremental_append_scan(chain[i], chain[j]).to_arrow()) == java, (i, j)
    assert _rows(t.incremental_append_scan(chain[0]).to_arrow()) == _java_rows(c, chain[0], None)
    # the Spark format and icefloe.spark.read, with and without an end
    for start, end in ((chain[0], chain[5]), (chain[2], None)):
        java = _java_rows(c, start, end)
        options: dict[str, Any] = {"start_snapshot_id": start}
        if end is not None:
            options["end_snapshot_id"] = end
        fmt = fmt_read(spark, cat, "db.t", **options)
        assert sorted((r["id"], r["s"]) for r in spark_rows(fmt)) == java
        df = ispark.read(spark, t, start_snapshot_id=start, end_snapshot_id=end)
        assert sorted((r["id"], r["s"]) for r in spark_rows(df)) == java
    # a start that is not an ancestor of the end: both refuse
    with pytest.raises(Exception, match="not a parent ancestor"):
        _java_rows(c, chain[5], chain[1])
    with pytest.raises(Exception, match="not an ancestor"):
        t.incremental_append_scan(chain[5], chain[1]).to_arrow()
