"""Column metrics of a written data file, as the Java reference computes them.

Per leaf column (by field id): ``column_sizes`` (compressed bytes of its column chunks),
``value_counts`` (values including nulls, from the Parquet footer), ``null_value_counts``,
``nan_value_counts`` (float and double only) and lower/upper bounds in the spec's single-value
binary form, all under the table's metrics modes:

* ``write.metadata.metrics.default`` (default ``truncate(16)``) and per column
  ``write.metadata.metrics.column.<name>``: ``none`` (no metrics at all), ``counts`` (counts and
  sizes, no bounds), ``truncate(N)`` (bounds of strings and binary truncated to ``N`` code points
  or bytes; an upper bound is rounded up so it stays an upper bound, and dropped when it cannot
  be) or ``full``;
* ``write.metadata.metrics.max-inferred-column-defaults`` (default 100): without an explicit
  default, only the first that many leaf columns get ``truncate(16)``, the rest ``none``;
* columns of the table's sort order get at least ``truncate(16)``.

Geometry bounds are the points ``x:y[:z][:m]`` of the file's bounding box, computed from the
WKB in Rust (:func:`icefloe.geo.wkb_bounds`: NaN skipped per dimension, empty geometries
ignored, malformed WKB refused); geography gets none (spherical edges can bulge past the
vertices' box). Bounds ignore nulls and NaN. For float and double, a lower bound equal to zero
is written as ``-0.0`` and an upper bound equal to zero as ``+0.0`` (spec: ``-0.0`` precedes
``+0.0``, and NaN is never a bound).

Bounds come from the minima and maxima the Parquet writer already put in the footer (one per
row group and column; they skip nulls and NaN and order values as Iceberg does: signed numbers
and decimals, unsigned bytes for strings, binary and fixed). Where a row group has none (a
chunk of only nulls or NaN, a value too long for the writer's statistics) and for UUID and
geometry columns, they run as Arrow kernels over the column instead; Python only touches one
value per column and row group.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe import _native
from icefloe.arrow_fill import extension_storage
from icefloe.exceptions import ValidationError
from icefloe.geo import wkb_bounds
from icefloe.properties import TableProperties, int_property, parse_metrics_mode
from icefloe.schema import Schema
from icefloe.sorting import SortOrder
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    GeometryType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
    VariantType,
)
from icefloe.values import to_bytes

__all__ = [
    "ColumnMetrics",
    "LeafValues",
    "MetricsConfig",
    "MetricsMode",
    "UuidBounds",
    "compute_metrics",
    "float_leaves",
    "footer_metrics",
    "leaf_values",
    "nan_count",
    "split_offsets",
    "truncate_lower",
    "truncate_upper",
    "truncate_upper_str",
]

DEFAULT_MODE = TableProperties.METRICS_MODE_DEFAULT
COLUMN_MODE_PREFIX = TableProperties.METRICS_MODE_COLUMN_PREFIX
MAX_INFERRED = TableProperties.METRICS_MAX_INFERRED_COLUMN_DEFAULTS


@dataclass(frozen=True)
class MetricsMode:
    """``kind`` is none, counts, truncate or full; ``length`` the truncate width."""

    kind: str
    length: int = 0

    @staticmethod
    def parse(text: str, what: str = "metrics mode") -> MetricsMode:
        """``none``, ``counts``, ``full`` or ``truncate(N)``; ``what`` names the property."""
        kind, length = parse_metrics_mode(what, text)
        return MetricsMode(kind, length)

    def __str__(self) -> str:
        return f"truncate({self.length})" if self.kind == "truncate" else self.kind


_DEFAULT = MetricsMode("truncate", 16)


@dataclass(frozen=True)
class _Leaf:
    field: NestedField
    name: str
    path: tuple[int, ...]  # child positions; -1 list element, -2 map key, -3 map value
    repeated: bool


def _leaves(schema: Schema) -> list[_Leaf]:
    """Primitive leaves in Parquet column order (depth first)."""
    out: list[_Leaf] = []

    def walk(f: NestedField, name: str, path: tuple[int, ...], repeated: bool) -> None:
        t = f.field_type
        if isinstance(t, StructType):
            for i, c in enumerate(t.fields):
                walk(c, f"{name}.{c.name}", (*path, i), repeated)
        elif isinstance(t, ListType):
            walk(t.element_field, f"{name}.element", (*path, -1), True)
        elif isinstance(t, MapType):
            walk(t.key_field, f"{name}.key", (*path, -2), True)
            walk(t.value_field, f"{name}.value", (*path, -3), True)
        else:
            out.append(_Leaf(f, name, path, repeated))

    for i, f in enumerate(schema.fields):
        walk(f, f.name, (i,), False)
    return out


def _inferred_ids(schema: Schema, limit: int) -> set[int]:
    """The at most ``limit`` leaves that keep the default mode when none is set, chosen as
    Iceberg Java's ``MetricsConfig.limitFieldIds`` does: a struct's own primitive fields
    first, then the leaves of its nested fields in order (so top-level columns come before
    the fields of a wide struct declared ahead of them); a list's element and a map's key
    and value before what they hold."""
    ids: set[int] = set()

    def leaf(t: Any) -> bool:
        return not isinstance(t, StructType | ListType | MapType)

    def visit(t: Any) -> None:
        if isinstance(t, StructType):
            for f in t.fields:
                if len(ids) >= limit:
                    return
                if leaf(f.field_type):
                    ids.add(f.field_id)
            for f in t.fields:
                if len(ids) >= limit:
                    return
                visit(f.field_type)
        elif isinstance(t, ListType):
            if len(ids) < limit and leaf(t.element_type):
                ids.add(t.element_id)
            visit(t.element_type)
        elif isinstance(t, MapType):
            for fid, ft in ((t.key_id, t.key_type), (t.value_id, t.value_type)):
                if len(ids) < limit and leaf(ft):
                    ids.add(fid)
            visit(t.key_type)
            visit(t.value_type)

    visit(StructType(*schema.fields))
    return ids


class MetricsConfig:
    """The metrics mode of every leaf column of a schema under a table's properties."""

    def __init__(
        self,
        schema: Schema,
        properties: Mapping[str, str],
        sort_order: SortOrder | None = None,
    ) -> None:
        explicit = properties.get(DEFAULT_MODE)
        default = MetricsMode.parse(explicit, DEFAULT_MODE) if explicit else _DEFAULT
        max_inferred = int_property(
            properties, MAX_INFERRED, TableProperties.METRICS_MAX_INFERRED_COLUMN_DEFAULTS_DEFAULT
        )
        self.leaves = _leaves(schema)
        by_name = {leaf.name: leaf.field.field_id for leaf in self.leaves}
        self.modes: dict[int, MetricsMode] = {}
        kept = _inferred_ids(schema, max_inferred) if explicit is None else None
        for leaf in self.leaves:
            inferred = kept is not None and leaf.field.field_id not in kept
            self.modes[leaf.field.field_id] = MetricsMode("none") if inferred else default
        # columns sorted by an order-preserving transform keep bounds (Java's
        # SortOrderUtil.orderPreservingSortedColumns): a bucket orders nothing by value
        sort_ids = (
            {f.source_id for f in sort_order.fields if f.transform.preserves_order}
            if sort_order is not None
            else set()
        )
        for fid in sort_ids:
            mode = self.modes.get(fid)
            if mode is not None and mode.kind in ("none", "counts"):
                self.modes[fid] = _DEFAULT
        for key, value in properties.items():
            if key.startswith(COLUMN_MODE_PREFIX):
                col = key[len(COLUMN_MODE_PREFIX) :]
                col_id = by_name.get(col)
                if col_id is None:  # a dropped or misspelt column: ignored like the reference
                    continue
                self.modes[col_id] = MetricsMode.parse(value, key)

    def mode(self, field_id: int) -> MetricsMode:
        return self.modes.get(field_id, _DEFAULT)

    def select(self, schema: Schema) -> MetricsConfig:
        """This configuration for a file holding only ``schema``'s columns, some columns of
        the schema it was made for (an equality delete file's keys): each keeps its mode in
        the whole table (the max-inferred-column limit counts the table's columns)."""
        out = copy.copy(self)
        out.leaves = _leaves(schema)
        return out


