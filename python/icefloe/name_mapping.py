"""Name mapping (spec "Column Projection" and Appendix C "Name Mapping Serialization").

A :class:`NameMapping` gives fallback field ids to columns of data files written without them
(the table property ``schema.name-mapping.default``). Each :class:`MappedField` lists the names a
column may have (a name with ``.`` is a literal name, not a path), an optional field id and the
mappings of its children: struct fields, ``element`` for lists, ``key`` and ``value`` for maps.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.types import IcebergType, ListType, MapType, NestedField, StructType

__all__ = [
    "DEFAULT_NAME_MAPPING_PROPERTY",
    "MappedField",
    "NameMapping",
    "create_mapping",
    "table_mapping",
    "update_mapping",
]

#: The table property that holds the default name mapping.
DEFAULT_NAME_MAPPING_PROPERTY = "schema.name-mapping.default"


@dataclass(frozen=True)
class MappedField:
    """Names a column may have, its field id (if any) and its children's mappings."""

    names: tuple[str, ...]
    field_id: int | None = None
    fields: tuple[MappedField, ...] = field(default=())

    def __post_init__(self) -> None:
        for n in self.names:
            if not isinstance(n, str):
                raise ValidationError(f"name mapping names must be strings, got {n!r}")
        # a set of names, as in Iceberg Java: a name listed twice is listed once
        object.__setattr__(self, "names", tuple(dict.fromkeys(self.names)))
        object.__setattr__(self, "fields", tuple(self.fields))
        fid = self.field_id
        if fid is not None and (
            isinstance(fid, bool) or not isinstance(fid, int) or not _INT_MIN <= fid <= _INT_MAX
        ):
            raise ValidationError(f"name mapping field-id must be an int, got {fid!r}")
        _check_unique(self.fields)

    def child(self, name: str) -> MappedField | None:
        """The child mapping that lists ``name``."""
        return next((f for f in self.fields if name in f.names), None)

    def to_json(self) -> dict[str, Any]:
        """The reference's key order: ``field-id`` (when set), ``names``, ``fields`` (when
        there are children)."""
        out: dict[str, Any] = {}
        if self.field_id is not None:
            out["field-id"] = self.field_id
        out["names"] = list(self.names)
        if self.fields:
            out["fields"] = [f.to_json() for f in self.fields]
        return out

    @staticmethod
    def from_json(obj: Any) -> MappedField:
        if not isinstance(obj, dict):
            raise ValidationError(f"a name mapping field must be a JSON object, got {obj!r}")
        names = obj.get("names", [])
        if not isinstance(names, list):
            raise ValidationError(f"name mapping 'names' must be a list of strings: {obj!r}")
        children = obj.get("fields")
        if children is None:
            children = []
        if not isinstance(children, list):
            raise ValidationError(f"name mapping 'fields' must be a list: {obj!r}")
        return MappedField(
            names=tuple(names),
            field_id=obj.get("field-id"),
            fields=tuple(MappedField.from_json(c) for c in children),
        )


class NameMapping:
    """A list of top-level :class:`MappedField`."""

    __slots__ = ("_fields",)

    def __init__(self, fields: Iterable[MappedField]) -> None:
        self._fields = tuple(fields)
        _check_unique(self._fields)
        _check_unique_ids(self._fields)

    @property
    def fields(self) -> tuple[MappedField, ...]:
        return self._fields

    def find(self, *path: str) -> MappedField | None:
        """The mapping of the column at ``path`` (one name per level, e.g. ``("loc", "lat")``,
        ``("tags", "element")``), or ``None``."""
        fields = self._fields
        found: MappedField | None = None
        for name in path:
            found = next((f for f in fields if name in f.names), None)
            if found is None:
                return None
            fields = found.fields
        return found

    def id_by_path(self) -> dict[tuple[str, ...], int]:
        """Every mapped name path and its field id."""
        out: dict[tuple[str, ...], int] = {}

        def walk(fields: Sequence[MappedField], prefix: tuple[str, ...]) -> None:
            for f in fields:
                for n in f.names:
                    path = (*prefix, n)
                    if f.field_id is not None:
                        out[path] = f.field_id
                    walk(f.fields, path)

        walk(self._fields, ())
        return out

    def to_json(self) -> list[dict[str, Any]]:
        return [f.to_json() for f in self._fields]

    def to_json_string(self) -> str:
        """The property value form (compact JSON)."""
        return json.dumps(self.to_json(), separators=(",", ":"))

    @staticmethod
    def from_json(obj: Any) -> NameMapping:
        """Parses the JSON list form, or the property's string value."""
        if isinstance(obj, str | bytes):
            try:
                obj = json.loads(obj)
            except (ValueError, RecursionError) as e:
                raise ValidationError(f"invalid name mapping JSON: {e}") from None
        if not isinstance(obj, list):
            raise ValidationError(f"a name mapping must be a JSON list, got {_shown(obj)}")
        try:
            return NameMapping(MappedField.from_json(f) for f in obj)
        except RecursionError:
            raise ValidationError("a name mapping nests fields too deeply") from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NameMapping):
            return NotImplemented
        return self._fields == other._fields

    def __hash__(self) -> int:
        return hash(self._fields)

    def __iter__(self) -> Iterator[MappedField]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __repr__(self) -> str:
        return f"NameMapping({list(self._fields)!r})"


_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


def _shown(obj: Any) -> str:
    try:
        text = repr(obj)
    except RecursionError:
        text = f"a {type(obj).__name__}"
    return text if len(text) <= 80 else text[:77] + "..."


