"""Partition transforms (spec "Partition Transforms"): the object model and its JSON names.

``parse_transform("bucket[16]")`` gives ``BucketTransform(16)`` and ``str()`` gives the name back.
Names this version does not know parse to :class:`UnknownTransform`, which round-trips its name
and never prunes a scan. A bucket count or truncate width is an int from 1 to 2**31-1, as in the
reference (others are refused, in names read from metadata too). ``result_type`` and
``can_transform`` follow the spec's table; the ``day`` transform reports ``date`` as its result
type, as the reference implementation does (its values are days from 1970-01-01).

``t.apply(values)`` computes partition values over a ``pyarrow.Array`` or ``ChunkedArray`` in
the Rust core (GIL released, no per-value Python). The Arrow result type is always the Arrow
form of ``result_type``: ``identity`` and ``truncate`` keep the input type, ``void`` gives all
nulls of the input type, ``bucket``, ``year``, ``month`` and ``hour`` give ``int32``, and
``day`` gives ``date32`` (its values are the day counts from 1970-01-01 that manifests store, as
Avro ``int`` with logical type ``date``). This matches iceberg-rust (``pyiceberg_core``);
PyIceberg's ``pyarrow_transform`` views the same day counts as ``int32``.

Accepted Arrow inputs: int32, int64, decimal128/256, date32, time64[us], timestamp[us] and
timestamp[ns] with or without a zone, string/large_string/string_view,
binary/large_binary/binary_view, fixed_size_binary (uuid, fixed), bool and float32/64 (bucket
hashes the last two as spec Appendix B defines, though the spec does not partition by them);
dictionary arrays are transformed through their dictionary and extension arrays through their
storage. Any other type raises :class:`~icefloe.exceptions.ValidationError` naming it.
"""

from __future__ import annotations

import operator
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icefloe import _native
from icefloe.exceptions import UnsupportedFeatureError, ValidationError
from icefloe.types import (
    BinaryType,
    DateType,
    DecimalType,
    FixedType,
    GeographyType,
    GeometryType,
    IcebergType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
    VariantType,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "BucketTransform",
    "DayTransform",
    "HourTransform",
    "IdentityTransform",
    "MonthTransform",
    "Transform",
    "TruncateTransform",
    "UnknownTransform",
    "VoidTransform",
    "YearTransform",
    "parse_transform",
]

_TIMESTAMPS = (TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)
_BUCKET_SOURCES = (
    IntegerType,
    LongType,
    DecimalType,
    DateType,
    TimeType,
    *_TIMESTAMPS,
    StringType,
    UUIDType,
    FixedType,
    BinaryType,
)
_TRUNCATE_SOURCES = (IntegerType, LongType, DecimalType, StringType, BinaryType)


_INT_MAX = 2**31 - 1


def _check_int_arg(what: str, n: object) -> int:
    """A bucket count or truncate width as an ``int`` (numpy integers too): a positive int
    (the spec's and the reference's Java ``int``; the Rust transforms take an ``i32``). A
    float, a bool or a string is refused: written into a spec as ``bucket[1.5]``, it made
    the table unloadable to other engines."""
    try:
        value = operator.index(n)  # type: ignore[arg-type]
    except TypeError:
        value = None
    if isinstance(n, bool) or value is None:
        raise ValidationError(f"{what} must be an integer, got {n!r}")
    if not 0 < value <= _INT_MAX:
        raise ValidationError(f"{what} must be between 1 and {_INT_MAX}, got {value}")
    return int(value)


def _check_type(source: object) -> IcebergType:
    """``source`` when it is an icefloe type; a :class:`ValidationError` naming it otherwise
    (a name such as ``"long"`` was answered "cannot transform", or by ``void`` "can")."""
    if not isinstance(source, IcebergType):
        raise ValidationError(
            "a transform's source type must be an icefloe type (LongType(), ...; "
            f"type_from_json('long') reads a name), got {source!r}"
        )
    return source


