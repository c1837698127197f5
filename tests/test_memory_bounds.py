"""What a long-running process keeps after an operation: values derived from a filter live no
longer than the filter (a bounded memo holding the filters' predicates kept 45 MB per scan of a
200,000-value ``isin``, up to 256 scans)."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.expressions import col
from support.rest import RestServer, new_warehouse


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
    # (other predicates alive elsewhere in the process may stay; none of these scans')
    kept = [v for _, v in rowgroups._LITERALS.values() if v is not None and len(v) == 5000]
    assert not kept


@pytest.mark.rest
def test_a_rest_catalog_dropped_without_close_is_freed(
    rest_server: RestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its metrics thread waited for reports forever and kept the catalog (and its HTTP
    connections) alive: one thread and one socket per catalog a service loaded."""
    import icefloe.catalog.rest.commits as commits
    from icefloe.catalog.rest import RestCatalog

    monkeypatch.setattr(commits, "REPORT_IDLE_SECONDS", 0.2)
    earlier = set(threading.enumerate())  # catalogs of other tests may still be alive
    warehouse = new_warehouse()
    cat = RestCatalog("r", uri=rest_server.url, warehouse=warehouse)
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
    t.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    assert t.scan().to_arrow().num_rows == 2  # queues a scan report
    assert cat.flush_reports(10)
    assert cat.metrics_reports_sent >= 1
    gone = weakref.ref(cat)
    del cat, t
    deadline = time.monotonic() + 10
    while gone() is not None and time.monotonic() < deadline:
        time.sleep(0.1)
        gc.collect()
    assert gone() is None
    threads = set(threading.enumerate()) - earlier
    assert not [th for th in threads if th.name == "icefloe-rest-metrics"]
