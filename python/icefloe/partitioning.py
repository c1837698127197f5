"""Partition specs (spec "Partitioning", "Partition Evolution", Appendix C "Partition Specs").

A :class:`PartitionSpec` is a ``spec_id`` and a tuple of :class:`PartitionField`. Each field has a
source column id (or, in v3, several ``source_ids`` for a multi-argument transform), a partition
field id (unique in the spec; in v1 assigned from 1000 when absent), a transform and a name.
Transforms this version does not know are kept (:class:`~icefloe.transforms.UnknownTransform`)
and written back unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.exceptions import ValidationError
from icefloe.schema import Schema, transform_source
from icefloe.transforms import Transform, parse_transform
from icefloe.types import (
    IcebergType,
    NestedField,
    StructType,
    UnknownType,
)

__all__ = [
    "PARTITION_FIELD_ID_START",
    "UNPARTITIONED_PARTITION_SPEC",
    "PartitionField",
    "PartitionSpec",
    "assign_partition_field_ids",
    "find_source_field",
    "partition_source_schema",
]

#: The first partition field id (the reference assigns ids sequentially from here).
PARTITION_FIELD_ID_START = 1000


@dataclass(frozen=True)
class PartitionField:
    """One field of a partition spec.

    ``source_ids`` is set only for multi-argument transforms (v3); then ``source_id`` is its
    first element. A one-element ``source_ids`` is normalised to ``source_id``, as the reference
    writes ``source-id`` for single-argument transforms.
    """

    source_id: int
    field_id: int
    transform: Transform
    name: str
    source_ids: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        _check_int(self.source_id, "partition field source-id")
        _check_int(self.field_id, "partition field field-id")
        if not isinstance(self.transform, Transform):
            raise ValidationError(f"partition field transform must be a Transform: {self!r}")
        if not isinstance(self.name, str) or not self.name:
            raise ValidationError(f"partition field name must be a non-empty string: {self!r}")
        if self.source_ids is not None:
            ids = tuple(self.source_ids)
            if not ids:
                raise ValidationError(f"partition field {self.name!r} has empty source-ids")
            for i in ids:
                _check_int(i, f"source-ids of partition field {self.name!r}")
            if ids[0] != self.source_id:
                raise ValidationError(
                    f"partition field {self.name!r}: source-id {self.source_id} must be the "
                    f"first of source-ids {list(ids)}"
                )
            object.__setattr__(self, "source_ids", ids if len(ids) > 1 else None)

    @property
    def all_source_ids(self) -> tuple[int, ...]:
        """Every source column id (one for single-argument transforms)."""
        return self.source_ids if self.source_ids is not None else (self.source_id,)

    def to_json(self) -> dict[str, Any]:
        """Appendix C form in the reference's key order: name, transform, source id(s), id."""
        out: dict[str, Any] = {"name": self.name, "transform": str(self.transform)}
        if self.source_ids is not None:
            out["source-ids"] = list(self.source_ids)
        else:
            out["source-id"] = self.source_id
        out["field-id"] = self.field_id
        return out

    @staticmethod
    def from_json(obj: Any, field_id: int | None = None) -> PartitionField:
        """Parses one partition field; ``field_id`` is used when the JSON has none (v1)."""
        if not isinstance(obj, dict):
            raise ValidationError(f"a partition field must be a JSON object, got {obj!r}")
        for key in ("name", "transform"):
            if key not in obj:
                raise ValidationError(f"partition field is missing {key!r}: {obj!r}")
        source_ids: tuple[int, ...] | None = None
        if obj.get("source-ids") is not None:
            raw = obj["source-ids"]
            if not isinstance(raw, list):
                raise ValidationError(f"partition field source-ids must be a list: {obj!r}")
            source_ids = tuple(raw)
            if not source_ids:
                raise ValidationError(f"partition field has empty source-ids: {obj!r}")
            source_id = source_ids[0]
        elif "source-id" in obj:
            source_id = obj["source-id"]
        else:
            raise ValidationError(f"partition field is missing 'source-id': {obj!r}")
        fid = obj.get("field-id", field_id)
        if fid is None:
            raise ValidationError(f"partition field is missing 'field-id': {obj!r}")
        transform = obj["transform"]
        if not isinstance(transform, str):
            raise ValidationError(f"partition field transform must be a string: {obj!r}")
        return PartitionField(source_id, fid, parse_transform(transform), obj["name"], source_ids)

    def __str__(self) -> str:
        src = ",".join(str(i) for i in self.all_source_ids)
        return f"{self.field_id}: {self.name}: {self.transform}({src})"


