"""Writing delete files: deletion vectors (v3), position delete files (v2), equality deletes.

- :func:`write_deletion_vectors` writes the DVs of one commit into a single Puffin file. Each new
  DV is merged with the deletes that already apply to its data file (an older DV and any position
  delete files), so at most one DV per data file remains; the delete files it supersedes are
  returned so the commit can remove them.
- :func:`write_position_deletes` writes a v2 position delete file (``file_path``, ``pos``) sorted
  as the spec requires, with full bounds on both columns and ``referenced_data_file`` set when
  it covers one data file. :func:`write_file_scoped_position_deletes` writes one such file per
  data file (``write.delete.granularity=file``), each merged with the file-scoped deletes the
  data file already had, which it supersedes.
- :func:`write_equality_deletes` writes an equality delete file holding the equality columns,
  its metrics computed as a data file's (:func:`~icefloe.write.metrics.compute_metrics`, under
  the table's ``write.metadata.metrics.*`` modes).

Every function returns :class:`~icefloe.write.files.DataFile` values (content 1 or 2) ready for
the snapshot producer; :func:`delete_ref` gives the reader's view of one.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe import __version__
from icefloe._concurrency import parallel_map
from icefloe.arrow_fill import extension_storage, from_extension_storage
from icefloe.arrow_schema import FIELD_IDS_DIGEST_KEY, field_ids_digest, schema_to_arrow
from icefloe.deletes import DeletionVector
from icefloe.exceptions import AlreadyExistsError, IcebergError, ValidationError
from icefloe.io import FileIO
from icefloe.partitioning import PartitionSpec
from icefloe.properties import PARQUET_CODECS, TableProperties, parquet_codec
from icefloe.puffin import PuffinWriter
from icefloe.read.deletes import DeleteCache, TaskDeletes
from icefloe.scan.tasks import (
    DELETE_FILE_PATH_ID,
    DELETE_FILE_POS_ID,
    DataFileRef,
    DeleteContent,
    DeleteFileRef,
)
from icefloe.schema import Schema
from icefloe.types import (
    BinaryType,
    DateType,
    IntegerType,
    LongType,
    NestedField,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
)
from icefloe.values import to_bytes
from icefloe.write.coerce import coerce_column
from icefloe.write.files import DataFile
from icefloe.write.locations import LocationProvider
from icefloe.write.metrics import MetricsConfig, compute_metrics

__all__ = [
    "POSITION_DELETE_SCHEMA",
    "FileDeletes",
    "delete_ref",
    "new_delete_location",
    "partition_dict",
    "partition_tuple",
    "write_deletion_vectors",
    "write_equality_deletes",
    "write_file_scoped_position_deletes",
    "write_position_deletes",
]

POSITION_DELETES = 1
EQUALITY_DELETES = 2

POSITION_DELETE_SCHEMA = Schema(
    NestedField(DELETE_FILE_PATH_ID, "file_path", StringType(), required=True),
    NestedField(DELETE_FILE_POS_ID, "pos", LongType(), required=True),
)
"""The columns of a position delete file (without the optional ``row``)."""

_CREATED_BY = f"icefloe version {__version__}"
# Types whose bounds are exact at any length (strings/binary are bounded only when short).
_BOUNDED = (IntegerType, LongType, DateType, TimestampType, TimestamptzType)
_MAX_BOUND_LEN = 16


def partition_dict(spec: PartitionSpec | None, partition: Sequence[Any]) -> dict[str, Any]:
    """A partition tuple in spec order as the ``{name: value}`` dict of :class:`DataFile`."""
    if spec is None or not spec.fields:
        return {}
    return {f.name: v for f, v in zip(spec.fields, partition, strict=False)}


def partition_tuple(spec: PartitionSpec | None, partition: Mapping[str, Any]) -> tuple[Any, ...]:
    """The inverse of :func:`partition_dict`."""
    if spec is None:
        return ()
    return tuple(partition.get(f.name) for f in spec.fields)


def delete_ref(
    f: DataFile,
    spec: PartitionSpec | None = None,
    data_sequence_number: int | None = None,
) -> DeleteFileRef:
    """The reader's view of a written delete file (as a planner would attach it to a task)."""
    return DeleteFileRef(
        DeleteContent.POSITION_DELETES
        if f.content == POSITION_DELETES
        else DeleteContent.EQUALITY_DELETES,
        f.file_path,
        f.file_format.lower(),
        record_count=f.record_count,
        file_size_in_bytes=f.file_size_in_bytes,
        referenced_data_file=f.referenced_data_file,
        content_offset=f.content_offset,
        content_size_in_bytes=f.content_size_in_bytes,
        equality_ids=tuple(f.equality_ids or ()),
        data_sequence_number=data_sequence_number,
        spec_id=f.spec_id,
        partition=partition_tuple(spec, f.partition),
    )


