"""Table properties icefloe honours: their names, defaults and the one parser for their values.

Every module that reads a property takes its name from :class:`TableProperties` and its value
from :func:`int_property`, :func:`bool_property` or :func:`enum_property`, so a malformed value
always fails with the same :class:`~icefloe.exceptions.ValidationError`, naming the property
and the value. :func:`validate_properties` checks values when they are set (create, set,
transaction), so icefloe never stores a value it would later refuse.

A value written by another engine can still be malformed. Properties that every commit reads
(``commit.retry.*``, ``write.metadata.*``) are then read *leniently*: a warning names the
property and the default is used, so the commit that repairs the value (and any other commit)
still works. Properties that steer how data is written (codecs, sizes, modes, metrics) stay
strict: a data commit refuses with the error instead of writing files the table did not ask for.
"""

from __future__ import annotations

import math
import operator
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import SupportsIndex, TypeVar
from urllib.parse import SplitResult, urlsplit

from icefloe.exceptions import ValidationError

__all__ = [
    "AVRO_CODECS",
    "KNOWN",
    "KNOWN_PREFIXES",
    "MANIFEST_CODECS",
    "ORC_CODECS",
    "PARQUET_CODECS",
    "PARQUET_CODEC_ALIASES",
    "PARQUET_CODEC_LEVELS",
    "RESERVED_PROPERTIES",
    "InvalidPropertyWarning",
    "TableProperties",
    "avro_compression_level",
    "bool_property",
    "enum_property",
    "gc_enabled",
    "int_property",
    "manifest_compression_level",
    "parquet_codec",
    "parquet_compression_level",
    "parse_bool",
    "parse_enum",
    "parse_format_version",
    "parse_int",
    "parse_metrics_mode",
    "parse_probability",
    "parse_value",
    "string_map",
    "validate_properties",
]


class InvalidPropertyWarning(UserWarning):
    """A stored table property is malformed and its default is used instead."""


