"""``icefloe convert-delta`` and ``icefloe check-delta``: the Delta converter
(:mod:`icefloe.delta`) from the command tree.

The options are those of ``python -m icefloe.delta convert`` / ``check``. ``convert-delta
--identifier db.t`` writes to the catalog its own ``--catalog`` names, else the one the global
``--catalog`` (or ``default-catalog``) names. Errors leave as every command's do: one line and
the exit code of their kind.
"""

from __future__ import annotations

import argparse
import json

import click

from icefloe.cli.app import State
from icefloe.cli.render import Output, printable
from icefloe.exceptions import ValidationError

__all__ = ["register"]

_PASSTHROUGH = {"ignore_unknown_options": True, "allow_extra_args": True}


def _parse(ctx: click.Context, command: str) -> argparse.Namespace:
    """The arguments after ``icefloe convert-delta`` / ``check-delta``, parsed as the Delta
    converter's command line parses them; usage and ``--help`` name this command."""
    from icefloe.delta.cli import add_check_arguments, add_convert_arguments

    parser = argparse.ArgumentParser(
        prog=f"{ctx.find_root().info_name or 'icefloe'} {command}-delta",
        description=ctx.command.short_help,
    )
    if command == "convert":
        add_convert_arguments(parser)
    else:
        add_check_arguments(parser)
        parser.add_argument(
            "--json",
            action="store_true",
            help="print the verdict as JSON for scripts (exit 1 still when a requirement fails)",
        )
    try:
        return parser.parse_args(ctx.args)
    except SystemExit as exc:  # argparse's --help (0) and usage errors (2)
        raise click.exceptions.Exit(exc.code if isinstance(exc.code, int) else 2) from None


def _convert(state: State, args: argparse.Namespace) -> None:
    from icefloe.delta.cli import convert_summary

    named = args.catalog or state.catalog_name
    if args.identifier is None:
        if named:
            raise ValidationError(
                f"convert-delta writes to catalog {named!r} only with --identifier (the "
                "Iceberg table to create there); without one the table has no catalog"
            )
        catalog = None
    elif args.catalog is not None:
        from icefloe.catalog import load_catalog

        catalog = load_catalog(args.catalog)
    else:
        catalog = state.catalog()
    doc = convert_summary(args, catalog)  # what ``python -m icefloe.delta convert`` prints
    click.echo(json.dumps(doc))


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
    args = _parse(ctx, "convert")
    _convert(ctx.find_object(State) or State(None, False, Output()), args)


@click.command(
    "check-delta",
    short_help="Check a Delta table against IcebergCompatV3.",
    context_settings=_PASSTHROUGH,
    add_help_option=False,
)
@click.pass_context
def check_delta(ctx: click.Context) -> None:
    """List the IcebergCompatV3 requirements a Delta table does not meet (exit 1 if any)."""
    from icefloe.delta.compat import check_iceberg_compat_v3

    args = _parse(ctx, "check")
    report = check_iceberg_compat_v3(args.delta_path, version=args.version, files=args.files)
    state = ctx.find_object(State)
    if args.json:
        (state.out if state is not None else Output()).json(
            {
                "table": report.table,
                "version": report.version,
                "ok": report.ok,
                "failures": [
                    {"requirement": f.requirement, "message": f.message} for f in report.failures
                ],
            }
        )
    elif report.ok:  # the words of ``python -m icefloe.delta check``, shown as written
        click.echo(
            printable(f"{report.table} (version {report.version}) satisfies IcebergCompatV3")
        )
    else:
        for f in report.failures:
            click.echo(printable(f))
    ctx.exit(0 if report.ok else 1)


def register(group: click.Group) -> None:
    """Add ``convert-delta`` and ``check-delta`` to ``group``; returns None."""
    group.add_command(convert_delta)
    group.add_command(check_delta)
