"""``icefloe health``: the operator's checks, each with its value, verdict and fixing command."""

from __future__ import annotations

import shlex

import click
from rich.table import Table as RichTable
from rich.text import Text

from icefloe.cli.app import State, json_option, pass_state
from icefloe.cli.health import Check, run_checks
from icefloe.cli.names import display_name
from icefloe.cli.render import esc, literal, printable

__all__ = ["VERDICT_STYLES", "prog_prefix", "register"]

VERDICT_STYLES = {"ok": "bold green", "info": "bold cyan", "warn": "bold yellow", "skipped": "dim"}


def prog_prefix(state: State) -> str:
    """``icefloe`` plus the ``--catalog`` the user gave, for commands we suggest."""
    name = state.catalog_name
    return "icefloe" + (f" --catalog {shlex.quote(name)}" if name else "")


def checks_table(checks: list[Check]) -> RichTable:
    """One block per check: verdict, name, then the measured value, why, and the fix."""
    t = RichTable.grid(padding=(0, 2, 1, 0))
    t.add_column(no_wrap=True)
    t.add_column(no_wrap=True, style="bold")
    t.add_column(overflow="fold")
    for c in checks:
        body = literal(c.value)
        body.append("\n" + printable(c.detail), style="dim")
        if c.fix:
            body.append("\nfix: ", style="bold")
            body.append(printable(c.fix), style="bold cyan")
        verdict = Text(c.verdict.upper(), style=VERDICT_STYLES.get(c.verdict, ""))
        t.add_row(verdict, literal(c.name), body)
    return t


@click.command("health", short_help="Checks with verdicts and fixing commands.")
@click.argument("table")
@click.option(
    "--orphans", is_flag=True, help="Also list the table's storage for unreferenced files."
)
@json_option
@pass_state
def health(state: State, table: str, orphans: bool, as_json: bool) -> None:
    """Check TABLE: small files, delete debt, manifests, retention, metadata log, orphan files
    and statistics, each with the command that fixes it. Exits 0 even with warnings."""
    t = state.table(table)
    checks = run_checks(t, prog_prefix(state), orphans=orphans)
    if as_json:
        state.out.json({"table": display_name(t), "checks": [c.to_json() for c in checks]})
        return
    warn = sum(1 for c in checks if c.verdict == "warn")
    console = state.out.console
    console.print(
        f"[bold]{esc(display_name(t))}[/] · {len(checks)} checks · "
        + (f"[bold yellow]{warn} to act on[/]" if warn else "[bold green]all healthy[/]")
    )
    console.print(checks_table(checks))


def register(group: click.Group) -> None:
    """Add the ``health`` command to ``group``; returns None."""
    group.add_command(health)