@dataclass(frozen=True)
class FileDeletes:
    """New deletes for one data file, with the delete files that already apply to it.

    ``positions`` are row positions in the data file (any order, duplicates allowed) or a
    :class:`DeletionVector`; ``existing`` are the task's delete files (equality deletes among
    them are ignored: they are not merged into a DV).
    """

    data_file: DataFileRef
    positions: Any
    existing: Sequence[DeleteFileRef] = ()


def new_delete_location(
    table_location: str, properties: Mapping[str, str], extension: str, prefix: str = ""
) -> str:
    """A fresh file location for a delete file under the table's data directory (in hashed
    directories with ``write.object-storage.enabled``, see :mod:`icefloe.write.locations`)."""
    name = f"{prefix}{uuid.uuid4()}-deletes.{extension}"
    return LocationProvider.of(table_location, properties).new_location(name)


def _as_dv(positions: Any) -> DeletionVector:
    return (
        positions
        if isinstance(positions, DeletionVector)
        else DeletionVector.from_positions(positions)
    )


def _superseded(data_path: str, existing: Iterable[DeleteFileRef]) -> list[DeleteFileRef]:
    """Existing deletes that a new DV of ``data_path`` replaces: its DV and the position delete
    files scoped to it alone. Partition-scoped position delete files stay (readers ignore them
    for a data file that has a DV, and the DV holds their positions)."""
    return [
        d
        for d in existing
        if d.content is DeleteContent.POSITION_DELETES and d.referenced_data_file == data_path
    ]


def _by_data_file(items: Iterable[FileDeletes]) -> dict[str, FileDeletes]:
    """``items`` keyed by data file path, the items of one data file merged into one."""
    by_path: dict[str, FileDeletes] = {}
    for item in items:
        prev = by_path.get(item.data_file.file_path)
        if prev is not None:
            item = FileDeletes(
                prev.data_file,
                _as_dv(prev.positions).union(_as_dv(item.positions)),
                tuple({*prev.existing, *item.existing}),
            )
        by_path[item.data_file.file_path] = item
    return by_path


def merged_positions(
    io: FileIO, item: FileDeletes, cache: DeleteCache | None = None
) -> DeletionVector:
    """The new positions of ``item`` merged with every position delete already applying to its
    data file; new positions at or past the file's ``record_count`` raise ``ValidationError``,
    and such positions of the existing deletes (another writer's; every reader ignores them)
    are left out."""
    dv = _as_dv(item.positions)
    path = item.data_file.file_path
    count = item.data_file.record_count
    if count:
        last = dv.last
        if last is not None and last >= count:
            raise ValidationError(
                f"delete position {last} is past the end of {path} ({count} rows)"
            )
    pos_refs = [d for d in item.existing if d.content is DeleteContent.POSITION_DELETES]
    if pos_refs:
        old = TaskDeletes.load(io, path, pos_refs, cache or DeleteCache(), None).positions
        if old is not None:
            last = old.last
            if count and last is not None and last >= count:
                kept = old.positions()
                old = DeletionVector.from_positions(kept.filter(pc.less(kept, count)))
            dv = old.union(dv)
    return dv


