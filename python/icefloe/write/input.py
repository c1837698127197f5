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
import numbers
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_fill import typed_nulls
from icefloe.arrow_schema import schema_to_arrow, type_to_arrow
from icefloe.exceptions import ValidationError
from icefloe.schema import Schema, walk_fields
from icefloe.types import (
    DoubleType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    NestedType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    VariantType,
)
from icefloe.values import column_default
from icefloe.variant import from_pylist
from icefloe.write.coerce import coerce_column, is_list_layout, is_safe_cast

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


def _from_pandas(data: Any, schema: Schema | None = None) -> pa.Table:
    """A DataFrame as Arrow (named index levels become columns); when Arrow's conversion
    fails, column by column, so that the error names the column, and a column Arrow cannot
    infer (integers beyond int64 for a decimal column) is converted as ``schema``'s type."""
    named = [n for n in getattr(data.index, "names", []) if n is not None]
    fields = {f.name: f for f in schema.fields} if schema is not None else {}
    try:
        if named:
            data = data.reset_index(level=named)
        table = pa.Table.from_pandas(data, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
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
            if _arrow_time(table.schema.field(i).type) and _python_objects(data[name]):
                _check_no_integer_times(name, data[name], f.field_type)
            if _map_inferred_otherwise(table.schema.field(i).type, f.field_type):
                values = data[name].tolist()
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
    if field is not None:
        # one pass over the values of a column holding structs or maps (none for others):
        # struct keys the table lacks refused (Arrow's typed conversion drops them, its
        # inference loses values when some dicts' keys are bytes), map entries given as
        # 2-element lists (JSON's pairs) made the tuples pyarrow takes
        values, changed = _prepared(name, values, field.field_type)
        if changed and from_pandas is None:
            from_pandas = original_from_pandas
    error: Exception | None = None
    try:
        inferred = pa.array(values, from_pandas=from_pandas)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
        error = e
    else:
        if pa.types.is_timestamp(inferred.type) and isinstance(values, list | tuple):
            _check_one_zone_kind(name, values, inferred.type.tz is not None)
        if field is not None and _python_objects(values) and _arrow_time(inferred.type):
            # pyarrow's inference takes integers after a time as times in its unit
            _check_no_integer_times(name, values, field.field_type)
        if field is None:
            return inferred
        numbers = _python_numbers_as(name, inferred, field.field_type)
        if numbers is not None:
            return numbers
        if not isinstance(field.field_type, NestedType):
            return _as_column_type(values, inferred, type_to_arrow(field.field_type), from_pandas)
        if not _map_inferred_otherwise(inferred.type, field.field_type):
            return inferred
        # dicts or pairs for a map (Arrow guessed a struct of the dicts' keys, or lists of
        # pairs whose keys and values share a type): converted as the column's type
    if field is not None:
        # pyarrow's conversion to the column's type takes integers as times in its unit
        _check_no_integer_times(name, values, field.field_type)
        try:
            # Python floats for a float field are converted as doubles, then checked to be
            # exact in 32 bits (pyarrow's own conversion would round them)
            typed = pa.array(
                values,
                type=_doubles_for_floats(type_to_arrow(field.field_type)),
                from_pandas=from_pandas,
            )
            numbers = _python_numbers_as(name, typed, field.field_type)
            return typed if numbers is None else numbers
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


#: The floating types Python numbers are converted to, with the magnitude up to which each
#: holds every integer exactly.
_FLOATING: dict[type[IcebergType], tuple[pa.DataType, int]] = {
    DoubleType: (pa.float64(), 2**53),
    FloatType: (pa.float32(), 2**24),
}


def _python_numbers_as(name: str, arr: pa.Array, t: IcebergType) -> pa.Array | None:
    """Python values Arrow converted to ``arr`` with the numbers given for ``double`` and
    ``float`` fields of type ``t``, at any depth (struct fields, list elements, map keys and
    values), converted to those fields' types: integers, and doubles for a ``float`` field.
    Each value must be exactly representable in its field's type, else
    :class:`ValidationError` names it and the path to it (icefloe never rounds). None when
    ``arr`` holds no such numbers."""
    want = _numbers_type(name, arr, t)
    return None if want is None else arr.cast(want)


def _numbers_type(path: str, arr: pa.Array, t: IcebergType) -> pa.DataType | None:
    """The type :func:`_python_numbers_as` casts ``arr`` (at ``path``, of field type ``t``) to,
    after checking its values; None when it stays as it is."""
    have = arr.type
    floating = _FLOATING.get(type(t))
    if floating is not None:
        want, exact = floating
        if pa.types.is_integer(have):
            _check_exact_ints(path, arr, t, exact)
            return want
        if pa.types.is_float64(have) and want == pa.float32():
            _check_exact_float32(path, arr, t)
            return want
        return None
    if isinstance(t, StructType) and pa.types.is_struct(have):
        types = {f.name: f.field_type for f in t.fields}
        fields, changed = [], False
        for i in range(have.num_fields):
            f = have.field(i)
            sub = None
            if f.name in types:
                sub = _numbers_type(f"{path}.{f.name}", arr.field(i), types[f.name])
            changed = changed or sub is not None
            fields.append(f if sub is None else f.with_type(sub))
        return pa.struct(fields) if changed else None
    if isinstance(t, ListType) and (pa.types.is_list(have) or pa.types.is_large_list(have)):
        sub = _numbers_type(f"{path}.element", arr.flatten(), t.element_type)
        if sub is None:
            return None
        element = have.value_field.with_type(sub)
        return pa.list_(element) if pa.types.is_list(have) else pa.large_list(element)
    if isinstance(t, MapType) and pa.types.is_map(have):
        key = _numbers_type(f"{path}.key", arr.keys, t.key_type)
        item = _numbers_type(f"{path}.value", arr.items, t.value_type)
        if key is None and item is None:
            return None
        return pa.map_(
            have.key_field.with_type(key or have.key_type),
            have.item_field.with_type(item or have.item_type),
            keys_sorted=have.keys_sorted,
        )
    return None


def _check_exact_ints(path: str, arr: pa.Array, t: IcebergType, exact: int) -> None:
    """Refuse integers beyond ``exact`` in magnitude for a floating field of type ``t``."""
    beyond = pc.or_(pc.greater(arr, exact), pc.less(arr, -exact))
    if pc.any(beyond).as_py():
        v = arr.filter(beyond)[0].as_py()
        raise ValidationError(
            f"column {path!r} ({t}): the integer {v} cannot be represented exactly as a {t} "
            f"(a {t} holds every integer up to 2**{exact.bit_length() - 1} in magnitude); "
            "icefloe never rounds: give it as a Python float to store it rounded"
        )


def _check_exact_float32(path: str, arr: pa.Array, t: IcebergType) -> None:
    """Refuse Python floats that a ``float`` (32-bit) field of type ``t`` would round."""
    back = arr.cast(pa.float32()).cast(pa.float64())
    differs = pc.and_(pc.not_equal(back, arr), pc.invert(pc.and_(pc.is_nan(back), pc.is_nan(arr))))
    if pc.any(differs).as_py():
        v = arr.filter(differs)[0].as_py()
        raise ValidationError(
            f"column {path!r} ({t}): {v!r} cannot be represented exactly as a 32-bit {t} "
            "(Python floats are 64-bit); icefloe never rounds: give the values as a pyarrow "
            "float32 array to store them rounded, or make the column a double"
        )


def _doubles_for_floats(t: pa.DataType) -> pa.DataType:
    """Arrow type ``t`` with ``float32`` made ``float64`` at any depth."""
    if pa.types.is_float32(t):
        return pa.float64()
    if pa.types.is_struct(t):
        return pa.struct(
            [
                t.field(i).with_type(_doubles_for_floats(t.field(i).type))
                for i in range(t.num_fields)
            ]
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        element = t.value_field.with_type(_doubles_for_floats(t.value_type))
        return pa.list_(element) if pa.types.is_list(t) else pa.large_list(element)
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_doubles_for_floats(t.key_type)),
            t.item_field.with_type(_doubles_for_floats(t.item_type)),
            keys_sorted=t.keys_sorted,
        )
    return t


