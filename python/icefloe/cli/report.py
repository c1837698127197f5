"""The self-contained HTML report of one table: overview, health checks, the snapshot timeline,
the file-size histogram, the partition heat map, the schema and the properties.

The page is one file with inline CSS and static SVG: no scripts, fonts, images or styles are
fetched, so it opens offline and can be mailed or attached to a ticket as is.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from icefloe.cli.analysis import bracketed, file_stats, partition_stats, timeline
from icefloe.cli.health import Check, run_checks
from icefloe.cli.names import display_name
from icefloe.cli.render import deletes_text, human_size, pct, plural, shown_properties, ts
from icefloe.cli.report_svg import OP_HEX, escape, heatmap_svg, histogram_svg, timeline_svg

__all__ = ["render_report"]


_CSS = """
:root { color-scheme: light; --ink:#1d2330; --muted:#5d6675; --line:#d9dee7; --bg:#f6f8fb; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font: 14px/1.45 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header { background:#14213d; color:#fff; padding:22px 32px; }
header h1 { margin:0 0 4px; font-size:24px; font-weight:600; }
header .sub { color:#c9d3e6; font-size:13px; }
main { max-width:1040px; margin:0 auto; padding:8px 32px 40px; }
section { background:#fff; border:1px solid var(--line); border-radius:8px; padding:16px 20px;
  margin:18px 0; }
h2 { font-size:17px; margin:0 0 12px; }
.cards { display:grid; grid-template-columns:repeat(4, 1fr); gap:10px; }
.card { border:1px solid var(--line); border-radius:6px; padding:10px 12px; }
.card .k { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
.card .v { font-size:20px; font-weight:600; }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:6px 8px; border-bottom:1px solid var(--line);
  vertical-align:top; }
th { color:var(--muted); font-weight:600; font-size:12px; text-transform:uppercase; }
code { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  background:#f0f3f8; padding:1px 5px; border-radius:4px; overflow-wrap:anywhere; }
.badge { display:inline-block; min-width:58px; text-align:center; border-radius:10px;
  padding:1px 8px; font-size:12px; font-weight:700; text-transform:uppercase; }
.ok { background:#dff3e4; color:#1d6b33; } .warn { background:#fff1cc; color:#8a5a00; }
.info { background:#e0efff; color:#1f4f8a; } .skipped { background:#eceff3; color:#5d6675; }
.muted { color:var(--muted); }
.legend span { display:inline-block; margin-right:14px; font-size:12.5px; }
.legend i { display:inline-block; width:10px; height:10px; border-radius:50%; margin-right:5px; }
svg.chart { display:block; max-width:100%; height:auto; margin-top:6px; }
svg text { font: 12px -apple-system, "Segoe UI", Roboto, Arial, sans-serif; fill:#1d2330; }
svg .tick { fill:#5d6675; font-size:11px; } svg .lane { font-weight:600; }
svg .axis { stroke:#b7bfcc; stroke-width:1; }
svg .link { stroke:#9aa3b2; stroke-width:2; fill:none; }
svg .tag { fill:#9c27b0; } svg .taglabel { fill:#6a1b7a; font-weight:600; }
svg .head { fill:#00838f; } svg .headlabel { fill:#006064; font-weight:600; }
svg .val { font-size:11px; font-weight:600; } svg .cell { font-size:12px; }
svg .cell.dark { fill:#fff; } svg rect.hot { stroke:#e0a100; stroke-width:3; }
ul.schema { list-style:none; padding-left:18px; margin:0; } ul.schema li { margin:2px 0; }
.type { color:#1f77b4; } .doc { color:var(--muted); font-style:italic; }
footer { color:var(--muted); font-size:12px; text-align:center; padding:10px; }
"""


def _schema_html(fields: Any) -> str:
    items = []
    for f in fields:
        t = f.field_type
        kind = type(t).__name__.removesuffix("Type").lower() if t.is_nested else str(t)
        extra = ""
        if f.initial_default is not None:
            extra += (
                f" <span class='muted'>initial-default={escape(repr(f.initial_default))}</span>"
            )
        if f.write_default is not None:
            extra += f" <span class='muted'>write-default={escape(repr(f.write_default))}</span>"
        if f.doc:
            extra += f" <span class='doc'>— {escape(f.doc)}</span>"
        child = _schema_html(t.fields) if t.is_nested else ""
        items.append(
            f"<li><span class='muted'>{f.field_id}</span> <b>{escape(f.name)}</b>: "
            f"<span class='type'>{escape(kind)}</span> "
            f"<span class='muted'>{'required' if f.required else 'optional'}</span>{extra}"
            f"{child}</li>"
        )
    return "<ul class='schema'>" + "".join(items) + "</ul>"


def _health_html(checks: list[Check]) -> str:
    rows = []
    for c in checks:
        fix = f"<code>{escape(c.fix)}</code>" if c.fix else "<span class='muted'>-</span>"
        rows.append(
            f"<tr data-check='{escape(c.name)}'><td><b>{escape(c.name)}</b></td>"
            f"<td><span class='badge {escape(c.verdict)}'>{escape(c.verdict)}</span></td>"
            f"<td>{escape(c.value)}<br><span class='muted'>{escape(c.detail)}</span></td>"
            f"<td>{fix}</td></tr>"
        )
    return (
        "<table id='health'><thead><tr><th>check</th><th>verdict</th><th>measured</th>"
        "<th>fix</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def _card(key: str, value: str) -> str:
    return (
        f"<div class='card'><div class='k'>{escape(key)}</div>"
        f"<div class='v'>{escape(value)}</div></div>"
    )


def render_report(table: Any, prog: str = "icefloe", orphans: bool = False) -> str:
    """The report of ``table`` as one HTML document. Stored properties icefloe refuses are
    read as their defaults (a warning each, and a health check) and shown as stored."""
    from icefloe.cli.property_defaults import invalid_properties, using_defaults, warn_defaults

    invalid = invalid_properties(table.properties)
    warn_defaults(invalid, table.properties)
    stored, table = table, using_defaults(table, invalid)
    meta = stored.metadata
    snap = meta.current_snapshot()
    summary = snap.summary if snap is not None and snap.summary is not None else None

    def total(key: str) -> str:
        """A total of the current snapshot's summary; ``-`` when the summary lacks it."""
        n = summary.get_int(key) if summary is not None else None
        return "-" if n is None else f"{n:,}"

    tl = timeline(meta)
    files = file_stats(table)
    parts = partition_stats(table)
    checks = run_checks(stored, prog, orphans=orphans)
    deletes = deletes_text(
        files.delete_records, files.equality_delete_keys, files.equality_delete_files
    )
    legend = "".join(
        f"<span><i style='background:{color}'></i>{op}</span>" for op, color in OP_HEX.items()
    )
    skew = ""
    if len(parts.rows) >= 2:
        top = parts.rows[0]
        word = "skewed" if parts.skewed else "balanced"
        skew = (
            f"<p><b>{word}</b>: the largest partition {escape(bracketed(top.label))} holds "
            f"{pct(top.records, sum(r.records for r in parts.rows))} of the rows, "
            f"{parts.skew:.1f}× {parts.baseline}.</p>"
        )
    props = "".join(
        f"<tr><td><code>{escape(k)}</code></td><td>{escape(v)}</td></tr>"
        for k, v in shown_properties(meta.properties).items()
    )
    spec = ", ".join(f"{f.name} = {f.transform}" for f in meta.spec().fields)
    partitioning = f"Partitioned by {escape(spec)}." if spec else "Unpartitioned."
    generated = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    warn = sum(1 for c in checks if c.verdict == "warn")
    name = display_name(table)  # quoted as commands take it: db."x.y"
    parts_html = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{escape(name)} · icefloe report</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<header><h1>{escape(name)}</h1><div class='sub'>Iceberg format v"
        f"{meta.format_version} · {escape(meta.location)} · uuid {escape(str(meta.table_uuid))}"
        f"</div></header><main>",
        "<section id='overview'><h2>Overview</h2><div class='cards'>",
        # rows in the data files, deleted ones included (as ``describe`` counts "records")
        _card("records", total("total-records")),
        _card("data files", total("total-data-files")),
        _card("delete files", total("total-delete-files")),
        _card("size", human_size(summary.get_int("total-files-size") if summary else None)),
        _card("snapshots", str(len(meta.snapshots))),
        _card("branches / tags", f"{len(tl.heads)} / {len(tl.tags)}"),
        _card("partitions", str(len(parts.rows))),
        _card("checks to act on", str(warn)),
        "</div>",
        f"<p class='muted'>{partitioning} Current snapshot "
        f"{snap.snapshot_id if snap else '-'}"
        + (f" ({escape(snap.operation or '')}, {ts(snap.timestamp_ms, utc=True)})" if snap else "")
        + ".</p></section>",
        f"<section><h2>Health</h2>{_health_html(checks)}</section>",
        "<section><h2>Snapshot timeline</h2>",
        f"<div class='legend'>{legend}<span style='color:#9c27b0'>◆</span><span> tag</span>"
        + (
            "<span style='color:#00838f'>▲</span><span> branch with no snapshot of its own</span>"
            if tl.bare_heads
            else ""
        )
        + "</div>",
        timeline_svg(tl),
        "</section>",
        "<section><h2>File sizes</h2>",
        f"<p>{plural(files.data_files, 'data file')}, {human_size(files.total_data_size)}; "
        f"<b>{files.small_files:,}</b> ({pct(files.small_files, files.data_files)}) "
        f"{'is' if files.small_files == 1 else 'are'} small "
        f"(under {human_size(files.small_threshold)}). "
        f"{plural(files.delete_files, 'delete file')} "
        f"{'holds' if files.delete_files == 1 else 'hold'} {deletes}.</p>",
        histogram_svg(files),
        "</section>",
        f"<section><h2>Partitions</h2>{skew}{heatmap_svg(parts)}</section>",
        f"<section><h2>Schema</h2>{_schema_html(meta.current_schema().fields)}</section>",
        "<section><h2>Properties</h2><table id='properties'><tbody>"
        + (props or "<tr><td class='muted'>none</td></tr>")
        + "</tbody></table></section>",
        f"</main><footer>Generated by icefloe at {generated} from "
        f"{escape(table.metadata_location)}</footer></body></html>",
    ]
    return "\n".join(parts_html)
