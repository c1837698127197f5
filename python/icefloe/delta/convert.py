"""Iceberg v3 metadata over a Delta table's own files, kept in sync commit by commit.

``convert(delta_path, catalog=..., identifier=...)`` (or ``metadata_location=...`` for a table
without a catalog) brings the Iceberg table to the Delta table's latest version (or
``up_to_version``):

* **first run (full)**: one snapshot holding every live file of the Delta snapshot, with
  ``sequence-number`` = the Delta version; each file keeps its own data sequence number
  (``defaultRowCommitVersion``) and ``first_row_id`` (``baseRowId``), so ``_row_id`` and
  ``_last_updated_sequence_number`` read as Delta's row id and row commit version;
* **later runs (incremental)**: one snapshot per Delta commit with data changes (append,
  delete, overwrite, or replace for rearrangements such as OPTIMIZE), sequence number = the
  commit's version, the Delta version and timestamp in the snapshot summary; schema changes
  add Iceberg schemas with Delta's column-mapping ids; each commit is its own Iceberg commit,
  so an interrupted sync resumes where it stopped; a re-run at the same version does nothing;
* when commits the sync needs were cleaned up by Delta's log retention: a full conversion
  as one ``overwrite`` snapshot on top of the existing history.

Deletion vectors become Puffin ``deletion-vector-v1`` blobs in the Iceberg metadata directory
(``dv_mode="puffin"``, readable by every Iceberg v3 reader) or references to Delta's own DV
files (``dv_mode="reference"``, zero copy, as Delta UniForm writes them).

The table's properties record the sync state: ``delta-version``, ``delta-timestamp``,
``delta-high-water-mark`` and ``delta-table-id``.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.catalog.base import Catalog, split_identifier
from icefloe.delta.actions import dv_unique_ids
from icefloe.delta.compat import CompatReport, check_actions, check_iceberg_compat_v3
from icefloe.delta.dv import DeltaDV, dv_file_path, read_dv_blobs
from icefloe.delta.files import PartitionColumn, absolute_paths, data_entries
from icefloe.delta.log import DeltaCommit, DeltaLog, DeltaSnapshot
from icefloe.delta.protocol import DeltaMetadata, check_readable
from icefloe.delta.replay import decode_paths
from icefloe.delta.schema import (
    DeltaColumn,
    columns_from_iceberg,
    convert_schema,
    leaf_columns,
    name_mapping,
)
from icefloe.delta.target import DirectoryCatalog, create_table, load_table
from icefloe.exceptions import (
    CommitConflictError,
    IcebergError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.io import FileIO
from icefloe.io import metadata_location as metadata_dir_of
from icefloe.metadata import (
    AddSchema,
    SetCurrentSchema,
    SetProperties,
    Snapshot,
    TableMetadata,
)
from icefloe.name_mapping import DEFAULT_NAME_MAPPING_PROPERTY, NameMapping
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.progress import Progress, ProgressArg
from icefloe.puffin import DELETION_VECTOR_V1, ROW_POSITION_FIELD_ID, PuffinWriter
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.table.producer import SnapshotProducer
from icefloe.transforms import IdentityTransform
from icefloe.write.files import manifest_arrow_schema

__all__ = ["ConvertResult", "convert"]

DELTA_VERSION = "delta-version"
DELTA_TIMESTAMP = "delta-timestamp"
DELTA_HWM = "delta-high-water-mark"
DELTA_TABLE_ID = "delta-table-id"
DELTA_OPERATION = "delta-operation"
SOURCE = "icefloe.source"
DV_MODES = ("puffin", "reference")


@dataclass(frozen=True)
class ConvertResult:
    """What a conversion did."""

    table: Table
    delta_version: int
    mode: str  # "full", "incremental" or "unchanged"
    snapshots: int  # Iceberg snapshots committed by this run
    previous_version: int | None

    @property
    def metadata_location(self) -> str:
        return self.table.metadata_location


# -- schema, spec, properties --------------------------------------------------------------------
def _spec(schema: Schema, delta_meta: DeltaMetadata) -> tuple[PartitionSpec, list[PartitionColumn]]:
    by_name = {f["name"]: f for f in delta_meta.schema.get("fields", [])}
    fields, cols = [], []
    for i, name in enumerate(delta_meta.partition_columns):
        f = by_name.get(name)
        if f is None:
            raise ValidationError(f"Delta partition column {name!r} is not in the schema")
        fid = schema.find_field(name).field_id
        fields.append(PartitionField(fid, 1000 + i, IdentityTransform(), name))
        phys = str((f.get("metadata") or {}).get("delta.columnMapping.physicalName", name))
        cols.append(PartitionColumn(name, phys, fid))
    return PartitionSpec(*fields, spec_id=0), cols


def _partition_columns(
    spec: PartitionSpec, schema: Schema, mapping: NameMapping
) -> list[PartitionColumn]:
    out = []
    for f in spec.fields:
        m = next((m for m in mapping.fields if m.field_id == f.source_id), None)
        phys = m.names[-1] if m is not None else schema.find_field(f.source_id).name
        out.append(PartitionColumn(f.name, phys, f.source_id))
    return out


def _stats_columns(delta_meta: DeltaMetadata) -> list[DeltaColumn]:
    parts = set(delta_meta.partition_columns)
    return [c for c in leaf_columns(delta_meta.schema) if c.logical_path[0] not in parts]


def _last_column_id(schema: Schema, delta_meta: DeltaMetadata) -> int:
    raw = delta_meta.configuration.get("delta.columnMapping.maxColumnId", "0")
    return max(schema.highest_field_id, int(raw) if raw.isdigit() else 0)


def _state_properties(
    snap_version: int, timestamp_ms: int, hwm: int | None, delta_meta: DeltaMetadata
) -> dict[str, str]:
    props = {
        DELTA_VERSION: str(snap_version),
        DELTA_TIMESTAMP: str(timestamp_ms),
        DELTA_TABLE_ID: delta_meta.id,
        SOURCE: "delta",
    }
    if hwm is not None:
        props[DELTA_HWM] = str(hwm)
    return props


def _mapping_json(delta_meta: DeltaMetadata) -> str:
    return json.dumps(name_mapping(delta_meta.schema).to_json())


# -- deletion vectors -------------------------------------------------------------------------
def _dv_descriptors(root: str, files: pa.Table) -> list[DeltaDV]:
    with_dv = files.filter(pc.is_valid(files.column("dv")))
    if with_dv.num_rows == 0:
        return []
    paths = absolute_paths(root, with_dv.column("path").combine_chunks()).to_pylist()
    out = []
    for path, dv in zip(paths, with_dv.column("dv").to_pylist(), strict=True):  # one per DV
        out.append(
            DeltaDV(
                path,
                dv["storageType"],
                dv["pathOrInlineDv"],
                dv.get("offset"),
                int(dv["sizeInBytes"]),
                int(dv["cardinality"]),
            )
        )
    return out


def _dv_entries(
    io: FileIO,
    root: str,
    metadata: TableMetadata,
    files: pa.Table,
    partition: pa.Array,
    dv_mode: str,
    tag: str,
) -> tuple[pa.RecordBatch | None, list[str]]:
    """Delete-file entries for the DVs of ``files`` (whose data-file partition tuples are
    ``partition``) and the files written for them."""
    dvs = _dv_descriptors(root, files)
    if not dvs:
        return None, []
    has_dv = pc.is_valid(files.column("dv")).combine_chunks()
    part = partition.filter(has_dv)
    target = manifest_arrow_schema(3, metadata.current_schema(), metadata.spec())
    n = len(dvs)
    written: list[str] = []
    if dv_mode == "reference":
        inline = [d.data_file for d in dvs if d.inline]
        if inline:
            raise UnsupportedFeatureError(
                f"{inline[0]} has an inline deletion vector, which dv_mode='reference' cannot "
                "point to; use dv_mode='puffin'"
            )
        read_dv_blobs(io, root, dvs)  # checks every DV
        paths = [dv_file_path(root, d.storage_type, d.path_or_inline) for d in dvs]
        offsets = [d.offset or 0 for d in dvs]
        lengths = [d.size_in_bytes + 8 for d in dvs]
        sizes = [o + n_ for o, n_ in zip(offsets, lengths, strict=True)]
    else:
        blobs = read_dv_blobs(io, root, dvs)
        w = PuffinWriter()
        metas = [
            w.add_blob(
                blob,
                DELETION_VECTOR_V1,
                [ROW_POSITION_FIELD_ID],
                properties={"referenced-data-file": d.data_file, "cardinality": str(d.cardinality)},
            )
            for blob, d in zip(blobs, dvs, strict=True)
        ]
        puffin = w.finish({"created-by": "icefloe delta converter"})
        loc = metadata_dir_of(metadata.location, metadata.properties)
        path = f"{loc}/dv-{tag}-{uuid.uuid4()}.puffin"
        io.new_output(path).write(puffin.data)
        written.append(path)
        paths = [path] * n
        offsets = [m.offset for m in metas]
        lengths = [m.length for m in metas]
        sizes = [len(puffin.data)] * n
    cols: dict[str, pa.Array] = {f.name: pa.nulls(n, f.type) for f in target}
    cols.update(
        status=pa.repeat(pa.scalar(1, pa.int32()), n),
        content=pa.repeat(pa.scalar(1, pa.int32()), n),
        file_path=pa.array(paths, pa.string()),
        file_format=pa.repeat(pa.scalar("PUFFIN"), n),
        partition=part,
        record_count=pa.array([d.cardinality for d in dvs], pa.int64()),
        file_size_in_bytes=pa.array(sizes, pa.int64()),
        referenced_data_file=pa.array([d.data_file for d in dvs], pa.string()),
        content_offset=pa.array(offsets, pa.int64()),
        content_size_in_bytes=pa.array(lengths, pa.int64()),
    )
    arrays = [
        cols[f.name] if cols[f.name].type == f.type else cols[f.name].cast(f.type) for f in target
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=target), written


# -- committing ---------------------------------------------------------------------------------
def _expect_version(
    expected: str | None,
) -> Callable[[TableMetadata, Snapshot | None, int | None], None]:
    def check(metadata: TableMetadata, parent: Snapshot | None, start: int | None) -> None:
        got = metadata.properties.get(DELTA_VERSION)
        if got != expected:
            raise CommitConflictError(
                f"the table's {DELTA_VERSION} moved from {expected} to {got} during the sync: "
                "another converter is running"
            )

    return check


@dataclass
class _Prepared:
    """Manifest entries for one snapshot's added files, and the DV files written for them."""

    entries: pa.RecordBatch | None
    deletes: pa.RecordBatch | None
    written: list[str]

    def attach(self, producer: SnapshotProducer) -> None:
        producer.owns_files(self.written)
        if self.entries is not None:
            producer.add_entries(self.entries, content=0)
        if self.deletes is not None:
            producer.add_entries(self.deletes, content=1)


