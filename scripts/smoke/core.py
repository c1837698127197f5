"""Clean-install smoke test: what a user does right after ``pip install icefloe``.

Runs in a virtualenv that holds only icefloe and its declared dependencies (scripts/smoke.sh),
from a directory outside the source tree, so a module imported but not declared fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

import pyarrow as pa

from icefloe.catalog import load_catalog


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        warehouse = Path(tmp, "wh")
        catalog = load_catalog(
            "smoke", type="sql", uri=f"sqlite:///{tmp}/c.db", warehouse=warehouse.as_uri()
        )
        catalog.create_namespace("db")
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
        table = catalog.create_table("db.t", schema, properties={"format-version": "3"})
        table.append(pa.table({"id": list(range(10)), "s": [f"v{i}" for i in range(10)]}, schema))
        assert table.scan().to_arrow().num_rows == 10

        table.set_properties({"write.delete.mode": "merge-on-read"})
        table.delete("id < 3")
        rows = table.scan(row_filter="id >= 5").to_arrow()
        assert sorted(rows.column("id").to_pylist()) == [5, 6, 7, 8, 9], rows

        result = table.upsert(
            pa.table({"id": [4, 20], "s": ["four", "twenty"]}, schema), join_cols=["id"]
        )
        assert (result.rows_updated, result.rows_inserted) == (1, 1), result
        got = catalog.load_table("db.t").scan().to_arrow().sort_by("id")
        assert got.column("id").to_pylist() == [3, 4, 5, 6, 7, 8, 9, 20], got
        assert got.column("s").to_pylist()[1] == "four"
        _command_line(tmp, warehouse)
    deps = ("pyarrow", "numpy", "SQLAlchemy", "PyYAML", "click", "rich")
    versions = {d: version(d) for d in deps}
    print(f"smoke core: create, append, scan, delete, upsert, icefloe command ok ({versions})")


def _command_line(tmp: str, warehouse: Path) -> None:
    """The installed ``icefloe`` script reads the same catalog through environment variables."""
    script = Path(sys.executable).with_name("icefloe")
    env = {
        **os.environ,
        "ICEFLOE_CATALOG__SMOKE__TYPE": "sql",
        "ICEFLOE_CATALOG__SMOKE__URI": f"sqlite:///{tmp}/c.db",
        "ICEFLOE_CATALOG__SMOKE__WAREHOUSE": warehouse.as_uri(),
    }

    def icefloe(*args: str) -> str:
        p = subprocess.run(
            [str(script), "--catalog", "smoke", *args], env=env, capture_output=True, text=True
        )
        assert p.returncode == 0, (args, p.stdout, p.stderr)
        return p.stdout

    assert json.loads(icefloe("describe", "db.t", "--json"))["format_version"] == 3
    checks = json.loads(icefloe("health", "db.t", "--json"))["checks"]
    assert len(checks) == 7, checks
    assert "snapshots" in icefloe("snapshots", "db.t")
    report = Path(tmp, "report.html")
    icefloe("report", "db.t", "-o", str(report))
    assert report.read_text().startswith("<!DOCTYPE html>")


if __name__ == "__main__":
    main()
