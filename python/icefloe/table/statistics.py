"""Table statistics: ``compute_statistics`` builds a theta sketch of each column's distinct
values over a snapshot's live rows (deletes applied), writes them as a Puffin file
(:mod:`icefloe.write.statistics`) and commits ``set-statistics`` for that snapshot, replacing
any older file of the same snapshot. ``ndvs`` reads the per-column counts back (named by the
current schema), from icefloe's files or any other writer's (Spark's ``compute_table_stats``,
Trino's ``ANALYZE``).

As in Iceberg Java, the default columns are the snapshot schema's top-level primitive columns;
an explicit list may name nested struct fields. Lists, maps, variant and geo columns have no
sketch. uuid values are fed as their 16 bytes, as the spec says (Spark feeds its 36-character
text form, so its uuid sketch bytes differ; the counts agree).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from icefloe._native import ThetaSketch, theta_sketch_estimate
from icefloe.exceptions import NoSuchSnapshotError, ValidationError
from icefloe.io import FileIO
from icefloe.metadata import SetStatistics, StatisticsFile, TableMetadata
from icefloe.schema import Schema
from icefloe.types import (
    GeographyType,
    GeometryType,
    IcebergType,
    StructType,
    UnknownType,
    VariantType,
)
from icefloe.values import snapshot_id_arg
from icefloe.write.statistics import THETA_SKETCH_V1, check_codec, write_statistics_file

if TYPE_CHECKING:
    from icefloe.table.scan import TableScan
    from icefloe.table.transaction import Transaction

__all__ = [
    "Sketcher",
    "StatisticsStatus",
    "column_paths",
    "compute_sketches",
    "compute_statistics",
    "leaf_values",
    "ndvs",
    "sketch_scan",
    "statistics_file_for",
    "statistics_status",
]

_NO_SKETCH = (UnknownType, VariantType, GeometryType, GeographyType)


def _sketchable(t: IcebergType) -> bool:
    return t.is_primitive and not isinstance(t, _NO_SKETCH)


def check_optional_snapshot_id(snapshot_id: object) -> int | None:
    """``snapshot_id`` as a Python ``int`` (numpy integers too) or None; a
    :class:`ValidationError` for anything else."""
    return None if snapshot_id is None else snapshot_id_arg(snapshot_id)


def _snapshot_schema(metadata: TableMetadata, snapshot_id: int | None) -> tuple[int, int, Schema]:
    """(snapshot id, sequence number, schema) of the chosen snapshot (default: current)."""
    snapshot_id = check_optional_snapshot_id(snapshot_id)
    snap = (
        metadata.current_snapshot() if snapshot_id is None else metadata.snapshot_by_id(snapshot_id)
    )
    if snap is None:
        if snapshot_id is None:
            raise ValidationError("the table has no snapshot to compute statistics for")
        raise NoSuchSnapshotError(f"no snapshot with id {snapshot_id}")
    schema = None
    if snap.schema_id is not None:
        schema = metadata.schema_by_id(snap.schema_id)
    return snap.snapshot_id, snap.sequence_number, schema or metadata.current_schema()


def _columns(schema: Schema, columns: Sequence[str] | None) -> dict[str, int]:
    """Column name -> field id of the columns to sketch."""
    if columns is None:
        out = {f.name: f.field_id for f in schema.fields if _sketchable(f.field_type)}
        columns = ()
    elif isinstance(columns, str):
        columns = [columns]
        out = {}
    elif isinstance(columns, bytes | bytearray) or not isinstance(columns, Iterable):  # type: ignore[unreachable]
        raise ValidationError(
            f"columns must be a column name or a sequence of names, got {columns!r}"
        )
    else:
        out = {}
    for name in columns:
        if not isinstance(name, str):
            raise ValidationError(f"columns must be names (strings), got {name!r}")
        field = schema.find_field(name)
        ancestors = schema.ancestors(field.field_id)
        if not _sketchable(field.field_type) or any(
            not isinstance(a.field_type, StructType) for a in ancestors
        ):
            raise ValidationError(
                f"column {name!r} of type {field.field_type} has no theta sketch: only primitive "
                "columns and struct fields (not list, map, variant or geo values) do"
            )
        out[name] = field.field_id
    if not out:
        raise ValidationError("no columns to compute statistics for")
    return out


def leaf_values(batch: pa.RecordBatch, path: list[str]) -> pa.Array:
    """The values of a (possibly nested) column; a null parent struct makes the value null."""
    arr: pa.Array = batch.column(path[0])
    for name in path[1:]:
        arr = pc.struct_field(arr, [arr.type.get_field_index(name)])
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    return arr


#: Builds one sketch per field id: (io, metadata, snapshot id, schema, column name -> field id).
Sketcher = Callable[[FileIO, TableMetadata, int, Schema, dict[str, int]], dict[int, ThetaSketch]]


def sketch_scan(
    io: FileIO, metadata: TableMetadata, snapshot_id: int, schema: Schema, names: dict[str, int]
) -> TableScan:
    """The scan whose rows the sketches of ``names`` (field ids of ``schema``) are built from
    (live rows, the top-level columns holding them)."""
    from icefloe.table.scan import TableScan

    source = types.SimpleNamespace(metadata=metadata, io=io)
    tops = tuple(dict.fromkeys(column_paths(schema, names)[fid][0] for fid in names.values()))
    return TableScan(source, selected_fields=tops, snapshot_id=snapshot_id)


def column_paths(schema: Schema, names: dict[str, int]) -> dict[int, list[str]]:
    """Field id -> the path of names leading to its values in a scan batch (by the fields
    enclosing it: names may hold dots)."""
    return {
        fid: [f.name for f in schema.ancestors(fid)] + [schema.find_field(fid).name]
        for fid in names.values()
    }


def compute_sketches(
    io: FileIO, metadata: TableMetadata, snapshot_id: int, schema: Schema, names: dict[str, int]
) -> dict[int, ThetaSketch]:
    """One sketch per field id over the snapshot's live rows, built batch by batch in Rust."""
    scan = sketch_scan(io, metadata, snapshot_id, schema, names)
    paths = column_paths(schema, names)
    sketches = {fid: ThetaSketch() for fid in names.values()}
    for batch in scan.to_batches():
        for fid, sketch in sketches.items():
            sketch.update(leaf_values(batch, paths[fid]))
    return sketches