class TableProperties:
    """Names (``X``) and defaults (``X_DEFAULT``) of the table properties icefloe reads."""

    FORMAT_VERSION = "format-version"

    COMMIT_NUM_RETRIES = "commit.retry.num-retries"
    COMMIT_NUM_RETRIES_DEFAULT = 4
    COMMIT_MIN_RETRY_WAIT_MS = "commit.retry.min-wait-ms"
    COMMIT_MIN_RETRY_WAIT_MS_DEFAULT = 100
    COMMIT_MAX_RETRY_WAIT_MS = "commit.retry.max-wait-ms"
    COMMIT_MAX_RETRY_WAIT_MS_DEFAULT = 60_000
    COMMIT_TOTAL_RETRY_TIME_MS = "commit.retry.total-timeout-ms"
    COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT = 1_800_000

    MANIFEST_MERGE_ENABLED = "commit.manifest-merge.enabled"
    MANIFEST_MERGE_ENABLED_DEFAULT = True
    MANIFEST_MIN_MERGE_COUNT = "commit.manifest.min-count-to-merge"
    MANIFEST_MIN_MERGE_COUNT_DEFAULT = 100
    MANIFEST_TARGET_SIZE_BYTES = "commit.manifest.target-size-bytes"
    MANIFEST_TARGET_SIZE_BYTES_DEFAULT = 8 * 1024 * 1024
    MANIFEST_COMPRESSION = "write.manifest.compression-codec"
    MANIFEST_COMPRESSION_DEFAULT = "gzip"
    MANIFEST_COMPRESSION_LEVEL = "write.manifest.compression-level"

    METADATA_PATH = "write.metadata.path"
    DATA_PATH = "write.data.path"
    OBJECT_STORE_ENABLED = "write.object-storage.enabled"
    OBJECT_STORE_PARTITIONED_PATHS = "write.object-storage.partitioned-paths"
    OBJECT_STORAGE_PATH = "write.object-storage.path"
    FOLDER_STORAGE_PATH = "write.folder-storage.path"
    METADATA_COMPRESSION = "write.metadata.compression-codec"
    METADATA_COMPRESSION_DEFAULT = "none"
    METADATA_PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
    METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT = 100
    METADATA_DELETE_AFTER_COMMIT_ENABLED = "write.metadata.delete-after-commit.enabled"
    #: false: the table's files may be shared with other tables, nothing deletes them
    GC_ENABLED = "gc.enabled"
    METADATA_DELETE_AFTER_COMMIT_ENABLED_DEFAULT = False
    #: true: a write whose snapshot properties carry a ``wap.id`` is staged, not committed to
    #: ``main`` (write-audit-publish)
    WAP_ENABLED = "write.wap.enabled"
    WAP_ENABLED_DEFAULT = False

    TARGET_FILE_SIZE_BYTES = "write.target-file-size-bytes"
    TARGET_FILE_SIZE_BYTES_DEFAULT = 512 * 1024 * 1024
    PARQUET_ROW_GROUP_SIZE_BYTES = "write.parquet.row-group-size-bytes"
    PARQUET_ROW_GROUP_SIZE_BYTES_DEFAULT = 128 * 1024 * 1024
    PARQUET_ROW_GROUP_LIMIT = "write.parquet.row-group-limit"
    PARQUET_ROW_GROUP_LIMIT_DEFAULT = 1_048_576
    PARQUET_PAGE_SIZE_BYTES = "write.parquet.page-size-bytes"
    PARQUET_PAGE_SIZE_BYTES_DEFAULT = 1024 * 1024
    PARQUET_DICT_SIZE_BYTES = "write.parquet.dict-size-bytes"
    PARQUET_DICT_SIZE_BYTES_DEFAULT = 2 * 1024 * 1024
    PARQUET_COMPRESSION = "write.parquet.compression-codec"
    PARQUET_COMPRESSION_DEFAULT = "zstd"
    PARQUET_COMPRESSION_LEVEL = "write.parquet.compression-level"
    DELETE_PARQUET_COMPRESSION = "write.delete.parquet.compression-codec"
    PARQUET_BLOOM_FILTER_MAX_BYTES = "write.parquet.bloom-filter-max-bytes"
    PARQUET_BLOOM_FILTER_COLUMN_ENABLED_PREFIX = "write.parquet.bloom-filter-enabled.column."
    PARQUET_BLOOM_FILTER_COLUMN_FPP_PREFIX = "write.parquet.bloom-filter-fpp.column."
    PARQUET_BLOOM_FILTER_FPP_DEFAULT = 0.01
    PARQUET_BLOOM_FILTER_MAX_BYTES_DEFAULT = 1024 * 1024
    DEFAULT_FILE_FORMAT = "write.format.default"
    DEFAULT_FILE_FORMAT_DEFAULT = "parquet"
    ORC_COMPRESSION = "write.orc.compression-codec"
    ORC_COMPRESSION_DEFAULT = "zlib"
    ORC_STRIPE_SIZE_BYTES = "write.orc.stripe-size-bytes"
    ORC_STRIPE_SIZE_BYTES_DEFAULT = 64 * 1024 * 1024
    AVRO_COMPRESSION = "write.avro.compression-codec"
    AVRO_COMPRESSION_DEFAULT = "gzip"
    AVRO_COMPRESSION_LEVEL = "write.avro.compression-level"

    METRICS_MODE_DEFAULT = "write.metadata.metrics.default"
    METRICS_MODE_COLUMN_PREFIX = "write.metadata.metrics.column."
    METRICS_MAX_INFERRED_COLUMN_DEFAULTS = "write.metadata.metrics.max-inferred-column-defaults"
    METRICS_MAX_INFERRED_COLUMN_DEFAULTS_DEFAULT = 100

    SUMMARY_PARTITION_LIMIT = "write.summary.partition-limit"
    SUMMARY_PARTITION_LIMIT_DEFAULT = 0

    DELETE_MODE = "write.delete.mode"
    UPDATE_MODE = "write.update.mode"
    MERGE_MODE = "write.merge.mode"
    UPSERT_MODE = "write.upsert.mode"
    WRITE_MODE_DEFAULT = "copy-on-write"
    DELETE_GRANULARITY = "write.delete.granularity"
    DELETE_GRANULARITY_DEFAULT = "file"
    DELETE_ISOLATION_LEVEL = "write.delete.isolation-level"
    DELETE_ISOLATION_LEVEL_DEFAULT = "serializable"
    MERGE_ISOLATION_LEVEL = "write.merge.isolation-level"
    #: Iceberg Java's Spark writes: how rows are distributed to writers (icefloe always
    #: clusters by partition); checked so that Java's writes do not fail on a bad value.
    DISTRIBUTION_MODE = "write.distribution-mode"
    DELETE_DISTRIBUTION_MODE = "write.delete.distribution-mode"
    UPDATE_DISTRIBUTION_MODE = "write.update.distribution-mode"
    MERGE_DISTRIBUTION_MODE = "write.merge.distribution-mode"

    MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
    MAX_SNAPSHOT_AGE_MS_DEFAULT = 5 * 24 * 3600 * 1000
    MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
    MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1
    MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"

    SPLIT_SIZE = "read.split.target-size"
    SPLIT_SIZE_DEFAULT = 128 * 1024 * 1024
    SCAN_THREADS = "scan.threads"
    MANIFEST_CACHE_MAX_BYTES = "scan.manifest-cache.max-bytes"
    MANIFEST_CACHE_MAX_BYTES_DEFAULT = 256 * 1024 * 1024

    DEFAULT_NAME_MAPPING = "schema.name-mapping.default"