class Transform(ABC):
    """A function from a source column's values to partition values."""

    #: Whether ``a <= b`` implies ``t(a) <= t(b)`` (lets range predicates project).
    preserves_order: bool = False

    @abstractmethod
    def __str__(self) -> str:
        """The transform's JSON name, e.g. ``bucket[16]``."""

    def to_json(self) -> str:
        return str(self)

    def can_transform(self, source: IcebergType) -> bool:
        """Whether the spec allows this transform on a column of type ``source``."""
        return self._can_transform(_check_type(source))

    def result_type(self, source: IcebergType) -> IcebergType:
        """The type of the partition values produced from a ``source`` column."""
        return self._result_type(_check_type(source))

    @abstractmethod
    def _can_transform(self, source: IcebergType) -> bool: ...

    @abstractmethod
    def _result_type(self, source: IcebergType) -> IcebergType: ...

    @property
    def is_unknown(self) -> bool:
        return False

    @property
    def is_void(self) -> bool:
        return False

    def satisfies_order_of(self, other: Transform) -> bool:
        """Whether ordering by this transform also orders by ``other``."""
        if not isinstance(other, Transform):
            raise ValidationError(
                f"satisfies_order_of compares with a transform (DayTransform(), ...; "
                f"parse_transform('day') reads a name), got {other!r}"
            )
        return self._satisfies_order_of(other)

    def _satisfies_order_of(self, other: Transform) -> bool:
        return self == other

    def _check(self, source: IcebergType) -> None:
        if not self.can_transform(source):
            raise ValidationError(f"transform {self} cannot be applied to type {source}")

    def apply(self, values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
        """The partition values of ``values``: an array of the same kind, nulls kept as nulls."""
        return _apply(str(self), values)


@dataclass(frozen=True)
class IdentityTransform(Transform):
    """The source value, unmodified."""

    preserves_order = True

    def __str__(self) -> str:
        return "identity"

    def _can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, PrimitiveType) and not isinstance(
            source, GeometryType | GeographyType | VariantType
        )

    def _result_type(self, source: IcebergType) -> IcebergType:
        self._check(source)
        return source

    def _satisfies_order_of(self, other: Transform) -> bool:
        return other.preserves_order


@dataclass(frozen=True)
class BucketTransform(Transform):
    """Murmur3 x86_32 hash of the value, sign bit dropped, modulo ``num_buckets``."""

    num_buckets: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "num_buckets", _check_int_arg("bucket count", self.num_buckets))

    def __str__(self) -> str:
        return f"bucket[{self.num_buckets}]"

    def _can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, _BUCKET_SOURCES)

    def _result_type(self, source: IcebergType) -> IcebergType:
        self._check(source)
        return IntegerType()


@dataclass(frozen=True)
class TruncateTransform(Transform):
    """Integers down to a multiple of ``width``; strings to ``width`` code points, binary bytes."""

    width: int
    preserves_order = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "width", _check_int_arg("truncate width", self.width))

    def __str__(self) -> str:
        return f"truncate[{self.width}]"

    def _can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, _TRUNCATE_SOURCES)

    def _result_type(self, source: IcebergType) -> IcebergType:
        self._check(source)
        return source

    def _satisfies_order_of(self, other: Transform) -> bool:
        # The rule depends on the source type, which a transform does not know: strings sorted
        # by a longer prefix are sorted by any shorter one (width >= other's), numbers sorted by
        # width W are sorted by width W' only when W divides W'. Only equal widths satisfy both.
        if isinstance(other, TruncateTransform):
            return self.width == other.width
        return self == other


class _TimeTransform(Transform):
    """Shared by year, month, day and hour: order-preserving, from dates and timestamps."""

    preserves_order = True
    _granularity: int = 0  # hour 0 < day 1 < month 2 < year 3
    _accepts_date = True

    def _can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, _TIMESTAMPS) or (self._accepts_date and source == DateType())

    def _result_type(self, source: IcebergType) -> IcebergType:
        self._check(source)
        return IntegerType()

    def _satisfies_order_of(self, other: Transform) -> bool:
        if isinstance(other, _TimeTransform):
            return self._granularity <= other._granularity
        return False

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class YearTransform(_TimeTransform):
    """Years from 1970."""

    _granularity = 3

    def __str__(self) -> str:
        return "year"