def write_deletion_vectors(
    io: FileIO,
    location: str,
    items: Sequence[FileDeletes],
    specs: Mapping[int, PartitionSpec] | None = None,
    cache: DeleteCache | None = None,
) -> tuple[list[DataFile], list[DeleteFileRef]]:
    """Writes one Puffin file at ``location`` holding one merged DV per data file of ``items``.

    ``specs`` (the table's partition specs by id) name the partition values of the entries.
    Returns the new DVs (one :class:`DataFile` per blob, all sharing the Puffin file) and the
    existing delete files they supersede (to be removed by the same commit). Items for the same
    data file are merged; items without any position produce no blob. Nothing is written when
    no item has a position.
    """
    cache = cache or DeleteCache()
    by_path = _by_data_file(items)
    writer = PuffinWriter()
    pending: list[tuple[FileDeletes, DeletionVector, Any]] = []
    removed: list[DeleteFileRef] = []
    for path in sorted(by_path):
        item = by_path[path]
        new = _as_dv(item.positions)
        if new.cardinality == 0:
            continue
        dv = merged_positions(io, replace(item, positions=new), cache)
        meta = writer.add_deletion_vector(dv, path)
        pending.append((item, dv, meta))
        removed.extend(_superseded(path, item.existing))
    if not pending:
        return [], []
    puffin = writer.finish({"created-by": _CREATED_BY})
    # the commit waits for the sync (it syncs every file it adds); the disk works meanwhile
    try:
        io.new_output(location).write_new(puffin.data)
    except BaseException:
        io.delete_quietly(location)  # a partial file
        raise
    io.sync_soon(location)
    size = len(puffin.data)
    specs = specs or {}
    out = [
        DataFile(
            file_path=location,
            record_count=dv.cardinality,
            file_size_in_bytes=size,
            spec_id=item.data_file.spec_id,
            partition=partition_dict(specs.get(item.data_file.spec_id), item.data_file.partition),
            content=POSITION_DELETES,
            file_format="PUFFIN",
            referenced_data_file=item.data_file.file_path,
            content_offset=meta.offset,
            content_size_in_bytes=meta.length,
        )
        for item, dv, meta in pending
    ]
    return out, removed


def _bound(t: PrimitiveType, value: Any) -> bytes | None:
    if isinstance(t, _BOUNDED):
        return to_bytes(t, value)
    if isinstance(t, StringType) and len(value) <= _MAX_BOUND_LEN:
        return to_bytes(t, value)
    if isinstance(t, BinaryType) and len(value) <= _MAX_BOUND_LEN:
        return to_bytes(t, value)
    return None


def _column_metrics(
    table: pa.Table, schema: Schema, metadata: pq.FileMetaData
) -> tuple[dict[int, int], dict[int, int], dict[int, int], dict[int, bytes], dict[int, bytes]]:
    """Column sizes, value and null counts and bounds of the top-level primitive columns (of a
    position delete file).

    Bounds are exact (never truncated): they are kept only for integer-like types and for
    strings/binary no longer than 16, else omitted (which is always safe for pruning)."""
    sizes: dict[int, int] = {}
    values: dict[int, int] = {}
    nulls: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    for i, f in enumerate(schema.fields):
        col = table.column(i)
        fid = f.field_id
        values[fid] = len(col)
        nulls[fid] = col.null_count
        size = 0
        for rg in range(metadata.num_row_groups):
            size += metadata.row_group(rg).column(i).total_compressed_size
        sizes[fid] = size
        t = f.field_type
        if not isinstance(t, (*_BOUNDED, StringType, BinaryType)) or col.null_count == len(col):
            continue  # no bounds kept for the type (see _bound), or no value
        mm = pc.min_max(col)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        lo_b, hi_b = _bound(t, lo), _bound(t, hi)
        if lo_b is not None and hi_b is not None:
            lower[fid] = lo_b
            upper[fid] = hi_b
    return sizes, values, nulls, lower, upper


def _delta_encodings(schema: pa.Schema) -> dict[str, str]:
    """``DELTA_BINARY_PACKED`` for the integer-stored columns of a delete file (integers,
    dates, times, timestamps): delete files hold sorted keys and positions, whose small deltas
    pack into a few bits (a quarter of the read time of plain zstd pages of the same longs)."""
    out: dict[str, str] = {}
    for f in schema:
        t = f.type
        if (
            pa.types.is_integer(t)
            or pa.types.is_date(t)
            or pa.types.is_time(t)
            or pa.types.is_timestamp(t)
        ):
            out[f.name] = "DELTA_BINARY_PACKED"
    return out


