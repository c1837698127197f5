"""``icefloe convert-delta`` and ``icefloe check-delta``: the Delta converter
(:mod:`icefloe.delta`) from the command tree.

The options are those of ``python -m icefloe.delta convert`` / ``check``; the global
``--catalog`` names the catalog ``convert-delta`` writes to (with ``--identifier``).
"""

from __future__ import annotations

import click

from icefloe.cli.app import State

__all__ = ["register"]

_PASSTHROUGH = {"ignore_unknown_options": True, "allow_extra_args": True}


def _forward(ctx: click.Context, command: str) -> None:
    from icefloe.delta.cli import main as delta_main

    state = ctx.find_object(State)
    argv = [command, *ctx.args]
    named = state is not None and state.catalog_name and "--catalog" not in argv
    if command == "convert" and named and state is not None:
        argv += ["--catalog", str(state.catalog_name)]
    try:
        code = delta_main(argv, prog="icefloe")
    except SystemExit as exc:  # argparse's --help and usage errors
        code = exc.code if isinstance(exc.code, int) else 2
    ctx.exit(code)


@click.command(
    "convert-delta",
    short_help="Create or sync an Iceberg v3 table over a Delta table.",
    context_settings=_PASSTHROUGH,
    add_help_option=False,
)
@click.pass_context
def convert_delta(ctx: click.Context) -> None:
    """Convert an IcebergCompatV3 Delta table (DELTA_PATH) to Iceberg v3 metadata over the same
    files, or bring an earlier conversion up to date; ``--help`` lists the options."""
    _forward(ctx, "convert")


@click.command(
    "check-delta",
    short_help="Check a Delta table against IcebergCompatV3.",
    context_settings=_PASSTHROUGH,
    add_help_option=False,
)
@click.pass_context
def check_delta(ctx: click.Context) -> None:
    """List the IcebergCompatV3 requirements a Delta table does not meet (exit 1 if any)."""
    _forward(ctx, "check")


def register(group: click.Group) -> None:
    """Add ``convert-delta`` and ``check-delta`` to ``group``; returns None."""
    group.add_command(convert_delta)
    group.add_command(check_delta)
