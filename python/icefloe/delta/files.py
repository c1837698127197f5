"""Delta add actions as Iceberg manifest entries, built column by column.

Data files keep Delta's own Parquet files: the path is made absolute against the table root,
``record_count`` is ``numRecords``, the partition tuple comes from ``partitionValues`` (keyed by
physical name; ``null``, a missing key and the empty string are null), ``first_row_id`` is
``baseRowId`` and the entry's data and file sequence numbers are ``defaultRowCommitVersion``
(else the version that added the file): Iceberg's inherited ``_last_updated_sequence_number``
then equals Delta's row commit version. Files without ``numRecords`` have their Parquet footer read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe.delta.schema import DeltaColumn
from icefloe.delta.stats import file_metrics
from icefloe.exceptions import DeltaLogError
from icefloe.io import FileIO
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    IcebergType,
    TimestampType,
    TimestamptzType,
)
from icefloe.write.files import manifest_arrow_schema

__all__ = ["PartitionColumn", "absolute_paths", "data_entries", "partition_values"]


@dataclass(frozen=True)
class PartitionColumn:
    """A partition field and the physical name its values are keyed by."""

    name: str  # the partition field name (the logical column name)
    physical_name: str
    field_id: int
    # the column's Delta type name ("byte", "short", ...); "" when not known. Delta's byte and
    # short become Iceberg int: their values are checked against the narrower range.
    delta_type: str = ""


# The ranges of the Delta integer types narrower than the Iceberg int they become.
_NARROW_INTS = {"byte": (-(2**7), 2**7 - 1), "short": (-(2**15), 2**15 - 1)}


def absolute_paths(root: str, paths: pa.Array) -> pa.Array:
    """Decoded Delta paths made absolute (relative ones are under ``root``)."""
    root = root.rstrip("/")
    # Absolute: a path from the root, or a URI (``s3://...``, Hadoop's ``file:/...``).
    joined = pc.binary_join_element_wise(pa.scalar(root), paths, "/")
    rooted = pc.starts_with(paths, "/")
    if not pc.any(rooted).as_py() and not pc.any(pc.match_substring(paths, ":/")).as_py():
        return joined  # all relative, as Delta writes them (one cheap scan, no regex)
    uri = pc.match_substring_regex(paths, r"^[A-Za-z][A-Za-z0-9+.\-]*:/")
    return pc.if_else(pc.or_(rooted, uri), paths, joined)


def partition_values(
    values: pa.Array, columns: list[PartitionColumn], schema: Schema, type_: pa.DataType
) -> pa.Array:
    n = len(values)
    if not columns:
        return pa.StructArray.from_arrays([], fields=[]) if n == 0 else pa.array([{}] * n, type_)
    children = []
    for pcol, field in zip(columns, type_, strict=True):
        raw = pc.map_lookup(values, pa.scalar(pcol.physical_name), "first")
        raw = pc.if_else(pc.equal(raw, ""), pa.scalar(None, pa.string()), raw)
        t = schema.find_field(pcol.field_id).field_type
        try:
            typed = _typed_partition(raw, t, field.type, pcol.delta_type)
            children.append(pc.cast(typed, field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            raise _bad_partition_value(raw, t, field.type, pcol) from None
    return pa.StructArray.from_arrays(children, fields=list(type_))


def _bad_partition_value(
    raw: pa.Array, t: IcebergType, arrow: pa.DataType, pcol: PartitionColumn
) -> DeltaLogError:
    """The error naming the first of ``raw`` (a partition column's strings) that is not a
    value of ``t`` (of the column's Delta type, when known)."""
    name, kind = pcol.name, pcol.delta_type or t
    for value in raw.to_pylist():
        if value is None:
            continue
        try:
            _typed_partition(pa.array([value], pa.string()), t, arrow, pcol.delta_type).cast(arrow)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return DeltaLogError(
                f"Delta partition column {name!r} holds {value!r}, which is not a valid {kind}"
            )
    return DeltaLogError(f"Delta partition column {name!r} holds values that are not {kind}")


def _typed_partition(
    raw: pa.Array, t: IcebergType, arrow: pa.DataType, delta_type: str = ""
) -> pa.Array:
    """A partition column's strings (Delta's serialisation) as values of ``t``; a value that
    is not one of ``t`` (or of ``delta_type``, a narrower Delta integer type) raises
    ``pa.ArrowInvalid``."""
    if isinstance(t, TimestamptzType | TimestampType):
        tz = "UTC" if isinstance(t, TimestamptzType) else None
        text = pc.replace_substring(raw, " ", "T")
        if tz is not None:  # values without an offset are UTC (Spark with UTC sessions)
            has_zone = pc.match_substring_regex(text, r"(Z|[+-]\d\d:?\d\d)$")
            zoned = pc.binary_join_element_wise(text, pa.scalar("Z"), "")
            text = pc.if_else(pc.fill_null(has_zone, True), text, zoned)
        else:
            text = pc.replace_substring_regex(text, r"(Z|[+-]00:?00)$", "")
        return pc.cast(text, pa.timestamp("us", tz))
    if isinstance(t, BooleanType):
        # "true" or "false" in any case, as Delta's readers take them; nothing else
        lower = pc.utf8_lower(raw)
        known = pc.is_in(lower, value_set=pa.array(["true", "false"]))
        if not pc.all(pc.fill_null(known, True)).as_py():
            raise pa.ArrowInvalid("not a boolean")
        return pc.equal(lower, "true")
    if isinstance(t, BinaryType):
        return pc.cast(raw, pa.binary())
    if isinstance(t, DateType):
        return pc.cast(raw, pa.date32())
    typed = pc.cast(raw, arrow)
    if delta_type in _NARROW_INTS:
        low, high = _NARROW_INTS[delta_type]
        outside = pc.or_(pc.less(typed, low), pc.greater(typed, high))
        if pc.any(outside).as_py():
            raise pa.ArrowInvalid(f"not a {delta_type}")
    return typed


def _check_counts(files: pa.Table, records: pa.Array, null_counts: pa.Array) -> None:
    """Refuse statistics whose counts are negative (:class:`DeltaLogError` naming the file):
    they would become manifest counts every scan then refuses."""
    bad = pc.fill_null(pc.less(records, 0), False).to_numpy(zero_copy_only=False)
    offsets = null_counts.offsets.to_numpy()
    counts = null_counts.items.slice(offsets[0], offsets[-1] - offsets[0])
    negative = pc.fill_null(pc.less(counts, 0), False).to_numpy(zero_copy_only=False)
    if negative.any():
        rows = np.repeat(np.arange(len(null_counts)), np.diff(offsets))[negative]
        bad[rows] = True
    if bad.any():
        row = files.slice(int(np.argmax(bad)), 1).to_pylist()[0]
        raise DeltaLogError(
            f"malformed Delta statistics for {row['path']} (version {row['version']}): "
            "numRecords or a nullCount is negative"
        )


def _footer_counts(io: FileIO, paths: pa.Array) -> pa.Array:
    out = []
    for p in paths.to_pylist():  # only files whose stats lack numRecords (rare)
        try:
            with io.new_input(p).open() as f:
                out.append(pq.ParquetFile(f).metadata.num_rows)
        except Exception as e:
            raise DeltaLogError(
                f"data file {p} has no numRecords and no readable footer: {e}", p
            ) from e
    return pa.array(out, pa.int64())


def _as(a: pa.Array, t: pa.DataType) -> pa.Array:
    return a if a.type == t else pc.cast(a, t)


def data_entries(
    io: FileIO,
    root: str,
    files: pa.Table,
    columns: list[DeltaColumn],
    partitions: list[PartitionColumn],
    schema: Schema,
    spec: PartitionSpec,
) -> pa.RecordBatch:
    """Manifest entries (status added) for the live files ``files`` (``FILE_ACTIONS`` rows)."""
    target = manifest_arrow_schema(3, schema, spec)
    n = files.num_rows
    paths = absolute_paths(root, files.column("path").combine_chunks())
    parsed = files.column("stats_parsed") if "stats_parsed" in files.column_names else None
    metrics = file_metrics(files.column("stats"), columns, parsed)
    records = metrics.num_records
    _check_counts(files, records, metrics.null_value_counts)
    if records.null_count:
        missing = pc.is_null(records)
        counts = _footer_counts(io, paths.filter(missing))
        idx = pc.indices_nonzero(missing)
        filled = records.to_numpy(zero_copy_only=False).copy()
        filled[idx.to_numpy()] = counts.to_numpy()
        records = pa.array(filled.astype("int64"))
    version = files.column("version").combine_chunks()
    seq = pc.coalesce(files.column("default_row_commit_version").combine_chunks(), version)
    part = partition_values(
        files.column("partition_values").combine_chunks(),
        partitions,
        schema,
        target.field("partition").type,
    )
    nulls = {name: pa.nulls(n, target.field(name).type) for name in target.names}
    cols = dict(nulls)
    cols.update(
        status=pa.repeat(pa.scalar(1, pa.int32()), n),
        sequence_number=seq,
        # Iceberg Java derives _last_updated_sequence_number from the file sequence number
        # (the spec says the data sequence number): both are the row commit version.
        file_sequence_number=seq,
        content=pa.repeat(pa.scalar(0, pa.int32()), n),
        file_path=paths,
        file_format=pa.repeat(pa.scalar("PARQUET"), n),
        partition=part,
        record_count=records,
        file_size_in_bytes=files.column("size").combine_chunks(),
        null_value_counts=metrics.null_value_counts,
        lower_bounds=metrics.lower_bounds,
        upper_bounds=metrics.upper_bounds,
        first_row_id=files.column("base_row_id").combine_chunks(),
    )
    arrays = [_as(cols[f.name], f.type) for f in target]
    return pa.RecordBatch.from_arrays(arrays, schema=target)