def compute_statistics(
    tx: Transaction,
    columns: Sequence[str] | None = None,
    snapshot_id: int | None = None,
    compression_codec: str | None = "zstd",
    sketcher: Sketcher = compute_sketches,
) -> StatisticsFile:
    """Sketch ``columns`` over the live rows of ``snapshot_id`` (default: current), write the
    Puffin file and add ``set-statistics`` to ``tx``. Returns the new file's entry.
    ``sketcher`` builds the sketches (here, or distributed: :mod:`icefloe.spark.statistics`)."""
    check_codec(compression_codec)
    metadata = tx.metadata
    sid, seq, schema = _snapshot_schema(metadata, snapshot_id)
    names = _columns(schema, columns)
    io = tx.table.io
    sketches = sketcher(io, metadata, sid, schema, names)
    stats = write_statistics_file(
        io,
        metadata.location,
        metadata.properties,
        sid,
        seq,
        sketches,
        compression_codec=compression_codec,
    )
    try:
        tx.apply([SetStatistics(stats)])
    except BaseException:
        io.delete_quietly(stats.statistics_path)
        raise
    tx._own_file(stats.statistics_path)  # deleted if the transaction fails to commit
    return stats


def statistics_file_for(metadata: TableMetadata, snapshot_id: int) -> StatisticsFile | None:
    """The statistics file registered for ``snapshot_id``, if any."""
    for s in metadata.statistics:
        if s.snapshot_id == snapshot_id:
            return s
    return None


