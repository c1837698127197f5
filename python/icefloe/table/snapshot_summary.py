"""A snapshot's summary: the Appendix F counts of the files it adds and removes, the changed
partitions, and the operation derived from what it does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.metadata import Operation, Snapshot, Summary, update_snapshot_totals
from icefloe.scan.manifests import partition_keys

__all__ = ["snapshot_summary"]


def snapshot_summary(
    *,
    added: Sequence[pa.RecordBatch],
    removed: Sequence[pa.RecordBatch],
    adds_data: bool,
    adds_deletes: bool,
    created: int,
    replaced: Sequence[str],
    properties: Mapping[str, str],
    operation: str | None,
    parent: Snapshot | None,
) -> Summary:
    """The summary of a snapshot that adds the entries ``added`` and removes ``removed`` (its
    ``operation``, or the one derived from what it does), with the running totals of
    ``parent``'s summary."""
    s: dict[str, int] = {}
    keys: list[pa.Array] = []
    for batch in added:
        _tally(batch, s, "added", "added", "added")
        keys.append(partition_keys(batch))
    for batch in removed:
        _tally(batch, s, "deleted", "removed", "removed")
        keys.append(partition_keys(batch))
    changed = len(pc.unique(pa.concat_arrays(keys))) if keys else 0
    props = {k: str(v) for k, v in s.items()}
    props["changed-partition-count"] = str(changed)
    props["manifests-created"] = str(created)
    props["manifests-replaced"] = str(len(replaced))
    props.update(properties)
    op = operation or _derive_operation(adds_data, adds_deletes, bool(removed))
    summary = Summary(op, props)
    prev = parent.summary if parent is not None else None
    return update_snapshot_totals(summary, prev)


def _derive_operation(adds_data: bool, adds_deletes: bool, removes: bool) -> str:
    if adds_data and not adds_deletes and not removes:
        return Operation.APPEND
    if not adds_data and (removes or adds_deletes):
        return Operation.DELETE
    if not adds_data and not removes and not adds_deletes:
        return Operation.APPEND
    return Operation.OVERWRITE


def _tally(batch: pa.RecordBatch, s: dict[str, int], data: str, files: str, rows: str) -> None:
    """Add a batch of entries' Appendix F counts to ``s`` (``data``: added/deleted for data
    files, ``files``/``rows``: added/removed for delete files and deletes), vectorised."""

    def total(mask: pa.Array, column: pa.Array | pa.ChunkedArray) -> int:
        return int(pc.sum(pc.if_else(mask, column, 0)).as_py() or 0)

    def add(key: str, n: int) -> None:
        if n:
            s[key] = s.get(key, 0) + n

    content = batch.column("content")
    records = batch.column("record_count")
    is_dv = pc.equal(pc.utf8_upper(batch.column("file_format")), "PUFFIN")
    size = batch.column("file_size_in_bytes")
    if "content_size_in_bytes" in batch.schema.names:
        size = pc.if_else(is_dv, pc.fill_null(batch.column("content_size_in_bytes"), 0), size)
    is_data = pc.equal(content, 0)
    is_pos = pc.equal(content, 1)
    is_eq = pc.equal(content, 2)
    add(f"{data}-data-files", total(is_data, pa.array([1] * batch.num_rows, pa.int64())))
    add(f"{data}-records", total(is_data, records))
    add(f"{files}-files-size", int(pc.sum(size).as_py() or 0))
    ones = pa.array([1] * batch.num_rows, pa.int64())
    add(f"{files}-delete-files", total(pc.invert(is_data), ones))
    add(f"{files}-dvs", total(pc.and_(is_pos, is_dv), ones))
    add(f"{files}-position-delete-files", total(pc.and_(is_pos, pc.invert(is_dv)), ones))
    add(f"{files}-equality-delete-files", total(is_eq, ones))
    add(f"{rows}-position-deletes", total(is_pos, records))
    add(f"{rows}-equality-deletes", total(is_eq, records))
