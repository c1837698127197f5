"""The health checks of ``icefloe health`` and of the HTML report.

Each check measures one thing an operator acts on, gives a verdict (``ok``, ``info``,
``warn``, ``skipped``) and, when something is to be done, the exact command that does it:

- small files: data files under 3/4 of the target size, and what compaction would merge (its
  own plan: groups of two or more small files per partition, and files with deletes);
- delete debt: rows deleted by deletion vectors and position deletes, and the keys of equality
  deletes (keys, not rows: counted apart and out of the share), that every read still applies,
  apart from dangling delete files (no live data file left for them to apply to):
  compaction does not remove those, so their fix is the removal of dangling deletes;
- manifests: how many the current snapshot has against what its size needs
  (``commit.manifest.target-size-bytes``);
- snapshots: how many the retention policy (``history.expire.*`` and ref settings) would expire
  now;
- metadata log: previous metadata files against ``write.metadata.previous-versions-max``, and
  whether old ones are deleted after commits;
- unreferenced files: an optional dry-run orphan scan (it lists the table's storage);
- statistics: whether the current snapshot has table and partition statistics files, or only
  stale ones computed for an older snapshot;
- properties (only when some stored value is invalid): the properties icefloe refuses, which
  the other checks read as their defaults, and the command that removes them.

A table opened from a metadata file is read-only: its checks suggest no command that changes
the table, and say instead that it must be opened through its catalog for the fix.
"""

from __future__ import annotations

import dataclasses
import math
import shlex
import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.cli.analysis import FileStats, file_stats, missing_statistics_files
from icefloe.cli.names import show_name
from icefloe.cli.render import deletes_text, human_size, pct, plural, printable
from icefloe.exceptions import NotFoundError

__all__ = ["Check", "run_checks"]

DELETE_DEBT_WARN = 0.05
"""Deleted rows over live data rows from which delete debt is a warning."""
MANIFEST_EXCESS = 2
"""Manifests over the count their size needs from which a rewrite is advised."""
PREVIOUS_VERSIONS_MAX_DEFAULT = 100


@dataclass(frozen=True)
class Check:
    """One health check: what was measured, the verdict and the command that fixes it."""

    name: str
    value: str
    verdict: str
    detail: str
    fix: str | None
    measured: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _small_files(stats: FileStats, plan: Any, cmd: str) -> Check:
    """Small-file share, and what compaction (``plan_rewrite_data_files``) would merge."""
    act = plan.data_files > 0
    return Check(
        "small files",
        f"{stats.small_files:,} of {plural(stats.data_files, 'data file')} "
        f"({pct(stats.small_files, stats.data_files)}) under {human_size(stats.small_threshold)}",
        "warn" if act else "ok",
        f"compaction would rewrite {plural(plan.data_files, 'file')} "
        f"({human_size(plan.data_bytes)}) in {plural(plan.groups, 'group')}"
        if act
        else "compaction has nothing to merge",
        cmd if act else None,
        {
            "small_files": stats.small_files,
            "data_files": stats.data_files,
            "threshold_bytes": stats.small_threshold,
            "compaction_groups": plan.groups,
            "compaction_input_files": plan.data_files,
        },
    )


KINDS = ("dvs", "position_delete_files", "equality_delete_files")


def _delete_kinds(files: pa.Table) -> dict[str, int]:
    """Live delete files by kind: deletion vectors, position and equality delete files."""
    if not files.num_rows:
        return dict.fromkeys(KINDS, 0)
    content = files.column("content")
    puffin = pc.equal(pc.utf8_upper(files.column("file_format")), "PUFFIN")
    pos = pc.equal(content, 1)

    def count(mask: Any) -> int:
        return int(pc.sum(mask).as_py() or 0)

    return {
        "dvs": count(pc.and_(pos, puffin)),
        "position_delete_files": count(pc.and_(pos, pc.invert(puffin))),
        "equality_delete_files": count(pc.equal(content, 2)),
    }


