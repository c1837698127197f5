"""Single-value serialisation (spec Appendix D): binary (bounds, partition summaries) and JSON
(default values), both directions. The encoding itself runs in the Rust core.

Python representation of values, by Iceberg type:

| type | Python value |
|---|---|
| boolean | ``bool`` |
| int, long | ``int`` |
| float, double | ``float`` |
| decimal(P, S) | ``decimal.Decimal`` (``int`` accepted; digits beyond the scale are an error) |
| date | ``datetime.date`` |
| time | ``datetime.time`` (microseconds) |
| timestamp | naive ``datetime.datetime`` |
| timestamptz | ``datetime.datetime`` in UTC (any aware datetime accepted; naive rejected) |
| timestamp_ns, timestamptz_ns | ``int`` nanoseconds from 1970-01-01T00:00 (UTC); or ``datetime`` |
| string | ``str`` |
| uuid | ``uuid.UUID`` (16 ``bytes`` accepted) |
| fixed(L), binary | ``bytes`` (``bytearray``/``memoryview`` accepted) |
| geometry, geography | ``bytes`` of WKB (binary form only) |
| struct | ``dict`` of field name to value (JSON only) |
| list | ``list`` (JSON only) |
| map | ``dict`` (JSON only) |

``None`` is null in every direction (and the only value of ``unknown``). ``datetime`` holds only
microseconds, so nanosecond timestamps are plain integers; ``datetime`` inputs for them are
exact multiples of 1000 ns. Geometry and geography bounds are points: see
:func:`point_to_bytes`. The JSON form of geometry (WKT) and of variant is not supported.
"""

from __future__ import annotations

import datetime as _dt
import math
import uuid as _uuid
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

from icefloe import _native
from icefloe.exceptions import ValidationError
from icefloe.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    GeographyType,
    GeometryType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
    integer_arg,
    integer_parameter,
)

__all__ = [
    "column_default",
    "epoch_ms",
    "field_default",
    "from_bytes",
    "from_json",
    "point_from_bytes",
    "point_to_bytes",
    "to_bytes",
    "to_json",
    "to_physical",
]

_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_TZ = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_Physical = bool | int | float | str | bytes


def snapshot_id_arg(value: object, what: str = "snapshot_id") -> int:
    """A snapshot id argument as a Python ``int`` (:func:`~icefloe.types.integer_parameter`:
    numpy integers too); anything else is a :class:`ValidationError` naming ``what``."""
    return integer_parameter(what, value)


def epoch_ms(value: object, what: str) -> int:
    """``value`` (a ``datetime``, naive ones being UTC, or epoch milliseconds, any integral
    type) as epoch milliseconds; anything else is a :class:`ValidationError` naming
    ``what``."""
    as_int = integer_arg(value)
    if as_int is not None:
        value = as_int
        if not -(2**63) <= value < 2**63:
            raise ValidationError(
                f"{what} must be epoch milliseconds that fit a 64-bit long, got {value!r}"
            )
        return value
    if isinstance(value, _dt.datetime):
        if value != value:  # pandas' NaT is a datetime that is no time (the max of no rows)
            raise ValidationError(f"{what} must be a point in time, got {value!r}")
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return (value - _EPOCH_TZ) // _dt.timedelta(milliseconds=1)
    raise ValidationError(f"{what} must be a datetime or epoch milliseconds, got {value!r}")


def _bad(t: IcebergType, value: object, why: str) -> ValidationError:
    return ValidationError(f"invalid value for type {t}: {value!r} ({why})")


