"""Which of a delete's keys can be in a partition.

An equality delete file applies only within its partition, so deleting by keys writes one file
per partition that may hold them. When a partition field is the identity, a bucket or a
truncation of a key column, a key can only live in the partitions its value transforms to:
each file then holds those keys alone, not every key (a table bucketed 16 ways by its key
writes and reads a sixteenth of the keys per partition).

The keys' partition values (computed in Arrow) are compared with the planned files' partition
tuples, which hold dates, times and timestamps as integer counts (days, micro- or nanoseconds),
decimals as ``Decimal`` and binary, fixed and uuid values as ``bytes``: both sides are brought to
one form first (the Python forms of :mod:`icefloe.values` are accepted too). Float and double
fields are not routed (they cannot be equality delete columns); a partition value that does not
convert leaves its field unrouted, so the file gets every key.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_schema import schema_to_arrow
from icefloe.exceptions import ValidationError
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import BucketTransform, IdentityTransform, TruncateTransform
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    FixedType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from icefloe.values import to_physical
from icefloe.write.coerce import coerce_column

__all__ = ["KeyRouter", "typed_keys"]

_TRANSFORMS = (IdentityTransform, BucketTransform, TruncateTransform)
#: Partition types compared as integer counts: days, microseconds, or nanoseconds (``_NANOS``).
_COUNTS = (
    DateType,
    TimeType,
    TimestampType,
    TimestamptzType,
    TimestampNanoType,
    TimestamptzNanoType,
)
_NANOS = (TimestampNanoType, TimestamptzNanoType)
#: Partition types compared as ``bytes``.
_BYTES = (BinaryType, FixedType, UUIDType)
#: Partition types whose Python values Arrow compares as they are.
_PLAIN = (BooleanType, IntegerType, LongType, StringType, DecimalType)
_ROUTABLE = _COUNTS + _BYTES + _PLAIN

_CONVERSION_ERRORS = (
    ValidationError,
    TypeError,
    ValueError,
    OverflowError,
    ArithmeticError,
    pa.ArrowInvalid,
    pa.ArrowTypeError,
    pa.ArrowNotImplementedError,
)


def typed_keys(keys: pa.ChunkedArray, field: NestedField) -> pa.ChunkedArray:
    """``keys`` of column ``field`` as the equality delete writer types them (by the rules of
    writes); raises :class:`ValidationError` for keys it refuses."""
    want = schema_to_arrow(Schema(field)).field(0)
    return keys if keys.type == want.type else coerce_column(keys, field, want)


def _comparable(values: pa.Array) -> pa.Array:
    """Partition values in the form :func:`_partition_scalar` gives a manifest's: dates, times
    and timestamps as int64 counts of their unit, uuid and fixed values as binary, the rest
    unchanged."""
    if isinstance(values, pa.ExtensionArray):
        values = values.storage
    t = values.type
    if pa.types.is_date32(t):
        return values.cast(pa.int32()).cast(pa.int64())
    if pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_time(t):
        return values.cast(pa.int64())
    if pa.types.is_fixed_size_binary(t):
        return values.cast(pa.binary())
    return values


def _partition_scalar(value: Any, t: IcebergType, arrow_type: pa.DataType) -> pa.Scalar:
    """The non-null partition value ``value`` of type ``t`` as a scalar comparable with the
    :func:`_comparable` array of type ``arrow_type``; raises when it does not convert."""
    if isinstance(t, _COUNTS + _BYTES):
        # manifests give temporal values as their counts already
        counted = isinstance(value, int) and not isinstance(value, bool)
        return pa.scalar(value if counted else to_physical(t, value), arrow_type)
    if isinstance(t, DecimalType) and not isinstance(value, Decimal):
        value = Decimal(operator.index(value))
    return pa.scalar(value, arrow_type)


class KeyRouter:
    """Splits ``keys`` (columns named as the table's ``join_cols``) by partition."""

    def __init__(
        self,
        schema: Schema,
        specs: dict[int, PartitionSpec],
        keys: pa.Table,
        join_cols: Sequence[str],
        case_sensitive: bool = True,
    ) -> None:
        self._schema = schema
        self._specs = specs
        self._by_id: dict[int, str] = {}
        for name in join_cols:
            fid = schema.find_field_id(name, case_sensitive)
            if fid is not None:
                self._by_id[fid] = name
                # typed as the writer types them: routing filters them (pyarrow has no take
                # of view types, for one) and the routed tables are what the writer gets
                i = keys.schema.get_field_index(name)
                if i >= 0:
                    try:
                        typed = typed_keys(keys.column(i), schema.find_field(fid))
                    except (ValidationError, pa.ArrowException):
                        continue  # the writer raises it, naming the keys
                    if typed.type != keys.schema.field(i).type:
                        field = keys.schema.field(i).with_type(typed.type)
                        keys = keys.set_column(i, field, typed)
        self.keys = keys
        self._arrays: dict[tuple[int, int], tuple[pa.Array, IcebergType] | None] = {}
        self._routed_keys: dict[tuple[Any, ...], pa.Table] = {}

    def _routed(self, spec: PartitionSpec, i: int) -> tuple[pa.Array, IcebergType] | None:
        """The partition values of every key for field ``i`` of ``spec`` (see
        :func:`_comparable`) and the field's type, when the field is a routable transform of a
        key column; else None."""
        cache_key = (spec.spec_id, i)
        if cache_key in self._arrays:
            return self._arrays[cache_key]
        pf = spec.fields[i]
        out: tuple[pa.Array, IcebergType] | None = None
        name = self._by_id.get(pf.source_id)
        if name is not None and pf.source_ids is None and isinstance(pf.transform, _TRANSFORMS):
            field = self._schema.find_field(pf.source_id)
            try:
                result = pf.transform.result_type(field.field_type)
            except ValidationError:
                result = None
            if isinstance(result, _ROUTABLE):
                try:
                    column = typed_keys(self.keys.column(name), field).combine_chunks()
                    out = (_comparable(pf.transform.apply(column)), result)
                except (
                    ValidationError,
                    pa.ArrowInvalid,
                    pa.ArrowNotImplementedError,
                    pa.ArrowTypeError,
                ):
                    out = None  # the writer raises the typed error for such keys
        self._arrays[cache_key] = out
        return out

    def keys_for(self, spec_id: int, partition: Sequence[Any]) -> pa.Table:
        """The keys that can be in the data files of ``partition`` (of spec ``spec_id``)."""
        spec = self._specs.get(spec_id)
        if spec is None or not spec.fields:
            return self.keys
        conditions: list[tuple[int, Any]] = []
        scalars: list[pa.Scalar | None] = []
        for i in range(min(len(spec.fields), len(partition))):
            routed = self._routed(spec, i)
            if routed is None:
                continue
            value = partition[i]
            scalar = None
            if value is not None:
                try:
                    scalar = _partition_scalar(value, routed[1], routed[0].type)
                except _CONVERSION_ERRORS:
                    continue  # not comparable: every key may be in this partition
            conditions.append((i, None if scalar is None else scalar.as_py()))
            scalars.append(scalar)
        if not conditions:
            return self.keys
        cache_key = (spec_id, *conditions)
        hit = self._routed_keys.get(cache_key)
        if hit is not None:
            return hit
        mask: pa.Array | None = None
        for (i, _), scalar in zip(conditions, scalars, strict=True):
            routed = self._routed(spec, i)
            assert routed is not None
            arr = routed[0]
            one = pc.is_null(arr) if scalar is None else pc.fill_null(pc.equal(arr, scalar), False)
            mask = one if mask is None else pc.and_(mask, one)
        routed_keys = self.keys.filter(mask)
        self._routed_keys[cache_key] = routed_keys
        return routed_keys
