"""``add_files`` checks what a file holds, not only its types: no nulls in required columns
(nested ones too), values in a finer unit that the table's unit holds exactly (nested ones
too), and a float or double identity-partition source holding one value, NaN and signed zeros
told apart as Iceberg compares partition values (by their bits)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.exceptions import ValidationError
from icefloe.name_mapping import DEFAULT_NAME_MAPPING_PROPERTY, create_mapping
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import (
    BinaryType,
    DoubleType,
    FloatType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
)
from support.write_util import catalog

NAN = float("nan")


def _f(name: str, t: pa.DataType, fid: int, nullable: bool = True) -> pa.Field:
    return pa.field(name, t, nullable, metadata={"PARQUET:field_id": str(fid)})


def _write(path: Path, schema: pa.Schema, columns: dict[str, list[Any]]) -> str:
    pq.write_table(pa.table(columns, schema=schema), path)
    return str(path)


def _each_refused(
    t: Any,
    tmp_path: Path,
    schema: pa.Schema,
    good: dict[str, list[Any]],
    bad: dict[str, tuple[str, list[Any]]],
    message: str,
) -> None:
    """Each ``bad`` file (``good`` with one column replaced) is refused by ``add_files`` with
    ``message`` (``{column}`` standing for the bad column) after the file's name; nothing is
    committed."""
    for column, (top, values) in bad.items():
        name = f"bad_{column}.parquet"
        path = _write(tmp_path / name, schema, {**good, top: values})
        pattern = f"{re.escape(name)}.*" + message.format(column=re.escape(column))
        with pytest.raises(ValidationError, match=pattern):
            t.add_files([path])
    assert t.current_snapshot() is None


def test_nulls_in_required_columns_are_refused(tmp_path: Path) -> None:
    """A null where the table requires a value is refused, at any depth; a required child of a
    null optional struct and an empty required list are not nulls."""
    t = catalog(tmp_path).create_table(
        "ns.t",
        Schema(
            NestedField(1, "id", LongType(), required=True),
            NestedField(
                2, "s", StructType(NestedField(5, "a", LongType(), required=True)), required=True
            ),
            NestedField(3, "o", StructType(NestedField(6, "b", LongType(), required=True))),
            NestedField(4, "l", ListType(7, LongType(), element_required=True), required=True),
        ),
    )
    schema = pa.schema(
        [
            _f("id", pa.int64(), 1),
            _f("s", pa.struct([_f("a", pa.int64(), 5)]), 2),
            _f("o", pa.struct([_f("b", pa.int64(), 6)]), 3),
            _f("l", pa.list_(_f("element", pa.int64(), 7)), 4),
        ]
    )
    good = {
        "id": [1, 2, 3],
        "s": [{"a": 1}, {"a": 2}, {"a": 3}],
        "o": [{"b": 1}, None, {"b": 3}],
        "l": [[1], [], [2, 3]],
    }
    bad = {
        "id": ("id", [1, None, 3]),
        "s": ("s", [{"a": 1}, None, {"a": 3}]),
        "s.a": ("s", [{"a": 1}, {"a": None}, {"a": 3}]),
        "o.b": ("o", [{"b": 1}, None, {"b": None}]),
        "l": ("l", [[1], None, [2]]),
        "l.element": ("l", [[1], [], [2, None]]),
    }
    _each_refused(t, tmp_path, schema, good, bad, "required column '{column}'")
    t.add_files([_write(tmp_path / "good.parquet", schema, good)])
    got = t.scan(selected_fields=("id", "s", "l")).to_arrow().sort_by("id").to_pydict()
    assert got == {k: good[k] for k in ("id", "s", "l")}


def test_nested_values_in_a_finer_unit_must_fit(tmp_path: Path) -> None:
    """Nanosecond timestamps inside a struct, list or map are checked as top-level ones are:
    whole microseconds are read as the table's type, others refused (every scan would fail)."""
    t = catalog(tmp_path).create_table(
        "ns.t",
        Schema(
            NestedField(1, "s", StructType(NestedField(4, "ts", TimestampType()))),
            NestedField(2, "l", ListType(5, TimestampType(), element_required=False)),
            NestedField(3, "m", MapType(6, StringType(), 7, TimestampType(), value_required=False)),
        ),
    )
    ns = pa.timestamp("ns")
    schema = pa.schema(
        [
            _f("s", pa.struct([_f("ts", ns, 4)]), 1),
            _f("l", pa.list_(_f("element", ns, 5)), 2),
            _f("m", pa.map_(_f("key", pa.string(), 6, False), _f("value", ns, 7)), 3),
        ]
    )
    good = {"s": [{"ts": 2000}, None], "l": [[3000, None], []], "m": [[("k", 4000)], None]}
    bad = {
        "s.ts": ("s", [{"ts": 2000}, {"ts": 1001}]),
        "l.element": ("l", [[3000], [1001]]),
        "m.value": ("m", [[("k", 4000)], [("j", 1001)]]),
    }
    _each_refused(t, tmp_path, schema, good, bad, "'{column}'.*without rounding")
    t.add_files([_write(tmp_path / "good.parquet", schema, good)])
    got = t.scan().to_arrow()
    assert got["s"].type.field(0).type == pa.timestamp("us")
    assert got.cast(schema).to_pydict() == pa.table(good, schema=schema).to_pydict()