@dataclass
class ColumnMetrics:
    """The metric maps of one data file (field id to value)."""

    column_sizes: dict[int, int]
    value_counts: dict[int, int]
    null_value_counts: dict[int, int]
    nan_value_counts: dict[int, int]
    lower_bounds: dict[int, bytes]
    upper_bounds: dict[int, bytes]


def _leaf_array(table: pa.Table, path: tuple[int, ...]) -> pa.ChunkedArray:
    arr: pa.ChunkedArray = table.column(path[0])
    for step in path[1:]:
        if step >= 0:
            arr = pc.struct_field(arr, [step])
        elif step == -1:
            arr = _flatten(arr)
        else:
            entries = pc.list_flatten(_map_entries(arr))
            arr = pc.struct_field(entries, [0 if step == -2 else 1])
    return arr


def _flatten(arr: pa.ChunkedArray) -> pa.ChunkedArray:
    """The elements of a list column's valid entries. ``list_flatten`` cannot build some
    element types (structs of extension types, such as a geometry field in a list of structs):
    those are cut from the values by the offsets, null entries' elements left out."""
    try:
        return pc.list_flatten(arr)
    except pa.ArrowNotImplementedError:
        pass
    chunks = []
    for c in arr.chunks:
        offsets = np.asarray(c.offsets, dtype=np.int64)
        values = c.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
        if c.null_count:
            valid = np.asarray(c.is_valid(), dtype=bool)
            values = values.filter(pa.array(np.repeat(valid, np.diff(offsets))))
        chunks.append(values)
    return pa.chunked_array(chunks, type=arr.type.value_type)


