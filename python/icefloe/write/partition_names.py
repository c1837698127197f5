"""Partition values as people read them, and the partition directories named after them, as
Iceberg Java writes both (``Transform.toHumanString``, ``PartitionSpec.partitionToPath``):
dates for time transforms, timestamps and times as Java prints them, doubles and floats as
``Double.toString`` and ``Float.toString``, uuids as ``UUID.toString``, bytes in base64."""

from __future__ import annotations

import datetime as _dt
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote_plus

import numpy as np

from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import DayTransform, HourTransform, MonthTransform, YearTransform
from icefloe.types import (
    DateType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
)

__all__ = ["human_partition_value", "partition_path"]


def human_partition_value(pf: PartitionField, value: Any, result_type: Any = None) -> str:
    """A partition value as people read it (and as partition directories are named), as Iceberg
    Java's ``Transform.toHumanString`` gives it: dates for day/month/year/hour transforms,
    base64 for bytes, ``null``; timestamps as Java prints them, nanoseconds included (a
    ``timestamp_ns`` value given as an int of nanoseconds needs ``result_type``, the partition
    field's type); uuids as ``UUID.toString`` (a uuid given as its 16 bytes needs
    ``result_type``); doubles as ``Double.toString`` (``NaN``, ``-Infinity``, ``1.0E20``,
    ``-0.0``) and floats as ``Float.toString`` (shortest digits of the float32: ``1.1``; a
    float given as a Python float needs ``result_type``)."""
    from icefloe.types import FloatType, UUIDType

    if value is None:
        return "null"
    t = pf.transform
    if isinstance(t, YearTransform):
        return f"{1970 + value:04d}"
    if isinstance(t, MonthTransform):
        y, m = divmod(value, 12)
        return f"{1970 + y:04d}-{m + 1:02d}"
    if isinstance(t, DayTransform) or (
        isinstance(value, int) and isinstance(result_type, DateType)
    ):
        if isinstance(value, _dt.date):
            value = (value - _EPOCH).days
        return _human_day(value)
    if isinstance(t, HourTransform):
        days, hour = divmod(value, 24)
        return f"{_human_day(days)}-{hour:02d}"
    if isinstance(value, int) and isinstance(result_type, TimestampType | TimestamptzType):
        value *= 1000  # (micros, as the nanosecond types below; years past 9999 too)
        zoned = isinstance(result_type, TimestamptzType)
        result_type = TimestamptzNanoType() if zoned else TimestampNanoType()
    if isinstance(value, bytes) and isinstance(result_type, UUIDType) and len(value) == 16:
        return str(uuid.UUID(bytes=value))
    if isinstance(value, bytes):
        import base64

        return base64.b64encode(value).decode()
    if isinstance(value, float | np.floating):
        single = isinstance(result_type, FloatType) or isinstance(value, np.float32)
        return _java_floating(float(value), single)
    if isinstance(value, int) and isinstance(result_type, TimestampNanoType | TimestamptzNanoType):
        days, nanos = divmod(value, 86_400_000_000_000)
        text = f"{_iso_date(days)}T{_iso_time(nanos)}"
        return text + ("+00:00" if isinstance(result_type, TimestamptzNanoType) else "")
    if isinstance(value, _dt.datetime):
        # a pandas Timestamp (nanosecond values) carries its nanoseconds apart
        t_ = value.time()
        nanos = (t_.hour * 3600 + t_.minute * 60 + t_.second) * 1_000_000_000
        nanos += t_.microsecond * 1000 + int(getattr(value, "nanosecond", 0))
        text = f"{value.date().isoformat()}T{_iso_time(nanos)}"
        return text + ("+00:00" if value.tzinfo is not None else "")
    if isinstance(value, _dt.time):
        return _java_time(
            (value.hour * 3600 + value.minute * 60 + value.second) * 1_000_000_000
            + value.microsecond * 1000
        )
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_EPOCH = _dt.date(1970, 1, 1)


