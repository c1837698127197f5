"""Interop with Iceberg's own Spark runtime (Java), both directions, on one file-system catalog.

- icefloe reads tables Spark + Iceberg Java wrote (merge-on-read deletes and updates: position
  delete files on v2, deletion vectors on v3; partition evolution) with the rows Java reads,
  through ``icefloe.spark.read`` and through icefloe's single-process reader;
- Spark + Iceberg Java reads tables ``icefloe.spark.write`` wrote (v2 and v3, appends and
  overwrites) with the rows icefloe reads.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from support.spark import JavaCatalog
from support.spark_tables import java_tables
from support.spark_util import SPEC, all_types_rows, all_types_schema, arrow_rows, single_process
from support.spark_util import spark_rows as rows_of

pytest.importorskip("pyspark")

import icefloe.spark as ispark

pytestmark = [pytest.mark.spark, pytest.mark.interop]


@pytest.fixture(scope="module")
def java(iceberg_spark_module: JavaCatalog) -> dict[str, Any]:
    names = java_tables(iceberg_spark_module)
    return {"catalog": iceberg_spark_module, "names": names}


@pytest.fixture(scope="module")
def java_orc(iceberg_spark_module: JavaCatalog) -> dict[str, Any]:
    names = java_tables(iceberg_spark_module, file_format="orc", prefix="orc")
    return {"catalog": iceberg_spark_module, "names": names}


@pytest.fixture(scope="module")
def java_avro(iceberg_spark_module: JavaCatalog) -> dict[str, Any]:
    names = java_tables(iceberg_spark_module, file_format="avro", prefix="avro")
    return {"catalog": iceberg_spark_module, "names": names}


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_icefloe_reads_java_merge_on_read_tables(
    spark: Any, java: dict[str, Any], version: str
) -> None:
    _check_java_table(spark, java, version, "PARQUET")


@pytest.mark.parametrize("file_format", ["orc", "avro"])
@pytest.mark.parametrize("version", ["v2", "v3"])
def test_icefloe_reads_java_orc_and_avro_tables(
    spark: Any, request: pytest.FixtureRequest, version: str, file_format: str
) -> None:
    """ORC and Avro data files, and on v2 position delete files in the same format, as Iceberg
    Java writes them."""
    java_other: dict[str, Any] = request.getfixturevalue(f"java_{file_format}")
    cat: JavaCatalog = java_other["catalog"]
    name = java_other["names"][version]
    files = cat.sql(f"SELECT file_format FROM {name}.data_files").collect()
    assert {r["file_format"] for r in files} == {file_format.upper()}
    _check_java_table(spark, java_other, version, file_format.upper())
    table = cat.icefloe().load_table(name.split(".", 1)[1])
    # Row positions and file names, which deletes and the metadata columns depend on.
    java_meta = sorted(
        (r["_file"], r["_pos"], r["id"])
        for r in cat.sql(f"SELECT _file, _pos, id FROM {name}").collect()
    )
    ours = table.scan(selected_fields=("id", "_file", "_pos")).to_arrow()
    got = sorted(zip(*(ours.column(c).to_pylist() for c in ("_file", "_pos", "id")), strict=True))
    assert got == java_meta and len(java_meta) > 100
    assert table.scan().count() == len(java_meta)


@pytest.mark.parametrize("file_format", ["orc", "avro"])
def test_icefloe_changes_java_orc_and_avro_tables(
    spark: Any, iceberg_spark_module: JavaCatalog, file_format: str
) -> None:
    """icefloe's deletes and upserts on ORC and Avro tables (its new data files in the table's
    format, its deletes covering Java's data files) read the same through Iceberg Java."""
    cat = iceberg_spark_module
    names = java_tables(cat, rows=60, file_format=file_format, prefix=f"{file_format}w")
    for name in names.values():
        table = cat.icefloe().load_table(name.split(".", 1)[1])
        before = single_process(table)
        table.delete("id < 20")
        changed = table.scan(row_filter="id >= 30 and id < 34").to_arrow()
        changed = changed.set_column(
            changed.schema.get_field_index("name"),
            changed.schema.field("name"),
            pa.array(["upserted"] * changed.num_rows, pa.string()),
        )
        assert table.upsert(changed, join_cols=["id"]).rows_updated == changed.num_rows > 0
        java_rows = rows_of(cat.sql(f"SELECT * FROM {name}"))
        assert java_rows == arrow_rows(single_process(table))
        assert [r["id"] for r in java_rows] == [r["id"] for r in before if r["id"] >= 20]
        upserted = [r["id"] for r in java_rows if r["name"] == "upserted"]
        assert upserted == [r["id"] for r in before if 30 <= r["id"] < 34]


