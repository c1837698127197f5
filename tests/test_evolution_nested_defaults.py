"""Nested evolution cases that read or wrote wrong values, or raised raw errors:

- a struct column whose default is ``{}`` read old rows, and wrote rows that left it out, with
  its fields null instead of their own defaults (the spec's rule for struct defaults);
- a struct left with no fields read as an empty array (raw ``ValueError``) and was written by
  pyarrow's raw error;
- a name-mapped file column whose type the table type does not promote from was cast anyway (a
  long narrowed to an int, a string parsed as a number);
- a column renamed from ``a`` kept ``a`` as an alias after a new column took the name, so files
  without field ids read their ``a`` as the renamed column (Java gives it to the new one).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.exceptions import ValidationError
from icefloe.name_mapping import create_mapping
from icefloe.types import IntegerType, NestedField, StringType, StructType

BASE = pa.schema(
    [pa.field("id", pa.int32()), pa.field("s", pa.struct([pa.field("a", pa.int32())]))]
)


def _catalog(tmp_path: Path) -> HadoopCatalog:
    cat = HadoopCatalog("c", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    return cat


def _row(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int32()), "s": pa.array([{"a": i}], BASE[1].type)})


@pytest.mark.parametrize("required", [False, True])
def test_an_empty_struct_default_is_its_fields_defaults(tmp_path: Path, required: bool) -> None:
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", BASE, format_version=3)
    t.append(_row(1))
    inner = NestedField(100, "x", IntegerType(), required, None, 5, 6)  # initial 5, write 6
    with t.update_schema() as u:
        u.add_column("pt", StructType(inner), required=required, initial_default={})
        u.add_column(("s", "inner"), StructType(inner), required=required, initial_default={})
    t = cat.load_table("db.t")
    old = t.scan().to_arrow().to_pylist()[0]
    assert old["pt"] == {"x": 5} and old["s"]["inner"] == {"x": 5}
    t.append(_row(2))  # leaves out pt and s.inner: their write-default {} is the fields' 6
    new = t.scan(row_filter="id = 2").to_arrow().to_pylist()[0]
    assert new["pt"] == {"x": 6} and new["s"]["inner"] == {"x": 6}


def test_a_struct_without_fields_reads_and_refuses_writes(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    one = pa.struct([("only", pa.int32())])
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("one", one)])
    t = cat.create_table("db.t", schema)
    rows = {"id": pa.array([1, 2], pa.int32()), "one": [{"only": 1}, {"only": 2}]}
    t.append(pa.table(rows, schema=schema))
    with t.update_schema() as u:
        u.delete_column("one.only")
    t = cat.load_table("db.t")
    assert t.scan().to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "one": {}},
        {"id": 2, "one": {}},
    ]
    with pytest.raises(ValidationError, match="struct with no fields"):
        t.append(pa.table({"id": pa.array([3], pa.int32())}))


def _name_mapped(tmp_path: Path, data: pa.Table) -> HadoopCatalog:
    """A table whose one file has no field ids (read through the name mapping)."""
    cat = _catalog(tmp_path)
    path = tmp_path / "f.parquet"
    pq.write_table(data, path)
    t = cat.create_table("db.t", data.schema, format_version=2)
    t.set_properties(**{"schema.name-mapping.default": create_mapping(t.schema()).to_json_string()})
    cat.load_table("db.t").add_files([str(path)])
    return cat


def test_a_file_type_the_table_does_not_promote_from_is_refused(tmp_path: Path) -> None:
    struct = pa.struct([("a", pa.int64()), ("b", pa.string())])
    data = pa.table({"id": pa.array([1], pa.int32()), "s": pa.array([{"a": 5, "b": "11"}], struct)})
    cat = _name_mapped(tmp_path, data)
    with cat.load_table("db.t").update_schema() as u:
        u.delete_column("s.a")
        u.delete_column("s.b")
    with cat.load_table("db.t").update_schema() as u:  # the same names, new ids, other types
        u.add_column(("s", "a"), IntegerType())
        u.add_column(("s", "b"), IntegerType())
    with pytest.raises(ValidationError, match="not a type promotion"):
        cat.load_table("db.t").scan().to_arrow()


def test_a_new_column_takes_a_renamed_columns_old_name(tmp_path: Path) -> None:
    data = pa.table({"id": pa.array([1], pa.int32()), "s": pa.array([{"a": 7}], BASE[1].type)})
    cat = _name_mapped(tmp_path, data)
    with cat.load_table("db.t").update_schema() as u:
        u.rename_column("s.a", "k")
    # before the name is taken again, the alias finds the old file's column
    assert cat.load_table("db.t").scan().to_arrow().to_pylist() == [{"id": 1, "s": {"k": 7}}]
    with cat.load_table("db.t").update_schema() as u:
        u.add_column(("s", "a"), StringType())
    # the old file's "a" is the new column's now, as with a table Java evolved (it holds an
    # int, which the new string column does not promote from: read the renamed column only)
    t = cat.load_table("db.t")
    assert t.scan(selected_fields=("id", "s.k")).to_arrow().to_pylist() == [
        {"id": 1, "s": {"k": None}}
    ]


@pytest.mark.parametrize(
    ("file", "table", "readable"),
    [
        (pa.int32(), pa.int64(), True),
        (pa.int64(), pa.int32(), False),
        (pa.float32(), pa.float64(), True),
        (pa.float64(), pa.float32(), False),
        (pa.decimal128(9, 2), pa.decimal128(18, 2), True),
        (pa.decimal128(9, 2), pa.decimal128(18, 3), False),
        (pa.string(), pa.int32(), False),
        (pa.int32(), pa.string(), False),
        (pa.binary(), pa.string(), True),  # a writer that left out the UTF8 annotation
        (pa.date32(), pa.timestamp("us"), True),  # v3's date promotion
        (pa.int64(), pa.time64("us"), True),  # ORC's time: microseconds in a long
        (pa.null(), pa.int64(), True),
    ],
)
def test_which_file_types_a_column_reads(
    file: pa.DataType, table: pa.DataType, readable: bool
) -> None:
    from icefloe.read.projection import _promotable

    assert _promotable(file, table) is readable
