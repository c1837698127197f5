"""Scan planning: from a snapshot and a bound filter to the live data files and their deletes.

The steps (spec "Scan Planning"), with all per-entry work in Rust over the manifest reader's
Arrow batches and Python looping over partition specs and manifests only:

1. The manifest list is decoded and pruned per partition spec by the partition summaries,
   against the filter projected inclusively onto that spec.
2. Delete manifests are decoded in parallel (GIL released); their live entries are pruned by
   partition and by their own metrics, and indexed in Rust (:func:`_native.plan_match_deletes`).
   Delete manifests whose sequence number is below the lowest data sequence number of the
   matching data manifests cannot apply and are skipped.
3. Data manifests are decoded in parallel; live entries (not DELETED) are kept when their
   partition tuple satisfies the projected filter and their column metrics may match it.
4. Each kept data file gets its delete files (deletion vectors, position deletes, equality
   deletes by the sequence-number and partition rules) and its residual: for each predicate of
   the filter, the strict and inclusive projections are evaluated over the partition column,
   so the residual is computed once per distinct outcome, not per file.

The result, :class:`Plan`, is columnar; :mod:`icefloe.table.scan` turns it into
:class:`~icefloe.scan.tasks.FileScanTask` values or an Arrow table.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe import _native
from icefloe._concurrency import decode_executor, io_executor
from icefloe.exceptions import IcebergError, ValidationError
from icefloe.expressions.base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    Or,
)
from icefloe.expressions.binding import bind
from icefloe.expressions.projection import project, project_predicate
from icefloe.expressions.serde import to_dict
from icefloe.partitioning import PartitionSpec
from icefloe.scan.cache import ManifestCache
from icefloe.schema import Schema
from icefloe.types import StructType

__all__ = ["Plan", "PlannedBatch", "SpecFilters", "plan"]

#: Content codes of manifests and manifest entries.
DATA, POSITION_DELETES, EQUALITY_DELETES = 0, 1, 2
#: Data manifests decoded per round (bounds the memory of decoded but not yet pruned entries).
_CHUNK = 16
#: Chunks of data manifests decoding at once, ahead of the one being planned.
_AHEAD = 2
#: Field id of the ``file_path`` column of position delete files (its bounds name data files).
DELETE_FILE_PATH_ID = 2**31 - 1 - 101

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


def _json(expr: BooleanExpression) -> str:
    return json.dumps(to_dict(expr))


def _bool_mask(arr: Any) -> pa.BooleanArray:
    return arr if isinstance(arr, pa.BooleanArray) else pa.array(arr)


def _predicates(expr: BooleanExpression, out: list[BoundPredicate]) -> None:
    if isinstance(expr, And | Or):
        _predicates(expr.left, out)
        _predicates(expr.right, out)
    elif isinstance(expr, BoundPredicate) and expr not in out:
        out.append(expr)


class SpecFilters:
    """The filter's forms for one partition spec: the inclusive partition projection (for
    manifest summaries and partition tuples) and the per-predicate strict/inclusive checks that
    give each file's residual."""

    def __init__(self, schema: Schema, spec: PartitionSpec, bound_filter: BooleanExpression):
        self.spec = spec
        self.bound_filter = bound_filter
        self.partition_type: StructType | None
        try:
            self.partition_type = spec.partition_type(schema)
        except IcebergError:
            # a source column of this (old) spec is gone from the schema: no partition pruning
            self.partition_type = None
        self.field_ids = [f.field_id for f in spec.fields]
        self.partition_filter: BooleanExpression = AlwaysTrue()
        self.partition_json: str | None = None
        self._checks: list[list[tuple[str | None, str | None]]] = []
        self._preds: list[BoundPredicate] = []
        if self.partition_type is None or not spec.fields:
            return
        projected = project(bound_filter, spec, strict=False)
        self.partition_filter = bind(self.partition_type, projected, case_sensitive=True)
        if not isinstance(self.partition_filter, AlwaysTrue):
            self.partition_json = _json(self.partition_filter)
        preds: list[BoundPredicate] = []
        _predicates(bound_filter, preds)
        for p in preds:
            checks: list[tuple[str | None, str | None]] = []
            for f in spec.fields:
                if f.source_id != p.ref.field_id or getattr(f, "source_ids", None):
                    continue
                strict = project_predicate(f.transform, f.name, p, strict=True)
                incl = project_predicate(f.transform, f.name, p, strict=False)
                checks.append(
                    (
                        None
                        if strict is None
                        else _json(bind(self.partition_type, strict, case_sensitive=True)),
                        None
                        if incl is None
                        else _json(bind(self.partition_type, incl, case_sensitive=True)),
                    )
                )
            if checks:
                self._preds.append(p)
                self._checks.append(checks)

    @property
    def prunes(self) -> bool:
        """Whether the partition filter can exclude anything."""
        return self.partition_json is not None

    def manifest_mask(self, summaries: pa.Array) -> pa.BooleanArray:
        """Which manifests (their ``partitions`` summaries) may hold a matching file."""
        assert self.partition_json is not None
        return _bool_mask(
            _native.expr_manifest_mask(summaries, self.partition_json, self.field_ids)
        )

    def partition_mask(self, partition: pa.Array) -> pa.BooleanArray:
        """Which partition tuples satisfy the projected filter."""
        assert self.partition_json is not None
        return _bool_mask(_native.expr_partition_mask(partition, self.partition_json))

    def residuals(
        self, partition: pa.Array, cache: dict[tuple[int, ...], BooleanExpression]
    ) -> tuple[np.ndarray, list[BooleanExpression]]:
        """Per row, an index into the returned residual expressions (shared across rows with
        the same outcome of every predicate's strict and inclusive projections)."""
        n = len(partition)
        if not self._preds or n == 0:
            return np.zeros(n, dtype=np.int32), [self.bound_filter]
        # state per predicate: 0 keep, 1 decided true, 2 decided false
        states = np.zeros((n, len(self._preds)), dtype=np.int8)
        for i, checks in enumerate(self._checks):
            undecided = np.ones(n, dtype=bool)
            for strict, incl in checks:
                if strict is not None:
                    m = _mask_np(_native.expr_partition_mask(partition, strict)) & undecided
                    states[m, i] = 1
                    undecided &= ~m
                if incl is not None:
                    m = ~_mask_np(_native.expr_partition_mask(partition, incl)) & undecided
                    states[m, i] = 2
                    undecided &= ~m
        uniq, inverse = np.unique(states, axis=0, return_inverse=True)
        exprs = []
        for row in uniq:
            key = tuple(int(x) for x in row)
            e = cache.get(key)
            if e is None:
                subst = {
                    p: (AlwaysTrue() if s == 1 else AlwaysFalse())
                    for p, s in zip(self._preds, key, strict=True)
                    if s
                }
                e = _substitute(self.bound_filter, subst)
                cache[key] = e
            exprs.append(e)
        return inverse.reshape(-1).astype(np.int32), exprs


