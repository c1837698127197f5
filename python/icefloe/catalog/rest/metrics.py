"""Metrics reports (``POST .../tables/{table}/metrics``): commit and scan reports.

After each commit that adds a snapshot the REST client reports the commit's duration, attempts
and the counts of its snapshot summary under the names of Iceberg Java's
``CommitMetricsResult`` (``report-type: commit-report``). After each scan plan of a table it
loaded it reports the snapshot and schema read, the filter, the projected columns, the
planning time and the plan's counts under the names of Java's ``ScanMetricsResult``
(``report-type: scan-report``). The filter's values are replaced by descriptions of them
(``"(3-digit-int)"``, ``"(hash-1a2b3c4d)"``, ``"(date)"``), as Java does, so no data value
reaches the server's metrics. ``rest-metrics-reporting-enabled=false`` turns reports off; a
report that fails is logged at DEBUG and counted, never raised.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
from decimal import Decimal
from typing import Any

from icefloe.expressions.base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    Not,
    Or,
    UnboundPredicate,
)
from icefloe.metadata import Snapshot
from icefloe.scan.metrics import ScanReport
from icefloe.types import (
    BinaryType,
    DateType,
    FixedType,
    IcebergType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = ["commit_report", "filter_json", "scan_report"]

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


# Values are hashed with a key of this process: equal values show as equal within it, and a
# guessed value cannot be checked against a report.
_HASH_KEY = os.urandom(16)
_TIMESTAMPS = (TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)
_HASHED = (StringType, UUIDType, FixedType, BinaryType)


def _describe(value: Any, t: IcebergType | None = None) -> str:
    """A description of a filter value (of type ``t`` when bound) that does not reveal it."""
    if isinstance(t, DateType) or (t is None and isinstance(value, dt.date)):
        return "(timestamp)" if isinstance(value, dt.datetime) else "(date)"
    if isinstance(t, TimeType) or (t is None and isinstance(value, dt.time)):
        return "(time)"
    if isinstance(t, _TIMESTAMPS):
        return "(timestamp)"
    if isinstance(value, bool):
        return "(boolean)"
    if isinstance(value, int) and not isinstance(t, _HASHED):
        return f"({len(str(abs(value)))}-digit-int)"
    if isinstance(value, float | Decimal):
        if value != value:
            return "(nan)"
        if value in (float("inf"), float("-inf")):
            return "(infinity)"
        return f"({len(str(abs(int(value))))}-digit-float)"
    raw = value if isinstance(value, bytes) else str(value).encode()
    return f"(hash-{hmac.new(_HASH_KEY, raw, hashlib.sha256).hexdigest()[:8]})"


def filter_json(expr: BooleanExpression) -> Any:
    """``expr`` in the REST spec's expression JSON, its values described (see the module
    docstring); terms are column names."""
    if isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, And | Or):
        kind = "and" if isinstance(expr, And) else "or"
        return {"type": kind, "left": filter_json(expr.left), "right": filter_json(expr.right)}
    if isinstance(expr, Not):
        return {"type": "not", "child": filter_json(expr.child)}
    if isinstance(expr, BoundPredicate | UnboundPredicate):
        if expr.op.is_spatial:
            return True  # no spatial operation in the REST expression JSON: reported unfiltered
        out: dict[str, Any] = {"type": expr.op.value, "term": expr.term_name}
        t = expr.ref.field_type if isinstance(expr, BoundPredicate) else None
        if expr.op.is_set:
            out["values"] = sorted(_describe(v, t) for v in expr.literals)
        elif expr.op.is_literal:
            out["value"] = _describe(expr.literal, t)
        return out
    return True  # an expression kind reports cannot describe: no filter


def scan_report(table_name: str, report: ScanReport) -> dict[str, Any]:
    """The ``ReportMetricsRequest`` of a planned scan."""
    metrics: dict[str, Any] = {
        "total-planning-duration": {
            "count": 1,
            "time-unit": "nanoseconds",
            "total-duration": max(0, report.planning_duration_ns),
        },
    }
    for name, value in report.counters.items():
        unit = "bytes" if name.endswith("-in-bytes") else "count"
        metrics[name] = {"unit": unit, "value": int(value)}
    return {
        "report-type": "scan-report",
        "table-name": table_name,
        "snapshot-id": report.snapshot_id,
        "filter": filter_json(report.filter),
        "schema-id": report.schema_id,
        "projected-field-ids": list(report.projected_field_ids),
        "projected-field-names": list(report.projected_field_names),
        "metrics": metrics,
        "metadata": {"engine-name": "icefloe"},
    }