#: Properties that steer table creation or report table state; they are never stored.
RESERVED_PROPERTIES = frozenset(
    {
        TableProperties.FORMAT_VERSION,
        "uuid",
        "snapshot-count",
        "current-snapshot-id",
        "current-snapshot-summary",
        "current-snapshot-timestamp-ms",
        "current-schema",
        "default-partition-spec",
        "default-sort-order",
    }
)

_T = TableProperties
_V = TypeVar("_V")
_WRITE_MODES = ("copy-on-write", "merge-on-read")
#: Parquet codec names to pyarrow's: those of Java's Parquet writer (parquet-mr's
#: ``CompressionCodecName``, any case) but ``lzo``, which pyarrow cannot write. pyarrow's
#: ``lz4`` writes ``LZ4_RAW`` (no Hadoop framing), which Java reads, for ``lz4`` as well.
PARQUET_CODECS = {
    "zstd": "zstd",
    "gzip": "gzip",
    "snappy": "snappy",
    "lz4": "lz4",
    "lz4_raw": "lz4",
    "brotli": "brotli",
    "uncompressed": "none",
}
#: Parquet codec names other engines store (PyIceberg's ``none``) that Java's writer refuses,
#: with the name Java knows: never set, but a table that has one is written as that codec.
PARQUET_CODEC_ALIASES = {"none": "uncompressed"}
#: ORC codec names (Iceberg's, lower case) to pyarrow's.
ORC_CODECS = {
    "zlib": "zlib",
    "zstd": "zstd",
    "snappy": "snappy",
    "lz4": "lz4",
    "none": "uncompressed",
}
#: The compression levels of the Parquet codecs that take one (zstd's and brotli's own ranges,
#: zlib's for gzip). The others (snappy, lz4, uncompressed) are written without a level: Java
#: ignores one set for them.
PARQUET_CODEC_LEVELS = {"zstd": (-131072, 22), "gzip": (-1, 9), "brotli": (0, 11)}
#: Avro codec names (Iceberg's, lower case) for data files.
AVRO_CODECS = ("gzip", "zstd", "snappy", "uncompressed")
#: Manifest codec names: Java hands the property to its Avro writer, which knows these alone
#: (Avro's own names such as ``deflate`` or ``null`` would fail every Java commit).
MANIFEST_CODECS = AVRO_CODECS
_PARQUET_CODEC_KEYS = (
    TableProperties.PARQUET_COMPRESSION,
    TableProperties.DELETE_PARQUET_COMPRESSION,
)
_METRICS = re.compile(r"(none|counts|full|truncate\((\d+)\))")
#: Java's ``Integer`` and ``Long`` limits: a property Java reads with ``Integer.parseInt`` or
#: ``Long.parseLong`` must fit them (and the writers icefloe hands the value to).
INT_MIN, INT_MAX, LONG_MAX = -(2**31), 2**31 - 1, 2**63 - 1


@dataclass(frozen=True)
class _Kind:
    """A property's value type: ``int`` (with a minimum and maximum), ``bool``, ``enum`` or
    ``metrics`` (``schema.name-mapping.default`` is checked by
    :func:`icefloe.metadata.property_checks.check_properties`, which knows name mappings)."""

    kind: str
    minimum: int | None = None
    choices: tuple[str, ...] = ()
    maximum: int | None = None


