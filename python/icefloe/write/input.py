"""Turning user data into an Arrow table of exactly the table schema.

Accepted input: :class:`pyarrow.Table`, :class:`pyarrow.RecordBatch`,
:class:`pyarrow.RecordBatchReader`, anything with ``__arrow_c_stream__`` or
``__arrow_c_array__`` (polars, DuckDB results, ...), pandas DataFrames, and a mapping of column
names to arrays or Python lists.

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
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_fill import fill_under_null, typed_nulls
from icefloe.arrow_schema import schema_to_arrow, type_to_arrow
from icefloe.exceptions import ValidationError
from icefloe.geo import EXTENSION_NAME, parse_metadata, wkb_bounds
from icefloe.schema import Schema, walk_fields
from icefloe.types import (
    DecimalType,
    GeographyType,
    GeometryType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    NestedType,
    StructType,
    TimeType,
    UnknownType,
    VariantType,
)
from icefloe.values import column_default, field_default
from icefloe.variant import encode_column, from_pylist
from icefloe.write.input_decimals import to_decimal, within_precision

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
    elif isinstance(t, ListType) and _is_list(have):
        _missing_in(t.element_type, have.value_type, f"{path}.element", fold, out)
    elif isinstance(t, MapType) and pa.types.is_map(have):
        _missing_in(t.key_type, have.key_type, f"{path}.key", fold, out)
        _missing_in(t.value_type, have.item_type, f"{path}.value", fold, out)


def _is_list(have: pa.DataType) -> bool:
    """Whether ``have`` is one of the Arrow list layouts a list column is written from."""
    return bool(
        pa.types.is_list(have)
        or pa.types.is_large_list(have)
        or pa.types.is_fixed_size_list(have)
        or pa.types.is_list_view(have)
        or pa.types.is_large_list_view(have)
    )


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


def _from_pandas(data: Any, schema: Schema | None = None) -> pa.Table:
    """A DataFrame as Arrow (named index levels become columns); when Arrow's conversion
    fails, column by column, so that the error names the column, and a column Arrow cannot
    infer (integers beyond int64 for a decimal column) is converted as ``schema``'s type."""
    named = [n for n in getattr(data.index, "names", []) if n is not None]
    try:
        if named:
            data = data.reset_index(level=named)
        return pa.Table.from_pandas(data, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
        error = e
    fields = {f.name: f for f in schema.fields} if schema is not None else {}
    if len(set(map(str, data.columns))) != len(data.columns) or schema is None:
        raise ValidationError(f"cannot convert the DataFrame to Arrow: {error}") from None
    columns = {}
    for name in data.columns:
        values = data[name]
        try:
            columns[str(name)] = pa.Array.from_pandas(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
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
    return to_arrow_table(_encode_python_variants(data, schema))


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
    columns: list[pa.ChunkedArray] = []
    for f, af in zip(schema.fields, target, strict=True):
        if f.name in given:
            col = table.column(f.name)
            columns.append(_coerce(col, f, af, f.name))
        else:
            columns.append(_missing(f, af, n, format_version))
    return pa.Table.from_arrays(columns, schema=target)


def _encode_python_variants(data: Any, schema: Schema) -> Any:
    """Python values of a mapping of columns converted to Arrow column by column (variant
    columns encoded in Rust; values Arrow's inference cannot hold, such as integers beyond
    int64 for a decimal column, converted as the table's type), and pandas object columns of
    variant type encoded; everything else is left to Arrow."""
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
        names = {n for n, f in fields.items() if isinstance(f.field_type, VariantType)}
        cols = [c for c in data.columns if c in names and data[c].dtype == object]
        if cols:
            table = _from_pandas(data.drop(columns=cols), schema)
            for c in cols:
                table = table.append_column(c, from_pylist(data[c].tolist()))
            return table
        return _from_pandas(data, schema)
    return data


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
    error: Exception | None = None
    try:
        inferred = pa.array(values, from_pandas=from_pandas)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
        error = e
    else:
        if pa.types.is_timestamp(inferred.type) and isinstance(values, list | tuple):
            _check_one_zone_kind(name, values, inferred.type.tz is not None)
        if field is None:
            return inferred
        if not isinstance(field.field_type, NestedType):
            return _as_column_type(values, inferred, type_to_arrow(field.field_type), from_pandas)
        if not _map_read_as_struct(inferred.type, field.field_type):
            return inferred
        # dicts for a map (Arrow guessed a struct of their keys): convert as the column's type,
        # refusing struct keys the table lacks (which that conversion would drop)
        _check_struct_keys(name, values, field.field_type)
    if field is not None:
        try:
            return pa.array(values, type=type_to_arrow(field.field_type), from_pandas=from_pandas)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
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


def _map_read_as_struct(inferred: pa.DataType, t: IcebergType) -> bool:
    """Whether Arrow's inference made a struct where type ``t`` has a map (Python dicts given
    for a map, at any depth): such values convert only as ``t``."""
    if isinstance(t, MapType):
        if pa.types.is_struct(inferred):
            return True
        return pa.types.is_map(inferred) and (
            _map_read_as_struct(inferred.key_type, t.key_type)
            or _map_read_as_struct(inferred.item_type, t.value_type)
        )
    if isinstance(t, ListType):
        return (
            pa.types.is_list(inferred) or pa.types.is_large_list(inferred)
        ) and _map_read_as_struct(inferred.value_type, t.element_type)
    if isinstance(t, StructType) and pa.types.is_struct(inferred):
        given = {inferred.field(i).name: inferred.field(i).type for i in range(inferred.num_fields)}
        return any(
            f.name in given and _map_read_as_struct(given[f.name], f.field_type) for f in t.fields
        )
    return False


def _check_struct_keys(name: str, values: Iterable[Any], t: IcebergType) -> None:
    """Refuse a Python dict given for a struct of type ``t`` (at any depth in ``values``) with
    a key that is not one of the struct's fields."""
    todo: list[tuple[str, Iterable[Any], IcebergType]] = [(name, values, t)]
    while todo:
        path, items, typ = todo.pop()
        for v in items:
            if v is None:
                continue
            if isinstance(typ, StructType) and isinstance(v, Mapping):
                known = {f.name: f for f in typ.fields}
                for k, child in v.items():
                    if k not in known:
                        raise ValidationError(f"input field {path}.{k} is not in the table schema")
                    todo.append((f"{path}.{k}", [child], known[k].field_type))
            elif isinstance(typ, ListType) and isinstance(v, Iterable):
                todo.append((f"{path}.element", v, typ.element_type))
            elif isinstance(typ, MapType):
                pairs = v.items() if isinstance(v, Mapping) else v
                if isinstance(pairs, Iterable):
                    for pair in pairs:
                        if isinstance(pair, tuple | list) and len(pair) == 2:
                            todo.append((f"{path}.key", [pair[0]], typ.key_type))
                            todo.append((f"{path}.value", [pair[1]], typ.value_type))


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
    if inferred.type == want or pa.types.is_null(inferred.type) or _safe(inferred.type, want):
        return inferred
    if _zone_differs(inferred.type, want):
        return inferred
    try:
        typed = pa.array(values, type=want, from_pandas=from_pandas)
        back = typed.cast(inferred.type)
    except (
        pa.ArrowInvalid,
        pa.ArrowTypeError,
        pa.ArrowNotImplementedError,
        TypeError,
        ValueError,
        OverflowError,
    ):
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


def _coerce(col: pa.ChunkedArray, f: NestedField, af: pa.Field, path: str) -> pa.ChunkedArray:
    chunks = [_coerce_array(c, f.field_type, af.type, path) for c in col.chunks]
    out = pa.chunked_array(chunks, type=af.type)
    if f.required and out.null_count:
        raise ValidationError(f"required column {path!r} has {out.null_count} null values")
    return out


def _check_required_child(parent: pa.Array, child: pa.Array, f: NestedField, path: str) -> None:
    if f.required and child.null_count:
        bad = pc.sum(pc.and_(child.is_null(), parent.is_valid())).as_py() or 0
        if bad:
            raise ValidationError(f"required field {path!r} has {bad} null values")


def coerce_column(col: pa.ChunkedArray, f: NestedField, af: pa.Field) -> pa.ChunkedArray:
    """``col`` as column ``f`` (Arrow field ``af``) holds it, by the write rules: only safe
    casts, values checked; anything else is a :class:`ValidationError` naming the column."""
    return _coerce(col, f, af, f.name)


def _decoded(arr: pa.DictionaryArray) -> pa.Array:
    """A dictionary column's values (dictionaries of string or binary views, as polars exports
    its categoricals, decoded through their plain types: Arrow cannot take from views)."""
    values = arr.dictionary
    if pa.types.is_string_view(values.type):
        arr = pa.DictionaryArray.from_arrays(arr.indices, values.cast(pa.large_string()))
    elif pa.types.is_binary_view(values.type):
        arr = pa.DictionaryArray.from_arrays(arr.indices, values.cast(pa.large_binary()))
    return arr.dictionary_decode()


def _coerce_array(arr: pa.Array, t: IcebergType, want: pa.DataType, path: str) -> pa.Array:
    if isinstance(arr, pa.DictionaryArray):
        arr = _decoded(arr)
    if isinstance(t, VariantType):
        return _variant(arr, want, path)
    if isinstance(t, GeometryType | GeographyType):
        checked = _check_wkb(arr, t, path)
        arr = arr if arr.type == want else checked
    have = arr.type
    if have == want:
        if isinstance(t, DecimalType):
            return within_precision(arr, path)
        if not isinstance(t, StructType | ListType | MapType):
            return _within_a_day(arr, path) if isinstance(t, TimeType) else arr
        _check_nested_required(arr, t, path)
        _check_nested_values(arr, t, path)
        if not _hidden_nulls(arr, t):
            return arr
        # nulls of required fields under null parents: rebuilt below with placeholders
    if pa.types.is_null(have):
        return typed_nulls(len(arr), want)
    if isinstance(t, StructType):
        if not pa.types.is_struct(have):
            raise _type_error(path, have, want)
        sarr: pa.StructArray = arr
        names = [have.field(i).name for i in range(have.num_fields)]
        twice = sorted({nm for nm in names if names.count(nm) > 1})
        if twice:
            raise ValidationError(f"input struct {path!r} has field {twice[0]!r} more than once")
        unknown = [nm for nm in names if t.field_by_name(nm) is None]
        if unknown:
            raise ValidationError(f"input field {path}.{unknown[0]} is not in the table schema")
        children = []
        for i, child in enumerate(t.fields):
            cpath = f"{path}.{child.name}"
            wt = want.field(i).type
            if child.name in names:
                raw = _child(sarr, names.index(child.name), child.field_type)
                c = _coerce_array(raw, child.field_type, wt, cpath)
                _check_required_child(arr, c, child, cpath)
                if child.required and c.null_count:  # only under null rows of the struct
                    c = fill_under_null(c)
            elif child.write_default is not None:
                c = pa.repeat(pa.scalar(field_default(child, write=True), wt), len(arr))
            elif child.required:
                raise ValidationError(f"required field {cpath!r} is missing from the input")
            else:
                c = typed_nulls(len(arr), wt)
            children.append(c)
        return pa.StructArray.from_arrays(
            children, fields=list(want), mask=arr.is_null() if arr.null_count else None
        )
    if isinstance(t, ListType):
        # fixed-size lists and list views too: _compact reads any layout by value lengths
        # (no cast: pyarrow 26's list_view -> list cast builds too short an offsets buffer)
        if not _is_list(have):
            raise _type_error(path, have, want)
        offsets, flat = _compact(arr)
        vals = _coerce_array(flat, t.element_type, want.value_type, f"{path}.element")
        ef = t.element_field
        if ef.required and vals.null_count:
            raise ValidationError(f"required field {path}.element has {vals.null_count} nulls")
        return pa.ListArray.from_arrays(
            offsets, vals, type=want, mask=arr.is_null() if arr.null_count else None
        )
    if isinstance(t, MapType):
        if not pa.types.is_map(have):
            raise _type_error(path, have, want)
        offsets, entries = _compact(arr)
        keys = _coerce_array(entries.field(0), t.key_type, want.key_type, f"{path}.key")
        items = _coerce_array(entries.field(1), t.value_type, want.item_type, f"{path}.value")
        if t.value_required and items.null_count:
            raise ValidationError(f"required field {path}.value has {items.null_count} nulls")
        return pa.MapArray.from_arrays(
            offsets, keys, items, type=want, mask=arr.is_null() if arr.null_count else None
        )
    if not _safe(have, want):
        raise _type_error(path, have, want)
    if pa.types.is_decimal(want):
        return to_decimal(arr, want, path)
    try:
        out = pc.cast(arr, want, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise ValidationError(f"column {path!r}: cannot cast {have} to {want}: {e}") from e
    return _within_a_day(out, path) if isinstance(t, TimeType) else out


#: A time is microseconds from midnight: 0 up to (not including) a day.
_DAY_MICROS = 86_400_000_000


def _within_a_day(arr: pa.Array, path: str) -> pa.Array:
    """A time column's values, refused unless each lies within one day."""
    if len(arr) == arr.null_count:
        return arr
    extremes = pc.min_max(arr.view(pa.int64()))  # the table's time64[us]
    lo, hi = extremes["min"].as_py(), extremes["max"].as_py()
    if lo < 0 or hi >= _DAY_MICROS:
        bad = lo if lo < 0 else hi
        raise ValidationError(
            f"column {path!r}: time {bad} microseconds is not within a day (0 to {_DAY_MICROS - 1})"
        )
    return arr


def _compact(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """A list or map array's int32 offsets from 0 and the values they index: only the values
    of its own rows (a slice's child array holds every row's) and none under a null row."""
    if pa.types.is_map(arr.type):
        # list_flatten has no map kernel: view the entries as a list of structs first.
        # (offsets copied to start at 0: a mask cannot go with sliced offsets)
        offsets = pa.array(np.asarray(arr.offsets)) if arr.offset else arr.offsets
        arr = pa.ListArray.from_arrays(
            offsets, arr.values, mask=arr.is_null() if arr.null_count else None
        )
    values = arr.flatten()
    lengths = pc.fill_null(pc.list_value_length(arr), 0).to_numpy(zero_copy_only=False)
    ends = np.cumsum(lengths, dtype=np.int64)
    if len(ends) and ends[-1] > np.iinfo(np.int32).max:
        raise ValidationError("a list or map column chunk holds more than 2**31 - 1 values")
    offsets = np.concatenate([np.zeros(1, np.int32), ends.astype(np.int32)])
    return pa.array(offsets), values


def _hidden_nulls(arr: pa.Array, t: IcebergType) -> bool:
    """Whether a required field nested in ``arr`` holds nulls (under null parents: the rest
    was refused before), which Parquet writers refuse."""
    if isinstance(t, StructType):
        for i, child in enumerate(t.fields):
            c = arr.field(i)
            if child.required and c.null_count:
                return True
            if isinstance(child.field_type, StructType | ListType | MapType) and _hidden_nulls(
                c, child.field_type
            ):
                return True
        return False
    if isinstance(t, ListType):
        # (the child array holds the values under null rows too, and those outside a slice)
        if t.element_required and arr.values.null_count:
            return True
        if isinstance(t.element_type, StructType | ListType | MapType):
            return _hidden_nulls(arr.flatten(), t.element_type)
        return False
    if isinstance(t, MapType):
        if arr.keys.null_count or (t.value_required and arr.items.null_count):
            return True
        if isinstance(t.value_type, StructType | ListType | MapType):
            return _hidden_nulls(_compact(arr)[1].field(1), t.value_type)
    return False


def _has_checked_leaf(t: IcebergType) -> bool:
    """Whether a nested type holds a time or geo leaf, whose values are checked on write."""
    if isinstance(t, TimeType | GeometryType | GeographyType | DecimalType):
        return True
    return isinstance(t, StructType | ListType | MapType) and any(
        _has_checked_leaf(f.field_type) for f in t.fields
    )


def _check_nested_values(arr: pa.Array, t: IcebergType, path: str) -> None:
    """The time and geo leaves of a nested column already of the table's type, checked as
    :func:`_coerce_array` checks them at the top level."""
    if not _has_checked_leaf(t):
        return
    if isinstance(t, TimeType):
        _within_a_day(arr, path)
    elif isinstance(t, DecimalType):
        within_precision(arr, path)
    elif isinstance(t, GeometryType | GeographyType):
        _check_wkb(arr, t, path)
    elif isinstance(t, StructType):
        for i, child in enumerate(t.fields):
            c = _child(arr, i, child.field_type)
            _check_nested_values(c, child.field_type, f"{path}.{child.name}")
    elif isinstance(t, ListType):
        _check_nested_values(arr.flatten(), t.element_type, f"{path}.element")
    elif isinstance(t, MapType):
        entries = _compact(arr)[1]
        _check_nested_values(entries.field(0), t.key_type, f"{path}.key")
        _check_nested_values(entries.field(1), t.value_type, f"{path}.value")


def _has_geo_leaf(t: IcebergType) -> bool:
    """Whether a type is, or nests, a geometry or geography field."""
    if isinstance(t, GeometryType | GeographyType):
        return True
    return isinstance(t, StructType | ListType | MapType) and any(
        _has_geo_leaf(f.field_type) for f in t.fields
    )


def _child(arr: pa.StructArray, i: int, t: IcebergType) -> pa.Array:
    """Child ``i`` of a struct array; null under the struct's own nulls when it holds a geo
    field (``field(i)`` drops them, and the value hidden under a null row, often empty bytes,
    is not WKB to check)."""
    if arr.null_count and _has_geo_leaf(t):
        child: pa.Array = arr.flatten()[i]
        return child
    return arr.field(i)


def _geo_params(t: GeometryType | GeographyType) -> tuple[str, str | None]:
    return t.crs, t.algorithm if isinstance(t, GeographyType) else None


def check_geoarrow_type(
    typ: pa.DataType,
    t: GeometryType | GeographyType,
    where: str,
    fix: str = "transform the values, or give plain WKB (binary) to take them as in the column's",
) -> bool:
    """Whether ``typ`` is ``geoarrow.wkb``; if so, it must have the CRS (compared ignoring
    case, as the reference compares types) and edges of column type ``t``
    (:class:`ValidationError` otherwise)."""
    if not isinstance(typ, pa.BaseExtensionType) or typ.extension_name != EXTENSION_NAME:
        return False
    try:
        crs, edges = parse_metadata(typ.__arrow_ext_serialize__())
    except ValidationError as e:
        raise ValidationError(f"{where}: {e}") from None
    want_crs, want_edges = _geo_params(t)
    if crs.casefold() != want_crs.casefold() or edges != want_edges:
        raise ValidationError(
            f"{where} is {t} but the data is geoarrow.wkb with CRS {crs!r} and "
            f"{edges or 'planar'} edges, not the column's CRS {want_crs!r} and "
            f"{want_edges or 'planar'} edges: {fix} CRS"
        )
    return True


def _check_wkb(arr: pa.Array, t: GeometryType | GeographyType, path: str) -> pa.Array:
    """Every value of a geometry or geography column is well-formed WKB (parsed in Rust, as
    for bounds, from any binary layout: other types are refused by the cast that follows).
    Values typed ``geoarrow.wkb`` must carry the column's CRS (compared ignoring case, as the
    reference compares types) and edges; they are returned as plain WKB, which the cast that
    follows labels with the column's type. Untyped WKB is taken as in the column's CRS."""
    if isinstance(arr, pa.ExtensionArray) and check_geoarrow_type(arr.type, t, f"column {path!r}"):
        arr = arr.storage
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    if pa.types.is_binary_view(storage.type):
        storage = storage.cast(pa.large_binary())
    if pa.types.is_binary(storage.type) or pa.types.is_large_binary(storage.type):
        try:
            wkb_bounds(storage)
        except ValidationError as e:
            raise ValidationError(f"column {path!r}: {e}") from None
    return arr


def _variant(arr: pa.Array, want: pa.DataType, path: str) -> pa.Array:
    """A column for a variant field: encoded structs (validated, shredded ones merged), JSON
    strings, or any other Arrow values cast value by value (see :func:`encode_column`)."""
    try:
        out = encode_column(arr)
    except ValidationError as e:
        raise ValidationError(f"variant column {path!r}: {e}") from None
    return out if out.type == want else out.cast(want)


def _check_nested_required(arr: pa.Array, t: IcebergType, path: str) -> None:
    if isinstance(t, StructType):
        for i, child in enumerate(t.fields):
            c = arr.field(i)
            _check_required_child(arr, c, child, f"{path}.{child.name}")
            if isinstance(child.field_type, StructType | ListType | MapType):
                _check_nested_required(c, child.field_type, f"{path}.{child.name}")
    elif isinstance(t, ListType):
        vals = arr.flatten()
        if t.element_required and vals.null_count:
            raise ValidationError(f"required field {path}.element has {vals.null_count} nulls")
        if isinstance(t.element_type, StructType | ListType | MapType):
            _check_nested_required(vals, t.element_type, f"{path}.element")
    elif isinstance(t, MapType):
        vals = _compact(arr)[1].field(1)
        if t.value_required and vals.null_count:
            raise ValidationError(f"required field {path}.value has {vals.null_count} nulls")
        if isinstance(t.value_type, StructType | ListType | MapType):
            _check_nested_required(vals, t.value_type, f"{path}.value")


def _type_error(path: str, have: pa.DataType, want: pa.DataType) -> ValidationError:
    hint = ""
    if pa.types.is_timestamp(have) and pa.types.is_timestamp(want):
        if have.tz is None and want.tz is not None:
            hint = (
                ": the values have no time zone; say which one they are in (pandas "
                "series.dt.tz_localize('UTC'), pyarrow.compute.assume_timezone)"
            )
        elif have.tz is not None and want.tz is None:
            hint = (
                ": the column holds times without a zone; drop it from the values (pandas "
                "series.dt.tz_convert('UTC').dt.tz_localize(None), or a cast to "
                f"{pa.timestamp(have.unit)})"
            )
    elif pa.types.is_floating(have) and pa.types.is_integer(want):
        hint = (
            ": pandas stores an integer column with missing values (None) as float64 with NaN; "
            "give it pandas' nullable integer dtype (series.astype('Int64')), or give integers"
        )
    return ValidationError(
        f"column {path!r} has type {have}, which cannot be written as {want}{hint}"
    )


def _storage(t: pa.DataType) -> pa.DataType:
    return t.storage_type if isinstance(t, pa.BaseExtensionType) else t


#: Extension types whose storage values are what they stand for (uuids, WKB, JSON text).
_VALUE_EXTENSIONS = frozenset({"arrow.uuid", "geoarrow.wkb", "arrow.json"})


def _safe(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether casting ``have`` to ``want`` is a promotion (value-checked casts included)."""
    types = pa.types
    if isinstance(have, pa.BaseExtensionType) and have != want:
        # other extension types (a pandas Period's ordinals, ...) are not their storage's values
        return have.extension_name in _VALUE_EXTENSIONS and _safe(have.storage_type, want)
    have_s, want_s = _storage(have), _storage(want)
    if have_s == want_s:
        return True
    if types.is_integer(have) and types.is_integer(want):
        return True
    if types.is_floating(have) and types.is_floating(want):
        return bool(have.bit_width <= want.bit_width)
    if (types.is_string(have) or types.is_large_string(have) or types.is_string_view(have)) and (
        types.is_string(want) or types.is_large_string(want)
    ):
        return True
    if (types.is_binary(have) or types.is_large_binary(have) or types.is_binary_view(have)) and (
        types.is_binary(want_s) or types.is_large_binary(want_s)
    ):
        return True
    if types.is_fixed_size_binary(have) and types.is_fixed_size_binary(want_s):
        return bool(have.byte_width == want_s.byte_width)
    if types.is_timestamp(have) and types.is_timestamp(want):
        return (have.tz is None) == (want.tz is None)
    if types.is_date(have) and types.is_date(want):
        return True
    if types.is_time(have) and types.is_time(want):
        return True
    # decimals and integers into decimals: value-checked (see _to_decimal)
    return bool((types.is_decimal(have) or types.is_integer(have)) and types.is_decimal(want))
