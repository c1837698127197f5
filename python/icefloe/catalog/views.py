"""Iceberg views in a catalog: :class:`View` and the view operations every catalog offers.

A view is a named, versioned SQL query with the schema it returns, kept in a view metadata file
(gzip JSON by default, ``write.metadata.compression-codec``) whose location the catalog points
at, as a table's is. Tables and views share one namespace: a name is either. Catalogs that keep
pointers (SQL, REST) implement the primitives at the end of :class:`ViewCatalog`; a file-system
catalog has no views (as in Iceberg Java) and raises :class:`UnsupportedFeatureError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from icefloe.exceptions import (
    CommitFailedError,
    CorruptFileError,
    IcebergError,
    NoSuchNamespaceError,
    NoSuchViewError,
    UnsupportedFeatureError,
    ValidationError,
    ViewAlreadyExistsError,
)
from icefloe.metadata.updates import TableUpdate
from icefloe.metadata.view_metadata import (
    AddViewVersion,
    AssertViewUUID,
    SQLRepresentation,
    ViewHistoryEntry,
    ViewMetadata,
    ViewMetadataBuilder,
    ViewVersion,
    apply_view_updates,
)
from icefloe.properties import string_map
from icefloe.table.committer import Identifier

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.catalog.base import Catalog
    from icefloe.schema import Schema

__all__ = [
    "View",
    "create_view_from",
    "new_version",
    "read_view_metadata",
    "view_metadata_location",
]

#: View metadata is written gzip-compressed unless the view says otherwise (as Iceberg Java).
_CODEC = "write.metadata.compression-codec"
_VIEW_CODEC_DEFAULT = {_CODEC: "gzip"}


def view_metadata_location(metadata: ViewMetadata, version: int) -> str:
    """Where version ``version`` of a view's metadata goes
    (``<location>/metadata/<V>-<uuid>.gz.metadata.json``; ``write.metadata.path`` and
    ``write.metadata.compression-codec`` are honoured)."""
    from icefloe.table_paths import new_metadata_file_location

    props = {**_VIEW_CODEC_DEFAULT, **metadata.properties}
    codec = props[_CODEC].strip().lower()
    if codec not in ("gzip", "none"):  # Java refuses other codecs for metadata
        raise ValidationError(f"invalid {_CODEC} for a view: {props[_CODEC]!r} (gzip or none)")
    return new_metadata_file_location(metadata.location, {**props, _CODEC: codec}, version)


class View:
    """A view as loaded from its catalog: metadata, the file it came from, and changes."""

    def __init__(
        self,
        identifier: Identifier,
        metadata: ViewMetadata,
        metadata_location: str,
        catalog: Catalog,
    ) -> None:
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.catalog = catalog

    def __repr__(self) -> str:
        return f"View({'.'.join(self.identifier)!r}, version={self.metadata.current_version_id})"

    @property
    def name(self) -> str:
        return ".".join(self.identifier)

    @property
    def schema(self) -> Schema:
        """The schema of the current query's result."""
        return self.metadata.schema

    @property
    def current_version(self) -> ViewVersion:
        return self.metadata.current_version

    @property
    def versions(self) -> tuple[ViewVersion, ...]:
        return self.metadata.versions

    @property
    def history(self) -> tuple[ViewHistoryEntry, ...]:
        """When each version became current (the ``version-log``)."""
        return self.metadata.version_log

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.metadata.properties)

    @property
    def location(self) -> str:
        return self.metadata.location

    @property
    def dialects(self) -> list[str]:
        """The SQL dialects the current version has a query in."""
        return self.current_version.dialects

    def sql(self, dialect: str | None = None) -> str:
        """The current query in ``dialect`` (case-insensitive); without one, the query when
        the version has exactly one. :class:`ValidationError` names the dialects there are."""
        version = self.current_version
        if dialect is None:
            if len(version.dialects) != 1:
                raise ValidationError(
                    f"view {self.name!r} has queries in {version.dialects}: name a dialect"
                )
            dialect = version.dialects[0]
        found = version.sql(dialect)
        if found is None:
            raise ValidationError(
                f"view {self.name!r} has no {dialect!r} query (it has {version.dialects})"
            )
        return found

    def refresh(self) -> View:
        """This view as the catalog has it now."""
        fresh = self.catalog.load_view(self.identifier)
        self.metadata, self.metadata_location = fresh.metadata, fresh.metadata_location
        return self

    def update_properties(
        self, updates: Mapping[str, str] | None = None, removals: Iterable[str] = ()
    ) -> View:
        """Set and remove properties in one commit; returns the view as committed."""
        b = ViewMetadataBuilder(self.metadata)
        b.set_properties(dict(updates or {}))
        b.remove_properties(removals)
        b.build()  # checked before a REST server sees the change
        return self.catalog.commit_view(self, [AssertViewUUID(self.metadata.view_uuid)], b.changes)

    def replace(
        self,
        sql: str | Mapping[str, str],
        schema: Schema | pa.Schema,
        **kwargs: Any,
    ) -> View:
        """A new current version (see :meth:`Catalog.replace_view`) of this view: if the name
        now belongs to another view (dropped and created again), :class:`CommitFailedError`."""
        return self.catalog.replace_view(
            self.identifier, sql, schema, expect_uuid=self.metadata.view_uuid, **kwargs
        )