def _prepare(
    io: FileIO,
    root: str,
    table_md: TableMetadata,
    files: pa.Table,
    columns: list[DeltaColumn],
    partitions: list[PartitionColumn],
    dv_mode: str,
    tag: str,
) -> _Prepared:
    schema = table_md.current_schema()
    spec = table_md.spec()
    entries = None
    if files.num_rows:
        entries = data_entries(io, root, files, columns, partitions, schema, spec)
        part = entries.column("partition")
    else:
        part = pa.array([], manifest_arrow_schema(3, schema, spec).field("partition").type)
    deletes, written = _dv_entries(io, root, table_md, files, part, dv_mode, tag)
    return _Prepared(entries, deletes, written)


def _dv_partitions(
    files: pa.Table,
    partitions: list[PartitionColumn],
    table_md: TableMetadata,
) -> pa.Array:
    """Partition tuples of files whose data entry is not being written (DV-only updates)."""
    from icefloe.delta.files import _partition_values

    schema = table_md.current_schema()
    ptype = manifest_arrow_schema(3, schema, table_md.spec()).field("partition").type
    return _partition_values(
        files.column("partition_values").combine_chunks(), partitions, schema, ptype
    )


def _delete_entries_of(wanted: pa.Array) -> Callable[[pa.RecordBatch], pa.Array]:

    def predicate(batch: pa.RecordBatch) -> pa.Array:
        is_delete = pc.equal(batch.column("content"), 1)
        refs = pc.is_in(batch.column("referenced_data_file"), value_set=wanted)
        return pc.and_(is_delete, pc.fill_null(refs, False))

    return predicate


