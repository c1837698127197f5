"""Cherry-picks compared with Iceberg Java 1.12 (through Spark) on twin tables: a staged dynamic
partition overwrite picked onto a ``main`` that moved on (and refused when ``main`` changed a
partition it replaces), and a pick planned as a fast-forward that commits after another writer
moved ``main``."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from icefloe.exceptions import ValidationError
from support.spark import JavaCatalog

pytestmark = [pytest.mark.spark, pytest.mark.interop]

#: Summary keys both engines write for a pick (Spark adds its engine and app keys, icefloe
#: ``entries-processed``).
PICK_KEYS = (
    "operation",
    "source-snapshot-id",
    "published-wap-id",
    "added-data-files",
    "deleted-data-files",
    "added-records",
    "deleted-records",
    "changed-partition-count",
    "total-data-files",
    "total-records",
)


def _staged(jc: JavaCatalog, table: str, wap_id: str) -> int:
    rows = jc.sql(f"SELECT snapshot_id, summary FROM {{c}}.db.{table}.snapshots").collect()
    return int(next(r.snapshot_id for r in rows if r.summary.get("wap.id") == wap_id))


def _rows(jc: JavaCatalog, query: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in jc.sql(query).collect())


def _stage_dynamic_overwrite(jc: JavaCatalog, table: str, version: int) -> int:
    """``main``: (1, eu), (2, us); staged under wap.id w3: eu replaced by 9 and 10."""
    t = f"{{c}}.db.{table}"
    jc.sql(
        f"CREATE TABLE {t} (id bigint, region string) USING iceberg PARTITIONED BY (region) "
        f"TBLPROPERTIES ('format-version'='{version}', 'write.wap.enabled'='true')"
    )
    jc.sql(f"INSERT INTO {t} VALUES (1, 'eu'), (2, 'us')")
    conf = jc.spark.conf
    conf.set("spark.wap.id", "w3")
    conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        jc.sql(f"INSERT OVERWRITE {t} VALUES (9, 'eu'), (10, 'eu')")
    finally:
        conf.unset("spark.wap.id")
        conf.unset("spark.sql.sources.partitionOverwriteMode")
    return _staged(jc, table, "w3")


@pytest.mark.parametrize("version", [2, 3])
def test_pick_dynamic_overwrite_onto_a_moved_main(iceberg_spark: JavaCatalog, version: int) -> None:
    jc = iceberg_spark
    staged = {}
    for name in ("ice", "jav"):
        staged[name] = _stage_dynamic_overwrite(jc, name, version)
        jc.sql(f"INSERT INTO {{c}}.db.{name} VALUES (4, 'ap')")  # main moves on elsewhere
    jc.sql(f"CALL {{c}}.system.cherrypick_snapshot('db.jav', {staged['jav']})")
    t = jc.icefloe().load_table("db.ice")
    with t.manage_snapshots() as ms:
        ms.cherry_pick(staged["ice"])

    cols = "id, region" + (", _row_id, _last_updated_sequence_number" if version == 3 else "")
    ours = _rows(jc, f"SELECT {cols} FROM {{c}}.db.ice")
    assert ours == _rows(jc, f"SELECT {cols} FROM {{c}}.db.jav")
    assert [r[:2] for r in ours] == [(2, "us"), (4, "ap"), (9, "eu"), (10, "eu")]
    t.refresh()
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [2, 4, 9, 10]

    java = jc.icefloe().load_table("db.jav")
    mine, theirs = t.current_snapshot(), java.current_snapshot()
    assert mine is not None and theirs is not None
    assert mine.summary is not None and theirs.summary is not None
    for key in PICK_KEYS:
        want = theirs.summary.get(key)
        if key == "source-snapshot-id":
            want = str(staged["ice"]) if want == str(staged["jav"]) else f"bad {want}"
        assert mine.summary.get(key) == want, key
    assert (
        mine.summary.get("replace-partitions") is None
    )  # as Java: the pick is no dynamic overwrite
    assert mine.sequence_number == theirs.sequence_number
    if version == 3:
        # the picked rows get the same new row ids; Java also gives the rewritten manifest of
        # the kept rows a fresh range (more added-rows), icefloe keeps theirs
        assert mine.first_row_id == theirs.first_row_id
        assert mine.first_row_id is not None and mine.added_rows is not None
        assert t.metadata.next_row_id == mine.first_row_id + mine.added_rows
        assert t.metadata.next_row_id <= (java.metadata.next_row_id or 0)


def test_pick_dynamic_overwrite_refused_when_main_changed_its_partition(
    iceberg_spark: JavaCatalog,
) -> None:
    jc = iceberg_spark
    staged = _stage_dynamic_overwrite(jc, "t", 2)
    jc.sql("INSERT INTO {c}.db.t VALUES (5, 'eu')")  # main writes to the replaced partition
    t = jc.icefloe().load_table("db.t")
    head = t.current_snapshot()
    with pytest.raises(ValidationError, match="main changed a partition it replaces"):
        t.manage_snapshots().cherry_pick(staged)
    t.refresh()
    assert t.current_snapshot() == head
    with pytest.raises(Exception, match="Cannot cherry-pick replace partitions with changed"):
        jc.sql(f"CALL {{c}}.system.cherrypick_snapshot('db.t', {staged})")
    assert _rows(jc, "SELECT id, region FROM {c}.db.t") == [(1, "eu"), (2, "us"), (5, "eu")]


def test_fast_forward_pick_overtaken_by_another_writer(iceberg_spark: JavaCatalog) -> None:
    """Planned as a fast-forward; another writer appends before the commit: the pick is applied
    to the newer ``main`` as a new append, as Java's commit of the same operation does."""
    jc = iceberg_spark
    staged = {}
    for name in ("ice", "jav"):
        jc.sql(
            f"CREATE TABLE {{c}}.db.{name} (id bigint) USING iceberg "
            "TBLPROPERTIES ('format-version'='2', 'write.wap.enabled'='true')"
        )
        jc.sql(f"INSERT INTO {{c}}.db.{name} VALUES (1)")
        jc.spark.conf.set("spark.wap.id", "w1")
        try:
            jc.sql(f"INSERT INTO {{c}}.db.{name} VALUES (2)")
        finally:
            jc.spark.conf.unset("spark.wap.id")
        staged[name] = _staged(jc, name, "w1")
    cat = jc.icefloe()
    t = cat.load_table("db.ice")
    with t.manage_snapshots() as ms:
        ms.cherry_pick(staged["ice"])
        cat.load_table("db.ice").append(pa.table({"id": pa.array([3], pa.int64())}))
    jvm = jc.spark._jvm
    java_table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        jc.spark._jsparkSession, f"{jc.name}.db.jav"
    )
    op = java_table.manageSnapshots().cherrypick(staged["jav"])
    jc.sql("INSERT INTO {c}.db.jav VALUES (3)")
    op.commit()

    assert _rows(jc, "SELECT id FROM {c}.db.ice") == [(1,), (2,), (3,)]
    assert _rows(jc, "SELECT id FROM {c}.db.jav") == [(1,), (2,), (3,)]
    t.refresh()
    head, theirs = t.current_snapshot(), jc.icefloe().load_table("db.jav").current_snapshot()
    assert head is not None and head.summary is not None
    assert theirs is not None and theirs.summary is not None
    assert head.snapshot_id != staged["ice"] and head.operation == theirs.operation == "append"
    assert head.summary.get("source-snapshot-id") == str(staged["ice"])
    assert theirs.summary.get("source-snapshot-id") == str(staged["jav"])
    assert head.summary.get("published-wap-id") == theirs.summary.get("published-wap-id") == "w1"
    assert head.summary.get("added-records") == theirs.summary.get("added-records") == "1"


