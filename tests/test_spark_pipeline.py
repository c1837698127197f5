"""The README's main job, ``python -m icefloe.spark.pipeline``, run small on the shared session:
its report's row counts equal those computed by plain Spark over the same generated events,
and the upserted rows kept their row ids (v3 row lineage through compaction too)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from icefloe.catalog.sql import SqlCatalog
from icefloe.spark import pipeline

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("store", ["local", pytest.param("s3", marks=pytest.mark.s3)])
def test_pipeline_report_counts(
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    store: str,
    request: pytest.FixtureRequest,
) -> None:
    rows = 3000
    db = tmp_path / "catalog.db"
    if store == "local":
        warehouse, props = tmp_path.as_uri(), {}
        report = pipeline.main(["--rows", str(rows), "--warehouse", str(tmp_path)])
    else:  # the same job with --warehouse s3://... on moto's S3 server
        server = request.getfixturevalue("moto_s3")
        warehouse, props = server.fresh_location(), server.properties()
        args = ["--rows", str(rows), "--warehouse", warehouse, "--catalog-db", str(db)]
        report = pipeline.main(args + [f"--property={k}={v}" for k, v in props.items()])
    out = capsys.readouterr().out
    # The oracle: the same events and changes, counted by Spark alone.
    base = pipeline.events(spark, 0, rows)
    kept = base.where(f"NOT ({pipeline.DELETE_CONDITION})")
    source = pipeline.upsert_source(spark, rows)
    bots = base.count() - kept.count()
    replaced = kept.join(source, "event_id", "left_semi").count()
    final = kept.join(source, "event_id", "left_anti").count() + source.count()
    assert 0 < bots < rows and 0 < replaced < source.count()
    assert report["rows_ingested"] == report["time_travel_rows"] == rows
    assert report["rows_deleted"] == bots
    assert report["merge_rows_replaced"] == replaced
    assert report["merge_rows_written"] == source.count()
    assert report["rows"] == report["rows_after_maintenance"] == final
    assert report["amount"] == pytest.approx(report["amount_after_maintenance"])
    total = base.agg({"amount": "sum"}).collect()[0][0]
    assert report["time_travel_amount"] == pytest.approx(total)
    assert int(report["dvs_written"]) > 0
    # ingest, delete, merge, compaction; then all but the current snapshot expire
    assert (report["snapshots_before_expiry"], report["snapshots_expired"]) == (4, 3)
    assert report["snapshots"] == 1 and int(report["files_deleted_by_expiry"]) > 0
    assert report["next_row_id"] >= rows + source.count()
    assert "rows after maintenance" in out and "merge upserts" in out

    # Row lineage: the ingest gave ids 0..rows-1 (sequence number 1); updated events kept
    # theirs (without lineage they would get ids >= rows), new ones got fresh ids; the merge's
    # sequence number (3) marks exactly the rows it wrote, through compaction (4).
    catalog = SqlCatalog("pipeline", uri=f"sqlite:///{db}", warehouse=warehouse, **props)
    table = catalog.load_table("events.clicks")
    assert table.location.startswith(warehouse)
    import icefloe.spark as ispark

    got = ispark.read(
        spark,
        table,
        selected_fields=["event_id"],
        metadata_columns=["_row_id", "_last_updated_sequence_number"],
    ).collect()
    by_id = {r["event_id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in got}
    assert len({v[0] for v in by_id.values()}) == len(by_id)  # row ids stay unique
    bot_ids = {r[0] for r in base.where(pipeline.DELETE_CONDITION).select("event_id").collect()}
    updated = [k for k in by_id if k < rows and k % 100 == 7 and k not in bot_ids]
    reinserted = [k for k in by_id if k < rows and k % 100 == 7 and k in bot_ids]
    assert len(updated) == replaced and reinserted
    assert {by_id[k] for k in updated if by_id[k][0] >= rows or by_id[k][1] != 3} == set()
    assert all(by_id[k][0] >= rows and by_id[k][1] == 3 for k in reinserted)
    old = [k for k in by_id if k < rows and k % 100 != 7]
    assert old and all(by_id[k][0] < rows and by_id[k][1] == 1 for k in old)
    assert all(by_id[k][0] >= rows and by_id[k][1] == 3 for k in by_id if k >= rows)


def test_environment_problem_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    assert pipeline.environment_problem() is None  # the test machine has pyspark and Java 17
    monkeypatch.setenv("JAVA_HOME", "/nonexistent/jdk")
    problem = pipeline.environment_problem()
    assert problem is not None and "Java 17" in problem and "JAVA_HOME" in problem


def test_conf_needs_key_and_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        pipeline.main(["--conf", "spark.driver.memory"])
    assert exc.value.code == 2
    assert "--conf needs KEY=VALUE, got 'spark.driver.memory'" in capsys.readouterr().err
