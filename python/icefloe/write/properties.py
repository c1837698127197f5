"""Write-side table properties (``write.*``, ``commit.manifest*``) with the reference's defaults.

Every reader of a property goes through this module so that a malformed value raises a
:class:`~icefloe.exceptions.ValidationError` naming the property instead of a bare
``ValueError`` deep inside a write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from icefloe.exceptions import ValidationError

__all__ = [
    "MANIFEST_MERGE_ENABLED",
    "MANIFEST_MIN_MERGE_COUNT",
    "MANIFEST_TARGET_SIZE_BYTES",
    "TARGET_FILE_SIZE_BYTES",
    "ParquetOptions",
    "bool_property",
    "int_property",
]

TARGET_FILE_SIZE_BYTES = "write.target-file-size-bytes"
TARGET_FILE_SIZE_BYTES_DEFAULT = 512 * 1024 * 1024
PARQUET_ROW_GROUP_SIZE_BYTES = "write.parquet.row-group-size-bytes"
PARQUET_ROW_GROUP_LIMIT = "write.parquet.row-group-limit"
PARQUET_PAGE_SIZE_BYTES = "write.parquet.page-size-bytes"
PARQUET_DICT_SIZE_BYTES = "write.parquet.dict-size-bytes"
PARQUET_COMPRESSION = "write.parquet.compression-codec"
PARQUET_COMPRESSION_LEVEL = "write.parquet.compression-level"
MANIFEST_MERGE_ENABLED = "commit.manifest-merge.enabled"
MANIFEST_MIN_MERGE_COUNT = "commit.manifest.min-count-to-merge"
MANIFEST_TARGET_SIZE_BYTES = "commit.manifest.target-size-bytes"
MANIFEST_COMPRESSION = "write.manifest.compression-codec"
MANIFEST_COMPRESSION_LEVEL = "write.manifest.compression-level"

_CODECS = {
    "zstd": "zstd",
    "gzip": "gzip",
    "snappy": "snappy",
    "lz4": "lz4",
    "brotli": "brotli",
    "uncompressed": "none",
    "none": "none",
}


def int_property(props: Mapping[str, str], key: str, default: int, minimum: int = 0) -> int:
    """An integer property, ``default`` when unset; raises when malformed or below ``minimum``."""
    raw = props.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"table property {key} is not an integer: {raw!r}") from None
    if value < minimum:
        raise ValidationError(f"table property {key} must be at least {minimum}: {value}")
    return value


def bool_property(props: Mapping[str, str], key: str, default: bool) -> bool:
    """A boolean property (``true``/``false``, any case), ``default`` when unset."""
    raw = props.get(key)
    if raw is None:
        return default
    low = raw.strip().lower()
    if low not in ("true", "false"):
        raise ValidationError(f"table property {key} must be true or false: {raw!r}")
    return low == "true"


@dataclass(frozen=True)
class ParquetOptions:
    """The Parquet writer settings of a table's ``write.parquet.*`` properties."""

    compression: str = "zstd"
    compression_level: int | None = None
    row_group_size_bytes: int = 128 * 1024 * 1024
    row_group_limit: int = 1_048_576
    page_size_bytes: int = 1024 * 1024
    dict_size_bytes: int = 2 * 1024 * 1024

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> ParquetOptions:
        """Reads the options, validating codec names and sizes."""
        raw_codec = props.get(PARQUET_COMPRESSION, "zstd").strip().lower()
        codec = _CODECS.get(raw_codec)
        if codec is None:
            raise ValidationError(
                f"table property {PARQUET_COMPRESSION} names an unsupported codec: {raw_codec!r}"
            )
        level_raw = props.get(PARQUET_COMPRESSION_LEVEL)
        level = None
        if level_raw not in (None, ""):
            level = int_property(props, PARQUET_COMPRESSION_LEVEL, 0, minimum=-(2**31))
        return ParquetOptions(
            compression=codec,
            compression_level=level,
            row_group_size_bytes=int_property(
                props, PARQUET_ROW_GROUP_SIZE_BYTES, 128 * 1024 * 1024, minimum=1
            ),
            row_group_limit=int_property(props, PARQUET_ROW_GROUP_LIMIT, 1_048_576, minimum=1),
            page_size_bytes=int_property(props, PARQUET_PAGE_SIZE_BYTES, 1024 * 1024, minimum=1),
            dict_size_bytes=int_property(
                props, PARQUET_DICT_SIZE_BYTES, 2 * 1024 * 1024, minimum=1
            ),
        )


def target_file_size(props: Mapping[str, str]) -> int:
    """``write.target-file-size-bytes`` (default 512 MiB)."""
    return int_property(props, TARGET_FILE_SIZE_BYTES, TARGET_FILE_SIZE_BYTES_DEFAULT, minimum=1)
