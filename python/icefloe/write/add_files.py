"""Registering existing Parquet files (``add_files``): field ids, type checks, footer metrics
and partition values inferred from column statistics.

A file must carry Parquet field ids, or the table must have a name mapping
(``schema.name-mapping.default``) that gives its columns ids. Its column types must equal the
table's or be promotable to them (int to long, float to double, wider decimals, string/binary
size variants, any timestamp unit with the same zone-ness). Metrics come from the footer under
the table's metrics modes. For a partitioned table every partition source column's minimum and
maximum must transform to the same value (the file lies in one partition), else the file is
refused with a :class:`~icefloe.exceptions.ValidationError` naming it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe._concurrency import parallel_map
from icefloe.arrow_schema import apply_name_mapping, field_id_of, type_to_arrow
from icefloe.exceptions import CorruptFileError, ValidationError
from icefloe.io import FileIO
from icefloe.metadata import TableMetadata
from icefloe.name_mapping import DEFAULT_NAME_MAPPING_PROPERTY, table_mapping
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema, walk_fields
from icefloe.types import NestedField, NestedType
from icefloe.write.files import DataFile
from icefloe.write.metrics import MetricsConfig, footer_metrics, split_offsets

__all__ = ["data_files_from_parquet"]


def _leaf_fields(schema: pa.Schema) -> list[pa.Field]:
    out: list[pa.Field] = []

    def walk(f: pa.Field) -> None:
        t = f.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i))
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_field)
        elif pa.types.is_map(t):
            walk(t.key_field)
            walk(t.item_field)
        else:
            out.append(f)

    for f in schema:
        walk(f)
    return out


def _storage(t: pa.DataType) -> pa.DataType:
    return t.storage_type if isinstance(t, pa.BaseExtensionType) else t


def _compatible(have: pa.DataType, want: pa.DataType) -> bool:
    have, want = _storage(have), _storage(want)
    types = pa.types
    if have == want:
        return True
    if types.is_int32(have) and types.is_int64(want):
        return True
    if types.is_float32(have) and types.is_float64(want):
        return True
    if types.is_decimal(have) and types.is_decimal(want):
        return bool(have.scale == want.scale and have.precision <= want.precision)
    strings = (types.is_string, types.is_large_string)
    if any(f(have) for f in strings) and any(f(want) for f in strings):
        return True
    binaries = (types.is_binary, types.is_large_binary)
    if any(f(have) for f in binaries) and any(f(want) for f in binaries):
        return True
    if types.is_timestamp(have) and types.is_timestamp(want):
        # a finer unit is checked value by value (see _finer)
        return (have.tz is None) == (want.tz is None)
    if (types.is_time32(have) or types.is_time64(have)) and types.is_time64(want):
        return True
    if types.is_int8(have) or types.is_int16(have):
        return bool(types.is_int32(want) or types.is_int64(want))
    if types.is_dictionary(have):
        return _compatible(have.value_type, want)
    return False


_UNITS = {"s": 0, "ms": 1, "us": 2, "ns": 3}


def _finer(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether times or timestamps of ``have`` are in a finer unit than ``want``'s."""
    have, want = _storage(have), _storage(want)
    types = pa.types
    both_timestamps = types.is_timestamp(have) and types.is_timestamp(want)
    times = (types.is_time32(have) or types.is_time64(have)) and types.is_time64(want)
    return bool((both_timestamps or times) and _UNITS[have.unit] > _UNITS[want.unit])


def _check_exact(path: str, pf: pq.ParquetFile, columns: dict[str, pa.DataType]) -> None:
    """Columns stored in a finer unit than the table's hold only values the table's unit
    holds (a pandas nanosecond column usually does not): reads would refuse them later."""
    data = pf.read(columns=list(columns))
    for name, want in columns.items():
        try:
            data.column(name).cast(want)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise ValidationError(
                f"{path}: column {name!r} holds {data.column(name).type} values that "
                f"{want} cannot hold without rounding"
            ) from None


def _minmax(md: pq.FileMetaData, col: int) -> tuple[Any, Any, bool, bool]:
    """Untruncated (min, max, all null, any null) of a leaf column over every row group."""
    lo: Any = None
    hi: Any = None
    nulls = False
    for rg in range(md.num_row_groups):
        group = md.row_group(rg)
        stats = group.column(col).statistics
        if stats is None:
            raise ValidationError("no statistics")
        if not stats.has_null_count:
            raise ValidationError("no null count")
        nulls = nulls or stats.null_count > 0
        if not stats.has_min_max:
            if stats.null_count == group.num_rows:
                continue
            raise ValidationError("no min/max statistics")
        lo = stats.min if lo is None or stats.min < lo else lo
        hi = stats.max if hi is None or stats.max > hi else hi
    return lo, hi, lo is None, nulls


