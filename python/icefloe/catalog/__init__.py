"""Catalogs: where tables are named and their current metadata pointer is kept.

``load_catalog()`` with nothing configured gives the embedded default, a SQL catalog on SQLite
under ``./warehouse``. Configured catalogs (see :mod:`icefloe.catalog.config`) choose their kind
with ``type``: ``sql`` (SQLite or PostgreSQL through SQLAlchemy, the tables of Iceberg's JDBC
catalog), ``hadoop`` (file-system tables, ``metadata/v<N>.metadata.json``) or ``rest`` (a server
speaking Iceberg's REST catalog protocol, :mod:`icefloe.catalog.rest`).
"""

from __future__ import annotations

from pathlib import Path

from icefloe.catalog.base import (
    Catalog,
    Identifier,
    PropertiesUpdateSummary,
    namespace_to_string,
    to_identifier,
)
from icefloe.catalog.config import DEFAULT_CATALOG_NAME, catalog_properties, config_path
from icefloe.exceptions import ValidationError
from icefloe.table_paths import absolute_location

__all__ = [
    "Catalog",
    "Identifier",
    "PropertiesUpdateSummary",
    "load_catalog",
    "namespace_to_string",
    "to_identifier",
]

DEFAULT_WAREHOUSE = "warehouse"
DEFAULT_SQLITE_FILE = "icefloe_catalog.db"


def _infer_type(props: dict[str, str]) -> str:
    kind = props.get("type")
    if kind:
        return kind.lower()
    uri = props.get("uri", "")
    if uri.startswith(("sqlite", "postgresql", "postgres", "mysql")):
        return "sql"
    if uri.startswith(("http://", "https://")):
        return "rest"
    if "warehouse" in props and "uri" not in props:
        return "sql"
    raise ValidationError(f"cannot tell the catalog type from properties {sorted(props)}")


def load_catalog(name: str | None = None, **properties: str) -> Catalog:
    """Open a catalog by name with properties from the config file, environment and arguments.

    With nothing configured this returns the embedded default: a SQL catalog on SQLite in
    ``./warehouse/icefloe_catalog.db`` with its warehouse in ``./warehouse`` (both created on
    first use). A name other than ``default`` that nothing configures, asked for or given as
    ``default-catalog`` in the config file, is a :class:`ValidationError` (a typo would
    otherwise open that empty local catalog); so is a config file that cannot be read as YAML
    in UTF-8.
    """
    asked = name
    try:
        name, props, configured = catalog_properties(name, properties)
    except UnicodeDecodeError as exc:
        raise ValidationError(
            f"cannot read icefloe configuration {config_path()}: it is not UTF-8 text ({exc})"
        ) from exc
    if not configured and name != DEFAULT_CATALOG_NAME:
        if asked is None:
            raise ValidationError(
                f"default-catalog {name!r} of {config_path()} names no configured catalog "
                f"(add it under 'catalog:' or set ICEFLOE_CATALOG__{name.upper()}__* "
                "variables; remove default-catalog to use the local default catalog)"
            )
        raise ValidationError(
            f"no catalog named {asked!r} is configured (in ~/.icefloe.yaml, the file "
            f"ICEFLOE_CONFIG names, or ICEFLOE_CATALOG__{asked.upper()}__* variables); "
            "load_catalog() without a name opens the local default catalog"
        )
    if not configured:
        props = {"type": "sql"}
    elif name == DEFAULT_CATALOG_NAME and "type" not in props and "uri" not in props:
        props["type"] = "sql"  # the embedded default, with the properties given added
    kind = _infer_type(props)
    if kind == "sql":
        if "uri" not in props:
            warehouse = props.get("warehouse", DEFAULT_WAREHOUSE)
            if "://" in warehouse and not warehouse.startswith("file://"):
                raise ValidationError(
                    f"a SQL catalog on warehouse {warehouse!r} needs a 'uri' for its database"
                )
            local = Path(warehouse.removeprefix("file://")).expanduser().resolve()
            local.mkdir(parents=True, exist_ok=True)
            props["uri"] = f"sqlite:///{local / DEFAULT_SQLITE_FILE}"
            # the tables go where the database does: ``~`` and ``..`` resolved for them too
            given = props.get("warehouse")
            props["warehouse"] = absolute_location(given) if given else local.as_uri()
        from icefloe.catalog.sql import SqlCatalog

        return SqlCatalog(name, **props)
    if kind in ("hadoop", "filesystem", "file"):
        if "warehouse" not in props:
            raise ValidationError("a hadoop (file-system) catalog needs a 'warehouse' property")
        from icefloe.catalog.hadoop import HadoopCatalog

        return HadoopCatalog(name, **props)
    if kind == "rest":
        from icefloe.catalog.rest import RestCatalog

        return RestCatalog(name, **props)
    raise ValidationError(f"unsupported catalog type {kind!r} (use 'sql', 'hadoop' or 'rest')")