def test_float_identity_partitions_are_exact(tmp_path: Path) -> None:
    """Parquet statistics skip NaN and write -0.0 as the minimum of zeros, so a float or double
    identity-partition source is read: NaN with other values, or zeros of both signs, span
    partitions; a file of only NaN is in partition NaN, of only 0.0 in partition 0.0."""
    t = catalog(tmp_path).create_table(
        "ns.t",
        Schema(
            NestedField(1, "x", DoubleType()),
            NestedField(2, "s", StructType(NestedField(3, "f", FloatType()))),
        ),
        partition_spec=PartitionSpec(
            PartitionField(1, 1000, parse_transform("identity"), "x"),
            PartitionField(3, 1001, parse_transform("identity"), "f"),
        ),
    )
    schema = pa.schema(
        [_f("x", pa.float64(), 1), _f("s", pa.struct([_f("f", pa.float32(), 3)]), 2)]
    )

    def write(name: str, x: list[Any], f: list[Any] | None = None) -> str:
        s = [None if v is None else {"f": v} for v in (f or [2.5] * len(x))]
        return _write(tmp_path / f"{name}.parquet", schema, {"x": x, "s": s})

    spans = {
        "nan_and_one": write("nan_and_one", [1.0, NAN]),
        "zeros": write("zeros", [0.0, -0.0]),
        "nested_nan": write("nested_nan", [1.0, 1.0], [2.5, NAN]),
        "nested_zeros": write("nested_zeros", [1.0, 1.0], [-0.0, 0.0]),
    }
    for name, path in spans.items():
        with pytest.raises(ValidationError, match=rf"{name}\.parquet.*more than one partition"):
            t.add_files([path])
    assert t.current_snapshot() is None

    t.add_files([write("nan", [NAN, NAN], [NAN, NAN])])
    t.add_files([write("plus", [0.0, 0.0], [0.0, 0.0])])
    t.add_files([write("minus", [-0.0], [-0.0])])
    t.add_files([write("null", [1.0], [None])])
    files = t.inspect.files().to_pydict()
    parts = {Path(f).stem: p for f, p in zip(files["file_path"], files["partition"], strict=True)}
    assert math.isnan(parts["nan"]["x"]) and math.isnan(parts["nan"]["f"])
    for name, sign in [("plus", 1.0), ("minus", -1.0)]:
        assert parts[name] == {"x": 0.0, "f": 0.0}
        assert math.copysign(1.0, parts[name]["x"]) == math.copysign(1.0, parts[name]["f"]) == sign
    assert parts["null"] == {"x": 1.0, "f": None}
    assert t.scan(row_filter="x is nan").to_arrow().num_rows == 2
    assert t.scan(row_filter="x = 1.0").to_arrow().num_rows == 1
    assert t.scan(row_filter="x = 0.0").to_arrow().num_rows == 3


