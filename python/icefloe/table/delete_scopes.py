"""Which data file a v2 position delete file is scoped to when only its bounds say so.

Iceberg Java and Spark write v2 file-scoped position delete files without
``referenced_data_file``: equal lower and upper bounds of the ``file_path`` column name their one
data file (Java's ``ContentFileUtil.referencedDataFile``). A planned
:class:`~icefloe.scan.tasks.DeleteFileRef` carries no bounds, so the changes that replace or drop
the deletes of one data file (a deletion vector superseding them, a rewrite or removal of the
file) first resolve those files here, from the delete manifests of the snapshot they were
planned from; files whose entries are not found stay unresolved (kept, as partition-scoped).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.io import FileIO
from icefloe.metadata import Snapshot
from icefloe.scan.tasks import DeleteContent, DeleteFileRef
from icefloe.table.producer import DELETED

__all__ = ["resolve_scopes", "unresolved_paths", "with_scopes"]


def unresolved_paths(refs: Iterable[DeleteFileRef]) -> set[str]:
    """Paths of the position delete files (not deletion vectors) of ``refs`` that name no
    ``referenced_data_file``."""
    return {
        d.file_path
        for d in refs
        if d.content is DeleteContent.POSITION_DELETES
        and not d.is_deletion_vector
        and d.referenced_data_file is None
    }


def resolve_scopes(io: FileIO, snapshot: Snapshot | None, paths: set[str]) -> dict[str, str]:
    """``{delete file path: data file path}`` for those of ``paths`` (position delete files
    live in ``snapshot``) whose ``file_path`` bounds are equal."""
    from icefloe.scan.manifests import manifest_entries
    from icefloe.table.overwrite import referenced_file

    if not paths or snapshot is None:
        return {}
    wanted = pa.array(sorted(paths), pa.string())
    named: dict[str, str] = {}
    columns = ["content", "file_path", "referenced_data_file", "lower_bounds", "upper_bounds"]
    for _, batch in manifest_entries(io, snapshot, content=1):
        hit = pc.and_(
            pc.not_equal(batch.column("status"), DELETED),
            pc.is_in(batch.column("file_path").cast(pa.string()), value_set=wanted),
        )
        live = batch.filter(hit)
        for row in live.select([c for c in columns if c in live.schema.names]).to_pylist():
            target = referenced_file(row)
            if target is not None:
                named[row["file_path"]] = target
    return named


def with_scopes(
    refs: Sequence[DeleteFileRef], named: Mapping[str, str]
) -> tuple[DeleteFileRef, ...]:
    """``refs`` with the data file ``named`` gives each unresolved one as its
    ``referenced_data_file``."""
    return tuple(
        replace(d, referenced_data_file=named[d.file_path])
        if d.referenced_data_file is None
        and d.file_path in named
        and d.content is DeleteContent.POSITION_DELETES
        else d
        for d in refs
    )
