"""The Parquet writer settings of a table's ``write.*`` properties (names and the value parser
live in :mod:`icefloe.properties`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from icefloe.properties import (
    PARQUET_CODECS,
    TableProperties,
    bool_property,
    int_property,
    parquet_codec,
    parquet_compression_level,
    parse_probability,
)

__all__ = ["ParquetOptions", "target_file_size"]

_T = TableProperties


@dataclass(frozen=True)
class ParquetOptions:
    """The Parquet writer settings of a table's ``write.parquet.*`` properties.

    ``compression_level`` is None for a codec without levels (snappy, lz4, uncompressed):
    Java ignores a level set for them, so icefloe writes them without one."""

    compression: str = "zstd"
    compression_level: int | None = None
    row_group_size_bytes: int = _T.PARQUET_ROW_GROUP_SIZE_BYTES_DEFAULT
    row_group_limit: int = _T.PARQUET_ROW_GROUP_LIMIT_DEFAULT
    page_size_bytes: int = _T.PARQUET_PAGE_SIZE_BYTES_DEFAULT
    dict_size_bytes: int = _T.PARQUET_DICT_SIZE_BYTES_DEFAULT
    #: ``(column name, false-positive probability)`` of the columns that get Bloom filters
    #: (``write.parquet.bloom-filter-enabled.column.<name>``, ``...-fpp.column.<name>``).
    bloom_filters: tuple[tuple[str, float], ...] = ()
    bloom_filter_max_bytes: int = _T.PARQUET_BLOOM_FILTER_MAX_BYTES_DEFAULT

    @property
    def write_batch_size(self) -> int:
        """pyarrow's ``write_batch_size``: how many values it writes between page-size checks.

        Its default (1024) keeps pages near the 1 MiB default page size, but cuts pages of
        a smaller ``write.parquet.page-size-bytes`` at many times the size; below the default
        the size is checked every 100 values, as parquet-mr checks it at least."""
        if self.page_size_bytes < _T.PARQUET_PAGE_SIZE_BYTES_DEFAULT:
            return _SMALL_PAGE_WRITE_BATCH
        return _DEFAULT_WRITE_BATCH

    def bloom_filter_options(self, rows: int) -> dict[str, dict[str, float | int]] | None:
        """pyarrow's ``bloom_filter_options`` for a file of at most ``rows`` rows: each
        filter sized for that many distinct values, but no larger than
        ``write.parquet.bloom-filter-max-bytes`` (as Java caps its filters)."""
        if not self.bloom_filters:
            return None
        # Parquet's split-block filters are a power of two of bytes (32 at least): the largest
        # within max-bytes, a little under it, as floating point may round pyarrow's size up
        cap = 1 << (max(_MIN_BLOOM_BYTES, self.bloom_filter_max_bytes).bit_length() - 1)
        room = cap * 0.99
        n = max(1, rows)
        out: dict[str, dict[str, float | int]] = {}
        for name, fpp in self.bloom_filters:
            # pyarrow's (and parquet-mr's) size of a filter of n values at probability p:
            # -8 n / ln(1 - p^(1/8)) bits; over the cap, the probability a filter of the cap's
            # size gives n values (Java clamps its filters to max-bytes the same way)
            if -n / math.log1p(-(fpp**0.125)) > room:
                fpp = min((-math.expm1(-n / room)) ** 8, math.nextafter(1.0, 0.0))
            out[name] = {"ndv": n, "fpp": fpp}
        return out

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> ParquetOptions:
        """Reads the options, validating codec names, levels and sizes (a
        :class:`~icefloe.exceptions.ValidationError` when malformed or out of range)."""
        return ParquetOptions(
            compression=PARQUET_CODECS[parquet_codec(props)],
            compression_level=parquet_compression_level(props),
            row_group_size_bytes=int_property(
                props, _T.PARQUET_ROW_GROUP_SIZE_BYTES, _T.PARQUET_ROW_GROUP_SIZE_BYTES_DEFAULT
            ),
            row_group_limit=int_property(
                props, _T.PARQUET_ROW_GROUP_LIMIT, _T.PARQUET_ROW_GROUP_LIMIT_DEFAULT
            ),
            page_size_bytes=int_property(
                props, _T.PARQUET_PAGE_SIZE_BYTES, _T.PARQUET_PAGE_SIZE_BYTES_DEFAULT
            ),
            dict_size_bytes=int_property(
                props, _T.PARQUET_DICT_SIZE_BYTES, _T.PARQUET_DICT_SIZE_BYTES_DEFAULT
            ),
            bloom_filters=_bloom_filters(props),
            bloom_filter_max_bytes=int_property(
                props,
                _T.PARQUET_BLOOM_FILTER_MAX_BYTES,
                _T.PARQUET_BLOOM_FILTER_MAX_BYTES_DEFAULT,
            ),
        )


#: pyarrow's default ``write_batch_size``, and the one for page sizes below the default
#: (parquet-mr's ``parquet.page.size.row.check.min``).
_DEFAULT_WRITE_BATCH = 1024
_SMALL_PAGE_WRITE_BATCH = 100

#: The smallest split-block Bloom filter Parquet writers make, in bytes.
_MIN_BLOOM_BYTES = 32


def _bloom_filters(props: Mapping[str, str]) -> tuple[tuple[str, float], ...]:
    """The columns whose Bloom filters are enabled, with their false-positive probability
    (default 0.01, as Java's; one outside (0, 1) is a ValidationError)."""
    prefix = _T.PARQUET_BLOOM_FILTER_COLUMN_ENABLED_PREFIX
    out = []
    for key in sorted(props):
        if not key.startswith(prefix) or not bool_property(props, key, False):
            continue
        name = key[len(prefix) :]
        fpp_key = _T.PARQUET_BLOOM_FILTER_COLUMN_FPP_PREFIX + name
        raw = props.get(fpp_key)
        default = _T.PARQUET_BLOOM_FILTER_FPP_DEFAULT
        out.append((name, default if raw is None else parse_probability(fpp_key, raw)))
    return tuple(out)


def target_file_size(props: Mapping[str, str]) -> int:
    """``write.target-file-size-bytes`` (default 512 MiB)."""
    return int_property(props, _T.TARGET_FILE_SIZE_BYTES, _T.TARGET_FILE_SIZE_BYTES_DEFAULT)
