"""icefloe's SQL catalog and Iceberg Java's ``JdbcCatalog`` on one SQLite database: namespace
properties as Java keeps them, and a database Java upgrades (and adds views to) while icefloe
has it open."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import NoSuchTableError, ValidationError
from support.catalogs import first_layout_database
from support.spark import java_jdbc_catalog

pytestmark = [pytest.mark.spark, pytest.mark.interop]

_IDS = itertools.count()


def test_namespaces_keep_javas_hidden_exists_property(spark: Any, tmp_path: Path) -> None:
    db, warehouse = tmp_path / "c.db", tmp_path / "wh"
    name = java_jdbc_catalog(spark, db, warehouse)
    # Java's own settings work for icefloe too
    ours = SqlCatalog(name, uri=f"jdbc:sqlite:{db}", warehouse=str(warehouse))
    ours.create_namespace("sales", {"team": "a"})
    spark.sql(f"ALTER NAMESPACE {name}.sales UNSET PROPERTIES ('team')")
    assert ours.namespace_exists("sales") and ours.list_namespaces() == [("sales",)]
    assert ours.load_namespace_properties("sales") == {}
    ours.update_namespace_properties("sales", updates={"team": "b"})
    ours.update_namespace_properties("sales", removals=["team"])
    assert [r[0] for r in spark.sql(f"SHOW NAMESPACES IN {name}").collect()] == ["sales"]
    spark.sql(f"CREATE NAMESPACE {name}.ops WITH PROPERTIES ('tier' = 'gold')")
    assert ours.load_namespace_properties("ops")["tier"] == "gold"  # (Spark adds its owner)
    ours.update_namespace_properties("ops", removals=["tier", "owner"])
    assert ours.namespace_exists("ops")
    with pytest.raises(ValidationError, match="'exists' is reserved"):
        ours.update_namespace_properties("ops", updates={"exists": "false"})


def test_an_open_catalog_sees_the_views_java_adds_after_upgrading(
    spark: Any, tmp_path: Path
) -> None:
    """A database of the first layout (no ``iceberg_type``) opened by icefloe, then upgraded
    by Java, which creates a view: the open catalog lists it as a view, never as a table."""
    db, warehouse = tmp_path / "c.db", tmp_path / "wh"
    first_layout_database(db)
    name = f"upgraded{next(_IDS)}"  # (not support.spark's jdbc<N> names)
    ours = SqlCatalog(name, uri=f"sqlite:///{db}", warehouse=str(warehouse))
    ours.create_namespace("ns")
    ours.create_table("ns.t", pa.schema([pa.field("id", pa.int64())]))
    java_jdbc_catalog(spark, db, warehouse, name)
    spark.sql(f"CREATE VIEW {name}.ns.v AS SELECT 1 AS x")
    assert ours.list_tables("ns") == [("ns", "t")]
    assert ours.list_views("ns") == [("ns", "v")]  # the column is there now: views are too
    assert ours.load_view("ns.v").sql("spark").strip() == "SELECT 1 AS x"
    with pytest.raises(NoSuchTableError):
        ours.load_table("ns.v")
    with pytest.raises(NoSuchTableError):
        ours.drop_table("ns.v")
    assert [r.x for r in spark.sql(f"SELECT * FROM {name}.ns.v").collect()] == [1]