def _rows_and_keys(files: pa.Table) -> tuple[int, int]:
    """Rows deleted by the position deletes and DVs among ``files``, and keys of its
    equality deletes (keys are not rows: how many rows they match is unknown)."""
    if not files.num_rows:
        return 0, 0
    equality = pc.equal(files.column("content"), 2)
    counts = files.column("record_count")
    total = int(pc.sum(counts).as_py() or 0)
    keys = int(pc.sum(pc.if_else(equality, counts, 0)).as_py() or 0)
    return total - keys, keys


def _delete_debt(stats: FileStats, dangling: pa.Table, cmd: str, remove_cmd: str) -> Check:
    """The deletes reads apply, and the dangling delete files (``dangling``, see
    :func:`icefloe.table.dangling_deletes.dangling_delete_files`) that only compaction's
    removal of dangling deletes drops: without them the advice to compact would repeat.
    The share of deleted rows counts position deletes and DVs; equality deletes are counted
    by their keys, apart."""
    stale = _delete_kinds(dangling)
    stale_files = dangling.num_rows
    stale_rows, stale_keys = _rows_and_keys(dangling)
    files = stats.delete_files - stale_files
    deleted = stats.delete_records - stale_rows
    keys = stats.equality_delete_keys - stale_keys
    ratio = deleted / stats.data_records if stats.data_records else 0.0
    verdict = "warn" if ratio >= DELETE_DEBT_WARN else "info"
    if not files:
        verdict = "info" if stale_files else "ok"
    live = _delete_kinds(stats.files)
    kinds = {k: live[k] - stale[k] for k in KINDS}
    names = (
        ("dvs", "DV", "DVs"),
        ("position_delete_files", "position delete file", "position delete files"),
    )
    parts = [plural(kinds[k], one, many) for k, one, many in names if kinds[k]]
    details = []
    if files:
        details.append(
            "every read applies these deletes; compaction rewrites the files without them"
        )
    if stale_files:
        what = plural(stale_files, "more delete file" if files else "delete file")
        details.append(
            f"{what} no live data file can apply to (dangling): removing them changes no row"
        )
    values = []
    if parts or not kinds["equality_delete_files"]:
        values.append(
            f"{plural(deleted, 'deleted row')} in {', '.join(parts) or '0 delete files'} "
            f"({pct(deleted, stats.data_records)} of {stats.data_records:,} rows)"
        )
    if kinds["equality_delete_files"]:
        eq_files = plural(kinds["equality_delete_files"], "equality delete file")
        values.append(f"{plural(keys, 'equality-delete key')} in {eq_files}")
    value = ", ".join(values)
    if stale_files:
        dangling_files = plural(stale_files, "dangling delete file")
        stale_text = deletes_text(stale_rows, stale_keys, stale["equality_delete_files"])
        value = (
            f"{value}, and {dangling_files}"
            if files
            else f"{dangling_files} ({stale_text}) and no other"
        )
    return Check(
        "delete debt",
        value,
        verdict,
        "; ".join(details) or "no delete files",
        remove_cmd if stale_files else cmd if files else None,
        {
            "delete_files": files,
            **kinds,
            "deleted_rows": deleted,
            "equality_delete_keys": keys,
            "data_rows": stats.data_records,
            "ratio": round(ratio, 4),
            "warn_from": DELETE_DEBT_WARN,
            "dangling_delete_files": stale_files,
            "dangling_deleted_rows": stale_rows,
            "dangling_equality_delete_keys": stale_keys,
        },
    )


