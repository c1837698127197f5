"""Table requirements: the REST catalog's ``TableRequirement`` checks as data.

A commit sends requirements with its updates; the catalog checks each against the table's
current metadata before applying the updates. Every failed requirement raises
:class:`~icefloe.exceptions.CommitFailedError`, as the Java reference does: the table changed
since the client read it (or, for ``assert-create``, the table was created meanwhile). That error
is *retryable* in the REST sense (HTTP 409): the client must refresh the table, rebuild its
updates and requirements against the new metadata, and commit again; resending the same request
cannot succeed. A failed ``assert-create`` will keep failing after a refresh, so a create caller
turns it into :class:`~icefloe.exceptions.TableAlreadyExistsError`.

:func:`requirements_for` derives the requirements the Java client sends for a list of updates.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from icefloe.exceptions import CommitFailedError, ValidationError
from icefloe.metadata._json import get_int, get_str, require_object
from icefloe.metadata.table_metadata import TableMetadata
from icefloe.metadata.updates import (
    AddPartitionSpec,
    AddSchema,
    RemovePartitionSpecs,
    RemoveSchemas,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetSnapshotRef,
    TableUpdate,
)

__all__ = [
    "AssertCreate",
    "AssertCurrentSchemaId",
    "AssertDefaultSortOrderId",
    "AssertDefaultSpecId",
    "AssertLastAssignedFieldId",
    "AssertLastAssignedPartitionId",
    "AssertRefSnapshotId",
    "AssertTableUUID",
    "TableRequirement",
    "requirement_from_json",
    "requirements_for",
    "validate_requirements",
]


class TableRequirement(ABC):
    """Base of every requirement; ``type`` is the REST discriminator."""

    type: ClassVar[str]

    @abstractmethod
    def validate(self, base: TableMetadata | None) -> None:
        """Raises :class:`CommitFailedError` unless ``base`` (``None``: no table) satisfies it."""

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, **self._body()}

    @abstractmethod
    def _body(self) -> dict[str, Any]: ...

    @classmethod
    @abstractmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableRequirement: ...


_REGISTRY: dict[str, type[TableRequirement]] = {}


def _register(cls: type[TableRequirement]) -> type[TableRequirement]:
    _REGISTRY[cls.type] = cls
    return cls


def requirement_from_json(obj: Any) -> TableRequirement:
    """Parses one REST ``TableRequirement``; an unknown ``type`` raises ValidationError."""
    m = require_object(obj, "table requirement")
    t = get_str(m, "type", "table requirement")
    cls = _REGISTRY.get(t)
    if cls is None:
        raise ValidationError(f"table requirement: unknown type {t!r}")
    return cls._from_body(m)


def validate_requirements(
    requirements: Iterable[TableRequirement], base: TableMetadata | None
) -> None:
    """Checks every requirement against ``base`` (raises on the first failure)."""
    for r in requirements:
        r.validate(base)


def _existing(base: TableMetadata | None) -> TableMetadata:
    if base is None:
        raise CommitFailedError("Requirement failed: the table does not exist")
    return base


@_register
@dataclass(frozen=True)
class AssertCreate(TableRequirement):
    """The table must not exist yet."""

    type: ClassVar[str] = "assert-create"

    def validate(self, base: TableMetadata | None) -> None:
        if base is not None:
            raise CommitFailedError("Requirement failed: table already exists")

    def _body(self) -> dict[str, Any]:
        return {}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableRequirement:
        return cls()


@_register
@dataclass(frozen=True)
class AssertTableUUID(TableRequirement):
    """The table's UUID must be ``uuid`` (it is still the same table)."""

    uuid: str
    type: ClassVar[str] = "assert-table-uuid"

    def validate(self, base: TableMetadata | None) -> None:
        b = _existing(base)
        if b.table_uuid is None or b.table_uuid.lower() != self.uuid.lower():
            raise CommitFailedError(
                f"Requirement failed: UUID does not match: expected {b.table_uuid} != {self.uuid}"
            )

    def _body(self) -> dict[str, Any]:
        return {"uuid": self.uuid}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableRequirement:
        return cls(get_str(m, "uuid", cls.type))


@_register
@dataclass(frozen=True)
class AssertRefSnapshotId(TableRequirement):
    """Ref ``ref`` must point at ``snapshot_id``; ``None`` means the ref must not exist."""

    ref: str
    snapshot_id: int | None
    type: ClassVar[str] = "assert-ref-snapshot-id"

    def validate(self, base: TableMetadata | None) -> None:
        b = _existing(base)
        current = b.refs.get(self.ref)
        if current is None:
            if self.snapshot_id is not None:
                raise CommitFailedError(
                    f"Requirement failed: branch or tag {self.ref} is missing, "
                    f"expected {self.snapshot_id}"
                )
            return
        kind = "branch" if current.is_branch else "tag"
        if self.snapshot_id is None:
            raise CommitFailedError(
                f"Requirement failed: {kind} {self.ref} was created concurrently"
            )
        if current.snapshot_id != self.snapshot_id:
            raise CommitFailedError(
                f"Requirement failed: {kind} {self.ref} has changed: expected id "
                f"{self.snapshot_id} != {current.snapshot_id}"
            )

    def _body(self) -> dict[str, Any]:
        return {"ref": self.ref, "snapshot-id": self.snapshot_id}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableRequirement:
        if "snapshot-id" not in m:
            raise ValidationError(f"{cls.type}: missing required field 'snapshot-id' (may be null)")
        sid = m["snapshot-id"]
        if sid is not None and (not isinstance(sid, int) or isinstance(sid, bool)):
            raise ValidationError(f"{cls.type}: 'snapshot-id' must be an integer or null: {sid!r}")
        return cls(get_str(m, "ref", cls.type), sid)


