"""The partition statistics file format (spec "Partition Statistics"): its schema and reader.

One row per (spec id, partition) of a snapshot: data record, file and size totals, position and
equality delete counts, deletion vectors (v3), and the newest snapshot that touched the
partition. The ``partition`` struct has the table's unified partition type, every partition
field of every spec whose source column still exists, ordered by field id, each optional and
named and typed as in the newest spec holding it (Iceberg Java's ``Partitioning.partitionType``).
Counts 6-9 are required from v3 on and ``dv_count`` (v3 only) defaults to 0.

Files are read by field id, so Iceberg Java's files (Parquet) read as icefloe's do.
"""

from __future__ import annotations

import pyarrow as pa

from icefloe.arrow_schema import schema_to_arrow
from icefloe.exceptions import CorruptFileError, UnsupportedFeatureError, ValidationError
from icefloe.io import FileIO
from icefloe.metadata import TableMetadata
from icefloe.read.parquet_file import DECODE_ERRORS, corrupt_error, open_checked, open_file
from icefloe.read.projection import FileColumns, project_field
from icefloe.schema import Schema
from icefloe.types import IcebergType, IntegerType, LongType, NestedField, StructType

__all__ = [
    "COUNT_COLUMNS",
    "partition_statistics_schema",
    "read_partition_statistics",
    "unified_partition_type",
]

#: The summed columns, in file order (``dv_count`` only from v3 on).
COUNT_COLUMNS = (
    "data_record_count",
    "data_file_count",
    "total_data_file_size_in_bytes",
    "position_delete_record_count",
    "position_delete_file_count",
    "equality_delete_record_count",
    "equality_delete_file_count",
    "dv_count",
)


def unified_partition_type(metadata: TableMetadata) -> StructType:
    """Every partition field of every spec whose source column is in the current schema, by
    field id; name and type from the newest spec holding the field (a void transform yields
    to a real one, as a dropped v1 field does in Java)."""
    schema = metadata.current_schema()
    chosen: dict[int, tuple[str, IcebergType, bool]] = {}
    for spec in sorted(metadata.partition_specs, key=lambda s: s.spec_id, reverse=True):
        for pf in spec.fields:
            if schema.find_column_name(pf.source_id) is None:
                continue
            t = pf.transform.result_type(schema.find_type(pf.source_id))
            have = chosen.get(pf.field_id)
            if have is None:
                chosen[pf.field_id] = (pf.name, t, pf.transform.is_void)
            elif have[2] and not pf.transform.is_void:
                chosen[pf.field_id] = (have[0], t, False)
    return StructType(
        *(NestedField(fid, name, t, False) for fid, (name, t, _) in sorted(chosen.items()))
    )


def partition_statistics_schema(partition_type: StructType, format_version: int) -> Schema:
    """The file schema for a unified partition type and table format version."""
    if not partition_type.fields:
        raise ValidationError("partition statistics need a partitioned table")
    v3 = format_version >= 3
    longs = {"data_record_count", "total_data_file_size_in_bytes"}
    fields = [
        NestedField(1, "partition", partition_type, True),
        NestedField(2, "spec_id", IntegerType(), True),
    ]
    for i, name in enumerate(COUNT_COLUMNS[:7], start=3):
        t = LongType() if name in longs or name.endswith("record_count") else IntegerType()
        fields.append(NestedField(i, name, t, i <= 5 or v3))
    fields += [
        NestedField(10, "total_record_count", LongType()),
        NestedField(11, "last_updated_at", LongType()),
        NestedField(12, "last_updated_snapshot_id", LongType()),
    ]
    if v3:
        fields.append(
            NestedField(13, "dv_count", IntegerType(), True, initial_default=0, write_default=0)
        )
    return Schema(*fields)


def read_partition_statistics(io: FileIO, path: str, schema: Schema) -> pa.Table:
    """The rows of a partition statistics file projected onto ``schema`` by field id (a
    partition field the file lacks reads as null, ``dv_count`` as 0). Raises
    :class:`CorruptFileError` when the file is not a readable Parquet file of that shape,
    including a null in a column the schema requires."""
    if not path.lower().endswith(".parquet"):
        raise UnsupportedFeatureError(f"{path}: only Parquet partition statistics files are read")
    with open_file(io, path) as handle:
        checked = open_checked(io, path, handle=handle)
        try:
            data = checked.file.read()
        except DECODE_ERRORS as e:
            raise corrupt_error(path, e) from e
    cols = FileColumns(data.schema)
    target = schema_to_arrow(schema)
    arrays = []
    for field in schema.fields:
        hit = cols.top_level(field.field_id)
        arr = data.column(hit[0]) if hit is not None else None
        try:
            out = project_field(arr, field, data.num_rows, path, {})
        except ValidationError as e:
            raise CorruptFileError(f"{path}: not a partition statistics file: {e}") from e
        if field.required and out.null_count:
            raise CorruptFileError(
                f"{path}: not a partition statistics file: required column {field.name!r} "
                f"(id {field.field_id}) holds {out.null_count} null(s)"
            )
        arrays.append(out)
    return pa.Table.from_arrays(arrays, schema=target)
