"""Turning a columnar :class:`~icefloe.scan.planner.Plan` into scan tasks.

:func:`plan_to_tasks` builds :class:`~icefloe.scan.tasks.FileScanTask` values (one per data
file; delete file references are shared between tasks). :func:`plan_to_table` builds one Arrow
table with a row per task, for callers that plan millions of files:

===================== ============================================================
column                meaning
===================== ============================================================
file_path             data file location
file_format           ``parquet``, ``avro`` or ``orc`` (lower case)
spec_id               partition spec of the data file
partition             struct over the union of the specs' partition fields (by field
                      id; fields of other specs are null)
record_count          rows in the file
file_size_in_bytes    file size
data_sequence_number  data sequence number
file_sequence_number  file sequence number
first_row_id          v3 row lineage (null before v3)
split_offsets         list<int64> of split offsets (nullable)
residual              the residual filter as JSON (``icefloe.expressions.serde``)
delete_files          list of structs: content (1 position, 2 equality), file_path,
                      file_format, record_count, file_size_in_bytes,
                      referenced_data_file, content_offset, content_size_in_bytes,
                      equality_ids, data_sequence_number, spec_id
===================== ============================================================
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.expressions.serde import to_dict
from icefloe.metadata import TableMetadata
from icefloe.scan.planner import EQUALITY_DELETES, Plan
from icefloe.scan.tasks import DataFileRef, DeleteContent, DeleteFileRef, FileScanTask

__all__ = ["plan_to_table", "plan_to_tasks"]


def _col(batch: pa.RecordBatch, name: str) -> list[Any]:
    i = batch.schema.get_field_index(name)
    if i < 0:
        return [None] * batch.num_rows
    out: list[Any] = batch.column(i).to_pylist()
    return out


def _partition_tuples(partition: pa.Array) -> list[tuple[Any, ...]]:
    n = len(partition)
    if partition.type.num_fields == 0:
        return [()] * n
    children = [c.to_pylist() for c in partition.flatten()]
    return list(zip(*children, strict=True))


def _delete_refs(plan: Plan, used: np.ndarray) -> dict[int, DeleteFileRef]:
    refs: dict[int, DeleteFileRef] = {}
    base = 0
    wanted = set(used.tolist())
    for sid, b in plan.deletes:
        n = b.num_rows
        rows = [i for i in range(n) if base + i in wanted]
        if rows:
            sub = b.take(pa.array(rows, type=pa.int64()))
            parts = _partition_tuples(sub.column("partition"))
            cols = {
                name: _col(sub, name)
                for name in (
                    "content",
                    "file_path",
                    "file_format",
                    "record_count",
                    "file_size_in_bytes",
                    "referenced_data_file",
                    "content_offset",
                    "content_size_in_bytes",
                    "equality_ids",
                    "sequence_number",
                )
            }
            for j, i in enumerate(rows):
                refs[base + i] = DeleteFileRef(
                    content=DeleteContent.EQUALITY_DELETES
                    if cols["content"][j] == EQUALITY_DELETES
                    else DeleteContent.POSITION_DELETES,
                    file_path=cols["file_path"][j],
                    file_format=cols["file_format"][j],
                    record_count=cols["record_count"][j],
                    file_size_in_bytes=cols["file_size_in_bytes"][j],
                    referenced_data_file=cols["referenced_data_file"][j],
                    content_offset=cols["content_offset"][j],
                    content_size_in_bytes=cols["content_size_in_bytes"][j],
                    equality_ids=tuple(cols["equality_ids"][j] or ()),
                    data_sequence_number=cols["sequence_number"][j],
                    spec_id=sid,
                    partition=parts[j],
                )
        base += n
    return refs


def plan_to_tasks(plan: Plan) -> list[FileScanTask]:
    """One :class:`FileScanTask` per planned data file, in manifest order."""
    if not plan.batches:
        return []
    assert plan.assignment is not None
    offsets = plan.assignment.offsets.to_numpy(zero_copy_only=False)
    values = pc.list_flatten(plan.assignment).to_numpy(zero_copy_only=False)
    refs = _delete_refs(plan, np.unique(values)) if len(values) else {}
    tasks: list[FileScanTask] = []
    row = 0
    for pb in plan.batches:
        b = pb.entries
        paths = _col(b, "file_path")
        formats = pc.utf8_lower(b.column("file_format")).to_pylist()
        counts = _col(b, "record_count")
        sizes = _col(b, "file_size_in_bytes")
        seqs = _col(b, "sequence_number")
        fseqs = _col(b, "file_sequence_number")
        firsts = _col(b, "first_row_id")
        parts = _partition_tuples(b.column("partition"))
        residuals = [plan.residuals[i] for i in pb.residual_index.tolist()]
        sid = pb.spec_id
        for i in range(b.num_rows):
            lo, hi = offsets[row], offsets[row + 1]
            row += 1
            data = DataFileRef(
                file_path=paths[i],
                file_format=formats[i],
                record_count=counts[i],
                file_size_in_bytes=sizes[i],
                spec_id=sid,
                partition=parts[i],
                first_row_id=firsts[i],
                data_sequence_number=seqs[i],
                file_sequence_number=fseqs[i],
            )
            deletes = tuple(refs[int(j)] for j in values[lo:hi]) if hi > lo else ()
            tasks.append(
                FileScanTask(
                    data_file=data,
                    delete_files=deletes,
                    length=sizes[i],
                    residual=residuals[i],
                    spec_id=sid,
                )
            )
    return tasks


def _union_partition_type(plan: Plan) -> pa.StructType:
    fields: dict[int, pa.Field] = {}
    names: set[str] = set()
    for pb in plan.batches:
        for f in pb.entries.schema.field("partition").type:
            fid = int((f.metadata or {}).get(b"field_id", b"-1"))
            if fid in fields:
                continue
            name = f.name if f.name not in names else f"{f.name}_{fid}"
            names.add(name)
            fields[fid] = pa.field(name, f.type, nullable=True, metadata=f.metadata)
    return pa.struct(list(fields.values()))


def _to_union(partition: pa.StructArray, union: pa.StructType) -> pa.StructArray:
    by_id = {}
    for i, f in enumerate(partition.type):
        by_id[(f.metadata or {}).get(b"field_id")] = partition.field(i)
    n = len(partition)
    children = []
    for f in union:
        c = by_id.get((f.metadata or {}).get(b"field_id"))
        children.append(c if c is not None else pa.nulls(n, f.type))
    if not children:
        return pa.array([{}] * n, pa.struct([]))
    out: pa.StructArray = pa.StructArray.from_arrays(children, fields=list(union))
    return out


_DELETE_TYPE = pa.struct(
    [
        pa.field("content", pa.int32()),
        pa.field("file_path", pa.string()),
        pa.field("file_format", pa.string()),
        pa.field("record_count", pa.int64()),
        pa.field("file_size_in_bytes", pa.int64()),
        pa.field("referenced_data_file", pa.string()),
        pa.field("content_offset", pa.int64()),
        pa.field("content_size_in_bytes", pa.int64()),
        pa.field("equality_ids", pa.list_(pa.int32())),
        pa.field("data_sequence_number", pa.int64()),
        pa.field("spec_id", pa.int32()),
    ]
)


def _deletes_struct(plan: Plan) -> pa.StructArray:
    parts = []
    for sid, b in plan.deletes:
        n = b.num_rows
        cols = []
        for f in _DELETE_TYPE:
            src = "sequence_number" if f.name == "data_sequence_number" else f.name
            if f.name == "spec_id":
                cols.append(pa.array(np.full(n, sid, dtype=np.int32)))
            elif src in b.schema.names:
                c = b.column(src)
                if f.name == "file_format":
                    c = pc.utf8_lower(c)
                cols.append(c.cast(f.type))
            else:
                cols.append(pa.nulls(n, f.type))
        parts.append(pa.StructArray.from_arrays(cols, fields=list(_DELETE_TYPE)))
    if not parts:
        return pa.array([], _DELETE_TYPE)
    out: pa.StructArray = pa.concat_arrays(parts)
    return out


def plan_to_table(plan: Plan, metadata: TableMetadata | None = None) -> pa.Table:
    """The planned tasks as one Arrow table (columns in the module docstring)."""
    del metadata
    union = _union_partition_type(plan)
    columns: dict[str, list[pa.Array]] = {
        k: []
        for k in (
            "file_path",
            "file_format",
            "spec_id",
            "partition",
            "record_count",
            "file_size_in_bytes",
            "data_sequence_number",
            "file_sequence_number",
            "first_row_id",
            "split_offsets",
            "residual",
        )
    }
    residual_json = [json.dumps(to_dict(r)) for r in plan.residuals]
    for pb in plan.batches:
        b = pb.entries
        n = b.num_rows
        columns["file_path"].append(b.column("file_path"))
        columns["file_format"].append(pc.utf8_lower(b.column("file_format")))
        columns["spec_id"].append(pa.array(np.full(n, pb.spec_id, dtype=np.int32)))
        columns["partition"].append(_to_union(b.column("partition"), union))
        columns["record_count"].append(b.column("record_count"))
        columns["file_size_in_bytes"].append(b.column("file_size_in_bytes"))
        columns["data_sequence_number"].append(b.column("sequence_number"))
        columns["file_sequence_number"].append(b.column("file_sequence_number"))
        for name, t in (("first_row_id", pa.int64()), ("split_offsets", pa.list_(pa.int64()))):
            i = b.schema.get_field_index(name)
            columns[name].append(b.column(i).cast(t) if i >= 0 else pa.nulls(n, t))
        columns["residual"].append(
            pa.DictionaryArray.from_arrays(
                pa.array(pb.residual_index, pa.int32()), pa.array(residual_json, pa.string())
            ).cast(pa.string())
        )
    types = {
        "file_path": pa.string(),
        "file_format": pa.string(),
        "spec_id": pa.int32(),
        "partition": union,
        "record_count": pa.int64(),
        "file_size_in_bytes": pa.int64(),
        "data_sequence_number": pa.int64(),
        "file_sequence_number": pa.int64(),
        "first_row_id": pa.int64(),
        "split_offsets": pa.list_(pa.int64()),
        "residual": pa.string(),
    }
    arrays = {k: pa.concat_arrays(v) if v else pa.array([], types[k]) for k, v in columns.items()}
    deletes = _deletes_struct(plan)
    if plan.assignment is not None and len(plan.assignment):
        idx = pc.list_flatten(plan.assignment)
        arrays["delete_files"] = pa.ListArray.from_arrays(
            plan.assignment.offsets, deletes.take(idx)
        )
    else:
        arrays["delete_files"] = pa.array([], pa.list_(_DELETE_TYPE))
    return pa.table(arrays)
