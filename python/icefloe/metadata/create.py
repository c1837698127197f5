"""Metadata for a new table, with fresh ids assigned the way the Java reference's create does."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping

from icefloe.exceptions import UnsupportedFeatureError, ValidationError
from icefloe.metadata._builder import check_schema_for_version
from icefloe.metadata.table_metadata import SUPPORTED_FORMAT_VERSION, TableMetadata
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.sorting import SortField, SortOrder
from icefloe.types import IcebergType, ListType, MapType, NestedField, StructType

__all__ = ["RESERVED_PROPERTIES", "assign_fresh_ids", "new_table_metadata"]

#: Table properties that steer table creation (or report table state) and are never stored.
RESERVED_PROPERTIES = frozenset(
    {
        "format-version",
        "uuid",
        "snapshot-count",
        "current-snapshot-id",
        "current-snapshot-summary",
        "current-snapshot-timestamp-ms",
        "current-schema",
        "default-partition-spec",
        "default-sort-order",
    }
)
DEFAULT_FORMAT_VERSION = 2


def _fresh_type(t: IcebergType, next_id: Callable[[], int], ids: dict[int, int]) -> IcebergType:
    if isinstance(t, StructType):
        new_ids = [next_id() for _ in t.fields]
        out = []
        for f, fid in zip(t.fields, new_ids, strict=True):
            ids[f.field_id] = fid
            out.append(
                NestedField(
                    fid,
                    f.name,
                    _fresh_type(f.field_type, next_id, ids),
                    f.required,
                    f.doc,
                    f.initial_default,
                    f.write_default,
                )
            )
        return StructType(*out)
    if isinstance(t, ListType):
        eid = next_id()
        ids[t.element_id] = eid
        return ListType(eid, _fresh_type(t.element_type, next_id, ids), t.element_required)
    if isinstance(t, MapType):
        kid = next_id()
        vid = next_id()
        ids[t.key_id] = kid
        ids[t.value_id] = vid
        return MapType(
            kid,
            _fresh_type(t.key_type, next_id, ids),
            vid,
            _fresh_type(t.value_type, next_id, ids),
            t.value_required,
        )
    return t


def assign_fresh_ids(schema: Schema, schema_id: int = 0) -> tuple[Schema, dict[int, int]]:
    """``schema`` renumbered from 1: each struct's fields first, then their children, in order
    (list element, then map key and value), as the reference does. Returns the new schema and
    the old-id -> new-id mapping."""
    counter = [0]

    def next_id() -> int:
        counter[0] += 1
        return counter[0]

    ids: dict[int, int] = {}
    struct = _fresh_type(StructType(*schema.fields), next_id, ids)
    assert isinstance(struct, StructType)
    identifier_ids = [ids[i] for i in schema.identifier_field_ids]
    return (
        Schema(*struct.fields, schema_id=schema_id, identifier_field_ids=identifier_ids),
        ids,
    )


def _map_id(ids: dict[int, int], source_id: int, what: str) -> int:
    new = ids.get(source_id)
    if new is None:
        raise ValidationError(f"{what}: source column {source_id} is not in the schema")
    return new


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
) -> TableMetadata:
    """Metadata for a new table at ``location``.

    Column ids are reassigned from 1 (:func:`assign_fresh_ids`), the spec becomes spec 0 with
    partition field ids from 1000 and its source ids remapped, the sort order becomes order 1
    (0 when unsorted) with remapped source ids. ``format_version`` defaults to the
    ``format-version`` property, else 2. Reserved properties (:data:`RESERVED_PROPERTIES`) are
    not stored.
    """
    props = dict(properties or {})
    if format_version is None:
        raw = props.get("format-version")
        try:
            format_version = int(raw) if raw is not None else DEFAULT_FORMAT_VERSION
        except ValueError:
            raise ValidationError(f"format-version property is not an integer: {raw!r}") from None
    if format_version > SUPPORTED_FORMAT_VERSION:
        raise UnsupportedFeatureError(f"Unsupported format version: v{format_version}")
    if format_version < 1:
        raise ValidationError(f"format-version must be 1, 2 or 3, got {format_version}")
    fresh, ids = assign_fresh_ids(schema)
    check_schema_for_version(fresh, format_version)
    fields = []
    for i, f in enumerate(spec.fields):
        what = f"partition field {f.name!r}"
        sources = tuple(_map_id(ids, s, what) for s in f.all_source_ids)
        fields.append(
            PartitionField(
                sources[0], 1000 + i, f.transform, f.name, sources if len(sources) > 1 else None
            )
        )
    fresh_spec = PartitionSpec(*fields, spec_id=0)
    fresh_spec.validate(fresh)
    sort_fields = []
    for sf in sort_order.fields:
        sources = tuple(_map_id(ids, s, "sort field") for s in sf.all_source_ids)
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
        properties={k: v for k, v in props.items() if k not in RESERVED_PROPERTIES},
        next_row_id=0 if format_version >= 3 else None,
    )
