"""Projecting a Parquet file's Arrow columns onto an Iceberg schema by field id.

The file's columns are matched to the schema's fields by ``PARQUET:field_id`` (after the name
mapping for files without ids), never by name, so renamed and reordered columns read correctly.
Fields the file lacks are filled with an identity-partition value, the v3 ``initial-default`` or
null; a required field the file lacks is a :class:`~icefloe.exceptions.CorruptFileError`, never
nulls. Columns the schema dropped are ignored; primitive values are cast to the schema's type
(int->long, float->double, decimal widening, date->timestamp); structs, lists and maps are
rebuilt child by child. The result is typed exactly as :func:`schema_to_arrow` of the schema.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_fill import fill_under_null
from icefloe.arrow_schema import field_id_of, type_to_arrow
from icefloe.exceptions import CorruptFileError, ValidationError
from icefloe.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    UnknownType,
    VariantType,
)
from icefloe.values import column_default
from icefloe.variant import normalize as normalize_variant

__all__ = ["FileColumns", "constant_array", "project_field"]


class FileColumns:
    """The field-id index of one file's Arrow schema (children included)."""

    __slots__ = ("by_id",)

    def __init__(self, arrow_schema: pa.Schema) -> None:
        self.by_id: dict[int, tuple[int, pa.Field]] = {}
        for i, f in enumerate(arrow_schema):
            fid = field_id_of(f)
            if fid is not None:
                self.by_id[fid] = (i, f)

    def top_level(self, field_id: int) -> tuple[int, pa.Field] | None:
        """The position and Arrow field of the top-level column with ``field_id``."""
        return self.by_id.get(field_id)


def _children_by_id(t: pa.DataType) -> dict[int, tuple[int, pa.Field]]:
    out: dict[int, tuple[int, pa.Field]] = {}
    for i in range(t.num_fields):
        f = t.field(i)
        fid = field_id_of(f)
        if fid is not None:
            out[fid] = (i, f)
    return out


def _storage(t: pa.DataType) -> pa.DataType:
    return t.storage_type if isinstance(t, pa.BaseExtensionType) else t


def constant_array(value: Any, t: IcebergType, arrow_type: pa.DataType, n: int) -> pa.Array:
    """``n`` copies of ``value`` (Python representation of Iceberg type ``t``) as ``arrow_type``."""
    if value is None or isinstance(t, UnknownType):
        return pa.nulls(n, arrow_type)
    storage = _storage(arrow_type)
    if isinstance(value, uuid.UUID):
        value = value.bytes
    try:
        if pa.types.is_date32(storage) and isinstance(value, int):
            one = pa.array([value], pa.int32()).cast(storage)
        elif (pa.types.is_timestamp(storage) or pa.types.is_time64(storage)) and isinstance(
            value, int
        ):
            one = pa.array([value], pa.int64()).cast(storage)
        else:
            one = pa.array([value], storage)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
        raise ValidationError(f"value {value!r} does not fit Iceberg type {t}: {e}") from e
    if storage is not arrow_type and isinstance(arrow_type, pa.BaseExtensionType):
        one = pa.ExtensionArray.from_storage(arrow_type, one)
    if n == 1:
        return one
    return one.take(pa.array(np.zeros(n, dtype=np.int32)))


def _cast(arr: pa.Array, target: pa.DataType, field: NestedField, path: str) -> pa.Array:
    if arr.type == target:
        return arr
    src = arr
    if isinstance(src.type, pa.BaseExtensionType):
        src = src.storage
    if pa.types.is_dictionary(src.type):
        src = src.dictionary_decode()
    storage = _storage(target)
    if src.type != storage and not _promotable(src.type, storage):
        raise ValidationError(
            f"{path}: column {field.name!r} (id {field.field_id}) of type {arr.type} in the "
            f"file cannot be read as {field.field_type}: not a type promotion the spec allows"
        )
    try:
        out = src if src.type == storage else src.cast(storage)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise ValidationError(
            f"{path}: column {field.name!r} (id {field.field_id}) of type {arr.type} cannot be "
            f"read as {field.field_type}: {e}"
        ) from e
    if isinstance(target, pa.BaseExtensionType):
        out = pa.ExtensionArray.from_storage(target, out)
    return out


def _kind(t: pa.DataType) -> str:
    """The family of an Arrow type, for :func:`_promotable`."""
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_decimal(t):
        return "decimal"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "binary"
    if pa.types.is_boolean(t):
        return "bool"
    return "other"


def _promotable(file: pa.DataType, table: pa.DataType) -> bool:
    """Whether a file's column of Arrow type ``file`` may be read as ``table``: the spec's
    promotions (wider integers, float to double, wider decimals of the same scale) and
    representation changes within a family (string views, time units, narrower integers a
    Parquet logical type gives); never across families (a string read as a number, a long
    narrowed to an int), which Java and PyIceberg refuse too."""
    a, b = _kind(file), _kind(table)
    if a == "int" and pa.types.is_time(table):
        return True  # ORC has no time type: Iceberg writes a time as its microseconds
    if {a, b} == {"string", "binary"}:
        return True  # bytes either way (writers that leave out Parquet's UTF8 annotation)
    if a in ("other", "binary") and b in ("other", "binary"):
        return True  # dates, times, timestamps, bytes: their own casts check them
    if "other" in (a, b) or "binary" in (a, b):
        return bool(pa.types.is_null(file))
    if a != b:
        return False
    if a in ("int", "float"):
        return bool(file.bit_width <= table.bit_width) or (
            a == "int" and not pa.types.is_signed_integer(file)  # unsigned: checked by cast
        )
    if a == "decimal":
        return bool(file.scale == table.scale and file.precision <= table.precision)
    return True


