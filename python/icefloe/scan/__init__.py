"""Scan planning: the planner and the tasks it produces for the reader (:mod:`icefloe.read`).

The user-facing ``table.scan(...)`` (:class:`icefloe.table.scan.TableScan`) stands above both."""

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
