"""What a long-running process keeps after an operation: values derived from a filter live no
longer than the filter (a bounded memo holding the filters' predicates kept 45 MB per scan of a
200,000-value ``isin``, up to 256 scans)."""

from __future__ import annotations

import gc
from pathlib import Path

import pyarrow as pa

from icefloe.catalog import load_catalog
from icefloe.expressions import col


def test_a_large_in_filter_is_not_kept_after_its_scan(tmp_path: Path) -> None:
    import icefloe.read.rowgroups as rowgroups

    cat = load_catalog("m", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    cat.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    t = cat.create_table("db.t", schema)
    for k in range(2):
        t.append(pa.table({"id": pa.array(range(k * 1000, (k + 1) * 1000), pa.int64())}))
    for i in range(3):
        f = col("id").isin(list(range(i, i + 5000)))
        # _file sends the read through the general reader, which prunes row groups by the
        # predicate's literals
        rows = t.scan(row_filter=f, selected_fields=("id", "_file")).to_arrow()
        assert rows.num_rows == 2000 - i
        del f, rows
    gc.collect()
    assert len(rowgroups._LITERALS) == 0
