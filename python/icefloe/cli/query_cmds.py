"""Reading data: ``icefloe scan`` (a table read with filter, projection, limit and time travel)
and ``icefloe sql`` (DuckDB over icefloe scans, when DuckDB is installed).

Output formats: ``table`` (a terminal table, at most ``--max-rows`` rows drawn, values shown as
written on one line each, as many columns as fit the width), ``csv`` (uuids and binary as
``json`` writes them; no nested columns), ``json`` (JSON Lines, one object per row: decimals as
exact strings, binary as hex, uuids in their canonical form, dates and times in ISO 8601, NaN
and infinities as strings; intervals are ISO 8601 durations in these three) and ``parquet`` (to
``--output`` or a pipe). Rows are streamed batch by batch for ``csv``, ``json`` and
``parquet``; ``--output`` takes every format (a table is drawn into the file without colour)
and is written whole or not at all: a command that fails or is interrupted part way leaves no
file, and a file it would have replaced as it was.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import io
import re
import sys
import uuid
from collections.abc import Iterator
from typing import IO, Any

import click
import pyarrow as pa
from rich import box
from rich.cells import cell_len
from rich.table import Table as RichTable
from rich.text import Text

from icefloe.cli.app import State, pass_state
from icefloe.cli.maintenance_cmds import parse_age
from icefloe.cli.names import select_list, show_name
from icefloe.cli.output_file import replaced_file
from icefloe.cli.render import dumps, esc, fit_widths, iso, plural, printable
from icefloe.cli.sql_names import Names, Streams, run_sql
from icefloe.cli.sql_statements import refuse_changes
from icefloe.cli.variant_columns import annotated_ids, as_json_text
from icefloe.exceptions import (
    MissingDependencyError,
    NoSuchSnapshotError,
    NoSuchTableError,
    UnsupportedFeatureError,
    ValidationError,
)

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


def _iso_interval(months: int, days: int, nanos: int) -> str:
    """An interval as an ISO 8601 duration (``P1Y2M3DT4H5M6.5S``; each part keeps its own
    sign, as PostgreSQL's ``iso_8601`` style writes mixed-sign intervals)."""
    sign = -1 if months < 0 else 1
    years, months = divmod(abs(months), 12)
    date = [(sign * years, "Y"), (sign * months, "M"), (days, "D")]
    text = "".join(f"{n}{unit}" for n, unit in date if n)
    whole, frac = divmod(abs(nanos), 1_000_000_000)
    hours, rest = divmod(whole, 3600)
    minutes, seconds = divmod(rest, 60)
    minus = "-" if nanos < 0 else ""
    clock = [f"{minus}{n}{unit}" for n, unit in ((hours, "H"), (minutes, "M")) if n]
    if seconds or frac:
        fraction = f".{frac:09d}".rstrip("0") if frac else ""
        clock.append(f"{minus}{seconds}{fraction}S")
    if clock:
        text += "T" + "".join(clock)
    return "P" + text if text else "PT0S"


def _interval_text(values: pa.Array) -> pa.Array:
    """An interval column as ISO 8601 durations (see :func:`_iso_interval`)."""
    text = [None if v is None else _iso_interval(*v) for v in values.to_pylist()]
    return pa.array(text, pa.string())


_OUT_OF_RANGE = "<value out of range: "
_FRACTION_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def _civil_date(days: int) -> str:
    """Days since 1970-01-01 as a proleptic Gregorian date in Arrow's text (astronomical
    years: 0 is 1 BC, ``-0001`` 2 BC; years after 9999 in full)."""
    z = days + 719468
    era, doe = divmod(z, 146097)
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    text = f"-{-year:04d}" if year < 0 else f"{year:04d}"
    return f"{text}-{month:02d}-{day:02d}"


def _far_text(value: int, t: pa.DataType) -> str:
    """A date or timestamp that Arrow's text cast cannot write, by integer arithmetic."""
    if pa.types.is_date32(t):
        return _civil_date(value)
    if pa.types.is_date64(t):
        return _civil_date(value // 86_400_000)
    digits = _FRACTION_DIGITS[t.unit]
    days, rest = divmod(value, 86_400 * 10**digits)
    seconds, fraction = divmod(rest, 10**digits)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    text = f"{_civil_date(days)} {hours:02d}:{minutes:02d}:{seconds:02d}"
    if digits:
        text += f".{fraction:0{digits}d}"
    return text + ("Z" if t.tz is not None else "")


def _far_values(value: Any, t: pa.DataType) -> Any:
    """``value`` (Arrow's text cast of type ``t``) with each placeholder Arrow writes for a
    date or timestamp it cannot format replaced by the value's text."""
    if value is None:
        return None
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        if isinstance(value, str) and value.startswith(_OUT_OF_RANGE):
            return _far_text(int(value[len(_OUT_OF_RANGE) : -1]), t)
        return value
    if pa.types.is_struct(t):
        return {f.name: _far_values(value.get(f.name), f.type) for f in t}
    if pa.types.is_map(t):
        return [(_far_values(k, t.key_type), _far_values(v, t.item_type)) for k, v in value]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_far_values(v, t.value_type) for v in value]
    return value


def _column_values(values: pa.Array) -> list[Any]:
    """``values`` as Python values; a column with a date or timestamp Python cannot hold
    (before year 1, after 9999) has its dates and timestamps as Arrow's text instead, an
    interval column ISO 8601 durations."""
    if pa.types.is_interval(values.type):
        durations: list[Any] = _interval_text(values).to_pylist()
        return durations
    try:
        plain: list[Any] = values.to_pylist()
        return plain
    except (OverflowError, ValueError):
        text = values.cast(_text_type(values.type)).to_pylist()
        shown = [_far_values(v, values.type) for v in text]
        if pa.types.is_timestamp(values.type):  # ISO 8601, as Python writes the others
            shown = [None if v is None else v.replace(" ", "T", 1) for v in shown]
        return shown


def _rows(batch: pa.RecordBatch) -> list[tuple[Any, ...]]:
    """The rows of ``batch`` as tuples of its columns' values, by position (two columns may
    share a name; see :func:`_column_values` for far dates)."""
    columns = [_column_values(c) for c in batch.columns]
    return list(zip(*columns, strict=True)) if columns else [() for _ in range(batch.num_rows)]


def _unique_names(names: list[str], *, fold_case: bool) -> list[str]:
    """``names`` with each repeated one renamed as DuckDB's own clients rename it: the second
    ``k`` becomes ``k_1``, the third ``k_2`` (a suffix already taken is skipped). With
    ``fold_case`` names compare case-insensitively, as DuckDB's do (``sql``'s results);
    without, as Iceberg's and JSON's do (``scan`` keeps ``Case`` and ``case`` apart)."""

    def key(name: str) -> str:
        return name.lower() if fold_case else name

    taken: dict[str, int] = {}
    out: list[str] = []
    for name in names:
        if key(name) not in taken:
            taken[key(name)] = 0
            out.append(name)
            continue
        index = taken[key(name)]
        while True:
            index += 1
            candidate = f"{name}_{index}"
            if key(candidate) not in taken:
                break
        taken[key(name)] = index
        taken[key(candidate)] = 0
        out.append(candidate)
    return out


@contextlib.contextmanager
def _binary_output(output: str | None) -> Iterator[IO[bytes]]:
    """The file ``--output`` names (written whole or not at all, see
    :func:`~icefloe.cli.output_file.replaced_file`), else standard output."""
    if output and output != "-":
        with replaced_file(output, "wb") as stream:
            yield stream
        return
    try:
        yield sys.stdout.buffer
    finally:
        sys.stdout.buffer.flush()


@contextlib.contextmanager
def _text_output(output: str | None) -> Iterator[IO[str]]:
    """As :func:`_binary_output`, for text (UTF-8 in a file)."""
    if output and output != "-":
        with replaced_file(output, "w") as stream:
            yield stream
        return
    try:
        yield sys.stdout
    finally:
        sys.stdout.flush()


#: Cells between two columns of the drawn table: a cell of padding each side and the rule's.
_GAP = 3
#: How each command's table points to the columns it left out.
_FEWER_COLUMNS = {"scan": "name columns with --select", "sql": "name fewer columns in the query"}


def _write_table(
    state: State,
    schema: pa.Schema,
    batches: Iterator[pa.RecordBatch],
    output: str | None,
    max_rows: int,
    command: str,
) -> int:
    """Draw at most ``max_rows`` rows as a table, values shown as written on one line each:
    as many columns as fit the width (see :func:`~icefloe.cli.render.fit_widths`), long values
    cut with an ellipsis, and a note on standard error of the columns left out."""
    names = [printable(name) for name in schema.names]
    cells: list[list[str]] = []
    more = False
    with _text_output(output) as out:
        for b in batches:
            for rec in _rows(b):
                if len(cells) >= max_rows:
                    more = True
                    break
                cells.append([printable(_cell(value)) for value in rec])
            if more:
                break
        console = state.out.console if out is sys.stdout else state.out.file_console(out)
        natural = [
            max([cell_len(name), *(cell_len(row[j]) for row in cells)])
            for j, name in enumerate(names)
        ]
        widths = fit_widths(natural, console.width, _GAP)
        t = RichTable(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for name, w in zip(names, widths, strict=False):
            t.add_column(Text(name), no_wrap=True, overflow="ellipsis", width=w)
        for row in cells:
            t.add_row(*(Text(cell) for cell in row[: len(widths)]))
        console.print(t)
    rows = len(cells)
    note = (
        f"first {rows} drawn; the {'query' if command == 'sql' else 'scan'} has more rows "
        "(raise --max-rows, or use another --format)"
        if more
        else plural(rows, "row")
    )
    state.out.err.print(f"[dim]{note}[/]")
    left_out = len(names) - len(widths)
    if left_out:
        state.out.err.print(
            f"[yellow]{left_out:,} of {plural(len(names), 'column')} not shown, from "
            f"{esc(names[len(widths)])} on ({console.width} cells wide): "
            f"{_FEWER_COLUMNS[command]}, widen with --width, or use --format csv or json[/]"
        )
    return rows


def _write_parquet(schema: pa.Schema, batches: Iterator[pa.RecordBatch], output: str | None) -> int:
    import pyarrow.parquet as pq

    from icefloe.write.variant_footer import TailHoldingSink

    if output in (None, "-") and sys.stdout.isatty():
        raise ValidationError("--format parquet needs --output FILE (or a pipe)")
    try:  # refuse, before any file is created, the columns Parquet cannot hold
        pq.ParquetWriter(io.BytesIO(), schema).close()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise ValidationError(
            f"Parquet cannot hold these columns ({error}): use --format json or csv"
        ) from None
    rows = 0
    variant_ids = annotated_ids(schema)
    with _binary_output(output) as stream:
        # variant columns get the Parquet VARIANT annotation, as the table's own files do
        held = TailHoldingSink(stream) if variant_ids else None
        with pq.ParquetWriter(held or stream, schema) as writer:
            for b in batches:
                writer.write_batch(b)
                rows += b.num_rows
        if held is not None:
            held.finish(variant_ids)
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
    if pa.types.is_interval(t):
        return _interval_text(values)
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


def _write_json(batches: Iterator[pa.RecordBatch], output: str | None, command: str) -> int:
    """JSON Lines: one strict JSON object per row (repeated column names made unique, see
    :func:`_unique_names`: as DuckDB tells names apart for ``sql``, exactly for ``scan``)."""
    rows = 0
    with _text_output(output) as out:
        for b in batches:
            names = _unique_names(b.schema.names, fold_case=command == "sql")
            for rec in _rows(b):
                out.write(dumps(dict(zip(names, rec, strict=True))) + "\n")
            rows += b.num_rows
    return rows


def write_batches(
    state: State,
    schema: pa.Schema,
    batches: Iterator[pa.RecordBatch],
    fmt: str,
    output: str | None,
    max_rows: int,
    command: str = "scan",
) -> int:
    """Write a stream of batches in ``fmt`` for ``command`` (``scan`` or ``sql``); returns the
    number of rows written."""
    if fmt == "table":
        return _write_table(state, schema, batches, output, max_rows, command)
    if fmt == "parquet":
        return _write_parquet(schema, batches, output)
    if fmt == "csv":
        return _write_csv(schema, batches, output)
    return _write_json(batches, output, command)


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
    """``--as-of`` (epoch milliseconds, an ISO time or an age) as epoch milliseconds."""
    if text.strip().isdigit():
        if int(text) > 2**63 - 1:
            raise ValidationError(f"--as-of out of range: {text.strip()} (epoch milliseconds)")
        return int(text)
    try:
        return parse_age(text)
    except ValidationError as error:
        raise ValidationError(f"--as-of: {error}") from None


def _when(ms: int) -> str:
    """Epoch milliseconds as an ISO 8601 UTC time (its number when no calendar holds it)."""
    return iso(ms) or f"{ms} (epoch milliseconds, beyond the calendar)"


def _as_of_snapshot(table: Any, text: str) -> int:
    """The id of the snapshot current at ``--as-of`` ``text``; a time the snapshot log does
    not cover is an error that gives the time, and the log's start, in ISO 8601 UTC."""
    ms = _as_of(text)
    try:
        snapshot_id: int = table.snapshot_as_of(ms).snapshot_id
        return snapshot_id
    except NoSuchSnapshotError:
        log = list(table.metadata.snapshot_log)
    earlier = [e for e in log if e.timestamp_ms <= ms]
    if earlier:
        raise NoSuchSnapshotError(
            f"--as-of: snapshot {earlier[-1].snapshot_id}, current at {_when(ms)}, has been expired"
        )
    if not log:
        raise NoSuchSnapshotError(
            f"--as-of: no snapshot was current at {_when(ms)}: the table's snapshot log is empty"
        )
    first = min(e.timestamp_ms for e in log)
    raise NoSuchSnapshotError(
        f"--as-of: no snapshot was current at {_when(ms)}: the snapshot log starts at "
        f"{_when(first)}"
    )


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


def _snapshot_or_tag(table: Any, text: str | None, option: str) -> int | None:
    """``--since`` or ``--until`` (``option``) as a snapshot id: a tag's (a tag of that name
    wins, digits or not), else the id given."""
    if text is None:
        return None
    ref = table.metadata.refs.get(text)
    if ref is not None:
        if ref.is_branch:
            raise ValidationError(
                f"{option}: {text!r} is a branch; {option} takes a tag or a snapshot id "
                "(a branch moves on with each commit)"
            )
        snapshot_id: int = ref.snapshot_id
        return snapshot_id
    body = text.strip()
    if body.lstrip("-").isdigit():
        # a --since snapshot may be expired yet the parent of a kept one (the scan checks it)
        if option == "--until" and table.snapshot_by_id(int(body)) is None:
            raise NoSuchSnapshotError(
                f"{option}: the table has no snapshot {body} (nor a tag of that name)"
            )
        return int(body)
    raise NoSuchSnapshotError(f"{option}: no tag named {text!r} (give a tag or a snapshot id)")


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
    if changes or since is not None:
        start = _snapshot_or_tag(t, since, "--since")
        end = _snapshot_or_tag(t, until, "--until")
        if changes:
            reader = _limited(t.changelog_scan(start, end, **kwargs).to_batches(), limit)
        else:
            scan = t.incremental_append_scan(start, end, limit=limit, **kwargs)
            reader = scan.to_batches()
    else:
        if as_of is not None:
            snapshot_id = _as_of_snapshot(t, as_of)
        reader = t.scan(snapshot_id=snapshot_id, ref=ref, limit=limit, **kwargs).to_batches()
    schema, batches = _in_order(reader.schema, iter(reader), kwargs.get("selected_fields", ()))
    if fmt != "parquet":  # Parquet keeps the encoded variant; people read its JSON text
        schema, batches = as_json_text(schema, batches)
    write_batches(state, schema, batches, fmt, output, max_rows)


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
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:  # a byte the locale could not decode (surrogateescape)
        raise ValidationError(
            f"sql: the query holds a byte that is not text in this locale's encoding "
            f"(at character {exc.start + 1}); write it as UTF-8"
        ) from None
    refuse_changes(query)  # DROP, INSERT, ...: never run (DuckDB gets read-only scans)
    catalog = state.catalog()
    con = duckdb.connect()
    with contextlib.suppress(duckdb.Error):  # DuckDB without its ICU extension has no zones
        # times and days in UTC as everywhere else in icefloe, not in the machine's zone
        con.execute("SET TimeZone = 'UTC'")
    streams = Streams()
    reader = None
    names = Names(con, catalog, streams)
    try:
        try:
            reader = run_sql(names, query)
            if reader is not None:
                fmt = _output_format(fmt, as_json)
                write_batches(state, reader.schema, iter(reader), fmt, output, max_rows, "sql")
        except (duckdb.Error, pa.ArrowException) as error:
            if streams.failure is not None:
                # a table's scan failed while DuckDB read it: that error, as icefloe scan
                # gives it, not DuckDB's text of it (which holds the Python traceback)
                raise streams.failure from None
            if isinstance(error, pa.ArrowException):
                raise
            raise _sql_error(error, names.missing) from None
    finally:
        if reader is not None:
            reader.close()
        streams.close()
        con.close()


def _sql_error(error: Exception, missing: list[tuple[str, ...]]) -> Exception:
    """The icefloe error for DuckDB's ``error`` running a query."""
    import duckdb

    if isinstance(error, duckdb.CatalogException):
        return NoSuchTableError(_missing_message(missing, error))
    # a three-part name the catalog has no table for: DuckDB misses its database
    if isinstance(error, duckdb.BinderException) and _MISSING_DATABASE.search(str(error)):
        return NoSuchTableError(_missing_message(missing, error))
    if "NameListToString" in str(error):  # DuckDB's parser on a name of 4+ parts
        return UnsupportedFeatureError(
            "sql: DuckDB names have at most three parts (database.schema.table), so "
            "tables of namespaces deeper than two levels cannot be queried; read them "
            "with icefloe scan"
        )
    return ValidationError(f"sql: {_without_traceback(str(error))}")


def _without_traceback(text: str) -> str:
    """DuckDB's error ``text`` without the Python traceback it appends when Python code it
    called failed (the error's own message comes before it)."""
    for marker in ("Detail: Python exception:", "Traceback (most recent call last):"):
        head, sep, _ = text.partition(marker)
        if sep:
            return head.rstrip().rstrip(".").rstrip() or text
    return text


def _missing_message(missing: list[tuple[str, ...]], error: Exception) -> str:
    """The error for a query DuckDB found a name missing in: the names of the query the catalog
    has no table or view for (DuckDB's own words otherwise speak of its schemas)."""
    if not missing or "does not exist" not in str(error):
        return f"sql: {error}"
    listed = ", ".join(show_name(parts) for parts in missing)
    return f"sql: no table or view {listed} in catalog"


def register(group: click.Group) -> None:
    """Add ``scan`` and ``sql`` to ``group``; returns None."""
    group.add_command(scan)
    group.add_command(sql)
