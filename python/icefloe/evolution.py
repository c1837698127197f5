"""Schema evolution rules (spec "Schema Evolution") as a validator.

:func:`check_schema_evolution` decides whether ``new`` is a legal successor of ``old`` for a table
of a given format version, so every schema change (``add-schema`` updates, the schema-update API)
goes through the same checks:

* a field keeps its id when renamed; a kept field stays under the same parent (no regrouping of
  struct fields into a nested struct or out of one) and keeps its kind (primitive, struct, list or
  map: primitive <-> nested moves are not allowed);
* primitive types change only by an allowed promotion (:func:`can_promote`); map keys never change;
* an optional field cannot become required, and a field's ``initial-default`` cannot change;
* new fields take ids above ``last_column_id``; a new required field needs non-null defaults (v3),
  and cannot be added before v3; a new struct field defaults to null or ``{}``;
* a partition source column may not be promoted when its transform would give a different value
  (``date`` -> ``timestamp``/``timestamp_ns`` under anything but ``year``/``month``/``day``/
  ``void``), and columns the default partition spec reads may not be dropped;
* the new schema is itself valid for the format version (:func:`validate_schema`).
"""

from __future__ import annotations

import datetime as _dt
import struct
from collections.abc import Iterable
from typing import Any

from icefloe import values
from icefloe.exceptions import ValidationError
from icefloe.metadata.table_metadata import SUPPORTED_FORMAT_VERSION
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema
from icefloe.schema_rules import validate_schema
from icefloe.sorting import SortOrder
from icefloe.transforms import DayTransform, MonthTransform, Transform, YearTransform
from icefloe.types import (
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    UnknownType,
)

__all__ = ["can_promote", "check_schema_evolution", "promote_default", "promotion_refused"]


def can_promote(old: IcebergType, new: IcebergType, format_version: int) -> bool:
    """Whether a column of primitive type ``old`` may become ``new`` in a table of this format
    version (equal types are always allowed)."""
    if old == new:
        return True
    if isinstance(old, IntegerType):
        return isinstance(new, LongType)
    if isinstance(old, FloatType):
        return isinstance(new, DoubleType)
    if isinstance(old, DecimalType):
        return (
            isinstance(new, DecimalType)
            and new.scale == old.scale
            and new.precision > old.precision
        )
    if format_version >= 3:
        if isinstance(old, DateType):
            return isinstance(new, TimestampType | TimestampNanoType)
        if isinstance(old, UnknownType):
            return True
    return False


def promotion_refused(
    name: str | None, old: IcebergType, new: IcebergType, format_version: int
) -> ValidationError:
    """The error for changing column ``name`` from ``old`` to ``new`` when :func:`can_promote`
    refuses it: it names the format version only when a later one allows the change."""
    if can_promote(old, new, SUPPORTED_FORMAT_VERSION):
        return ValidationError(
            f"cannot change column {name!r} from {old} to {new} in a v{format_version} table "
            f"(format version {SUPPORTED_FORMAT_VERSION} allows it)"
        )
    return ValidationError(
        f"cannot change column {name!r} from {old} to {new}: Iceberg only widens a type "
        "(int to long, float to double, a decimal to more digits of the same scale; in format "
        "version 3 also date to timestamp and unknown to any type)"
    )


def _kind(t: IcebergType) -> str:
    if isinstance(t, StructType):
        return "struct"
    if isinstance(t, ListType):
        return "list"
    if isinstance(t, MapType):
        return "map"
    return "primitive"


def _value_preserving(old: IcebergType, new: IcebergType, transform: Transform) -> bool:
    """Whether ``transform`` gives the same value before and after promoting ``old`` to ``new``."""
    if old == new:
        return True
    if isinstance(old, DateType):
        # Day counts become microseconds/nanoseconds: identity and bucket change, while the
        # temporal transforms give the same year, month and day of the midnight timestamp.
        return transform.is_void or isinstance(
            transform, YearTransform | MonthTransform | DayTransform
        )
    # int -> long, float -> double and decimal widening keep identity, bucket and truncate
    # values (the reference hashes int as long and decimals by their unscaled value); an
    # unknown column holds only nulls.
    return True


def promote_default(value: Any, old: IcebergType, new: IcebergType) -> Any:
    """A default value (in the JSON form of ``old``) in the JSON form of ``new``, a promotion
    of ``old``: a date becomes the midnight (UTC) that starts it; a float becomes the double
    of the same value (``1.1`` stored as a float is ``1.100000023841858``, the value rows
    read, as Iceberg Java widens it); the other promotions keep the value."""
    if value is None or old == new:
        return value
    if isinstance(old, FloatType) and isinstance(new, DoubleType):
        return _as_float32(value)
    if not isinstance(old, DateType) or not isinstance(new, PrimitiveType):
        return value
    day = values.from_json(old, value)
    midnight = _dt.datetime.combine(day, _dt.time())
    if isinstance(new, TimestamptzType | TimestamptzNanoType):
        midnight = midnight.replace(tzinfo=_dt.timezone.utc)
    return values.to_json(new, midnight)


def _as_float32(value: Any) -> Any:
    """A float's JSON value as the float32 it is stored as (the value unchanged if it is not
    a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    try:
        return struct.unpack("<f", struct.pack("<f", float(value)))[0]
    except OverflowError:
        return value


def _same_default(old: NestedField, new: NestedField) -> bool:
    """Whether ``new`` keeps ``old``'s initial-default across a promotion. A float widened
    to double may carry the float's value as written, as some writers leave it."""
    if promote_default(old.initial_default, old.field_type, new.field_type) == new.initial_default:
        return True
    widened = isinstance(old.field_type, FloatType) and isinstance(new.field_type, DoubleType)
    return widened and old.initial_default == new.initial_default


