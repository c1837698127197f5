"""Registering existing Parquet files (``add_files``): field ids, type checks, footer metrics
and partition values inferred from column statistics.

A file must carry Parquet field ids, or the table must have a name mapping
(``schema.name-mapping.default``) that gives its columns ids. Its column types must equal the
table's or be promotable to them (int to long, float to double, wider decimals, string/binary
size variants, any timestamp unit with the same zone-ness). Metrics come from the footer under
the table's metrics modes. For a partitioned table every partition source column's minimum and
maximum must transform to the same value (the file lies in one partition), else the file is
refused with a :class:`~icefloe.exceptions.ValidationError` naming it.

What a file holds is checked where its footer cannot vouch for it, reading only the columns in
doubt:

- a required column (at any depth) holds no nulls. The footer's null count of a leaf counts a
  null at any level of its path, an empty list or map too, so a leaf with nulls under an
  optional or repeated ancestor is read to tell a null required field (where its parent is not
  null) from a null optional parent or an empty list; a required field the file itself declares
  non-nullable needs no check.
- a time or timestamp in a finer unit than the table's (top-level or inside a struct, list or
  map) holds only values the table's unit holds exactly.
- a float or double partition source is read, since Parquet statistics skip NaN and may store
  ``-0.0`` as the minimum of zeros: Iceberg compares partition values by their bits (NaN
  normalized), so ``-0.0`` and ``0.0`` are different partitions, as ``append`` writes them. A
  file of only NaN is in partition NaN; NaN with other values, or zeros of both signs, span
  partitions and are refused.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe._concurrency import parallel_map
from icefloe.arrow_schema import apply_name_mapping, field_id_of, has_field_ids, type_to_arrow
from icefloe.exceptions import CorruptFileError, ValidationError
from icefloe.geo import wkb_bounds
from icefloe.io import FileIO
from icefloe.metadata import TableMetadata
from icefloe.name_mapping import DEFAULT_NAME_MAPPING_PROPERTY, table_mapping
from icefloe.partitioning import PartitionSpec
from icefloe.read.parquet_file import has_nanos, int96_unit
from icefloe.schema import Schema, walk_fields
from icefloe.schema_rules import MAX_USER_FIELD_ID, METADATA_COLUMNS
from icefloe.transforms import Transform
from icefloe.types import (
    BinaryType,
    DoubleType,
    FloatType,
    GeographyType,
    GeometryType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    NestedType,
    StringType,
    StructType,
    UnknownType,
    VariantType,
)
from icefloe.write.coerce import check_geoarrow_type
from icefloe.write.files import DataFile
from icefloe.write.metrics import MetricsConfig, footer_metrics, split_offsets

__all__ = ["data_files_from_parquet"]


def _is_list(t: pa.DataType) -> bool:
    """Whether ``t`` is a list: pyarrow's schema hint may say ``fixed_size_list`` for what the
    Parquet file stores as a plain LIST (read as a list, as every reader does)."""
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t))


def _leaf_chains(schema: pa.Schema) -> list[tuple[pa.Field, ...]]:
    """Every leaf field with its ancestors, outermost first, in Parquet column order (a list's
    element and a map's key and value are fields of their own, as in Iceberg)."""
    out: list[tuple[pa.Field, ...]] = []

    def walk(f: pa.Field, chain: tuple[pa.Field, ...]) -> None:
        t = f.type
        chain = (*chain, f)
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i), chain)
        elif _is_list(t):
            walk(t.value_field, chain)
        elif pa.types.is_map(t):
            walk(t.key_field, chain)
            walk(t.item_field, chain)
        else:
            out.append(chain)

    for f in schema:
        walk(f, ())
    return out


def _id_counts(schema: pa.Schema) -> Counter[int]:
    """How many fields (at any depth) of ``schema`` carry each field id."""
    counts: Counter[int] = Counter()
    todo = list(schema)
    while todo:
        f = todo.pop()
        if (fid := field_id_of(f)) is not None:
            counts[fid] += 1
        t = f.type
        if pa.types.is_struct(t):
            todo.extend(t.field(i) for i in range(t.num_fields))
        elif _is_list(t):
            todo.append(t.value_field)
        elif pa.types.is_map(t):
            todo.extend((t.key_field, t.item_field))
    return counts


