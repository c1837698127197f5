"""File-system ("Hadoop") catalog: tables are directories, namespaces are their parents.

A table at ``<warehouse>/<ns...>/<name>`` keeps ``metadata/v<N>.metadata.json`` (optionally
``v<N>.gz.metadata.json``) plus ``metadata/version-hint.text`` naming the newest version, like
Iceberg Java's ``HadoopCatalog``. A commit writes ``v<N+1>`` with an exclusive create that fails
if another writer got there first (:class:`CommitFailedError`), then updates the hint. Exclusive
creation is atomic on local and POSIX file systems; object stores without conditional writes do
not give that guarantee, as with the Java catalog.

Namespace properties, which the Java catalog does not keep, are stored in
``<namespace dir>/.icefloe-namespace.json``; the file also marks the namespace on object stores.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from icefloe.catalog.base import Catalog, Identifier, PropertiesUpdateSummary, to_identifier
from icefloe.exceptions import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NotFoundError,
    ValidationError,
)

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
        self.warehouse = warehouse.rstrip("/")

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

    def _check_namespace(self, namespace: str | Iterable[str]) -> Identifier:
        ns = to_identifier(namespace)
        if not ns:
            raise NoSuchNamespaceError("the empty namespace is not a namespace")
        for part in ns:
            if "/" in part or part in (".", ".."):
                raise ValidationError(f"namespace part {part!r} cannot be a directory name")
        return ns

    def _ns_exists(self, ns: Identifier) -> bool:
        directory = self._ns_dir(ns)
        if self.io.exists(f"{directory}/{NAMESPACE_FILE}"):
            return True
        return self.io.is_dir(directory) and not self._is_table_dir(directory)

    # -- namespaces -----------------------------------------------------------------------------
    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        """Whether the namespace directory exists (and is not a table)."""
        return self._ns_exists(self._check_namespace(namespace))

    def create_namespace(
        self, namespace: str | Iterable[str], properties: Mapping[str, str] | None = None
    ) -> None:
        """Create the namespace directory with its properties file (atomically exclusive)."""
        from icefloe.exceptions import AlreadyExistsError

        ns = self._check_namespace(namespace)
        if self._ns_exists(ns):
            raise NamespaceAlreadyExistsError(f"namespace {'.'.join(ns)!r} already exists")
        directory = self._ns_dir(ns)
        self.io.make_dirs(directory)
        payload = json.dumps(dict(properties or {}), sort_keys=True).encode()
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
        """The stored properties plus ``location`` (the namespace directory)."""
        ns = self._check_namespace(namespace)
        if not self._ns_exists(ns):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ns)!r} does not exist")
        return {"location": self._ns_dir(ns), **self._read_properties(ns)}

    def update_namespace_properties(
        self,
        namespace: str | Iterable[str],
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Rewrite the namespace's properties file."""
        ns = self._check_namespace(namespace)
        removal_set, update_map = self._check_update(removals, updates)
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
        if any(is_dir for _, is_dir in self.io.list_dir(directory)):
            raise NamespaceNotEmptyError(f"namespace {'.'.join(ns)!r} is not empty")
        self.io.delete_prefix(directory)
