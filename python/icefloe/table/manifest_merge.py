"""Merging a snapshot's manifests (``commit.manifest-merge.enabled``), data and delete
manifests apart, as the Java reference does: once a spec has
``commit.manifest.min-count-to-merge`` manifests of one content, they are bin-packed to
``commit.manifest.target-size-bytes`` and each bin is rewritten as one manifest. (Unmerged, one
delete manifest per row-level commit makes every later plan and delete slower.)"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.io import FileIO
from icefloe.manifest import manifest_files, read_manifest, write_manifest
from icefloe.metadata import TableMetadata
from icefloe.properties import TableProperties, int_property
from icefloe.scan.manifests import fetch

#: ``write(metadata, entries, spec_id, content)``: writes a manifest, returns its list row.
WriteManifest = Callable[[TableMetadata, pa.RecordBatch, int, int], dict[str, Any]]

__all__ = ["MANIFEST_LIST_SCHEMA", "merge_manifests", "rows_batch"]

EXISTING, DELETED = 0, 2


def merge_manifests(
    metadata: TableMetadata,
    new: list[dict[str, Any]],
    kept: list[dict[str, Any]],
    written: list[str],
    *,
    io: FileIO,
    own: Collection[str],
    write: WriteManifest,
    flush: Callable[[], None],
    content: int = 0,
    snapshot_id: int | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """The new and kept manifest-list rows (all of ``content``: 0 data, 1 deletes) after
    merging, and the paths of the kept manifests merged away. ``written`` receives the paths
    of merged manifests; ``own`` are the manifests this snapshot wrote (their entries are
    ADDED and inherit later); ``write`` writes a batch of entries as a manifest and returns its
    row; ``flush`` waits until ``own`` are written. The DELETED entries of other manifests are
    dropped, except those of ``snapshot_id`` (files this snapshot removes: they must stay in
    its manifests, as in Java's merge)."""
    props = metadata.properties
    min_count = int_property(
        props,
        TableProperties.MANIFEST_MIN_MERGE_COUNT,
        TableProperties.MANIFEST_MIN_MERGE_COUNT_DEFAULT,
    )
    target = int_property(
        props,
        TableProperties.MANIFEST_TARGET_SIZE_BYTES,
        TableProperties.MANIFEST_TARGET_SIZE_BYTES_DEFAULT,
    )
    specs = {r["partition_spec_id"] for r in new + kept}
    out_new: list[dict[str, Any]] = []
    out_kept: list[dict[str, Any]] = []
    replaced: list[str] = []
    for spec_id in sorted(specs):
        group_new = [r for r in new if r["partition_spec_id"] == spec_id]
        group_kept = [r for r in kept if r["partition_spec_id"] == spec_id]
        if len(group_new) + len(group_kept) < max(min_count, 2):
            out_new += group_new
            out_kept += group_kept
            continue
        bins: list[list[dict[str, Any]]] = [[]]
        size = 0
        for r in group_new + group_kept:
            if bins[-1] and size + r["manifest_length"] > target:
                bins.append([])
                size = 0
            bins[-1].append(r)
            size += r["manifest_length"]
        for b in bins:
            if len(b) == 1:
                (out_new if b[0] in group_new else out_kept).append(b[0])
                continue
            row = _merge_bin(metadata, b, spec_id, io, own, write, flush, content, snapshot_id)
            written.append(row["manifest_path"])
            replaced += [r["manifest_path"] for r in b if r not in group_new]
            out_new.append(row)
    return out_new, out_kept, replaced


def _merge_bin(
    metadata: TableMetadata,
    rows: list[dict[str, Any]],
    spec_id: int,
    io: FileIO,
    own: Collection[str],
    write: WriteManifest,
    flush: Callable[[], None],
    content: int,
    snapshot_id: int | None,
) -> dict[str, Any]:
    flush()  # our new manifests are read back below
    batches = []
    for r, data in zip(rows, fetch(io, [r["manifest_path"] for r in rows]), strict=True):
        if r["manifest_path"] in own:
            b = read_manifest(data, name=r["manifest_path"])  # ADDED, inheriting later
        else:
            mf = manifest_files(rows_batch([r]))[0]
            b = read_manifest(data, manifest=mf)
            deleted = pc.equal(b.column("status"), DELETED)
            ours = pc.fill_null(pc.equal(b.column("snapshot_id"), snapshot_id), False)
            # deletions of earlier snapshots go; this snapshot's stay DELETED, the rest EXISTING
            b = b.filter(pc.or_(pc.invert(deleted), ours))
            status = pc.if_else(
                pc.equal(b.column("status"), DELETED), DELETED, pa.scalar(EXISTING, pa.int32())
            )
            b = b.set_column(b.schema.get_field_index("status"), "status", status.cast(pa.int32()))
        batches.append(b)
    # manifests of one spec written before a partition source was promoted (or, by older
    # versions, typed unknown after it was dropped) hold another partition type: cast first
    from icefloe.table.producer import cast_partition_type, spec_schema  # imports this module

    spec = metadata.spec_by_id(spec_id)
    if spec is not None:
        schema = spec_schema(metadata, spec)
        version = metadata.format_version
        batches = [cast_partition_type(b, version, schema, spec) for b in batches]
    merged = pa.Table.from_batches(batches).combine_chunks().to_batches()
    batch = merged[0] if merged else batches[0]
    row = write(metadata, batch, spec_id, content)
    if any(r["manifest_path"] not in own for r in rows):
        row["first_row_id"] = None
    return row


def rows_batch(rows: list[dict[str, Any]]) -> pa.RecordBatch:
    """Manifest-list rows (as the manifest writer returns them) as one batch."""
    if not rows:
        return _EMPTY_LIST
    return pa.RecordBatch.from_pylist(rows, schema=_LIST_SCHEMA)


def _list_schema() -> pa.Schema:
    _, row = write_manifest(
        pa.RecordBatch.from_pylist([], schema=pa.schema([pa.field("status", pa.int32())])),
        format_version=3,
        schema_json='{"type": "struct", "schema-id": 0, "fields": []}',
        spec_json="[]",
        spec_id=0,
        path="<schema>",
    )
    return row.schema


_LIST_SCHEMA = _list_schema()
#: The Arrow schema of a decoded manifest list (rows as the manifest writer returns them).
MANIFEST_LIST_SCHEMA = _LIST_SCHEMA
_EMPTY_LIST = pa.RecordBatch.from_pylist([], schema=_LIST_SCHEMA)
