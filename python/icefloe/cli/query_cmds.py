"""Reading data: ``icefloe scan`` (a table read with filter, projection, limit and time travel)
and ``icefloe sql`` (DuckDB over icefloe scans, when DuckDB is installed).

Output formats: ``table`` (a terminal table, at most ``--max-rows`` rows drawn, values shown
as written), ``csv`` (uuids and binary as ``json`` writes them; no nested columns), ``json``
(JSON Lines, one object per row: decimals as exact strings, binary as hex, uuids in their
canonical form, dates and times in ISO 8601, NaN and infinities as strings) and ``parquet`` (to
``--output`` or a pipe). Rows are streamed batch by batch for ``csv``, ``json`` and
``parquet``; ``--output`` takes every format (a table is drawn into the file without colour).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import io
import re
import sys
import time
import uuid
from collections.abc import Callable, Generator, Iterator
from typing import IO, Any

import click
import pyarrow as pa
from rich import box
from rich.table import Table as RichTable

from icefloe.cli.app import State, pass_state
from icefloe.cli.maintenance_cmds import parse_age
from icefloe.cli.names import quote_part, quoted_part, select_list, show_name
from icefloe.cli.render import dumps, literal, open_output
from icefloe.exceptions import (
    MissingDependencyError,
    NoSuchTableError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.geo import WkbType

__all__ = ["register", "write_batches"]

FORMATS = ("table", "csv", "json", "parquet")
#: DuckDB's error for ``a.b.t`` when no database ``a`` is attached: the table does not exist.
_MISSING_DATABASE = re.compile(r'Catalog "(?:[^"]|"")*" does not exist')


def _cell(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")  # plain notation: 0.0000000000, not 0E-10
    if isinstance(value, bool | dict | list | tuple):
        # nested values as the JSON output writes them (a map as [[key, value], ...])
        return dumps(value, ensure_ascii=False)
    return str(value)


def _text_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every date and timestamp (nested ones too) as a string."""
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return pa.string()
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_text_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_text_type(t.key_type)), _text_type(t.item_type))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_text_type(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_text_type(t.value_type)))
    return t


def _column_values(values: pa.Array) -> list[Any]:
    """``values`` as Python values; a column with a date or timestamp Python cannot hold
    (before year 1, after 9999) has its dates and timestamps as Arrow's text instead."""
    try:
        plain: list[Any] = values.to_pylist()
        return plain
    except (OverflowError, ValueError):
        import pyarrow.compute as pc

        text = values.cast(_text_type(values.type))
        if pa.types.is_timestamp(values.type):  # ISO 8601, as Python writes the others
            text = pc.replace_substring(text, " ", "T", max_replacements=1)
        shown: list[Any] = text.to_pylist()
        return shown


