"""Converting a Python literal to a column type's internal representation, for binding.

:func:`convert_literal` returns the value as Iceberg holds it (see
:class:`~icefloe.expressions.base.BoundPredicate`), or :data:`ABOVE_MAX` / :data:`BELOW_MIN` when
the value is a valid number outside the type's range (``int_col < 2**40``): binding then
simplifies the predicate to a constant, as the reference does (for decimals, to ``not_null``
where every value satisfies it: see :mod:`icefloe.expressions.binding`). Values that cannot mean
a value of the type raise :class:`~icefloe.exceptions.ValidationError` naming the value and the
type.

An "int" below is any integral number but a bool: ``int`` and NumPy integers (``np.int64``, as
``df.id.max()`` gives). NumPy floats count as floats, and ``numpy.datetime64`` is taken by its
own unit (nanoseconds kept for the ``_ns`` types; NaT is refused: filter nulls with ``is null``).

Accepted forms, per type:

- ``boolean``: ``bool``, or the strings ``'true'``/``'false'`` (any case).
- ``int``/``long``: ``int``, an integral ``Decimal``, or a string of digits; range-checked.
- ``float``/``double``: any real number or a numeric string; a ``float`` literal beyond the
  float32 range is above max / below min.
- ``decimal(P,S)``: ``int``, ``Decimal``, ``float`` (by its shortest repr) or a numeric string;
  the value must be exact at scale ``S`` (``1.5`` fits ``decimal(9,2)``, ``1.234`` does not)
  and is rescaled to ``S``; more than ``P`` digits is above max / below min.
- ``date``: ISO ``'YYYY-MM-DD'``, ``datetime.date``, an int (days from 1970-01-01), or a
  ``numpy.datetime64`` of a whole day.
- ``time``: ISO ``'HH:MM[:SS[.ffffff]]'``, ``datetime.time``, or an int (microseconds).
- ``timestamp``/``timestamp_ns``: ISO date-time without offset (a date alone means midnight),
  naive ``datetime`` (a ``pandas.Timestamp`` keeps its nanoseconds), ``numpy.datetime64``
  (sub-microsecond digits refused for the microsecond types), ``date``, or an int of
  **microseconds** from 1970-01-01 for every timestamp type, the ``_ns`` ones included: the Java
  reference converts a long literal to ``timestamp_ns`` the same way (as micros, times 1000), so
  a filter means the same instant whatever the column's precision. Write a nanosecond-exact
  literal as an ISO string with nine fractional digits. An int whose nanoseconds overflow a
  long is above max / below min.
- ``timestamptz``/``timestamptz_ns``: the same, with an optional offset (``Z``, ``+01:00``);
  without an offset the value is taken as UTC (so is a ``numpy.datetime64``); aware
  ``datetime`` is converted to UTC.
- ``string``: ``str``. ``uuid``: ``uuid.UUID``, its string form, or 16 bytes.
- ``fixed[L]``: bytes of length ``L``. ``binary``: bytes.

Sub-unit digits a type cannot hold (``'12:00:00.0000001'`` for ``time``) raise rather than
silently round, since rounding would change which rows a comparison selects.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import numbers
import operator
import re
import struct
import uuid
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

from icefloe.exceptions import ValidationError
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = [
    "ABOVE_MAX",
    "ABOVE_ZERO",
    "BELOW_MIN",
    "BELOW_ZERO",
    "Nanos",
    "OutOfRange",
    "convert_literal",
    "days_from_civil",
    "plain_scalar",
]


class OutOfRange:
    """Marker for a literal outside a type's range; compare with ``is``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


ABOVE_MAX = OutOfRange("ABOVE_MAX")
BELOW_MIN = OutOfRange("BELOW_MIN")
#: A positive (negative) literal closer to zero than any float but zero: it compares above
#: (below) both zeros and below (above) every other float, and equals none.
ABOVE_ZERO = OutOfRange("ABOVE_ZERO")
BELOW_ZERO = OutOfRange("BELOW_ZERO")