def _representations(sql: str | Mapping[str, str], dialect: str | None) -> list[SQLRepresentation]:
    if dialect is not None and not isinstance(dialect, str):
        raise ValidationError(f"dialect must be a name (a string), got {dialect!r}")
    if isinstance(sql, str):
        if not dialect:
            raise ValidationError("name the SQL dialect of the query (dialect='spark', ...)")
        queries = {dialect: sql}
    else:
        if dialect is not None:
            raise ValidationError("give either one query and its dialect, or a dict of them")
        if not isinstance(sql, Mapping):
            raise ValidationError(
                f"a view's query is SQL text or a dict of dialect to SQL, not {type(sql).__name__}"
            )
        queries = dict(sql)
    if not queries:
        raise ValidationError("a view needs a query")
    out = []
    for d, q in queries.items():
        if not isinstance(d, str) or not d.strip() or not isinstance(q, str) or not q.strip():
            raise ValidationError(f"invalid query for dialect {d!r}: {q!r}")
        out.append(SQLRepresentation(q, d))
    return out


def _summary(summary: Mapping[str, str] | None) -> dict[str, str]:
    """The version's summary: the caller's, else icefloe as its engine (icefloe's version is
    never put under another engine's name)."""
    from icefloe import __version__

    given = string_map(summary, "view summary")
    if "engine-name" in given:
        return given
    return {"engine-name": "icefloe", "engine-version": __version__, **given}


def new_version(
    version_id: int,
    ident: Identifier,
    sql: str | Mapping[str, str],
    dialect: str | None,
    default_namespace: Iterable[str] | None,
    default_catalog: str | None,
    summary: Mapping[str, str] | None,
) -> ViewVersion:
    """A view version of ``sql`` (schema id 0: the builder assigns the real one), resolving
    names in the view's own namespace unless ``default_namespace`` is given."""
    return ViewVersion(
        version_id=version_id,
        timestamp_ms=time.time_ns() // 1_000_000,
        schema_id=0,
        summary=_summary(summary),
        representations=tuple(_representations(sql, dialect)),
        default_namespace=ident[:-1]
        if default_namespace is None
        else _namespace(default_namespace),
        default_catalog=default_catalog,
    )


def _namespace(value: str | Iterable[str]) -> tuple[str, ...]:
    """A namespace given as ``"a.b"`` or ``("a", "b")`` (levels must be strings)."""
    from icefloe.catalog.base import to_identifier

    return to_identifier(value)


def _check_views(catalog: Catalog) -> None:
    if not catalog.keeps_views:
        raise UnsupportedFeatureError(f"{type(catalog).__name__} does not keep views")


def create_view_from(
    catalog: Catalog,
    ident: Identifier,
    schema: Schema,
    version: ViewVersion,
    properties: Mapping[str, str] | None = None,
    location: str | None = None,
) -> View:
    """Create a view whose first version is ``version`` returning ``schema`` (its ids as
    given). The namespace must exist and the name be free (see
    :meth:`Catalog.create_view <icefloe.catalog.base.Catalog.create_view>`)."""
    from dataclasses import replace

    from icefloe.catalog.base import check_table_identifier

    _check_views(catalog)
    check_table_identifier(ident)
    if not catalog.namespace_exists(ident[:-1]):
        raise NoSuchNamespaceError(f"namespace {'.'.join(ident[:-1])!r} does not exist")
    _refuse_taken_name(catalog, ident)
    version = replace(version, version_id=1)  # a view's first version is 1, as Java's
    b = ViewMetadataBuilder()
    b.set_properties(string_map(properties, "view properties"))
    b.set_location(_view_location(location or catalog._default_table_location(ident)))
    b.set_current_version(version, schema)
    return _create_view_entry(catalog, ident, b.build())


def _view_location(location: str) -> str:
    """``location`` checked and made absolute as a table's is: stored relative, the view's
    files would be looked for under whatever directory a later process runs in."""
    from icefloe.io import check_location
    from icefloe.table_paths import absolute_location

    if not isinstance(location, str):
        raise ValidationError(f"view location must be a str or None, got {location!r}")
    check_location(location)
    return absolute_location(location)


