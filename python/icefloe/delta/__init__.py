"""Delta Lake tables read as Iceberg v3 tables: a Delta log reader, the IcebergCompatV3
checker and a converter that writes Iceberg metadata over a Delta table's own data files and
keeps it in sync commit by commit (no Spark, no JVM).

::

    import icefloe.delta

    report = icefloe.delta.check_iceberg_compat_v3("/data/events")
    result = icefloe.delta.convert("/data/events")        # metadata in /data/events/_icefloe
    result.table.scan().to_arrow()
"""

from icefloe.delta.compat import CompatReport, Failure, check_iceberg_compat_v3
from icefloe.delta.convert import ConvertResult, convert
from icefloe.delta.log import DeltaCommit, DeltaLog, DeltaSnapshot
from icefloe.delta.protocol import SUPPORTED_READER_FEATURES, DeltaMetadata, DeltaProtocol

__all__ = [
    "SUPPORTED_READER_FEATURES",
    "CompatReport",
    "ConvertResult",
    "DeltaCommit",
    "DeltaLog",
    "DeltaMetadata",
    "DeltaProtocol",
    "DeltaSnapshot",
    "Failure",
    "check_iceberg_compat_v3",
    "convert",
]
