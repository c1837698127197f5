"""Table maintenance: orphan file removal and data file compaction.

- :func:`remove_orphan_files` deletes files under the table location that no metadata
  reaches (leftovers of failed writes), when older than a threshold; ``dry_run`` only lists them.
- :func:`reachable_files` is the set of every file a table's metadata references: metadata
  files (current and logged), manifest lists, manifests, data and delete files of every kept
  snapshot, statistics and partition statistics files, and ``version-hint.text``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import ValidationError
from icefloe.io import FileIO, metadata_location
from icefloe.manifest import read_manifest_list, read_manifests

if TYPE_CHECKING:
    from icefloe.metadata import TableMetadata

__all__ = ["DEFAULT_ORPHAN_AGE", "reachable_files", "remove_orphan_files"]

DEFAULT_ORPHAN_AGE = timedelta(days=3)
"""Files younger than this are kept by default: a concurrent write may not have committed yet."""


def _normalize(paths: pa.Array) -> pa.Array:
    """Locations compared without scheme/authority differences (``file:/x`` == ``/x``) and
    with repeated slashes collapsed, as the reference's default prefix-mismatch rule does for
    the same file system."""
    stripped = pc.replace_substring_regex(
        paths, pattern=r"^[A-Za-z][A-Za-z0-9+.-]*://[^/]*", replacement=""
    )
    stripped = pc.replace_substring_regex(
        stripped, pattern=r"^[A-Za-z][A-Za-z0-9+.-]*:", replacement=""
    )
    return pc.replace_substring_regex(stripped, pattern=r"/{2,}", replacement="/")


def _manifest_paths(io: FileIO, metadata: TableMetadata) -> tuple[list[str], list[str]]:
    """(manifest lists, distinct manifests) of every kept snapshot."""
    lists: list[str] = []
    manifests: dict[str, None] = {}
    for snap in metadata.snapshots:
        if snap.manifest_list:
            lists.append(snap.manifest_list)
            batch = read_manifest_list(
                io.new_input(snap.manifest_list).read(), name=snap.manifest_list
            )
            for path in batch.column("manifest_path").to_pylist():
                manifests[path] = None
        elif snap.manifests:
            for path in snap.manifests:
                manifests[path] = None
    return lists, list(manifests)


def reachable_files(io: FileIO, metadata: TableMetadata, metadata_file: str | None) -> pa.Array:
    """Every location the table's metadata references, as a string array (may repeat)."""
    chunks: list[pa.Array] = []
    named: list[str] = []
    if metadata_file:
        named.append(metadata_file)
    named.extend(e.metadata_file for e in metadata.metadata_log)
    named.extend(s.statistics_path for s in metadata.statistics)
    named.extend(s.statistics_path for s in metadata.partition_statistics)
    named.append(f"{metadata_location(metadata.location, metadata.properties)}/version-hint.text")
    lists, manifests = _manifest_paths(io, metadata)
    named.extend(lists)
    named.extend(manifests)
    chunks.append(pa.array(named, pa.string()))
    # Manifests are decoded in parallel in Rust, 64 at a time to bound memory.
    for i in range(0, len(manifests), 64):
        group = manifests[i : i + 64]
        datas = [io.new_input(p).read() for p in group]
        for batch in read_manifests(datas):
            chunks.append(batch.column("file_path").cast(pa.string()))
    return pa.concat_arrays(chunks)


def _threshold_ms(older_than: datetime | timedelta | int | None) -> int:
    now = int(time.time() * 1000)
    if older_than is None:
        return now - int(DEFAULT_ORPHAN_AGE.total_seconds() * 1000)
    if isinstance(older_than, timedelta):
        return now - int(older_than.total_seconds() * 1000)
    if isinstance(older_than, datetime):
        return int(older_than.timestamp() * 1000)
    if isinstance(older_than, int) and not isinstance(older_than, bool):
        return older_than
    raise ValidationError(
        f"older_than must be a datetime, a timedelta or epoch milliseconds, got {older_than!r}"
    )


def remove_orphan_files(
    io: FileIO,
    metadata: TableMetadata,
    metadata_file: str | None,
    *,
    older_than: datetime | timedelta | int | None = None,
    dry_run: bool = False,
    location: str | None = None,
) -> list[str]:
    """Deletes (or with ``dry_run`` only lists) the files under ``location`` (default: the
    table location) that the metadata does not reach and that were last modified before
    ``older_than`` (a datetime, epoch ms, or an age as a timedelta; default 3 days ago).

    Returns the orphan locations, sorted. Files without a modification time are kept.
    """
    root = location or metadata.location
    threshold = _threshold_ms(older_than)
    listed = [
        f for f in io.list_prefix(root) if f.modified_ms is not None and f.modified_ms < threshold
    ]
    if not listed:
        return []
    candidates = pa.array([f.location for f in listed], pa.string())
    reachable = _normalize(reachable_files(io, metadata, metadata_file))
    live = pc.is_in(_normalize(candidates), value_set=pc.unique(reachable))
    orphans = sorted(candidates.filter(pc.invert(live)).to_pylist())
    if not dry_run:
        _delete_all(io, orphans)
    return orphans


def _delete_all(io: FileIO, paths: Iterable[str]) -> None:
    for p in paths:
        io.delete_quietly(p)
