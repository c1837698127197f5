"""Helpers for the reader tests: hand-built Parquet data and delete files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.arrow_schema import schema_to_arrow
from icefloe.deletes import DeletionVector
from icefloe.io import FileIO
from icefloe.read import read_task
from icefloe.scan import DataFileRef, DeleteContent, DeleteFileRef, FileScanTask, ReadOptions
from icefloe.schema import Schema


def write_data(path: Path, schema: Schema, rows: list[dict[str, Any]], **kw: Any) -> DataFileRef:
    """Writes ``rows`` as a Parquet file typed by ``schema`` (field ids included)."""
    table = pa.Table.from_pylist(rows, schema=schema_to_arrow(schema))
    pq.write_table(table, str(path), **kw)
    return DataFileRef(str(path), "parquet", len(rows), path.stat().st_size)


def write_dv(
    path: Path, positions: list[int], data_file: str, prefix: bytes = b"PFA1\x00\x00\x00"
) -> DeleteFileRef:
    """A deletion vector blob written after ``prefix`` (as if inside a Puffin file)."""
    blob = DeletionVector.from_positions(positions).to_blob()
    path.write_bytes(prefix + blob + b"trailer")
    return DeleteFileRef(
        DeleteContent.POSITION_DELETES,
        str(path),
        "puffin",
        record_count=len(set(positions)),
        referenced_data_file=data_file,
        content_offset=len(prefix),
        content_size_in_bytes=len(blob),
    )


def write_pos_deletes(path: Path, entries: list[tuple[str, int]]) -> DeleteFileRef:
    """A position delete file with ``(file_path, pos)`` rows (field ids per the spec)."""
    schema = pa.schema(
        [
            pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
            pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"}),
        ]
    )
    entries = sorted(entries)
    table = pa.table(
        [pa.array([e[0] for e in entries]), pa.array([e[1] for e in entries], pa.int64())],
        schema=schema,
    )
    pq.write_table(table, str(path))
    return DeleteFileRef(DeleteContent.POSITION_DELETES, str(path), "parquet", len(entries))


def write_eq_deletes(
    path: Path, schema: Schema, ids: tuple[int, ...], rows: list[dict[str, Any]]
) -> DeleteFileRef:
    """An equality delete file holding the ``ids`` columns of ``schema``."""
    by_id = schema.index_by_id()
    sub = Schema(*[by_id[i] for i in ids])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema_to_arrow(sub)), str(path))
    return DeleteFileRef(
        DeleteContent.EQUALITY_DELETES, str(path), "parquet", len(rows), equality_ids=ids
    )


def read(task: FileScanTask, options: ReadOptions) -> pa.Table:
    """All batches of ``task`` as one table (typed by the reader's output schema)."""
    from icefloe.read import output_schema

    batches = list(read_task(FileIO(), task, options))
    return pa.Table.from_batches(batches, schema=output_schema(options, task.data_file.spec_id))
