"""The numbers behind the pictures, shared by the terminal commands and the HTML report:
the snapshot timeline, file-size histograms and partition skew. Pure data, no drawing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import NoSuchSnapshotError
from icefloe.metadata import MAIN_BRANCH
from icefloe.metadata.snapshots import SummaryKeys

__all__ = [
    "FileStats",
    "PartitionRow",
    "PartitionStats",
    "SnapshotPoint",
    "Timeline",
    "axis_positions",
    "bracketed",
    "check_snapshot",
    "file_stats",
    "missing_statistics_files",
    "partition_labeller",
    "partition_stats",
    "small_file_threshold",
    "timeline",
]

#: A data file is small below this share of ``write.target-file-size-bytes``, the rule
#: ``rewrite_data_files`` uses to pick files to compact.
SMALL_FILE_SHARE = 0.75
#: A partition is called out as skewed when it holds this many times the median's rows (of
#: two partitions: the other one's, so from 80% of the rows).
SKEW_RATIO = 4.0
#: The label of the partition of files written unpartitioned.
UNPARTITIONED = "(unpartitioned)"
#: Upper edges of the file-size histogram buckets (powers of four from 4 KiB to 1 GiB).
SIZE_EDGES: tuple[int, ...] = tuple(4**k * 1024 for k in range(1, 11))


def check_snapshot(table: Any, snapshot_id: int | None) -> None:
    """Raise :class:`NoSuchSnapshotError` unless ``snapshot_id`` is None or a kept snapshot."""
    if snapshot_id is not None and table.metadata.snapshot_by_id(snapshot_id) is None:
        raise NoSuchSnapshotError(f"table {table.name} has no snapshot {snapshot_id}")


def _int(summary: Any, key: str) -> int | None:
    return summary.get_int(key) if summary is not None else None


#: Summary keys that count what a snapshot changed. Writers (Iceberg Java's included) leave out
#: the counts that are zero, so a summary with any of them has zeros for the others; one with
#: none (only ``operation``, or no summary: v1 writers) does not say what changed.
_COUNT_KEYS = frozenset(
    {k for keys in SummaryKeys.TOTALS for k in keys}
    | {
        SummaryKeys.ADDED_EQUALITY_DELETE_FILES,
        SummaryKeys.REMOVED_EQUALITY_DELETE_FILES,
        SummaryKeys.ADDED_POSITION_DELETE_FILES,
        SummaryKeys.REMOVED_POSITION_DELETE_FILES,
        SummaryKeys.ADDED_DVS,
        SummaryKeys.REMOVED_DVS,
        SummaryKeys.DELETED_DUPLICATE_FILES,
        SummaryKeys.CHANGED_PARTITION_COUNT,
        SummaryKeys.MANIFESTS_CREATED,
        SummaryKeys.MANIFESTS_KEPT,
        SummaryKeys.MANIFESTS_REPLACED,
        SummaryKeys.ENTRIES_PROCESSED,
    }
)


def _change(summary: Any, key: str) -> int | None:
    """A count of what the snapshot changed: 0 when the summary counts but leaves it out, None
    when the summary counts nothing."""
    if summary is None or _COUNT_KEYS.isdisjoint(summary.properties):
        return None
    return summary.get_int(key) or 0


@dataclass(frozen=True)
class SnapshotPoint:
    """One snapshot on the timeline."""

    snapshot_id: int
    parent_id: int | None
    timestamp_ms: int
    operation: str
    sequence_number: int
    lane: str
    added_records: int | None  # None: the summary does not say (so for the other counts)
    deleted_records: int | None
    total_records: int | None
    total_size: int | None
    added_size: int | None
    removed_size: int | None
    equality_delete_keys: int = 0  # keys of added equality deletes: not rows

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Timeline:
    """Snapshots oldest first, each on one lane (``main``, a branch, or ``unreferenced``);
    ``lanes`` in drawing order; ``tags`` maps a tag to its snapshot; ``heads`` maps each
    branch to its head snapshot."""

    points: tuple[SnapshotPoint, ...]
    lanes: tuple[str, ...]
    heads: dict[str, int]
    tags: dict[str, int]

    @property
    def bare_heads(self) -> dict[str, int]:
        """The branches with no snapshot of their own (their head is on another lane, as a
        branch made at a snapshot of main and not committed to since), each to its head."""
        return {n: sid for n, sid in sorted(self.heads.items()) if n not in self.lanes}

    @property
    def start_ms(self) -> int:
        return self.points[0].timestamp_ms if self.points else 0

    @property
    def end_ms(self) -> int:
        return self.points[-1].timestamp_ms if self.points else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "lanes": list(self.lanes),
            "branches": dict(self.heads),
            "tags": dict(self.tags),
            "snapshots": [p.to_json() for p in self.points],
        }


def _deleted_rows(summary: Any) -> int | None:
    """Rows a snapshot deletes: those of removed data files and the net new positions of
    position deletes (a rewritten deletion vector removes its old positions and adds them
    again). Equality deletes hold keys, not rows: they are counted apart."""
    deleted = _change(summary, "deleted-records")
    if deleted is None:
        return None
    added = _int(summary, "added-position-deletes") or 0
    removed = _int(summary, "removed-position-deletes") or 0
    return deleted + max(0, added - removed)


def timeline(meta: Any) -> Timeline:
    """The table's snapshots as a timeline: a snapshot goes on ``main`` when main reaches it,
    else on the first branch (by name) that reaches it, else on the lane of the first tag
    (by name) that reaches it, else on ``unreferenced``."""
    heads = {n: r.snapshot_id for n, r in meta.refs.items() if r.is_branch}
    tags = {n: r.snapshot_id for n, r in sorted(meta.refs.items()) if not r.is_branch}
    order = [MAIN_BRANCH] if MAIN_BRANCH in heads else []
    order += sorted(n for n in heads if n != MAIN_BRANCH)
    lane_of: dict[int, str] = {}
    for name in order:
        for s in meta.ancestors_of(heads[name]):
            lane_of.setdefault(s.snapshot_id, name)
    for name, sid in tags.items():  # a tag off every branch (kept past a rollback) has a lane
        if sid not in lane_of and meta.ancestors_of(sid):
            order.append(name)
            for s in meta.ancestors_of(sid):
                lane_of.setdefault(s.snapshot_id, name)
    points = []
    for s in sorted(meta.snapshots, key=lambda s: (s.timestamp_ms, s.sequence_number)):
        summary = s.summary
        points.append(
            SnapshotPoint(
                snapshot_id=s.snapshot_id,
                parent_id=s.parent_snapshot_id,
                timestamp_ms=s.timestamp_ms,
                operation=s.operation or "unknown",
                sequence_number=s.sequence_number,
                lane=lane_of.get(s.snapshot_id, "unreferenced"),
                added_records=_change(summary, "added-records"),
                deleted_records=_deleted_rows(summary),
                equality_delete_keys=_int(summary, "added-equality-deletes") or 0,
                total_records=_int(summary, "total-records"),
                total_size=_int(summary, "total-files-size"),
                added_size=_change(summary, "added-files-size"),
                removed_size=_change(summary, "removed-files-size"),
            )
        )
    used = [n for n in order if any(p.lane == n for p in points)]
    if any(p.lane == "unreferenced" for p in points):
        used.append("unreferenced")
    return Timeline(tuple(points), tuple(used), heads, tags)


def axis_positions(points: tuple[SnapshotPoint, ...], width: int) -> list[int]:
    """Axis column of each point: proportional to time, at least two columns apart; evenly
    spaced when that does not fit."""
    n = len(points)
    if n == 1:
        return [0]
    start, end = points[0].timestamp_ms, points[-1].timestamp_ms
    span = max(end - start, 1)
    cols: list[int] = []
    for p in points:
        x = round((p.timestamp_ms - start) / span * (width - 1))
        if cols and x < cols[-1] + 2:
            x = cols[-1] + 2
        cols.append(x)
    if cols[-1] > width - 1:
        step = (width - 1) / (n - 1)
        cols = [round(i * step) for i in range(n)]
    return cols


def small_file_threshold(properties: dict[str, str], target: int | None = None) -> int:
    """The size under which a data file counts as small (3/4 of the target file size)."""
    from icefloe.write.properties import target_file_size

    return int((target or target_file_size(properties)) * SMALL_FILE_SHARE)


def _file_keys(files: pa.Table) -> pa.ChunkedArray:
    """``path@offset`` per file row: DVs share one Puffin file and differ by offset."""
    if "content_offset" in files.column_names:
        offset = pc.fill_null(pc.cast(files.column("content_offset"), pa.string()), "")
    else:
        offset = pa.array([""] * files.num_rows, pa.string())
    return pc.binary_join_element_wise(files.column("file_path"), offset, "@")


@dataclass(frozen=True)
class FileStats:
    """The live files of a snapshot and their size distribution."""

    files: pa.Table
    data_sizes: pa.Array  # int64, one per data file
    histogram: list[tuple[int, int | None, int]]  # (lower bound, upper bound, count)
    small_threshold: int
    small_files: int
    delete_files: int
    delete_records: int  # rows deleted by position deletes and DVs
    data_records: int
    equality_delete_files: int = 0
    equality_delete_keys: int = 0  # keys, not rows: how many rows they match is unknown

    @property
    def data_files(self) -> int:
        return len(self.data_sizes)

    @property
    def total_data_size(self) -> int:
        return int(pc.sum(self.data_sizes).as_py() or 0)

    @property
    def small_share(self) -> float:
        return self.small_files / self.data_files if self.data_files else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "data_files": self.data_files,
            "delete_files": self.delete_files,
            "data_records": self.data_records,
            "delete_records": self.delete_records,
            "equality_delete_files": self.equality_delete_files,
            "equality_delete_keys": self.equality_delete_keys,
            "total_data_size": self.total_data_size,
            "small_file_threshold": self.small_threshold,
            "small_files": self.small_files,
            "small_file_share": round(self.small_share, 4),
            "histogram": [
                {"min_size": lo, "max_size": hi, "files": n} for lo, hi, n in self.histogram
            ],
        }


def _histogram(sizes: pa.Array) -> list[tuple[int, int | None, int]]:
    if len(sizes) == 0:
        return []
    counts = [0] * (len(SIZE_EDGES) + 1)
    for i, n in enumerate(_bucket_counts(sizes)):
        counts[i] = n
    lows = (0, *SIZE_EDGES)
    highs: tuple[int | None, ...] = (*SIZE_EDGES, None)
    nonzero = [i for i, n in enumerate(counts) if n]
    first, last = nonzero[0], nonzero[-1]
    return [(lows[i], highs[i], counts[i]) for i in range(first, last + 1)]


def _bucket_counts(sizes: pa.Array) -> list[int]:
    import numpy as np

    values = sizes.to_numpy(zero_copy_only=False).astype(np.int64)
    idx = np.searchsorted(np.array(SIZE_EDGES), values, side="right")
    return [int(n) for n in np.bincount(idx, minlength=len(SIZE_EDGES) + 1)]


def file_stats(
    table: Any,
    snapshot_id: int | None = None,
    row_filter: str | None = None,
    target_file_size: int | None = None,
) -> FileStats:
    """Live data and delete files of a snapshot (default: current), optionally only the data
    files a scan with ``row_filter`` would read and their delete files."""
    check_snapshot(table, snapshot_id)
    files = table.inspect.files(snapshot_id, with_readable_metrics=False)
    if row_filter:
        scan = table.scan(row_filter=row_filter, snapshot_id=snapshot_id)
        tasks = scan.plan_files()
        keep = {f"{t.data_file.file_path}@" for t in tasks}
        keep.update(
            f"{d.file_path}@{d.content_offset or ''}" for t in tasks for d in t.delete_files
        )
        files = files.filter(pc.is_in(_file_keys(files), pa.array(sorted(keep), pa.string())))
    if files.num_rows and "content" in files.column_names:
        content = files.column("content")
        data = files.filter(pc.equal(content, 0))
        deletes = files.filter(pc.not_equal(content, 0))
    else:
        data = deletes = files.slice(0, 0)
    sizes = (
        pc.cast(data.column("file_size_in_bytes").combine_chunks(), pa.int64())
        if data.num_rows
        else pa.array([], pa.int64())
    )
    threshold = small_file_threshold(table.properties, target_file_size)

    def total(t: pa.Table) -> int:
        return int(pc.sum(t.column("record_count")).as_py() or 0) if t.num_rows else 0

    equality = (
        deletes.filter(pc.equal(deletes.column("content"), 2)) if deletes.num_rows else deletes
    )
    return FileStats(
        files=files,
        data_sizes=sizes,
        histogram=_histogram(sizes),
        small_threshold=threshold,
        small_files=int(pc.sum(pc.less(sizes, threshold)).as_py() or 0),
        delete_files=deletes.num_rows,
        delete_records=total(deletes) - total(equality),
        data_records=total(data),
        equality_delete_files=equality.num_rows,
        equality_delete_keys=total(equality),
    )


@dataclass(frozen=True)
class PartitionRow:
    """One partition's totals."""

    label: str
    spec_id: int
    records: int
    files: int
    size: int
    delete_files: int
    delete_records: int  # rows deleted by position deletes and DVs
    equality_delete_files: int = 0
    equality_delete_keys: int = 0  # keys, not rows
    #: the partition's values by field name, as ``files --json`` gives them (None unpartitioned)
    partition: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class PartitionStats:
    """Per-partition totals, largest first, and the skew of rows across partitions."""

    rows: list[PartitionRow] = field(default_factory=list)

    @cached_property
    def median_records(self) -> float:
        values = sorted(r.records for r in self.rows)
        if not values:
            return 0.0
        mid = len(values) // 2
        return float(values[mid]) if len(values) % 2 else (values[mid - 1] + values[mid]) / 2

    @property
    def baseline_records(self) -> float:
        """The rows the largest partition is compared with: the median partition's, or of two
        partitions the other one's (their median is their mean, which the larger one never
        reaches twice, however lopsided they are)."""
        if len(self.rows) == 2:
            return float(self.rows[1].records)
        return self.median_records

    @property
    def baseline(self) -> str:
        """What :attr:`baseline_records` counts, in words."""
        return "the other partition" if len(self.rows) == 2 else "the median partition"

    @property
    def skew(self) -> float:
        """Rows of the largest partition over :attr:`baseline_records`."""
        if len(self.rows) < 2:
            return 1.0
        base = self.baseline_records
        return math.inf if base == 0 else self.rows[0].records / base

    @property
    def skewed(self) -> bool:
        return len(self.rows) >= 2 and self.skew >= SKEW_RATIO

    def to_json(self) -> dict[str, Any]:
        skew = self.skew
        return {
            "partitions": [r.to_json() for r in self.rows],
            "median_records": self.median_records,
            "skew": None if math.isinf(skew) else round(skew, 3),
            "skewed": self.skewed,
        }


