"""JSON shapes shared by the REST client and server.

``LoadTableResult`` (``metadata-location``, ``metadata``, ``config``, ``storage-credentials``),
table identifiers, the updates that create a table (a staged create is committed as
``assert-create`` plus these), and the metadata such a create commit produces.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from icefloe.exceptions import ValidationError
from icefloe.metadata import (
    AddPartitionSpec,
    AddSchema,
    AddSortOrder,
    AssignUUID,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetProperties,
    TableMetadata,
    TableUpdate,
    UpgradeFormatVersion,
    apply_updates,
)
from icefloe.partitioning import UNPARTITIONED_PARTITION_SPEC
from icefloe.sorting import UNSORTED_SORT_ORDER
from icefloe.table_paths import resolve_table_paths
from icefloe.table_paths import table_location as checked_table_location

__all__ = [
    "LoadTableResult",
    "answer_list",
    "answer_map",
    "answer_object",
    "creation_updates",
    "identifier_from_json",
    "identifier_to_json",
    "longest_prefix_config",
    "metadata_from_creation",
    "namespace_from_json",
    "uuid7",
]

LAST_ADDED = -1


def uuid7() -> str:
    """A time-ordered UUID (version 7, RFC 9562), as used for ``Idempotency-Key``."""
    ms = time.time_ns() // 1_000_000
    raw = bytearray(ms.to_bytes(6, "big") + os.urandom(10))
    raw[6] = (raw[6] & 0x0F) | 0x70
    raw[8] = (raw[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(raw)))


def identifier_to_json(identifier: Sequence[str]) -> dict[str, Any]:
    """``{"namespace": [...], "name": ...}``."""
    return {"namespace": list(identifier[:-1]), "name": identifier[-1]}


def answer_object(value: Any, what: str) -> dict[str, Any]:
    """A server's answer that must be a JSON object; anything else is a
    :class:`ValidationError` naming ``what``."""
    if not isinstance(value, dict):
        raise ValidationError(f"{what}: the answer is not a JSON object")
    return value


def answer_map(value: Any, what: str) -> dict[str, str]:
    """A JSON object of properties in an answer (None for none), its values as text."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError(f"{what}: expected a JSON object of properties, got {value!r}")
    return {str(k): str(v) for k, v in value.items()}


