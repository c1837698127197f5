"""Delta log actions as Arrow: the ``add``/``remove`` layout shared by commits and checkpoints.

File actions of every source (JSON commits, classic, multi-part and v2 checkpoints, sidecars)
are normalised to :data:`FILE_ACTIONS`, one row per action:

| column | meaning |
|---|---|
| ``path`` | the file's path as written in the log (URL-encoded, relative or absolute) |
| ``partition_values`` | ``map<string, string>`` keyed by physical column name |
| ``size`` | bytes |
| ``modification_time`` | ms |
| ``data_change`` | false for rearrangements (OPTIMIZE) |
| ``stats`` | the statistics JSON string (``add`` only) |
| ``dv`` | the deletion-vector descriptor struct (storageType, pathOrInlineDv, offset, ...) |
| ``base_row_id`` / ``default_row_commit_version`` | row tracking |
| ``is_add`` | add (true) or remove (false) |
| ``version`` | the commit that holds the action (the checkpoint's version for checkpoints) |
| ``order`` | position in the replay order (later wins) |
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import DeltaLogError

__all__ = ["DV_TYPE", "FILE_ACTIONS", "dv_unique_ids", "file_actions_from_dicts", "normalize"]

DV_TYPE = pa.struct(
    [
        pa.field("storageType", pa.string()),
        pa.field("pathOrInlineDv", pa.string()),
        pa.field("offset", pa.int32()),
        pa.field("sizeInBytes", pa.int32()),
        pa.field("cardinality", pa.int64()),
        pa.field("maxRowIndex", pa.int64()),
    ]
)

FILE_ACTIONS = pa.schema(
    [
        pa.field("path", pa.string()),
        pa.field("partition_values", pa.map_(pa.string(), pa.string())),
        pa.field("size", pa.int64()),
        pa.field("modification_time", pa.int64()),
        pa.field("data_change", pa.bool_()),
        pa.field("stats", pa.string()),
        pa.field("dv", DV_TYPE),
        pa.field("base_row_id", pa.int64()),
        pa.field("default_row_commit_version", pa.int64()),
        pa.field("is_add", pa.bool_()),
        pa.field("version", pa.int64()),
        pa.field("order", pa.int64()),
    ]
)

# Log name -> column name, for the fields read from an add/remove struct.
_FIELDS = (
    ("path", "path"),
    ("partitionValues", "partition_values"),
    ("size", "size"),
    ("modificationTime", "modification_time"),
    ("dataChange", "data_change"),
    ("stats", "stats"),
    ("deletionVector", "dv"),
    ("baseRowId", "base_row_id"),
    ("defaultRowCommitVersion", "default_row_commit_version"),
)


def _field(struct: pa.Array, name: str, type_: pa.DataType) -> pa.Array:
    n = len(struct)
    if name not in {f.name for f in struct.type}:
        return pa.nulls(n, type_)
    col = pc.struct_field(struct, name)
    if pa.types.is_struct(type_):
        children = [_field(col, f.name, f.type) for f in type_]
        mask = col.is_null() if col.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(type_), mask=mask)
    if pa.types.is_map(type_) and not pa.types.is_map(col.type):
        return pa.nulls(n, type_)
    return col.cast(type_)


def _valid_rows(struct: pa.Array) -> pa.Array:
    """The non-null rows: a zero-copy slice when they are one run (as in checkpoints, where
    the actions of a kind sit together), else a filtered copy."""
    if struct.null_count == 0:
        return struct
    idx = pc.indices_nonzero(struct.is_valid())
    if len(idx) == 0:
        return struct.slice(0, 0)
    first, last = idx[0].as_py(), idx[-1].as_py()
    if last - first + 1 == len(idx):
        return struct.slice(first, len(idx))
    return struct.take(idx)


def normalize(
    struct: pa.Array | pa.ChunkedArray, *, is_add: bool, version: int, order_start: int
) -> pa.Table:
    """The non-null rows of an ``add`` or ``remove`` struct column as :data:`FILE_ACTIONS`,
    plus checkpoints' ``stats_parsed`` column (the statistics as a typed struct) when present."""
    if isinstance(struct, pa.ChunkedArray):
        struct = struct.combine_chunks() if struct.num_chunks else pa.array([], struct.type)
    struct = _valid_rows(struct)
    n = len(struct)
    cols = [_field(struct, log_name, FILE_ACTIONS.field(col).type) for log_name, col in _FIELDS]
    names = {f.name for f in struct.type}
    if "stats" in names and not is_add:
        cols[5] = pa.nulls(n, pa.string())
    cols.append(pa.repeat(pa.scalar(is_add), n))
    cols.append(pa.repeat(pa.scalar(version, pa.int64()), n))
    cols.append(pa.array(np.arange(order_start, order_start + n, dtype=np.int64)))
    table = pa.Table.from_arrays(cols, schema=FILE_ACTIONS)
    if is_add and "stats_parsed" in names:
        table = table.append_column("stats_parsed", pc.struct_field(struct, "stats_parsed"))
    return table


