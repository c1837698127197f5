"""Values derived from objects, remembered by the objects' identity.

Per-file work (reading a task, pruning its row groups) derives the same values again and again
from objects a whole operation shares: its read options, its filter's predicates. Those
objects need not be hashable, and equal-but-distinct ones may differ where it matters, so
:class:`IdentityMemo` keys on identity: an entry holds its objects (their ids cannot be reused
while it lives) and is hit only by those very objects.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar, cast

__all__ = ["IdentityMemo"]

T = TypeVar("T")


class IdentityMemo:
    """A thread-safe LRU of at most ``size`` values, each built once for some objects and a
    hashable key."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[Any, ...], tuple[tuple[object, ...], Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, objects: tuple[object, ...], key: Hashable, build: Callable[[], T]) -> T:
        """The value for ``objects`` (by identity) and ``key``; ``build()`` on a miss (outside
        the lock: two threads may both build, the last one stays)."""
        k = (*map(id, objects), key)
        with self._lock:
            hit = self._entries.get(k)
            if hit is not None and all(a is b for a, b in zip(hit[0], objects, strict=True)):
                self._entries.move_to_end(k)
                return cast(T, hit[1])
        value = build()
        with self._lock:
            self._entries[k] = (objects, value)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return value
