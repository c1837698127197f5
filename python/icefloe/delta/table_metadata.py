"""The Iceberg side of a Delta table's metadata: schema (column-mapping ids), identity partition
spec on the partition columns, name mapping, and how a Delta metadata change updates them."""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

from icefloe.delta.files import PartitionColumn
from icefloe.delta.protocol import DeltaMetadata
from icefloe.delta.schema import (
    ID,
    DeltaColumn,
    convert_schema,
    leaf_columns,
    mapping_id,
    name_mapping,
    type_change_problems,
)
from icefloe.delta.state import float_widened_property, narrow_ints_property
from icefloe.evolution import check_schema_evolution
from icefloe.exceptions import NotIcebergCompatibleError, UnsupportedFeatureError, ValidationError
from icefloe.metadata import (
    AddPartitionSpec,
    AddSchema,
    SetCurrentSchema,
    SetDefaultSpec,
    SetProperties,
    TableMetadata,
)
from icefloe.metadata.create import NEW_TABLE_PROPERTIES
from icefloe.name_mapping import (
    DEFAULT_NAME_MAPPING_PROPERTY,
    MappedField,
    NameMapping,
    table_mapping,
)
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.transforms import IdentityTransform


def partition_spec(
    schema: Schema, delta_meta: DeltaMetadata
) -> tuple[PartitionSpec, list[PartitionColumn]]:
    """The identity spec on the Delta partition columns, and their physical names."""
    by_name = {f["name"]: f for f in delta_meta.schema.get("fields", [])}
    fields, cols = [], []
    for i, name in enumerate(delta_meta.partition_columns):
        f = by_name.get(name)
        if f is None:
            raise ValidationError(f"Delta partition column {name!r} is not in the schema")
        fid = schema.find_field(name).field_id
        fields.append(PartitionField(fid, 1000 + i, IdentityTransform(), name))
        phys = str((f.get("metadata") or {}).get("delta.columnMapping.physicalName", name))
        cols.append(PartitionColumn(name, phys, fid, _delta_type(f)))
    return PartitionSpec(*fields, spec_id=0), cols


def _delta_type(field: dict[str, Any]) -> str:
    """A Delta schema field's type name ("" for a nested type)."""
    return field["type"] if isinstance(field.get("type"), str) else ""


def partition_columns(
    spec: PartitionSpec,
    schema: Schema,
    mapping: NameMapping,
    delta_types: Mapping[int, str] | None = None,
) -> list[PartitionColumn]:
    """The partition columns of a converted table's spec, physical names from its name mapping
    and Delta types (by field id) from ``delta_types``, when given."""
    out = []
    for f in spec.fields:
        m = next((m for m in mapping.fields if m.field_id == f.source_id), None)
        phys = m.names[-1] if m is not None else schema.find_field(f.source_id).name
        kind = (delta_types or {}).get(f.source_id, "")
        out.append(PartitionColumn(f.name, phys, f.source_id, kind))
    return out


def stats_columns(delta_meta: DeltaMetadata) -> list[DeltaColumn]:
    """The leaf columns Delta keeps statistics for (partition columns excluded)."""
    parts = set(delta_meta.partition_columns)
    return [c for c in leaf_columns(delta_meta.schema) if c.logical_path[0] not in parts]


def last_column_id(schema: Schema, delta_meta: DeltaMetadata) -> int:
    """``last-column-id``: the highest field id, or Delta's ``maxColumnId`` when higher."""
    raw = delta_meta.configuration.get("delta.columnMapping.maxColumnId", "0")
    return max(schema.highest_field_id, int(raw) if raw.isdigit() else 0)


#: The materialized row-tracking columns and the reserved ids of the row lineage fields.
_ROW_TRACKING = (
    ("delta.rowTracking.materializedRowIdColumnName", 2147483540),
    ("delta.rowTracking.materializedRowCommitVersionColumnName", 2147483539),
)


#: Columns Delta writes into data files that are no table column (the change data feed's, left
#: in files an UPDATE or MERGE rewrote with the feed on), with reserved ids (``_change_type``'s
#: is Iceberg's own metadata column's) for readers that need every file column mapped.
_DELTA_ONLY_COLUMNS = (("_change_type", 2147483543), ("__is_cdc", 2147483497))


