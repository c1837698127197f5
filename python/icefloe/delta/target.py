"""Where a converted table's Iceberg metadata lives: a catalog, or a bare directory.

The directory form needs no catalog: ``v<N>.metadata.json`` files plus ``version-hint.text`` in
one directory (the file-system layout Iceberg Java's ``HadoopTableOperations`` and
:class:`~icefloe.table.static.StaticTable` read), committed with an exclusive create of the
next version so two writers cannot both win. By default the directory is
``<delta table>/_icefloe/metadata``: Delta's VACUUM never deletes paths starting with ``_``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping

from icefloe.catalog.base import Catalog, Identifier, PropertiesUpdateSummary
from icefloe.exceptions import (
    AlreadyExistsError,
    CommitFailedError,
    FileIOError,
    NoSuchTableError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.io import FileIO
from icefloe.metadata import TableMetadata
from icefloe.table import Table
from icefloe.table.static import VERSION_HINT, resolve_metadata_location
from icefloe.table_paths import metadata_file_version

__all__ = ["DirectoryCatalog", "create_table", "load_table"]


class DirectoryCatalog(Catalog):
    """A catalog of exactly one table whose metadata files live in ``directory``."""

    def __init__(self, directory: str, io: FileIO) -> None:
        super().__init__("delta-directory")
        self.directory = directory.rstrip("/")
        self._dir_io = io
        self.identifier: Identifier = ("static-table", self.directory)

    @property
    def io(self) -> FileIO:
        return self._dir_io

    def table_io(
        self,
        table_properties: Mapping[str, str],
        credentials: Mapping[str, str] | None = None,
        refresh_credentials: Callable[[], Mapping[str, str]] | None = None,
    ) -> FileIO:
        return self._dir_io

    def _current_location(self, identifier: Identifier) -> str:
        return resolve_metadata_location(self.directory, self._dir_io)

    def _write(self, version: int, new: TableMetadata) -> str:
        location = f"{self.directory}/v{version}.metadata.json"
        try:
            self._dir_io.new_output(location).write(new.to_bytes())
        except AlreadyExistsError as exc:
            raise CommitFailedError(f"another writer committed {location}") from exc
        with contextlib.suppress(FileIOError):  # readers look past a stale hint
            self._dir_io.new_output(f"{self.directory}/{VERSION_HINT}").write(
                str(version).encode(), overwrite=True
            )
        return location

    def _create_entry(self, identifier: Identifier, metadata: TableMetadata) -> str:
        return self._write(1, metadata)

    def _write_and_swap(
        self, identifier: Identifier, base: TableMetadata, base_location: str, new: TableMetadata
    ) -> str:
        version = metadata_file_version(base_location)
        if version is None:
            raise ValidationError(f"{base_location} is not a v<N>.metadata.json file")
        return self._write(version + 1, new)

    def _unsupported(self, *_: object, **__: object) -> None:
        raise UnsupportedFeatureError("a directory target holds one table and no namespaces")

    def create_namespace(
        self, namespace: str | Iterable[str], properties: Mapping[str, str] | None = None
    ) -> None:
        self._unsupported()

    def list_namespaces(self, namespace: str | Iterable[str] = ()) -> list[Identifier]:
        return []

    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        return False

    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        return {}

    def update_namespace_properties(
        self,
        namespace: str | Iterable[str],
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        raise UnsupportedFeatureError("a directory target has no namespaces")

    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        self._unsupported()

    def _drop_entry(self, identifier: Identifier) -> None:
        self._unsupported()

    def list_tables(self, namespace: str | Iterable[str]) -> list[Identifier]:
        return [self.identifier]

    def _rename_table_entry(
        self, source: str | Iterable[str], target: str | Iterable[str]
    ) -> Identifier:
        raise UnsupportedFeatureError("a directory target cannot rename its table")

    def register_table(self, identifier: str | Iterable[str], metadata_location: str) -> Table:
        raise UnsupportedFeatureError("a directory target cannot register tables")

    def _default_table_location(self, identifier: Identifier) -> str:
        return self.directory


def load_table(catalog: Catalog, identifier: Identifier) -> Table | None:
    """The table, or None when it does not exist yet."""
    try:
        location = catalog._current_location(identifier)
    except NoSuchTableError:
        return None
    return catalog._table(identifier, catalog.read_metadata(location), location)


def create_table(catalog: Catalog, identifier: Identifier, metadata: TableMetadata) -> Table:
    """Create the table from complete metadata (ids kept as given, unlike ``create_table``)."""
    if not isinstance(catalog, DirectoryCatalog) and not catalog.namespace_exists(identifier[:-1]):
        from icefloe.exceptions import NoSuchNamespaceError

        raise NoSuchNamespaceError(f"namespace {'.'.join(identifier[:-1])!r} does not exist")
    location = catalog._create_entry(identifier, metadata)
    return catalog._table(identifier, metadata, location)
