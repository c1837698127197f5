"""Delta ``protocol`` and ``metaData`` actions, and the gate on reader features.

A reader that ignores a reader feature it does not know can return wrong rows (deleted rows,
wrong columns), so :func:`check_readable` refuses every reader feature outside
:data:`SUPPORTED_READER_FEATURES` with :class:`~icefloe.exceptions.UnsupportedDeltaFeatureError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from icefloe.exceptions import DeltaLogError, UnsupportedDeltaFeatureError

__all__ = [
    "SUPPORTED_READER_FEATURES",
    "DeltaMetadata",
    "DeltaProtocol",
    "check_readable",
    "parse_schema",
]

#: Reader features whose effect on reads icefloe implements.
SUPPORTED_READER_FEATURES = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "v2Checkpoint",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "vacuumProtocolCheck",
    }
)


@dataclass(frozen=True)
class DeltaProtocol:
    """The table's ``protocol`` action."""

    min_reader_version: int
    min_writer_version: int
    reader_features: frozenset[str] = frozenset()
    writer_features: frozenset[str] = frozenset()

    @staticmethod
    def from_action(action: dict[str, Any], where: str) -> DeltaProtocol:
        try:
            return DeltaProtocol(
                int(action["minReaderVersion"]),
                int(action["minWriterVersion"]),
                _features(action, "readerFeatures"),
                _features(action, "writerFeatures"),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise DeltaLogError(
                f"{where}: malformed protocol action {_short(action)}: {e}", where
            ) from e

    def supports(self, feature: str) -> bool:
        """Whether ``feature`` is on the table's protocol (reader or writer list)."""
        return feature in self.reader_features or feature in self.writer_features


@dataclass(frozen=True)
class DeltaMetadata:
    """The table's ``metaData`` action, with the schema JSON parsed."""

    id: str
    schema_string: str
    partition_columns: tuple[str, ...]
    configuration: dict[str, str] = field(default_factory=dict)
    created_time: int | None = None
    name: str | None = None
    description: str | None = None

    @property
    def schema(self) -> dict[str, Any]:
        """The Delta schema (a ``struct`` type as JSON); one that is not a struct of fields
        each with a name and a type is a :class:`DeltaLogError`."""
        try:
            return parse_schema(self.schema_string)
        except (TypeError, ValueError, RecursionError) as e:
            raise DeltaLogError(f"Delta table {self.id}: malformed schemaString: {e}") from e

    @property
    def column_mapping_mode(self) -> str:
        """``none``, ``name`` or ``id``."""
        return self.configuration.get("delta.columnMapping.mode", "none")

    @staticmethod
    def from_action(action: dict[str, Any], where: str) -> DeltaMetadata:
        try:
            schema_string = action["schemaString"]
            parse_schema(schema_string)
            config = action.get("configuration") or {}
            return DeltaMetadata(
                str(action["id"]),
                schema_string,
                tuple(action.get("partitionColumns") or ()),
                {str(k): str(v) for k, v in dict(config).items() if v is not None},
                action.get("createdTime"),
                action.get("name"),
                action.get("description"),
            )
        except (KeyError, TypeError, ValueError, RecursionError) as e:
            raise DeltaLogError(f"{where}: malformed metaData action: {e}", where) from e


def parse_schema(schema_string: Any) -> dict[str, Any]:
    """``schemaString`` parsed and its shape checked: an object whose ``fields`` (a list) are
    objects each with a string ``name``, an object (or absent) ``metadata`` and a ``type``,
    a type name or an object, recursively (struct ``fields``, array ``elementType``, map
    ``keyType`` and ``valueType``). Raises TypeError or ValueError saying what is wrong."""
    if not isinstance(schema_string, str):
        raise TypeError(f"schemaString must be a string, got {_short(schema_string)}")
    parsed = json.loads(schema_string)
    if not isinstance(parsed, dict):
        raise TypeError(f"the schema must be a struct object, got {_short(parsed)}")
    _check_fields(parsed.get("fields", []), "")
    return parsed


def _check_fields(fields: Any, where: str) -> None:
    if not isinstance(fields, list):
        raise TypeError(
            f"the fields of {where or 'the schema'} must be a list, got {_short(fields)}"
        )
    for f in fields:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            raise TypeError(f"a field of {where or 'the schema'} without a name: {_short(f)}")
        name = f"{where}.{f['name']}" if where else f["name"]
        if "type" not in f:
            raise TypeError(f"field {name} has no type")
        if not isinstance(f.get("metadata") or {}, dict):
            raise TypeError(f"the metadata of field {name} is not an object")
        _check_type(f["type"], name)


def _check_type(t: Any, where: str) -> None:
    if isinstance(t, str):
        return
    if not isinstance(t, dict):
        raise TypeError(f"field {where}: type must be a name or an object, got {_short(t)}")
    kind = t.get("type")
    if kind == "struct":
        _check_fields(t.get("fields"), where)
    elif kind == "array":
        if "elementType" not in t:
            raise TypeError(f"field {where}: an array type without elementType")
        _check_type(t["elementType"], f"{where}.element")
    elif kind == "map":
        for key, part in (("keyType", "key"), ("valueType", "value")):
            if key not in t:
                raise TypeError(f"field {where}: a map type without {key}")
            _check_type(t[key], f"{where}.{part}")
    # another kind is no schema damage: the conversion names it as a type without Iceberg form


def _features(action: dict[str, Any], key: str) -> frozenset[str]:
    """The ``readerFeatures`` / ``writerFeatures`` list: names are strings (a number or an
    object there is a malformed action, refused here rather than when the names are shown)."""
    raw = action.get(key)
    if raw is None:
        return frozenset()
    if not isinstance(raw, list):
        raise TypeError(f"{key} must be a list of strings, got {_short(raw)}")
    for name in raw:
        if not isinstance(name, str):
            raise TypeError(f"{key} must hold strings, got {_short(name)}")
    return frozenset(raw)


def _short(value: Any) -> str:
    """``value``'s repr for a message, cut short (actions can be large, numbers huge)."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"an integer of {value.bit_length()} bits"
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # int too long to print, nesting too deep
        return f"a {type(value).__name__}"
    return text if len(text) <= 200 else text[:197] + "..."


def check_readable(protocol: DeltaProtocol, table: str) -> None:
    """Raise :class:`UnsupportedDeltaFeatureError` unless every reader feature is supported."""
    if protocol.min_reader_version > 3:
        raise UnsupportedDeltaFeatureError(
            f"Delta table {table} needs reader version {protocol.min_reader_version}; "
            "icefloe reads versions 1 to 3"
        )
    if protocol.min_reader_version < 3:
        return  # legacy versions: 2 means column mapping, which is supported
    unknown = tuple(sorted(protocol.reader_features - SUPPORTED_READER_FEATURES))
    if unknown:
        raise UnsupportedDeltaFeatureError(
            f"Delta table {table} needs reader feature(s) {', '.join(unknown)} that icefloe "
            "does not implement; reading it could return wrong rows",
            unknown,
        )
