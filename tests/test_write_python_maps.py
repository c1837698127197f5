"""Python values for map columns in a mapping of columns: entries given as 2-element lists (as
JSON decoding gives ``(key, value)`` pairs) convert as tuples do, at any depth, while lists of
list columns stay lists; an entry that is not a pair is refused naming the column."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.arrow_schema import type_to_arrow
from icefloe.catalog import load_catalog
from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.types import (
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)
from icefloe.write.input import to_table_schema


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("maps")
    cat = load_catalog("c", type="sql", uri=f"sqlite:///{root}/c.db", warehouse=str(root / "w"))
    cat.create_namespace("n")
    return cat


SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "m", MapType(3, StringType(), 4, LongType(), value_required=False)),
    NestedField(
        5,
        "l",
        ListType(6, MapType(7, StringType(), 8, IntegerType(), value_required=False), False),
    ),
    NestedField(
        9,
        "s",
        StructType(
            NestedField(
                10, "inner", MapType(11, StringType(), 12, StringType(), value_required=False)
            )
        ),
    ),
    NestedField(
        13,
        "mm",
        MapType(
            14,
            StringType(),
            15,
            MapType(16, LongType(), 17, LongType(), value_required=False),
            value_required=False,
        ),
    ),
    NestedField(18, "ll", ListType(19, ListType(20, StringType(), False), False)),
)


def test_pairs_given_as_lists_convert_as_map_entries(catalog: Any) -> None:
    """Rows decoded from JSON give map entries as 2-element lists: they were refused with
    pyarrow's "expecting tuple of (key, value) pair"; they are written as the map's entries,
    in a list, a struct and a map's values too, and lists of two strings in a list column
    stay lists."""
    t = catalog.create_table("n.json_maps", SCHEMA)
    rows = json.loads(
        """{
        "id": [1, 2, 3],
        "m": [[["a", 1], ["b", 2]], [], null],
        "l": [[[["x", 1]], null], null, [[]]],
        "s": [{"inner": [["k", "v"]]}, {"inner": null}, null],
        "mm": [[["p", [[1, 2], [3, 4]]]], [["q", null]], null],
        "ll": [[["a", "b"], ["c", "d"]], [["e"]], null]
        }"""
    )
    rows["m"][1] = [("c", 3), ["d", 4]]  # tuples and lists together
    t.append(rows)
    got = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [
        {
            "id": 1,
            "m": [("a", 1), ("b", 2)],
            "l": [[("x", 1)], None],
            "s": {"inner": [("k", "v")]},
            "mm": [("p", [(1, 2), (3, 4)])],
            "ll": [["a", "b"], ["c", "d"]],
        },
        {
            "id": 2,
            "m": [("c", 3), ("d", 4)],
            "l": None,
            "s": {"inner": None},
            "mm": [("q", None)],
            "ll": [["e"]],
        },
        {"id": 3, "m": None, "l": [[]], "s": None, "mm": None, "ll": None},
    ]


def test_pairs_as_lists_in_pandas_values() -> None:
    """A DataFrame of JSON records (its map column holds lists of 2-element lists) and a
    pandas Series in a mapping of columns (whose NaN stays null) convert as tuples do."""
    pd = pytest.importorskip("pandas")
    schema = Schema(NestedField(1, "i", LongType()), *SCHEMA.fields[1:2])
    records = json.loads('[{"i": 1, "m": [["a", 1], ["b", null]]}, {"i": 2}]')
    got = to_table_schema(pd.DataFrame(records), schema).to_pylist()
    assert got == [{"i": 1, "m": [("a", 1), ("b", None)]}, {"i": 2, "m": None}]
    series = pd.Series([[["a", 1]], None, float("nan")])
    got = to_table_schema({"i": [1, 2, 3], "m": series}, schema).column("m").to_pylist()
    assert got == [[("a", 1)], None, None]


def test_pandas_null_markers_and_pairs_of_one_type_in_map_columns() -> None:
    """``pd.NA`` and ``pd.NaT`` for a map are null (they were refused as "not a map"), and a
    DataFrame whose key-value pairs have one type (Arrow infers lists of lists) converts as the
    table's map instead of being refused."""
    pd = pytest.importorskip("pandas")
    longs = Schema(NestedField(1, "m", MapType(2, StringType(), 3, LongType())))
    for null in (pd.NA, pd.NaT):
        for first in ([("a", 1)], [["a", 1]], {"a": 1}):
            series = pd.Series([first, null], dtype=object)
            assert to_table_schema({"m": series}, longs).column("m").to_pylist() == [
                [("a", 1)],
                None,
            ]
            frame = pd.DataFrame({"m": series})
            assert to_table_schema(frame, longs).column("m").to_pylist() == [[("a", 1)], None]
    strings = Schema(NestedField(1, "m", MapType(2, StringType(), 3, StringType(), False)))
    records = json.loads('[{"m": [["a", "x"], ["b", null]]}, {"m": null}, {}]')
    got = to_table_schema(pd.DataFrame(records), strings).column("m").to_pylist()
    assert got == [[("a", "x"), ("b", None)], None, None]