def _check_java_table(spark: Any, java: dict[str, Any], version: str, data_format: str) -> None:
    cat: JavaCatalog = java["catalog"]
    name = java["names"][version]
    table = cat.icefloe().load_table(name.split(".", 1)[1])
    # The table really has what the test is about.
    deletes = cat.sql(f"SELECT file_format, content FROM {name}.delete_files").collect()
    assert deletes, "Java wrote no delete files"
    want_format = "PUFFIN" if version == "v3" else data_format
    assert {r["file_format"] for r in deletes} == {want_format}
    assert len(table.specs()) == 2
    java_rows = rows_of(cat.sql(f"SELECT * FROM {name}"))
    ours = rows_of(ispark.read(spark, table))
    assert ours == java_rows
    assert ours == arrow_rows(single_process(table))
    ids = {r["id"] for r in ours}
    # Deleted: id % 7 == 0 among the first 450 rows (inserted before), id % 17 == 0 everywhere.
    assert not any((i % 7 == 0 and i < 450) or i % 17 == 0 for i in ids)
    assert any(i % 7 == 0 for i in ids) and len(ids) > 300
    assert all(r["name"] == "updated" for r in ours if r["id"] % 11 == 0 and r["id"] < 450)
    # A filtered, projected read agrees too.
    flt = "id > 100 and id < 400"
    java_f = rows_of(cat.sql(f"SELECT id, name, amount FROM {name} WHERE {flt}"))
    ours_f = rows_of(
        ispark.read(spark, table, row_filter=flt, selected_fields=["id", "name", "amount"])
    )
    assert ours_f == java_f and len(ours_f) > 100


@pytest.mark.parametrize(
    ("version", "file_format"), [(2, "parquet"), (3, "parquet"), (3, "orc"), (2, "avro")]
)
def test_java_reads_icefloe_spark_writes(
    spark: Any, iceberg_spark: JavaCatalog, version: int, file_format: str
) -> None:
    cat = iceberg_spark.icefloe()
    cat.create_namespace("db")
    schema = all_types_schema(with_time=False)  # Iceberg Java's Spark has no time type
    t = cat.create_table(
        "db.w",
        schema,
        partition_spec=SPEC,
        format_version=version,
        properties={"write.format.default": file_format},
    )
    source = _spark_frame(iceberg_spark.spark, all_types_rows(0, 200, schema), schema)
    ispark.write(source, t)
    ispark.write(_spark_frame(iceberg_spark.spark, all_types_rows(200, 50, schema), schema), t)
    name = f"{iceberg_spark.name}.db.w"
    java_rows = rows_of(iceberg_spark.sql(f"SELECT * FROM {name}"))
    assert len(java_rows) == 250
    formats = iceberg_spark.sql(f"SELECT DISTINCT file_format FROM {name}.data_files").collect()
    assert [r["file_format"] for r in formats] == [file_format.upper()]
    # Java prunes files and rows by the metrics icefloe wrote.
    few = iceberg_spark.sql(f"SELECT id FROM {name} WHERE id >= 120 AND id < 130").collect()
    assert sorted(r["id"] for r in few) == list(range(120, 130))
    assert java_rows == arrow_rows(single_process(t))
    assert java_rows == rows_of(ispark.read(spark, t))
    # Overwrite by filter (copy-on-write): rows with id < 100 replaced by 10 new ones.
    ispark.write(
        _spark_frame(iceberg_spark.spark, all_types_rows(1000, 10, schema), schema),
        t,
        mode="overwrite",
        overwrite_filter="id < 100",
    )
    java_ids = sorted(r["id"] for r in iceberg_spark.sql(f"SELECT id FROM {name}").collect())
    assert java_ids == list(range(100, 250)) + list(range(1000, 1010))
    assert rows_of(iceberg_spark.sql(f"SELECT * FROM {name}")) == arrow_rows(single_process(t))
    # Full overwrite.
    ispark.write(
        _spark_frame(iceberg_spark.spark, all_types_rows(5000, 5, schema), schema),
        t,
        mode="overwrite",
    )
    java_ids = sorted(r["id"] for r in iceberg_spark.sql(f"SELECT id FROM {name}").collect())
    assert java_ids == list(range(5000, 5005))


def _spark_frame(spark: Any, table: Any, schema: Any) -> Any:
    """The Arrow rows as a DataFrame with the table's Spark schema (uuids as strings)."""
    from icefloe.spark.schema import arrow_for_spark, spark_schema, to_spark_batch

    fields = list(schema.fields)
    batch = to_spark_batch(table.combine_chunks().to_batches()[0], fields, arrow_for_spark(fields))
    return spark.createDataFrame(pa.Table.from_batches([batch]), schema=spark_schema(schema))
