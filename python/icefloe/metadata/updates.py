"""Table metadata updates: the REST catalog's ``TableUpdate`` actions as data.

Each update is an immutable dataclass whose ``to_json`` / :func:`update_from_json` use the REST
wire form (``{"action": "add-schema", ...}``). :func:`apply_updates` applies a sequence of them to
a :class:`~icefloe.metadata.table_metadata.TableMetadata` and produces the new metadata with the
spec's bookkeeping; it is the single path every change to a table goes through (see
:mod:`icefloe.metadata._builder` for the rules).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, NamedTuple

from icefloe.exceptions import ValidationError
from icefloe.metadata._json import (
    get_int,
    get_int_list,
    get_list,
    get_object,
    get_str,
    get_str_map,
    opt_int,
    require_object,
)
from icefloe.metadata.snapshots import (
    BRANCH,
    EncryptedKey,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotRef,
    StatisticsFile,
)
from icefloe.metadata.table_metadata import TableMetadata
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema
from icefloe.sorting import SortOrder

__all__ = [
    "AddEncryptionKey",
    "AddPartitionSpec",
    "AddSchema",
    "AddSnapshot",
    "AddSortOrder",
    "AssignUUID",
    "RemoveEncryptionKey",
    "RemovePartitionSpecs",
    "RemovePartitionStatistics",
    "RemoveProperties",
    "RemoveSchemas",
    "RemoveSnapshotRef",
    "RemoveSnapshots",
    "RemoveStatistics",
    "SetCurrentSchema",
    "SetDefaultSortOrder",
    "SetDefaultSpec",
    "SetLocation",
    "SetPartitionStatistics",
    "SetProperties",
    "SetSnapshotRef",
    "SetStatistics",
    "TableUpdate",
    "UpgradeFormatVersion",
    "apply_updates",
    "update_from_json",
]

#: ``set-current-schema``, ``set-default-spec`` and ``set-default-sort-order`` use this id to
#: mean "the one added last in this set of updates".
LAST_ADDED = -1


class TableUpdate(ABC):
    """Base of every update; ``action`` is the REST discriminator."""

    action: ClassVar[str]

    def to_json(self) -> dict[str, Any]:
        """The REST wire form."""
        return {"action": self.action, **self._body()}

    @abstractmethod
    def _body(self) -> dict[str, Any]: ...

    @classmethod
    @abstractmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableUpdate: ...


_REGISTRY: dict[str, type[TableUpdate]] = {}


def _register(cls: type[TableUpdate]) -> type[TableUpdate]:
    _REGISTRY[cls.action] = cls
    return cls


def update_from_json(obj: Any) -> TableUpdate:
    """Parses one REST ``TableUpdate``; an unknown ``action`` raises ValidationError."""
    m = require_object(obj, "table update")
    action = get_str(m, "action", "table update")
    cls = _REGISTRY.get(action)
    if cls is None:
        raise ValidationError(f"table update: unknown action {action!r}")
    return cls._from_body(m)


def _w(action: str) -> str:
    return f"{action} update"


class _Codec(NamedTuple):
    """How one update field is written to and read from its key of the REST body."""

    write: Callable[[Any], Any]
    read: Callable[[Mapping[str, Any], str, str], Any]


def _object_codec(parse: Callable[[Mapping[str, Any]], Any]) -> _Codec:
    return _Codec(lambda v: v.to_json(), lambda m, k, w: parse(get_object(m, k, w)))


_INT = _Codec(lambda v: v, get_int)
_STR = _Codec(lambda v: v, get_str)
_SPEC = _object_codec(PartitionSpec.from_json)
_SORT_ORDER = _object_codec(SortOrder.from_json)
_PARTITION_STATS = _object_codec(PartitionStatisticsFile.from_json)
_ENCRYPTION_KEY = _object_codec(EncryptedKey.from_json)
_SNAPSHOT = _Codec(
    lambda v: v.to_json(2), lambda m, k, w: Snapshot.from_json(get_object(m, k, w), 2)
)


class _OneField(TableUpdate):
    """An update whose body is one ``key`` holding its one dataclass field."""

    key: ClassVar[str]
    codec: ClassVar[_Codec]

    def _body(self) -> dict[str, Any]:
        value = getattr(self, fields(self)[0].name)  # type: ignore[arg-type]
        return {self.key: self.codec.write(value)}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableUpdate:
        return cls(cls.codec.read(m, cls.key, _w(cls.action)))  # type: ignore[call-arg]


@_register
@dataclass(frozen=True)
class AssignUUID(_OneField):
    uuid: str
    action: ClassVar[str] = "assign-uuid"
    key: ClassVar[str] = "uuid"
    codec: ClassVar[_Codec] = _STR


@_register
@dataclass(frozen=True)
class UpgradeFormatVersion(_OneField):
    format_version: int
    action: ClassVar[str] = "upgrade-format-version"
    key: ClassVar[str] = "format-version"
    codec: ClassVar[_Codec] = _INT


@_register
@dataclass(frozen=True)
class AddSchema(TableUpdate):
    """Adds a schema; its id is reassigned (or an identical existing schema's id reused).

    ``last_column_id`` is the deprecated REST field; when given it may only raise the table's
    ``last-column-id``.
    """

    schema: Schema
    last_column_id: int | None = None
    action: ClassVar[str] = "add-schema"

    def _body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": self.schema.to_json()}
        if self.last_column_id is not None:
            out["last-column-id"] = self.last_column_id
        return out

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableUpdate:
        w = _w(cls.action)
        return cls(Schema.from_json(get_object(m, "schema", w)), opt_int(m, "last-column-id", w))


@_register
@dataclass(frozen=True)
class SetCurrentSchema(_OneField):
    """Sets the current schema; ``-1`` means the schema added last in the same updates."""

    schema_id: int
    action: ClassVar[str] = "set-current-schema"
    key: ClassVar[str] = "schema-id"
    codec: ClassVar[_Codec] = _INT


@_register
@dataclass(frozen=True)
class AddPartitionSpec(_OneField):
    """Adds a partition spec; its id is reassigned (or a compatible existing spec's reused)."""

    spec: PartitionSpec
    action: ClassVar[str] = "add-spec"
    key: ClassVar[str] = "spec"
    codec: ClassVar[_Codec] = _SPEC


@_register
@dataclass(frozen=True)
class SetDefaultSpec(_OneField):
    """Sets the default spec; ``-1`` means the spec added last in the same updates."""

    spec_id: int
    action: ClassVar[str] = "set-default-spec"
    key: ClassVar[str] = "spec-id"
    codec: ClassVar[_Codec] = _INT


@_register
@dataclass(frozen=True)
class AddSortOrder(_OneField):
    """Adds a sort order; its id is reassigned (0 for unsorted, else an equal order's id)."""

    sort_order: SortOrder
    action: ClassVar[str] = "add-sort-order"
    key: ClassVar[str] = "sort-order"
    codec: ClassVar[_Codec] = _SORT_ORDER


@_register
@dataclass(frozen=True)
class SetDefaultSortOrder(_OneField):
    """Sets the default sort order; ``-1`` means the order added last in the same updates."""

    sort_order_id: int
    action: ClassVar[str] = "set-default-sort-order"
    key: ClassVar[str] = "sort-order-id"
    codec: ClassVar[_Codec] = _INT


@_register
@dataclass(frozen=True)
class AddSnapshot(_OneField):
    snapshot: Snapshot
    action: ClassVar[str] = "add-snapshot"
    key: ClassVar[str] = "snapshot"
    codec: ClassVar[_Codec] = _SNAPSHOT


@_register
@dataclass(frozen=True)
class SetSnapshotRef(TableUpdate):
    """Creates or moves a branch or tag; moving ``main`` changes the current snapshot."""

    ref_name: str
    snapshot_id: int
    type: str = BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None
    action: ClassVar[str] = "set-snapshot-ref"

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", self.ref().ref_type)

    def ref(self) -> SnapshotRef:
        """The ref this update sets (validates the retention settings)."""
        return SnapshotRef(
            self.snapshot_id,
            self.type,
            self.min_snapshots_to_keep,
            self.max_snapshot_age_ms,
            self.max_ref_age_ms,
        )

    def _body(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ref-name": self.ref_name,
            "snapshot-id": self.snapshot_id,
            "type": self.type,
        }
        if self.min_snapshots_to_keep is not None:
            out["min-snapshots-to-keep"] = self.min_snapshots_to_keep
        if self.max_snapshot_age_ms is not None:
            out["max-snapshot-age-ms"] = self.max_snapshot_age_ms
        if self.max_ref_age_ms is not None:
            out["max-ref-age-ms"] = self.max_ref_age_ms
        return out

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableUpdate:
        w = _w(cls.action)
        return cls(
            ref_name=get_str(m, "ref-name", w),
            snapshot_id=get_int(m, "snapshot-id", w),
            type=get_str(m, "type", w),
            min_snapshots_to_keep=opt_int(m, "min-snapshots-to-keep", w),
            max_snapshot_age_ms=opt_int(m, "max-snapshot-age-ms", w),
            max_ref_age_ms=opt_int(m, "max-ref-age-ms", w),
        )


@_register
@dataclass(frozen=True)
class RemoveSnapshots(TableUpdate):
    """Removes snapshots, the refs pointing at them and their statistics."""

    snapshot_ids: tuple[int, ...]
    action: ClassVar[str] = "remove-snapshots"

    def __post_init__(self) -> None:
        object.__setattr__(self, "snapshot_ids", tuple(self.snapshot_ids))

    def _body(self) -> dict[str, Any]:
        return {"snapshot-ids": list(self.snapshot_ids)}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableUpdate:
        return cls(get_int_list(m, "snapshot-ids", _w(cls.action)))


@_register
@dataclass(frozen=True)
class RemoveSnapshotRef(_OneField):
    ref_name: str
    action: ClassVar[str] = "remove-snapshot-ref"
    key: ClassVar[str] = "ref-name"
    codec: ClassVar[_Codec] = _STR


@_register
@dataclass(frozen=True)
class SetLocation(_OneField):
    location: str
    action: ClassVar[str] = "set-location"
    key: ClassVar[str] = "location"
    codec: ClassVar[_Codec] = _STR


@_register
@dataclass(frozen=True)
class SetProperties(TableUpdate):
    updates: Mapping[str, str] = field(default_factory=dict)
    action: ClassVar[str] = "set-properties"

    def __post_init__(self) -> None:
        object.__setattr__(self, "updates", dict(self.updates))

    def _body(self) -> dict[str, Any]:
        return {"updates": dict(self.updates)}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableUpdate:
        return cls(get_str_map(m, "updates", _w(cls.action)))


@_register
@dataclass(frozen=True)
class RemoveProperties(TableUpdate):
    removals: tuple[str, ...] = ()
    action: ClassVar[str] = "remove-properties"

    def __post_init__(self) -> None:
        object.__setattr__(self, "removals", tuple(self.removals))

    def _body(self) -> dict[str, Any]:
        return {"removals": list(self.removals)}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableUpdate:
        items = get_list(m, "removals", _w(cls.action))
        for i in items:
            if not isinstance(i, str):
                raise ValidationError(f"remove-properties update: removals must be strings: {i!r}")
        return cls(tuple(items))


@_register
@dataclass(frozen=True)
class SetStatistics(TableUpdate):
    """Registers the statistics file of a snapshot (replacing that snapshot's previous one).

    ``snapshot_id`` is the deprecated REST field; when given it must match the file's. It is
    always sent (the file's snapshot when not given), as Iceberg Java's client sends it:
    servers before Java 1.8 require it.
    """

    statistics: StatisticsFile
    snapshot_id: int | None = None
    action: ClassVar[str] = "set-statistics"

    def __post_init__(self) -> None:
        if self.snapshot_id is None:  # the same update whether the field was given or not
            object.__setattr__(self, "snapshot_id", self.statistics.snapshot_id)

    def _body(self) -> dict[str, Any]:
        return {"snapshot-id": self.snapshot_id, "statistics": self.statistics.to_json()}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableUpdate:
        w = _w(cls.action)
        return cls(
            StatisticsFile.from_json(get_object(m, "statistics", w)), opt_int(m, "snapshot-id", w)
        )


@_register
@dataclass(frozen=True)
class RemoveStatistics(_OneField):
    snapshot_id: int
    action: ClassVar[str] = "remove-statistics"
    key: ClassVar[str] = "snapshot-id"
    codec: ClassVar[_Codec] = _INT


@_register
@dataclass(frozen=True)
class SetPartitionStatistics(_OneField):
    partition_statistics: PartitionStatisticsFile
    action: ClassVar[str] = "set-partition-statistics"
    key: ClassVar[str] = "partition-statistics"
    codec: ClassVar[_Codec] = _PARTITION_STATS


@_register
@dataclass(frozen=True)
class RemovePartitionStatistics(_OneField):
    snapshot_id: int
    action: ClassVar[str] = "remove-partition-statistics"
    key: ClassVar[str] = "snapshot-id"
    codec: ClassVar[_Codec] = _INT


@_register
@dataclass(frozen=True)
class AddEncryptionKey(_OneField):
    encryption_key: EncryptedKey
    action: ClassVar[str] = "add-encryption-key"
    key: ClassVar[str] = "encryption-key"
    codec: ClassVar[_Codec] = _ENCRYPTION_KEY


@_register
@dataclass(frozen=True)
class RemoveEncryptionKey(_OneField):
    key_id: str
    action: ClassVar[str] = "remove-encryption-key"
    key: ClassVar[str] = "key-id"
    codec: ClassVar[_Codec] = _STR


@_register
@dataclass(frozen=True)
class RemovePartitionSpecs(TableUpdate):
    """Removes partition specs; the default spec cannot be removed."""

    spec_ids: tuple[int, ...]
    action: ClassVar[str] = "remove-partition-specs"

    def __post_init__(self) -> None:
        object.__setattr__(self, "spec_ids", tuple(self.spec_ids))

    def _body(self) -> dict[str, Any]:
        return {"spec-ids": list(self.spec_ids)}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableUpdate:
        return cls(get_int_list(m, "spec-ids", _w(cls.action)))


@_register
@dataclass(frozen=True)
class RemoveSchemas(TableUpdate):
    """Removes schemas; the current schema cannot be removed."""

    schema_ids: tuple[int, ...]
    action: ClassVar[str] = "remove-schemas"

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema_ids", tuple(self.schema_ids))

    def _body(self) -> dict[str, Any]:
        return {"schema-ids": list(self.schema_ids)}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableUpdate:
        return cls(get_int_list(m, "schema-ids", _w(cls.action)))


def apply_updates(
    base: TableMetadata,
    updates: Iterable[TableUpdate],
    metadata_location: str | None = None,
    *,
    now_ms: int | None = None,
) -> TableMetadata:
    """New metadata: ``base`` with ``updates`` applied in order, with the spec's bookkeeping.

    ``metadata_location`` is the file ``base`` was read from (it is appended to
    ``metadata-log``); ``now_ms`` overrides the clock used for ``last-updated-ms``. The rules are
    listed in :mod:`icefloe.metadata._builder`.
    """
    from icefloe.metadata._builder import apply_updates as _apply

    return _apply(base, updates, metadata_location, now_ms=now_ms)
