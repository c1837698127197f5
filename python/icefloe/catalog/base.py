"""The :class:`Catalog` base class: identifiers, namespaces and the table API every catalog shares.

Namespaces are tuples of names (``("a", "b")``) or dotted strings (``"a.b"``); table identifiers
are a namespace plus a name (``"a.b.t"`` or ``("a", "b", "t")``). A concrete catalog implements
the namespace operations and a handful of pointer primitives; creating, loading, committing and
dropping tables is shared here and in :mod:`icefloe.catalog.commit`.
"""

from __future__ import annotations

import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from icefloe.arrow_schema import to_schema
from icefloe.catalog.identifiers import (
    check_name,
    check_namespace,
    check_table_identifier,
    namespace_to_string,
    split_identifier,
    to_identifier,
)
from icefloe.exceptions import (
    CorruptFileError,
    FileIOError,
    ForbiddenError,
    IcebergError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NotFoundError,
    OperationNotOfferedError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    UnauthorizedError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.io import FileIO
from icefloe.metadata import TableMetadata, TableRequirement, TableUpdate
from icefloe.properties import gc_enabled
from icefloe.table.committer import CommitResult, Identifier
from icefloe.table_paths import absolute_location, resolve_table_paths
from icefloe.table_paths import table_location as checked_table_location

_log = logging.getLogger(__name__)
T = TypeVar("T")

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.catalog.multi import CatalogTransaction
    from icefloe.catalog.views import View
    from icefloe.metadata.view_metadata import AssertViewUUID, ViewMetadata
    from icefloe.partitioning import PartitionSpec
    from icefloe.schema import Schema
    from icefloe.sorting import SortOrder
    from icefloe.table import Table, Transaction

__all__ = [
    "Catalog",
    "Identifier",
    "PropertiesUpdateSummary",
    "check_name",
    "check_namespace",
    "check_table_identifier",
    "files_to_purge",
    "namespace_to_string",
    "purge_table_files",
    "split_identifier",
    "to_identifier",
]


@dataclass
class PropertiesUpdateSummary:
    """What :meth:`Catalog.update_namespace_properties` did."""

    removed: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


class Catalog(ABC):
    """A named catalog with properties (``warehouse``, ``uri``, ``s3.*``, ...)."""

    #: Whether :meth:`rename_table` and :meth:`register_table` can work (a file-system catalog
    #: finds tables by their directory: neither can).
    renames_and_registers: ClassVar[bool] = True
    #: Whether the catalog keeps views (see :mod:`icefloe.catalog.views`); every view
    #: operation of one that does not raises :class:`UnsupportedFeatureError`.
    keeps_views: ClassVar[bool] = False

    def __init__(self, name: str, **properties: str) -> None:
        self.name = name
        self.properties: dict[str, str] = dict(properties)
        self._given = dict(properties)
        self._io: FileIO | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy opens the catalog afresh from the properties it was given (its connections,
        # sessions and locks belong to this process); tables pickle with their catalog.
        return (_reopened, (type(self), self.name, self._given))

    def close(self) -> None:
        """Release what the catalog holds open (database connections, HTTP sessions); a
        catalog of plain files holds nothing."""
        return None

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def io(self) -> FileIO:
        """The catalog's :class:`~icefloe.io.FileIO`, configured from its properties."""
        if self._io is None:
            self._io = FileIO(self.properties)
        return self._io

    def table_io(
        self,
        table_properties: Mapping[str, str],
        credentials: Mapping[str, str] | None = None,
        refresh_credentials: Callable[[], Mapping[str, str]] | None = None,
    ) -> FileIO:
        """A FileIO for a table: catalog properties overlaid with the table's own, then with
        ``credentials`` for this table only (``s3.access-key-id``, ``s3.secret-access-key``,
        ``s3.session-token``, ``s3.session-token-expires-at-ms``, as a REST catalog vends them;
        ``refresh_credentials`` renews them before they expire). They are never stored in
        the table's metadata."""
        if not credentials and not any(
            key.startswith(("s3.", "gcs.", "hdfs.")) for key in table_properties
        ):
            return self.io
        return FileIO(
            {**self.properties, **table_properties, **(credentials or {})},
            refresh_credentials=refresh_credentials,
        )

    # -- namespaces -----------------------------------------------------------------------------
    @abstractmethod
    def create_namespace(
        self, namespace: str | Iterable[str], properties: Mapping[str, str] | None = None
    ) -> None:
        """Create a namespace; :class:`NamespaceAlreadyExistsError` if it exists."""

    @abstractmethod
    def list_namespaces(self, namespace: str | Iterable[str] = ()) -> list[Identifier]:
        """The namespaces directly under ``namespace`` (top level when empty)."""

    @abstractmethod
    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        """The properties of a namespace; :class:`NoSuchNamespaceError` if it does not exist."""

    @abstractmethod
    def update_namespace_properties(
        self,
        namespace: str | Iterable[str],
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Remove and set namespace properties in one step."""

    @abstractmethod
    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        """Drop an empty namespace; :class:`NamespaceNotEmptyError` if it holds anything."""

    @abstractmethod
    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        """Whether the namespace exists."""

    def create_namespace_if_not_exists(
        self, namespace: str | Iterable[str], properties: Mapping[str, str] | None = None
    ) -> None:
        """Create the namespace unless it already exists."""
        from icefloe.exceptions import NamespaceAlreadyExistsError

        with contextlib.suppress(NamespaceAlreadyExistsError):
            self.create_namespace(namespace, properties)

    @staticmethod
    def _ns_string(namespace: str | Iterable[str]) -> str:
        return namespace_to_string(namespace)

    @staticmethod
    def _check_update(
        removals: Iterable[str] | None, updates: Mapping[str, str] | None
    ) -> tuple[set[str], dict[str, str]]:
        from icefloe.properties import string_map

        if isinstance(removals, str) or not isinstance(removals, Iterable | None):
            raise ValidationError(f"removals must be a list of property names, got {removals!r}")
        removal_set = set(removals or ())
        if not all(isinstance(k, str) for k in removal_set):
            raise ValidationError(f"removals must be property names (strings), got {removals!r}")
        update_map = string_map(updates, "namespace properties")
        overlap = removal_set & set(update_map)
        if overlap:
            raise ValidationError(
                f"namespace properties {sorted(overlap)} are both removed and updated"
            )
        return removal_set, update_map

    # -- tables: primitives each catalog implements ---------------------------------------------
    @abstractmethod
    def _current_location(self, identifier: Identifier) -> str:
        """The table's current metadata file; :class:`NoSuchTableError` if there is no table."""

    @abstractmethod
    def _create_entry(self, identifier: Identifier, metadata: TableMetadata) -> str:
        """Write the first metadata file of a new table and register it; returns its location."""

    @abstractmethod
    def _write_and_swap(
        self, identifier: Identifier, base: TableMetadata, base_location: str, new: TableMetadata
    ) -> str:
        """Write ``new`` and move the table from ``base_location`` to it (see commit.py)."""

    @abstractmethod
    def _drop_entry(self, identifier: Identifier) -> None:
        """Forget the table (files stay); :class:`NoSuchTableError` if there is none."""

    @abstractmethod
    def list_tables(self, namespace: str | Iterable[str]) -> list[Identifier]:
        """Identifiers of the tables directly in ``namespace``."""

    def rename_table(self, source: str | Iterable[str], target: str | Iterable[str]) -> Table:
        """Rename a table (its files do not move) and load it under its new name."""
        dst = self._rename_table_entry(source, target)
        return loaded_after_rename(dst, self.load_table)

    def _rename_table_entry(
        self, source: str | Iterable[str], target: str | Iterable[str]
    ) -> Identifier:
        """Rename a table in the catalog without reading its metadata (as Java's catalogs
        rename); returns the new identifier."""
        raise UnsupportedFeatureError(f"a {type(self).__name__} cannot rename tables")

    @abstractmethod
    def register_table(self, identifier: str | Iterable[str], metadata_location: str) -> Table:
        """Add an existing table to the catalog from its metadata file."""

    @staticmethod
    def _registered_location(metadata_location: str) -> str:
        """``metadata_location`` as a catalog stores it for :meth:`register_table`: a string,
        a local path made absolute (stored relative it would only load from one directory)."""
        if not isinstance(metadata_location, str) or not metadata_location:
            raise ValidationError(
                f"register_table: the metadata location must be a non-empty string, not "
                f"{metadata_location!r}"
            )
        return absolute_location(metadata_location)

    @abstractmethod
    def _default_table_location(self, identifier: Identifier) -> str:
        """Where a new table goes when no location is given."""

    # -- tables: shared behaviour ---------------------------------------------------------------
    def read_metadata(self, location: str, io: FileIO | None = None) -> TableMetadata:
        """Parse the metadata file at ``location`` (plain or gzip JSON)."""
        raw = (io or self.io).new_input(location).read()
        try:
            return TableMetadata.parse(raw)
        except ValidationError as exc:  # the file is damaged, not the caller's input
            raise CorruptFileError(f"metadata file {location}: {exc}") from exc

    def _table(self, identifier: Identifier, metadata: TableMetadata, location: str) -> Table:
        from icefloe.table import Table

        return Table(identifier, metadata, location, self.table_io(metadata.properties), self)

    def load_table(self, identifier: str | Iterable[str]) -> Table:
        """The table's current state; :class:`NoSuchTableError` if it does not exist."""
        ident = self._table_identifier(identifier)
        location = self._current_location(ident)
        return self._table(ident, self.read_metadata(location), location)

    def table_exists(self, identifier: str | Iterable[str]) -> bool:
        """Whether the table exists."""
        try:
            self._current_location(self._table_identifier(identifier))
        except NoSuchTableError:
            return False
        return True

    def create_table(
        self,
        identifier: str | Iterable[str],
        schema: Schema | pa.Schema,
        location: str | None = None,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        properties: Mapping[str, str] | None = None,
        format_version: int | None = None,
    ) -> Table:
        """Create a table; :class:`TableAlreadyExistsError` if the identifier is taken.

        ``schema`` is an icefloe :class:`~icefloe.schema.Schema` or a ``pyarrow.Schema``
        (field ids are assigned fresh either way). Without ``location`` the table goes under
        its namespace's ``location`` property or the catalog's warehouse.
        """
        ident, metadata = self._new_table(
            identifier, schema, location, partition_spec, sort_order, properties, format_version
        )
        metadata_location = self._create_entry(ident, metadata)
        return self._table(ident, metadata, metadata_location)

    def load_every_snapshot(self, table: Table) -> TableMetadata | None:
        """``table``'s metadata with the snapshots the catalog left out when it loaded it, or
        None when it left none out (only a REST catalog with ``snapshot-loading-mode=refs``
        does)."""
        return None

    def create_table_transaction(
        self,
        identifier: str | Iterable[str],
        schema: Schema | pa.Schema,
        location: str | None = None,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        properties: Mapping[str, str] | None = None,
        format_version: int | None = None,
    ) -> Transaction:
        """A transaction that creates the table when it commits (a staged create).

        Nothing exists until :meth:`Transaction.commit_transaction`; the commit then creates
        the table with every change of the transaction (for example its first append) at
        once, or fails with :class:`TableAlreadyExistsError` if the name was taken meanwhile
        (the files the transaction wrote are deleted then).
        """
        from icefloe.table import Transaction

        ident, metadata = self._new_table(
            identifier, schema, location, partition_spec, sort_order, properties, format_version
        )
        return Transaction(self._table(ident, metadata, ""))

    def _new_table(
        self,
        identifier: str | Iterable[str],
        schema: Schema | pa.Schema,
        location: str | None,
        partition_spec: PartitionSpec | None,
        sort_order: SortOrder | None,
        properties: Mapping[str, str] | None,
        format_version: int | None,
        *,
        limit_nesting: bool = True,
    ) -> tuple[Identifier, TableMetadata]:
        """The checked identifier and first metadata of a table to create (a REST server
        passes ``limit_nesting=False``: see :func:`icefloe.metadata.new_table_metadata`)."""
        from icefloe.metadata import new_table_metadata
        from icefloe.metadata.create import check_create_args
        from icefloe.partitioning import UNPARTITIONED_PARTITION_SPEC
        from icefloe.sorting import UNSORTED_SORT_ORDER

        check_create_args(partition_spec, sort_order, properties, location)
        ident = check_table_identifier(self._table_identifier(identifier))
        if not self.namespace_exists(ident[:-1]):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ident[:-1])!r} does not exist")
        if self.table_exists(ident):
            raise TableAlreadyExistsError(f"table {'.'.join(ident)!r} already exists")
        self._refuse_view_name(ident)
        table_location = checked_table_location(location or self._default_table_location(ident))
        metadata = new_table_metadata(
            to_schema(schema),
            UNPARTITIONED_PARTITION_SPEC if partition_spec is None else partition_spec,
            UNSORTED_SORT_ORDER if sort_order is None else sort_order,
            table_location,
            resolve_table_paths(table_location, properties or {}),
            format_version,
            limit_nesting=limit_nesting,
        )
        return ident, metadata

    def create_table_if_not_exists(
        self,
        identifier: str | Iterable[str],
        schema: Schema | pa.Schema,
        location: str | None = None,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        properties: Mapping[str, str] | None = None,
        format_version: int | None = None,
    ) -> Table:
        """Create the table, or load it if it already exists.

        A view of the name is no table to load: its ``TableAlreadyExistsError`` is raised.
        """
        try:
            return self.create_table(
                identifier,
                schema,
                location,
                partition_spec,
                sort_order,
                properties,
                format_version,
            )
        except TableAlreadyExistsError as exists:
            try:
                return self.load_table(identifier)
            except NoSuchTableError:
                raise exists from None

    def drop_table(self, identifier: str | Iterable[str], purge: bool = False) -> None:
        """Remove the table from the catalog; with ``purge`` also delete its files."""
        ident = self._table_identifier(identifier)
        table = None
        if purge:
            try:
                table = self.load_table(ident)
            except NoSuchTableError:
                raise
            except (FileIOError, ServiceUnavailableError, UnauthorizedError, ForbiddenError) as e:
                if not isinstance(e, NotFoundError):
                    # the store did not answer or refused: the table stays, to be dropped
                    # again (dropped now, its files could never be found to delete)
                    raise
                self._warn_unpurged(ident, e)
            except (CorruptFileError, ValidationError, UnsupportedFeatureError) as e:
                self._warn_unpurged(ident, e)
        files = files_to_purge(table) if table is not None else []  # read before the drop
        if table is not None:
            sharing = self._tables_sharing(ident, table, files[-1])
            if sharing:
                # another entry is this same table (its metadata registered twice): deleting
                # the files would destroy that one
                _log.warning(
                    "table %s shares its metadata and files with %s of this catalog (the same "
                    "table registered twice): dropping it without deleting its files",
                    ".".join(ident),
                    ", ".join(".".join(t) for t in sharing),
                )
                table = None
        self._drop_entry(ident)
        if table is not None:
            purge_table_files(table, files)

    @staticmethod
    def _warn_unpurged(ident: Identifier, error: IcebergError) -> None:
        """As Java's catalogs do, a table whose metadata is gone or cannot be read is still
        dropped, its files left (to orphan removal of the warehouse)."""
        _log.warning(
            "cannot read the metadata of %s (%s): dropping it without deleting its files",
            ".".join(ident),
            error,
        )

    def purge_table(self, identifier: str | Iterable[str]) -> None:
        """Drop the table and delete its files."""
        self.drop_table(identifier, purge=True)

    def _tables_sharing(
        self, identifier: Identifier, table: Table, metadata_files: list[str]
    ) -> list[Identifier]:
        """Other tables of this catalog that are the table being purged (its metadata
        registered under another name too), whose files a purge must not delete."""
        return []

    def commit_table(
        self,
        table: Table,
        requirements: Iterable[TableRequirement],
        updates: Iterable[TableUpdate],
    ) -> CommitResult:
        """Commit ``updates`` to ``table`` if ``requirements`` hold (retrying lost races).

        Raises :class:`CommitConflictError` when a requirement fails against the table's
        current state, :class:`CommitFailedError` when the retries run out and
        :class:`CommitStateUnknownError` when the outcome cannot be known. Only those two and
        :class:`ValidationError` prove that the table did not change (see
        :func:`~icefloe.exceptions.commit_did_not_happen`): once the pointer moved, nothing
        here raises them, so a caller may delete its files only after one of them.
        """
        from icefloe.catalog.commit import run_commit

        ident = table.identifier
        if not table.metadata_location:  # a staged create: the table does not exist yet
            from icefloe.metadata import apply_updates, validate_requirements

            reqs = list(requirements)
            validate_requirements(reqs, table.metadata)
            new = apply_updates(table.metadata, list(updates))
            return CommitResult(new, self._create_entry(ident, new))

        def write_and_swap(base: TableMetadata, base_location: str, new: TableMetadata) -> str:
            return self._write_and_swap(ident, base, base_location, new)

        def refresh() -> tuple[TableMetadata, str]:
            location = self._current_location(ident)
            known, known_location = table.metadata_and_location()
            if location == known_location:
                return known, location  # a metadata file never changes
            return self.read_metadata(location), location

        start, start_location = table.metadata_and_location()
        result, base, base_location = run_commit(
            start,
            start_location,
            requirements,
            updates,
            write_and_swap,
            refresh,
        )
        self._delete_after_commit(base, base_location, result.metadata)
        return result

    def _delete_after_commit(
        self, base: TableMetadata, base_location: str, new: TableMetadata
    ) -> None:
        """The metadata files a committed change dropped from the table's log, with
        ``write.metadata.delete-after-commit.enabled``; the commit happened, so a failed
        deletion only leaves files for orphan removal."""
        from icefloe.catalog.commit import files_to_delete_after_commit

        try:
            io = self.table_io(new.properties)
            for old in files_to_delete_after_commit(base, base_location, new):
                io.delete_quietly(old)
        except IcebergError:
            pass

    def commit_tables(
        self, changes: Iterable[tuple[Table, list[TableRequirement], list[TableUpdate]]]
    ) -> list[CommitResult] | None:
        """Commit changes to several tables all or nothing (see :mod:`icefloe.catalog.multi`).

        Returns each table's result in order, or ``None`` when the catalog does not report the
        new metadata (the tables must then be reloaded). Catalogs that cannot swap several
        pointers atomically raise :class:`OperationNotOfferedError` (an
        :class:`UnsupportedFeatureError`) before writing anything.
        """
        raise OperationNotOfferedError(
            f"{type(self).__name__} cannot commit several tables atomically"
        )

    def transaction(self) -> CatalogTransaction:
        """A transaction over several tables, committed all or nothing when it ends."""
        from icefloe.catalog.multi import CatalogTransaction

        return CatalogTransaction(self)

    # -- views (see icefloe.catalog.views) -------------------------------------------------------
    def create_view(
        self,
        identifier: str | Iterable[str],
        sql: str | Mapping[str, str],
        schema: Schema | pa.Schema,
        *,
        dialect: str | None = None,
        default_namespace: Iterable[str] | None = None,
        default_catalog: str | None = None,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
        summary: Mapping[str, str] | None = None,
    ) -> View:
        """Create a view of ``sql`` (one query and its ``dialect``, or ``{dialect: query}``)
        returning rows of ``schema`` (a :class:`~icefloe.schema.Schema` or ``pyarrow.Schema``).

        Unqualified names in the query resolve in ``default_namespace`` (the view's own
        namespace unless given) and ``default_catalog``. :class:`ViewAlreadyExistsError` if a
        view or a table has the name. Nothing runs the query here: engines do, reading the view.
        """
        from icefloe.catalog import views

        ident = check_table_identifier(self._table_identifier(identifier))
        version = views.new_version(
            1, ident, sql, dialect, default_namespace, default_catalog, summary
        )
        return views.create_view_from(self, ident, to_schema(schema), version, properties, location)

    def replace_view(
        self,
        identifier: str | Iterable[str],
        sql: str | Mapping[str, str],
        schema: Schema | pa.Schema,
        *,
        dialect: str | None = None,
        default_namespace: Iterable[str] | None = None,
        default_catalog: str | None = None,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
        summary: Mapping[str, str] | None = None,
        expect_uuid: str | None = None,
    ) -> View:
        """Make a new version of the view current; ``properties`` are added to the view's.

        Earlier versions stay in its history (up to ``version.history.num-entries``, 10 by
        default). The new version must keep every dialect of the current one unless the view
        has ``replace.drop-dialect.allowed=true``. :class:`NoSuchViewError` if there is none;
        with ``expect_uuid``, :class:`CommitFailedError` unless the view is still that one.
        """
        from icefloe.catalog import views

        ident = self._table_identifier(identifier)
        version = views.new_version(
            0, ident, sql, dialect, default_namespace, default_catalog, summary
        )
        return views.replace_view(
            self, ident, to_schema(schema), version, properties, location, expect_uuid
        )

    def create_or_replace_view(
        self,
        identifier: str | Iterable[str],
        sql: str | Mapping[str, str],
        schema: Schema | pa.Schema,
        **options: Any,
    ) -> View:
        """:meth:`replace_view` if the view exists, else :meth:`create_view`."""
        if self.view_exists(identifier):
            return self.replace_view(identifier, sql, schema, **options)
        return self.create_view(identifier, sql, schema, **options)

    def load_view(self, identifier: str | Iterable[str]) -> View:
        """The view; :class:`NoSuchViewError` if there is none."""
        from icefloe.catalog import views

        return views.load_view(self, identifier)

    def view_exists(self, identifier: str | Iterable[str]) -> bool:
        """Whether the view exists."""
        from icefloe.catalog import views

        return views.view_exists(self, identifier)

    def list_views(self, namespace: str | Iterable[str]) -> list[Identifier]:
        """Identifiers of the views directly in ``namespace``."""
        from icefloe.catalog import views

        return views.list_views(self, namespace)

    def drop_view(self, identifier: str | Iterable[str]) -> None:
        """Forget the view and, unless it has ``gc.enabled=false``, delete its current
        metadata file (as Iceberg Java does)."""
        from icefloe.catalog import views

        views.drop_view(self, identifier)

    def rename_view(self, source: str | Iterable[str], target: str | Iterable[str]) -> View:
        """Rename a view (its files do not move; the new name must be free) and load it under
        its new name."""
        return loaded_after_rename(self._rename_view_entry(source, target), self.load_view)

    def _rename_view_entry(
        self, source: str | Iterable[str], target: str | Iterable[str]
    ) -> Identifier:
        """Rename a view in the catalog without reading its metadata; the new identifier."""
        from icefloe.catalog import views

        return views.rename_view_entry(self, source, target)

    def register_view(self, identifier: str | Iterable[str], metadata_location: str) -> View:
        """Add a view whose metadata file already exists (written by any engine)."""
        from icefloe.catalog import views

        return views.register_view(self, identifier, metadata_location)

    def commit_view(
        self,
        view: View,
        requirements: Iterable[AssertViewUUID],
        updates: Iterable[TableUpdate],
        rebuild: Callable[[ViewMetadata], list[TableUpdate]] | None = None,
    ) -> View:
        """Apply REST view ``updates`` if ``requirements`` hold against the view's current
        metadata (a lost race is retried on the new state while they still hold, with the
        updates ``rebuild`` makes of it if given)."""
        from icefloe.catalog import views

        return views.commit_view(self, view, requirements, updates, rebuild)

    def read_view_metadata(self, location: str) -> ViewMetadata:
        """Parse the view metadata file at ``location`` (plain or gzip JSON)."""
        from icefloe.catalog import views

        return views.read_view_metadata(self, location)

    def _refuse_view_name(self, identifier: Identifier, renaming: Identifier | None = None) -> None:
        """:class:`TableAlreadyExistsError` if a view has the name a table is to take."""
        if self.keeps_views and self.view_exists(identifier):
            name = ".".join(identifier)
            if renaming is not None:
                raise TableAlreadyExistsError(
                    f"Cannot rename {'.'.join(renaming)} to {name}. View already exists"
                )
            raise TableAlreadyExistsError(f"View with same name already exists: {name}")

    # -- view pointers: what a catalog that keeps views implements
    def _no_views(self) -> UnsupportedFeatureError:
        return UnsupportedFeatureError(f"{type(self).__name__} does not keep views")

    def _view_pointer(self, identifier: Identifier) -> str:
        """The view's current metadata location; :class:`NoSuchViewError` if none."""
        raise self._no_views()

    def _create_view_pointer(self, identifier: Identifier, metadata_location: str) -> None:
        """Register a new view; :class:`ViewAlreadyExistsError` if the name is taken."""
        raise self._no_views()

    def _swap_view_pointer(self, identifier: Identifier, expected: str, new: str) -> None:
        """Move the view from ``expected`` to ``new``; :class:`CommitFailedError` if it no
        longer points at ``expected``."""
        raise self._no_views()

    def _drop_view_pointer(self, identifier: Identifier) -> None:
        """Forget a view; :class:`NoSuchViewError` if there is none."""
        raise self._no_views()

    def _rename_view_pointer(self, source: Identifier, target: Identifier) -> None:
        """Rename a view's entry (the target is known to be free)."""
        raise self._no_views()

    def _list_view_names(self, namespace: Identifier) -> list[str]:
        """Names of the views directly in ``namespace``."""
        raise self._no_views()

    def _table_identifier(self, identifier: str | Iterable[str]) -> Identifier:
        namespace, name = split_identifier(identifier)
        return (*namespace, name)


def _reopened(kind: type[Catalog], name: str, properties: dict[str, str]) -> Catalog:
    """The catalog a pickled one stands for, opened again from its given properties."""
    return kind(name, **properties)


def loaded_after_rename(dst: Identifier, load: Callable[[Identifier], T]) -> T:
    """``load(dst)`` after a rename; a failure notes that the rename itself was done."""
    try:
        return load(dst)
    except IcebergError as e:
        e.args = (f"{e} (the rename to {'.'.join(dst)!r} was done; only loading it failed)",)
        raise


def files_to_purge(table: Table) -> list[list[str]]:
    """The files a dropped table's metadata reaches, in the order :func:`purge_table_files`
    deletes them: the data and delete files of every snapshot's manifests (none with
    ``gc.enabled=false``: other tables may share them), then the manifests, manifest lists and
    statistics files, then the metadata files of the metadata log and the current one. When a
    manifest list or manifest is already gone, what the metadata itself names; any other
    failure to read one is raised (the table is still there to drop again)."""
    from icefloe.table.orphan_files import reachable_files

    meta = table.metadata
    io = table.io
    gc = gc_enabled(meta.properties)
    metadata_files = {table.metadata_location, *(e.metadata_file for e in meta.metadata_log)}
    named = {*metadata_files, *(s.manifest_list or "" for s in meta.snapshots)}
    named.update(s.statistics_path for s in meta.statistics)
    named.update(s.statistics_path for s in meta.partition_statistics)
    content: set[str] = set()
    try:
        lists = reachable_files(io, meta, table.metadata_location, content_files=False)
        named |= set(lists.to_pylist())
        if gc:
            content = set(reachable_files(io, meta, table.metadata_location).to_pylist()) - named
    except NotFoundError:
        pass  # a manifest list or manifest is already gone: the files it named are orphans
    named.discard("")
    return [sorted(content), sorted(named - metadata_files), sorted(metadata_files)]


def purge_table_files(table: Table, files: list[list[str]] | None = None) -> None:
    """Delete the files a dropped table's metadata reaches, as Java's ``dropTableData`` does
    (``files``: :func:`files_to_purge`, computed now if not given), then the directories
    that held them, left empty.

    Never a directory or a prefix: with the default layout another table (``db.a.b``) lives
    inside this one's location (``db.a``), and after a rename a new table of the old name may
    live there. Content files go first and the metadata reaching them last, so a purge cut
    short leaves no metadata of a live table pointing at deleted files. Files no metadata
    reaches (of failed writes) are left to orphan removal. Of the directories, only those the
    deleted files were in (up to the table's location) are removed, and only when empty.
    """
    from icefloe.table._remove_files import delete_all
    from icefloe.table_paths import data_location, metadata_location

    meta = table.metadata
    io = table.io
    groups = files if files is not None else files_to_purge(table)
    # the table is dropped already: a file that cannot be deleted is logged and left behind
    for group in groups:
        delete_all(io, group, what="purge: deleting files", keep_going=True)
    io.delete_emptied_dirs(
        (f for group in groups for f in group),
        (
            data_location(meta.location, meta.properties),
            metadata_location(meta.location, meta.properties),
            meta.location,
        ),
    )
