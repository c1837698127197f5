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

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe import _native
from icefloe._concurrency import decode_executor
from icefloe.exceptions import ValidationError
from icefloe.expressions.base import AlwaysFalse, AlwaysTrue, BooleanExpression
from icefloe.partitioning import PartitionSpec
from icefloe.scan.cache import ManifestCache
from icefloe.scan.filters import SpecFilters, bool_numpy, expr_json, referenced_field_ids
from icefloe.scan.manifests import (
    DATA_COLUMNS,
    DELETE_COLUMNS,
    METRICS_COLUMNS,
    Pending,
    Reader,
    decode,
    decode_kept,
    keep_entries,
    prefetch,
)
from icefloe.scan.metrics import ScanMetrics, live_files
from icefloe.scan.tasks import DELETE_FILE_PATH_ID
from icefloe.schema import Schema

__all__ = ["Plan", "PlannedBatch", "SpecFilters", "plan"]

#: Content codes of manifests and manifest entries.
DATA, POSITION_DELETES, EQUALITY_DELETES = 0, 1, 2
#: Data manifests decoded per round (bounds the memory of decoded but not yet pruned entries).
_CHUNK = 16
#: Chunks of data manifests decoding at once, ahead of the one being planned.
_AHEAD = 2


@dataclass
class PlannedBatch:
    """The kept entries of one data manifest: columns of :data:`DATA_COLUMNS` (and of
    :data:`METRICS_COLUMNS` when planned with ``keep_metrics``), the manifest's spec id, per-row
    residual indices into :attr:`Plan.residuals`."""

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
    metrics: ScanMetrics = field(default_factory=ScanMetrics)

    @property
    def num_files(self) -> int:
        """The number of data files planned."""
        return sum(b.entries.num_rows for b in self.batches)


def _has_files(counts: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Per manifest: its file count is missing or above zero (Java's ``count == null ||
    count > 0``)."""
    return bool_numpy(pc.fill_null(pc.greater(counts, 0), True))


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
    select_entries: Callable[[str, pa.RecordBatch], pa.RecordBatch] | None = None,
    unique_paths: bool = True,
    keep_metrics: bool = False,
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
    at the end and may raise after calls to ``on_batch``.

    ``select_entries`` (if given) narrows each data manifest's kept entries further: it is
    called with the manifest's path and its kept entries and returns the entries to plan
    (incremental scans keep only the files the chosen snapshots added). ``unique_paths=False``
    drops the check that no data file is listed twice (one snapshot's live files are unique;
    the files several snapshots added need not be: a file added, removed and added again).
    ``keep_metrics`` keeps the column metrics of the fields the filter references in the
    planned entries (for proofs that every row of a file matches, see
    :func:`icefloe.table.row_delta.plan_candidates`)."""
    filters: dict[int, SpecFilters] = {}

    def spec_filters(spec_id: int) -> SpecFilters:
        f = filters.get(spec_id)
        if f is None:
            spec = specs.get(spec_id)
            if spec is None:
                raise ValidationError(f"manifest written with unknown partition spec id {spec_id}")
            f = filters[spec_id] = SpecFilters(schema, spec, bound_filter)
        return f

    content = manifest_list.column("content").to_numpy(zero_copy_only=False)
    counts = ScanMetrics(
        total_data_manifests=int((content == DATA).sum()),
        total_delete_manifests=int((content != DATA).sum()),
    )
    if isinstance(bound_filter, AlwaysFalse):
        return Plan(metrics=counts)
    metrics_json = None if isinstance(bound_filter, AlwaysTrue) else expr_json(bound_filter)

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
        keep[rows] = bool_numpy(f.manifest_mask(summaries))
    # manifests with no live entries hold nothing to plan. As Java's hasAddedFiles() ||
    # hasExistingFiles(): each count is tested alone (a missing one keeps the manifest), never
    # summed, since two int32 counts can overflow their sum
    keep &= _has_files(manifest_list.column("added_files_count")) | _has_files(
        manifest_list.column("existing_files_count")
    )
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

    counts.scanned_delete_manifests = delete_manifests.num_rows
    counts.live_delete_files = live_files(delete_manifests)
    result = Plan(metrics=counts)
    # 2. delete files
    delete_specs = delete_manifests.column("partition_spec_id").to_pylist()
    delete_metrics = metrics_json if prune_deletes_by_metrics else None
    # delete files keep their whole bounds maps (the file_path bounds scope position deletes)
    decoded = decode(
        read,
        delete_manifests,
        threads,
        cache,
        (*DELETE_COLUMNS[len(DATA_COLUMNS) :], *METRICS_COLUMNS),
    )
    kept_deletes = keep_entries(
        decoded, delete_specs, spec_filters, delete_metrics, threads, DELETE_COLUMNS
    )
    for sid, kept in zip(delete_specs, kept_deletes, strict=True):
        if kept.num_rows:
            result.deletes.append((sid, kept))

    # 3. data files
    data_specs = data_manifests.column("partition_spec_id").to_pylist()
    manifest_paths = data_manifests.column("manifest_path").to_pylist() if select_entries else []
    residual_ids: dict[BooleanExpression, int] = {}
    residual_cache: dict[int, dict[tuple[int, ...], BooleanExpression]] = {}
    # only the metrics maps a filter needs, trimmed to the fields it references
    metric_ids = referenced_field_ids(bound_filter) if metrics_json is not None else None
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
            prefetch(read, data_manifests.slice(lo + step, step), cache, pending, "")
        return decode_executor().submit(decode_and_keep, lo)

    def decode_and_keep(lo: int) -> list[pa.RecordBatch]:
        # decode and selection in one job on the rayon pool: a selection submitted from
        # another thread would queue behind a whole chunk's decode
        chunk = data_manifests.slice(lo, step)
        specs = data_specs[lo : lo + step]
        return decode_kept(
            read,
            chunk,
            specs,
            spec_filters,
            metrics_json,
            metric_ids,
            threads,
            cache,
            pending,
            with_metrics=keep_metrics,
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
        counts.add_scanned_data(data_manifests.slice(lo, step))
        if not early:
            nxt = start(lo + depth * step)
            if nxt is not None:
                ahead.append(nxt)
        for i, (sid, kept) in enumerate(zip(data_specs[lo : lo + step], kept_data, strict=True)):
            if select_entries is not None and kept.num_rows:
                kept = select_entries(manifest_paths[lo + i], kept)
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
    _match(result, specs, unique_paths)
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


def _match(result: Plan, specs: Mapping[int, PartitionSpec], unique_paths: bool = True) -> None:
    data = [(b.spec_id, b.entries) for b in result.batches]
    if not data:
        return
    dels = result.deletes
    if not dels:
        # only the duplicate-path check: in place over the batches' path columns (concatenating
        # a million paths first cost more than the check), and every data file gets no deletes
        if unique_paths:
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
    lower = pa.concat_arrays([path_bound(b, "lower_bounds") for _, b in dels])
    upper = pa.concat_arrays([path_bound(b, "upper_bounds") for _, b in dels])
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


def path_bound(batch: pa.RecordBatch, name: str) -> pa.Array:
    """A position delete file's ``file_path`` bound per entry of ``batch`` (``lower_bounds`` or
    ``upper_bounds``; binary, null where absent)."""
    if name not in batch.schema.names:
        return pa.nulls(batch.num_rows, pa.binary())
    return _path_bound(batch.column(name))
