"""The columns a data file stores: the table's, without ``unknown`` ones (readers give them
nulls), and the row-lineage columns of rewritten rows with their reserved field ids."""

from __future__ import annotations

import dataclasses

import pyarrow as pa

from icefloe.arrow_fill import fill_required
from icefloe.arrow_schema import schema_to_arrow
from icefloe.exceptions import ValidationError
from icefloe.scan.tasks import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, metadata_field
from icefloe.schema import Schema
from icefloe.types import NestedField, StructType, UnknownType

__all__ = ["stored_columns", "with_lineage_columns"]


def _without_unknown(schema: Schema) -> Schema:
    """``schema`` without its ``unknown`` fields (in nested structs too), or ``schema`` itself
    when it has none."""

    def prune(fields: tuple[NestedField, ...]) -> tuple[NestedField, ...] | None:
        out, changed = [], False
        for f in fields:
            t = f.field_type
            if isinstance(t, UnknownType):
                changed = True
                continue
            if isinstance(t, StructType) and (inner := prune(t.fields)) is not None:
                f = dataclasses.replace(f, field_type=StructType(*inner))
                changed = True
            out.append(f)
        return tuple(out) if changed else None

    fields = prune(schema.fields)
    if fields is None:
        return schema
    return Schema(
        *fields, schema_id=schema.schema_id, identifier_field_ids=_kept_ids(schema, fields)
    )


def _kept_ids(schema: Schema, fields: tuple[NestedField, ...]) -> tuple[int, ...]:
    kept = {f.field_id for f in fields}
    return tuple(i for i in schema.identifier_field_ids if i in kept)


def _select(table: pa.Table, target: pa.Schema) -> pa.Table:
    """The columns (and struct children) of ``table`` that ``target`` names, by name."""

    def pick(arr: pa.Array, t: pa.DataType) -> pa.Array:
        if not pa.types.is_struct(t) or arr.type == t:
            return arr
        children = [pick(arr.field(t.field(i).name), t.field(i).type) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(
            children, fields=list(t), mask=arr.is_null() if arr.null_count else None
        )

    columns = [
        pa.chunked_array([pick(c, f.type) for c in table.column(f.name).chunks], type=f.type)
        for f in target
    ]
    return pa.Table.from_arrays(columns, schema=target)


def with_lineage_columns(table: pa.Table, schema: Schema) -> tuple[pa.Table, Schema]:
    """``table`` (in ``schema``'s Arrow form) and the schema its files are written in: with
    ``_row_id`` and ``_last_updated_sequence_number`` columns (rewritten rows keep their
    lineage), those go into the file with their reserved ids."""
    own = {f.name for f in schema.fields}  # a v1 or v2 table may have columns of these names
    lineage = [
        n
        for n in (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER)
        if n in table.column_names and n not in own
    ]
    if not lineage:
        return table, schema
    extra = [metadata_field(n) for n in lineage]
    file_schema = Schema(*schema.fields, *extra, schema_id=schema.schema_id)
    target = schema_to_arrow(file_schema)
    table = table.select([f.name for f in file_schema.fields])
    try:
        table = table.cast(target)
    except pa.ArrowInvalid:
        # a struct column added since some rows' files were written: null structs whose
        # required children are null too, which no cast to the required type takes
        filled = [
            fill_required(c.combine_chunks(), f.type)
            for c, f in zip(table.columns, target, strict=True)
        ]
        table = pa.Table.from_arrays(filled, names=table.column_names).cast(target)
    return table, file_schema


def stored_columns(table: pa.Table, file_schema: Schema) -> tuple[pa.Table, Schema]:
    """``table`` and ``file_schema`` without their ``unknown`` columns, which data files do not
    store (readers give them nulls)."""
    stored = _without_unknown(file_schema)
    if not stored.fields:
        raise ValidationError(
            "every column is of type unknown, which data files do not store, and a data file "
            "without a column cannot hold rows: add a column of another type first"
        )
    if stored is file_schema:
        return table, file_schema
    return _select(table, schema_to_arrow(stored)), stored
