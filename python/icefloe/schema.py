"""Iceberg schemas (spec "Schemas and Data Types", Appendix C "Schemas").

A :class:`Schema` is the table's top-level struct plus a ``schema_id`` and the optional
``identifier_field_ids``. It indexes every nested field (struct fields, list elements, map keys
and values) by id and by dotted name, the way the reference implementation names columns:
``location.lat`` for a struct child, ``tags.element`` for a list element (also reachable as
``tags`` children without ``element`` when the element is a struct), ``props.key`` and
``props.value`` for maps.

Building a schema checks what every schema must satisfy: field ids are unique, full column names
are unique and the identifier fields follow the spec's rules. Rules that apply only to user
schemas of a table (reserved ids, defaults per format version) live in
:mod:`icefloe.schema_rules`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any

from icefloe.exceptions import ValidationError
from icefloe.types import (
    DoubleType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    NestedType,
    PrimitiveType,
    StructType,
    _int,
    type_from_json,
)

__all__ = ["Schema", "transform_source", "walk_fields"]


def walk_fields(struct: NestedType) -> Iterator[tuple[tuple[NestedField, ...], NestedField]]:
    """Yields ``(ancestors, field)`` for every field nested in ``struct``, depth first, parents
    before children. List elements and map keys/values appear as fields named ``element``,
    ``key`` and ``value``; ``ancestors`` are the enclosing fields from the outermost."""
    stack: list[tuple[tuple[NestedField, ...], NestedField]] = [
        ((), f) for f in reversed(struct.fields)
    ]
    while stack:
        ancestors, f = stack.pop()
        yield ancestors, f
        if isinstance(f.field_type, NestedType):
            inner = (*ancestors, f)
            stack.extend((inner, c) for c in reversed(f.field_type.fields))


class _Index:
    """The id and name indexes of a schema, built once."""

    def __init__(self, struct: StructType) -> None:
        self.by_id: dict[int, NestedField] = {}
        self.parent: dict[int, int] = {}
        self.ancestors: dict[int, tuple[NestedField, ...]] = {}
        self.name_by_id: dict[int, str] = {}
        full: dict[str, int] = {}
        short: dict[str, int] = {}
        for ancestors, f in walk_fields(struct):
            if f.field_id in self.by_id:
                other = self.name_by_id[f.field_id]
                raise ValidationError(
                    f"invalid schema: field id {f.field_id} is used by both {other!r} and "
                    f"{_join(ancestors, f)!r}"
                )
            self.by_id[f.field_id] = f
            self.ancestors[f.field_id] = ancestors
            if ancestors:
                self.parent[f.field_id] = ancestors[-1].field_id
            name = _join(ancestors, f)
            if name in full:
                raise ValidationError(
                    f"invalid schema: multiple fields for name {name!r}: ids {full[name]} "
                    f"and {f.field_id}"
                )
            full[name] = f.field_id
            self.name_by_id[f.field_id] = name
            short_name = _join_short(ancestors, f)
            short.setdefault(short_name, f.field_id)
        # Full names win over short names (e.g. a real column named like a short name).
        self.id_by_name: dict[str, int] = {**short, **full}
        # Case-insensitive lookups: full names again win over short names; a lower-case name
        # matching several fields (``a`` and ``A``, ``s.x`` and ``s.X``) is ambiguous.
        full_lower: dict[str, dict[int, str]] = {}
        for n, i in full.items():
            full_lower.setdefault(n.lower(), {})[i] = n
        short_lower: dict[str, dict[int, str]] = {}
        for n, i in short.items():
            if n.lower() not in full_lower:
                short_lower.setdefault(n.lower(), {}).setdefault(i, n)
        self.id_by_lower_name: dict[str, int] = {}
        self.ambiguous_lower_names: dict[str, list[str]] = {}
        for key, matches in (*short_lower.items(), *full_lower.items()):
            if len(matches) == 1:
                self.id_by_lower_name[key] = next(iter(matches))
            else:
                self.ambiguous_lower_names[key] = sorted(matches.values())


def _join(ancestors: tuple[NestedField, ...], f: NestedField) -> str:
    return ".".join([a.name for a in ancestors] + [f.name])


def _join_short(ancestors: tuple[NestedField, ...], f: NestedField) -> str:
    """The name without ``element``/``value`` segments whose field is a struct (reference
    behaviour: ``points.x`` for ``points.element.x``)."""
    parts: list[str] = []
    for i, a in enumerate(ancestors):
        parent_type = ancestors[i - 1].field_type if i > 0 else None
        if (
            isinstance(parent_type, ListType | MapType)
            and a.name in ("element", "value")
            and isinstance(a.field_type, StructType)
        ):
            continue
        parts.append(a.name)
    parts.append(f.name)
    return ".".join(parts)


class Schema:
    """A table schema: top-level fields, ``schema_id`` and ``identifier_field_ids``."""

    __slots__ = ("__dict__", "_fields", "_identifier_field_ids", "_schema_id")

    def __init__(
        self,
        *fields: NestedField,
        schema_id: int = 0,
        identifier_field_ids: Sequence[int] = (),
    ) -> None:
        for f in fields:
            if not isinstance(f, NestedField):
                raise ValidationError(f"schema fields must be NestedField, got {f!r}")
        if isinstance(schema_id, bool) or not isinstance(schema_id, int):
            raise ValidationError(f"schema-id must be an int, got {schema_id!r}")
        self._fields: tuple[NestedField, ...] = tuple(fields)
        self._schema_id = schema_id
        ids = tuple(identifier_field_ids)
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, int):
                raise ValidationError(f"identifier-field-ids must be ints, got {i!r}")
        # a set, as Iceberg Java reads it: an id named twice is one identifier field
        ids = tuple(dict.fromkeys(ids))
        self._identifier_field_ids: tuple[int, ...] = ids
        index = self._index  # builds the indexes: rejects duplicate ids and names
        for i in ids:
            self._validate_identifier_field(i, index)

    # ----------------------------------------------------------------------------- basics

    @property
    def fields(self) -> tuple[NestedField, ...]:
        """The top-level fields, in order."""
        return self._fields

    @property
    def columns(self) -> tuple[NestedField, ...]:
        """Alias of :attr:`fields`."""
        return self._fields

    @property
    def schema_id(self) -> int:
        return self._schema_id

    @property
    def identifier_field_ids(self) -> tuple[int, ...]:
        return self._identifier_field_ids

    @property
    def identifier_field_names(self) -> tuple[str, ...]:
        """The full column names of the identifier fields."""
        return tuple(self._index.name_by_id[i] for i in self._identifier_field_ids)

    def as_struct(self) -> StructType:
        """The schema's fields as a :class:`StructType`."""
        return self._struct

    @cached_property
    def _struct(self) -> StructType:
        return StructType(*self._fields)

    @cached_property
    def _index(self) -> _Index:
        return _Index(self._struct)

    # ----------------------------------------------------------------------------- lookups

    @property
    def highest_field_id(self) -> int:
        """The largest field id anywhere in the schema (0 for an empty schema)."""
        return max(self._index.by_id, default=0)

    @property
    def field_ids(self) -> frozenset[int]:
        """Every field id in the schema, including nested ones."""
        return frozenset(self._index.by_id)

    def index_by_id(self) -> dict[int, NestedField]:
        """Every field (including list elements and map keys/values) by id."""
        return dict(self._index.by_id)

    def index_by_name(self) -> dict[str, int]:
        """Field ids by full dotted name (and by short name, as the reference indexes them)."""
        return dict(self._index.id_by_name)

    def find_field(self, name_or_id: str | int, case_sensitive: bool = True) -> NestedField:
        """The field with this id or dotted column name; raises :class:`ValidationError`."""
        if isinstance(name_or_id, int) and not isinstance(name_or_id, bool):
            f = self._index.by_id.get(name_or_id)
            if f is None:
                raise ValidationError(f"cannot find field with id {name_or_id} in schema")
            return f
        if not isinstance(name_or_id, str):
            raise ValidationError(f"a field is found by name or id, got {name_or_id!r}")
        field_id = self.find_field_id(name_or_id, case_sensitive)
        if field_id is None:
            raise ValidationError(
                f"cannot find field {name_or_id!r} in schema {self._schema_id}"
                + ("" if case_sensitive else " (case-insensitive)")
            )
        return self._index.by_id[field_id]

    def find_field_id(self, name: str, case_sensitive: bool = True) -> int | None:
        """The id of the column with this dotted name, or ``None``. Without case sensitivity,
        a name matching several fields (``a`` and ``A``) raises :class:`ValidationError`."""
        if case_sensitive:
            return self._index.id_by_name.get(name)
        key = name.lower()
        found = self._index.id_by_lower_name.get(key)
        if found is None and key in self._index.ambiguous_lower_names:
            names = self._index.ambiguous_lower_names[key]
            raise ValidationError(f"column {name!r} is ambiguous without case sensitivity: {names}")
        return found

    def find_type(self, name_or_id: str | int, case_sensitive: bool = True) -> IcebergType:
        """The type of the field with this id or dotted column name."""
        return self.find_field(name_or_id, case_sensitive).field_type

    def find_column_name(self, field_id: int) -> str | None:
        """The full dotted column name of a field id, or ``None`` if absent."""
        return self._index.name_by_id.get(field_id)

    def find_parent_id(self, field_id: int) -> int | None:
        """The id of the field enclosing ``field_id`` (``None`` for top-level or absent)."""
        return self._index.parent.get(field_id)

    def ancestors(self, field_id: int) -> tuple[NestedField, ...]:
        """The enclosing fields of ``field_id`` from the outermost (empty for top level)."""
        if field_id not in self._index.ancestors:
            raise ValidationError(f"cannot find field with id {field_id} in schema")
        return self._index.ancestors[field_id]

    def select(self, *names: str, case_sensitive: bool = True) -> Schema:
        """A schema with only the named top-level or nested columns (and their parents)."""
        keep: set[int] = set()
        for n in names:
            f = self.find_field(n, case_sensitive)
            keep.add(f.field_id)
            keep.update(a.field_id for a in self.ancestors(f.field_id))
            if isinstance(f.field_type, NestedType):
                keep.update(c.field_id for _, c in walk_fields(f.field_type))
        return Schema(
            *_prune(self._fields, keep),
            schema_id=self._schema_id,
            identifier_field_ids=[i for i in self._identifier_field_ids if i in keep],
        )

    # ----------------------------------------------------------------------------- rules

    def _validate_identifier_field(self, field_id: int, index: _Index) -> None:
        f = index.by_id.get(field_id)
        if f is None:
            raise ValidationError(
                f"cannot add field id {field_id} as an identifier field: not found"
            )
        name = index.name_by_id[field_id]
        if not isinstance(f.field_type, PrimitiveType):
            raise ValidationError(
                f"cannot add field {name!r} as an identifier field: not a primitive type field"
            )
        if not f.required:
            raise ValidationError(
                f"cannot add field {name!r} as an identifier field: not a required field"
            )
        if isinstance(f.field_type, FloatType | DoubleType):
            raise ValidationError(
                f"cannot add field {name!r} as an identifier field: must not be float or double"
            )
        for a in index.ancestors[field_id]:
            if isinstance(a.field_type, ListType | MapType):
                raise ValidationError(
                    f"cannot add field {name!r} as an identifier field: must not be nested in "
                    f"{a.field_type}"
                )
            if not a.required:
                raise ValidationError(
                    f"cannot add field {name!r} as an identifier field: must not be nested in "
                    f"an optional field {a.name!r}"
                )

    def same_schema(self, other: Schema) -> bool:
        """Whether both have the same fields and identifier fields (ignoring ``schema_id``;
        identifier fields are a set, compared as Iceberg Java compares them)."""
        return self._fields == other._fields and set(self._identifier_field_ids) == set(
            other._identifier_field_ids
        )

    # ----------------------------------------------------------------------------- JSON

    def to_json(self) -> dict[str, Any]:
        """Appendix C form, keys in the reference's order."""
        out: dict[str, Any] = {"type": "struct", "schema-id": self._schema_id}
        if self._identifier_field_ids:
            out["identifier-field-ids"] = list(self._identifier_field_ids)
        out["fields"] = [f.to_json() for f in self._fields]
        return out

    @staticmethod
    def from_json(obj: Any) -> Schema:
        """Parses Appendix C JSON (``type`` may be absent, as older writers left it out;
        ``schema-id`` defaults to 0 as in v1)."""
        if not isinstance(obj, dict):
            raise ValidationError(f"a schema must be a JSON object, got {obj!r}")
        kind = obj.get("type", "struct")
        if kind != "struct":
            raise ValidationError(f"a schema must have type 'struct', got {kind!r}")
        if "fields" not in obj:
            raise ValidationError(f"schema is missing 'fields': {obj!r}")
        struct = type_from_json({"type": "struct", "fields": obj["fields"]})
        assert isinstance(struct, StructType)
        # ids fit a 32-bit int, as Java's SchemaParser reads them with getInt
        schema_id = _int(obj.get("schema-id", 0), "schema-id")
        ids = obj.get("identifier-field-ids")
        if ids is None:
            ids = []
        if not isinstance(ids, list):
            raise ValidationError(f"identifier-field-ids must be a list of ints, got {ids!r}")
        ids = [_int(i, "identifier-field-ids element") for i in ids]
        return Schema(*struct.fields, schema_id=schema_id, identifier_field_ids=ids)

    # ----------------------------------------------------------------------------- dunder

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schema):
            return NotImplemented
        return self._schema_id == other._schema_id and self.same_schema(other)

    def __hash__(self) -> int:
        # Defaults may be JSON lists or objects (unhashable), so hash ids, names and types' text.
        shape = tuple((f.field_id, f.name, str(f.field_type)) for f in self._fields)
        return hash((shape, self._schema_id, frozenset(self._identifier_field_ids)))

    def __len__(self) -> int:
        return len(self._fields)

    def __iter__(self) -> Iterator[NestedField]:
        return iter(self._fields)

    def __str__(self) -> str:
        lines = [f"table {{  -- schema {self._schema_id}"]
        lines.extend(f"  {f}" for f in self._fields)
        lines.append("}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        fields = ", ".join(repr(f) for f in self._fields)
        sep = ", " if fields else ""
        return (
            f"Schema({fields}{sep}schema_id={self._schema_id}, "
            f"identifier_field_ids={list(self._identifier_field_ids)})"
        )


def _prune(fields: Sequence[NestedField], keep: set[int]) -> list[NestedField]:
    """The fields in ``keep``, with nested types pruned the same way (:func:`_prune_type`)."""
    out: list[NestedField] = []
    for f in fields:
        if f.field_id not in keep:
            continue
        t = f.field_type
        if isinstance(t, NestedType):
            f = _replace_type(f, _prune_type(t, keep))
        out.append(f)
    return out


def _prune_type(t: IcebergType, keep: set[int]) -> IcebergType:
    """``t`` with only the struct fields in ``keep``, through list elements and map values.
    A map keeps its key whole, and a map whose value is not kept (its key alone selected)
    stays whole, as Iceberg Java's ``TypeUtil.select`` and PyIceberg do."""
    if isinstance(t, StructType):
        return StructType(*_prune(t.fields, keep))
    if isinstance(t, ListType):
        if t.element_id not in keep:
            return t
        return ListType(t.element_id, _prune_type(t.element_type, keep), t.element_required)
    if isinstance(t, MapType):
        if t.value_id not in keep:
            return t
        value = _prune_type(t.value_type, keep)
        return MapType(t.key_id, t.key_type, t.value_id, value, t.value_required)
    return t


def _replace_type(f: NestedField, t: IcebergType) -> NestedField:
    return NestedField(f.field_id, f.name, t, f.required, f.doc, f.initial_default, f.write_default)


def transform_source(schema: Schema, source_id: int, verb: str, what: str) -> NestedField:
    """The source column ``source_id`` of a partition or sort field (``what`` names the field,
    ``verb`` says what it does: ``"partition"``, ``"sort"``): it must be in ``schema``,
    primitive and outside lists and maps (a row holds no single value of it there), else
    :class:`ValidationError`."""
    try:
        source = schema.find_field(source_id)
    except ValidationError:
        raise ValidationError(f"cannot find source column {source_id} for {what}") from None
    name = schema.find_column_name(source_id)
    if not isinstance(source.field_type, PrimitiveType):
        raise ValidationError(
            f"cannot {verb} by non-primitive column {name!r}: {source.field_type}"
        )
    for a in schema.ancestors(source_id):
        if isinstance(a.field_type, ListType | MapType):
            kind = "list" if isinstance(a.field_type, ListType) else "map"
            raise ValidationError(
                f"cannot {verb} by column {name!r}: it is nested in a {kind} "
                f"({schema.find_column_name(a.field_id)!r})"
            )
    return source
