"""Python values (a mapping's lists, pandas object columns) made ready for Arrow's conversion
to a table's types, in one pass per column and only for columns that need it: map entries given
as 2-element lists (as JSON decoding gives them) made ``(key, value)`` tuples, struct dicts
checked against the struct's fields, repeated map keys and integers given for times refused,
and Python numbers for ``double`` and ``float`` fields converted alike at any depth when exact.
Every refusal is a :class:`~icefloe.exceptions.ValidationError` naming the column."""

from __future__ import annotations

import datetime
import decimal
import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sized
from operator import attrgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import ValidationError
from icefloe.types import (
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
)

__all__ = [
    "arrow_time",
    "check_leaves",
    "doubles_for_floats",
    "is_time",
    "map_inferred_otherwise",
    "needs_preparing",
    "prepared",
    "python_numbers_as",
    "python_objects",
]


#: the Arrow type of a floating field and the largest integer magnitude it holds exactly
_FLOATING: dict[type[IcebergType], tuple[pa.DataType, int]] = {
    DoubleType: (pa.float64(), 2**53),
    FloatType: (pa.float32(), 2**24),
}


def python_numbers_as(name: str, arr: pa.Array, t: IcebergType) -> pa.Array | None:
    """Python values Arrow converted to ``arr`` with the numbers given for ``double`` and
    ``float`` fields of type ``t``, at any depth (struct fields, list elements, map keys and
    values), converted to those fields' types: integers, and doubles for a ``float`` field.
    Each value must be exactly representable in its field's type, else
    :class:`ValidationError` names it and the path to it (icefloe never rounds). None when
    ``arr`` holds no such numbers."""
    want = _numbers_type(name, arr, t)
    return None if want is None else arr.cast(want)


def _numbers_type(path: str, arr: pa.Array, t: IcebergType) -> pa.DataType | None:
    """The type :func:`python_numbers_as` casts ``arr`` (at ``path``, of field type ``t``) to,
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


def doubles_for_floats(t: pa.DataType) -> pa.DataType:
    """Arrow type ``t`` with ``float32`` made ``float64`` at any depth."""
    if pa.types.is_float32(t):
        return pa.float64()
    if pa.types.is_struct(t):
        return pa.struct(
            [t.field(i).with_type(doubles_for_floats(t.field(i).type)) for i in range(t.num_fields)]
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        element = t.value_field.with_type(doubles_for_floats(t.value_type))
        return pa.list_(element) if pa.types.is_list(t) else pa.large_list(element)
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(doubles_for_floats(t.key_type)),
            t.item_field.with_type(doubles_for_floats(t.item_type)),
            keys_sorted=t.keys_sorted,
        )
    return t


def map_inferred_otherwise(inferred: pa.DataType, t: IcebergType) -> bool:
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
            map_inferred_otherwise(inferred.key_type, t.key_type)
            or map_inferred_otherwise(inferred.item_type, t.value_type)
        )
    if isinstance(t, ListType):
        return (
            pa.types.is_list(inferred) or pa.types.is_large_list(inferred)
        ) and map_inferred_otherwise(inferred.value_type, t.element_type)
    if isinstance(t, StructType) and pa.types.is_struct(inferred):
        given = {inferred.field(i).name: inferred.field(i).type for i in range(inferred.num_fields)}
        return any(
            f.name in given and map_inferred_otherwise(given[f.name], f.field_type)
            for f in t.fields
        )
    return False


def prepared(name: str, values: Iterable[Any], t: IcebergType) -> tuple[Any, bool]:
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


def needs_preparing(values: list[Any], t: IcebergType) -> bool:
    """Whether Python ``values`` of type ``t`` must go through :func:`prepared` before pyarrow
    infers their types: a dict for a struct, at any depth, has a key that is not text (pyarrow
    reads every dict's keys as the first one's kind, losing the values of the others). Struct
    keys the table lacks are refused by the write after inference, and map pairs are only
    converted when pyarrow converts to the column's type; both are looked at column-wise."""
    if not _holds_struct(t):
        return False
    others = [v for v in values if v is not None and type(v) not in _PLAIN]
    if isinstance(t, StructType):
        if {type(k) for v in values if type(v) is dict for k in v} - {str}:
            return True
        mappings = [v for v in others if isinstance(v, Mapping)]
        if any(type(k) is not str for v in mappings for k in v):
            return True
        return any(
            needs_preparing(
                [v.get(f.name) for v in values if type(v) is dict]
                + [v.get(f.name) for v in mappings],
                f.field_type,
            )
            for f in t.fields
            if _holds_struct(f.field_type)
        )
    if isinstance(t, ListType):
        got = [x for v in values if type(v) in _SEQUENCES for x in v]
        got += [
            x
            for v in others
            if not isinstance(v, str | bytes | Mapping) and isinstance(v, Iterable)
            for x in v
        ]
        return needs_preparing(got, t.element_type)
    if isinstance(t, MapType):
        items = [x for v in values if type(v) is dict for x in v.values()]
        pairs = [p for v in values if type(v) in _SEQUENCES for p in v]
        items += [p[1] for p in pairs if type(p) in _SEQUENCES and len(p) == 2]
        keys = [k for v in values if type(v) is dict for k in v]
        keys += [p[0] for p in pairs if type(p) in _SEQUENCES and len(p) == 2]
        return needs_preparing(keys, t.key_type) or needs_preparing(items, t.value_type)
    return False