def _write_parquet(
    io: FileIO,
    location: str,
    table: pa.Table,
    properties: Mapping[str, str],
    dictionary: Sequence[str] = (),
) -> tuple[int, pq.FileMetaData]:
    """Writes a delete file: integer-stored columns delta-encoded, the ``dictionary`` columns
    dictionary-encoded, the others plain."""
    codec = parquet_codec(properties)
    codec = parquet_codec(properties, TableProperties.DELETE_PARQUET_COMPRESSION, codec)
    compression = PARQUET_CODECS[codec]
    try:
        # an I/O failure is a FileIOError, and leaves no incomplete upload behind
        with io.new_output(location).writing() as out:
            collected: list[pq.FileMetaData] = []
            writer = pq.ParquetWriter(
                out,
                table.schema,
                compression=compression,
                use_dictionary=list(dictionary),
                column_encoding=_delta_encodings(table.schema) or None,
                metadata_collector=collected,
                write_page_checksum=True,
                store_decimal_as_integer=True,  # as data files (the spec's Parquet types)
            )
            writer.write_table(table)
            writer.add_key_value_metadata({FIELD_IDS_DIGEST_KEY: field_ids_digest(table.schema)})
            writer.close()
            metadata = collected[0]
    except AlreadyExistsError:
        raise  # not ours
    except IcebergError:
        io.delete_quietly(location)  # a partial file
        raise
    except (OSError, pa.ArrowException) as e:
        io.delete_quietly(location)
        raise ValidationError(f"cannot write delete file {location}: {e}") from e
    return io.new_input(location).length(), metadata


def write_position_deletes(
    io: FileIO,
    location: str,
    deletes: Mapping[str, Any],
    spec_id: int,
    partition: Mapping[str, Any],
    properties: Mapping[str, str] | None = None,
) -> DataFile:
    """Writes a v2 position delete file at ``location``: ``deletes`` maps each data file path
    (all of one partition) to its deleted positions. Rows are sorted by path then position."""
    if not deletes:
        raise ValidationError(f"no position deletes to write to {location}")
    paths = sorted(deletes)
    pos_arrays = [_as_dv(deletes[p]).positions() for p in paths]
    file_col = pa.concat_arrays(
        [
            pa.repeat(pa.scalar(p, pa.string()), len(a))
            for p, a in zip(paths, pos_arrays, strict=True)
        ]
    )
    pos_col = pa.concat_arrays(pos_arrays)
    table = pa.Table.from_arrays(
        [file_col, pos_col], schema=schema_to_arrow(POSITION_DELETE_SCHEMA)
    )
    # a few paths repeated: dictionary-encoded; sorted positions: delta-encoded
    size, metadata = _write_parquet(
        io, location, table, properties or {}, dictionary=[table.schema.field(0).name]
    )
    sizes, values, nulls, lower, upper = _column_metrics(table, POSITION_DELETE_SCHEMA, metadata)
    # file_path bounds are always full (not truncated) so readers can match them exactly.
    lower[DELETE_FILE_PATH_ID] = to_bytes(StringType(), paths[0])
    upper[DELETE_FILE_PATH_ID] = to_bytes(StringType(), paths[-1])
    non_empty = [p for p, a in zip(paths, pos_arrays, strict=True) if len(a)]
    return DataFile(
        file_path=location,
        record_count=table.num_rows,
        file_size_in_bytes=size,
        spec_id=spec_id,
        partition=dict(partition),
        content=POSITION_DELETES,
        referenced_data_file=non_empty[0] if len(non_empty) == 1 else None,
        column_sizes=sizes,
        value_counts=values,
        null_value_counts=nulls,
        lower_bounds=lower,
        upper_bounds=upper,
    )