def _field_ids(expr: BooleanExpression) -> list[int]:
    """The sorted field ids the predicates of a bound filter reference."""
    preds: list[BoundPredicate] = []
    _predicates(expr, preds)
    return sorted({p.ref.field_id for p in preds})


def _mask_np(arr: Any) -> np.ndarray:
    a = _bool_mask(arr)
    out: np.ndarray = a.to_numpy(zero_copy_only=False)
    return out


def _substitute(
    e: BooleanExpression, subst: Mapping[BoundPredicate, BooleanExpression]
) -> BooleanExpression:
    if isinstance(e, And):
        return And(_substitute(e.left, subst), _substitute(e.right, subst))
    if isinstance(e, Or):
        return Or(_substitute(e.left, subst), _substitute(e.right, subst))
    if isinstance(e, BoundPredicate):
        return subst.get(e, e)
    return e


@dataclass
class PlannedBatch:
    """The kept entries of one data manifest: columns of :data:`DATA_COLUMNS`, the manifest's
    spec id, per-row residual indices into :attr:`Plan.residuals`."""

    spec_id: int
    entries: pa.RecordBatch
    residual_index: np.ndarray


@dataclass
class Plan:
    """A planned scan, columnar: the kept data entries per manifest (with residual indices),
    the kept live delete files per delete manifest (``(spec_id, batch)``), and ``assignment``:
    for each data entry, in batch order, the indices of its delete files in the concatenation
    of ``deletes``."""

    batches: list[PlannedBatch] = field(default_factory=list)
    residuals: list[BooleanExpression] = field(default_factory=list)
    deletes: list[tuple[int, pa.RecordBatch]] = field(default_factory=list)
    assignment: pa.ListArray | None = None

    @property
    def num_files(self) -> int:
        """The number of data files planned."""
        return sum(b.entries.num_rows for b in self.batches)


