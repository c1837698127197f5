"""Static SVG charts for the HTML report: the snapshot timeline with row and size bars, the
file-size histogram and the partition heat map. Every mark carries a ``data-mark`` attribute
and a ``<title>`` (the browser's tooltip); nothing needs a script."""

from __future__ import annotations

import html
import itertools
import math
import re
from collections.abc import Callable

from icefloe.cli.analysis import FileStats, PartitionStats, Timeline, axis_positions
from icefloe.cli.render import human_size, plural, printable, ts

__all__ = ["OP_HEX", "escape", "heatmap_svg", "histogram_svg", "timeline_svg"]


#: Characters XML 1.0 forbids that :func:`printable` keeps: surrogates, U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def escape(value: object) -> str:
    """``value`` for HTML text or an attribute: markup characters as entities, control
    characters written out (``\\x1b``, ``\\n``) as the terminal shows them, and the other
    characters XML forbids as ``\\uffff`` (XML has no entity for any of them)."""
    text = _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", printable(value))
    return html.escape(text)


OP_HEX = {
    "append": "#2e9e4f",
    "overwrite": "#d4a017",
    "delete": "#d62728",
    "replace": "#1f77b4",
}
_GREY = "#8a8f98"
_W = 960


def _svg(id_: str, width: int, height: int, body: list[str], label: str) -> str:
    return (
        f'<svg id="{id_}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(label)}">' + "".join(body) + "</svg>"
    )


def _text(x: float, y: float, s: str, cls: str = "", anchor: str = "start") -> str:
    c = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{c}>{escape(s)}</text>'


#: The timeline's left gutter (lane names), right margin and pixels per axis slot.
_GUTTER, _RIGHT, _STEP = 90, 24, 6
#: The report draws at most this many snapshots (the newest): one per axis slot, so no two
#: share an x.
MAX_TIMELINE_SNAPSHOTS = (_W - _GUTTER - _RIGHT) // _STEP
#: Characters of a lane name that fit in the timeline's left gutter; longer ones are cut (the
#: whole name is the label's tooltip), and clipped to the gutter whatever their glyphs' width.
_LANE_CHARS = 11
#: Characters of a tag or branch name drawn next to its mark.
_REF_MAX = 24


def _cut(name: str, limit: int) -> str:
    """``name`` cut to ``limit`` characters with an ellipsis."""
    text = printable(name)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _lane_label(y: float, name: str, gutter: int) -> str:
    """A lane's name in the left gutter, cut and clipped so it never runs into the marks."""
    # a nested <svg> clips what overflows it: the label ends before the gutter does
    return (
        f'<svg x="0" y="{y - 12:.1f}" width="{gutter - 6}" height="20" overflow="hidden">'
        f'<text x="8" y="16" class="lane"><title>{escape(name)}</title>'
        f"{escape(_cut(name, _LANE_CHARS))}</text></svg>"
    )