def _new_metadata(meta: DeltaMetadata, location: str, props: dict[str, str]) -> TableMetadata:
    schema = convert_schema(meta.schema)
    spec, _ = _spec(schema, meta)
    spec.validate(schema)
    return TableMetadata(
        format_version=3,
        table_uuid=str(uuid.uuid4()),
        location=location,
        last_updated_ms=time.time_ns() // 1_000_000,
        last_column_id=_last_column_id(schema, meta),
        schemas=(schema,),
        current_schema_id=schema.schema_id,
        partition_specs=(spec,),
        default_spec_id=0,
        last_partition_id=spec.last_assigned_field_id if spec.fields else 999,
        properties=props,
        next_row_id=0,
    )


def _drop_new(catalog: Catalog, ident: tuple[str, ...], table: Table) -> None:
    """Undo the creation of a table whose first snapshot could not be committed."""
    if isinstance(catalog, DirectoryCatalog):
        catalog.io.delete_quietly(f"{catalog.directory}/version-hint.text")
    else:
        with contextlib.suppress(IcebergError):
            catalog.drop_table(ident)
    catalog.io.delete_quietly(table.metadata_location)


def _full(
    log: DeltaLog,
    snap: DeltaSnapshot,
    catalog: Catalog,
    ident: tuple[str, ...],
    table: Table | None,
    location: str,
    extra_props: dict[str, str],
    dv_mode: str,
) -> tuple[Table, int]:
    meta = snap.metadata
    hwm = snap.row_id_high_water_mark
    props = _state_properties(snap.version, snap.timestamp_ms, hwm, meta)
    props[DEFAULT_NAME_MAPPING_PROPERTY] = _mapping_json(meta)
    created = table is None
    if table is None:
        base = _new_metadata(meta, location, {**extra_props, **props})
        expected: str | None = str(snap.version)
    else:
        _check_spec(table, meta)
        base = table.metadata
        expected = table.properties.get(DELTA_VERSION)
        if base.snapshots and snap.version <= base.last_sequence_number:
            raise ValidationError(
                f"Delta version {snap.version} is not after the Iceberg table's last sequence "
                f"number {base.last_sequence_number}"
            )
    _, parts = _spec(convert_schema(meta.schema), meta)
    # Everything that reads the Delta table (stats, DVs) runs before the table is created.
    prepared = _prepare(
        log.io,
        log.location,
        base,
        snap.files,
        _stats_columns(meta),
        parts,
        dv_mode,
        f"v{snap.version}",
    )
    try:
        if table is None:
            table = create_table(catalog, ident, base)
    except BaseException:
        for path in prepared.written:
            log.io.delete_quietly(path)
        raise
    had_snapshot = table.metadata.current_snapshot() is not None
    try:
        tx = table.transaction()
        if had_snapshot:  # the schema first: the new manifests are written with it
            _schema_updates(tx, meta)
        if had_snapshot or snap.files.num_rows:
            p = SnapshotProducer(
                tx,
                snapshot_properties={
                    DELTA_VERSION: str(snap.version),
                    DELTA_TIMESTAMP: str(snap.timestamp_ms),
                    DELTA_OPERATION: "FULL CONVERSION",
                },
            )
            p.validate(_expect_version(expected))
            p.set_sequence_number(snap.version)
            if hwm is not None:
                p.set_next_row_id(hwm + 1)
            if had_snapshot:
                p.remove_files_where(lambda b: pc.is_valid(b.column("status")))
            prepared.attach(p)
            p.commit()
        tx.apply([SetProperties(props)])
        tx.commit_transaction()
    except BaseException:
        for path in prepared.written:
            log.io.delete_quietly(path)
        if created:
            _drop_new(catalog, ident, table)
        raise
    return table, 1 if snap.files.num_rows or had_snapshot else 0


