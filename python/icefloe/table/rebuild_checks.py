"""Checks a snapshot producer makes when it builds again on a newer table (after losing a
commit race): the files it wrote must still be readable, and in a form the table now takes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.evolution import can_promote
from icefloe.exceptions import CommitConflictError
from icefloe.metadata import TableMetadata

if TYPE_CHECKING:
    from icefloe.schema import Schema
    from icefloe.types import IcebergType
    from icefloe.write.files import DataFile

__all__ = ["check_delete_formats", "check_written_types"]


def check_written_types(written: Schema | None, adds_files: bool, metadata: TableMetadata) -> None:
    """On a rebuild: the files a change adds were written with ``written``, the schema of its
    first build. When another writer's commit (a table replace) has since given one of their
    field ids a type they cannot be read as (other than a promotion the spec allows), the
    snapshot would make the table unreadable: :class:`CommitConflictError`."""
    if written is None or metadata.current_schema_id == written.schema_id or not adds_files:
        return
    now = metadata.current_schema().index_by_id()
    for field_id, old in written.index_by_id().items():
        new = now.get(field_id)
        if new is None or _readable_as(old.field_type, new.field_type, metadata):
            continue
        name = written.find_column_name(field_id)
        raise CommitConflictError(
            f"the table's schema changed while this change was committed (another "
            f"writer's commit): column {name!r} (id {field_id}), written as "
            f"{old.field_type}, is {new.field_type} now, which its files cannot be read as"
        )


def check_delete_formats(
    added_deletes: Sequence[DataFile],
    entry_batches: Sequence[tuple[int, int, pa.RecordBatch]],
    metadata: TableMetadata,
) -> None:
    """A v3 table takes deletion vectors only: position delete files written for the v2
    state the change was planned on (before a concurrent upgrade) are refused."""
    if metadata.format_version < 3:
        return
    old = [
        f.file_path for f in added_deletes if f.content == 1 and f.file_format.upper() != "PUFFIN"
    ]
    for content, _, batch in entry_batches:
        if content == 1:
            fmt = pc.utf8_upper(batch.column("file_format").cast(pa.string()))
            hit = batch.filter(pc.not_equal(fmt, "PUFFIN")).column("file_path")
            old += [str(x) for x in hit.to_pylist()]
    if old:
        raise CommitConflictError(
            f"position delete file {old[0]} was written for format version 2, but a "
            "concurrent commit upgraded the table to version 3, which takes deletion "
            "vectors only: make the change again"
        )


def _readable_as(old: IcebergType, new: IcebergType, metadata: TableMetadata) -> bool:
    """Whether values written as ``old`` read as ``new``: the same kind of nested type (whose
    fields are compared by their own ids), or a primitive the spec promotes."""
    if old.is_primitive or new.is_primitive:
        return (
            old.is_primitive and new.is_primitive and can_promote(old, new, metadata.format_version)
        )
    return type(old) is type(new)
