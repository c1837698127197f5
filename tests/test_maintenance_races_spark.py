"""Iceberg Java reads what a compaction that kept its starting sequence number committed
beside a concurrent equality delete: the delete applies to the rewritten rows for Java too."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from support.spark import JavaCatalog

pytest.importorskip("pyspark")

pytestmark = pytest.mark.spark


def test_java_applies_concurrent_equality_deletes_to_compacted_rows(
    spark: Any, iceberg_spark: JavaCatalog
) -> None:
    c = iceberg_spark
    c.sql(
        "CREATE TABLE {c}.db.t (id bigint, region string) USING iceberg "
        "PARTITIONED BY (region) TBLPROPERTIES ('format-version'='2')"
    )
    c.sql(
        "INSERT INTO {c}.db.t SELECT /*+ COALESCE(1) */ * FROM VALUES (0, 'eu'), (1, 'eu'), "
        "(2, 'eu') AS v(id, region)"
    )
    c.sql(
        "INSERT INTO {c}.db.t SELECT /*+ COALESCE(1) */ * FROM VALUES (10, 'eu'), (11, 'eu') "
        "AS v(id, region)"
    )
    cat = c.icefloe()
    start = cat.load_table("db.t").current_snapshot()
    compaction: Any = cat.load_table("db.t").transaction()
    compaction.rewrite_data_files(min_input_files=1)
    writer: Any = cat.load_table("db.t").transaction()
    writer.delete_by_keys({"id": pa.array([1, 11], pa.int64())}, ["id"])
    writer.commit_transaction()
    compaction.commit_transaction()
    t = cat.load_table("db.t")
    assert [s.summary.operation for s in t.snapshots()][-1] == "replace"
    live = [
        e
        for e in t.inspect.entries().to_pylist()
        if e["status"] != 2 and e["data_file"]["content"] == 0
    ]
    assert [e["sequence_number"] for e in live] == [start.sequence_number]
    java = sorted(r["id"] for r in c.sql("SELECT id FROM {c}.db.t").collect())
    assert java == [0, 2, 10]
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == java