def bracketed(label: str) -> str:
    """A partition label in brackets, as a sentence mentions it (``(region=eu)``); the
    unpartitioned one already has its own."""
    return label if label == UNPARTITIONED else f"({label})"


#: Words a string partition value is quoted as, so that it differs from what labels write
#: for no value.
_LABEL_WORDS = frozenset({"null"})
#: A string partition value quoted in a label: one that a label's separators (``, `` and
#: ``=``), a quote or a backslash, blanks at either end or control characters would make
#: ambiguous or unreadable.
_NEEDS_LABEL_QUOTES = re.compile(r'[,="\\\x00-\x1f\x7f-\x9f]|^\s|\s$')
_LABEL_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def label_value(value: str) -> str:
    """String partition value ``value`` as a label writes it: as is, or in double quotes
    when it is empty, a special word (``null``), or holds what would make the label ambiguous
    (``,``, ``=``, a quote, a backslash, blanks at either end, control characters); inside the
    quotes a quote and a backslash are escaped with a backslash, control characters written
    out (``\\n``, ``\\x1b``)."""
    if value and value not in _LABEL_WORDS and not _NEEDS_LABEL_QUOTES.search(value):
        return value

    def escaped(m: re.Match[str]) -> str:
        ch = m.group()
        return _LABEL_ESCAPES.get(ch) or f"\\x{ord(ch):02x}"

    return '"' + re.sub(r'["\\\x00-\x1f\x7f-\x9f]', escaped, value) + '"'


