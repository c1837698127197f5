"""Scan tasks: what a planner produces and the reader (:mod:`icefloe.read`) consumes."""

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
