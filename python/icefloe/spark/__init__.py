"""Spark integration through PySpark: icefloe plugs into Spark from Python.

Spark is the distributed engine; icefloe plans and commits on the driver and reads or writes
data files on the executors through ``mapInArrow``, without Iceberg's JVM runtime. Executors
need only the icefloe wheel and access to the table's storage.

- :func:`read`: a table (or a snapshot of it) as a DataFrame (:mod:`icefloe.spark.reading`).
- :func:`write`: append or overwrite from a DataFrame in one snapshot
  (:mod:`icefloe.spark.writing`); :func:`cluster`: a DataFrame's rows clustered by a
  table's partitions, for writes through the format.
- :func:`compute_statistics`: theta-sketch statistics built on the executors, merged and
  committed on the driver (:mod:`icefloe.spark.statistics`).
- :mod:`icefloe.spark.functions`: partition transforms as vectorised Spark functions
  (:func:`register_functions` for SQL).
- :mod:`icefloe.spark.schema`: Spark schemas from Iceberg schemas (field ids kept).
- :func:`icefloe_errors`: executor failures re-raised with their icefloe type.
- :func:`register`: the ``icefloe`` format for ``spark.read``/``df.write``/streaming
  (:mod:`icefloe.spark.source`).
- :func:`configure`: Spark's Arrow batch settings that make the exchange with executors
  cheapest (:mod:`icefloe.spark.worker`), and :func:`register`.

They need PySpark 4.1 (``pip install 'icefloe[spark]'``); without it they raise
:class:`~icefloe.exceptions.MissingDependencyError`.
"""

import importlib
from typing import TYPE_CHECKING, Any

from icefloe.exceptions import MissingDependencyError

if TYPE_CHECKING:
    from icefloe.spark.errors import icefloe_errors
    from icefloe.spark.functions import register_functions
    from icefloe.spark.reading import read
    from icefloe.spark.rowlevel import delete, merge
    from icefloe.spark.schema import spark_schema
    from icefloe.spark.statistics import compute_statistics
    from icefloe.spark.worker import configure
    from icefloe.spark.writing import cluster, write

# Imported on first use: Spark forks a fresh Python worker for each planning step of a query
# through the icefloe format, and those import only the modules the step needs.
_LAZY = {
    "cluster": "icefloe.spark.writing",
    "compute_statistics": "icefloe.spark.statistics",
    "configure": "icefloe.spark.worker",
    "delete": "icefloe.spark.rowlevel",
    "icefloe_errors": "icefloe.spark.errors",
    "merge": "icefloe.spark.rowlevel",
    "read": "icefloe.spark.reading",
    "register_functions": "icefloe.spark.functions",
    "spark_schema": "icefloe.spark.schema",
    "write": "icefloe.spark.writing",
}


def _missing_pyspark(what: str, exc: ImportError) -> MissingDependencyError:
    """The error for ``what`` when PySpark (4.1, with its ``sql`` extra) cannot be imported."""
    return MissingDependencyError.install(
        f"{what} needs PySpark 4.1 ({exc})", "spark", name=exc.name or "pyspark"
    )


def _require_pyspark(what: str) -> None:
    """Raise :class:`~icefloe.exceptions.MissingDependencyError` naming the ``spark`` extra
    unless PySpark can be imported."""
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise _missing_pyspark(what, exc) from exc


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _require_pyspark(f"icefloe.spark.{name}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def register(spark: Any) -> None:
    """Registers the ``icefloe`` data source on ``spark`` (see :mod:`icefloe.spark.source`)."""
    _require_pyspark("icefloe.spark.register")
    from icefloe.spark.source import register as _register

    _register(spark)


__all__ = [
    "cluster",
    "compute_statistics",
    "configure",
    "delete",
    "icefloe_errors",
    "merge",
    "read",
    "register",
    "register_functions",
    "spark_schema",
    "write",
]
