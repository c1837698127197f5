"""Reading planned scan tasks (see :mod:`icefloe.scan`) to Arrow record batches."""

from icefloe.read.deletes import DeleteCache
from icefloe.read.reader import output_schema, read_task, read_tasks

__all__ = ["DeleteCache", "output_schema", "read_task", "read_tasks"]
