"""Turning user data into an Arrow table of exactly the table schema.

Accepted input: :class:`pyarrow.Table`, :class:`pyarrow.RecordBatch`,
:class:`pyarrow.RecordBatchReader`, anything with ``__arrow_c_stream__`` or
``__arrow_c_array__`` (polars, DuckDB results, ...), pandas DataFrames, and a mapping of column
names to arrays or Python lists. There, and in a pandas object column, a map column's values
(at any depth) may be dicts or lists of ``(key, value)`` pairs, each a tuple or a 2-element list
(as JSON decoding gives them), and a struct's dict may only have the struct's field names as
keys (as text, or as UTF-8 bytes): any other is refused naming the column and the path to it;
Python numbers for ``double`` and ``float`` fields convert at any depth when exact in them.

A variant column accepts an encoded ``struct<metadata, value>`` (validated; a shredded one with
``typed_value`` is merged back), JSON strings, any other Arrow values (cast value by value), and
at the top level Python values (in a mapping or a pandas object column), encoded in Rust.

Columns are matched by name (case-sensitive). Only safe casts are made: integers to wider or
value-checked narrower integers, float to double, string/binary size variants, dictionary
decoding, timestamps between units without losing precision (with the same zone-ness), dates,
decimals and integers to any decimal type when every value is exactly representable in it (a
widening always; otherwise each value is checked, and one that would overflow or lose digits is
refused, never rounded), a null column into any optional column. A missing
column gets its v3 ``write-default`` (or nulls when optional); a required column must have no
nulls. Anything else raises :class:`~icefloe.exceptions.ValidationError` naming the column.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterable, Iterator, Mapping, Sized
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_fill import typed_nulls
from icefloe.arrow_schema import schema_to_arrow, type_to_arrow
from icefloe.exceptions import ValidationError
from icefloe.schema import Schema, walk_fields
from icefloe.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    NestedType,
    StructType,
    UnknownType,
    VariantType,
)
from icefloe.values import column_default
from icefloe.variant import from_pylist
from icefloe.write.coerce import coerce_column, is_list_layout, is_safe_cast
from icefloe.write.python_values import (
    arrow_time,
    check_leaves,
    doubles_for_floats,
    is_time,
    map_inferred_otherwise,
    needs_preparing,
    prepared,
    python_numbers_as,
    python_objects,
)

__all__ = [
    "STREAM_CHUNK_BYTES",
    "missing_nested_fields",
    "to_arrow_table",
    "to_schema_arrow_table",
    "to_table_schema",
    "to_table_schema_chunks",
]

#: A stream (``RecordBatchReader``, ``__arrow_c_stream__``) is written in pieces of about this
#: much Arrow data, so a write of any length holds a bounded amount of memory.
STREAM_CHUNK_BYTES = 256 << 20


def invalid_values(
    columns: Iterable[tuple[str, pa.Array | pa.ChunkedArray]],
) -> ValidationError | None:
    """The error for the first of ``columns`` (name, values) that is not valid Arrow data (a
    string that is not UTF-8, say: Arrow's kernels refuse it with their own errors), if any."""
    for name, column in columns:
        try:
            column.validate(full=True)
        except pa.ArrowInvalid as exc:
            return ValidationError(f"column {name!r} holds invalid values: {exc}")
    return None


def missing_nested_fields(
    schema: Schema, given: pa.Schema, case_sensitive: bool = True
) -> list[str]:
    """The full names (``s.b``, ``l.element.q``, ``m.value.v``) of the fields nested in the
    columns of ``schema`` that data of Arrow schema ``given`` has, which that data lacks:
    struct fields, also inside list elements and map keys and values. A write fills them with
    nulls (or their write-default); an update replacing whole rows would wipe their values.
    Missing top-level columns are not listed, nor ``unknown`` fields (always null); a column
    whose type is not shaped as the table's is left to the type checks."""
    fold = (lambda n: n) if case_sensitive else str.lower
    by_name = {fold(f.name): f.type for f in given}
    out: list[str] = []
    for f in schema.fields:
        have = by_name.get(fold(f.name))
        if have is not None:
            _missing_in(f.field_type, have, f.name, fold, out)
    return out


def _missing_in(t: IcebergType, have: pa.DataType, path: str, fold: Any, out: list[str]) -> None:
    if pa.types.is_dictionary(have):
        have = have.value_type
    if isinstance(t, StructType):
        if not pa.types.is_struct(have):
            return
        kids = {fold(have.field(i).name): have.field(i).type for i in range(have.num_fields)}
        for child in t.fields:
            cpath = f"{path}.{child.name}"
            ct = kids.get(fold(child.name))
            if ct is not None:
                _missing_in(child.field_type, ct, cpath, fold, out)
            elif not isinstance(child.field_type, UnknownType):
                out.append(cpath)
    elif isinstance(t, ListType) and is_list_layout(have):
        _missing_in(t.element_type, have.value_type, f"{path}.element", fold, out)
    elif isinstance(t, MapType) and pa.types.is_map(have):
        _missing_in(t.key_type, have.key_type, f"{path}.key", fold, out)
        _missing_in(t.value_type, have.item_type, f"{path}.value", fold, out)


def check_valid_columns(table: pa.Table, names: Iterable[str]) -> None:
    """Raises :class:`ValidationError` naming the first of the ``names`` columns of ``table``
    holding invalid Arrow data (checked in full: for key columns, which are few)."""
    invalid = invalid_values((n, table.column(n)) for n in names)
    if invalid is not None:
        raise invalid


def to_arrow_table(data: Any) -> pa.Table:
    """Any supported input as a :class:`pyarrow.Table` (streams are read fully).

    A pandas DataFrame converts as pandas does for Parquet (NaN in a float column is a null)
    with its named index levels as columns (an unnamed index is dropped)."""
    if isinstance(data, pa.Table):
        return data
    if type(data).__module__.startswith("pandas") and hasattr(data, "index"):
        if not hasattr(data, "columns"):
            raise ValidationError(
                f"cannot write a pandas {type(data).__name__}: give a DataFrame (series.to_frame())"
            )
        return _from_pandas(data)
    if isinstance(data, pa.Array | pa.ChunkedArray):
        raise ValidationError(
            "cannot write a single Arrow array: give a table of named columns "
            "(pa.table({'name': array}))"
        )
    try:
        if isinstance(data, pa.RecordBatch):
            return pa.Table.from_batches([data])
        if isinstance(data, pa.RecordBatchReader):
            return data.read_all()
        if hasattr(data, "__arrow_c_stream__"):
            return pa.table(data)
        if hasattr(data, "__arrow_c_array__"):
            return pa.Table.from_batches([pa.record_batch(data)])
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise ValidationError(f"cannot read the input as Arrow data: {e}") from e
    raise ValidationError(
        f"cannot write data of type {type(data).__name__}: expected {ACCEPTED_INPUT}"
        f"{_input_hint(data)}"
    )


#: What a write accepts as its rows, as error messages and docstrings say it.
ACCEPTED_INPUT = (
    "a pyarrow Table, RecordBatch or RecordBatchReader, a pandas DataFrame, a dict of column "
    "names to arrays or lists, or an object exporting an Arrow stream (a table scan, a polars "
    "DataFrame, a DuckDB result)"
)


def _input_hint(data: Any) -> str:
    """How to turn the common kinds of input that are not accepted into one that is."""
    if isinstance(data, list | tuple):
        if data and all(isinstance(x, Mapping) for x in data):
            return "; for a list of rows as dicts use pyarrow.Table.from_pylist(rows)"
        if data and all(isinstance(x, pa.RecordBatch) for x in data):
            return "; for a list of record batches use pyarrow.Table.from_batches(batches)"
    elif isinstance(data, Iterator):
        return (
            "; for an iterator of record batches use "
            "pyarrow.RecordBatchReader.from_batches(schema, batches)"
        )
    elif type(data).__module__.startswith("pyarrow") and hasattr(data, "scanner"):
        return "; for a pyarrow dataset use dataset.to_table() or dataset.scanner().to_reader()"
    elif type(data).__module__.startswith("pyarrow") and hasattr(data, "to_reader"):
        return "; for a pyarrow dataset scanner use scanner.to_reader()"
    return ""


#: what pyarrow raises for Python values it cannot convert (complex numbers: not implemented)
_CONVERSION_ERRORS = (
    pa.ArrowInvalid,
    pa.ArrowTypeError,
    pa.ArrowNotImplementedError,
    TypeError,
    ValueError,
    OverflowError,
)


def _from_pandas(data: Any, schema: Schema | None = None) -> pa.Table:
    """A DataFrame as Arrow (named index levels become columns); when Arrow's conversion
    fails, column by column, so that the error names the column, and a column Arrow cannot
    infer (integers beyond int64 for a decimal column) is converted as ``schema``'s type."""
    named = [n for n in getattr(data.index, "names", []) if n is not None]
    taken = [n for n in named if n in data.columns]
    if taken:
        raise ValidationError(
            f"the DataFrame's index level {taken[0]!r} has the name of one of its columns, and "
            "named index levels are written as columns: rename it (df.rename_axis(...)) or "
            "leave the index out (df.reset_index(drop=True))"
        )
    fields = {f.name: f for f in schema.fields} if schema is not None else {}
    try:
        if named:
            data = data.reset_index(level=named)
        table = pa.Table.from_pandas(data, preserve_index=False)
        if table.num_columns == 0 and len(data):  # Arrow's conversion loses the row count
            table = pa.table({"_": pa.nulls(len(data))}).drop_columns(["_"])
    except _CONVERSION_ERRORS as e:
        error = e
    else:
        if schema is None or len(set(table.column_names)) != table.num_columns:
            return table
        for i, name in enumerate(table.column_names):
            # key-value pairs of one type (JSON records) inferred as lists: converted as the
            # map the table has there
            f = fields.get(name)
            if f is None:
                continue
            column_values = data.iloc[:, i]  # by position: labels need not be text
            if arrow_time(table.schema.field(i).type) and python_objects(column_values):
                # pandas types an object column's times as the first one's
                check_leaves(name, column_values.tolist(), f.field_type, zones=True)
            if map_inferred_otherwise(table.schema.field(i).type, f.field_type):
                values = column_values.tolist()
                column = _python_column(name, values, f, schema, from_pandas=True)
                table = table.set_column(i, name, column)
        return table
    if len(set(map(str, data.columns))) != len(data.columns) or schema is None:
        raise ValidationError(f"cannot convert the DataFrame to Arrow: {error}") from None
    columns = {}
    for name in data.columns:
        values = data[name]
        try:
            columns[str(name)] = pa.Array.from_pandas(values)
        except _CONVERSION_ERRORS:
            columns[str(name)] = _python_column(
                str(name), values.tolist(), fields.get(str(name)), schema, from_pandas=True
            )
    return pa.table(columns)


def to_table_schema_chunks(
    data: Any, schema: Schema, format_version: int = 2
) -> Iterator[pa.Table]:
    """``data`` as :func:`to_table_schema` tables: one for a table or DataFrame; for a stream,
    one per :data:`STREAM_CHUNK_BYTES` of its batches, read as they are needed (at least one,
    so even an empty stream is checked against the schema)."""
    reader = _stream(data)
    if reader is None:
        yield to_table_schema(data, schema, format_version)
        return
    batches: list[pa.RecordBatch] = []
    size = 0
    sent = False
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            break
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise _stream_failure(e) from e
        batches.append(batch)
        size += batch.nbytes
        if size >= STREAM_CHUNK_BYTES:
            yield to_table_schema(_joined(batches, reader.schema), schema, format_version)
            batches, size, sent = [], 0, True
    if batches or not sent:
        yield to_table_schema(_joined(batches, reader.schema), schema, format_version)


def _stream_failure(e: Exception) -> BaseException:
    """The error to raise for a stream whose producer failed while it was read: a Ctrl-C in a
    Python producer behind ``__arrow_c_stream__`` (which Arrow reports as an error message)
    is a ``KeyboardInterrupt`` again; anything else a :class:`ValidationError` quoting it."""
    text = str(e)
    if "Python exception:" in text and text.rstrip().endswith("KeyboardInterrupt"):
        return KeyboardInterrupt()
    return ValidationError(f"the input stream failed while it was read: {e}")


def _joined(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    try:
        return pa.Table.from_batches(batches, schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise ValidationError(f"cannot read the input as Arrow data: {e}") from e


def _stream(data: Any) -> pa.RecordBatchReader | None:
    """``data`` as a reader when it is a stream (not a table, DataFrame or mapping)."""
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.Table | pa.RecordBatch | pa.Array | pa.ChunkedArray | Mapping):
        return None
    if type(data).__module__.startswith("pandas") or not hasattr(data, "__arrow_c_stream__"):
        return None
    try:
        return pa.RecordBatchReader.from_stream(data)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise ValidationError(f"cannot read the input as Arrow data: {e}") from e


def to_schema_arrow_table(data: Any, schema: Schema) -> pa.Table:
    """Any supported input as a :class:`pyarrow.Table` with its own columns, Python values of
    ``schema``'s variant columns encoded (see :func:`to_arrow_table`)."""
    return to_arrow_table(_python_values_converted(data, schema))


def to_table_schema(data: Any, schema: Schema, format_version: int = 2) -> pa.Table:
    """``data`` with exactly the columns, order and types of ``schema`` (field ids attached)."""
    table = to_schema_arrow_table(data, schema)
    target = schema_to_arrow(schema)
    known = {f.name for f in schema.fields}
    names = table.column_names  # a new list on every call: taken once
    extra = [n for n in names if n not in known]
    if extra:
        raise ValidationError(
            f"input column {extra[0]!r} is not in the table schema (columns: {sorted(known)})"
        )
    given = set(names)
    if len(given) != len(names):
        raise ValidationError(f"input has duplicate column names: {names}")
    n = table.num_rows
    # a DataFrame, or Arrow data converted from one (pyarrow records pandas' metadata)
    from_pandas = type(data).__module__.startswith("pandas") or b"pandas" in (
        table.schema.metadata or {}
    )
    columns: list[pa.ChunkedArray] = []
    for f, af in zip(schema.fields, target, strict=True):
        if f.name in given:
            col = table.column(f.name)
            columns.append(coerce_column(col, f, af, from_pandas=from_pandas))
        else:
            columns.append(_missing(f, af, n, format_version))
    return pa.Table.from_arrays(columns, schema=target)


def _python_values_converted(data: Any, schema: Schema) -> Any:
    """Python values of a mapping of columns converted to Arrow column by column (variant
    columns encoded in Rust; values Arrow's inference cannot hold, such as integers beyond
    int64 for a decimal column, converted as the table's type), and so are pandas object
    columns of variant type or holding structs or maps (their dicts checked as a mapping's
    are); everything else is left to Arrow."""
    fields = {f.name: f for f in schema.fields}
    if isinstance(data, Mapping):
        columns = {
            k: v
            if isinstance(v, pa.Array | pa.ChunkedArray)
            else _python_column(k, v, fields.get(k), schema)
            for k, v in data.items()
        }
        try:
            return pa.table(columns)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
            raise ValidationError(f"cannot make a table of the input's columns: {e}") from None
    if type(data).__module__.startswith("pandas") and hasattr(data, "columns"):
        names = {n for n, f in fields.items() if _holds_python_objects(f.field_type)}
        cols = [c for c in data.columns if c in names and data[c].dtype == object]
        if cols and len(set(map(str, data.columns))) == len(data.columns):
            rest = _from_pandas(data.drop(columns=cols), schema)
            converted = {
                str(c): _python_column(c, data[c].tolist(), fields[c], schema, from_pandas=True)
                for c in cols
            }
            # the other columns' table has no rows when there are none of them
            others = dict(zip(rest.column_names, rest.columns, strict=True))
            return pa.table({**others, **converted})
        return _from_pandas(data, schema)
    return data


def _holds_python_objects(t: IcebergType) -> bool:
    """Whether a pandas object column of type ``t`` is converted as a mapping's Python values
    are: a variant, or a struct or a map, also as list elements (their dicts are checked)."""
    while isinstance(t, ListType):
        t = t.element_type
    return isinstance(t, VariantType | StructType | MapType)


def _python_column(
    name: str,
    values: Any,
    field: NestedField | None,
    schema: Schema,
    from_pandas: bool | None = None,
) -> Any:
    """Column ``name``'s values as Arrow: inferred (the write then converts them to the
    column's type with its checks), else as the column's own type; a :class:`ValidationError`
    naming the column when neither works. ``from_pandas``: NaN is null, as pandas means it
    (None: for pandas objects only, as ``pyarrow.array`` decides)."""
    if values is None or isinstance(values, str | bytes | int | float | decimal.Decimal):
        raise ValidationError(
            f"column {name!r}: give a list or array of values, not a single {type(values).__name__}"
        )
    if field is not None and isinstance(field.field_type, VariantType):
        return from_pylist(values)
    # pandas values are read with pandas' null rule even once they are copied into a list
    original_from_pandas = type(values).__module__.startswith("pandas") or None
    if not isinstance(values, Sized):  # a generator, say: read once, for every use below
        values = list(values)
    ready = False
    if field is not None and needs_preparing(values, field.field_type):
        # struct dicts with keys that are not text (Arrow's inference would lose values)
        values, changed = prepared(name, values, field.field_type)
        ready = True
        if changed and from_pandas is None:
            from_pandas = original_from_pandas
    error: Exception | None = None
    try:
        inferred = pa.array(values, from_pandas=from_pandas)
    except _CONVERSION_ERRORS as e:
        error = e
    else:
        if pa.types.is_timestamp(inferred.type) and isinstance(values, list | tuple):
            _check_one_zone_kind(name, values, inferred.type.tz is not None)
        if field is not None and python_objects(values) and arrow_time(inferred.type):
            # pyarrow's inference takes integers after a time as times in its unit, and the
            # times of a Series or array as the first one's zone kind (a list's are checked)
            zones = None if isinstance(values, list | tuple) else True
            check_leaves(name, values, field.field_type, zones=zones)
        if field is None:
            return inferred
        numbers = python_numbers_as(name, inferred, field.field_type)
        if numbers is not None:
            return numbers
        if not isinstance(field.field_type, NestedType):
            return _as_column_type(values, inferred, type_to_arrow(field.field_type), from_pandas)
        if not map_inferred_otherwise(inferred.type, field.field_type):
            return inferred
        # dicts or pairs for a map (Arrow guessed a struct of the dicts' keys, or lists of
        # pairs whose keys and values share a type): converted as the column's type
    if field is not None:
        # pyarrow's conversion to the column's type cuts floats for integers, datetimes for
        # dates, reads naive times as UTC and integers as times in its unit
        check_leaves(name, values, field.field_type, typed=True)
        if not ready:
            # one pass over the values of a column holding structs or maps: struct keys the
            # table lacks refused (Arrow's typed conversion drops them), map entries given as
            # 2-element lists (JSON's pairs) made the tuples pyarrow takes
            values, changed = prepared(name, values, field.field_type)
            if changed and from_pandas is None:
                from_pandas = original_from_pandas
        try:
            # Python floats for a float field are converted as doubles, then checked to be
            # exact in 32 bits (pyarrow's own conversion would round them)
            typed = pa.array(
                values,
                type=doubles_for_floats(type_to_arrow(field.field_type)),
                from_pandas=from_pandas,
            )
            numbers = python_numbers_as(name, typed, field.field_type)
            return typed if numbers is None else numbers
        except _CONVERSION_ERRORS as e:
            if not isinstance(field.field_type, NestedType):
                raise ValidationError(
                    f"column {name!r} ({field.field_type}): a value does not fit the column's "
                    f"type: {e}"
                ) from None
            error = e if error is None else error
    nested = any(
        ancestors and isinstance(f.field_type, VariantType)
        for ancestors, f in walk_fields(schema.as_struct())
    )
    hint = (
        " (a variant inside a list or struct is given as an Arrow array: see "
        "icefloe.variant.from_pylist)"
        if nested
        else " (give a pyarrow table of the table's types to convert them exactly)"
    )
    kind = f"a {field.field_type} column" if field is not None else "a column the table lacks"
    raise ValidationError(
        f"column {name!r} ({kind}): cannot convert its Python values to Arrow: {error}{hint}"
    ) from None


#: The floating types Python numbers are converted to, with the magnitude up to which each
#: holds every integer exactly.
def _check_one_zone_kind(name: str, values: list[Any] | tuple[Any, ...], zoned: bool) -> None:
    """Refuse Python times of which some carry a zone and some do not: Arrow types them all
    as the first one, reading later naive times as UTC (or dropping later zones)."""
    for v in values:
        if isinstance(v, datetime.datetime) and (v.utcoffset() is not None) != zoned:
            raise ValidationError(
                f"column {name!r}: its times mix values with and without a time zone "
                f"({v!r} {'has none' if zoned else 'has one'}, unlike the first): give "
                "all of them a zone, or none"
            )


def _as_column_type(
    values: Any, inferred: pa.Array, want: pa.DataType, from_pandas: bool | None
) -> pa.Array:
    """Python ``values`` Arrow inferred as ``inferred``, as the column's type ``want`` when the
    write would not convert ``inferred`` to it (floats for a ``float`` column, integers for a
    ``double`` one, bytes for ``fixed`` or ``uuid``) and every value converts exactly: the
    conversion read back equals the inferred values. ``inferred`` otherwise (the write's own
    checks then name the column). Times with a zone for a column without one, or without a
    zone for a zoned column, stay as inferred: the write refuses them as it refuses such Arrow
    values (a naive time is never read as UTC, nor an aware one stored as its UTC wall time)."""
    if (
        inferred.type == want
        or pa.types.is_null(inferred.type)
        or is_safe_cast(inferred.type, want)
    ):
        return inferred
    if _zone_differs(inferred.type, want):
        return inferred
    if pa.types.is_integer(inferred.type) and is_time(want):
        return inferred  # refused by the write, as Arrow integers are: of which unit?
    try:
        typed = pa.array(values, type=want, from_pandas=from_pandas)
        back = typed.cast(inferred.type)
    except _CONVERSION_ERRORS:
        return inferred
    if not back.is_null().equals(inferred.is_null()):
        return inferred
    same = pc.equal(back, inferred)
    if pa.types.is_floating(inferred.type):
        same = pc.or_(same, pc.and_(pc.is_nan(back), pc.is_nan(inferred)))
    return typed if pc.all(same).as_py() is not False else inferred


def _zone_differs(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether ``have`` and ``want`` are timestamps, one with a time zone and one without."""
    return (
        pa.types.is_timestamp(have)
        and pa.types.is_timestamp(want)
        and (have.tz is None) != (want.tz is None)
    )


def _missing(f: NestedField, af: pa.Field, n: int, version: int) -> pa.ChunkedArray:
    if f.write_default is not None:
        value = column_default(f, write=True)
        try:
            scalar = pa.scalar(value, type=af.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
            raise ValidationError(f"column {f.name!r}: bad write-default {value!r}: {e}") from e
        return pa.chunked_array([pa.repeat(scalar, n)], type=af.type)
    if f.required:
        raise ValidationError(f"required column {f.name!r} is missing from the input")
    return pa.chunked_array([typed_nulls(n, af.type)], type=af.type)
