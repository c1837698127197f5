"""Arrow arrays that stand in for values: nulls of any type, the placeholder values a
required field holds under a null parent (Parquet writers and Arrow casts refuse nulls in a
non-nullable field, even where its parent is null), and extension-typed columns as their
storage (Arrow's grouping, sorting and aggregation kernels take no extension type)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import ValidationError

__all__ = [
    "extension_storage",
    "fill_under_null",
    "from_extension_storage",
    "placeholder",
    "typed_nulls",
]


def _required_inside(t: pa.DataType) -> bool:
    """Whether a struct (or a struct inside it) has a required child."""
    if not pa.types.is_struct(t):
        return False
    return any(
        not t.field(i).nullable or _required_inside(t.field(i).type) for i in range(t.num_fields)
    )


def typed_nulls(n: int, t: pa.DataType) -> pa.Array:
    """``n`` nulls of ``t``. A struct's required children get placeholder values under the
    null rows (empty strings and lists, zeros): Parquet writers refuse nulls in a required
    child, even under a null parent."""
    if not _required_inside(t):
        return pa.nulls(n, type=t)
    children = [
        typed_nulls(n, f.type) if f.nullable else placeholder(n, f.type)
        for f in (t.field(i) for i in range(t.num_fields))
    ]
    return pa.StructArray.from_arrays(children, fields=list(t), mask=pa.repeat(True, n))


def placeholder(n: int, t: pa.DataType) -> pa.Array:
    """``n`` non-null values of ``t`` made of zeroed buffers: zeros, empty strings, lists and
    maps, structs of such values (only ever stored under a null parent)."""
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, placeholder(n, t.storage_type))
    if pa.types.is_struct(t):
        return pa.StructArray.from_arrays(
            [
                typed_nulls(n, f.type) if f.nullable else placeholder(n, f.type)
                for f in (t.field(i) for i in range(t.num_fields))
            ],
            fields=list(t),
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        offsets = pa.array(np.zeros(n + 1, np.int64 if pa.types.is_large_list(t) else np.int32))
        if pa.types.is_map(t):
            keys = placeholder(0, t.key_type)
            return pa.MapArray.from_arrays(offsets, keys, typed_nulls(0, t.item_type), type=t)
        return type(pa.array([], t)).from_arrays(offsets, typed_nulls(0, t.value_type), type=t)
    if pa.types.is_binary(t) or pa.types.is_string(t):
        return pa.Array.from_buffers(
            t, n, [None, pa.py_buffer(bytes(4 * (n + 1))), pa.py_buffer(b"")]
        )
    if pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        return pa.Array.from_buffers(
            t, n, [None, pa.py_buffer(bytes(8 * (n + 1))), pa.py_buffer(b"")]
        )
    return pa.Array.from_buffers(t, n, [None, pa.py_buffer(bytes((n * t.bit_width + 7) // 8))])


def fill_under_null(child: pa.Array) -> pa.Array:
    """``child`` (of a required field, null only where its parent is) with placeholders in
    place of its nulls."""
    if not child.null_count:
        return child
    if isinstance(child, pa.ExtensionArray):  # (if_else has no kernel for extension types)
        filled = fill_under_null(child.storage)
        return pa.ExtensionArray.from_storage(child.type, filled)
    return pc.if_else(child.is_valid(), child, placeholder(len(child), child.type))


def fill_required(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """``arr`` with placeholders under null parents wherever struct type ``t`` has a required
    child (nested structs too), so that it casts to ``t``: a column added to the table after
    a file was written reads as nulls of a struct whose required children are null too."""
    if not pa.types.is_struct(t) or not pa.types.is_struct(arr.type) or not arr.null_count:
        return arr
    assert isinstance(arr, pa.StructArray)
    names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
    children, fields = [], []
    for i in range(t.num_fields):
        f = t.field(i)
        if f.name not in names:
            return arr  # another shape: the cast reports it
        c = fill_required(arr.field(names.index(f.name)), f.type)
        if not f.nullable:
            c = fill_under_null(c)
        children.append(c)
        fields.append(pa.field(f.name, c.type, f.nullable, f.metadata))
    return pa.StructArray.from_arrays(children, fields=fields, mask=arr.is_null())


def extension_storage(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """``col``, or the storage of an extension-typed one (a uuid's 16 bytes, which sort in
    Iceberg's uuid order)."""
    t = col.type
    if isinstance(t, pa.BaseExtensionType):
        return pa.chunked_array([c.storage for c in col.chunks], t.storage_type)
    return col


def from_extension_storage(col: pa.ChunkedArray, t: pa.DataType) -> pa.ChunkedArray:
    """``col`` typed ``t`` again after :func:`extension_storage`."""
    if isinstance(t, pa.BaseExtensionType):
        return pa.chunked_array([pa.ExtensionArray.from_storage(t, c) for c in col.chunks], t)
    return col


def group_key(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """``col`` in a form Arrow can group by: the storage of extension types (uuid, geometry),
    and nulls of a plain type for the nested-typed values of a void partition of a variant
    column (always null; Arrow cannot group by struct keys). :func:`from_group_key` types
    the grouped keys as ``col`` again."""
    col = extension_storage(col)
    if pa.types.is_nested(col.type):
        if col.null_count != len(col):
            raise ValidationError(f"cannot group by values of type {col.type}")
        return pa.chunked_array([pa.nulls(len(col), pa.int8())])
    if pa.types.is_float32(col.type) or pa.types.is_float64(col.type):
        # Arrow groups floats by their bits: NaNs of other payloads (numpy's ``inf - inf``
        # sets the sign bit) would be partitions apart; Java folds them into one
        nan = pc.is_nan(col)
        if pc.any(nan).as_py():
            return pc.if_else(nan, pa.scalar(float("nan"), col.type), col)
    return col


def group_keys(struct: pa.ChunkedArray, names: list[str]) -> dict[str, pa.ChunkedArray]:
    """The fields of a struct column (a partition tuple) as :func:`group_key` columns named
    ``names``, in field order. They are taken from one combined array: a column of a chunk
    per manifest whose struct has a field per partition field of every spec cost chunks x
    fields per field taken chunk by chunk."""
    whole = pa.chunked_array([struct.combine_chunks()], struct.type)
    return {name: group_key(pc.struct_field(whole, [i])) for i, name in enumerate(names)}


def from_group_key(col: pa.ChunkedArray, t: pa.DataType) -> pa.ChunkedArray:
    """Grouped keys (:func:`group_key`) cast to ``t`` (or its storage type) and typed ``t``
    again."""
    storage = t.storage_type if isinstance(t, pa.BaseExtensionType) else t
    if pa.types.is_nested(storage):
        return pa.chunked_array([pa.nulls(len(col), t)], t)
    return from_extension_storage(col.cast(storage), t)
