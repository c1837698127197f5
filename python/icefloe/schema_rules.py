"""Rules a table's user schema must satisfy, and fresh field-id assignment.

* :func:`validate_schema` checks a schema for a table of a given format version: no reserved field
  ids (spec "Reserved Field IDs"), only types the version allows, and the default-value rules
  (spec "Default values"): defaults only from v3, ``unknown``/``variant``/``geometry``/
  ``geography`` default to null, ``unknown`` columns are optional, a struct's default is null or
  ``{}`` and every default is a valid JSON single value of its type (Appendix D, parsed by
  :func:`icefloe.values.from_json`).
* :func:`min_format_version` is the lowest format version that can hold a schema.
* :func:`assign_fresh_ids` renumbers a schema for a new table the way the reference does.

:class:`~icefloe.schema.Schema` itself checks only what every schema must satisfy (unique ids and
names, identifier fields), since internal schemas such as position-delete files use reserved ids.
"""

from __future__ import annotations

from collections.abc import Callable

from icefloe import values
from icefloe.exceptions import ValidationError
from icefloe.schema import Schema, walk_fields
from icefloe.types import (
    GeographyType,
    GeometryType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    NestedType,
    StructType,
    UnknownType,
    VariantType,
)

__all__ = [
    "MAX_USER_FIELD_ID",
    "METADATA_COLUMNS",
    "assign_fresh_ids",
    "check_default_value",
    "min_format_version",
    "validate_schema",
]

#: Field ids above this (``Integer.MAX_VALUE - 200``) are reserved for metadata columns.
MAX_USER_FIELD_ID = 2147483447

#: The spec's metadata columns: reserved field id -> (name, type).
METADATA_COLUMNS: dict[int, tuple[str, str]] = {
    2147483646: ("_file", "string"),
    2147483645: ("_pos", "long"),
    2147483644: ("_deleted", "boolean"),
    2147483643: ("_spec_id", "int"),
    2147483642: ("_partition", "struct"),
    2147483546: ("file_path", "string"),
    2147483545: ("pos", "long"),
    2147483544: ("row", "struct"),
    2147483543: ("_change_type", "string"),
    2147483542: ("_change_ordinal", "int"),
    2147483541: ("_commit_snapshot_id", "long"),
    2147483540: ("_row_id", "long"),
    2147483539: ("_last_updated_sequence_number", "long"),
}

_NULL_ONLY = (UnknownType, VariantType, GeometryType, GeographyType)
_LINEAGE_NAMES = frozenset({"_row_id", "_last_updated_sequence_number"})


def validate_schema(schema: Schema, format_version: int) -> None:
    """Raises :class:`ValidationError` naming the column if ``schema`` breaks a rule for a user
    schema of a table with this format version."""
    if format_version >= 3:
        for f in schema.fields:
            if f.name in _LINEAGE_NAMES:
                raise ValidationError(
                    f"column {f.name!r} has the name of a row lineage metadata column, "
                    f"which format version 3 reads and writes in every data file: rename it"
                )
    for ancestors, f in walk_fields(schema.as_struct()):
        name = ".".join([a.name for a in ancestors] + [f.name])
        if f.field_id > MAX_USER_FIELD_ID or f.field_id < 0:
            reserved = METADATA_COLUMNS.get(f.field_id)
            what = f" (metadata column {reserved[0]!r})" if reserved else ""
            raise ValidationError(
                f"column {name!r} uses field id {f.field_id}{what}: ids above "
                f"{MAX_USER_FIELD_ID} are reserved and ids must not be negative"
            )
        t = f.field_type
        if t.min_format_version > format_version:
            raise ValidationError(
                f"column {name!r} has type {t}, which needs format version "
                f"{t.min_format_version} (table is v{format_version})"
            )
        has_default = f.initial_default is not None or f.write_default is not None
        if has_default and format_version < 3:
            raise ValidationError(
                f"column {name!r} has a default value, which needs format version 3 "
                f"(table is v{format_version})"
            )
        check_default_value(f, name)