def partition_labeller(meta: Any) -> Callable[[dict[str, Any] | None, int | None], str]:
    """A function of (partition tuple from an inspect table, spec id) giving
    ``name=value, ...``, values as people read them (``d_month=2024-02`` rather than 649; a
    string value quoted where it could be misread, see :func:`label_value`: ``k="null"``,
    ``k="a, b=c"``). The tuple is the union of every spec's fields; with a spec id only that
    spec's fields are named (not its void ones)."""
    from icefloe.read.partition_statistics import unified_partition_type
    from icefloe.write.partition_names import human_partition_value

    ids = {f.name: f.field_id for f in unified_partition_type(meta).fields}
    fields = {pf.field_id: pf for spec in meta.partition_specs for pf in spec.fields}
    for spec in sorted(meta.partition_specs, key=lambda s: s.spec_id):
        for pf in spec.fields:
            if not pf.transform.is_void:
                fields[pf.field_id] = pf  # the newest real transform of the field

    def label(value: dict[str, Any] | None, spec_id: int | None = None) -> str:
        if not value:
            return UNPARTITIONED
        spec = meta.spec_by_id(spec_id) if spec_id is not None else None
        own = (
            None
            if spec is None
            else {pf.field_id for pf in spec.fields if not pf.transform.is_void}
        )
        parts = []
        for name, v in value.items():
            fid = ids.get(name)
            if own is not None and fid not in own:
                continue
            pf = fields.get(fid) if fid is not None else None
            if v is None:
                text = "null"
            elif isinstance(v, str):
                text = label_value(v)
            else:
                text = human_partition_value(pf, v) if pf else str(v)
            parts.append(f"{name}={text}")
        return ", ".join(parts) or UNPARTITIONED

    return label


