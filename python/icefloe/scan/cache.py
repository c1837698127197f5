"""A bounded cache of decoded manifests, shared by the scans of one table object.

Manifests are immutable once written, so a decoded manifest (its Arrow batch, inheritance
applied) can be reused by every later scan that lists it under the same path. The cache is an
LRU bounded by the batches' Arrow sizes (``scan.manifest-cache.max-bytes``, a table property or
scan option, default 256 MiB; ``0`` disables it) and lives as long as the table object does.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any

import pyarrow as pa

from icefloe.properties import TableProperties

__all__ = ["DEFAULT_MAX_BYTES", "MAX_BYTES_PROPERTY", "ManifestCache", "manifest_cache"]

MAX_BYTES_PROPERTY = TableProperties.MANIFEST_CACHE_MAX_BYTES
DEFAULT_MAX_BYTES = TableProperties.MANIFEST_CACHE_MAX_BYTES_DEFAULT


class ManifestCache:
    """An LRU of decoded manifest batches by path, bounded by total Arrow bytes."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[pa.RecordBatch, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        """The Arrow bytes held."""
        return self._bytes

    def get(self, path: str) -> pa.RecordBatch | None:
        """The cached batch of ``path``, or None."""
        with self._lock:
            item = self._items.get(path)
            if item is None:
                self.misses += 1
                return None
            self._items.move_to_end(path)
            self.hits += 1
            return item[0]

    def __contains__(self, path: object) -> bool:
        """Whether ``path`` is cached (without counting a hit or miss)."""
        with self._lock:
            return path in self._items

    def put(self, path: str, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Caches ``batch`` if it fits; returns it."""
        size = batch.nbytes
        if size > self.max_bytes:
            return batch
        with self._lock:
            old = self._items.pop(path, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[path] = (batch, size)
            self._bytes += size
            while self._bytes > self.max_bytes and self._items:
                _, (_, evicted) = self._items.popitem(last=False)
                self._bytes -= evicted
        return batch

    def clear(self) -> None:
        """Drops everything."""
        with self._lock:
            self._items.clear()
            self._bytes = 0


_CACHES: weakref.WeakKeyDictionary[Any, ManifestCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def manifest_cache(table: Any, max_bytes: int) -> ManifestCache | None:
    """The manifest cache of ``table`` (created on first use), or None when ``max_bytes`` is 0
    or the object cannot be weakly referenced."""
    if max_bytes <= 0:
        return None
    with _CACHES_LOCK:
        try:
            cache = _CACHES.get(table)
            if cache is None:
                cache = _CACHES[table] = ManifestCache(max_bytes)
        except TypeError:  # not weakly referenceable or not hashable
            return None
    cache.max_bytes = max_bytes
    return cache
