"""The partition types of manifests: the schema a spec's manifests are written under, and
entries read from older manifests cast to it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from icefloe.exceptions import ValidationError
from icefloe.metadata import TableMetadata
from icefloe.partitioning import partition_source_schema
from icefloe.write.files import manifest_arrow_schema

if TYPE_CHECKING:
    from icefloe.partitioning import PartitionSpec
    from icefloe.schema import Schema

__all__ = ["cast_partition_type", "spec_schema"]


def spec_schema(metadata: TableMetadata, spec: PartitionSpec) -> Schema:
    """The schema manifests of ``spec`` are written under: the current one, with the spec's
    source columns dropped since typed from the table's older schemas (see
    :func:`~icefloe.partitioning.partition_source_schema`)."""
    return partition_source_schema(spec, metadata.current_schema(), metadata.schemas)


def cast_partition_type(
    batch: pa.RecordBatch, version: int, schema: Schema, spec: PartitionSpec
) -> pa.RecordBatch:
    """``batch`` (manifest entries) with its partition tuples cast to the partition type of
    ``spec`` under ``schema`` (from :func:`spec_schema`): entries read from a manifest written
    before a partition source was promoted (int to long, a wider decimal) hold the older,
    narrower type; those of a manifest written with a dropped source typed ``unknown`` hold
    bytes. A tuple that cannot take the spec's type raises :class:`ValidationError`."""
    i = batch.schema.get_field_index("partition")
    if i < 0:
        return batch
    want = manifest_arrow_schema(version, schema, spec).field("partition").type
    have = batch.column(i).type
    if have == want or [f.name for f in have] != [f.name for f in want]:
        return batch
    try:
        cast = batch.column(i).cast(want)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise ValidationError(
            f"partition tuples of spec {spec.spec_id} ({have}) cannot take the spec's "
            f"partition type {want}: {e}"
        ) from e
    return batch.set_column(i, batch.schema.field(i).with_type(want), cast)