def answer_list(value: Any, what: str) -> list[Any]:
    """A JSON array in an answer (None for none)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationError(f"{what}: expected a JSON array, got {value!r}")
    return value


def namespace_from_json(value: Any) -> tuple[str, ...]:
    """A namespace from its JSON array of levels."""
    if not isinstance(value, list) or not value or not all(isinstance(p, str) for p in value):
        raise ValidationError(f"a namespace must be a JSON array of strings, got {value!r}")
    return tuple(value)


def identifier_from_json(obj: Any) -> tuple[str, ...]:
    """A table identifier from its JSON object."""
    if not isinstance(obj, dict):
        raise ValidationError(f"table identifier must be an object, got {obj!r}")
    ns = obj.get("namespace")
    name = obj.get("name")
    if not isinstance(ns, list) or not all(isinstance(p, str) and p for p in ns):
        raise ValidationError(f"table identifier has a bad namespace: {ns!r}")
    if not isinstance(name, str) or not name:
        raise ValidationError(f"table identifier has a bad name: {name!r}")
    return (*ns, name)


@dataclass
class LoadTableResult:
    """A table as the REST API returns it (``metadata_location`` is None for a staged create)."""

    metadata: TableMetadata
    metadata_location: str | None
    config: dict[str, str] = field(default_factory=dict)
    storage_credentials: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    @staticmethod
    def from_json(obj: Any) -> LoadTableResult:
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            raise ValidationError("the catalog's table response has no 'metadata' object")
        location = obj.get("metadata-location")
        config = obj.get("config") or {}
        creds = storage_credentials_from_json(obj.get("storage-credentials"))
        return LoadTableResult(
            TableMetadata.from_json(obj["metadata"]),
            str(location) if location else None,
            {str(k): str(v) for k, v in config.items()} if isinstance(config, dict) else {},
            creds,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "metadata-location": self.metadata_location,
            "metadata": self.metadata.to_json(),
        }
        if self.config:
            out["config"] = dict(self.config)
        if self.storage_credentials:
            out["storage-credentials"] = [
                {"prefix": p, "config": dict(c)} for p, c in self.storage_credentials
            ]
        return out

    def io_properties(self) -> dict[str, str]:
        """Storage properties for the table: ``config``, then the longest matching credential."""
        return {
            **self.config,
            **longest_prefix_config(self.metadata.location, self.storage_credentials),
        }


def storage_credentials_from_json(entries: Any) -> list[tuple[str, dict[str, str]]]:
    """``(prefix, config)`` pairs of a ``storage-credentials`` list (malformed entries left
    out)."""
    out = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("config"), dict):
            config = {str(k): str(v) for k, v in entry["config"].items()}
            out.append((str(entry.get("prefix") or ""), config))
    return out


def longest_prefix_config(location: str, creds: list[tuple[str, dict[str, str]]]) -> dict[str, str]:
    """The storage-credential config whose prefix is the longest one ``location`` starts with."""
    best: tuple[str, dict[str, str]] | None = None
    for prefix, conf in creds:
        if location.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, conf)
    return dict(best[1]) if best else {}


def creation_updates(metadata: TableMetadata) -> list[TableUpdate]:
    """The updates that create ``metadata`` from nothing (sent with ``assert-create``)."""
    ups: list[TableUpdate] = []
    if metadata.table_uuid:
        ups.append(AssignUUID(metadata.table_uuid))
    ups.append(UpgradeFormatVersion(metadata.format_version))
    ups.append(AddSchema(metadata.current_schema()))
    ups.append(SetCurrentSchema(LAST_ADDED))
    ups.append(AddPartitionSpec(metadata.spec()))
    ups.append(SetDefaultSpec(LAST_ADDED))
    ups.append(AddSortOrder(metadata.sort_order()))
    ups.append(SetDefaultSortOrder(LAST_ADDED))
    ups.append(SetLocation(metadata.location))
    if metadata.properties:
        ups.append(SetProperties(dict(metadata.properties)))
    return ups


def metadata_from_creation(
    updates: Iterable[TableUpdate], default_location: str | None = None
) -> TableMetadata:
    """The metadata of a table created by ``updates`` (an ``assert-create`` commit).

    The first ``add-schema``, ``add-spec`` and ``add-sort-order`` (with the ``set-current`` /
    ``set-default`` that point at them) and the first ``assign-uuid``, ``set-location`` and
    ``upgrade-format-version`` make the new table; the other updates (properties, snapshots,
    refs) are then applied to it in order.

    The table location is then stored as a plain create stores it: a local path made absolute
    and plain (:func:`~icefloe.table_paths.absolute_location`), relative ``write.data.path`` /
    ``write.metadata.path`` properties resolved under it
    (:func:`~icefloe.table_paths.resolve_table_paths`, which also refuses bad locations).
    """
    rest: list[TableUpdate] = []
    schema = spec = order = None
    table_uuid = location = None
    version: int | None = None
    # Each seed object's set-current / set-default is consumed only until a second object of
    # its kind is added (later ones belong to that one and are applied normally).
    open_kinds = {"schema", "spec", "order"}
    for u in updates:
        if isinstance(u, AddSchema):
            if schema is None:
                schema = u.schema
                continue
            open_kinds.discard("schema")
        elif isinstance(u, AddPartitionSpec):
            if spec is None:
                spec = u.spec
                continue
            open_kinds.discard("spec")
        elif isinstance(u, AddSortOrder):
            if order is None:
                order = u.sort_order
                continue
            open_kinds.discard("order")
        elif isinstance(u, SetCurrentSchema) and schema is not None and "schema" in open_kinds:
            if u.schema_id in (LAST_ADDED, schema.schema_id):
                open_kinds.discard("schema")
                continue
        elif isinstance(u, SetDefaultSpec) and spec is not None and "spec" in open_kinds:
            if u.spec_id in (LAST_ADDED, spec.spec_id):
                open_kinds.discard("spec")
                continue
        elif isinstance(u, SetDefaultSortOrder) and order is not None and "order" in open_kinds:
            if u.sort_order_id in (LAST_ADDED, order.order_id):
                open_kinds.discard("order")
                continue
        elif isinstance(u, AssignUUID) and table_uuid is None:
            table_uuid = u.uuid
            continue
        elif isinstance(u, SetLocation) and location is None:
            location = u.location
            continue
        elif isinstance(u, UpgradeFormatVersion) and version is None:
            version = u.format_version
            continue
        rest.append(u)
    if schema is None:
        raise ValidationError("a create commit needs an add-schema update")
    location = location or default_location
    if not location:
        raise ValidationError("a create commit needs a set-location update")
    spec = spec or UNPARTITIONED_PARTITION_SPEC
    order = order or UNSORTED_SORT_ORDER
    seed = TableMetadata(
        format_version=version or 2,
        table_uuid=table_uuid or str(uuid.uuid4()),
        location=location.rstrip("/"),
        last_updated_ms=int(time.time() * 1000),
        last_column_id=schema.highest_field_id,
        schemas=(schema,),
        current_schema_id=schema.schema_id,
        partition_specs=(spec,),
        default_spec_id=spec.spec_id,
        last_partition_id=max((f.field_id for f in spec.fields), default=999),
        sort_orders=(order,),
        default_sort_order_id=order.order_id,
    )
    created = apply_updates(seed, rest) if rest else seed
    table_location = checked_table_location(created.location)
    properties = resolve_table_paths(table_location, created.properties)
    if table_location == created.location and properties == created.properties:
        return created
    return replace(created, location=table_location, properties=properties)


def merge_io_properties(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """Catalog properties for a FileIO without the catalog's own credentials."""
    secret = {"token", "credential"}
    out = {
        k: v for k, v in base.items() if k not in secret and not k.startswith(("header.", "rest."))
    }
    out.update(extra)
    return out
