"""The ``icefloe`` command: inspect, maintain and query tables from the shell.

``icefloe --help`` lists the commands; :func:`main` is the console-script entry point and
:data:`cli` the click command tree (for ``click.testing.CliRunner`` and for packages that add
commands with :func:`icefloe.cli.app.register`).
"""

from __future__ import annotations

from icefloe.cli.app import cli, main

__all__ = ["cli", "main"]
