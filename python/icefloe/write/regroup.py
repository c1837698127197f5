"""Rows of a table regrouped natively on every core: by partition key, or by index.

A partitioned write used to sort its rows by partition and ``take`` them. pyarrow's ``take``
runs on one thread, copies each string value with its own ``memcpy`` and reads the whole
source once per partition: regrouping a million rows of a 60-column table took about two
seconds. :func:`regroup` scatters each row to its partition's next slot instead (one pass over
each column, columns in parallel, see ``rust/regroup.rs``); :func:`take_rows` gathers rows by
index (a write sorted by the table's sort order) in pieces taken in parallel. Both leave
columns of other types (extension types, unions, views) to pyarrow.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from icefloe import _native
from icefloe.write.input import invalid_values

__all__ = ["native_takeable", "regroup", "take_rows"]

#: Columns whose Arrow data reaches this size stay with pyarrow: a column of several chunks is
#: combined into one array first, whose 32-bit string offsets this keeps in range.
MAX_NATIVE_BYTES = 1 << 30

#: Keys may exceed the row count by this much before they are made dense (the native kernel
#: allocates a counter per key value).
KEY_SLACK = 1 << 20

#: Index lists shorter than this are taken by pyarrow (no threads to start for a few rows).
MIN_NATIVE_ROWS = 32 * 1024


def native_takeable(t: pa.DataType) -> bool:
    """Whether the native gather takes columns of type ``t`` (recursively: the children of
    lists, structs and maps too)."""
    if isinstance(t, pa.ExtensionType):
        return False
    if (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or pa.types.is_decimal(t)
        or pa.types.is_temporal(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return True
    if pa.types.is_dictionary(t):
        return native_takeable(t.value_type)
    if pa.types.is_map(t):
        return native_takeable(t.key_type) and native_takeable(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return native_takeable(t.value_type)
    if pa.types.is_struct(t):
        return all(native_takeable(t.field(i).type) for i in range(t.num_fields))
    return False


def take_rows(table: pa.Table, indices: pa.Array, threads: int) -> pa.Table:
    """``table.take(indices)`` for ``indices`` of non-null row numbers; the columns
    :func:`native_takeable` accepts gathered natively on ``threads`` threads, as up to
    ``threads`` chunks each."""
    native = _native_columns(table)
    if threads < 2 or len(indices) < MIN_NATIVE_ROWS or not native:
        return table.take(indices)
    idx = indices.cast(pa.uint64())
    arrays = [_one_array(table.column(i)) for i in native]
    pieces = _native.take_arrays(arrays, idx, threads, threads)
    columns: list[pa.ChunkedArray] = list(table.columns)
    for i, chunks in zip(native, pieces, strict=True):
        columns[i] = pa.chunked_array(chunks, type=table.schema.field(i).type)
    for i in set(range(table.num_columns)).difference(native):
        columns[i] = columns[i].take(indices)
    return pa.Table.from_arrays(columns, schema=table.schema)


def _one_array(col: pa.ChunkedArray) -> pa.Array:
    """``col`` as one array; its only chunk as it is (``combine_chunks`` copies even that)."""
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


def _native_columns(table: pa.Table) -> list[int]:
    return [
        i
        for i, col in enumerate(table.columns)
        if native_takeable(col.type) and col.nbytes < MAX_NATIVE_BYTES
    ]


def regroup(
    table: pa.Table, key: pa.Array | pa.ChunkedArray, threads: int
) -> tuple[pa.Table, list[tuple[int, int]], pa.Array]:
    """``table``'s rows grouped by ``key`` (one non-negative int64 per row, no nulls): groups
    in ascending key order and rows in their order within each, as a ``take`` of a stable
    sort by key gives them. Returns the regrouped table, the ``(start, end)`` of each group in
    it, and the input row of each group's first row. A column Arrow refuses on its way (a
    string that is not UTF-8, say) is the :class:`ValidationError` naming it."""
    try:
        return _regroup(table, key, threads)
    except pa.ArrowException:
        invalid = invalid_values(zip(table.column_names, table.columns, strict=True))
        if invalid is None:
            raise
        raise invalid from None


def _regroup(
    table: pa.Table, key: pa.Array | pa.ChunkedArray, threads: int
) -> tuple[pa.Table, list[tuple[int, int]], pa.Array]:
    if isinstance(key, pa.ChunkedArray):
        key = _one_array(key)
    if len(key) and pc.max(key).as_py() >= len(key) + KEY_SLACK:
        key = pc.subtract(pc.rank(key, tiebreaker="dense"), 1).cast(pa.int64())
    native = _native_columns(table)
    arrays = [_one_array(table.column(i)) for i in native]
    others = sorted(set(range(table.num_columns)).difference(native))
    out, groups, perm = _native.regroup_by_key(
        arrays, key.cast(pa.int64()), threads, permutation=bool(others)
    )
    columns: list[pa.ChunkedArray] = list(table.columns)
    for i, arr in zip(native, out, strict=True):
        columns[i] = pa.chunked_array([arr], type=table.schema.field(i).type)
    for i in others:
        columns[i] = columns[i].take(perm)
    bounds = []
    at = 0
    for _, rows in groups:  # one step per partition
        bounds.append((at, at + rows))
        at += rows
    firsts = pa.array([first for first, _ in groups], pa.int64())
    return pa.Table.from_arrays(columns, schema=table.schema), bounds, firsts
