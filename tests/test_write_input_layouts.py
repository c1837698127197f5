"""Input arrays of every physical layout Arrow allows are written as the values they hold:
slices (a child array holding other rows' values), null list entries backed by values, nulls
of required fields under null parents, chunked streams; pandas frames with their named index.
Decimals and integers written to decimal columns of another precision or scale keep their values
exactly, or are refused naming the value."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.arrow_schema import schema_to_arrow
from icefloe.catalog import load_catalog
from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.types import (
    DecimalType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)
from icefloe.write.input import to_table_schema

I32, I64 = pa.int32(), pa.int64()

#: (input type, table type): a cast is needed for the first pairs, none for the last
LAYOUTS: dict[str, tuple[pa.DataType, pa.DataType]] = {
    "list": (pa.list_(I32), pa.list_(I64)),
    "large_list": (pa.large_list(I64), pa.list_(I64)),
    "map": (pa.map_(pa.string(), I32), pa.map_(pa.string(), I64)),
    "struct_of_map": (
        pa.struct([("m", pa.map_(pa.string(), I32))]),
        pa.struct([("m", pa.map_(pa.string(), I64))]),
    ),
    "list_of_map": (pa.list_(pa.map_(pa.string(), I32)), pa.list_(pa.map_(pa.string(), I64))),
    "map_of_list": (pa.map_(pa.string(), pa.list_(I32)), pa.map_(pa.string(), pa.list_(I64))),
    "list_of_struct": (
        pa.list_(pa.struct([("a", I32)])),
        pa.list_(pa.struct([("a", I64)])),
    ),
    "map_exact": (pa.map_(pa.string(), I64), pa.map_(pa.string(), I64)),
}

ints = st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1))
keys = st.text("abc", min_size=1, max_size=2)


def _values(t: pa.DataType) -> st.SearchStrategy[Any]:
    if pa.types.is_integer(t):
        return ints
    if pa.types.is_map(t):
        return st.one_of(
            st.none(),
            st.dictionaries(keys, _values(t.item_type), max_size=3).map(lambda d: list(d.items())),
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return st.one_of(st.none(), st.lists(_values(t.value_type), max_size=3))
    assert pa.types.is_struct(t)
    return st.one_of(st.none(), st.fixed_dictionaries({t.field(0).name: _values(t.field(0).type)}))


@st.composite
def _sliced_columns(draw: st.DrawFn) -> tuple[str, pa.Array, list[int]]:
    name = draw(st.sampled_from(sorted(LAYOUTS)))
    have = LAYOUTS[name][0]
    rows = draw(st.lists(_values(have), min_size=1, max_size=12))
    full = pa.array(rows, have)
    start = draw(st.integers(0, len(rows) - 1))
    length = draw(st.integers(0, len(rows) - start))
    chunks = draw(st.lists(st.integers(1, 4), max_size=3))
    return name, full.slice(start, length), chunks


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("layouts")
    cat = load_catalog("c", type="sql", uri=f"sqlite:///{root}/c.db", warehouse=str(root / "w"))
    cat.create_namespace("n")
    return cat


_TABLES = iter(range(1_000_000))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_sliced_columns())
def test_sliced_and_chunked_nested_columns_keep_their_values(
    catalog: Any, case: tuple[str, pa.Array, list[int]]
) -> None:
    name, arr, sizes = case
    want = LAYOUTS[name][1]
    t = catalog.create_table(f"n.t{next(_TABLES)}", pa.schema([("id", I64), ("v", want)]))
    data = pa.table({"id": pa.array(range(len(arr)), I64), "v": arr})
    batches, at = [], 0
    for size in sizes:  # chunks of the (already sliced) rows: slices of slices
        batches.append(data.slice(at, size).to_batches())
        at += size
    batches.append(data.slice(at).to_batches())
    flat = [b for bs in batches for b in bs]
    t.append(pa.RecordBatchReader.from_batches(data.schema, flat))
    got = t.scan().to_arrow().sort_by("id")
    assert got.column("v").to_pylist() == arr.to_pylist()


def test_null_list_entries_backed_by_values(catalog: Any) -> None:
    values = pa.array([1, 2, 3, 4, 5, 6], I32)
    arr = pa.ListArray.from_arrays(
        pa.array([0, 2, 4, 6], I32), values, mask=pa.array([False, True, False])
    )
    t = catalog.create_table("n.backed", pa.schema([("l", pa.list_(I64))]))
    t.append(pa.table({"l": arr}))
    assert t.scan().to_arrow().column("l").to_pylist() == [[1, 2], None, [5, 6]]


def test_required_fields_may_be_null_under_null_parents(catalog: Any) -> None:
    inner = StructType(
        NestedField(3, "a", IntegerType(), required=True), NestedField(4, "b", StringType())
    )
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "s", inner),
        NestedField(
            5,
            "l",
            ListType(
                6,
                StructType(
                    NestedField(7, "a", IntegerType(), required=True),
                    NestedField(8, "b", StringType()),
                ),
                element_required=False,
            ),
        ),
    )
    t = catalog.create_table("n.required_under_null", schema)
    s = pa.StructArray.from_arrays(
        [pa.array([1, None], I32), pa.array(["x", "y"])],
        names=["a", "b"],
        mask=pa.array([False, True]),
    )
    lst = pa.ListArray.from_arrays(pa.array([0, 1, 2], I32), s)
    for struct_type in (I32, I64):  # as the table's Arrow type, and needing a cast
        cast = s.cast(pa.struct([("a", struct_type), ("b", pa.string())]))
        t.append(pa.table({"id": pa.array([1, 2], I64), "s": cast, "l": lst}))
    rows = t.scan().to_arrow().to_pylist()
    assert [r["s"] for r in rows] == [{"a": 1, "b": "x"}, None] * 2
    assert [r["l"] for r in rows] == [[{"a": 1, "b": "x"}], [None]] * 2
    bad = pa.StructArray.from_arrays([pa.array([None], I32), pa.array(["y"])], names=["a", "b"])
    with pytest.raises(ValidationError, match=r"s\.a"):
        t.append(pa.table({"id": pa.array([3], I64), "s": bad}))


def test_pandas_frames(catalog: Any, tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    t = catalog.create_table("n.frames", pa.schema([("id", I64), ("v", pa.string())]))
    t.append(pd.DataFrame({"id": [10, 20], "v": ["a", "b"]}).set_index("id"))
    t.append(pd.DataFrame({"id": [30], "v": ["c"]}, index=[7]))  # unnamed index: dropped
    assert sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 10, "v": "a"},
        {"id": 20, "v": "b"},
        {"id": 30, "v": "c"},
    ]
    with pytest.raises(ValidationError, match="column 'v' \\(string\\): a value does not fit"):
        t.append(pd.DataFrame({"id": [1, 2], "v": pd.Series([1, "a"], dtype=object)}))
    with pytest.raises(ValidationError, match="not in the table schema"):
        t.append(pd.DataFrame({"id": [1], "v": ["x"]}, index=pd.Index([5], name="other")))


def test_inputs_that_are_not_tables_are_refused_typed(catalog: Any) -> None:
    t = catalog.create_table("n.not_tables", pa.schema([("id", I64)]))
    with pytest.raises(ValidationError, match="single Arrow array"):
        t.append(pa.chunked_array([[1, 2]], I64))
    one = pa.record_batch({"id": pa.array([1], I64)})
    other = pa.record_batch({"id": pa.array(["x"])})
    reader = pa.RecordBatchReader.from_batches(one.schema, iter([one, other]))
    with pytest.raises(ValidationError, match="cannot read the input"):
        t.append(reader)
    assert t.scan().to_arrow().num_rows == 0


def test_unsupported_inputs_list_what_is_accepted_and_how_to_convert(catalog: Any) -> None:
    import pyarrow.dataset as ds

    t = catalog.create_table("n.unsupported", pa.schema([("id", I64)]))
    rows = pa.table({"id": pa.array([1], I64)})
    cases: list[tuple[Any, str]] = [
        ([{"id": 1}], "pyarrow.Table.from_pylist(rows)"),
        (rows.to_batches(), "pyarrow.Table.from_batches(batches)"),
        ((b for b in rows.to_batches()), "pyarrow.RecordBatchReader.from_batches"),
        (ds.dataset(rows), "dataset.to_table() or dataset.scanner().to_reader()"),
        (None, ""),
    ]
    writes = [
        lambda d: t.append(d),
        lambda d: t.overwrite(d),
        lambda d: t.upsert(d, "id"),
    ]
    for data, hint in cases:
        for write in writes:
            with pytest.raises(ValidationError) as info:
                write(data)
            message = str(info.value)
            for accepted in ("pyarrow Table", "RecordBatchReader", "pandas DataFrame", "dict of"):
                assert accepted in message, message
            assert hint in message
    assert t.scan().to_arrow().num_rows == 0


def test_times_outside_a_day_are_refused(catalog: Any) -> None:
    """A time is microseconds from midnight: 25:00 or a negative time is no time (filters
    already refuse such literals); nothing is committed."""
    t = catalog.create_table("n.times", pa.schema([("t", pa.time64("us"))]))
    for bad in ([90_000_000_000], [-1], [86_400_000_000]):
        with pytest.raises(ValidationError, match="not within a day"):
            t.append(pa.table({"t": pa.array(bad, pa.time64("us"))}))
    with pytest.raises(ValidationError, match="not within a day"):
        t.append(pa.table({"t": pa.array([86_400_000_000_000], pa.time64("ns"))}))
    assert t.current_snapshot() is None
    t.append(pa.table({"t": pa.array([0, 86_399_999_999, None], pa.time64("us"))}))
    assert t.scan().to_arrow().num_rows == 3


def test_streams_are_written_as_they_are_read(
    catalog: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream is written in pieces while it is read (memory stays bounded however long it
    is), in one snapshot; a stream failing half-way leaves the table and its directory as
    they were."""
    import icefloe.write.input as input_mod

    monkeypatch.setattr(input_mod, "STREAM_CHUNK_BYTES", 8_000)
    t = catalog.create_table("n.stream", pa.schema([("id", I64)]))
    data_dir = Path(t.location.removeprefix("file://")) / "data"
    seen_files: list[int] = []

    def batches(fail_at: int | None = None) -> Any:
        for i in range(10):
            if i == fail_at:
                raise RuntimeError("the source broke")
            seen_files.append(len(list(data_dir.rglob("*.parquet"))) if data_dir.exists() else 0)
            yield pa.record_batch({"id": pa.array(range(i * 1000, (i + 1) * 1000), I64)})

    schema = pa.schema([("id", I64)])
    t.append(pa.RecordBatchReader.from_batches(schema, batches()))
    assert max(seen_files) > 0  # files were written before the stream ended
    assert len(t.snapshots()) == 1 and t.scan().to_arrow().num_rows == 10_000
    before = sorted(data_dir.rglob("*.parquet"))
    with pytest.raises(RuntimeError, match="broke"):
        t.append(pa.RecordBatchReader.from_batches(schema, batches(fail_at=6)))
    assert sorted(data_dir.rglob("*.parquet")) == before
    assert len(t.refresh().snapshots()) == 1

    class CStream:  # a producer behind the Arrow PyCapsule interface (polars, DuckDB, ...)
        def __init__(self, fail: BaseException) -> None:
            self.fail = fail

        def __arrow_c_stream__(self, requested_schema: object = None) -> object:
            def failing() -> Any:
                yield pa.record_batch({"id": pa.array([1], I64)})
                raise self.fail

            reader = pa.RecordBatchReader.from_batches(schema, failing())
            return reader.__arrow_c_stream__(requested_schema)

    with pytest.raises(ValidationError, match=r"stream failed while it was read: .*broke"):
        t.append(CStream(RuntimeError("the source broke")))
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C stays Ctrl-C through the C interface
        t.append(CStream(KeyboardInterrupt()))
    assert sorted(data_dir.rglob("*.parquet")) == before
    assert len(t.refresh().snapshots()) == 1


