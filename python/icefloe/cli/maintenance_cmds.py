"""Maintenance: ``expire``, ``compact``, ``orphans`` and ``rewrite-manifests``, each with
``--dry-run``, a progress bar on standard error while files are read or deleted, and a summary
(``--json`` for scripts). Table properties apply as in the table API (``history.expire.*``,
``write.target-file-size-bytes``, ``commit.manifest.target-size-bytes``)."""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable

from icefloe.cli.analysis import check_snapshot
from icefloe.cli.app import State, json_option, pass_state
from icefloe.cli.errors import EXIT_INTERRUPTED
from icefloe.cli.names import display_name
from icefloe.cli.render import esc, human_size, literal, parse_size, plural
from icefloe.exceptions import NoSuchSnapshotError, ValidationError
from icefloe.metadata import MAIN_BRANCH
from icefloe.values import epoch_ms

__all__ = ["parse_age", "register"]

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d|w)\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_UNIT_MS["w"] = 7 * _UNIT_MS["d"]


#: Orphan removal keeps files younger than this unless told otherwise (as Java's procedure).
_RECENT_MS = 86_400_000


def parse_age(text: str, now_ms: int | None = None) -> int:
    """``7d``, ``12h``, ``30min`` (an age) or an ISO 8601 time, as epoch milliseconds."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    m = _AGE.match(text)
    if m:
        # exact arithmetic: a float would overflow on a long run of digits
        age = int(decimal.Decimal(m.group(1)) * _UNIT_MS[m.group(2)])
        if now - age < 0:
            raise ValidationError(f"age out of range: {text!r} (it reaches before 1970)")
        return now - age
    try:
        t = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValidationError(
            f"not an age or a time: {text!r} (try 7d, 12h, 30min or 2026-01-31T00:00:00+00:00)"
        ) from None
    return epoch_ms(t, "time")  # exact: float seconds can be a millisecond early


@contextlib.contextmanager
def _progress(state: State, what: str, quiet: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on standard error, fed by the table API's ``progress=`` callback;
    it appears with the first step, so failures before any work draw no bar. Only on a
    terminal (or with ``--color``): a log file or pipe gets no bar."""
    if quiet or not state.out.err.is_terminal:
        yield None
        return
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=state.out.err,
    )
    task: list[Any] = []

    def update(done: int, total: int) -> None:
        if not task:
            task.append(bar.add_task(what, total=total))
            bar.start()
        bar.update(task[0], completed=done, total=total)

    try:
        yield update
    finally:
        if task:
            bar.stop()


@contextlib.contextmanager
def _interruptible(state: State, table: Any, identifier: str) -> Iterator[None]:
    """A Ctrl-C inside says whether the change was committed before the command exits with
    :data:`EXIT_INTERRUPTED`: the commit may be done while files are still being deleted, and
    a plain "Aborted!" would leave the user to think nothing happened."""
    before = table.metadata_location
    try:
        yield
    except KeyboardInterrupt:
        err = state.out.err
        name = esc(table.name)
        try:
            now = state.table(identifier).metadata_location
        except Exception as exc:  # the catalog cannot say: neither can we
            err.print(
                f"interrupted: cannot tell whether {name} changed ({esc(type(exc).__name__)}); "
                "look at its snapshots before running the command again",
                soft_wrap=True,
            )
        else:
            if now == before:
                err.print(f"interrupted before the commit: {name} is unchanged", soft_wrap=True)
            else:
                err.print(
                    f"interrupted after the commit: {name} changed; files it was removing may "
                    f"be left (icefloe orphans {esc(identifier)} finds them)",
                    soft_wrap=True,
                )
        raise SystemExit(EXIT_INTERRUPTED) from None


def _summary(state: State, title: str, rows: list[tuple[str, Any]]) -> None:
    t = RichTable.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column(justify="right")
    for k, v in rows:
        t.add_row(literal(k), literal(v))
    state.out.console.print(title)
    state.out.console.print(t)


def _check_branch(table: Any, branch: str) -> None:
    """Refuse a ``--branch`` that is not a branch of ``table`` (the API would create it);
    ``main`` of a table without snapshots is no error: there is nothing to rewrite."""
    ref = table.metadata.refs.get(branch)
    if ref is None and branch != MAIN_BRANCH:
        raise NoSuchSnapshotError(f"table {table.name} has no branch {branch!r}")
    if ref is not None and not ref.is_branch:
        raise ValidationError(f"{branch!r} is a tag of table {table.name}, not a branch")


