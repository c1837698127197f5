"""Helpers of the row-level tests: reading a table back with icefloe's planner and reader, and
inspecting the live delete entries of the current snapshot."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.read import read_tasks
from icefloe.scan.manifests import manifest_entries
from icefloe.table import Table
from icefloe.table.scan import TableScan


def ours(table: Table, *meta: str, **scan: Any) -> pa.Table:
    """Every live row (sorted by the first column), plus the requested metadata columns."""
    s = TableScan(table, selected_fields=("*", *meta), **scan)
    options = s.read_options()
    batches = list(read_tasks(table.io, s.plan_files(), options))
    from icefloe.read import output_schema

    t = pa.Table.from_batches(batches, schema=output_schema(options))
    return t.sort_by(t.column_names[0])


def live_deletes(table: Table) -> pa.Table:
    """The live delete entries of the current snapshot (file_path, referenced_data_file,
    content, file_format, record_count, content_offset)."""
    parts = []
    for _, batch in manifest_entries(table.io, table.current_snapshot(), content=1):
        b = batch.filter(pc.not_equal(batch.column("status"), 2))
        cols = ["file_path", "referenced_data_file", "content", "file_format", "record_count"]
        cols.append("content_offset")
        parts.append(pa.Table.from_batches([b]).select(cols))
    if not parts:
        return pa.table(
            {
                "file_path": pa.array([], pa.string()),
                "referenced_data_file": pa.array([], pa.string()),
                "content": pa.array([], pa.int32()),
                "file_format": pa.array([], pa.string()),
                "record_count": pa.array([], pa.int64()),
                "content_offset": pa.array([], pa.int64()),
            }
        )
    return pa.concat_tables(parts)


def live_data_files(table: Table) -> list[str]:
    out: list[str] = []
    for _, batch in manifest_entries(table.io, table.current_snapshot(), content=0):
        b = batch.filter(pc.not_equal(batch.column("status"), 2))
        out.extend(b.column("file_path").to_pylist())
    return sorted(out)
