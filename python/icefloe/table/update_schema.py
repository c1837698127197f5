"""Schema evolution through a builder: ``with table.update_schema() as u: u.add_column(...)``.

:class:`UpdateSchema` collects changes against the table's current schema the way the Java
reference's ``SchemaUpdate`` does: columns are found by name (optionally case-insensitively) in
the *current* schema, new columns get fresh ids above ``last-column-id`` (nested types are
renumbered), renames and type changes keep ids, and moves reorder fields within one struct. On
:meth:`UpdateSchema.commit` the new schema is built, checked against every rule of
:func:`icefloe.evolution.check_schema_evolution` (and :func:`icefloe.schema_rules.validate_schema`)
and committed as ``add-schema`` + ``set-current-schema``, with the table's name mapping and
per-column metrics properties updated for renamed and dropped columns in the same commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from icefloe import values
from icefloe.evolution import (
    can_promote,
    check_schema_evolution,
    promote_default,
    promotion_refused,
)
from icefloe.exceptions import ValidationError
from icefloe.metadata import (
    AddSchema,
    RemoveProperties,
    SetCurrentSchema,
    SetProperties,
    TableUpdate,
)
from icefloe.name_mapping import DEFAULT_NAME_MAPPING_PROPERTY, table_mapping, update_mapping
from icefloe.nesting import check_nesting, nesting_levels
from icefloe.properties import TableProperties
from icefloe.schema import Schema
from icefloe.table.pending import PendingUpdate
from icefloe.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    NestedType,
    PrimitiveType,
    StructType,
)

if TYPE_CHECKING:
    from icefloe.table.table import Transaction

__all__ = ["UpdateSchema"]

#: The pseudo parent id of top-level fields.
TABLE_ROOT_ID = -1

_UNSET: Any = object()


@dataclass(frozen=True)
class _Move:
    field_id: int
    kind: str  # "first", "before", "after"
    other_id: int | None = None


def _path(name: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(name, str):
        return (name,)
    if not isinstance(name, Iterable):
        raise ValidationError(f"a column path must be a name or a sequence of names, got {name!r}")
    parts = tuple(name)
    if not parts or not all(isinstance(p, str) and p for p in parts):
        raise ValidationError(f"a column path must be non-empty strings, got {name!r}")
    return parts


def _mapping_update(
    properties: Mapping[str, str], schema: Schema, previous: Schema
) -> list[TableUpdate]:
    """The table's name mapping (if any) after a schema change from ``previous``, as the
    reference keeps it: the change's new names and columns join it and earlier names stay as
    aliases, so files without field ids keep resolving."""
    mapping = table_mapping(properties)
    if mapping is None:
        return []
    text = update_mapping(mapping, schema, previous).to_json_string()
    return [SetProperties({DEFAULT_NAME_MAPPING_PROPERTY: text})]


def _metrics_updates(properties: Mapping[str, str], old: Schema, new: Schema) -> list[TableUpdate]:
    """The per-column metrics properties (``write.metadata.metrics.column.<name>``) after a
    schema change, as the reference's ``SchemaUpdate`` moves them in the same commit: the key of
    a renamed column (or of a column under a renamed struct) takes the new dotted name, the key
    of a dropped column is removed. Keys naming no column of ``old`` are left alone."""
    prefix = TableProperties.METRICS_MODE_COLUMN_PREFIX
    moved: dict[str, str] = {}
    removed: list[str] = []
    for key, value in properties.items():
        field_id = old.find_field_id(key[len(prefix) :]) if key.startswith(prefix) else None
        if field_id is None:
            continue
        name = new.find_column_name(field_id)
        if name is None:
            removed.append(key)
        elif name != old.find_column_name(field_id):
            moved[prefix + name] = value
            removed.append(key)
    removed = [k for k in removed if k not in moved]  # a swap of names sets both keys
    updates: list[TableUpdate] = [RemoveProperties(tuple(removed))] if removed else []
    return updates + ([SetProperties(moved)] if moved else [])


class UpdateSchema(PendingUpdate):
    """Pending schema changes for one table (see the module docstring).

    Column names are dotted full names (``"location.lat"``, ``"points.element.x"``; the short
    ``"points.x"`` form works too). Use :meth:`commit`, or the builder as a context manager,
    which commits when the block ends without an error.
    """

    def __init__(
        self,
        transaction: Transaction,
        *,
        case_sensitive: bool = True,
        autocommit: bool = False,
    ) -> None:
        self._tx = transaction
        self._autocommit = autocommit
        self._case_sensitive = case_sensitive
        meta = transaction.metadata
        self._format_version = meta.format_version
        self._schema = meta.current_schema()
        self._last_column_id = meta.last_column_id
        self._index = self._schema.index_by_id()
        self._deletes: set[int] = set()
        self._updates: dict[int, NestedField] = {}
        self._adds: dict[int, list[NestedField]] = {}
        self._added_names: dict[int, dict[str, int]] = {}
        # per struct, its existing fields by (normalised) current name: see `_sibling_id`
        self._existing_names: dict[int, dict[str, int]] = {}
        self._moves: dict[int, list[_Move]] = {}
        self._identifier_names: list[str] | None = None
        self._committed = False

    # ------------------------------------------------------------------ lookups

    def _find(self, name: str) -> NestedField:
        if not isinstance(name, str):
            raise ValidationError(f"a column is named by a string (a.b for nested), got {name!r}")
        fid = self._schema.find_field_id(name, self._case_sensitive)
        if fid is None:
            raise ValidationError(
                f"cannot find column {name!r} in the current schema (id {self._schema.schema_id})"
                + ("" if self._case_sensitive else ", case-insensitive")
            )
        return self._index[fid]

    def _current(self, fid: int) -> NestedField:
        return self._updates.get(fid, self._index[fid])

    def _name_of(self, fid: int) -> str:
        return self._schema.find_column_name(fid) or str(fid)

    def _parent_id(self, fid: int) -> int:
        pid = self._schema.find_parent_id(fid)
        return TABLE_ROOT_ID if pid is None else pid

    def _struct_of(self, parent: NestedField) -> tuple[int, StructType]:
        """The struct new fields go into when ``parent`` is named: a struct itself, a list's
        element or a map's value."""
        t = parent.field_type
        holder = parent
        if isinstance(t, ListType):
            holder = t.element_field
        elif isinstance(t, MapType):
            holder = t.value_field
        if not isinstance(holder.field_type, StructType):
            raise ValidationError(
                f"cannot add a column to {self._name_of(parent.field_id)!r}: "
                f"it is a {parent.field_type}, not a struct"
            )
        return holder.field_id, holder.field_type

    def _sibling_id(self, parent_id: int, name: str) -> int | None:
        """The field named ``name`` (normalised) in the struct ``parent_id`` after the pending
        renames, deletes and additions, if any. The existing fields' names are indexed once
        per struct until a rename or delete, so adding thousands of columns stays linear."""
        added = self._added_names.get(parent_id, {}).get(name)
        if added is not None:
            return added
        existing = self._existing_names.get(parent_id)
        if existing is None:
            if parent_id == TABLE_ROOT_ID:
                fields: Sequence[NestedField] = self._schema.fields
            else:
                t = self._index[parent_id].field_type
                fields = t.fields if isinstance(t, StructType) else ()
            existing = {
                self._norm(self._current(f.field_id).name): f.field_id
                for f in fields
                if f.field_id not in self._deletes
            }
            self._existing_names[parent_id] = existing
        return existing.get(name)

    def _norm(self, name: str) -> str:
        return name if self._case_sensitive else name.lower()

    def _check_not_deleted(self, fid: int, what: str) -> None:
        if fid in self._deletes:
            raise ValidationError(f"cannot {what} column {self._name_of(fid)!r}: it is deleted")

    # ------------------------------------------------------------------ changes

    def add_column(
        self,
        path: str | Sequence[str],
        field_type: IcebergType,
        doc: str | None = None,
        required: bool = False,
        initial_default: Any = None,
        write_default: Any = _UNSET,
    ) -> UpdateSchema:
        """Add a column; ``path`` is a top-level name or a tuple ``(parent..., name)``.

        A dotted string is split into parent and name. ``initial_default`` (the value existing
        rows read) and ``write_default`` (the value writers use when none is given; defaults to
        ``initial_default``) are Python values of the type and need a v3 table. A required
        column needs a non-null ``initial_default``.
        """
        parts = _path(path)
        if len(parts) == 1 and "." in parts[0]:
            parts = tuple(parts[0].split("."))
        name = parts[-1]
        if len(parts) == 1:
            parent_id = TABLE_ROOT_ID
        else:
            parent_field = self._find(".".join(parts[:-1]))
            parent_id, _ = self._struct_of(parent_field)
            self._check_not_deleted(parent_field.field_id, "add to")
            self._check_not_deleted(parent_id, "add to")
        if self._sibling_id(parent_id, self._norm(name)) is not None:
            raise ValidationError(f"cannot add column {'.'.join(parts)!r}: name already exists")
        if not isinstance(field_type, IcebergType):
            raise ValidationError(
                f"column {name!r}: expected an Iceberg type such as icefloe.types.LongType(), "
                f"got {field_type!r}"
            )
        if write_default is _UNSET:
            write_default = initial_default
        new_id = self._next_id()
        fresh = _fresh_type(field_type, self._next_id)
        try:
            init_json = values.to_json(fresh, initial_default)
            write_json = values.to_json(fresh, write_default)
        except ValidationError as e:
            raise ValidationError(f"column {'.'.join(parts)!r}: invalid default ({e})") from None
        f = NestedField(new_id, name, fresh, required, doc, init_json, write_json)
        self._adds.setdefault(parent_id, []).append(f)
        self._added_names.setdefault(parent_id, {})[self._norm(name)] = new_id
        return self

    def _next_id(self) -> int:
        self._last_column_id += 1
        return self._last_column_id

    def delete_column(self, name: str) -> UpdateSchema:
        """Drop a column (and everything nested in it)."""
        f = self._find(name)
        fid = f.field_id
        if fid in self._adds:
            raise ValidationError(f"cannot delete column {name!r}: it has pending additions")
        if fid in self._updates:
            raise ValidationError(f"cannot delete column {name!r}: it has pending updates")
        if any(m.field_id == fid for moves in self._moves.values() for m in moves):
            raise ValidationError(f"cannot delete column {name!r}: it has a pending move")
        self._deletes.add(fid)
        self._existing_names.clear()
        return self

    drop_column = delete_column

    def rename_column(self, name: str, new_name: str) -> UpdateSchema:
        """Rename a column (its id, and so its data, is kept)."""
        f = self._find(name)
        self._check_not_deleted(f.field_id, "rename")
        if not isinstance(new_name, str) or not new_name:
            raise ValidationError(f"cannot rename {name!r}: invalid new name {new_name!r}")
        other = self._sibling_id(self._parent_id(f.field_id), self._norm(new_name))
        if other is not None and other != f.field_id:
            raise ValidationError(f"cannot rename {name!r} to {new_name!r}: name already exists")
        self._updates[f.field_id] = replace(self._current(f.field_id), name=new_name)
        self._existing_names.clear()
        return self

    def update_column(
        self,
        name: str,
        field_type: IcebergType | None = None,
        required: bool | None = None,
        doc: str | None = None,
        write_default: Any = _UNSET,
    ) -> UpdateSchema:
        """Widen a primitive type, make a column optional, change its doc or (v3) write-default.

        Only promotions the spec allows for the table's format version are accepted; a column
        can become optional but not required.
        """
        f = self._find(name)
        fid = f.field_id
        self._check_not_deleted(fid, "update")
        cur = self._current(fid)
        if field_type is not None and not isinstance(field_type, IcebergType):
            raise ValidationError(
                f"column {name!r}: expected an Iceberg type such as icefloe.types.LongType(), "
                f"got {field_type!r}"
            )
        if field_type is not None and field_type != cur.field_type:
            if not isinstance(cur.field_type, PrimitiveType) or not isinstance(
                field_type, PrimitiveType
            ):
                raise ValidationError(
                    f"cannot change column {name!r} from {cur.field_type} to {field_type}: "
                    "only primitive types can be promoted"
                )
            if not can_promote(cur.field_type, field_type, self._format_version):
                raise promotion_refused(name, cur.field_type, field_type, self._format_version)
            cur = replace(
                cur,
                field_type=field_type,
                initial_default=promote_default(cur.initial_default, cur.field_type, field_type),
                write_default=promote_default(cur.write_default, cur.field_type, field_type),
            )
        if required is not None and required != cur.required:
            if required:
                raise ValidationError(
                    f"cannot make column {name!r} required: existing rows may hold nulls"
                )
            cur = replace(cur, required=False)
        if doc is not None:
            cur = replace(cur, doc=doc)
        if write_default is not _UNSET:
            try:
                cur = replace(cur, write_default=values.to_json(cur.field_type, write_default))
            except ValidationError as e:
                raise ValidationError(f"column {name!r}: invalid write-default ({e})") from None
        self._updates[fid] = cur
        return self

    def make_column_optional(self, name: str) -> UpdateSchema:
        """Make a required column optional."""
        return self.update_column(name, required=False)

    def update_column_doc(self, name: str, doc: str) -> UpdateSchema:
        """Set a column's doc string."""
        return self.update_column(name, doc=doc)

    # ------------------------------------------------------------------ moves

    def _move(self, name: str, kind: str, other: str | None) -> UpdateSchema:
        fid = self._resolve_any(name)
        parent = self._parent_of_any(fid)
        other_id = None
        if other is not None:
            other_id = self._resolve_any(other)
            if other_id == fid:
                raise ValidationError(f"cannot move {name!r} {kind} itself")
            if self._parent_of_any(other_id) != parent:
                raise ValidationError(
                    f"cannot move {name!r} {kind} {other!r}: they are in different structs"
                )
        self._moves.setdefault(parent, []).append(_Move(fid, kind, other_id))
        return self

    def _resolve_any(self, name: str) -> int:
        """A column id by name, in the current schema or among the pending additions."""
        if not isinstance(name, str):
            raise ValidationError(f"a column is named by a string (a.b for nested), got {name!r}")
        fid = self._schema.find_field_id(name, self._case_sensitive)
        if fid is not None:
            self._check_not_deleted(fid, "move")
            return fid
        parts = name.rsplit(".", 1)
        if len(parts) == 1:
            parent = TABLE_ROOT_ID
        else:
            parent, _ = self._struct_of(self._find(parts[0]))
        added = self._added_names.get(parent, {}).get(self._norm(parts[-1]))
        if added is None:
            raise ValidationError(f"cannot find column {name!r} to move")
        return added

    def _parent_of_any(self, fid: int) -> int:
        if fid in self._index:
            return self._parent_id(fid)
        for parent, names in self._added_names.items():
            if fid in names.values():
                return parent
        raise ValidationError(f"cannot find column id {fid}")  # pragma: no cover

    def move_first(self, name: str) -> UpdateSchema:
        """Move a column to the start of its struct."""
        return self._move(name, "first", None)

    def move_before(self, name: str, before: str) -> UpdateSchema:
        """Move a column just before another of the same struct."""
        return self._move(name, "before", before)

    def move_after(self, name: str, after: str) -> UpdateSchema:
        """Move a column just after another of the same struct."""
        return self._move(name, "after", after)

    # ------------------------------------------------------------------ identifier fields

    def set_identifier_fields(self, *names: str) -> UpdateSchema:
        """Replace the identifier fields: names in the new schema (or, for columns that were
        renamed, their current names); resolved on commit."""
        self._identifier_names = list(names)
        return self

    # ------------------------------------------------------------------ union by name

    def union_by_name(self, new_schema: Schema | pa.Schema) -> UpdateSchema:
        """Merge a schema into the table's by column name: missing columns are added (as
        optional), existing ones are widened, made optional or get the new doc as needed;
        columns absent from ``new_schema`` are kept. An incompatible type raises."""
        from icefloe.arrow_schema import not_a_schema, to_schema

        other = to_schema(new_schema) if isinstance(new_schema, pa.Schema) else new_schema
        if not isinstance(other, Schema):
            raise ValidationError(
                f"union_by_name needs a Schema or pyarrow.Schema, got {not_a_schema(other)}"
            )
        self._union_struct(other.as_struct(), ())
        return self

    def _is_identifier(self, field_id: int) -> bool:
        """Whether ``field_id`` is an identifier field of the schema being built."""
        if self._identifier_names is None:
            return field_id in self._schema.identifier_field_ids
        return any(
            self._schema.find_field_id(n, self._case_sensitive) == field_id
            for n in self._identifier_names
        )

    def _union_struct(self, struct: StructType, prefix: tuple[str, ...]) -> None:
        # Like the reference's visitor: existing fields (and what they contain) first, then the
        # struct's new fields, so nested additions get their ids before outer ones.
        missing = []
        for f in struct.fields:
            path = (*prefix, f.name)
            existing_id = self._schema.find_field_id(".".join(path), self._case_sensitive)
            if existing_id is None or existing_id in self._deletes:
                missing.append((f, path))
            else:
                self._union_field(f, path, existing_id)
        for f, path in missing:
            self.add_column(path, f.field_type, f.doc, False)

    def _union_field(self, f: NestedField, path: tuple[str, ...], existing_id: int) -> None:
        name = ".".join(path)
        cur = self._current(existing_id)
        t, et = f.field_type, cur.field_type
        if isinstance(t, PrimitiveType) and isinstance(et, PrimitiveType):
            new_type = None if t == et or can_promote(t, et, self._format_version) else t
            # an identifier field stays required (Arrow fields are nullable by default)
            loosen = f.optional and cur.required and not self._is_identifier(existing_id)
            self.update_column(
                name,
                field_type=new_type,
                required=False if loosen else None,
                doc=f.doc if f.doc is not None and f.doc != cur.doc else None,
            )
            return
        if type(t) is not type(et):
            raise ValidationError(
                f"cannot merge column {name!r}: {et} in the table, {t} in the new schema"
            )
        if f.optional and cur.required:
            self.update_column(name, required=False)
        if f.doc is not None and f.doc != cur.doc:
            self.update_column(name, doc=f.doc)
        if isinstance(t, StructType):
            self._union_struct(t, path)
        elif isinstance(t, ListType):
            self._union_child(t.element_field, (*path, "element"))
        elif isinstance(t, MapType):
            assert isinstance(et, MapType)
            if t.key_type != et.key_type and not (
                isinstance(t.key_type, PrimitiveType)
                and can_promote(t.key_type, et.key_type, self._format_version)
            ):
                raise ValidationError(
                    f"cannot merge map {name!r}: key type {et.key_type} differs from "
                    f"{t.key_type} (map keys cannot change)"
                )
            self._union_child(t.value_field, (*path, "value"))

    def _union_child(self, f: NestedField, path: tuple[str, ...]) -> None:
        fid = self._schema.find_field_id(".".join(path), self._case_sensitive)
        if fid is None:  # pragma: no cover - a list or map always has its element / value
            raise ValidationError(f"cannot find {'.'.join(path)!r}")
        self._union_field(f, path, fid)

    # ------------------------------------------------------------------ apply / commit

    def apply(self) -> Schema:
        """The new schema (validated), without committing it."""
        fields = self._apply_struct(self._schema.fields, TABLE_ROOT_ID)
        draft = Schema(*fields)
        ident: list[int] = []
        if self._identifier_names is None:
            for fid in self._schema.identifier_field_ids:
                if fid not in draft.field_ids:
                    raise ValidationError(
                        f"cannot delete identifier field {self._name_of(fid)!r}; to drop it, "
                        "also call set_identifier_fields() without it"
                    )
                ident.append(fid)
        else:
            for n in self._identifier_names:
                found = draft.find_field_id(n, self._case_sensitive)
                if found is None:
                    old = self._schema.find_field_id(n, self._case_sensitive)
                    found = old if old is not None and old in draft.field_ids else None
                if found is None:
                    raise ValidationError(
                        f"cannot set identifier field {n!r}: not found in the new schema"
                    )
                ident.append(found)
        new = Schema(*fields, schema_id=self._schema.schema_id, identifier_field_ids=ident)
        meta = self._tx.metadata
        check_schema_evolution(
            self._schema,
            new,
            self._format_version,
            specs=meta.partition_specs,
            default_spec=meta.spec(),
            sort_order=meta.sort_order(),
            last_column_id=meta.last_column_id,
        )
        # a table another engine nested too deeply may still change without nesting deeper
        deeper = zip(nesting_levels(new), nesting_levels(self._schema), strict=True)
        if any(n > o for n, o in deeper):
            check_nesting(new, "cannot change the schema")
        return new

    def _apply_struct(self, fields: Sequence[NestedField], parent_id: int) -> list[NestedField]:
        out: list[NestedField] = []
        for f in fields:
            if f.field_id in self._deletes:
                continue
            cur = self._current(f.field_id)
            out.append(replace(cur, field_type=self._apply_type(cur.field_type, f.field_id)))
        out.extend(self._adds.get(parent_id, ()))
        for move in self._moves.get(parent_id, ()):
            out = _apply_move(out, move)
        return out

    def _apply_type(self, t: IcebergType, owner_id: int) -> IcebergType:
        if isinstance(t, StructType):
            return StructType(*self._apply_struct(t.fields, owner_id))
        if isinstance(t, ListType):
            el = self._child(t.element_field)
            return ListType(t.element_id, el.field_type, el.required)
        if isinstance(t, MapType):
            val = self._child(t.value_field)
            self._check_key_unchanged(t)
            return MapType(t.key_id, t.key_type, t.value_id, val.field_type, val.required)
        return t

    def _check_key_unchanged(self, t: MapType) -> None:
        """Map keys never change (as Iceberg Java refuses): not deleted, renamed, retyped or
        documented, and nothing inside a struct key added, deleted, renamed or moved."""
        kid = t.key_id
        name = self._name_of(kid)
        if kid in self._deletes:
            raise ValidationError(f"cannot delete map key {name!r}: delete the map instead")
        if kid in self._updates:
            raise ValidationError(f"cannot change map key {name!r}: map keys cannot change")
        if kid in self._adds:
            raise ValidationError(f"cannot add fields to map key {name!r}: map keys cannot change")
        if self._apply_type(t.key_type, kid) != t.key_type:
            raise ValidationError(
                f"cannot change the fields of map key {name!r}: map keys cannot change"
            )

    def _child(self, f: NestedField) -> NestedField:
        if f.field_id in self._deletes:
            raise ValidationError(
                f"cannot delete {self._name_of(f.field_id)!r}: delete its list or map instead"
            )
        cur = self._current(f.field_id)
        return replace(cur, field_type=self._apply_type(cur.field_type, f.field_id))

    def commit(self) -> None:
        """Apply the change to the transaction (and commit it, unless part of a larger one)."""
        if self._committed:
            raise ValidationError("this schema update was already committed")
        self._committed = True
        new = self.apply()
        if not new.same_schema(self._schema):
            updates: list[TableUpdate] = [
                AddSchema(new, self._last_column_id),
                SetCurrentSchema(-1),
            ]
            updates += _mapping_update(self._tx.metadata.properties, new, self._schema)
            updates += _metrics_updates(self._tx.metadata.properties, self._schema, new)
            self._tx.apply(updates)
        if self._autocommit:
            self._tx.commit_transaction()


