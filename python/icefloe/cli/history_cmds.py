"""``icefloe snapshots``: the table's history as a timeline in the terminal.

One column per snapshot along a time axis, one lane per branch (snapshots on ``main`` first,
then those only another branch reaches), tags as marks on their own lane; each mark is coloured
by its operation. Below, one row per snapshot with added and deleted rows and the table's total
size as bars (and the keys of equality deletes, which are not rows, when there are any).
"""

from __future__ import annotations

from typing import Any

import click
from rich import box
from rich.table import Table as RichTable
from rich.text import Text

from icefloe.cli.analysis import Timeline, axis_positions, timeline
from icefloe.cli.app import State, json_option, pass_state
from icefloe.cli.render import OP_COLORS, bar, esc, human_size, literal, plural, printable, ts

__all__ = ["draw_timeline", "duration", "register"]

_MARK = "●"
_TAG = "◆"


def duration(ms: int) -> str:
    """A span of milliseconds as ``1.2 s``, ``3 min``, ``5.0 h`` or ``2.1 d``."""
    s = ms / 1000
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{s / 60:.0f} min"
    if s < 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


def _line(label: str, label_w: int, cells: list[tuple[str, str]]) -> Text:
    """A lane: its label and its cells, runs of one style merged."""
    line = Text()
    line.append(label.ljust(label_w), style="bold")
    run, run_style = "", ""
    for ch, style in cells:
        if style != run_style and run:
            line.append(run, style=run_style)
            run = ""
        run, run_style = run + ch, style
    if run:
        line.append(run, style=run_style)
    line.rstrip()
    return line


def draw_timeline(tl: Timeline, width: int) -> list[Text]:
    """The lanes of ``tl`` drawn for a terminal ``width`` columns wide."""
    label_w = max([len(printable(n)) for n in tl.lanes] + [4]) + 2
    axis_w = max(width - label_w - 1, 10)
    points = tl.points
    dropped = 0
    if len(points) > axis_w // 2:  # keep the newest that fit
        dropped = len(points) - axis_w // 2
        points = points[dropped:]
    cols = axis_positions(points, axis_w)
    x_of = {p.snapshot_id: x for p, x in zip(points, cols, strict=True)}
    lines: list[Text] = []
    left, right = ts(points[0].timestamp_ms), ts(points[-1].timestamp_ms)
    head = Text(" " * label_w)
    head.append(left, style="dim")
    if len(points) > 1:
        head.append(" " * max(axis_w - len(left) - len(right), 1))
        head.append(right, style="dim")
    lines.append(head)
    axis = Text(" " * label_w)
    axis.append("├" + "─" * max(axis_w - 2, 0) + "┤", style="dim")
    lines.append(axis)
    for lane in tl.lanes:
        cells: list[tuple[str, str]] = [(" ", "")] * axis_w
        mine = [(p, x_of[p.snapshot_id]) for p in points if p.lane == lane]
        if not mine:
            continue
        first_x, last_x = mine[0][1], mine[-1][1]
        fork = mine[0][0].parent_id
        if lane != "main" and fork in x_of and x_of[fork] < first_x:
            first_x = x_of[fork]
            cells[first_x] = ("╰", "dim")
        for x in range(first_x, last_x + 1):
            if cells[x][0] == " ":
                cells[x] = ("─", "dim")
        for p, x in mine:
            cells[x] = (_MARK, f"bold {OP_COLORS.get(p.operation, 'white')}")
        lines.append(_line(printable(lane), label_w, cells))
    if tl.tags:
        cells = [(" ", "")] * axis_w
        for name, sid in sorted(tl.tags.items(), key=lambda kv: x_of.get(kv[1], -1)):
            if sid not in x_of:
                continue
            x = x_of[sid]
            label = _TAG + printable(name)
            if all(cells[i][0] == " " for i in range(x, min(x + len(label) + 1, axis_w))):
                for i, ch in enumerate(label[: axis_w - x]):
                    cells[x + i] = (ch, "bold magenta")
            elif cells[x][0] in (" ", _TAG):  # never over another tag's label
                cells[x] = (_TAG, "bold magenta")
        lines.append(_line("tags", label_w, cells))
    legend = Text(" " * label_w)
    for op in sorted({p.operation for p in points}):
        legend.append(_MARK + " ", style=f"bold {OP_COLORS.get(op, 'white')}")
        legend.append(printable(op) + "  ")
    lines.append(legend)
    if dropped:
        lines.append(Text(f"({dropped} older snapshots not drawn)", style="dim"))
    return lines


#: Lane (branch) names wider than this are cut in the table, so the other columns keep room.
_LANE_MAX = 24


