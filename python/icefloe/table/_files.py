"""Reading a table's manifest lists and manifests in bulk, as Arrow (shared by expire/inspect),
and deleting files in bulk (expire, orphan-file removal).

Files are fetched in parallel threads through the table's :class:`~icefloe.io.FileIO`; manifests
are decoded together by :func:`icefloe.manifest.read_manifests` (Rust, GIL released), with the
inheritance values of the manifest list they were listed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from icefloe.io import FileIO
from icefloe.manifest import manifest_files, read_manifest_list, read_manifests
from icefloe.metadata import Snapshot
from icefloe.progress import Progress, ProgressArg
from icefloe.s3client import DELETE_BATCH

__all__ = [
    "delete_all",
    "fetch",
    "manifest_list_of",
    "manifest_lists",
    "read_entries",
    "unique_manifests",
]

DEFAULT_THREADS = 8


def fetch(io: FileIO, paths: Sequence[str], threads: int | None = None) -> list[bytes]:
    """The bytes of each file, read in parallel, in order."""
    if not paths:
        return []
    if len(paths) == 1:
        return [io.new_input(paths[0]).read()]
    with ThreadPoolExecutor(max_workers=min(threads or DEFAULT_THREADS, len(paths))) as pool:
        return list(pool.map(lambda p: io.new_input(p).read(), paths))


def _v1_manifest_list(snapshot: Snapshot) -> pa.RecordBatch:
    """A manifest-list batch for a v1 snapshot that embeds its manifest paths."""
    paths = list(snapshot.manifests or ())
    n = len(paths)
    return pa.RecordBatch.from_pydict(
        {
            "manifest_path": pa.array(paths, pa.string()),
            "manifest_length": pa.array([None] * n, pa.int64()),
            "partition_spec_id": pa.array([None] * n, pa.int32()),
            "content": pa.array([0] * n, pa.int32()),
            "sequence_number": pa.array([0] * n, pa.int64()),
            "min_sequence_number": pa.array([0] * n, pa.int64()),
            "added_snapshot_id": pa.array([snapshot.snapshot_id] * n, pa.int64()),
            "first_row_id": pa.array([None] * n, pa.int64()),
        }
    )


def manifest_lists(
    io: FileIO, snapshots: Iterable[Snapshot], threads: int | None = None
) -> dict[int, pa.RecordBatch]:
    """Each snapshot's decoded manifest list, by snapshot id."""
    snaps = list(snapshots)
    with_list = [s for s in snaps if s.manifest_list]
    datas = fetch(io, [s.manifest_list for s in with_list if s.manifest_list], threads)
    out = {
        s.snapshot_id: read_manifest_list(d, name=s.manifest_list or "")
        for s, d in zip(with_list, datas, strict=True)
    }
    for s in snaps:
        if not s.manifest_list:
            out[s.snapshot_id] = _v1_manifest_list(s)
    return out


def manifest_list_of(io: FileIO, snapshot: Snapshot) -> pa.RecordBatch:
    """One snapshot's decoded manifest list."""
    return manifest_lists(io, [snapshot])[snapshot.snapshot_id]


def unique_manifests(lists: Iterable[pa.RecordBatch]) -> pa.Table:
    """The rows of several manifest lists, one per distinct ``manifest_path``."""
    batches = [b for b in lists if b.num_rows]
    if not batches:
        return pa.table({"manifest_path": pa.array([], pa.string())})
    common = [n for n in batches[0].schema.names if all(n in b.schema.names for b in batches)]
    table = pa.Table.from_batches([b.select(common) for b in batches])
    paths = table.column("manifest_path").combine_chunks()
    _, first = _first_index(paths)
    return table.take(first)


def _first_index(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Distinct values and the index of each one's first occurrence."""
    idx = pa.array(range(len(values)), pa.int64())
    grouped = (
        pa.table({"v": values, "i": idx}).group_by("v", use_threads=False).aggregate([("i", "min")])
    )
    order = grouped.column("i_min").combine_chunks()
    return grouped.column("v").combine_chunks(), order.sort()


def read_entries(
    io: FileIO, manifests: pa.Table | pa.RecordBatch, threads: int | None = None
) -> list[pa.RecordBatch]:
    """The entries of every manifest listed in ``manifests`` (manifest-list rows), one batch
    per manifest, with snapshot ids, sequence numbers and row ids inherited."""
    if manifests.num_rows == 0:
        return []
    if isinstance(manifests, pa.Table):
        batch = manifests.combine_chunks().to_batches()[0]
    else:
        batch = manifests
    files = manifest_files(batch)
    data = fetch(io, [m.manifest_path for m in files], threads)
    if "partition_spec_id" in batch.schema.names and batch.column("partition_spec_id").null_count:
        return read_manifests(data, threads=threads)
    return read_manifests(data, files, threads=threads)


def delete_all(
    io: FileIO,
    paths: Iterable[str],
    *,
    threads: int | None = None,
    progress: ProgressArg = None,
    what: str = "deleting files",
) -> None:
    """Delete ``paths`` in parallel threads (a missing file is not an error), reporting each
    deletion to ``progress`` (see :mod:`icefloe.progress`). On S3 each thread sends
    ``DeleteObjects`` requests of up to 1,000 files."""
    todo = list(paths)
    if not todo:
        return
    with Progress(progress, len(todo), what) as bar:
        if io.s3_client(todo[0]) is not None:
            # An object store that deletes in batches: one request per 1,000 files.
            batches = [todo[i : i + DELETE_BATCH] for i in range(0, len(todo), DELETE_BATCH)]
            with ThreadPoolExecutor(
                max_workers=min(threads or DEFAULT_THREADS, len(batches))
            ) as pool:
                list(pool.map(lambda batch: io.delete_files(batch, bar.advance), batches))
            return

        def delete(path: str) -> None:
            io.delete_quietly(path)
            bar.advance()

        with ThreadPoolExecutor(max_workers=min(threads or DEFAULT_THREADS, len(todo))) as pool:
            list(pool.map(delete, todo))