def replace_view(
    catalog: Catalog,
    ident: Identifier,
    schema: Schema,
    version: ViewVersion,
    properties: Mapping[str, str] | None = None,
    location: str | None = None,
    expect_uuid: str | None = None,
) -> View:
    """Make ``version`` (returning ``schema``) the view's current version, with the next
    version id; see :meth:`Catalog.replace_view <icefloe.catalog.base.Catalog.replace_view>`."""
    from dataclasses import replace

    _check_views(catalog)
    view = catalog.load_view(ident)
    base = view.metadata
    if expect_uuid is not None:
        if not isinstance(expect_uuid, str):
            raise ValidationError(f"expect_uuid must be a UUID string, got {expect_uuid!r}")
        AssertViewUUID(expect_uuid).validate(base)
    props = string_map(properties, "view properties")
    moved = _view_location(location) if location else None

    def changes(base: ViewMetadata) -> list[TableUpdate]:
        b = ViewMetadataBuilder(base)
        b.set_properties(props)
        b.set_current_version(
            replace(version, version_id=max(v.version_id for v in base.versions) + 1), schema
        )
        if moved:
            b.set_location(moved)
        b.build()  # the view's rules, checked here before a REST server sees the change
        return list(b.changes)

    # a race lost to another writer is retried by commit_view: the replace made again on the
    # new state (the other writer may have added this schema or this very version)
    return catalog.commit_view(
        view, [AssertViewUUID(base.view_uuid)], changes(base), rebuild=changes
    )


def load_view(catalog: Catalog, identifier: str | Iterable[str]) -> View:
    """The view; :class:`NoSuchViewError` if there is none."""
    _check_views(catalog)
    ident = catalog._table_identifier(identifier)
    location = catalog._view_pointer(ident)
    return View(ident, read_view_metadata(catalog, location), location, catalog)


def view_exists(catalog: Catalog, identifier: str | Iterable[str]) -> bool:
    try:
        catalog._view_pointer(catalog._table_identifier(identifier))
    except NoSuchViewError:
        return False
    return True


def list_views(catalog: Catalog, namespace: str | Iterable[str]) -> list[Identifier]:
    """Identifiers of the views directly in ``namespace``."""
    _check_views(catalog)
    _check_views(catalog)
    from icefloe.catalog.base import to_identifier

    ns = to_identifier(namespace)
    return [(*ns, name) for name in catalog._list_view_names(ns)]


def drop_view(catalog: Catalog, identifier: str | Iterable[str]) -> None:
    """Forget the view and, unless it has ``gc.enabled=false``, delete its current metadata
    file (as Iceberg Java does; earlier versions' files stay)."""
    from icefloe.properties import gc_enabled

    _check_views(catalog)
    ident = catalog._table_identifier(identifier)
    try:
        view: View | None = catalog.load_view(ident)
    except (NoSuchViewError, UnsupportedFeatureError):
        raise
    except IcebergError:  # an unreadable file does not keep the view from being dropped
        view = None
    catalog._drop_view_pointer(ident)
    if view is not None and gc_enabled(view.properties):
        catalog.table_io(view.metadata.properties).delete_quietly(view.metadata_location)


def rename_view_entry(
    catalog: Catalog, source: str | Iterable[str], target: str | Iterable[str]
) -> Identifier:
    """Rename a view (its files do not move, its metadata is not read); the target name must
    be free. Returns the new identifier."""
    _check_views(catalog)
    from icefloe.catalog.base import check_table_identifier

    src = catalog._table_identifier(source)
    dst = check_table_identifier(catalog._table_identifier(target))
    catalog._view_pointer(src)  # NoSuchViewError first, as Java reports it
    if src == dst:  # nothing to do, as Java's catalogs answer
        return src
    if not catalog.namespace_exists(dst[:-1]):
        raise NoSuchNamespaceError(f"namespace {'.'.join(dst[:-1])!r} does not exist")
    moving = f"Cannot rename {'.'.join(src)} to {'.'.join(dst)}."
    if catalog.view_exists(dst):
        raise ViewAlreadyExistsError(f"{moving} View already exists")
    if catalog.table_exists(dst):
        raise ViewAlreadyExistsError(f"{moving} Table already exists")
    catalog._rename_view_pointer(src, dst)
    return dst


def register_view(
    catalog: Catalog, identifier: str | Iterable[str], metadata_location: str
) -> View:
    """Add a view whose metadata file already exists (written by any engine)."""
    _check_views(catalog)
    from icefloe.catalog.base import check_table_identifier

    ident = check_table_identifier(catalog._table_identifier(identifier))
    if not catalog.namespace_exists(ident[:-1]):
        raise NoSuchNamespaceError(f"namespace {'.'.join(ident[:-1])!r} does not exist")
    _refuse_taken_name(catalog, ident)
    if not isinstance(metadata_location, str) or not metadata_location:
        raise ValidationError(f"metadata_location must be a path or URI, got {metadata_location!r}")
    metadata = read_view_metadata(catalog, metadata_location)
    catalog._create_view_pointer(ident, metadata_location)
    return View(ident, metadata, metadata_location, catalog)