def _partition(
    path: str,
    md: pq.FileMetaData,
    leaf_index: dict[int, int],
    schema: Schema,
    spec: PartitionSpec,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    ptype = spec.partition_type(schema)
    for pf, nf in zip(spec.fields, ptype.fields, strict=True):
        if pf.transform.is_void:
            out[pf.name] = None
            continue
        col = leaf_index.get(pf.source_id)
        if col is None:
            # every row would read null there: a Hive-style directory value is not a column
            raise ValidationError(
                f"{path}: the file has no column {schema.find_column_name(pf.source_id)!r}, "
                f"the source of partition field {pf.name!r} (values in directory names are "
                "not read: write the column into the files)"
            )
        try:
            lo, hi, all_null, nulls = _minmax(md, col)
        except ValidationError as e:
            raise ValidationError(
                f"{path}: cannot infer partition {pf.name!r} from column statistics: {e}"
            ) from None
        if all_null:
            out[pf.name] = None
            continue
        if nulls:
            raise ValidationError(
                f"{path}: spans more than one partition for {pf.name!r} (nulls and values)"
            )
        if lo != hi and not pf.transform.preserves_order:
            raise ValidationError(
                f"{path}: cannot prove one partition for {pf.name!r} ({pf.transform}) from "
                f"the range {lo!r} to {hi!r}: {pf.transform} does not keep order"
            )
        src_type = type_to_arrow(schema.find_type(pf.source_id))
        src_type = _storage(src_type)
        values = pf.transform.apply(pa.array([lo, hi], type=src_type))
        want = _storage(type_to_arrow(nf.field_type))
        if values.type != want:
            values = values.cast(want)
        a, b = values.to_pylist()
        if a != b:
            raise ValidationError(
                f"{path}: spans more than one partition for {pf.name!r} "
                f"(values {lo!r} to {hi!r} give {a!r} and {b!r})"
            )
        out[pf.name] = a
    return out


def _top_level_id(f: pa.Field, mapping: Any) -> int | None:
    """The field id of a top-level file column: its own, else the mapping's."""
    fid = field_id_of(f)
    if fid is None and mapping is not None:
        found = mapping.find(f.name)
        fid = found.field_id if found is not None else None
    return fid


def data_files_from_parquet(
    metadata: TableMetadata, io: FileIO, paths: Iterable[str]
) -> list[DataFile]:
    """:class:`DataFile` descriptions of existing Parquet files, validated against the table."""
    schema = metadata.current_schema()
    spec = metadata.spec()
    config = MetricsConfig(schema, metadata.properties, metadata.sort_order())
    mapping = table_mapping(metadata.properties)
    table_arrow = {f.field.field_id: f for f in config.leaves}

    def describe(path: str) -> DataFile:
        infile = io.new_input(path)
        size = infile.length()
        with infile.open() as stream:
            try:
                pf = pq.ParquetFile(stream)
                md = pf.metadata
                arrow_schema = pf.schema_arrow
            except (pa.ArrowException, OSError) as e:
                raise CorruptFileError(f"{path}: not a readable Parquet file ({e})") from None
            finer = {
                f.name: type_to_arrow(table_arrow[fid].field.field_type)
                for f in arrow_schema
                if (fid := _top_level_id(f, mapping)) is not None
                and fid in table_arrow
                and _finer(f.type, type_to_arrow(table_arrow[fid].field.field_type))
            }
            if finer:
                _check_exact(path, pf, finer)
        leaves = _leaf_fields(arrow_schema)
        if not any(field_id_of(f) is not None for f in leaves):
            if mapping is None:
                raise ValidationError(
                    f"{path}: the Parquet file has no field ids and the table has no name "
                    f"mapping ({DEFAULT_NAME_MAPPING_PROPERTY}); cannot tell which columns are "
                    "which"
                )
            arrow_schema = apply_name_mapping(arrow_schema, mapping)
            leaves = _leaf_fields(arrow_schema)
        if len(leaves) != md.num_columns:
            raise ValidationError(f"{path}: {len(leaves)} Arrow leaves for {md.num_columns}")
        ids = [field_id_of(f) for f in leaves]
        present = {i for i in ids if i is not None}
        for f in schema.fields:
            if f.required and f.initial_default is None and not _has_any(f, present):
                raise ValidationError(f"{path}: required column {f.name!r} is missing")
        for fid, leaf in zip(ids, leaves, strict=True):
            if fid is None or fid not in table_arrow:
                continue
            want = type_to_arrow(table_arrow[fid].field.field_type)
            if not _compatible(leaf.type, want):
                raise ValidationError(
                    f"{path}: column {table_arrow[fid].name!r} has type {leaf.type}, "
                    f"which cannot be read as {want}"
                )
        leaf_index = {fid: i for i, fid in enumerate(ids) if fid is not None}
        metrics = footer_metrics(md, ids, config)
        return DataFile(
            file_path=path,
            record_count=md.num_rows,
            file_size_in_bytes=size,
            spec_id=spec.spec_id,
            partition=_partition(path, md, leaf_index, schema, spec) if spec.fields else {},
            column_sizes=metrics.column_sizes,
            value_counts=metrics.value_counts,
            null_value_counts=metrics.null_value_counts,
            lower_bounds=metrics.lower_bounds,
            upper_bounds=metrics.upper_bounds,
            split_offsets=split_offsets(md),
        )

    return parallel_map(describe, list(paths))


def _has_any(f: NestedField, present: set[int]) -> bool:
    """Whether the file has column ``f`` (itself or, when nested, any of its leaves)."""
    if f.field_id in present:
        return True
    t = f.field_type
    if isinstance(t, NestedType):
        return any(c.field_id in present for _, c in walk_fields(t))
    return False
