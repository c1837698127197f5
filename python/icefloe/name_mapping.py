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
    """Refuses a name on two mapped fields of one level (ids are checked across the whole
    mapping, :func:`_check_unique_ids`)."""
    seen: set[str] = set()
    for f in fields:
        for n in f.names:
            if n in seen:
                raise ValidationError(f"name mapping lists name {n!r} more than once at one level")
            seen.add(n)


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


def update_mapping(mapping: NameMapping, schema: Schema, previous: Schema) -> NameMapping:
    """The mapping after a schema change from ``previous`` to ``schema``, as Iceberg Java's
    ``MappingUtil.update`` makes it: a renamed column's mapped field gains its new name (earlier
    names stay as aliases, so files written before the rename still resolve) and each added
    column joins under its parent's mapped field. A name the change gives a column is taken
    from the other mapped fields of its level; nothing else changes (columns the mapping leaves
    out stay out, and entries of dropped columns stay for old files)."""
    old_ids = previous.field_ids
    renamed: dict[int, str] = {}
    added: dict[int, list[NestedField]] = {}
    for fid in schema.field_ids:
        f = schema.find_field(fid)
        parents = schema.ancestors(fid)
        if fid in old_ids:
            if f.name != previous.find_field(fid).name:
                renamed[fid] = f.name
        elif not parents or parents[-1].field_id in old_ids:
            added.setdefault(parents[-1].field_id if parents else -1, []).append(f)

    def with_added(fields: list[MappedField], parent: int) -> list[MappedField]:
        new = added.get(parent, [])
        taken = {f.name: f.field_id for f in new}
        return [_without_names(m, taken) for m in fields] + [_mapped(f) for f in new]

    def level(fields: Sequence[MappedField]) -> list[MappedField]:
        out = [one(m) for m in fields]
        taken = {renamed[m.field_id]: m.field_id for m in out if m.field_id in renamed}
        return [_without_names(m, taken) for m in out]

    def one(m: MappedField) -> MappedField:
        names = m.names
        new_name = renamed.get(m.field_id) if m.field_id is not None else None
        if new_name is not None and new_name not in names:
            names = (new_name, *names)
        children = level(m.fields)
        if m.field_id is not None:
            children = with_added(children, m.field_id)
        return MappedField(names, m.field_id, tuple(children))

    return NameMapping(with_added(level(mapping.fields), -1))


def _without_names(m: MappedField, taken: Mapping[str, int]) -> MappedField:
    """``m`` without the names ``taken`` gives other field ids."""
    names = tuple(n for n in m.names if taken.get(n, m.field_id) == m.field_id)
    return m if names == m.names else MappedField(names, m.field_id, m.fields)
