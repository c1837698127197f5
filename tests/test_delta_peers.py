"""Independent readers agree on converted Delta tables: Delta's own read (Spark, recorded in the
fixtures), ``deltalake`` (delta-rs) as a second Delta reader, and the Iceberg side read by
icefloe, PyIceberg and DuckDB's iceberg extension, row ids and row commit versions included
where the reader exposes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.delta import DeltaLog, convert
from support.delta import FIXTURES, fixture
from support.peers import duckdb_connect

pytestmark = pytest.mark.interop

SCENARIOS = sorted(p.name for p in FIXTURES.iterdir() if (p / "table").is_dir())
#: Scenarios delta-rs 1.6.6 refuses to read, with the table feature it names.
DELTA_RS_UNSUPPORTED = {"evolution": "TypeWidening"}
#: Columns PyIceberg 0.12 reads wrongly: the struct fields of ``array<map<string, struct>>``
#: values come back null (a PyIceberg projection limit; icefloe and DuckDB read them).
PYICEBERG_WRONG = {"nested": "deep"}


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
    table = convert(str(root)).table
    location = table.metadata_location
    assert data_rows(table.scan().to_arrow()) == want
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