def timeline_svg(tl: Timeline) -> str:
    """Lanes per branch with one circle per snapshot (coloured by operation), tags as
    diamonds, then bars for added rows, deleted rows and total size per snapshot; the newest
    :data:`MAX_TIMELINE_SNAPSHOTS` are drawn."""
    gutter, right = _GUTTER, _RIGHT
    plot_w = _W - gutter - right
    lane_h, bar_h = 34, 46
    pts = tl.points[-MAX_TIMELINE_SNAPSHOTS:]
    lanes = [lane for lane in tl.lanes if any(p.lane == lane for p in pts)]
    tags_lane = bool(tl.tags)
    bare = {n: sid for n, sid in tl.bare_heads.items() if any(p.snapshot_id == sid for p in pts)}
    top = 34
    lanes_h = lane_h * (len(lanes) + (1 if tags_lane else 0) + (1 if bare else 0))
    bars_top = top + lanes_h + 18
    height = bars_top + 3 * (bar_h + 14) + 10
    body: list[str] = []
    if not pts:
        return _svg("timeline", _W, 60, [_text(10, 30, "no snapshots")], "no snapshots")
    step = _STEP
    xs = [gutter + c * step for c in axis_positions(pts, max(plot_w // step, 2))]
    x_of = {p.snapshot_id: x for p, x in zip(pts, xs, strict=True)}
    # time axis
    body.append(
        f'<line x1="{gutter}" y1="{top - 12}" x2="{gutter + plot_w}" y2="{top - 12}" class="axis"/>'
    )
    body.append(_text(gutter, top - 18, ts(pts[0].timestamp_ms, utc=True), "tick"))
    if len(pts) > 1:
        end = ts(pts[-1].timestamp_ms, utc=True)
        body.append(_text(gutter + plot_w, top - 18, end, "tick", "end"))
    if len(pts) < len(tl.points):
        older = f"{len(tl.points) - len(pts)} older snapshots not drawn"
        body.append(_text(gutter + plot_w / 2, top - 18, older, "tick", "middle"))
    y_of = {lane: top + i * lane_h + lane_h / 2 for i, lane in enumerate(lanes)}
    for lane in lanes:
        y = y_of[lane]
        body.append(_lane_label(y, lane, gutter))
        mine = [p for p in pts if p.lane == lane]
        x0 = x_of[mine[0].snapshot_id]
        fork = mine[0].parent_id
        if lane != "main" and fork in x_of:
            fx = x_of[fork]
            fy = y_of.get(next((p.lane for p in pts if p.snapshot_id == fork), lane), y)
            body.append(
                f'<path d="M{fx:.1f},{fy:.1f} C{fx:.1f},{y:.1f} {fx:.1f},{y:.1f} {x0:.1f},{y:.1f}"'
                ' class="link"/>'
            )
        x1 = x_of[mine[-1].snapshot_id]
        body.append(f'<line x1="{x0:.1f}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y:.1f}" class="link"/>')
    gaps = [b - a for a, b in itertools.pairwise(xs) if b > a]
    radius = max(2.5, min(7.0, min(gaps, default=20) / 2 - 1))
    for p in pts:
        x, y = x_of[p.snapshot_id], y_of[p.lane]
        color = OP_HEX.get(p.operation, _GREY)
        rows = (
            "rows unknown"
            if p.added_records is None or p.deleted_records is None
            else f"+{p.added_records:,} / -{p.deleted_records:,} rows"
        )
        title = (
            f"{p.snapshot_id} · {p.operation} · {ts(p.timestamp_ms, utc=True)} · "
            f"{rows} · {human_size(p.total_size)}"
        )
        if p.equality_delete_keys:
            title += f" · {plural(p.equality_delete_keys, 'equality-delete key')}"
        body.append(
            f'<circle data-mark="snapshot" data-op="{escape(p.operation)}" cx="{x:.1f}" '
            f'cy="{y:.1f}" r="{radius:.1f}" fill="{color}"><title>{escape(title)}</title></circle>'
        )
    if bare:  # branches with no snapshot of their own, at the snapshot their head is
        y = top + len(lanes) * lane_h + lane_h / 2
        body.append(_lane_label(y, "branches", gutter))
        for name, sid in sorted(bare.items()):
            x = x_of[sid]
            body.append(
                f'<path data-mark="branch" d="M{x:.1f},{y - 7:.1f} l6,14 l-12,0 z" '
                f'class="head"><title>branch {escape(name)} → {sid}</title></path>'
            )
            body.append(_text(x + 10, y + 4, _cut(name, _REF_MAX), "headlabel"))
    if tags_lane:
        y = top + (len(lanes) + (1 if bare else 0)) * lane_h + lane_h / 2
        body.append(_text(8, y + 4, "tags", "lane"))
        for name, sid in sorted(tl.tags.items()):
            if sid not in x_of:
                continue
            x = x_of[sid]
            body.append(
                f'<path data-mark="tag" d="M{x:.1f},{y - 7:.1f} l7,7 l-7,7 l-7,-7 z" '
                f'class="tag"><title>tag {escape(name)} → {sid}</title></path>'
            )
            body.append(_text(x + 10, y + 4, _cut(name, _REF_MAX), "taglabel"))

    def count(v: int | None) -> str:
        return "-" if v is None else f"{v:,}"  # -: the summary does not say

    series: tuple[tuple[str, list[int | None], str, Callable[[int | None], str]], ...] = (
        ("+rows", [p.added_records for p in pts], "#2e9e4f", count),
        ("-rows", [p.deleted_records for p in pts], "#d62728", count),
        ("size", [p.total_size for p in pts], "#1f77b4", human_size),
    )
    for i, (label, values, color, fmt) in enumerate(series):
        base = bars_top + i * (bar_h + 14) + bar_h
        known = [v for v in values if v is not None]
        peak = max([*known, 1])
        body.append(_text(8, base - bar_h / 2 + 4, label, "lane"))
        body.append(
            f'<line x1="{gutter - 8}" y1="{base}" x2="{gutter + plot_w}" y2="{base}" class="axis"/>'
        )
        for p, x, v in zip(pts, xs, values, strict=True):
            h = 0 if v is None or v <= 0 else max(1.5, bar_h * v / peak)
            body.append(
                f'<rect data-mark="bar" data-series="{label}" x="{x - 4:.1f}" y="{base - h:.1f}" '
                f'width="8" height="{h:.1f}" fill="{color}"><title>{escape(label)} '
                f"{escape(fmt(v))} · {p.snapshot_id}</title></rect>"
            )
        body.append(_text(8, base - bar_h / 2 + 18, f"max {fmt(max(known, default=None))}", "tick"))
    return _svg("timeline", _W, height, body, f"timeline of {len(pts)} snapshots")


def histogram_svg(stats: FileStats) -> str:
    """Vertical bars per size bucket; buckets below the small-file threshold in amber."""
    buckets = stats.histogram
    if not buckets:
        return _svg("histogram", _W, 60, [_text(10, 30, "no data files")], "no data files")
    left, bottom, top = 50, 46, 16
    h = 220
    plot_h = h - bottom - top
    slot = min(90, (_W - left - 20) // len(buckets))
    peak = max(n for _, _, n in buckets) or 1
    body = [
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + slot * len(buckets)}" '
        f'y2="{top + plot_h}" class="axis"/>',
        _text(left - 8, top + 8, str(peak), "tick", "end"),
        _text(left - 8, top + plot_h, "0", "tick", "end"),
    ]
    for i, (lo, hi, n) in enumerate(buckets):
        small = hi is not None and hi <= stats.small_threshold
        bh = 0 if n == 0 else max(2.0, plot_h * n / peak)
        x = left + i * slot + 6
        label = f"{human_size(lo)} – {human_size(hi)}" if hi is not None else f"≥ {human_size(lo)}"
        body.append(
            f'<rect data-mark="bucket" x="{x}" y="{top + plot_h - bh:.1f}" width="{slot - 12}" '
            f'height="{bh:.1f}" fill="{"#e0a100" if small else "#4c78a8"}">'
            f"<title>{escape(label)}: {plural(n, 'file')}</title></rect>"
        )
        if n:
            body.append(_text(x + (slot - 12) / 2, top + plot_h - bh - 4, str(n), "val", "middle"))
        short = f"<{human_size(hi)}" if hi is not None else f"≥{human_size(lo)}"
        body.append(_text(x + (slot - 12) / 2, top + plot_h + 16, short, "tick", "middle"))
    body.append(
        _text(
            left,
            h - 6,
            f"amber: under the small-file threshold ({human_size(stats.small_threshold)})",
            "tick",
        )
    )
    return _svg("histogram", _W, h, body, "file size histogram")


def _heat(value: float, peak: float) -> str:
    """A sequential blue scale from pale (0) to dark (peak)."""
    t = 0.0 if peak <= 0 else math.sqrt(value / peak)
    lo, hi = (235, 243, 251), (8, 48, 107)
    r, g, b = (round(a + (c - a) * t) for a, c in zip(lo, hi, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap_svg(stats: PartitionStats, max_cells: int = 400) -> str:
    """One cell per partition (largest first, wrapped in rows), shaded by its row count;
    the skewed partition is outlined."""
    rows = stats.rows[:max_cells]
    if not rows:
        return _svg("heatmap", _W, 60, [_text(10, 30, "no partitions")], "no partitions")
    cols = min(8, len(rows))
    cell_w, cell_h = (_W - 20) // cols, 58
    peak = max(r.records for r in rows) or 1
    n_rows = math.ceil(len(rows) / cols)
    body: list[str] = []
    for i, r in enumerate(rows):
        x, y = 10 + (i % cols) * cell_w, 10 + (i // cols) * cell_h
        fill = _heat(r.records, peak)
        dark = r.records / peak > 0.35
        hot = stats.skewed and i == 0
        title = (
            f"{r.label}: {plural(r.records, 'row')} in {plural(r.files, 'file')}, "
            f"{human_size(r.size)}, {plural(r.delete_records, 'deleted row')} in "
            f"{plural(r.delete_files - r.equality_delete_files, 'delete file')}"
        )
        if r.equality_delete_files:
            title += (
                f", {plural(r.equality_delete_keys, 'equality-delete key')} in "
                f"{plural(r.equality_delete_files, 'equality delete file')}"
            )
        body.append(
            f'<rect data-mark="partition" x="{x + 2}" y="{y + 2}" width="{cell_w - 4}" '
            f'height="{cell_h - 4}" rx="4" fill="{fill}"'
            + (' class="hot"' if hot else "")
            + f"><title>{escape(title)}</title></rect>"
        )
        label = r.label if len(r.label) <= cell_w // 7 else r.label[: cell_w // 7 - 1] + "…"
        cls = "cell dark" if dark else "cell"
        body.append(_text(x + 10, y + 22, label, cls))
        body.append(
            _text(x + 10, y + 40, f"{plural(r.records, 'row')} · {plural(r.files, 'file')}", cls)
        )
    height = 20 + n_rows * cell_h
    if len(stats.rows) > len(rows):
        body.append(
            _text(
                10, height + 4, f"the largest {len(rows)} of {len(stats.rows)} partitions", "tick"
            )
        )
        height += 16
    return _svg("heatmap", _W, height, body, f"heat map of {len(rows)} partitions")
