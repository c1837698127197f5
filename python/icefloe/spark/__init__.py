"""Spark integration through PySpark: icefloe plugs into Spark from Python.

Spark is the distributed engine; icefloe plans and commits on the driver and reads or writes
data files on the executors through ``mapInArrow``, without Iceberg's JVM runtime. Executors
need only the icefloe wheel and access to the table's storage.

- :mod:`icefloe.spark.functions`: partition transforms as vectorised Spark functions.
- :mod:`icefloe.spark.schema`: Spark schemas from Iceberg schemas (field ids kept).
"""

from icefloe.spark.functions import register_functions
from icefloe.spark.schema import spark_schema

__all__ = ["register_functions", "spark_schema"]