class MonthTransform(_TimeTransform):
    """Months from 1970-01."""

    _granularity = 2

    def __str__(self) -> str:
        return "month"


class DayTransform(_TimeTransform):
    """Days from 1970-01-01: result type ``date`` (as the reference reports it), so ``apply``
    gives ``date32``, whose values are those day counts."""

    _granularity = 1

    def __str__(self) -> str:
        return "day"

    def _result_type(self, source: IcebergType) -> IcebergType:
        self._check(source)
        return DateType()


class HourTransform(_TimeTransform):
    """Hours from 1970-01-01 00:00:00."""

    _granularity = 0
    _accepts_date = False

    def __str__(self) -> str:
        return "hour"


@dataclass(frozen=True)
class VoidTransform(Transform):
    """Always null: used to drop a partition field from a v1 spec."""

    def __str__(self) -> str:
        return "void"

    def _can_transform(self, source: IcebergType) -> bool:
        return True

    def _result_type(self, source: IcebergType) -> IcebergType:
        return source

    @property
    def is_void(self) -> bool:
        return True


@dataclass(frozen=True)
class UnknownTransform(Transform):
    """A transform this version does not know: kept and written back, never used for pruning."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ValidationError(f"a transform's name is a string, got {self.name!r}")

    def __str__(self) -> str:
        return self.name

    def _can_transform(self, source: IcebergType) -> bool:
        return False

    def _result_type(self, source: IcebergType) -> IcebergType:
        # Partition values of an unknown transform are opaque; the reference reports string.
        return StringType()

    @property
    def is_unknown(self) -> bool:
        return True

    def apply(self, values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
        """Unknown transforms cannot compute values: always raises."""
        raise UnsupportedFeatureError(f"cannot apply unknown transform {self.name!r}")


def _apply(name: str, values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        chunks = [_apply(name, c) for c in values.chunks]
        if not chunks:
            empty = _apply(name, pa.array([], type=values.type))
            return pa.chunked_array([], type=empty.type)
        return pa.chunked_array(chunks, type=chunks[0].type)
    if not isinstance(values, pa.Array):
        raise ValidationError(
            f"transform {name} applies to a pyarrow Array or ChunkedArray, "
            f"got {type(values).__name__}"
        )
    if isinstance(values, pa.DictionaryArray):
        return _apply(name, values.dictionary).take(values.indices)
    if isinstance(values, pa.ExtensionArray):
        return _apply(name, values.storage)
    if name == "identity" and pa.types.is_null(values.type):
        return values  # an unknown (v3) column: every value and partition value is null
    try:
        return _native.transform_apply(name, values)
    except ValidationError as e:
        if "does not accept Arrow type" in str(e):
            raise ValidationError(f"{e} (pyarrow type {values.type})") from None
        raise


#: As Iceberg Java reads them: ASCII digits, no spaces (``bucket[ 4 ]`` is an unknown transform
#: there, kept as written and never used for pruning)
_PARAM = re.compile(r"(bucket|truncate)\[(-?[0-9]+)\]")
_SIMPLE: dict[str, Transform] = {
    "identity": IdentityTransform(),
    "year": YearTransform(),
    "month": MonthTransform(),
    "day": DayTransform(),
    "hour": HourTransform(),
    "void": VoidTransform(),
}


def parse_transform(text: str) -> Transform:
    """Parses a transform's JSON name; unknown names give :class:`UnknownTransform`."""
    if not isinstance(text, str):
        raise ValidationError(f"a transform must be a string, got {text!r}")
    s = text.strip().lower()
    if s in _SIMPLE:
        return _SIMPLE[s]
    if m := _PARAM.fullmatch(s):
        n = int(m.group(2))
        return BucketTransform(n) if m.group(1) == "bucket" else TruncateTransform(n)
    return UnknownTransform(text)
