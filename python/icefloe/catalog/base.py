"""The :class:`Catalog` base class: identifiers, namespaces and the table API every catalog shares.

Namespaces are tuples of names (``("a", "b")``) or dotted strings (``"a.b"``); table identifiers
are a namespace plus a name (``"a.b.t"`` or ``("a", "b", "t")``). A concrete catalog implements
the namespace operations and a handful of pointer primitives; creating, loading, committing and
dropping tables is shared here and in :mod:`icefloe.catalog.commit`.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from icefloe.exceptions import NoSuchNamespaceError, ValidationError
from icefloe.io import FileIO

__all__ = [
    "Catalog",
    "Identifier",
    "PropertiesUpdateSummary",
    "namespace_to_string",
    "split_identifier",
    "to_identifier",
]

Identifier: TypeAlias = tuple[str, ...]


def to_identifier(value: str | Iterable[str]) -> Identifier:
    """A namespace or table identifier as a tuple: ``"a.b"`` and ``("a", "b")`` both work."""
    if isinstance(value, str):
        parts: tuple[str, ...] = tuple(value.split(".")) if value else ()
    else:
        parts = tuple(value)
    for part in parts:
        if not isinstance(part, str) or not part:
            raise ValidationError(f"invalid identifier {value!r}: empty or non-string part")
    return parts


def namespace_to_string(namespace: str | Iterable[str]) -> str:
    """The dotted form of a namespace, as stored by SQL catalogs (``"a.b"``)."""
    parts = to_identifier(namespace)
    if not parts:
        raise NoSuchNamespaceError("the empty namespace is not a namespace")
    return ".".join(parts)


def split_identifier(identifier: str | Iterable[str]) -> tuple[Identifier, str]:
    """``(namespace, table name)`` of a table identifier; the namespace must not be empty."""
    parts = to_identifier(identifier)
    if len(parts) < 2:
        raise ValidationError(
            f"table identifier {identifier!r} needs a namespace and a name, like 'db.table'"
        )
    return parts[:-1], parts[-1]


@dataclass
class PropertiesUpdateSummary:
    """What :meth:`Catalog.update_namespace_properties` did."""

    removed: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


class Catalog(ABC):
    """A named catalog with properties (``warehouse``, ``uri``, ``s3.*``, ...)."""

    def __init__(self, name: str, **properties: str) -> None:
        self.name = name
        self.properties: dict[str, str] = dict(properties)
        self._io: FileIO | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    @property
    def io(self) -> FileIO:
        """The catalog's :class:`~icefloe.io.FileIO`, configured from its properties."""
        if self._io is None:
            self._io = FileIO(self.properties)
        return self._io

    def table_io(self, table_properties: Mapping[str, str]) -> FileIO:
        """A FileIO for a table: catalog properties overlaid with the table's own."""
        if not any(key.startswith(("s3.", "gcs.", "hdfs.")) for key in table_properties):
            return self.io
        return FileIO({**self.properties, **table_properties})

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
        removal_set = set(removals or ())
        update_map = dict(updates or {})
        overlap = removal_set & set(update_map)
        if overlap:
            raise ValidationError(
                f"namespace properties {sorted(overlap)} are both removed and updated"
            )
        return removal_set, update_map
