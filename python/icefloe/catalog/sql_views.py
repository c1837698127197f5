"""How the SQL catalog tells tables and views apart: both are rows of ``iceberg_tables``, with
``iceberg_type`` ``'TABLE'`` (or null, in rows written before the column existed) or ``'VIEW'``,
as Iceberg Java's JDBC catalog keeps them (schema version V1); one name is either."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from icefloe.exceptions import (
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
    ViewAlreadyExistsError,
)
from icefloe.table.committer import Identifier

if TYPE_CHECKING:
    from icefloe.catalog.sql import SqlCatalog

__all__ = ["NO_TYPE_COLUMN", "TABLE_TYPE", "VIEW_TYPE", "missing_entry", "taken_entry"]

TABLE_TYPE = "TABLE"
VIEW_TYPE = "VIEW"
NO_TYPE_COLUMN = (
    "this catalog database has no iceberg_type column (the layout of older JDBC catalogs), so "
    "it cannot keep views: open it once with Iceberg Java's jdbc.schema-version=V1 to add it"
)


def missing_entry(kind: str, identifier: Identifier) -> Exception:
    """The error for a table or view that does not exist."""
    name = ".".join(identifier)
    if kind == VIEW_TYPE:
        return NoSuchViewError(f"view {name!r} does not exist")
    return NoSuchTableError(f"table {name!r} does not exist")


def taken_entry(catalog: SqlCatalog, identifier: Identifier, kind: str) -> Exception:
    """The error for a name already used by a table or a view."""
    name = ".".join(identifier)
    if kind == VIEW_TYPE:
        return ViewAlreadyExistsError(f"a table or view named {name!r} already exists")
    with contextlib.suppress(Exception):
        catalog._view_pointer(identifier)
        return TableAlreadyExistsError(f"a view named {name!r} already exists")
    return TableAlreadyExistsError(f"table {name!r} already exists")
