"""Commit latency as a table's history grows: ``N`` appends of 100 rows into one table, icefloe
and PyIceberg 0.12 on SQLite catalogs, in turns (an icefloe append, then a PyIceberg one).

Every commit writes a metadata file holding every snapshot and log entry so far, so a commit
costs more the longer the history; this reports the median latency of the first and of the
last 50 commits of each library, and the total.
Usage: ``python benches/commit_history.py [appends]`` (default 500; 1,000 takes 7 minutes,
nearly all of it PyIceberg's).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pyarrow as pa

from icefloe.arrow_schema import to_schema
from icefloe.catalog.sql import SqlCatalog


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    data = pa.table(
        {"id": pa.array(range(100), pa.int64()), "s": pa.array([str(i) for i in range(100)])}
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ours_cat = SqlCatalog("ours", uri=f"sqlite:///{root}/ours.db", warehouse=root.as_uri())
        ours_cat.create_namespace("b")
        ours = ours_cat.create_table("b.t", to_schema(data.schema), format_version=2)

        from pyiceberg.catalog.sql import SqlCatalog as PySql

        theirs_cat = PySql(
            "theirs", uri=f"sqlite:///{root}/theirs.db", warehouse=(root / "t").as_uri()
        )
        theirs_cat.create_namespace("b")
        theirs = theirs_cat.create_table("b.t", schema=data.schema)
        times: dict[str, list[float]] = {"icefloe": [], "pyiceberg 0.12": []}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(n):
                for name, table in (("icefloe", ours), ("pyiceberg 0.12", theirs)):
                    start = time.perf_counter()
                    table.append(data)
                    times[name].append((time.perf_counter() - start) * 1000)
    for name, ms in times.items():
        first, last = statistics.median(ms[:50]), statistics.median(ms[-50:])
        print(
            f"{name}: commits 1-50 median {first:.1f} ms, {n - 49}-{n} median {last:.1f} ms, "
            f"{n} commits {sum(ms) / 1000:.1f} s"
        )


if __name__ == "__main__":
    main()
