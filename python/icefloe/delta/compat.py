"""The IcebergCompatV3 checker: does a Delta table satisfy every requirement of the RFC?

::

    from icefloe.delta import check_iceberg_compat_v3

    report = check_iceberg_compat_v3("/data/events")     # or a DeltaSnapshot
    report.ok, report.failures                            # each failure names its requirement
    report.raise_if_failed()                              # NotIcebergCompatibleError

Requirements checked from the log (each a :class:`Failure` ``requirement`` name):

* ``column-mapping-reader``: reader version 2, or 3 with ``columnMapping`` in readerFeatures;
* ``writer-version``: writer version 7;
* ``feature-supported``: ``icebergCompatV3`` in writerFeatures;
* ``feature-enabled``: ``delta.enableIcebergCompatV3`` is ``true``;
* ``column-mapping-mode``: ``delta.columnMapping.mode`` is ``name`` or ``id``;
* ``row-tracking``: ``rowTracking`` supported, ``delta.enableRowTracking`` true and both
  materialized column names configured;
* ``nested-ids``: every list element and map key/value has a column-mapping id;
* ``no-older-compat``: IcebergCompatV1 and V2 are not enabled;
* ``type-widening``: every type change recorded in ``delta.typeChanges`` is an Iceberg
  promotion (integer widening, float -> double, decimal precision at the same scale,
  date -> timestamp_ntz except on a partition column), as Delta's own IcebergCompatV3 check
  requires;
* ``num-records``: every live file's stats carry ``numRecords``;
* ``row-ids-assigned``: every live file has a ``baseRowId`` (Delta 4.4.0's in-place upgrade
  turns row tracking on without assigning one to the older files, whose row ids then exist
  neither in Delta nor in a form Iceberg could carry without clashing with later ones).

With ``files=True`` the Parquet footers of the live files are read too (one read per file):

* ``row-tracking-field-ids``: materialized row-id / row-commit-version columns, where present,
  carry field ids 2147483540 / 2147483539;
* ``partition-values-materialized``: every partition column is in the file;
* ``timestamps-int64``: timestamp columns are INT64, not INT96.

The RFC's last rule (a replace must not rename partition columns) concerns writers; a converter
sees its effect as changed partition columns and refuses to follow them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe.delta.files import absolute_paths
from icefloe.delta.log import DeltaLog, DeltaSnapshot
from icefloe.delta.protocol import DeltaMetadata, DeltaProtocol
from icefloe.delta.schema import type_change_problems
from icefloe.exceptions import CorruptFileError, NotIcebergCompatibleError

__all__ = ["CompatReport", "Failure", "check_actions", "check_iceberg_compat_v3"]

ROW_ID_FIELD_ID = 2147483540
ROW_COMMIT_VERSION_FIELD_ID = 2147483539
_ROW_ID_COL = "delta.rowTracking.materializedRowIdColumnName"
_ROW_VERSION_COL = "delta.rowTracking.materializedRowCommitVersionColumnName"


@dataclass(frozen=True)
class Failure:
    """One unmet requirement."""

    requirement: str
    message: str

    def __str__(self) -> str:
        return f"{self.requirement}: {self.message}"


@dataclass(frozen=True)
class CompatReport:
    """The checker's verdict on one Delta snapshot."""

    table: str
    version: int
    failures: tuple[Failure, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.failures

    def raise_if_failed(self) -> None:
        """Raise :class:`NotIcebergCompatibleError` listing every failure."""
        if self.failures:
            lines = "; ".join(str(f) for f in self.failures)
            raise NotIcebergCompatibleError(
                f"Delta table {self.table} (version {self.version}) does not satisfy "
                f"IcebergCompatV3: {lines}",
                tuple(f.requirement for f in self.failures),
            )


def _true(config: dict[str, str], key: str) -> bool:
    return config.get(key, "false").strip().lower() == "true"


def _walk_ids(t: object, path: str, ids: dict[str, Any], name: str, out: list[Failure]) -> None:
    if not isinstance(t, dict):
        return
    kind = t.get("type")
    if kind == "struct":
        _nested_ids(t["fields"], out, f"{name}.")
        return
    parts = {
        "array": (("element", "elementType"),),
        "map": (("key", "keyType"), ("value", "valueType")),
    }
    for part, child in parts.get(str(kind), ()):
        if f"{path}.{part}" not in ids:
            out.append(Failure("nested-ids", f"{name}: no id for {kind} {part} {path}.{part}"))
        _walk_ids(t[child], f"{path}.{part}", ids, name, out)


def _nested_ids(fields: list[dict[str, Any]], out: list[Failure], where: str = "") -> None:
    for f in fields:
        meta = f.get("metadata") or {}
        phys = meta.get("delta.columnMapping.physicalName", f["name"])
        ids = meta.get("delta.columnMapping.nested.ids") or {}
        _walk_ids(f["type"], phys, ids, f"{where}{f['name']}", out)


def _file_checks(snap: DeltaSnapshot, log_io: object, out: list[Failure]) -> None:
    from icefloe.io import FileIO

    io = log_io if isinstance(log_io, FileIO) else FileIO()
    config = snap.metadata.configuration
    parts = {}
    for f in snap.metadata.schema.get("fields", []):
        if f["name"] in snap.metadata.partition_columns:
            meta = f.get("metadata") or {}
            parts[f["name"]] = meta.get("delta.columnMapping.physicalName", f["name"])
    row_cols = {
        config.get(_ROW_ID_COL): ROW_ID_FIELD_ID,
        config.get(_ROW_VERSION_COL): ROW_COMMIT_VERSION_FIELD_ID,
    }
    paths = snap.files.column("path").to_pylist()  # decoded by the log replay already
    for rel in paths:  # one footer read per file, only when asked for
        path = absolute_paths(snap.table, pa.array([rel], pa.string()))[0].as_py()
        with io.new_input(path).open() as fh:
            try:
                md = pq.ParquetFile(fh).metadata
            except (pa.ArrowException, OSError) as e:
                raise CorruptFileError(f"{path}: not a readable Parquet file ({e})") from None
        schema = md.schema
        arrow = schema.to_arrow_schema()
        names = set(arrow.names)
        for logical, phys in parts.items():
            if phys not in names:
                out.append(
                    Failure(
                        "partition-values-materialized",
                        f"{path}: partition column {logical} ({phys}) is not in the file",
                    )
                )
        for col, want in row_cols.items():
            if col and col in names:
                meta = arrow.field(col).metadata or {}
                got = meta.get(b"PARQUET:field_id")
                if got is None or int(got) != want:
                    out.append(
                        Failure(
                            "row-tracking-field-ids",
                            f"{path}: column {col} has field id {got!r}, not {want}",
                        )
                    )
        for i in range(len(schema)):
            if schema.column(i).physical_type == "INT96":
                out.append(
                    Failure("timestamps-int64", f"{path}: column {schema.column(i).path} is INT96")
                )


def refuse_unreadable_mapping(
    table: str, version: int, protocol: DeltaProtocol, metadata: DeltaMetadata
) -> None:
    """Refuse, whatever the other checks say, a table whose configuration sets column mapping
    that its protocol does not enable: Delta readers ignore the setting then (the data files
    and partition values use the logical names), so reading by the physical names would give
    nulls (:class:`NotIcebergCompatibleError`)."""
    if metadata.column_mapping_mode in ("none", "") or _mapping_readable(protocol):
        return
    CompatReport(
        table,
        version,
        (
            Failure(
                "column-mapping-reader",
                f"delta.columnMapping.mode is {metadata.column_mapping_mode!r} but reader "
                f"version {protocol.min_reader_version} with features "
                f"{sorted(protocol.reader_features)} does not enable column mapping, so Delta "
                "readers ignore it; icefloe cannot convert such a table, even unchecked",
            ),
        ),
    ).raise_if_failed()


def _mapping_readable(p: DeltaProtocol) -> bool:
    """Whether protocol ``p`` enables column mapping (reader 2, or 3 with the feature)."""
    return p.min_reader_version == 2 or (
        p.min_reader_version >= 3 and "columnMapping" in p.reader_features
    )


def check_actions(protocol: DeltaProtocol | None, metadata: DeltaMetadata | None) -> list[Failure]:
    """The requirements a ``protocol`` and a ``metaData`` action meet or fail on their own
    (either may be None: a commit that changes only one of them)."""
    out: list[Failure] = []
    p = protocol
    if p is not None:
        if not _mapping_readable(p):
            out.append(
                Failure(
                    "column-mapping-reader",
                    f"reader version {p.min_reader_version} with features "
                    f"{sorted(p.reader_features)} does not include column mapping",
                )
            )
        if p.min_writer_version != 7:
            out.append(
                Failure("writer-version", f"writer version is {p.min_writer_version}, not 7")
            )
        if "icebergCompatV3" not in p.writer_features:
            out.append(
                Failure(
                    "feature-supported", "icebergCompatV3 is not in the protocol's writerFeatures"
                )
            )
    meta = metadata
    if meta is not None:
        config = meta.configuration
        if not _true(config, "delta.enableIcebergCompatV3"):
            out.append(Failure("feature-enabled", "delta.enableIcebergCompatV3 is not true"))
        if meta.column_mapping_mode not in ("name", "id"):
            out.append(
                Failure(
                    "column-mapping-mode",
                    f"delta.columnMapping.mode is {meta.column_mapping_mode!r}, not name or id",
                )
            )
    tracking = (p is None or "rowTracking" in p.writer_features) and (
        meta is None or _true(meta.configuration, "delta.enableRowTracking")
    )
    if not tracking:
        out.append(Failure("row-tracking", "row tracking is not supported and enabled"))
    elif meta is not None and (
        not meta.configuration.get(_ROW_ID_COL) or not meta.configuration.get(_ROW_VERSION_COL)
    ):
        out.append(
            Failure("row-tracking", "the materialized row-tracking column names are not configured")
        )
    if meta is not None:
        _nested_ids(meta.schema.get("fields", []), out)
        for old in ("delta.enableIcebergCompatV1", "delta.enableIcebergCompatV2"):
            if _true(meta.configuration, old):
                out.append(Failure("no-older-compat", f"{old} is true"))
        for problem in type_change_problems(meta.schema, meta.partition_columns):
            out.append(Failure("type-widening", problem))
    return out


def _has_num_records(files: pa.Table) -> pa.ChunkedArray | pa.Array:
    """Per file: its statistics carry ``numRecords`` (typed ``stats_parsed`` where a
    checkpoint has it, else the JSON text)."""
    text = pc.fill_null(pc.match_substring(files.column("stats"), '"numRecords"'), False)
    if "stats_parsed" not in files.column_names:
        return text
    parsed = files.column("stats_parsed")
    if not pa.types.is_struct(parsed.type) or parsed.type.get_field_index("numRecords") < 0:
        return text
    typed = pc.is_valid(pc.struct_field(parsed, "numRecords"))
    return pc.or_(typed, text)


def check_iceberg_compat_v3(
    table: str | DeltaSnapshot | DeltaLog,
    *,
    version: int | None = None,
    files: bool = False,
) -> CompatReport:
    """Check a Delta table (location, :class:`DeltaLog` or :class:`DeltaSnapshot`) against
    every IcebergCompatV3 requirement; ``files=True`` also reads the data files' footers."""
    log: DeltaLog | None = None
    if isinstance(table, str):
        log = DeltaLog(table)
        snap = log.snapshot(version)
    elif isinstance(table, DeltaLog):
        log = table
        snap = log.snapshot(version)
    else:
        snap = table
    out = check_actions(snap.protocol, snap.metadata)
    has = _has_num_records(snap.files)
    missing = snap.files.num_rows - int(pc.sum(has.cast("int64")).as_py() or 0)
    if missing:
        first = snap.files.column("path").filter(pc.invert(has))[0].as_py()
        out.append(
            Failure(
                "num-records",
                f"{missing} live file(s) have no numRecords statistic (first: {first})",
            )
        )
    no_id = pc.is_null(snap.files.column("base_row_id"))
    unassigned = int(pc.sum(no_id.cast("int64")).as_py() or 0)
    if unassigned and _true(snap.metadata.configuration, "delta.enableRowTracking"):
        first = snap.files.column("path").filter(no_id)[0].as_py()
        out.append(
            Failure(
                "row-ids-assigned",
                f"{unassigned} live file(s) have no baseRowId although row tracking is enabled "
                f"(first: {first}): Delta gave their rows no row ids",
            )
        )
    if files and snap.files.num_rows:
        _file_checks(snap, log.io if log is not None else None, out)
    return CompatReport(snap.table, snap.version, tuple(out))
