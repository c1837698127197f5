"""Reading manifest lists and manifest entries: planning, commits, expiry, inspection and
cherry-picking all read them through this module.

Files are fetched on the shared I/O executor (:mod:`icefloe._concurrency`); manifests are
decoded together in Rust (GIL released), with the inheritance values of the manifest list they
were listed in. The planner decodes only the columns it keeps, and caches decoded manifests
(:class:`~icefloe.scan.cache.ManifestCache`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe import _native
from icefloe._concurrency import io_executor, parallel_map
from icefloe.exceptions import NotFoundError, ValidationError
from icefloe.io import FileIO
from icefloe.manifest import ManifestFile, manifest_files, read_manifest_list, read_manifests
from icefloe.metadata import Snapshot
from icefloe.scan.cache import ManifestCache
from icefloe.scan.filters import SpecFilters

#: Manifest entry columns a plan keeps (others, such as the metrics maps, are dropped).
DATA_COLUMNS = (
    "content",
    "file_path",
    "file_format",
    "partition",
    "record_count",
    "file_size_in_bytes",
    "sequence_number",
    "file_sequence_number",
    "split_offsets",
    "first_row_id",
)
#: The metrics maps a filter reads (decoded only when there is a filter).
METRICS_COLUMNS = (
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
)
DELETE_COLUMNS = (
    *DATA_COLUMNS,
    "referenced_data_file",
    "content_offset",
    "content_size_in_bytes",
    "equality_ids",
    "lower_bounds",
    "upper_bounds",
)


Reader = Callable[[str], bytes]


#: Manifest reads started ahead of their decode, by path.
Pending = dict[str, "Future[bytes]"]


def reader(io: FileIO) -> Reader:
    """A function returning a file's bytes through ``io``."""

    def read(path: str) -> bytes:
        data: bytes = io.new_input(path).read()
        return data

    return read


def _read_if_present(io: FileIO, paths: Sequence[str], threads: int | None) -> list[bytes | None]:
    """The bytes of each file, in order, ``None`` for a file that does not exist."""
    read = reader(io)

    def read_or_none(path: str) -> bytes | None:
        try:
            return read(path)
        except NotFoundError:
            return None

    return parallel_map(read_or_none, list(paths), threads=threads)


def fetch(
    read: Reader | FileIO,
    paths: Sequence[str],
    threads: int | None = None,
    pending: Pending | None = None,
) -> list[bytes]:
    """The bytes of each file, in order, read ``threads`` at a time on the shared I/O executor;
    reads already started for a path (``pending``, see :func:`prefetch`) are taken from it."""
    if isinstance(read, FileIO):
        read = reader(read)
    # pop with a default: two chunks decode at once (a path listed twice is read twice)
    started = [pending.pop(p, None) for p in paths] if pending else [None] * len(paths)
    missing = [p for p, f in zip(paths, started, strict=True) if f is None]
    rest = iter(parallel_map(read, missing, threads=threads))
    return [next(rest) if f is None else f.result() for f in started]


def _keys(manifests: pa.RecordBatch, tag: str) -> tuple[list[str], list[str]]:
    """Manifest paths and their cache keys (path, inherited values, projection)."""
    paths = manifests.column("manifest_path").to_pylist()
    snap = manifests.column("added_snapshot_id").to_pylist()
    seq = manifests.column("sequence_number").to_pylist()
    first = manifests.column("first_row_id").to_pylist()
    keys = [f"{p}|{a}|{b}|{c}|{tag}" for p, a, b, c in zip(paths, snap, seq, first, strict=True)]
    return paths, keys


def prefetch(
    read: Reader,
    manifests: pa.RecordBatch,
    cache: ManifestCache | None,
    pending: Pending,
    tag: str,
) -> None:
    """Starts reading the manifests the cache lacks, so their I/O overlaps the decode of the
    previous chunk."""
    for p, key in zip(*_keys(manifests, tag), strict=True):
        if p not in pending and (cache is None or key not in cache):
            pending[p] = io_executor().submit(read, p)