def test_unknown_fields_next_to_partition_and_sort_sources(catalog: Any) -> None:
    """``unknown`` fields stay out of data files; the partition and sort keys of their
    siblings in a struct are still taken from the right fields."""
    from icefloe.types import UnknownType

    schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "u", UnknownType()),
        NestedField(
            3,
            "s",
            StructType(
                NestedField(4, "u2", UnknownType()),
                NestedField(5, "k", StringType()),
                NestedField(6, "j", LongType()),
            ),
        ),
    )
    t = catalog.create_table("n.unknown_siblings", schema, format_version=3)
    t.update_spec().add_field("s.k", "identity").commit()
    t.replace_sort_order().desc("s.j").commit()
    t.append(
        pa.table(
            {"id": [1, 2, 3], "s": [{"k": "a", "j": 10}, {"k": "a", "j": 30}, {"k": "b", "j": 20}]}
        )
    )
    assert sorted(f.data_file.partition for f in t.scan().plan_files()) == [("a",), ("b",)]
    rows = t.scan(row_filter="s.k = 'a'").to_arrow().to_pylist()
    assert [r["id"] for r in rows] == [2, 1]  # sorted by s.j descending within the file
    assert rows[0]["u"] is None and rows[0]["s"]["u2"] is None


def test_nested_times_geometries_and_extension_children_are_checked(catalog: Any) -> None:
    """Checks of times and WKB reach nested leaves of columns already of the table's type;
    a required uuid child null under a null struct is written (placeholders of extension
    types); a pandas Series is refused typed."""
    from icefloe.types import GeometryType, TimeType, UUIDType

    schema = Schema(
        NestedField(1, "s", StructType(NestedField(2, "t", TimeType()))),
        NestedField(3, "g", ListType(4, GeometryType(), element_required=False)),
        NestedField(5, "o", StructType(NestedField(6, "u", UUIDType(), required=True))),
    )
    t = catalog.create_table(
        "n.nested_checks",
        schema,
        format_version=3,
        properties={"write.metadata.metrics.default": "none"},
    )
    arrow = t.scan().to_arrow().schema
    late = pa.array([{"t": 90_000_000_000}], arrow.field("s").type)
    with pytest.raises(ValidationError, match=r"s\.t.*not within a day"):
        t.append(pa.table({"s": late}))
    bad_wkb = pa.array([[b"\x01"]], pa.list_(pa.binary()))
    with pytest.raises(ValidationError, match="malformed WKB"):
        t.append(pa.table({"g": bad_wkb}))
    o = pa.StructArray.from_arrays(
        [pa.array([None], arrow.field("o").type.field(0).type)],
        fields=[arrow.field("o").type.field(0).with_nullable(True)],
        mask=pa.array([True]),
    )
    t.append(pa.table({"o": o}))
    assert t.scan().to_arrow().column("o").to_pylist() == [None]
    pd = pytest.importorskip("pandas")
    with pytest.raises(ValidationError, match="Series"):
        t.append(pd.Series([1, 2]))