def _manifests(table: Any, cmd: str) -> Check:
    from icefloe.properties import TableProperties, int_property

    m = table.inspect.manifests()
    target = int_property(
        table.properties,
        TableProperties.MANIFEST_TARGET_SIZE_BYTES,
        TableProperties.MANIFEST_TARGET_SIZE_BYTES_DEFAULT,
    )
    data = m.filter(pc.equal(m.column("content"), 0)) if m.num_rows else m
    count = data.num_rows
    total = int(pc.sum(data.column("length")).as_py() or 0) if count else 0
    specs = len(set(data.column("partition_spec_id").to_pylist())) if count else 0
    needed = max(specs, math.ceil(total / target)) if count else 0
    advise = count >= 2 and count >= MANIFEST_EXCESS * needed
    avg = total / count if count else 0
    return Check(
        "manifests",
        f"{plural(count, 'data manifest')}, {plural(m.num_rows - count, 'delete manifest')}, "
        f"average {human_size(avg)} (target {human_size(target)})",
        "warn" if advise else "ok",
        f"their size needs {needed}; rewriting regroups entries by partition"
        if advise
        else "the manifest count fits the table's size",
        cmd if advise else None,
        {
            "data_manifests": count,
            "delete_manifests": m.num_rows - count,
            "total_bytes": total,
            "target_bytes": target,
            "needed": needed,
        },
    )


_SPAN_UNITS = (
    (86_400_000, "day"),
    (3_600_000, "hour"),
    (60_000, "minute"),
    (1000, "second"),
    (1, "ms"),
)


def _span(ms_text: str) -> str:
    """A ``...-ms`` property as people read it: ``5 days``, ``1.5 hours``, ``30 seconds``,
    ``1 ms`` (a value that is not a number as written)."""
    try:
        ms = int(ms_text)
    except ValueError:
        return f"{printable(ms_text)} ms"
    for size, unit in _SPAN_UNITS:
        if abs(ms) >= size or size == 1:
            value = f"{ms / size:,.1f}".removesuffix(".0")
            if unit == "ms" or value == "1":
                return f"{value} {unit}"
            return f"{value} {unit}s"
    raise AssertionError("unreachable")


def _snapshots(table: Any, cmd: str) -> Check:
    from icefloe.table.expire import retained_snapshots

    meta = table.metadata
    now = int(time.time() * 1000)
    keep, refs = retained_snapshots(meta, now)
    expired = [s for s in meta.snapshots if s.snapshot_id not in keep]
    oldest = min((s.timestamp_ms for s in meta.snapshots), default=None)
    age = ""
    if oldest is not None:
        span = _span(str(abs(now - oldest)))
        # Writers whose clocks run ahead of this machine's date snapshots in the future.
        age = f", oldest {span} old" if oldest <= now else f", oldest dated {span} from now"
    max_age = meta.properties.get("history.expire.max-snapshot-age-ms", str(5 * 86_400_000))
    return Check(
        "snapshots",
        f"{plural(len(meta.snapshots), 'snapshot')}{age}; {len(expired) or 'none'} past retention",
        "warn" if expired or refs else "ok",
        f"retention keeps {_span(max_age)} and at least "
        f"{meta.properties.get('history.expire.min-snapshots-to-keep', '1')} per branch"
        + (f"; refs past their age: {', '.join(refs)}" if refs else ""),
        cmd if expired or refs else None,
        {
            "snapshots": len(meta.snapshots),
            "expirable": len(expired),
            "expirable_refs": list(refs),
            "oldest_ms": oldest,
        },
    )


def _metadata_log(table: Any, set_cmd: str) -> Check:
    from icefloe.properties import TableProperties, bool_property, int_property

    props = table.properties
    log = len(table.metadata.metadata_log)
    limit = max(
        1,
        int_property(
            props,
            TableProperties.METADATA_PREVIOUS_VERSIONS_MAX,
            PREVIOUS_VERSIONS_MAX_DEFAULT,
            lenient=True,
        ),
    )
    cleans = bool_property(
        props, TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED, False, lenient=True
    )
    full = log >= limit
    warn = full and not cleans
    return Check(
        "metadata log",
        f"{plural(log, 'previous metadata file')} (max {limit}, delete-after-commit "
        f"{'on' if cleans else 'off'})",
        "warn" if warn else "ok",
        "metadata files dropped from the log stay on storage until deleted"
        if warn
        else "the log is within its limit"
        if not full
        else "old metadata files are deleted",
        set_cmd if warn else None,
        {"previous_metadata_files": log, "max": limit, "delete_after_commit": cleans},
    )


