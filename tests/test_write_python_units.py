"""Python values that pyarrow would take silently as something else: integers given for times
or timestamps (pyarrow reads them in the column's unit, so epoch seconds or milliseconds from
JSON became times in 1970) and map keys given twice as ``(key, value)`` pairs (Iceberg Java
keeps the last value, DuckDB refuses to read the table) are refused naming the column, and
nothing is committed."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.types import (
    DateType,
    DoubleType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
)
from icefloe.write.input import to_table_schema

UTC = dt.timezone.utc
NOON = dt.datetime(2024, 2, 29, 12, tzinfo=UTC)
EPOCH_MS = 1709208000000  # the same instant in epoch milliseconds


def _one(name: str, t: Any) -> Schema:
    return Schema(NestedField(1, name, t))


TIMES: list[tuple[str, Schema, Any]] = [
    ("a timestamptz after a time", _one("ts", TimestamptzType()), [NOON, EPOCH_MS]),
    ("a timestamptz before a time", _one("ts", TimestamptzType()), [EPOCH_MS, NOON]),
    ("only integers", _one("ts", TimestamptzType()), [EPOCH_MS]),
    ("a timestamp", _one("ts", TimestampType()), [NOON.replace(tzinfo=None), 1709208000]),
    ("a time of day", _one("tm", TimeType()), [3600]),
    ("a time of day after one", _one("tm", TimeType()), [dt.time(1), 3600]),
    (
        "a struct field",
        _one("s", StructType(NestedField(2, "ts", TimestamptzType()))),
        [{"ts": NOON}, {"ts": EPOCH_MS}],
    ),
    (
        "a list element",
        _one("l", ListType(2, TimestamptzType(), False)),
        [[NOON, EPOCH_MS]],
    ),
    (
        "a map value",
        _one("m", MapType(2, StringType(), 3, TimestamptzType(), False)),
        [{"a": NOON, "b": EPOCH_MS}],
    ),
    (
        "a map value as pairs",
        _one("m", MapType(2, StringType(), 3, TimestamptzType(), False)),
        [[["a", NOON], ["b", EPOCH_MS]]],
    ),
]


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("units")
    cat = load_catalog("c", type="sql", uri=f"sqlite:///{root}/c.db", warehouse=str(root / "w"))
    cat.create_namespace("n")
    yield cat
    cat.close()


@pytest.mark.parametrize(("case", "schema", "values"), TIMES, ids=[c[0] for c in TIMES])
def test_integers_for_times_are_refused(
    case: str, schema: Schema, values: Any, catalog: Any
) -> None:
    name = schema.fields[0].name
    table = catalog.create_table(f"n.t{TIMES.index((case, schema, values))}", schema)
    with pytest.raises(ValidationError, match=rf"column '{name}'.*(is an integer|int64)"):
        table.append({name: values})
    assert catalog.load_table(table.identifier).snapshots() == []


def test_integers_for_times_in_pandas_objects_are_refused() -> None:
    pd = pytest.importorskip("pandas")
    schema = _one("ts", TimestamptzType())
    mixed = pd.Series([NOON, EPOCH_MS], dtype=object)
    for data in ({"ts": mixed}, pd.DataFrame({"ts": mixed})):
        with pytest.raises(ValidationError, match=r"column 'ts'.*1709208000000 is an integer"):
            to_table_schema(data, schema)
    times = pd.DataFrame({"ts": pd.Series([NOON, None], dtype=object)})
    assert to_table_schema(times, schema).column("ts").to_pylist() == [NOON, None]


def test_times_still_convert() -> None:
    schema = Schema(
        NestedField(1, "ts", TimestamptzType()),
        NestedField(2, "s", StructType(NestedField(3, "t", TimeType()))),
    )
    got = to_table_schema({"ts": [NOON, None], "s": [{"t": dt.time(1)}, None]}, schema)
    assert got.to_pylist() == [{"ts": NOON, "s": {"t": dt.time(1)}}, {"ts": None, "s": None}]


@pytest.mark.parametrize(
    ("values", "path"),
    [
        ([[("k", 1), ("k", 2)]], ""),
        ([[["k", 1], ["j", 3], ["k", 2]]], ""),
    ],
)
def test_map_keys_given_twice_are_refused(values: Any, path: str) -> None:
    schema = _one("m", MapType(2, StringType(), 3, LongType(), False))
    with pytest.raises(ValidationError, match=r"column 'm': map key 'k'.* given twice"):
        to_table_schema({"m": values}, schema)


def test_nested_map_keys_given_twice_are_refused() -> None:
    schema = _one(
        "l", ListType(2, MapType(3, LongType(), 4, StringType(), False), False)
    )  # fmt: skip
    assert to_table_schema({"l": [[[(1, "a"), (2, "b")]]]}, schema).column("l").to_pylist() == [
        [[(1, "a"), (2, "b")]]
    ]
    with pytest.raises(ValidationError, match=r"column 'l': map key 1 .*given twice"):
        to_table_schema({"l": [[[[1, "a"], [1, "b"]]]]}, schema)


def test_appends_refused_commit_nothing(tmp_path: Any) -> None:
    cat = load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    cat.create_namespace("n")
    table = cat.create_table(
        "n.t",
        pa.schema(
            [
                ("ts", pa.timestamp("us", tz="UTC")),
                ("m", pa.map_(pa.string(), pa.string())),
            ]
        ),
    )
    table.append({"ts": [NOON], "m": [[["a", "x"]]]})
    for bad in (
        {"ts": [NOON, EPOCH_MS], "m": [None, None]},
        {"ts": [NOON], "m": [[["k", "1"], ["k", "2"]]]},
    ):
        with pytest.raises(ValidationError):
            table.append(bad)
    table = cat.load_table("n.t")
    assert len(table.snapshots()) == 1
    assert table.scan().to_arrow().to_pylist() == [{"ts": NOON, "m": [("a", "x")]}]
    cat.close()


BERLIN = dt.timezone(dt.timedelta(hours=1))
NAIVE = dt.datetime(2024, 1, 1, 12)
LATE = dt.datetime(2024, 1, 1, 23, 59)

CONVERTED_AS_SOMETHING_ELSE: list[tuple[str, Schema, Any, str]] = [
    (
        "a float cut to a long in a map",
        _one("m", MapType(2, StringType(), 3, LongType(), False)),
        [{"a": 1.9}],
        "1.9 is not a whole number",
    ),
    (
        "a float key cut to a long",
        _one("m", MapType(2, LongType(), 3, StringType(), False)),
        [[(1.5, "x")]],
        "1.5 is not a whole number",
    ),
    (
        "a struct field in a map value",
        _one(
            "m",
            MapType(2, StringType(), 3, StructType(NestedField(4, "n", LongType())), False),
        ),
        [{"a": {"n": 1.5}}],
        "1.5 is not a whole number",
    ),
    (
        "a datetime for a date in a map",
        _one("m", MapType(2, StringType(), 3, DateType(), False)),
        [{"a": LATE}],
        "is a datetime, not a date",
    ),
    (
        "a naive time in a zoned map",
        _one("m", MapType(2, StringType(), 3, TimestamptzType(), False)),
        [{"a": NAIVE}],
        "has no time zone",
    ),
    (
        "a naive key in pairs",
        _one("m", MapType(2, TimestamptzType(), 3, StringType(), False)),
        [[[NAIVE, "x"]]],
        "has no time zone",
    ),
    (
        "a zoned time in a map without zones",
        _one("m", MapType(2, StringType(), 3, TimestampType(), False)),
        [{"a": NAIVE.replace(tzinfo=BERLIN)}],
        "has a zone",
    ),
    (
        "a naive time after a zoned one in a struct",
        _one("s", StructType(NestedField(2, "t", TimestamptzType()))),
        [{"t": NOON}, {"t": NAIVE}],
        "has no time zone",
    ),
    (
        "a naive time after a zoned one in a list",
        _one("l", ListType(2, TimestamptzType(), False)),
        [[NOON, NAIVE]],
        "has no time zone",
    ),
    ("a datetime after a date", _one("d", DateType()), [dt.date(2024, 1, 1), LATE], "not a date"),
]


@pytest.mark.parametrize(
    ("case", "schema", "values", "message"),
    CONVERTED_AS_SOMETHING_ELSE,
    ids=[c[0] for c in CONVERTED_AS_SOMETHING_ELSE],
)
def test_values_pyarrow_would_convert_as_something_else_are_refused(
    case: str, schema: Schema, values: Any, message: str
) -> None:
    """pyarrow's conversion to a nested type cuts floats for integers and datetimes for dates,
    reads naive times as UTC and stores zoned ones as their UTC wall time, and its inference
    types a list's times as the first one's: each was written silently."""
    name = schema.fields[0].name
    with pytest.raises(ValidationError, match=f"column '{name}'.*{message}"):
        to_table_schema({name: values}, schema)


def test_whole_floats_and_matching_times_still_convert_in_maps() -> None:
    schema = Schema(
        NestedField(1, "m", MapType(2, StringType(), 3, LongType(), False)),
        NestedField(4, "z", MapType(5, StringType(), 6, TimestamptzType(), False)),
        NestedField(7, "d", MapType(8, DoubleType(), 9, StringType(), False)),
    )
    got = to_table_schema(
        {"m": [{"a": 2.0}], "z": [{"a": NOON}], "d": [[(0.0, "a"), (-0.0, "b")]]}, schema
    )
    assert got.to_pylist() == [
        {"m": [("a", 2)], "z": [("a", NOON)], "d": [(0.0, "a"), (-0.0, "b")]}
    ]


def test_dataframes_mixing_time_kinds_are_refused_and_labels_need_not_be_text() -> None:
    pd = pytest.importorskip("pandas")
    zoned = _one("ts", TimestamptzType())
    with pytest.raises(ValidationError, match=r"column 'ts'.*has no time zone"):
        to_table_schema(pd.DataFrame({"ts": pd.Series([NOON, NAIVE], dtype=object)}), zoned)
    dates = _one("d", DateType())
    frame = pd.DataFrame({"d": pd.Series([dt.date(2024, 1, 1), LATE], dtype=object)})
    with pytest.raises(ValidationError, match=r"column 'd'.*not a date"):
        to_table_schema(frame, dates)
    numbered = pd.DataFrame({0: pd.Series([NOON, None], dtype=object)})
    assert to_table_schema(numbered, _one("0", TimestamptzType())).column(0).to_pylist() == [
        NOON,
        None,
    ]
    with pytest.raises(ValidationError):
        to_table_schema(pd.DataFrame({"c": [1 + 2j]}), _one("c", DoubleType()))


def test_a_dataframe_of_rows_without_columns_keeps_its_rows(tmp_path: Any) -> None:
    """``pd.DataFrame(index=range(3))`` became a table of no rows: an append committed
    nothing and an overwrite deleted every row and wrote none. Its rows are nulls, as for
    the Arrow table of three rows and no columns."""
    pd = pytest.importorskip("pandas")
    cat = load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    cat.create_namespace("n")
    table = cat.create_table("n.t", pa.schema([("a", pa.int64()), ("s", pa.string())]))
    table.append(pd.DataFrame(index=range(3)))
    assert table.scan().to_arrow().to_pylist() == [{"a": None, "s": None}] * 3
    table.overwrite(pd.DataFrame(index=range(2)))
    assert cat.load_table("n.t").scan().to_arrow().num_rows == 2
    cat.close()


def test_a_dataframe_given_for_a_schema_is_named_not_shown(tmp_path: Any) -> None:
    """A DataFrame given where a schema is wanted put its rows into the error (and so the
    logs); the error names its kind and how to get its schema."""
    pd = pytest.importorskip("pandas")
    cat = load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    cat.create_namespace("n")
    frame = pd.DataFrame({"secret": ["row-value-7f3a"]})
    with pytest.raises(ValidationError, match="from_pandas") as info:
        cat.create_table("n.t", frame)  # type: ignore[arg-type]
    assert "row-value-7f3a" not in str(info.value)
    table = cat.create_table("n.u", pa.schema([("a", pa.int64())]))
    with pytest.raises(ValidationError, match="from_pandas") as info:
        table.update_schema().union_by_name(frame).commit()  # type: ignore[arg-type]
    assert "row-value-7f3a" not in str(info.value)
    cat.close()


def test_an_index_level_named_as_a_column_is_refused() -> None:
    """Named index levels are written as columns; one with a column's name was silently
    left out (pandas refused to insert it and the frame was converted without its index)."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"v": [1, 2]}, index=pd.Index([7, 8], name="v"))
    with pytest.raises(ValidationError, match="index level 'v' has the name of one of its"):
        to_table_schema(frame, _one("v", LongType()))
    kept = pd.DataFrame({"v": [1, 2]}, index=pd.Index([7, 8], name="i"))
    schema = Schema(NestedField(1, "i", LongType()), NestedField(2, "v", LongType()))
    assert to_table_schema(kept, schema).to_pylist() == [{"i": 7, "v": 1}, {"i": 8, "v": 2}]


