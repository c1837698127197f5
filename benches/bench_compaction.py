"""Compaction: many small files of an event table rewritten into files of a 128 MiB target.

icefloe's ``rewrite_data_files`` (plan, read, write, commit on a SQLite catalog) against the
floor: pyarrow alone reading the same files and streaming them, file by file, into one
``ParquetWriter`` per group of the same input size (zstd, no Iceberg work). Each run starts
from the uncompacted table (a fresh copy of the catalog database). Peak memory is measured in a
fresh process for each (Linux ``VmHWM`` growth above the resident set before the work).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa

from harness import Harness

TARGET = 128 << 20

_CHILD = """
import json, sys
kind, root = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
import bench_compaction as b
def status_kb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(field)
run = b.prepare(kind, root)
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
except OSError:
    pass
base = status_kb("VmRSS")
run()
print(json.dumps({"peak_kb": status_kb("VmHWM") - base}))
"""


def _events(rng: np.random.Generator, n: int) -> pa.Table:
    categories = pa.array([f"category_{i:02d}" for i in range(40)])
    start = 1_700_000_000_000_000
    ts = rng.integers(start, start + 30 * 86_400_000_000, n)
    return pa.table(
        {
            "id": pa.array(rng.integers(0, 1 << 60, n), pa.int64()),
            "ts": pa.array(ts, pa.int64()).view(pa.timestamp("us")),
            "category": categories.take(pa.array(rng.integers(0, 40, n))),
            "value": pa.array(rng.random(n)),
            "tag": pa.array(rng.integers(0, 1 << 62, n).astype("S16").astype(object)).cast(
                pa.string()
            ),
        }
    )


def build(root: Path, files: int, rows: int) -> None:
    """An unpartitioned icefloe table of ``files`` appends of ``rows`` rows under ``root``,
    with a copy of its catalog database to start each run from."""
    from icefloe.catalog.sql import SqlCatalog

    cat = SqlCatalog("b", uri=f"sqlite:///{root}/c.db", warehouse=(root / "wh").as_uri())
    cat.create_namespace("b")
    rng = np.random.default_rng(11)
    first = _events(rng, rows)
    t = cat.create_table("b.events", first.schema)
    t.append(first)
    for _ in range(files - 1):
        t.append(_events(rng, rows))
    _copy_db(root / "c.db", root / "start.db")


def _copy_db(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite database (its write-ahead log included)."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


def prepare(kind: str, root_s: str):  # type: ignore[no-untyped-def]
    """The work of one run of ``kind`` (``icefloe`` or ``floor``) on the table under ``root``,
    from a fresh copy of its catalog database."""
    import pyarrow.parquet as pq

    from icefloe.catalog.sql import SqlCatalog

    root = Path(root_s)
    db = root / f"run-{uuid.uuid4().hex}.db"
    _copy_db(root / "start.db", db)
    cat = SqlCatalog("b", uri=f"sqlite:///{db}", warehouse=(root / "wh").as_uri())
    t = cat.load_table("b.events")
    if kind == "icefloe":
        return lambda: t.rewrite_data_files(target_file_size=TARGET)
    paths = [f["file_path"].removeprefix("file://") for f in t.inspect.files().to_pylist()]
    sizes = [Path(p).stat().st_size for p in paths]
    out = root / "floor"

    def floor() -> None:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        groups: list[list[str]] = [[]]
        used = 0
        for path, size in zip(paths, sizes, strict=True):
            if groups[-1] and used + size > TARGET:
                groups.append([])
                used = 0
            groups[-1].append(path)
            used += size
        for g, group in enumerate(groups):
            schema = pq.read_schema(group[0])
            with pq.ParquetWriter(out / f"{g}.parquet", schema, compression="zstd") as w:
                for path in group:
                    w.write_table(pq.read_table(path))

    return floor


def _peak(kind: str, root: Path) -> int:
    run = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(root), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    return int(json.loads(run.stdout.strip().splitlines()[-1])["peak_kb"]) * 1024


def run(h: Harness) -> None:
    files, rows = h.size(60, 8), h.size(200_000, 20_000)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root, files, rows)
        input_bytes = sum(p.stat().st_size for p in (root / "wh").rglob("*.parquet"))
        h.compare(
            f"compaction of {files} files ({input_bytes / 2**20:.0f} MiB) into 128 MiB files",
            files * rows,
            "rows",
            ours=lambda: prepare("icefloe", tmp)(),
            peers={
                "pyarrow floor (read + stream into one writer per group)": (
                    lambda: prepare("floor", tmp)()
                )
            },
            target="within 1.5x of the floor",
            warmup=0,
        )
        ours, floor = _peak("icefloe", root), _peak("floor", root)
        h.extra_markdown.append(
            "\n| compaction peak memory (RSS growth) | icefloe | pyarrow floor |\n|---|---|---|\n"
            f"| {files} files, {input_bytes / 2**20:.0f} MiB | {ours / 2**20:.0f} MiB "
            f"| {floor / 2**20:.0f} MiB |\n"
        )
