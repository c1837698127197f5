"""What a scan plan did: the counters of Iceberg Java's ``ScanMetricsResult``.

The planner fills the manifest counts as it prunes (:func:`icefloe.scan.planner.plan`);
:func:`plan_result_counts` adds the counts of what the plan kept, from its columns (no loop
per file). Names are Java's (``result-data-files``, ``skipped-data-manifests``, ...), so a scan
report carries them unchanged.

Skipped files are the live entries (added + existing, from the manifest list) of the manifests
that were read, less the files kept; they are unknown (``None``) when a manifest list lacks
those counts (format v1 writers may omit them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.expressions.base import BooleanExpression

if TYPE_CHECKING:
    from icefloe.scan.planner import Plan

__all__ = ["ScanMetrics", "ScanReport", "live_files", "plan_result_counts"]

_POSITION_DELETES, _EQUALITY_DELETES = 1, 2


@dataclass
class ScanMetrics:
    """Counters of one planned scan (manifest counts filled by the planner)."""

    total_data_manifests: int = 0
    total_delete_manifests: int = 0
    scanned_data_manifests: int = 0
    scanned_delete_manifests: int = 0
    #: live entries of the data / delete manifests read (None: a count is missing)
    live_data_files: int | None = 0
    live_delete_files: int | None = 0

    def add_scanned_data(self, manifests: pa.RecordBatch) -> None:
        """Count ``manifests`` as read (data manifests)."""
        self.scanned_data_manifests += manifests.num_rows
        live = live_files(manifests)
        if live is None or self.live_data_files is None:
            self.live_data_files = None
        else:
            self.live_data_files += live

    @property
    def skipped_data_manifests(self) -> int:
        return self.total_data_manifests - self.scanned_data_manifests

    @property
    def skipped_delete_manifests(self) -> int:
        return self.total_delete_manifests - self.scanned_delete_manifests


def live_files(manifests: pa.RecordBatch) -> int | None:
    """Added plus existing files of ``manifests`` (None when a count is missing)."""
    if manifests.num_rows == 0:
        return 0
    added = manifests.column("added_files_count")
    existing = manifests.column("existing_files_count")
    if added.null_count or existing.null_count:
        return None
    return _sum(added) + _sum(existing)


def _sum(arr: pa.Array) -> int:
    """The sum of an integer array (nulls as 0)."""
    return (
        int(arr.to_numpy(zero_copy_only=False).sum())
        if arr.null_count == 0
        else _sum(pc.fill_null(arr, 0))
    )


def plan_result_counts(plan: Plan) -> dict[str, int]:
    """Java's ``ScanMetricsResult`` counters of ``plan`` (names as Java writes them).

    ``result-delete-files`` counts a delete file once per data file it applies to and
    ``total-delete-file-size-in-bytes`` sums those (a deletion vector by its blob's length),
    as Java counts per task; ``indexed-delete-files`` counts the delete files kept once each,
    split into ``positional-delete-files``, ``dvs`` and ``equality-delete-files``.
    """
    m = plan.metrics
    data_files = plan.num_files
    data_bytes = (
        _sum(pa.concat_arrays([b.entries.column("file_size_in_bytes") for b in plan.batches]))
        if plan.batches
        else 0
    )
    indexed = positional = dvs = equality = 0
    result_deletes = delete_bytes = 0
    if plan.deletes:
        content = pa.concat_arrays([b.column("content") for _, b in plan.deletes])
        fmt = pa.concat_arrays([b.column("file_format") for _, b in plan.deletes])
        is_dv = pc.and_(
            pc.equal(content, _POSITION_DELETES), pc.equal(pc.utf8_lower(fmt), "puffin")
        )
        codes = content.to_numpy(zero_copy_only=False)
        dv = pc.fill_null(is_dv, False).to_numpy(zero_copy_only=False)
        indexed = len(codes)
        dvs = int(dv.sum())
        positional = int(((codes == _POSITION_DELETES) & ~dv).sum())
        equality = int((codes == _EQUALITY_DELETES).sum())
        file_size = pa.concat_arrays([b.column("file_size_in_bytes") for _, b in plan.deletes])
        content_size = pa.concat_arrays(
            [
                b.column("content_size_in_bytes")
                if "content_size_in_bytes" in b.schema.names
                else pa.nulls(b.num_rows, pa.int64())
                for _, b in plan.deletes
            ]
        )
        # a deletion vector counts by its blob's length (its Puffin file may hold others)
        use_content = pc.fill_null(pc.and_(is_dv, pc.is_valid(content_size)), False)
        sizes = pc.if_else(use_content, content_size.cast(pa.int64()), file_size.cast(pa.int64()))
        if plan.assignment is not None:
            flat = pc.list_flatten(plan.assignment)
            result_deletes = len(flat)
            delete_bytes = _sum(pc.take(sizes, flat)) if result_deletes else 0
    out = {
        "result-data-files": data_files,
        "result-delete-files": result_deletes,
        "total-data-manifests": m.total_data_manifests,
        "total-delete-manifests": m.total_delete_manifests,
        "scanned-data-manifests": m.scanned_data_manifests,
        "skipped-data-manifests": m.skipped_data_manifests,
        "scanned-delete-manifests": m.scanned_delete_manifests,
        "skipped-delete-manifests": m.skipped_delete_manifests,
        "total-file-size-in-bytes": data_bytes,
        "total-delete-file-size-in-bytes": delete_bytes,
        "indexed-delete-files": indexed,
        "positional-delete-files": positional,
        "equality-delete-files": equality,
        "dvs": dvs,
    }
    if m.live_data_files is not None:
        out["skipped-data-files"] = max(0, m.live_data_files - data_files)
    if m.live_delete_files is not None:
        out["skipped-delete-files"] = max(0, m.live_delete_files - indexed)
    return out


@dataclass(frozen=True)
class ScanReport:
    """One planned scan, as a table hands it to its catalog (see
    :meth:`icefloe.catalog.Catalog.report_scan`): the snapshot and schema read, the bound
    filter, the projected columns, the planning time and :func:`plan_result_counts`."""

    snapshot_id: int
    schema_id: int
    filter: BooleanExpression
    projected_field_ids: tuple[int, ...]
    projected_field_names: tuple[str, ...]
    planning_duration_ns: int
    counters: dict[str, int]