def _micros(delta: _dt.timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _unscaled(t: DecimalType, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, Decimal | int):
        raise _bad(t, value, "expected a Decimal")
    with localcontext() as ctx:
        ctx.prec = 100
        try:
            u = Decimal(value).scaleb(t.scale)
        except InvalidOperation as e:
            raise _bad(t, value, "not a finite decimal") from e
        if not u.is_finite() or u != u.to_integral_value():
            raise _bad(t, value, f"more than {t.scale} digits after the point")
        return int(u)


def _to_physical(t: PrimitiveType, value: object) -> _Physical:
    """The physical value the Rust core serialises (days, micros, nanos, unscaled, bytes)."""
    if isinstance(t, DecimalType):
        return _unscaled(t, value)
    if isinstance(t, DateType):
        if isinstance(value, _dt.datetime) or not isinstance(value, _dt.date):
            raise _bad(t, value, "expected a datetime.date")
        return (value - _EPOCH_DATE).days
    if isinstance(t, TimeType):
        if not isinstance(value, _dt.time):
            raise _bad(t, value, "expected a datetime.time")
        if value.tzinfo is not None:
            raise _bad(t, value, "a time has no zone")
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + (
            value.microsecond
        )
    if isinstance(t, TimestampType | TimestamptzType | TimestampNanoType | TimestamptzNanoType):
        return _timestamp(t, value)
    if isinstance(t, UUIDType):
        if isinstance(value, _uuid.UUID):
            return value.bytes
        if isinstance(value, bytes) and len(value) == 16:
            return value
        raise _bad(t, value, "expected a uuid.UUID")
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if (
        isinstance(t, FloatType | DoubleType)
        and isinstance(value, int)
        and not isinstance(value, bool)
    ):
        return float(value)
    if isinstance(value, bool | int | float | str | bytes):
        return value
    raise _bad(t, value, "unsupported Python type")


def to_physical(type_: IcebergType, value: object) -> _Physical:
    """``value``'s physical form: days of a date, micro- or nanoseconds of a time or
    timestamp, the unscaled integer of a decimal, the bytes of a uuid; others as they are.
    A value that is not one of ``type_`` is a :class:`ValidationError`."""
    return _to_physical(_primitive(type_, "physical"), value)


def _timestamp(t: PrimitiveType, value: object) -> int:
    nanos = isinstance(t, TimestampNanoType | TimestamptzNanoType)
    with_zone = isinstance(t, TimestamptzType | TimestamptzNanoType)
    if nanos and isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, _dt.datetime):
        raise _bad(t, value, "expected a datetime.datetime" + (" or int nanoseconds" * nanos))
    if with_zone:
        if value.tzinfo is None:
            raise _bad(t, value, "expected an aware datetime")
        micros = _micros(value - _EPOCH_TZ)
    else:
        if value.tzinfo is not None:
            raise _bad(t, value, "expected a naive datetime (timestamp has no zone)")
        micros = _micros(value - _EPOCH)
    extra = getattr(value, "nanosecond", 0)  # pandas.Timestamp keeps nanoseconds
    return micros * 1000 + int(extra) if nanos else micros


def _from_physical(t: PrimitiveType, v: _Physical) -> Any:
    try:
        return _python_value(t, v)
    except OverflowError:
        unit = "days" if isinstance(t, DateType) else "units"
        raise ValidationError(
            f"{t} value {v!r} ({unit} from 1970-01-01) is outside the years 1 to 9999 that "
            "Python's dates and datetimes hold"
        ) from None


