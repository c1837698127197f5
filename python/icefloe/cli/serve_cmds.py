"""``icefloe serve``: the REST catalog server (:mod:`icefloe.rest`) from the command tree.

The options are those of ``python -m icefloe.rest`` (``icefloe serve --help`` lists them); the
global ``--catalog`` names the catalog to serve.
"""

from __future__ import annotations

import click

from icefloe.cli.app import State

__all__ = ["register"]


@click.command(
    "serve",
    short_help="Serve a catalog over Iceberg's REST protocol.",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
)
@click.pass_context
def serve(ctx: click.Context) -> None:
    """Serve the catalog (``--catalog``, else the default one) to Spark, DuckDB, PyIceberg and
    icefloe over Iceberg's REST catalog protocol, on 127.0.0.1:8181 unless told otherwise."""
    from icefloe.rest.__main__ import main as serve_main

    state = ctx.find_object(State)
    argv = list(ctx.args)
    if state is not None and state.catalog_name and "--catalog" not in argv:
        argv = ["--catalog", state.catalog_name, *argv]
    try:
        code = serve_main(argv, prog="icefloe serve")
    except SystemExit as exc:  # argparse's --help and usage errors
        code = exc.code if isinstance(exc.code, int) else 2
    ctx.exit(code)


def register(group: click.Group) -> None:
    """Add the ``serve`` command to ``group``; returns None."""
    group.add_command(serve)