def _int(minimum: int = 0) -> _Kind:
    """A property Java reads as an ``int``."""
    return _Kind("int", minimum, maximum=INT_MAX)


def _long(minimum: int = 0) -> _Kind:
    """A property Java reads as a ``long``."""
    return _Kind("int", minimum, maximum=LONG_MAX)


def _enum(*choices: str) -> _Kind:
    return _Kind("enum", choices=choices)


_BOOL = _Kind("bool")
_METRICS_KIND = _Kind("metrics")
_ANY_INT = _int(INT_MIN)

#: The value type of every property icefloe reads (a property not listed is stored as given).
KNOWN: dict[str, _Kind] = {
    _T.COMMIT_NUM_RETRIES: _int(0),
    _T.COMMIT_MIN_RETRY_WAIT_MS: _int(0),
    _T.COMMIT_MAX_RETRY_WAIT_MS: _int(0),
    _T.COMMIT_TOTAL_RETRY_TIME_MS: _int(0),
    _T.MANIFEST_MERGE_ENABLED: _BOOL,
    _T.MANIFEST_MIN_MERGE_COUNT: _int(0),
    _T.MANIFEST_TARGET_SIZE_BYTES: _long(1),
    _T.MANIFEST_COMPRESSION: _enum(*MANIFEST_CODECS),
    _T.MANIFEST_COMPRESSION_LEVEL: _ANY_INT,
    _T.METADATA_COMPRESSION: _enum("none", "gzip"),
    # a count: negative is refused; 0 keeps one previous file, as in the reference (which
    # reads any int and keeps at least one)
    _T.METADATA_PREVIOUS_VERSIONS_MAX: _int(0),
    _T.METADATA_DELETE_AFTER_COMMIT_ENABLED: _BOOL,
    _T.GC_ENABLED: _BOOL,
    _T.WAP_ENABLED: _BOOL,
    _T.OBJECT_STORE_ENABLED: _BOOL,
    _T.OBJECT_STORE_PARTITIONED_PATHS: _BOOL,
    _T.TARGET_FILE_SIZE_BYTES: _long(1),
    _T.PARQUET_ROW_GROUP_SIZE_BYTES: _int(1),
    _T.PARQUET_ROW_GROUP_LIMIT: _long(1),  # PyIceberg's (a Python int), not Java's
    _T.PARQUET_PAGE_SIZE_BYTES: _int(1),
    _T.PARQUET_DICT_SIZE_BYTES: _int(1),
    _T.PARQUET_COMPRESSION: _enum(*PARQUET_CODECS),
    _T.PARQUET_COMPRESSION_LEVEL: _ANY_INT,
    _T.DELETE_PARQUET_COMPRESSION: _enum(*PARQUET_CODECS),
    _T.PARQUET_BLOOM_FILTER_MAX_BYTES: _int(1),
    _T.DEFAULT_FILE_FORMAT: _enum("parquet", "orc", "avro"),
    _T.ORC_COMPRESSION: _enum(*ORC_CODECS),
    _T.ORC_STRIPE_SIZE_BYTES: _long(1),
    _T.AVRO_COMPRESSION: _enum(*AVRO_CODECS),
    _T.AVRO_COMPRESSION_LEVEL: _ANY_INT,
    _T.METRICS_MODE_DEFAULT: _METRICS_KIND,
    _T.METRICS_MAX_INFERRED_COLUMN_DEFAULTS: _int(0),
    _T.SUMMARY_PARTITION_LIMIT: _int(0),
    _T.DELETE_MODE: _enum(*_WRITE_MODES),
    _T.UPDATE_MODE: _enum(*_WRITE_MODES),
    _T.MERGE_MODE: _enum(*_WRITE_MODES),
    _T.UPSERT_MODE: _enum("equality", *_WRITE_MODES),
    _T.DELETE_GRANULARITY: _enum("file", "partition"),
    _T.DELETE_ISOLATION_LEVEL: _enum("serializable", "snapshot"),
    _T.MERGE_ISOLATION_LEVEL: _enum("serializable", "snapshot"),
    _T.DISTRIBUTION_MODE: _enum("none", "hash", "range"),
    _T.DELETE_DISTRIBUTION_MODE: _enum("none", "hash", "range"),
    _T.UPDATE_DISTRIBUTION_MODE: _enum("none", "hash", "range"),
    _T.MERGE_DISTRIBUTION_MODE: _enum("none", "hash", "range"),
    # 0 is Java's "no minimum": expire every snapshot (every ref) older than now
    _T.MAX_SNAPSHOT_AGE_MS: _long(0),
    _T.MIN_SNAPSHOTS_TO_KEEP: _int(0),
    _T.MAX_REF_AGE_MS: _long(0),
    _T.SPLIT_SIZE: _long(1),
    _T.SCAN_THREADS: _int(0),
    _T.MANIFEST_CACHE_MAX_BYTES: _long(0),
}
#: Families of per-column properties (``<prefix><column name>``).
KNOWN_PREFIXES: dict[str, _Kind] = {
    _T.METRICS_MODE_COLUMN_PREFIX: _METRICS_KIND,
    _T.PARQUET_BLOOM_FILTER_COLUMN_ENABLED_PREFIX: _BOOL,
    _T.PARQUET_BLOOM_FILTER_COLUMN_FPP_PREFIX: _Kind("probability"),
}


