"""Scan planning on the 200,000-file table of ``gen_planning_table.py`` (200 manifests, 100 days x
bucket[16], 10 stats columns), against PyIceberg 0.12 and DuckDB's iceberg extension.

Cases: no filter, a one-day filter (partition pruning), ``id == x`` on the bucketed column
(partition + metrics pruning to one file), and a metrics-only range on ``v1`` (no partition
help). "cold" plans through a fresh table object (manifests read and decoded), "warm" through
one table object whose manifest cache holds the decoded manifests. ``plan_files`` builds one
Python task object per file; ``plan_table`` returns the same tasks as one Arrow table.

DuckDB has no planning-only entry point: ``iceberg_metadata()`` lists every manifest entry of
the snapshot (no filter pushdown), which is the part of its scans that plans files. The table is
generated once per size under the system temp directory and reused.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from gen_planning_table import generate
from harness import Harness
from icefloe.io import FileIO
from icefloe.metadata import TableMetadata
from icefloe.scan.scan import TableScan

ONE_DAY = "ts >= '2024-02-01T00:00:00' and ts < '2024-02-02T00:00:00'"
METRICS_ONLY = "v1 >= 500000 and v1 < 520000"


class _Table:
    """A table without a catalog: metadata and io (what a scan needs)."""

    def __init__(self, path: str) -> None:
        self.io = FileIO()
        self.metadata = TableMetadata.parse(Path(path).read_bytes())


def _table(n_files: int) -> str:
    root = Path(tempfile.gettempdir()) / f"icefloe-bench-planning-{n_files}"
    meta = root / "metadata" / "v1.metadata.json"
    if not meta.exists():
        print(f"generating the {n_files:,}-file planning table in {root} ...", file=sys.stderr)
        return generate(root, n_files)
    return str(meta)


def run(h: Harness) -> None:
    n_files = h.size(200_000, 5_000)
    path = _table(n_files)
    id_value = (n_files // 3) * 100  # the lowest id of file n/3: one file matches

    from pyiceberg.table import StaticTable

    def pyiceberg(f: str) -> Any:
        return lambda: list(StaticTable.from_metadata(path).scan(row_filter=f).plan_files())

    duck: dict[str, Any] = {}
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from peers import duckdb_connect

        con = duckdb_connect()

        def duckdb() -> Any:
            return con.execute(f"SELECT count(*) FROM iceberg_metadata('{path}')").fetchall()

        duck = {"duckdb iceberg_metadata": duckdb}
    except Exception as e:  # the extension package is optional for benchmarks
        print(f"duckdb peer unavailable: {e}", file=sys.stderr)

    warm = _Table(path)
    TableScan(warm).plan()  # fills the manifest cache

    def ours_files(f: str, cached: bool) -> Any:
        return lambda: TableScan(warm if cached else _Table(path), row_filter=f).plan_files()

    def ours_table(f: str, cached: bool) -> Any:
        return lambda: TableScan(warm if cached else _Table(path), row_filter=f).plan_table()

    cases = [
        ("no filter", "true", "<= 0.4 s"),
        ("one day", ONE_DAY, "far ahead of pyiceberg"),
        ("id == x (bucketed)", f"id = {id_value}", "far ahead of pyiceberg"),
        ("metrics-only range", METRICS_ONLY, "<= 0.3 s, >= 20x pyiceberg"),
    ]
    for name, f, target in cases:
        h.compare(
            f"{name}: plan_files, cold",
            n_files,
            "files",
            ours_files(f, cached=False),
            {"pyiceberg 0.12 plan_files": pyiceberg(f), **duck},
            target=target,
            warmup=0,
        )
        h.compare(f"{name}: plan_table, cold", n_files, "files", ours_table(f, False), {})
        h.compare(f"{name}: plan_files, warm", n_files, "files", ours_files(f, True), {})
        h.compare(f"{name}: plan_table, warm", n_files, "files", ours_table(f, True), {})