def _map_entries(arr: pa.ChunkedArray) -> pa.ChunkedArray:
    """A map column as a list of key/value structs (``list_flatten`` has no map kernel)."""
    chunks = []
    for c in arr.chunks:
        if c.offset:
            c = pa.concat_arrays([c])  # a copy from offset 0: a mask needs unsliced offsets
        mask = c.is_null() if c.null_count else None
        chunks.append(pa.ListArray.from_arrays(c.offsets, c.values, mask=mask))
    entry = pa.struct([arr.type.key_field, arr.type.item_field])
    return pa.chunked_array(chunks, type=pa.list_(entry))


@dataclass
class _Chunks:
    """Per Parquet leaf column of a footer: compressed size and value count summed over the
    row groups, null count (None when a row group has none), and each row group's statistics
    (read once: every pyarrow accessor builds a new object)."""

    sizes: list[int]
    values: list[int]
    nulls: list[int | None]
    stats: list[list[Any]]
    group_rows: list[int]


def _chunk_stats(md: pq.FileMetaData, ncols: int) -> _Chunks:
    sizes = [0] * ncols
    values = [0] * ncols
    nulls: list[int | None] = [0] * ncols
    all_stats: list[list[Any]] = [[] for _ in range(ncols)]
    group_rows = []
    for rg in range(md.num_row_groups):
        group = md.row_group(rg)
        group_rows.append(group.num_rows)
        for c in range(ncols):
            col = group.column(c)
            sizes[c] += col.total_compressed_size
            values[c] += col.num_values
            stats = col.statistics
            all_stats[c].append(stats)
            prev = nulls[c]
            if prev is None or stats is None or not stats.has_null_count:
                nulls[c] = None
            else:
                nulls[c] = prev + stats.null_count
    return _Chunks(sizes, values, nulls, all_stats, group_rows)


#: A leaf column's values by its path (see :class:`_Leaf`), for metrics the footer lacks.
LeafValues = Callable[[tuple[int, ...]], pa.ChunkedArray]


def leaf_values(table: pa.Table) -> LeafValues:
    """The leaf columns of ``table`` (in the schema's column order) by path."""
    return functools.partial(_leaf_array, table)


