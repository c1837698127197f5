"""Spark with Iceberg Java's ``RESTCatalog`` against ``icefloe serve``: a v3 table created,
written, deleted from and updated merge-on-read by Java, read by icefloe with the rows Java
reads; icefloe's commits seen by Spark; a CTAS through the staged-create path; tables nested
deeper than icefloe reads stored for Java; a damaged metadata file a valid error for Java."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from support.rest import RestServer, new_warehouse

pytestmark = [pytest.mark.rest, pytest.mark.spark, pytest.mark.interop]


def _runtime_jar_or_skip() -> None:
    from support.spark import iceberg_runtime_jar

    jar, why = iceberg_runtime_jar()
    if jar is None:
        pytest.skip(why)


def _rest_catalog_on_spark(spark: Any, server: RestServer, warehouse: str) -> str:
    _runtime_jar_or_skip()
    name = f"rest_{warehouse}"
    prefix = f"spark.sql.catalog.{name}"
    spark.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"{prefix}.type", "rest")
    spark.conf.set(f"{prefix}.uri", server.url)
    spark.conf.set(f"{prefix}.warehouse", warehouse)
    spark.conf.set(f"{prefix}.cache-enabled", "false")
    return name


def _server_planning_catalog(spark: Any, name: str) -> str:
    """A second Spark catalog on the same server and warehouse as ``name`` whose scans the
    server plans (``scan-planning-mode=server``)."""
    planned = f"{name}_srv"
    for key in ("", ".type", ".uri", ".warehouse", ".cache-enabled"):
        conf = spark.conf.get(f"spark.sql.catalog.{name}{key}")
        spark.conf.set(f"spark.sql.catalog.{planned}{key}", conf)
    spark.conf.set(f"spark.sql.catalog.{planned}.scan-planning-mode", "server")
    return planned


def test_spark_rest_catalog_writes_mor_deletes_and_updates(
    spark: Any, rest_server: RestServer
) -> None:
    warehouse = new_warehouse()
    c = _rest_catalog_on_spark(spark, rest_server, warehouse)
    spark.sql(f"CREATE NAMESPACE {c}.db")
    spark.sql(
        f"CREATE TABLE {c}.db.t (id BIGINT, s STRING) USING iceberg TBLPROPERTIES ("
        "'format-version'='3', 'write.delete.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read')"
    )
    spark.sql(f"INSERT INTO {c}.db.t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
    spark.sql(f"DELETE FROM {c}.db.t WHERE id = 2")
    spark.sql(f"UPDATE {c}.db.t SET s = 'C' WHERE id = 3")
    java_rows = sorted(tuple(r) for r in spark.sql(f"SELECT id, s FROM {c}.db.t").collect())
    assert java_rows == [(1, "a"), (3, "C"), (4, "d")]
    ours = RestCatalog("ours", uri=rest_server.url, warehouse=warehouse)
    t = ours.load_table("db.t")
    assert t.format_version == 3
    # merge-on-read: Java wrote deletion vectors rather than rewriting the data files
    assert sum(int(s.summary.get("added-delete-files") or 0) for s in t.snapshots()) >= 2
    got = sorted((r["id"], r["s"]) for r in t.scan().to_arrow().to_pylist())
    assert got == java_rows
    # icefloe commits through the same server; Spark sees it
    t.append(pa.table({"id": pa.array([5], pa.int64()), "s": ["e"]}))
    spark.sql(f"REFRESH TABLE {c}.db.t")
    assert spark.sql(f"SELECT count(*) FROM {c}.db.t").collect()[0][0] == 4
    # CREATE TABLE AS SELECT: Java stages the create and commits it with assert-create
    spark.sql(f"CREATE TABLE {c}.db.copy USING iceberg AS SELECT * FROM {c}.db.t")
    copy = ours.load_table("db.copy")
    assert sorted(r["id"] for r in copy.scan().to_arrow().to_pylist()) == [1, 3, 4, 5]
    # dropping a column: Java sends add-schema with the new schema's (lower) last-column-id
    spark.sql(f"ALTER TABLE {c}.db.copy DROP COLUMN s")
    assert [f.name for f in ours.load_table("db.copy").schema().fields] == ["id"]


def test_spark_logs_in_with_oauth2_and_outlives_its_token(
    spark: Any, rest_auth_server: RestServer
) -> None:
    """Java's RESTCatalog gets a token from icefloe serve's endpoint (client credentials) and
    keeps working after it expired (3 s), refreshing through the same endpoint."""
    import time

    from support.rest import CLIENT_ID, CLIENT_SECRET

    _runtime_jar_or_skip()
    name = "rest_oauth"
    prefix = f"spark.sql.catalog.{name}"
    spark.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"{prefix}.type", "rest")
    spark.conf.set(f"{prefix}.uri", rest_auth_server.url)
    spark.conf.set(f"{prefix}.credential", f"{CLIENT_ID}:{CLIENT_SECRET}")
    spark.conf.set(f"{prefix}.oauth2-server-uri", f"{rest_auth_server.url}/v1/oauth/tokens")
    spark.conf.set(f"{prefix}.cache-enabled", "false")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name}.spark_oauth")
    spark.sql(f"CREATE TABLE {name}.spark_oauth.t (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {name}.spark_oauth.t VALUES (1)")
    time.sleep(4)  # the first token has expired
    spark.sql(f"INSERT INTO {name}.spark_oauth.t VALUES (2)")
    rows = sorted(r[0] for r in spark.sql(f"SELECT id FROM {name}.spark_oauth.t").collect())
    assert rows == [1, 2]
    assert rest_auth_server.log_text().count('"POST /v1/oauth/tokens" 200') >= 2
    spark.sql(f"DROP TABLE {name}.spark_oauth.t PURGE")
    # stop Java's background token refresh before the server goes away with the session
    manager = spark._jsparkSession.sessionState().catalogManager()
    manager.catalog(name).icebergCatalog().close()


@pytest.mark.parametrize("version", [2, 3])
def test_spark_plans_scans_on_the_server(spark: Any, rest_server: RestServer, version: int) -> None:
    """Iceberg Java with ``scan-planning-mode=server`` plans through ``POST .../plan``: the
    files, partitions, residuals and delete files (position deletes in v2, deletion vectors in
    v3, written by Java and by icefloe) icefloe's planner answers give the rows Java's own
    planning gives, for filters on partition and data columns and for time travel."""
    warehouse = new_warehouse()
    c = _rest_catalog_on_spark(spark, rest_server, warehouse)
    planned = _server_planning_catalog(spark, c)
    spark.sql(f"CREATE NAMESPACE {c}.db")
    spark.sql(
        f"CREATE TABLE {c}.db.t (id BIGINT, d DATE, s STRING, x DOUBLE) USING iceberg "
        "PARTITIONED BY (days(d), bucket(4, id)) TBLPROPERTIES ("
        f"'format-version'='{version}', 'write.delete.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read')"
    )
    spark.sql(
        f"INSERT INTO {c}.db.t SELECT id, date_add(DATE'2024-03-01', CAST(id % 5 AS INT)), "
        "concat('s', CAST(id AS STRING)), id / 7.0 FROM range(0, 400)"
    )
    first = spark.sql(f"SELECT snapshot_id FROM {c}.db.t.snapshots").collect()[0][0]
    spark.sql(f"DELETE FROM {c}.db.t WHERE id % 10 = 3")  # Java's position deletes / DVs
    ours = RestCatalog("ours", uri=rest_server.url, warehouse=warehouse)
    t = ours.load_table("db.t")
    t.delete("id in (17, 27, 37, 147, 250)")  # icefloe's deletes
    t.append(
        pa.table(
            {
                "id": pa.array([1000, 1001], pa.int64()),
                "d": pa.array([19783, 19784], pa.date32()),
                "s": ["new", "newer"],
                "x": [1.5, 2.5],
            }
        )
    )
    spark.sql(f"REFRESH TABLE {c}.db.t")
    queries = [
        "SELECT id, d, s, x FROM {t}",
        "SELECT id, s FROM {t} WHERE d = DATE'2024-03-03'",
        "SELECT id FROM {t} WHERE id BETWEEN 20 AND 160 AND s LIKE 's1%'",
        "SELECT id, x FROM {t} WHERE x > 40.0 OR d > DATE'2024-03-04'",
        "SELECT count(*) FROM {t} WHERE id IN (3, 17, 18, 1000)",
        f"SELECT id FROM {{t}} VERSION AS OF {first} WHERE id < 30",
    ]
    before = rest_server.log_text().count(f"/v1/{warehouse}/namespaces/db/tables/t/plan")
    for q in queries:
        local = sorted(map(tuple, spark.sql(q.format(t=f"{c}.db.t")).collect()))
        remote = sorted(map(tuple, spark.sql(q.format(t=f"{planned}.db.t")).collect()))
        assert remote == local, q
        assert local, q
    # an incremental read: the rows appended after the first snapshot (icefloe's append)
    last = ours.load_table("db.t").current_snapshot().snapshot_id
    reads = [
        spark.read.format("iceberg")
        .option("start-snapshot-id", str(first))
        .option("end-snapshot-id", str(last))
        .load(f"{name}.db.t")
        .select("id")
        .collect()
        for name in (c, planned)
    ]
    assert sorted(reads[0]) == sorted(reads[1]) and len(reads[0]) == 2
    # icefloe's own read agrees with Java's
    got = sorted(t.scan(row_filter="d = '2024-03-03'").to_arrow().column("id").to_pylist())
    java = spark.sql(f"SELECT id FROM {planned}.db.t WHERE d = DATE'2024-03-03'").collect()
    assert got == sorted(r[0] for r in java)
    # aggregates Spark pushes down to file statistics (a table without deletes)
    spark.sql(f"CREATE TABLE {c}.db.plain USING iceberg AS SELECT id, s, x FROM {c}.db.t")
    agg = "SELECT min(id), max(id), count(*), min(s), max(x) FROM {t}"
    local = spark.sql(agg.format(t=f"{c}.db.plain")).collect()
    assert spark.sql(agg.format(t=f"{planned}.db.plain")).collect() == local
    assert local[0][0] == 0 and local[0][1] == 1001
    plans = rest_server.log_text().count(f"/v1/{warehouse}/namespaces/db/tables/t/plan")
    assert plans - before >= len(queries)  # every read planned on the server


def test_server_plans_carry_every_partition_type_and_equality_deletes(
    spark: Any, rest_server: RestServer
) -> None:
    """Partition values of every transform and source type, two partition specs, and
    icefloe's equality deletes reach Java through the server's plan as Java's own planning
    reads them."""
    import datetime as dt
    import decimal
    import uuid

    warehouse = new_warehouse()
    c = _rest_catalog_on_spark(spark, rest_server, warehouse)
    planned = _server_planning_catalog(spark, c)
    ours = RestCatalog("ours", uri=rest_server.url, warehouse=warehouse)
    ours.create_namespace("db")
    n = 40
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
            pa.field("lts", pa.timestamp("us")),
            pa.field("d", pa.date32()),
            pa.field("s", pa.string()),
            pa.field("dec", pa.decimal128(9, 2)),
            pa.field("b", pa.binary()),
            pa.field("flag", pa.bool_()),
            pa.field("f", pa.float64()),
            pa.field("u", pa.uuid()),
        ]
    )
    base = dt.datetime(2024, 5, 1, 10, 30, tzinfo=dt.timezone.utc)
    rows = pa.table(
        {
            "id": list(range(n)),
            "ts": [base + dt.timedelta(hours=7 * i) for i in range(n)],
            "lts": [dt.datetime(2023, 1 + i % 12, 1, 12) for i in range(n)],
            "d": [dt.date(2020 + i % 3, 2, 28) for i in range(n)],
            "s": [f"name-{i % 6}-é" for i in range(n)],
            "dec": [decimal.Decimal(f"{i % 4}.{i % 100:02d}") for i in range(n)],
            "b": [bytes([i % 3, 255]) for i in range(n)],
            "flag": [i % 2 == 0 for i in range(n)],
            "f": [None if i % 5 == 0 else i / 3 for i in range(n)],
            "u": [uuid.UUID(int=i % 2 + 1).bytes for i in range(n)],
        },
        schema=schema,
    )
    props = {"format-version": "2", "write.delete.mode": "merge-on-read"}
    t = ours.create_table("db.p", schema, properties=props)
    (
        t.update_spec()
        .add_field("ts", "hour")
        .add_field("lts", "month")
        .add_field("d", "year")
        .add_field("s", "truncate[4]")
        .add_field("dec", "identity")
        .add_field("b", "identity")
        .add_field("flag", "identity")
        .add_field("u", "identity")
        .add_field("id", "bucket[3]")
        .commit()
    )
    t = ours.load_table("db.p")
    t.append(rows.slice(0, 25))
    t.update_spec().remove_field("ts_hour").add_field("ts", "day").commit()  # a second spec
    t = ours.load_table("db.p")
    t.append(rows.slice(25))
    t.delete_by_keys(pa.table({"id": pa.array([3, 8, 30], pa.int64())}), ["id"])
    t.delete("id in (11, 33)")
    spark.sql(f"REFRESH TABLE {c}.db.p")
    queries = [
        "SELECT * FROM {t}",
        "SELECT id FROM {t} WHERE ts >= TIMESTAMP'2024-05-03 00:00:00 UTC' AND flag",
        "SELECT id, s FROM {t} WHERE s LIKE 'name-2%' OR dec = 1.05",
        "SELECT id FROM {t} WHERE d = DATE'2021-02-28' AND b = X'01FF'",
        "SELECT id FROM {t} WHERE f IS NULL OR lts < TIMESTAMP_NTZ'2023-04-01 00:00:00'",
        "SELECT id FROM {t} WHERE u = '00000000-0000-0000-0000-000000000002'",
    ]
    for q in queries:
        local = sorted(map(tuple, spark.sql(q.format(t=f"{c}.db.p")).collect()))
        remote = sorted(map(tuple, spark.sql(q.format(t=f"{planned}.db.p")).collect()))
        assert remote == local, q
        assert local, q
    ids = sorted(r[0] for r in spark.sql(f"SELECT id FROM {planned}.db.p").collect())
    assert ids == [i for i in range(n) if i not in (3, 8, 11, 30, 33)]


def test_spark_creates_and_changes_too_deep_tables_through_the_server(
    spark: Any, rest_server: RestServer
) -> None:
    """Iceberg Java stores any valid schema through ``icefloe serve``: Spark creates a table
    whose column nests 50 lists deep (deeper than pyarrow's Parquet reader takes), writes and
    reads a row, and adds a column; icefloe loads the table but refuses to read or write it
    with a typed error (the server refused Java's create with 406 before)."""
    from icefloe.exceptions import UnsupportedFeatureError
    from icefloe.nesting import MAX_PARQUET_LEVELS, deepest_column

    warehouse = new_warehouse()
    c = _rest_catalog_on_spark(spark, rest_server, warehouse)
    spark.sql(f"CREATE NAMESPACE {c}.db")
    depth = 50
    spark.sql(f"CREATE TABLE {c}.db.t (id BIGINT, x {'ARRAY<' * depth}BIGINT{'>' * depth})")
    spark.sql(f"INSERT INTO {c}.db.t SELECT 1, {'array(' * depth}7L{')' * depth}")
    row = spark.sql(f"SELECT id, x FROM {c}.db.t").collect()[0]
    value = row["x"]
    for _ in range(depth):
        value = value[0]
    assert (row["id"], value) == (1, 7)
    spark.sql(f"ALTER TABLE {c}.db.t ADD COLUMN y STRING")
    ours = RestCatalog("ours", uri=rest_server.url, warehouse=warehouse)
    try:
        t = ours.load_table("db.t")
        assert [f.name for f in t.schema().fields] == ["id", "x", "y"]
        assert deepest_column(t.schema(), parquet=True)[0] == MAX_PARQUET_LEVELS + 1
        assert len(t.snapshots()) == 1
        with pytest.raises(UnsupportedFeatureError, match="cannot read the table: column 'x"):
            t.scan().to_arrow()
        rows = pa.table({"id": pa.array([2], pa.int64())})
        with pytest.raises(UnsupportedFeatureError, match="cannot write to the table: column 'x"):
            t.append(rows)
    finally:
        ours.close()


def test_java_reads_a_damaged_metadata_file_as_a_server_failure(
    spark: Any, rest_server: RestServer
) -> None:
    """A table whose metadata file is damaged on the server's storage: Iceberg Java reads the
    500 ``CorruptFileException`` answer as a valid error response and raises its
    ``ServiceFailureException`` naming the type and the file."""
    from pathlib import Path

    warehouse = new_warehouse()
    c = _rest_catalog_on_spark(spark, rest_server, warehouse)
    ours = RestCatalog("ours", uri=rest_server.url, warehouse=warehouse)
    try:
        ours.create_namespace("db")
        t = ours.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
    finally:
        ours.close()
    path = Path(t.metadata_location.removeprefix("file://"))
    path.write_bytes(b'{"format-version": 2}')
    with pytest.raises(Exception, match="ServiceFailureException") as e:
        spark.sql(f"SELECT * FROM {c}.db.t").collect()
    assert "CorruptFileException" in str(e.value)
    assert path.name in str(e.value)
