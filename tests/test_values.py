"""Single-value serialisation: spec Appendix D vectors (spec-facts.md 3.3-3.4), round trips,
invalid inputs, the vectorised decode of bound columns, and PyIceberg's conversions as oracle."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import struct
import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg import conversions as pconv
from pyiceberg import types as pty

from icefloe import _native, values
from icefloe.exceptions import ValidationError
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    GeometryType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
    VariantType,
)

UTC = dt.timezone.utc
UUID = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")

# spec-facts.md 3.3 (TestConversions)
BINARY_VECTORS: list[tuple[IcebergType, Any, str]] = [
    (BooleanType(), False, "00"),
    (BooleanType(), True, "01"),
    (IntegerType(), 84202, "ea480100"),
    (LongType(), 200, "c800000000000000"),
    (FloatType(), -4.5, "000090c0"),
    (DoubleType(), 6.0, "0000000000001840"),
    (DateType(), dt.date(1970, 1, 1) + dt.timedelta(days=1000), "e8030000"),
    (TimeType(), dt.time(0, 0, 0, 10000), "1027000000000000"),
    (TimestampType(), dt.datetime(1970, 1, 1, 0, 0, 0, 400000), "801a060000000000"),
    (TimestamptzType(), dt.datetime(1970, 1, 1, 0, 0, 0, 400000, UTC), "801a060000000000"),
    (TimestampNanoType(), 400000000, "0084d71700000000"),
    (TimestamptzNanoType(), 400000000, "0084d71700000000"),
    (StringType(), "ABC", "414243"),
    (UUIDType(), UUID, "f79c3e09677c4bbda4793f349cb785e7"),
    (FixedType(2), b"ab", "6162"),
    (BinaryType(), b"Z", "5a"),
    (DecimalType(3, 2), Decimal("3.45"), "0159"),
    (DecimalType(7, 4), Decimal("123.4567"), "12d687"),
    (DecimalType(7, 4), Decimal("-123.4567"), "ed2979"),
    (DecimalType(10, 3), Decimal("0.011"), "0b"),
]


@pytest.mark.parametrize(("t", "value", "hexed"), BINARY_VECTORS, ids=lambda x: str(x))
def test_binary_vectors(t: IcebergType, value: Any, hexed: str) -> None:
    assert values.to_bytes(t, value).hex() == hexed
    back = values.from_bytes(t, bytes.fromhex(hexed))
    assert back == value and type(back) is type(value)


@pytest.mark.parametrize(("t", "value", "hexed"), BINARY_VECTORS, ids=lambda x: str(x))
def test_vectorised_decode_matches_per_value(t: IcebergType, value: Any, hexed: str) -> None:
    col = pa.array([bytes.fromhex(hexed), None, bytes.fromhex(hexed)], pa.binary())
    decoded = _native.decode_values(str(t), col)
    assert decoded.null_count == 1
    got = decoded.to_pylist()
    if isinstance(t, TimestampNanoType | TimestamptzNanoType):
        got = decoded.cast(pa.int64()).to_pylist()
    elif isinstance(t, UUIDType):
        got = [None if g is None else uuid.UUID(bytes=g) for g in got]
    assert got == [value, None, value]
    # and back: the typed column encodes to the same bytes
    assert _native.encode_values(str(t), decoded).to_pylist() == col.to_pylist()


def test_decode_types_and_promotion() -> None:
    col = pa.array([bytes.fromhex("ea480100"), bytes.fromhex("c800000000000000")])
    out = _native.decode_values("long", col)
    assert out.type == pa.int64() and out.to_pylist() == [84202, 200]
    out = _native.decode_values("double", pa.array([bytes.fromhex("000090c0")]))
    assert out.to_pylist() == [-4.5]
    assert _native.decode_values("timestamptz", pa.array([b"\0" * 8])).type == pa.timestamp(
        "us", tz="UTC"
    )
    assert _native.decode_values("decimal(7,4)", pa.array([b"\x12\xd6\x87"])).type == (
        pa.decimal128(7, 4)
    )
    assert _native.decode_values("uuid", pa.array([UUID.bytes])).type == pa.binary(16)
    for typ in (pa.large_binary(), pa.binary_view()):
        col = pa.array([bytes.fromhex("ea480100"), None], typ)
        assert _native.decode_values("int", col).to_pylist() == [84202, None]


def test_decode_reports_the_bad_slot() -> None:
    col = pa.array([bytes.fromhex("ea480100"), b"\x01\x02"])
    with pytest.raises(ValidationError, match=r"value 1: .*0102"):
        _native.decode_values("int", col)
    with pytest.raises(ValidationError, match="string"):
        _native.decode_values("string", pa.array([b"\xff"]))
    with pytest.raises(ValidationError, match="binary"):
        _native.decode_values("int", pa.array([1]))


def test_readers_accept_any_nonzero_true_and_promoted_widths() -> None:
    assert values.from_bytes(BooleanType(), b"\x07") is True
    assert values.from_bytes(LongType(), bytes.fromhex("ea480100")) == 84202
    assert values.from_bytes(DoubleType(), bytes.fromhex("000090c0")) == -4.5


@pytest.mark.parametrize(
    ("t", "data"),
    [
        (IntegerType(), b"\x01\x02"),
        (LongType(), b"\x01\x02\x03"),
        (UUIDType(), b"\x00" * 15),
        (FixedType(3), b"ab"),
        (StringType(), b"\xff\xfe"),
        (BooleanType(), b""),
        (DecimalType(9, 2), b""),
        (TimestampType(), b"\x00" * 4),
    ],
)
def test_malformed_bytes_raise(t: IcebergType, data: bytes) -> None:
    with pytest.raises(ValidationError, match=re.escape(str(t))):
        values.from_bytes(t, data)


@pytest.mark.parametrize(
    ("t", "value", "match"),
    [
        (IntegerType(), 2**31, "out of range"),
        (DecimalType(3, 2), Decimal("10.00"), "out of range"),
        (DecimalType(3, 2), Decimal("1.234"), "digits after the point"),
        (FixedType(3), b"ab", "must be 3"),
        (TimestamptzType(), dt.datetime(2020, 1, 1), "aware"),
        (TimestampType(), dt.datetime(2020, 1, 1, tzinfo=UTC), "naive"),
        (DateType(), "2020-01-01", "datetime.date"),
        (VariantType(), b"x", "variant"),
        (StructType(), {}, "struct"),
        (IntegerType(), None, "null"),
    ],
)
def test_bad_values_raise(t: IcebergType, value: Any, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        values.to_bytes(t, value)


def test_geometry_bounds_and_wkb() -> None:
    b = values.point_to_bytes(1.0, 2.0, None, 4.0)
    assert b[16:24].hex() == "000000000000f87f"  # NaN z when only m is set
    assert values.point_from_bytes(b) == (1.0, 2.0, None, 4.0)
    assert values.point_from_bytes(values.point_to_bytes(1.0, 2.0)) == (1.0, 2.0, None, None)
    assert len(values.point_to_bytes(1.0, 2.0, 3.0)) == 24
    with pytest.raises(ValidationError, match="17 bytes"):
        values.point_from_bytes(b"\0" * 17)
    wkb = bytes.fromhex("0101000000000000000000f03f0000000000000040")
    assert values.to_bytes(GeometryType(), wkb) == wkb
    assert values.from_bytes(GeometryType(), wkb) == wkb


# ---------------------------------------------------------------------------------------------
# JSON (spec-facts.md 3.4, TestSingleValueParser)

JSON_VECTORS: list[tuple[IcebergType, str, Any]] = [
    (BooleanType(), "true", True),
    (IntegerType(), "1", 1),
    (LongType(), "9999999", 9999999),
    (FloatType(), "1.23", struct.unpack("<f", struct.pack("<f", 1.23))[0]),
    (DoubleType(), "123.456", 123.456),
    (DateType(), '"2007-12-03"', dt.date(2007, 12, 3)),
    (TimeType(), '"10:15:30"', dt.time(10, 15, 30)),
    (TimestampType(), '"2007-12-03T10:15:30"', dt.datetime(2007, 12, 3, 10, 15, 30)),
    (
        TimestamptzType(),
        '"2007-12-03T10:15:30+00:00"',
        dt.datetime(2007, 12, 3, 10, 15, 30, tzinfo=UTC),
    ),
    (TimestampNanoType(), '"2007-12-03T10:15:30.123456789"', 1196676930123456789),
    (TimestamptzNanoType(), '"2007-12-03T10:15:30.123456789+00:00"', 1196676930123456789),
    (StringType(), '"foo"', "foo"),
    (
        UUIDType(),
        '"eb26bdb1-a1d8-4aa6-990e-da940875492c"',
        uuid.UUID("eb26bdb1-a1d8-4aa6-990e-da940875492c"),
    ),
    (FixedType(2), '"111f"', b"\x11\x1f"),
    (BinaryType(), '"0000ff"', b"\x00\x00\xff"),
    (DecimalType(9, 4), '"123.4500"', Decimal("123.4500")),
    (DecimalType(9, 0), '"2"', Decimal("2")),
    (DecimalType(4, 2), '"14.20"', Decimal("14.20")),
    (ListType(1, IntegerType()), "[1, 2, 3]", [1, 2, 3]),
    (
        MapType(1, IntegerType(), 2, StringType()),
        '{"keys": [1, 2], "values": ["foo", "bar"]}',
        {1: "foo", 2: "bar"},
    ),
    (
        StructType(NestedField(4, "a", IntegerType()), NestedField(5, "b", StringType())),
        '{"4": 1, "5": "bar"}',
        {"a": 1, "b": "bar"},
    ),
]


@pytest.mark.parametrize(("t", "text", "value"), JSON_VECTORS, ids=lambda x: str(x))
def test_json_vectors(t: IcebergType, text: str, value: Any) -> None:
    parsed = values.from_json(t, json.loads(text))
    assert parsed == value and type(parsed) is type(value)
    assert values.to_json(t, value) == json.loads(text)


def test_json_negative_scale_decimal_in_the_core() -> None:
    # decimal(9,-20) "2E+20" (TestSingleValueParser); icefloe.types keeps scale >= 0
    assert _native.value_from_json("decimal(9,-20)", "2E+20") == 2
    assert _native.value_to_json("decimal(9,-20)", 2) == "2E+20"


def test_json_text_forms() -> None:
    assert values.to_json(TimeType(), dt.time(0, 0, 0, 100000)) == "00:00:00.1"
    assert values.to_json(TimestampType(), dt.datetime(1969, 12, 31, 23, 59, 59, 999999)) == (
        "1969-12-31T23:59:59.999999"
    )
    assert values.to_json(FloatType(), 1.1) == 1.1  # shortest form of the float, not 1.10000002
    assert values.to_json(DecimalType(10, 10), Decimal("1E-10")) == "0.0000000001"  # plain, as Java
    assert values.to_json(DateType(), dt.date(1, 1, 1)) == "0001-01-01"
    assert values.from_json(TimeType(), "10:15") == dt.time(10, 15)
    aware = dt.datetime(2007, 12, 3, 11, 15, 30, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert values.to_json(TimestamptzType(), aware) == "2007-12-03T10:15:30+00:00"
    assert values.to_json(UUIDType(), UUID) == str(UUID)
    assert values.to_json(BinaryType(), b"\x00\x01\x02\xff") == "000102ff"
    assert values.from_json(BinaryType(), "0A0b") == b"\x0a\x0b"
    assert values.to_json(IntegerType(), None) is None
    assert values.from_json(UnknownType(), None) is None


@pytest.mark.parametrize(
    ("t", "json_value", "match"),
    [
        (FixedType(2), "111ff", "hexadecimal"),
        (TimestamptzType(), "2007-12-03T10:15:30+01:00", r"\+00:00"),
        (TimestamptzType(), "2007-12-03T10:15:30", r"\+00:00"),
        (TimestampType(), "2007-12-03T10:15:30+00:00", "zone offset"),
        (TimestampType(), "2007-12-03T10:15:30.1234567", "fraction digits"),
        (DecimalType(9, 4), 123.45, "JSON string"),
        (DecimalType(9, 4), "123.45", "scale"),
        (DecimalType(3, 0), "1234", "out of range"),
        (
            MapType(1, IntegerType(), 2, StringType()),
            {"keys": [1, 2], "values": ["foo"]},
            "2 keys but 1 values",
        ),
        (IntegerType(), 1.5, "JSON integer"),
        (IntegerType(), 2**40, "out of range"),
        (IntegerType(), True, "boolean"),
        (BooleanType(), 1, "wrong JSON kind"),
        (StringType(), 1, "JSON string"),
        (DateType(), "2023-02-30", "ISO-8601 date"),
        (DateType(), "2023-2-3", "ISO-8601 date"),
        (UUIDType(), "not-a-uuid", "uuid"),
        (ListType(1, IntegerType()), {"a": 1}, "JSON array"),
        (StructType(NestedField(4, "a", IntegerType())), {"9": 1}, "no such field ids: 9"),
        (UnknownType(), 1, "always null"),
    ],
)
def test_invalid_json_rejected(t: IcebergType, json_value: Any, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        values.from_json(t, json_value)


def test_json_cannot_hold_nan() -> None:
    with pytest.raises(ValidationError, match="finite"):
        values.to_json(DoubleType(), math.nan)


# ---------------------------------------------------------------------------------------------
# round trips, with PyIceberg's conversions as an independent oracle for the binary form

PY_TYPES: list[tuple[IcebergType, Any, st.SearchStrategy[Any]]] = [
    (BooleanType(), pty.BooleanType(), st.booleans()),
    (IntegerType(), pty.IntegerType(), st.integers(-(2**31), 2**31 - 1)),
    (LongType(), pty.LongType(), st.integers(-(2**63), 2**63 - 1)),
    (DoubleType(), pty.DoubleType(), st.floats(allow_nan=False, allow_infinity=False)),
    (FloatType(), pty.FloatType(), st.floats(width=32, allow_nan=False, allow_infinity=False)),
    (StringType(), pty.StringType(), st.text()),
    (BinaryType(), pty.BinaryType(), st.binary()),
    (FixedType(7), pty.FixedType(7), st.binary(min_size=7, max_size=7)),
    (UUIDType(), pty.UUIDType(), st.uuids()),
    (
        DecimalType(38, 9),
        pty.DecimalType(38, 9),
        st.integers(-(10**38) + 1, 10**38 - 1).map(lambda u: Decimal(f"{u}e-9")),
    ),
    (DecimalType(5, 0), pty.DecimalType(5, 0), st.integers(-99999, 99999).map(Decimal)),
    (DateType(), pty.DateType(), st.dates()),
    (TimeType(), pty.TimeType(), st.times()),
    (TimestampType(), pty.TimestampType(), st.datetimes()),
    (TimestamptzType(), pty.TimestamptzType(), st.datetimes(timezones=st.just(UTC))),
    (TimestampNanoType(), pty.TimestampNanoType(), st.integers(-(2**63), 2**63 - 1)),
]


def _pyiceberg_internal(ptype: Any, v: Any) -> Any:
    from pyiceberg.utils import datetime as pdt

    if isinstance(ptype, pty.DateType):
        return pdt.date_to_days(v)
    if isinstance(ptype, pty.TimeType):
        return pdt.time_to_micros(v)
    if isinstance(ptype, pty.TimestampType | pty.TimestamptzType):
        return pdt.datetime_to_micros(v)
    return v


@pytest.mark.parametrize(("t", "ptype", "strategy"), PY_TYPES, ids=[str(p[0]) for p in PY_TYPES])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_round_trips_and_matches_pyiceberg(
    t: IcebergType, ptype: Any, strategy: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    v = data.draw(strategy)
    b = values.to_bytes(t, v)
    assert values.from_bytes(t, b) == v
    assert b == pconv.to_bytes(ptype, _pyiceberg_internal(ptype, v))
    j = values.to_json(t, v)
    assert values.from_json(t, json.loads(json.dumps(j))) == v
