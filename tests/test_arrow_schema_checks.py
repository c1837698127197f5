"""Tables created from pyarrow schemas: fixed-size lists and list views are lists (created and
appended), field ids given on some fields only are kept and the rest numbered above them,
duplicate column names are refused by name."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from icefloe.arrow_schema import FIELD_ID_KEY, to_schema
from icefloe.catalog import load_catalog
from icefloe.exceptions import ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import IdentityTransform
from icefloe.types import IntegerType, ListType, LongType, MapType, StringType, StructType

I32, I64 = pa.int32(), pa.int64()


def _f(name: str, t: pa.DataType, fid: int | None = None, nullable: bool = True) -> pa.Field:
    meta = None if fid is None else {FIELD_ID_KEY: str(fid).encode()}
    return pa.field(name, t, nullable=nullable, metadata=meta)


def _ids(schema: Schema) -> dict[str, int]:
    """Every field's id by its full name."""
    return schema.index_by_name()


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("arrow_schema_checks")
    cat = load_catalog("c", type="sql", uri=f"sqlite:///{root}/c.db", warehouse=str(root / "w"))
    cat.create_namespace("n")
    return cat


def _out_of_order_list_view(large: bool) -> pa.Array:
    """A list view whose views overlap and run backwards, with a null entry backed by values."""
    cls, it = (pa.LargeListViewArray, I64) if large else (pa.ListViewArray, I32)
    return cls.from_arrays(
        pa.array([3, 0, 1, 0, 2], it),
        pa.array([2, 3, 0, 5, 1], it),
        pa.array([1, None, 3, 4, 5], I32),
        mask=pa.array([False, False, False, True, False]),
    )


_FIXED = pa.array([[1, None], None, [3, 4], [None, None], [5, 6]], pa.list_(I32, 2))
_LIST_INT = ListType(1, IntegerType(), element_required=False)

#: input column -> the Iceberg type of the column created from its Arrow type
LIST_LAYOUTS: dict[str, tuple[pa.Array, Any]] = {
    "fixed_size_list": (_FIXED, _LIST_INT),
    "fixed_size_list_sliced": (_FIXED.slice(1, 3), _LIST_INT),
    "fixed_size_list_required_elements": (
        pa.array([[1, 2], None, [3, 4]], pa.list_(pa.field("e", I32, nullable=False), 2)),
        ListType(1, IntegerType(), element_required=True),
    ),
    "list_view": (_out_of_order_list_view(False), _LIST_INT),
    "list_view_sliced": (_out_of_order_list_view(False).slice(1, 3), _LIST_INT),
    "large_list_view": (_out_of_order_list_view(True), _LIST_INT),
    "struct_of_list_view": (
        pa.StructArray.from_arrays(
            [_out_of_order_list_view(False)],
            names=["l"],
            mask=pa.array([False, True, False, False, False]),
        ),
        StructType(),
    ),
    "map_of_fixed_size_list": (
        pa.array(
            [[("a", [1, 2]), ("b", None)], None, [], [("c", [None, 3])]],
            pa.map_(pa.string(), pa.list_(I32, 2)),
        ),
        MapType(1, StringType(), 2, _LIST_INT),
    ),
    "list_view_of_fixed_size_list": (
        pa.array([[[1, 2], None], None, [], [[3, None]]], pa.list_view(pa.list_(I32, 2))),
        ListType(1, _LIST_INT, element_required=False),
    ),
}


def _same_shape(got: Any, want: Any) -> bool:
    """Whether two Iceberg types are the same but for field ids (a struct is only a struct)."""
    if isinstance(want, StructType):
        return isinstance(got, StructType)
    if isinstance(want, ListType):
        return (
            isinstance(got, ListType)
            and got.element_required == want.element_required
            and _same_shape(got.element_type, want.element_type)
        )
    if isinstance(want, MapType):
        return (
            isinstance(got, MapType)
            and _same_shape(got.key_type, want.key_type)
            and _same_shape(got.value_type, want.value_type)
        )
    return bool(got == want)


@pytest.mark.parametrize("layout", sorted(LIST_LAYOUTS))
def test_fixed_size_lists_and_list_views_are_created_and_appended_as_lists(
    catalog: Any, layout: str
) -> None:
    arr, want_type = LIST_LAYOUTS[layout]
    data = pa.table({"id": pa.array(range(len(arr)), I64), "v": arr})
    t = catalog.create_table(f"n.{layout}", data.schema)
    assert _same_shape(t.schema().find_field("v").field_type, want_type)
    t.append(data)
    t.append(pa.Table.from_batches(data.to_batches(max_chunksize=2)))  # several chunks
    got = t.scan().to_arrow().sort_by("id")
    assert got.column("v").to_pylist() == [v for v in arr.to_pylist() for _ in (0, 1)]


