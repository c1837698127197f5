"""Metadata tables as Arrow: ``table.inspect.snapshots()``, ``history()``, ``refs()``,
``metadata_log_entries()``, ``column_statistics()``, ``manifests()``, ``entries()``, ``files()``,
``partitions()`` and the tables over every kept snapshot: ``all_manifests()``, ``all_entries()``,
``all_files()``, ``all_data_files()`` and ``all_delete_files()``.

Column names follow PyIceberg's and the Java reference's metadata tables. The file-level tables
decode the manifests of one snapshot (default: the current one) in bulk and work on the Arrow
batches; partition tuples of every spec are shown in one struct with a field per partition field id
of any spec (named as in the newest spec having it), null where a file's spec lacks it (see
:mod:`icefloe.table.inspect_partitions`). A name a newer field took over (a field removed, then
another one added under its name) is suffixed with the older field's id, ``<name>_<field id>``, as
removing a field of a v1 table renames it. The file tables and the entries tables carry Java's
``readable_metrics`` column (see :mod:`icefloe.table.readable_metrics`). A table without a snapshot
gives the same columns, with no rows. ``partitions()`` of an unpartitioned table (no partition
field of any spec has its source column in the schema, Java's rule) has no ``partition`` and
``spec_id`` columns, and one row for the whole table.

A table a REST catalog loaded with ``snapshot-loading-mode=refs`` holds only the snapshots refs
point at: what needs the others (``snapshots()``, ``history()``, a snapshot by id, ancestry, the
commit time of a file's snapshot) loads them first (:meth:`Table.load_every_snapshot`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_fill import group_keys
from icefloe.arrow_schema import type_to_arrow
from icefloe.exceptions import NoSuchSnapshotError, ValidationError
from icefloe.metadata import MetadataLogEntry, Snapshot
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.scan.manifests import manifest_list_of, manifest_lists, read_entries, unique_manifests
from icefloe.scan.tasks import partition_field_names
from icefloe.schema import Schema
from icefloe.table.inspect_partitions import (
    _TS,
    _file_total,
    _merge_specs,
    _partitions_of_groups,
    _stats_to_partitions,
    _unify_partition,
)
from icefloe.table.manifest_merge import MANIFEST_LIST_SCHEMA
from icefloe.table.readable_metrics import readable_metrics
from icefloe.types import (
    DateType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
)
from icefloe.values import from_bytes, snapshot_id_arg
from icefloe.write.files import manifest_arrow_schema
from icefloe.write.partition_names import human_partition_value

if TYPE_CHECKING:
    from icefloe.table.table import Table

__all__ = ["InspectTable"]

_INSTANT_TYPES = (DateType, TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)
_DATA_FILE_COLUMNS = [
    "content",
    "file_path",
    "file_format",
    "spec_id",
    "partition",
    "record_count",
    "file_size_in_bytes",
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
    "key_metadata",
    "split_offsets",
    "equality_ids",
    "sort_order_id",
    "first_row_id",
    "referenced_data_file",
    "content_offset",
    "content_size_in_bytes",
]
#: The columns of a decoded manifest entry (see :mod:`icefloe.manifest`) but ``partition``.
_ENTRY_FIELDS = [
    f for f in manifest_arrow_schema(3, Schema(), PartitionSpec()) if f.name != "partition"
]
#: The columns of a decoded manifest list that :meth:`InspectTable.manifests` shows.
_MANIFEST_LIST = pa.schema(
    [
        MANIFEST_LIST_SCHEMA.field(name)
        for name in (
            "manifest_path",
            "manifest_length",
            "partition_spec_id",
            "content",
            "added_snapshot_id",
            "added_files_count",
            "existing_files_count",
            "deleted_files_count",
            "partitions",
        )
    ]
)
#: ``manifests.partition_summaries``: the bounds as readable strings (as Spark shows them).
_SUMMARIES = pa.list_(
    pa.struct(
        [
            pa.field("contains_null", pa.bool_(), nullable=False),
            pa.field("contains_nan", pa.bool_()),
            pa.field("lower_bound", pa.string()),
            pa.field("upper_bound", pa.string()),
        ]
    )
)


class InspectTable:
    """The metadata tables of one table (its metadata as loaded)."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._meta = table.metadata

    # ------------------------------------------------------------------ metadata only

    def snapshots(self) -> pa.Table:
        """One row per kept snapshot: time, ids, operation, manifest list, summary; in
        sequence number order (v1: the metadata's order)."""
        self._load_every_snapshot()
        # loaded later, the snapshots no ref points at come last in the metadata
        snaps = sorted(self._meta.snapshots, key=lambda s: s.sequence_number)
        return pa.table(
            {
                "committed_at": pa.array([s.timestamp_ms for s in snaps], pa.int64()).cast(_TS),
                "snapshot_id": pa.array([s.snapshot_id for s in snaps], pa.int64()),
                "parent_id": pa.array([s.parent_snapshot_id for s in snaps], pa.int64()),
                "operation": pa.array([s.operation for s in snaps], pa.string()),
                "manifest_list": pa.array([s.manifest_list for s in snaps], pa.string()),
                "summary": pa.array(
                    [
                        [kv for kv in s.summary.to_json().items() if kv[0] != "operation"]
                        if s.summary
                        else None
                        for s in snaps
                    ],
                    pa.map_(pa.string(), pa.string()),
                ),
            }
        )

    def history(self) -> pa.Table:
        """The snapshot log: when each snapshot became current and whether it is still an
        ancestor of the current snapshot."""
        self._load_every_snapshot()
        meta = self._meta
        current = meta.current_snapshot()
        ancestors = (
            {s.snapshot_id for s in meta.ancestors_of(current.snapshot_id)} if current else set()
        )
        log = meta.snapshot_log
        parents = [
            s.parent_snapshot_id if (s := meta.snapshot_by_id(e.snapshot_id)) else None for e in log
        ]
        return pa.table(
            {
                "made_current_at": pa.array([e.timestamp_ms for e in log], pa.int64()).cast(_TS),
                "snapshot_id": pa.array([e.snapshot_id for e in log], pa.int64()),
                "parent_id": pa.array(parents, pa.int64()),
                "is_current_ancestor": pa.array(
                    [e.snapshot_id in ancestors for e in log], pa.bool_()
                ),
            }
        )

    def refs(self) -> pa.Table:
        """Branches and tags with their retention settings."""
        items = sorted(self._meta.refs.items())
        return pa.table(
            {
                "name": pa.array([n for n, _ in items], pa.string()),
                "type": pa.array([r.ref_type.upper() for _, r in items], pa.string()),
                "snapshot_id": pa.array([r.snapshot_id for _, r in items], pa.int64()),
                "max_reference_age_in_ms": pa.array(
                    [r.max_ref_age_ms for _, r in items], pa.int64()
                ),
                "min_snapshots_to_keep": pa.array(
                    [r.min_snapshots_to_keep for _, r in items], pa.int32()
                ),
                "max_snapshot_age_in_ms": pa.array(
                    [r.max_snapshot_age_ms for _, r in items], pa.int64()
                ),
            }
        )

    def column_statistics(self, snapshot_id: int | None = None) -> pa.Table:
        """Distinct-value counts per column from the newest table statistics file on the
        snapshot's ancestry (default: the current snapshot): column name, field id, ``ndv``,
        the snapshot the file was computed for and how many snapshots it lags behind (0: it
        is the snapshot's own). Columns are named as they are now; counts of columns dropped
        since are left out, as in ``table.statistics()``."""
        from icefloe.table.statistics import ndvs_by_id, statistics_status

        snap = self._snapshot(snapshot_id)
        if snap is not None and self._meta.statistics:
            self._complete_ancestry(snap.snapshot_id)
        status = statistics_status(self._meta, snapshot_id)
        sid = status.table_statistics_snapshot_id
        found = ndvs_by_id(self._table.io, self._meta, sid) if sid is not None else {}
        # named as the column is now (as table.statistics() does); dropped ones left out
        current = self._meta.current_schema()
        named = {f: current.find_column_name(f) for f in found}
        ids = [f for f, n in named.items() if n is not None]
        names = [named[f] for f in ids]
        return pa.table(
            {
                "column": pa.array(names, pa.string()),
                "field_id": pa.array(ids, pa.int32()),
                "ndv": pa.array([found[f] for f in ids], pa.int64()),
                "statistics_snapshot_id": pa.array([sid] * len(names), pa.int64()),
                "snapshots_behind": pa.array(
                    [status.table_statistics_behind] * len(names), pa.int32()
                ),
            }
        )

    # ------------------------------------------------------------------ from manifests

    def _load_every_snapshot(self) -> bool:
        """Load the snapshots the catalog left out of the table's metadata (REST
        ``snapshot-loading-mode=refs``); True when there were some."""
        load = getattr(self._table, "load_every_snapshot", None)
        if load is None or not load():
            return False
        self._meta = self._table.metadata
        return True

    def _complete_ancestry(self, snapshot_id: int) -> None:
        """Load every snapshot when ``snapshot_id``'s ancestry stops at a missing parent (one
        the catalog left out, or an expired one)."""
        chain = self._meta.ancestors_of(snapshot_id)
        if chain and chain[-1].parent_snapshot_id is not None:
            self._load_every_snapshot()

    def _snapshot(self, snapshot_id: int | None) -> Snapshot | None:
        """The snapshot ``snapshot_id`` (default: the current one, None for an empty table)."""
        if snapshot_id is None:
            return self._meta.current_snapshot()
        snapshot_id = snapshot_id_arg(snapshot_id)
        s = self._meta.snapshot_by_id(snapshot_id)
        if s is None and self._load_every_snapshot():
            s = self._meta.snapshot_by_id(snapshot_id)
        if s is None:
            raise NoSuchSnapshotError(f"cannot inspect snapshot {snapshot_id}: no such snapshot")
        return s

    def _manifest_list(self, snapshot_id: int | None) -> pa.RecordBatch:
        """The snapshot's decoded manifest list; no rows when the table has no snapshot."""
        s = self._snapshot(snapshot_id)
        if s is None:
            return pa.RecordBatch.from_pylist([], schema=_MANIFEST_LIST)
        return manifest_list_of(self._table.io, s)

    def manifests(self, snapshot_id: int | None = None) -> pa.Table:
        """The manifests of a snapshot with their file counts and partition summaries."""
        return self._manifests_of(self._manifest_list(snapshot_id))

    def _manifests_of(self, ml: pa.Table | pa.RecordBatch) -> pa.Table:
        """:meth:`manifests` rows of manifest-list rows ``ml``."""
        content = ml.column("content")
        is_data = pc.equal(content, 0)

        def split(name: str, data: bool) -> pa.Array:
            col = ml.column(name)
            zero = pa.scalar(0, col.type)
            return pc.if_else(is_data if data else pc.invert(is_data), col, zero)

        return pa.table(
            {
                "content": content.cast(pa.int8()),
                "path": ml.column("manifest_path"),
                "length": ml.column("manifest_length"),
                "partition_spec_id": ml.column("partition_spec_id"),
                "added_snapshot_id": ml.column("added_snapshot_id"),
                "added_data_files_count": split("added_files_count", True),
                "existing_data_files_count": split("existing_files_count", True),
                "deleted_data_files_count": split("deleted_files_count", True),
                "added_delete_files_count": split("added_files_count", False),
                "existing_delete_files_count": split("existing_files_count", False),
                "deleted_delete_files_count": split("deleted_files_count", False),
                "partition_summaries": self._readable_summaries(ml),
            }
        )

    def _readable_summaries(self, ml: pa.Table | pa.RecordBatch) -> pa.Array:
        """The manifests' partition summaries with their bounds as people read them (``0``,
        ``x``, ``2024-01-02``), as Spark's and PyIceberg's ``manifests`` tables give them."""
        rows = []
        # a manifest's summaries once, however many snapshots list it (``all_manifests``)
        done: dict[str, list[dict[str, Any]]] = {}
        for path, spec_id, summaries in zip(
            ml.column("manifest_path").to_pylist(),
            ml.column("partition_spec_id").to_pylist(),
            ml.column("partitions").to_pylist(),
            strict=True,
        ):
            if path in done:
                rows.append(done[path])
                continue
            spec = self._meta.spec_by_id(spec_id)
            fields = list(spec.fields) if spec is not None else []
            out = []
            for k, summary in enumerate(summaries or ()):
                pf = fields[k] if k < len(fields) else None
                out.append(
                    {
                        "contains_null": summary["contains_null"],
                        "contains_nan": summary.get("contains_nan"),
                        "lower_bound": self._readable_bound(pf, summary.get("lower_bound")),
                        "upper_bound": self._readable_bound(pf, summary.get("upper_bound")),
                    }
                )
            rows.append(out)
            done[path] = out
        return pa.array(rows, _SUMMARIES)

    def _readable_bound(self, pf: PartitionField | None, raw: bytes | None) -> str | None:
        if raw is None or pf is None:
            return None
        for schema in [self._meta.current_schema(), *reversed(self._meta.schemas)]:
            try:
                source = schema.find_type(pf.source_id)
            except ValidationError:
                continue  # a source column since dropped: an older schema has it
            try:
                kind = pf.transform.result_type(source)
                if isinstance(kind, _INSTANT_TYPES):
                    # as the integers they are: Java writes years past 9999 (Python cannot)
                    value: Any = int.from_bytes(raw, "little", signed=True)
                else:
                    value = from_bytes(kind, raw)
                return human_partition_value(pf, value, kind)
            except (ValidationError, ValueError, OverflowError):
                return None
        return None

    def _entries(self, snapshot_id: int | None) -> pa.Table:
        """Every entry of a snapshot's manifests, with ``spec_id`` and a unified partition."""
        return self._entries_of(self._manifest_list(snapshot_id))

    def _entries_of(self, ml: pa.Table | pa.RecordBatch) -> pa.Table:
        """Every entry of the manifests listed in ``ml`` (each read once), with ``spec_id``
        and a unified partition."""
        unified = self._partition_type()
        batches = read_entries(self._table.io, ml)
        spec_ids = ml.column("partition_spec_id").to_pylist() if ml.num_rows else []
        parts = []
        for batch, spec_id in zip(batches, spec_ids, strict=True):
            b = _unify_partition(batch, unified)
            b = b.append_column("spec_id", pa.array([spec_id] * b.num_rows, pa.int32()))
            parts.append(b)
        if not parts:  # no snapshot, or no manifests: the same columns
            fields = [pa.field("partition", unified), pa.field("spec_id", pa.int32())]
            return pa.schema([*_ENTRY_FIELDS, *fields]).empty_table()
        return pa.concat_tables(parts, promote_options="permissive")

    def _partition_type(self) -> pa.StructType:
        """A struct with one field per partition field id of any spec whose source column is in
        the current schema, in field id order, named by
        :func:`~icefloe.scan.tasks.partition_field_names` (as ``_partition`` is). Its type
        comes from the newest spec where the field is not ``void``: a v1 table keeps a removed
        field as ``void``, whose values are all null and whose own result type (the source
        type) is not what the older files hold."""
        schema = self._meta.current_schema()
        types: dict[int, tuple[bool, pa.DataType]] = {}  # field id -> (from a void, type)
        for spec in sorted(self._meta.partition_specs, key=lambda s: s.spec_id):
            for pf in spec.fields:
                try:
                    at = type_to_arrow(pf.transform.result_type(schema.find_type(pf.source_id)))
                except ValidationError:
                    continue  # source column dropped: keep the older definition
                seen = types.get(pf.field_id)
                if seen is None or seen[0] or not pf.transform.is_void:
                    types[pf.field_id] = (pf.transform.is_void, at)
        names = partition_field_names(self._meta.partition_specs, types)
        return pa.struct(
            [
                pa.field(names[fid], at, metadata={b"PARQUET:field_id": str(fid).encode()})
                for fid, (_, at) in sorted(types.items())
            ]
        )

    def _partitions_from_statistics(self, snapshot_id: int | None) -> pa.Table | None:
        from icefloe.exceptions import IcebergError
        from icefloe.table.partition_statistics import read_current_partition_statistics

        if self._snapshot(snapshot_id) is None:
            return None
        try:
            rows = read_current_partition_statistics(self._table.io, self._meta, snapshot_id)
        except IcebergError:
            return None  # unreadable or foreign format: the manifests answer
        if rows is None:
            return None
        if "dv_count" not in rows.column_names:
            rows = rows.append_column("dv_count", pa.array([0] * rows.num_rows, pa.int32()))
        merged = _merge_specs(_stats_to_partitions(rows), self._projected_fields())
        return merged.filter(pc.greater(_file_total(merged), 0))

    def entries(
        self, snapshot_id: int | None = None, *, with_readable_metrics: bool = True
    ) -> pa.Table:
        """Every manifest entry (including deleted ones) of a snapshot, with the file's
        ``readable_metrics`` (see :mod:`icefloe.table.readable_metrics`; left out with
        ``with_readable_metrics=False``, which spares decoding every bound)."""
        return _entries_table(
            self._entries(snapshot_id), self._schema() if with_readable_metrics else None
        )

    def files(
        self, snapshot_id: int | None = None, *, with_readable_metrics: bool = True
    ) -> pa.Table:
        """The live data and delete files of a snapshot, with their ``readable_metrics``: per
        primitive column of the current schema, its metrics, with the bounds as values of the
        column's type (see :mod:`icefloe.table.readable_metrics`; left out with
        ``with_readable_metrics=False``)."""
        return self._files(snapshot_id, None, with_readable_metrics)

    def _files(self, snapshot_id: int | None, data: bool | None, metrics: bool) -> pa.Table:
        """Live files: data files (``data``), delete files (not ``data``) or both (None)."""
        t = self._entries(snapshot_id)
        if data is not None:
            content = t.column("content")
            t = t.filter(pc.equal(content, 0) if data else pc.not_equal(content, 0))
        return _files_table(t, self._schema() if metrics else None)

    def _schema(self) -> Schema:
        """The schema ``readable_metrics`` shows the columns of: the table's current one."""
        return self._meta.current_schema()

    def data_files(
        self, snapshot_id: int | None = None, *, with_readable_metrics: bool = True
    ) -> pa.Table:
        """The live data files of a snapshot (columns as :meth:`files`)."""
        return self._files(snapshot_id, True, with_readable_metrics)

    def delete_files(
        self, snapshot_id: int | None = None, *, with_readable_metrics: bool = True
    ) -> pa.Table:
        """The live delete files (position, equality, deletion vectors) of a snapshot (columns
        as :meth:`files`)."""
        return self._files(snapshot_id, False, with_readable_metrics)

    # ------------------------------------------------------------------ every kept snapshot

    def _kept_manifest_lists(self) -> tuple[list[Snapshot], dict[int, pa.RecordBatch]]:
        """Every snapshot of the metadata (those the catalog left out loaded first) and its
        decoded manifest list."""
        self._load_every_snapshot()
        snaps = list(self._meta.snapshots)
        return snaps, manifest_lists(self._table.io, snaps)

    def all_manifests(self) -> pa.Table:
        """The manifests of every kept snapshot, one row per snapshot listing one (a manifest
        several snapshots keep is a row for each), ``reference_snapshot_id`` the snapshot whose
        manifest list names it; the columns of :meth:`manifests` plus ``reference_snapshot_id``
        and the manifest's ``key_metadata``, as PyIceberg's and Java's ``all_manifests``."""
        snaps, lists = self._kept_manifest_lists()
        parts = [
            pa.Table.from_batches([lists[s.snapshot_id]]).append_column(
                "reference_snapshot_id", pa.repeat(pa.scalar(s.snapshot_id, pa.int64()), n)
            )
            for s in snaps
            if (n := lists[s.snapshot_id].num_rows)
        ]
        schema = _MANIFEST_LIST.append(pa.field("key_metadata", pa.binary()))
        schema = schema.append(pa.field("reference_snapshot_id", pa.int64()))
        ml = pa.concat_tables([schema.empty_table(), *parts], promote_options="permissive").select(
            schema.names
        )
        out = self._manifests_of(ml.combine_chunks())
        out = out.append_column("reference_snapshot_id", ml.column("reference_snapshot_id"))
        return out.append_column("key_metadata", ml.column("key_metadata").cast(pa.binary()))

    def _reachable_entries(self, content: int | None = None) -> pa.Table:
        """Every entry of every distinct manifest some kept snapshot lists (each manifest read
        once), of one manifest content (0 data, 1 deletes) or all."""
        _, lists = self._kept_manifest_lists()
        ml = unique_manifests(lists.values())
        if content is not None and ml.num_rows:  # v1: every manifest holds data
            ml = ml.filter(pc.equal(pc.fill_null(ml.column("content"), 0), content))
        return self._entries_of(ml.combine_chunks())

    def all_entries(self) -> pa.Table:
        """Every manifest entry (deleted ones too) of every distinct manifest reachable from a
        kept snapshot, each manifest's once, as Java's ``AllEntriesTable``; the columns of
        :meth:`entries`."""
        return _entries_table(self._reachable_entries(), self._schema())

    def all_files(self) -> pa.Table:
        """The data and delete files live in some manifest reachable from a kept snapshot,
        each file once (Java's ``AllFilesTable`` and PyIceberg may repeat a file several
        manifests list); the columns of :meth:`files`."""
        return _distinct_files(_files_table(self._reachable_entries(), self._schema()))

    def all_data_files(self) -> pa.Table:
        """:meth:`all_files` of the data manifests: the data files of every kept snapshot."""
        return _distinct_files(_files_table(self._reachable_entries(0), self._schema()))

    def all_delete_files(self) -> pa.Table:
        """:meth:`all_files` of the delete manifests: position and equality delete files and
        deletion vectors of every kept snapshot."""
        return _distinct_files(_files_table(self._reachable_entries(1), self._schema()))

    def metadata_log_entries(self) -> pa.Table:
        """One row per ``metadata-log`` entry and one for the current metadata file: its
        time, location, and the snapshot current then (the newest snapshot-log entry at or
        before it, as Java's and PyIceberg's ``metadata_log_entries``) with that snapshot's
        schema id and sequence number; nulls before the first snapshot, and schema id and
        sequence number null when the snapshot is no longer kept (Java keeps its id)."""
        self._load_every_snapshot()
        meta = self._meta
        log = [
            *meta.metadata_log,
            MetadataLogEntry(
                timestamp_ms=meta.last_updated_ms, metadata_file=self._table.metadata_location
            ),
        ]
        when = np.array([e.timestamp_ms for e in log], np.int64)
        slog = meta.snapshot_log
        log_ts = np.array([e.timestamp_ms for e in slog], np.int64)
        log_ids = pa.array([e.snapshot_id for e in slog], pa.int64())
        order = np.argsort(log_ts, kind="stable")  # ties keep their log order: the last wins
        pos = np.searchsorted(log_ts[order], when, side="right") - 1
        idx = pa.array(order[np.maximum(pos, 0)] if len(order) else pos, pa.int64())
        latest = pc.take(log_ids, pc.if_else(pa.array(pos >= 0), idx, None))
        snaps = meta.snapshots
        found = pc.index_in(latest, pa.array([s.snapshot_id for s in snaps], pa.int64()))
        schema_ids = pa.array([s.schema_id for s in snaps], pa.int32())
        seqs = pa.array([s.sequence_number for s in snaps], pa.int64())
        return pa.table(
            {
                "timestamp": pa.array(when, pa.int64()).cast(_TS),
                "file": pa.array([e.metadata_file for e in log], pa.string()),
                "latest_snapshot_id": latest,
                "latest_schema_id": pc.take(schema_ids, found),
                "latest_sequence_number": pc.take(seqs, found),
            }
        )

    def partitions(self, snapshot_id: int | None = None, use_statistics: bool = True) -> pa.Table:
        """Per partition: record, file and delete counts, and the last update.

        As in Java's ``PartitionsTable``, a partition is a tuple of the unified ``partition``
        type together with how many of its fields the file's spec has: files of specs that
        give the same values (a field renamed, a partition field whose source column was
        dropped) are one partition, while a spec lacking a field (shown null) is another than
        one holding null there. ``spec_id`` is the spec of the partition's newest row (by last
        update).

        When the snapshot has a partition statistics file (and ``use_statistics``), the rows
        come from it instead of the manifests: the same counts (deletion vectors count as
        position delete files), partitions without live files left out; the last update there
        is the newest snapshot that added *or removed* a file of the partition, where the
        manifests give the newest kept snapshot (by commit time) that added a live one, as
        Java's ``PartitionsTable`` does: a file whose snapshot was expired is counted but
        updates nothing (a partition with only such files has no last update).

        An unpartitioned table (no partition field of any spec whose source column is in the
        current schema, as Java decides) has one row for the whole table (none without live
        files) and no ``partition`` and ``spec_id`` columns, as Java's and PyIceberg's."""
        unpartitioned = self._partition_type().num_fields == 0
        if use_statistics and self._meta.partition_statistics:
            from_stats = self._partitions_from_statistics(snapshot_id)
            if from_stats is not None:
                return (
                    from_stats.drop_columns(["partition", "spec_id"])
                    if unpartitioned
                    else from_stats
                )
        t = self._entries(snapshot_id)
        live = t.filter(pc.not_equal(t.column("status"), 2))
        ptype = live.schema.field("partition").type
        keys = [f"__p{i}" for i in range(ptype.num_fields)]
        content = live.column("content")

        def where(cond: pa.ChunkedArray, col: str) -> pa.ChunkedArray:
            c = live.column(col)
            return pc.if_else(cond, c, pa.scalar(0, c.type))

        is_data, is_pos, is_eq = (pc.equal(content, k) for k in (0, 1, 2))
        committed_at = self._commit_times(live.column("snapshot_id"))
        kept = pc.is_valid(committed_at)
        work = pa.table(
            {
                # extension-typed values (uuid, geometry) group by their storage (see group_key)
                **group_keys(live.column("partition"), keys),
                "spec_id": live.column("spec_id"),
                "data_records": where(is_data, "record_count"),
                "data_files": pc.cast(is_data, pa.int32()),
                "data_size": where(is_data, "file_size_in_bytes"),
                "pos_records": where(is_pos, "record_count"),
                "pos_files": pc.cast(is_pos, pa.int32()),
                "eq_records": where(is_eq, "record_count"),
                "eq_files": pc.cast(is_eq, pa.int32()),
                "committed_at": committed_at,
                "snapshot_id": pc.if_else(
                    kept, live.column("snapshot_id"), pa.scalar(None, pa.int64())
                ),
                "seq": live.column("sequence_number"),
            }
        )
        order = ["committed_at", "seq", "snapshot_id"]
        work = work.sort_by([(c, "ascending") for c in order])
        g = work.group_by([*keys, "spec_id"], use_threads=False).aggregate(
            [
                ("data_records", "sum"),
                ("data_files", "sum"),
                ("data_size", "sum"),
                ("pos_records", "sum"),
                ("pos_files", "sum"),
                ("eq_records", "sum"),
                ("eq_files", "sum"),
                # the newest kept snapshot ("last" skips the nulls of expired ones)
                ("committed_at", "last"),
                ("snapshot_id", "last"),
            ]
        )
        partition = _partitions_of_groups(g, keys, ptype)
        out = pa.table(
            {
                "partition": partition,
                "spec_id": g.column("spec_id"),
                "record_count": g.column("data_records_sum"),
                "file_count": g.column("data_files_sum").cast(pa.int32()),
                "total_data_file_size_in_bytes": g.column("data_size_sum"),
                "position_delete_record_count": g.column("pos_records_sum"),
                "position_delete_file_count": g.column("pos_files_sum").cast(pa.int32()),
                "equality_delete_record_count": g.column("eq_records_sum"),
                "equality_delete_file_count": g.column("eq_files_sum").cast(pa.int32()),
                "last_updated_at": g.column("committed_at_last").cast(_TS),
                "last_updated_snapshot_id": g.column("snapshot_id_last"),
            }
        )
        out = _merge_specs(out, self._projected_fields())
        return out.drop_columns(["partition", "spec_id"]) if unpartitioned else out

    def _projected_fields(self) -> dict[int, int]:
        """How many fields of the unified partition type each spec has (by spec id)."""
        ids = {int((f.metadata or {})[b"PARQUET:field_id"]) for f in self._partition_type()}
        return {
            s.spec_id: sum(pf.field_id in ids for pf in s.fields)
            for s in self._meta.partition_specs
        }

    def _commit_times(self, snapshot_ids: pa.ChunkedArray) -> pa.ChunkedArray:
        """Each snapshot's commit time in epoch ms, null for one not kept; the snapshots the
        catalog left out are loaded when some id is missing."""
        snaps = self._meta.snapshots
        found = pc.index_in(
            snapshot_ids, value_set=pa.array([s.snapshot_id for s in snaps], pa.int64())
        )
        if found.null_count > snapshot_ids.null_count and self._load_every_snapshot():
            return self._commit_times(snapshot_ids)
        return pc.take(pa.array([s.timestamp_ms for s in snaps], pa.int64()), found)