def _orphans(table: Any, scan: bool, cmd: str, health_cmd: str) -> Check:
    if not scan:
        return Check(
            "unreferenced files",
            "not checked (it lists the table's storage)",
            "skipped",
            "run the check with --orphans",
            health_cmd,
            {},
        )
    try:
        orphans = table.remove_orphan_files(dry_run=True)
    except NotFoundError:
        if _location_exists(table):
            raise
        orphans = []
    if not orphans and not _location_exists(table):
        # nothing was listed there: the table's files live elsewhere, none was looked at
        where = table.location
        return Check(
            "unreferenced files",
            f"not checked: the table's location {where} does not exist",
            "warn",
            "the location holds none of the table's files (they live elsewhere), so orphan "
            "files cannot be looked for; the metadata's location may be wrong",
            None,
            {"files": None, "bytes": None, "paths": [], "location_exists": False},
        )
    sizes = {f.location: f.size for f in table.io.list_prefix(table.location)} if orphans else {}
    total = sum(sizes.get(o, 0) for o in orphans)
    return Check(
        "unreferenced files",
        f"{plural(len(orphans), 'file')} ({human_size(total)}) older than 3 days that no "
        "metadata reaches",
        "warn" if orphans else "ok",
        "leftovers of failed or interrupted writes" if orphans else "no orphan files",
        cmd if orphans else None,
        {"files": len(orphans), "bytes": total, "paths": orphans[:100]},
    )


def _location_exists(table: Any) -> bool:
    """Whether the table's location is a directory (on object stores: a non-empty prefix);
    True when that cannot be told (the listing itself would have failed)."""
    try:
        return bool(table.io.is_dir(table.location))
    except Exception:
        return True


def _statistics(table: Any, cmd: str) -> Check:
    """Whether the current snapshot has table and partition statistics, or only stale ones
    (computed for an older snapshot: Spark's optimiser ignores those)."""
    from icefloe.table.statistics import statistics_status

    meta = table.metadata
    status = statistics_status(meta)
    if status.snapshot_id is None:
        return Check("statistics", "no snapshot", "ok", "an empty table needs none", None, {})
    partitioned = any(s.fields for s in meta.partition_specs)
    kinds = [("table", status.table_statistics_behind)]
    if partitioned:
        kinds.append(("partition", status.partition_statistics_behind))
    missing = [n for n, behind in kinds if behind is None]
    stale = [(n, behind) for n, behind in kinds if behind]
    current = [n for n, behind in kinds if behind == 0]
    gone = missing_statistics_files(table, status)
    if gone:
        return Check(
            "statistics",
            f"{' and '.join(n for n, _ in gone)} statistics file missing",
            "warn",
            f"registered but not in storage: {', '.join(p for _, p in gone)}",
            cmd,
            {"missing_files": [p for _, p in gone]},
        )
    parts = []
    if current:
        parts.append(f"{' and '.join(current)} statistics current")
    if stale:
        parts.append(
            ", ".join(
                f"{n} statistics {b} snapshot{'s' if b != 1 else ''} behind" for n, b in stale
            )
        )
    if missing:
        parts.append(f"no {' or '.join(missing)} statistics")
    if stale:
        verdict, detail = (
            "warn",
            "stale statistics: Spark's optimiser uses only the current snapshot's",
        )
    elif missing:
        verdict, detail = "info", "engines use NDV sketches for join planning"
    else:
        verdict, detail = "ok", "statistics are current"
    return Check(
        "statistics",
        "; ".join(parts),
        verdict,
        detail,
        cmd if verdict != "ok" else None,
        {
            "table_statistics_snapshot_id": status.table_statistics_snapshot_id,
            "table_statistics_behind": status.table_statistics_behind,
            "partition_statistics_snapshot_id": status.partition_statistics_snapshot_id,
            "partition_statistics_behind": status.partition_statistics_behind,
        },
    )


