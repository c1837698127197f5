"""Choosing and rewriting the files an overwrite replaces.

``overwrite(data, overwrite_filter)`` removes every row matching the filter and adds ``data`` in
one ``overwrite`` snapshot. Per live data file of the branch head:

* the strict projection of the filter onto the file's partition spec is true for its partition:
  every row matches, the file is removed without being read;
* the inclusive projection is false: no row can match, the file stays;
* otherwise the file is read (its deletes applied) and the filter evaluated on its rows: no
  match keeps the file, all rows matching removes it, and a partial match removes it and writes
  the surviving rows to new files (copy-on-write). On v3 tables the rewritten rows keep their
  ``_row_id`` and ``_last_updated_sequence_number``.

Deletion vectors and position delete files that reference a removed data file are removed with
it. Dynamic partition overwrite replaces every data file in the partitions the new data
touches. Each function works on whole columns of manifest entries; per-row work stays in Arrow.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.expressions import AlwaysFalse, AlwaysTrue, BooleanExpression, bind
from icefloe.expressions.arrow import to_arrow_expression
from icefloe.expressions.projection import inclusive_projection, strict_projection
from icefloe.io import FileIO
from icefloe.manifest import ManifestFile
from icefloe.metadata import Snapshot, TableMetadata
from icefloe.name_mapping import NameMapping
from icefloe.partitioning import PartitionSpec
from icefloe.scan.tasks import (
    DELETE_FILE_PATH_ID,
    LAST_UPDATED_SEQUENCE_NUMBER,
    ROW_ID,
    DataFileRef,
    DeleteContent,
    DeleteFileRef,
    FileScanTask,
    ReadOptions,
)

__all__ = ["OverwritePlan", "partition_mask", "plan_overwrite", "referenced_file"]

DELETED = 2


@dataclass
class OverwritePlan:
    """Files to remove and surviving rows to write back (``rows`` in table-schema order, with
    ``lineage`` columns ``_row_id`` / ``_last_updated_sequence_number`` on v3)."""

    remove: list[str] = field(default_factory=list)
    rows: list[pa.Table] = field(default_factory=list)
    files_read: int = 0


def partition_mask(batch: pa.RecordBatch, expr: BooleanExpression) -> pa.Array:
    """Booleans per manifest entry: the bound partition expression ``expr`` holds for it."""
    if expr == AlwaysTrue():
        return pa.array([True] * batch.num_rows, pa.bool_())
    if expr == AlwaysFalse():
        return pa.array([False] * batch.num_rows, pa.bool_())
    part = batch.column("partition")
    cols = {part.type.field(i).name: part.field(i) for i in range(part.type.num_fields)}
    cols["__i"] = pa.array(range(batch.num_rows), pa.int64())
    table = pa.table(cols)
    hits = table.filter(to_arrow_expression(expr))["__i"]
    return pc.is_in(table["__i"], value_set=hits.combine_chunks())


def _spec(metadata: TableMetadata, batch: pa.RecordBatch) -> PartitionSpec:
    spec_id = int((batch.schema.metadata or {}).get(b"partition-spec-id", b"0"))
    spec = metadata.spec_by_id(spec_id)
    return spec if spec is not None else metadata.spec()


def _delete_refs(
    deletes: list[tuple[ManifestFile, pa.RecordBatch]],
) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for mf, batch in deletes:
        live = batch.filter(pc.not_equal(batch.column("status"), DELETED))
        for row in live.to_pylist():
            out.append((mf.partition_spec_id, row))
    return out


def referenced_file(d: dict[str, Any]) -> str | None:
    """The data file a delete entry is scoped to: ``referenced_data_file`` (v3), or for a
    position delete file whose ``file_path`` column bounds are equal, that path (v2)."""
    ref = d.get("referenced_data_file")
    if ref is not None or d.get("content") != 1:
        return ref if isinstance(ref, str) else None
    lower = dict(d.get("lower_bounds") or {}).get(DELETE_FILE_PATH_ID)
    upper = dict(d.get("upper_bounds") or {}).get(DELETE_FILE_PATH_ID)
    if lower is not None and lower == upper:
        return bytes(lower).decode("utf-8", errors="replace")
    return None


def _applies(
    data: dict[str, Any], spec_id: int, d_spec: int, d: dict[str, Any], unpartitioned: bool
) -> bool:
    ref = referenced_file(d)
    if ref is not None and ref != data["file_path"]:
        return False
    same_partition = unpartitioned or (d_spec == spec_id and d["partition"] == data["partition"])
    data_seq = data.get("sequence_number") or 0
    seq = d.get("sequence_number") or 0
    if d["content"] == 1:
        return (ref is not None or same_partition) and seq >= data_seq
    return same_partition and seq > data_seq


def _to_ref(d: dict[str, Any], spec_id: int) -> DeleteFileRef:
    content = (
        DeleteContent.POSITION_DELETES if d["content"] == 1 else DeleteContent.EQUALITY_DELETES
    )
    return DeleteFileRef(
        content=content,
        file_path=d["file_path"],
        file_format=d["file_format"],
        record_count=d["record_count"],
        file_size_in_bytes=d["file_size_in_bytes"],
        referenced_data_file=d.get("referenced_data_file"),
        content_offset=d.get("content_offset"),
        content_size_in_bytes=d.get("content_size_in_bytes"),
        equality_ids=tuple(d.get("equality_ids") or ()),
        data_sequence_number=d.get("sequence_number"),
        spec_id=spec_id,
        partition=tuple((d.get("partition") or {}).values()),
    )


def plan_overwrite(
    io: FileIO,
    metadata: TableMetadata,
    parent: Snapshot | None,
    expr: BooleanExpression,
    *,
    case_sensitive: bool = True,
    name_mapping: NameMapping | None = None,
) -> OverwritePlan:
    """Which files an overwrite of the rows matching ``expr`` removes, and the rows to keep."""
    from icefloe.read.reader import read_task
    from icefloe.table.producer import live_entries

    plan = OverwritePlan()
    if parent is None:
        return plan
    schema = metadata.current_schema()
    bound = bind(schema, expr, case_sensitive)
    entries = live_entries(io, metadata, parent)
    data_manifests = [(m, b) for m, b in entries if m.content == 0]
    delete_refs = _delete_refs([(m, b) for m, b in entries if m.content != 0])
    version = metadata.format_version
    lineage = (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER) if version >= 3 else ()
    options = ReadOptions(
        schema=schema,
        specs={s.spec_id: s for s in metadata.partition_specs},
        name_mapping=name_mapping,
        case_sensitive=case_sensitive,
        metadata_columns=lineage,
        format_version=version,
    )
    arrow_filter = to_arrow_expression(bound)
    removed: set[str] = set()
    for _, batch in data_manifests:
        live = pc.not_equal(batch.column("status"), DELETED)
        spec = _spec(metadata, batch)
        strict = partition_mask(batch, strict_projection(schema, spec, expr, case_sensitive))
        maybe = partition_mask(batch, inclusive_projection(schema, spec, expr, case_sensitive))
        whole = pc.and_(live, strict)
        for path in batch.filter(whole).column("file_path").to_pylist():
            removed.add(path)
        partial = batch.filter(pc.and_(pc.and_(live, maybe), pc.invert(strict)))
        for row in partial.to_pylist():
            plan.files_read += 1
            deletes = tuple(
                _to_ref(d, d_spec)
                for d_spec, d in delete_refs
                if _applies(row, spec.spec_id, d_spec, d, spec.is_unpartitioned)
            )
            task = FileScanTask(
                data_file=DataFileRef(
                    file_path=row["file_path"],
                    file_format=row["file_format"].lower(),
                    record_count=row["record_count"],
                    file_size_in_bytes=row["file_size_in_bytes"],
                    spec_id=spec.spec_id,
                    partition=tuple((row["partition"] or {}).values()),
                    first_row_id=row.get("first_row_id"),
                    data_sequence_number=row.get("sequence_number"),
                    file_sequence_number=row.get("file_sequence_number"),
                ),
                delete_files=deletes,
                spec_id=spec.spec_id,
            )
            batches = list(read_task(io, task, options))
            if not batches:
                removed.add(row["file_path"])  # every row was already deleted
                continue
            data = pa.Table.from_batches(batches)
            hit = _mask(data, arrow_filter)
            matched = int(pc.sum(hit).as_py() or 0)
            if matched == 0:
                continue
            removed.add(row["file_path"])
            if matched < data.num_rows:
                plan.rows.append(data.filter(pc.invert(hit)))
    plan.remove = sorted(removed)
    # Deletion vectors and file-scoped position deletes of removed files go with them.
    for _, d in delete_refs:
        ref = referenced_file(d)
        if ref is not None and ref in removed:
            plan.remove.append(d["file_path"])
    plan.remove = sorted(set(plan.remove))
    return plan


def _mask(table: pa.Table, expr: Any) -> pa.ChunkedArray:
    indexed = table.append_column("__i", pa.array(range(table.num_rows), pa.int64()))
    hits = indexed.filter(expr)["__i"].combine_chunks()
    return pc.is_in(indexed["__i"], value_set=hits)


def partition_keys(files: Iterable[Any]) -> set[tuple[int, tuple[tuple[str, Any], ...]]]:
    """(spec id, partition items) of each :class:`~icefloe.write.DataFile`."""
    return {(f.spec_id, tuple(sorted(f.partition.items()))) for f in files}