def _holds_struct(t: IcebergType) -> bool:
    if isinstance(t, StructType):
        return True
    return isinstance(t, NestedType) and any(_holds_struct(f.field_type) for f in t.fields)


_TIME_TYPES = (TimeType, TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)


def is_time(t: pa.DataType) -> bool:
    return bool(pa.types.is_timestamp(t) or pa.types.is_time(t))


def python_objects(values: Any) -> bool:
    """Whether ``values`` are Python objects (a list, a tuple, an object-dtype pandas Series
    or NumPy array), of which pyarrow converts integers after times as times."""
    return isinstance(values, list | tuple) or str(getattr(values, "dtype", "")) == "object"


def arrow_time(t: pa.DataType) -> bool:
    """Whether Arrow type ``t`` has a time, timestamp or date at any depth."""
    if is_time(t) or pa.types.is_date(t):
        return True
    if pa.types.is_struct(t):
        return any(arrow_time(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return arrow_time(t.key_type) or arrow_time(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return arrow_time(t.value_type)
    return False


def check_leaves(
    name: str,
    values: Iterable[Any],
    t: IcebergType,
    typed: bool = False,
    zones: bool | None = None,
) -> None:
    """Refuse, naming column ``name``, a Python value that pyarrow would convert to type
    ``t`` (at any depth) as something else: an integer for a time, timestamp or date (taken
    in the column's unit: epoch seconds or milliseconds would become times in 1970), a naive
    datetime for a zoned timestamp (read as UTC) or a zoned one for a timestamp without a
    zone (stored as its UTC wall time), a datetime for a date (its time of day dropped), and,
    when pyarrow converts to ``t`` itself (``typed``: it does not when it infers the values'
    types), a float that is not a whole number for an int or long (truncated). ``zones``:
    whether a column of times (not nested) has its zone kinds checked (the default: when
    ``typed``; pyarrow's inference of a list types every time as the first one).
    The values at each depth are gathered column-wise and looked at by the set of their types,
    so a column of valid values costs a few list passes, not a Python call per value."""
    if not _checked(t, typed):
        return
    # a column of times (not nested) that pyarrow infers has one zone kind, which the write
    # checks against the column's with its hints; values mixing kinds are refused before
    if zones is None:
        zones = typed or isinstance(t, NestedType)
    found = _leaf_problem(values if type(values) is list else list(values), t, typed, zones)
    if found is not None:
        raise ValidationError(f"column {name!r} ({t}): {found}")


_ZONED = (TimestamptzType, TimestamptzNanoType)
_WHOLE = (IntegerType, LongType)
_DATED = (*_TIME_TYPES, DateType)
_SEQUENCES = (list, tuple)


def _checked(t: IcebergType, typed: bool) -> bool:
    """Whether type ``t`` has, at any depth, a leaf :func:`check_leaves` checks."""
    if isinstance(t, _DATED):
        return True
    if isinstance(t, _WHOLE):
        return typed
    return isinstance(t, NestedType) and any(_checked(f.field_type, typed) for f in t.fields)


def _leaf_problem(vals: list[Any], t: IcebergType, typed: bool, zones: bool = True) -> str | None:
    """Why a value in ``vals`` (Python values of type ``t``, nulls included) is refused
    (``zones``: datetimes whose zone kind is not the column's too)."""
    if isinstance(t, (*_DATED, *_WHOLE)):
        return _leaves_refused(vals, t, typed, zones)
    if not _checked(t, typed):
        return None
    others = [v for v in vals if v is not None and type(v) not in _PLAIN]
    parts: list[tuple[list[Any], IcebergType]] = []
    if isinstance(t, StructType):
        for f in t.fields:
            if _checked(f.field_type, typed):
                got = [v.get(f.name) for v in vals if type(v) is dict]
                got += [v.get(f.name) for v in others if isinstance(v, Mapping)]
                parts.append((got, f.field_type))
    elif isinstance(t, ListType):
        got = [x for v in vals if type(v) in _SEQUENCES for x in v]
        got += [
            x
            for v in others
            if not isinstance(v, str | bytes | Mapping) and isinstance(v, Iterable)
            for x in v
        ]
        parts.append((got, t.element_type))
    elif isinstance(t, MapType):
        keys = [k for v in vals if type(v) is dict for k in v]
        items = [x for v in vals if type(v) is dict for x in v.values()]
        pairs = [p for v in vals if type(v) in _SEQUENCES for p in v]
        pairs += [p for v in others if isinstance(v, Mapping) for p in v.items()]
        pairs = [p for p in pairs if type(p) in _SEQUENCES and len(p) == 2]
        parts.append((keys + [p[0] for p in pairs], t.key_type))
        parts.append((items + [p[1] for p in pairs], t.value_type))
    for got, child in parts:
        found = _leaf_problem(got, child, typed)
        if found is not None:
            return found
    return None


#: the containers :func:`_leaf_problem` takes apart without asking about their kind
_PLAIN = (dict, list, tuple)


def _leaves_refused(vals: list[Any], t: IcebergType, typed: bool, zones: bool) -> str | None:
    """Why a value of leaf type ``t`` in ``vals`` is refused, from the set of their types."""
    kinds = set(map(type, vals))
    if isinstance(t, _WHOLE):
        if typed and any(_may_have_a_fraction(k) for k in kinds):
            for v in vals:
                if _may_have_a_fraction(type(v)) and not _whole(v):
                    return f"{_shown_value(v)} is not a whole number (it would be cut to one)"
        return None
    if any(issubclass(k, numbers.Integral) for k in kinds):
        what = "date" if isinstance(t, DateType) else "time"
        v = next(v for v in vals if isinstance(v, numbers.Integral))
        return (
            f"{_shown_value(v)} is an integer, not a {what}: give {what} values (or a pyarrow "
            "array of the column's type), since a number has no unit"
        )
    if isinstance(t, TimeType) or not any(issubclass(k, datetime.datetime) for k in kinds):
        return None
    # pandas' NaT is a datetime that is not equal to itself: null
    stamps = [v for v in vals if isinstance(v, datetime.datetime) and v == v]
    if isinstance(t, DateType):
        for v in stamps:  # a naive midnight is the date it names
            if v.tzinfo is not None or v.time() != datetime.time():
                return (
                    f"{_shown_value(v)} is a datetime, not a date: give date values (its time "
                    "of day would be dropped)"
                )
        return None
    if not zones:
        return None
    found = set(map(attrgetter("tzinfo"), stamps))
    if isinstance(t, _ZONED) and None in found:
        v = next(v for v in stamps if v.tzinfo is None)
        return (
            f"{_shown_value(v)} has no time zone; say which one it is in (datetime's "
            "replace(tzinfo=...), pandas tz_localize('UTC')): a naive time is never read as UTC"
        )
    if not isinstance(t, _ZONED) and found - {None}:
        v = next(v for v in stamps if v.tzinfo is not None)
        return (
            f"{_shown_value(v)} has a zone, and the column holds times without a zone; drop it "
            "from the values (datetime's replace(tzinfo=None) after converting to UTC)"
        )
    return None


def _may_have_a_fraction(kind: type) -> bool:
    """Whether numbers of Python type ``kind`` may not be whole (floats, NumPy floats,
    fractions, decimals; not integers or bools)."""
    if issubclass(kind, numbers.Integral):
        return False
    return issubclass(kind, numbers.Real | decimal.Decimal)


def _whole(v: Any) -> bool:
    """Whether number ``v`` is whole (NaN: left to the conversion, which refuses it or makes
    it null as pandas means it)."""
    try:
        if v != v:
            return True
        return bool(v == int(v))
    except (ArithmeticError, ValueError, TypeError):  # infinities, signalling NaNs
        return False


_Convert = Callable[[Any], Any]


def _converter(column: str, path: str, t: IcebergType) -> _Convert | None:
    """The function :func:`prepared` applies to one value of type ``t`` at ``path``; None
    when ``t`` holds no map or struct (its values are left as they are)."""
    if isinstance(t, MapType):
        key = _converter(column, f"{path}.key", t.key_type)
        value = _converter(column, f"{path}.value", t.value_type)
        at = "" if path == column else f" at {path}"
        floats = isinstance(t.key_type, FloatType | DoubleType)
        return lambda v: _map_entries(column, at, v, key, value, floats)
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


def _map_entries(
    column: str,
    at: str,
    v: Any,
    key: _Convert | None,
    value: _Convert | None,
    floats: bool = False,
) -> Any:
    """A map value ``v`` of column ``column`` (``at``: where in it, for errors) with its
    entries as ``(key, value)`` tuples (``key`` and ``value`` convert maps inside them), see
    :func:`prepared`."""
    if v is None:
        return v
    if key is None and value is None and type(v) is list:
        for entry in v:  # the common case (tuples of primitives), checked without copying
            if type(entry) is not tuple or len(entry) != 2 or entry[0] is None:
                break
        else:
            _check_unique_keys(column, at, v, floats)
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
    _check_unique_keys(column, at, pairs, floats)
    return pairs


def _check_unique_keys(column: str, at: str, pairs: list[Any], floats: bool = False) -> None:
    """Refuse a map given as ``(key, value)`` pairs with a key twice: engines disagree on
    such a map (Iceberg Java keeps the last value, DuckDB refuses to read the table).
    ``floats``: the keys are floating (0.0 and -0.0 are two keys there)."""
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
        mark = _key_mark(k, floats)
        if mark in found:
            raise ValidationError(
                f"column {column!r}: map key {_shown_value(k)}{at} is given twice (map keys "
                "must be unique)"
            )
        found.add(mark)


def _key_mark(k: Any, floats: bool) -> Any:
    """What map key ``k`` is compared as: keys Python finds equal that Arrow stores apart are
    told apart (-0.0 from 0 and 0.0 as floating keys, a bool from the integer it equals, which
    the conversion refuses for a number key); dicts and lists by their text."""
    if isinstance(k, dict | list):
        return ("text", repr(k))
    if type(k) is bool:
        return ("bool", k)
    if floats and isinstance(k, float) and k == 0.0 and math.copysign(1.0, k) < 0:
        return ("negative zero",)
    return k


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