def test_required_children_stored_nullable_read_back(tmp_path: Path) -> None:
    """A file (pyarrow's writer marks every field nullable) holding a required struct child
    null where its optional struct is: added and read back; the same child null under a
    present struct is a corrupt file when read."""
    from icefloe.exceptions import CorruptFileError
    from icefloe.read.projection import project_field

    schema = Schema(NestedField(1, "o", StructType(NestedField(2, "b", LongType(), True))))
    t = catalog(tmp_path).create_table("ns.nullable_child", schema)
    arrow = pa.schema([_f("o", pa.struct([_f("b", pa.int64(), 2)]), 1)])
    t.add_files([_write(tmp_path / "f.parquet", arrow, {"o": [{"b": 1}, None, {"b": 3}]})])
    assert t.scan().to_arrow().column("o").to_pylist() == [{"b": 1}, None, {"b": 3}]
    bad = pa.array([{"b": 1}, {"b": None}], arrow.field("o").type)
    with pytest.raises(CorruptFileError, match="required field 'b'"):
        project_field(bad, schema.fields[0], 2, "f.parquet", {})


def test_a_column_of_another_shape_is_refused(tmp_path: Path) -> None:
    """A file whose column with a table field's id is a struct where the table has a primitive,
    a primitive where it has a struct or a list, ... is refused before anything is committed:
    readers refuse such a file, so once added every full read of the table would fail."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "st", StructType(NestedField(4, "a", LongType()))),
        NestedField(3, "n", LongType()),
        NestedField(5, "l", ListType(6, LongType())),
    )
    t = catalog(tmp_path).create_table("ns.shapes", schema)
    ids = {name: t.schema().find_field_id(name) for name in ("id", "st", "st.a", "n", "l")}
    element = t.schema().find_field_id("l.element")
    good = [
        _f("id", pa.int64(), ids["id"], False),
        _f("st", pa.struct([_f("a", pa.int64(), ids["st.a"])]), ids["st"]),
        _f("n", pa.int64(), ids["n"]),
        _f("l", pa.list_(_f("element", pa.int64(), element)), ids["l"]),
    ]
    columns = {"id": [1], "st": [{"a": 1}], "n": [2], "l": [[3]]}
    wrong = {
        "st": (_f("st", pa.int32(), ids["st"]), [7]),
        "n": (_f("n", pa.struct([_f("z", pa.int32(), 99)]), ids["n"]), [{"z": 1}]),
        "l": (_f("l", pa.int64(), ids["l"]), [4]),
    }
    for name, (field, values) in wrong.items():
        fields = [field if f.name == name else f for f in good]
        path = _write(tmp_path / f"{name}.parquet", pa.schema(fields), {**columns, name: values})
        with pytest.raises(ValidationError, match=rf"{name}\.parquet: column '{name}' \(id"):
            t.add_files([path])
    assert t.refresh().current_snapshot() is None
    t.add_files([_write(tmp_path / "good.parquet", pa.schema(good), columns)])
    assert t.scan().to_arrow().to_pylist() == [{"id": 1, "st": {"a": 1}, "n": 2, "l": [3]}]


def test_files_written_from_view_typed_columns_are_added(tmp_path: Path) -> None:
    # pyarrow's ARROW:schema hint says string_view / binary_view for such files; the Parquet
    # columns are plain BYTE_ARRAY (String annotation for strings), as any writer's
    t = catalog(tmp_path).create_table(
        "ns.views",
        Schema(
            NestedField(1, "id", LongType()),
            NestedField(2, "s", StringType()),
            NestedField(3, "b", BinaryType()),
        ),
    )
    schema = pa.schema(
        [_f("id", pa.int64(), 1), _f("s", pa.string_view(), 2), _f("b", pa.binary_view(), 3)]
    )
    path = _write(
        tmp_path / "v.parquet", schema, {"id": [1, 2], "s": ["a", None], "b": [b"x", b""]}
    )
    assert pq.read_schema(path).field("s").type == pa.string_view()  # the hint is there
    t.add_files([path])
    rows = t.scan().to_arrow()
    assert rows.to_pylist() == [{"id": 1, "s": "a", "b": b"x"}, {"id": 2, "s": None, "b": b""}]
    assert t.scan(row_filter="s = 'a'").to_arrow()["id"].to_pylist() == [1]


@pytest.mark.parametrize("version", [2, 3])
def test_files_holding_row_lineage_columns_are_refused(tmp_path: Path, version: int) -> None:
    """A compaction of a v3 table writes ``_row_id`` and ``_last_updated_sequence_number``
    into its files; readers take stored row ids as they are, so adding such a file to
    another table gave it row ids the table had already assigned (or will, after an
    upgrade to v3)."""
    cat = catalog(tmp_path)
    src = cat.create_table("ns.src", pa.schema([_f("id", pa.int64(), 1, False)]), format_version=3)
    src.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    src.append(pa.table({"id": pa.array([3], pa.int64())}))
    src.rewrite_data_files()
    (path,) = [t.data_file.file_path for t in src.scan().plan_files()]
    assert "_row_id" in pq.read_schema(path.removeprefix("file://")).names
    dst = cat.create_table(
        "ns.dst", pa.schema([_f("id", pa.int64(), 1, False)]), format_version=version
    )
    dst.append(pa.table({"id": pa.array([10, 11], pa.int64())}))
    with pytest.raises(ValidationError, match=r"metadata columns .*_row_id"):
        dst.add_files([path])
    assert len(dst.refresh().snapshots()) == 1


def test_a_required_field_missing_inside_a_present_struct_is_refused(tmp_path: Path) -> None:
    """A file whose struct (or list element) lacks a required child was added, and then no
    read of the table worked: every reader needs a value for that field."""
    cat = catalog(tmp_path)
    # ids as create_table assigns them: struct 2 {a 3, b 4}; list 2 <element 3 {a 4, b 5}>
    in_struct = StructType(NestedField(3, "a", LongType(), True), NestedField(4, "b", StringType()))
    in_list = StructType(NestedField(4, "a", LongType(), True), NestedField(5, "b", StringType()))
    for shape, field in (
        ("struct", NestedField(2, "s", in_struct, True)),
        ("list", NestedField(2, "s", ListType(3, in_list, True))),
    ):
        t = cat.create_table(f"ns.{shape}", Schema(NestedField(1, "id", LongType(), True), field))
        if shape == "struct":
            column, values = _f("s", pa.struct([_f("b", pa.string(), 4)]), 2, False), [{"b": "x"}]
        else:
            only_b = pa.struct([_f("b", pa.string(), 5)])
            element = pa.field("element", only_b, False, metadata={"PARQUET:field_id": "3"})
            column, values = _f("s", pa.list_(element), 2), [[{"b": "x"}]]
        schema = pa.schema([_f("id", pa.int64(), 1, False), column])
        path = _write(tmp_path / f"{shape}.parquet", schema, {"id": [1], "s": values})
        with pytest.raises(ValidationError, match=r"required column 's\.(element\.)?a' is missing"):
            t.add_files([path])
        assert t.refresh().current_snapshot() is None
        assert t.scan().to_arrow().num_rows == 0


def test_a_file_with_one_field_id_on_two_columns_is_refused(tmp_path: Path) -> None:
    """Readers pick one of the columns and the bounds came from the other: DuckDB read 'a'
    and then pruned the file for ``v = 'a'`` by the other column's bounds."""
    cat = catalog(tmp_path)
    t = cat.create_table(
        "ns.t", Schema(NestedField(1, "id", LongType()), NestedField(2, "v", StringType()))
    )
    schema = pa.schema([_f("id", pa.int64(), 1), _f("v", pa.string(), 2), _f("w", pa.string(), 2)])
    path = _write(tmp_path / "dup.parquet", schema, {"id": [5], "v": ["a"], "w": ["zzz"]})
    with pytest.raises(ValidationError, match="field ids 2 are on more than one column"):
        t.add_files([path])
    assert t.refresh().current_snapshot() is None


