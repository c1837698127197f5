"""Variant values: encoding and decoding in Rust (hypothesis round trip, JSON, malformed bytes),
appending variant columns in every accepted form, the Parquet VARIANT annotation on written
files, reading shredded groups, and filters on variant columns."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe import variant
from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.exceptions import UnsupportedFeatureError, ValidationError
from icefloe.expressions.builder import col
from icefloe.schema import Schema
from icefloe.types import IntegerType, NestedField, StructType, VariantType

# Python values with a variant form that decodes to the same Python type.
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(min_value=-(10**38) + 1, max_value=10**38 - 1),
    st.floats(allow_nan=False),
    st.text(),
    st.binary(),
    st.dates(),
    st.datetimes(),
    st.datetimes(timezones=st.just(dt.UTC)),
    st.times(),
    st.builds(
        lambda digits, scale: Decimal(digits).scaleb(-scale),
        st.integers(-(10**30), 10**30),
        st.integers(0, 8),
    ),
    st.uuids(),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


def _same(a: Any, b: Any) -> bool:
    """``a`` (decoded) equals ``b`` (encoded) with the same Python types all the way down (True
    is not 1); an int beyond int64 decodes as a decimal(38, 0)."""
    if isinstance(a, Decimal) and type(b) is int and abs(b) >= 2**63:
        return a == b and a.as_tuple().exponent == 0
    if type(a) is not type(b):
        return isinstance(a, int) and isinstance(b, int) and not isinstance(a | b, bool) and a == b
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dt.datetime):
        return a == b and (a.tzinfo is None) == (b.tzinfo is None)
    return bool(a == b)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_python_round_trip(value: Any) -> None:
    v = variant.from_python(value)
    back = variant.to_python(v.metadata, v.value)
    assert _same(back, value), (back, value)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), _values), max_size=20))
def test_column_round_trip_keeps_null_rows(values: list[Any]) -> None:
    col_ = variant.from_pylist(values)
    assert col_.type == variant.STORAGE_TYPE
    assert col_.null_count == sum(v is None for v in values)
    back = variant.to_pylist(pa.chunked_array([col_.slice(0, 3), col_.slice(3)]))
    assert all(_same(b, v) for b, v in zip(back, values, strict=True))


_json_docs = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(st.lists(_json_docs, max_size=10))
def test_json_round_trip_equals_json_module(docs: list[Any]) -> None:
    texts = [json.dumps(d) for d in docs]
    enc = variant.from_json(pa.array(texts, pa.string()))
    assert [json.loads(s) for s in variant.to_json(enc).to_pylist()] == docs
    assert variant.to_pylist(enc) == docs


def test_scalar_api_and_spec_bytes() -> None:
    v = variant.from_json('{"b": [1, 2.5, "x"], "a": null}')
    assert v.to_python() == {"a": None, "b": [1, 2.5, "x"]}
    assert json.loads(v.to_json()) == {"a": None, "b": [1, 2.5, "x"]}
    # VariantEncoding.md: int8 is primitive type 3 (header 3 << 2); an empty dictionary is
    # version 1, one-byte offsets, size 0, one offset 0.
    one = variant.from_python(1)
    assert (one.metadata, one.value) == (b"\x01\x00\x00", b"\x0c\x01")
    # A short string: basic type 1 with the length in the header.
    assert variant.from_python("hi").value == bytes([(2 << 2) | 1]) + b"hi"


def test_encodings_of_python_types() -> None:
    t = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    back = variant.from_python(t).to_python()
    assert back == t and back.tzinfo == dt.UTC
    assert variant.from_python((1, "a")).to_python() == [1, "a"]
    assert variant.from_python(bytearray(b"ab")).to_python() == b"ab"
    assert variant.from_python(Decimal("-1.50")).to_python() == Decimal("-1.50")
    u = uuid.uuid4()
    assert variant.from_python(u).to_python() == u


def test_pandas_timestamps_keep_their_nanoseconds() -> None:
    """A ``pandas.Timestamp`` with nanoseconds is a nanosecond timestamp (the variant type
    ids 18 and 19, as Arrow nanosecond values become); its sub-microsecond digits were
    dropped. One without them stays a microsecond timestamp."""
    pd = pytest.importorskip("pandas")
    naive = variant.from_python(pd.Timestamp("2020-01-01 00:00:00.000000001"))
    assert naive.value[0] >> 2 == 19 and naive.to_json() == '"2020-01-01T00:00:00.000000001"'
    aware = variant.from_python({"t": pd.Timestamp("2020-01-01 02:00:00.123456789+02:00")})
    assert json.loads(aware.to_json()) == {"t": "2020-01-01T00:00:00.123456789+00:00"}
    whole = variant.from_python(pd.Timestamp("2020-01-01 00:00:00.000001"))
    assert whole.value[0] >> 2 == 13 and whole.to_python() == dt.datetime(2020, 1, 1, 0, 0, 0, 1)
    ns = pa.array([pd.Timestamp("2020-01-01 00:00:00.000000001")], pa.timestamp("ns"))
    assert variant.to_json(variant.from_arrow(ns)).to_pylist() == [naive.to_json()]


@pytest.mark.parametrize(
    "bad",
    [
        {1: "int key"},
        object(),
        Decimal("NaN"),
        10**40,
        dt.time(1, 2, tzinfo=dt.UTC),
        "\ud800",  # a lone surrogate: not Unicode text
        {"k": ["\udfff"]},
    ],
)
def test_unencodable_values_are_validation_errors(bad: Any) -> None:
    with pytest.raises(ValidationError):
        variant.from_python(bad)


def test_self_referencing_list_is_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValidationError, match="deeper"):
        variant.from_python(loop)


def test_json_of_non_finite_doubles_is_strict() -> None:
    """JSON has no NaN or infinities: they are written as Jackson writes them, strings, and
    only outside string values."""
    value = {"n": float("nan"), "p": [float("inf"), -float("inf"), 1.5], "s": "NaN inf"}
    text = variant.from_python(value).to_json()

    def refuse(token: str) -> None:
        raise ValueError(token)

    assert json.loads(text, parse_constant=refuse) == {
        "n": "NaN",
        "p": ["Infinity", "-Infinity", 1.5],
        "s": "NaN inf",
    }
    column = variant.to_json(variant.from_pylist([value, None, 2.0]))
    assert [
        None if t is None else json.loads(t, parse_constant=refuse) for t in column.to_pylist()
    ][1:] == [None, 2.0]


def test_invalid_json_and_malformed_bytes_are_validation_errors() -> None:
    with pytest.raises(ValidationError, match="JSON"):
        variant.from_json("{nope")
    with pytest.raises(ValidationError, match="malformed"):
        variant.to_python(b"\x01\x00\x00", b"\xff\xff\xff")
    with pytest.raises(ValidationError):
        variant.to_python(b"\x07", b"\x0c\x01")  # unknown metadata version


# --- tables ---------------------------------------------------------------------------------

SCHEMA = Schema(
    NestedField(1, "id", IntegerType(), required=True),
    NestedField(2, "v", VariantType()),
    NestedField(3, "s", StructType(NestedField(4, "inner", VariantType()))),
)


@pytest.fixture
def table(tmp_path: Path) -> Any:
    cat = HadoopCatalog("v", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat.create_table("db.t", SCHEMA, format_version=3)


VALUES = [{"a": 1, "b": ["x", None]}, [1, 2.5], "text", None, 7]


def _read(t: Any, ids: list[int]) -> list[Any]:
    out = t.scan().to_arrow().sort_by("id")
    got = dict(zip(out.column("id").to_pylist(), variant.to_pylist(out.column("v")), strict=True))
    return [got[i] for i in ids]


def test_append_accepts_every_form(table: Any) -> None:
    # Python values in a mapping, and in a pandas object column.
    table.append({"id": [0, 1, 2, 3, 4], "v": VALUES})
    pd = pytest.importorskip("pandas")
    table.append(pd.DataFrame({"id": [10, 11], "v": [{"p": True}, None]}))
    # JSON strings.
    table.append(pa.table({"id": pa.array([20, 21], pa.int32()), "v": ['{"j": [1]}', None]}))
    # An encoded struct with default (nullable) children: refused on nullability before.
    enc = variant.from_pylist([{"e": 1}, "two"])
    plain = pa.StructArray.from_arrays([enc.field(0), enc.field(1)], names=["metadata", "value"])
    table.append(pa.table({"id": pa.array([30, 31], pa.int32()), "v": plain}))
    # Any other Arrow values are cast value by value.
    table.append(pa.table({"id": pa.array([40], pa.int32()), "v": pa.array([{"k": 5}])}))
    # arrow.uuid values are variant uuids, as uuid.UUID values are (not binary)
    u = uuid.UUID(int=7)
    table.append(pa.table({"id": pa.array([50], pa.int32()), "v": pa.array([u.bytes], pa.uuid())}))
    got = _read(table, [0, 1, 2, 3, 4, 10, 11, 20, 21, 30, 31, 40, 50])
    assert got == [*VALUES, {"p": True}, None, {"j": [1]}, None, {"e": 1}, "two", {"k": 5}, u]
    out = table.scan().to_arrow()
    assert out.schema.field("v").type == variant.STORAGE_TYPE  # encoded by default


def test_arrow_values_become_the_variants_python_values_do() -> None:
    """An Arrow struct, list or map gives the variant its Python values give: a null field is
    a variant null under its key (arrow-rs's cast left the key out), an ``arrow.uuid`` value a
    variant uuid at any depth (it was binary when nested); a struct or map naming one key
    twice is refused (one value was dropped)."""
    u = uuid.UUID(int=(1 << 127) + 9)
    rows = [
        {"k": 5, "x": None, "u": u, "l": [u, None], "m": [("a", None), ("b", 2)]},
        {"k": None, "x": "s", "u": None, "l": None, "m": None},
    ]
    uuids = pa.array([u.bytes, None], pa.uuid())  # pyarrow builds no nested uuids from Python
    lists = pa.ListArray.from_arrays(
        pa.array([0, 2, 2]), pa.array([u.bytes, None], pa.uuid()), mask=pa.array([False, True])
    )
    arrow = pa.StructArray.from_arrays(
        [
            pa.array([5, None], pa.int64()),
            pa.array([None, "s"]),
            uuids,
            lists,
            pa.array([r["m"] for r in rows], pa.map_(pa.string(), pa.int64())),
        ],
        names=["k", "x", "u", "l", "m"],
    )
    expected = [{**r, "m": dict(r["m"]) if r["m"] else None} for r in rows]
    assert variant.to_pylist(variant.from_arrow(arrow)) == expected
    assert variant.to_pylist(variant.from_pylist(expected)) == expected
    top = pa.array([None, u.bytes, None], pa.uuid()).slice(1)
    assert variant.to_pylist(variant.from_arrow(top)) == [u, None]
    assert variant.to_pylist(variant.from_arrow(pa.chunked_array([top, top]))) == [u, None] * 2
    twice = pa.StructArray.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    with pytest.raises(ValidationError, match="two fields named"):
        variant.from_arrow(twice)
    keys = pa.array([[("a", 1), ("a", 2)]], pa.map_(pa.string(), pa.int64()))
    with pytest.raises(ValidationError, match="twice"):
        variant.from_arrow(keys)


def test_a_void_partition_of_a_variant_column(table: Any) -> None:
    """A void transform takes any source (as in Iceberg Java): its partition value is always
    null, so rows of a variant column append, read, list and compact as one partition."""
    with table.update_spec() as u:
        u.add_field("v", "void")
    table.append({"id": [0, 1, 2, 3, 4], "v": VALUES})
    table.append({"id": [5], "v": [{"z": 0}]})
    assert _read(table, [0, 1, 2, 3, 4, 5]) == [*VALUES, {"z": 0}]
    (part,) = table.inspect.partitions().to_pylist()
    assert part["record_count"] == 6 and list(part["partition"].values()) == [None]
    table.rewrite_data_files(min_input_files=1)
    assert len(table.scan().plan_files()) == 1
    assert _read(table, [0, 1, 2, 3, 4, 5]) == [*VALUES, {"z": 0}]


def test_append_refuses_malformed_variants(table: Any) -> None:
    bad = pa.StructArray.from_arrays(
        [pa.array([b"\x01\x00\x00"]), pa.array([b"\xff\x00"])], names=["metadata", "value"]
    )
    with pytest.raises(ValidationError, match="variant column 'v'"):
        table.append(pa.table({"id": pa.array([1], pa.int32()), "v": bad}))
    with pytest.raises(ValidationError, match="JSON"):
        table.append(pa.table({"id": pa.array([1], pa.int32()), "v": ["{bad"]}))
    # a variant time holds microseconds: nanoseconds would be cut, at any depth
    ns = pa.array([1_000, 1_500], pa.time64("ns"))
    for column in (
        ns,
        pa.StructArray.from_arrays([ns], names=["t"]),
        pa.array([[1500]], pa.list_(pa.time64("ns"))),
    ):
        with pytest.raises(ValidationError, match="whole microseconds"):
            table.append(pa.table({"id": pa.array([1] * len(column), pa.int32()), "v": column}))
    assert table.current_snapshot() is None
    assert len(variant.from_arrow(pa.array([2_000], pa.time64("ns")))) == 1  # exact: encoded


def test_python_values_of_nested_variants_are_refused_clearly(table: Any) -> None:
    """Python values are encoded for top-level variant columns; inside a struct Arrow would
    infer a type from them, which mixed values do not have: a typed error says what to do."""
    with pytest.raises(ValidationError, match="from_pylist"):
        table.append({"id": [1, 2], "v": [1, 2], "s": [{"inner": {"a": 1}}, {"inner": "s"}]})
    assert table.current_snapshot() is None


def test_written_files_carry_the_variant_annotation(table: Any) -> None:
    inner = variant.from_pylist([{"n": 1}, None])
    s = pa.StructArray.from_arrays([inner], names=["inner"])
    table.append(pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["1", "[2]"], "s": s}))
    (task,) = table.scan().plan_files()
    path = task.data_file.file_path.removeprefix("file://")
    schema = pq.read_metadata(path).schema
    text = str(schema)
    assert text.count("(Variant(1))") == 2, text  # top-level and nested
    # Page CRCs stay valid (data pages did not move) and pyarrow still reads the file.
    back = pq.read_table(path, page_checksum_verification=True)
    assert back.num_rows == 2
    assert task.data_file.file_size_in_bytes == Path(path).stat().st_size
    out = table.scan().to_arrow().sort_by("id")
    assert variant.to_pylist(out.column("v")) == [1, [2]]
    assert variant.to_pylist(out.column("s").combine_chunks().field("inner")) == [{"n": 1}, None]


def test_filters_on_variant_columns(table: Any) -> None:
    table.append({"id": [1, 2], "v": [{"a": 1}, None]})
    with pytest.raises(UnsupportedFeatureError, match="variant column 'v'"):
        table.scan(row_filter=col("v") == 1).to_arrow()
    with pytest.raises(UnsupportedFeatureError):
        table.scan(row_filter="v > 3").to_arrow()
    assert table.scan(row_filter=col("v").is_null()).to_arrow().column("id").to_pylist() == [2]
    got = table.scan(row_filter=col("v").is_not_null()).to_arrow()
    assert variant.to_pylist(got.column("v")) == [{"a": 1}]


def test_shredded_groups_are_unshredded() -> None:
    # typed_value holds the int of row 0; row 1 is in value; row 2 is null.
    meta = variant.from_python(None).metadata
    shredded = pa.StructArray.from_arrays(
        [
            pa.array([meta, meta, None], pa.binary()),
            pa.array([None, variant.from_python("s").value, None], pa.binary()),
            pa.array([42, None, None], pa.int64()),
        ],
        names=["metadata", "value", "typed_value"],
        mask=pa.array([False, False, True]),
    )
    assert variant.to_pylist(shredded) == [42, "s", None]
    norm = variant.normalize(shredded)
    assert norm.type == variant.STORAGE_TYPE
    assert variant.to_pylist(norm) == [42, "s", None]


def test_dates_python_cannot_hold_are_validation_errors() -> None:
    """Variant dates and timestamps span more years than Python's (Spark writes year 10000):
    reading one as a Python value is a typed error pointing at ``to_json``, which reads it."""
    days = pa.array([0, 3_000_000, -800_000], pa.int32()).cast(pa.date32())
    col = variant.from_arrow(days)
    text = variant.to_json(col).to_pylist()
    assert text[0] == '"1970-01-01"'
    assert text[1].startswith('"+10183-') and text[2].startswith('"-0221-')
    with pytest.raises(ValidationError, match="to_json"):
        variant.to_pylist(col)
    one = variant.from_arrow(days.slice(1, 1))
    with pytest.raises(ValidationError, match="year 1 to 9999"):
        variant.to_python(one.field(0)[0].as_py(), one.field(1)[0].as_py())


def test_malformed_bytes_are_not_blamed_on_python_dates() -> None:
    """Bytes that are no variant are refused as malformed by ``to_python`` as by ``to_json``,
    without the hint (meant for dates Python cannot hold) that ``to_json`` would read them."""
    metadata = bytes([0x01, 2, 0, 1, 2]) + b"ab"
    unsorted = bytes([0x02, 2, 1, 0, 0, 2, 4, 0x0C, 1, 0x0C, 2])  # field ids out of name order
    for read in (variant.to_python, variant.to_json):
        with pytest.raises(ValidationError, match="malformed") as info:
            read(metadata, unsorted)
        assert "to_json reads it" not in str(info.value)


@pytest.mark.parametrize("kind", ["variant", "struct", "geometry"])
def test_keys_must_be_primitive_columns(tmp_path: Path, kind: str) -> None:
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.types import GeometryType

    column: Any = {
        "variant": VariantType(),
        "struct": StructType(NestedField(10, "x", IntegerType())),
        "geometry": GeometryType(),
    }[kind]
    cat = SqlCatalog("k", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "w"))
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", IntegerType(), required=True), NestedField(2, "v", column))
    t = cat.create_table("db.t", schema, format_version=3)
    with pytest.raises(ValidationError, match=r"'v' .* cannot be a key column"):
        t.delete_by_keys({"v": [None]}, join_cols=["v"])
    with pytest.raises(ValidationError, match=r"'v' .* cannot be a key column"):
        t.upsert({"id": [1], "v": [None]}, join_cols=["v"])
    assert t.current_snapshot() is None


def test_json_numbers_keep_their_digits_as_spark_stores_them() -> None:
    """JSON text keeps every digit: integers beyond int64 and numbers with a fraction become
    decimals (as Spark's ``parse_json`` stores them), exponents doubles."""
    doc = '{"big": 98765432109876543210, "frac": 1.23456789012345678, "e": 1e300, "n": 7}'
    value = variant.to_pylist(variant.from_json([doc]))[0]
    assert value == {
        "big": Decimal("98765432109876543210"),
        "frac": Decimal("1.23456789012345678"),
        "e": 1e300,
        "n": 7,
    }
    assert isinstance(value["e"], float) and isinstance(value["n"], int)
    text = variant.to_json(variant.from_json([doc])).to_pylist()[0]
    assert "98765432109876543210" in text and "1.23456789012345678" in text


def _spark_number(text: str) -> Decimal | float | int:
    """The value Spark's ``parse_json`` stores for the JSON number ``text``: an int64 as an
    integer; an integer beyond it, or a number with a fraction and no exponent, as a decimal
    when its precision and its scale are both at most 38; anything else as a double."""
    if "e" not in text.lower() and "." not in text and -(2**63) <= int(text) < 2**63:
        return int(text)
    d = Decimal(text)
    if "e" in text.lower() or len(d.as_tuple().digits) > 38 or -d.as_tuple().exponent > 38:
        return float(text)
    return d


def _decimal_width_fits(value: bytes, text: str) -> bool:
    """A decimal's width (type ids 8, 9, 10: 4, 8, 16 bytes) holds its digits and its scale,
    as the spec requires, and is the smallest that does (as Spark picks it)."""
    t = Decimal(text).as_tuple()
    precision = max(len(t.digits), -int(t.exponent))
    return value[0] >> 2 == (8 if precision <= 9 else 9 if precision <= 18 else 10)


_json_numbers = st.builds(
    lambda sign, whole, fraction, exponent: f"{sign}{whole}{fraction}{exponent}",
    st.sampled_from(["", "-"]),
    st.one_of(st.just("0"), st.integers(1, 10**45).map(str)),
    st.one_of(
        st.just(""),
        # leading zeros make the scale exceed the digit count (0.0000000001: 1 digit, scale 10)
        st.builds(
            lambda zeros, digits: "." + "0" * zeros + digits,
            st.integers(0, 42),
            st.text("0123456789", max_size=25),
        ).filter(lambda f: f != "."),
    ),
    st.one_of(st.just(""), st.integers(-30, 30).map("e{}".format)),
)

#: Numbers with more fraction digits than their digit count: each was once written with a
#: decimal width whose precision is below its scale, which no reader (icefloe, Spark) decodes.
SMALL_FRACTIONS = [
    "0.0000000001",
    "0.0000000000",
    "-0.00000000000000000001",
    "0.0000000000000000001",
    "0." + "0" * 37 + "1",
    "-0." + "0" * 37 + "1",
    "0." + "0" * 38 + "1",  # scale 39: a double, as Spark stores it
]


@settings(max_examples=200, deadline=None)
@given(st.lists(_json_numbers, min_size=1, max_size=8))
def test_json_numbers_decode_to_the_values_spark_stores(texts: list[str]) -> None:
    """Every JSON number decodes to its exact value (a decimal) or its double, as Spark's
    ``parse_json`` stores it, alone and inside arrays and objects; a decimal's width always
    holds its scale."""
    items = [f'"{i}": {t}' for i, t in enumerate(texts)]
    docs = [*texts, "[" + ", ".join(texts) + "]", "{" + ", ".join(items) + "}"]
    enc = variant.from_json(docs)
    want = [_spark_number(t) for t in texts]
    got = variant.to_pylist(enc)
    assert [type(g) for g in got[: len(texts)]] == [type(w) for w in want], texts
    assert got == [*want, want, {str(i): w for i, w in enumerate(want)}]
    values = enc.field("value").to_pylist()
    for text, w, value in zip(texts, want, values, strict=False):
        if isinstance(w, Decimal):
            assert _decimal_width_fits(value, text), (text, value[:2])
    assert variant.to_json(enc).to_pylist()  # decodes to text too


def test_small_fractions_keep_their_value_in_tables(table: Any) -> None:
    """Numbers with more fraction digits than their decimal width's precision allows were
    appended as variants nothing could read back; now each reads back as its value."""
    docs = [*SMALL_FRACTIONS, "[0.00000000001]", '{"a": 0.0000000000001}']
    table.append(pa.table({"id": pa.array(range(len(docs)), pa.int32()), "v": docs}))
    want = [_spark_number(t) for t in SMALL_FRACTIONS]
    assert _read(table, list(range(len(docs)))) == [
        *want,
        [Decimal("1E-11")],
        {"a": Decimal("1E-13")},
    ]
    enc = variant.from_json(SMALL_FRACTIONS[:-1])
    for text, value in zip(SMALL_FRACTIONS, enc.field("value").to_pylist(), strict=False):
        assert _decimal_width_fits(value, text), text


def test_json_objects_naming_a_key_twice_are_refused(table: Any) -> None:
    """Spark's ``parse_json`` refuses a repeated key; keeping one of the values was a guess.
    The error names the key and the row (of the whole column, across chunks)."""
    with pytest.raises(ValidationError, match=r'row 1: duplicate object key "a"'):
        variant.from_json(['{"a": 1}', '{"x": [{"a": 1, "b": 2, "a": 3}]}'])
    chunked = pa.chunked_array([['{"k": 1}', None], ['{"k": 1, "k": 1}']])
    with pytest.raises(ValidationError, match=r'row 2: duplicate object key "k"'):
        variant.from_json(chunked)
    with pytest.raises(ValidationError, match=r"variant column 'v': .*row 2: .*key \"k\""):
        table.append(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": chunked}))
    with pytest.raises(ValidationError, match=r"row 0: JSON format error"):
        variant.from_json(["[1,]"])
    assert table.current_snapshot() is None
    # the same key in different objects is not repeated
    assert variant.to_pylist(variant.from_json(['[{"a": 1}, {"a": 2}]'])) == [[{"a": 1}, {"a": 2}]]


def test_objects_in_spark_utf16_field_order_are_read() -> None:
    """Spark 4 orders an object's fields by UTF-16 code units: U+1F600 before U+FF61, the
    spec's byte order the other way round. Such objects are read (as parquet-java reads them);
    objects in neither order are still refused."""
    names = "\uff61\U0001f600".encode()
    metadata = bytes([0x01, 2, 0, 3, 7]) + names  # unsorted dictionary: ["｡", "😀"]
    # an object of two int8 fields, ids in the order 1 ("😀") then 0 ("｡")
    value = bytes([0x02, 2, 1, 0, 0, 2, 4, 0x0C, 2, 0x0C, 1])
    assert variant.to_python(metadata, value) == {"\uff61": 1, "\U0001f600": 2}
    assert variant.to_json(metadata, value) == '{"\U0001f600":2,"\uff61":1}'
    plain = bytes([0x01, 2, 0, 1, 2]) + b"ab"
    with pytest.raises(ValidationError, match="not sorted"):
        variant.to_python(plain, bytes([0x02, 2, 1, 0, 0, 2, 4, 0x0C, 2, 0x0C, 1]))


def test_a_shredded_field_missing_from_the_metadata_is_a_validation_error(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """``typed_value`` shreds an object field ``a`` the row's metadata dictionary does not
    hold: the unshredding panicked (an ``InternalError``, 'a bug') instead of refusing it.
    The refusal prints nothing (the panic hook does not report the caught panic)."""
    obj = variant.from_python({"b": "q"})  # the dictionary holds only "b"
    field_a = pa.StructArray.from_arrays(
        [pa.array([None], pa.binary()), pa.array([1], pa.int64())], names=["value", "typed_value"]
    )
    shredded = pa.StructArray.from_arrays(
        [
            pa.array([obj.metadata], pa.binary()),
            pa.array([obj.value], pa.binary()),
            pa.StructArray.from_arrays([field_a], names=["a"]),
        ],
        names=["metadata", "value", "typed_value"],
    )
    capfd.readouterr()
    with pytest.raises(ValidationError, match="malformed shredded variant"):
        variant.normalize(shredded)
    assert "panicked" not in capfd.readouterr().err
