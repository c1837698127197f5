"""Planning and reads on local disk, moto and s3proxy: partition and metrics pruning, filtered
and projected scans, time travel; checked against PyIceberg and DuckDB reading the same table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from support.s3 import Warehouse
from support.write_util import (
    SCHEMA,
    SPEC,
    catalog,
    checksum,
    duckdb_checksum,
    pyiceberg_read,
    rows,
)


def test_planning_and_filtered_reads(tmp_path: Path, warehouse: Warehouse, duckdb_con: Any) -> None:
    t = catalog(tmp_path, warehouse).create_table("ns.t", SCHEMA, partition_spec=SPEC)
    t.append(rows(0, 300))
    first = t.current_snapshot()
    assert first is not None
    t.append(rows(300, 100))
    everything = t.scan().plan_files()
    one_day = "ts < '2024-01-02T00:00:00'"  # rows 0..23: the first day only
    pruned = t.scan(row_filter=one_day).plan_files()
    assert 0 < len(pruned) < len(everything)
    got = t.scan(row_filter=one_day, selected_fields=("id", "s")).to_arrow()
    assert got.column_names == ["id", "s"]
    assert sorted(got["id"].to_pylist()) == list(range(24))
    theirs = pyiceberg_read(t, row_filter=one_day, selected_fields=("id", "s"))
    assert sorted(theirs["id"].to_pylist()) == list(range(24))
    ids = t.scan(row_filter="id >= 390").to_arrow()["id"]
    assert sorted(ids.to_pylist()) == list(range(390, 400))
    assert checksum(t.scan().to_arrow()) == checksum(rows(0, 400))
    assert duckdb_checksum(duckdb_con, t) == checksum(rows(0, 400))
    past = t.scan(snapshot_id=first.snapshot_id).to_arrow()
    assert past.num_rows == 300 and pc.max(past["id"]).as_py() == 299


def test_a_data_file_replaced_by_one_of_another_size_is_refused(
    tmp_path: Path, warehouse: Warehouse
) -> None:
    """A valid Parquet file of the same rows and field ids put in a data file's place was read
    as the table's rows; its length differs from the manifest's ``file_size_in_bytes``."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pytest

    from icefloe.exceptions import CorruptFileError

    t = catalog(tmp_path, warehouse).create_table("ns.t", SCHEMA)
    data = rows(0, 10)
    t.append(data)
    (path,) = t.inspect.files()["file_path"].to_pylist()
    with t.io.new_input(path).open() as f:
        schema = pq.read_schema(f)
    other = data.set_column(data.schema.get_field_index("s"), "s", pa.array(["x" * 40] * 10))
    sink = pa.BufferOutputStream()
    pq.write_table(other.cast(schema), sink)
    with t.io.new_output(path).create(overwrite=True) as out:
        out.write(sink.getvalue())
    t = t.refresh()
    for read in (
        lambda: t.scan().to_arrow(),
        lambda: t.scan(row_filter="id > 3", selected_fields=("id", "s")).to_arrow(),
        lambda: list(t.scan().to_batches()),
    ):
        with pytest.raises(CorruptFileError, match="bytes, its manifest entry says"):
            read()