def test_field_ids_the_table_never_assigned_are_refused(tmp_path: Path) -> None:
    """A file of another Iceberg table can carry ids above the table's last column id. They
    were ignored, and the next added column took one over: it read the other table's values
    for the added rows (same type), or every read of the table failed (another type)."""
    cat = catalog(tmp_path)
    t = cat.create_table("ns.t", pa.schema([_f("id", pa.int64(), 1)]))
    nested = pa.struct([_f("x", pa.int64(), 5)])
    for name, extra in [("top", _f("secret", pa.string(), 2)), ("nested", _f("s", nested, 1))]:
        schema = pa.schema([_f("id", pa.int64(), 1), extra])
        values: list[Any] = ["alice"] if name == "top" else [{"x": 7}]
        if name == "nested":  # id 1 twice is refused first: give the struct a new top id
            schema = pa.schema([_f("id", pa.int64(), 1), _f("s", nested, 3)])
        path = _write(tmp_path / f"{name}.parquet", schema, {"id": [1], schema[1].name: values})
        with pytest.raises(ValidationError, match=r"field ids (2|3, 5) in the file were never"):
            t.add_files([path])
    assert t.refresh().current_snapshot() is None
    # ids the table assigned and dropped since are the table's own: still accepted
    with t.update_schema() as u:
        u.add_column("gone", StringType())
    with t.update_schema() as u:
        u.delete_column("gone")
    schema = pa.schema([_f("id", pa.int64(), 1), _f("gone", pa.string(), 2)])
    t.add_files([_write(tmp_path / "own.parquet", schema, {"id": [4], "gone": ["z"]})])
    with t.update_schema() as u:
        u.add_column("note", StringType())
    assert t.scan().to_arrow().to_pylist() == [{"id": 4, "note": None}]


