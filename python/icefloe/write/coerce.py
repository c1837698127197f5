"""Arrow columns converted to a table column's exact type, by the write rules.

Only safe casts are made (see :func:`is_safe_cast`), values are checked where a cast or a type
alone cannot vouch for them (decimal precision, times within a day, well-formed WKB, required
fields, variants), and nested columns are rebuilt child by child. Anything else is a
:class:`~icefloe.exceptions.ValidationError` naming the column (its path for nested fields).
:mod:`icefloe.write.input` turns user data into Arrow and calls :func:`coerce_column` per column.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_fill import fill_under_null, typed_nulls
from icefloe.exceptions import ValidationError
from icefloe.geo import EXTENSION_NAME, parse_metadata, wkb_bounds
from icefloe.types import (
    DecimalType,
    GeographyType,
    GeometryType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    TimeType,
    UnknownType,
    VariantType,
)
from icefloe.values import field_default
from icefloe.variant import encode_column
from icefloe.write.input_decimals import to_decimal, within_precision

__all__ = ["check_geoarrow_type", "coerce_column", "is_list_layout", "is_safe_cast"]


def is_list_layout(have: pa.DataType) -> bool:
    """Whether ``have`` is one of the Arrow list layouts a list column is written from."""
    return bool(
        pa.types.is_list(have)
        or pa.types.is_large_list(have)
        or pa.types.is_fixed_size_list(have)
        or pa.types.is_list_view(have)
        or pa.types.is_large_list_view(have)
    )


def _coerce(col: pa.ChunkedArray, f: NestedField, af: pa.Field, path: str) -> pa.ChunkedArray:
    if isinstance(f.field_type, VariantType) and not pa.types.is_dictionary(col.type):
        # the whole column at once, so an error names its row in the column, not in a chunk
        out = _variant(col, af.type, path)
    else:
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


def coerce_column(
    col: pa.ChunkedArray, f: NestedField, af: pa.Field, *, from_pandas: bool = False
) -> pa.ChunkedArray:
    """``col`` as column ``f`` (Arrow field ``af``) holds it, by the write rules: only safe
    casts, values checked; anything else is a :class:`ValidationError` naming the column.
    ``from_pandas``: the column came from a pandas DataFrame, so a float column refused by an
    integer column gets pandas' fix in its message."""
    try:
        return _coerce(col, f, af, f.name)
    except ValidationError:
        if from_pandas and pa.types.is_floating(col.type) and pa.types.is_integer(af.type):
            raise _type_error(f.name, col.type, af.type, from_pandas=True) from None
        raise


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
    if isinstance(t, UnknownType):
        raise ValidationError(
            f"column {path!r} has Iceberg type unknown, which holds only nulls: got {have} "
            "values (give pyarrow.nulls(n), or leave the column out)"
        )
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
        if not is_list_layout(have):
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
    if not is_safe_cast(have, want):
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


def _variant(
    arr: pa.Array | pa.ChunkedArray, want: pa.DataType, path: str
) -> pa.Array | pa.ChunkedArray:
    """A column for a variant field: encoded structs (validated, shredded ones merged), JSON
    strings, or any other Arrow values cast value by value (see :func:`encode_column`); an
    array gives an array, a chunked array a chunked array."""
    try:
        out = encode_column(arr)
    except ValidationError as e:
        raise ValidationError(f"variant column {path!r}: {e}") from None
    if isinstance(arr, pa.ChunkedArray) and isinstance(out, pa.Array):
        out = pa.chunked_array([out])  # a column of nulls is encoded in one piece
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


def _fixed_width(t: pa.DataType) -> int | None:
    """The bytes of each value of a fixed-width binary column (uuids are 16), else None."""
    if getattr(t, "extension_name", None) == "arrow.uuid":
        return 16
    return t.byte_width if pa.types.is_fixed_size_binary(t) else None


def _type_error(
    path: str, have: pa.DataType, want: pa.DataType, from_pandas: bool = False
) -> ValidationError:
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
    elif pa.types.is_floating(have) and pa.types.is_integer(want) and from_pandas:
        hint = (
            ": pandas stores an integer column with missing values (None) as float64 with NaN; "
            "give it pandas' nullable integer dtype (series.astype('Int64')), or give integers"
        )
    elif pa.types.is_floating(have) and pa.types.is_integer(want):
        hint = (
            ": give integers (pyarrow.compute.cast(values, 'int64') converts floats that "
            "hold whole numbers and refuses the others)"
        )
    elif pa.types.is_float64(have) and pa.types.is_float32(want):
        hint = (
            ": icefloe never rounds doubles to 32-bit floats; give the values as float32 to "
            "store them rounded (pyarrow: a cast to a type with float32 there; pandas: "
            "astype('float32')), or make the column a double"
        )
    elif getattr(want, "extension_name", None) == "arrow.uuid" and (
        pa.types.is_string(have) or pa.types.is_large_string(have)
    ):
        hint = (
            ": text is not parsed as uuids; give uuid.UUID values "
            "(pyarrow.array([uuid.UUID(s) for s in texts], pyarrow.uuid())) or 16 bytes each "
            "as pyarrow.binary(16)"
        )
    elif (width := _fixed_width(want)) and (
        pa.types.is_binary(have) or pa.types.is_large_binary(have)
    ):
        hint = f": cast the values to pyarrow.binary({width}) (every value must have {width} bytes)"
    return ValidationError(
        f"column {path!r} has type {have}, which cannot be written as {want}{hint}"
    )


def _storage(t: pa.DataType) -> pa.DataType:
    return t.storage_type if isinstance(t, pa.BaseExtensionType) else t


#: Extension types whose storage values are what they stand for (uuids, WKB, JSON text).
_VALUE_EXTENSIONS = frozenset({"arrow.uuid", "geoarrow.wkb", "arrow.json"})


def is_safe_cast(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether casting ``have`` to ``want`` is a promotion (value-checked casts included)."""
    types = pa.types
    if isinstance(have, pa.BaseExtensionType) and have != want:
        # other extension types (a pandas Period's ordinals, ...) are not their storage's values
        return have.extension_name in _VALUE_EXTENSIONS and is_safe_cast(have.storage_type, want)
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
