"""The per-table manifest cache: reuse across scans, size bound, opt-out."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from icefloe.partitioning import PartitionSpec
from icefloe.scan.cache import ManifestCache, manifest_cache
from icefloe.schema import Schema
from icefloe.table.scan import TableScan
from icefloe.types import LongType, NestedField
from support.plan_tables import HandTable, entry

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def test_scans_of_one_table_share_decoded_manifests(tmp_path: Path) -> None:
    t = HandTable(tmp_path, SCHEMA, [PartitionSpec(spec_id=0)], 2)
    t.commit([(0, 0, [entry("a"), entry("b")])])
    t.commit([(0, 0, [entry("c")])])
    first = TableScan(t).plan_files()
    cache = manifest_cache(t, 1 << 20)
    assert cache is not None and len(cache) == 2 and cache.misses == 2
    again = TableScan(t, row_filter="id > 3").plan_files()
    assert cache.hits == 2
    assert {x.data_file.file_path for x in again} == {x.data_file.file_path for x in first}
    assert cache.nbytes > 0
    # a different table object has its own cache; 0 bytes disables caching
    other = HandTable(tmp_path / "o", SCHEMA, [PartitionSpec(spec_id=0)], 2)
    assert manifest_cache(other, 1 << 20) is not cache
    assert manifest_cache(t, 0) is None
    off = TableScan(t, options={"scan.manifest-cache.max-bytes": "0"}).plan_files()
    assert len(off) == 3 and cache.hits == 2


def test_cache_evicts_least_recently_used_within_its_bound() -> None:
    batch = pa.RecordBatch.from_pydict({"x": pa.array(range(100), pa.int64())})
    size = batch.nbytes
    cache = ManifestCache(max_bytes=2 * size)
    for k in ("a", "b"):
        cache.put(k, batch)
    assert cache.get("a") is not None  # a is now more recent than b
    cache.put("c", batch)
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None
    assert cache.nbytes == 2 * size
    big = pa.RecordBatch.from_pydict({"x": pa.array(range(1000), pa.int64())})
    cache.put("big", big)  # larger than the whole cache: not kept
    assert cache.get("big") is None and len(cache) == 2