def check_schema_evolution(
    old: Schema,
    new: Schema,
    format_version: int,
    specs: Iterable[PartitionSpec] = (),
    default_spec: PartitionSpec | None = None,
    last_column_id: int | None = None,
    sort_order: SortOrder | None = None,
) -> None:
    """Raises :class:`ValidationError` naming the column if ``new`` is not a legal evolution of
    ``old`` (see the module doc). ``specs`` are all the table's partition specs (promotions are
    checked against every one, since old files keep old partition values); ``default_spec``'s
    source columns may not be dropped, nor ``sort_order``'s (the table's default order: every
    write sorts by it). ``last_column_id`` defaults to ``old``'s highest id."""
    validate_schema(new, format_version)
    old_ids = old.index_by_id()
    new_ids = new.index_by_id()
    last_id = old.highest_field_id if last_column_id is None else last_column_id

    for fid, nf in new_ids.items():
        name = new.find_column_name(fid)
        of = old_ids.get(fid)
        if of is None:
            _check_new_field(old, new, nf, name, format_version, last_id)
            continue
        if old.find_parent_id(fid) != new.find_parent_id(fid):
            raise ValidationError(
                f"column {name!r} (id {fid}) moved from {_parent_name(old, fid)!r} to "
                f"{_parent_name(new, fid)!r}: fields cannot move between structs"
            )
        ok, nk = _kind(of.field_type), _kind(nf.field_type)
        # v3 promotes unknown to any type, nested ones included (its values are all null).
        unknown_promoted = isinstance(of.field_type, UnknownType) and format_version >= 3
        if ok != nk and not unknown_promoted:
            raise ValidationError(
                f"column {name!r} cannot change from {of.field_type} to {nf.field_type}: "
                f"a {ok} cannot become a {nk}"
            )
        if isinstance(of.field_type, PrimitiveType) and of.field_type != nf.field_type:
            if _is_map_key(old, fid):
                raise ValidationError(f"cannot change the type of map key {name!r}")
            if not can_promote(of.field_type, nf.field_type, format_version):
                raise promotion_refused(name, of.field_type, nf.field_type, format_version)
        if of.optional and nf.required:
            raise ValidationError(f"cannot change optional column {name!r} to required")
        if not _same_default(of, nf):
            raise ValidationError(
                f"cannot change the initial-default of column {name!r} "
                f"({of.initial_default!r} -> {nf.initial_default!r})"
            )

    for spec in specs:
        for pf in spec.fields:
            for sid in pf.all_source_ids:
                before, after = old_ids.get(sid), new_ids.get(sid)
                if before is None or after is None:
                    continue
                if not _value_preserving(before.field_type, after.field_type, pf.transform):
                    raise ValidationError(
                        f"cannot promote column {new.find_column_name(sid)!r} from "
                        f"{before.field_type} to {after.field_type}: it is the source of partition "
                        f"field {pf.name!r} ({pf.transform}) in spec {spec.spec_id}, whose "
                        f"values would change"
                    )
    # columns every write still needs: sources of the default spec and of the sort order
    needed: list[tuple[int, str]] = []
    if default_spec is not None:
        needed += [
            (sid, f"it is the source of partition field {pf.name!r} in the default spec "
             f"{default_spec.spec_id}")
            for pf in default_spec.fields
            for sid in pf.all_source_ids
        ]  # fmt: skip
    if sort_order is not None:
        needed += [
            (sid, f"the table's sort order {sort_order.order_id} sorts by it (replace the "
             "sort order first)")
            for sf in sort_order.fields
            for sid in sf.all_source_ids
        ]  # fmt: skip
    for sid, why in needed:
        if sid in old_ids and sid not in new_ids:
            raise ValidationError(f"cannot drop column {old.find_column_name(sid)!r}: {why}")


def _check_new_field(
    old: Schema,
    new: Schema,
    f: NestedField,
    name: str | None,
    format_version: int,
    last_id: int,
) -> None:
    if f.field_id <= last_id:
        raise ValidationError(
            f"new column {name!r} must get a fresh id above {last_id}, got {f.field_id}"
        )
    parent_id = new.find_parent_id(f.field_id)
    parent = new.find_field(parent_id) if parent_id is not None else None
    if parent is not None and not isinstance(parent.field_type, StructType):
        # A new list element or map key/value belongs to a new list or map: its parent's
        # default (null or a list/map value) covers existing rows.
        return
    parent_is_new = parent is not None and parent.field_id not in old.field_ids
    # Existing rows read a new field through its initial-default, unless the field sits in a
    # struct that is itself new and defaults to null.
    needs_value = f.required and (
        not parent_is_new or (parent is not None and parent.initial_default is not None)
    )
    if not needs_value:
        return
    if format_version < 3:
        raise ValidationError(
            f"cannot add required column {name!r}: v{format_version} tables have no defaults"
        )
    if f.initial_default is None or f.write_default is None:
        raise ValidationError(
            f"cannot add required column {name!r} without non-null initial-default and "
            f"write-default"
        )


def _parent_name(schema: Schema, field_id: int) -> str:
    pid = schema.find_parent_id(field_id)
    if pid is None:
        return "<top level>"
    return schema.find_column_name(pid) or str(pid)


def _is_map_key(schema: Schema, field_id: int) -> bool:
    pid = schema.find_parent_id(field_id)
    if pid is None:
        return False
    t = schema.find_field(pid).field_type
    return isinstance(t, MapType) and t.key_id == field_id