def _head(table: Any, branch: str) -> int | None:
    """The id of the snapshot at the head of ``branch`` (None: no snapshot yet)."""
    ref = table.metadata.refs.get(branch)
    return ref.snapshot_id if ref is not None else None


@click.command("expire", short_help="Expire old snapshots and their files.")
@click.argument("table")
@click.option("--older-than", help="Expire snapshots older than this age or time (7d, ISO).")
@click.option("--retain-last", type=click.IntRange(1), help="Keep at least this many per branch.")
@click.option("--snapshot-id", "snapshot_ids", type=int, multiple=True, help="Expire this one.")
@click.option("--keep-files", is_flag=True, help="Only change metadata; delete no files.")
@click.option("--dry-run", is_flag=True, help="Show what would be expired; change nothing.")
@json_option
@pass_state
def expire(
    state: State,
    table: str,
    older_than: str | None,
    retain_last: int | None,
    snapshot_ids: tuple[int, ...],
    keep_files: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Expire snapshots of TABLE by the retention policy and delete the files only they used."""
    t = state.table(table)
    for sid in snapshot_ids:
        check_snapshot(t, sid)  # a missing snapshot is not found, not bad input
    with (
        _interruptible(state, t, table),
        _progress(state, "deleting files", as_json or dry_run) as progress,
    ):
        r = t.expire_snapshots(
            older_than_ms=parse_age(older_than) if older_than else None,
            retain_last=retain_last,
            snapshot_ids=list(snapshot_ids) or None,
            delete_files=not keep_files,
            dry_run=dry_run,
            progress=progress,
        )
    # with --keep-files the expired snapshots' files are not looked for (no manifest is read):
    # their counts are unknown, not zero
    counted = not keep_files
    kinds = {
        "manifest_lists": r.manifest_lists,
        "manifests": r.manifests,
        "data_files": r.data_files,
        "delete_files": r.delete_files,
        "statistics_files": r.statistics_files,
    }
    doc = {
        "table": display_name(t),
        "dry_run": dry_run,
        "snapshots": list(r.snapshot_ids),
        "refs": list(r.removed_refs),
        **{k: len(v) if counted else None for k, v in kinds.items()},
        "files_deleted": r.files_deleted,
        "files_not_deleted": list(r.files_not_deleted),
        "files_error": r.files_error or None,
    }
    if as_json:
        state.out.json(doc)
        return
    verb = "would expire" if dry_run else "expired"
    gone = "would delete" if dry_run else "deleted"
    file_rows: list[tuple[str, int | str]] = (
        [(f"{k.replace('_', ' ')} ({gone})", len(v)) for k, v in kinds.items()]
        if counted
        else [("files", "left in place (remove orphan files to delete them)")]
    )
    _summary(
        state,
        f"[bold]{esc(display_name(t))}[/]: {verb} {plural(len(r.snapshot_ids), 'snapshot')}",
        [
            ("snapshots", len(r.snapshot_ids)),
            ("refs", len(r.removed_refs)),
            *file_rows,
            *(
                [("files that could not be deleted", len(r.files_not_deleted))]
                if r.files_not_deleted
                else []
            ),
            *([("files", f"left in place: {r.files_error}")] if r.files_error else []),
        ],
    )


@click.command("compact", short_help="Merge small files and apply deletes.")
@click.argument("table")
@click.option("--filter", "row_filter", help="Only files that may hold rows matching this.")
@click.option("--target-file-size", help="Target size of the new files (e.g. 128MiB).")
@click.option("--min-input-files", type=click.IntRange(1), default=2, show_default=True)
@click.option("--branch", default="main", show_default=True, help="An existing branch.")
@click.option(
    "--remove-dangling-deletes",
    is_flag=True,
    help="Then remove delete files no live data file can apply to (also with nothing to merge).",
)
@click.option("--dry-run", is_flag=True, help="Show what would be rewritten; change nothing.")
@json_option
@pass_state
def compact(
    state: State,
    table: str,
    row_filter: str | None,
    target_file_size: str | None,
    min_input_files: int,
    branch: str,
    remove_dangling_deletes: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Merge small data files of TABLE and apply their deletes, in one replace snapshot.

    With --remove-dangling-deletes, delete files that can no longer apply to any row (left by
    partition-scoped position deletes and equality deletes) are removed afterwards in a second
    replace snapshot."""
    t = state.table(table)
    _check_branch(t, branch)
    target = parse_size(target_file_size) if target_file_size else None
    args: dict[str, Any] = {
        "target_file_size": target,
        "min_input_files": min_input_files,
        "branch": branch,
    }
    if row_filter:
        args["row_filter"] = row_filter
    plan = t.plan_rewrite_data_files(**args)
    doc: dict[str, Any] = {
        "table": display_name(t),
        "dry_run": dry_run,
        "target_file_size": plan.target_file_size,
        "groups": plan.groups,
        "rewritten_data_files": plan.data_files,
        "rewritten_bytes": plan.data_bytes,
        "removed_delete_files": plan.delete_files,
        "added_data_files": None,
        "snapshot_id": None,
    }
    if not dry_run and plan.data_files:
        with (
            _interruptible(state, t, table),
            _progress(state, "rewriting files", as_json) as progress,
        ):
            r = t.rewrite_data_files(**args, progress=progress)
        doc.update(
            rewritten_data_files=r.rewritten_data_files,
            rewritten_bytes=r.rewritten_bytes,
            removed_delete_files=r.removed_delete_files,
            added_data_files=r.added_data_files,
            snapshot_id=_head(t, branch),
        )
    dangling: int | None = None
    if remove_dangling_deletes:
        # after the compaction's commit (as Iceberg Java's option): the files it left
        fresh = t.refresh()
        with _interruptible(state, fresh, table):
            found = fresh.remove_dangling_deletes(branch=branch, dry_run=dry_run)
        dangling = found.removed_delete_files
        if dry_run and plan.data_files:
            # which files compaction leaves dangling is known only once it has run
            doc["dangling_delete_files_now"] = dangling
            dangling = None
        doc["removed_dangling_delete_files"] = dangling
        if dangling and not dry_run:
            doc["snapshot_id"] = _head(t, branch)
    if as_json:
        state.out.json(doc)
        return
    if not plan.data_files:
        if dangling is None:
            state.out.console.print(f"[bold]{esc(display_name(t))}[/]: nothing to compact")
        else:
            _dangling_line(state, display_name(t), dangling, dry_run)
        return
    verb = "would rewrite" if dry_run else "rewrote"
    rows: list[tuple[str, Any]] = [
        ("groups", doc["groups"]),
        ("data files in", doc["rewritten_data_files"]),
        ("bytes in", human_size(doc["rewritten_bytes"])),
        ("delete files removed", doc["removed_delete_files"]),
        ("target file size", human_size(doc["target_file_size"])),
    ]
    if not dry_run:
        rows.insert(2, ("data files out", doc["added_data_files"]))
        rows.append(("snapshot", doc["snapshot_id"]))
    files = plural(doc["rewritten_data_files"], "data file")
    _summary(state, f"[bold]{esc(display_name(t))}[/]: {verb} {files}", rows)
    if dangling is not None:
        _dangling_line(state, display_name(t), dangling, dry_run)
    elif remove_dangling_deletes:
        now = plural(doc["dangling_delete_files_now"], "dangling delete file")
        state.out.console.print(
            f"[bold]{esc(display_name(t))}[/]: dangling delete files are found after compaction: "
            f"unknown in a dry run ({now} before it)"
        )


def _dangling_line(state: State, name: str, removed: int, dry_run: bool) -> None:
    verb = "would remove" if dry_run else "removed"
    files = plural(removed, "dangling delete file")
    state.out.console.print(f"[bold]{esc(name)}[/]: {verb} {files}")


@click.command("orphans", short_help="Delete files no metadata references.")
@click.argument("table")
@click.option(
    "--older-than",
    default="3d",
    show_default=True,
    help="Only files last modified before this age or time.",
)
@click.option("--location", help="Scan this prefix instead of the table location.")
@click.option("--dry-run", is_flag=True, help="List the orphan files; delete nothing.")
@click.option(
    "--allow-recent",
    is_flag=True,
    help="Delete files younger than a day too (only when no other writer is running).",
)
@click.option(
    "--limit",
    type=click.IntRange(0),
    default=20,
    show_default=True,
    help="Paths listed in the text output (0: all).",
)
@json_option
@pass_state
def orphans(
    state: State,
    table: str,
    older_than: str,
    location: str | None,
    dry_run: bool,
    allow_recent: bool,
    limit: int,
    as_json: bool,
) -> None:
    """Delete files under TABLE's location that no metadata references (leftovers of failed
    writes), when older than --older-than."""
    cutoff = parse_age(older_than)
    if not dry_run and not allow_recent and time.time() * 1000 - cutoff < _RECENT_MS:
        raise ValidationError(
            "--older-than is less than a day: files that young may belong to a write still in "
            "progress, whose commit would then name deleted files (the table would not read); "
            "use --older-than 1d or more, or --allow-recent when no other writer is running"
        )
    t = state.table(table)
    deleted = [0]  # files deleted so far, as the progress callback counts them
    try:
        with _progress(state, "deleting orphan files", as_json or dry_run) as bar:

            def progress(done: int, total: int) -> None:
                deleted[0] = done
                if bar is not None:
                    bar(done, total)

            found = t.remove_orphan_files(
                cutoff, dry_run=dry_run, location=location, progress=progress
            )
    except KeyboardInterrupt:
        state.out.err.print(
            f"interrupted: {esc(display_name(t))} is unchanged (orphans changes no metadata); "
            f"at least {plural(deleted[0], 'orphan file')} deleted before the stop, run the "
            "command again to finish",
            soft_wrap=True,
        )
        raise SystemExit(EXIT_INTERRUPTED) from None
    if as_json:
        state.out.json({"table": display_name(t), "dry_run": dry_run, "orphan_files": found})
        return
    verb = "found" if dry_run else "deleted"
    console = state.out.console
    console.print(f"[bold]{esc(display_name(t))}[/]: {verb} {plural(len(found), 'orphan file')}")
    shown = found if limit == 0 else found[:limit]
    for p in shown:
        console.print(literal(f"  {p}"), soft_wrap=True)
    if len(shown) < len(found):
        console.print(f"[dim]  ({len(found) - len(shown)} more; --limit 0 lists all)[/]")


@click.command("rewrite-manifests", short_help="Regroup manifests by partition.")
@click.argument("table")
@click.option("--spec-id", type=int, help="Only manifests of this partition spec.")
@click.option("--target-manifest-size", help="Target manifest size (default: table property).")
@click.option("--branch", default="main", show_default=True, help="An existing branch.")
@click.option("--dry-run", is_flag=True, help="Show what would be rewritten; change nothing.")
@json_option
@pass_state
def rewrite_manifests(
    state: State,
    table: str,
    spec_id: int | None,
    target_manifest_size: str | None,
    branch: str,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Regroup TABLE's data manifests by partition into target-sized manifests."""
    t = state.table(table)
    _check_branch(t, branch)
    target = parse_size(target_manifest_size) if target_manifest_size else None
    before = _head(t, branch)
    with _interruptible(state, t, table):
        r = t.rewrite_manifests(
            spec_id=spec_id, target_manifest_size=target, branch=branch, dry_run=dry_run
        )
    committed = not dry_run and r.rewritten_manifests > 0
    doc = {
        "table": display_name(t),
        "dry_run": dry_run,
        "rewritten_manifests": r.rewritten_manifests,
        "added_manifests": r.added_manifests,
        "kept_manifests": r.kept_manifests,
        "entries": r.entries,
        "snapshot_id": r.snapshot_id if committed else None,
        "parent_snapshot_id": before if committed else None,
    }
    if as_json:
        state.out.json(doc)
        return
    if not r.rewritten_manifests:
        state.out.console.print(
            f"[bold]{esc(display_name(t))}[/]: nothing to rewrite "
            "(the manifests are already grouped)"
        )
        return
    verb = "would rewrite" if dry_run else "rewrote"
    rows: list[tuple[str, Any]] = [
        ("manifests in", r.rewritten_manifests),
        ("manifests out", r.added_manifests),
        ("manifests kept", r.kept_manifests),
        ("entries", r.entries),
    ]
    if committed:
        rows.append(("snapshot", r.snapshot_id))
    title = f"[bold]{esc(display_name(t))}[/]: {verb} {plural(r.rewritten_manifests, 'manifest')}"
    _summary(state, title, rows)


def register(group: click.Group) -> None:
    """Add the maintenance commands (``expire``, ``compact``, ...) to ``group``; returns None."""
    for command in (expire, compact, orphans, rewrite_manifests):
        group.add_command(command)