def _kind_of(key: str) -> _Kind | None:
    kind = KNOWN.get(key)
    if kind is None:
        for prefix, k in KNOWN_PREFIXES.items():
            if key.startswith(prefix):
                return k
    return kind


def _invalid(key: str, raw: object, reason: str, what: str) -> ValidationError:
    return ValidationError(f"{what} {key}={raw!r} is invalid: {reason}")


def parse_int(
    key: str,
    raw: str | int,
    minimum: int | None = 0,
    what: str = "table property",
    maximum: int | None = None,
) -> int:
    """``raw`` as an integer from ``minimum`` to ``maximum`` (a decimal, as Java's
    ``Integer.parseInt``)."""
    text = str(raw) if isinstance(raw, int) and not isinstance(raw, bool) else raw
    if not isinstance(text, str) or not re.fullmatch(r"[+-]?[0-9]+", text):
        raise _invalid(key, raw, "must be an integer", what)
    value = int(text)
    if minimum is not None and value < minimum:
        raise _invalid(key, raw, f"must be at least {minimum}", what)
    if maximum is not None and value > maximum:
        raise _invalid(key, raw, f"must be at most {maximum}", what)
    return value


def parse_format_version(raw: object) -> int:
    """A table format version as an ``int``: an integer (a NumPy one too) or its decimal string
    (the ``format-version`` property). A bool, a float (even ``2.0``) or anything else is a
    :class:`ValidationError`; the caller checks the version's range."""
    key = TableProperties.FORMAT_VERSION
    if isinstance(raw, str):
        return parse_int(key, raw, minimum=None, what="table")
    if isinstance(raw, bool) or not isinstance(raw, SupportsIndex):
        raise _invalid(key, raw, "must be an integer", "table")
    return operator.index(raw)


def parse_bool(key: str, raw: str, what: str = "table property") -> bool:
    """``true`` or ``false`` in any case (Java's ``Boolean.parseBoolean`` reads anything else as
    false; icefloe refuses it)."""
    low = raw.lower()
    if low not in ("true", "false"):
        raise _invalid(key, raw, "must be true or false", what)
    return low == "true"


def parse_seconds(key: str, raw: str, scale: float = 1.0, what: str = "catalog property") -> float:
    """``raw`` as a positive, finite duration in seconds (``scale`` converts its unit: 0.001
    for milliseconds)."""
    try:
        value = float(raw) * scale
    except (TypeError, ValueError):
        raise _invalid(key, raw, "must be a number", what) from None
    if not math.isfinite(value) or value <= 0:
        raise _invalid(key, raw, "must be a positive number", what)
    return value


def parse_flag(key: str, raw: str, what: str = "FileIO property") -> bool:
    """A client setting's boolean: true/false, 1/0 or yes/no in any case; anything else is
    refused (read as false, it would fail later with a misleading error)."""
    low = raw.strip().lower()
    if low not in ("true", "1", "yes", "false", "0", "no"):
        raise _invalid(key, raw, "must be true or false", what)
    return low in ("true", "1", "yes")


