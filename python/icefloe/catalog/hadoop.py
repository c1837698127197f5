"""File-system ("Hadoop") catalog: tables are directories, namespaces are their parents.

A table at ``<warehouse>/<ns...>/<name>`` keeps ``metadata/v<N>.metadata.json`` (optionally
``v<N>.gz.metadata.json``) plus ``metadata/version-hint.text`` naming the newest version, like
Iceberg Java's ``HadoopCatalog``. A commit writes ``v<N+1>`` with an exclusive create that fails
if another writer got there first (:class:`CommitFailedError`), then updates the hint; a base
behind the hint, or deleted by ``write.metadata.delete-after-commit.enabled`` (whose ``v<N+1>``
may be gone too), fails the same way before anything is written, and a ``v<N+1>`` created after
other writers went past it and deleted it (the base goes first) is removed again and the commit
fails, unless those writers went on from it. Exclusive
creation is atomic on local and POSIX file systems (a hard link) and on S3 (a ``PUT`` with
``If-None-Match: *``, answered 412 or 409 for the loser); only when no S3 credentials can be
resolved for signing, or on other object stores, it is a check followed by the write, as with the
Java catalog.

Namespace properties, which the Java catalog does not keep, are stored in
``<namespace dir>/.icefloe-namespace.json``; the file also marks the namespace on object stores.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import pyarrow as pa

from icefloe.catalog.base import Catalog, Identifier, PropertiesUpdateSummary
from icefloe.catalog.identifiers import (
    check_name,
    check_namespace,
    split_identifier,
    to_identifier,
    too_long,
)
from icefloe.exceptions import (
    AlreadyExistsError,
    CommitFailedError,
    CommitStateUnknownError,
    FileIOError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NotFoundError,
    TableAlreadyExistsError,
    UnknownWriteStateError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.metadata import TableMetadata
from icefloe.properties import string_map
from icefloe.table_paths import (
    absolute_location,
    comparable_locations,
    metadata_file_version,
    metadata_gzip,
)

if TYPE_CHECKING:
    from icefloe.table import Table

__all__ = ["HadoopCatalog"]

NAMESPACE_FILE = ".icefloe-namespace.json"
VERSION_HINT = "version-hint.text"


class HadoopCatalog(Catalog):
    """A catalog whose structure is the directory tree under ``warehouse``."""

    def __init__(self, name: str, **properties: str) -> None:
        super().__init__(name, **properties)
        warehouse = properties.get("warehouse")
        if not warehouse:
            raise ValidationError("a hadoop catalog needs a 'warehouse' property")
        self.warehouse = absolute_location(warehouse).rstrip("/")

    # -- layout ---------------------------------------------------------------------------------
    def _ns_dir(self, namespace: Identifier) -> str:
        return "/".join((self.warehouse, *namespace))

    def _is_table_dir(self, directory: str) -> bool:
        entries = dict(self.io.list_dir(f"{directory}/metadata"))
        return any(
            name == VERSION_HINT or (name.startswith("v") and name.endswith(".metadata.json"))
            for name, is_dir in entries.items()
            if not is_dir
        )

    def _check_namespace(self, namespace: str | Iterable[str], new: bool = False) -> Identifier:
        """The namespace as a tuple: path-safe to look up, or valid to create (``new``)."""
        ns = to_identifier(namespace)
        if not ns:
            raise NoSuchNamespaceError("the empty namespace is not a namespace")
        return check_namespace(ns, existing=not new)

    def _ns_exists(self, ns: Identifier) -> bool:
        if any(too_long(part) for part in ns):
            return False  # longer than a directory name can be: no catalog made it
        directory = self._ns_dir(ns)
        if self.io.exists(f"{directory}/{NAMESPACE_FILE}"):
            return True
        return self.io.is_dir(directory) and not self._is_table_dir(directory)

    def _refuse_location(self, ns: Identifier, props: Mapping[str, str]) -> None:
        """A ``location`` property other than the namespace's directory is refused: tables are
        always created in that directory, which is the location reported (as in Java, whose
        file-system catalog keeps no namespace properties). The directory itself is accepted,
        and not stored."""
        given = props.get("location")
        if given is None:
            return
        directory = self._ns_dir(ns)
        # however spelled: /x, file:/x (Java's), file:///x, file://localhost/x
        both = comparable_locations(pa.array([absolute_location(given), directory]))
        a, b = (str(v).rstrip("/") for v in both.to_pylist())
        if a != b:
            raise ValidationError(
                f"namespace {'.'.join(ns)!r} of a file-system (hadoop) catalog lives at its "
                f"directory {directory}: it cannot have location {given!r}"
            )

    # -- namespaces -----------------------------------------------------------------------------
    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        """Whether the namespace directory exists (and is not a table)."""
        return self._ns_exists(self._check_namespace(namespace))

    def create_namespace(
        self, namespace: str | Iterable[str], properties: Mapping[str, str] | None = None
    ) -> None:
        """Create the namespace directory with its properties file (atomically exclusive).

        Its ``location`` is its directory: another one is refused with
        :class:`ValidationError`."""
        ns = self._check_namespace(namespace, new=True)
        props = string_map(properties, "namespace properties")
        self._refuse_location(ns, props)
        props.pop("location", None)
        if self._ns_exists(ns):
            raise NamespaceAlreadyExistsError(f"namespace {'.'.join(ns)!r} already exists")
        directory = self._ns_dir(ns)
        self.io.make_dirs(directory)
        payload = json.dumps(props, sort_keys=True).encode()
        try:
            self.io.new_output(f"{directory}/{NAMESPACE_FILE}").write(payload)
        except AlreadyExistsError as exc:
            raise NamespaceAlreadyExistsError(f"namespace {'.'.join(ns)!r} already exists") from exc

    def list_namespaces(self, namespace: str | Iterable[str] = ()) -> list[Identifier]:
        """Child directories of the namespace that are not tables."""
        parent = to_identifier(namespace)
        if parent and not self._ns_exists(parent):
            raise NoSuchNamespaceError(f"namespace {'.'.join(parent)!r} does not exist")
        base = self._ns_dir(parent)
        out: list[Identifier] = []
        for name, is_dir in self.io.list_dir(base):
            if is_dir and not name.startswith(".") and not self._is_table_dir(f"{base}/{name}"):
                out.append((*parent, name))
        return out

    def _read_properties(self, ns: Identifier) -> dict[str, str]:
        try:
            raw = self.io.new_input(f"{self._ns_dir(ns)}/{NAMESPACE_FILE}").read()
        except NotFoundError:
            return {}
        loaded = json.loads(raw)
        if not isinstance(loaded, dict):
            raise ValidationError(f"namespace properties of {'.'.join(ns)!r} are not an object")
        return {str(k): str(v) for k, v in loaded.items()}

    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        """The stored properties plus ``location``, the namespace directory (where its tables
        are created, whatever a properties file written by other means says)."""
        ns = self._check_namespace(namespace)
        if not self._ns_exists(ns):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ns)!r} does not exist")
        return {**self._read_properties(ns), "location": self._ns_dir(ns)}

    def update_namespace_properties(
        self,
        namespace: str | Iterable[str],
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Rewrite the namespace's properties file (``location`` is its directory: see
        :meth:`create_namespace`)."""
        ns = self._check_namespace(namespace)
        removal_set, update_map = self._check_update(removals, updates)
        self._refuse_location(ns, update_map)
        update_map.pop("location", None)
        if not self._ns_exists(ns):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ns)!r} does not exist")
        props = self._read_properties(ns)
        summary = PropertiesUpdateSummary(
            removed=sorted(removal_set & set(props)),
            missing=sorted(removal_set - set(props)),
            updated=sorted(update_map),
        )
        for key in summary.removed:
            del props[key]
        props.update(update_map)
        payload = json.dumps(props, sort_keys=True).encode()
        self.io.new_output(f"{self._ns_dir(ns)}/{NAMESPACE_FILE}").write(payload, overwrite=True)
        return summary

    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        """Remove the namespace directory if it holds no tables and no namespaces."""
        ns = self._check_namespace(namespace)
        if not self._ns_exists(ns):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ns)!r} does not exist")
        directory = self._ns_dir(ns)
        if self.io.holds_directory(directory):
            raise NamespaceNotEmptyError(f"namespace {'.'.join(ns)!r} is not empty")
        self.io.delete_prefix(directory)

    # -- tables ---------------------------------------------------------------------------------
    def _table_dir(self, identifier: Identifier) -> str:
        namespace, name = split_identifier(identifier)
        self._check_namespace(namespace)
        check_name(name, namespace=False, existing=True)  # new tables: create_table checks
        return "/".join((self.warehouse, *namespace, name))

    def _version_file(self, identifier: Identifier, version: int, gzip: bool = False) -> str:
        ext = ".gz" if gzip else ""
        return f"{self._table_dir(identifier)}/metadata/v{version}{ext}.metadata.json"

    def _existing_version_file(self, identifier: Identifier, version: int) -> str | None:
        for gzip in (False, True):
            location = self._version_file(identifier, version, gzip)
            if self.io.exists(location):
                return location
        return None

    def _hint(self, identifier: Identifier) -> int | None:
        """The version ``version-hint.text`` names, or None when it is missing or unreadable.

        The hint is advisory, as in Java's catalog: a store failing to serve it (a 503, a
        timeout) sends readers and committers to the directory listing instead."""
        meta_dir = f"{self._table_dir(identifier)}/metadata"
        try:
            return int(self.io.new_input(f"{meta_dir}/{VERSION_HINT}").read().decode().strip())
        except (FileIOError, ValueError, UnicodeDecodeError):
            return None

    def _newest_listed(self, identifier: Identifier) -> int | None:
        """The newest ``v<N>.metadata.json`` version in the table's metadata directory."""
        meta_dir = f"{self._table_dir(identifier)}/metadata"
        versions = [
            v
            for name, is_dir in self.io.list_dir(meta_dir)
            if not is_dir and name.startswith("v")
            if (v := metadata_file_version(name)) is not None
        ]
        return max(versions) if versions else None

    def _current_location(self, identifier: Identifier) -> str:
        if any(too_long(part) for part in identifier):
            # longer than a directory name can be: no table is there (the store would fail
            # to look, ENAMETOOLONG)
            raise NoSuchTableError(f"table {'.'.join(identifier)[:60]!r}... does not exist")
        version = self._hint(identifier)
        if version is None or self._existing_version_file(identifier, version) is None:
            version = self._newest_listed(identifier)  # no usable hint
        if version is None:
            raise NoSuchTableError(f"table {'.'.join(identifier)!r} does not exist")
        # The hint may lag behind a commit whose hint update failed: look ahead.
        while self._existing_version_file(identifier, version + 1) is not None:
            version += 1
        location = self._existing_version_file(identifier, version)
        if location is None:
            raise NoSuchTableError(f"table {'.'.join(identifier)!r} does not exist")
        return location

    def _write_version(self, identifier: Identifier, version: int, new: TableMetadata) -> str:
        gzip = metadata_gzip(new.properties)
        location = self._version_file(identifier, version, gzip)
        other = self._version_file(identifier, version, not gzip)
        if self.io.exists(other):
            raise CommitFailedError(f"version {version} of {'.'.join(identifier)!r} exists")
        try:
            self.io.new_output(location).write(new.to_bytes(compress=gzip))
        except AlreadyExistsError as exc:
            raise CommitFailedError(
                f"another writer committed version {version} of {'.'.join(identifier)!r}"
            ) from exc
        except UnknownWriteStateError as exc:
            raise CommitStateUnknownError(
                f"cannot tell whether version {version} of {'.'.join(identifier)!r} was "
                f"committed: {exc}"
            ) from exc
        return location

    def _write_hint(self, identifier: Identifier, version: int) -> None:
        hint = f"{self._table_dir(identifier)}/metadata/{VERSION_HINT}"
        with contextlib.suppress(FileIOError):  # readers look past a stale hint
            self.io.new_output(hint).write(str(version).encode(), overwrite=True)

    def _create_entry(self, identifier: Identifier, metadata: TableMetadata) -> str:
        table_dir = self._table_dir(identifier)
        if metadata.location.rstrip("/") != table_dir:
            raise ValidationError(
                f"a hadoop table lives at its directory {table_dir}; "
                f"it cannot be created at {metadata.location}"
            )
        namespace = identifier[:-1]
        if not self._ns_exists(namespace):  # dropped since a staged create began
            raise NoSuchNamespaceError(f"namespace {'.'.join(namespace)!r} does not exist")
        try:
            location = self._write_version(identifier, 1, metadata)
        except CommitFailedError as exc:
            raise TableAlreadyExistsError(f"table {'.'.join(identifier)!r} already exists") from exc
        self._write_hint(identifier, 1)
        return location

    def _write_and_swap(
        self, identifier: Identifier, base: TableMetadata, base_location: str, new: TableMetadata
    ) -> str:
        version = metadata_file_version(base_location)
        if version is None:
            raise ValidationError(f"{base_location} is not a v<N>.metadata.json file")
        # With write.metadata.delete-after-commit.enabled, v<N+1> of a base that fell out of the
        # metadata log is deleted: its exclusive create would succeed and the commit be lost
        # behind the newer versions. A base that is gone or behind the hint is stale.
        hint = self._hint(identifier)
        if hint is None:  # missing or unreadable: the listing tells the newest version
            hint = self._newest_listed(identifier)
        newer = (
            hint is not None
            and hint > version
            and self._existing_version_file(identifier, hint) is not None  # not a stray hint
        )
        if newer or not self.io.exists(base_location):
            raise CommitFailedError(
                f"{'.'.join(identifier)!r} moved past version {version} (the base of this commit)"
            )
        location = self._write_version(identifier, version + 1, new)
        try:
            stray = not self.io.exists(base_location) and not self._landed(
                identifier, location, base, new
            )
        except CommitStateUnknownError:
            raise
        except Exception as exc:  # the new version exists: the commit may well be in the table
            raise CommitStateUnknownError(
                f"commit of {'.'.join(identifier)!r} wrote {location}, but checking that it is "
                f"the table's version failed: {exc}"
            ) from exc
        if stray:
            # Other writers committed v<N+1>, went on and deleted it (with v<N>, which always
            # goes first) between the checks above and the exclusive create: this v<N+1> is a
            # stray behind newer versions, and the commit did not happen. (A base deleted by
            # writers that went on from this v<N+1> leaves the commit in the table.)
            self.io.delete_quietly(location)
            raise CommitFailedError(
                f"{'.'.join(identifier)!r} moved past version {version} (the base of this "
                "commit) while it was written"
            )
        self._write_hint(identifier, version + 1)
        return location

    def _landed(
        self, identifier: Identifier, location: str, base: TableMetadata, new: TableMetadata
    ) -> bool:
        """Whether the table's newest version is, or went on from, the metadata ``new`` just
        written at ``location`` on ``base``: the snapshot it added is in the table, or (a
        commit adding none) the metadata log names ``location`` with ``new``'s time."""
        try:
            current = self._current_location(identifier)
        except NoSuchTableError as exc:  # the version just written may be the table's
            raise CommitStateUnknownError(
                f"commit of {'.'.join(identifier)!r} to {location}: the table's versions "
                f"disappeared while it was written ({exc})"
            ) from exc
        if current == location:
            return True
        latest = self.read_metadata(current)
        snapshot = new.current_snapshot_id
        if snapshot is not None and all(s.snapshot_id != snapshot for s in base.snapshots):
            return any(s.snapshot_id == snapshot for s in latest.snapshots)
        return any(
            e.metadata_file == location and e.timestamp_ms == new.last_updated_ms
            for e in latest.metadata_log
        )

    def _drop_entry(self, identifier: Identifier) -> None:
        """Delete the table's directory as the Java catalog does, but never a directory inside
        it that holds a namespace or another table (``db.a.b`` lives inside ``db.a``).

        The version files go first, oldest first, so that until the newest is gone the table
        is still whole at its current version, then the hint and the other files."""
        self._current_location(identifier)  # NoSuchTableError when absent
        table_dir = self._table_dir(identifier)
        meta_dir = f"{table_dir}/metadata"
        versions = sorted(
            (v, f"{meta_dir}/{name}")
            for name, is_dir in self.io.list_dir(meta_dir)
            if not is_dir and name.startswith("v")
            if (v := metadata_file_version(name)) is not None
        )
        for _, location in [*versions, (0, f"{meta_dir}/{VERSION_HINT}")]:
            # a failure must stop the drop: the table stays whole at its newest version
            self.io.delete_if_exists(location)
        self._delete_own_files(table_dir)
        self.io.delete_empty_dirs(table_dir)

    def _delete_own_files(self, directory: str) -> None:
        """Delete the files under ``directory`` except namespace files and the directories of
        nested namespaces and tables."""
        for name, is_dir in self.io.list_dir(directory):
            path = f"{directory}/{name}"
            if not is_dir:
                if name != NAMESPACE_FILE:
                    self.io.delete_quietly(path)
            elif not (self._is_table_dir(path) or self.io.exists(f"{path}/{NAMESPACE_FILE}")):
                self._delete_own_files(path)

    def _default_table_location(self, identifier: Identifier) -> str:
        return self._table_dir(identifier)

    def list_tables(self, namespace: str | Iterable[str]) -> list[Identifier]:
        """Child directories of the namespace that hold table metadata."""
        ns = self._check_namespace(namespace)
        if not self._ns_exists(ns):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ns)!r} does not exist")
        base = self._ns_dir(ns)
        return [
            (*ns, name)
            for name, is_dir in self.io.list_dir(base)
            if is_dir and self._is_table_dir(f"{base}/{name}")
        ]

    renames_and_registers = False

    def _rename_table_entry(
        self, source: str | Iterable[str], target: str | Iterable[str]
    ) -> Identifier:
        """Not possible: a file-system table's identity is its directory (as in Java)."""
        raise UnsupportedFeatureError(
            f"cannot rename {source!r}: file-system (hadoop) tables are identified by their "
            "directory; use a SQL catalog to rename tables"
        )

    def register_table(self, identifier: str | Iterable[str], metadata_location: str) -> Table:
        """Not possible: a file-system table is its directory (as in Java)."""
        raise UnsupportedFeatureError(
            f"cannot register {metadata_location} as {identifier!r}: file-system (hadoop) "
            "tables are found by their directory, not registered"
        )