def _mapped_table(cat: Any, schema: Schema) -> Any:
    t = cat.create_table("ns.t", schema)
    t.set_properties({DEFAULT_NAME_MAPPING_PROPERTY: create_mapping(t.schema()).to_json_string()})
    return t


def test_a_file_with_some_field_ids_is_read_and_described_by_its_ids(tmp_path: Path) -> None:
    """A file with a field id on one column and none on another is read by its ids alone, as
    Iceberg Java reads it, by the scan and by add_files' statistics: the full scan showed the
    mapped column's values while a filter on them returned nothing (pruned by the statistics
    of the column carrying the id)."""
    cat = catalog(tmp_path)
    t = _mapped_table(cat, Schema(NestedField(1, "a", LongType()), NestedField(2, "b", LongType())))
    schema = pa.schema([_f("a", pa.int64(), 2), pa.field("b", pa.int64())])
    t.add_files([_write(tmp_path / "mixed.parquet", schema, {"a": [10, 11], "b": [20, 21]})])
    full = t.scan().to_arrow().to_pylist()
    assert full == [{"a": None, "b": 10}, {"a": None, "b": 11}]
    for value in (10, 11, 20, 21):
        want = [r for r in full if r["b"] == value]
        assert t.scan(row_filter=f"b = {value}").to_arrow().to_pylist() == want


def test_a_file_with_an_id_only_on_a_struct_reads_its_unnamed_leaves_as_null(
    tmp_path: Path,
) -> None:
    """A struct column with a field id whose leaves have none: readers take the file's ids
    and read the leaves as null, so add_files records no values for them (it applied the name
    mapping to the leaves and a filter ``st.x is null`` returned nothing)."""
    cat = catalog(tmp_path)
    t = _mapped_table(
        cat, Schema(NestedField(1, "st", StructType(NestedField(2, "x", LongType()))))
    )
    schema = pa.schema([_f("st", pa.struct([pa.field("x", pa.int64())]), 1)])
    t.add_files([_write(tmp_path / "s.parquet", schema, {"st": [{"x": 1}, {"x": 2}]})])
    full = t.scan().to_arrow().to_pylist()
    assert full == [{"st": {"x": None}}, {"st": {"x": None}}]
    assert t.scan(row_filter="st.x is null").to_arrow().to_pylist() == full
    assert t.scan(row_filter="st.x = 1").to_arrow().to_pylist() == []


def test_two_columns_the_name_mapping_gives_one_id_are_refused(tmp_path: Path) -> None:
    """After a rename the mapping lists the old name as an alias; a file without ids holding
    columns of both names gave the id to two columns and was added, icefloe reading one
    column and DuckDB the other."""
    cat = catalog(tmp_path)
    t = _mapped_table(
        cat, Schema(NestedField(1, "id", LongType()), NestedField(2, "c", LongType()))
    )
    with t.update_schema() as u:
        u.rename_column("c", "c2")
    path = tmp_path / "both.parquet"
    pq.write_table(pa.table({"id": [1], "c2": [100], "c": [1]}), path)
    with pytest.raises(ValidationError, match="field ids 2 are on more than one column"):
        t.add_files([str(path)])
    assert t.refresh().current_snapshot() is None