def _read_id(chain: tuple[pa.Field, ...], schema: Schema) -> int | None:
    """The field id of the leaf at ``chain`` as readers find it: None when the table has its
    id at another place (readers match each enclosing struct field by id, so a top-level column
    with the id of a nested field is never read, and must not be described). A list's element
    may have no id; a map's key and value are taken by position."""
    fid = field_id_of(chain[-1])
    if fid is None or fid not in schema.field_ids:
        return fid
    table_chain = (*schema.ancestors(fid), schema.find_field(fid))
    if len(table_chain) != len(chain):
        return None
    parent: IcebergType | None = None
    for f, want in zip(chain, table_chain, strict=True):
        have = field_id_of(f)
        if isinstance(parent, ListType):
            if have not in (None, want.field_id):
                return None
        elif not isinstance(parent, MapType) and have != want.field_id:
            return None
        parent = want.field_type
    return fid


def _arrow_kind(t: pa.DataType) -> str:
    if pa.types.is_struct(t):
        return "struct"
    if _is_list(t):
        return "list"
    return "map" if pa.types.is_map(t) else "primitive"


def _iceberg_kind(t: IcebergType) -> str | None:
    """The Arrow shape a column of ``t`` has in a file (None: not stored, ``unknown``)."""
    if isinstance(t, StructType | VariantType):  # a variant is struct<metadata, value>
        return "struct"
    if isinstance(t, ListType):
        return "list"
    if isinstance(t, MapType):
        return "map"
    return None if isinstance(t, UnknownType) else "primitive"


def _check_shapes(path: str, chains: list[tuple[pa.Field, ...]], schema: Schema) -> None:
    """Refuse a file whose column of a table field's id is of another kind (a struct where the
    table has a primitive, a primitive where it has a list, ...): readers refuse such a file,
    so once added every full read of the table would fail."""
    seen: set[int] = set()
    by_id = schema.index_by_id()
    for chain in chains:
        for f in chain:
            fid = field_id_of(f)
            if fid is None or fid in seen:
                continue
            seen.add(fid)
            field = by_id.get(fid)
            if field is None:
                continue
            have, want = _arrow_kind(_storage(f.type)), _iceberg_kind(field.field_type)
            if want is not None and have != want:
                raise ValidationError(
                    f"{path}: column {f.name!r} (id {fid}) is a {have} of type {f.type} in the "
                    f"file, where the table's {schema.find_column_name(fid)!r} is a {want} "
                    f"({field.field_type}); readers cannot read it as that"
                )


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
    # a view type is pyarrow's hint of how the writer held the column (ARROW:schema); the
    # Parquet column is the same BYTE_ARRAY, read as any string or binary type
    strings = (types.is_string, types.is_large_string, types.is_string_view)
    if any(f(have) for f in strings) and any(f(want) for f in strings):
        return True
    binaries = (types.is_binary, types.is_large_binary, types.is_binary_view)
    if any(f(have) for f in binaries) and any(f(want) for f in binaries):
        return True
    if types.is_timestamp(have) and types.is_timestamp(want):
        # a finer unit is checked value by value (see _finer)
        return (have.tz is None) == (want.tz is None)
    if (types.is_time32(have) or types.is_time64(have)) and types.is_time64(want):
        return True
    if types.is_int8(have) or types.is_int16(have) or types.is_uint8(have) or types.is_uint16(have):
        return bool(types.is_int32(want) or types.is_int64(want))
    if types.is_uint32(have):  # as Iceberg Java maps UINT_32: to long only
        return bool(types.is_int64(want))
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


def _read_leaf(file: pq.ParquetFile, col: int) -> pa.Array:
    """Leaf column ``col`` read alone, as its top-level column holding only that leaf, with
    plain types where the file's schema hint says dictionary or view (pandas categoricals,
    ``string_view``): compute kernels such as ``min_max`` and ``take`` have none for them."""
    path = file.metadata.schema.column(col).path
    arr = file.read(columns=[path]).column(0).combine_chunks()
    plain = _plain_type(arr.type)
    return arr if plain == arr.type else arr.cast(plain)