def test_decimals_and_integers_into_other_decimal_types(catalog: Any) -> None:
    """What Spark hands a writer (a literal's ``decimal(2,1)``, a ``sum``'s ``decimal(20,2)``,
    a ``bigint``) goes into a ``decimal(10,2)`` column when each value fits exactly: through
    append, overwrite and upsert alike; a value that would overflow or lose digits is refused
    naming it, nothing rounded."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "amt", DecimalType(10, 2)),
    )
    t = catalog.create_table("n.decimals", schema)
    t.append(pa.table({"id": [1], "amt": pa.array([Decimal("5.5")], pa.decimal128(2, 1))}))
    wide = pa.array([Decimal("1.25"), None], pa.decimal128(20, 2))
    t.append(pa.table({"id": [2, 3], "amt": wide}))
    t.upsert(pa.table({"id": [3], "amt": pa.array([7], pa.int64())}), join_cols=["id"])
    got = {r["id"]: r["amt"] for r in t.scan().to_arrow().to_pylist()}
    assert got == {1: Decimal("5.50"), 2: Decimal("1.25"), 3: Decimal("7.00")}
    refused = {
        "123456789012.34": pa.array(
            [Decimal("1"), Decimal("123456789012.34")], pa.decimal128(20, 2)
        ),
        "2.125": pa.array([Decimal("2.120"), Decimal("2.125")], pa.decimal128(5, 3)),
        "1000000000": pa.array([1, 10**9], pa.int64()),
    }
    for value, arr in refused.items():
        with pytest.raises(ValidationError, match=rf"column 'amt': value {value} cannot be"):
            t.overwrite(pa.table({"id": [8, 9], "amt": arr}))
    assert len(t.refresh().snapshots()) == 3


_INTEGER_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint64()]


@st.composite
def _decimal_cases(draw: st.DrawFn) -> tuple[pa.Array, list[Any], int, int]:
    """An input column (a decimal or integer type; values often near a power of ten) and a
    target precision and scale."""
    p2 = draw(st.integers(1, 38))
    s2 = draw(st.integers(0, p2))
    if draw(st.booleans()):
        t = draw(st.sampled_from(_INTEGER_TYPES))
        lo, hi = (
            (0, 2**t.bit_width - 1)
            if pa.types.is_unsigned_integer(t)
            else (
                -(2 ** (t.bit_width - 1)),
                2 ** (t.bit_width - 1) - 1,
            )
        )
        near = (
            st.integers(0, 20)
            .map(lambda k: 10**k)
            .flatmap(lambda b: st.sampled_from([b - 1, b, -b, 1 - b]))
        )
        unit = st.one_of(st.integers(lo, hi), near.filter(lambda v: lo <= v <= hi))
        values = draw(st.lists(st.one_of(st.none(), unit), max_size=6))
        return pa.array(values, t), values, p2, s2
    wide = draw(st.booleans())
    p1 = draw(st.integers(1, 76 if wide else 38))
    s1 = draw(st.integers(0, p1))
    top = 10**p1 - 1
    near = (
        st.integers(0, p1)
        .map(lambda k: 10**k)
        .flatmap(lambda b: st.sampled_from([b - 1, min(b, top), -min(b, top)]))
    )
    units = draw(st.lists(st.one_of(st.none(), st.integers(-top, top), near), max_size=6))
    values = [None if u is None else Decimal(f"{u}e-{s1}") for u in units]  # exact
    t = pa.decimal256(p1, s1) if wide else pa.decimal128(p1, s1)
    return pa.array(values, t), values, p2, s2


def _fits(value: Any, precision: int, scale: int) -> bool:
    """Whether ``value`` is exactly a ``decimal(precision, scale)`` (Python's arithmetic)."""
    scaled = Decimal(value).scaleb(scale)
    return scaled == scaled.to_integral_value() and abs(scaled) < 10**precision


@settings(max_examples=300, deadline=None)
@given(case=_decimal_cases())
def test_decimal_casts_accept_exactly_the_representable_values(
    case: tuple[pa.Array, list[Any], int, int],
) -> None:
    import decimal

    arr, values, precision, scale = case
    schema = Schema(NestedField(1, "d", DecimalType(precision, scale)))
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        bad = [v for v in values if v is not None and not _fits(v, precision, scale)]
        try:
            out = to_table_schema(pa.table({"d": arr}), schema).column("d").to_pylist()
        except ValidationError as e:
            assert bad, f"refused although every value fits: {e}"
            named = re.search(r"value (\S+) cannot be written", str(e))
            assert named is not None and Decimal(named.group(1)) in bad, str(e)
            return
        assert not bad, f"{bad} accepted into decimal({precision}, {scale})"
        assert [None if v is None else Decimal(v) for v in values] == out


def test_raising_the_scale_never_wraps_around() -> None:
    """Arrow's 128-bit rescale wraps around on overflow (``1020847100763`` raised to scale 27
    becomes ``0.1846...`` and passes its precision check): such a value is refused."""
    schema = Schema(NestedField(1, "d", DecimalType(27, 27)))
    for t in (pa.decimal128(13, 0), pa.decimal128(38, 0), pa.int64()):
        arr = pa.array([0, 1020847100763], t)
        with pytest.raises(ValidationError, match="value 1020847100763 cannot be written"):
            to_table_schema(pa.table({"d": arr}), schema)


def test_dictionaries_of_string_views_are_written_as_their_values(catalog: Any) -> None:
    """polars exports its categoricals (top level and in structs) as dictionaries of string
    views, which Arrow cannot decode directly: appends and upserts write their values."""
    cat_col = pa.DictionaryArray.from_arrays(
        pa.array([0, 1, 2, None, 0], pa.uint32()), pa.array(["x", "y", "lo"], pa.string_view())
    )
    nested = pa.StructArray.from_arrays([cat_col], names=["c"])
    data = pa.table({"id": pa.array(range(5), pa.int64()), "c": cat_col, "s": nested})
    t = catalog.create_table(f"n.views{next(_TABLES)}", data.schema)
    t.append(data)
    t.upsert(data.slice(0, 2), join_cols=["id"])
    got = t.scan().to_arrow().sort_by("id")
    assert got.column("c").to_pylist() == ["x", "y", "lo", None, "x"]
    assert [r["c"] if r else None for r in got.column("s").to_pylist()] == [
        "x",
        "y",
        "lo",
        None,
        "x",
    ]


def test_extension_columns_are_not_written_as_their_storage(catalog: Any) -> None:
    """A pandas Period column is an extension type over int64 ordinals whose unit depends on
    the frequency: writing the ordinals into a long column would change their meaning."""
    pd = pytest.importorskip("pandas")
    schema = Schema(NestedField(1, "month", LongType()))
    t = catalog.create_table(f"n.periods{next(_TABLES)}", schema)
    frame = pd.DataFrame({"month": pd.period_range("2024-01", periods=2, freq="M")})
    with pytest.raises(ValidationError, match=r"column 'month' has type extension<pandas.period"):
        t.append(frame)
    assert t.scan().to_arrow().num_rows == 0
    uuids = pa.array([b"\x01" * 16], pa.uuid())  # extension types that hold their values pass
    u = catalog.create_table(f"n.uuids{next(_TABLES)}", pa.schema([("u", pa.uuid())]))
    u.append(pa.table({"u": uuids}))
    assert u.scan().to_arrow().num_rows == 1


@pytest.mark.parametrize(
    ("column", "stored", "keys"),
    [
        # naive keys for a zoned column, zoned keys for a naive one, strings for numbers,
        # times of day for dates: what a write refuses, a delete refuses
        (
            pa.timestamp("us", "UTC"),
            pa.array([0, 3_600_000_000], pa.timestamp("us", "UTC")),
            pa.array([3_600_000_000], pa.timestamp("us")),
        ),
        (
            pa.timestamp("us"),
            pa.array([0, 3_600_000_000], pa.timestamp("us")),
            pa.array([3_600_000_000], pa.timestamp("us", "Europe/Paris")),
        ),
        (pa.int64(), pa.array([1, 2, 3], pa.int64()), pa.array(["02"])),
        (
            pa.date32(),
            pa.array([19723, 19724], pa.date32()),
            pa.array([19723 * 86_400_000_000 + 1], pa.timestamp("us")),
        ),
    ],
)
def test_keys_of_another_type_delete_nothing_silently(
    catalog: Any, column: pa.DataType, stored: pa.Array, keys: pa.Array
) -> None:
    t = catalog.create_table(f"n.keys{next(_TABLES)}", pa.schema([("k", column)]))
    t.append(pa.table({"k": stored}))
    with pytest.raises(ValidationError, match="equality delete keys: column 'k'"):
        t.delete_by_keys(pa.table({"k": keys}), ["k"])
    assert t.scan().to_arrow().column("k").to_pylist() == stored.to_pylist()


def test_decimals_with_more_digits_than_their_own_type_are_refused(catalog: Any) -> None:
    """Arrow does not check a decimal array's values against its precision (``cast`` with
    ``safe=False`` or another engine's export makes such arrays); written as they are, the
    value was truncated on disk. Whatever the column's type, such a value is refused, naming
    it; in a struct too. Negative scales are written as the whole numbers they are."""
    import pyarrow.compute as pc

    wide = pa.array([Decimal("12345678901.50"), Decimal("1.25")], pa.decimal128(13, 2))
    unchecked = pc.cast(wide, pa.decimal128(9, 2), safe=False)
    for i, typ in enumerate((DecimalType(9, 2), DecimalType(12, 2))):
        t = catalog.create_table(f"n.unchecked{i}", Schema(NestedField(1, "d", typ)))
        with pytest.raises(ValidationError, match=r"column 'd': value 12345678901\.50"):
            t.append(pa.table({"d": unchecked}))
        assert t.refresh().current_snapshot() is None
    nested = catalog.create_table(
        "n.unchecked_nested",
        Schema(NestedField(1, "s", StructType(NestedField(2, "d", DecimalType(9, 2))))),
    )
    with pytest.raises(ValidationError, match=r"column 's\.d': value 12345678901\.50"):
        nested.append(pa.table({"s": pa.StructArray.from_arrays([unchecked], names=["d"])}))
    # DuckDB's HUGEINT arrives as decimal(38, 0) holding up to 39 digits
    huge = pc.cast(
        pa.array([Decimal(2**127 - 1)], pa.decimal256(39, 0)), pa.decimal128(38, 0), safe=False
    )
    t = catalog.create_table("n.huge", Schema(NestedField(1, "h", DecimalType(38, 0))))
    with pytest.raises(ValidationError, match="170141183460469231731687303715884105727"):
        t.append(pa.table({"h": huge}))
    negative = catalog.create_table("n.negative", Schema(NestedField(1, "d", DecimalType(6, 0))))
    negative.append(
        pa.table({"d": pa.array([Decimal("0"), Decimal("1E+5")], pa.decimal128(1, -5))})
    )
    assert negative.scan().to_arrow()["d"].to_pylist() == [Decimal("0"), Decimal("100000")]


def test_struct_fields_given_twice_and_invalid_strings_are_refused(catalog: Any) -> None:
    t = catalog.create_table(
        "n.twice",
        Schema(
            NestedField(1, "id", LongType()),
            NestedField(2, "st", StructType(NestedField(3, "a", IntegerType()))),
            NestedField(4, "s", StringType()),
        ),
    )
    twice = pa.StructArray.from_arrays([pa.array([1], I32), pa.array([2], I32)], names=["a", "a"])
    with pytest.raises(ValidationError, match="input struct 'st' has field 'a' more than once"):
        t.append(pa.table({"id": [1], "st": twice}))
    offsets = pa.py_buffer(b"\x00\x00\x00\x00\x02\x00\x00\x00")
    not_utf8 = pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(b"\xff\xfe")])
    # encoded by icefloe's encoder (small files) or pyarrow's (nested columns here)
    flat = catalog.create_table("n.not_utf8", Schema(NestedField(1, "s", StringType())))
    with pytest.raises(ValidationError, match="column 's' holds invalid values: Invalid UTF8"):
        flat.append(pa.table({"s": not_utf8}))
    assert flat.refresh().current_snapshot() is None
    with pytest.raises(ValidationError, match="column 's' holds a string that is not valid UTF-8"):
        t.append(pa.table({"id": [1], "st": pa.nulls(1, pa.struct([("a", I32)])), "s": not_utf8}))
    assert t.refresh().current_snapshot() is None