def _check_spec(table: Table, meta: DeltaMetadata) -> None:
    names = tuple(f.name for f in table.spec().fields)
    if names != meta.partition_columns:
        raise UnsupportedFeatureError(
            f"the Delta table's partition columns changed from {list(names)} to "
            f"{list(meta.partition_columns)}; Iceberg metadata converted before cannot follow: "
            "convert into a new table"
        )


def _schema_updates(tx: Any, meta: DeltaMetadata) -> None:
    schema = convert_schema(meta.schema)
    if not tx.metadata.current_schema().same_schema(schema):
        tx.apply([AddSchema(schema, _last_column_id(schema, meta)), SetCurrentSchema(-1)])
    tx.apply([SetProperties({DEFAULT_NAME_MAPPING_PROPERTY: _mapping_json(meta)})])


def _incremental(
    log: DeltaLog,
    table: Table,
    start: int,
    end: int,
    dv_mode: str,
    progress: ProgressArg,
    check: bool,
) -> int:
    snapshots = 0
    with Progress(progress, end - start + 1, "delta: converting commits") as bar:
        for v in range(start, end + 1):
            snapshots += _apply_commit(log, table, log.commit(v), dv_mode, check)
            bar.advance()
    return snapshots


def _log_reporter(progress: ProgressArg) -> Callable[[int, int], None]:
    """A ``(done, total)`` callback for reading the log that reports through ``progress``."""
    bars: list[Progress] = []

    def report(done: int, total: int) -> None:
        if not bars:
            bars.append(Progress(progress, total, "delta: reading the log").__enter__())
        bar = bars[0]
        bar.advance(done - bar.done)
        if done >= total:
            bar.__exit__(None, None, None)

    return report


