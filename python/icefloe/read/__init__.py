"""Reading planned scan tasks (see :mod:`icefloe.scan`) to Arrow record batches."""

from icefloe.read.deletes import DeleteCache
from icefloe.read.reader import output_schema, read_task, read_tasks
from icefloe.read.scan_output import count, scan_schema, to_arrow, to_batches, to_pandas

__all__ = [
    "DeleteCache",
    "count",
    "output_schema",
    "read_task",
    "read_tasks",
    "scan_schema",
    "to_arrow",
    "to_batches",
    "to_pandas",
]