def ndvs(io: FileIO, metadata: TableMetadata, snapshot_id: int | None = None) -> dict[str, int]:
    """Column name -> distinct-value count from the statistics file of ``snapshot_id``
    (default: current); empty when that snapshot has none.

    A count belongs to the field id its blob names; it is keyed by that field's name in the
    table's *current* schema, whatever the snapshot's schema called it (a renamed column's
    count follows the rename). Counts of fields dropped since are left out, so a column
    dropped and added again under the same name (a new field id) has none. :func:`ndvs_by_id`
    gives every count by field id."""
    schema = metadata.current_schema()
    out: dict[str, int] = {}
    for fid, ndv in ndvs_by_id(io, metadata, snapshot_id).items():
        name = schema.find_column_name(fid)
        if name is not None:
            out[name] = ndv
    return out


def ndvs_by_id(
    io: FileIO, metadata: TableMetadata, snapshot_id: int | None = None
) -> dict[int, int]:
    """Field id -> distinct-value count from the statistics file of ``snapshot_id`` (default:
    current); empty when that snapshot has none. A blob without an ``ndv`` property, or with
    one that is not a count, is read from the Puffin file and its sketch estimated."""
    if snapshot_id is None and metadata.current_snapshot() is None:
        return {}  # no snapshot: no statistics (as Java's statisticsFiles() is empty)
    sid, _, _ = _snapshot_schema(metadata, snapshot_id)
    stats = statistics_file_for(metadata, sid)
    if stats is None:
        return {}
    out: dict[int, int] = {}
    reader = None
    for blob in stats.blob_metadata:
        if blob.type != THETA_SKETCH_V1 or len(blob.fields) != 1:
            continue
        fid = blob.fields[0]
        ndv = blob.properties.get("ndv")
        if ndv is not None and ndv.strip().isdecimal():
            out[fid] = int(ndv)
            continue
        # no count, or one that is not (other engines write the property too): the sketch says
        if reader is None:
            from icefloe.puffin import PuffinReader

            reader = PuffinReader(io.new_input(stats.statistics_path).read())
        for meta in reader.blobs:
            if meta.type == THETA_SKETCH_V1 and tuple(meta.fields) == tuple(blob.fields):
                out[fid] = int(theta_sketch_estimate(reader.read_blob(meta)))
    return out


@dataclass(frozen=True)
class StatisticsStatus:
    """How current a snapshot's statistics are: the newest table and partition statistics
    files on its ancestry, and how many snapshots they lag behind (0: computed for it)."""

    snapshot_id: int | None
    table_statistics_snapshot_id: int | None
    table_statistics_behind: int | None
    partition_statistics_snapshot_id: int | None
    partition_statistics_behind: int | None

    @property
    def table_statistics_current(self) -> bool:
        return self.table_statistics_behind == 0

    @property
    def partition_statistics_current(self) -> bool:
        return self.partition_statistics_behind == 0


def _newest_on_ancestry(
    metadata: TableMetadata, snapshot_id: int, have: set[int]
) -> tuple[int | None, int | None]:
    for behind, snap in enumerate(metadata.ancestors_of(snapshot_id)):
        if snap.snapshot_id in have:
            return snap.snapshot_id, behind
    return None, None


def statistics_status(metadata: TableMetadata, snapshot_id: int | None = None) -> StatisticsStatus:
    """The :class:`StatisticsStatus` of ``snapshot_id`` (default: current)."""
    snapshot_id = check_optional_snapshot_id(snapshot_id)
    if snapshot_id is None:
        snap = metadata.current_snapshot()
        if snap is None:
            return StatisticsStatus(None, None, None, None, None)
        snapshot_id = snap.snapshot_id
    elif metadata.snapshot_by_id(snapshot_id) is None:
        raise NoSuchSnapshotError(f"no snapshot with id {snapshot_id}")
    table = _newest_on_ancestry(metadata, snapshot_id, {s.snapshot_id for s in metadata.statistics})
    parts = _newest_on_ancestry(
        metadata, snapshot_id, {s.snapshot_id for s in metadata.partition_statistics}
    )
    return StatisticsStatus(snapshot_id, *table, *parts)