def _apply_commit(
    log: DeltaLog, table: Table, commit: DeltaCommit, dv_mode: str, check: bool = True
) -> int:
    root = log.location
    expected = table.properties.get(DELTA_VERSION)
    if commit.protocol is not None:
        check_readable(commit.protocol, root)
    if check and (commit.protocol is not None or commit.metadata is not None):
        failures = check_actions(commit.protocol, commit.metadata)
        if failures:
            report = CompatReport(root, commit.version, tuple(failures))
            report.raise_if_failed()
    tx = table.transaction()
    if commit.metadata is not None:
        if commit.metadata.id != table.properties.get(DELTA_TABLE_ID):
            raise ValidationError(
                f"Delta commit {commit.version} replaced the table (new id "
                f"{commit.metadata.id}); convert into a new Iceberg table"
            )
        _check_spec(table, commit.metadata)
        _schema_updates(tx, commit.metadata)
    md = tx.metadata
    mapping = NameMapping.from_json(json.loads(md.properties[DEFAULT_NAME_MAPPING_PROPERTY]))
    schema = md.current_schema()
    parts = _partition_columns(md.spec(), schema, mapping)
    part_names = {p.field_id for p in parts}
    columns = [c for c in columns_from_iceberg(schema, mapping) if c.field_id not in part_names]
    files = commit.files
    files = files.set_column(0, "path", decode_paths(files.column("path")))
    adds = files.filter(files.column("is_add"))
    removes = files.filter(pc.invert(files.column("is_add")))
    add_paths = adds.column("path").combine_chunks()
    remove_paths = removes.column("path").combine_chunks()
    re_added = pc.is_in(add_paths, value_set=remove_paths)
    new_files = adds.filter(pc.invert(re_added))
    kept = adds.filter(re_added)
    gone = removes.filter(pc.invert(pc.is_in(remove_paths, value_set=add_paths)))
    # A re-added file changed when its DV changed (DELETE/UPDATE/MERGE with DVs).
    old_keys = pc.binary_join_element_wise(
        remove_paths, dv_unique_ids(removes.column("dv")), "\x00"
    )
    new_keys = pc.binary_join_element_wise(
        kept.column("path").combine_chunks(), dv_unique_ids(kept.column("dv")), "\x00"
    )
    dv_changed = kept.filter(pc.invert(pc.is_in(new_keys, value_set=old_keys)))
    data_change = new_files.num_rows or gone.num_rows or dv_changed.num_rows
    hwm = _hwm(commit) or _int(table.properties.get(DELTA_HWM))
    props = {
        DELTA_VERSION: str(commit.version),
        DELTA_TIMESTAMP: str(commit.timestamp_ms),
    }
    if hwm is not None:
        props[DELTA_HWM] = str(hwm)
    made = 0
    if data_change:
        if md.snapshots and commit.version <= md.last_sequence_number:
            raise ValidationError(
                f"Delta version {commit.version} is not after the Iceberg table's last sequence "
                f"number {md.last_sequence_number}"
            )
        tag = f"v{commit.version}"
        # Read the Delta side first (stats, DVs); nothing is left behind when that fails.
        prepared = _prepare(log.io, root, md, new_files, columns, parts, dv_mode, tag)
        try:
            if dv_changed.num_rows:
                part = _dv_partitions(dv_changed, parts, md)
                batch, written = _dv_entries(log.io, root, md, dv_changed, part, dv_mode, tag)
                prepared.written += written
                if batch is not None:
                    old = prepared.deletes
                    prepared.deletes = batch if old is None else pa.concat_batches([old, batch])
        except BaseException:
            for path in prepared.written:
                log.io.delete_quietly(path)
            raise
        p = SnapshotProducer(
            tx,
            snapshot_properties={**props, DELTA_OPERATION: commit.operation or "UNKNOWN"},
        )
        p.validate(_expect_version(expected))
        p.set_sequence_number(commit.version)
        if hwm is not None:
            p.set_next_row_id(hwm + 1)
        if not pc.any(files.column("data_change")).as_py():
            p.set_operation("replace")
        gone_abs = absolute_paths(root, gone.column("path").combine_chunks())
        if gone.num_rows:
            p.remove_files(gone_abs.to_pylist())
        touched = pa.concat_arrays(
            [gone_abs, absolute_paths(root, dv_changed.column("path").combine_chunks())]
        )
        if len(touched):
            p.remove_files_where(_delete_entries_of(touched))
        prepared.attach(p)
        try:
            p.commit()
        except BaseException:
            p.abort()
            raise
        made = 1
    tx.apply([SetProperties(props)])
    tx.commit_transaction()
    return made