def write_equality_deletes(
    io: FileIO,
    location: str,
    rows: pa.Table,
    schema: Schema,
    equality_ids: Sequence[int],
    spec_id: int,
    partition: Mapping[str, Any],
    properties: Mapping[str, str] | None = None,
) -> DataFile:
    """Writes an equality delete file at ``location`` holding the ``equality_ids`` columns of
    ``rows`` (matched by the table schema's column names, cast to the table's types), sorted.

    Equality columns must be top-level primitive columns (not float or double, as the spec
    requires). Duplicate key rows are written once.
    """
    ids = tuple(equality_ids)
    if not ids:
        raise ValidationError("an equality delete needs at least one equality field id")
    top = {f.field_id: f for f in schema.fields}
    fields: list[NestedField] = []
    for fid in ids:
        f = top.get(fid)
        if f is None:
            raise ValidationError(f"equality field id {fid} is not a top-level column")
        if not isinstance(f.field_type, PrimitiveType) or str(f.field_type) in ("float", "double"):
            raise ValidationError(
                f"column {f.name!r} of type {f.field_type} cannot be an equality delete column"
            )
        fields.append(f)
    sub = Schema(*fields)
    target = schema_to_arrow(sub)
    cols = []
    for f, af in zip(fields, target, strict=True):
        if f.name not in rows.column_names:
            raise ValidationError(f"equality delete rows lack column {f.name!r}")
        col = rows.column(f.name)
        if col.type == af.type:
            cols.append(col)
            continue
        # the rules of writes: a key that only an unsafe cast would turn into the column's
        # type (a naive time for a zoned column, a string for a number) would delete rows
        # nobody named
        try:
            cols.append(coerce_column(col, f, af))
        except ValidationError as e:
            raise ValidationError(f"equality delete keys: {e}") from None
    names = [f.name for f in fields]
    # unique keys, sorted: small deltas between integer keys, tight bounds (extension types
    # such as uuid grouped and sorted by their storage: Arrow has no kernels for them, and a
    # uuid's bytes sort as Iceberg orders uuids)
    stored = [extension_storage(c) for c in cols]
    table = (
        pa.Table.from_arrays(stored, names=names)
        .group_by(names, use_threads=False)
        .aggregate([])
        .sort_by([(n, "ascending") for n in names])
    )
    # group_by drops field ids and required flags; rebuild with the Iceberg schema.
    table = pa.Table.from_arrays(
        [
            from_extension_storage(table.column(f.name), af.type)
            for f, af in zip(fields, target, strict=True)
        ],
        schema=pa.schema([af.with_nullable(True) for af in target]),
    )
    size, metadata = _write_parquet(io, location, table, properties or {})
    # the metrics of a data file of these columns, each column under its mode in the table
    # (no NaN counts: float and double keys are refused above)
    config = MetricsConfig(schema, properties or {}).select(sub)
    m = compute_metrics(table, metadata, config, own_file=True)
    return DataFile(
        file_path=location,
        record_count=table.num_rows,
        file_size_in_bytes=size,
        spec_id=spec_id,
        partition=dict(partition),
        content=EQUALITY_DELETES,
        equality_ids=list(ids),
        column_sizes=m.column_sizes,
        value_counts=m.value_counts,
        null_value_counts=m.null_value_counts,
        lower_bounds=m.lower_bounds,
        upper_bounds=m.upper_bounds,
    )


def write_file_scoped_position_deletes(
    io: FileIO,
    table_location: str,
    properties: Mapping[str, str],
    items: Sequence[FileDeletes],
    specs: Mapping[int, PartitionSpec] | None = None,
    cache: DeleteCache | None = None,
) -> tuple[list[DataFile], list[DeleteFileRef]]:
    """Writes one v2 position delete file per data file of ``items`` (the reference's
    ``write.delete.granularity=file`` layout), each with ``referenced_data_file`` set.

    A data file's new positions are merged with the position delete files scoped to it alone,
    which the new file supersedes: they are returned, to be removed by the same commit.
    Partition-scoped files stay (readers union them with the new one). Files are written in
    parallel; if one fails, those already written are deleted and the error is raised.
    """
    cache = cache or DeleteCache()
    specs = specs or {}
    # each item's ``existing`` narrowed to the files it merges and supersedes
    work: list[FileDeletes] = []
    for path, item in sorted(_by_data_file(items).items()):
        new = _as_dv(item.positions)
        if new.cardinality:
            scoped = tuple(_superseded(path, item.existing))
            work.append(replace(item, positions=new, existing=scoped))
    written: list[str] = []
    lock = threading.Lock()

    def write_one(item: FileDeletes) -> DataFile:
        dv = merged_positions(io, item, cache)
        df = item.data_file
        location = new_delete_location(table_location, properties, "parquet")
        with lock:
            written.append(location)
        return write_position_deletes(
            io,
            location,
            {df.file_path: dv},
            df.spec_id,
            partition_dict(specs.get(df.spec_id), df.partition),
            properties,
        )

    try:
        out = parallel_map(write_one, work, kind="work")
    except BaseException:
        for location in written:
            io.delete_quietly(location)
        raise
    return out, [d for item in work for d in item.existing]
