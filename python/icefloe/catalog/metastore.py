"""Catalogs that keep a table's current metadata location in a store (SQL database, ...).

A :class:`MetastoreCatalog` implements six pointer primitives; the table operations and the
commit protocol are built on them.
"""

from __future__ import annotations

from abc import abstractmethod

from icefloe.catalog.base import Catalog, Identifier

__all__ = ["MetastoreCatalog"]


class MetastoreCatalog(Catalog):
    """A catalog whose table pointers live in a metastore that can compare-and-swap."""

    @abstractmethod
    def _get_pointer(self, identifier: Identifier) -> str:
        """The current metadata location; :class:`NoSuchTableError` if there is no table."""

    @abstractmethod
    def _create_pointer(self, identifier: Identifier, metadata_location: str) -> None:
        """Register a new table; :class:`TableAlreadyExistsError` if the name is taken."""

    @abstractmethod
    def _swap_pointer(self, identifier: Identifier, expected: str, new: str) -> None:
        """Atomically move the pointer from ``expected`` to ``new``.

        :class:`CommitFailedError` if it no longer points at ``expected``;
        :class:`CommitStateUnknownError` if it cannot be known whether the swap happened.
        """

    @abstractmethod
    def _drop_pointer(self, identifier: Identifier) -> None:
        """Forget a table; :class:`NoSuchTableError` if there is none."""

    @abstractmethod
    def _rename_pointer(self, source: Identifier, target: Identifier) -> None:
        """Rename a table's entry."""

    @abstractmethod
    def _list_table_names(self, namespace: Identifier) -> list[str]:
        """Names of the tables directly in ``namespace``."""