Reader = Callable[[str], bytes]


#: Manifest reads started ahead of their decode, by path.
Pending = dict[str, "Future[bytes]"]


def _read_all(read: Reader, paths: Sequence[str], pending: Pending | None = None) -> list[bytes]:
    def started(p: str) -> Future[bytes]:
        # pop with a default: two chunks decode at once (a path listed twice is read twice)
        f: Future[bytes] | None = pending.pop(p, None) if pending is not None else None
        return f if f is not None else io_executor().submit(read, p)

    futures = [started(p) for p in paths]
    return [f.result() for f in futures]


def _keys(manifests: pa.RecordBatch, tag: str) -> tuple[list[str], list[str]]:
    """Manifest paths and their cache keys (path, inherited values, projection)."""
    paths = manifests.column("manifest_path").to_pylist()
    snap = manifests.column("added_snapshot_id").to_pylist()
    seq = manifests.column("sequence_number").to_pylist()
    first = manifests.column("first_row_id").to_pylist()
    keys = [f"{p}|{a}|{b}|{c}|{tag}" for p, a, b, c in zip(paths, snap, seq, first, strict=True)]
    return paths, keys


def _prefetch(
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


def _decode(
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
        data = _read_all(read, [paths[i] for i in todo], pending)
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


def _decode_kept(
    read: Reader,
    manifests: pa.RecordBatch,
    spec_ids: Sequence[int],
    spec_filters: Callable[[int], SpecFilters],
    metrics_json: str | None,
    metric_ids: Sequence[int] | None,
    threads: int | None,
    cache: ManifestCache | None,
    pending: Pending | None = None,
) -> list[pa.RecordBatch]:
    """The kept entries (columns :data:`DATA_COLUMNS`) of each data manifest of
    ``manifests``, as :func:`_decode` then :func:`_kept` would give them, but a manifest is
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
    if hits:
        kept = _native.plan_keep_decoded(
            bases,
            extras,
            [index[spec_ids[i]] for i in hits],
            partition_filters,
            metrics_json,
            list(DATA_COLUMNS),
            threads,
        )
        for i, b in zip(hits, kept, strict=True):
            out[i] = b
    if todo:
        data = _read_all(read, [paths[i] for i in todo], pending)
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
            list(DATA_COLUMNS),
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


def _kept(
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


def _path_bound(col: pa.Array) -> pa.Array:
    """Per row, the ``file_path`` bound (binary, nullable) out of a bounds map column."""
    n = len(col)
    if not isinstance(col, pa.MapArray) or n == 0:
        return pa.nulls(n, pa.binary())
    offsets = col.offsets.to_numpy(zero_copy_only=False)
    keys = col.keys.to_numpy(zero_copy_only=False)
    hit = np.flatnonzero(keys == DELETE_FILE_PATH_ID)
    hit = hit[(hit >= offsets[0]) & (hit < offsets[-1])]
    pick = np.full(n, -1, dtype=np.int64)
    if len(hit):
        pick[np.searchsorted(offsets, hit, side="right") - 1] = hit
    out: pa.Array = col.items.take(pa.array(pick, mask=pick < 0)).cast(pa.binary())
    return out


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


def plan(
    *,
    manifest_list: pa.RecordBatch,
    read: Reader,
    schema: Schema,
    specs: Mapping[int, PartitionSpec],
    bound_filter: BooleanExpression,
    threads: int | None = None,
    cache: ManifestCache | None = None,
    prune_deletes_by_metrics: bool = True,
    limit: int | None = None,
    on_batch: Callable[[PlannedBatch, Sequence[BooleanExpression]], None] | None = None,
) -> Plan:
    """Plans the scan of the manifests of ``manifest_list`` for ``bound_filter`` (bound to
    ``schema``, ``Not`` rewritten); ``read`` returns a file's bytes.

    Delete files are pruned by partition and, with ``prune_deletes_by_metrics``, by their own
    metrics: right for reads that keep only rows matching the filter, wrong for callers that
    read every row of a planned file (copy-on-write rewrites), which must pass False.

    When there are no delete files, ``on_batch`` (if given) is called with each planned batch
    and the residuals so far (its ``residual_index`` points into them) as soon as the batch is
    planned, while the next manifests decode in the background: callers build tasks from it
    instead of waiting for the whole plan. The plan's final checks (duplicate paths) still run
    at the end and may raise after calls to ``on_batch``."""
    filters: dict[int, SpecFilters] = {}

    def spec_filters(spec_id: int) -> SpecFilters:
        f = filters.get(spec_id)
        if f is None:
            spec = specs.get(spec_id)
            if spec is None:
                raise ValidationError(f"manifest written with unknown partition spec id {spec_id}")
            f = filters[spec_id] = SpecFilters(schema, spec, bound_filter)
        return f

    if isinstance(bound_filter, AlwaysFalse):
        return Plan()
    metrics_json = None if isinstance(bound_filter, AlwaysTrue) else _json(bound_filter)

    # 1. manifest list pruning, per spec id
    spec_col = manifest_list.column("partition_spec_id")
    keep = np.ones(manifest_list.num_rows, dtype=bool)
    spec_ids = spec_col.to_numpy(zero_copy_only=False)
    for sid in np.unique(spec_ids):
        f = spec_filters(int(sid))
        if not f.prunes:
            continue
        rows = np.flatnonzero(spec_ids == sid)
        summaries = manifest_list.column("partitions").take(pa.array(rows))
        keep[rows] = _mask_np(f.manifest_mask(summaries))
    content = manifest_list.column("content").to_numpy(zero_copy_only=False)
    # manifests with no live entries hold nothing to plan
    live = (
        pc.fill_null(manifest_list.column("added_files_count"), 1).to_numpy(zero_copy_only=False)
        + pc.fill_null(manifest_list.column("existing_files_count"), 1).to_numpy(
            zero_copy_only=False
        )
    ) > 0
    keep &= live
    data_rows = np.flatnonzero(keep & (content == DATA))
    delete_rows = np.flatnonzero(keep & (content != DATA))
    data_manifests = manifest_list.take(pa.array(data_rows, type=pa.int64()))
    if len(delete_rows):
        min_seq = pc.min(pc.fill_null(data_manifests.column("min_sequence_number"), 0)).as_py()
        if min_seq is not None:
            seqs = manifest_list.column("sequence_number").to_numpy(zero_copy_only=False)
            delete_rows = delete_rows[seqs[delete_rows] >= min_seq]
        else:
            delete_rows = delete_rows[:0]
    delete_manifests = manifest_list.take(pa.array(delete_rows, type=pa.int64()))

    result = Plan()
    # 2. delete files
    delete_specs = delete_manifests.column("partition_spec_id").to_pylist()
    delete_metrics = metrics_json if prune_deletes_by_metrics else None
    # delete files keep their whole bounds maps (the file_path bounds scope position deletes)
    decoded = _decode(
        read,
        delete_manifests,
        threads,
        cache,
        (*DELETE_COLUMNS[len(DATA_COLUMNS) :], *METRICS_COLUMNS),
    )
    kept_deletes = _kept(
        decoded, delete_specs, spec_filters, delete_metrics, threads, DELETE_COLUMNS
    )
    for sid, kept in zip(delete_specs, kept_deletes, strict=True):
        if kept.num_rows:
            result.deletes.append((sid, kept))

    # 3. data files
    data_specs = data_manifests.column("partition_spec_id").to_pylist()
    residual_ids: dict[BooleanExpression, int] = {}
    residual_cache: dict[int, dict[tuple[int, ...], BooleanExpression]] = {}
    # only the metrics maps a filter needs, trimmed to the fields it references
    metric_ids = _field_ids(bound_filter) if metrics_json is not None else None
    # a limit without delete files stops once files whose rows all match (residual true) hold
    # enough rows; such a plan skips the duplicate-path check of the manifests it never reads
    early = limit is not None and not result.deletes
    step = 2 if early else _CHUNK
    enough = 0
    # decoded in chunks, so only the kept columns and rows of earlier chunks stay in memory
    pending: Pending = {}
    stream = on_batch if not result.deletes else None

    def start(lo: int) -> Future[list[pa.RecordBatch]] | None:
        """Starts decoding the chunk at ``lo`` (reads of the chunk after it prefetched)."""
        if lo >= data_manifests.num_rows:
            return None
        if lo + step < data_manifests.num_rows:
            _prefetch(read, data_manifests.slice(lo + step, step), cache, pending, "")
        return decode_executor().submit(decode_and_keep, lo)

    def decode_and_keep(lo: int) -> list[pa.RecordBatch]:
        # decode and selection in one job on the rayon pool: a selection submitted from
        # another thread would queue behind a whole chunk's decode
        chunk = data_manifests.slice(lo, step)
        specs = data_specs[lo : lo + step]
        return _decode_kept(
            read, chunk, specs, spec_filters, metrics_json, metric_ids, threads, cache, pending
        )

    # chunks k + 1 and k + 2 decode and are pruned (GIL released, both on the rayon pool, so
    # one chunk's last manifests overlap the next chunk's first) while the residuals of chunk k
    # are computed and its batches handed to on_batch; decodes pop disjoint reads from
    # ``pending`` (SpecFilters of every spec exist since step 1). A limit decodes one chunk at
    # a time.
    depth = 1 if early else _AHEAD
    ahead = deque(f for f in (start(i * step) for i in range(depth)) if f is not None)
    for lo in range(0, data_manifests.num_rows, step):
        kept_data = ahead.popleft().result()
        if not early:
            nxt = start(lo + depth * step)
            if nxt is not None:
                ahead.append(nxt)
        for sid, kept in zip(data_specs[lo : lo + step], kept_data, strict=True):
            if not kept.num_rows:
                continue
            f = spec_filters(sid)
            local, exprs = f.residuals(kept.column("partition"), residual_cache.setdefault(sid, {}))
            remap = np.array(
                [residual_ids.setdefault(e, len(residual_ids)) for e in exprs], dtype=np.int32
            )
            pb = PlannedBatch(sid, kept, remap[local])
            result.batches.append(pb)
            if stream is not None:
                stream(pb, list(residual_ids))
            if early:
                enough += _rows_fully_matching(pb, exprs, local)
        if early and limit is not None and enough >= limit:
            break
        if early:
            nxt = start(lo + step)
            if nxt is not None:
                ahead.append(nxt)
    result.residuals = list(residual_ids)

    # 4. delete matching (Rust) and the duplicate-path check
    _match(result, specs)
    return result


def _rows_fully_matching(
    pb: PlannedBatch, exprs: Sequence[BooleanExpression], local: np.ndarray
) -> int:
    """The rows of the batch's files whose residual is ``true`` (every row matches); unknown or
    negative record counts count as none."""
    true_ids = [i for i, e in enumerate(exprs) if isinstance(e, AlwaysTrue)]
    if not true_ids:
        return 0
    counts = pc.fill_null(pb.entries.column("record_count"), 0).to_numpy(zero_copy_only=False)
    rows = np.isin(local, true_ids)
    return int(np.clip(counts[rows], 0, None).sum())


def _keys_with_spec(
    batches: Sequence[tuple[int, pa.RecordBatch]], with_keys: bool = True
) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    """File paths, sequence numbers, spec ids and partition keys (nulls unless ``with_keys``:
    matching needs them only when there are delete files)."""
    paths, seqs, sids, keys = [], [], [], []
    for sid, b in batches:
        paths.append(b.column("file_path"))
        seqs.append(pc.fill_null(b.column("sequence_number"), 0))
        sids.append(pa.array(np.full(b.num_rows, sid, dtype=np.int32)))
        keys.append(
            _native.plan_partition_keys(b.column("partition"))
            if with_keys
            else pa.nulls(b.num_rows, pa.binary())
        )
    return (
        pa.concat_arrays(paths) if paths else pa.array([], pa.string()),
        pa.concat_arrays(seqs) if seqs else pa.array([], pa.int64()),
        pa.concat_arrays(sids) if sids else pa.array([], pa.int32()),
        pa.concat_arrays([pa.array(k) for k in keys]) if keys else pa.array([], pa.binary()),
    )


def _match(result: Plan, specs: Mapping[int, PartitionSpec]) -> None:
    data = [(b.spec_id, b.entries) for b in result.batches]
    if not data:
        return
    dels = result.deletes
    if not dels:
        # only the duplicate-path check: in place over the batches' path columns (concatenating
        # a million paths first cost more than the check), and every data file gets no deletes
        _native.plan_check_unique_paths([b.column("file_path") for _, b in data])
        n = sum(b.num_rows for _, b in data)
        result.assignment = pa.ListArray.from_arrays(
            pa.array(np.zeros(n + 1, dtype=np.int32)), pa.array([], pa.int32())
        )
        return
    path, seq, sid, key = _keys_with_spec(data, with_keys=True)
    data_struct = pa.StructArray.from_arrays(
        [path, seq, sid, key], names=["file_path", "sequence_number", "spec_id", "partition_key"]
    )
    dpath, dseq, dsid, dkey = _keys_with_spec(dels)
    content = pa.concat_arrays([b.column("content") for _, b in dels])
    fmt = pa.concat_arrays([b.column("file_format") for _, b in dels])
    is_dv = pc.and_(pc.equal(content, POSITION_DELETES), pc.equal(pc.utf8_lower(fmt), "puffin"))
    unpart = pa.concat_arrays(
        [pa.array(np.full(b.num_rows, specs[s].is_unpartitioned, dtype=bool)) for s, b in dels]
    )
    ref = pa.concat_arrays(
        [
            b.column("referenced_data_file")
            if "referenced_data_file" in b.schema.names
            else pa.nulls(b.num_rows, pa.string())
            for _, b in dels
        ]
    )
    lower = pa.concat_arrays([_bound(b, "lower_bounds") for _, b in dels])
    upper = pa.concat_arrays([_bound(b, "upper_bounds") for _, b in dels])
    delete_struct = pa.StructArray.from_arrays(
        [content, dpath, dseq, dsid, dkey, unpart, is_dv, ref, lower, upper],
        names=[
            "content",
            "file_path",
            "sequence_number",
            "spec_id",
            "partition_key",
            "unpartitioned",
            "is_dv",
            "referenced_data_file",
            "path_lower",
            "path_upper",
        ],
    )
    result.assignment = pa.array(_native.plan_match_deletes(data_struct, delete_struct))


def _bound(batch: pa.RecordBatch, name: str) -> pa.Array:
    if name not in batch.schema.names:
        return pa.nulls(batch.num_rows, pa.binary())
    return _path_bound(batch.column(name))
