"""Python dicts for struct values (in a mapping of columns or a pandas object column): a key
that is not one of the struct's fields is refused naming the column and the key, at any depth,
whether Arrow could infer a type for the values or they had to be converted as the column's
own type (which would drop the key, and the user's data with it); a key given as bytes names a
field as its text does (Arrow lost the values of dicts whose keys were of the other kind than
the first dict's); a dict lacking a required field is refused naming the field."""

from __future__ import annotations

import itertools
import re
from decimal import Decimal
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.catalog import load_catalog
from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.types import (
    DecimalType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)
from icefloe.write.input import to_table_schema


def _inner(first_id: int) -> StructType:
    return StructType(
        NestedField(first_id, "a", StringType()),
        NestedField(first_id + 1, "d", DecimalType(38, 0)),
    )


SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "s", _inner(3)),
    NestedField(5, "l", ListType(6, _inner(7), element_required=False)),
    NestedField(9, "m", MapType(10, StringType(), 11, _inner(12), value_required=False)),
    NestedField(14, "o", StructType(NestedField(15, "in", _inner(16)))),
    NestedField(
        18,
        "r",
        StructType(
            NestedField(19, "a", StringType()),
            NestedField(20, "req", LongType(), required=True),
            NestedField(21, "d", DecimalType(38, 0)),
        ),
    ),
    NestedField(
        22,
        "lr",
        ListType(
            23,
            StructType(
                NestedField(24, "req", LongType(), required=True),
                NestedField(25, "d", DecimalType(38, 0)),
            ),
        ),
    ),
)

#: A value Arrow cannot infer (an integer beyond int64) that the decimal field takes exactly.
BIG = 2**70

_NAMES = itertools.count()


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("struct_keys")
    cat = load_catalog("c", type="sql", uri=f"sqlite:///{root}/c.db", warehouse=str(root / "w"))
    cat.create_namespace("n")
    return cat


# (column, its values, the path of the unknown key): the first row makes Arrow's inference
# fail (an integer beyond int64, or the unknown key with values of two types), so the values
# are converted as the column's type
UNKNOWN_KEYS = [
    ("s", [{"d": BIG}, {"a": "x", "typo": 5}], "s.typo"),
    ("s", [{"a": "x", "typo": 1}, {"a": "y", "typo": "z"}], "s.typo"),
    ("l", [[{"d": BIG}], [{"a": "x", "typo": 5}]], "l.element.typo"),
    ("m", [{"k": {"d": BIG}}, {"k": {"a": "x", "typo": 5}}], "m.value.typo"),
    ("m", [[("k", {"d": BIG})], [["k", {"a": "x", "typo": 5}]]], "m.value.typo"),
    ("o", [{"in": {"d": BIG}}, {"in": {"a": "x", "typo": 5}}], "o.in.typo"),
    ("o", [{"in": {"d": BIG}}, {"typo": 5}], "o.typo"),
    # inferred: Arrow's struct of the dicts' keys, refused by the write's type checks
    ("s", [{"a": "x"}, {"a": "y", "typo": 5}], "s.typo"),
    ("l", [[{"a": "x"}], [{"typo": 5}]], "l.element.typo"),
]


@pytest.mark.parametrize(("column", "values", "path"), UNKNOWN_KEYS)
def test_a_struct_key_the_table_lacks_is_refused_however_the_values_convert(
    catalog: Any, column: str, values: list[Any], path: str
) -> None:
    """The unknown key was silently dropped when Arrow could not infer the values' type."""
    data = {"id": list(range(len(values))), column: values}
    with pytest.raises(ValidationError, match=f"{re.escape(path)} is not in the table"):
        to_table_schema(data, SCHEMA)
    frame = pd.DataFrame({"id": range(len(values)), column: pd.Series(values, dtype=object)})
    with pytest.raises(ValidationError, match=f"{re.escape(path)} is not in the table"):
        to_table_schema(frame, SCHEMA)
    t = catalog.create_table(f"n.t{next(_NAMES)}", SCHEMA)
    with pytest.raises(ValidationError, match=rf"'{column}'|{column}\."):
        t.append(data)
    assert t.current_snapshot() is None


