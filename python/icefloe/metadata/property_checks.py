"""The checks of a table's properties that need its schema or the model's parsers.

:func:`icefloe.properties.validate_properties` checks each value on its own;
:func:`check_properties` adds what only a table knows: a per-column metrics property must name
one of the schema's columns (as Java's ``MetricsConfig`` requires), and
``schema.name-mapping.default`` must be a name mapping's JSON.
"""

from __future__ import annotations

from collections.abc import Mapping

from icefloe.exceptions import ValidationError
from icefloe.name_mapping import table_mapping
from icefloe.properties import TableProperties, validate_properties
from icefloe.schema import Schema

__all__ = ["check_properties"]

_T = TableProperties


def check_properties(
    updates: Mapping[str, object],
    current: Mapping[str, str] | None = None,
    schema: Schema | None = None,
) -> None:
    """Refuses ``updates`` to a table whose properties are ``current`` and whose schema is
    ``schema`` (see the module docstring) with a :class:`ValidationError`."""
    validate_properties(updates, current)
    for key, value in updates.items():
        if key == _T.DEFAULT_NAME_MAPPING:
            if not str(value).strip():
                raise ValidationError(f"table property {key} is not a name mapping: it is empty")
            table_mapping({key: str(value)})
        if schema is not None and key.startswith(_T.METRICS_MODE_COLUMN_PREFIX):
            column = key[len(_T.METRICS_MODE_COLUMN_PREFIX) :]
            if schema.find_field_id(column) is None:
                raise ValidationError(
                    f"table property {key}={value!r} is invalid: could not find column "
                    f"{column!r} in the schema"
                )
