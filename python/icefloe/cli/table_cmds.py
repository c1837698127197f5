"""Table metadata commands: ``describe``, ``schema``, ``spec``, ``location``, ``uuid`` and
``properties get|set|remove``."""

from __future__ import annotations

import json
import shlex
from typing import Any

import click
from rich.table import Table as RichTable
from rich.text import Text
from rich.tree import Tree

from icefloe.cli.app import State, is_location, json_option, pass_state
from icefloe.cli.names import display_name, show_name, split_name
from icefloe.cli.render import (
    esc,
    human_size,
    iso,
    literal,
    plural,
    printable,
    shown_properties,
    ts,
)
from icefloe.cli.stats_cmds import print_statistics, statistics_json
from icefloe.exceptions import UnsupportedFeatureError, ValidationError

__all__ = ["register", "schema_tree", "snapshot_json"]


def _default(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _field_label(field: Any) -> Text:
    label = Text()
    label.append(f"{field.field_id:>3} ", style="dim")
    label.append(printable(field.name), style="bold")
    label.append(": ")
    ftype = field.field_type
    label.append(
        type(ftype).__name__.removesuffix("Type").lower() if ftype.is_nested else str(ftype),
        style="cyan",
    )
    label.append(" required" if field.required else " optional", style="dim")
    if field.initial_default is not None:
        label.append(
            f"  initial-default={printable(_default(field.initial_default))}", style="magenta"
        )
    if field.write_default is not None:
        label.append(f"  write-default={printable(_default(field.write_default))}", style="magenta")
    if field.doc:
        label.append(f"  — {printable(field.doc)}", style="italic")
    return label


def schema_tree(schema: Any, title: str | Text) -> Tree:
    """The schema as a tree: id, name, type, required, defaults and doc per field (``title``
    as markup when a string)."""
    tree = Tree(title)

    def add(node: Tree, fields: Any) -> None:
        for f in fields:
            child = node.add(_field_label(f))
            if f.field_type.is_nested:
                add(child, f.field_type.fields)

    add(tree, schema.fields)
    return tree


def snapshot_json(snapshot: Any) -> dict[str, Any] | None:
    """A snapshot as JSON for ``--json`` output."""
    if snapshot is None:
        return None
    return {
        "snapshot_id": snapshot.snapshot_id,
        "parent_snapshot_id": snapshot.parent_snapshot_id,
        "sequence_number": snapshot.sequence_number,
        "timestamp_ms": snapshot.timestamp_ms,
        "committed_at": iso(snapshot.timestamp_ms),
        "operation": snapshot.operation,
        "summary": snapshot.summary.to_json() if snapshot.summary else {},
        "manifest_list": snapshot.manifest_list,
        "schema_id": snapshot.schema_id,
        "first_row_id": snapshot.first_row_id,
        "added_rows": snapshot.added_rows,
    }


#: Refs ``describe`` names before it counts the rest (``--json`` lists every one).
_REFS_SHOWN = 8


def _refs_text(refs: dict[str, Any]) -> str:
    """The refs, ``main`` and then branches before tags, by name: the first
    :data:`_REFS_SHOWN` named, the others counted (a table may have thousands)."""
    order = sorted(
        refs.items(), key=lambda kv: (kv[0] != "main", kv[1].ref_type != "branch", kv[0])
    )
    shown = [f"{n} ({r.ref_type}) -> {r.snapshot_id}" for n, r in order[:_REFS_SHOWN]]
    rest = order[_REFS_SHOWN:]
    if rest:
        branches = sum(1 for _, r in rest if r.ref_type == "branch")
        counts = ((branches, "branch", "branches"), (len(rest) - branches, "tag", "tags"))
        kinds = [f"{k} {one if k == 1 else many}" for k, one, many in counts if k]
        shown.append(f"and {' and '.join(kinds)} more (--json lists them)")
    return ", ".join(shown) or "-"


def _describe_json(table: Any) -> dict[str, Any]:
    meta = table.metadata
    return {
        "identifier": table.name,
        "format_version": meta.format_version,
        "uuid": meta.table_uuid,
        "location": meta.location,
        "metadata_location": table.metadata_location,
        "last_updated_ms": meta.last_updated_ms,
        "schema": meta.current_schema().to_json(),
        "partition_spec": meta.spec().to_json(),
        "sort_order": meta.sort_order().to_json(),
        "properties": shown_properties(meta.properties),
        "current_snapshot": snapshot_json(meta.current_snapshot()),
        "refs": {name: ref.to_json() for name, ref in sorted(meta.refs.items())},
        "snapshot_count": len(meta.snapshots),
        "row_lineage": {
            "enabled": meta.format_version >= 3,
            "next_row_id": meta.next_row_id,
        },
        "statistics": statistics_json(table),
    }


def _kv_table(rows: list[tuple[str, Any]]) -> RichTable:
    """Key and value per row, shown as written (a :class:`Text` value as it is)."""
    t = RichTable.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column(overflow="fold")
    for k, v in rows:
        t.add_row(literal(k), v if isinstance(v, Text) else literal(v))
    return t


def _spec_lines(table: Any) -> str:
    """The partition fields, one a line, names with control characters written out."""
    spec = table.spec()
    schema = table.schema()
    if not spec.fields:
        return "unpartitioned"
    parts = []
    for f in spec.fields:
        sources = ",".join(schema.find_column_name(i) or f"#{i}" for i in f.all_source_ids)
        parts.append(printable(f"{f.name} = {f.transform}({sources})  [id {f.field_id}]"))
    return "\n".join(parts) + f"\n(spec id {spec.spec_id})"


def _sort_lines(table: Any) -> str:
    """The sort fields, one a line, names with control characters written out."""
    order = table.sort_order()
    schema = table.schema()
    if not order.fields:
        return "unsorted"
    parts = []
    for f in order.fields:
        sources = ",".join(schema.find_column_name(i) or f"#{i}" for i in f.all_source_ids)
        parts.append(printable(f"{f.transform}({sources}) {f.direction} {f.null_order}"))
    return "\n".join(parts) + f"\n(order id {order.order_id})"


@click.command("describe", short_help="Everything about a table (or a namespace).")
@click.argument("table")
@json_option
@pass_state
def describe(state: State, table: str, as_json: bool) -> None:
    """Everything about TABLE (schema, partitioning, sort order, properties, current
    snapshot), or the properties of a namespace."""
    if not is_location(table):
        catalog = state.catalog()
        parts = split_name(table)
        is_table = len(parts) > 1 and catalog.table_exists(parts)
        if not is_table and catalog.namespace_exists(parts):
            _describe_namespace(state, parts, as_json)
            return
        if len(parts) < 2:
            from icefloe.exceptions import NoSuchNamespaceError

            raise NoSuchNamespaceError(f"no table or namespace {table!r}")
        if not is_table and _is_view(catalog, parts):
            from icefloe.exceptions import NoSuchTableError

            raise NoSuchTableError(
                f"{table} is a view, not a table: icefloe view {shlex.quote(table)} shows it"
            )
    t = state.table(table)
    if as_json:
        state.out.json(_describe_json(t))
        return
    meta = t.metadata
    console = state.out.unwrapped
    snap = meta.current_snapshot()
    summary = snap.summary if snap is not None else None
    # read before anything is printed: a size that is not a number is refused
    size = summary.get_int("total-files-size") if summary is not None else None
    rows: list[tuple[str, Any]] = [
        ("table", display_name(t)),
        ("format version", meta.format_version),
        ("uuid", meta.table_uuid),
        ("location", meta.location),
        ("metadata", t.metadata_location),
        ("last updated", ts(meta.last_updated_ms, utc=True)),
        ("partition spec", Text(_spec_lines(t))),
        ("sort order", Text(_sort_lines(t))),
    ]
    if meta.format_version >= 3:
        rows.append(("row lineage", f"enabled, next row id {meta.next_row_id}"))
    else:
        rows.append(("row lineage", "off (format version < 3)"))
    rows.append(("refs", _refs_text(meta.refs)))
    rows.append(("snapshots", len(meta.snapshots)))
    console.print(_kv_table(rows))
    console.print()
    console.print(
        schema_tree(meta.current_schema(), f"[bold]schema[/] (id {meta.current_schema_id})")
    )
    console.print()
    if snap is None:
        console.print("[bold]current snapshot[/]: none (empty table)")
    else:
        s = snap.summary.to_json() if snap.summary else {}
        console.print(
            f"[bold]current snapshot[/] {snap.snapshot_id} · {esc(snap.operation)} · "
            f"{ts(snap.timestamp_ms, utc=True)} · sequence {snap.sequence_number}"
        )
        counts = [
            ("records", s.get("total-records", "-")),
            ("data files", s.get("total-data-files", "-")),
            ("delete files", s.get("total-delete-files", "-")),
            ("size", human_size(size)),
            ("position deletes", s.get("total-position-deletes", "-")),
            ("equality deletes", s.get("total-equality-deletes", "-")),
        ]
        console.print(_kv_table(counts))
    if snap is not None:
        console.print()
        print_statistics(state, statistics_json(t))
    console.print()
    props = list(shown_properties(meta.properties).items())
    console.print("[bold]properties[/]" + ("" if props else ": none"))
    if props:
        console.print(_kv_table(props))


def _is_view(catalog: Any, parts: tuple[str, ...]) -> bool:
    """Whether ``parts`` names a view of ``catalog`` (False where it keeps no views)."""
    if not getattr(catalog, "keeps_views", False):
        return False
    try:
        return bool(catalog.view_exists(parts))
    except (ValidationError, UnsupportedFeatureError):
        return False


def _describe_namespace(state: State, levels: tuple[str, ...], as_json: bool) -> None:
    catalog = state.catalog()
    namespace = show_name(levels)
    props = shown_properties(catalog.load_namespace_properties(levels))
    tables = [show_name(i) for i in sorted(catalog.list_tables(levels))]
    if as_json:
        state.out.json({"namespace": namespace, "properties": props, "tables": tables})
        return
    console = state.out.unwrapped
    console.print(f"[bold]namespace {esc(namespace)}[/] · {plural(len(tables), 'table')}")
    for name in tables:
        console.print(f"  {esc(name)}", soft_wrap=True)
    console.print(_kv_table(list(props.items())) if props else "properties: none")


@click.command("schema", short_help="The current schema as a tree.")
@click.argument("table")
@json_option
@pass_state
def schema_cmd(state: State, table: str, as_json: bool) -> None:
    """The current schema of TABLE as a tree."""
    t = state.table(table)
    if as_json:
        state.out.json(t.schema().to_json())
        return
    # a tree of names: into a pipe, each name whole on its line (never cut at 80 columns)
    state.out.unwrapped.print(schema_tree(t.schema(), literal(display_name(t), style="bold")))


@click.command("spec", short_help="The partition spec.")
@click.argument("table")
@json_option
@pass_state
def spec_cmd(state: State, table: str, as_json: bool) -> None:
    """The partition spec of TABLE."""
    t = state.table(table)
    if as_json:
        state.out.json(t.spec().to_json())
        return
    state.out.console.print(Text(_spec_lines(t)))


@click.command("location", short_help="The table's base location.")
@click.argument("table")
@json_option
@pass_state
def location_cmd(state: State, table: str, as_json: bool) -> None:
    """The base location of TABLE."""
    t = state.table(table)
    if as_json:
        state.out.json({"location": t.location, "metadata_location": t.metadata_location})
        return
    click.echo(printable(t.location))


@click.command("uuid", short_help="The table's UUID.")
@click.argument("table")
@json_option
@pass_state
def uuid_cmd(state: State, table: str, as_json: bool) -> None:
    """The UUID of TABLE."""
    t = state.table(table)
    if as_json:
        state.out.json({"uuid": t.metadata.table_uuid})
        return
    click.echo(printable(t.metadata.table_uuid))


@click.group("properties", short_help="Read and change table properties.")
def properties() -> None:
    """Read and change table properties."""


@properties.command("get")
@click.argument("table")
@click.argument("key", required=False)
@json_option
@pass_state
def properties_get(state: State, table: str, key: str | None, as_json: bool) -> None:
    """Every property of TABLE, or the value of KEY (credentials read ``***``: the table API
    returns them)."""
    props = state.table(table).properties
    if key is not None:
        if key not in props:
            from icefloe.exceptions import NotFoundError

            raise NotFoundError(f"table {table} has no property {key!r}")
        value = shown_properties({key: props[key]})[key]
        if as_json:
            state.out.json({key: value})
        else:
            click.echo(printable(value))
        return
    shown = shown_properties(props)
    if as_json:
        state.out.json(shown)
        return
    for k, v in shown.items():
        click.echo(printable(f"{k}={v}"))


@properties.command("set")
@click.argument("table")
@click.argument("pairs", nargs=-1, required=True, metavar="KEY VALUE... | KEY=VALUE...")
@pass_state
def properties_set(state: State, table: str, pairs: tuple[str, ...]) -> None:
    """Set properties of TABLE in one commit: ``KEY VALUE ...`` or ``KEY=VALUE ...`` (a
    value of the first form may hold ``=``)."""
    if not all("=" in p for p in pairs) and not any("=" in k for k in pairs[::2]):
        if len(pairs) % 2:
            raise ValidationError(f"property {pairs[-1]!r} has no value (KEY VALUE or KEY=VALUE)")
        updates = dict(zip(pairs[::2], pairs[1::2], strict=True))
    else:
        updates = {}
        for p in pairs:
            k, sep, v = p.partition("=")
            if not sep or not k:
                raise ValidationError(f"expected KEY VALUE or KEY=VALUE pairs, got {p!r}")
            updates[k] = v
    state.table(table).set_properties(updates)
    shown = shown_properties(updates)
    for k in updates:  # in the order given
        state.out.console.print(literal(f"set {k}={shown[k]}"))


@properties.command("remove")
@click.argument("table")
@click.argument("keys", nargs=-1, required=True)
@pass_state
def properties_remove(state: State, table: str, keys: tuple[str, ...]) -> None:
    """Remove properties KEYS of TABLE in one commit."""
    t = state.table(table)
    missing = [k for k in keys if k not in t.properties]
    if missing:
        from icefloe.exceptions import NotFoundError

        raise NotFoundError(f"table {table} has no property {missing[0]!r}")
    t.remove_properties(*keys)
    for k in keys:
        state.out.console.print(literal(f"removed {k}"))


def register(group: click.Group) -> None:
    """Add the table commands (``describe``, ``schema``, ...) to ``group``; returns None."""
    for command in (describe, schema_cmd, spec_cmd, location_cmd, uuid_cmd, properties):
        group.add_command(command)