_TABLES = itertools.count()


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("m", [["a", 1, 2]], r"column 'm': map entry \['a', 1, 2\] is not a \(key, value\) pair"),
        ("m", [("a",)], r"column 'm': map entry \('a',\) is not a \(key, value\) pair"),
        ("m", ["ab"], r"column 'm': map entry 'ab' is not a \(key, value\) pair"),
        # pyarrow's own conversion aborts the process on a null entry
        ("m", [None], r"column 'm': map entry None is not a \(key, value\) pair"),
        ("m", [[None, 1]], r"column 'm': map entry \[None, 1\] has a null key"),
        ("l", [{"a": 1}, "ab"], r"column 'l': 'ab' at l\.element is a str, not a map"),
        ("l", [[["x", 1, 2]]], r"column 'l': map entry \['x', 1, 2\] at l\.element is not a"),
        ("s", {"inner": [["k"]]}, r"column 's': map entry \['k'\] at s\.inner is not a"),
        ("mm", [["p", [[1, 2, 3]]]], r"column 'mm': map entry \[1, 2, 3\] at mm\.value is not"),
    ],
    ids=[
        "three",
        "one",
        "string",
        "null_entry",
        "null_key",
        "not_a_map",
        "in_list",
        "in_struct",
        "in_map_value",
    ],
)
def test_map_entries_that_are_not_pairs_are_refused_naming_the_column(
    catalog: Any, column: str, value: Any, message: str
) -> None:
    t = catalog.create_table(f"n.bad_pairs_{next(_TABLES)}", SCHEMA)
    t.append({"id": [1], "m": [[("a", 1)]]})
    before = t.current_snapshot().snapshot_id
    with pytest.raises(ValidationError, match=message):
        t.append({"id": [9], column: [value]})
    assert t.refresh().current_snapshot().snapshot_id == before


# -- property: any value of a type holding maps converts from JSON as from tuples -----------

_LEAVES: dict[str, IcebergType] = {"long": LongType(), "string": StringType()}


def _shapes() -> st.SearchStrategy[Any]:
    """Type shapes: a leaf name, ``("list", e)``, ``("map", key leaf, v)``, ``("struct", f)``."""
    return st.recursive(
        st.sampled_from(sorted(_LEAVES)),
        lambda inner: st.one_of(
            st.tuples(st.just("list"), inner),
            st.tuples(st.just("map"), st.sampled_from(sorted(_LEAVES)), inner),
            st.tuples(st.just("struct"), inner),
        ),
        max_leaves=4,
    )


def _iceberg(shape: Any, ids: Any) -> IcebergType:
    if isinstance(shape, str):
        return _LEAVES[shape]
    if shape[0] == "list":
        return ListType(next(ids), _iceberg(shape[1], ids), False)
    if shape[0] == "map":
        return MapType(
            next(ids), _LEAVES[shape[1]], next(ids), _iceberg(shape[2], ids), value_required=False
        )
    return StructType(NestedField(next(ids), "f", _iceberg(shape[1], ids)))


def _leaf(name: str) -> st.SearchStrategy[Any]:
    return st.integers(-5, 5) if name == "long" else st.text("ab", max_size=2)


def _value(shape: Any) -> st.SearchStrategy[tuple[Any, Any]]:
    """(value as pyarrow takes it, the same value as given: map entries as tuples or lists,
    string-keyed maps sometimes as dicts), either possibly None."""
    if isinstance(shape, str):
        return _leaf(shape).map(lambda v: (v, v))
    if shape[0] == "list":
        inner = st.lists(_value(shape[1]), max_size=3).map(
            lambda es: ([c for c, _ in es], [g for _, g in es])
        )
    elif shape[0] == "struct":
        inner = _value(shape[1]).map(lambda cg: ({"f": cg[0]}, {"f": cg[1]}))
    else:
        entries = st.dictionaries(_leaf(shape[1]), _value(shape[2]), max_size=3)
        inner = st.tuples(entries, st.sampled_from(["tuples", "lists", "mixed", "dict"])).map(
            lambda d: _given_map(*d)
        )
    return st.one_of(st.just((None, None)), inner)


def _given_map(entries: dict[Any, tuple[Any, Any]], kind: str) -> tuple[Any, Any]:
    canonical = [(k, c) for k, (c, _) in entries.items()]
    if kind == "dict" and all(isinstance(k, str) for k in entries):
        return canonical, {k: g for k, (_, g) in entries.items()}
    given: list[Any] = []
    for i, (k, (_, g)) in enumerate(entries.items()):
        as_list = kind == "lists" or (kind == "mixed" and i % 2 == 0)
        given.append([k, g] if as_list else (k, g))
    return canonical, given


@st.composite
def _columns(draw: st.DrawFn) -> tuple[IcebergType, list[Any], list[Any]]:
    shape = draw(_shapes())
    t = _iceberg(shape, itertools.count(2))
    rows = draw(st.lists(_value(shape), min_size=1, max_size=5))
    return t, [c for c, _ in rows], [g for _, g in rows]


@settings(max_examples=200, deadline=None)
@given(case=_columns())
def test_map_pairs_as_lists_tuples_or_dicts_convert_alike(
    case: tuple[IcebergType, list[Any], list[Any]],
) -> None:
    """Any value of a type of maps, lists and structs: its map entries given as lists, tuples,
    both, or the map as a dict (and the same value through JSON, which makes every pair a
    list) convert to the Arrow array pyarrow makes of it with tuples; list values stay lists."""
    t, canonical, given_values = case
    schema = Schema(NestedField(1, "c", t))
    want = pa.array(canonical, type=type_to_arrow(t)).to_pylist()
    for values in (given_values, json.loads(json.dumps(given_values))):
        got = to_table_schema({"c": values}, schema).column("c").to_pylist()
        assert got == want
