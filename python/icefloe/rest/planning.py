"""Server-side scan planning: ``POST .../tables/{table}/plan``.

The server plans the scan a ``PlanTableScanRequest`` describes (a snapshot, or the appends
between two snapshots; a filter in the REST expression JSON; case sensitivity; the selected
columns) with icefloe's planner and answers at once with ``status: completed``: the data files
to read as ``file-scan-tasks`` (each with its residual filter and the indexes of its delete
files) and the delete files once each in ``delete-files``. Content files are in the JSON form
Iceberg Java's ``ContentFileParser`` reads (partition values and literals in the spec's
single-value JSON). No plan id is issued, so no plan is kept to fetch or cancel later; column
statistics are not sent (a client that asks for ``stats-fields`` gets the files without them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icefloe.exceptions import ValidationError
from icefloe.expressions.base import AlwaysTrue, BooleanExpression
from icefloe.expressions.rest_json import expression_from_json, expression_to_json
from icefloe.scan.content_json import data_file_json, delete_file_json
from icefloe.schema import Schema
from icefloe.table.scan import TableScan

__all__ = ["plan_table_scan"]

_REQUEST_KEYS = {
    "snapshot-id",
    "select",
    "filter",
    "case-sensitive",
    "use-snapshot-schema",
    "start-snapshot-id",
    "end-snapshot-id",
    "stats-fields",
    "min-rows-requested",
}


def _optional_id(body: Mapping[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{key} must be a snapshot id (a long), got {value!r}")
    return value


def plan_table_scan(table: Any, body: Any) -> dict[str, Any]:
    """The ``PlanTableScanResult`` (completed) of ``PlanTableScanRequest`` ``body`` on
    ``table`` (see the module docstring)."""
    if not isinstance(body, dict):
        raise ValidationError("the request body must be a PlanTableScanRequest object")
    unknown = sorted(set(body) - _REQUEST_KEYS)
    if unknown:
        raise ValidationError(f"unknown fields in the scan planning request: {unknown}")
    snapshot_id = _optional_id(body, "snapshot-id")
    start, end = _optional_id(body, "start-snapshot-id"), _optional_id(body, "end-snapshot-id")
    if (start is None) != (end is None):
        raise ValidationError("start-snapshot-id and end-snapshot-id go together")
    if start is not None and snapshot_id is not None:
        raise ValidationError("snapshot-id cannot be combined with start/end-snapshot-id")
    select = body.get("select")
    if select is not None and (
        not isinstance(select, list) or not all(isinstance(s, str) for s in select)
    ):
        raise ValidationError("select must be a list of column names")
    case_sensitive = body.get("case-sensitive", True)
    if not isinstance(case_sensitive, bool):
        raise ValidationError("case-sensitive must be a boolean")
    fields = tuple(select) if select else ("*",)
    use_snapshot_schema = body.get("use-snapshot-schema", False)
    if not isinstance(use_snapshot_schema, bool):
        raise ValidationError("use-snapshot-schema must be a boolean")

    def make(row_filter: BooleanExpression) -> TableScan:
        if start is not None:
            scan: TableScan = table.incremental_append_scan(
                start,
                end,
                row_filter=row_filter,
                selected_fields=fields,
                case_sensitive=case_sensitive,
            )
            return scan
        # a branch's head is read with the table's schema (Java sends its snapshot id with
        # use-snapshot-schema false), a snapshot or tag with its own
        kind = TableScan if use_snapshot_schema or snapshot_id is None else _CurrentSchemaScan
        return kind(
            table,
            row_filter=row_filter,
            selected_fields=fields,
            case_sensitive=case_sensitive,
            snapshot_id=snapshot_id,
        )

    scan = make(AlwaysTrue())
    if "filter" in body:
        # binary and fixed columns of the schema the scan binds with take hex strings
        scan = make(expression_from_json(body["filter"], [scan.schema()], case_sensitive))
    scan.projected_schema()  # unknown selected columns are refused here, not by the client
    tasks = scan.plan_files()
    metadata = table.metadata
    specs = {s.spec_id: s for s in metadata.partition_specs}
    schema = metadata.current_schema()
    types: dict[int, list[Any]] = {
        i: [f.field_type for f in s.partition_type(schema, metadata.schemas).fields]
        for i, s in specs.items()
    }
    deletes: list[dict[str, Any]] = []
    index: dict[tuple[str, int | None], int] = {}
    out_tasks = []
    for task in tasks:
        refs = []
        for d in task.delete_files:
            key = (d.file_path, d.content_offset)
            i = index.get(key)
            if i is None:
                i = index[key] = len(deletes)
                deletes.append(delete_file_json(d, types.get(d.spec_id)))
            refs.append(i)
        entry: dict[str, Any] = {
            "data-file": data_file_json(task, types.get(task.data_file.spec_id))
        }
        if refs:
            entry["delete-file-references"] = sorted(set(refs))
        entry["residual-filter"] = expression_to_json(task.residual)
        out_tasks.append(entry)
    result: dict[str, Any] = {"status": "completed", "file-scan-tasks": out_tasks}
    if deletes:
        result["delete-files"] = deletes
    return result


class _CurrentSchemaScan(TableScan):
    """A scan of a snapshot with the table's current schema (a branch head's)."""

    def schema(self) -> Schema:
        return self.metadata.current_schema()
