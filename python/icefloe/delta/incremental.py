"""Incremental sync: each Delta commit with data changes becomes one Iceberg snapshot (append,
delete, overwrite, or replace for rearrangements), sequence number = the commit's version."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.delta.actions import dv_unique_ids
from icefloe.delta.compat import CompatReport, Failure, check_actions, refuse_unreadable_mapping
from icefloe.delta.deletes import delete_entries_of, dv_entries
from icefloe.delta.entries import dv_partitions, prepare
from icefloe.delta.files import PartitionColumn, absolute_paths
from icefloe.delta.log import DeltaCommit, DeltaLog
from icefloe.delta.protocol import check_readable
from icefloe.delta.replay import decode_paths
from icefloe.delta.schema import DeltaColumn, columns_from_iceberg
from icefloe.delta.state import (
    DELTA_FLOAT_WIDENED,
    DELTA_HWM,
    DELTA_NARROW_INTS,
    DELTA_OPERATION,
    DELTA_TABLE_ID,
    DELTA_TIMESTAMP,
    DELTA_VERSION,
    commit_high_water_mark,
    expect_version,
    float_widened,
    float_widened_property,
    narrow_ints,
    narrow_ints_property,
    parse_int,
    sequence_number_taken,
)
from icefloe.delta.table_metadata import (
    check_spec,
    partition_columns,
    schema_updates,
    spec_updates,
)
from icefloe.exceptions import ValidationError
from icefloe.metadata import SetProperties, TableMetadata
from icefloe.name_mapping import DEFAULT_NAME_MAPPING_PROPERTY, NameMapping
from icefloe.progress import Progress, ProgressArg
from icefloe.table import Table
from icefloe.table.producer import SnapshotProducer
from icefloe.types import DoubleType, IntegerType


def sync_commits(
    log: DeltaLog,
    table: Table,
    start: int,
    end: int,
    dv_mode: str,
    progress: ProgressArg,
    check: bool,
) -> int:
    """Apply Delta commits ``start..end`` one Iceberg commit each; returns snapshots made."""
    snapshots = 0
    with Progress(progress, end - start + 1, "delta: converting commits") as bar:
        for v in range(start, end + 1):
            snapshots += apply_commit(log, table, log.commit(v), dv_mode, check)
            bar.advance()
    return snapshots


def _refuse_unassigned_row_ids(
    root: str, table: Table, commit: DeltaCommit, added: pa.Table
) -> None:
    """New files without ``baseRowId`` in a table where Delta assigns row ids (a full
    conversion refuses them too): Iceberg would number their rows, and Delta's later ids
    could clash with those."""
    assigns = bool(table.properties.get(DELTA_HWM)) or (
        commit.protocol is not None and "rowTracking" in commit.protocol.writer_features
    )
    if not assigns or not added.num_rows or "base_row_id" not in added.column_names:
        return
    no_id = pc.is_null(added.column("base_row_id"))
    if pc.any(no_id).as_py():
        first = added.column("path").filter(no_id)[0].as_py()
        message = (
            f"file {first} (and maybe others) has no baseRowId although Delta assigns row ids; "
            "their Iceberg row ids would clash"
        )
        failure = Failure("row-ids-assigned", message)
        CompatReport(root, commit.version, (failure,)).raise_if_failed()


def _not_live(table: Table, root: str, adds: pa.Table) -> pa.Table:
    """``adds`` without the files the table already holds: a Delta commit may add a live file
    again without removing it, with ``dataChange=false`` (statistics recomputed, row tracking
    backfilled); the newest add of a path replaces the earlier one, so nothing changes."""
    quiet = pc.invert(pc.fill_null(adds.column("data_change"), True))
    if adds.num_rows == 0 or not pc.any(quiet).as_py():
        return adds
    live = (
        table.inspect.data_files(with_readable_metrics=False).column("file_path").combine_chunks()
    )
    paths = absolute_paths(root, adds.column("path").combine_chunks())
    again = pc.and_(quiet, pc.is_in(paths, value_set=live))
    return adds.filter(pc.invert(again))


def _mark_float_widened(
    log: DeltaLog,
    md: TableMetadata,
    commit: DeltaCommit,
    columns: list[DeltaColumn],
    state: dict[str, str],
) -> list[DeltaColumn]:
    """``columns`` with those Delta widened from float marked (their older files' statistics
    are float32 text). A table converted before the table property recorded them reads the
    Delta metadata in effect once, and the property (added to ``state``) keeps the answer."""
    if not any(isinstance(c.type, DoubleType) for c in columns):
        return columns
    ids = float_widened(md.properties.get(DELTA_FLOAT_WIDENED))
    if ids is None:
        prop = float_widened_property(log.metadata_at(commit.version))
        state.update(prop)
        ids = float_widened(prop[DELTA_FLOAT_WIDENED]) or frozenset()
    return [dataclasses.replace(c, from_float=c.field_id in ids) for c in columns]


def _with_narrow_ints(
    log: DeltaLog,
    md: TableMetadata,
    commit: DeltaCommit,
    parts: list[PartitionColumn],
    state: dict[str, str],
) -> list[PartitionColumn]:
    """``parts`` with the Delta type of those of Delta's byte or short (Iceberg int), whose
    partition values are checked against that range. A table converted before the table
    property recorded them reads the Delta metadata in effect once, and the property (added
    to ``state``) keeps the answer."""
    schema = md.current_schema()
    if not any(isinstance(schema.find_field(p.field_id).field_type, IntegerType) for p in parts):
        return parts
    types = narrow_ints(md.properties.get(DELTA_NARROW_INTS))
    if types is None:
        prop = narrow_ints_property(log.metadata_at(commit.version))
        state.update(prop)
        types = narrow_ints(prop[DELTA_NARROW_INTS]) or {}
    return [dataclasses.replace(p, delta_type=types.get(p.field_id, "")) for p in parts]


def apply_commit(
    log: DeltaLog, table: Table, commit: DeltaCommit, dv_mode: str, check: bool = True
) -> int:
    """Apply one Delta commit: a snapshot when it changes data, and the sync state."""
    root = log.location
    expected = table.properties.get(DELTA_VERSION)
    if commit.protocol is not None:
        check_readable(commit.protocol, root)
        if commit.metadata is not None:
            refuse_unreadable_mapping(root, commit.version, commit.protocol, commit.metadata)
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
        check_spec(table, commit.metadata)
        schema_updates(tx, commit.metadata)
        spec_updates(tx, commit.metadata)
    md = tx.metadata
    mapping = NameMapping.from_json(json.loads(md.properties[DEFAULT_NAME_MAPPING_PROPERTY]))
    schema = md.current_schema()
    parts = partition_columns(md.spec(), schema, mapping)
    part_names = {p.field_id for p in parts}
    columns = [c for c in columns_from_iceberg(schema, mapping) if c.field_id not in part_names]
    files = commit.files
    files = files.set_column(0, "path", decode_paths(files.column("path")))
    adds = files.filter(files.column("is_add"))
    removes = files.filter(pc.invert(files.column("is_add")))
    add_paths = adds.column("path").combine_chunks()
    remove_paths = removes.column("path").combine_chunks()
    re_added = pc.is_in(add_paths, value_set=remove_paths)
    new_files = _not_live(table, root, adds.filter(pc.invert(re_added)))
    _refuse_unassigned_row_ids(root, table, commit, new_files)
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
    hwm = commit_high_water_mark(commit)
    if hwm is None:  # (0 is a mark: the first row's id)
        hwm = parse_int(table.properties.get(DELTA_HWM))
    props = {
        DELTA_VERSION: str(commit.version),
        DELTA_TIMESTAMP: str(commit.timestamp_ms),
    }
    if hwm is not None:
        props[DELTA_HWM] = str(hwm)
    state: dict[str, str] = {}  # properties that are no snapshot's
    made = 0
    if data_change:
        taken = sequence_number_taken(commit.version, md)
        if taken is not None:
            raise taken
        tag = f"v{commit.version}"
        # Read the Delta side first (stats, DVs); nothing is left behind when that fails.
        if new_files.num_rows:
            columns = _mark_float_widened(log, md, commit, columns, state)
            parts = _with_narrow_ints(log, md, commit, parts, state)
        prepared = prepare(log.io, root, md, new_files, columns, parts, dv_mode, tag)
        try:
            if dv_changed.num_rows:
                part = dv_partitions(dv_changed, parts, md)
                batch, written = dv_entries(log.io, root, md, dv_changed, part, dv_mode, tag)
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
        p.validate(expect_version(expected))
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
            p.remove_files_where(delete_entries_of(touched))
        prepared.attach(p)
        try:
            p.commit()
        except BaseException:
            p.abort()
            raise
        made = 1
    tx.apply([SetProperties({**state, **props})])
    tx.commit_transaction()
    return made