@pytest.mark.parametrize("file_format", ["avro", "orc"])
@pytest.mark.parametrize("transform", [None, "identity"])
def test_strings_that_are_not_utf8_are_refused_in_avro_and_orc_files(
    catalog: Any, file_format: str, transform: str | None
) -> None:
    # unpartitioned, the rows went to the Avro or ORC encoder unchecked: pyarrow's
    # ArrowException or Python's UnicodeDecodeError came out
    bad = pa.array([b"ab\xff\xfecd", b"ok"], pa.binary()).view(pa.string())
    t = catalog.create_table(
        f"n.utf8_{file_format}_{transform or 'none'}",
        Schema(NestedField(1, "s", StringType()), NestedField(2, "i", LongType())),
        properties={"write.format.default": file_format},
    )
    if transform is not None:
        with t.update_spec() as u:
            u.add_field("i", transform, "p")
    for write in (t.append, t.overwrite):
        with pytest.raises(ValidationError, match="column 's' holds invalid values"):
            write(pa.table({"s": bad, "i": [1, 2]}))
    assert t.refresh().current_snapshot() is None
    t.append(pa.table({"s": ["ok"], "i": [1]}))
    assert t.scan().to_arrow()["s"].to_pylist() == ["ok"]


@pytest.mark.parametrize("transform", [None, "identity", "truncate[2]", "bucket[4]"])
def test_strings_that_are_not_utf8_are_refused_on_every_write_path(
    catalog: Any, transform: str | None
) -> None:
    """Invalid UTF-8 (as a C producer can hand over) is a ``ValidationError`` naming the
    column whether the column is partitioned on (Arrow refused it while the rows were
    regrouped), an upsert key or a ``delete_by_keys`` key; nothing is committed."""
    from icefloe.transforms import parse_transform

    bad = pa.array([b"ab\xff\xfecd", b"ok", b"zz"], pa.binary()).view(pa.string())
    name = f"n.utf8_{(transform or 'none').replace('[', '_').rstrip(']')}"
    t = catalog.create_table(
        name, Schema(NestedField(1, "s", StringType()), NestedField(2, "i", LongType()))
    )
    if transform is not None:
        with t.update_spec() as u:
            u.add_field("s", parse_transform(transform), "p")
    with pytest.raises(ValidationError, match="column 's' holds invalid values"):
        t.append(pa.table({"s": bad, "i": [1, 2, 3]}))
    assert t.refresh().current_snapshot() is None
    t.append(pa.table({"s": ["ok"], "i": [1]}))
    with pytest.raises(ValidationError, match="column 's' holds invalid values"):
        t.upsert(pa.table({"s": bad, "i": [2, 1, 3]}), "s")
    with pytest.raises(ValidationError, match="column 's' holds invalid values"):
        t.delete_by_keys(pa.table({"s": bad}), "s")
    assert len(t.refresh().snapshots()) == 1


