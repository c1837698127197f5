"""The context-manager protocol shared by the change builders (schema, spec, sort order,
snapshots, properties): ``with table.update_x() as u: ...`` commits ``u`` when the block ends
without an exception and discards it otherwise."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import TypeVar

__all__ = ["PendingUpdate"]

_U = TypeVar("_U", bound="PendingUpdate")


class PendingUpdate(ABC):
    """A change built step by step and applied by :meth:`commit`."""

    @abstractmethod
    def commit(self) -> None:
        """Apply the change (and commit it, when not part of a larger transaction)."""

    def __enter__(self: _U) -> _U:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()

    def discard(self) -> None:
        """Drop the change (the block raised): delete what it wrote already, if anything."""
        return None
