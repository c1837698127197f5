"""Which of a delete's keys can be in a partition.

An equality delete file applies only within its partition, so deleting by keys writes one file
per partition that may hold them. When a partition field is the identity, a bucket or a
truncation of a key column, a key can only live in the partitions its value transforms to:
each file then holds those keys alone, not every key (a table bucketed 16 ways by its key
writes and reads a sixteenth of the keys per partition).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_schema import type_to_arrow
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import BucketTransform, IdentityTransform, TruncateTransform
from icefloe.types import IntegerType, LongType, StringType

__all__ = ["KeyRouter"]

#: Partition value types compared as Python values (manifests and Arrow agree on them).
_COMPARABLE = (IntegerType, LongType, StringType)
_TRANSFORMS = (IdentityTransform, BucketTransform, TruncateTransform)


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
        self.keys = keys
        self._schema = schema
        self._specs = specs
        self._by_id: dict[int, str] = {}
        for name in join_cols:
            fid = schema.find_field_id(name, case_sensitive)
            if fid is not None:
                self._by_id[fid] = name
        self._arrays: dict[tuple[int, int], pa.Array | None] = {}
        self._routed_keys: dict[tuple[Any, ...], pa.Table] = {}

    def _routed(self, spec: PartitionSpec, i: int) -> pa.Array | None:
        """The partition values of every key for field ``i`` of ``spec``, when the field is a
        routable transform of a key column; else None."""
        cache_key = (spec.spec_id, i)
        if cache_key in self._arrays:
            return self._arrays[cache_key]
        pf = spec.fields[i]
        out: pa.Array | None = None
        name = self._by_id.get(pf.source_id)
        if name is not None and pf.source_ids is None and isinstance(pf.transform, _TRANSFORMS):
            source = self._schema.find_field(pf.source_id).field_type
            if isinstance(pf.transform.result_type(source), _COMPARABLE):
                column = self.keys.column(name).combine_chunks()
                try:
                    want = type_to_arrow(source)
                    if column.type != want:
                        column = column.cast(want)
                    out = pf.transform.apply(column)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                    out = None  # the writer raises the typed error for such keys
        self._arrays[cache_key] = out
        return out

    def keys_for(self, spec_id: int, partition: Sequence[Any]) -> pa.Table:
        """The keys that can be in the data files of ``partition`` (of spec ``spec_id``)."""
        spec = self._specs.get(spec_id)
        if spec is None or not spec.fields:
            return self.keys
        conditions: list[tuple[int, Any]] = []
        for i in range(min(len(spec.fields), len(partition))):
            if self._routed(spec, i) is not None:
                conditions.append((i, partition[i]))
        if not conditions:
            return self.keys
        cache_key = (spec_id, *conditions)
        hit = self._routed_keys.get(cache_key)
        if hit is not None:
            return hit
        mask: pa.Array | None = None
        for i, value in conditions:
            arr = self._routed(spec, i)
            assert arr is not None
            one = pc.is_null(arr) if value is None else pc.fill_null(pc.equal(arr, value), False)
            mask = one if mask is None else pc.and_(mask, one)
        routed = self.keys.filter(mask)
        self._routed_keys[cache_key] = routed
        return routed
