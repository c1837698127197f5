"""Peak memory of a streamed read: does a read hold the whole table?

Each read runs in a fresh Python process that imports its library, then iterates a streaming
reader over every column of the table and drops each batch as it comes. It reports the Arrow
bytes it saw and how far its peak resident set grew during the read above the resident set
before it (Linux ``VmHWM``, reset after the imports through ``/proc/self/clear_refs``):
planning, file handles, decode buffers, thread stacks and the batches in flight. icefloe streams
``Table.scan().to_batches()`` from the table's metadata file; the floor streams
``pyarrow.dataset`` batches of its own copy of the rows. A read that held the whole table would
grow by at least the Arrow bytes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

_CHILD = """
import json, sys
kind, path = sys.argv[1], sys.argv[2]
import pyarrow as pa
import pyarrow.dataset as ds
if kind == "icefloe":
    from icefloe import StaticTable
    table = StaticTable.from_metadata(path)
def status_kb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(field)
try:  # reset the high-water mark so that the imports' peak does not hide the read's
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
except OSError:
    pass
base = status_kb("VmRSS")
if kind == "icefloe":
    reader = table.scan().to_batches()
else:
    reader = ds.dataset(path, format="parquet", partitioning="hive").to_batches()
total = rows = 0
for batch in reader:
    total += batch.nbytes
    rows += batch.num_rows
    del batch
peak = status_kb("VmHWM") - base
print(json.dumps({"bytes": total, "rows": rows, "peak_kb": peak}))
"""


@dataclass(frozen=True)
class StreamMemory:
    """One streamed read: Arrow bytes and rows seen, peak RSS growth in bytes."""

    arrow_bytes: int
    rows: int
    peak_bytes: int


def streamed_read(kind: str, path: str) -> StreamMemory:
    """Streams every row of ``path`` (a metadata file for ``icefloe``, a directory for
    ``floor``) in a fresh process and returns what it measured."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, path],
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return StreamMemory(got["bytes"], got["rows"], got["peak_kb"] * 1024)