def _distinct_labels(rows: list[PartitionRow]) -> list[PartitionRow]:
    """``rows`` with the spec named after the labels that several specs share (a field
    dropped from the spec and added again, say)."""
    specs: dict[str, set[int]] = {}
    for r in rows:
        specs.setdefault(r.label, set()).add(r.spec_id)
    return [
        replace(r, label=f"{r.label} (spec {r.spec_id})") if len(specs[r.label]) > 1 else r
        for r in rows
    ]


_PARTITION_COLUMNS = (
    "partition",
    "spec_id",
    "record_count",
    "file_count",
    "total_data_file_size_in_bytes",
    "position_delete_file_count",
    "position_delete_record_count",
    "equality_delete_file_count",
    "equality_delete_record_count",
)


def partition_stats(table: Any, snapshot_id: int | None = None) -> PartitionStats:
    """Rows, files, size and delete files per partition (from ``inspect.partitions()``)."""
    check_snapshot(table, snapshot_id)
    t = table.inspect.partitions(snapshot_id)
    if t.num_rows == 0:
        return PartitionStats([])
    # only the columns used: ``last_updated_at`` may hold a time no datetime can (a writer
    # that put microseconds in a snapshot's timestamp-ms)
    d = {name: t.column(name).to_pylist() for name in _PARTITION_COLUMNS if name in t.column_names}
    if "partition" not in d:  # an unpartitioned table: one row, no partition columns
        d["partition"] = [None] * t.num_rows
        d["spec_id"] = [table.metadata.default_spec_id] * t.num_rows
    label = partition_labeller(table.metadata)
    rows = [
        PartitionRow(
            label=label(d["partition"][i], d["spec_id"][i]),
            spec_id=d["spec_id"][i],
            records=d["record_count"][i] or 0,
            files=d["file_count"][i] or 0,
            size=d["total_data_file_size_in_bytes"][i] or 0,
            delete_files=(d["position_delete_file_count"][i] or 0)
            + (d["equality_delete_file_count"][i] or 0),
            delete_records=d["position_delete_record_count"][i] or 0,
            equality_delete_files=d["equality_delete_file_count"][i] or 0,
            equality_delete_keys=d["equality_delete_record_count"][i] or 0,
            partition=d["partition"][i] or None,
        )
        for i in range(t.num_rows)
    ]
    rows = _distinct_labels(rows)
    rows.sort(key=lambda r: (-r.records, r.label))
    return PartitionStats(rows)


def missing_statistics_files(table: Any, status: Any) -> list[tuple[str, str]]:
    """(kind, path) of the statistics files registered for the snapshots ``status`` names
    that storage does not hold (computing them again replaces the registration)."""
    from icefloe.table.partition_statistics import partition_statistics_file_for
    from icefloe.table.statistics import statistics_file_for

    meta, out = table.metadata, []
    files = [
        ("table", status.table_statistics_snapshot_id, statistics_file_for),
        ("partition", status.partition_statistics_snapshot_id, partition_statistics_file_for),
    ]
    for kind, sid, find in files:
        registered = find(meta, sid) if sid is not None else None
        if registered is not None and not table.io.exists(registered.statistics_path):
            out.append((kind, registered.statistics_path))
    return out