class PartitionSpec:
    """A partition spec: ``spec_id`` and the partition fields in order."""

    __slots__ = ("_fields", "_spec_id")

    def __init__(self, *fields: PartitionField, spec_id: int = 0) -> None:
        _check_int(spec_id, "spec-id")
        ids: set[int] = set()
        names: set[str] = set()
        for f in fields:
            if not isinstance(f, PartitionField):
                raise ValidationError(f"partition spec fields must be PartitionField, got {f!r}")
            if f.field_id in ids:
                raise ValidationError(
                    f"partition spec {spec_id}: field id {f.field_id} is used more than once"
                )
            if f.name in names:
                raise ValidationError(
                    f"partition spec {spec_id}: partition name {f.name!r} is used more than once"
                )
            ids.add(f.field_id)
            names.add(f.name)
        self._fields: tuple[PartitionField, ...] = tuple(fields)
        self._spec_id = spec_id

    @property
    def fields(self) -> tuple[PartitionField, ...]:
        return self._fields

    @property
    def spec_id(self) -> int:
        return self._spec_id

    @property
    def is_unpartitioned(self) -> bool:
        """True with no fields or only ``void`` fields (the reference's definition)."""
        return all(f.transform.is_void for f in self._fields)

    @property
    def is_partitioned(self) -> bool:
        return not self.is_unpartitioned

    @property
    def last_assigned_field_id(self) -> int:
        """The highest partition field id (999 when there are no fields)."""
        return max((f.field_id for f in self._fields), default=PARTITION_FIELD_ID_START - 1)

    def field_by_id(self, field_id: int) -> PartitionField | None:
        return next((f for f in self._fields if f.field_id == field_id), None)

    def fields_by_source_id(self, source_id: int) -> list[PartitionField]:
        """The partition fields derived from column ``source_id`` (any of their sources)."""
        return [f for f in self._fields if source_id in f.all_source_ids]

    @property
    def source_ids(self) -> frozenset[int]:
        """Every column id any partition field reads."""
        return frozenset(i for f in self._fields for i in f.all_source_ids)

    def partition_type(self, schema: Schema, history: Sequence[Schema] = ()) -> StructType:
        """The partition tuple's struct type: one optional field per partition field, with the
        partition field id, its name and the transform's result type. A source column dropped
        from ``schema`` is typed from the newest schema of ``history`` (the table's schemas, in
        metadata order) that has it, else ``unknown``; unknown transforms give the reference's
        opaque result type."""
        out: list[NestedField] = []
        for f in self._fields:
            source = find_source_field(f.source_id, schema, history)
            result: IcebergType = (
                UnknownType() if source is None else f.transform.result_type(source.field_type)
            )
            out.append(NestedField(f.field_id, f.name, result, required=False))
        return StructType(*out)

    def validate(self, schema: Schema) -> None:
        """Checks the spec against ``schema`` as a writer must: every source column exists, is
        primitive, is not inside a list or map, and suits its transform (unknown and void
        transforms are exempt from the type check); no field takes the name of a column other
        than its source (Iceberg Java refuses such metadata)."""
        for f in self._fields:
            named = schema.find_field_id(f.name)
            if named is not None and named not in f.all_source_ids:
                raise ValidationError(
                    f"cannot name partition field {f.name!r} ({f.transform}): it is the name "
                    f"of another column (id {named})"
                )
            _check_sources(f, schema)

    def check_compatible(self, schema: Schema) -> None:
        """Checks the spec can still be written under ``schema``, as every commit checks the
        table's default spec against its current schema: the source columns of all fields but
        ``void`` ones exist, are primitive, are not inside a list or map and suit their
        transform."""
        for f in self._fields:
            if not f.transform.is_void:
                _check_sources(f, schema)

    def equivalent(self, other: PartitionSpec) -> bool:
        """The spec's equivalence: same number of fields and, pairwise, the same source ids,
        transform and name (field ids and spec ids are not compared)."""
        return len(self._fields) == len(other._fields) and all(
            a.all_source_ids == b.all_source_ids and a.transform == b.transform and a.name == b.name
            for a, b in zip(self._fields, other._fields, strict=True)
        )

    # ----------------------------------------------------------------------------- JSON

    def fields_json(self) -> list[dict[str, Any]]:
        """The bare field list (v1 ``partition-spec``, manifest metadata)."""
        return [f.to_json() for f in self._fields]

    def to_json(self) -> dict[str, Any]:
        return {"spec-id": self._spec_id, "fields": self.fields_json()}

    @staticmethod
    def fields_from_json(obj: Any, spec_id: int = 0) -> PartitionSpec:
        """Parses a bare field list; fields without ``field-id`` get ids after the highest so
        far, starting at 1000 (the v1 convention)."""
        if not isinstance(obj, list):
            raise ValidationError(f"partition spec fields must be a JSON list, got {obj!r}")
        fields: list[PartitionField] = []
        last = PARTITION_FIELD_ID_START - 1
        for item in obj:
            f = PartitionField.from_json(item, field_id=last + 1)
            last = max(last, f.field_id)
            fields.append(f)
        return PartitionSpec(*fields, spec_id=spec_id)

    @staticmethod
    def from_json(obj: Any) -> PartitionSpec:
        if not isinstance(obj, dict):
            raise ValidationError(f"a partition spec must be a JSON object, got {obj!r}")
        if "spec-id" not in obj:
            raise ValidationError(f"partition spec is missing 'spec-id': {obj!r}")
        if "fields" not in obj:
            raise ValidationError(f"partition spec is missing 'fields': {obj!r}")
        return PartitionSpec.fields_from_json(obj["fields"], spec_id=obj["spec-id"])

    # ----------------------------------------------------------------------------- dunder

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartitionSpec):
            return NotImplemented
        return self._spec_id == other._spec_id and self._fields == other._fields

    def __hash__(self) -> int:
        return hash((self._spec_id, self._fields))

    def __len__(self) -> int:
        return len(self._fields)

    def __iter__(self) -> Any:
        return iter(self._fields)

    def __str__(self) -> str:
        if not self._fields:
            return f"[spec {self._spec_id}: unpartitioned]"
        inner = "\n".join(f"  {f}" for f in self._fields)
        return f"[spec {self._spec_id}:\n{inner}\n]"

    def __repr__(self) -> str:
        fields = ", ".join(repr(f) for f in self._fields)
        sep = ", " if fields else ""
        return f"PartitionSpec({fields}{sep}spec_id={self._spec_id})"


