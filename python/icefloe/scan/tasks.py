"""Scan tasks: the plain, picklable values a scan planner hands to the reader.

A :class:`FileScanTask` names one data file (or a byte-range split of it), the delete files
that apply to it (the planner has already matched them by partition, sequence number and
referenced data file) and the residual filter still to apply to its rows. :class:`ReadOptions`
describes what to produce: the table schema, the projected field ids, the partition specs
(identity-partition values fill columns a data file lacks), the name mapping for files without
field ids, case sensitivity and the metadata columns requested (by name, see
:data:`METADATA_COLUMNS`).

:class:`DataFileRef` and :class:`FileScanTask` are frozen classes of the Rust extension (a plan
makes one of each per data file, so they must be cheap to create); they compare, hash, print
and pickle by value like the frozen dataclasses they replaced, and :func:`replace_task` (or
``copy.replace`` on Python 3.13+) makes a changed copy. Bad field values raise
:class:`~icefloe.exceptions.ValidationError`.

Partition values are tuples in spec order, in the Python representation of
:mod:`icefloe.values` (``int`` day/microsecond counts are accepted for dates and timestamps).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from icefloe._native import DataFileRef, FileScanTask
from icefloe.exceptions import IcebergError, ValidationError
from icefloe.name_mapping import NameMapping
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema
from icefloe.types import (
    BooleanType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
)

__all__ = [
    "DELETED",
    "FILE",
    "LAST_UPDATED_SEQUENCE_NUMBER",
    "METADATA_COLUMNS",
    "PARTITION",
    "POS",
    "ROW_ID",
    "SPEC_ID",
    "DataFileRef",
    "DeleteContent",
    "DeleteFileRef",
    "FileScanTask",
    "ReadOptions",
    "metadata_field",
    "partition_field_names",
    "replace_task",
    "union_partition_type",
]

_MAX = 2**31 - 1

#: Reserved field ids of the metadata columns (spec "Reserved Field IDs").
FILE = "_file"
POS = "_pos"
DELETED = "_deleted"
SPEC_ID = "_spec_id"
PARTITION = "_partition"
ROW_ID = "_row_id"
LAST_UPDATED_SEQUENCE_NUMBER = "_last_updated_sequence_number"

METADATA_COLUMNS: dict[str, int] = {
    FILE: _MAX - 1,
    POS: _MAX - 2,
    DELETED: _MAX - 3,
    SPEC_ID: _MAX - 4,
    PARTITION: _MAX - 5,
    ROW_ID: _MAX - 107,
    LAST_UPDATED_SEQUENCE_NUMBER: _MAX - 108,
}
"""Metadata column name -> reserved field id."""

#: Field ids of the ``file_path`` and ``pos`` columns of position delete files.
DELETE_FILE_PATH_ID = _MAX - 101
DELETE_FILE_POS_ID = _MAX - 102

_METADATA_TYPES: dict[str, IcebergType] = {
    FILE: StringType(),
    POS: LongType(),
    DELETED: BooleanType(),
    SPEC_ID: IntegerType(),
    ROW_ID: LongType(),
    LAST_UPDATED_SEQUENCE_NUMBER: LongType(),
}


def metadata_field(name: str, partition_type: IcebergType | None = None) -> NestedField:
    """The :class:`NestedField` of metadata column ``name`` (``_partition`` needs its type)."""
    if name not in METADATA_COLUMNS:
        raise ValidationError(
            f"unknown metadata column {name!r}; known: {', '.join(METADATA_COLUMNS)}"
        )
    if name == PARTITION:
        if partition_type is None:
            raise ValidationError("the _partition metadata column needs a partition type")
        return NestedField(METADATA_COLUMNS[name], name, partition_type, required=False)
    required = name in (FILE, POS, SPEC_ID, DELETED)
    return NestedField(METADATA_COLUMNS[name], name, _METADATA_TYPES[name], required=required)


class DeleteContent(str, Enum):
    """The content of a delete file."""

    POSITION_DELETES = "position-deletes"
    EQUALITY_DELETES = "equality-deletes"


@dataclass(frozen=True)
class DeleteFileRef:
    """A delete file that applies to a task's data file.

    A deletion vector is a ``position-deletes`` file in ``puffin`` format whose blob sits at
    ``content_offset`` / ``content_size_in_bytes``; its ``record_count`` is the DV's cardinality.
    """

    content: DeleteContent
    file_path: str
    file_format: str = "parquet"
    record_count: int = 0
    file_size_in_bytes: int = 0
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None
    equality_ids: tuple[int, ...] = ()
    data_sequence_number: int | None = None
    spec_id: int = 0
    partition: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        content: Any = self.content  # a plain string is accepted too
        object.__setattr__(self, "content", DeleteContent(content))
        object.__setattr__(self, "file_format", self.file_format.lower())
        object.__setattr__(self, "equality_ids", tuple(self.equality_ids))
        if self.content is DeleteContent.EQUALITY_DELETES and not self.equality_ids:
            raise ValidationError(f"equality delete file {self.file_path} has no equality_ids")
        if self.is_deletion_vector and (
            self.content_offset is None or self.content_size_in_bytes is None
        ):
            raise ValidationError(
                f"deletion vector {self.file_path} needs content_offset and content_size_in_bytes"
            )

    @property
    def is_deletion_vector(self) -> bool:
        """True for a deletion vector (a position delete blob in a Puffin file)."""
        return self.content is DeleteContent.POSITION_DELETES and self.file_format == "puffin"


def replace_task(task: FileScanTask, **changes: Any) -> FileScanTask:
    """A copy of ``task`` with the given fields changed (what ``dataclasses.replace`` did
    when the task classes were dataclasses; ``task.__replace__`` backs ``copy.replace``)."""
    return task.__replace__(**changes)


@dataclass(frozen=True)
class ReadOptions:
    """What the reader produces.

    ``projected_field_ids`` are field ids of ``schema`` (top-level or nested: a nested id keeps
    its ancestors); ``None`` projects every column. ``metadata_columns`` are names from
    :data:`METADATA_COLUMNS`, appended after the data columns in the order given.
    ``partition_type`` fixes the type of ``_partition`` (a planner passes the union over specs);
    by default it is the task spec's partition type. ``schemas`` are the table's schemas (its
    metadata's ``schemas``): an equality delete on a field that ``schema`` no longer has (a
    dropped column, or a dropped field of a struct) takes the field's type and initial default
    from the newest of them holding it, and still applies.
    """

    schema: Schema
    projected_field_ids: tuple[int, ...] | None = None
    specs: Mapping[int, PartitionSpec] = field(default_factory=dict)
    name_mapping: NameMapping | None = None
    case_sensitive: bool = True
    metadata_columns: tuple[str, ...] = ()
    partition_type: IcebergType | None = None
    format_version: int = 2
    schemas: tuple[Schema, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "schemas", tuple(self.schemas))
        if self.projected_field_ids is not None:
            object.__setattr__(self, "projected_field_ids", tuple(self.projected_field_ids))
            ids = self.schema.field_ids
            missing = [i for i in self.projected_field_ids if i not in ids]
            if missing:
                raise ValidationError(f"projected field ids {missing} are not in the schema")
        object.__setattr__(self, "metadata_columns", tuple(self.metadata_columns))
        for name in self.metadata_columns:
            if name not in METADATA_COLUMNS:
                raise ValidationError(f"unknown metadata column {name!r}")
        object.__setattr__(self, "specs", dict(self.specs))

    def projected_schema(self) -> Schema:
        """The table schema pruned to the projected field ids (data columns only)."""
        if self.projected_field_ids is None:
            return self.schema
        names = [self.schema.find_column_name(i) for i in self.projected_field_ids]
        return self.schema.select(*[n for n in names if n is not None])


def partition_field_names(
    specs: Iterable[PartitionSpec], field_ids: Collection[int] | None = None
) -> dict[int, str]:
    """The names of the partition fields of ``specs`` (only ``field_ids``, if given) in one
    struct over all of them, by field id.

    As Iceberg Java's ``Partitioning.partitionType``, each field is named as in the newest spec
    (highest spec id) having it, so a rename shows. A name two field ids share (a v2 table that
    removed a field and gave a new one its name) stays with the field of the newest spec (then
    the highest field id); the others become ``<name>_<field id>``, the name Java's spec update
    gives the old field when a new one takes its name (Java's ``partitionType`` itself leaves
    the clash, and its struct then fails a lookup by name)."""
    newest: dict[int, tuple[int, str]] = {}  # field id -> (newest spec id having it, its name)
    for spec in specs:
        for pf in spec.fields:
            if field_ids is not None and pf.field_id not in field_ids:
                continue
            seen = newest.get(pf.field_id)
            if seen is None or spec.spec_id > seen[0]:
                newest[pf.field_id] = (spec.spec_id, pf.name)
    owner = {
        name: fid for fid, (_, name) in sorted(newest.items(), key=lambda kv: (kv[1][0], kv[0]))
    }
    names = {fid: name for fid, (_, name) in newest.items()}
    taken = set(owner)
    for fid in sorted(names):
        if owner[names[fid]] != fid:
            name = f"{names[fid]}_{fid}"
            while name in taken:
                name = f"{name}_{fid}"
            taken.add(name)
            names[fid] = name
    return names


def union_partition_type(schema: Schema, specs: Mapping[int, PartitionSpec]) -> StructType:
    """The type of ``_partition`` over every spec, as Iceberg Java's
    ``Partitioning.partitionType``: each partition field once, in field id order, named by
    :func:`partition_field_names`, typed against ``schema`` (the scanned snapshot's: a column
    dropped since keeps its partition values) by the newest spec where it is not ``void`` (a v1
    table keeps a removed field as ``void``, whose result type is not what older files hold); a
    spec that cannot be typed contributes nothing."""
    types: dict[int, tuple[bool, IcebergType]] = {}  # field id -> (from a void, type)
    typed: list[PartitionSpec] = []
    for spec_id in sorted(specs, reverse=True):
        spec = specs[spec_id]
        try:
            ptype = spec.partition_type(schema)
        except IcebergError:
            continue
        typed.append(spec)
        for pf, f in zip(spec.fields, ptype.fields, strict=True):
            seen = types.get(f.field_id)
            if seen is None or (seen[0] and not pf.transform.is_void):
                types[f.field_id] = (pf.transform.is_void, f.field_type)
    names = partition_field_names(typed)
    return StructType(
        *(NestedField(fid, names[fid], types[fid][1], required=False) for fid in sorted(types))
    )