def test_python_values_arrow_cannot_infer_take_the_columns_type(catalog: Any) -> None:
    """Integers beyond int64 go into a decimal column that holds them, from a mapping and
    from a DataFrame (Arrow's inference refused them); values no column type holds, naive
    times for a zoned column and zoned times for a column without a zone are errors naming
    the column and what to do, from a mapping and from a DataFrame (a mapping's naive times
    were stored as UTC, its zoned ones as their UTC wall time)."""
    import datetime as dt
    import zoneinfo

    pd = pytest.importorskip("pandas")
    schema = pa.schema(
        [
            ("dec", pa.decimal128(38, 0)),
            ("l", I64),
            ("ts", pa.timestamp("us", "UTC")),
            ("lst", pa.list_(I64)),
            ("local", pa.timestamp("us")),
        ]
    )
    t = catalog.create_table("n.inference", schema)
    t.append({"dec": [10**37, None], "l": [1, 2]})
    t.append(pd.DataFrame({"dec": [-(10**37)], "l": [3]}))
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["l"])
    assert [r["dec"] for r in rows] == [Decimal(10**37), None, Decimal(-(10**37))]
    for data in ({"l": [2**70]}, pd.DataFrame({"l": [2**70]})):
        with pytest.raises(ValidationError, match=r"column 'l' \(long\): a value does not fit"):
            t.append(data)
    with pytest.raises(ValidationError, match=r"column 'lst' \(a list<long> column\)"):
        t.append(pd.DataFrame({"lst": [[1, "x"]]}))
    with pytest.raises(ValidationError, match=r"column 'l': give a list or array of values"):
        t.append({"l": 5})
    naive = pd.DataFrame({"ts": pd.to_datetime(["2024-01-01"])})
    for data in (naive, {"ts": [dt.datetime(2024, 1, 1)]}):
        with pytest.raises(ValidationError, match=r"no time zone; .*tz_localize\('UTC'\)"):
            t.append(data)
    paris = dt.datetime(2024, 1, 1, 13, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"))
    for data in (pd.DataFrame({"local": pd.Series([paris])}), {"local": [paris]}):
        with pytest.raises(ValidationError, match=r"'local' .*holds times without a zone"):
            t.append(data)
    # mixed in one list, Arrow types them all as the first: the naive one was read as UTC
    mixed = [dt.datetime(2024, 1, 1, tzinfo=dt.UTC), dt.datetime(2024, 1, 1, 12)]
    with pytest.raises(ValidationError, match=r"'ts': its times mix values with and"):
        t.append({"ts": mixed})
    with pytest.raises(ValidationError, match=r"'local': its times mix values with and"):
        t.append({"local": mixed[::-1]})
    t.append(naive.assign(ts=naive["ts"].dt.tz_localize("UTC")))
    t.append({"ts": [dt.datetime(2024, 1, 1, tzinfo=dt.UTC)], "local": [dt.datetime(2024, 1, 1)]})
    assert len(t.scan().to_arrow()) == 5


def test_nan_in_a_mapping_is_null_only_in_pandas_values(catalog: Any) -> None:
    """Converted column by column, a mapping keeps pyarrow's rule: a pandas Series' NaN is
    null (pandas means missing by it), a Python list's NaN is the float NaN."""
    pd = pytest.importorskip("pandas")
    t = catalog.create_table("n.nan_rule", pa.schema([("i", I64), ("x", pa.float64())]))
    t.append({"i": [1, 2], "x": pd.Series([1.0, float("nan")])})
    t.append({"i": [3, 4], "x": [3.0, float("nan")]})
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["i"])
    assert [r["x"] for r in rows[:3]] == [1.0, None, 3.0]
    assert rows[3]["x"] != rows[3]["x"]  # NaN


