"""Independent readers agree on converted Delta tables: Delta's own read (Spark, recorded in the
fixtures), ``deltalake`` (delta-rs) as a second Delta reader, and the Iceberg side read by
icefloe, PyIceberg and DuckDB's iceberg extension, row ids and row commit versions included
where the reader exposes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.delta import DeltaLog, convert
from support.delta import CONVERTIBLE, UNCHECKED, fixture
from support.peers import duckdb_connect

pytestmark = pytest.mark.interop

SCENARIOS = CONVERTIBLE
#: Scenarios delta-rs 1.6.6 refuses to read, with the table feature it names.
DELTA_RS_UNSUPPORTED = {"evolution": "TypeWidening"}
#: Columns PyIceberg 0.12 reads wrongly: the struct fields of ``array<map<string, struct>>``
#: values come back null (a PyIceberg projection limit; icefloe and DuckDB read them).
PYICEBERG_WRONG = {"nested": "deep"}


#: Scenarios with variant columns: PyIceberg 0.12 refuses the type when it loads the
#: metadata, and DuckDB 1.5.5 reads variants but cannot hand them over as Arrow (so they are
#: compared as JSON with Spark's rendering, which the fixture keeps as ``_json_<column>``).
VARIANT_COLUMNS = {"variant": ["v"]}


def _variant_readers(location: str, spark: pa.Table, columns: list[str]) -> None:
    from pyiceberg.table import StaticTable

    with pytest.raises(Exception, match="Unsupported field type: 'variant'"):
        StaticTable.from_metadata(location)
    con = duckdb_connect()
    try:
        with pytest.raises(Exception, match="Unsupported Arrow type VARIANT"):
            con.execute(f"select * from iceberg_scan('{location}')").to_arrow_table()
        as_json = ", ".join(f"CASE WHEN {c} IS NULL THEN NULL ELSE {c}::JSON END" for c in columns)
        got = con.execute(
            f"select id, {as_json}, _row_id, _last_updated_sequence_number "
            f"from iceberg_scan('{location}')"
        ).fetchall()
    finally:
        con.close()

    def parsed(v: Any) -> Any:
        return None if v is None else json.loads(v)

    want_cols = [spark.column(f"_json_{c}").to_pylist() for c in columns]
    want = zip(
        spark.column("id").to_pylist(),
        *want_cols,
        spark.column("_row_id").to_pylist(),
        spark.column("_row_commit_version").to_pylist(),
        strict=True,
    )
    norm = sorted(([r[0], *map(parsed, r[1:-2]), *r[-2:]] for r in want), key=repr)
    assert sorted(([r[0], *map(parsed, r[1:-2]), *r[-2:]] for r in got), key=repr) == norm


def data_rows(t: pa.Table) -> list[tuple[Any, ...]]:
    cols = sorted(c for c in t.column_names if not c.startswith("_"))
    return sorted(zip(*(t.column(c).to_pylist() for c in cols), strict=True), key=repr)


def lineage(t: pa.Table, row_id: str, version: str) -> list[tuple[Any, ...]]:
    return sorted(
        zip(
            t.column("id").to_pylist(),
            t.column(row_id).to_pylist(),
            t.column(version).to_pylist(),
            strict=True,
        ),
        key=repr,
    )


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_reader_agrees(scenario: str, tmp_path: Path) -> None:
    from deltalake import DeltaTable, QueryBuilder
    from pyiceberg.table import StaticTable

    root = fixture(scenario, tmp_path)
    latest = DeltaLog(str(root)).latest_version()
    spark = pq.read_table(root.parent / "expected" / f"v{latest}.parquet")
    want = data_rows(spark)

    # delta-rs reads the Delta table the same way Spark did.
    def delta_rs() -> pa.Table:
        query = QueryBuilder().register("t", DeltaTable(str(root)))
        return pa.table(query.execute("select * from t").read_all())

    if scenario in DELTA_RS_UNSUPPORTED:
        with pytest.raises(Exception, match=DELTA_RS_UNSUPPORTED[scenario]):
            delta_rs()
    else:
        assert data_rows(delta_rs()) == want
    table = convert(str(root), check=scenario not in UNCHECKED).table
    location = table.metadata_location
    assert data_rows(table.scan().to_arrow()) == want
    if scenario in VARIANT_COLUMNS:
        _variant_readers(location, spark, VARIANT_COLUMNS[scenario])
        return
    pyiceberg = StaticTable.from_metadata(location).scan().to_arrow()
    if scenario in PYICEBERG_WRONG:
        col = PYICEBERG_WRONG[scenario]
        assert data_rows(pyiceberg) != want  # noticed when PyIceberg is fixed
        assert data_rows(pyiceberg.drop_columns([col])) == data_rows(spark.drop_columns([col]))
    else:
        assert data_rows(pyiceberg) == want
    con = duckdb_connect()
    try:
        duck = con.execute(f"select * from iceberg_scan('{location}')").to_arrow_table()
        assert data_rows(duck) == want
        # Row lineage as DuckDB derives it from first_row_id and the data sequence numbers.
        duck_lineage = con.execute(
            f"select id, _row_id, _last_updated_sequence_number from iceberg_scan('{location}')"
        ).to_arrow_table()
    finally:
        con.close()
    expected_lineage = lineage(spark, "_row_id", "_row_commit_version")
    assert lineage(duck_lineage, "_row_id", "_last_updated_sequence_number") == expected_lineage
    ours = table.scan(selected_fields=("id", "_row_id", "_last_updated_sequence_number")).to_arrow()
    assert lineage(ours, "_row_id", "_last_updated_sequence_number") == expected_lineage


def test_reference_mode_is_for_readers_that_locate_blobs_by_offset(tmp_path: Path) -> None:
    """Delta UniForm's zero-copy form: the DV entries point into Delta's ``.bin`` files, which
    have no Puffin footer. icefloe reads them by offset; PyIceberg 0.12 and DuckDB 1.5.5
    parse the footer and fail (when that changes upstream, this test says so)."""
    from pyiceberg.table import StaticTable

    root = fixture("dml", tmp_path)
    table = convert(str(root), dv_mode="reference").table
    latest = DeltaLog(str(root)).latest_version()
    want = data_rows(pq.read_table(root.parent / "expected" / f"v{latest}.parquet"))
    assert data_rows(table.scan().to_arrow()) == want
    with pytest.raises(ValueError, match="magic"):
        StaticTable.from_metadata(table.metadata_location).scan().to_arrow()
    con = duckdb_connect()
    try:
        with pytest.raises(Exception, match="Puffin"):
            con.execute(f"select * from iceberg_scan('{table.metadata_location}')").fetchall()
    finally:
        con.close()


def test_upgraded_table_delta_readers_agree(tmp_path: Path) -> None:
    """The table Delta 4.4.0 upgraded in place: deltalake reads Spark's rows; the converter
    refuses it (files without ``baseRowId``, see ``test_delta_convert.py``)."""
    from deltalake import DeltaTable, QueryBuilder

    from icefloe.exceptions import NotIcebergCompatibleError

    root = fixture("upgrade", tmp_path)
    for v in range(DeltaLog(str(root)).latest_version() + 1):
        spark = pq.read_table(root.parent / "expected" / f"v{v}.parquet")
        query = QueryBuilder().register("t", DeltaTable(str(root), version=v))
        theirs = pa.table(query.execute("select * from t").read_all())
        assert data_rows(theirs) == data_rows(spark), v
    with pytest.raises(NotIcebergCompatibleError, match="row-ids-assigned"):
        convert(str(root))