def _apply_move(fields: list[NestedField], move: _Move) -> list[NestedField]:
    moving = next((f for f in fields if f.field_id == move.field_id), None)
    if moving is None:
        raise ValidationError(f"cannot move column id {move.field_id}: it is gone")
    rest = [f for f in fields if f.field_id != move.field_id]
    if move.kind == "first":
        return [moving, *rest]
    pos = next((i for i, f in enumerate(rest) if f.field_id == move.other_id), None)
    if pos is None:
        raise ValidationError(f"cannot move column id {move.field_id}: reference column is gone")
    if move.kind == "after":
        pos += 1
    return [*rest[:pos], moving, *rest[pos:]]


def _fresh_type(t: IcebergType, next_id: Callable[[], int]) -> IcebergType:
    """``t`` with every nested field renumbered by ``next_id``: a struct's fields first, then
    their children (the reference's order for added columns)."""
    if not isinstance(t, NestedType):
        return t
    if isinstance(t, StructType):
        ids = [next_id() for _ in t.fields]
        return StructType(
            *(
                replace(f, field_id=i, field_type=_fresh_type(f.field_type, next_id))
                for i, f in zip(ids, t.fields, strict=True)
            )
        )
    if isinstance(t, ListType):
        eid = next_id()
        return ListType(eid, _fresh_type(t.element_type, next_id), t.element_required)
    if isinstance(t, MapType):
        kid, vid = next_id(), next_id()
        return MapType(
            kid,
            _fresh_type(t.key_type, next_id),
            vid,
            _fresh_type(t.value_type, next_id),
            t.value_required,
        )
    raise ValidationError(f"cannot add a column of unsupported type {t}")  # pragma: no cover