def _table(tl: Timeline, width: int, limit: int) -> RichTable:
    """One row per snapshot (the newest ``limit``, 0 for all); narrow terminals drop the time
    and lane columns."""
    pts = tl.points if limit == 0 else tl.points[-limit:]
    tags: dict[int, list[str]] = {}
    for name, sid in tl.tags.items():
        tags.setdefault(sid, []).append(_TAG + printable(name))
    lane_w = min(_LANE_MAX, max(len(printable(n)) for n in tl.lanes))
    tag_w = max([len(" ".join(v)) for v in tags.values()] + [0])
    wide = width >= 100
    keys = any(p.equality_delete_keys for p in pts)  # equality deletes hold keys, not rows
    fixed = 19 + 9 + 7 + 7 + 9 + tag_w + (14 + lane_w + 4 if wide else 0) + 10 + 8 * keys
    bar_w = max(2, min(12, (width - fixed) // 3))
    max_rows = max([max(p.added_records, p.deleted_records) for p in pts] + [1])
    max_size = max([p.total_size or 0 for p in pts] + [1])
    t = RichTable(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    # ids are what a user copies into --snapshot: never cut (bars shrink first)
    t.add_column("snapshot", no_wrap=True, min_width=19)
    if wide:
        t.add_column("time (UTC)", no_wrap=True, min_width=14)
    t.add_column("operation", no_wrap=True)
    if wide:
        t.add_column("lane", no_wrap=True, max_width=_LANE_MAX)
    t.add_column("+rows", justify="right", no_wrap=True)
    t.add_column("", no_wrap=True, min_width=bar_w)
    t.add_column("-rows", justify="right", no_wrap=True)
    t.add_column("", no_wrap=True, min_width=bar_w)
    if keys:
        t.add_column("eq keys", justify="right", no_wrap=True)
    t.add_column("size", justify="right", no_wrap=True)
    t.add_column("", no_wrap=True, min_width=bar_w)
    if tags:
        t.add_column("tags", no_wrap=True, style="magenta")
    for p in pts:
        row: list[Any] = [str(p.snapshot_id).ljust(19)]  # ids vary in length: fixed column
        if wide:
            row.append(ts(p.timestamp_ms)[5:])
        row.append(literal(p.operation, style=OP_COLORS.get(p.operation, "")))
        if wide:
            row.append(literal(p.lane))
        row += [
            f"{p.added_records:,}",
            bar(p.added_records, max_rows, bar_w, "green"),
            f"{p.deleted_records:,}",
            bar(p.deleted_records, max_rows, bar_w, "red"),
        ]
        if keys:
            row.append(f"{p.equality_delete_keys:,}" if p.equality_delete_keys else "-")
        row += [human_size(p.total_size), bar(p.total_size or 0, max_size, bar_w, "blue")]
        if tags:
            row.append(Text(" ".join(sorted(tags.get(p.snapshot_id, [])))))
        t.add_row(*row)
    return t


@click.command("snapshots", short_help="The history as a timeline.")
@click.argument("table")
@click.option(
    "--limit",
    type=click.IntRange(0),
    default=30,
    show_default=True,
    help="Newest snapshots listed under the timeline (0: all).",
)
@json_option
@pass_state
def snapshots(state: State, table: str, limit: int, as_json: bool) -> None:
    """The history of TABLE as a timeline: branches and tags as lanes, operations coloured,
    added/deleted rows and total size as bars."""
    t = state.table(table)
    tl = timeline(t.metadata)
    if as_json:
        doc: dict[str, Any] = {"table": t.name, **tl.to_json()}
        state.out.json(doc)
        return
    console = state.out.console
    if not tl.points:
        console.print(literal(f"{t.name} has no snapshots"))
        return
    span = duration(tl.end_ms - tl.start_ms)
    console.print(
        f"[bold]{esc(t.name)}[/] · {plural(len(tl.points), 'snapshot')} · "
        f"{plural(len(tl.heads), 'branch', 'branches')} · {plural(len(tl.tags), 'tag')} · "
        f"over {span}"
    )
    console.print()
    for line in draw_timeline(tl, console.width):
        console.print(line, no_wrap=True, overflow="crop")
    console.print()
    console.print(_table(tl, console.width, limit))
    hidden = len(tl.points) - limit if limit else 0
    if hidden > 0:
        console.print(f"[dim]({hidden} older snapshots not listed; --limit 0 lists all)[/]")


def register(group: click.Group) -> None:
    """Add the ``snapshots`` command to ``group``; returns None."""
    group.add_command(snapshots)