#: The password of a URL's user information (``postgresql://user:password@host/db``): up to
#: the last ``@``, as a password may hold ``/``, ``:``, ``@`` or spaces (SQLAlchemy and Python's
#: parser take such passwords) and a user name ``@`` (``me@corp.com``); a later ``@`` in a path
#: hides the host too, never the password.
_URL_PASSWORD = re.compile(r"(?<=://)([^/:\s]*):.*@")
#: User information without a password (``https://TOKEN@host``): a token, as Git hosts and
#: gateways take it, so the whole user name is hidden; the scheme is captured to tell Azure's
#: locations apart.
_URL_USER_ONLY = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)?://([^/:\s]+)@(?![^/\s]*@)")
#: Azure's location schemes, whose user information is the container
#: (``abfss://container@account.dfs.core.windows.net/path``): a name, not a secret.
AZURE_SCHEMES = ("abfs", "abfss", "wasb", "wasbs")
#: Secrets in a URL's query (``?password=...``, libpq's ``sslpassword``, a token, an Azure SAS
#: signature ``sig``, the signature and credentials of an S3 or GCS presigned URL), up to the
#: next ``&``, ``;``, space or quote (an error message quotes the URL).
URL_QUERY_SECRET = re.compile(
    r"([?&;](?:password|sslpassword|pwd|passwd|secret|token|sig|signature|access_token|apikey"
    r"|api_key|x-amz-signature|x-amz-credential|x-amz-security-token"
    r"|x-goog-signature|x-goog-credential)=)[^&;\s'\"<>]*",
    re.IGNORECASE,
)


def redact_url(value: str) -> str:
    """``value`` with a URL's password (or a user name given without one, which may be a token)
    and query secrets replaced by ``***``."""
    hidden = _URL_USER_ONLY.sub(_user_only_hidden, _URL_PASSWORD.sub(r"\1:***@", value))
    return URL_QUERY_SECRET.sub(r"\1***", hidden)


def _user_only_hidden(match: re.Match[str]) -> str:
    """A URL's user name given without a password as ``***``, unless the URL is an Azure
    location, where it names the container."""
    scheme = match.group(1) or ""
    if scheme.lower() in AZURE_SCHEMES:
        return match.group(0)
    return f"{scheme}://***@"


def parse_url(key: str, raw: str, what: str = "catalog property") -> SplitResult:
    """``raw`` split as a URL, its port checked (Python's parser raises a bare ``ValueError``
    for a bad IPv6 host or port); an error shows it without its password. The parser's own
    words quote a piece of the URL (``Port could not be cast to integer value as 'Pw9Q'``),
    part of a password that holds ``/``, ``?`` or ``#``: for a URL with user information the
    error says what is wrong without them."""
    try:
        parts = urlsplit(raw)
        _ = parts.port
    except ValueError as e:
        if "@" in raw:
            reason = (
                "its host or port cannot be read; a user name or password holding "
                "'/', '?', '#' or '@' must be percent-encoded"
            )
        else:
            reason = str(e)
        raise _invalid(key, redact_url(raw), reason, what) from None
    return parts


def parse_enum(key: str, raw: str, choices: Iterable[str], what: str = "table property") -> str:
    """``raw`` (any case) as one of ``choices`` (lower case)."""
    low = raw.lower()
    options = tuple(choices)
    if low not in options:
        raise _invalid(key, raw, "must be one of " + ", ".join(options), what)
    return low


def parse_metrics_mode(key: str, raw: str, what: str = "table property") -> tuple[str, int]:
    """A metrics mode (``none``, ``counts``, ``full``, ``truncate(N)`` with N > 0) as
    (kind, truncate length)."""
    m = _METRICS.fullmatch(raw.lower())  # no blanks: Java reads " none " as invalid
    if m is None:
        raise _invalid(key, raw, "must be a metrics mode: none, counts, full or truncate(N)", what)
    if m.group(2) is None:
        return m.group(1), 0
    n = int(m.group(2))
    if not 0 < n <= INT_MAX:
        raise _invalid(key, raw, f"the truncate length must be from 1 to {INT_MAX}", what)
    return "truncate", n


