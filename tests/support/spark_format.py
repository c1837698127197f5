"""Helpers for tests of the ``icefloe`` Spark format: options naming a file-system catalog,
and the tables of the streaming tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from icefloe.schema import Schema
from icefloe.types import LongType, NestedField, StringType

#: The schema of the streaming tests' tables.
KV = Schema(NestedField(1, "id", LongType()), NestedField(2, "k", StringType()))


def kv(ids: range, k: str = "a") -> pa.Table:
    """Rows of :data:`KV`: ``ids`` with ``k``."""
    return pa.table({"id": pa.array(ids, pa.int64()), "k": [k] * len(ids)})


def src_dst(spark: Any, tmp_path: Path, name: str) -> tuple[Any, Any]:
    """A file-system catalog with tables ``db.src`` (ten rows appended) and an empty
    ``db.dst``, the format registered: the catalog and ``db.src``."""
    import icefloe.spark as ispark
    from support.spark_util import icefloe_catalog

    ispark.register(spark)
    cat = icefloe_catalog(tmp_path / "wh", name=name)
    cat.create_namespace("db")
    src = cat.create_table("db.src", KV, format_version=2)
    cat.create_table("db.dst", KV, format_version=2)
    src.append(kv(range(0, 10)))
    return cat, src


def catalog_options(catalog: Any) -> dict[str, str]:
    """Options that make the format load tables from ``catalog`` (a HadoopCatalog)."""
    return {
        "catalog": catalog.name,
        "catalog.type": "hadoop",
        "catalog.warehouse": str(catalog.warehouse),
    }


def fmt_read(spark: Any, catalog: Any, table: str, **options: Any) -> Any:
    """``spark.read.format("icefloe")`` of ``table`` in ``catalog`` with ``options``."""
    reader = spark.read.format("icefloe").options(**catalog_options(catalog))
    for k, v in options.items():
        reader = reader.option(k.replace("_", "-"), str(v))
    return reader.load(table)


def optimized_plan(df: Any) -> str:
    """The optimized logical plan of ``df`` (what Spark still filters after the scan)."""
    return str(df._jdf.queryExecution().optimizedPlan().toString())
