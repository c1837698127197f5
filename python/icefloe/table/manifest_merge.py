"""Merging a snapshot's manifests (``commit.manifest-merge.enabled``), data and delete
manifests apart, as the Java reference does: the manifests of each partition spec are packed,
from the oldest, into bins of ``commit.manifest.target-size-bytes``, and each bin of two or
more is rewritten as one manifest, except that the bin holding the snapshot's newest manifest
waits until it has ``commit.manifest.min-count-to-merge`` of them (so a small commit does not
rewrite its neighbours each time, and the manifests of older specs are merged whatever their
number). Unmerged, one manifest per commit makes every later plan and delete slower."""

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
from icefloe.table.manifest_partitions import cast_partition_type, spec_schema

#: ``write(metadata, entries, spec_id, content)``: writes a manifest, returns its list row.
WriteManifest = Callable[[TableMetadata, pa.RecordBatch, int, int], dict[str, Any]]

__all__ = ["MANIFEST_LIST_SCHEMA", "merge_manifests", "pack_from_end", "rows_batch"]

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
    rows = new + kept
    first = rows[0] if rows else None  # the newest: this snapshot's own, if it wrote any
    new_paths = {r["manifest_path"] for r in new}
    out_new: list[dict[str, Any]] = []
    out_kept: list[dict[str, Any]] = []
    replaced: list[str] = []
    for spec_id in sorted({r["partition_spec_id"] for r in rows}):
        group = [r for r in rows if r["partition_spec_id"] == spec_id]
        for b in pack_from_end(group, target):
            if len(b) == 1 or (any(r is first for r in b) and len(b) < min_count):
                for r in b:
                    (out_new if r["manifest_path"] in new_paths else out_kept).append(r)
                continue
            row = _merge_bin(metadata, b, spec_id, io, own, write, flush, content, snapshot_id)
            written.append(row["manifest_path"])
            replaced += [r["manifest_path"] for r in b if r["manifest_path"] not in new_paths]
            out_new.append(row)
    return out_new, out_kept, replaced


def pack_from_end(rows: list[dict[str, Any]], target: int) -> list[list[dict[str, Any]]]:
    """``rows`` in order, cut into runs of at most ``target`` bytes of manifests (a larger
    manifest alone), filled from the end: only the first run, which holds the newest
    manifests, may be short (Java's ``ListPacker.packEnd`` with a lookback of one)."""
    bins: list[list[dict[str, Any]]] = []
    size = 0
    for r in reversed(rows):
        length = r["manifest_length"]
        if bins and size + length <= target:
            bins[-1].append(r)
            size += length
        else:
            bins.append([r])
            size = length
    return [b[::-1] for b in reversed(bins)]


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
