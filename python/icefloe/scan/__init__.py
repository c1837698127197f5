"""Scans: ``table.scan(...)`` (:class:`TableScan`), the planner, and the tasks it produces for
the reader (:mod:`icefloe.read`)."""

from icefloe.scan.tasks import (
    METADATA_COLUMNS,
    DataFileRef,
    DeleteContent,
    DeleteFileRef,
    FileScanTask,
    ReadOptions,
    metadata_field,
)

__all__ = [
    "METADATA_COLUMNS",
    "DataFileRef",
    "DeleteContent",
    "DeleteFileRef",
    "FileScanTask",
    "ReadOptions",
    "metadata_field",
]