def float_leaves(config: MetricsConfig) -> list[tuple[int, tuple[int, ...]]]:
    """Field id and path of the float and double leaves that keep metrics (those with NaN
    counts)."""
    return [
        (leaf.field.field_id, leaf.path)
        for leaf in config.leaves
        if _type_facts(type(leaf.field.field_type)).floating
        and config.mode(leaf.field.field_id).kind != "none"
    ]


def nan_count(values: pa.ChunkedArray) -> int:
    """The NaN values of a float or double column."""
    return int(pc.sum(pc.is_nan(values)).as_py() or 0)


class UuidBounds:
    """The bounds of a file's UUID leaves, merged row group by row group as they are written
    (a UUID's bounds are its 16 bytes, ordered as :func:`compute_metrics` orders them)."""

    def __init__(self, config: MetricsConfig) -> None:
        self._leaves = [
            (leaf.field.field_id, leaf.path, config.mode(leaf.field.field_id))
            for leaf in config.leaves
            if isinstance(leaf.field.field_type, UUIDType)
            and config.mode(leaf.field.field_id).kind not in ("none", "counts")
        ]
        self.bounds: dict[int, tuple[bytes, bytes | None] | None] = {
            fid: None for fid, _, _ in self._leaves
        }

    def add(self, rows: pa.Table) -> None:
        """Merges the bounds of ``rows`` (a row group about to be written)."""
        if not self._leaves:
            return
        get = leaf_values(rows)
        for fid, path, mode in self._leaves:
            got = _bounds(get(path), UUIDType(), mode, 0)
            had = self.bounds[fid]
            if got is None or had is None:
                self.bounds[fid] = had or got
                continue
            assert had[1] is not None and got[1] is not None  # UUID bounds are never cut
            self.bounds[fid] = (min(had[0], got[0]), max(had[1], got[1]))


def compute_metrics(
    table: pa.Table | LeafValues,
    md: pq.FileMetaData | None,
    config: MetricsConfig,
    *,
    footer_bounds: bool = True,
    nan_counts: Mapping[int, int] | None = None,
    known_bounds: Mapping[int, tuple[bytes, bytes | None] | None] | None = None,
    own_file: bool = False,
) -> ColumnMetrics:
    """Metrics of ``table`` (exactly the rows written) whose Parquet footer is ``md``.

    ``footer_bounds=False`` computes every bound from ``table`` (the slower path that the
    footer's statistics are tested against). Without a footer (``md`` None: an ORC file) every
    metric comes from ``table``: value counts are the values of each leaf (a list's elements,
    not Parquet's slots for empty lists), and there are no column sizes.

    ``table`` may instead be a function giving a leaf's values by path, asked only for what the
    footer lacks; ``nan_counts`` (by field id) then gives the NaN counts of the float and
    double leaves (see :func:`float_leaves`), counted as the rows were written, and
    ``known_bounds`` the bounds of leaves the footer holds none for (UUIDs: see
    :class:`UuidBounds`). ``own_file``: icefloe wrote the file with pyarrow, whose float
    row groups without a minimum and maximum hold only nulls and NaN (another writer may
    leave them out for a row group holding any NaN)."""
    get = leaf_values(table) if isinstance(table, pa.Table) else table
    leaves = config.leaves
    # A variant is one schema leaf and two Parquet columns (metadata, value).
    widths = [2 if isinstance(leaf.field.field_type, VariantType) else 1 for leaf in leaves]
    chunks: _Chunks | None = None
    if md is not None:
        if md.num_columns != sum(widths):
            raise ValidationError(
                f"Parquet file has {md.num_columns} leaf columns, the schema {sum(widths)}"
            )
        chunks = _chunk_stats(md, md.num_columns)
    out = ColumnMetrics({}, {}, {}, {}, {}, {})
    starts = [sum(widths[:k]) for k in range(len(widths))]
    for i, leaf in zip(starts, leaves, strict=True):
        fid = leaf.field.field_id
        mode = config.mode(fid)
        if mode.kind == "none":
            continue
        t = leaf.field.field_type
        facts = _type_facts(type(t))
        arr: pa.ChunkedArray | None = None
        if chunks is None:
            arr = get(leaf.path)
            out.value_counts[fid] = len(arr)
            out.null_value_counts[fid] = arr.null_count
            if facts.variant:
                continue
        elif facts.variant:
            # Counts only (no bounds): a null variant row is a null in its metadata column.
            out.column_sizes[fid] = chunks.sizes[i] + chunks.sizes[i + 1]
            out.value_counts[fid] = chunks.values[i]
            if chunks.nulls[i] is not None:
                out.null_value_counts[fid] = chunks.nulls[i]  # type: ignore[assignment]
            continue
        else:
            out.column_sizes[fid] = chunks.sizes[i]
            out.value_counts[fid] = chunks.values[i]
            null_count = chunks.nulls[i]
            if null_count is None:
                arr = get(leaf.path)
                null_count = arr.null_count
            out.null_value_counts[fid] = null_count
        if facts.floating:
            if nan_counts is not None and arr is None:
                out.nan_value_counts[fid] = nan_counts[fid]
            else:
                arr = get(leaf.path) if arr is None else arr
                out.nan_value_counts[fid] = nan_count(arr)
        if mode.kind == "counts" or not facts.bounded:
            continue
        extremes = (
            _footer_extremes(chunks, i, t, leaf, skip_null_chunks=True, own_file=own_file)
            if footer_bounds and chunks
            else None
        )
        bounds: tuple[bytes, bytes | None] | None
        if known_bounds is not None and fid in known_bounds:
            bounds = known_bounds[fid]
        elif extremes is not None:
            bounds = _encode_bounds(t, mode, *extremes)
        else:
            arr = get(leaf.path) if arr is None else arr
            if isinstance(t, GeometryType):
                bounds = wkb_bounds(arr)
            else:
                bounds = _bounds(arr, t, mode, out.nan_value_counts.get(fid, 0))
        if bounds is not None:
            lo, hi = bounds
            out.lower_bounds[fid] = lo
            if hi is not None:
                out.upper_bounds[fid] = hi
    return out