def mapping_json(delta_meta: DeltaMetadata, previous: NameMapping | None = None) -> str:
    """The name mapping (logical and physical names) as the table property value, with the
    materialized row-tracking columns under the row lineage fields' ids: a reader that falls
    back to the mapping (a data file with a column without a field id, such as the change
    data columns Delta leaves in rewritten files) finds them too. With ``previous`` (the
    mapping of schemas seen before) merged in, see :func:`merge_mapping`."""
    fields = list(name_mapping(delta_meta.schema).fields)
    for key, field_id in _ROW_TRACKING:
        name = delta_meta.configuration.get(key)
        if name:
            fields.append(MappedField((name,), field_id))
    # columns of Delta's own that are no table column, under ids of the range the spec reserves
    # for metadata columns: no table column ever gets them, so no reader reads them as one
    for name, field_id in _DELTA_ONLY_COLUMNS:
        fields.append(MappedField((name,), field_id))
    mapping = NameMapping(fields)
    if previous is not None:
        mapping = merge_mapping(previous, mapping)
    return json.dumps(mapping.to_json())


def merge_mapping(old: NameMapping, new: NameMapping) -> NameMapping:
    """``new`` (the current schema's mapping) keeping what ``old`` knew: a field of both keeps
    its earlier names as aliases (a file written before a rename still resolves; the physical
    name stays last), and a field only ``old`` has (a dropped column, whose data older files
    still hold) stays mapped. A name a current field has is that field's only, at each level."""
    return NameMapping(_merge_level(old.fields, new.fields))


def _merge_level(
    old: tuple[MappedField, ...], new: tuple[MappedField, ...]
) -> tuple[MappedField, ...]:
    old_by_id = {f.field_id: f for f in old if f.field_id is not None}
    seen = {n for f in new for n in f.names}
    out: list[MappedField] = []
    for f in new:
        o = old_by_id.get(f.field_id) if f.field_id is not None else None
        if o is None:
            out.append(f)
            continue
        aliases = [n for n in o.names if n not in seen]
        seen.update(aliases)
        names = (*f.names[:-1], *aliases, *f.names[-1:])
        out.append(MappedField(names, f.field_id, _merge_level(o.fields, f.fields)))
    live = {f.field_id for f in new if f.field_id is not None}
    for o in old:
        if o.field_id is not None and o.field_id in live:
            continue
        names = tuple(n for n in o.names if n not in seen)
        seen.update(names)
        if names:
            out.append(MappedField(names, o.field_id, o.fields))
    return tuple(out)


def mapped_ids(mapping: NameMapping) -> set[int]:
    """Every field id ``mapping`` lists, nested ones included."""
    out: set[int] = set()

    def walk(fields: tuple[MappedField, ...]) -> None:
        for f in fields:
            if f.field_id is not None:
                out.add(f.field_id)
            walk(f.fields)

    walk(mapping.fields)
    return out


def unmapped_column_ids(delta_meta: DeltaMetadata, mapping: NameMapping | None) -> set[int]:
    """Column-mapping ids up to Delta's ``maxColumnId`` that neither the current schema nor
    ``mapping`` lists: ids of columns dropped before (Delta never reuses an id)."""
    raw = delta_meta.configuration.get("delta.columnMapping.maxColumnId", "0")
    known = mapped_ids(name_mapping(delta_meta.schema))
    if mapping is not None:
        known |= mapped_ids(mapping)
    return set(range(1, int(raw) + 1 if raw.isdigit() else 1)) - known


def refuse_type_changes(meta: DeltaMetadata) -> None:
    """Refuse, checked or not, Delta type changes Iceberg cannot represent (see
    :func:`~icefloe.delta.schema.type_change_problems`): the files written before them hold
    the old type, and every Iceberg scan would fail (:class:`NotIcebergCompatibleError`,
    requirement ``type-widening``)."""
    problems = type_change_problems(meta.schema, meta.partition_columns)
    if problems:
        raise NotIcebergCompatibleError(
            "the Delta table's type changes are no Iceberg type promotion: " + "; ".join(problems),
            ("type-widening",),
        )


def new_metadata(meta: DeltaMetadata, location: str, props: dict[str, str]) -> TableMetadata:
    """Metadata of a new Iceberg v3 table (no snapshot yet) for the Delta metadata ``meta``.

    The table stores ``props`` over :data:`~icefloe.metadata.create.NEW_TABLE_PROPERTIES`
    (``write.parquet.compression-codec=zstd``), as a table Java's Delta conversion creates
    through its catalog."""
    refuse_type_changes(meta)
    schema = convert_schema(meta.schema)
    spec, _ = partition_spec(schema, meta)
    spec.validate(schema)
    return TableMetadata(
        format_version=3,
        table_uuid=str(uuid.uuid4()),
        location=location,
        last_updated_ms=time.time_ns() // 1_000_000,
        last_column_id=last_column_id(schema, meta),
        schemas=(schema,),
        current_schema_id=schema.schema_id,
        partition_specs=(spec,),
        default_spec_id=0,
        last_partition_id=spec.last_assigned_field_id if spec.fields else 999,
        properties={**NEW_TABLE_PROPERTIES, **props},
        next_row_id=0,
    )