_LONG_MAX = 2**63 - 1
_INT_RANGE = {IntegerType: (-(2**31), 2**31 - 1), LongType: (-_LONG_MAX - 1, _LONG_MAX)}
_FLOAT32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
_ISO = re.compile(
    r"(?P<y>[+-]?\d{4,})-(?P<mo>\d{2})-(?P<d>\d{2})"
    r"(?:[Tt ](?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d{1,9}))?)?)?"
    r"(?P<tz>[Zz]|[+-]\d{2}(?::?\d{2})?)?"
)
_TIME = re.compile(r"(?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d{1,9}))?)?")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days from 1970-01-01 to the proleptic Gregorian date (any year)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _bad(value: Any, t: IcebergType, why: str = "") -> ValidationError:
    extra = f": {why}" if why else ""
    return ValidationError(f"cannot convert literal {value!r} to type {t}{extra}")


def _integral(value: Any) -> int | None:
    """``value`` as an ``int`` when it is an integral number (``int``, NumPy integers), not a
    ``bool`` (nor ``numpy.bool_``, which is no :class:`numbers.Integral`); else None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return None
    try:
        return operator.index(value)
    except TypeError:  # Integral to NumPy but no integer (numpy.timedelta64): not a number
        return None


def _is_datetime64(value: Any) -> bool:
    return type(value).__name__ == "datetime64" and type(value).__module__ == "numpy"


#: Nanoseconds per unit of ``numpy.datetime64`` (``Y`` and ``M`` are converted to days first).
_NP_NANOS = {
    "W": 7 * 86_400 * 10**9,
    "D": 86_400 * 10**9,
    "h": 3_600 * 10**9,
    "m": 60 * 10**9,
    "s": 10**9,
    "ms": 10**6,
    "us": 10**3,
    "ns": 1,
}
#: Units of ``numpy.datetime64`` finer than a nanosecond, per nanosecond.
_NP_PER_NANO = {"ps": 10**3, "fs": 10**6, "as": 10**9}


def _datetime64_nanos(value: Any, t: IcebergType) -> int:
    """A ``numpy.datetime64`` as exact nanoseconds from 1970-01-01 (by its own unit)."""
    import numpy as np  # only reached with a NumPy value, so NumPy is already imported

    if np.isnat(value):
        raise _bad(value, t, "not a time (NaT): filter nulls with 'is null'")
    unit, count = np.datetime_data(value.dtype)
    if unit in ("Y", "M"):
        value, unit, count = value.astype("datetime64[D]"), "D", 1
    ticks = int(value.astype("int64")) * int(count)
    if unit in _NP_PER_NANO:
        nanos, rest = divmod(ticks, _NP_PER_NANO[unit])
        if rest:
            raise _bad(value, t, "more than 9 fractional digits")
        return nanos
    if unit not in _NP_NANOS:
        raise _bad(value, t, f"unsupported datetime64 unit {unit!r}")
    return ticks * _NP_NANOS[unit]


def plain_scalar(value: Any) -> Any:
    """A NumPy scalar as the Python value it holds: integers as ``int``, ``numpy.bool_`` as
    ``bool``, floating values up to 64 bits as ``float``. ``numpy.datetime64`` (converted
    when bound, by its unit) and every other value are returned as they are."""
    if type(value).__module__ != "numpy":
        return value
    if isinstance(value, numbers.Integral):
        try:
            return operator.index(value)
        except TypeError:  # numpy.timedelta64: Integral to NumPy, refused when bound
            return value
    if type(value).__name__ in ("bool", "bool_"):
        return bool(value)
    if isinstance(value, numbers.Real) and getattr(value, "itemsize", 8) <= 8:
        return float(value)
    return value


def _fraction(f: str | None, digits: int, value: Any, t: IcebergType) -> int:
    """The fractional-second digits as an integer count of 10**-digits seconds."""
    if not f:
        return 0
    if len(f) > digits and int(f[digits:]) != 0:
        raise _bad(value, t, f"more than {digits} fractional digits")
    return int(f[:digits].ljust(digits, "0"))


def _parse_timestamp(value: str, t: IcebergType, digits: int, with_zone: bool) -> int:
    m = _ISO.fullmatch(value.strip())
    if m is None:
        raise _bad(value, t, "expected ISO-8601 'YYYY-MM-DD[THH:MM[:SS[.fraction]]][offset]'")
    y, mo, d = int(m["y"]), int(m["mo"]), int(m["d"])
    h, mi, s = int(m["h"] or 0), int(m["mi"] or 0), int(m["s"] or 0)
    if not (1 <= mo <= 12 and 1 <= d <= _month_days(y, mo) and h < 24 and mi < 60 and s < 60):
        raise _bad(value, t, "not a valid date and time")
    offset_s = 0
    if m["tz"]:
        if not with_zone:
            raise _bad(value, t, "a timestamp without time zone cannot take an offset")
        tz = m["tz"]
        if tz not in "Zz":
            sign = -1 if tz[0] == "-" else 1
            body = tz[1:].replace(":", "")
            hours, minutes = int(body[:2]), int(body[2:4] or 0)
            if minutes >= 60 or hours * 60 + minutes > 18 * 60:
                raise _bad(value, t, "an offset is at most 18:00 from UTC")
            offset_s = sign * (hours * 3600 + minutes * 60)
    unit = int(10**digits)
    secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset_s
    return secs * unit + _fraction(m["f"], digits, value, t)


def _month_days(y: int, m: int) -> int:
    if m == 2:
        return 29 if (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)) else 28
    return 30 if m in (4, 6, 9, 11) else 31


def _datetime_units(value: dt.datetime, t: IcebergType, with_zone: bool, digits: int) -> int:
    if value != value:  # pandas.NaT (a datetime that equals nothing): no instant
        raise _bad(value, t, "not a time: filter nulls with 'is null'")
    if value.tzinfo is not None and value.utcoffset() is not None:
        if not with_zone:
            raise _bad(value, t, "a timestamp without time zone cannot take an aware datetime")
        delta = value - _EPOCH
    else:
        delta = value.replace(tzinfo=dt.timezone.utc) - _EPOCH
    micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    nanos = int(getattr(value, "nanosecond", 0))  # a pandas.Timestamp keeps nanoseconds
    if digits == 9:
        return micros * 1000 + nanos
    if nanos:
        raise _bad(value, t, "more than 6 fractional digits")
    return micros


def _to_int(value: Any, t: IcebergType) -> int:
    if isinstance(value, bool):
        raise _bad(value, t)
    i = _integral(value)
    if i is not None:
        return i
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return int(value)
    raise _bad(value, t, "expected an integer")


def _to_decimal(value: Any, t: DecimalType) -> Decimal | OutOfRange:
    if isinstance(value, bool):
        raise _bad(value, t)
    i = _integral(value)
    try:
        if i is not None:
            d = Decimal(i)
        elif isinstance(value, Decimal):
            d = value
        elif isinstance(value, float):
            if math.isinf(value):
                return ABOVE_MAX if value > 0 else BELOW_MIN
            d = Decimal(repr(float(value)))  # float(): a numpy.float64 reprs as np.float64(...)
        elif isinstance(value, str):
            d = Decimal(value.strip())
        else:
            raise _bad(value, t)
    except InvalidOperation:
        raise _bad(value, t, "not a number") from None
    if not d.is_finite():
        if d.is_infinite():
            return ABOVE_MAX if d > 0 else BELOW_MIN
        raise _bad(value, t, "not a number")
    if d and d.adjusted() >= t.precision - t.scale:
        return ABOVE_MAX if d > 0 else BELOW_MIN  # |d| >= 10 ** (precision - scale)
    with localcontext() as ctx:
        # Python's default context keeps 28 digits; a decimal(38) value needs all of its own
        # (the range check too: rounded to 28 digits, 10**38 - 1 became 10**38).
        ctx.prec = 100
        scaled = d.quantize(Decimal(1).scaleb(-t.scale))
        too_large = abs(scaled.scaleb(t.scale)) >= 10**t.precision
    if scaled != d:
        raise _bad(value, t, f"has more than {t.scale} digits after the point")
    if too_large:
        return ABOVE_MAX if d > 0 else BELOW_MIN
    return scaled


def _to_float(value: Any, t: IcebergType) -> float | OutOfRange:
    if isinstance(value, bool):
        raise _bad(value, t)
    i = _integral(value)
    if i is not None:
        try:
            f = float(i)
        except OverflowError:  # beyond every double
            return ABOVE_MAX if i > 0 else BELOW_MIN
    elif isinstance(value, float | Decimal) or (
        isinstance(value, numbers.Real) and type(value).__module__ == "numpy"
    ):
        f = float(value)
    elif isinstance(value, str):
        try:
            f = float(value)
        except ValueError:
            raise _bad(value, t, "not a number") from None
    else:
        raise _bad(value, t)
    if math.isnan(f):
        raise _bad(
            value,
            t,
            "NaN is not a literal: use is_nan/not_nan (in filter text: x is nan, x is not nan)",
        )
    if math.isinf(f) and isinstance(value, Decimal | str):
        with contextlib.suppress(InvalidOperation):
            d = Decimal(value.strip() if isinstance(value, str) else value)
            if d.is_finite():  # beyond every double, as an integer that large is
                return ABOVE_MAX if d > 0 else BELOW_MIN
    if isinstance(t, FloatType) and not math.isinf(f):
        if f > _FLOAT32_MAX:
            return ABOVE_MAX
        if f < -_FLOAT32_MAX:
            return BELOW_MIN
        rounded: float = struct.unpack("<f", struct.pack("<f", f))[0]
        if rounded == 0 and f != 0:  # beyond the smallest float: no nearest float keeps its sign
            return ABOVE_ZERO if f > 0 else BELOW_ZERO
        f = rounded
    return f


def convert_literal(value: Any, t: IcebergType) -> Any:
    """``value`` in the internal representation of ``t``, or ABOVE_MAX / BELOW_MIN (or, for a
    float column, ABOVE_ZERO / BELOW_ZERO)."""
    value = plain_scalar(value)
    if isinstance(value, bytearray | memoryview):
        value = bytes(value)
    if isinstance(t, BooleanType):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise _bad(value, t)
    if isinstance(t, IntegerType | LongType):
        v = _to_int(value, t)
        lo, hi = _INT_RANGE[type(t)]
        return ABOVE_MAX if v > hi else BELOW_MIN if v < lo else v
    if isinstance(t, FloatType | DoubleType):
        return _to_float(value, t)
    if isinstance(t, DecimalType):
        return _to_decimal(value, t)
    if isinstance(t, StringType):
        if isinstance(value, str):
            return value
        raise _bad(value, t, "expected a string")
    if isinstance(t, UUIDType):
        return _to_uuid(value, t)
    if isinstance(t, FixedType):
        if isinstance(value, bytes) and len(value) == t.length:
            return value
        raise _bad(value, t, f"expected {t.length} bytes")
    if isinstance(t, BinaryType):
        if isinstance(value, bytes):
            return value
        raise _bad(value, t, "expected bytes")
    if isinstance(t, DateType):
        return _to_date(value, t)
    if isinstance(t, TimeType):
        return _to_time(value, t)
    if isinstance(t, TimestampType | TimestamptzType | TimestampNanoType | TimestamptzNanoType):
        return _to_timestamp(value, t)
    raise ValidationError(f"cannot compare a column of type {t} with literal {value!r}")


def _to_uuid(value: Any, t: IcebergType) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        if isinstance(value, str):
            return uuid.UUID(value.strip())
        if isinstance(value, bytes) and len(value) == 16:
            return uuid.UUID(bytes=value)
    except ValueError:
        pass
    raise _bad(value, t, "expected a UUID")


def _to_date(value: Any, t: IcebergType) -> int:
    if isinstance(value, bool):
        raise _bad(value, t)
    i = _integral(value)
    if i is not None:
        return i
    if _is_datetime64(value):
        days, rest = divmod(_datetime64_nanos(value, t), 86_400 * 10**9)
        if rest:
            raise _bad(value, t, "expected a date, got a time of day")
        return days
    if isinstance(value, dt.datetime):
        raise _bad(value, t, "expected a date, got a datetime")
    if isinstance(value, dt.date):
        return days_from_civil(value.year, value.month, value.day)
    if isinstance(value, str):
        m = re.fullmatch(r"\s*([+-]?\d{4,})-(\d{2})-(\d{2})\s*", value)
        if m:
            y, mo, d = int(m[1]), int(m[2]), int(m[3])
            if 1 <= mo <= 12 and 1 <= d <= _month_days(y, mo):
                return days_from_civil(y, mo, d)
        raise _bad(value, t, "expected an ISO date 'YYYY-MM-DD'")
    raise _bad(value, t)


def _to_time(value: Any, t: IcebergType) -> int:
    if isinstance(value, bool):
        raise _bad(value, t)
    i = _integral(value)
    if i is not None:
        if 0 <= i < 86_400_000_000:
            return i
        raise _bad(value, t, "microseconds must be within a day")
    if isinstance(value, dt.time):
        if value.tzinfo is not None:
            raise _bad(value, t, "time has no time zone")
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + (
            value.microsecond
        )
    if isinstance(value, str):
        m = _TIME.fullmatch(value.strip())
        if m and int(m["h"]) < 24 and int(m["mi"]) < 60 and int(m["s"] or 0) < 60:
            secs = int(m["h"]) * 3600 + int(m["mi"]) * 60 + int(m["s"] or 0)
            return secs * 1_000_000 + _fraction(m["f"], 6, value, t)
        raise _bad(value, t, "expected an ISO time 'HH:MM[:SS[.ffffff]]'")
    raise _bad(value, t)


class Nanos(int):
    """A nanosecond timestamp that was bound before (a bound predicate made unbound again, as
    projections onto identity partitions do): binding it again keeps it, where a plain int
    on a timestamp column is read as microseconds."""


def _to_timestamp(value: Any, t: IcebergType) -> int | OutOfRange:
    nanos = isinstance(t, TimestampNanoType | TimestamptzNanoType)
    with_zone = isinstance(t, TimestamptzType | TimestamptzNanoType)
    digits = 9 if nanos else 6
    if isinstance(value, bool):
        raise _bad(value, t)
    if isinstance(value, Nanos):
        if nanos:
            return int(value)
        if value % 1000:
            raise _bad(value, t, "is finer than microseconds")
        return int(value) // 1000
    i = _integral(value)
    if i is not None:
        # Microseconds for every timestamp type (the Java reference's LongLiteral rule).
        units = i * 1000 if nanos else i
        return ABOVE_MAX if units > _LONG_MAX else BELOW_MIN if units < -_LONG_MAX - 1 else units
    if _is_datetime64(value):
        # by the value's own unit (naive: UTC for the tz types, as an ISO string without offset)
        units = _datetime64_nanos(value, t)
        if not nanos:
            units, rest = divmod(units, 1000)
            if rest:
                raise _bad(value, t, "more than 6 fractional digits")
        return ABOVE_MAX if units > _LONG_MAX else BELOW_MIN if units < -_LONG_MAX - 1 else units
    if isinstance(value, dt.datetime):
        units = _datetime_units(value, t, with_zone, digits)
    elif isinstance(value, dt.date):
        units = days_from_civil(value.year, value.month, value.day) * 86400 * int(10**digits)
    elif isinstance(value, str):
        units = _parse_timestamp(value, t, digits, with_zone)
    else:
        raise _bad(value, t)
    # an instant beyond what the type holds (years before 1677 or after 2262 in nanoseconds):
    # above or below every value, as an integer or datetime64 literal of the same instant
    return ABOVE_MAX if units > _LONG_MAX else BELOW_MIN if units < -_LONG_MAX - 1 else units