def _plain_type(t: pa.DataType) -> pa.DataType:
    """``t`` with dictionaries as their values and view types as large string or binary."""
    if pa.types.is_dictionary(t):
        return _plain_type(t.value_type)
    if pa.types.is_string_view(t):
        return pa.large_string()
    if pa.types.is_binary_view(t):
        return pa.large_binary()
    if pa.types.is_struct(t):
        return pa.struct([_plain_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(_plain_field(t.key_field), _plain_field(t.item_field))
    if pa.types.is_large_list(t):
        return pa.large_list(_plain_field(t.value_field))
    if _is_list(t):  # list, and a fixed-size list's hint: the column is a plain LIST
        return pa.list_(_plain_field(t.value_field))
    return t


def _plain_field(f: pa.Field) -> pa.Field:
    return f.with_type(_plain_type(f.type))


def _only_child(where: str, arr: pa.Array) -> pa.Array:
    """The one child of a struct read for a single leaf, null where the struct is."""
    if not pa.types.is_struct(arr.type) or arr.type.num_fields != 1:
        raise ValidationError(f"{where}: read as {arr.type}, not the table's structure")
    return arr.flatten()[0]


def _entries(where: str, arr: pa.Array) -> pa.Array:
    """The elements of a list, or the entries of a map, that are not null."""
    t = arr.type
    if pa.types.is_map(t):
        entries = pa.struct([t.key_field, t.item_field])
        arr = arr.cast(pa.list_(pa.field("entries", entries, nullable=False)))
    elif not _is_list(t):
        raise ValidationError(f"{where}: read as {t}, not the table's structure")
    return arr.flatten()


def _leaf_values(where: str, arr: pa.Array, chain: tuple[NestedField, ...]) -> pa.Array:
    """The values of the leaf that ``arr`` (from :func:`_read_leaf`) was read for, null where
    the leaf or a struct around it is; ``chain`` is the leaf's table field and its ancestors."""
    for f in chain[:-1]:
        arr = _step(where, arr, f)
    return arr


def _step(where: str, arr: pa.Array, f: NestedField) -> pa.Array:
    """The values of the child of nested field ``f`` read for one leaf."""
    t = f.field_type
    if isinstance(t, StructType):
        return _only_child(where, arr)
    if isinstance(t, ListType):
        return _entries(where, arr)
    if isinstance(t, MapType):
        return _only_child(where, _entries(where, arr))
    raise ValidationError(f"{where}: {f.name!r} is not nested in the table")


def _check_exact(
    path: str,
    file: pq.ParquetFile,
    col: int,
    chain: tuple[NestedField, ...],
    name: str,
    want: pa.DataType,
) -> None:
    """A leaf column stored in a finer unit than the table's holds only values the table's unit
    holds (a pandas nanosecond column usually does not): reads would refuse them later."""
    values = _leaf_values(f"{path}: column {name!r}", _read_leaf(file, col), chain)
    try:
        values.cast(want)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise ValidationError(
            f"{path}: column {name!r} holds {values.type} values that {want} cannot hold "
            "without rounding"
        ) from None


def _geo_bounds(
    path: str,
    file: pq.ParquetFile,
    col: int,
    chain: tuple[NestedField, ...],
    name: str,
    leaf: pa.Field,
) -> tuple[bytes, bytes] | None:
    """Check a geometry or geography leaf as appends check their input: an annotated column
    has the table column's CRS and edges (readers would label its values with the table's),
    and every value is well-formed WKB. Returns the values' bounds (as our writer computes
    them), ``None`` when no value has X and Y."""
    t = chain[-1].field_type
    assert isinstance(t, GeometryType | GeographyType)
    where = f"{path}: column {name!r}"
    check_geoarrow_type(leaf.type, t, where, fix="write the file again with the column's")
    values = _leaf_values(where, _read_leaf(file, col), chain)
    try:
        return wkb_bounds(values)
    except ValidationError as e:
        raise ValidationError(f"{where}: {e}") from None


def _leaf_nulls(md: pq.FileMetaData, col: int) -> int | None:
    """The footer's null count of a leaf column (a null at any level of its path, an empty
    list or map too), or ``None`` if a row group has none."""
    total = 0
    for rg in range(md.num_row_groups):
        stats = md.row_group(rg).column(col).statistics
        if stats is None or not stats.has_null_count:
            return None
        total += stats.null_count
    return total


def _required_nulls(
    where: str, arr: pa.Array, chain: tuple[NestedField, ...]
) -> tuple[NestedField, int] | None:
    """The outermost required field of ``chain`` (a leaf's table field and its ancestors,
    outermost first) that is null where its parent is not, and how often; ``arr`` is the
    column read for that leaf."""
    for i, f in enumerate(chain):
        if f.required and arr.null_count:
            return f, arr.null_count
        if i + 1 < len(chain):
            arr = _step(where, arr.drop_null(), f)
    return None


def _check_required(
    path: str,
    file: pq.ParquetFile,
    schema: Schema,
    chains: list[tuple[pa.Field, ...]],
    ids: list[int | None],
    known: set[int],
) -> None:
    """Refuses nulls in required columns. A leaf is read only when its footer shows nulls (or
    no null count) and a required field on its path is nullable in the file: the nulls may
    then be those of an optional parent or an empty list or map, which are allowed."""
    checked: set[int] = set()
    for col, (fid, arrow_chain) in enumerate(zip(ids, chains, strict=True)):
        if fid is None or fid not in known:
            continue
        chain = (*schema.ancestors(fid), schema.find_field(fid))
        # a field the file declares non-nullable cannot hold nulls there
        nullable = (
            [a.nullable for a in arrow_chain]
            if len(arrow_chain) == len(chain)
            else [True] * len(chain)
        )
        doubt = {
            f.field_id
            for f, can in zip(chain, nullable, strict=True)
            if f.required and can and f.field_id not in checked
        }
        if not doubt or _leaf_nulls(file.metadata, col) == 0:
            continue
        name = schema.find_column_name(fid)
        found = _required_nulls(f"{path}: column {name!r}", _read_leaf(file, col), chain)
        if found is not None:
            f, n = found
            raise ValidationError(
                f"{path}: required column {schema.find_column_name(f.field_id)!r} has {n} "
                "null values"
            )
        checked |= doubt


_CANONICAL_NAN = 0x7FF8000000000000


def _as_double(bits: int) -> float:
    return float(struct.unpack("<d", struct.pack("<q", bits))[0])


def _float_value(
    path: str, file: pq.ParquetFile, col: int, chain: tuple[NestedField, ...], partition: str
) -> float | None:
    """The one value of a float or double partition source column, read from the file (its
    statistics skip NaN and may write ``-0.0`` for zeros); ``None`` if every value is null.
    Values are told apart by their bits with NaN normalized, as Iceberg compares partition
    values: ``-0.0`` and ``0.0`` differ."""
    values = _leaf_values(f"{path}: column {chain[-1].name!r}", _read_leaf(file, col), chain)
    if values.null_count == len(values):
        return None
    if values.null_count:
        raise ValidationError(
            f"{path}: spans more than one partition for {partition!r} (nulls and values)"
        )
    values = values.cast(pa.float64())
    bits = pc.if_else(
        pc.is_nan(values), pa.scalar(_CANONICAL_NAN, pa.int64()), values.view(pa.int64())
    )
    extremes = pc.min_max(bits)
    lo, hi = int(extremes["min"].as_py()), int(extremes["max"].as_py())
    if lo != hi:
        raise ValidationError(
            f"{path}: spans more than one partition for {partition!r} (values "
            f"{_as_double(lo)!r} and {_as_double(hi)!r})"
        )
    return _as_double(lo)


def _exact_minmax(
    path: str, file: pq.ParquetFile, col: int, chain: tuple[NestedField, ...]
) -> tuple[Any, Any]:
    """The (min, max) of a leaf column read from the file, not from its statistics."""
    values = _leaf_values(f"{path}: column {chain[-1].name!r}", _read_leaf(file, col), chain)
    extremes = pc.min_max(values)
    return extremes["min"].as_py(), extremes["max"].as_py()


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


def _transformed(
    transform: Transform, values: list[Any], source: pa.DataType, want: pa.DataType
) -> list[Any]:
    out = transform.apply(pa.array(values, type=source))
    try:
        return list(out.to_pylist() if out.type == want else out.cast(want).to_pylist())
    except (OverflowError, ValueError) as e:
        raise ValidationError(
            f"partition value outside the years 1-9999 that icefloe can name a partition by: {e}"
        ) from None


def _partition(
    path: str,
    file: pq.ParquetFile,
    leaf_index: dict[int, int],
    schema: Schema,
    spec: PartitionSpec,
) -> dict[str, Any]:
    md = file.metadata
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
        source = schema.find_field(pf.source_id)
        src_type = _storage(type_to_arrow(source.field_type))
        want = _storage(type_to_arrow(nf.field_type))
        if isinstance(source.field_type, FloatType | DoubleType):
            chain = (*schema.ancestors(pf.source_id), source)
            value = _float_value(path, file, col, chain, pf.name)
            out[pf.name] = (
                None if value is None else _transformed(pf.transform, [value], src_type, want)[0]
            )
            continue
        try:
            lo, hi, all_null, nulls = _minmax(md, col)
        except (ValidationError, OverflowError, ValueError) as e:
            # (Python's dates end with year 9999; Iceberg's do not)
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
        if lo != hi and isinstance(source.field_type, StringType | BinaryType):
            # writers may truncate string and binary statistics (DuckDB to 256 bytes, its
            # maximum an incremented prefix): the values themselves tell
            chain = (*schema.ancestors(pf.source_id), source)
            lo, hi = _exact_minmax(path, file, col, chain)
        if lo != hi and not pf.transform.preserves_order:
            raise ValidationError(
                f"{path}: cannot prove one partition for {pf.name!r} ({pf.transform}) from "
                f"the range {lo!r} to {hi!r}: {pf.transform} does not keep order"
            )
        a, b = _transformed(pf.transform, [lo, hi], src_type, want)
        if a != b:
            raise ValidationError(
                f"{path}: spans more than one partition for {pf.name!r} "
                f"(values {lo!r} to {hi!r} give {a!r} and {b!r})"
            )
        out[pf.name] = a
    return out


def data_files_from_parquet(
    metadata: TableMetadata, io: FileIO, paths: Iterable[str]
) -> list[DataFile]:
    """:class:`DataFile` descriptions of existing Parquet files, validated against the table."""
    schema = metadata.current_schema()
    spec = metadata.spec()
    config = MetricsConfig(schema, metadata.properties, metadata.sort_order())
    mapping = table_mapping(metadata.properties)
    table_arrow = {f.field.field_id: f for f in config.leaves}

    nanos = has_nanos(schema.fields)

    def describe(path: str) -> DataFile:
        infile = io.new_input(path)
        size = infile.length()
        with infile.open() as stream:
            try:
                file = pq.ParquetFile(stream, coerce_int96_timestamp_unit="us")
                md = file.metadata
                arrow_schema = file.schema_arrow
            except (pa.ArrowException, OSError) as e:
                raise CorruptFileError(f"{path}: not a readable Parquet file ({e})") from None
            # as readers do: the file's own ids when it has any, else the name mapping's
            mapped = not has_field_ids(arrow_schema)
            if mapped:
                if mapping is None:
                    raise ValidationError(
                        f"{path}: the Parquet file has no field ids and the table has no name "
                        f"mapping ({DEFAULT_NAME_MAPPING_PROPERTY}); cannot tell which columns "
                        "are which"
                    )
                arrow_schema = apply_name_mapping(arrow_schema, mapping)
            counts = _id_counts(arrow_schema)
            twice = sorted(fid for fid, n in counts.items() if n > 1)
            if twice:
                # readers pick one of the columns, and the bounds may come from another
                how = " (through the table's name mapping)" if mapped else ""
                raise ValidationError(
                    f"{path}: field ids {', '.join(map(str, twice))} are on more than one "
                    f"column of the Parquet file{how}; a file's field ids must be unique"
                )
            chains = _leaf_chains(arrow_schema)
            if len(chains) != md.num_columns:
                raise ValidationError(f"{path}: {len(chains)} Arrow leaves for {md.num_columns}")
            _check_shapes(path, chains, schema)
            if nanos and int96_unit(file, arrow_schema, schema, path) == "ns":
                # read as the scan reads them: sub-microsecond digits kept
                file = pq.ParquetFile(stream, metadata=md, coerce_int96_timestamp_unit="ns")
                arrow_schema = file.schema_arrow
                if mapping is not None and mapped:
                    arrow_schema = apply_name_mapping(arrow_schema, mapping)
                chains = _leaf_chains(arrow_schema)
            ids = [_read_id(c, schema) for c in chains]
            present = {i for i in ids if i is not None}
            reserved = sorted(i for i in present if i > MAX_USER_FIELD_ID)
            if reserved:
                # readers take stored row ids as they are: another table's (or an earlier
                # commit's) _row_id values would repeat ids this table already assigned
                names = [METADATA_COLUMNS.get(i, (str(i),))[0] for i in reserved]
                raise ValidationError(
                    f"{path}: holds the metadata columns {', '.join(names)} (field ids "
                    f"{', '.join(map(str, reserved))}) of the table that wrote it; write the "
                    "file again without them to add it"
                )
            unassigned = sorted(
                i for i in counts if metadata.last_column_id < i <= MAX_USER_FIELD_ID
            )
            if unassigned:
                # ignored today, but the table assigns them to the next columns it adds, which
                # would then read this file's values (or fail on their type)
                raise ValidationError(
                    f"{path}: field ids {', '.join(map(str, unassigned))} in the file were never "
                    f"assigned by the table (its last column id is {metadata.last_column_id}); "
                    "a column added later would take them over and read this file's values. "
                    "Write the file again without those columns, or without field ids (the "
                    "table's name mapping then matches columns by name)"
                )
            missing = _missing_required(schema.fields, present)
            if missing is not None:
                raise ValidationError(
                    f"{path}: required column {schema.find_column_name(missing.field_id)!r} is "
                    "missing"
                )
            geo: dict[int, tuple[bytes, bytes] | None] = {}
            for col, (fid, chain) in enumerate(zip(ids, chains, strict=True)):
                if fid is None or fid not in table_arrow:
                    continue
                leaf, name = chain[-1], table_arrow[fid].name
                want = type_to_arrow(table_arrow[fid].field.field_type)
                stored_int96 = md.schema.column(col).physical_type == "INT96"
                if stored_int96 and pa.types.is_timestamp(want):
                    # instants in UTC, as Iceberg Java reads them into either timestamp type
                    # (int96_unit checked that those headed for nanoseconds fit them)
                    continue
                if not _compatible(leaf.type, want):
                    raise ValidationError(
                        f"{path}: column {name!r} has type {leaf.type}, which cannot be read "
                        f"as {want}"
                    )
                table_chain = (*schema.ancestors(fid), schema.find_field(fid))
                if _finer(leaf.type, want):
                    _check_exact(path, file, col, table_chain, name, want)
                if isinstance(table_chain[-1].field_type, GeometryType | GeographyType):
                    geo[fid] = _geo_bounds(path, file, col, table_chain, name, leaf)
            _check_required(path, file, schema, chains, ids, set(table_arrow))
            leaf_index = {fid: i for i, fid in enumerate(ids) if fid is not None}
            partition = _partition(path, file, leaf_index, schema, spec) if spec.fields else {}
        metrics = footer_metrics(md, ids, config)
        for fid, bounds in geo.items():
            # geometry bounds, as the writer keeps them (none for geography)
            kept = isinstance(table_arrow[fid].field.field_type, GeometryType) and (
                config.mode(fid).kind not in ("none", "counts")
            )
            if bounds is not None and kept:
                metrics.lower_bounds[fid], metrics.upper_bounds[fid] = bounds
        return DataFile(
            file_path=path,
            record_count=md.num_rows,
            file_size_in_bytes=size,
            spec_id=spec.spec_id,
            partition=partition,
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


def _missing_required(fields: Iterable[NestedField], present: set[int]) -> NestedField | None:
    """A required field (without an ``initial-default``) the file lacks: at the top level, or
    inside a struct, list element or map the file has (readers would have no value for it)."""
    for f in fields:
        if not _has_any(f, present):
            if f.required and f.initial_default is None:
                return f
            continue
        if isinstance(f.field_type, NestedType):
            missing = _missing_required(f.field_type.fields, present)
            if missing is not None:
                return missing
    return None
