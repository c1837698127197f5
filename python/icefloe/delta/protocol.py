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
        """The Delta schema (a ``struct`` type as JSON)."""
        parsed: dict[str, Any] = json.loads(self.schema_string)
        return parsed

    @property
    def column_mapping_mode(self) -> str:
        """``none``, ``name`` or ``id``."""
        return self.configuration.get("delta.columnMapping.mode", "none")

    @staticmethod
    def from_action(action: dict[str, Any], where: str) -> DeltaMetadata:
        try:
            schema_string = action["schemaString"]
            json.loads(schema_string)
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