def decode(
    read: Reader,
    manifests: pa.RecordBatch,
    threads: int | None,
    cache: ManifestCache | None,
    columns: Sequence[str] = (),
    metric_ids: Sequence[int] | None = None,
    pending: Pending | None = None,
) -> list[pa.RecordBatch]:
    """Decodes the manifests of a (pruned) manifest list, in order, with inheritance: only the
    planning columns plus ``columns`` (see :func:`icefloe._native.plan_read_manifests`); with
    ``metric_ids``, also the metrics maps trimmed to those field ids.

    The cache holds the planning columns and the trimmed metrics maps as separate entries, so
    scans with and without a filter share the first."""
    if manifests.num_rows == 0:
        return []
    paths, keys = _keys(manifests, ",".join(columns))
    snap = manifests.column("added_snapshot_id").to_pylist()
    seq = manifests.column("sequence_number").to_pylist()
    first = manifests.column("first_row_id").to_pylist()
    mtag = _metrics_tag(metric_ids)
    out: list[pa.RecordBatch | None] = [None] * len(paths)
    todo: list[int] = []
    for i, key in enumerate(keys):
        base = cache.get(key) if cache is not None else None
        extra = cache.get(key + mtag) if cache is not None and mtag is not None else None
        if base is not None and (mtag is None or extra is not None):
            out[i] = base if extra is None else _join(base, extra)
        else:
            todo.append(i)
    if todo:
        data = fetch(read, [paths[i] for i in todo], pending=pending)
        decoded = _native.plan_read_manifests(
            data,
            snapshot_ids=[snap[i] for i in todo],
            sequence_numbers=[seq[i] for i in todo],
            first_row_ids=[first[i] for i in todo],
            names=[paths[i] for i in todo],
            columns=[*columns, *(METRICS_COLUMNS if metric_ids is not None else ())],
            metric_ids=None if metric_ids is None else list(metric_ids),
            threads=threads,
        )
        del data
        for i, b in zip(todo, decoded, strict=True):
            out[i] = b
            if cache is not None:
                _cache_put(cache, keys[i], mtag, b)
    return [b for b in out if b is not None]


def _metrics_tag(metric_ids: Sequence[int] | None) -> str | None:
    return None if metric_ids is None else "|metrics:" + ",".join(map(str, metric_ids))


def _cache_put(cache: ManifestCache, key: str, mtag: str | None, b: pa.RecordBatch) -> None:
    """Caches a decoded manifest: the planning columns under ``key`` and, with ``mtag``, the
    trimmed metrics maps apart under ``key + mtag``."""
    if mtag is None:
        cache.put(key, b)
    else:
        names = b.schema.names
        cache.put(key, b.select([n for n in names if n not in METRICS_COLUMNS]))
        cache.put(key + mtag, b.select([n for n in names if n in METRICS_COLUMNS]))


def decode_kept(
    read: Reader,
    manifests: pa.RecordBatch,
    spec_ids: Sequence[int],
    spec_filters: Callable[[int], SpecFilters],
    metrics_json: str | None,
    metric_ids: Sequence[int] | None,
    threads: int | None,
    cache: ManifestCache | None,
    pending: Pending | None = None,
    with_metrics: bool = False,
) -> list[pa.RecordBatch]:
    """The kept entries (columns :data:`DATA_COLUMNS`, and with ``with_metrics`` the
    :data:`METRICS_COLUMNS` trimmed to ``metric_ids``) of each data manifest of
    ``manifests``, as :func:`decode` then :func:`keep_entries` would give them, but a manifest is
    decoded and selected in one native step (:func:`icefloe._native.plan_read_keep_manifests`)
    and the cache holds decoded manifests as Rust handles
    (:class:`icefloe._native.DecodedManifest`: planning columns and trimmed metrics maps
    apart), so decoded batches never cross into Python."""
    if manifests.num_rows == 0:
        return []
    paths, keys = _keys(manifests, "decoded")
    mtag = _metrics_tag(metric_ids)
    out: list[pa.RecordBatch | None] = [None] * len(paths)
    hits: list[int] = []
    bases: list[_native.DecodedManifest] = []
    extras: list[_native.DecodedManifest | None] = []
    todo: list[int] = []
    for i, key in enumerate(keys):
        base = cache.get(key) if cache is not None else None
        extra = cache.get(key + mtag) if cache is not None and mtag is not None else None
        if base is not None and (mtag is None or extra is not None):
            hits.append(i)
            bases.append(base)
            extras.append(extra)
        else:
            todo.append(i)
    uniq = sorted({spec_ids[i] for i in range(len(paths))})
    index = {s: k for k, s in enumerate(uniq)}
    partition_filters = [spec_filters(s).partition_json for s in uniq]
    keep_columns = [*DATA_COLUMNS, *(METRICS_COLUMNS if with_metrics else ())]
    if hits:
        kept = _native.plan_keep_decoded(
            bases,
            extras,
            [index[spec_ids[i]] for i in hits],
            partition_filters,
            metrics_json,
            keep_columns,
            threads,
        )
        for i, b in zip(hits, kept, strict=True):
            out[i] = b
    if todo:
        data = fetch(read, [paths[i] for i in todo], pending=pending)
        snap = manifests.column("added_snapshot_id").to_pylist()
        seq = manifests.column("sequence_number").to_pylist()
        first = manifests.column("first_row_id").to_pylist()
        result = _native.plan_read_keep_manifests(
            data,
            [snap[i] for i in todo],
            [seq[i] for i in todo],
            [first[i] for i in todo],
            [paths[i] for i in todo],
            None if metric_ids is None else list(metric_ids),
            [index[spec_ids[i]] for i in todo],
            partition_filters,
            metrics_json,
            keep_columns,
            cache is not None,
            threads,
        )
        del data
        for i, (kept_batch, whole, metrics) in zip(todo, result, strict=True):
            out[i] = kept_batch
            if cache is not None and whole is not None:
                cache.put(keys[i], whole)
                if mtag is not None and metrics is not None:
                    cache.put(keys[i] + mtag, metrics)
    return [b for b in out if b is not None]


