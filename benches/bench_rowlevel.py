"""Row-level deletes: deleting 10% of the rows of a table by a filter.

Case (full size / ``--quick``):
- ``delete_10pct_dv``: icefloe's merge-on-read delete on a v3 table (the filter's column is read,
  one Puffin file of deletion vectors is written and committed) against PyIceberg 0.12's
  copy-on-write delete of the same rows from the same data (v2 table: every data file holding a
  matching row is rewritten). The filter ``r < 0.1`` hits rows spread over every file.

- ``retention_delete_30pct``: ``id < 0.3 n`` on the same tables, whose files hold consecutive
  ids: the files under the bound are dropped from their metrics without being read (both
  libraries), the file across it gets a DV (icefloe) or is rewritten (PyIceberg).

Each timed run works on its own freshly written table (built before timing), so every run
deletes from the same state. Target: icefloe at least 10x faster.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from harness import Harness
from icefloe.catalog.sql import SqlCatalog
from icefloe.schema import Schema
from icefloe.types import DoubleType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "r", DoubleType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "v", LongType()),
)
FILTER = "r < 0.1"


def _data(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    ids = np.arange(n, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "r": rng.random(n),
            "s": pa.array(ids % 1000).cast(pa.string()),
            "v": rng.integers(0, 1 << 40, n),
        }
    )


def _tables(
    root: Path, data: pa.Table, count: int, props: dict[str, str], prefix: str
) -> list[str]:
    cat = SqlCatalog("b", uri=f"sqlite:///{root}/c.db", warehouse=(root / "wh").as_uri())
    if ("bench",) not in cat.list_namespaces():
        cat.create_namespace("bench")
    names = []
    for i in range(count):
        name = f"bench.{prefix}{i}"
        t = cat.create_table(name, SCHEMA, properties=props)
        t.append(data)
        names.append(name)
    cat.close()
    return names


def _runner(names: list[str], fn: Callable[[str], object]) -> Callable[[], object]:
    it: Iterator[str] = iter(names)
    return lambda: fn(next(it))


def run(h: Harness) -> None:
    n = h.size(2_000_000, 100_000)
    data = _data(n)
    runs = h.repeat + 1  # warmup + timed runs
    root = Path(tempfile.mkdtemp(prefix="icefloe-bench-rowlevel-"))
    target = str(max(1 << 20, data.nbytes // 8))  # about 8 data files
    ours_names = _tables(
        root,
        data,
        runs,
        {
            "format-version": "3",
            "write.delete.mode": "merge-on-read",
            "write.target-file-size-bytes": target,
        },
        "mor",
    )
    peer_names = _tables(
        root, data, runs, {"format-version": "2", "write.target-file-size-bytes": target}, "cow"
    )
    uri, warehouse = f"sqlite:///{root}/c.db", (root / "wh").as_uri()
    cat = SqlCatalog("b", uri=uri, warehouse=warehouse)

    def ours(name: str) -> None:
        cat.load_table(name).delete(FILTER)

    peers: dict[str, Callable[[], object]] = {}
    try:
        from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSql

        theirs = PyIcebergSql("b", uri=uri, warehouse=warehouse)

        def pyiceberg(name: str) -> Any:
            theirs.load_table(name).delete(FILTER)

        peers["pyiceberg 0.12 (copy-on-write)"] = _runner(peer_names, pyiceberg)
    except ImportError:  # pragma: no cover - the peer is a dev dependency
        pass
    h.compare(
        "delete_10pct_dv",
        n,
        "rows",
        ours=_runner(ours_names, ours),
        peers=peers,
        target=">= 10x PyIceberg's copy-on-write delete",
    )
    _retention(h, root, data, runs, target, cat)
    cat.close()


def _retention(
    h: Harness, root: Path, data: pa.Table, runs: int, target: str, cat: SqlCatalog
) -> None:
    """``retention_delete_30pct``: a delete of the oldest 30% of ids."""
    n = data.num_rows
    bound = f"id < {int(n * 0.3)}"
    mor = {"format-version": "3", "write.delete.mode": "merge-on-read"}
    ours_names = _tables(root, data, runs, {**mor, "write.target-file-size-bytes": target}, "ret")
    peer_names = _tables(
        root, data, runs, {"format-version": "2", "write.target-file-size-bytes": target}, "rcow"
    )
    peers: dict[str, Callable[[], object]] = {}
    try:
        from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSql

        theirs = PyIcebergSql("b", uri=f"sqlite:///{root}/c.db", warehouse=(root / "wh").as_uri())
        peers["pyiceberg 0.12"] = _runner(
            peer_names, lambda name: theirs.load_table(name).delete(bound)
        )
    except ImportError:  # pragma: no cover - the peer is a dev dependency
        pass
    h.compare(
        "retention_delete_30pct",
        n,
        "rows",
        ours=_runner(ours_names, lambda name: cat.load_table(name).delete(bound)),
        peers=peers,
        target=">= 10x PyIceberg",
    )