def assign_partition_field_ids(
    fields: Iterable[tuple[Sequence[int], Transform, str]],
    existing_specs: Iterable[PartitionSpec],
    last_partition_id: int,
    spec_id: int = 0,
) -> PartitionSpec:
    """Builds a spec from ``(source_ids, transform, name)`` triples, reusing the field id of an
    equivalent field (same sources and transform) in ``existing_specs`` as the spec requires and
    assigning new ids after ``last_partition_id`` otherwise."""
    reuse: dict[tuple[tuple[int, ...], str], int] = {}
    for spec in existing_specs:
        for f in spec.fields:
            reuse.setdefault((f.all_source_ids, str(f.transform)), f.field_id)
    out: list[PartitionField] = []
    last = max(last_partition_id, PARTITION_FIELD_ID_START - 1)
    for sources, transform, name in fields:
        ids = tuple(sources)
        if not ids:
            raise ValidationError(f"partition field {name!r} needs at least one source column")
        fid = reuse.get((ids, str(transform)))
        if fid is None or any(fid == f.field_id for f in out):
            last += 1
            fid = last
        out.append(PartitionField(ids[0], fid, transform, name, ids if len(ids) > 1 else None))
    return PartitionSpec(*out, spec_id=spec_id)


def _check_int(v: Any, what: str) -> None:
    """``v`` must be an int that fits 32 bits (Java reads partition ids with ``getInt``)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValidationError(f"{what} must be an int, got {v!r}")
    if not -(2**31) <= v < 2**31:
        raise ValidationError(f"{what} is out of range for a 32-bit int: {v}")


#: The spec with no fields, id 0.
UNPARTITIONED_PARTITION_SPEC = PartitionSpec(spec_id=0)


def find_source_field(
    source_id: int, schema: Schema, history: Sequence[Schema] = ()
) -> NestedField | None:
    """The column ``source_id`` in ``schema``, else in the newest schema of ``history`` (in
    metadata order) that has it: field ids are never reused, so a column dropped since a spec
    was defined keeps its type there. None when no schema has it."""
    for s in (schema, *reversed(history)):
        found = s.index_by_id().get(source_id)
        if found is not None:
            return found
    return None


def partition_source_schema(
    spec: PartitionSpec, schema: Schema, history: Sequence[Schema] = ()
) -> Schema:
    """``schema`` with the source columns of ``spec`` it no longer has (dropped after the spec
    was replaced) appended as optional top-level columns typed from ``history`` (see
    :func:`find_source_field`), so a manifest of ``spec`` written under it keeps the partition
    type of its older manifests rather than ``unknown``. An appended column whose name is taken
    is named ``<name>_<field id>``. ``schema`` itself when nothing is missing or found."""
    have = schema.index_by_id()
    taken = {f.name for f in schema.fields}
    extra: list[NestedField] = []
    for sid in sorted(spec.source_ids - have.keys()):
        old = find_source_field(sid, schema, history)
        if old is None:
            continue
        name = old.name
        while name in taken:
            name = f"{name}_{sid}"
        taken.add(name)
        extra.append(NestedField(sid, name, old.field_type, required=False, doc=old.doc))
    if not extra:
        return schema
    return Schema(
        *schema.fields,
        *extra,
        schema_id=schema.schema_id,
        identifier_field_ids=schema.identifier_field_ids,
    )


def _check_sources(f: PartitionField, schema: Schema) -> None:
    """Raises unless every source column of ``f`` is in ``schema``, primitive, outside lists and
    maps, and (single-argument, known, non-void transforms) of a type the transform accepts."""
    for sid in f.all_source_ids:
        source = transform_source(schema, sid, "partition", f"partition field {f.name!r}")
        if (
            f.source_ids is None
            and not f.transform.is_unknown
            and not f.transform.is_void
            and not f.transform.can_transform(source.field_type)
        ):
            raise ValidationError(
                f"invalid source type {source.field_type} for transform {f.transform} "
                f"in partition field {f.name!r}"
            )
