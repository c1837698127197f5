"""Statistics: ``stats`` shows a table's distinct-value counts per column and how current its
table and partition statistics files are; ``compute-stats`` computes both for the current
snapshot (theta sketches as a Puffin file, partition statistics as Parquet) and commits them."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table as RichTable

from icefloe.cli.analysis import missing_statistics_files
from icefloe.cli.app import State, json_option, pass_state
from icefloe.cli.names import display_name, select_list
from icefloe.cli.render import esc, literal
from icefloe.exceptions import IcebergError

__all__ = ["register", "statistics_json"]


def _freshness(sid: int | None, behind: int | None) -> str:
    if sid is None:
        return "none"
    if behind == 0:
        return f"current (snapshot {sid})"
    return f"stale: computed for snapshot {sid}, {behind} snapshot(s) behind"


def statistics_json(table: Any) -> dict[str, Any]:
    """The statistics of ``table``'s current snapshot as JSON (also part of ``describe``)."""
    from icefloe.table.statistics import statistics_status

    status = statistics_status(table.metadata)
    unreadable = None
    try:
        cols = table.inspect.column_statistics().to_pylist()
    except IcebergError as exc:  # a registered file gone or damaged: say so, show the rest
        cols, unreadable = [], str(exc)
    doc: dict[str, Any] = {
        "snapshot_id": status.snapshot_id,
        "table_statistics": {
            "snapshot_id": status.table_statistics_snapshot_id,
            "snapshots_behind": status.table_statistics_behind,
        },
        "partition_statistics": {
            "snapshot_id": status.partition_statistics_snapshot_id,
            "snapshots_behind": status.partition_statistics_behind,
        },
        "ndv": {c["column"]: c["ndv"] for c in cols},
    }
    if unreadable is not None:
        doc["unreadable"] = unreadable
    missing = missing_statistics_files(table, status)
    if missing:
        doc["missing_files"] = [{"kind": kind, "path": path} for kind, path in missing]
    return doc


def print_statistics(state: State, doc: dict[str, Any]) -> None:
    """The text form of :func:`statistics_json`."""
    console = state.out.console
    t, p = doc["table_statistics"], doc["partition_statistics"]
    console.print(
        f"[bold]table statistics[/]: {_freshness(t['snapshot_id'], t['snapshots_behind'])}"
    )
    console.print(
        f"[bold]partition statistics[/]: {_freshness(p['snapshot_id'], p['snapshots_behind'])}"
    )
    if doc.get("unreadable"):
        console.print(
            f"[bold yellow]the statistics file cannot be read[/]: {esc(doc['unreadable'])}"
        )
    for gone in doc.get("missing_files", []):
        console.print(
            f"[bold yellow]the {gone['kind']} statistics file is missing[/]: "
            f"{esc(gone['path'])} (compute-stats writes it again)"
        )
    if doc["ndv"]:
        grid = RichTable("column", "distinct values", box=None, padding=(0, 2))
        for name, ndv in doc["ndv"].items():
            grid.add_row(literal(name), f"{ndv:,}")
        console.print(grid)


@click.command("stats", short_help="Distinct values per column and statistics freshness.")
@click.argument("table")
@json_option
@pass_state
def stats(state: State, table: str, as_json: bool) -> None:
    """The distinct-value counts per column of TABLE (from its newest statistics file on the
    current snapshot's history) and whether the table and partition statistics are current."""
    t = state.table(table)
    doc = statistics_json(t)
    if as_json:
        state.out.json({"table": display_name(t), **doc})
        return
    print_statistics(state, doc)


@click.command("compute-stats", short_help="Compute table and partition statistics.")
@click.argument("table")
@click.option("--columns", help="Comma-separated columns to sketch (default: every primitive).")
@click.option("--full", is_flag=True, help="Recompute partition statistics from every manifest.")
@json_option
@pass_state
def compute_stats(state: State, table: str, columns: str | None, full: bool, as_json: bool) -> None:
    """Compute TABLE's theta-sketch statistics (distinct values per column) and, when it is
    partitioned, its partition statistics for the current snapshot, and commit them."""
    t = state.table(table)
    cols = list(select_list(columns)) if columns else None
    t.compute_statistics(cols)
    if any(s.fields for s in t.metadata.partition_specs):
        t.compute_partition_statistics(incremental=not full)
    doc = statistics_json(t)
    if as_json:
        state.out.json({"table": display_name(t), **doc})
        return
    print_statistics(state, doc)


def register(group: click.Group) -> None:
    """Add ``stats`` and ``compute-stats`` to ``group``; returns None."""
    for command in (stats, compute_stats):
        group.add_command(command)
