"""Reads: one table of 10 Parquet files read task by task, with and without deletes.

The data (5M rows / ``--quick`` 200k: ``id`` long, ``v`` double, ``s`` string) is written by
PyIceberg into a SqlCatalog table in a temporary directory and planned by PyIceberg, so the
peer is PyIceberg 0.12's own ``ArrowScan`` over the same files. 10% of the rows of each file
are deleted, either by a deletion vector per file (icefloe only: PyIceberg 0.12 needs a Puffin
footer) or by a position delete file per file (both). Cases:

- ``read_no_deletes``: icefloe against PyIceberg and ``pyarrow.parquet.read_table``.
- ``read_dv_10pct``: against icefloe's own no-delete read (target <= 1.15x).
- ``read_pos_deletes_10pct``: against icefloe's no-delete read (target <= 1.3x) and PyIceberg.
"""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from harness import Harness
from icefloe.deletes import DeletionVector
from icefloe.io import FileIO
from icefloe.read import read_tasks
from icefloe.scan import DataFileRef, DeleteContent, DeleteFileRef, FileScanTask, ReadOptions
from icefloe.schema import Schema

FILES = 10


def run(h: Harness) -> None:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.table import FileScanTask as PyTask

    n = h.size(5_000_000, 200_000)
    per = n // FILES
    tmp = Path(tempfile.mkdtemp(prefix="bench_read_"))
    (tmp / "wh").mkdir()
    catalog = SqlCatalog("b", uri=f"sqlite:///{tmp}/c.db", warehouse=f"file://{tmp}/wh")
    catalog.create_namespace("db")
    rng = np.random.default_rng(7)
    schema = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("s", pa.string())])
    table = catalog.create_table("db.t", schema, properties={"format-version": "2"})
    words = np.array([f"w{i}" for i in range(1000)], dtype=object)
    for f in range(FILES):
        ids = np.arange(f * per, (f + 1) * per, dtype=np.int64)
        table.append(
            pa.table(
                {"id": ids, "v": rng.random(per), "s": words[rng.integers(0, 1000, per)]},
                schema=schema,
            )
        )
    table = catalog.load_table("db.t")
    py_tasks = list(table.scan().plan_files())
    options = ReadOptions(Schema.from_json(json.loads(table.schema().model_dump_json())))

    plain, with_dv, with_pos, py_plain, py_pos = [], [], [], [], []
    pos_schema = pa.schema(
        [
            pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
            pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"}),
        ]
    )
    for i, t in enumerate(py_tasks):
        f = t.file
        ref = DataFileRef(f.file_path, "parquet", f.record_count, f.file_size_in_bytes)
        deleted = np.sort(rng.choice(f.record_count, f.record_count // 10, replace=False))
        blob = DeletionVector.from_positions(deleted.astype(np.int64)).to_blob()
        dv_path = tmp / f"dv{i}.bin"
        dv_path.write_bytes(b"PFA1" + blob)
        dv = DeleteFileRef(
            DeleteContent.POSITION_DELETES,
            str(dv_path),
            "puffin",
            len(deleted),
            referenced_data_file=f.file_path,
            content_offset=4,
            content_size_in_bytes=len(blob),
        )
        pos_path = tmp / f"pos{i}.parquet"
        pq.write_table(
            pa.table(
                [pa.array([f.file_path] * len(deleted)), pa.array(deleted)], schema=pos_schema
            ),
            pos_path,
        )
        pos = DeleteFileRef(
            DeleteContent.POSITION_DELETES,
            str(pos_path),
            "parquet",
            len(deleted),
            pos_path.stat().st_size,
        )
        plain.append(FileScanTask(ref))
        with_dv.append(FileScanTask(ref, (dv,)))
        with_pos.append(FileScanTask(ref, (pos,)))
        py_plain.append(PyTask(f))
        py_delete = DataFile.from_args(
            content=DataFileContent.POSITION_DELETES,
            file_path=str(pos_path),
            file_format=FileFormat.PARQUET,
            partition=f.partition,
            record_count=len(deleted),
            file_size_in_bytes=pos_path.stat().st_size,
        )
        py_pos.append(PyTask(f, {py_delete}))

    io = FileIO()

    def ours(tasks: list[FileScanTask]) -> int:
        return sum(b.num_rows for b in read_tasks(io, tasks, options))

    def pyiceberg(tasks: list[PyTask]) -> int:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scan = ArrowScan(table.metadata, table.io, table.schema(), AlwaysTrue())
            return int(scan.to_table(tasks).num_rows)

    def pyarrow_plain() -> int:
        return sum(
            pq.read_table(t.file.file_path.removeprefix("file://")).num_rows for t in py_tasks
        )

    assert ours(with_dv) == ours(with_pos) == pyiceberg(py_pos) == n - (n // 10)
    h.compare(
        "read_no_deletes",
        n,
        "rows",
        ours=lambda: ours(plain),
        peers={"pyiceberg": lambda: pyiceberg(py_plain), "pyarrow read_table": pyarrow_plain},
        target="at least as fast as PyIceberg",
    )
    h.compare(
        "read_dv_10pct",
        n,
        "rows",
        ours=lambda: ours(with_dv),
        peers={"icefloe no deletes": lambda: ours(plain)},
        target="<= 1.15x icefloe no-delete time",
    )
    h.compare(
        "read_pos_deletes_10pct",
        n,
        "rows",
        ours=lambda: ours(with_pos),
        peers={"icefloe no deletes": lambda: ours(plain), "pyiceberg": lambda: pyiceberg(py_pos)},
        target="<= 1.3x icefloe no-delete time",
    )
