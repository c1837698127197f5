"""A table's location rules: where its metadata and data files go (``write.metadata.path``,
``write.data.path``), metadata file names (``<V>-<uuid>.metadata.json``,
``v<N>.metadata.json``), and how two locations are compared."""

from __future__ import annotations

import os
import posixpath
import re
import uuid
import warnings
from collections.abc import Mapping
from urllib.parse import urlparse

import pyarrow as pa

from icefloe.exceptions import ValidationError
from icefloe.properties import InvalidPropertyWarning, TableProperties, enum_property

__all__ = [
    "DATA_PATH",
    "METADATA_COMPRESSION",
    "METADATA_PATH",
    "PATH_PROPERTIES",
    "absolute_location",
    "comparable_locations",
    "data_location",
    "metadata_file_order",
    "metadata_file_version",
    "metadata_gzip",
    "metadata_location",
    "new_metadata_file_location",
    "resolve_table_paths",
    "same_file_locations",
    "table_location",
]

METADATA_PATH = TableProperties.METADATA_PATH
DATA_PATH = TableProperties.DATA_PATH
METADATA_COMPRESSION = TableProperties.METADATA_COMPRESSION
_LEGACY_DATA_PATHS = (TableProperties.OBJECT_STORAGE_PATH, TableProperties.FOLDER_STORAGE_PATH)
#: The properties naming a directory of the table's files (resolved as :func:`resolve_table_paths`
#: says).
PATH_PROPERTIES = frozenset((METADATA_PATH, DATA_PATH, *_LEGACY_DATA_PATHS))


def comparable_locations(paths: pa.Array) -> pa.Array:
    """Locations compared without scheme/authority differences (``file:/x`` == ``/x``) and
    with repeated slashes collapsed, as the reference's default prefix-mismatch rule does for
    the same file system."""
    import pyarrow.compute as pc

    stripped = pc.replace_substring_regex(
        paths, pattern=r"^[A-Za-z][A-Za-z0-9+.-]*://[^/]*", replacement=""
    )
    stripped = pc.replace_substring_regex(
        stripped, pattern=r"^[A-Za-z][A-Za-z0-9+.-]*:", replacement=""
    )
    return pc.replace_substring_regex(stripped, pattern=r"/{2,}", replacement="/")


def same_file_locations(paths: pa.Array) -> pa.Array:
    """Locations equal when they name the same file: ``file:`` URIs as plain paths, ``s3a:``
    and ``s3n:`` as ``s3:``, repeated slashes collapsed; the scheme and the bucket (or host)
    of every other location kept (:func:`comparable_locations` drops them, which only suits
    comparing files of one file system)."""
    import pyarrow.compute as pc

    out = pc.replace_substring_regex(paths, pattern=r"^[Ff][Ii][Ll][Ee]://[^/]*", replacement="")
    out = pc.replace_substring_regex(out, pattern=r"^[Ff][Ii][Ll][Ee]:", replacement="")
    out = pc.replace_substring_regex(out, pattern=r"^[Ss]3[AaNn]?://", replacement="s3://")
    return pc.replace_substring_regex(out, pattern=r"([^:/])/{2,}", replacement=r"\1/")


def _is_relative(location: str) -> bool:
    """No scheme (a Windows drive letter parses as one) and no leading ``/``."""
    return not urlparse(location).scheme and not location.startswith(("/", "\\"))


def absolute_location(location: str) -> str:
    """``location`` with a local path made absolute and plain: ``~`` expanded, a relative path
    resolved against the working directory (once, when a table is created: stored relative
    it would resolve differently later) and ``.``/``..`` removed, which other engines do not
    resolve. URIs of other file systems are kept as given."""
    parsed = urlparse(location)
    plain = not parsed.query and not parsed.fragment
    if parsed.scheme == "file" and plain and ".." in parsed.path.split("/"):
        return location[: len(location) - len(parsed.path)] + posixpath.normpath(parsed.path)
    if parsed.scheme or not location:
        return location
    return os.path.normpath(os.path.abspath(os.path.expanduser(location)))


def table_location(location: str) -> str:
    """A table location as it is stored: checked (:func:`icefloe.io.check_location`), made
    absolute and plain (:func:`absolute_location`), without a trailing ``/``. The root of a
    file system (``/``, ``file:///``) is refused with :class:`ValidationError`: a table there
    would write ``/metadata`` and ``/data`` at the root, and purging it would walk the whole
    file system."""
    from icefloe.io import check_location

    check_location(location)
    stored = absolute_location(location).rstrip("/")
    if not stored or _BARE_SCHEME.fullmatch(stored):
        raise ValidationError(
            f"table location {location!r} is the root of a file system; give a directory "
            "for the table"
        )
    return stored


