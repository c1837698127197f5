"""``Table.changelog_scan`` equals Iceberg Java's changelog (Spark's ``<table>.changes``, with
``start-snapshot-id`` / ``end-snapshot-id``) on a copy-on-write history written by both, and
both refuse a merge-on-read history."""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
import pytest

from support.spark import JavaCatalog

pytest.importorskip("pyspark")

from icefloe.exceptions import UnsupportedFeatureError

pytestmark = pytest.mark.spark

Change = tuple[Any, ...]


def _java(cat: JavaCatalog, table: str, start: int | None, end: int | None) -> list[Change]:
    reader = cat.spark.read.format("iceberg")
    if start is not None:
        reader = reader.option("start-snapshot-id", str(start))
    if end is not None:
        reader = reader.option("end-snapshot-id", str(end))
    df = reader.load(f"{cat.name}.{table}.changes")
    return sorted(tuple(r) for r in df.collect())


def _ours(rows: pa.Table) -> list[Change]:
    return sorted(tuple(r.values()) for r in rows.to_pylist())


def test_changelog_equals_iceberg_java(spark: Any, iceberg_spark: JavaCatalog) -> None:
    """Java inserts, copy-on-write deletes, updates and merges, icefloe appends, deletes and
    overwrites, a column added mid-history and a compaction (left out): for every pair of
    snapshots, the same rows with the same change types, ordinals and snapshot ids."""
    c = iceberg_spark
    c.sql(
        "CREATE TABLE {c}.db.t (id bigint, s string) USING iceberg PARTITIONED BY (bucket(2, id)) "
        "TBLPROPERTIES ('format-version'='2')"
    )
    c.sql("INSERT INTO {c}.db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    c.sql("INSERT INTO {c}.db.t VALUES (4, 'd')")
    c.sql("DELETE FROM {c}.db.t WHERE id = 2")
    c.sql("UPDATE {c}.db.t SET s = 'dd' WHERE id = 4")
    t = c.icefloe().load_table("db.t")
    t.append(pa.table({"id": pa.array([10, 11], pa.int64()), "s": ["j", "k"]}))
    t.delete("id = 10")
    t.overwrite(pa.table({"id": pa.array([12], pa.int64()), "s": ["l"]}), "id = 3")
    c.sql("ALTER TABLE {c}.db.t ADD COLUMN n int")
    c.sql(
        "CALL {c}.system.rewrite_data_files(table => 'db.t', "
        "options => map('min-input-files', '1'))"
    )
    c.sql(
        "MERGE INTO {c}.db.t t USING (SELECT 11L AS id, 'kk' AS s, 7 AS n UNION ALL "
        "SELECT 20L, 'new', 8) u ON t.id = u.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    t.refresh()
    chain = [
        s.snapshot_id for s in reversed(t.metadata.ancestors_of(t.current_snapshot().snapshot_id))
    ]
    ops = [t.metadata.snapshot(s).summary.operation for s in chain]
    assert ops.count("replace") == 1 and {"append", "delete", "overwrite"} <= set(ops), ops
    everything = _ours(t.changelog_scan().to_arrow())
    assert everything == _java(c, "db.t", None, None)
    assert {r[3] for r in everything} == {"INSERT", "DELETE"}
    for i, j in itertools.combinations(range(len(chain)), 2):
        ours = _ours(t.changelog_scan(chain[i], chain[j]).to_arrow())
        assert ours == _java(c, "db.t", chain[i], chain[j]), (i, j, ops)
    # projection and filter: the same rows as Java's
    java = c.spark.read.format("iceberg").option("start-snapshot-id", str(chain[1]))
    expected = sorted(
        tuple(r)
        for r in java.load(f"{c.name}.db.t.changes")
        .where("id > 3")
        .select("id", "_change_type", "_change_ordinal")
        .collect()
    )
    scan = t.changelog_scan(chain[1], row_filter="id > 3", selected_fields=["id"])
    got = scan.to_arrow().select(["id", "_change_type", "_change_ordinal"])
    assert _ours(got) == expected
    assert scan.count() == len(expected)


def test_merge_on_read_histories_are_refused_by_both(
    spark: Any, iceberg_spark: JavaCatalog
) -> None:
    c = iceberg_spark
    c.sql(
        "CREATE TABLE {c}.db.m (id bigint, s string) USING iceberg TBLPROPERTIES "
        "('format-version'='2', 'write.delete.mode'='merge-on-read')"
    )
    # one file, so that the delete writes a position delete file (not a whole-file delete)
    c.sql(
        "INSERT INTO {c}.db.m SELECT /*+ COALESCE(1) */ * "
        "FROM VALUES (1, 'a'), (2, 'b') AS v(id, s)"
    )
    c.sql("DELETE FROM {c}.db.m WHERE id = 2")
    assert c.sql("SELECT count(*) FROM {c}.db.m.delete_files").collect()[0][0] == 1
    with pytest.raises(Exception, match="Delete files are currently not supported"):
        _java(c, "db.m", None, None)
    t = c.icefloe().load_table("db.m")
    with pytest.raises(UnsupportedFeatureError, match="delete files"):
        t.changelog_scan().to_arrow()
    first = t.snapshots()[0].snapshot_id
    assert _ours(t.changelog_scan(to_snapshot_id=first).to_arrow()) == _java(c, "db.m", None, first)
