"""Full conversion: one snapshot holding every live file of a Delta snapshot, creating the
Iceberg table or replacing the files of an existing one on top of its history."""

from __future__ import annotations

import contextlib

import pyarrow.compute as pc

from icefloe.catalog.base import Catalog
from icefloe.delta.entries import prepare
from icefloe.delta.log import DeltaLog, DeltaSnapshot
from icefloe.delta.schema import convert_schema, name_mapping
from icefloe.delta.state import (
    DELTA_OPERATION,
    DELTA_TABLE_ID,
    DELTA_TIMESTAMP,
    DELTA_VERSION,
    SOURCE,
    expect_version,
    sequence_number_taken,
    state_properties,
)
from icefloe.delta.table_metadata import (
    check_spec,
    mapped_ids,
    mapping_json,
    merge_mapping,
    new_metadata,
    partition_spec,
    schema_updates,
    stats_columns,
    unmapped_column_ids,
)
from icefloe.delta.target import DirectoryCatalog, create_table, load_table
from icefloe.exceptions import (
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
    IcebergError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.metadata import SetProperties
from icefloe.name_mapping import DEFAULT_NAME_MAPPING_PROPERTY, NameMapping, table_mapping
from icefloe.properties import TableProperties
from icefloe.table import Table
from icefloe.table.producer import SnapshotProducer


def drop_new(catalog: Catalog, ident: tuple[str, ...], table: Table) -> None:
    """Undo the creation of a table whose first snapshot could not be committed."""
    if isinstance(catalog, DirectoryCatalog):
        catalog.io.delete_quietly(f"{catalog.directory}/version-hint.text")
    else:
        with contextlib.suppress(IcebergError):
            catalog.drop_table(ident)
    catalog.io.delete_quietly(table.metadata_location)


def is_unfinished(table: Table) -> bool:
    """Whether ``table`` is one a conversion created and was killed before it committed the
    first snapshot (the sync state is set in that commit): converting again takes it over."""
    props = table.properties
    return (
        props.get(SOURCE) == "delta"
        and DELTA_TABLE_ID in props
        and DELTA_VERSION not in props
        and not table.metadata.snapshots
    )


def _landed(exc: BaseException, catalog: Catalog, ident: tuple[str, ...], version: int) -> bool:
    """Whether the commit that raised ``exc`` may have landed, so that nothing it wrote may be
    deleted: its outcome is unknown, or the table as loaded again is at Delta ``version``
    (an interrupt after the commit), or the table cannot be loaded to tell."""
    if isinstance(exc, CommitStateUnknownError):
        return True
    if isinstance(exc, CommitFailedError | CommitConflictError | ValidationError):
        return False  # refused before anything was written
    try:
        table = load_table(catalog, ident)
    except Exception:  # any failure to look means "maybe"
        return True
    return table is not None and table.properties.get(DELTA_VERSION) == str(version)


def _refuse_unassigned_row_ids(snap: DeltaSnapshot) -> None:
    """Files without ``baseRowId`` in a table where Delta assigns row ids: the rows Iceberg would
    number would clash with ids Delta has given or will give (even with ``check=False``)."""
    assigns = (
        snap.row_id_high_water_mark is not None
        or "rowTracking" in snap.protocol.writer_features
        or snap.metadata.configuration.get("delta.enableRowTracking", "").lower() == "true"
    )
    if not assigns or not snap.files.num_rows:
        return
    no_id = pc.is_null(snap.files.column("base_row_id"))
    if pc.any(no_id).as_py():
        first = snap.files.column("path").filter(no_id)[0].as_py()
        raise UnsupportedFeatureError(
            f"Delta table {snap.table} version {snap.version}: file {first} (and maybe others) "
            "has no baseRowId although Delta assigns row ids; their Iceberg row ids would clash"
        )


def seen_mapping(log: DeltaLog, snap: DeltaSnapshot, table: Table | None) -> NameMapping | None:
    """The mapping of the schemas before ``snap``'s: the converted table's, and when columns
    were dropped that it does not list, the older schemas in the Delta log (newest first,
    until every dropped id is found): live files may still hold those columns."""
    previous = table_mapping(table.properties) if table is not None else None
    missing = unmapped_column_ids(snap.metadata, previous)
    if not missing:
        return previous
    for _, meta in log.metadata_before(snap.version):
        older = name_mapping(meta.schema)
        previous = older if previous is None else merge_mapping(older, previous)
        missing -= mapped_ids(older)
        if not missing:
            break
    return previous


def full_conversion(
    log: DeltaLog,
    snap: DeltaSnapshot,
    catalog: Catalog,
    ident: tuple[str, ...],
    table: Table | None,
    location: str,
    extra_props: dict[str, str],
    dv_mode: str,
) -> tuple[Table, int]:
    """Convert Delta snapshot ``snap`` as one snapshot; returns the table and snapshots made."""
    meta = snap.metadata
    hwm = snap.row_id_high_water_mark
    props = state_properties(snap.version, snap.timestamp_ms, hwm, meta)
    props[DEFAULT_NAME_MAPPING_PROPERTY] = mapping_json(meta, seen_mapping(log, snap, table))
    created = table is None
    if table is None:
        # the data files are the Delta table's: expiring or purging must not delete them
        # (gc.enabled=false, as Java's snapshot action sets; a caller may set it otherwise).
        # The sync state (delta-version) comes with the snapshot: a table a killed run left
        # without its snapshot is one whose conversion did not happen (see is_unfinished).
        first = {k: v for k, v in props.items() if k not in (DELTA_VERSION, DELTA_TIMESTAMP)}
        base = new_metadata(
            meta, location, {TableProperties.GC_ENABLED: "false", **extra_props, **first}
        )
        expected: str | None = None
    else:
        check_spec(table, meta)
        expected = table.properties.get(DELTA_VERSION)
        taken = sequence_number_taken(snap.version, table.metadata)
        if taken is not None:
            raise taken
        # the schema first: the files' partition values and the new manifests take its types
        tx = table.transaction()
        schema_updates(tx, meta)
        base = tx.metadata
    _refuse_unassigned_row_ids(snap)
    _, parts = partition_spec(convert_schema(meta.schema), meta)
    # Everything that reads the Delta table (stats, DVs) runs before the table is created.
    prepared = prepare(
        log.io,
        log.location,
        base,
        snap.files,
        stats_columns(meta),
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
        if created:
            tx = table.transaction()
        if had_snapshot or snap.files.num_rows:
            p = SnapshotProducer(
                tx,
                snapshot_properties={
                    DELTA_VERSION: str(snap.version),
                    DELTA_TIMESTAMP: str(snap.timestamp_ms),
                    DELTA_OPERATION: "FULL CONVERSION",
                },
            )
            p.validate(expect_version(expected))
            p.set_sequence_number(snap.version)
            if hwm is not None:
                p.set_next_row_id(hwm + 1)
            if had_snapshot:
                p.remove_files_where(lambda b: pc.is_valid(b.column("status")))
            prepared.attach(p)
            p.commit()
        tx.apply([SetProperties(props)])
        tx.commit_transaction()
    except BaseException as exc:
        if not _landed(exc, catalog, ident, snap.version):
            for path in prepared.written:
                log.io.delete_quietly(path)
            if created:
                drop_new(catalog, ident, table)
        raise
    return table, 1 if snap.files.num_rows or had_snapshot else 0