def parquet_codec(
    props: Mapping[str, str],
    key: str = _T.PARQUET_COMPRESSION,
    default: str = _T.PARQUET_COMPRESSION_DEFAULT,
) -> str:
    """The Parquet codec (a key of :data:`PARQUET_CODECS`) files are written with: ``key``
    (``write.parquet.compression-codec`` or ``write.delete.parquet.compression-codec``), else
    ``default``. A name of :data:`PARQUET_CODEC_ALIASES` (stored by another engine; setting it
    is refused) reads as the codec it stands for, so such a table stays writable."""
    raw = props.get(key)
    alias = PARQUET_CODEC_ALIASES.get(raw.lower()) if raw is not None else None
    return alias if alias is not None else enum_property(props, key, default)


def parquet_compression_level(props: Mapping[str, str]) -> int | None:
    """The level Parquet files are compressed with: ``write.parquet.compression-level`` for a
    codec that takes one (:data:`PARQUET_CODEC_LEVELS`), else None, as Java ignores the level
    of snappy, lz4 and uncompressed. A level outside the codec's range is a
    :class:`ValidationError`."""
    return _codec_level(props, parquet_codec(props), _T.PARQUET_COMPRESSION_LEVEL)


def avro_compression_level(props: Mapping[str, str]) -> int | None:
    """``write.avro.compression-level`` as :func:`parquet_compression_level` reads Parquet's
    (gzip -1 to 9, zstd its range; a level Java's Avro codecs would refuse is refused)."""
    codec = enum_property(props, _T.AVRO_COMPRESSION, _T.AVRO_COMPRESSION_DEFAULT)
    return _codec_level(props, codec, _T.AVRO_COMPRESSION_LEVEL)


def manifest_compression_level(props: Mapping[str, str]) -> int | None:
    """``write.manifest.compression-level``, checked as :func:`avro_compression_level` (Java
    hands it to the same Avro codecs)."""
    codec = enum_property(props, _T.MANIFEST_COMPRESSION, _T.MANIFEST_COMPRESSION_DEFAULT)
    return _codec_level(props, codec, _T.MANIFEST_COMPRESSION_LEVEL)


def _codec_level(props: Mapping[str, str], codec: str, level_key: str) -> int | None:
    raw = props.get(level_key, "")
    limits = PARQUET_CODEC_LEVELS.get(codec)
    if raw == "" or limits is None:
        return None
    low, high = limits
    level = int_property(props, level_key, 0)
    if not low <= level <= high:
        raise _invalid(
            level_key, raw, f"{codec} takes a level from {low} to {high}", "table property"
        )
    return level


def parse_value(key: str, raw: str, what: str = "table property") -> object:
    """The typed value of property ``key`` (``raw`` itself for a property icefloe does not
    read); raises :class:`ValidationError` naming the property and the value when malformed."""
    kind = _kind_of(key)
    if kind is None:
        return raw
    alias = PARQUET_CODEC_ALIASES.get(raw.lower()) if key in _PARQUET_CODEC_KEYS else None
    if alias is not None:
        raise _invalid(
            key,
            raw,
            f"Java's Parquet writer knows no codec {raw!r} (every Java write to the table would "
            f"fail): use {alias!r}",
            what,
        )
    if kind.kind == "int":
        return parse_int(key, raw, kind.minimum, what, kind.maximum)
    if kind.kind == "bool":
        return parse_bool(key, raw, what)
    if kind.kind == "enum":
        return parse_enum(key, raw, kind.choices, what)
    if kind.kind == "probability":
        return parse_probability(key, raw, what)
    return parse_metrics_mode(key, raw, what)


def parse_probability(key: str, raw: str, what: str = "table property") -> float:
    """``raw`` as a probability strictly between 0 and 1 (a Bloom filter's false positives)."""
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise _invalid(key, raw, "must be a probability between 0 and 1", what)
    return value