def test_the_error_names_the_column_and_the_structs_fields() -> None:
    with pytest.raises(ValidationError) as info:
        to_table_schema({"id": [1, 2], "s": [{"d": BIG}, {"a": "x", "typo": 5}]}, SCHEMA)
    text = str(info.value)
    assert "column 's'" in text and "s.typo" in text and "a, d" in text


def test_values_without_unknown_keys_still_convert_as_the_columns_type(catalog: Any) -> None:
    t = catalog.create_table(f"n.t{next(_NAMES)}", SCHEMA)
    t.append(
        {
            "id": [1, 2],
            "s": [{"d": BIG}, {"a": "x"}],
            "l": [[{"d": BIG}, None], [{"a": "x"}]],
            "m": [{"k": {"d": BIG}}, [["j", {"a": "x"}]]],
            "o": [{"in": {"d": BIG}}, {"in": None}],
            "r": [("x", 1, BIG), ("y", 2, None)],
        }
    )
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    big = Decimal(BIG)
    assert [(r["s"], r["l"], r["m"], r["o"], r["r"]) for r in rows] == [
        (
            {"a": None, "d": big},
            [{"a": None, "d": big}, None],
            [("k", {"a": None, "d": big})],
            {"in": {"a": None, "d": big}},
            {"a": "x", "req": 1, "d": big},
        ),
        (
            {"a": "x", "d": None},
            [{"a": "x", "d": None}],
            [("j", {"a": "x", "d": None})],
            {"in": None},
            {"a": "y", "req": 2, "d": None},
        ),
    ]


@pytest.mark.parametrize(
    ("column", "values", "field"),
    [
        ("r", [{"req": 1, "d": BIG}, {"a": "x"}], "r.req"),  # converted as the column's type
        ("r", [{"req": 1}, {"a": "x"}], "r.req"),  # inferred
        ("r", [{"a": "x"}], "r.req"),  # inferred, no row has the field
        ("r", [{"req": 1, "d": BIG}, {"req": None}], "r.req"),
        ("lr", [[{"req": 1}], [{}]], "lr.element.req"),
        ("lr", [[{"req": 1, "d": BIG}], [{"d": 1}]], "lr.element.req"),
    ],
)
def test_a_dict_lacking_a_required_field_is_refused_naming_it(
    column: str, values: list[Any], field: str
) -> None:
    data = {"id": list(range(len(values))), column: values}
    with pytest.raises(ValidationError, match=f"required field '{re.escape(field)}'"):
        to_table_schema(data, SCHEMA)


def test_bytes_keys_name_fields_as_text_does() -> None:
    """Arrow reads a struct's dict keys as text or as bytes after the first dict it sees and
    silently lost the values of dicts with the other kind of keys."""
    data = {"id": [1, 2, 3], "s": [{b"a": "x"}, {"a": "y"}, {b"d": BIG, "a": "z"}]}
    want = [{"a": "x", "d": None}, {"a": "y", "d": None}, {"a": "z", "d": Decimal(BIG)}]
    assert to_table_schema(data, SCHEMA).column("s").to_pylist() == want
    frame = pd.DataFrame({"id": [1, 2], "s": [{b"a": "x"}, {"a": "y"}]})
    assert to_table_schema(frame, SCHEMA).column("s").to_pylist() == want[:2]
    with pytest.raises(ValidationError, match=r"s\[b'b'\] is not in the table"):
        to_table_schema({"id": [1, 2], "s": [{"a": "x"}, {b"b": "y"}]}, SCHEMA)
    with pytest.raises(ValidationError, match=r"s\[1\] is not in the table"):
        to_table_schema({"id": [1], "s": [{1: "x"}]}, SCHEMA)
    with pytest.raises(ValidationError, match="'a' more than once"):
        to_table_schema({"id": [1], "s": [{"a": "x", b"a": "y"}]}, SCHEMA)