#: A URI with a scheme and nothing else (``file:``, ``file://``: the root once ``/`` is gone).
_BARE_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/*")


def _under(table_location: str, path: str, key: str | None = None) -> str:
    if key is not None:  # a stored relative path (another engine's): it must stay inside
        segments = path.replace("\\", "/").strip("/").split("/")
        if any(seg in (".", "..") for seg in segments):
            raise ValidationError(
                f"table property {key}={path!r}: a relative path with '.' or '..' segments "
                "would lead outside the table location; set an absolute location"
            )
    return f"{table_location.rstrip('/')}/{path.strip('/')}"


def metadata_location(table_location: str, properties: Mapping[str, str]) -> str:
    """The directory of a table's metadata files (``write.metadata.path`` or ``<loc>/metadata``;
    a relative path is under the table location)."""
    custom = properties.get(METADATA_PATH)
    if custom:
        if not _is_relative(custom):
            return custom.rstrip("/")
        try:
            return _under(table_location, custom, METADATA_PATH)
        except ValidationError as exc:
            # read leniently, as every commit-path property: a commit (the one repairing
            # the property too) must be able to write its metadata file
            warnings.warn(f"{exc}; using the default", InvalidPropertyWarning, stacklevel=2)
    return f"{table_location.rstrip('/')}/metadata"


def data_location(table_location: str, properties: Mapping[str, str]) -> str:
    """The directory of a table's data files (``write.data.path`` or ``<loc>/data``; a relative
    path is under the table location)."""
    for key in (DATA_PATH, *_LEGACY_DATA_PATHS):
        custom = properties.get(key)
        if custom:
            return (
                _under(table_location, custom, key) if _is_relative(custom) else custom.rstrip("/")
            )
    return f"{table_location.rstrip('/')}/data"


def metadata_gzip(properties: Mapping[str, str]) -> bool:
    """Whether ``write.metadata.compression-codec`` asks for gzip metadata files.

    Read leniently (every commit reads it): a malformed stored value warns and means none."""
    if not properties.get(METADATA_COMPRESSION):
        return False
    codec = enum_property(
        properties, METADATA_COMPRESSION, TableProperties.METADATA_COMPRESSION_DEFAULT, lenient=True
    )
    return codec == "gzip"


def resolve_table_paths(table_location: str, properties: Mapping[str, str]) -> dict[str, str]:
    """``properties`` with relative ``write.data.path`` / ``write.metadata.path`` (and the
    legacy data path keys) made absolute under ``table_location``, as they are stored.

    Other engines resolve a relative value against their own working directory, so it is
    never stored relative. A relative value cannot leave the table location: ``.`` and ``..``
    segments and empty values are refused with :class:`ValidationError`. Absolute values (a
    scheme or a leading ``/``) are kept as given. URI locations holding a control character
    are refused (:func:`icefloe.io.check_location`).
    """
    from icefloe.io import check_location

    check_location(table_location)
    out = dict(properties)
    for key in (METADATA_PATH, DATA_PATH, *_LEGACY_DATA_PATHS):
        value = out.get(key)
        if value is not None:
            check_location(value)
        if value is None or not _is_relative(value):
            continue
        segments = value.replace("\\", "/").strip("/").split("/")
        if not value.strip() or any(seg in (".", "..") for seg in segments):
            raise ValidationError(
                f"table property {key}={value!r}: a relative path is resolved under the table "
                "location and cannot contain '.' or '..' segments; give an absolute location"
            )
        out[key] = _under(table_location, "/".join(s for s in segments if s))
    return out


def _codec_extension(properties: Mapping[str, str]) -> str:
    return ".gz" if metadata_gzip(properties) else ""


def new_metadata_file_location(
    table_location: str, properties: Mapping[str, str], version: int
) -> str:
    """Where version ``version`` of a table's metadata goes: ``<dir>/<V>-<uuid>.metadata.json``.

    The version is zero-padded to five digits like the Java reference; with
    ``write.metadata.compression-codec=gzip`` the name ends ``.gz.metadata.json``.
    """
    ext = _codec_extension(properties)
    directory = metadata_location(table_location, properties)
    return f"{directory}/{version:05d}-{uuid.uuid4()}{ext}.metadata.json"


_VERSIONED = re.compile(r"^(\d+)-[0-9a-fA-F-]+(?:\.gz)?\.metadata\.json$")
_HADOOP = re.compile(r"^v(\d+)(?:\.gz)?\.metadata\.json$")


def metadata_file_version(location: str) -> int | None:
    """The version number in a metadata file name (``00003-<uuid>...`` or ``v3...``), else None."""
    name = location.rstrip("/").rsplit("/", 1)[-1]
    match = _VERSIONED.match(name) or _HADOOP.match(name)
    return int(match.group(1)) if match else None


_EXTENSION = r"(?:\.gz\.metadata\.json|\.metadata\.json(?:\.gz)?)"
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_STRICT_NAMES = (
    ("numbered", re.compile(rf"^(\d+)-{_UUID}{_EXTENSION}$")),
    ("hadoop", re.compile(rf"^v(\d+){_EXTENSION}$")),
)


def metadata_file_order(location: str) -> tuple[str, str, int] | None:
    """``(directory, naming scheme, version)`` of a metadata file named as the catalogs number
    them, each commit one more than its base: ``<V>-<uuid>`` (Java's metastore catalogs and
    REST servers, icefloe's SQL catalog) or ``v<N>`` (file-system tables), optionally
    gzip-compressed; None for any other name. Stricter than :func:`metadata_file_version`:
    the ``<V>-`` form needs a whole UUID after the number, so a file named by a bare random
    UUID whose first group happens to be all digits is not read as a version."""
    directory, _, name = location.rpartition("/")
    for scheme, pattern in _STRICT_NAMES:
        match = pattern.match(name)
        if match:
            return directory, scheme, int(match.group(1))
    return None
