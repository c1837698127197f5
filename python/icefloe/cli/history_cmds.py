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
from icefloe.cli.names import display_name
from icefloe.cli.render import OP_COLORS, bar, esc, human_size, literal, plural, printable, ts

__all__ = ["draw_timeline", "duration", "register"]

_MARK = "●"
_TAG = "◆"
#: The mark of a branch with no snapshot of its own, on the snapshot its head is.
_HEAD = "⎇"

#: Lane (branch) names wider than this are cut, in the picture and in the table, so the other
#: columns keep room.
_LANE_MAX = 24


def _cut(name: str, limit: int = _LANE_MAX) -> str:
    """``name`` shown as written, cut to ``limit`` cells with an ellipsis."""
    text = printable(name)
    return text if len(text) <= limit else text[: limit - 1] + "…"


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


def _ref_cells(
    refs: dict[str, int], glyph: str, style: str, x_of: dict[int, int], axis_w: int
) -> list[tuple[str, str]]:
    """A lane of refs (tags, or branch heads): ``glyph`` and the name at each ref's snapshot
    (``+N`` for the snapshot's other refs), the name left out where it would run into
    another's."""
    cells: list[tuple[str, str]] = [(" ", "")] * axis_w
    at: dict[int, list[str]] = {}  # the refs of each snapshot: the first named, the rest counted
    for name, sid in sorted(refs.items()):
        at.setdefault(sid, []).append(name)
    for sid, names in sorted(at.items(), key=lambda kv: x_of.get(kv[0], -1)):
        if sid not in x_of:
            continue
        x = x_of[sid]
        text = _cut(names[0]) + (f" +{len(names) - 1}" if len(names) > 1 else "")

        def free(lo: int, hi: int) -> bool:
            return lo >= 0 and hi <= axis_w and all(cells[i][0] == " " for i in range(lo, hi))

        if free(x, min(x + len(text) + 2, axis_w)) and x + len(text) < axis_w:
            label, start = glyph + text, x  # the name after the mark
        elif free(max(x - len(text) - 1, 0), x + 1) and x - len(text) - 1 >= 0:
            label, start = text + glyph, x - len(text)  # at the right edge: before it
        elif cells[x][0] in (" ", glyph):  # never over another ref's label
            label, start = glyph, x
        else:
            continue
        for i, ch in enumerate(label):
            cells[start + i] = (ch, style)
    return cells


def _op_mark(operation: str, letters: bool) -> str:
    """A snapshot's mark: ``●`` in its operation's colour, or without colour the operation's
    first letter (``a`` append, ``d`` delete, ``o`` overwrite, ``r`` replace)."""
    text = printable(operation)
    return text[0].lower() if letters and text else _MARK


def draw_timeline(tl: Timeline, width: int, letters: bool = False) -> list[Text]:
    """The lanes of ``tl`` drawn for a terminal ``width`` columns wide; ``letters`` marks the
    snapshots by their operation's first letter (for output without colour)."""
    bare = tl.bare_heads
    label_w = max([len(_cut(n)) for n in tl.lanes] + [8 if bare else 4]) + 2
    axis_w = max(width - label_w - 1, 10)
    points = tl.points
    dropped = 0
    if len(points) > axis_w // 2:  # keep the newest that fit
        dropped = len(points) - axis_w // 2
        points = points[dropped:]
    cols = axis_positions(points, axis_w)
    x_of = {p.snapshot_id: x for p, x in zip(points, cols, strict=True)}
    lines: list[Text] = []
    first, last = points[0].timestamp_ms, points[-1].timestamp_ms
    left, right = ts(first), ts(last)
    if len(left) + len(right) + 1 > axis_w:  # a narrow terminal: without the years
        left, right = ts(first, year=False), ts(last, year=False)
    if len(left) + len(right) + 1 > axis_w:
        right = ""
    head = Text(" " * label_w)
    head.append(left, style="dim")
    if len(points) > 1 and right:
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
            cells[x] = (
                _op_mark(p.operation, letters),
                f"bold {OP_COLORS.get(p.operation, 'white')}",
            )
        lines.append(_line(_cut(lane), label_w, cells))
    if bare:  # branches with no snapshot of their own: marked where their head is
        lines.append(_line("branches", label_w, _ref_cells(bare, _HEAD, "bold cyan", x_of, axis_w)))
    if tl.tags:
        lines.append(
            _line("tags", label_w, _ref_cells(tl.tags, _TAG, "bold magenta", x_of, axis_w))
        )
    legend = Text(" " * label_w)
    for op in sorted({p.operation for p in points}):
        entry = f"{_op_mark(op, letters)} {printable(op)}"
        if legend.cell_len > label_w and legend.cell_len + len(entry) > width:
            lines.append(legend)  # the legend goes on over more lines rather than be cut
            legend = Text(" " * label_w)
        legend.append(entry[0], style=f"bold {OP_COLORS.get(op, 'white')}")
        legend.append(entry[1:] + "  ")
    lines.append(legend)
    if dropped:
        lines.append(Text(f"({dropped} older snapshots not drawn)", style="dim"))
    return lines


