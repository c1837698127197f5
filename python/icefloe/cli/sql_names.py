"""How ``icefloe sql`` shows the catalog to DuckDB: the tables and views a query names, found
in DuckDB's parse of it, made readable under those names (a table as a DuckDB view over an
icefloe scan streamed through Arrow, an Iceberg view as a DuckDB view of its ``duckdb`` query
with its names written out in full), and the query run on a worker thread that Ctrl-C can
interrupt."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pyarrow as pa

from icefloe.cli.names import quote_part, quoted_part
from icefloe.cli.variant_columns import (
    JSON_TAG,
    json_results,
    json_text_converter,
    variant_view_columns,
)
from icefloe.exceptions import UnsupportedFeatureError, ValidationError
from icefloe.geo import WkbType

__all__ = ["Names", "Streams", "name_parts", "run_sql"]


def name_parts(text: str) -> tuple[str, ...]:
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
    return sorted({name_parts(raw) for raw in names})


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


def _batches(
    reader: pa.RecordBatchReader,
    convert: Callable[[pa.RecordBatch], pa.RecordBatch] | None,
    failed: Callable[[Exception], None],
) -> Generator[pa.RecordBatch, None, None]:
    """The batches of ``reader``, through ``convert`` (:func:`_for_duckdb`) when it is given;
    an error reading them is handed to ``failed`` before it goes on to DuckDB."""
    try:
        for batch in reader:
            yield batch if convert is None else convert(batch)
    except Exception as exc:
        failed(exc)
        raise
    finally:
        reader.close()


def _is_geography(t: pa.DataType) -> bool:
    return isinstance(t, WkbType) and t.edges not in (None, "planar")


def _for_duckdb(
    schema: pa.Schema,
) -> tuple[pa.Schema, Callable[[pa.RecordBatch], pa.RecordBatch] | None]:
    """The schema DuckDB reads a scan of ``schema`` as, and the conversion of its batches
    (None: none needed): geography columns (``geoarrow.wkb`` with spherical edges, which
    DuckDB refuses to import, failing the whole query) as their WKB ``binary`` storage
    (geometry columns stay typed: DuckDB reads them as GEOMETRY), and variants (nested ones
    too) as JSON text tagged as DuckDB's JSON type (the view over the scan casts them to
    VARIANT, see :func:`~icefloe.cli.variant_columns.variant_view_columns`)."""
    steps: list[Callable[[pa.RecordBatch], pa.RecordBatch]] = []
    if any(_is_geography(f.type) for f in schema):
        schema = pa.schema(
            [f.with_type(f.type.storage_type) if _is_geography(f.type) else f for f in schema],
            metadata=schema.metadata,
        )
        geo_schema = schema

        def storage(batch: pa.RecordBatch) -> pa.RecordBatch:
            cols = [c.storage if _is_geography(c.type) else c for c in batch.columns]
            return pa.RecordBatch.from_arrays(cols, schema=geo_schema)

        steps.append(storage)
    variants = json_text_converter(schema, JSON_TAG)
    if variants is not None:
        schema = variants[0]
        steps.append(variants[1])
    if not steps:
        return schema, None

    def convert(batch: pa.RecordBatch) -> pa.RecordBatch:
        for step in steps:
            batch = step(batch)
        return batch

    return schema, convert


class Streams:
    """The scans a query reads, handed to DuckDB as Arrow streams and closed when it is done.

    A scan DuckDB stopped reading part way (a ``LIMIT``) kept its reader threads, and DuckDB's
    own threads its generator, until the interpreter shut down, which then hung or aborted
    the process. :meth:`close` ends every stream here, in the main thread.

    An error a scan raises while DuckDB reads it reaches DuckDB as text only (its Python
    traceback included, its kind lost): :attr:`failure` keeps the first one, for the command
    to raise in place of the error DuckDB then gives."""

    def __init__(self) -> None:
        self._open: list[Generator[pa.RecordBatch, None, None]] = []
        #: the first error a scan raised while DuckDB read it, None while there is none
        self.failure: Exception | None = None

    def _failed(self, exc: Exception) -> None:
        if self.failure is None:
            self.failure = exc

    def source(self, scan: Any) -> Any:
        """An object DuckDB reads ``scan`` from (the Arrow PyCapsule stream interface)."""
        owner = self

        class _Source:
            def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
                try:
                    reader = scan.to_batches()
                except Exception as exc:
                    owner._failed(exc)
                    raise
                schema, convert = _for_duckdb(reader.schema)
                gen = _batches(reader, convert, owner._failed)
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


def _scan_schema(scan: Any) -> pa.Schema:
    """The Arrow schema of ``scan``'s rows, known without reading a file."""
    from icefloe.read.scan_output import scan_schema

    schema: pa.Schema = scan_schema(scan.read_options())
    return schema


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


class Names:
    """Makes the catalog's tables and views a query names readable by DuckDB under those
    names: a table as a DuckDB view over an icefloe scan, an Iceberg view as a DuckDB view of
    its ``duckdb`` query (the tables and views that query names made readable first)."""

    def __init__(self, con: Any, catalog: Any, streams: Streams) -> None:
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
            scan = self.catalog.load_table(parts).scan()
            self.con.register(view, self.streams.source(scan))
            columns = variant_view_columns(self.con, _for_duckdb(_scan_schema(scan))[0])
            self.con.execute(f"CREATE VIEW {self._full(parts)} AS SELECT {columns} FROM {view}")
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


def run_sql(names: Names, query: str) -> pa.RecordBatchReader | None:
    """Make the catalog's tables and views ``query`` names readable by DuckDB (see
    :class:`Names`), run it."""
    con = names.con
    names.add_query(query)
    query = names.qualified(query)

    def start() -> pa.RecordBatchReader | None:
        result = con.sql(query)
        if result is None:
            return None
        result = json_results(result)  # DuckDB hands no VARIANT to Arrow
        to_reader = getattr(result, "to_arrow_reader", None) or result.fetch_record_batch
        reader: pa.RecordBatchReader = to_reader()
        return reader

    return _interruptible(con, start)


#: How long a Ctrl-C keeps interrupting a query that has not stopped yet.
_INTERRUPT_SECONDS = 10.0


def _interruptible(
    con: Any, start: Callable[[], pa.RecordBatchReader | None]
) -> pa.RecordBatchReader | None:
    """``start()``'s reader, run and read on a worker thread: DuckDB computes in C++, where
    Ctrl-C is never seen, so the main thread waits and, on Ctrl-C, interrupts the query."""
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures import TimeoutError as Pending
    from concurrent.futures import wait as futures_wait

    pool = ThreadPoolExecutor(1, thread_name_prefix="icefloe-sql")

    def wait(fn: Callable[[], Any]) -> Any:
        future = pool.submit(fn)
        try:
            while True:
                with contextlib.suppress(Pending):
                    return future.result(timeout=0.2)
        except KeyboardInterrupt:
            # DuckDB interrupts only a query already running: one the worker had not begun
            # yet ran to its end (and the exit waited for it), so interrupt until it returns
            deadline = time.monotonic() + _INTERRUPT_SECONDS
            while not future.done() and time.monotonic() < deadline:
                con.interrupt()
                futures_wait([future], timeout=0.05)
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
