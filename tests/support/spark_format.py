"""Helpers for tests of the ``icefloe`` Spark format: options naming a file-system catalog."""

from __future__ import annotations

from typing import Any


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