def _check_unique(fields: Sequence[MappedField]) -> None:
    """Refuses a name or a field id on two mapped fields of one level."""
    seen: set[str] = set()
    ids: set[int] = set()
    for f in fields:
        for n in f.names:
            if n in seen:
                raise ValidationError(f"name mapping lists name {n!r} more than once at one level")
            seen.add(n)
        if f.field_id is not None:
            if f.field_id in ids:
                raise ValidationError(f"name mapping gives field id {f.field_id} to two fields")
            ids.add(f.field_id)


def _check_unique_ids(fields: Sequence[MappedField]) -> None:
    """Refuses a field id on two mapped fields anywhere in a mapping, as Iceberg Java does."""
    ids: set[int] = set()
    todo = list(fields)
    while todo:
        f = todo.pop()
        if f.field_id is not None:
            if f.field_id in ids:
                raise ValidationError(f"name mapping gives field id {f.field_id} to two fields")
            ids.add(f.field_id)
        todo.extend(f.fields)


def table_mapping(properties: Mapping[str, str], deferred: bool = False) -> NameMapping | None:
    """The table's default name mapping (``schema.name-mapping.default``), or None; a value
    that is not a mapping's JSON is a :class:`ValidationError`. A ``deferred`` mapping is
    parsed when first used (as Iceberg Java parses it for reads): an invalid one fails only the
    reads of files without field ids."""
    text = properties.get(DEFAULT_NAME_MAPPING_PROPERTY)
    if not text:
        return None
    return _DeferredMapping(text) if deferred else _parsed(text)


def _parsed(text: str) -> NameMapping:
    try:
        return NameMapping.from_json(text)
    except (ValueError, TypeError, AttributeError, KeyError) as e:
        raise ValidationError(
            f"table property {DEFAULT_NAME_MAPPING_PROPERTY} is not a name mapping: {e}"
        ) from None


class _DeferredMapping(NameMapping):
    """A table property's mapping, parsed on first use."""

    __slots__ = ("_parsed", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._parsed: tuple[MappedField, ...] | None = None

    @property
    def _fields(self) -> tuple[MappedField, ...]:  # type: ignore[override]
        if self._parsed is None:
            self._parsed = _parsed(self._text).fields
        return self._parsed


def create_mapping(schema: Schema) -> NameMapping:
    """The mapping of every column of ``schema`` to its id, under its current name."""
    return NameMapping(_mapped(f) for f in schema.fields)


def _mapped(f: NestedField) -> MappedField:
    return MappedField((f.name,), f.field_id, _children(f.field_type))


def _children(t: IcebergType) -> tuple[MappedField, ...]:
    if isinstance(t, StructType):
        return tuple(_mapped(c) for c in t.fields)
    if isinstance(t, ListType):
        return (_mapped(t.element_field),)
    if isinstance(t, MapType):
        return (_mapped(t.key_field), _mapped(t.value_field))
    return ()


def update_mapping(mapping: NameMapping, schema: Schema) -> NameMapping:
    """The mapping after a schema change: every column of ``schema`` maps its current name to
    its id, keeping earlier names as aliases (so files written before a rename still resolve),
    and mappings of columns no longer in the schema are kept for old files."""
    old_by_id: dict[int, MappedField] = {}

    def index(fields: Sequence[MappedField]) -> None:
        for f in fields:
            if f.field_id is not None:
                old_by_id.setdefault(f.field_id, f)
            index(f.fields)

    index(mapping.fields)

    def merge(f: NestedField) -> MappedField:
        old = old_by_id.get(f.field_id)
        names = [f.name] + [n for n in (old.names if old else ()) if n != f.name]
        nested = _nested_fields(f.field_type)
        children = [merge(c) for c in nested]
        live = {c.field_id for c in nested}
        kept = [c for c in (old.fields if old else ()) if c.field_id not in live]
        return MappedField(tuple(names), f.field_id, _level(nested, [*children, *kept]))

    top = [merge(f) for f in schema.fields]
    live_top = {f.field_id for f in schema.fields}
    kept_top = [m for m in mapping.fields if m.field_id not in live_top]
    return NameMapping(_level(schema.fields, [*top, *kept_top]))


def _level(current: Sequence[NestedField], fields: list[MappedField]) -> tuple[MappedField, ...]:
    """The mapped fields of one level: a name a current column has is that column's only, as
    Java's mapping update gives it (a column renamed from ``a`` loses the alias ``a`` when a new
    column takes the name), then :func:`_dedupe`."""
    taken = {f.field_id: f.name for f in current}
    owners = {name: fid for fid, name in taken.items()}
    out = [
        MappedField(
            tuple(n for n in m.names if owners.get(n, m.field_id) == m.field_id),
            m.field_id,
            m.fields,
        )
        for m in fields
    ]
    return _dedupe(out)


def _nested_fields(t: IcebergType) -> tuple[NestedField, ...]:
    if isinstance(t, StructType | ListType | MapType):
        return t.fields
    return ()


def _dedupe(fields: list[MappedField]) -> tuple[MappedField, ...]:
    """Drops names already claimed by an earlier (current) field at the same level."""
    seen: set[str] = set()
    out: list[MappedField] = []
    for f in fields:
        names = tuple(n for n in f.names if n not in seen)
        seen.update(names)
        if names or f.field_id is not None:
            out.append(MappedField(names, f.field_id, f.fields))
    return tuple(out)