@dataclass(frozen=True)
class _TypeFacts:
    """What the metrics code asks of a type, answered once per type class (the ``isinstance``
    checks against unions of these classes were most of the CPU of a small file's metrics)."""

    variant: bool
    floating: bool
    bounded: bool  # lower/upper bounds are kept (geometry: a box)
    footer_ordered: bool  # the footer's min/max are in Iceberg's order
    stat: str  # how a footer min/max is read: "value", "date", "time" (micro) or "nano"
    decimal: bool
    string: bool
    binary: bool


@functools.cache
def _type_facts(cls: type) -> _TypeFacts:
    def sub(*types: type) -> bool:
        return issubclass(cls, types)

    stat = "value"
    if sub(DateType):
        stat = "date"
    elif sub(TimestampNanoType, TimestamptzNanoType):
        stat = "nano"
    elif sub(*_PHYSICAL_INT):
        stat = "time"
    return _TypeFacts(
        variant=sub(VariantType),
        floating=sub(FloatType, DoubleType),
        bounded=sub(*_BOUNDED, GeometryType),
        footer_ordered=sub(*_FOOTER_ORDERED),
        stat=stat,
        decimal=sub(DecimalType),
        string=sub(StringType),
        binary=sub(BinaryType),
    )


_PHYSICAL_INT = (
    DateType,
    TimeType,
    TimestampType,
    TimestamptzType,
    TimestampNanoType,
    TimestamptzNanoType,
)


def _bounds(
    arr: pa.ChunkedArray, t: IcebergType, mode: MetricsMode, nan_count: int
) -> tuple[bytes, bytes | None] | None:
    arr = extension_storage(arr)
    if nan_count:
        arr = arr.filter(pc.invert(pc.is_nan(arr)))
    if len(arr) == arr.null_count:
        return None
    if isinstance(t, _PHYSICAL_INT):
        target = pa.int32() if isinstance(t, DateType) else pa.int64()
        arr = arr.cast(target)
    mm = pc.min_max(arr)
    return _encode_bounds(t, mode, mm["min"].as_py(), mm["max"].as_py())


