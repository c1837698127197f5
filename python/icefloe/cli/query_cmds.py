"""Reading data: ``icefloe scan`` (a table read with filter, projection, limit and time travel)
and ``icefloe sql`` (DuckDB over icefloe scans, when DuckDB is installed).

Output formats: ``table`` (a terminal table, at most ``--max-rows`` rows drawn), ``csv``,
``json`` (JSON Lines, one object per row: decimals as exact strings, binary as hex, dates and
times in ISO 8601) and ``parquet`` (to ``--output`` or a pipe). Rows are
streamed batch by batch for ``csv``, ``json`` and ``parquet``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

import click
import pyarrow as pa
from rich import box
from rich.table import Table as RichTable

from icefloe.cli.app import State, pass_state
from icefloe.cli.maintenance_cmds import parse_age
from icefloe.exceptions import NoSuchTableError, UnsupportedFeatureError, ValidationError

__all__ = ["register", "write_batches"]

FORMATS = ("table", "csv", "json", "parquet")


def _cell(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return str(value)


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        # JSON has no NaN or infinities: the strings Spark's and Jackson's JSON use
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, tuple):  # map entries
        return [_json_value(v) for v in value]
    return value


def _open_binary(output: str | None) -> tuple[BinaryIO, bool]:
    if output and output != "-":
        return open(output, "wb"), True
    return sys.stdout.buffer, False


def write_batches(
    state: State,
    schema: pa.Schema,
    batches: Iterator[pa.RecordBatch],
    fmt: str,
    output: str | None,
    max_rows: int,
) -> int:
    """Write a stream of batches in ``fmt``; returns the number of rows written."""
    rows = 0
    if fmt == "table":
        t = RichTable(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for name in schema.names:
            t.add_column(name, overflow="fold")
        more = False
        for b in batches:
            for rec in b.to_pylist():
                if rows >= max_rows:
                    more = True
                    break
                t.add_row(*(_cell(rec[n]) for n in schema.names))
                rows += 1
            if more:
                break
        state.out.console.print(t)
        note = f"{rows} rows" + (f" (first {max_rows} drawn; use --max-rows)" if more else "")
        state.out.err.print(f"[dim]{note}[/]")
        return rows
    if fmt == "parquet":
        import pyarrow.parquet as pq

        if output in (None, "-") and sys.stdout.isatty():
            raise ValidationError("--format parquet needs --output FILE (or a pipe)")
        stream, close = _open_binary(output)
        try:
            with pq.ParquetWriter(stream, schema) as writer:
                for b in batches:
                    writer.write_batch(b)
                    rows += b.num_rows
        finally:
            if close:
                stream.close()
        return rows
    if fmt == "csv":
        import pyarrow.csv as pcsv

        nested = [f.name for f in schema if pa.types.is_nested(f.type)]
        if nested:
            raise ValidationError(
                f"CSV cannot hold the nested columns {', '.join(nested)}: leave them out with "
                "--select, or use --format json or parquet"
            )

        stream, close = _open_binary(output)
        try:
            with pcsv.CSVWriter(stream, schema) as writer:
                for b in batches:
                    writer.write_batch(b)
                    rows += b.num_rows
        finally:
            if close:
                stream.close()
            else:
                stream.flush()
        return rows
    # JSON Lines
    out = open(output, "w") if output and output != "-" else sys.stdout  # noqa: SIM115
    try:
        for b in batches:
            for rec in b.to_pylist():
                out.write(json.dumps(_json_value(rec), default=_cell, allow_nan=False) + "\n")
            rows += b.num_rows
    finally:
        if out is not sys.stdout:
            out.close()
        else:
            out.flush()
    return rows


def _output_format(fmt: str, as_json: bool) -> str:
    """The format ``--format`` and ``--json`` ask for together."""
    if as_json and fmt not in ("table", "json"):
        raise ValidationError(f"--json asks for JSON, --format for {fmt}: give one of them")
    return "json" if as_json else fmt


def _format_options(fn: Any) -> Any:
    fn = click.option(
        "--max-rows",
        type=click.IntRange(1),
        default=100,
        show_default=True,
        help="Rows drawn by --format table.",
    )(fn)
    fn = click.option("--output", "-o", help="Write to this file instead of standard output.")(fn)
    fn = click.option("--json", "as_json", is_flag=True, help="The same as --format json.")(fn)
    fn = click.option(
        "--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True
    )(fn)
    return fn


def _as_of(text: str) -> int:
    if text.strip().isdigit():
        return int(text)
    return parse_age(text)


@click.command("scan", short_help="Read rows (filter, select, time travel).")
@click.argument("table")
@click.option("--filter", "row_filter", help="Row filter, e.g. \"region = 'eu' and id > 5\".")
@click.option("--select", "columns", help="Comma-separated columns (also _file, _pos, ...).")
@click.option("--limit", type=click.IntRange(0), help="Stop after this many rows.")
@click.option("--snapshot", "snapshot_id", type=int, help="Read this snapshot.")
@click.option("--ref", help="Read this branch or tag.")
@click.option("--as-of", help="Read the snapshot current at this time (ISO, epoch ms or age).")
@_format_options
@pass_state
def scan(
    state: State,
    table: str,
    row_filter: str | None,
    columns: str | None,
    limit: int | None,
    snapshot_id: int | None,
    ref: str | None,
    as_of: str | None,
    fmt: str,
    as_json: bool,
    output: str | None,
    max_rows: int,
) -> None:
    """Read rows of TABLE (filtered, projected, limited, at a snapshot, ref or time)."""
    if sum(x is not None for x in (snapshot_id, ref, as_of)) > 1:
        raise ValidationError("give at most one of --snapshot, --ref and --as-of")
    t = state.table(table)
    kwargs: dict[str, Any] = {}
    if row_filter:
        kwargs["row_filter"] = row_filter
    if columns:
        kwargs["selected_fields"] = tuple(c.strip() for c in columns.split(",") if c.strip())
    fmt = _output_format(fmt, as_json)
    if fmt == "table" and limit is None:
        limit = max_rows + 1  # read no more than is drawn (and one to tell there is more)
    reader = t.scan(
        snapshot_id=snapshot_id,
        ref=ref,
        as_of=_as_of(as_of) if as_of else None,
        limit=limit,
        **kwargs,
    ).to_batches()
    write_batches(state, reader.schema, iter(reader), fmt, output, max_rows)


def _referenced_tables(query: str) -> list[str]:
    import duckdb

    names = []
    for raw in duckdb.get_table_names(query, qualified=True):
        name = raw.split(" AS ")[0].strip()
        names.append(name)
    return sorted(set(names))


@click.command("sql", short_help="DuckDB SQL over the catalog's tables.")
@click.argument("query")
@_format_options
@pass_state
def sql(
    state: State, query: str, fmt: str, as_json: bool, output: str | None, max_rows: int
) -> None:
    """Run a DuckDB SQL QUERY over the catalog's tables, named as in the catalog
    (select ... from db.events); each table is read by an icefloe scan."""
    try:
        import duckdb
    except ImportError:
        raise UnsupportedFeatureError("icefloe sql needs DuckDB: pip install duckdb") from None
    catalog = state.catalog()
    con = duckdb.connect()
    try:
        try:
            reader = _run_sql(con, catalog, query)
        except duckdb.CatalogException as error:
            raise NoSuchTableError(f"sql: {error}") from None
        except duckdb.Error as error:
            raise ValidationError(f"sql: {error}") from None
        if reader is not None:
            fmt = _output_format(fmt, as_json)
            write_batches(state, reader.schema, iter(reader), fmt, output, max_rows)
    finally:
        con.close()


def _run_sql(con: Any, catalog: Any, query: str) -> pa.RecordBatchReader | None:
    """Register the catalog tables ``query`` names as views over icefloe scans, run it.

    ``ns.table`` becomes a view in schema ``ns``; ``a.b.table`` (a nested namespace) a view in
    schema ``b`` of an attached in-memory database ``a``, as DuckDB reads three-part names.
    """
    attached: set[str] = set()
    for i, name in enumerate(_referenced_tables(query)):
        parts = name.split(".")
        if len(parts) < 2 or not catalog.table_exists(name):
            continue  # a CTE, a DuckDB table function or a name DuckDB resolves itself
        if len(parts) > 3:
            raise UnsupportedFeatureError(
                f"sql: DuckDB names have at most three parts, {name!r} has {len(parts)}; "
                "read it with icefloe scan"
            )
        view = f"__icefloe_scan_{i}"
        con.register(view, catalog.load_table(name).scan())
        quoted = [f'"{p}"' for p in parts]
        if len(parts) == 3 and parts[0] not in attached:
            con.execute(f"ATTACH ':memory:' AS {quoted[0]}")
            attached.add(parts[0])
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {'.'.join(quoted[:-1])}")
        con.execute(f"CREATE VIEW {'.'.join(quoted)} AS SELECT * FROM {view}")
    result = con.sql(query)
    if result is None:
        return None
    to_reader = getattr(result, "to_arrow_reader", None) or result.fetch_record_batch
    reader: pa.RecordBatchReader = to_reader()
    return reader


def register(group: click.Group) -> None:
    group.add_command(scan)
    group.add_command(sql)