def _join(base: pa.RecordBatch, extra: pa.RecordBatch) -> pa.RecordBatch:
    """The columns of two batches of the same rows side by side."""
    return pa.RecordBatch.from_arrays(
        [*base.columns, *extra.columns],
        schema=pa.schema([*base.schema, *extra.schema]),
    )


def keep_entries(
    batches: Sequence[pa.RecordBatch],
    spec_ids: Sequence[int],
    spec_filters: Callable[[int], SpecFilters],
    metrics_json: str | None,
    threads: int | None,
    columns: Sequence[str],
) -> list[pa.RecordBatch]:
    """The live entries of each batch whose partition and metrics may match, reduced to
    ``columns`` (masks and selection in Rust, in parallel)."""
    if not batches:
        return []
    uniq = sorted(set(spec_ids))
    index = {s: i for i, s in enumerate(uniq)}
    return _native.plan_keep_entries(
        list(batches),
        [index[s] for s in spec_ids],
        [spec_filters(s).partition_json for s in uniq],
        metrics_json,
        list(columns),
        threads,
    )


def planning_manifest_list(snapshot: Snapshot, read: Reader) -> pa.RecordBatch:
    """A snapshot's manifest list for the planner: decoded, or built from a v1 snapshot's
    manifests (see :func:`legacy_manifest_list`)."""
    if snapshot.manifest_list is not None:
        return read_manifest_list(read(snapshot.manifest_list), name=snapshot.manifest_list)
    return legacy_manifest_list(snapshot, read)


def legacy_manifest_list(snapshot: Any, read: Reader) -> pa.RecordBatch:
    """A manifest list for a v1 snapshot that names its manifests directly (``manifests``
    instead of ``manifest-list``): each manifest's spec id comes from its own metadata, there
    are no partition summaries (no manifest pruning) and sequence numbers are 0."""
    rows = []
    for path in snapshot.manifests or ():
        data = read(path)
        meta = _native.read_manifest(data, name=path).schema.metadata or {}
        spec = meta.get(b"partition-spec-id")
        content = meta.get(b"content", b"data")
        rows.append(
            {
                "manifest_path": path,
                "manifest_length": len(data),
                "partition_spec_id": int(spec) if spec is not None else 0,
                "content": 0 if content == b"data" else 1,
                "sequence_number": 0,
                "min_sequence_number": 0,
                "added_snapshot_id": snapshot.snapshot_id,
                "added_files_count": None,
                "existing_files_count": None,
                "partitions": None,
                "first_row_id": None,
            }
        )
    return pa.RecordBatch.from_pylist(rows, schema=_LEGACY_LIST)