@pytest.mark.parametrize("by", ["name mapping", "field ids"])
def test_a_top_level_column_with_a_nested_fields_id_is_not_described(
    tmp_path: Path, by: str
) -> None:
    """Readers match each enclosing struct by id, so a top-level file column with the id of
    the nested field st.x is never read (st reads null). add_files recorded its statistics
    under st.x and the row groups were pruned by them: ``st.x is null`` returned nothing,
    where DuckDB returns every row."""
    cat = catalog(tmp_path)
    t = cat.create_table(
        "ns.t",
        Schema(
            NestedField(1, "id", LongType()),
            NestedField(2, "st", StructType(NestedField(3, "x", LongType()))),
        ),
    )
    if by == "name mapping":
        mapping = '[{"field-id":1,"names":["id"]},{"field-id":3,"names":["x"]}]'
        t.set_properties({DEFAULT_NAME_MAPPING_PROPERTY: mapping})
        schema = pa.schema([pa.field("id", pa.int64()), pa.field("x", pa.int64())])
    else:
        schema = pa.schema([_f("id", pa.int64(), 1), _f("x", pa.int64(), 3)])
    t.add_files([_write(tmp_path / "f.parquet", schema, {"id": [1, 2], "x": [10, 20]})])
    full = t.scan().to_arrow().to_pylist()
    assert full == [{"id": 1, "st": None}, {"id": 2, "st": None}]
    assert t.scan(row_filter="st.x is null").to_arrow().to_pylist() == full
    assert t.scan(row_filter="st.x = 10").to_arrow().to_pylist() == []
    (row,) = t.inspect.files().to_pylist()
    assert {k for k, _ in row["value_counts"]} == {1}


@pytest.mark.parametrize("transform", ["identity", "truncate[3]"])
def test_truncated_string_statistics_do_not_refuse_one_partition(
    tmp_path: Path, transform: str
) -> None:
    """DuckDB writes string statistics cut to 256 bytes, the maximum an incremented prefix:
    files of one partition were refused as spanning several. The values decide."""
    duckdb = pytest.importorskip("duckdb")
    cat = catalog(tmp_path)
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType()))
    spec = PartitionSpec(PartitionField(2, 1000, parse_transform(transform), "p"))
    t = cat.create_table("ns.t", schema, partition_spec=spec)
    value = "a" + "é" * 200 + ("" if transform == "identity" else "' || (i % 3)::VARCHAR || '")
    path = tmp_path / "duck.parquet"
    with duckdb.connect() as con:
        con.execute(
            f"COPY (SELECT i::BIGINT AS id, '{value}' AS s FROM range(10) t(i)) TO '{path}' "
            "(FORMAT parquet, FIELD_IDS {id: 1, s: 2})"
        )
    stats = pq.ParquetFile(path).metadata.row_group(0).column(1).statistics
    assert stats.min != stats.max  # the statistics alone cannot tell
    t.add_files([str(path)])
    (partition,) = {repr(f["partition"]) for f in t.inspect.files().to_pylist()}
    expected = {"identity": "a" + "é" * 200, "truncate[3]": "aéé"}[transform]
    assert partition == repr({"p": expected})
    assert t.scan().to_arrow().num_rows == 10
    # a file that does hold two partitions is still refused
    with duckdb.connect() as con:
        con.execute(
            f"COPY (SELECT i::BIGINT AS id, repeat('x', 300) || (i % 2)::VARCHAR || 'y' AS s "
            f"FROM range(4) t(i)) TO '{tmp_path}/two.parquet' (FORMAT parquet, "
            "FIELD_IDS {id: 1, s: 2})"
        )
    if transform == "identity":
        with pytest.raises(ValidationError, match="spans more than one partition"):
            t.add_files([str(tmp_path / "two.parquet")])