def _python_value(t: PrimitiveType, v: _Physical) -> Any:
    if isinstance(t, DecimalType):
        assert isinstance(v, int)
        return Decimal(f"{v}e-{t.scale}") if t.scale else Decimal(v)
    if isinstance(t, DateType):
        assert isinstance(v, int)
        return _EPOCH_DATE + _dt.timedelta(days=v)
    if isinstance(t, TimeType):
        assert isinstance(v, int)
        secs, us = divmod(v, 1_000_000)
        return _dt.time(secs // 3600, secs // 60 % 60, secs % 60, us)
    if isinstance(t, TimestampType):
        assert isinstance(v, int)
        return _EPOCH + _dt.timedelta(microseconds=v)
    if isinstance(t, TimestamptzType):
        assert isinstance(v, int)
        return _EPOCH_TZ + _dt.timedelta(microseconds=v)
    if isinstance(t, UUIDType):
        assert isinstance(v, bytes)
        return _uuid.UUID(bytes=v)
    return v


def _primitive(t: IcebergType, what: str) -> PrimitiveType:
    if not isinstance(t, PrimitiveType):
        raise ValidationError(f"type {t} has no {what} single-value serialisation")
    return t


# ---------------------------------------------------------------------------------------------
# binary


def to_bytes(type_: IcebergType, value: Any) -> bytes:
    """The Appendix D binary form of ``value`` (a bound or partition summary value)."""
    t = _primitive(type_, "binary")
    if value is None:
        raise ValidationError(f"null has no binary single-value serialisation (type {t})")
    if isinstance(t, GeometryType | GeographyType):
        if not isinstance(value, bytes | bytearray | memoryview):
            raise _bad(t, value, "expected WKB bytes")
        return bytes(value)
    result: bytes = _native.value_to_bytes(str(t), _to_physical(t, value))
    return result


def from_bytes(type_: IcebergType, data: bytes) -> Any:
    """The value of ``type_`` serialised as ``data`` (Appendix D binary form)."""
    t = _primitive(type_, "binary")
    if isinstance(t, GeometryType | GeographyType):
        return bytes(data)
    return _from_physical(t, _native.value_from_bytes(str(t), bytes(data)))


def point_to_bytes(x: float, y: float, z: float | None = None, m: float | None = None) -> bytes:
    """A geometry/geography bound point: ``x:y[:z][:m]`` little-endian doubles (NaN z if only m)."""
    return _native.point_to_bytes(x, y, z, m)


def point_from_bytes(data: bytes) -> tuple[float, float, float | None, float | None]:
    """The (x, y, z, m) of a geometry/geography bound point; unset coordinates are None."""
    return _native.point_from_bytes(bytes(data))


# ---------------------------------------------------------------------------------------------
# JSON


def to_json(type_: IcebergType, value: Any) -> Any:
    """The JSON single-value form of ``value`` (a ``json.dumps``-able object); None is null."""
    if value is None:
        return None
    if isinstance(type_, StructType):
        if not isinstance(value, dict):
            raise _bad(type_, value, "expected a dict of field name to value")
        names = {f.name for f in type_.fields}
        unknown = sorted(str(k) for k in value if k not in names)
        if unknown:
            raise _bad(type_, value, f"no such fields: {', '.join(unknown)}")
        return {
            str(f.field_id): to_json(f.field_type, value[f.name])
            for f in type_.fields
            if f.name in value
        }
    if isinstance(type_, ListType):
        if not isinstance(value, list | tuple):
            raise _bad(type_, value, "expected a list")
        return [to_json(type_.element_type, v) for v in value]
    if isinstance(type_, MapType):
        if not isinstance(value, dict):
            raise _bad(type_, value, "expected a dict")
        return {
            "keys": [to_json(type_.key_type, k) for k in value],
            "values": [to_json(type_.value_type, v) for v in value.values()],
        }
    t = _primitive(type_, "JSON")
    if isinstance(t, UnknownType):
        raise _bad(t, value, "the unknown type is always null")
    return _native.value_to_json(str(t), _to_physical(t, value))


def field_default(field: NestedField, write: bool = False) -> Any:
    """The value of ``field``'s ``initial-default`` (``write``: its ``write-default``), None
    when unset. A struct default that leaves a field out takes that field's own default (the
    spec's rule), at every depth: ``{}`` is the struct of its fields' defaults."""
    raw = field.write_default if write else field.initial_default
    return _default(field.field_type, raw, write)


def column_default(field: NestedField, write: bool = False) -> Any:
    """:func:`field_default` for filling an Arrow column: a date or timestamp default outside
    the years 1 to 9999 that Python's values hold (another engine's ``"+10000-01-01"``) is its
    physical integer (days, or units since the epoch), which Arrow takes as it is."""
    try:
        return field_default(field, write)
    except ValidationError as e:
        raw = field.write_default if write else field.initial_default
        t = field.field_type
        temporal = (
            DateType | TimestampType | TimestamptzType | TimestampNanoType | TimestamptzNanoType
        )
        if isinstance(t, temporal) and isinstance(raw, str):
            value = _native.value_from_json(str(t), raw)
            if isinstance(value, int):
                return value
        kind = "write-default" if write else "initial-default"
        raise ValidationError(f"column {field.name!r} (id {field.field_id}), {kind}: {e}") from None


def _default(type_: IcebergType, raw: Any, write: bool) -> Any:
    if raw is None or not isinstance(type_, StructType):
        return from_json(type_, raw)
    from_json(type_, raw)  # the checks: an object of known field ids
    return {
        f.name: _default(f.field_type, raw[str(f.field_id)], write)
        if str(f.field_id) in raw
        else field_default(f, write)
        for f in type_.fields
    }


def _is_null(obj: dict[str, Any], field_id: int) -> bool:
    """Whether the JSON object ``obj`` holds an explicit null for ``field_id`` (a field left
    out takes its own default instead)."""
    key = str(field_id)
    return key in obj and obj[key] is None


def from_json(type_: IcebergType, json_value: Any) -> Any:
    """The value of ``type_`` whose JSON single-value form is ``json_value`` (as from
    ``json.loads``); JSON null is None."""
    if json_value is None:
        return None
    if isinstance(type_, StructType):
        if not isinstance(json_value, dict):
            raise _bad(type_, json_value, "expected a JSON object keyed by field id")
        ids = {str(f.field_id) for f in type_.fields}
        unknown = sorted(k for k in json_value if k not in ids)
        if unknown:
            raise _bad(type_, json_value, f"no such field ids: {', '.join(unknown)}")
        nulls = [f.name for f in type_.fields if f.required and _is_null(json_value, f.field_id)]
        if nulls:
            raise _bad(type_, json_value, f"required field {nulls[0]!r} is null")
        return {
            f.name: from_json(f.field_type, json_value.get(str(f.field_id))) for f in type_.fields
        }
    if isinstance(type_, ListType):
        if not isinstance(json_value, list):
            raise _bad(type_, json_value, "expected a JSON array")
        if type_.element_required and any(v is None for v in json_value):
            raise _bad(type_, json_value, "the elements are required: null is not one")
        return [from_json(type_.element_type, v) for v in json_value]
    if isinstance(type_, MapType):
        if (
            not isinstance(json_value, dict)
            or set(json_value) != {"keys", "values"}
            or not isinstance(json_value["keys"], list)
            or not isinstance(json_value["values"], list)
        ):
            raise _bad(type_, json_value, 'expected {"keys": [...], "values": [...]}')
        keys, vals = json_value["keys"], json_value["values"]
        if len(keys) != len(vals):
            raise _bad(type_, json_value, f"{len(keys)} keys but {len(vals)} values")
        if any(k is None for k in keys):
            raise _bad(type_, json_value, "a map key cannot be null")
        if type_.value_required and any(v is None for v in vals):
            raise _bad(type_, json_value, "the values are required: null is not one")
        out = {}
        for k, v in zip(keys, vals, strict=True):
            key = from_json(type_.key_type, k)
            try:
                out[key] = from_json(type_.value_type, v)
            except TypeError as e:
                raise _bad(type_, json_value, "map keys must be hashable") from e
        return out
    t = _primitive(type_, "JSON")
    if isinstance(t, UnknownType):
        raise _bad(t, json_value, "the unknown type is always null")
    if isinstance(json_value, bool) and not isinstance(t, BooleanType):
        raise _bad(t, json_value, "a JSON boolean is only valid for boolean")
    if not isinstance(json_value, bool | int | float | str):
        raise _bad(t, json_value, "not a JSON scalar")
    if isinstance(t, IntegerType | LongType) and isinstance(json_value, float):
        raise _bad(t, json_value, "expected a JSON integer")
    if isinstance(json_value, float) and not math.isfinite(json_value):
        raise _bad(t, json_value, "JSON numbers are finite: NaN and infinity have no JSON form")
    if isinstance(t, StringType | FixedType) and not isinstance(json_value, str):
        raise _bad(t, json_value, "expected a JSON string")
    return _from_physical(t, _native.value_from_json(str(t), json_value))
