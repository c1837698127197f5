"""Data and delete files in the JSON of the REST spec's scan planning (the form Iceberg
Java's ``ContentFileParser`` writes and reads): ``spec-id``, ``content``, ``file-path``,
``file-format``, ``partition`` (values in the spec's single-value JSON, in spec order),
``file-size-in-bytes``, ``record-count``, and where they apply ``first-row-id``,
``equality-ids``, ``referenced-data-file``, ``content-offset``, ``content-size-in-bytes``.
Column statistics are neither written nor read. A NaN partition value of a ``float`` or
``double`` field travels as the string ``"NaN"`` (JSON has no NaN; infinities travel as
``"Infinity"`` and ``"-Infinity"``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from icefloe.exceptions import ValidationError
from icefloe.expressions.serde import literal_from_json, literal_to_json
from icefloe.scan.tasks import DataFileRef, DeleteContent, DeleteFileRef, FileScanTask
from icefloe.types import DoubleType, FloatType, IcebergType

__all__ = [
    "data_file_from_json",
    "data_file_json",
    "delete_file_from_json",
    "delete_file_json",
    "partition_json",
]

NAN = "NaN"


def partition_json(types: Sequence[IcebergType] | None, values: tuple[Any, ...]) -> list[Any]:
    """Partition ``values`` (of fields of ``types``) as single-value JSON."""
    if not types:
        return []
    if len(types) != len(values):
        raise ValidationError(f"partition {values!r} does not fit its spec")
    return [_value_json(v, t) for v, t in zip(values, types, strict=True)]


def _value_json(v: Any, t: IcebergType) -> Any:
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v) and isinstance(t, FloatType | DoubleType):
        return NAN  # a NaN partition value: the string Jackson writes for it, as infinities
    return literal_to_json(v, t)


def _value_from_json(v: Any, t: IcebergType) -> Any:
    if v is None:
        return None
    if v == NAN and isinstance(t, FloatType | DoubleType):
        return math.nan
    return literal_from_json(v, t)


def data_file_json(task: FileScanTask, types: Sequence[IcebergType] | None) -> dict[str, Any]:
    """The ``data-file`` object of ``task``'s data file (``types``: its spec's partition
    field types)."""
    f = task.data_file
    out: dict[str, Any] = {
        "spec-id": f.spec_id,
        "content": "data",
        "file-path": f.file_path,
        "file-format": f.file_format.lower(),
        "partition": partition_json(types, f.partition),
        "file-size-in-bytes": f.file_size_in_bytes,
        "record-count": f.record_count,
    }
    if f.first_row_id is not None:
        out["first-row-id"] = f.first_row_id
    return out


def delete_file_json(d: DeleteFileRef, types: Sequence[IcebergType] | None) -> dict[str, Any]:
    """A ``delete-files`` entry."""
    out: dict[str, Any] = {
        "spec-id": d.spec_id,
        "content": d.content.value,
        "file-path": d.file_path,
        "file-format": d.file_format.lower(),
        "partition": partition_json(types, d.partition),
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


def _partition_from_json(types: Sequence[IcebergType] | None, raw: Any) -> tuple[Any, ...]:
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise ValidationError(f"a file's partition must be a JSON array, got {raw!r}")
    types = types or ()
    if len(raw) != len(types):
        raise ValidationError(
            f"a partition of {len(raw)} values for a spec of {len(types)} fields: {raw!r}"
        )
    return tuple(_value_from_json(v, t) for v, t in zip(raw, types, strict=True))


def _field(
    obj: dict[str, Any], key: str, kind: type | tuple[type, ...], optional: bool = False
) -> Any:
    value = obj.get(key)
    if value is None and optional:
        return None
    if (
        not isinstance(value, kind)
        or (isinstance(value, bool) and kind is not bool)
        or (isinstance(value, int) and value < 0)  # counts, sizes, offsets and row ids
    ):
        raise ValidationError(f"a content file's {key!r} is missing or malformed: {obj!r}")
    return value


def _common(obj: Any, types_by_spec: dict[int, list[IcebergType]]) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ValidationError(f"a content file must be a JSON object, got {obj!r}")
    spec_id = _field(obj, "spec-id", int)
    if spec_id not in types_by_spec:
        raise ValidationError(f"content file {obj.get('file-path')!r} names unknown spec {spec_id}")
    return {
        "file_path": _field(obj, "file-path", str),
        "file_format": _field(obj, "file-format", str).lower(),
        "record_count": _field(obj, "record-count", int),
        "file_size_in_bytes": _field(obj, "file-size-in-bytes", int),
        "spec_id": spec_id,
        "partition": _partition_from_json(types_by_spec[spec_id], obj.get("partition")),
    }


def data_file_from_json(obj: Any, types_by_spec: dict[int, list[IcebergType]]) -> DataFileRef:
    """The data file of a ``data-file`` object (``types_by_spec``: the partition field types
    of each spec id)."""
    common = _common(obj, types_by_spec)
    if obj.get("content", "data") != "data":
        raise ValidationError(f"a scan task's data file has content {obj.get('content')!r}")
    return DataFileRef(**common, first_row_id=_field(obj, "first-row-id", int, optional=True))


def delete_file_from_json(obj: Any, types_by_spec: dict[int, list[IcebergType]]) -> DeleteFileRef:
    """The delete file of a ``delete-files`` entry."""
    common = _common(obj, types_by_spec)
    content = obj.get("content")
    if content not in (c.value for c in DeleteContent):
        raise ValidationError(f"a delete file has content {content!r}")
    ids = _field(obj, "equality-ids", list, optional=True) or []
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise ValidationError(f"equality-ids must be field ids: {ids!r}")
    return DeleteFileRef(
        content=DeleteContent(content),
        **common,
        referenced_data_file=_field(obj, "referenced-data-file", str, optional=True),
        content_offset=_field(obj, "content-offset", int, optional=True),
        content_size_in_bytes=_field(obj, "content-size-in-bytes", int, optional=True),
        equality_ids=tuple(ids),
    )
