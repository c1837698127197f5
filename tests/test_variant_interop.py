"""Variant columns between engines: Spark 4.1 with Iceberg Java writes with ``parse_json``
(plain and shredded) and icefloe reads the same values; icefloe writes and Spark's ``to_json``
and ``variant_get`` and DuckDB's iceberg_scan return the same values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe import variant
from icefloe.schema import Schema
from icefloe.types import IntegerType, LongType, NestedField, VariantType
from support.spark import JavaCatalog

DOCS = [
    '{"a": 1, "b": [true, null, "x"], "c": {"d": -2.5}}',
    "[1, 2, 3]",
    '"just a string"',
    "12345678901",
    "null",
    '{"a": 300, "b": [], "c": {"d": 1e300}}',
]


#: JSON numbers kept as decimals (of each width, scale above digit count) or doubles.
NUMBERS = [
    "0.0000000001",
    "0.0000000000",
    "-0.00000000000000000001",
    "0." + "0" * 37 + "1",
    "0." + "0" * 38 + "1",
    "[0.00000000001, 1.50, 123.4567890123]",
    '{"a": 0.0000000000001}',
]


def _by_id(ids: list[int], texts: list[str | None]) -> dict[int, Any]:
    return {i: (None if s is None else json.loads(s)) for i, s in zip(ids, texts, strict=True)}


def _icefloe_json(t: Any) -> dict[int, Any]:
    out = t.scan().to_arrow()
    return _by_id(out.column("id").to_pylist(), variant.to_json(out.column("v")).to_pylist())


def _spark_json(cat: JavaCatalog, name: str) -> dict[int, Any]:
    rows = cat.sql(f"SELECT id, to_json(v) AS j FROM {{c}}.db.{name}").collect()
    return _by_id([r.id for r in rows], [r.j for r in rows])


def _spark_insert(cat: JavaCatalog, name: str, docs: list[str]) -> None:
    values = ", ".join(
        f"({i}, parse_json('{d}'))" if d != "null" else f"({i}, NULL)" for i, d in enumerate(docs)
    )
    cat.sql(f"INSERT INTO {{c}}.db.{name} VALUES {values}")


@pytest.mark.spark
def test_spark_writes_icefloe_reads(iceberg_spark: JavaCatalog) -> None:
    c = iceberg_spark
    c.sql("CREATE NAMESPACE IF NOT EXISTS {c}.db")
    c.sql(
        "CREATE TABLE {c}.db.sv (id INT, v VARIANT) USING iceberg "
        "TBLPROPERTIES ('format-version'='3')"
    )
    _spark_insert(c, "sv", DOCS)
    t = c.icefloe().load_table("db.sv")
    want = _spark_json(c, "sv")
    assert _icefloe_json(t) == want
    assert want[0] == {"a": 1, "b": [True, None, "x"], "c": {"d": -2.5}} and want[4] is None
    # Spark's file carries the annotation icefloe writes too.
    for task in t.scan().plan_files():
        path = task.data_file.file_path.removeprefix("file:")
        assert "(Variant(1))" in str(pq.read_metadata(path).schema)


@pytest.mark.spark
def test_spark_shredded_files_read_as_the_same_values(iceberg_spark: JavaCatalog) -> None:
    c = iceberg_spark
    c.sql("CREATE NAMESPACE IF NOT EXISTS {c}.db")
    c.sql(
        "CREATE TABLE {c}.db.sh (id INT, v VARIANT) USING iceberg TBLPROPERTIES "
        "('format-version'='3', 'write.parquet.shred-variants'='true')"
    )
    docs = [json.dumps({"a": i, "b": f"s{i}", "x": [i] if i % 3 else None}) for i in range(40)]
    docs += ['"not an object"', '{"a": "text instead of int"}']
    _spark_insert(c, "sh", docs)
    t = c.icefloe().load_table("db.sh")
    paths = [task.data_file.file_path.removeprefix("file:") for task in t.scan().plan_files()]
    assert any("typed_value" in str(pq.read_schema(p)) for p in paths)  # Java shredded
    assert _icefloe_json(t) == _spark_json(c, "sh")


@pytest.mark.spark
def test_icefloe_writes_spark_reads(iceberg_spark: JavaCatalog) -> None:
    c = iceberg_spark
    schema = Schema(
        NestedField(1, "id", IntegerType(), required=True), NestedField(2, "v", VariantType())
    )
    cat = c.icefloe()
    cat.create_namespace("db")
    t = cat.create_table("db.iv", schema, format_version=3)
    values = [json.loads(d) for d in DOCS]
    values[3] = None  # a null row, next to the JSON null of row 4 written as a null row
    t.append({"id": list(range(len(values))), "v": values})
    t.append(pa.table({"id": pa.array([100], pa.int32()), "v": ['{"a": 7}']}))
    want = _icefloe_json(t)
    assert _spark_json(c, "iv") == want
    rows = c.sql("SELECT id, variant_get(v, '$.a', 'int') AS a FROM {c}.db.iv").collect()
    assert {r.id: r.a for r in rows if r.a is not None} == {0: 1, 5: 300, 100: 7}
    # JSON numbers as the variants Spark's parse_json makes of them (small fractions were once
    # written with a decimal width below their scale: Spark failed the whole scan)
    t.append(pa.table({"id": pa.array(range(200, 200 + len(NUMBERS)), pa.int32()), "v": NUMBERS}))
    rows = c.sql(
        "SELECT id, to_json(v) AS j, schema_of_variant(v) AS s FROM {c}.db.iv WHERE id >= 200"
    ).collect()
    literals = ", ".join(f"({200 + i}, '{d}')" for i, d in enumerate(NUMBERS))
    spark = c.sql(
        "SELECT i, to_json(parse_json(d)) AS j, schema_of_variant(parse_json(d)) AS s "
        f"FROM VALUES {literals} AS x(i, d)"
    ).collect()
    assert sorted((r.id, r.j, r.s) for r in rows) == sorted((r.i, r.j, r.s) for r in spark)


@pytest.mark.interop
def test_duckdb_reads_icefloe_variants(tmp_path: Path, duckdb_con: Any) -> None:
    from icefloe.catalog.hadoop import HadoopCatalog

    cat = HadoopCatalog("d", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", IntegerType(), required=True), NestedField(2, "v", VariantType())
    )
    t = cat.create_table("db.t", schema, format_version=3)
    values = [json.loads(d) for d in DOCS]
    t.append({"id": list(range(len(values))), "v": values})
    rows = duckdb_con.execute(
        f"SELECT id, v::JSON::VARCHAR FROM iceberg_scan('{t.metadata_location}')"
    ).fetchall()
    got = _by_id([r[0] for r in rows], [r[1] for r in rows])
    assert got == _icefloe_json(t)
    assert got[0] == {"a": 1, "b": [True, None, "x"], "c": {"d": -2.5}}


def _duckdb_file_added(
    tmp_path: Path, con: Any, rows: str, id_type: Any
) -> tuple[Any, dict[int, str | None]]:
    """DuckDB's Parquet file of ``rows`` (``id``, variant ``v``; ``tmp_path/duck.parquet``)
    added to a new v3 table; the table and DuckDB's JSON of each row by id."""
    from icefloe.catalog.hadoop import HadoopCatalog

    path = tmp_path / "duck.parquet"
    con.execute(f"COPY ({rows}) TO '{path}' (FIELD_IDS {{id: 1, v: 2}})")
    want = dict(con.execute(f"SELECT id, v::JSON::VARCHAR FROM '{path}'").fetchall())
    cat = HadoopCatalog("d", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", id_type), NestedField(2, "v", VariantType()))
    t = cat.create_table("db.t", schema, format_version=3)
    t.add_files([str(path)])
    return t, want


@pytest.mark.interop
def test_duckdb_shredded_parquet_reads_as_duckdb_values(tmp_path: Path, duckdb_con: Any) -> None:
    path = tmp_path / "duck.parquet"
    rows = (
        "SELECT i::INT AS id, CASE WHEN i % 4 = 3 THEN NULL ELSE "
        "('{\"a\":' || i || ',\"b\":\"s' || i || '\",\"c\":[' || i || ', null]}')::JSON::VARIANT "
        "END AS v FROM range(12) t(i) "
        "UNION ALL SELECT 100, '\"a string\"'::JSON::VARIANT "
        'UNION ALL SELECT 101, \'{"a": "not an int", "z": 1.5}\'::JSON::VARIANT'
    )
    t, want = _duckdb_file_added(tmp_path, duckdb_con, rows, IntegerType())
    assert "typed_value" in str(pq.read_schema(path))  # DuckDB shreds what it writes
    got = _icefloe_json(t)
    assert got == {k: None if v is None else json.loads(v) for k, v in want.items()}
    assert got[1] == {"a": 1, "b": "s1", "c": [1, None]} and got[3] is None


@pytest.mark.interop
def test_duckdb_metadata_marked_sorted_over_unsorted_names_is_read(
    tmp_path: Path, duckdb_con: Any
) -> None:
    """DuckDB 1.5 sets the metadata's sorted flag over a dictionary in first-seen order (here
    x, w, y, z, q); it reads its own file, and so does icefloe (the flag only speeds up
    lookups by name). The rows icefloe keeps carry metadata without the false flag."""
    rows = (
        "SELECT i::BIGINT AS id, {'x': [{'y': i, 'z': [i::TINYINT, 2::SMALLINT]}], "
        "'w': {'q': 'str'}}::VARIANT AS v FROM range(6) t(i)"
    )
    t, want = _duckdb_file_added(tmp_path, duckdb_con, rows, LongType())
    got = _icefloe_json(t)
    assert got == {k: json.loads(v) for k, v in want.items()}
    assert got[2] == {"x": [{"y": 2, "z": [2, 2]}], "w": {"q": "str"}}
    t.rewrite_data_files(min_input_files=1)  # copies the rows into icefloe's own file
    assert _icefloe_json(t.refresh()) == got
    metadata = t.scan().to_arrow().column("v").combine_chunks().field("metadata")
    assert all(m[0] & 0x10 == 0 for m in metadata.to_pylist())