def check_default_value(field: NestedField, name: str | None = None) -> None:
    """Checks ``field``'s ``initial-default`` and ``write-default`` against the spec's rules and
    parses them as JSON single values of the field's type."""
    label = name if name is not None else field.name
    for key, value in (
        ("initial-default", field.initial_default),
        ("write-default", field.write_default),
    ):
        if value is None:
            continue
        t = field.field_type
        if isinstance(t, _NULL_ONLY):
            raise ValidationError(
                f"column {label!r} of type {t} must default to null, got {key} {value!r}"
            )
        if isinstance(t, StructType):
            if value != {}:
                raise ValidationError(
                    f"column {label!r}: a struct {key} must be null or an empty struct {{}} "
                    f"(sub-field defaults belong to the sub-fields), got {value!r}"
                )
            continue
        if isinstance(t, ListType | MapType):
            raise ValidationError(
                f"column {label!r}: a {'list' if isinstance(t, ListType) else 'map'} column's "
                f"{key} must be null, got {value!r}: Iceberg Java and PyIceberg refuse to load "
                "a table whose schemas give one another default, even after the column is gone"
            )
        try:
            values.from_json(t, value)
        except ValidationError as e:
            raise ValidationError(
                f"column {label!r}: {key} {value!r} is not a valid {t} value ({e})"
            ) from None


def min_format_version(schema: Schema) -> int:
    """The lowest table format version that can hold ``schema``: 3 if it uses a v3 type or a
    default value, else 1."""
    version = 1
    for _, f in walk_fields(schema.as_struct()):
        version = max(version, f.field_type.min_format_version)
        if f.initial_default is not None or f.write_default is not None:
            version = max(version, 3)
    return version


def assign_fresh_ids(
    schema: Schema,
    next_id: Callable[[], int] | None = None,
    base_schema: Schema | None = None,
    schema_id: int | None = None,
) -> Schema:
    """Renumbers every field of ``schema`` as the reference does for a new table: the fields of
    a struct get ids before their children (breadth first per struct), a list's element and a
    map's key then value get ids before their own children.

    ``next_id`` gives new ids (default: 1, 2, 3, ...). With ``base_schema``, a field whose full
    name exists there keeps the base id (used when replacing a table). Identifier fields follow
    their columns by name. ``schema_id`` defaults to the input's.
    """
    if next_id is None:
        counter = iter(range(1, MAX_USER_FIELD_ID + 1))

        def next_id() -> int:
            return next(counter)

    gen = next_id

    def id_for(full_name: str) -> int:
        if base_schema is not None:
            existing = base_schema.find_field_id(full_name)
            if existing is not None:
                return existing
        return gen()

    def fresh_struct(struct: StructType, prefix: str) -> StructType:
        ids = [id_for(prefix + f.name) for f in struct.fields]
        out = []
        for fid, f in zip(ids, struct.fields, strict=True):
            t = fresh_type(f.field_type, prefix + f.name)
            out.append(
                NestedField(fid, f.name, t, f.required, f.doc, f.initial_default, f.write_default)
            )
        return StructType(*out)

    def fresh_type(t: IcebergType, name: str) -> IcebergType:
        if not isinstance(t, NestedType):
            return t
        if isinstance(t, StructType):
            return fresh_struct(t, name + ".")
        if isinstance(t, ListType):
            element_id = id_for(name + ".element")
            return ListType(
                element_id, fresh_type(t.element_type, name + ".element"), t.element_required
            )
        if isinstance(t, MapType):
            key_id = id_for(name + ".key")
            value_id = id_for(name + ".value")
            return MapType(
                key_id,
                fresh_type(t.key_type, name + ".key"),
                value_id,
                fresh_type(t.value_type, name + ".value"),
                t.value_required,
            )
        raise ValidationError(f"cannot assign ids in unsupported type {t}")

    struct = fresh_struct(schema.as_struct(), "")
    names = [schema.find_column_name(i) for i in schema.identifier_field_ids]
    fresh = Schema(*struct.fields)
    ident = [fresh.find_field(n).field_id for n in names if n is not None]
    return Schema(
        *struct.fields,
        schema_id=schema.schema_id if schema_id is None else schema_id,
        identifier_field_ids=ident,
    )
