"""Byte-flip sweeps over a table's data file, with each read in a worker process.

``sweep`` writes a small table, then flips single bytes of its one Parquet data file and reads
the table through scans (:data:`FILTERS`) after each flip, in a worker process so that an
abort (SIGABRT from a native library) is recorded as an outcome instead of ending the test run.
A dead worker is replaced and the sweep continues after the offset that killed it.

Outcomes (the worst of the reads): ``same`` (the read equals the original), ``corrupt``
(``CorruptFileError`` naming the file), ``stats`` (a filtered read differs only because a
damaged footer statistic skipped a row group: Parquet does not checksum its footer, and the
same read without row-group pruning is right), ``wrong`` (a different answer with no error),
``abort:<signal>``, ``error:<type>:<message>`` (any other exception, or one that does not
name the file) and ``panic printed:<message>`` (the read's outcome was right, but a native
panic's message reached stderr).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa

#: The reads after each flip: a full scan, and one whose residual filter prunes row groups by
#: their statistics (the footer's column metadata).
FILTERS = ("true", "id >= 150 and s = 'v3'")


def build(root: Path) -> dict[str, str]:
    """A v2 table with one small data file of two row groups (required long, optional int,
    optional string with a dictionary, a required string), written by pyarrow's writer (whose
    footer carries the size statistics some cases edit); returns what a worker needs."""
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.write import native_writer

    root.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{root / 'c.db'}"
    cat = SqlCatalog("flip", uri=uri, warehouse=(root / "wh").as_uri())
    cat.create_namespace("db")
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("n", pa.int32()),
            pa.field("s", pa.string()),
            pa.field("k", pa.string(), nullable=False),
        ]
    )
    t = cat.create_table("db.t", schema, properties={"write.parquet.row-group-limit": "100"})
    rows = 200
    native, native_writer.ENABLED = native_writer.ENABLED, False
    try:
        _append(t, schema, rows)
    finally:
        native_writer.ENABLED = native
    path = t.inspect.files().column("file_path")[0].as_py()
    cat.close()
    return {"uri": uri, "warehouse": (root / "wh").as_uri(), "path": path.removeprefix("file://")}


def _append(t: Any, schema: pa.Schema, rows: int) -> None:
    t.append(
        pa.table(
            {
                "id": pa.array(range(rows), pa.int64()),
                "n": pa.array([i % 7 if i % 5 else None for i in range(rows)], pa.int32()),
                "s": pa.array([f"v{i % 13}" for i in range(rows)]),
                "k": pa.array([f"key-{i:04d}" for i in range(rows)]),
            },
            schema=schema,
        )
    )


def _worker(config: dict[str, str]) -> None:
    """Reads offsets (and XOR masks) from stdin, prints one JSON outcome per line."""
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.exceptions import CorruptFileError

    cat = SqlCatalog("flip", uri=config["uri"], warehouse=config["warehouse"])
    path = Path(config["path"])
    original = path.read_bytes()
    table = cat.load_table("db.t")
    want = [table.scan(row_filter=f).to_arrow() for f in FILTERS]
    try:
        for line in sys.stdin:
            offset, mask = (int(x) for x in line.split())
            # marks the native code's stderr (a panic message) with the flip that caused it
            print(f"flip {offset} {mask}", file=sys.stderr, flush=True)
            data = bytearray(original)
            data[offset] ^= mask
            path.write_bytes(bytes(data))
            outcomes = []
            for f, expected in zip(FILTERS, want, strict=True):
                try:
                    got = table.scan(row_filter=f).to_arrow()
                    if got.equals(expected):
                        outcomes.append("same")
                    elif _unpruned(table, f).equals(expected):
                        outcomes.append("stats")  # only row-group pruning was misled
                    else:
                        outcomes.append("wrong")
                except CorruptFileError as e:
                    named = config["path"] in str(e)
                    outcomes.append("corrupt" if named else f"error:unnamed:{e}")
                except Exception as e:  # every other outcome is a finding
                    outcomes.append(f"error:{type(e).__name__}:{e}")
            # the worst outcome of the reads: anything but same/corrupt is a finding
            bad = [o for o in outcomes if o not in ("same", "corrupt", "stats")]
            worst = [o for o in ("corrupt", "stats") if o in outcomes]
            outcome = bad[0] if bad else (worst[-1] if worst else "same")
            print(json.dumps([offset, mask, outcome]), flush=True)
    finally:
        path.write_bytes(original)


def _unpruned(table: Any, row_filter: str) -> pa.Table:
    """The filtered read with row-group pruning by footer statistics turned off."""
    from icefloe.read import reader

    saved = reader.RowGroupFilter.might_match
    reader.RowGroupFilter.might_match = lambda self, group: True  # type: ignore[method-assign]
    try:
        return table.scan(row_filter=row_filter).to_arrow()
    except Exception:
        return pa.table({})
    finally:
        reader.RowGroupFilter.might_match = saved  # type: ignore[method-assign]


def sweep(config: dict[str, str], flips: Iterable[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """The outcome of each (offset, mask) flip, read by worker processes."""
    todo = list(flips)
    out: dict[tuple[int, int], str] = {}
    env = {**os.environ, "PYTHONFAULTHANDLER": ""}
    original = Path(config["path"]).read_bytes()
    while todo:
        proc = subprocess.run(
            [sys.executable, __file__, json.dumps(config)],
            input="".join(f"{o} {m}\n" for o, m in todo),
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        for line in proc.stdout.splitlines():
            offset, mask, outcome = json.loads(line)
            out[(offset, mask)] = outcome
        for flip, message in _panics(proc.stderr).items():
            if flip in out and out[flip] in ("same", "corrupt", "stats"):
                out[flip] = f"panic printed:{message}"
        done = sum(1 for f in todo if f in out)
        todo = todo[done:]
        if todo:
            if proc.returncode >= 0:
                raise RuntimeError(f"worker failed (rc {proc.returncode}): {proc.stderr[-2000:]}")
            out[todo[0]] = f"abort:{-proc.returncode}"
            todo = todo[1:]
            Path(config["path"]).write_bytes(original)
    return out


def _panics(stderr: str) -> dict[tuple[int, int], str]:
    """The flips after which a native panic message reached stderr, with its text: a caught
    panic must not print (the user is to see the typed error only)."""
    found: dict[tuple[int, int], str] = {}
    flip = None
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("flip "):
            _, offset, mask = line.split()
            flip = (int(offset), int(mask))
        elif flip is not None and "panicked" in line and flip not in found:
            found[flip] = lines[i + 1] if i + 1 < len(lines) else line
    return found


if __name__ == "__main__":
    _worker(json.loads(sys.argv[1]))