def _map_inferred_otherwise(inferred: pa.DataType, t: IcebergType) -> bool:
    """Whether Arrow's inference made something else than a map where type ``t`` has one, at
    any depth: a struct (Python dicts given for a map) or a list (key-value pairs whose key
    and value are of one type, tuples or lists, inferred as lists): such values convert only
    as ``t``."""
    if isinstance(t, MapType):
        if (
            pa.types.is_struct(inferred)
            or pa.types.is_list(inferred)
            or pa.types.is_large_list(inferred)
        ):
            return True
        return pa.types.is_map(inferred) and (
            _map_inferred_otherwise(inferred.key_type, t.key_type)
            or _map_inferred_otherwise(inferred.item_type, t.value_type)
        )
    if isinstance(t, ListType):
        return (
            pa.types.is_list(inferred) or pa.types.is_large_list(inferred)
        ) and _map_inferred_otherwise(inferred.value_type, t.element_type)
    if isinstance(t, StructType) and pa.types.is_struct(inferred):
        given = {inferred.field(i).name: inferred.field(i).type for i in range(inferred.num_fields)}
        return any(
            f.name in given and _map_inferred_otherwise(given[f.name], f.field_type)
            for f in t.fields
        )
    return False


def _prepared(name: str, values: Iterable[Any], t: IcebergType) -> tuple[Any, bool]:
    """Column ``name``'s Python ``values`` for type ``t``, ready for ``pyarrow.array`` with
    ``t``'s Arrow type, in one pass over them, and whether any value changed: each map entry
    given as a 2-element list (as JSON decoding gives pairs) made a ``(key, value)`` tuple, at
    any depth (pyarrow takes only tuples and dicts for a map), a dict given for a struct with
    a key that is not one of its fields refused (pyarrow's typed conversion drops it), and one
    with ``bytes`` keys given them as text (pyarrow reads every dict's keys as the first one's
    kind, losing the values of the others).
    ``values`` itself when none changed, without a pass when ``t`` holds no map or struct.
    An entry that is not a pair, a pair with a null key (pyarrow's conversion aborts the
    process on a null entry), a map given as something else than a dict or a sequence of
    pairs, or an unknown struct key raises :class:`ValidationError` naming the column and the
    path to it; lists that are list values are left as they are."""
    convert = _converter(name, name, t)
    if convert is None:
        return values, False
    out = []
    changed = False
    for v in values:
        new = convert(v)
        changed = changed or new is not v
        out.append(new)
    return (out, True) if changed else (values, False)


