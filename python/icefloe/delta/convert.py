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

from collections.abc import Callable
from dataclasses import dataclass

from icefloe.catalog.base import Catalog, split_identifier
from icefloe.delta.compat import check_iceberg_compat_v3, refuse_unreadable_mapping
from icefloe.delta.deletes import DV_MODES
from icefloe.delta.full import full_conversion, is_unfinished
from icefloe.delta.incremental import sync_commits
from icefloe.delta.log import DeltaLog, absolute_location
from icefloe.delta.state import DELTA_TABLE_ID, DELTA_TIMESTAMP, DELTA_VERSION, parse_int
from icefloe.delta.target import DirectoryCatalog, load_table
from icefloe.exceptions import NoSuchSnapshotError, ValidationError
from icefloe.io import FileIO
from icefloe.progress import Progress, ProgressArg
from icefloe.table import Table

__all__ = ["ConvertResult", "convert"]


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
    log = DeltaLog(delta_path, io=io)  # a relative path is made absolute, as stored ones must
    root = log.location
    if metadata_location is not None:
        metadata_location = absolute_location(metadata_location)
    if location is not None:
        location = absolute_location(location)
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
        raise NoSuchSnapshotError(
            f"Delta table {root} has no version {target} (latest is {latest})"
        )
    previous = parse_int(table.properties.get(DELTA_VERSION)) if table is not None else None
    if table is not None and previous is None and not is_unfinished(table):
        raise ValidationError(
            f"Iceberg table {table.name} was not converted from Delta (no {DELTA_VERSION})"
        )
    if table is not None and previous is not None:
        _refuse_recreated(log, table, previous, latest)
    if previous is not None and previous == target:
        return ConvertResult(table, target, "unchanged", 0, previous)  # type: ignore[arg-type]
    if previous is not None and previous > target:
        raise ValidationError(
            f"Iceberg table {table.name} is already at Delta version {previous}, after {target}"  # type: ignore[union-attr]
        )
    if table is not None and previous is not None and log.has_commits(previous + 1, target):
        n = sync_commits(log, table, previous + 1, target, dv_mode, progress, check)
        return ConvertResult(table, target, "incremental", n, previous)

    reporter = _log_reporter(progress) if progress else None
    snap = log.snapshot(target, progress=reporter, json_stats=False)
    refuse_unreadable_mapping(root, target, snap.protocol, snap.metadata)
    if check:
        check_iceberg_compat_v3(snap).raise_if_failed()
    if table is not None and snap.metadata.id != table.properties.get(DELTA_TABLE_ID):
        raise ValidationError(
            f"Iceberg table {table.name} was converted from another Delta table "
            f"({table.properties.get(DELTA_TABLE_ID)}, now {snap.metadata.id})"
        )
    table, n = full_conversion(log, snap, catalog, ident, table, table_location, extra, dv_mode)
    return ConvertResult(table, target, "full", n, previous)


def _refuse_recreated(log: DeltaLog, table: Table, previous: int, latest: int) -> None:
    """Refuses a Delta table dropped and created again at the same path since the last sync:
    its versions restart at 0, so an "unchanged" answer or an incremental sync of its commits
    onto the old table's files would be wrong. The commit the table was synced to still has
    the timestamp recorded then (one file read); otherwise the table id of the latest version
    (a table keeps its id for life) must be the recorded one."""
    if previous <= latest and table.properties.get(DELTA_TIMESTAMP) == str(
        log.commit_timestamp(previous)
    ):
        return
    recorded = table.properties.get(DELTA_TABLE_ID)
    found = log.metadata_at(latest).id
    if found != recorded:
        raise ValidationError(
            f"Delta table {log.location} was created again since Iceberg table {table.name} "
            f"was synced (table id {recorded}, now {found}); convert it into a new Iceberg "
            "table"
        )