#: The widest list of one snapshot's refs in the table; the rest are counted.
_REFS_MAX = 40


def _ref_list(labels: list[str]) -> str:
    """A snapshot's refs, sorted, as many as fit :data:`_REFS_MAX` and ``+N more``."""
    shown: list[str] = []
    names = sorted(labels)
    for i, label in enumerate(names):
        rest = len(names) - i - 1
        more = f" +{rest} more" if rest else ""
        if shown and len(" ".join([*shown, label])) + len(more) > _REFS_MAX:
            return " ".join(shown) + f" +{len(names) - len(shown)} more"
        shown.append(label)
    return " ".join(shown)


def _table(tl: Timeline, width: int, limit: int) -> RichTable:
    """One row per snapshot (the newest ``limit``, 0 for all); narrow terminals drop the bars,
    tags, size and lane columns, in that order, before the time (which ``--as-of`` takes)."""
    pts = tl.points if limit == 0 else tl.points[-limit:]
    tags: dict[int, list[str]] = {}
    for name, sid in tl.tags.items():
        tags.setdefault(sid, []).append(_TAG + _cut(name))
    bare = tl.bare_heads
    for name, sid in bare.items():  # branches with no lane of their own
        tags.setdefault(sid, []).append(_HEAD + _cut(name))
    ref_text = {sid: _ref_list(names) for sid, names in tags.items()}
    lane_w = min(_LANE_MAX, max(len(printable(n)) for n in tl.lanes))
    tag_w = max([len(v) for v in ref_text.values()] + [0])
    keys = any(p.equality_delete_keys for p in pts)  # equality deletes hold keys, not rows
    times = [ts(p.timestamp_ms, year=False) for p in pts]
    time_w = max([14, *(len(v) for v in times)])  # a time out of range is a longer number
    fixed = 19 + 9 + 7 + 7 + 9 + tag_w + time_w + lane_w + 4 + 10 + 8 * keys
    bar_w = max(2, min(12, (width - fixed) // 3))
    max_rows = max([max(p.added_records or 0, p.deleted_records or 0) for p in pts] + [1])
    max_size = max([p.total_size or 0 for p in pts] + [1])

    def widest(head: str, values: list[str]) -> int:
        return max([len(head), *(len(v) for v in values)])

    def counts(sep: str) -> tuple[list[str], list[str], list[str]]:
        def number(n: int | None) -> str:
            return "-" if n is None else format(n, sep)  # -: the summary does not say

        return (
            [number(p.added_records) for p in pts],
            [number(p.deleted_records) for p in pts],
            [format(p.equality_delete_keys, sep) if p.equality_delete_keys else "-" for p in pts],
        )

    sizes = [human_size(p.total_size) for p in pts]
    natural_op = widest("operation", [printable(p.operation) for p in pts])
    # numbers and ids are never cut: on a narrow terminal the bars go first, then the tags
    # (the picture has them), the sizes, the lanes (the picture has them too) and the
    # thousands separators; then the operation column narrows, or goes; and when even that
    # is not enough the time (what --as-of takes) goes, the rest laid out again without it
    show: dict[str, bool] = {}

    def needed(op: int) -> int:
        cols = [19, widest("+rows", added), widest("-rows", deleted)]
        cols += [op] if show["op"] else []
        cols += [time_w] if show["time"] else []
        cols += [max(4, lane_w)] if show["lane"] else []
        cols += [widest("eq keys", key_counts)] if keys else []
        cols += [widest("size", sizes)] if show["size"] else []
        cols += [max(4, tag_w)] if show["tags"] else []
        cols += [bar_w] * (2 + show["size"]) if show["bars"] else []
        return sum(cols) + 2 * (len(cols) - 1)  # a blank and the padding between columns

    for with_time in (True, False):
        show.update(bars=True, tags=bool(tags), size=True, lane=True, time=with_time, op=True)
        added, deleted, key_counts = counts(",")
        op_w = natural_op
        for part in ("bars", "tags", "size", "lane"):
            if needed(op_w) <= width:
                break
            show[part] = False
        if needed(op_w) > width:
            added, deleted, key_counts = counts("")
        over = needed(op_w) - width
        if over <= 0:
            op_w = 0  # as wide as it needs
        elif op_w - over >= 4:
            op_w -= over
        else:  # not even "app…" fits: the picture above marks the operations (by colour)
            show["op"] = False
        if needed(op_w) <= width:
            break
    t = RichTable(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    # ids are what a user copies into --snapshot: never cut (bars shrink first)
    t.add_column("snapshot", no_wrap=True, min_width=19)
    if show["time"]:
        t.add_column("time (UTC)", no_wrap=True, min_width=time_w)
    if not show["op"]:
        pass
    elif op_w:
        t.add_column("op" if op_w < 9 else "operation", no_wrap=True, width=op_w)
    else:
        t.add_column("operation", no_wrap=True)
    if show["lane"]:
        t.add_column("lane", no_wrap=True, max_width=_LANE_MAX)
    t.add_column("+rows", justify="right", no_wrap=True)
    if show["bars"]:
        t.add_column("", no_wrap=True, min_width=bar_w)
    t.add_column("-rows", justify="right", no_wrap=True)
    if show["bars"]:
        t.add_column("", no_wrap=True, min_width=bar_w)
    if keys:
        t.add_column("eq keys", justify="right", no_wrap=True)
    if show["size"]:
        t.add_column("size", justify="right", no_wrap=True)
        if show["bars"]:
            t.add_column("", no_wrap=True, min_width=bar_w)
    if show["tags"]:
        t.add_column("refs" if bare else "tags", no_wrap=True, style="magenta")
    for i, p in enumerate(pts):
        row: list[Any] = [str(p.snapshot_id).ljust(19)]  # ids vary in length: fixed column
        if show["time"]:
            row.append(times[i])
        if show["op"]:
            row.append(literal(p.operation, style=OP_COLORS.get(p.operation, "")))
        if show["lane"]:
            row.append(Text(_cut(p.lane)))
        row.append(added[i])
        if show["bars"]:
            row.append(bar(p.added_records or 0, max_rows, bar_w, "green"))
        row.append(deleted[i])
        if show["bars"]:
            row.append(bar(p.deleted_records or 0, max_rows, bar_w, "red"))
        if keys:
            row.append(key_counts[i])
        if show["size"]:
            row.append(sizes[i])
            if show["bars"]:
                row.append(bar(p.total_size or 0, max_size, bar_w, "blue"))
        if show["tags"]:
            row.append(Text(ref_text.get(p.snapshot_id, "")))
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
        doc: dict[str, Any] = {"table": display_name(t), **tl.to_json()}
        state.out.json(doc)
        return
    console = state.out.console
    if not tl.points:
        console.print(literal(f"{display_name(t)} has no snapshots"))
        return
    span = duration(tl.end_ms - tl.start_ms)
    console.print(
        f"[bold]{esc(display_name(t))}[/] · {plural(len(tl.points), 'snapshot')} · "
        f"{plural(len(tl.heads), 'branch', 'branches')} · {plural(len(tl.tags), 'tag')} · "
        f"over {span}"
    )
    console.print()
    letters = console.no_color or console.color_system is None  # marks told apart by letter
    for line in draw_timeline(tl, console.width, letters):
        console.print(line, no_wrap=True, overflow="crop")
    console.print()
    console.print(_table(tl, console.width, limit))
    hidden = len(tl.points) - limit if limit else 0
    if hidden > 0:
        console.print(f"[dim]({hidden} older snapshots not listed; --limit 0 lists all)[/]")


def register(group: click.Group) -> None:
    """Add the ``snapshots`` command to ``group``; returns None."""
    group.add_command(snapshots)
