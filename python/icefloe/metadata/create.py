"""Metadata for a new table, with fresh ids assigned the way the Java reference's create does."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from types import MappingProxyType

from icefloe.exceptions import ValidationError
from icefloe.metadata.property_checks import check_properties
from icefloe.metadata.table_metadata import SUPPORTED_FORMAT_VERSION, TableMetadata
from icefloe.nesting import check_nesting
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.properties import (
    RESERVED_PROPERTIES,
    TableProperties,
    parse_format_version,
)
from icefloe.schema import Schema
from icefloe.schema_rules import assign_fresh_ids, validate_schema
from icefloe.sorting import SortField, SortOrder

__all__ = [
    "NEW_TABLE_PROPERTIES",
    "RESERVED_PROPERTIES",
    "check_create_args",
    "new_table_metadata",
    "persisted_properties",
]

DEFAULT_FORMAT_VERSION = 2

#: Properties every new table gets unless its creator gives them, as Iceberg Java (1.4 and
#: later) persists them: with ``write.parquet.compression-codec=zstd`` stored, engines whose
#: default is another codec (Java's is gzip when the property is absent) write zstd too.
NEW_TABLE_PROPERTIES: Mapping[str, str] = MappingProxyType(
    {TableProperties.PARQUET_COMPRESSION: TableProperties.PARQUET_COMPRESSION_DEFAULT}
)


def persisted_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """The properties a new table stores: :data:`NEW_TABLE_PROPERTIES`, overlaid with
    ``properties`` without the reserved ones (so a property the creator gives wins)."""
    stored = dict(NEW_TABLE_PROPERTIES)
    stored.update((k, v) for k, v in properties.items() if k not in RESERVED_PROPERTIES)
    return stored


def _map_id(old: Schema, fresh: Schema, source_id: int, what: str) -> int:
    """The id in ``fresh`` of the column that had ``source_id`` in ``old`` (matched by name)."""
    name = old.find_column_name(source_id)
    new = fresh.find_field_id(name) if name is not None else None
    if new is None:
        raise ValidationError(f"{what}: source column {source_id} is not in the schema")
    return new


def check_create_args(
    spec: object, sort_order: object, properties: object, location: object = None
) -> None:
    """Refuse a partition spec, sort order, properties or location of the wrong type (a list
    of ``(column, transform)`` pairs is no spec: build one with :class:`PartitionSpec`)."""
    for value, kind, name in (
        (location, str, "location"),
        (spec, PartitionSpec, "partition_spec"),
        (sort_order, SortOrder, "sort_order"),
        (properties, Mapping, "properties"),
    ):
        if value is not None and not isinstance(value, kind):
            raise ValidationError(f"{name} must be a {kind.__name__} or None, got {value!r}")


def requested_format_version(format_version: object, properties: Mapping[str, str]) -> int:
    """The format version a create asks for: ``format_version``, else the ``format-version``
    property, else 2. Both given, they must agree (else :class:`ValidationError`)."""
    raw = properties.get(TableProperties.FORMAT_VERSION, DEFAULT_FORMAT_VERSION)
    if format_version is None:
        return parse_format_version(raw)
    version = parse_format_version(format_version)
    if TableProperties.FORMAT_VERSION in properties and parse_format_version(raw) != version:
        raise ValidationError(
            f"format_version={format_version!r} and the property "
            f"{TableProperties.FORMAT_VERSION}={raw!r} disagree: give one of them"
        )
    return version


def new_table_metadata(
    schema: Schema,
    spec: PartitionSpec,
    sort_order: SortOrder,
    location: str,
    properties: Mapping[str, str] | None = None,
    format_version: int | None = None,
    *,
    table_uuid: str | None = None,
    now_ms: int | None = None,
    limit_nesting: bool = True,
) -> TableMetadata:
    """Metadata for a new table at ``location``.

    Column ids are reassigned from 1 (:func:`icefloe.schema_rules.assign_fresh_ids`), the spec
    becomes spec 0 with partition field ids from 1000 and its source ids remapped (by column
    name), the sort order becomes order 1 (0 when unsorted) with remapped source ids.
    ``format_version`` defaults to the ``format-version`` property (both given, they must
    agree: :class:`ValidationError`), else 2. Reserved properties
    (:data:`RESERVED_PROPERTIES`) are not stored; the others are validated
    (:func:`icefloe.metadata.property_checks.check_properties`). The table also stores
    :data:`NEW_TABLE_PROPERTIES` (``write.parquet.compression-codec=zstd``) unless
    ``properties`` sets them, as Java's create does.

    A column nested deeper than icefloe reads and writes data is refused
    (:func:`icefloe.nesting.check_nesting`, :class:`UnsupportedFeatureError`); a catalog server,
    which stores schemas and never reads data, passes ``limit_nesting=False`` to store any
    valid schema another engine creates.
    """
    check_create_args(spec, sort_order, properties)
    props = dict(properties or {})
    format_version = requested_format_version(format_version, props)
    if not 1 <= format_version <= SUPPORTED_FORMAT_VERSION:  # a bad request, as in Java
        raise ValidationError(
            f"Unsupported format version: v{format_version} (format-version must be 1, 2 or 3)"
        )
    stored = persisted_properties(props)
    check_properties(stored, schema=schema)
    fresh = assign_fresh_ids(schema, schema_id=0)
    validate_schema(fresh, format_version)
    if limit_nesting:
        check_nesting(fresh, "cannot create the table")
    fields = []
    for i, f in enumerate(spec.fields):
        what = f"partition field {f.name!r}"
        sources = tuple(_map_id(schema, fresh, s, what) for s in f.all_source_ids)
        fields.append(
            PartitionField(
                sources[0], 1000 + i, f.transform, f.name, sources if len(sources) > 1 else None
            )
        )
    fresh_spec = PartitionSpec(*fields, spec_id=0)
    fresh_spec.validate(fresh)
    sort_fields = []
    for sf in sort_order.fields:
        sources = tuple(_map_id(schema, fresh, s, "sort field") for s in sf.all_source_ids)
        sort_fields.append(
            SortField(
                sources[0],
                sf.transform,
                sf.direction,
                sf.null_order,
                sources if len(sources) > 1 else None,
            )
        )
    fresh_order = SortOrder(*sort_fields, order_id=1 if sort_fields else 0)
    fresh_order.validate(fresh)
    return TableMetadata(
        format_version=format_version,
        table_uuid=table_uuid or str(uuid.uuid4()),
        location=location.rstrip("/"),
        last_updated_ms=time.time_ns() // 1_000_000 if now_ms is None else now_ms,
        last_column_id=fresh.highest_field_id,
        schemas=(fresh,),
        current_schema_id=fresh.schema_id,
        partition_specs=(fresh_spec,),
        default_spec_id=0,
        last_partition_id=fresh_spec.last_assigned_field_id,
        sort_orders=(fresh_order,),
        default_sort_order_id=fresh_order.order_id,
        properties=stored,
        next_row_id=0 if format_version >= 3 else None,
    )