def commit_view(
    catalog: Catalog,
    view: View,
    requirements: Iterable[AssertViewUUID],
    updates: Iterable[TableUpdate],
    rebuild: Callable[[ViewMetadata], list[TableUpdate]] | None = None,
) -> View:
    """Apply REST view ``updates`` to ``view`` if ``requirements`` hold against the view's
    current metadata (a lost race is retried on the new state while they still hold: with
    the updates ``rebuild`` makes of it, if given, else the same updates)."""
    _check_views(catalog)
    from icefloe.table.committer import RetryPolicy

    reqs = list(requirements)
    ups = list(updates)
    base, base_location = view.metadata, view.metadata_location
    policy = RetryPolicy.from_properties(base.properties)
    deadline = time.monotonic() + policy.total_timeout_ms / 1000
    attempt = 0
    while True:
        for r in reqs:
            r.validate(base)
        new = apply_view_updates(base, ups)
        if new == base:  # nothing changes: no new metadata file (as Java's commit)
            return View(view.identifier, base, base_location, catalog)
        try:
            location = _write_and_swap_view(catalog, view.identifier, base_location, new)
            return View(view.identifier, new, location, catalog)
        except CommitFailedError as exc:
            attempt += 1
            late = time.monotonic() > deadline
            if attempt > policy.num_retries or late or not exc.retryable:
                raise
            time.sleep(policy.wait_ms(attempt) / 1000)  # the view's commit.retry.* settings
            fresh = catalog.load_view(view.identifier)
            base, base_location = fresh.metadata, fresh.metadata_location
            if rebuild is not None:
                for r in reqs:
                    r.validate(base)
                ups = rebuild(base)
            ups = _after_log(ups, base)


def _after_log(updates: list[TableUpdate], base: ViewMetadata) -> list[TableUpdate]:
    """``updates`` with each added version that is older than ``base``'s newest version-log
    entry stamped now: the version becomes current after the commit that won the race, and
    the log (which takes its time from the version) must not go back in time."""
    from dataclasses import replace

    newest = max((e.timestamp_ms for e in base.version_log), default=None)
    if newest is None:
        return updates
    now = max(time.time_ns() // 1_000_000, newest)
    return [
        replace(u, view_version=replace(u.view_version, timestamp_ms=now))
        if isinstance(u, AddViewVersion) and u.view_version.timestamp_ms < newest
        else u
        for u in updates
    ]


def read_view_metadata(catalog: Catalog, location: str) -> ViewMetadata:
    """Parse the view metadata file at ``location`` (plain or gzip JSON)."""
    raw = catalog.io.new_input(location).read()
    try:
        return ViewMetadata.parse(raw)
    except ValidationError as exc:
        raise CorruptFileError(f"view metadata file {location}: {exc}") from exc


# -- shared steps -----------------------------------------------------------------------
def _refuse_taken_name(catalog: Catalog, ident: Identifier) -> None:
    name = ".".join(ident)
    if catalog.view_exists(ident):
        raise ViewAlreadyExistsError(f"View already exists: {name}")
    if catalog.table_exists(ident):  # tables and views share names
        raise ViewAlreadyExistsError(f"Table with same name already exists: {name}")


def _create_view_entry(catalog: Catalog, ident: Identifier, metadata: ViewMetadata) -> View:
    location = view_metadata_location(metadata, 0)
    io = catalog.table_io(metadata.properties)
    io.new_output(location).write(
        metadata.to_bytes(compress=location.endswith(".gz.metadata.json"))
    )
    try:
        catalog._create_view_pointer(ident, location)
    except (
        ViewAlreadyExistsError,
        NoSuchNamespaceError,
        UnsupportedFeatureError,
        CommitFailedError,
    ):
        # refused before registering; after any other error the entry may exist
        io.delete_quietly(location)
        raise
    return View(ident, metadata, location, catalog)


def _write_and_swap_view(
    catalog: Catalog, ident: Identifier, base_location: str, new: ViewMetadata
) -> str:
    from icefloe.table_paths import metadata_file_version

    previous = metadata_file_version(base_location)
    location = view_metadata_location(new, (previous if previous is not None else 0) + 1)
    io = catalog.table_io(new.properties)
    io.new_output(location).write(new.to_bytes(compress=location.endswith(".gz.metadata.json")))
    try:
        catalog._swap_view_pointer(ident, base_location, location)
    except CommitFailedError:
        io.delete_quietly(location)  # known not to be the view's metadata
        raise
    return location
