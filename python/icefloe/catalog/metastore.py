"""Catalogs that keep a table's current metadata location in a store (SQL database, ...).

A :class:`MetastoreCatalog` implements six pointer primitives; creating, renaming, registering
and committing tables are built on them here. A commit writes ``<V>-<uuid>.metadata.json``
(``.gz.metadata.json`` with ``write.metadata.compression-codec=gzip``) and swaps the pointer
with a compare-and-swap; the file of an attempt that lost (:class:`CommitFailedError`) is
deleted, the file of an attempt whose outcome is unknown (any other exception) is kept.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable
from urllib.parse import urlsplit

from icefloe.catalog.base import (
    Catalog,
    Identifier,
    check_table_identifier,
    split_identifier,
    to_identifier,
)
from icefloe.exceptions import (
    CatalogReadOnlyError,
    CommitFailedError,
    FileIOError,
    ForbiddenError,
    MetadataBucketNotFoundError,
    MetadataWriteError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NotFoundError,
    TableAlreadyExistsError,
    UnauthorizedError,
    ValidationError,
)
from icefloe.io.errors import never_connected
from icefloe.metadata import TableMetadata, is_gzip_metadata_path
from icefloe.table import Table
from icefloe.table_paths import metadata_file_version, new_metadata_file_location

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

    def _table_at(self, metadata_location: str) -> Identifier | None:
        """A table of this catalog whose current metadata is ``metadata_location``, if the
        store can tell cheaply (else None)."""
        return None

    # -- Catalog primitives ---------------------------------------------------------------------
    def _current_location(self, identifier: Identifier) -> str:
        return self._get_pointer(identifier)

    def _write_metadata(self, metadata: TableMetadata, version: int) -> str:
        """Write ``metadata`` as a new metadata file; :class:`MetadataWriteError` when it cannot
        be written (the pointer has not moved, so the commit or create did not happen)."""
        location = new_metadata_file_location(metadata.location, metadata.properties, version)
        data = metadata.to_bytes(compress=is_gzip_metadata_path(location))
        io = self.table_io(metadata.properties)
        try:
            io.new_output(location).write(data)
        except FileIOError as exc:
            if isinstance(exc, NotFoundError):
                # a write finds nothing missing but the bucket (or container): nothing was
                # written, and it is the error the user is told to expect for that
                bucket = urlsplit(location).netloc.partition("@")[0]
                raise MetadataBucketNotFoundError(
                    f"the table did not change: cannot write its new metadata file: {exc}",
                    bucket=bucket or None,
                ) from exc
            if not never_connected(exc):  # else nothing was written, and a delete would wait
                io.delete_quietly(location)  # the store may have written it: nothing refers to it
            raise MetadataWriteError(
                f"the table did not change: cannot write its new metadata file: {exc}"
            ) from exc
        return location

    @staticmethod
    def _next_version(base: TableMetadata, base_location: str) -> int:
        previous = metadata_file_version(base_location)
        return (previous if previous is not None else len(base.metadata_log)) + 1

    def _create_entry(self, identifier: Identifier, metadata: TableMetadata) -> str:
        location = self._write_metadata(metadata, 0)
        try:
            self._create_pointer(identifier, location)
        except (
            TableAlreadyExistsError,
            NoSuchNamespaceError,
            CatalogReadOnlyError,
            CommitFailedError,
            ValidationError,
            ForbiddenError,
            UnauthorizedError,
        ):
            # refused before registering (a location too long for the catalog, a privilege or
            # login refused, a hook's refusal); after any other error the entry may exist
            self.table_io(metadata.properties).delete_quietly(location)
            raise
        return location

    def _write_and_swap(
        self, identifier: Identifier, base: TableMetadata, base_location: str, new: TableMetadata
    ) -> str:
        location = self._write_metadata(new, self._next_version(base, base_location))
        try:
            self._swap_pointer(identifier, base_location, location)
        except (CommitFailedError, CatalogReadOnlyError) as exc:
            # the swap is known not to have happened; after any other error (unknown outcome,
            # KeyboardInterrupt) the new file may be the table's current metadata: keep it
            self.table_io(new.properties).delete_quietly(location)
            if isinstance(exc, CommitFailedError):
                exc.nothing_committed = True
            raise
        return location

    def _drop_entry(self, identifier: Identifier) -> None:
        self._drop_pointer(identifier)

    def _default_table_location(self, identifier: Identifier) -> str:
        namespace, name = split_identifier(identifier)
        ns_location = self.load_namespace_properties(namespace).get("location")
        if ns_location:
            return f"{ns_location.rstrip('/')}/{name}"
        warehouse = self.properties.get("warehouse")
        if not warehouse:
            from icefloe.exceptions import ValidationError

            raise ValidationError(
                f"no location for table {'.'.join(identifier)!r}: give one, or set the "
                "catalog's 'warehouse' or the namespace's 'location' property"
            )
        return "/".join((warehouse.rstrip("/"), *namespace, name))

    # -- table operations -----------------------------------------------------------------------
    def list_tables(self, namespace: str | Iterable[str]) -> list[Identifier]:
        """Identifiers of the tables directly in ``namespace``."""
        ns = to_identifier(namespace)
        return [(*ns, name) for name in self._list_table_names(ns)]

    def _rename_table_entry(
        self, source: str | Iterable[str], target: str | Iterable[str]
    ) -> Identifier:
        """Rename a table; its files stay where they are."""
        src = self._table_identifier(source)
        dst = check_table_identifier(self._table_identifier(target))
        if src == dst:  # nothing to do, as Java's JDBC and in-memory catalogs (and views)
            if not self.table_exists(src):
                raise NoSuchTableError(f"table {'.'.join(src)!r} does not exist")
            return dst
        self._refuse_view_name(dst, renaming=src)
        self._rename_pointer(src, dst)
        return dst

    def register_table(self, identifier: str | Iterable[str], metadata_location: str) -> Table:
        """Add a table whose metadata file already exists (written by any engine)."""
        ident = check_table_identifier(self._table_identifier(identifier))
        self._refuse_view_name(ident)
        metadata_location = self._registered_location(metadata_location)
        metadata = self.read_metadata(metadata_location)
        self._register_pointer(ident, metadata_location)
        return self._table(ident, metadata, metadata_location)

    def _register_pointer(self, identifier: Identifier, metadata_location: str) -> None:
        """Add the entry of a registered table, refusing a metadata file that is another
        table's current metadata (:meth:`_refuse_shared`). Here the check and the insert are
        two steps; a store that can make them one (the SQL catalog) does."""
        holder = self._table_at(metadata_location)
        if holder is not None and tuple(holder) != tuple(identifier):  # the name taken: below
            raise self._refuse_shared(identifier, holder)
        self._create_pointer(identifier, metadata_location)

    @staticmethod
    def _refuse_shared(identifier: Identifier, holder: Identifier) -> TableAlreadyExistsError:
        """Two entries of one table: a purge of either would delete the other's files."""
        return TableAlreadyExistsError(
            f"cannot register {'.'.join(identifier)!r}: its metadata file is the current "
            f"metadata of table {'.'.join(holder)!r} of this catalog (rename that table "
            "instead, or drop it first)"
        )
