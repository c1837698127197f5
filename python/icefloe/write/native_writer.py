"""Small data files encoded in Rust, many at once, with their metrics.

A partitioned write or an upsert makes many files of a few hundred or thousand rows. Through
pyarrow's writer each costs a writer's set-up, the metrics read back from its footer and the
file's creation, mostly under the GIL, which is more than encoding the rows takes.
:func:`icefloe._native.parquet_encode_files` encodes such files into memory in parallel
without the GIL, with the page checksums the Python writer writes and the metrics
:func:`~icefloe.write.metrics.compute_metrics` gives (bounds from the chunk statistics, NaN
counts from the data, the same modes and truncation); Python then writes each file's bytes
and describes it as a :class:`~icefloe.write.files.DataFile`.

It takes tables of flat primitive columns (no structs, lists, maps, variants, UUIDs, fixed or
geospatial columns) written with zstd, snappy or no compression and no Bloom filters, and
partitions small enough
to be one file (:data:`NATIVE_MAX_BYTES` of Arrow data, and no more than the target file size
or the row-group size in bytes); everything else takes pyarrow's writer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from icefloe import _native
from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
)
from icefloe.write.input import invalid_values
from icefloe.write.metrics import MetricsConfig
from icefloe.write.properties import ParquetOptions

__all__ = ["NATIVE_MAX_BYTES", "ColumnTuple", "encode_files", "native_columns", "waves"]

#: A partition of at most this much Arrow data is written natively (as one file). The
#: `parquet` crate encodes about 1.5x slower per byte than pyarrow's writer: it wins where a
#: file's set-up is most of its cost (a 480-file upsert of 62 rows a file: 3.5x; files of 2,000
#: rows: 1.8x) and loses on files of a few megabytes (100,000 rows: 1.3-2x slower).
NATIVE_MAX_BYTES = 256 << 10
#: Arrow data encoded per call: the encoded files are held in memory until written.
WAVE_BYTES = 64 << 20
#: Whether writes use the native encoder where they can (tests and benchmarks turn it off to
#: compare with pyarrow's writer).
ENABLED = True

_CODECS = frozenset({"zstd", "snappy", "none"})
#: The column types the encoder writes (`parquet_write::supported` in Rust, which refuses the
#: rest): those whose Parquet form and statistics it knows, unlike UUID and fixed.
_TYPES = (
    BooleanType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DateType,
    TimeType,
    TimestampType,
    TimestamptzType,
    TimestampNanoType,
    TimestamptzNanoType,
    StringType,
    BinaryType,
    DecimalType,
)

#: (field id, Iceberg type string, metrics mode, truncate width) of one column.
ColumnTuple = tuple[int, str, str, int]


def native_columns(
    schema: Schema, metrics: MetricsConfig, parquet: ParquetOptions
) -> list[ColumnTuple] | None:
    """The columns of ``schema`` as the native encoder takes them, or None when it cannot
    write this schema or codec."""
    if not ENABLED or parquet.compression not in _CODECS or parquet.bloom_filters:
        return None  # Bloom filters: pyarrow's writer
    out: list[ColumnTuple] = []
    for f in schema.fields:
        if not isinstance(f.field_type, _TYPES):
            return None
        mode = metrics.mode(f.field_id)
        out.append((f.field_id, str(f.field_type), mode.kind, mode.length))
    return out


def waves(sizes: list[int], limit: int | None = None) -> Iterator[list[int]]:
    """Indices of ``sizes`` in order, cut into runs of at most ``limit`` (default
    :data:`WAVE_BYTES`) bytes, each run at least one item."""
    limit = WAVE_BYTES if limit is None else limit
    run: list[int] = []
    total = 0
    for i, size in enumerate(sizes):
        if run and total + size > limit:
            yield run
            run, total = [], 0
        run.append(i)
        total += size
    if run:
        yield run


def encode_files(
    batches: list[pa.RecordBatch],
    slices: list[tuple[int, int]],
    columns: list[ColumnTuple],
    parquet: ParquetOptions,
    use_dictionary: bool | list[str],
    key_value: dict[str, str],
    threads: int | None,
) -> list[dict[str, Any]]:
    """The rows ``(start, length)`` of ``batches`` (one table) named by each of ``slices``,
    encoded as one Parquet file each: a dict per file with ``data`` (its bytes),
    ``record_count``, the metric maps and ``split_offsets``."""
    names = batches[0].schema.names if batches else []
    dictionary = (
        list(names) if use_dictionary is True else list(use_dictionary) if use_dictionary else []
    )
    try:
        encoded: list[dict[str, Any]] = _native.parquet_encode_files(
            batches,
            slices,
            columns,
            parquet.compression,
            parquet.compression_level,
            dictionary,
            parquet.page_size_bytes,
            parquet.dict_size_bytes,
            parquet.row_group_limit,
            list(key_value.items()),
            threads,
        )
    except pa.ArrowException:
        invalid = _invalid_input(batches)
        if invalid is None:
            raise
        raise invalid from None
    return encoded


def _invalid_input(batches: list[pa.RecordBatch]) -> ValidationError | None:
    """The error for the first column of ``batches`` that is not valid Arrow data (Arrow
    refused it on its way to the encoder: a string that is not UTF-8, say), if any."""
    return invalid_values(
        (name, column)
        for batch in batches
        for name, column in zip(batch.schema.names, batch.columns, strict=True)
    )