def _validity(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def project_field(
    arr: pa.Array | None,
    field: NestedField,
    n: int,
    path: str,
    constants: Mapping[int, Any],
) -> pa.Array:
    """The Arrow column of ``field`` from the file's column ``arr`` (``None`` when absent)."""
    target = type_to_arrow(field.field_type)
    t = field.field_type
    if isinstance(t, UnknownType):
        return pa.nulls(n, target)
    if arr is None:
        if field.field_id in constants:
            return constant_array(constants[field.field_id], t, target, n)
        if field.initial_default is not None:
            return constant_array(column_default(field), t, target, n)
        if field.required:
            # Never nulls under a required field: the file lost the column (or its field id).
            raise CorruptFileError(
                f"{path}: required column {field.name!r} (id {field.field_id}) is missing "
                "from the file"
            )
        return pa.nulls(n, target)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(t, StructType):
        if not pa.types.is_struct(arr.type):
            raise _conflict(path, field, arr.type)
        by_id = _children_by_id(arr.type)
        children = []
        for child in t.fields:
            hit = by_id.get(child.field_id)
            # StructArray.field slices the child to the parent's offset and length.
            child_arr = arr.field(hit[0]) if hit is not None else None
            out = project_field(child_arr, child, len(arr), path, {})
            if child.required and out.null_count:
                # a file may store a required child as nullable, null where the struct is
                _check_nulls_under_null(arr, out, child, path)
                out = fill_under_null(out)
            children.append(out)
        if not children:
            return pa.nulls(n, target) if arr.null_count == n else _empty_struct(arr, target)
        return pa.StructArray.from_arrays(children, fields=list(target), mask=_validity(arr)).cast(
            target
        )
    if isinstance(t, ListType):
        if pa.types.is_fixed_size_list(arr.type):
            # pyarrow's schema hint in a file whose Parquet column is a plain LIST
            arr = arr.cast(pa.list_(arr.type.value_field))
        if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
            raise _conflict(path, field, arr.type)
        element_id = field_id_of(arr.type.value_field)
        values = arr.values if element_id in (None, t.element_id) else None
        if element_id is not None and element_id != t.element_id:
            raise _conflict(path, field, arr.type)
        elem = project_field(values, t.element_field, len(arr.values), path, {})
        offsets = arr.offsets
        if pa.types.is_large_list(arr.type):
            offsets = offsets.cast(pa.int32())
        return pa.ListArray.from_arrays(offsets, elem, type=target, mask=_validity(arr))
    if isinstance(t, MapType):
        if not pa.types.is_map(arr.type):
            raise _conflict(path, field, arr.type)
        keys = project_field(arr.keys, t.key_field, len(arr.keys), path, {})
        items = project_field(arr.items, t.value_field, len(arr.items), path, {})
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=_validity(arr))
    if isinstance(t, VariantType):
        return _variant(arr, target, field, path)
    nested = pa.types.is_struct(arr.type) or pa.types.is_list(arr.type) or pa.types.is_map(arr.type)
    if nested and not isinstance(arr.type, pa.BaseExtensionType):
        raise _conflict(path, field, arr.type)
    return _cast(arr, target, field, path)


def _variant(arr: pa.Array, target: pa.DataType, field: NestedField, path: str) -> pa.Array:
    """A variant group as ``struct<metadata, value>``: a shredded one (with ``typed_value``, as
    Spark or DuckDB may write it) is merged back into ``value`` in Rust; bytes are validated
    when decoded, not here."""
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    t = arr.type
    if not pa.types.is_struct(t) or t.get_field_index("metadata") < 0:
        raise _conflict(path, field, t)
    if t.get_field_index("typed_value") < 0 and t.get_field_index("value") >= 0:
        children = [arr.field("metadata"), arr.field("value")]
        return pa.StructArray.from_arrays(
            [c.cast(pa.binary()) for c in children],
            fields=list(_storage(target)),
            mask=_validity(arr),
        )
    try:
        return normalize_variant(arr)
    except ValidationError as e:
        raise CorruptFileError(f"{path}: variant column {field.name!r}: {e}") from None


def _empty_struct(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """A struct of no fields with ``arr``'s length and nulls (``from_arrays`` of no children
    makes an empty array)."""
    validity = arr.buffers()[0] if arr.null_count else None
    out = pa.StructArray.from_buffers(
        pa.struct([]), len(arr), [validity], null_count=arr.null_count, offset=arr.offset
    )
    return out.cast(target)


def _conflict(path: str, field: NestedField, found: pa.DataType) -> ValidationError:
    return ValidationError(
        f"{path}: column {field.name!r} (id {field.field_id}) has type {found} in the file, "
        f"which cannot be read as {field.field_type}"
    )


def _check_nulls_under_null(
    parent: pa.Array, child: pa.Array, field: NestedField, path: str
) -> None:
    """A required child may be null only where its parent struct is."""
    bad = pc.sum(pc.and_(child.is_null(), parent.is_valid())).as_py() or 0
    if bad:
        raise CorruptFileError(
            f"{path}: required field {field.name!r} (id {field.field_id}) holds {bad} nulls"
        )
