"""Running an iterator one step ahead of its consumer on a helper thread.

A file's reader decodes a batch (pyarrow, GIL released), drops its deleted rows (Rust, GIL
released), then projects it and decodes its dictionaries. Run in one thread, the decode of the
next batch waits for all of that; with the first two steps on a helper thread, the next batch
decodes while the consumer works on the current one.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Generic, TypeVar

__all__ = ["prefetched"]

T = TypeVar("T")

#: How long a blocked producer waits before it checks whether the consumer has gone.
_POLL_SECONDS = 0.05


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _End:
    __slots__ = ()


_END = _End()


class _Producer(Generic[T]):
    def __init__(self, source: Iterator[T], depth: int) -> None:
        self.source = source
        self.items: queue.Queue[T | _Failed | _End] = queue.Queue(maxsize=depth)
        self.stop = threading.Event()

    def _put(self, item: T | _Failed | _End) -> bool:
        while not self.stop.is_set():
            try:
                self.items.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def run(self) -> None:
        try:
            for item in self.source:
                if not self._put(item):
                    return
            self._put(_END)
        except BaseException as e:  # re-raised by the consumer
            self._put(_Failed(e))
        finally:
            close = getattr(self.source, "close", None)
            if close is not None:
                close()


def prefetched(source: Iterator[T], depth: int = 1, name: str = "icefloe-prefetch") -> Iterator[T]:
    """The items of ``source`` in order, with up to ``depth`` of them produced ahead on a
    helper thread. Errors raised by ``source`` are raised here, in order. Closing this
    generator early (or dropping it) stops the helper thread and closes ``source``."""
    producer = _Producer(source, depth)
    thread = threading.Thread(target=producer.run, name=name, daemon=True)
    thread.start()
    try:
        while True:
            item = producer.items.get()
            if isinstance(item, _End):
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        producer.stop.set()
        thread.join()
