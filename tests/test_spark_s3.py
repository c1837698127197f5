"""Iceberg Java (Spark with ``S3FileIO``) and icefloe share tables on an S3 server.

Both sides use one JDBC/SQL catalog on a SQLite file; the data and metadata live on moto's and
s3proxy's S3 servers. Java writes and icefloe reads (and commits on top); icefloe writes and
Java reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from support.s3 import S3Server
from support.spark import java_s3_catalog

pytestmark = [pytest.mark.spark, pytest.mark.s3, pytest.mark.interop]


def _catalogs(spark: Any, server: S3Server, tmp_path: Path) -> tuple[str, SqlCatalog]:
    db = tmp_path / "catalog.db"
    warehouse = server.fresh_location()
    name = java_s3_catalog(spark, db, warehouse, server.properties())
    ours = SqlCatalog(name, uri=f"sqlite:///{db}", warehouse=warehouse, **server.properties())
    return name, ours


def test_icefloe_reads_what_java_wrote_on_s3(
    spark: Any, s3_server: S3Server, tmp_path: Path
) -> None:
    name, ours = _catalogs(spark, s3_server, tmp_path)
    spark.sql(f"CREATE NAMESPACE {name}.db")
    spark.sql(
        f"CREATE TABLE {name}.db.t (id bigint, s string) USING iceberg "
        "PARTITIONED BY (bucket(2, id)) TBLPROPERTIES ('format-version'='2')"
    )
    spark.sql(f"INSERT INTO {name}.db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"DELETE FROM {name}.db.t WHERE id = 2")
    table = ours.load_table("db.t")
    assert table.location.startswith("s3://")
    got = table.scan().to_arrow().sort_by("id").to_pylist()
    assert got == [{"id": 1, "s": "a"}, {"id": 3, "s": "c"}]
    table.append(pa.table({"id": pa.array([4], pa.int64()), "s": ["d"]}))
    rows = spark.sql(f"SELECT id, s FROM {name}.db.t ORDER BY id").collect()
    assert [(r.id, r.s) for r in rows] == [(1, "a"), (3, "c"), (4, "d")]
    ours.close()


def test_java_reads_what_icefloe_wrote_on_s3(
    spark: Any, s3_server: S3Server, tmp_path: Path
) -> None:
    name, ours = _catalogs(spark, s3_server, tmp_path)
    ours.create_namespace("db")
    table = ours.create_table(
        "db.t",
        pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())]),
        properties={"format-version": "3", "write.delete.mode": "merge-on-read"},
    )
    table.append(
        pa.table({"id": pa.array(range(10), pa.int64()), "s": [str(i) for i in range(10)]})
    )
    table.delete("id < 3")  # a deletion vector in a Puffin file on S3
    rows = spark.sql(f"SELECT id FROM {name}.db.t ORDER BY id").collect()
    assert [r.id for r in rows] == list(range(3, 10))
    spark.sql(f"INSERT INTO {name}.db.t VALUES (42, 'java')")
    again = ours.load_table("db.t").scan().to_arrow()
    assert sorted(again["id"].to_pylist()) == [*range(3, 10), 42]
    ours.close()