def test_a_generator_of_values_is_read_once() -> None:
    """Values Arrow could not infer were converted again from the generator it had used up."""
    data = {"id": [1, 2], "s": (v for v in [{"d": BIG}, {"a": "x"}])}
    got = to_table_schema(data, SCHEMA).column("s").to_pylist()
    assert got == [{"a": None, "d": Decimal(BIG)}, {"a": "x", "d": None}]


def test_pandas_object_columns_of_dicts_convert_as_a_mappings_values() -> None:
    """Dicts for a map column in a DataFrame were refused (Arrow guessed a struct of their
    keys); they convert as in a mapping of columns, NaN a null as pandas means it."""
    frame = pd.DataFrame(
        {
            "id": [1, 2, 3],
            "m": [{"k": {"a": "x", "d": float("nan")}}, {"j": None}, float("nan")],
            "s": [{"a": "x"}, float("nan"), {"a": None, "d": 1}],
        }
    )
    table = to_table_schema(frame, SCHEMA)
    assert table.column("m").to_pylist() == [[("k", {"a": "x", "d": None})], [("j", None)], None]
    assert table.column("s").to_pylist() == [
        {"a": "x", "d": None},
        None,
        {"a": None, "d": Decimal(1)},
    ]


def test_row_dicts_are_refused_with_a_hint_and_their_arrow_form_is_checked() -> None:
    rows = [{"id": 1, "s": {"a": "x", "typo": 5}}]
    with pytest.raises(ValidationError, match="from_pylist"):
        to_table_schema(rows, SCHEMA)
    with pytest.raises(ValidationError, match=r"s\.typo is not in the table"):
        to_table_schema(pa.Table.from_pylist(rows), SCHEMA)


_KEYS = st.sampled_from(["a", "d", "typo", b"a", b"d"])
_VALUES = st.one_of(st.none(), st.text(max_size=3), st.integers(-(2**80), 2**80))


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.one_of(st.none(), st.dictionaries(_KEYS, _VALUES, max_size=3)), min_size=1, max_size=5
    ),
    in_list=st.booleans(),
)
def test_struct_dicts_are_written_as_given_or_refused(
    rows: list[dict[Any, Any] | None], in_list: bool
) -> None:
    """Whatever Arrow infers: a dict with the unknown key is refused naming it; otherwise each
    given field (its name as text or bytes) is written as given (a missing key is null), or
    the values are refused."""
    column, path = ("l", "l.element") if in_list else ("s", "s")
    values = [[r] for r in rows] if in_list else rows
    data = {"id": list(range(len(rows))), column: values}
    twice = any(
        r is not None and ({"a", b"a"} <= r.keys() or {"d", b"d"} <= r.keys()) for r in rows
    )
    if any(r is not None and "typo" in r for r in rows):
        refused = rf"{path}\.typo" + ("|more than once" if twice else "")
        with pytest.raises(ValidationError, match=refused):
            to_table_schema(data, SCHEMA)
        return
    if twice:
        with pytest.raises(ValidationError, match="more than once"):
            to_table_schema(data, SCHEMA)
        return
    rows = [
        None
        if r is None
        else {str(k, "utf-8") if isinstance(k, bytes) else k: v for k, v in r.items()}
        for r in rows
    ]
    try:
        got = to_table_schema(data, SCHEMA).column(column).to_pylist()
    except ValidationError:
        return  # a text for the decimal, or a number for the string: nothing is lost silently
    written = [g[0] for g in got] if in_list else got
    for r, w in zip(rows, written, strict=True):
        if r is None:
            assert w is None
            continue
        assert w is not None
        for k in ("a", "d"):
            v = r.get(k)
            assert w[k] == (None if v is None else Decimal(v) if k == "d" else v)