_LEGACY_LIST = pa.schema(
    [
        pa.field("manifest_path", pa.string()),
        pa.field("manifest_length", pa.int64()),
        pa.field("partition_spec_id", pa.int32()),
        pa.field("content", pa.int32()),
        pa.field("sequence_number", pa.int64()),
        pa.field("min_sequence_number", pa.int64()),
        pa.field("added_snapshot_id", pa.int64()),
        pa.field("added_files_count", pa.int32()),
        pa.field("existing_files_count", pa.int32()),
        pa.field(
            "partitions",
            pa.list_(
                pa.struct(
                    [
                        pa.field("contains_null", pa.bool_()),
                        pa.field("contains_nan", pa.bool_()),
                        pa.field("lower_bound", pa.binary()),
                        pa.field("upper_bound", pa.binary()),
                    ]
                )
            ),
        ),
        pa.field("first_row_id", pa.int64()),
    ]
)


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
    io: FileIO,
    snapshots: Iterable[Snapshot],
    threads: int | None = None,
    *,
    missing_ok: bool = False,
) -> dict[int, pa.RecordBatch]:
    """Each snapshot's decoded manifest list, by snapshot id; with ``missing_ok`` a snapshot
    whose manifest list does not exist is left out (else ``NotFoundError``)."""
    snaps = list(snapshots)
    with_list = [s for s in snaps if s.manifest_list]
    paths = [s.manifest_list for s in with_list if s.manifest_list]
    datas = _read_if_present(io, paths, threads) if missing_ok else fetch(io, paths, threads)
    out = {
        s.snapshot_id: read_manifest_list(d, name=s.manifest_list or "")
        for s, d in zip(with_list, datas, strict=True)
        if d is not None
    }
    for s in snaps:
        if not s.manifest_list:
            out[s.snapshot_id] = _v1_manifest_list(s)
    return out


def written_manifest_list(io: FileIO, snapshot: Snapshot | None) -> pa.RecordBatch | None:
    """The decoded manifest list of a snapshot that has one (None for no snapshot); a v1
    snapshot that names its manifests directly is refused (commits rewrite manifest lists)."""
    if snapshot is None:
        return None
    if snapshot.manifest_list is None:
        raise ValidationError(
            f"snapshot {snapshot.snapshot_id} has no manifest list (v1 'manifests' field); "
            "rewrite it with a newer writer first"
        )
    return manifest_list_of(io, snapshot)


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


def read_manifest_entries(
    io: FileIO, manifests: Sequence[ManifestFile], threads: int | None = None
) -> list[pa.RecordBatch]:
    """The entries of each manifest, in order, with the values its manifest-list row passes on
    (snapshot id, sequence numbers, first row id) inherited."""
    return read_manifests(fetch(io, [m.manifest_path for m in manifests], threads), manifests)


def manifest_entries(
    io: FileIO, snapshot: Snapshot | None, content: int | None = None
) -> list[tuple[ManifestFile, pa.RecordBatch]]:
    """Every manifest of ``snapshot`` (optionally only those of one content) with its decoded
    entries, deleted ones included."""
    lst = written_manifest_list(io, snapshot)
    if lst is None:
        return []
    mfs = [m for m in manifest_files(lst) if content is None or m.content == content]
    return list(zip(mfs, read_manifest_entries(io, mfs), strict=True))


def read_entries(
    io: FileIO,
    manifests: pa.Table | pa.RecordBatch,
    threads: int | None = None,
    *,
    missing_ok: bool = False,
) -> list[pa.RecordBatch]:
    """The entries of every manifest listed in ``manifests`` (manifest-list rows), one batch
    per manifest, with snapshot ids, sequence numbers and row ids inherited; with
    ``missing_ok`` a manifest that does not exist is left out (else ``NotFoundError``)."""
    if manifests.num_rows == 0:
        return []
    if isinstance(manifests, pa.Table):
        batch = manifests.combine_chunks().to_batches()[0]
    else:
        batch = manifests
    if missing_ok:
        found = _read_if_present(io, batch.column("manifest_path").to_pylist(), threads)
        batch = batch.filter(pa.array([d is not None for d in found], pa.bool_()))
        if batch.num_rows == 0:
            return []
    files = manifest_files(batch)
    paths = [m.manifest_path for m in files]
    data = [d for d in found if d is not None] if missing_ok else fetch(io, paths, threads)
    if "partition_spec_id" in batch.schema.names and batch.column("partition_spec_id").null_count:
        return read_manifests(data, threads=threads, names=paths)
    return read_manifests(data, files, threads=threads)


def partition_keys(batch: pa.RecordBatch, spec_id: int | None = None) -> pa.Array:
    """One binary key per manifest entry of ``batch`` naming its (spec id, partition tuple):
    equal tuples of one spec give equal keys, a null differs from every value. The spec id is
    the batch's ``partition-spec-id`` metadata unless given; the tuple keys come from
    :func:`icefloe._native.plan_partition_keys`."""
    if spec_id is None:
        spec_id = int((batch.schema.metadata or {}).get(b"partition-spec-id", b"0"))
    prefix = pa.scalar(struct.pack("<i", spec_id), pa.binary())
    if "partition" not in batch.schema.names:
        return pa.array([prefix.as_py()] * batch.num_rows, pa.binary())
    tuples = pa.array(_native.plan_partition_keys(batch.column("partition")))
    return pc.binary_join_element_wise(prefix, tuples, b"")