def _properties(table: Any, invalid: dict[str, str], prog: str, name: str) -> Check:
    """The stored properties icefloe refuses (another engine wrote them): the other checks
    read their defaults; writes that read one refuse the table until it is fixed. The fix
    removes them (back to their defaults), except ``gc.enabled``, which is set to what it is
    read as: its default (true) would let expiry and orphan removal delete files the table's
    owner turned deletion off for."""
    from icefloe.cli.property_defaults import how_read
    from icefloe.properties import TableProperties, gc_enabled

    props = table.properties
    gc_key = TableProperties.GC_ENABLED
    removed = [k for k in invalid if k != gc_key]
    fixes = []
    if removed:
        fixes.append(f"{prog} properties remove {name} {' '.join(shlex.quote(k) for k in removed)}")
    if gc_key in invalid:
        value = str(gc_enabled(props)).lower()
        fixes.append(f"{prog} properties set {name} {gc_key} {value}")
    return Check(
        "properties",
        "; ".join(
            f"{reason.removeprefix('table property ')} ({how_read(k, props)})"
            for k, reason in invalid.items()
        ),
        "warn",
        "the other checks read them as noted; a write may refuse the table until they are "
        "removed (back to their defaults; gc.enabled is set to what it is read as) or set to "
        "valid values (properties set TABLE KEY VALUE)",
        " && ".join(fixes),
        {"invalid": {k: props[k] for k in invalid}, "reasons": dict(invalid)},
    )


def _needs_catalog(check: Check, name: str) -> Check:
    """``check`` of a table opened read-only from a metadata file: its fix, which changes the
    table, becomes a note that the table must be opened through its catalog to run it."""
    if check.fix is None:
        return check
    command = check.fix.replace(f" {name}", " TABLE")  # each command of a joined fix
    detail = (
        f"{check.detail}; to fix, open the table through its catalog (a metadata file opens "
        f"read-only): {command}"
    )
    return dataclasses.replace(check, detail=detail, fix=None)


def run_checks(table: Any, prog: str = "icefloe", orphans: bool = False) -> list[Check]:
    """Every check on ``table``; ``prog`` prefixes the fixing commands (e.g. with
    ``--catalog``); ``orphans`` runs the dry-run orphan scan. A read-only table (opened from
    a metadata file) gets only fixes that work on it. Properties icefloe refuses get a check
    of their own and their defaults in the other checks."""
    from icefloe.cli.property_defaults import invalid_properties, using_defaults
    from icefloe.table.dangling_deletes import dangling_delete_files
    from icefloe.table.static import StaticTable

    # the name as commands take it back (a part with a dot quoted); a static table's is its path
    name = shlex.quote(
        table.name if isinstance(table, StaticTable) else show_name(tuple(table.identifier))
    )
    invalid = invalid_properties(table.properties)
    stored, table = table, using_defaults(table, invalid)
    stats = file_stats(table)
    plan = table.plan_rewrite_data_files()
    dangling = dangling_delete_files(table.io, table.metadata)
    rescan = f"{prog} health {name} --orphans"
    compact = f"{prog} compact {name}"
    checks = [
        _small_files(stats, plan, compact),
        _delete_debt(stats, dangling, compact, f"{compact} --remove-dangling-deletes"),
        _manifests(table, f"{prog} rewrite-manifests {name}"),
        _snapshots(table, f"{prog} expire {name}"),
        _metadata_log(
            table,
            f"{prog} properties set {name} write.metadata.delete-after-commit.enabled true",
        ),
        _orphans(table, orphans, f"{prog} orphans {name}", rescan),
        _statistics(table, f"{prog} compute-stats {name}"),
    ]
    if invalid:
        checks.append(_properties(stored, invalid, prog, name))
    if not isinstance(table, StaticTable):
        return checks
    return [c if c.fix == rescan else _needs_catalog(c, name) for c in checks]
