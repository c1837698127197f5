"""``icefloe report``: write the self-contained HTML report of a table."""

from __future__ import annotations

import sys

import click

from icefloe.cli.app import State, pass_state
from icefloe.cli.health_cmds import prog_prefix
from icefloe.cli.render import literal, open_output
from icefloe.cli.report import render_report

__all__ = ["register"]


@click.command("report", short_help="Write a self-contained HTML report.")
@click.argument("table")
@click.option(
    "--output",
    "-o",
    default="report.html",
    show_default=True,
    type=click.Path(dir_okay=False, allow_dash=True),
    help="The HTML file to write ('-': standard output).",
)
@click.option("--orphans", is_flag=True, help="Include the dry-run orphan scan (lists storage).")
@pass_state
def report(state: State, table: str, output: str, orphans: bool) -> None:
    """Write one HTML file about TABLE (timeline, histograms, partition heat map, health) that
    opens offline in any browser."""
    t = state.table(table)
    html = render_report(t, prog_prefix(state), orphans=orphans)
    if output == "-":  # as scan and sql take it: the page on standard output, nothing else
        data = html.encode("utf-8")
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:
            sys.stdout.write(html)
            sys.stdout.flush()
        return
    with open_output(output, "w") as f:
        f.write(html)
    state.out.console.print(literal(f"wrote {output} ({len(html.encode()):,} bytes)"))


def register(group: click.Group) -> None:
    """Add the ``report`` command to ``group``; returns None."""
    group.add_command(report)