def test_python_values_of_another_inferred_type_convert_when_exact(catalog: Any) -> None:
    """Arrow infers floats as double, integers as int64 and bytes as binary; a mapping's
    values for a float, double, fixed or uuid column are converted to the column's type when
    each converts exactly, and refused (naming the column) when one would change."""
    import uuid

    schema = pa.schema(
        [
            ("f", pa.float32()),
            ("d", pa.float64()),
            ("x", pa.binary(2)),
            ("u", pa.uuid()),
        ]
    )
    t = catalog.create_table("n.exact_python", schema)
    u = uuid.UUID(int=7)
    t.append(
        {
            "f": [0.5, None, float("nan")],
            "d": [1, 2, None],
            "x": [b"ab", None, b"cd"],
            "u": [u.bytes, None, None],
        }
    )
    rows = t.scan().to_arrow().to_pylist()
    assert [r["f"] for r in rows][:2] == [0.5, None] and rows[2]["f"] != rows[2]["f"]
    assert [r["d"] for r in rows] == [1.0, 2.0, None]
    assert [r["x"] for r in rows] == [b"ab", None, b"cd"]
    assert [r["u"] for r in rows] == [u, None, None]
    for data, column in (({"f": [0.1]}, "f"), ({"d": [2**53 + 1]}, "d"), ({"x": [b"abc"]}, "x")):
        with pytest.raises(ValidationError, match=f"'{column}'"):
            t.append(data)
    assert len(t.scan().to_arrow()) == 3


