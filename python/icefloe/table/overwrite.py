"""Choosing and rewriting the files an overwrite replaces.

``overwrite(data, overwrite_filter)`` removes every row matching the filter and adds ``data`` in
one ``overwrite`` snapshot. The scan planner (:mod:`icefloe.scan.planner`) picks the live data
files of the branch head that may hold matching rows (partition and metrics pruning) with the
delete files that apply to each; then per candidate:

* the strict projection of the filter onto the file's partition spec is true for its partition,
  or its column metrics prove the filter for every row (:func:`proven_by_metrics`): the file
  is removed without being read;
* otherwise the file is read (its deletes applied) and the filter evaluated on its rows: no
  match keeps the file, all rows matching removes it, and a partial match removes it and writes
  the surviving rows to new files (copy-on-write). On v3 tables the rewritten rows keep their
  ``_row_id`` and ``_last_updated_sequence_number``.

Deletion vectors and position delete files that reference a removed data file are removed with
it. Dynamic partition overwrite replaces every data file in the partitions the new data
touches. Each function works on whole columns of manifest entries; per-row work stays in Arrow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.expressions import AlwaysFalse, AlwaysTrue, BooleanExpression, bind, rewrite_not
from icefloe.expressions.arrow import filter_mask, selection_mask
from icefloe.expressions.projection import strict_projection
from icefloe.io import FileIO
from icefloe.manifest import ManifestFile
from icefloe.metadata import Snapshot, TableMetadata
from icefloe.name_mapping import NameMapping
from icefloe.partitioning import PartitionSpec
from icefloe.scan.tasks import (
    DELETE_FILE_PATH_ID,
    LAST_UPDATED_SEQUENCE_NUMBER,
    ROW_ID,
    FileScanTask,
    ReadOptions,
    replace_task,
)
from icefloe.write.matching import proven_by_metrics

__all__ = ["OverwritePlan", "partition_mask", "plan_overwrite", "referenced_file"]

DELETED = 2


@dataclass
class OverwritePlan:
    """Files to remove and surviving rows to write back (``rows`` in table-schema order, with
    ``lineage`` columns ``_row_id`` / ``_last_updated_sequence_number`` on v3).

    ``remove`` holds data files and file-scoped position delete files; ``remove_deletes`` the
    deletion vectors of removed data files as ``(puffin path, content_offset)``: one Puffin
    file holds the DVs of many data files, so a DV is removed by its entry, never by path.
    ``rewritten`` are the tasks of the files whose surviving rows are written back: a
    concurrent commit adding deletes for them conflicts."""

    remove: list[str] = field(default_factory=list)
    remove_deletes: list[tuple[str, int | None]] = field(default_factory=list)
    rewritten: list[FileScanTask] = field(default_factory=list)
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
    hits = table.filter(filter_mask(expr, table))["__i"]
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


def plan_overwrite(
    io: FileIO,
    metadata: TableMetadata,
    parent: Snapshot | None,
    expr: BooleanExpression,
    *,
    case_sensitive: bool = True,
    name_mapping: NameMapping | None = None,
) -> OverwritePlan:
    """Which files an overwrite of the rows matching ``expr`` removes, and the rows to keep.

    The scan planner picks the candidate files (partition and metrics pruning) and the delete
    files that apply to each; files whose partition or column metrics prove that every row
    matches are removed unread.
    """
    from icefloe.read.reader import read_task
    from icefloe.scan.columnar import plan_to_tasks
    from icefloe.scan.manifests import manifest_entries, manifest_list_of, reader
    from icefloe.scan.planner import plan as plan_scan

    result = OverwritePlan()
    if parent is None or parent.manifest_list is None:
        return result
    schema = metadata.current_schema()
    bound = rewrite_not(bind(schema, expr, case_sensitive))
    specs = {s.spec_id: s for s in metadata.partition_specs}
    tasks = plan_to_tasks(
        plan_scan(
            manifest_list=manifest_list_of(io, parent),
            read=reader(io),
            schema=schema,
            specs=specs,
            bound_filter=bound,
            # surviving rows are rewritten: every delete of a file must apply to them
            prune_deletes_by_metrics=False,
        )
    )
    if not tasks:
        return result
    entries = manifest_entries(io, parent)
    # Files whose partition or column metrics prove that every row matches: removed unread.
    whole: set[str] = set()
    for mf, batch in entries:
        if mf.content != 0:
            continue
        spec = _spec(metadata, batch)
        strict = partition_mask(batch, strict_projection(schema, spec, expr, case_sensitive))
        alive = pc.not_equal(batch.column("status"), DELETED)
        whole.update(batch.filter(pc.and_(strict, alive)).column("file_path").to_pylist())
        whole.update(proven_by_metrics([batch.filter(alive)], bound))
    version = metadata.format_version
    lineage = (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER) if version >= 3 else ()
    options = ReadOptions(
        schema=schema,
        specs=specs,
        name_mapping=name_mapping,
        case_sensitive=case_sensitive,
        metadata_columns=lineage,
        format_version=version,
        schemas=metadata.schemas,
    )
    arrow_filter = bound
    removed: set[str] = set()
    for task in tasks:
        path = task.data_file.file_path
        if path in whole:
            removed.add(path)
            continue
        result.files_read += 1
        full = replace_task(task, residual=AlwaysTrue(), start=0, length=None)
        batches = list(read_task(io, full, options))
        data = pa.Table.from_batches(batches) if batches else None
        if data is None or data.num_rows == 0:
            removed.add(path)  # every row was already deleted
            continue
        hit = _mask(data, arrow_filter)
        matched = int(pc.sum(hit).as_py() or 0)
        if matched == 0:
            continue
        removed.add(path)
        if matched < data.num_rows:
            result.rows.append(data.filter(pc.invert(hit)))
            result.rewritten.append(task)
    # Deletion vectors and file-scoped position deletes of removed files go with them.
    scoped = [
        d
        for _, d in _delete_refs([(m, b) for m, b in entries if m.content != 0])
        if referenced_file(d) in removed
    ]
    dvs = [d for d in scoped if str(d.get("file_format") or "").upper() == "PUFFIN"]
    files = {d["file_path"] for d in scoped if str(d.get("file_format")).upper() != "PUFFIN"}
    result.remove = sorted(removed | files)
    dv_entries = {(d["file_path"], d.get("content_offset")) for d in dvs}
    result.remove_deletes = sorted(dv_entries, key=lambda e: (e[0], e[1] or 0))
    return result


def _mask(table: pa.Table, expr: BooleanExpression) -> pa.Array:
    """Which rows of ``table`` bound ``expr`` selects (nulls as false)."""
    return selection_mask(expr, table)
