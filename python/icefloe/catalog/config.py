"""Where catalog properties come from: a YAML file, environment variables and arguments.

The file is ``~/.icefloe.yaml`` unless ``ICEFLOE_CONFIG`` names another one; it has the same
shape as PyIceberg's ``.pyiceberg.yaml``::

    default-catalog: prod          # optional; otherwise "default"
    catalog:
      prod:
        type: sql
        uri: postgresql+psycopg://user:pw@db/iceberg
        warehouse: s3://bucket/warehouse
        s3.endpoint: http://localhost:9000

Environment variables ``ICEFLOE_CATALOG__<NAME>__<KEY>`` add or override properties of catalog
``<name>``: in ``<KEY>`` a double underscore becomes ``.`` and a single one ``-`` and it is
lower-cased, so ``ICEFLOE_CATALOG__PROD__S3__ACCESS_KEY_ID`` sets ``s3.access-key-id``.
Explicit keyword arguments to :func:`~icefloe.catalog.load_catalog` win over both.

In the file, a null value (``warehouse: ~``) is as if the key were absent, booleans become
``true``/``false`` and numbers their text; a mapping or list as a value is refused.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from icefloe.exceptions import ValidationError

__all__ = ["CONFIG_ENV", "DEFAULT_CATALOG_NAME", "ENV_PREFIX", "catalog_properties", "read_config"]

CONFIG_ENV = "ICEFLOE_CONFIG"
ENV_PREFIX = "ICEFLOE_CATALOG__"
DEFAULT_CATALOG_NAME = "default"


def config_path() -> Path:
    """The configuration file in effect (it may not exist)."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override).expanduser()
    return Path.home() / ".icefloe.yaml"


def read_config() -> dict[str, Any]:
    """The parsed configuration file, or an empty dict when there is none."""
    path = config_path()
    if not path.is_file():
        if os.environ.get(CONFIG_ENV):
            raise ValidationError(f"{CONFIG_ENV} names {path}, which is not a file")
        return {}
    import yaml

    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        # PyYAML's message quotes the offending line, which may hold a password or key
        raise ValidationError(f"cannot parse icefloe configuration {path}: {_where(exc)}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ValidationError(f"icefloe configuration {path} must be a mapping")
    return loaded


def _where(exc: Exception) -> str:
    """What a YAML error found and where, without the text of the line."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or "invalid YAML"
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is None:
        return str(problem)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"


def _env_key(raw: str) -> str:
    return raw.lower().replace("__", ".").replace("_", "-")


def env_properties(environ: Mapping[str, str] | None = None) -> dict[str, dict[str, str]]:
    """Catalog properties from ``ICEFLOE_CATALOG__<NAME>__<KEY>`` variables, by catalog name."""
    env = os.environ if environ is None else environ
    out: dict[str, dict[str, str]] = {}
    for key, value in env.items():
        if not key.upper().startswith(ENV_PREFIX):
            continue
        rest = key[len(ENV_PREFIX) :]
        name, sep, prop = rest.partition("__")
        if not sep or not name or not prop:
            continue
        out.setdefault(name.lower(), {})[_env_key(prop)] = value
    return out


def _section_properties(name: str, section: Mapping[Any, Any]) -> dict[str, str]:
    """A catalog's section of the file as string properties: a null value is left out (as if
    absent), booleans are ``true``/``false``, numbers their text; a mapping or list is refused
    with a ``ValidationError`` naming its key."""
    props: dict[str, str] = {}
    for key, value in section.items():
        if value is None:
            continue
        if isinstance(value, dict | list | tuple | set):
            raise ValidationError(
                f"property {str(key)!r} of catalog {name!r} in the icefloe configuration must "
                f"be a single value, not a {'mapping' if isinstance(value, dict) else 'list'}"
            )
        props[str(key)] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return props


def catalog_properties(
    name: str | None, overrides: Mapping[str, str]
) -> tuple[str, dict[str, str], bool]:
    """Resolve the name and merged properties of a catalog.

    Returns ``(name, properties, configured)`` where ``configured`` says whether anything
    (file, environment or arguments) described the catalog.
    """
    config = read_config()
    if name is None:
        name = str(config.get("default-catalog") or DEFAULT_CATALOG_NAME)
    props: dict[str, str] = {}
    catalogs = config.get("catalog") or {}
    if not isinstance(catalogs, dict):
        raise ValidationError("the 'catalog' entry of the icefloe configuration must be a mapping")
    section = catalogs.get(name) or catalogs.get(name.lower())
    if section is not None:
        if not isinstance(section, dict):
            raise ValidationError(f"catalog {name!r} in the icefloe configuration is not a mapping")
        props.update(_section_properties(name, section))
    props.update(env_properties().get(name.lower(), {}))
    props.update({str(k): str(v) for k, v in overrides.items()})
    return name, props, bool(props)