@pytest.mark.parametrize("fmt", ["parquet", "avro", "orc"])
def test_required_list_elements_and_map_values_hidden_under_null_rows(
    catalog: Any, fmt: str
) -> None:
    """Arrow lets a null row's offsets cover any values, nulls too: a list of required
    elements (or a map of required values) whose null row covers a null was already of the
    table's type and went to the Avro encoder as it was, which refused it untyped."""
    schema = Schema(
        NestedField(1, "l", ListType(2, LongType(), element_required=True)),
        NestedField(3, "m", MapType(4, StringType(), 5, LongType(), value_required=True)),
    )
    t = catalog.create_table(f"n.hidden_{fmt}", schema, properties={"write.format.default": fmt})
    arrow = schema_to_arrow(t.schema())
    mask = pa.array([False, True])
    lists = pa.ListArray.from_arrays(
        pa.array([0, 1, 3], I32), pa.array([1, None, 2]), type=arrow.field("l").type, mask=mask
    )
    maps = pa.MapArray.from_arrays(
        pa.array([0, 1, 3], I32),
        pa.array(["a", "b", "c"]),
        pa.array([1, None, 2]),
        type=arrow.field("m").type,
        mask=mask,
    )
    t.append(pa.table({"l": lists, "m": maps}))
    got = t.scan().to_arrow()
    assert got.column("l").to_pylist() == [[1], None]
    assert got.column("m").to_pylist() == [[("a", 1)], None]


