"""Catalog commands: ``list``, ``create namespace``, ``drop table|view|namespace``, ``rename``,
``view``."""

from __future__ import annotations

import click
from rich.tree import Tree

from icefloe.catalog.base import Catalog
from icefloe.cli.app import State, catalog_identifier, json_option, named_as_given, pass_state
from icefloe.cli.names import display_name, show_name, split_name
from icefloe.cli.render import esc, literal, shown_properties
from icefloe.exceptions import UnsupportedFeatureError, ValidationError

__all__ = ["register"]


def _dotted(identifier: tuple[str, ...]) -> str:
    """The name as commands take it back: a part with a dot or a quote quoted."""
    return show_name(identifier)


def _parse_properties(pairs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValidationError(f"a property must be KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


def _views(catalog: Catalog, ns: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The views of ``ns``; none where the catalog (or its REST server) keeps no views."""
    if not catalog.keeps_views:
        return []
    try:
        return sorted(catalog.list_views(ns))
    except UnsupportedFeatureError:
        return []


@click.command("list", short_help="Namespaces, tables and views as a tree.")
@click.argument("namespace", required=False)
@json_option
@pass_state
def list_cmd(state: State, namespace: str | None, as_json: bool) -> None:
    """List namespaces, tables and views, under NAMESPACE or everywhere."""
    catalog = state.catalog()
    root: tuple[str, ...] = split_name(namespace) if namespace else ()
    if root and not catalog.namespace_exists(root):
        from icefloe.exceptions import NoSuchNamespaceError

        raise NoSuchNamespaceError(f"namespace {show_name(root)!r} does not exist")
    namespaces: list[tuple[str, ...]] = []
    tables: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    views: dict[tuple[str, ...], list[tuple[str, ...]]] = {}

    def walk(ns: tuple[str, ...]) -> None:
        if ns:
            namespaces.append(ns)
            tables[ns] = sorted(catalog.list_tables(ns))
            views[ns] = _views(catalog, ns)
        for child in sorted(catalog.list_namespaces(ns)):
            if tuple(child) != ns:
                walk(tuple(child))

    walk(root)
    if as_json:
        state.out.json(
            {
                "namespaces": [_dotted(n) for n in namespaces],
                "tables": [_dotted(t) for n in namespaces for t in tables[n]],
                "views": [_dotted(v) for n in namespaces for v in views[n]],
            }
        )
        return
    # into a pipe, the heading and each name whole on its line (never cut at 80 columns); on
    # a terminal or with --width, a long one folds to the width
    title = f"[bold]{esc(state.catalog().name)}[/]" + (f" · {esc(show_name(root))}" if root else "")
    tree = Tree(title)
    nodes: dict[tuple[str, ...], Tree] = {root: tree}
    for ns in namespaces:
        parent = nodes.get(ns[:-1], tree)
        node = parent.add(literal(show_name(ns[-1:]), style="bold cyan"))
        nodes[ns] = node
        for t in tables[ns]:
            node.add(literal(show_name(t[-1:])))
        for v in views[ns]:
            node.add(literal(show_name(v[-1:]), style="magenta") + literal(" (view)", style="dim"))
    state.out.unwrapped.print(tree)


@click.group("create", short_help="Create a namespace.")
def create() -> None:
    """Create a namespace."""


@create.command("namespace")
@click.argument("namespace")
@click.option("--property", "-p", "props", multiple=True, metavar="KEY=VALUE")
@pass_state
def create_namespace(state: State, namespace: str, props: tuple[str, ...]) -> None:
    """Create NAMESPACE (dotted for nested ones) with optional properties."""
    levels = split_name(namespace)
    if not all(levels):
        raise ValidationError(f"not a namespace name: {namespace!r} (an empty part)")
    with named_as_given(levels, levels[:-1]):
        state.catalog().create_namespace(levels, _parse_properties(props))
    state.out.console.print(literal(f"created namespace {namespace}"))


@click.group("drop", short_help="Drop a table, a view or a namespace.")
def drop() -> None:
    """Drop a table, a view or a namespace."""


@drop.command("table")
@click.argument("table")
@click.option("--purge", is_flag=True, help="Also delete the table's data and metadata files.")
@pass_state
def drop_table(state: State, table: str, purge: bool) -> None:
    """Drop TABLE from the catalog (its files stay unless --purge)."""
    parts = catalog_identifier(table, "drop table")
    with named_as_given(parts):
        state.catalog().drop_table(parts, purge=purge)
    done = f"dropped table {table}" + (" and deleted its files" if purge else "")
    state.out.console.print(literal(done))


@drop.command("view")
@click.argument("view")
@pass_state
def drop_view(state: State, view: str) -> None:
    """Drop VIEW from the catalog (its current metadata file too, unless gc.enabled=false)."""
    parts = catalog_identifier(view, "drop view")
    with named_as_given(parts):
        state.catalog().drop_view(parts)
    state.out.console.print(literal(f"dropped view {view}"))


@drop.command("namespace")
@click.argument("namespace")
@pass_state
def drop_namespace(state: State, namespace: str) -> None:
    """Drop NAMESPACE (it must be empty)."""
    levels = split_name(namespace)
    with named_as_given(levels):
        state.catalog().drop_namespace(levels)
    state.out.console.print(literal(f"dropped namespace {namespace}"))


@click.command("rename", short_help="Rename a table.")
@click.argument("source")
@click.argument("target")
@pass_state
def rename(state: State, source: str, target: str) -> None:
    """Rename table SOURCE to TARGET."""
    old = catalog_identifier(source, "rename")
    new = catalog_identifier(target, "rename")
    with named_as_given(old, new, new[:-1]):
        state.catalog().rename_table(old, new)  # to its own name: nothing to do, as Java
    if old == new:
        state.out.console.print(literal(f"{source} already has that name: nothing changed"))
    else:
        state.out.console.print(literal(f"renamed {source} to {target}"))


@click.command("view", short_help="A view: its query, schema and versions.")
@click.argument("view")
@json_option
@pass_state
def view_cmd(state: State, view: str, as_json: bool) -> None:
    """Show VIEW: the current query in every dialect, the schema it returns, its versions."""
    parts = catalog_identifier(view, "view")
    with named_as_given(parts):
        v = state.catalog().load_view(parts)
    current = v.current_version
    if as_json:
        state.out.json(
            {
                "view": display_name(v),
                "metadata_location": v.metadata_location,
                "current_version": current.version_id,
                "queries": {d: current.sql(d) for d in current.dialects},
                "default_namespace": list(current.default_namespace),
                "default_catalog": current.default_catalog,
                "schema": [[f.name, str(f.field_type)] for f in v.schema.fields],
                "properties": shown_properties(v.properties),
                "versions": [
                    {
                        "version_id": x.version_id,
                        "timestamp_ms": x.timestamp_ms,
                        "summary": x.summary,
                    }
                    for x in v.versions
                ],
            }
        )
        return
    out = state.out.console
    out.print(literal(display_name(v), style="bold") + literal(f"  version {current.version_id}"))
    for dialect in current.dialects:
        out.print(literal(f"{dialect}:", style="cyan"))
        for line in (current.sql(dialect) or "").splitlines():
            out.print(literal(f"  {line}"))
    out.print(
        literal("schema: ", style="dim")
        + literal(", ".join(f"{f.name} {f.field_type}" for f in v.schema.fields))
    )
    levels = current.default_namespace
    names = "namespace " + (
        repr(list(levels)) if any("." in p for p in levels) else ".".join(levels) or "-"
    )
    if current.default_catalog:
        names += f", catalog {current.default_catalog}"
    out.print(literal(f"names resolve in: {names}", style="dim"))
    for key, value in shown_properties(v.properties).items():
        out.print(literal(f"{key} = {value}", style="dim"))
    out.print(literal(f"{len(v.versions)} version(s) kept", style="dim"))


def register(group: click.Group) -> None:
    """Add ``list``, ``create``, ``drop``, ``rename`` and ``view`` to ``group``."""
    for command in (list_cmd, create, drop, rename, view_cmd):
        group.add_command(command)
