"""The root of the command tree: global options, catalog resolution, error handling, and the
registry of command groups.

Each command module has a ``register(group)`` function that adds its commands to the root
group; :data:`COMMAND_MODULES` lists them, so a new command family (a server, a converter) is
one new module and one line here. Other packages may call :func:`register` with their own
click commands.
"""

from __future__ import annotations

import codecs
import importlib
import io
import os
import re
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from icefloe.cli.errors import EXIT_INTERRUPTED, EXIT_PIPE_CLOSED, exit_code, one_line
from icefloe.cli.names import show_name, split_name, unquoted_text
from icefloe.cli.render import Output, printable

__all__ = [
    "COMMAND_MODULES",
    "State",
    "catalog_identifier",
    "cli",
    "is_location",
    "json_option",
    "main",
    "named_as_given",
    "pass_state",
    "register",
]

COMMAND_MODULES = (
    "icefloe.cli.catalog_cmds",
    "icefloe.cli.table_cmds",
    "icefloe.cli.history_cmds",
    "icefloe.cli.files_cmds",
    "icefloe.cli.health_cmds",
    "icefloe.cli.maintenance_cmds",
    "icefloe.cli.stats_cmds",
    "icefloe.cli.query_cmds",
    "icefloe.cli.report_cmds",
    "icefloe.cli.serve_cmds",
    "icefloe.cli.delta_cmds",
)

F = TypeVar("F", bound=Callable[..., Any])

_METADATA_FILE = re.compile(r"\.metadata\.json(\.gz)?$")


class State:
    """What every command shares: the catalog (opened on first use) and the output."""

    def __init__(self, catalog_name: str | None, debug: bool, out: Output) -> None:
        self.catalog_name = catalog_name
        self.debug = debug
        self.out = out
        self._catalog: Any = None

    def catalog(self) -> Any:
        """The catalog named by ``--catalog`` (or the configured default), as ``load_catalog``
        resolves it: ``~/.icefloe.yaml`` (``ICEFLOE_CONFIG``), ``ICEFLOE_CATALOG__*``."""
        if self._catalog is None:
            from icefloe.catalog import load_catalog

            # a name nothing configures is refused there (a typo, most likely)
            self._catalog = load_catalog(self.catalog_name)
        return self._catalog

    def table(self, identifier: str) -> Any:
        """Load a table by its dotted identifier (``db."x.y"`` for a name with a dot, see
        :func:`split_name`), or open the metadata file or table directory a path or URI
        names, read-only (see :func:`is_location`)."""
        from icefloe.exceptions import NoSuchTableError

        if is_location(identifier):
            from icefloe.table.static import StaticTable

            props = self.catalog().properties if self.catalog_name is not None else {}
            try:
                return StaticTable.from_metadata(identifier, properties=props)
            except NoSuchTableError as exc:
                hint = self._slashed_table(identifier)
                if hint is None:
                    raise
                raise NoSuchTableError(
                    f"{exc}; the catalog has a table named {hint} (quote a part that holds a "
                    "slash: a slash outside quotes makes a path)"
                ) from None

        parts = split_name(identifier)
        try:
            table = self.catalog().load_table(parts)
        except NoSuchTableError:
            hint = self._dotted_table(identifier, parts)
            if hint is None and show_name(parts) != ".".join(parts):
                # named as given: the catalog's dotted name loses the quotes
                raise NoSuchTableError(f"table {show_name(parts)!r} does not exist") from None
            if hint is None:
                raise
            raise NoSuchTableError(
                f"table {identifier!r} does not exist; a table named {hint} does (quote a "
                "part that holds a dot)"
            ) from None
        # what the commands show and do covers the whole history, also when a REST catalog
        # in refs mode left the snapshots no ref points at out
        table.load_every_snapshot()
        return table

    def _slashed_table(self, argument: str) -> str | None:
        """The table of a configured catalog that path ``argument`` names when read as a
        dotted identifier (``db.a/b`` for the table ``a/b`` of ``db``), as commands take it
        (``db."a/b"``); None when there is no such table, or ``argument`` is a URI or an
        existing local path."""
        if "://" in argument or os.path.exists(argument):
            return None
        try:
            from icefloe.catalog.config import catalog_properties

            if not catalog_properties(self.catalog_name, {})[2]:
                return None  # the local default catalog: not opened (created) just for a hint
            parts = split_name(argument)
            if len(parts) < 2 or not self.catalog().table_exists(parts):
                return None
        except Exception:  # a name the catalog cannot hold, a catalog that cannot be reached
            return None
        return show_name(parts)

    def _dotted_table(self, identifier: str, parts: tuple[str, ...]) -> str | None:
        """A table whose name holds the dots of unquoted ``identifier`` (``db.x.y`` for the
        table ``x.y`` of ``db``), as commands take it (``db."x.y"``); None when none is."""
        if '"' in identifier or len(parts) < 3:
            return None
        for k in range(1, len(parts) - 1):
            candidate = (*parts[:k], ".".join(parts[k:]))
            try:
                if self.catalog().table_exists(candidate):
                    return show_name(candidate)
            except Exception:  # a name the catalog cannot hold: not the one meant
                continue
        return None


def catalog_identifier(table: str, command: str) -> tuple[str, ...]:
    """The parts of ``table`` (see :func:`split_name`) for a command that changes the
    catalog; a path or URI is refused (bad input): a table opened by path is read-only, as the
    file may not be its current version."""
    if is_location(table):
        from icefloe.exceptions import ValidationError

        raise ValidationError(
            f"{command} needs a table identifier such as db.events, not the path {table!r}: a "
            "table opened by path is read-only; change it through its catalog"
        )
    return split_name(table)