def test_python_dicts_for_map_columns_at_any_depth(catalog: Any) -> None:
    """A mapping of columns with Python dicts for a map column (Arrow guesses a struct of
    their keys) was refused; a list of pairs worked. Dicts now convert as the column's map
    type, inside lists and structs too, and a struct's dict with a key the table lacks is
    still refused."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "tags", MapType(3, StringType(), 4, LongType())),
        NestedField(5, "l", ListType(6, MapType(7, StringType(), 8, IntegerType()))),
        NestedField(
            9,
            "s",
            StructType(
                NestedField(10, "m", MapType(11, StringType(), 12, StringType())),
                NestedField(13, "x", LongType()),
            ),
        ),
    )
    t = catalog.create_table("n.dict_maps", schema)
    t.append({"id": [1], "tags": [[("p", 0)]]})
    t.append(
        {
            "id": [2, 3],
            "tags": [{"a": 1, "b": 2}, None],
            "l": [[{"c": 3}, {}], None],
            "s": [{"m": {"k": "v"}, "x": 4}, None],
        }
    )
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"id": 1, "tags": [("p", 0)], "l": None, "s": None},
        {
            "id": 2,
            "tags": [("a", 1), ("b", 2)],
            "l": [[("c", 3)], []],
            "s": {"m": [("k", "v")], "x": 4},
        },
        {"id": 3, "tags": None, "l": None, "s": None},
    ]
    with pytest.raises(ValidationError, match=r"s\.typo is not in the table schema"):
        t.append({"id": [4], "s": [{"m": {"k": "v"}, "typo": 5}]})
    with pytest.raises(ValidationError, match=r"column 'tags'"):
        t.append({"id": [4], "tags": [{"a": "not a number"}]})
    with pytest.raises(ValidationError, match=r"column 'l'"):
        t.append({"id": [4], "l": [[{"c": 2**40}]]})
    assert len(t.scan().to_arrow()) == 3


def test_key_value_tuples_for_maps_whose_keys_and_values_share_a_type(catalog: Any) -> None:
    """Tuples of a string key and a string value were inferred as lists of strings and the
    append refused them; they convert as the map now, at any depth."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "m", MapType(3, StringType(), 4, StringType())),
        NestedField(5, "n", MapType(6, LongType(), 7, LongType())),
        NestedField(
            8, "s", StructType(NestedField(9, "inner", MapType(10, StringType(), 11, StringType())))
        ),
    )
    t = catalog.create_table("n.pair_maps", schema)
    t.append(
        {
            "id": [1, 2],
            "m": [[("a", "1")], [("b", "2"), ("c", "3")]],
            "n": [[(1, 2)], None],
            "s": [{"inner": [("k", "v")]}, None],
        }
    )
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"id": 1, "m": [("a", "1")], "n": [(1, 2)], "s": {"inner": [("k", "v")]}},
        {"id": 2, "m": [("b", "2"), ("c", "3")], "n": None, "s": None},
    ]
    with pytest.raises(ValidationError, match=r"column 'm'"):
        t.append({"id": [3], "m": [[("a", "b", "c")]]})
    assert len(t.scan().to_arrow()) == 2