#: Types whose bounds the Parquet footer holds in Iceberg's order. UUIDs are compared as Java
#: does (not as unsigned bytes) and geometry bounds are a box: both are computed from the data.
_FOOTER_ORDERED = (
    BooleanType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    StringType,
    BinaryType,
    FixedType,
    *_PHYSICAL_INT,
)
#: Types whose metrics hold bounds: the footer-ordered ones and UUIDs.
_BOUNDED = (*_FOOTER_ORDERED, UUIDType)


def _footer_extremes(
    chunks: _Chunks,
    column: int,
    t: IcebergType,
    leaf: _Leaf,
    *,
    skip_null_chunks: bool = False,
    own_file: bool = False,
) -> tuple[Any, Any] | None:
    """The smallest and largest value of Parquet column ``column`` over every row group, from
    the footer's statistics (``chunks``); None when the type is not footer-ordered or a row
    group has none, ``(None, None)`` when no row group holds a value. With
    ``skip_null_chunks`` a row group whose values are all null adds nothing instead; with
    ``own_file`` (a file icefloe wrote: pyarrow leaves NaN out of a float column's minimum and
    maximum) neither does a float row group without a minimum and maximum, whose values are
    all null or NaN. Date and time types come back as integers in Iceberg's unit (days, micro-
    or nanoseconds)."""
    facts = _type_facts(type(t))
    if not facts.footer_ordered:
        return None
    lo: Any = None
    hi: Any = None
    for stats in chunks.stats[column]:
        if stats is None or not stats.has_min_max:
            if stats is not None and (
                (skip_null_chunks and stats.has_null_count and stats.num_values == 0)
                or (own_file and facts.floating)
            ):
                continue
            return None
        try:
            a, b = _stat_value(facts.stat, stats, "min"), _stat_value(facts.stat, stats, "max")
        except UnicodeDecodeError:  # Arrow does not check that a string array holds UTF-8
            raise ValidationError(
                f"column {leaf.name!r} holds a string that is not valid UTF-8"
            ) from None
        if a is None or b is None:
            return None
        if lo is None or a < lo:
            lo = a
        if hi is None or b > hi:
            hi = b
    if lo is None or hi is None:
        return (None, None) if chunks.stats[column] else None
    if facts.floating and (math.isnan(lo) or math.isnan(hi)):
        return None
    return lo, hi


def _encode_bounds(
    t: IcebergType, mode: MetricsMode, lo: Any, hi: Any
) -> tuple[bytes, bytes | None] | None:
    """The lower and upper bound of a column whose least and greatest values are ``lo`` and
    ``hi`` (dates and times as their stored integers), truncated under ``mode``."""
    if lo is None or hi is None:
        return None
    facts = _type_facts(type(t))
    if facts.floating:
        if lo == 0.0:
            lo = -0.0
        if hi == 0.0:
            hi = 0.0
    if facts.decimal:
        return to_bytes(t, lo), to_bytes(t, hi)
    name = str(t)
    if mode.kind == "truncate" and (facts.string or facts.binary):
        n = mode.length
        if facts.string:
            lo_t, hi_t = lo[:n], truncate_upper_str(hi, n)
            lo_b = lo_t.encode()
            hi_b = None if hi_t is None else hi_t.encode()
        else:
            lo_b = truncate_lower(lo, n)
            hi_b = truncate_upper(hi, n)
        return lo_b, hi_b
    return _native.value_to_bytes(name, lo), _native.value_to_bytes(name, hi)


def truncate_lower(value: bytes, length: int) -> bytes:
    """A lower bound of ``value`` at most ``length`` bytes long (its prefix)."""
    return bytes(value[:length])