@contextmanager
def named_as_given(*names: tuple[str, ...]) -> Iterator[None]:
    """Inside, a not-found error that names one of ``names`` the catalog's way (its parts
    joined by dots, ``'db.x/y'``, or as a tuple, ``('a.b',)``) names it as commands take it
    (``'db."x/y"'``, see :func:`show_name`), so the name in the message can be pasted back."""
    from icefloe.exceptions import (
        NoSuchNamespaceError,
        NoSuchTableError,
        NoSuchViewError,
        NotFoundError,
    )

    try:
        yield
    except (NoSuchTableError, NoSuchViewError, NoSuchNamespaceError, NotFoundError) as error:
        text = str(error)
        for parts in names:
            shown = repr(show_name(parts))
            for plain in (repr(tuple(parts)), repr(".".join(parts))):
                if plain != shown:
                    text = text.replace(plain, shown)
        if text == str(error):
            raise
        try:
            renamed = type(error)(text)
        except Exception:  # an error class built otherwise: its own words
            raise error from None
        raise renamed from None


def is_location(table: str) -> bool:
    """Whether a TABLE argument is a path or URI (a metadata file, or a file-system table
    directory with ``metadata/version-hint.text``) rather than a dotted identifier: it has a
    slash or a backslash outside double quotes, or names a ``*.metadata.json`` file. A
    slash inside a quoted part is part of a name (``db."a/b"``, as ``icefloe list`` prints
    the table ``a/b``)."""
    outside = unquoted_text(table)
    if outside is None:
        outside = table
    return "/" in outside or "\\" in outside or bool(_METADATA_FILE.search(table))


pass_state = click.make_pass_decorator(State)


def json_option(fn: F) -> F:
    """The ``--json`` flag of read commands."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print JSON for scripts instead of text."
    )(fn)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """A warning as one ``warning: ...`` line on standard error (no source file, line or
    code): icefloe's own by their message, others with their category first."""
    text = " ".join(str(message).split())
    if not category.__module__.startswith("icefloe."):
        text = f"{category.__name__}: {text}"
    click.echo(printable(f"warning: {text}"), err=True)


class _Root(click.Group):
    """The root group: turns errors into one line on stderr and an exit code, and warnings
    into one ``warning:`` line each (a property icefloe refuses and reads as its default is
    named once)."""

    def invoke(self, ctx: click.Context) -> Any:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            from icefloe.properties import InvalidPropertyWarning

            warnings.simplefilter("once", InvalidPropertyWarning)
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:
            # Ctrl-C in a command that says nothing more itself (the changing ones say
            # whether they committed): one line and 128 + SIGINT, as shells report it
            click.echo("interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:
            # the reader went away (``icefloe scan ... | head``): stop quietly, and keep
            # Python from complaining again when it flushes standard output at exit
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(EXIT_PIPE_CLOSED)
        except Exception as error:
            state = ctx.obj if isinstance(ctx.obj, State) else None
            if state is not None and state.debug:
                traceback.print_exc(file=sys.stderr)
            click.echo(printable(one_line(error)), err=True)
            ctx.exit(exit_code(error))


@click.group(cls=_Root, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--catalog",
    "catalog_name",
    metavar="NAME",
    help="Catalog to use (default: default-catalog of ~/.icefloe.yaml, else the local one).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
@click.option("--color/--no-color", default=None, help="Force colour on or off.")
@click.option("--width", type=click.IntRange(40, 1000), help="Terminal width for pictures.")
@click.version_option(package_name="icefloe", prog_name="icefloe")
@click.pass_context
def cli(
    ctx: click.Context, catalog_name: str | None, debug: bool, color: bool | None, width: int | None
) -> None:
    """Inspect, maintain and query Apache Iceberg tables.

    TABLE arguments are dotted identifiers (db.events; quote a part that holds a dot:
    db.\"x.y\"); commands that only read also take
    the path or URI of a metadata file or of a file-system table directory. Exit codes: 0 ok,
    1 failure, 2 bad input, 3 not found, 4 conflict.
    """
    ctx.obj = State(catalog_name, debug, Output(color=color, width=width))


def register(command: click.Command) -> None:
    """Add a command (or group) to the ``icefloe`` command tree."""
    cli.add_command(command)


for _module in COMMAND_MODULES:
    importlib.import_module(_module).register(cli)


#: ASCII stand-ins for the characters the pictures draw with, on a terminal whose encoding
#: lacks them (rich swaps its own box characters; these are icefloe's).
_STAND_INS = {
    "·": ".", "…": "...", "◆": "*", "●": "*", "▲": "^", "█": "#", "▉": "#", "▊": "#",
    "▋": "#", "▌": "#", "▍": "#", "▎": "#", "▏": "|", "─": "-", "│": "|", "├": "+",
    "┤": "+", "╰": "`", "≥": ">=", "≤": "<=", "→": "->", "—": "--", "–": "-", "×": "x",
    "⎇": "*",
}  # fmt: skip


def _stand_in(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    from rich.cells import cell_len

    text = error.object[error.start : error.end]
    # a character without a stand-in becomes one "?" per terminal cell it takes, so the
    # columns laid out for it stay aligned (a CJK character or an emoji takes two)
    return "".join(_STAND_INS.get(c) or "?" * cell_len(c) for c in text), error.end


def _encodable_output() -> None:
    """Make stdout and stderr write what their encoding lacks as ASCII stand-ins instead of
    failing (an ASCII or Latin-1 terminal, ``PYTHONIOENCODING=ascii``)."""
    codecs.register_error("icefloe-ascii", _stand_in)
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if isinstance(stream, io.TextIOWrapper) and encoding not in ("utf8", "utf16", "utf32"):
            stream.reconfigure(errors="icefloe-ascii")


def main() -> None:
    """The console-script entry point."""
    _encodable_output()
    cli(prog_name="icefloe")