def test_staged_writes_are_published_by_the_other_engine(iceberg_spark: JavaCatalog) -> None:
    """On a table with ``write.wap.enabled``: icefloe stages a write with a ``wap.id`` that
    Java's ``publish_changes`` publishes, and icefloe's ``publish_changes`` publishes what
    Spark staged under ``spark.wap.id``; neither moves ``main`` before."""
    jc = iceberg_spark
    jc.sql(
        "CREATE TABLE {c}.db.wap (id bigint) USING iceberg "
        "TBLPROPERTIES ('format-version'='3', 'write.wap.enabled'='true')"
    )
    jc.sql("INSERT INTO {c}.db.wap VALUES (1)")
    t = jc.icefloe().load_table("db.wap")
    t.append(pa.table({"id": pa.array([2], pa.int64())}), snapshot_properties={"wap.id": "ours"})
    assert _rows(jc, "SELECT id FROM {c}.db.wap") == [(1,)]
    jc.sql("CALL {c}.system.publish_changes('db.wap', 'ours')")
    assert _rows(jc, "SELECT id FROM {c}.db.wap") == [(1,), (2,)]
    jc.spark.conf.set("spark.wap.id", "theirs")
    try:
        jc.sql("INSERT INTO {c}.db.wap VALUES (3)")
    finally:
        jc.spark.conf.unset("spark.wap.id")
    t.refresh()
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1, 2]
    t.manage_snapshots().publish_changes("theirs").commit()
    assert _rows(jc, "SELECT id FROM {c}.db.wap") == [(1,), (2,), (3,)]
    with pytest.raises(ValidationError, match="already"):
        t.manage_snapshots().publish_changes("theirs").commit()