def _civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of the proleptic Gregorian date ``days`` after 1970-01-01, for any
    ``days`` (Python's dates end with year 9999; Iceberg's and Java's do not)."""
    z = days + 719_468  # days since 0000-03-01
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def _human_day(days: int) -> str:
    """A day as Java's ``TransformUtil.humanDay`` prints it (``%04d-%02d-%02d``)."""
    year, month, day = _civil(days)
    return f"{year:04d}-{month:02d}-{day:02d}"


def _iso_date(days: int) -> str:
    """A day as Java's ISO formatter prints it: a sign before years past 9999 or before 0."""
    year, month, day = _civil(days)
    if year > 9999:
        return f"+{year}-{month:02d}-{day:02d}"
    if year < 0:
        return f"-{-year:04d}-{month:02d}-{day:02d}"
    return f"{year:04d}-{month:02d}-{day:02d}"


def _java_floating(value: float, single: bool) -> str:
    """``value`` as Java's ``Double.toString`` prints it (``Float.toString`` of the float32
    ``value`` when ``single``; the specification of Java 19 and later): ``NaN``,
    ``Infinity``, ``-0.0``; the shortest digits that read back as the same double (float),
    or of one digit the closest decimal of two digits that does (``4.9E-324``), in plain
    notation with at least one digit after the point when 1e-3 <= |value| < 1e7 (``1.0``,
    ``0.001``, ``1234567.5``), else as ``d.dddE[-]n`` (``1.0E20``, ``1.0E-4``)."""
    import math
    from decimal import ROUND_HALF_EVEN, Decimal

    if single:
        with np.errstate(over="ignore"):
            value = float(np.float32(value))
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    shortest = (
        np.format_float_scientific(np.float32(abs(value)), unique=True)
        if single
        else repr(abs(value))
    )
    _, digit_tuple, exponent = Decimal(shortest).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = exponent + len(digits) - 1  # the decimal exponent of the first digit
    digits = digits.rstrip("0") or "0"
    if len(digits) == 1:
        # Java picks, among the decimals of one or two digits that read back as the value,
        # the closest to it
        exact = Decimal(abs(value))
        two = exact.quantize(Decimal(1).scaleb(exact.adjusted() - 1), rounding=ROUND_HALF_EVEN)
        back = float(np.float32(float(two))) if single else float(two)
        if back == abs(value):
            _, digit_tuple, exponent = two.as_tuple()
            assert isinstance(exponent, int)
            digits = "".join(map(str, digit_tuple))
            point = exponent + len(digits) - 1
            digits = digits.rstrip("0") or "0"
    if -3 <= point < 7:
        if point >= 0:
            whole = digits[: point + 1].ljust(point + 1, "0")
            return f"{sign}{whole}.{digits[point + 1 :] or '0'}"
        return f"{sign}0.{'0' * (-point - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point}"


def _iso_time(nanos_of_day: int) -> str:
    """``HH:mm:ss``, with a fraction of as many digits as it needs when not zero: how the Java
    reference (1.7 and later) prints the time of day of timestamps (``ISO_LOCAL_DATE_TIME``,
    ``+00:00`` after it for zoned ones) in partition paths and summaries."""
    seconds, nanos = divmod(nanos_of_day, 1_000_000_000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{text}.{f'{nanos:09d}'.rstrip('0')}" if nanos else text


def _java_time(nanos_of_day: int) -> str:
    """``HH:mm``, with ``:ss`` and a fraction of 3, 6 or 9 digits only when not zero: how the
    Java reference prints times (``LocalTime.toString``) in partition paths."""
    seconds, nanos = divmod(nanos_of_day, 1_000_000_000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{hours:02d}:{minutes:02d}"
    if secs or nanos:
        text += f":{secs:02d}"
    if nanos:
        frac = f"{nanos:09d}"
        text += "." + (
            frac[:3] if frac.endswith("000000") else frac[:6] if frac.endswith("000") else frac
        )
    return text


def escape_path_part(text: str) -> str:
    """``text`` escaped as Java's ``URLEncoder.encode(text, UTF_8)`` escapes it (Iceberg Java's
    ``PartitionSpec.escape``): letters, digits and ``.-*_`` kept, a space as ``+``, any other
    character as ``%XX`` of its UTF-8 bytes (``~`` too, which Python's quoting keeps)."""
    return quote_plus(text, safe="*").replace("~", "%7E")


def partition_path(
    spec: PartitionSpec, partition: Mapping[str, Any], schema: Schema | None = None
) -> str:
    """The directory of a partition: ``name=value/...``, each part escaped as Iceberg Java
    escapes it (``a b`` is ``a+b``); with the ``schema`` the spec is bound to, uuids and
    floats are named as Java names them (see :func:`human_partition_value`)."""
    types: list[Any] = (
        [f.field_type for f in spec.partition_type(schema).fields]
        if schema is not None
        else [None] * len(spec.fields)
    )
    parts = []
    for pf, result_type in zip(spec.fields, types, strict=True):
        value = human_partition_value(pf, partition.get(pf.name), result_type)
        parts.append(f"{escape_path_part(pf.name)}={escape_path_part(value)}")
    return "/".join(parts)