def test_fractions_zero_keys_nat_and_midnights() -> None:
    """Non-whole numbers that are not floats (fractions, decimals, NumPy floats) are cut by
    pyarrow too; 0 and 0.0 are one floating key while -0.0 is another, and for integer keys
    all three are 0; pandas' NaT is null, and a naive midnight is the date it names."""
    import decimal
    import fractions

    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    longs = _one("m", MapType(2, StringType(), 3, LongType(), False))
    for cut in (fractions.Fraction(3, 2), decimal.Decimal("1.5"), np.float32(1.5)):
        with pytest.raises(ValidationError, match="is not a whole number"):
            to_table_schema({"m": [{"a": cut}]}, longs)
    doubles = _one("m", MapType(2, DoubleType(), 3, StringType(), False))
    with pytest.raises(ValidationError, match="given twice"):
        to_table_schema({"m": [[(0, "a"), (0.0, "b")]]}, doubles)
    got = to_table_schema({"m": [[(0, "a"), (-0.0, "b")]]}, doubles).column("m").to_pylist()
    assert got == [[(0.0, "a"), (-0.0, "b")]]
    by_long = _one("m", MapType(2, LongType(), 3, StringType(), False))
    with pytest.raises(ValidationError, match="given twice"):
        to_table_schema({"m": [[(0.0, "a"), (-0.0, "b")]]}, by_long)
    zoned = _one("ts", TimestamptzType())
    frame = pd.DataFrame({"ts": pd.Series([NOON, pd.NaT], dtype=object)})
    assert to_table_schema(frame, zoned).column("ts").to_pylist() == [NOON, None]
    with pytest.raises(ValidationError, match="has no time zone"):
        to_table_schema({"ts": pd.Series([NOON, NAIVE], dtype=object)}, zoned)
    dates = _one("d", DateType())
    midnight = pd.Series([pd.Timestamp("2024-01-02"), None], dtype=object)
    assert to_table_schema({"d": midnight.tolist()}, dates).column("d").to_pylist() == [
        dt.date(2024, 1, 2),
        None,
    ]
