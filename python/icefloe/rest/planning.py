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

from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.exceptions import ValidationError
from icefloe.expressions.base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    Not,
    Op,
    Or,
    UnboundPredicate,
)
from icefloe.expressions.serde import literal_to_json
from icefloe.scan.tasks import DeleteFileRef, FileScanTask
from icefloe.schema import Schema
from icefloe.table.scan import TableScan
from icefloe.types import BinaryType, FixedType

__all__ = ["expression_from_json", "expression_to_json", "plan_table_scan"]

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


def expression_from_json(
    obj: Any, schemas: Sequence[Schema] = (), case_sensitive: bool = True
) -> BooleanExpression:
    """An unbound expression from the REST spec's expression JSON (Iceberg Java's
    ``ExpressionParser`` form); literals are taken as JSON gives them (numbers, strings,
    booleans) and converted to the column's type when the expression is bound. A string on a
    column that is ``binary`` or ``fixed`` in one of ``schemas`` is read as the hex JSON form
    of its bytes (as Java writes them)."""
    return _expression(obj, schemas, case_sensitive)


def _expression(obj: Any, schemas: Sequence[Schema], case_sensitive: bool) -> BooleanExpression:
    if isinstance(obj, bool):
        return AlwaysTrue() if obj else AlwaysFalse()
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise ValidationError(f"not an expression: {obj!r}")
    kind = obj["type"].lower()
    if kind == "literal":
        value = obj.get("value")
        if not isinstance(value, bool):
            raise ValidationError(f"a literal expression needs a boolean value: {obj!r}")
        return AlwaysTrue() if value else AlwaysFalse()
    if kind in ("true", "false"):
        return AlwaysTrue() if kind == "true" else AlwaysFalse()
    if kind in ("and", "or"):
        left = _child(obj, "left", schemas, case_sensitive)
        right = _child(obj, "right", schemas, case_sensitive)
        return And(left, right) if kind == "and" else Or(left, right)
    if kind == "not":
        return Not(_child(obj, "child", schemas, case_sensitive))
    try:
        op = Op(kind)
    except ValueError:
        raise ValidationError(f"unknown expression type {obj['type']!r}") from None
    if op.is_spatial:
        raise ValidationError(f"{op.value} has no form in the REST expression JSON")
    name = _term(obj.get("term"))
    bytes_typed = any(
        s.find_field_id(name, case_sensitive) is not None
        and isinstance(s.find_type(name, case_sensitive), BinaryType | FixedType)
        for s in schemas
    )

    def _literal(value: Any) -> Any:
        if isinstance(value, dict) and value.get("type") == "literal":
            value = value.get("value")
        if bytes_typed and isinstance(value, str):
            try:
                return bytes.fromhex(value)
            except ValueError:
                raise ValidationError(f"{name}: {value!r} is not hex-encoded bytes") from None
        if isinstance(value, bool | int | float | str):
            return value
        raise ValidationError(f"not a literal value: {value!r}")

    if op.is_unary:
        if "value" in obj or "values" in obj:
            raise ValidationError(f"{op.value} takes no value: {obj!r}")
        return UnboundPredicate(op, name)
    if op.is_set:
        values = obj.get("values")
        if not isinstance(values, list) or "value" in obj:
            raise ValidationError(f"{op.value} needs a list of values: {obj!r}")
        return UnboundPredicate(op, name, [_literal(v) for v in values])
    if "value" not in obj or "values" in obj:
        raise ValidationError(f"{op.value} needs one value: {obj!r}")
    return UnboundPredicate(op, name, _literal(obj["value"]))


def _child(
    obj: dict[str, Any], key: str, schemas: Sequence[Schema], case_sensitive: bool
) -> BooleanExpression:
    if key not in obj:
        raise ValidationError(f"a {obj['type']} expression needs {key!r}: {obj!r}")
    return _expression(obj[key], schemas, case_sensitive)


def _term(term: Any) -> str:
    if isinstance(term, str) and term:
        return term
    if isinstance(term, dict) and term.get("type") == "reference":
        return _term(term.get("term"))
    if isinstance(term, dict) and term.get("type") == "transform":
        raise ValidationError(
            f"filters on a transform ({term.get('transform')!r}) are not supported in planning"
        )
    raise ValidationError(f"not a column reference: {term!r}")


def expression_to_json(expr: BooleanExpression) -> Any:
    """A bound (or unbound) expression in the REST expression JSON, literals in the spec's
    single-value JSON of their column's type, as Iceberg Java writes a residual."""
    if isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, And | Or):
        kind = "and" if isinstance(expr, And) else "or"
        return {
            "type": kind,
            "left": expression_to_json(expr.left),
            "right": expression_to_json(expr.right),
        }
    if isinstance(expr, Not):
        return {"type": "not", "child": expression_to_json(expr.child)}
    if isinstance(expr, BoundPredicate | UnboundPredicate):
        if expr.op.is_spatial:
            raise ValidationError(f"{expr.op.value} has no form in the REST expression JSON")
        out: dict[str, Any] = {"type": expr.op.value, "term": expr.term_name}
        if isinstance(expr, BoundPredicate):
            t = expr.ref.field_type
            if expr.op.is_set:
                out["values"] = [literal_to_json(v, t) for v in sorted(expr.literals, key=repr)]
            elif expr.op.is_literal:
                out["value"] = literal_to_json(expr.literal, t)
        elif expr.op.is_set:
            out["values"] = sorted(expr.literals, key=repr)
        elif expr.op.is_literal:
            out["value"] = expr.literal
        return out
    raise ValidationError(f"cannot write {expr!r} as REST expression JSON")


def _partition_json(types: list[Any] | None, values: tuple[Any, ...]) -> list[Any]:
    if not types:
        return []
    if len(types) != len(values):
        raise ValidationError(f"partition {values!r} does not fit its spec")
    return [
        None if v is None else literal_to_json(v, t) for v, t in zip(values, types, strict=True)
    ]


def _data_file_json(task: FileScanTask, types: list[Any] | None) -> dict[str, Any]:
    f = task.data_file
    out: dict[str, Any] = {
        "spec-id": f.spec_id,
        "content": "data",
        "file-path": f.file_path,
        "file-format": f.file_format.lower(),
        "partition": _partition_json(types, f.partition),
        "file-size-in-bytes": f.file_size_in_bytes,
        "record-count": f.record_count,
    }
    if f.first_row_id is not None:
        out["first-row-id"] = f.first_row_id
    return out


def _delete_file_json(d: DeleteFileRef, types: list[Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "spec-id": d.spec_id,
        "content": d.content.value,
        "file-path": d.file_path,
        "file-format": d.file_format.lower(),
        "partition": _partition_json(types, d.partition),
        "file-size-in-bytes": d.file_size_in_bytes,
        "record-count": d.record_count,
    }
    if d.equality_ids:
        out["equality-ids"] = list(d.equality_ids)
    if d.referenced_data_file is not None:
        out["referenced-data-file"] = d.referenced_data_file
    if d.content_offset is not None:
        out["content-offset"] = d.content_offset
    if d.content_size_in_bytes is not None:
        out["content-size-in-bytes"] = d.content_size_in_bytes
    return out


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
                deletes.append(_delete_file_json(d, types.get(d.spec_id)))
            refs.append(i)
        entry: dict[str, Any] = {
            "data-file": _data_file_json(task, types.get(task.data_file.spec_id))
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