def test_dictionary_and_view_partition_sources_are_checked_by_value(tmp_path: Path) -> None:
    """A partition source column of a pandas categorical (dictionary) or a ``string_view``
    hint, holding several values: a file within one partition was refused with pyarrow's
    ``ArrowNotImplementedError`` (no ``min_max`` kernel), and one spanning two partitions got
    that error instead of the ``ValidationError`` saying so."""
    cat = catalog(tmp_path)
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType()))
    for k, kind in enumerate(("dictionary", "view")):
        for transform, values, fits in (
            ("truncate[2]", ["abc", "abz"], True),
            ("identity", ["a", "b"], False),
        ):
            spec = PartitionSpec(PartitionField(2, 1000, parse_transform(transform), "p"))
            t = cat.create_table(f"ns.{kind}_{transform[:5]}", schema, partition_spec=spec)
            arr = pa.array(values)
            arr = arr.dictionary_encode() if kind == "dictionary" else arr.cast(pa.string_view())
            file_schema = pa.schema([_f("id", pa.int64(), 1), _f("s", arr.type, 2)])
            path = _write(
                tmp_path / f"{k}_{transform[:5]}.parquet", file_schema, {"id": [1, 2], "s": arr}
            )
            if fits:
                t.add_files([path])
                assert t.scan().to_arrow()["s"].to_pylist() == values
                assert t.inspect.partitions()["partition"].to_pylist() == [{"p": values[0][:2]}]
            else:
                with pytest.raises(ValidationError, match="spans more than one partition"):
                    t.add_files([path])


@pytest.mark.parametrize("required", [False, True])
def test_a_fixed_size_list_hint_is_added_and_read_as_a_list(tmp_path: Path, required: bool) -> None:
    """pyarrow writes a ``fixed_size_list`` column as a plain Parquet LIST with a schema hint:
    such a file was accepted and then every read of the table failed (or, with a required
    element, refused as missing it); PyIceberg and DuckDB read it as a list."""
    t = catalog(tmp_path).create_table(
        "ns.fixed",
        Schema(
            NestedField(1, "id", LongType()),
            NestedField(2, "l", ListType(3, LongType(), element_required=required)),
        ),
    )
    element = _f("element", pa.int64(), 3, nullable=not required)
    file_schema = pa.schema([_f("id", pa.int64(), 1), _f("l", pa.list_(element, 2), 2)])
    rows = [[1, 2], [5, 6 if required else None]]
    path = _write(tmp_path / "f.parquet", file_schema, {"id": [1, 2], "l": rows})
    t.add_files([path])
    assert t.scan().to_arrow().to_pylist() == [{"id": 1, "l": rows[0]}, {"id": 2, "l": rows[1]}]
    assert t.scan(row_filter="id = 2").to_arrow()["l"].to_pylist() == [rows[1]]
    (value_counts,) = t.inspect.files()["value_counts"].to_pylist()
    assert dict(value_counts)[3] == 4  # the element's metrics, as for a list


def test_a_required_view_typed_leaf_under_a_null_parent_is_checked(tmp_path: Path) -> None:
    """A required string under an optional struct, written from a ``string_view`` column: the
    null check failed with pyarrow's ``ArrowNotImplementedError`` (no ``take`` kernel for
    views), for the valid file (nulls only where the struct is) and the invalid one alike."""
    t = catalog(tmp_path).create_table(
        "ns.req",
        Schema(
            NestedField(1, "id", LongType()),
            NestedField(2, "st", StructType(NestedField(3, "s", StringType(), required=True))),
        ),
    )
    inner = pa.struct([_f("s", pa.string_view(), 3)])
    file_schema = pa.schema([_f("id", pa.int64(), 1), _f("st", inner, 2)])
    bad = _write(tmp_path / "bad.parquet", file_schema, {"id": [1, 2], "st": [{"s": None}, None]})
    with pytest.raises(ValidationError, match=r"required column 'st\.s' has 1 null values"):
        t.add_files([bad])
    good = _write(tmp_path / "good.parquet", file_schema, {"id": [1, 2], "st": [{"s": "a"}, None]})
    t.add_files([good])
    assert t.scan().to_arrow()["st"].to_pylist() == [{"s": "a"}, None]
