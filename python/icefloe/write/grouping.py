"""Grouping a write's rows: partition values from the transforms, the table's sort order as
Arrow sort keys (floats in the spec's order), the runs of equal partition tuples in sorted rows,
and one dense code per partition tuple.

:mod:`icefloe.write.writer` sorts and splits the rows of one write with these.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_fill import extension_storage, group_key
from icefloe.arrow_schema import type_to_arrow
from icefloe.exceptions import ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.sorting import NullOrder, SortDirection, SortOrder
from icefloe.transforms import IdentityTransform, TruncateTransform
from icefloe.types import StructType

__all__ = [
    "group_bounds",
    "partition_arrays",
    "partition_group_codes",
    "partition_values",
    "sort_keys",
]


def _source_array(table: pa.Table, schema: Schema, source_id: int) -> pa.ChunkedArray:
    ancestors = schema.ancestors(source_id)
    fld = schema.find_field(source_id)
    chain = [*ancestors, fld]
    arr: pa.ChunkedArray = table.column(chain[0].name)
    parent_type = chain[0].field_type
    for f in chain[1:]:
        if not isinstance(parent_type, StructType):
            raise ValidationError(f"partition source {fld.name!r} is inside a list or map")
        idx = [c.field_id for c in parent_type.fields].index(f.field_id)
        arr = pc.struct_field(arr, [idx])
        parent_type = f.field_type
    return arr


def partition_arrays(table: pa.Table, schema: Schema, spec: PartitionSpec) -> list[pa.ChunkedArray]:
    ptype = spec.partition_type(schema)
    out = []
    for pf, nf in zip(spec.fields, ptype.fields, strict=True):
        if pf.source_ids is not None and len(pf.source_ids) > 1:
            raise ValidationError(f"cannot write partition field {pf.name!r}: multi-argument")
        src = _source_array(table, schema, pf.source_id)
        if pf.transform.is_void:
            res = pa.chunked_array([pa.nulls(len(src), type_to_arrow(nf.field_type))])
        else:
            res = pf.transform.apply(src)
        want = type_to_arrow(nf.field_type)
        if isinstance(want, pa.BaseExtensionType):
            want = want.storage_type
        res = extension_storage(res)
        if res.type != want:
            res = res.cast(want)
        if pa.types.is_decimal(want) and isinstance(pf.transform, TruncateTransform):
            _check_decimal_fits(res, pf.name)
        out.append(res)
    return out


def _check_decimal_fits(values: pa.ChunkedArray, name: str) -> None:
    """Truncating a decimal rounds down to a multiple of the width, which can need one digit
    more than the column's precision (``-99.99`` in ``decimal(4, 2)`` by ``truncate[50]`` is
    ``-100.00``): such a partition value cannot be stored."""
    try:
        values.validate(full=True)
    except pa.ArrowInvalid as e:
        raise ValidationError(
            f"partition field {name!r}: a truncated value does not fit the column's decimal "
            f"type ({e}); widen the column or use a width that divides its range"
        ) from None


def sort_keys(
    table: pa.Table, schema: Schema, order: SortOrder
) -> list[tuple[pa.ChunkedArray, str]]:
    """Arrow sort keys for ``order``: per field, where its nulls go, then its values (floats
    as :func:`_float_order_key`)."""
    keys: list[tuple[pa.ChunkedArray, str]] = []
    for sf in order.fields:
        src = _sort_source(table, schema, sf.source_id)
        arr = src if isinstance(sf.transform, IdentityTransform) else sf.transform.apply(src)
        arr = extension_storage(arr)
        if arr.type in _FLOAT_BITS:
            arr = _float_order_key(arr)
        nulls_first = sf.null_order == NullOrder.NULLS_FIRST
        keys.append((pc.is_null(arr), "descending" if nulls_first else "ascending"))
        desc = sf.direction == SortDirection.DESC
        keys.append((arr, "descending" if desc else "ascending"))
    return keys


def _sort_source(table: pa.Table, schema: Schema, source_id: int) -> pa.ChunkedArray:
    """A sort field's source column; a nested one, or one inside a list or map (an order
    written elsewhere), cannot order rows."""
    name = schema.find_column_name(source_id)
    if not schema.find_type(source_id).is_primitive:
        raise ValidationError(
            f"cannot sort by non-primitive column {name!r} (replace the table's sort order)"
        )
    if not all(isinstance(a.field_type, StructType) for a in schema.ancestors(source_id)):
        raise ValidationError(
            f"cannot sort by column {name!r}: it is inside a list or map (replace the "
            f"table's sort order)"
        )
    return _source_array(table, schema, source_id)


#: The integer type of the same width as each float type, and its largest value.
_FLOAT_BITS = {
    pa.float32(): (pa.int32(), 2**31 - 1),
    pa.float64(): (pa.int64(), 2**63 - 1),
}


def _float_order_key(arr: pa.ChunkedArray) -> pa.ChunkedArray:
    """Floats as signed integers in the spec's order of floating point values, ``-NaN <
    -Infinity < -value < -0 < 0 < value < Infinity < NaN`` (which Arrow's sort does not
    follow): the bits, with all but the sign bit flipped for negative values."""
    itype, low_bits = _FLOAT_BITS[arr.type]
    bits = pa.chunked_array([c.view(itype) for c in arr.chunks], type=itype)
    negative = pc.less(bits, pa.scalar(0, itype))
    flip = pc.if_else(negative, pa.scalar(low_bits, itype), pa.scalar(0, itype))
    return pc.bit_wise_xor(bits, flip)


def _changes(arr: pa.ChunkedArray) -> pa.Array:
    """Booleans: row i+1 differs from row i (nulls equal to nulls)."""
    a = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    left, right = a.slice(0, len(a) - 1), a.slice(1)
    ne = pc.not_equal(left, right)
    return pc.coalesce(ne, pc.xor(left.is_null(), right.is_null()))


def group_bounds(parts: list[pa.ChunkedArray], n: int) -> list[tuple[int, int]]:
    if n == 0:
        return []
    if not parts or n == 1:
        return [(0, n)]
    changed = _changes(parts[0])
    for p in parts[1:]:
        changed = pc.or_(changed, _changes(p))
    starts = [0] + [int(i) + 1 for i in pc.indices_nonzero(changed).to_pylist()]
    ends = [*starts[1:], n]
    return list(zip(starts, ends, strict=True))


def partition_group_codes(parts: list[pa.ChunkedArray]) -> pa.Array | None:
    """One dense int64 code per distinct partition tuple (nulls included), or None."""
    if not parts:
        return None
    key: pa.Array | None = None
    for p in parts:
        # extension values by their storage, a void of a variant column's struct-typed nulls
        # as plain nulls (see group_key)
        chunked = p if isinstance(p, pa.ChunkedArray) else pa.chunked_array([p])
        arr = group_key(chunked).combine_chunks()
        enc = pc.dictionary_encode(arr, null_encoding="encode")
        codes = enc.indices.cast(pa.int64())
        if key is None:
            key = codes
        else:
            # Re-densify the running key so the combined code space stays small.
            dense = pc.dictionary_encode(key).indices.cast(pa.int64())
            width = len(enc.dictionary)
            key = pc.add(pc.multiply(dense, width), codes)
    return key


def partition_values(pf: PartitionField, values: pa.Array) -> list[Any]:
    """One partition's values as Python values (one per group of rows)."""
    try:
        return list(values.to_pylist())
    except (OverflowError, ValueError) as e:
        # Python's dates end with year 9999; Iceberg's (int days, long micros) do not
        raise ValidationError(
            f"partition field {pf.name!r}: a value is outside the years 1-9999 that icefloe "
            f"can name a partition by ({e}); write such dates and times unpartitioned or "
            "through a transform that keeps them in range (year, month)"
        ) from None