def test_fixed_size_list_into_an_existing_list_column(catalog: Any) -> None:
    t = catalog.create_table("n.fixed_into_list", pa.schema([("id", I64), ("l", pa.list_(I64))]))
    t.append(pa.table({"id": pa.array(range(5), I64), "l": _FIXED}))
    got = t.scan().to_arrow().sort_by("id").column("l").to_pylist()
    assert got == _FIXED.to_pylist()


def test_required_element_nulls_in_a_fixed_size_list_are_refused(catalog: Any) -> None:
    schema = pa.schema([("l", pa.list_(pa.field("element", I64, nullable=False)))])
    t = catalog.create_table("n.fixed_required", schema)
    with pytest.raises(ValidationError, match=r"l\.element"):
        t.append(pa.table({"l": pa.array([[1, None]], pa.list_(I64, 2))}))
    t.append(pa.table({"l": pa.array([[1, 2], None], pa.list_(I64, 2))}))  # null entry: fine
    assert t.scan().to_arrow().column("l").to_pylist() == [[1, 2], None]


def test_partial_field_ids_are_kept_and_the_rest_numbered_above_them(catalog: Any) -> None:
    s = to_schema(pa.schema([_f("a", I64, 2), _f("b", pa.string())]))
    assert _ids(s) == {"a": 2, "b": 3}
    nested = pa.schema(
        [
            _f("a", I64, 5),
            _f("s", pa.struct([_f("x", I32), _f("y", I32, 9)])),
            _f("b", pa.string(), 1),
        ]
    )
    assert _ids(to_schema(nested)) == {"a": 5, "s": 10, "s.x": 11, "s.y": 9, "b": 1}
    # the given ids are the ones a partition spec refers to
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "a"))
    t = catalog.create_table(
        "n.partial_ids", pa.schema([_f("a", I64, 2), _f("b", pa.string())]), partition_spec=spec
    )
    assert t.spec().fields[0].source_id == t.schema().find_field("a").field_id
    data = pa.table({"a": pa.array([1, 2], I64), "b": pa.array(["x", None])})
    t.append(data)
    assert t.scan().to_arrow().sort_by("a").to_pylist() == data.to_pylist()


def test_ids_on_top_level_fields_only(catalog: Any) -> None:
    inner = pa.struct(
        [
            ("x", I32),
            ("l", pa.list_(pa.struct([("z", pa.string())]))),
            ("m", pa.map_(pa.string(), I64)),
        ]
    )
    arrow = pa.schema([_f("id", I64, 1), _f("s", inner, 2)])
    s = to_schema(arrow)
    ids = _ids(s)
    assert ids["id"] == 1 and ids["s"] == 2
    assert sorted(set(ids.values())) == list(range(1, 10))  # 7 nested fields: fresh, above 2
    assert ids["s.l.element.z"] == 6 and ids["s.m.value"] == 9
    assert isinstance(s.find_field("s.m").field_type, MapType)
    t = catalog.create_table("n.top_ids_only", arrow)
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], I64),
            "s": pa.array(
                [{"x": 1, "l": [{"z": "a"}, None], "m": [("k", 5)]}, None, {"x": None}], inner
            ),
        }
    )
    t.append(data)
    assert t.scan().to_arrow().sort_by("id").to_pylist() == data.to_pylist()


def test_no_ids_numbered_in_field_order() -> None:
    arrow = pa.schema([("s", pa.struct([("x", I32)])), ("l", pa.list_(I64)), ("b", I64)])
    s = to_schema(arrow)
    assert _ids(s) == {"s": 1, "s.x": 2, "l": 3, "l.element": 4, "b": 5}
    assert isinstance(s.find_field("b").field_type, LongType)


@pytest.mark.parametrize(
    ("arrow", "names"),
    [
        (pa.schema([("a", I64), ("b", I64), ("a", pa.string())]), "'a'"),
        (pa.schema([_f("a", I64, 1), _f("a", pa.string(), 2)]), "'a'"),
        (pa.schema([("s", pa.struct([("x", I64), ("x", pa.string())]))]), "'s.x'"),
        (pa.schema([("l", pa.list_(pa.struct([("x", I64), ("x", I64)])))]), "'l.element.x'"),
    ],
)
def test_duplicate_column_names_are_refused_by_name(arrow: pa.Schema, names: str) -> None:
    with pytest.raises(ValidationError, match="duplicate column name") as e:
        to_schema(arrow)
    assert names in str(e.value) and "mapping" not in str(e.value)


def test_names_differing_in_case_are_distinct() -> None:
    s = to_schema(pa.schema([("a", I64), ("A", pa.string())]))
    assert [f.name for f in s.fields] == ["a", "A"]