def _hwm(commit: DeltaCommit) -> int | None:
    d = commit.domains.get("delta.rowTracking")
    if d is None or d.get("removed"):
        return None
    try:
        return int(json.loads(d["configuration"])["rowIdHighWaterMark"])
    except (KeyError, TypeError, ValueError):
        return None


def _int(v: str | None) -> int | None:
    return int(v) if v is not None and v.lstrip("-").isdigit() else None


# -- entry point --------------------------------------------------------------------------------
def convert(
    delta_path: str,
    *,
    catalog: Catalog | None = None,
    identifier: str | tuple[str, ...] | None = None,
    metadata_location: str | None = None,
    up_to_version: int | None = None,
    dv_mode: str = "puffin",
    location: str | None = None,
    properties: dict[str, str] | None = None,
    io: FileIO | None = None,
    check: bool = True,
    progress: ProgressArg = None,
) -> ConvertResult:
    """Create or bring up to date the Iceberg v3 table over the Delta table at ``delta_path``.

    Target: ``catalog`` + ``identifier`` (any icefloe catalog; the table goes to the catalog's
    default location unless ``location`` is given), or ``metadata_location``, the directory
    of a catalog-less table whose metadata files go to its ``metadata/`` subdirectory (default
    when neither is given: ``<delta_path>/_icefloe``); :class:`~icefloe.table.static.StaticTable`
    opens it by that path.
    ``check`` refuses Delta tables that do not satisfy IcebergCompatV3
    (:class:`~icefloe.exceptions.NotIcebergCompatibleError`). ``progress`` (``True`` for a bar
    on stderr, or a callable ``fn(done, total)``) reports the commits read and converted.
    """
    if dv_mode not in DV_MODES:
        raise ValidationError(f"dv_mode must be one of {DV_MODES}, got {dv_mode!r}")
    if (catalog is None) != (identifier is None):
        raise ValidationError("give catalog and identifier together")
    if catalog is not None and metadata_location is not None:
        raise ValidationError("give catalog + identifier or metadata_location, not both")
    log = DeltaLog(delta_path, io=io)
    root = log.location
    extra = dict(properties or {})
    if catalog is None:
        directory = (metadata_location or f"{root}/_icefloe").rstrip("/")
        if not directory.endswith("/metadata"):  # a table directory, as StaticTable takes
            directory = f"{directory}/metadata"
        catalog = DirectoryCatalog(directory, log.io)
        ident: tuple[str, ...] = catalog.identifier
        table_location = location or root
        extra.setdefault("write.metadata.path", directory)
    else:
        namespace, name = split_identifier(identifier)  # type: ignore[arg-type]
        ident = (*namespace, name)
        table_location = location or catalog._default_table_location(ident)
    table = load_table(catalog, ident)
    latest = log.latest_version()
    target = latest if up_to_version is None else up_to_version
    if target > latest or target < 0:
        raise ValidationError(f"Delta table {root} has no version {target} (latest {latest})")
    previous = _int(table.properties.get(DELTA_VERSION)) if table is not None else None
    if table is not None and previous is None:
        raise ValidationError(
            f"Iceberg table {table.name} was not converted from Delta (no {DELTA_VERSION})"
        )
    if previous is not None and previous == target:
        return ConvertResult(table, target, "unchanged", 0, previous)  # type: ignore[arg-type]
    if previous is not None and previous > target:
        raise ValidationError(
            f"Iceberg table {table.name} is already at Delta version {previous}, after {target}"  # type: ignore[union-attr]
        )
    if table is not None and previous is not None and log.has_commits(previous + 1, target):
        n = _incremental(log, table, previous + 1, target, dv_mode, progress, check)
        return ConvertResult(table, target, "incremental", n, previous)

    snap = log.snapshot(target, progress=_log_reporter(progress) if progress else None)
    if check:
        check_iceberg_compat_v3(snap).raise_if_failed()
    if table is not None and snap.metadata.id != table.properties.get(DELTA_TABLE_ID):
        raise ValidationError(
            f"Iceberg table {table.name} was converted from another Delta table "
            f"({table.properties.get(DELTA_TABLE_ID)}, now {snap.metadata.id})"
        )
    table, n = _full(log, snap, catalog, ident, table, table_location, extra, dv_mode)
    return ConvertResult(table, target, "full", n, previous)