_TIME_TYPES = (TimeType, TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)


def _is_time(t: pa.DataType) -> bool:
    return bool(pa.types.is_timestamp(t) or pa.types.is_time(t))


def _python_objects(values: Any) -> bool:
    """Whether ``values`` are Python objects (a list, a tuple, an object-dtype pandas Series
    or NumPy array), of which pyarrow converts integers after times as times."""
    return isinstance(values, list | tuple) or str(getattr(values, "dtype", "")) == "object"


def _arrow_time(t: pa.DataType) -> bool:
    """Whether Arrow type ``t`` has a time or timestamp at any depth."""
    if _is_time(t):
        return True
    if pa.types.is_struct(t):
        return any(_arrow_time(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _arrow_time(t.key_type) or _arrow_time(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _arrow_time(t.value_type)
    return False


def _holds_time(t: IcebergType) -> bool:
    if isinstance(t, _TIME_TYPES):
        return True
    return isinstance(t, NestedType) and any(_holds_time(f.field_type) for f in t.fields)


def _check_no_integer_times(name: str, values: Iterable[Any], t: IcebergType) -> None:
    """Refuse a Python integer given for a time or timestamp anywhere in column ``name``'s
    ``values`` of type ``t`` (pyarrow would take it in the column's unit, so epoch seconds or
    milliseconds would silently become times in 1970), naming the column."""
    if not _holds_time(t):
        return
    if isinstance(t, _TIME_TYPES) and not any(  # the types present, found at C speed
        issubclass(k, numbers.Integral) for k in set(map(type, values))
    ):
        return
    for v in values:
        found = _integer_time(v, t)
        if found is not None:
            raise ValidationError(
                f"column {name!r} ({t}): {_shown_value(found)} is an integer, not a time: give "
                "datetime values (or a pyarrow timestamp array), since a number has no unit"
            )


def _integer_time(v: Any, t: IcebergType) -> Any:
    """The first integer in value ``v`` of type ``t`` where ``t`` has a time, else None."""
    if v is None:
        return None
    if isinstance(t, _TIME_TYPES):
        return v if isinstance(v, numbers.Integral) else None
    if not _holds_time(t) or isinstance(v, str | bytes):
        return None
    items: Iterable[tuple[Any, IcebergType]]
    if isinstance(t, StructType):
        if not isinstance(v, Mapping):
            return None
        items = ((v.get(f.name), f.field_type) for f in t.fields)
    elif isinstance(t, ListType):
        if not isinstance(v, Iterable):
            return None
        items = ((x, t.element_type) for x in v)
    elif isinstance(t, MapType):
        pairs = v.items() if isinstance(v, Mapping) else v
        if not isinstance(pairs, Iterable):
            return None
        items = (
            (part, typ)
            for pair in pairs
            if isinstance(pair, tuple | list) and len(pair) == 2
            for part, typ in zip(pair, (t.key_type, t.value_type), strict=True)
        )
    else:
        return None
    for x, xt in items:
        found = _integer_time(x, xt)
        if found is not None:
            return found
    return None


_Convert = Callable[[Any], Any]


def _converter(column: str, path: str, t: IcebergType) -> _Convert | None:
    """The function :func:`_prepared` applies to one value of type ``t`` at ``path``; None
    when ``t`` holds no map or struct (its values are left as they are)."""
    if isinstance(t, MapType):
        key = _converter(column, f"{path}.key", t.key_type)
        value = _converter(column, f"{path}.value", t.value_type)
        at = "" if path == column else f" at {path}"
        return lambda v: _map_entries(column, at, v, key, value)
    if isinstance(t, ListType):
        element = _converter(column, f"{path}.element", t.element_type)
        return None if element is None else lambda v: _list_elements(v, element)
    if isinstance(t, StructType):
        return _struct_converter(column, path, t)
    return None


def _shown_value(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


#: pandas' null markers by type name: the top-level module that defines each
_PANDAS_NULLS = {"NAType": "pandas", "NaTType": "pandas"}


def _map_entries(column: str, at: str, v: Any, key: _Convert | None, value: _Convert | None) -> Any:
    """A map value ``v`` of column ``column`` (``at``: where in it, for errors) with its
    entries as ``(key, value)`` tuples (``key`` and ``value`` convert maps inside them), see
    :func:`_prepared`."""
    if v is None:
        return v
    if key is None and value is None and type(v) is list:
        for entry in v:  # the common case (tuples of primitives), checked without copying
            if type(entry) is not tuple or len(entry) != 2 or entry[0] is None:
                break
        else:
            _check_unique_keys(column, at, v)
            return v
    if isinstance(v, Mapping):
        if value is None:
            return v
        items = {k: value(x) for k, x in v.items()}
        return v if all(items[k] is x for k, x in v.items()) else items
    if isinstance(v, float) and v != v:  # NaN: null in pandas values, else pyarrow refuses it
        return v
    if _PANDAS_NULLS.get(type(v).__name__) == type(v).__module__.split(".")[0]:
        return v  # pd.NA, pd.NaT: null in pandas values (pandas is not imported for this)
    if isinstance(v, str | bytes | bytearray) or not isinstance(v, Iterable):
        raise ValidationError(
            f"column {column!r}: {_shown_value(v)}{at} is a {type(v).__name__}, not a map: "
            "give a dict or a list of (key, value) pairs"
        )
    pairs = []
    for entry in v:
        if not isinstance(entry, tuple | list) or len(entry) != 2:
            raise ValidationError(
                f"column {column!r}: map entry {_shown_value(entry)}{at} is not a "
                "(key, value) pair: give each entry as a 2-element tuple or list, or the map "
                "as a dict"
            )
        k, x = entry
        if k is None:
            raise ValidationError(
                f"column {column!r}: map entry {_shown_value(entry)}{at} has a null key "
                "(map keys cannot be null)"
            )
        pairs.append((k if key is None else key(k), x if value is None else value(x)))
    _check_unique_keys(column, at, pairs)
    return pairs


def _check_unique_keys(column: str, at: str, pairs: list[Any]) -> None:
    """Refuse a map given as ``(key, value)`` pairs with a key twice: engines disagree on
    such a map (Iceberg Java keeps the last value, DuckDB refuses to read the table)."""
    if len(pairs) < 2:
        return
    try:
        seen = len({k for k, _ in pairs})
    except TypeError:  # struct keys given as dicts: compared as their items
        seen = len({repr(k) for k, _ in pairs})
    if seen == len(pairs):
        return
    found: set[Any] = set()
    for k, _ in pairs:
        mark = k if not isinstance(k, dict | list) else repr(k)
        if mark in found:
            raise ValidationError(
                f"column {column!r}: map key {_shown_value(k)}{at} is given twice (map keys "
                "must be unique)"
            )
        found.add(mark)


def _list_elements(v: Any, element: _Convert) -> Any:
    """A list value ``v`` with the maps and structs in its elements converted by ``element``."""
    if type(v) is list:  # the common case: copied only once an element changes
        for i, e in enumerate(v):
            new = element(e)
            if new is not e:
                return [*v[:i], new, *map(element, v[i + 1 :])]
        return v
    if v is None or isinstance(v, str | bytes | bytearray | Mapping) or not isinstance(v, Iterable):
        return v  # null, or not a list: pyarrow's conversion refuses it
    elements = [element(e) for e in v]
    if isinstance(v, Sized) and all(a is b for a, b in zip(elements, v, strict=False)):
        return v
    return elements


def _struct_converter(column: str, path: str, t: StructType) -> _Convert:
    """The converter of a struct value of type ``t`` at ``path`` of column ``column``: a dict
    with a key that is not one of the struct's fields is refused; the maps and structs in its
    fields' values are converted. Anything else (null, a tuple of field values, as pyarrow
    takes them) is left as it is."""
    known = frozenset(f.name for f in t.fields)
    fields = {
        f.name: c
        for f in t.fields
        if (c := _converter(column, f"{path}.{f.name}", f.field_type)) is not None
    }

    def convert(v: Any) -> Any:
        if type(v) is not dict and not isinstance(v, Mapping):
            return v
        if not v.keys() <= known:
            v = _named_by_text(column, path, t, known, v)
        if not fields:
            return v
        out = {k: fields[k](x) if k in fields else x for k, x in v.items()}
        return v if all(out[k] is x for k, x in v.items()) else out

    return convert


def _named_by_text(
    column: str, path: str, t: StructType, known: frozenset[str], v: Mapping[Any, Any]
) -> dict[str, Any]:
    """Struct value ``v`` (a dict with a key not in ``known``, its type ``t``'s field names)
    with its ``bytes`` keys that are UTF-8 field names as those names (Arrow reads a dict's keys
    as bytes or as text after the first dict it sees, losing the other kind's values); any
    other key, or a field given twice, raises :class:`ValidationError`."""
    out: dict[str, Any] = {}
    for key, x in v.items():
        name = key.decode(errors="replace") if isinstance(key, bytes) else key
        if not isinstance(name, str) or name not in known:
            at = f"{path}.{key}" if isinstance(key, str) else f"{path}[{key!r}]"
            raise ValidationError(
                f"column {column!r}: input field {at} is not in the table schema (the fields "
                f"of {path}: {', '.join(f.name for f in t.fields)})"
            )
        if name in out:
            raise ValidationError(
                f"column {column!r}: struct {path!r} has field {name!r} more than once (as "
                "text and as bytes)"
            )
        out[name] = x
    return out


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
    if pa.types.is_integer(inferred.type) and _is_time(want):
        return inferred  # refused by the write, as Arrow integers are: of which unit?
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