_INT32_MAX = 2**31 - 1
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def _integer(value: Any, what: str, lo: int, hi: int) -> Any:
    """``value`` when it is null or an integer in ``[lo, hi]`` (the Arrow column's range and
    the protocol's), else :class:`ValueError` naming the field. JSON numbers can be any size:
    one beyond the column's type would make Arrow raise an untyped ``OverflowError``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be an integer, got {_short(value)}")
    if not lo <= value <= hi:
        raise ValueError(f"{what} is out of range [{lo}, {hi}]: {_short(value)}")
    return value


def _short(value: Any) -> str:
    if isinstance(value, int) and value.bit_length() > 128:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _dv(dv: Any, what: str) -> dict[str, Any] | None:
    """A deletion-vector descriptor checked against the protocol ("Deletion Vector
    Descriptor Schema"): string ``storageType`` and ``pathOrInlineDv``, non-negative int
    ``offset`` (optional) and ``sizeInBytes``, non-negative long ``cardinality``."""
    if dv is None:
        return None
    what = f"{what}.deletionVector"
    if not isinstance(dv, dict):
        raise ValueError(f"{what} must be an object, got {_short(dv)}")
    for key in ("storageType", "pathOrInlineDv"):
        if not isinstance(dv.get(key), str):
            raise ValueError(f"{what}.{key} must be a string, got {_short(dv.get(key))}")
    for key in ("sizeInBytes", "cardinality"):
        if dv.get(key) is None:
            raise ValueError(f"{what} is missing {key!r}")
    out = dict(dv)
    out["offset"] = _integer(dv.get("offset"), f"{what}.offset", 0, _INT32_MAX)
    out["sizeInBytes"] = _integer(dv.get("sizeInBytes"), f"{what}.sizeInBytes", 0, _INT32_MAX)
    out["cardinality"] = _integer(dv.get("cardinality"), f"{what}.cardinality", 0, _INT64_MAX)
    out["maxRowIndex"] = _integer(
        dv.get("maxRowIndex"), f"{what}.maxRowIndex", _INT64_MIN, _INT64_MAX
    )
    return out


def _row(action: dict[str, Any], is_add: bool, version: int, order: int) -> dict[str, Any]:
    """One file action as a :data:`FILE_ACTIONS` row; :class:`ValueError` names a field whose
    value does not fit its column (the caller names the file)."""
    kind = "add" if is_add else "remove"
    pv = action.get("partitionValues")

    def long(key: str) -> Any:
        return _integer(action.get(key), f"{kind}.{key}", _INT64_MIN, _INT64_MAX)

    return {
        "path": action.get("path"),
        "partition_values": list(pv.items()) if isinstance(pv, dict) else None,
        "size": long("size"),
        "modification_time": long("modificationTime"),
        "data_change": action.get("dataChange"),
        "stats": action.get("stats") if is_add else None,
        "dv": _dv(action.get("deletionVector"), kind),
        "base_row_id": long("baseRowId"),
        "default_row_commit_version": long("defaultRowCommitVersion"),
        "is_add": is_add,
        "version": version,
        "order": order,
    }


def file_actions_from_dicts(
    actions: Sequence[tuple[bool, dict[str, Any]]], version: int, order_start: int
) -> pa.Table:
    """``(is_add, action)`` pairs of one JSON commit (or v2 JSON checkpoint) as a table.

    A value that does not fit its column (an integer beyond its range, a malformed
    deletion-vector descriptor) raises :class:`ValueError` naming the field; callers turn it
    into a :class:`~icefloe.exceptions.DeltaLogError` naming the file.
    """
    rows = [_row(a, is_add, version, order_start + i) for i, (is_add, a) in enumerate(actions)]
    return pa.Table.from_pylist(rows, schema=FILE_ACTIONS)


def check_file_actions(files: pa.Table) -> None:
    """Refuse add actions whose numbers cannot be right (:class:`DeltaLogError`): a negative
    ``size`` or ``baseRowId``, or a ``defaultRowCommitVersion`` outside ``0..`` the version
    that added the file. They would become file sizes, row ids and data sequence numbers."""
    if not files.num_rows:
        return
    version = files.column("version")
    checks = (
        ("size", pc.less(files.column("size"), 0)),
        ("baseRowId", pc.less(files.column("base_row_id"), 0)),
        (
            "defaultRowCommitVersion",
            pc.or_(
                pc.less(files.column("default_row_commit_version"), 0),
                pc.greater(files.column("default_row_commit_version"), version),
            ),
        ),
    )
    adds = files.column("is_add")
    for name, bad in checks:
        bad = pc.and_(pc.fill_null(bad, False), adds)
        if pc.any(bad).as_py():
            row = files.filter(bad).slice(0, 1).to_pylist()[0]
            column = {"size": "size", "baseRowId": "base_row_id"}.get(
                name, "default_row_commit_version"
            )
            raise DeltaLogError(
                f"malformed Delta add action for {row['path']} (version {row['version']}): "
                f"{name} is {row[column]}"
            )


def dv_unique_ids(dv: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The DV part of a file action's identity: ``storageType + pathOrInlineDv [+ '@' offset]``,
    empty for files without one (PROTOCOL "Deletion Vector Descriptor" uniqueId)."""
    if isinstance(dv, pa.ChunkedArray):
        dv = dv.combine_chunks() if dv.num_chunks else pa.array([], DV_TYPE)
    storage = pc.fill_null(pc.struct_field(dv, "storageType"), "")
    where = pc.fill_null(pc.struct_field(dv, "pathOrInlineDv"), "")
    offset = pc.struct_field(dv, "offset")
    at = pc.fill_null(
        pc.binary_join_element_wise(pa.scalar("@"), pc.cast(offset, pa.string()), ""), ""
    )
    out = pc.binary_join_element_wise(storage, where, at, "")
    return pc.if_else(dv.is_null(), "", out)
