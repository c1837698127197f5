"""Variant values: encoding Python values and JSON into the Parquet Variant binary format and back.

A ``variant`` column is stored (and read back) as ``struct<metadata: binary, value: binary>``,
the unshredded Parquet form; the bytes follow Parquet's ``VariantEncoding.md``. All encoding and
decoding runs in Rust (the arrow-rs ``parquet-variant`` crates), a whole array per call.

Scalars::

    v = variant.from_python({"a": 1, "tags": ["x", "y"]})   # -> Variant(metadata, value)
    variant.to_python(v.metadata, v.value)                 # -> {"a": 1, "tags": ["x", "y"]}
    variant.from_json('{"a": 1}').to_json()                 # -> '{"a":1}'

Columns (Arrow arrays or chunked arrays, or Python sequences)::

    col = variant.from_pylist([{"a": 1}, [1, 2], None])    # None is a null row
    col = variant.from_json(pa.array(['{"a": 1}', None]))
    variant.to_pylist(col); variant.to_json(col)

Python to variant: ``None`` -> variant null (a null *row* at the top level of
:func:`from_pylist`), ``bool``, ``int`` (the smallest of int8..int64, a decimal(38, 0) beyond),
``float`` -> double, ``str``, ``bytes``, ``dict`` with ``str`` keys -> object, ``list``/``tuple``
-> array, ``datetime`` (naive -> timestamp_ntz, aware -> timestamp in UTC; a
``pandas.Timestamp`` with nanoseconds -> the nanosecond timestamp types), ``date``, naive
``time``, ``Decimal`` (up to 38 digits), ``UUID``. Decoding returns the same Python types (int8
to int64 all as ``int``, float as ``float``); nanosecond timestamps with a non-zero sub-microsecond
part have no exact ``datetime`` and raise: read them with :func:`to_json`.

Values may be nested to any depth (the Variant encoding sets no limit): validation, decoding
(:func:`to_python`, :func:`to_pylist`, :func:`to_json`) and JSON parsing do not recurse. Python
values given to :func:`from_python`/:func:`from_pylist` may nest up to 500 levels; deeper (or
self-referencing) values raise :class:`~icefloe.exceptions.ValidationError`.

Malformed bytes raise :class:`~icefloe.exceptions.ValidationError`; shredded columns (with a
``typed_value`` field, as Spark or DuckDB may write them) are merged back into ``value`` first.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe import _native
from icefloe.exceptions import ValidationError

__all__ = [
    "STORAGE_TYPE",
    "Variant",
    "encode_column",
    "from_arrow",
    "from_json",
    "from_pylist",
    "from_python",
    "normalize",
    "to_json",
    "to_pylist",
    "to_python",
]

#: The Arrow storage of a variant column.
STORAGE_TYPE = pa.struct(
    [pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary())]
)

#: What a variant's metadata and value bytes may be given as.
_BYTES = (bytes, bytearray, memoryview)


@dataclass(frozen=True)
class Variant:
    """One encoded variant value: its metadata (the field-name dictionary) and value bytes."""

    metadata: bytes
    value: bytes

    def __post_init__(self) -> None:
        for name in ("metadata", "value"):
            got = getattr(self, name)
            if not isinstance(got, _BYTES):
                raise ValidationError(f"a Variant's {name} is bytes, got {_kind(got)}")
            object.__setattr__(self, name, bytes(got))

    def to_python(self) -> Any:
        """The value as Python objects."""
        return to_python(self.metadata, self.value)

    def to_json(self) -> str:
        """The value as JSON text."""
        return to_json(self.metadata, self.value)


ArrayLike: TypeAlias = pa.Array | pa.ChunkedArray


def _kind(value: object) -> str:
    """``value`` named for an error message: its type, and the value when it is short."""
    text = repr(value)
    return f"{type(value).__name__} {text}" if len(text) <= 40 else type(value).__name__


def _arrow_arg(data: object, fn: str, chunked: bool = True) -> None:
    """A :class:`ValidationError` unless ``data`` is a pyarrow Array (or ChunkedArray)."""
    kinds = (pa.Array, pa.ChunkedArray) if chunked else (pa.Array,)
    if not isinstance(data, kinds):
        what = "a pyarrow Array or ChunkedArray" if chunked else "a pyarrow Array"
        raise ValidationError(
            f"icefloe.variant.{fn} takes {what}, got {_kind(data)} (from_python and "
            "from_pylist take Python values, to_python and to_json one variant's bytes)"
        )


def _chunks(arr: ArrayLike) -> list[pa.Array]:
    return list(arr.chunks) if isinstance(arr, pa.ChunkedArray) else [arr]


def _per_chunk(fn: Any, arr: ArrayLike, out_type: pa.DataType = STORAGE_TYPE) -> ArrayLike:
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([fn(c) for c in arr.chunks], type=out_type)
    out: pa.Array = fn(arr)
    return out


def _one(col: pa.Array) -> Variant:
    s = col[0]
    return Variant(s["metadata"].as_py(), s["value"].as_py())


def _scalar_array(metadata: bytes, value: bytes) -> pa.StructArray:
    return pa.StructArray.from_arrays(
        [pa.array([metadata], pa.binary()), pa.array([value], pa.binary())],
        fields=list(STORAGE_TYPE),
    )


def _from_python(values: Sequence[Any], null_rows: bool) -> pa.StructArray:
    try:
        out: pa.StructArray = _native.variant_from_python(values, null_rows=null_rows)
    except UnicodeEncodeError as e:
        raise ValidationError(f"a variant string must be valid Unicode: {e.reason}") from None
    return out


def from_python(obj: Any) -> Variant:
    """One Python value (see the module docs for the type mapping) as a variant."""
    return _one(_from_python([obj], null_rows=False))


def from_pylist(values: Iterable[Any]) -> pa.StructArray:
    """A variant column from Python values; ``None`` items are null rows."""
    if isinstance(
        values, str | bytes | bytearray | Mapping | pa.Array | pa.ChunkedArray
    ) or not isinstance(values, Iterable):
        # a string or bytes was one row per character or byte, a dict one per key
        raise ValidationError(
            "icefloe.variant.from_pylist takes a list of Python values, one per row, got "
            f"{_kind(values)} (from_python encodes one value, from_arrow an Arrow array)"
        )
    return _from_python(values if isinstance(values, Sequence) else list(values), True)


@overload
def from_json(data: str) -> Variant: ...
@overload
def from_json(data: ArrayLike | Sequence[str | None]) -> ArrayLike: ...
def from_json(data: str | ArrayLike | Sequence[str | None]) -> Variant | ArrayLike:
    """JSON text as a variant: one ``str`` gives a :class:`Variant`; an array or sequence of
    strings gives a variant column (null strings are null rows). Numbers are stored as Spark's
    ``parse_json`` stores them: integers as the smallest integer type that holds them (beyond
    64 bits a decimal), numbers with a fraction and no exponent as decimals of the smallest
    width whose precision holds their digits and scale (up to 38 of each), other numbers as
    doubles. Invalid JSON, and an object naming a key twice, is a :class:`ValidationError`
    naming the row."""
    if isinstance(data, str):
        return _one(_native.variant_from_json(pa.array([data], pa.string())))
    if not isinstance(data, pa.Array | pa.ChunkedArray):
        if isinstance(data, bytes | bytearray | Mapping) or not isinstance(data, Iterable):
            raise ValidationError(
                "icefloe.variant.from_json takes JSON text (a str), or strings as a list or "
                f"an Arrow array, got {_kind(data)}"
                + (" (decode bytes to str first)" if isinstance(data, bytes | bytearray) else "")
            )
        texts = list(data)
        bad = next((t for t in texts if t is not None and not isinstance(t, str)), None)
        if bad is not None:
            raise ValidationError(
                f"icefloe.variant.from_json takes JSON texts (str, or None for a null row), "
                f"got {_kind(bad)} among them"
            )
        data = pa.array(texts, pa.string())
    if isinstance(data, pa.ChunkedArray):  # errors name rows of the whole column
        starts = itertools.accumulate((len(c) for c in data.chunks), initial=0)
        return pa.chunked_array(
            [_native.variant_from_json(c, s) for c, s in zip(data.chunks, starts, strict=False)],
            type=STORAGE_TYPE,
        )
    out: pa.StructArray = _native.variant_from_json(data)
    return out


def from_arrow(data: ArrayLike) -> ArrayLike:
    """Each value of any Arrow array as a variant, as its Python value would be: structs and
    maps become objects (a null field or map value a variant null under its key), lists
    arrays, ``arrow.uuid`` values uuids. A struct or map naming a key twice is refused.

    A variant time holds microseconds: nanosecond times must be whole microseconds."""
    _arrow_arg(data, "from_arrow")
    if isinstance(data.type, pa.UuidType):
        return _per_chunk(_uuids, data)
    chunks = data.chunks if isinstance(data, pa.ChunkedArray) else [data]
    for chunk in chunks:
        _check_times(chunk)
    return _per_chunk(_native.variant_from_arrow, data)


#: Variant metadata with an empty dictionary, and the header byte of a uuid value.
_EMPTY_METADATA = b"\x01\x00\x00"
_UUID_HEADER = 20 << 2


def _uuids(arr: pa.Array) -> pa.StructArray:
    """``arrow.uuid`` values as variant uuids (the header byte, then the 16 bytes), at once."""
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    n = len(storage)
    start = storage.offset * 16
    raw = np.frombuffer(storage.buffers()[1], np.uint8, count=16 * n, offset=start)
    value = np.empty((n, 17), np.uint8)
    value[:, 0] = _UUID_HEADER
    value[:, 1:] = raw.reshape(n, 16)
    nulls = storage.is_null()
    values = pa.FixedSizeBinaryArray.from_buffers(pa.binary(17), n, [None, pa.py_buffer(value)])
    return pa.StructArray.from_arrays(
        [
            pa.repeat(pa.scalar(_EMPTY_METADATA, pa.binary()), n),
            pc.if_else(nulls, pa.scalar(None, pa.binary()), values.cast(pa.binary())),
        ],
        fields=list(STORAGE_TYPE),
        mask=nulls,
    )


def _check_times(arr: pa.Array) -> None:
    t = arr.type
    if pa.types.is_time64(t) and t.unit == "ns":
        try:
            arr.cast(pa.time64("us"), safe=True)
        except pa.ArrowInvalid:
            raise ValidationError(
                "a variant time holds microseconds: nanosecond times must be whole microseconds"
            ) from None
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            _check_times(arr.field(i))
    elif pa.types.is_map(t):
        _check_times(arr.keys)
        _check_times(arr.items)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        _check_times(arr.flatten())


def encode_column(data: ArrayLike) -> ArrayLike:
    """An Arrow column meant for a variant field, in the stored form.

    An encoded ``struct<metadata, value[, typed_value]>`` is validated (shredded values merged);
    strings are parsed as JSON; a null column stays null; ``arrow.uuid`` values are variant
    uuids; any other type is cast value by value with :func:`from_arrow`.
    """
    _arrow_arg(data, "encode_column")
    t = data.type
    if isinstance(t, pa.UuidType):  # variant uuids, as Python's uuid.UUID values become
        return from_arrow(data)
    if isinstance(t, pa.BaseExtensionType):
        data = data.storage if isinstance(data, pa.Array) else data.cast(t.storage_type)
        t = t.storage_type
    if pa.types.is_null(t):
        return from_pylist([None] * len(data))
    if pa.types.is_struct(t) and {t.field(i).name for i in range(t.num_fields)} <= {
        "metadata",
        "value",
        "typed_value",
    }:
        if t.get_field_index("metadata") < 0:
            raise ValidationError("an encoded variant struct needs a metadata field")
        return _per_chunk(_native.variant_normalize, data)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return from_json(data)
    return from_arrow(data)


def normalize(data: pa.Array) -> pa.StructArray:
    """An encoded variant column (``struct<metadata, value[, typed_value]>``, any binary type)
    validated and in the stored form, shredded values merged back into ``value``."""
    _arrow_arg(data, "normalize", chunked=False)
    out: pa.StructArray = _native.variant_normalize(data)
    return out


def _not_bytes(name: str, got: object) -> ValidationError:
    return ValidationError(
        f"to_python/to_json take a Variant, or a variant's metadata and value as bytes; got "
        f"{_kind(got)} for the {name}"
    )


def _pair(metadata: bytes | Variant, value: bytes | None) -> pa.StructArray:
    if isinstance(metadata, Variant):
        if value is not None:
            raise ValidationError("to_python/to_json take a Variant alone, or two bytes values")
        return _scalar_array(metadata.metadata, metadata.value)
    if not isinstance(metadata, _BYTES):
        raise _not_bytes("metadata", metadata)
    if value is None:
        raise ValidationError(
            "to_python/to_json need both metadata and value bytes (or a Variant), got the "
            "metadata alone"
        )
    if not isinstance(value, _BYTES):
        raise _not_bytes("value", value)
    return _scalar_array(bytes(metadata), bytes(value))


def _to_python(arr: pa.Array) -> list[Any]:
    """The Python values of a column of encoded variants (in Rust): a date, time or timestamp
    that Python's ``datetime`` cannot hold (before year 1 or after 9999) is a
    :class:`ValidationError` naming the way to read it; malformed bytes are one saying so."""
    try:
        out: list[Any] = _native.variant_to_python(arr)
    except ValidationError:  # malformed bytes (a ValueError too): their message says it all
        raise
    except ValueError as e:  # raised by Python's date and datetime constructors
        raise ValidationError(
            f"a variant value cannot be a Python value: {e} (Python's dates run from year 1 "
            "to 9999 and its times end before 24:00; icefloe.variant.to_json reads it)"
        ) from None
    return out


def to_python(metadata: bytes | Variant, value: bytes | None = None) -> Any:
    """The Python value of one encoded variant (or of a :class:`Variant`)."""
    return _to_python(_pair(metadata, value))[0]


@overload
def to_json(metadata: bytes | Variant, value: bytes | None = None) -> str: ...
@overload
def to_json(metadata: ArrayLike) -> ArrayLike: ...
def to_json(metadata: bytes | Variant | ArrayLike, value: bytes | None = None) -> str | ArrayLike:
    """JSON text: of one encoded variant (``metadata``, ``value`` bytes, or a :class:`Variant`),
    or of every row of a variant column (a string array; null rows stay null)."""
    if isinstance(metadata, pa.Array | pa.ChunkedArray):
        return _per_chunk(_native.variant_to_json, metadata, pa.string())
    out: str = _native.variant_to_json(_pair(metadata, value))[0].as_py()
    return out


def to_pylist(column: ArrayLike) -> list[Any]:
    """The Python values of every row of a variant column (null rows are ``None``)."""
    _arrow_arg(column, "to_pylist")
    out: list[Any] = []
    for chunk in _chunks(column):
        if isinstance(chunk.type, pa.BaseExtensionType):
            chunk = chunk.storage
        out.extend(_to_python(chunk))
    return out
