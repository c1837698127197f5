"""Catalog commands: ``list``, ``create namespace``, ``drop table|namespace``, ``rename``."""

from __future__ import annotations

import click
from rich.tree import Tree

from icefloe.catalog import to_identifier
from icefloe.cli.app import State, catalog_identifier, json_option, pass_state
from icefloe.cli.render import esc, literal
from icefloe.exceptions import NoSuchTableError, TableAlreadyExistsError, ValidationError

__all__ = ["register"]


def _dotted(identifier: tuple[str, ...]) -> str:
    return ".".join(identifier)


def _parse_properties(pairs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValidationError(f"a property must be KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


@click.command("list", short_help="Namespaces and tables as a tree.")
@click.argument("namespace", required=False)
@json_option
@pass_state
def list_cmd(state: State, namespace: str | None, as_json: bool) -> None:
    """List namespaces and tables, under NAMESPACE or everywhere."""
    catalog = state.catalog()
    root: tuple[str, ...] = tuple(namespace.split(".")) if namespace else ()
    if root and not catalog.namespace_exists(root):
        from icefloe.exceptions import NoSuchNamespaceError

        raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist")
    namespaces: list[tuple[str, ...]] = []
    tables: dict[tuple[str, ...], list[tuple[str, ...]]] = {}

    def walk(ns: tuple[str, ...]) -> None:
        if ns:
            namespaces.append(ns)
            tables[ns] = sorted(catalog.list_tables(ns))
        for child in sorted(catalog.list_namespaces(ns)):
            if tuple(child) != ns:
                walk(tuple(child))

    walk(root)
    if as_json:
        state.out.json(
            {
                "namespaces": [_dotted(n) for n in namespaces],
                "tables": [_dotted(t) for n in namespaces for t in tables[n]],
            }
        )
        return
    title = f"[bold]{esc(state.catalog().name)}[/]" + (f" · {esc(namespace)}" if namespace else "")
    tree = Tree(title)
    nodes: dict[tuple[str, ...], Tree] = {root: tree}
    for ns in namespaces:
        parent = nodes.get(ns[:-1], tree)
        node = parent.add(literal(ns[-1], style="bold cyan"))
        nodes[ns] = node
        for t in tables[ns]:
            node.add(literal(t[-1]))
    state.out.console.print(tree)


@click.group("create", short_help="Create a namespace.")
def create() -> None:
    """Create a namespace."""


@create.command("namespace")
@click.argument("namespace")
@click.option("--property", "-p", "props", multiple=True, metavar="KEY=VALUE")
@pass_state
def create_namespace(state: State, namespace: str, props: tuple[str, ...]) -> None:
    """Create NAMESPACE (dotted for nested ones) with optional properties."""
    if not all(namespace.split(".")):
        raise ValidationError(f"not a namespace name: {namespace!r} (an empty part)")
    state.catalog().create_namespace(namespace, _parse_properties(props))
    state.out.console.print(literal(f"created namespace {namespace}"))


@click.group("drop", short_help="Drop a table or a namespace.")
def drop() -> None:
    """Drop a table or a namespace."""


@drop.command("table")
@click.argument("table")
@click.option("--purge", is_flag=True, help="Also delete the table's data and metadata files.")
@pass_state
def drop_table(state: State, table: str, purge: bool) -> None:
    """Drop TABLE from the catalog (its files stay unless --purge)."""
    state.catalog().drop_table(catalog_identifier(table, "drop table"), purge=purge)
    done = f"dropped table {table}" + (" and deleted its files" if purge else "")
    state.out.console.print(literal(done))


@drop.command("namespace")
@click.argument("namespace")
@pass_state
def drop_namespace(state: State, namespace: str) -> None:
    """Drop NAMESPACE (it must be empty)."""
    state.catalog().drop_namespace(namespace)
    state.out.console.print(literal(f"dropped namespace {namespace}"))


@click.command("rename", short_help="Rename a table.")
@click.argument("source")
@click.argument("target")
@pass_state
def rename(state: State, source: str, target: str) -> None:
    """Rename table SOURCE to TARGET."""
    catalog_identifier(source, "rename")
    catalog_identifier(target, "rename")
    catalog = state.catalog()
    if to_identifier(source) == to_identifier(target):
        # as Java's REST catalog answers (409): the target name is taken, by the table itself
        if not catalog.table_exists(source):
            raise NoSuchTableError(f"table {source!r} does not exist")
        raise TableAlreadyExistsError(
            f"cannot rename {source} to {target}: table {target!r} already exists (it is the "
            "same table)"
        )
    catalog.rename_table(source, target)
    state.out.console.print(literal(f"renamed {source} to {target}"))


def register(group: click.Group) -> None:
    """Add ``list``, ``create``, ``drop`` and ``rename`` to ``group``; returns None."""
    for command in (list_cmd, create, drop, rename):
        group.add_command(command)
