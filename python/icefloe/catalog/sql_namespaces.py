"""Namespaces of the SQL catalog: rows of ``iceberg_namespace_properties``, each namespace
holding the reserved, hidden ``exists=true`` as Iceberg Java's JDBC catalog stores it, and
stored dotted (``a.b``). A namespace also exists while only tables (or child namespaces) name
it, as in Java's catalog. A create, drop or property update announces its change to the hook
of :mod:`icefloe.catalog.sql_hook` inside its transaction, as the table and view changes do."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import and_, delete, insert, or_, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from icefloe.catalog.base import (
    Identifier,
    PropertiesUpdateSummary,
    check_namespace,
    namespace_to_string,
    to_identifier,
)
from icefloe.catalog.metastore import MetastoreCatalog
from icefloe.catalog.sql_database import (
    EXISTS,
    ICEBERG_TABLES,
    NAMESPACE_PROPERTIES,
    check_reserved,
    database_errors,
    under,
)
from icefloe.catalog.sql_hook import PointerChange, announce
from icefloe.exceptions import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
)
from icefloe.properties import string_map

__all__ = ["SqlNamespaces"]

#: How often a namespace property update that lost a race to another writer is tried again.
_PROPERTY_RETRIES = 5
#: The kind of the namespace changes announced to the hook (see :mod:`~icefloe.catalog.sql_hook`).
_NAMESPACE = "NAMESPACE"


class SqlNamespaces(MetastoreCatalog):
    """The namespace half of :class:`~icefloe.catalog.sql.SqlCatalog` (which sets ``engine``)."""

    engine: Engine

    def _ns_exists(self, conn: Connection, namespace: str) -> bool:
        tables = select(ICEBERG_TABLES.c.table_name).where(
            ICEBERG_TABLES.c.catalog_name == self.name,
            or_(
                ICEBERG_TABLES.c.table_namespace == namespace,
                under(ICEBERG_TABLES.c.table_namespace, namespace),
            ),
        )
        if conn.execute(tables.limit(1)).first() is not None:
            return True
        props = select(NAMESPACE_PROPERTIES.c.property_key).where(
            NAMESPACE_PROPERTIES.c.catalog_name == self.name,
            or_(
                NAMESPACE_PROPERTIES.c.namespace == namespace,
                under(NAMESPACE_PROPERTIES.c.namespace, namespace),
            ),
        )
        return conn.execute(props.limit(1)).first() is not None

    # -- namespaces -----------------------------------------------------------------------------
    @staticmethod
    def _ns_string(namespace: str | Iterable[str]) -> str:
        """The stored (dotted) form; a level holding a dot names no namespace: stored dotted,
        ``("a.b",)`` would be ``("a", "b")``."""
        parts = to_identifier(namespace)
        if any("." in p for p in parts):
            raise NoSuchNamespaceError(
                f"namespace {parts!r} does not exist: no namespace level contains '.'"
            )
        return namespace_to_string(parts)

    @database_errors
    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        """Whether the namespace holds properties, tables or child namespaces."""
        try:
            ns = self._ns_string(namespace)
        except NoSuchNamespaceError:
            return False  # a level with a dot (see _ns_string)
        with self.engine.connect() as conn:
            return self._ns_exists(conn, ns)

    @database_errors
    def create_namespace(
        self, namespace: str | Iterable[str], properties: Mapping[str, str] | None = None
    ) -> None:
        """Create a namespace with properties (stored with the reserved ``exists=true``)."""
        parts = check_namespace(to_identifier(namespace))
        ns = self._ns_string(parts)
        props = string_map(properties, "namespace properties")
        check_reserved(props)
        props[EXISTS] = "true"
        inserted = False
        try:
            with self.engine.begin() as conn:
                if self._ns_exists(conn, ns):
                    raise NamespaceAlreadyExistsError(f"namespace {ns!r} already exists")
                conn.execute(
                    insert(NAMESPACE_PROPERTIES),
                    [
                        {
                            "catalog_name": self.name,
                            "namespace": ns,
                            "property_key": k,
                            "property_value": v,
                        }
                        for k, v in props.items()
                    ],
                )
                inserted = True
                announce(conn, PointerChange("create", _NAMESPACE, (parts,)))
        except IntegrityError as exc:
            if inserted:  # the hook's statement, not the namespace taken
                raise
            raise NamespaceAlreadyExistsError(f"namespace {ns!r} already exists") from exc

    @database_errors
    def list_namespaces(self, namespace: str | Iterable[str] = ()) -> list[Identifier]:
        """Child namespaces of ``namespace``, including ones that only hold tables."""
        parent = to_identifier(namespace)
        if parent:
            self._ns_string(parent)  # a level with a dot names no namespace
        with self.engine.connect() as conn:
            if parent and not self._ns_exists(conn, ".".join(parent)):
                raise NoSuchNamespaceError(f"namespace {'.'.join(parent)!r} does not exist")
            table_ns = select(ICEBERG_TABLES.c.table_namespace).where(
                ICEBERG_TABLES.c.catalog_name == self.name
            )
            prop_ns = select(NAMESPACE_PROPERTIES.c.namespace).where(
                NAMESPACE_PROPERTIES.c.catalog_name == self.name
            )
            if parent:
                dotted = ".".join(parent)
                table_ns = table_ns.where(under(ICEBERG_TABLES.c.table_namespace, dotted))
                prop_ns = prop_ns.where(under(NAMESPACE_PROPERTIES.c.namespace, dotted))
            found = set(conn.execute(table_ns).scalars()) | set(conn.execute(prop_ns).scalars())
        depth = len(parent) + 1
        children = {
            tuple(ns.split("."))[:depth]
            for ns in found
            if len(ns.split(".")) >= depth and tuple(ns.split("."))[: depth - 1] == parent
        }
        return sorted(children)

    @database_errors
    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        """Properties of the namespace (``{}`` for one that only exists through its children)."""
        ns = self._ns_string(namespace)
        with self.engine.connect() as conn:
            if not self._ns_exists(conn, ns):
                raise NoSuchNamespaceError(f"namespace {ns!r} does not exist")
            rows = conn.execute(
                select(
                    NAMESPACE_PROPERTIES.c.property_key, NAMESPACE_PROPERTIES.c.property_value
                ).where(
                    NAMESPACE_PROPERTIES.c.catalog_name == self.name,
                    NAMESPACE_PROPERTIES.c.namespace == ns,
                )
            ).all()
        return {str(k): "" if v is None else str(v) for k, v in rows if k != EXISTS}

    @database_errors
    def update_namespace_properties(
        self,
        namespace: str | Iterable[str],
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Remove and set properties in one database transaction (tried again when another
        writer added one of the same keys meanwhile)."""
        ns = self._ns_string(namespace)
        removal_set, update_map = self._check_update(removals, updates)
        check_reserved(update_map)
        parts = to_identifier(namespace)
        for attempt in range(_PROPERTY_RETRIES):
            try:
                return self._update_properties(parts, ns, removal_set, update_map)
            except IntegrityError:
                if attempt == _PROPERTY_RETRIES - 1:
                    raise
        raise AssertionError("unreachable")

    def _update_properties(
        self, parts: Identifier, ns: str, removal_set: set[str], update_map: dict[str, str]
    ) -> PropertiesUpdateSummary:
        summary = PropertiesUpdateSummary()
        match = and_(
            NAMESPACE_PROPERTIES.c.catalog_name == self.name, NAMESPACE_PROPERTIES.c.namespace == ns
        )
        with self.engine.begin() as conn:
            if not self._ns_exists(conn, ns):
                raise NoSuchNamespaceError(f"namespace {ns!r} does not exist")
            existing = set(
                conn.execute(select(NAMESPACE_PROPERTIES.c.property_key).where(match)).scalars()
            )
            if EXISTS not in existing:  # created by an engine that did not store it
                conn.execute(
                    insert(NAMESPACE_PROPERTIES).values(
                        catalog_name=self.name,
                        namespace=ns,
                        property_key=EXISTS,
                        property_value="true",
                    )
                )
            existing.discard(EXISTS)
            summary.removed = sorted(removal_set & existing)
            summary.missing = sorted(removal_set - existing)
            if summary.removed:
                conn.execute(
                    delete(NAMESPACE_PROPERTIES).where(
                        match, NAMESPACE_PROPERTIES.c.property_key.in_(summary.removed)
                    )
                )
            for key, value in update_map.items():
                if key in existing:
                    conn.execute(
                        update(NAMESPACE_PROPERTIES)
                        .where(match, NAMESPACE_PROPERTIES.c.property_key == key)
                        .values(property_value=value)
                    )
                else:
                    conn.execute(
                        insert(NAMESPACE_PROPERTIES).values(
                            catalog_name=self.name,
                            namespace=ns,
                            property_key=key,
                            property_value=value,
                        )
                    )
            summary.updated = sorted(update_map)
            change = PointerChange(
                "update-properties",
                _NAMESPACE,
                (parts,),
                updated=tuple(summary.updated),
                removed=tuple(summary.removed),
                missing=tuple(summary.missing),
            )
            announce(conn, change)
        return summary

    @database_errors
    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        """Drop the namespace if it holds no tables and no child namespaces."""
        parts = to_identifier(namespace)
        ns = self._ns_string(parts)
        with self.engine.begin() as conn:
            if not self._ns_exists(conn, ns):
                raise NoSuchNamespaceError(f"namespace {ns!r} does not exist")
            inside = conn.execute(
                select(ICEBERG_TABLES.c.table_name)
                .where(
                    ICEBERG_TABLES.c.catalog_name == self.name,
                    or_(
                        ICEBERG_TABLES.c.table_namespace == ns,
                        under(ICEBERG_TABLES.c.table_namespace, ns),
                    ),
                )
                .limit(1)
            ).first()
            child = conn.execute(
                select(NAMESPACE_PROPERTIES.c.namespace)
                .where(
                    NAMESPACE_PROPERTIES.c.catalog_name == self.name,
                    under(NAMESPACE_PROPERTIES.c.namespace, ns),
                )
                .limit(1)
            ).first()
            if inside is not None or child is not None:
                raise NamespaceNotEmptyError(f"namespace {ns!r} is not empty")
            dropped = conn.execute(
                delete(NAMESPACE_PROPERTIES).where(
                    NAMESPACE_PROPERTIES.c.catalog_name == self.name,
                    NAMESPACE_PROPERTIES.c.namespace == ns,
                )
            ).rowcount
            # holding no tables and no children, the namespace exists only through its
            # property rows: none deleted means another drop committed after the check above
            if not dropped:
                raise NoSuchNamespaceError(f"namespace {ns!r} does not exist")
            announce(conn, PointerChange("drop", _NAMESPACE, (parts,)))