def truncate_upper(value: bytes, length: int) -> bytes | None:
    """The smallest byte string of at most ``length`` bytes above every string starting with
    ``value[:length]`` (the prefix with its last non-0xFF byte incremented), or ``value`` itself
    when short enough; ``None`` when every byte of the prefix is 0xFF."""
    if len(value) <= length:
        return bytes(value)
    prefix = bytearray(value[:length])
    while prefix:
        if prefix[-1] < 0xFF:
            prefix[-1] += 1
            return bytes(prefix)
        prefix.pop()
    return None


def truncate_upper_str(value: str, length: int) -> str | None:
    """As :func:`truncate_upper` for code points: the prefix of ``length`` code points with its
    last incrementable code point incremented (skipping surrogates), or ``None``."""
    if len(value) <= length:
        return value
    chars = list(value[:length])
    while chars:
        cp = ord(chars[-1]) + 1
        if 0xD800 <= cp <= 0xDFFF:
            cp = 0xE000
        if cp <= 0x10FFFF:
            chars[-1] = chr(cp)
            return "".join(chars)
        chars.pop()
    return None


def split_offsets(md: pq.FileMetaData) -> list[int]:
    """The starting byte offset of each row group (sorted), for splitting the file."""
    out: list[int] = []
    for rg in range(md.num_row_groups):
        col = md.row_group(rg).column(0)
        start = col.data_page_offset
        dict_off = col.dictionary_page_offset
        if col.has_dictionary_page and dict_off is not None and 0 < dict_off < start:
            start = dict_off
        out.append(int(start))
    return sorted(out)


def iter_leaf_ids(schema: Schema) -> Iterator[int]:
    """Field ids of the schema's primitive leaves in Parquet column order."""
    for leaf in _leaves(schema):
        yield leaf.field.field_id


#: Units of a Parquet time or timestamp column, per second.
_PER_SECOND = {"milli": 1_000, "micro": 1_000_000, "nano": 1_000_000_000}


def _stat_value(kind: str, stats: Any, which: str) -> Any:
    """A footer minimum or maximum (``which``) read as ``kind`` (see :class:`_TypeFacts`);
    dates, times and timestamps as integers in Iceberg's unit, None when the file's unit is
    unknown or finer than Iceberg's."""
    if kind == "value":
        return getattr(stats, which)
    raw = getattr(stats, f"{which}_raw")
    if kind == "date":
        return raw
    unit = str(getattr(stats.logical_type, "unit", None) or stats.logical_type).lower()
    have = next((n for name, n in _PER_SECOND.items() if name in unit), None)
    want = _PER_SECOND["nano" if kind == "nano" else "micro"]
    if have is None or have > want:
        return None
    return raw * (want // have)


def footer_metrics(
    md: pq.FileMetaData, leaf_ids: list[int | None], config: MetricsConfig
) -> ColumnMetrics:
    """Metrics of an existing Parquet file from its footer alone (for ``add_files``).

    ``leaf_ids`` gives the table field id of each Parquet leaf column (``None`` for columns the
    table does not know). Bounds come from the row-group statistics (which never hold NaN);
    NaN counts are unknown and left out, as the reference does for imported files.
    """
    leaves = {leaf.field.field_id: leaf for leaf in config.leaves}
    chunks = _chunk_stats(md, md.num_columns)
    sizes, values, nulls = chunks.sizes, chunks.values, chunks.nulls
    out = ColumnMetrics({}, {}, {}, {}, {}, {})
    for i, fid in enumerate(leaf_ids):
        leaf = leaves.get(fid) if fid is not None else None
        if leaf is None or fid is None:
            continue
        mode = config.mode(fid)
        if mode.kind == "none":
            continue
        out.column_sizes[fid] = sizes[i]
        out.value_counts[fid] = values[i]
        if nulls[i] is not None:
            out.null_value_counts[fid] = int(nulls[i] or 0)
        t = leaf.field.field_type
        if mode.kind == "counts":
            continue
        extremes = _footer_extremes(chunks, i, t, leaf, skip_null_chunks=True)
        bounds = _encode_bounds(t, mode, *extremes) if extremes is not None else None
        if bounds is not None:
            out.lower_bounds[fid] = bounds[0]
            if bounds[1] is not None:
                out.upper_bounds[fid] = bounds[1]
    return out
