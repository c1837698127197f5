"""The Parquet writer settings of a table's ``write.*`` properties (names and the value parser
live in :mod:`icefloe.properties`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from icefloe.properties import (
    PARQUET_CODECS,
    TableProperties,
    enum_property,
    int_property,
    parquet_compression_level,
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

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> ParquetOptions:
        """Reads the options, validating codec names, levels and sizes (a
        :class:`~icefloe.exceptions.ValidationError` when malformed or out of range)."""
        codec = enum_property(props, _T.PARQUET_COMPRESSION, _T.PARQUET_COMPRESSION_DEFAULT)
        return ParquetOptions(
            compression=PARQUET_CODECS[codec],
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
        )


def target_file_size(props: Mapping[str, str]) -> int:
    """``write.target-file-size-bytes`` (default 512 MiB)."""
    return int_property(props, _T.TARGET_FILE_SIZE_BYTES, _T.TARGET_FILE_SIZE_BYTES_DEFAULT)
