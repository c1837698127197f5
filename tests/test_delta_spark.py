"""Live checks with Java: Iceberg's Java runtime (Spark) reads the converted tables as Delta
read them, and Delta Lake itself regenerates a fixture that the converter then follows.

Delta's SQL extension and catalog cannot join the shared test session (it carries Iceberg's
extension and is created once per run), so regeneration runs ``tests/gen_delta_fixtures.py``
in a subprocess with its own Spark session. ``ICEFLOE_DELTA_REGENERATE`` names the scenarios
to regenerate (default ``dml``: deletion vectors, UPDATE/MERGE and row tracking; ``all`` for
every one).
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from icefloe.delta import DeltaLog, convert
from support.delta import FIXTURES, fixture
from support.spark import JavaCatalog

pytestmark = pytest.mark.spark

SCENARIOS = sorted(p.name for p in FIXTURES.iterdir() if (p / "table").is_dir())


def _naive(v: Any) -> Any:
    """Spark gives timestamptz values as naive datetimes in the (UTC) session zone."""
    if isinstance(v, datetime.datetime) and v.tzinfo is not None:
        return v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return v


def data_rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    cols = sorted(c for c in rows[0] if not c.startswith("_")) if rows else []
    return sorted((tuple(_naive(r[c]) for c in cols) for r in rows), key=repr)


def lineage(rows: list[dict[str, Any]], row_id: str, version: str) -> list[tuple[Any, ...]]:
    return sorted(((r["id"], r[row_id], r[version]) for r in rows), key=repr)


def _plain(v: Any) -> Any:
    """Spark Row values as the Python values pyarrow gives (Rows and lists recursively)."""
    if hasattr(v, "asDict"):
        return {k: _plain(x) for k, x in v.asDict().items()}
    if isinstance(v, dict):
        return [(k, _plain(x)) for k, x in v.items()]
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, bytearray):
        return bytes(v)
    return v


def test_iceberg_java_reads_every_converted_table(
    iceberg_spark: JavaCatalog, tmp_path: Path
) -> None:
    spark = iceberg_spark.spark
    spark.conf.set("spark.sql.iceberg.aggregate-push-down.enabled", "false")
    for scenario in SCENARIOS:
        root = fixture(scenario, tmp_path)
        table = convert(str(root)).table
        latest = DeltaLog(str(root)).latest_version()
        want = pq.read_table(root.parent / "expected" / f"v{latest}.parquet").to_pylist()
        df = spark.read.format("iceberg").load(table.metadata_location)
        got = [{k: _plain(v) for k, v in r.asDict().items()} for r in df.collect()]
        assert data_rows(got) == data_rows(want), scenario
        meta = df.select("id", "_row_id", "_last_updated_sequence_number").collect()
        got_lineage = [r.asDict() for r in meta]
        assert lineage(got_lineage, "_row_id", "_last_updated_sequence_number") == lineage(
            want, "_row_id", "_row_commit_version"
        ), scenario


def _java_problem() -> str | None:
    from support.spark import java_problem

    return java_problem()


def test_delta_regenerates_fixtures_the_converter_follows(tmp_path: Path) -> None:
    problem = _java_problem()
    if problem:
        pytest.skip(problem)
    wanted = os.environ.get("ICEFLOE_DELTA_REGENERATE", "dml")
    names = SCENARIOS if wanted == "all" else wanted.split(",")
    out = tmp_path / "gen"
    script = Path(__file__).parent / "gen_delta_fixtures.py"
    done = subprocess.run(
        [sys.executable, str(script), str(out), *names],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0 and "could not be fetched" in done.stderr:
        pytest.skip("Delta's jars could not be fetched from Maven Central")
    assert done.returncode == 0, done.stderr[-3000:]
    for name in names:
        root = out / name / "table"
        latest = DeltaLog(str(root)).latest_version()
        convert(str(root), up_to_version=0)
        for v in range(1, latest + 1):
            table = convert(str(root), up_to_version=v).table
            got = table.scan(
                selected_fields=("*", "_row_id", "_last_updated_sequence_number")
            ).to_arrow()
            want = pq.read_table(out / name / "expected" / f"v{v}.parquet").to_pylist()
            rows = got.to_pylist()
            assert data_rows(rows) == data_rows(want), (name, v)
            assert lineage(rows, "_row_id", "_last_updated_sequence_number") == lineage(
                want, "_row_id", "_row_commit_version"
            ), (name, v)