def _entries_table(t: pa.Table, schema: Schema | None) -> pa.Table:
    """:meth:`InspectTable.entries` rows of decoded manifest entries ``t``, with the
    ``readable_metrics`` of the columns of ``schema`` (none without one)."""
    data_cols = [c for c in _DATA_FILE_COLUMNS if c in t.column_names]
    t = t.set_column(t.schema.get_field_index("content"), "content", _content(t))
    data_file = pa.StructArray.from_arrays(
        [t.column(c).combine_chunks() for c in data_cols], names=data_cols
    )
    columns = {
        "status": t.column("status").cast(pa.int8()),
        "snapshot_id": t.column("snapshot_id"),
        "sequence_number": t.column("sequence_number"),
        "file_sequence_number": t.column("file_sequence_number"),
        "data_file": data_file,
    }
    if schema is not None:
        columns["readable_metrics"] = readable_metrics(schema, t)
    return pa.table(columns)


def _files_table(t: pa.Table, schema: Schema | None) -> pa.Table:
    """:meth:`InspectTable.files` rows of decoded manifest entries ``t``: the live ones, with
    the ``readable_metrics`` of the columns of ``schema`` (none without one)."""
    live = t.filter(pc.not_equal(t.column("status"), 2))
    cols = [c for c in _DATA_FILE_COLUMNS if c in live.column_names]
    out = live.select(cols)
    out = out.set_column(0, "content", _content(out))
    if schema is None:
        return out
    return out.append_column("readable_metrics", readable_metrics(schema, live))


def _content(t: pa.Table) -> pa.ChunkedArray:
    """A file's ``content`` (0 data, 1 position deletes, 2 equality deletes) as the metadata
    tables show it, in ``files()`` and ``entries().data_file`` alike (int8, as PyIceberg)."""
    return t.column("content").cast(pa.int8())


def _distinct_files(files: pa.Table) -> pa.Table:
    """``files`` with each file once: its first row (manifests that list one file again, as
    ``EXISTING`` after a merge, list it with the same metadata). A file is its ``file_path``
    and, for the deletion vectors one Puffin file holds, its ``content_offset``."""
    if files.num_rows == 0:
        return files
    keys = {"p": files.column("file_path")}
    if "content_offset" in files.column_names:
        keys["o"] = files.column("content_offset")
    rows = pa.table({**keys, "i": pa.array(np.arange(files.num_rows), pa.int64())})
    first = rows.group_by(list(keys), use_threads=False).aggregate([("i", "min")]).column("i_min")
    return files.take(pc.take(first, pc.sort_indices(first)))