def _records(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    """The rows of ``batch`` as dicts (see :func:`_column_values` for far dates)."""
    try:
        rows: list[dict[str, Any]] = batch.to_pylist()
        return rows
    except (OverflowError, ValueError):
        columns = [_column_values(c) for c in batch.columns]
        names = batch.schema.names
        return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def _open_output(output: str | None, mode: str) -> IO[Any] | None:
    """The file ``--output`` names, opened for writing (None: standard output); a path that
    cannot be written is bad input."""
    if not output or output == "-":
        return None
    return open_output(output, mode)


@contextlib.contextmanager
def _binary_output(output: str | None) -> Iterator[IO[bytes]]:
    stream = _open_output(output, "wb")
    try:
        yield stream or sys.stdout.buffer
    finally:
        if stream is not None:
            stream.close()
        else:
            sys.stdout.buffer.flush()


@contextlib.contextmanager
def _text_output(output: str | None) -> Iterator[IO[str]]:
    stream = _open_output(output, "w")
    try:
        yield stream or sys.stdout
    finally:
        if stream is not None:
            stream.close()
        else:
            sys.stdout.flush()


def _write_table(
    state: State,
    schema: pa.Schema,
    batches: Iterator[pa.RecordBatch],
    output: str | None,
    max_rows: int,
) -> int:
    """Draw at most ``max_rows`` rows as a table, values shown as written."""
    t = RichTable(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for name in schema.names:
        t.add_column(literal(name), overflow="fold")
    rows, more = 0, False
    with _text_output(output) as out:
        for b in batches:
            for rec in _records(b):
                if rows >= max_rows:
                    more = True
                    break
                t.add_row(*(literal(_cell(rec[n])) for n in schema.names))
                rows += 1
            if more:
                break
        console = state.out.console if out is sys.stdout else state.out.file_console(out)
        console.print(t)
    note = (
        f"first {rows} drawn; the scan has more rows (raise --max-rows, or use another --format)"
        if more
        else f"{rows} rows"
    )
    state.out.err.print(f"[dim]{note}[/]")
    return rows


def _write_parquet(schema: pa.Schema, batches: Iterator[pa.RecordBatch], output: str | None) -> int:
    import pyarrow.parquet as pq

    if output in (None, "-") and sys.stdout.isatty():
        raise ValidationError("--format parquet needs --output FILE (or a pipe)")
    rows = 0
    with _binary_output(output) as stream, pq.ParquetWriter(stream, schema) as writer:
        for b in batches:
            writer.write_batch(b)
            rows += b.num_rows
    return rows


_BINARY_KINDS = (
    pa.types.is_binary,
    pa.types.is_large_binary,
    pa.types.is_binary_view,
    pa.types.is_fixed_size_binary,
)


def _hex(values: pa.Array) -> pa.Array:
    return pa.array([None if v is None else v.hex() for v in values.to_pylist()], pa.string())


def _csv_column(values: pa.Array) -> pa.Array:
    """A column as CSV holds it, in the text --format json writes: a uuid in its canonical
    form, binary and fixed as hex, other extension types as their storage."""
    t = values.type
    if isinstance(t, pa.BaseExtensionType):
        if t.extension_name == "arrow.uuid":
            raw = values.storage.to_pylist()
            text = [None if v is None else str(uuid.UUID(bytes=v)) for v in raw]
            return pa.array(text, pa.string())
        return _csv_column(values.storage)
    if pa.types.is_dictionary(t):
        return _csv_column(values.dictionary_decode())
    if any(is_kind(t) for is_kind in _BINARY_KINDS):
        return _hex(values)
    if pa.types.is_string_view(t):
        return values.cast(pa.string())
    if pa.types.is_decimal(t):  # plain notation (Arrow's cast writes 0E-10)
        text = [None if v is None else format(v, "f") for v in values.to_pylist()]
        return pa.array(text, pa.string())
    return values


def _csv_schema(schema: pa.Schema) -> pa.Schema:
    """The schema CSV writes for ``schema``; refuses, before anything is written, the
    columns CSV cannot hold."""
    import pyarrow.csv as pcsv

    nested = [f.name for f in schema if pa.types.is_nested(f.type)]
    if nested:
        raise ValidationError(
            f"CSV cannot hold the nested columns {', '.join(nested)}: leave them out with "
            "--select, or use --format json or parquet"
        )
    out = pa.schema([(f.name, _csv_column(pa.nulls(0, f.type)).type) for f in schema])
    try:
        pcsv.CSVWriter(io.BytesIO(), out).close()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise ValidationError(f"CSV cannot hold these columns: {error}") from None
    return out


def _write_csv(schema: pa.Schema, batches: Iterator[pa.RecordBatch], output: str | None) -> int:
    import pyarrow.csv as pcsv

    out = _csv_schema(schema)
    rows = 0
    with _binary_output(output) as stream, pcsv.CSVWriter(stream, out) as writer:
        for b in batches:
            columns = [_csv_column(c) for c in b.columns]
            writer.write_batch(pa.RecordBatch.from_arrays(columns, schema=out))
            rows += b.num_rows
    return rows


def _write_json(batches: Iterator[pa.RecordBatch], output: str | None) -> int:
    """JSON Lines: one strict JSON object per row."""
    rows = 0
    with _text_output(output) as out:
        for b in batches:
            for rec in _records(b):
                out.write(dumps(rec) + "\n")
            rows += b.num_rows
    return rows


def write_batches(
    state: State,
    schema: pa.Schema,
    batches: Iterator[pa.RecordBatch],
    fmt: str,
    output: str | None,
    max_rows: int,
) -> int:
    """Write a stream of batches in ``fmt``; returns the number of rows written."""
    if fmt == "table":
        return _write_table(state, schema, batches, output, max_rows)
    if fmt == "parquet":
        return _write_parquet(schema, batches, output)
    if fmt == "csv":
        return _write_csv(schema, batches, output)
    return _write_json(batches, output)


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
        if int(text) > 2**63 - 1:
            raise ValidationError(f"--as-of out of range: {text.strip()} (epoch milliseconds)")
        return int(text)
    return parse_age(text)


def _limited(reader: pa.RecordBatchReader, limit: int | None) -> pa.RecordBatchReader:
    """The first ``limit`` rows of ``reader`` (all without a limit), read no further."""
    if limit is None:
        return reader

    def batches() -> Iterator[pa.RecordBatch]:
        left = limit
        for batch in reader:
            if left <= 0:
                break
            yield batch.slice(0, left)
            left -= batch.num_rows

    return pa.RecordBatchReader.from_batches(reader.schema, batches())


def _snapshot_or_tag(table: Any, text: str | None) -> int | str | None:
    """A tag's name (a tag of that name wins, digits or not), else a snapshot id."""
    if text is None:
        return None
    if text in table.metadata.refs:
        return text
    body = text.strip()
    return int(body) if body.lstrip("-").isdigit() else text


@click.command("scan", short_help="Read rows (filter, select, time travel).")
@click.argument("table")
@click.option("--filter", "row_filter", help="Row filter, e.g. \"region = 'eu' and id > 5\".")
@click.option("--select", "columns", help="Comma-separated columns (also _file, _pos, ...).")
@click.option("--limit", type=click.IntRange(0), help="Stop after this many rows.")
@click.option("--snapshot", "snapshot_id", type=int, help="Read this snapshot.")
@click.option("--ref", help="Read this branch or tag.")
@click.option("--as-of", help="Read the snapshot current at this time (ISO, epoch ms or age).")
@click.option(
    "--since",
    help="Read only the rows appended after this snapshot (an id or a tag name).",
)
@click.option(
    "--until",
    help="With --since or --changes: the last snapshot read (default: the current one).",
)
@click.option(
    "--changes",
    is_flag=True,
    help="Print the changelog (rows inserted and deleted by each snapshot after --since, "
    "with _change_type, _change_ordinal and _commit_snapshot_id) instead of rows.",
)
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
    since: str | None,
    until: str | None,
    changes: bool,
    fmt: str,
    as_json: bool,
    output: str | None,
    max_rows: int,
) -> None:
    """Read rows of TABLE (filtered, projected, limited, at a snapshot, ref or time, or only
    the rows appended since a snapshot)."""
    if sum(x is not None for x in (snapshot_id, ref, as_of)) > 1:
        raise ValidationError("give at most one of --snapshot, --ref and --as-of")
    if until is not None and since is None and not changes:
        raise ValidationError("--until needs --since or --changes")
    if (since is not None or changes) and any(x is not None for x in (snapshot_id, ref, as_of)):
        raise ValidationError(
            "--since and --changes read a stretch of history; they take no --snapshot, --ref "
            "or --as-of"
        )
    t = state.table(table)
    kwargs: dict[str, Any] = {}
    if row_filter:
        kwargs["row_filter"] = row_filter
    if columns:
        kwargs["selected_fields"] = select_list(columns)
    fmt = _output_format(fmt, as_json)
    if fmt == "table" and limit is None:
        limit = max_rows + 1  # read no more than is drawn (and one to tell there is more)
    if changes:
        log = t.changelog_scan(_snapshot_or_tag(t, since), _snapshot_or_tag(t, until), **kwargs)
        reader = _limited(log.to_batches(), limit)
    elif since is not None:
        reader = t.incremental_append_scan(
            _snapshot_or_tag(t, since), _snapshot_or_tag(t, until), limit=limit, **kwargs
        ).to_batches()
    else:
        reader = t.scan(
            snapshot_id=snapshot_id,
            ref=ref,
            as_of=_as_of(as_of) if as_of else None,
            limit=limit,
            **kwargs,
        ).to_batches()
    schema, batches = _in_order(reader.schema, iter(reader), kwargs.get("selected_fields", ()))
    if fmt != "parquet":  # Parquet keeps the encoded variant; people read its JSON text
        schema, batches = _variants_as_json(schema, batches, t.schema())
    write_batches(state, schema, batches, fmt, output, max_rows)


def _variants_as_json(
    schema: pa.Schema, batches: Iterator[pa.RecordBatch], table_schema: Any
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """Top-level ``variant`` columns as their JSON text (a scan gives the encoded
    ``struct<metadata, value>``, whose bytes say nothing to a reader)."""
    from icefloe import variant
    from icefloe.types import VariantType

    wanted = {
        i
        for i, name in enumerate(schema.names)
        if (fid := table_schema.find_field_id(name)) is not None
        and isinstance(table_schema.find_type(fid), VariantType)
    }
    if not wanted:
        return schema, batches
    out = pa.schema(
        [pa.field(f.name, pa.string()) if i in wanted else f for i, f in enumerate(schema)],
        metadata=schema.metadata,
    )

    def convert(b: pa.RecordBatch) -> pa.RecordBatch:
        cols = [variant.to_json(c) if i in wanted else c for i, c in enumerate(b.columns)]
        return pa.RecordBatch.from_arrays(cols, schema=out)

    return out, (convert(b) for b in batches)


def _in_order(
    schema: pa.Schema, batches: Iterator[pa.RecordBatch], selected: tuple[str, ...]
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The columns in the order ``--select`` names them (a nested field by its top-level
    column), any others after them; the scan returns them in schema order."""
    names = schema.names
    order: list[int] = []
    for name in selected:
        top = name if name in names else name.split(".", 1)[0]
        if top in names and names.index(top) not in order:
            order.append(names.index(top))
    order += [i for i in range(len(names)) if i not in order]
    if order == list(range(len(names))):
        return schema, batches
    out = pa.schema([schema.field(i) for i in order], metadata=schema.metadata)
    return out, (
        pa.RecordBatch.from_arrays([b.column(i) for i in order], schema=out) for b in batches
    )


def _name_parts(text: str) -> tuple[str, ...]:
    """The parts of a name as DuckDB prints a referenced table (``"my ns".t AS x`` ->
    ``("my ns", "t")``): parts are split on dots outside quotes, ``""`` in a quoted part is one
    quote, and what follows the name (an alias) is left out."""
    parts: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            try:
                part, i = quoted_part(text, i)
            except ValidationError:
                bad = f"sql: unbalanced quotes in the table name {text!r}"
                raise ValidationError(bad) from None
            parts.append(part)
        else:
            j = i
            while j < n and text[j] not in '."' and not text[j].isspace():
                j += 1
            parts.append(text[i:j])
            i = j
        if i < n and text[i] == ".":
            i += 1
            continue
        break
    return tuple(parts)


def _referenced_tables(query: str) -> list[tuple[str, ...]]:
    """The tables ``query`` names, each as its parts (unquoted), once."""
    import duckdb

    try:
        names = duckdb.get_table_names(query, qualified=True)
    except duckdb.BinderException:
        # get_table_names binds the query against empty stand-in tables, which fails on
        # joins USING columns (or NATURAL ones): the parsed query names the tables too
        parsed = _parsed_tables(query)
        if parsed is None:
            raise
        return parsed
    return sorted({_name_parts(raw) for raw in names})


def _parse(con: Any, query: str) -> dict[str, Any] | None:
    """DuckDB's parse tree of a SELECT ``query`` (no binding), or None when it has none."""
    import json

    import duckdb

    try:
        row = con.execute("SELECT json_serialize_sql(?)", [query]).fetchone()
    except duckdb.Error:
        return None
    tree = json.loads(row[0]) if row else {"error": True}
    return None if tree.get("error") else tree


def _table_nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """The table references of a parse tree, leaving out those that name a CTE of the query
    (an unqualified name a ``WITH`` of the query defines)."""
    nodes: list[dict[str, Any]] = []
    ctes: set[str] = set()
    todo: list[Any] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if node.get("type") == "BASE_TABLE":
                nodes.append(node)
            cte_map = node.get("cte_map")
            if isinstance(cte_map, dict):
                ctes.update(
                    str(e.get("key")) for e in cte_map.get("map", []) if isinstance(e, dict)
                )
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return [n for n in nodes if _node_parts(n) not in {(c,) for c in ctes}]


def _node_parts(node: dict[str, Any]) -> tuple[str, ...]:
    parts = (node.get("catalog_name"), node.get("schema_name"), node.get("table_name"))
    return tuple(p for p in parts if p)


def _parsed_tables(query: str) -> list[tuple[str, ...]] | None:
    """The tables a SELECT ``query`` names, from DuckDB's parse of it (no binding); None when
    it cannot be parsed that way."""
    import duckdb

    with duckdb.connect() as con:
        tree = _parse(con, query)
    if tree is None:
        return None
    return sorted({_node_parts(n) for n in _table_nodes(tree)})


@click.command("sql", short_help="DuckDB SQL over the catalog's tables.")
@click.argument("query")
@_format_options
@pass_state
def sql(
    state: State, query: str, fmt: str, as_json: bool, output: str | None, max_rows: int
) -> None:
    """Run a DuckDB SQL QUERY over the catalog's tables and views, named as in the catalog
    (select ... from db.events); each table is read by an icefloe scan, each view runs its
    'duckdb' query."""
    try:
        import duckdb
    except ImportError as exc:
        raise MissingDependencyError.install(
            f"icefloe sql needs DuckDB ({exc})", "duckdb", name=exc.name or "duckdb"
        ) from exc
    catalog = state.catalog()
    con = duckdb.connect()
    streams = _Streams()
    reader = None
    names = _Names(con, catalog, streams)
    try:
        try:
            reader = _run_sql(names, query)
        except duckdb.CatalogException as error:
            raise NoSuchTableError(_missing_message(names.missing, error)) from None
        except duckdb.BinderException as error:
            # a three-part name the catalog has no table for: DuckDB misses its database
            if _MISSING_DATABASE.search(str(error)):
                raise NoSuchTableError(_missing_message(names.missing, error)) from None
            raise ValidationError(f"sql: {error}") from None
        except duckdb.Error as error:
            if "NameListToString" in str(error):  # DuckDB's parser on a name of 4+ parts
                raise UnsupportedFeatureError(
                    "sql: DuckDB names have at most three parts (database.schema.table), so "
                    "tables of namespaces deeper than two levels cannot be queried; read them "
                    "with icefloe scan"
                ) from None
            raise ValidationError(f"sql: {error}") from None
        if reader is not None:
            fmt = _output_format(fmt, as_json)
            write_batches(state, reader.schema, iter(reader), fmt, output, max_rows)
    finally:
        if reader is not None:
            reader.close()
        streams.close()
        con.close()


def _missing_message(missing: list[tuple[str, ...]], error: Exception) -> str:
    """The error for a query DuckDB found a name missing in: the names of the query the catalog
    has no table or view for (DuckDB's own words otherwise speak of its schemas)."""
    if not missing or "does not exist" not in str(error):
        return f"sql: {error}"
    listed = ", ".join(show_name(parts) for parts in missing)
    return f"sql: no table or view {listed} in catalog"


def _batches(
    reader: pa.RecordBatchReader, schema: pa.Schema | None
) -> Generator[pa.RecordBatch, None, None]:
    """The batches of ``reader``, as ``schema`` (:func:`_for_duckdb`) when it is given."""
    try:
        for batch in reader:
            yield batch if schema is None else _for_duckdb_batch(batch, schema)
    finally:
        reader.close()


def _is_geography(t: pa.DataType) -> bool:
    return isinstance(t, WkbType) and t.edges not in (None, "planar")


def _for_duckdb(schema: pa.Schema) -> pa.Schema:
    """``schema`` with geography columns (``geoarrow.wkb`` with spherical edges, which
    DuckDB refuses to import, failing the whole query) as their WKB ``binary`` storage;
    geometry columns stay typed (DuckDB reads them as GEOMETRY)."""
    if not any(_is_geography(f.type) for f in schema):
        return schema
    return pa.schema(
        [f.with_type(f.type.storage_type) if _is_geography(f.type) else f for f in schema],
        metadata=schema.metadata,
    )


def _for_duckdb_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    cols = [c.storage if _is_geography(c.type) else c for c in batch.columns]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


class _Streams:
    """The scans a query reads, handed to DuckDB as Arrow streams and closed when it is done.

    A scan DuckDB stopped reading part way (a ``LIMIT``) kept its reader threads, and DuckDB's
    own threads its generator, until the interpreter shut down, which then hung or aborted
    the process. :meth:`close` ends every stream here, in the main thread."""

    def __init__(self) -> None:
        self._open: list[Generator[pa.RecordBatch, None, None]] = []

    def source(self, scan: Any) -> Any:
        """An object DuckDB reads ``scan`` from (the Arrow PyCapsule stream interface)."""
        owner = self

        class _Source:
            def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
                reader = scan.to_batches()
                given = reader.schema
                schema = _for_duckdb(given)
                gen = _batches(reader, None if schema is given else schema)
                owner._open.append(gen)
                stream = pa.RecordBatchReader.from_batches(schema, gen)
                return stream.__arrow_c_stream__(requested_schema)

        return _Source()

    def close(self, timeout: float = 10.0) -> None:
        """Close every stream; one a DuckDB thread is still pulling from (it may be waiting
        for the batch it asked for) is closed once that pull returns."""
        deadline = time.monotonic() + timeout
        for gen in self._open:
            while True:
                try:
                    gen.close()
                    break
                except ValueError:  # "generator already executing", in a DuckDB thread
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.01)
        self._open.clear()


def _in_catalog(catalog: Any, parts: tuple[str, ...]) -> bool:
    """Whether ``parts`` names a table of ``catalog`` (a name it cannot hold does not)."""
    try:
        return bool(catalog.table_exists(parts))
    except ValidationError:
        return False


def _is_view(catalog: Any, parts: tuple[str, ...]) -> bool:
    """Whether ``parts`` names a view of ``catalog``."""
    if not getattr(catalog, "keeps_views", False):
        return False
    try:
        return bool(catalog.view_exists(parts))
    except ValidationError:
        return False


class _Names:
    """Makes the catalog's tables and views a query names readable by DuckDB under those
    names: a table as a DuckDB view over an icefloe scan, an Iceberg view as a DuckDB view of
    its ``duckdb`` query (the tables and views that query names made readable first)."""

    def __init__(self, con: Any, catalog: Any, streams: _Streams) -> None:
        self.con, self.catalog, self.streams = con, catalog, streams
        self.done: set[tuple[str, ...]] = set()
        self.attached: set[str] = set()
        #: names of two or more parts the catalog has no table or view for
        self.missing: list[tuple[str, ...]] = []
        #: schemas of the connection's own database holding tables (one-level namespaces)
        self.schemas: set[str] = set()
        row = con.execute("SELECT current_database()").fetchone()
        self.database: str = row[0] if row else "memory"

    def add_query(self, query: str) -> None:
        for parts in _referenced_tables(query):
            self.add(parts, ())

    def add(self, parts: tuple[str, ...], chain: tuple[tuple[str, ...], ...]) -> None:
        if len(parts) < 2 or parts in self.done:
            return  # a CTE, a DuckDB table function or a name DuckDB resolves itself
        if _in_catalog(self.catalog, parts):
            self._schema_for(parts)
            view = f"__icefloe_scan_{len(self.done)}"
            self.con.register(view, self.streams.source(self.catalog.load_table(parts).scan()))
            self.con.execute(f"CREATE VIEW {self._full(parts)} AS SELECT * FROM {view}")
        elif _is_view(self.catalog, parts):
            self._add_view(parts, chain)
        else:
            if parts not in self.missing:
                self.missing.append(parts)
            return
        self.done.add(parts)

    def _add_view(self, parts: tuple[str, ...], chain: tuple[tuple[str, ...], ...]) -> None:
        """Registers view ``parts`` with its query's names written out in full: DuckDB would
        bind them from where the view lives (a two-part name inside a nested namespace's
        catalog, an unqualified one in the view's own namespace, not its default one)."""
        name = ".".join(parts)
        if parts in chain:
            cycle = " -> ".join(".".join(p) for p in (*chain, parts))
            raise ValidationError(f"sql: view {name!r} refers to itself ({cycle})")
        view = self.catalog.load_view(parts)
        try:
            text = view.sql("duckdb")
        except ValidationError as exc:
            raise UnsupportedFeatureError(
                f"sql: {exc}; DuckDB runs a view's 'duckdb' query only"
            ) from None
        home = tuple(view.current_version.default_namespace or parts[:-1])

        def resolved(ref: tuple[str, ...]) -> tuple[str, ...]:
            return (*home, *ref) if len(ref) == 1 else ref

        tree = _parse(self.con, text)
        nodes = _table_nodes(tree) if tree is not None else []
        if tree is not None:
            refs = sorted({_node_parts(n) for n in nodes})
        else:
            refs = _referenced_tables(text)
        for ref in refs:
            self.add(resolved(ref), (*chain, parts))
        if tree is not None and nodes:
            for node in nodes:
                ref = _node_parts(node)
                if len(ref) == 1 or resolved(ref) in self.done:
                    self._point(node, resolved(ref))
            text = self._unparse(tree) or text
        self._schema_for(parts)
        self.con.execute(f"CREATE VIEW {self._full(parts)} AS {text}")

    def qualified(self, query: str) -> str:
        """``query`` with the catalog's names written out in full when a namespace level is
        also the first level of a nested namespace (DuckDB finds both a schema and an attached
        database of that name, and calls the name ambiguous); else ``query`` as given."""
        if not self.attached & self.schemas:
            return query
        tree = _parse(self.con, query)
        if tree is None:
            return query
        for node in _table_nodes(tree):
            if (ref := _node_parts(node)) in self.done:
                self._point(node, ref)
        return self._unparse(tree) or query

    def _duck(self, parts: tuple[str, ...]) -> tuple[str, ...]:
        """The DuckDB name of catalog name ``parts`` with its database (``ns.t`` lives in the
        connection's own one): unambiguous when a schema and an attached database share a
        name."""
        return (self.database, *parts) if len(parts) == 2 else parts

    def _full(self, parts: tuple[str, ...]) -> str:
        return _quoted(self._duck(parts))

    def _point(self, node: dict[str, Any], parts: tuple[str, ...]) -> None:
        """Makes table reference ``node`` name ``parts`` (a catalog name) in full."""
        node["catalog_name"], node["schema_name"], node["table_name"] = self._duck(parts)

    def _unparse(self, tree: dict[str, Any]) -> str | None:
        import json

        import duckdb

        try:
            row = self.con.execute("SELECT json_deserialize_sql(?)", [json.dumps(tree)]).fetchone()
        except duckdb.Error:
            return None
        return str(row[0]) if row else None

    def _schema_for(self, parts: tuple[str, ...]) -> None:
        """``ns.name`` lives in schema ``ns``; ``a.b.name`` (a nested namespace) in schema ``b``
        of an attached in-memory database ``a``, as DuckDB reads three-part names."""
        if len(parts) > 3:
            raise UnsupportedFeatureError(
                f"sql: DuckDB names have at most three parts, {'.'.join(parts)!r} has "
                f"{len(parts)}; read it with icefloe scan"
            )
        quoted = [quote_part(p) for p in parts]
        if len(parts) == 3 and parts[0] not in self.attached:
            self.con.execute(f"ATTACH ':memory:' AS {quoted[0]}")
            self.attached.add(parts[0])
        self.con.execute(f"CREATE SCHEMA IF NOT EXISTS {_quoted(self._duck(parts)[:-1])}")
        if len(parts) == 2:
            self.schemas.add(parts[0])


def _quoted(parts: tuple[str, ...]) -> str:
    return ".".join(quote_part(p) for p in parts)


def _run_sql(names: _Names, query: str) -> pa.RecordBatchReader | None:
    """Make the catalog's tables and views ``query`` names readable by DuckDB (see
    :class:`_Names`), run it."""
    con = names.con
    names.add_query(query)
    query = names.qualified(query)

    def start() -> pa.RecordBatchReader | None:
        result = con.sql(query)
        if result is None:
            return None
        to_reader = getattr(result, "to_arrow_reader", None) or result.fetch_record_batch
        reader: pa.RecordBatchReader = to_reader()
        return reader

    return _interruptible(con, start)


def _interruptible(
    con: Any, start: Callable[[], pa.RecordBatchReader | None]
) -> pa.RecordBatchReader | None:
    """``start()``'s reader, run and read on a worker thread: DuckDB computes in C++, where
    Ctrl-C is never seen, so the main thread waits and, on Ctrl-C, interrupts the query."""
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures import TimeoutError as Pending

    pool = ThreadPoolExecutor(1, thread_name_prefix="icefloe-sql")

    def wait(fn: Callable[[], Any]) -> Any:
        future = pool.submit(fn)
        try:
            while True:
                with contextlib.suppress(Pending):
                    return future.result(timeout=0.2)
        except KeyboardInterrupt:
            con.interrupt()
            raise

    try:
        reader: pa.RecordBatchReader | None = wait(start)
    except BaseException:
        pool.shutdown(wait=False)
        raise
    if reader is None:
        pool.shutdown(wait=False)
        return None
    batches = iter(reader)

    def read() -> Iterator[pa.RecordBatch]:
        try:
            while (batch := wait(lambda: next(batches, None))) is not None:
                yield batch
        finally:
            pool.shutdown(wait=False)

    return pa.RecordBatchReader.from_batches(reader.schema, read())


def register(group: click.Group) -> None:
    """Add ``scan`` and ``sql`` to ``group``; returns None."""
    group.add_command(scan)
    group.add_command(sql)
