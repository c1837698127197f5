"""Commit metrics reports (``POST .../tables/{table}/metrics``, ``report-type: commit-report``).

After each commit that adds a snapshot the REST client reports the commit's duration, attempts
and the counts of its snapshot summary under the names of Iceberg Java's
``CommitMetricsResult``. ``rest-metrics-reporting-enabled=false`` turns reports off; a report
that fails is logged at DEBUG and counted, never raised.
"""

from __future__ import annotations

from typing import Any

from icefloe.metadata import Snapshot

__all__ = ["commit_report"]

# snapshot summary key -> (CommitMetricsResult name, unit)
_COUNTERS: dict[str, tuple[str, str]] = {
    "added-data-files": ("added-data-files", "count"),
    "deleted-data-files": ("removed-data-files", "count"),
    "total-data-files": ("total-data-files", "count"),
    "added-delete-files": ("added-delete-files", "count"),
    "added-equality-delete-files": ("added-equality-delete-files", "count"),
    "added-position-delete-files": ("added-positional-delete-files", "count"),
    "added-dvs": ("added-dvs", "count"),
    "removed-delete-files": ("removed-delete-files", "count"),
    "removed-equality-delete-files": ("removed-equality-delete-files", "count"),
    "removed-position-delete-files": ("removed-positional-delete-files", "count"),
    "removed-dvs": ("removed-dvs", "count"),
    "total-delete-files": ("total-delete-files", "count"),
    "added-records": ("added-records", "count"),
    "deleted-records": ("removed-records", "count"),
    "total-records": ("total-records", "count"),
    "added-files-size": ("added-files-size-bytes", "bytes"),
    "removed-files-size": ("removed-files-size-bytes", "bytes"),
    "total-files-size": ("total-files-size-bytes", "bytes"),
    "added-position-deletes": ("added-positional-deletes", "count"),
    "removed-position-deletes": ("removed-positional-deletes", "count"),
    "total-position-deletes": ("total-positional-deletes", "count"),
    "added-equality-deletes": ("added-equality-deletes", "count"),
    "removed-equality-deletes": ("removed-equality-deletes", "count"),
    "total-equality-deletes": ("total-equality-deletes", "count"),
    "manifests-created": ("manifests-created", "count"),
    "manifests-replaced": ("manifests-replaced", "count"),
    "manifests-kept": ("manifests-kept", "count"),
    "entries-processed": ("manifest-entries-processed", "count"),
}


def commit_report(
    table_name: str, snapshot: Snapshot, attempts: int, duration_ns: int
) -> dict[str, Any]:
    """The ``ReportMetricsRequest`` of a commit that produced ``snapshot``."""
    metrics: dict[str, Any] = {
        "total-duration": {
            "count": 1,
            "time-unit": "nanoseconds",
            "total-duration": max(0, duration_ns),
        },
        "attempts": {"unit": "count", "value": attempts},
    }
    summary = snapshot.summary
    for key, (name, unit) in _COUNTERS.items():
        raw = summary.get(key) if summary is not None else None
        if raw is None:
            continue
        try:
            metrics[name] = {"unit": unit, "value": int(raw)}
        except ValueError:
            continue
    operation = (summary.get("operation") if summary is not None else None) or "append"
    return {
        "report-type": "commit-report",
        "table-name": table_name,
        "snapshot-id": snapshot.snapshot_id,
        "sequence-number": snapshot.sequence_number,
        "operation": operation,
        "metrics": metrics,
        "metadata": {"engine-name": "icefloe"},
    }