def check_spec(table: Table, meta: DeltaMetadata) -> None:
    """Refuse a Delta table whose partition columns differ from the converted spec: compared
    by column-mapping id (the spec's source ids), so renaming a partition column, which keeps
    its id and its physical name, is followed."""
    names = tuple(f.name for f in table.spec().fields)
    sources = tuple(f.source_id for f in table.spec().fields)
    by_name = {f.get("name"): f for f in meta.schema.get("fields", [])}
    ids: list[int | None] = []
    for name in meta.partition_columns:
        f = by_name.get(name)
        raw = (f.get("metadata") or {}).get(ID) if f is not None else None
        ids.append(mapping_id(raw, f"the {ID} of column {name}") if raw is not None else None)
    if tuple(ids) != sources:
        raise UnsupportedFeatureError(
            f"the Delta table's partition columns changed from {list(names)} to "
            f"{list(meta.partition_columns)}; Iceberg metadata converted before cannot follow: "
            "convert into a new table"
        )


def spec_updates(tx: Any, meta: DeltaMetadata) -> None:
    """Follow renamed partition columns (see :func:`check_spec`): when a partition field's name
    is no longer its column's, add a spec whose fields carry the columns' current names (the
    field ids kept, so data files of either spec share one partition tuple) and make it the
    default, as a full conversion of the Delta table names them."""
    spec = tx.metadata.spec()
    names = tuple(meta.partition_columns)
    if tuple(f.name for f in spec.fields) == names:
        return
    fields = [dataclasses.replace(f, name=n) for f, n in zip(spec.fields, names, strict=True)]
    tx.apply([AddPartitionSpec(PartitionSpec(*fields)), SetDefaultSpec(-1)])


def _refuse_partition_name_clash(metadata: TableMetadata, schema: Schema) -> None:
    """Refuse a column that takes the name of an earlier spec's partition field whose column was
    renamed but is still in the table: Iceberg Java checks every spec against the current
    schema and cannot load such metadata, and a spec in use cannot be renamed."""
    for spec in metadata.partition_specs:
        for f in spec.fields:
            if schema.find_column_name(f.source_id) is None:
                continue
            found = schema.find_field_id(f.name)
            if found is not None and found != f.source_id:
                raise UnsupportedFeatureError(
                    f"the Delta table's new column {f.name!r} takes the name its partition "
                    f"column {schema.find_column_name(f.source_id)!r} had before a rename; the "
                    "Iceberg table keeps partition specs by that name (its older files use "
                    "them), so it cannot follow: convert into a new table"
                )


def schema_updates(tx: Any, meta: DeltaMetadata) -> None:
    """Add Delta's current schema (if changed) and name mapping to transaction ``tx``; the
    mapping keeps the table's earlier one merged in (files may hold dropped columns). A change
    Iceberg's schema evolution rules forbid (a type change that is no promotion) is refused
    (:class:`NotIcebergCompatibleError`) before anything is written."""
    refuse_type_changes(meta)
    schema = convert_schema(meta.schema)
    current = tx.metadata.current_schema()
    if not current.same_schema(schema):
        try:
            check_schema_evolution(
                current,
                schema,
                3,
                specs=tx.metadata.partition_specs,
                last_column_id=tx.metadata.last_column_id,
            )
        except ValidationError as e:
            raise NotIcebergCompatibleError(
                f"Iceberg cannot follow the Delta table's schema change: {e}",
                ("schema-evolution",),
            ) from e
        _refuse_partition_name_clash(tx.metadata, schema)
        tx.apply([AddSchema(schema, last_column_id(schema, meta)), SetCurrentSchema(-1)])
    previous = table_mapping(tx.metadata.properties)
    props = {DEFAULT_NAME_MAPPING_PROPERTY: mapping_json(meta, previous)}
    props.update(float_widened_property(meta))
    tx.apply([SetProperties({**props, **narrow_ints_property(meta)})])