def validate_properties(
    updates: Mapping[str, object], current: Mapping[str, str] | None = None
) -> None:
    """Refuses property values that icefloe would not honour, before they are stored.

    Values must be strings; reserved properties (``format-version`` and the state ones) are not
    stored properties; known properties must parse (see :data:`KNOWN`). ``current`` are the
    table's properties before the update: the Parquet compression level must suit the codec
    of both together. (Tables check more: see
    :func:`icefloe.metadata.property_checks.check_properties`.)"""
    for key, value in updates.items():
        if not isinstance(key, str) or not key:
            raise ValidationError(f"a table property name must be a non-empty string: {key!r}")
        if not isinstance(value, str):
            raise ValidationError(f"table property {key!r} must be a string, got {value!r}")
        if key == TableProperties.FORMAT_VERSION:
            raise ValidationError(
                f"table property {key}={value!r} is not a stored property: use "
                "upgrade_format_version() to change a table's format version"
            )
        if key in RESERVED_PROPERTIES:
            raise ValidationError(
                f"table property {key}={value!r} is reserved: it reports table state and "
                "cannot be set"
            )
        parse_value(key, value)
    values = {key: str(value) for key, value in updates.items()}  # strings: checked above
    if _T.PARQUET_COMPRESSION in updates or _T.PARQUET_COMPRESSION_LEVEL in updates:
        parquet_compression_level({**(current or {}), **values})
    if _T.AVRO_COMPRESSION in updates or _T.AVRO_COMPRESSION_LEVEL in updates:
        avro_compression_level({**(current or {}), **values})
    if _T.MANIFEST_COMPRESSION in updates or _T.MANIFEST_COMPRESSION_LEVEL in updates:
        manifest_compression_level({**(current or {}), **values})


def _read(
    props: Mapping[str, str], key: str, lenient: bool, parse: Callable[[str], _V]
) -> _V | None:
    raw = props.get(key)
    if raw is None:
        return None
    try:
        return parse(raw)
    except ValidationError as exc:
        if not lenient:
            raise
        warnings.warn(f"{exc}; using the default", InvalidPropertyWarning, stacklevel=3)
        return None


def int_property(
    props: Mapping[str, str],
    key: str,
    default: int,
    minimum: int | None = None,
    *,
    lenient: bool = False,
    what: str = "table property",
) -> int:
    """Integer property ``key``, ``default`` when unset; ``minimum`` defaults to the known
    property's (else none). A value above the known property's maximum (Java's ``int`` or
    ``long`` limit, refused when set) is read as that maximum: a table another engine (or an
    earlier icefloe) gave such a value stays writable. ``lenient`` warns and returns
    ``default`` when malformed."""
    kind = KNOWN.get(key)
    if minimum is None and kind is not None:
        minimum = kind.minimum
    high = kind.maximum if kind is not None else None
    value = _read(props, key, lenient, lambda raw: parse_int(key, raw, minimum, what))
    if value is None:
        return default
    return value if high is None else min(value, high)


def bool_property(
    props: Mapping[str, str], key: str, default: bool, *, lenient: bool = False
) -> bool:
    """Boolean property ``key`` (``true``/``false``, any case), ``default`` when unset."""
    value = _read(props, key, lenient, lambda raw: parse_bool(key, raw))
    return default if value is None else value


def gc_enabled(props: Mapping[str, str]) -> bool:
    """Whether the table's files may be deleted (``gc.enabled``): true when unset; a value
    set by another engine counts as true only when it is ``true`` (any case), as Java reads
    it, so a value icefloe would refuse never enables deletion."""
    raw = props.get(TableProperties.GC_ENABLED)
    return raw is None or raw.lower() == "true"  # Java's parseBoolean: no trimming


def enum_property(
    props: Mapping[str, str],
    key: str,
    default: str,
    choices: Iterable[str] | None = None,
    *,
    lenient: bool = False,
) -> str:
    """Property ``key`` as one of ``choices`` (default: the known property's), lower case."""
    if choices is None:
        kind = KNOWN.get(key)
        choices = kind.choices if kind is not None else ()
    options = tuple(choices)
    value = _read(props, key, lenient, lambda raw: parse_enum(key, raw, options))
    return default if value is None else value


def string_map(value: object, what: str) -> dict[str, str]:
    """``value`` (a mapping of strings to strings, or None for none) as a dict; anything else
    is a :class:`ValidationError` naming ``what`` (stored as given, another type would be
    written as its text or refused by the catalog's database)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(f"{what} must be a mapping of strings to strings, got {value!r}")
    out = dict(value)
    for key, item in out.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise ValidationError(f"{what}: {key!r} = {item!r} (keys and values must be strings)")
    return out
