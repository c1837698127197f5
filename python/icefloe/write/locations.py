"""Where a write puts its new data and delete files.

By default a file goes to ``<data dir>/<partition path>/<name>``, the data directory being
``write.data.path`` (or the older ``write.object-storage.path`` / ``write.folder-storage.path``)
or ``<table location>/data`` (see :func:`icefloe.table_paths.data_location`).

With ``write.object-storage.enabled=true`` files are spread over many key prefixes, as Iceberg
Java's ``ObjectStoreLocationProvider`` (and PyIceberg's) lays them out: the low 20 bits of the
Murmur3 hash of ``<partition path>/<name>`` (the hash of Iceberg's bucket transform), written as
binary digits, become four directories of 4, 4, 4 and 8 digits
(``<data dir>/0101/0110/1001/10110010/<partition path>/<name>``). With
``write.object-storage.partitioned-paths=false`` the partition path is left out and the last
directory is joined to the name (``.../1001/10110010-<name>``). When the data directory is
outside the table location, Java adds the table's parent and own directory names after the
hash (``<data dir>/<hash dirs>/<db>/<table>/...``) so that tables sharing it stay apart; so does
icefloe. Every file stays under the data directory, where orphan removal lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa

from icefloe.io import parse_location
from icefloe.properties import TableProperties, bool_property
from icefloe.table_paths import data_location
from icefloe.transforms import BucketTransform

__all__ = [
    "OBJECT_STORAGE_ENABLED",
    "OBJECT_STORAGE_PARTITIONED_PATHS",
    "LocationProvider",
    "hash_dirs",
]

#: Table property: spread data files over hashed directories (default false).
OBJECT_STORAGE_ENABLED = TableProperties.OBJECT_STORE_ENABLED
#: Table property: keep the partition path in object-storage locations (default true).
OBJECT_STORAGE_PARTITIONED_PATHS = TableProperties.OBJECT_STORE_PARTITIONED_PATHS

#: The hash bits of an object-storage location, and how they are cut into directories.
_HASH_BITS = 20
_DIR_WIDTHS = (4, 4, 4, 8)
_LOW_BITS = BucketTransform(1 << _HASH_BITS)  # murmur3 & 0x7fffffff mod 2^20: the low bits


def hash_dirs(name: str) -> str:
    """The hashed directories of an object-storage location for ``name`` (a file name,
    after its partition path when there is one): the low 20 bits of its Murmur3 hash as binary
    digits, in directories of 4, 4, 4 and 8 digits (``0101/0110/1001/10110010``)."""
    low = _LOW_BITS.apply(pa.chunked_array([[name]], pa.string()))[0].as_py()
    digits = format(low, f"0{_HASH_BITS}b")
    dirs, start = [], 0
    for width in _DIR_WIDTHS:
        dirs.append(digits[start : start + width])
        start += width
    return "/".join(dirs)


def _path_context(table_location: str) -> str:
    """``<parent>/<name>`` of the table location's last two directories (its namespace and
    table), as Java names a table inside a shared object-storage data directory."""
    path = parse_location(table_location).path if "://" in table_location else table_location
    parts = [p for p in path.split("/") if p]
    return "/".join(parts[-2:])


@dataclass(frozen=True)
class LocationProvider:
    """New file locations of one table (see the module documentation)."""

    #: The data directory, without a trailing slash.
    data_dir: str
    object_storage: bool = False
    partitioned_paths: bool = True
    #: ``<parent>/<table>`` added after the hash when the data directory is outside the table.
    context: str | None = None

    @staticmethod
    def of(table_location: str, properties: Mapping[str, str]) -> LocationProvider:
        """The locations of a table at ``table_location`` with ``properties``."""
        table = table_location.rstrip("/")
        data_dir = data_location(table, properties)
        if not bool_property(properties, OBJECT_STORAGE_ENABLED, False, lenient=True):
            return LocationProvider(data_dir)
        partitioned = bool_property(
            properties, OBJECT_STORAGE_PARTITIONED_PATHS, True, lenient=True
        )
        # a plain prefix test, as Java's: a data directory inside the table needs no context
        context = None if data_dir.startswith(table) else _path_context(table)
        return LocationProvider(data_dir, True, partitioned, context)

    def new_location(self, file_name: str, partition_path: str = "") -> str:
        """Where a new file named ``file_name`` of the partition whose directory is
        ``partition_path`` (empty when unpartitioned) goes."""
        if not self.object_storage:
            if partition_path:
                return f"{self.data_dir}/{partition_path}/{file_name}"
            return f"{self.data_dir}/{file_name}"
        name = (
            f"{partition_path}/{file_name}"
            if partition_path and self.partitioned_paths
            else file_name
        )
        hashed = hash_dirs(name)
        if self.context is not None:
            return f"{self.data_dir}/{hashed}/{self.context}/{name}"
        if self.partitioned_paths:
            return f"{self.data_dir}/{hashed}/{name}"
        return f"{self.data_dir}/{hashed}-{name}"