@_register
@dataclass(frozen=True)
class AssertLastAssignedFieldId(TableRequirement):
    """The table's ``last-column-id`` must still be ``last_assigned_field_id``."""

    last_assigned_field_id: int
    type: ClassVar[str] = "assert-last-assigned-field-id"

    def validate(self, base: TableMetadata | None) -> None:
        _check(base, "last_column_id", self.last_assigned_field_id, "last assigned field id")

    def _body(self) -> dict[str, Any]:
        return {"last-assigned-field-id": self.last_assigned_field_id}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableRequirement:
        return cls(get_int(m, "last-assigned-field-id", cls.type))


@_register
@dataclass(frozen=True)
class AssertCurrentSchemaId(TableRequirement):
    """The table's ``current-schema-id`` must still be ``current_schema_id``."""

    current_schema_id: int
    type: ClassVar[str] = "assert-current-schema-id"

    def validate(self, base: TableMetadata | None) -> None:
        _check(base, "current_schema_id", self.current_schema_id, "current schema")

    def _body(self) -> dict[str, Any]:
        return {"current-schema-id": self.current_schema_id}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableRequirement:
        return cls(get_int(m, "current-schema-id", cls.type))


@_register
@dataclass(frozen=True)
class AssertLastAssignedPartitionId(TableRequirement):
    """The table's ``last-partition-id`` must still be ``last_assigned_partition_id``."""

    last_assigned_partition_id: int
    type: ClassVar[str] = "assert-last-assigned-partition-id"

    def validate(self, base: TableMetadata | None) -> None:
        _check(
            base, "last_partition_id", self.last_assigned_partition_id, "last assigned partition id"
        )

    def _body(self) -> dict[str, Any]:
        return {"last-assigned-partition-id": self.last_assigned_partition_id}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableRequirement:
        return cls(get_int(m, "last-assigned-partition-id", cls.type))


@_register
@dataclass(frozen=True)
class AssertDefaultSpecId(TableRequirement):
    """The table's ``default-spec-id`` must still be ``default_spec_id``."""

    default_spec_id: int
    type: ClassVar[str] = "assert-default-spec-id"

    def validate(self, base: TableMetadata | None) -> None:
        _check(base, "default_spec_id", self.default_spec_id, "default partition spec")

    def _body(self) -> dict[str, Any]:
        return {"default-spec-id": self.default_spec_id}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableRequirement:
        return cls(get_int(m, "default-spec-id", cls.type))


@_register
@dataclass(frozen=True)
class AssertDefaultSortOrderId(TableRequirement):
    """The table's ``default-sort-order-id`` must still be ``default_sort_order_id``."""

    default_sort_order_id: int
    type: ClassVar[str] = "assert-default-sort-order-id"

    def validate(self, base: TableMetadata | None) -> None:
        _check(base, "default_sort_order_id", self.default_sort_order_id, "default sort order")

    def _body(self) -> dict[str, Any]:
        return {"default-sort-order-id": self.default_sort_order_id}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableRequirement:
        return cls(get_int(m, "default-sort-order-id", cls.type))


def _check(base: TableMetadata | None, attr: str, expected: int, label: str) -> None:
    actual = getattr(_existing(base), attr)
    if actual != expected:
        raise CommitFailedError(
            f"Requirement failed: {label} changed: expected id {expected} != {actual}"
        )


def requirements_for(
    base: TableMetadata | None, updates: Iterable[TableUpdate]
) -> list[TableRequirement]:
    """The requirements the Java client sends with ``updates`` (``base`` ``None``: a create).

    A create sends only ``assert-create``. An update always sends ``assert-table-uuid`` plus, at
    most once each: ``set-snapshot-ref`` -> ``assert-ref-snapshot-id`` (the ref's snapshot in
    ``base``, or null), ``add-schema`` -> ``assert-last-assigned-field-id``,
    ``set-current-schema`` / ``remove-schemas`` -> ``assert-current-schema-id``, ``add-spec`` ->
    ``assert-last-assigned-partition-id``, ``set-default-spec`` / ``remove-partition-specs`` ->
    ``assert-default-spec-id``, ``set-default-sort-order`` -> ``assert-default-sort-order-id``.
    """
    if base is None:
        return [AssertCreate()]
    out: list[TableRequirement] = []
    if base.table_uuid is not None:
        out.append(AssertTableUUID(base.table_uuid))
    seen: set[Any] = set()

    def add(key: Any, req: TableRequirement) -> None:
        if key not in seen:
            seen.add(key)
            out.append(req)

    for u in updates:
        if isinstance(u, SetSnapshotRef):
            ref = base.refs.get(u.ref_name)
            add(
                ("ref", u.ref_name),
                AssertRefSnapshotId(u.ref_name, ref.snapshot_id if ref else None),
            )
        elif isinstance(u, AddSchema):
            add("field", AssertLastAssignedFieldId(base.last_column_id))
        elif isinstance(u, (SetCurrentSchema, RemoveSchemas)):
            add("schema", AssertCurrentSchemaId(base.current_schema_id))
        elif isinstance(u, AddPartitionSpec):
            add("partition", AssertLastAssignedPartitionId(base.last_partition_id))
        elif isinstance(u, (SetDefaultSpec, RemovePartitionSpecs)):
            add("spec", AssertDefaultSpecId(base.default_spec_id))
        elif isinstance(u, SetDefaultSortOrder):
            add("order", AssertDefaultSortOrderId(base.default_sort_order_id))
    return out
