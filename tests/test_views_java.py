"""Views shared with Iceberg Java (Spark 4.1 with the Iceberg runtime): on one SQLite catalog
database (Java's ``JdbcCatalog``, schema version V1) and through ``icefloe serve`` (Java's
``RESTCatalog``), each engine creates, replaces, alters, renames and drops views the other reads
and queries."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.metadata.view_metadata import ViewMetadata
from support.rest import RestServer, new_warehouse
from support.spark import iceberg_runtime_jar, java_jdbc_catalog

pytestmark = [pytest.mark.spark, pytest.mark.interop]


ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "region": ["eu", "us", "eu"]})


def _rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def test_views_made_by_either_engine_are_read_and_changed_by_the_other(
    spark: Any, tmp_path: Path
) -> None:
    db, warehouse = tmp_path / "c.db", tmp_path / "wh"
    c = java_jdbc_catalog(spark, db, warehouse)
    ours = SqlCatalog(c, uri=f"sqlite:///{db}", warehouse=str(warehouse))
    ours.create_namespace("ns")
    ours.create_table("ns.t", ROWS.schema).append(ROWS)

    # Java creates a view: icefloe reads its query, schema, properties and file as written
    spark.sql(
        f"CREATE VIEW {c}.ns.eu COMMENT 'rows of eu' AS SELECT id FROM {c}.ns.t WHERE region = 'eu'"
    )
    eu = ours.load_view("ns.eu")
    assert eu.dialects == ["spark"] and "region = 'eu'" in eu.sql("spark")
    assert [f.name for f in eu.schema.fields] == ["id"]
    assert eu.properties.get("comment") == "rows of eu"
    assert eu.current_version.default_catalog == "spark_catalog"  # the session's current
    assert eu.current_version.summary["engine-name"] == "spark"
    raw = ours.io.new_input(eu.metadata_location).read()
    assert ViewMetadata.parse(raw).to_json() == json.loads(gzip.decompress(raw))

    # icefloe creates a view: Java queries it and sees our properties
    ours.create_view(
        "ns.us",
        "SELECT id, region FROM t WHERE region = 'us'",
        ROWS.schema,
        dialect="spark",
        default_catalog=c,
        properties={"comment": "rows of us"},
    )
    assert _rows(spark, f"SELECT * FROM {c}.ns.us") == [(2, "us")]
    shown = {  # (the shared session's temporary views of other tests are listed too)
        r.viewName for r in spark.sql(f"SHOW VIEWS IN {c}.ns").collect() if not r.isTemporary
    }
    assert shown == {"eu", "us"}
    described = {r[0]: r[1] for r in spark.sql(f"DESCRIBE TABLE EXTENDED {c}.ns.us").collect()}
    assert "rows of us" in str(described)

    # icefloe replaces the query: Java's next read uses the new version
    ours.replace_view(
        "ns.us",
        "SELECT id, region FROM t WHERE id >= 2",
        ROWS.schema,
        dialect="spark",
        default_catalog=c,
    )
    assert _rows(spark, f"SELECT * FROM {c}.ns.us") == [(2, "us"), (3, "eu")]

    # Java alters and replaces it: icefloe sees its properties and every version
    spark.sql(f"ALTER VIEW {c}.ns.us SET TBLPROPERTIES ('team' = 'ops')")
    assert ours.load_view("ns.us").properties["team"] == "ops"
    spark.sql(f"CREATE OR REPLACE VIEW {c}.ns.us AS SELECT id FROM {c}.ns.t WHERE id = 1")
    us = ours.load_view("ns.us")
    assert [v.version_id for v in us.versions] == [1, 2, 3]
    assert [e.version_id for e in us.history] == [1, 2, 3]
    assert "id = 1" in us.sql("spark") and [f.name for f in us.schema.fields] == ["id"]
    assert len(us.metadata.schemas) == 2  # Java's new schema; icefloe's first reused

    # icefloe renames, Java drops
    ours.rename_view("ns.us", "ns.one")
    assert _rows(spark, f"SELECT * FROM {c}.ns.one") == [(1,)]
    spark.sql(f"DROP VIEW {c}.ns.eu")
    assert ours.list_views("ns") == [("ns", "one")] and not ours.view_exists("ns.eu")
    assert ours.list_tables("ns") == [("ns", "t")]


def test_java_makes_views_through_icefloe_serve(spark: Any, rest_server: RestServer) -> None:
    jar, why = iceberg_runtime_jar()
    if jar is None:
        pytest.skip(why)
    warehouse = new_warehouse()
    c = f"rest_views_{warehouse}"
    prefix = f"spark.sql.catalog.{c}"
    spark.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"{prefix}.type", "rest")
    spark.conf.set(f"{prefix}.uri", rest_server.url)
    spark.conf.set(f"{prefix}.warehouse", warehouse)
    spark.conf.set(f"{prefix}.cache-enabled", "false")
    spark.sql(f"CREATE NAMESPACE {c}.db")
    spark.sql(f"CREATE TABLE {c}.db.t (id BIGINT, region STRING) USING iceberg")
    spark.sql(f"INSERT INTO {c}.db.t VALUES (1, 'eu'), (2, 'us'), (3, 'eu')")
    spark.sql(f"CREATE VIEW {c}.db.eu AS SELECT id FROM {c}.db.t WHERE region = 'eu'")
    assert _rows(spark, f"SELECT * FROM {c}.db.eu") == [(1,), (3,)]

    ours = RestCatalog("ours", uri=rest_server.url, warehouse=warehouse)
    eu = ours.load_view("db.eu")
    assert (
        "region = 'eu'" in eu.sql("spark") and eu.current_version.summary["engine-name"] == "spark"
    )
    ours.replace_view(
        "db.eu",
        "SELECT id FROM t WHERE region = 'eu' AND id > 1",
        pa.schema([("id", pa.int64())]),
        dialect="spark",
        default_catalog=c,
    )
    assert _rows(spark, f"SELECT * FROM {c}.db.eu") == [(3,)]
    spark.sql(f"ALTER VIEW {c}.db.eu SET TBLPROPERTIES ('team' = 'ops')")
    assert ours.load_view("db.eu").properties["team"] == "ops"
    spark.sql(f"ALTER VIEW {c}.db.eu RENAME TO {c}.db.europe")
    assert ours.list_views("db") == [("db", "europe")]
    spark.sql(f"DROP VIEW {c}.db.europe")
    assert ours.list_views("db") == [] and ours.list_tables("db") == [("db", "t")]
