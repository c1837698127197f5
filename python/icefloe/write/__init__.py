"""Writing data files: input validation and casting, partitioning, Parquet, column metrics.

:func:`write_data_files` turns Arrow data into :class:`DataFile` descriptions of Parquet files
written under the table's data location; a snapshot producer
(:mod:`icefloe.table.producer`) commits them.
"""

from __future__ import annotations

from icefloe.write.files import DataFile, entries_batch, manifest_arrow_schema
from icefloe.write.input import to_arrow_table, to_table_schema
from icefloe.write.metrics import MetricsConfig, MetricsMode, compute_metrics
from icefloe.write.partition_names import partition_path
from icefloe.write.writer import WriteOptions, write_data_files, write_parquet_files

__all__ = [
    "DataFile",
    "MetricsConfig",
    "MetricsMode",
    "WriteOptions",
    "compute_metrics",
    "entries_batch",
    "manifest_arrow_schema",
    "partition_path",
    "to_arrow_table",
    "to_table_schema",
    "write_data_files",
    "write_parquet_files",
]
