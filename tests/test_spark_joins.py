"""Joins over icefloe's ``mapInArrow`` frames are planned right at any table size.

Spark estimates a ``mapInArrow`` output from its input, and icefloe's input is one number per
planned file, so without care a table of any size looks a few hundred bytes small and is
broadcast: ``merge`` at the main job's default size then dies with "Not enough memory to
build and broadcast the table". These tests run on a session configured like a user's (the
broadcast thresholds raised to 1 GB, 1 GB of driver memory) and check the physical plans
Spark actually ran (its SQL status store, final adaptive plans included): no broadcast
exchange has an icefloe read beneath it, the merge joins by sort-merge, and the main job runs
end to end with the report's counts equal to plain Spark's over the same events.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

import icefloe.spark as ispark
from icefloe.catalog.sql import SqlCatalog
from icefloe.spark import pipeline

pytestmark = pytest.mark.spark

#: Rows of the end-to-end run: every step takes the join paths of the default 3,000,000
#: (the merge's sort-merge join, asserted below) within CI's time budget.
ROWS = 200_000
THRESHOLDS = (
    "spark.sql.autoBroadcastJoinThreshold",
    "spark.sql.adaptive.autoBroadcastJoinThreshold",
)
_NODE = re.compile(r"[A-Za-z=*]")


@pytest.fixture
def user_spark(spark: Any) -> Iterator[Any]:
    """The shared session (1 GB driver) with both broadcast thresholds raised to 1 GB."""
    assert spark.sparkContext.getConf().get("spark.driver.memory") == "1g"
    before = {k: spark.conf.get(k, None) for k in THRESHOLDS}
    for key in THRESHOLDS:
        spark.conf.set(key, "1g")
    try:
        yield spark
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


class RanPlans:
    """The physical plans (with the final adaptive plans) of the queries Spark ran inside a
    ``with`` block, from the session's SQL status store."""

    def __init__(self, spark: Any) -> None:
        self._store = spark._jsparkSession.sharedState().statusStore()
        self._bus = spark.sparkContext._jsc.sc().listenerBus()
        self.plans: list[str] = []

    def _executions(self) -> dict[int, str]:
        self._bus.waitUntilEmpty()
        seq = self._store.executionsList()
        out = {}
        for i in range(seq.size()):
            e = seq.apply(i)
            out[e.executionId()] = e.physicalPlanDescription()
        return out

    def __enter__(self) -> RanPlans:
        self._before = set(self._executions())
        return self

    def __exit__(self, *exc: object) -> None:
        self.plans = [p for i, p in self._executions().items() if i not in self._before]


def _tree(plan: str) -> list[str]:
    """The operator tree of a plan description (lines up to the first blank one)."""
    lines = plan.splitlines()
    return lines[: lines.index("")] if "" in lines else lines


def broadcast_inputs(plan: str) -> list[str]:
    """The subtree beneath each broadcast exchange of ``plan`` (one string each)."""
    lines = _tree(plan)
    out = []
    for i, line in enumerate(lines):
        if "BroadcastExchange" not in line:
            continue
        depth = line.index("BroadcastExchange")
        below = []
        for deeper in lines[i + 1 :]:
            m = _NODE.search(deeper)
            if m is None or m.start() <= depth:
                break
            below.append(deeper)
        out.append("\n".join(below))
    return out


def assert_no_broadcast_of_icefloe_reads(plans: list[str]) -> None:
    for plan in plans:
        for side in broadcast_inputs(plan):
            assert "MapInArrow" not in side, f"an icefloe read is broadcast:\n{plan}"


def test_broadcast_inputs_finds_the_broadcast_side() -> None:
    plan = (
        "== Physical Plan ==\n"
        "AdaptiveSparkPlan isFinalPlan=false\n"
        "+- BroadcastHashJoin [a#1L], [a#2L], LeftOuter, BuildRight, false\n"
        "   :- Range (0, 10, step=1, splits=2)\n"
        "   +- BroadcastExchange HashedRelationBroadcastMode(List(input[0, bigint, false]))\n"
        "      +- MapInArrow run(id#14L)#15, [a#2L], false\n"
        "         +- Range (0, 56, step=1, splits=8)\n"
        "\n"
        "(1) Range\n"
    )
    assert broadcast_inputs(plan) == [
        "      +- MapInArrow run(id#14L)#15, [a#2L], false\n"
        "         +- Range (0, 56, step=1, splits=8)"
    ]
    with pytest.raises(AssertionError, match="broadcast"):
        assert_no_broadcast_of_icefloe_reads([plan])


def test_main_job_joins_by_shuffle_at_user_settings(
    user_spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spark = user_spark
    with RanPlans(spark) as ran:
        report = pipeline.main(["--rows", str(ROWS), "--warehouse", str(tmp_path)])
    assert "rows after maintenance" in capsys.readouterr().out
    assert ran.plans
    assert_no_broadcast_of_icefloe_reads(ran.plans)
    merges = [p for p in ran.plans if "Join" in "\n".join(_tree(p))]
    assert merges and all("SortMergeJoin LeftOuter" in p for p in merges)
    assert not any("BroadcastHashJoin" in p for p in merges)

    # The oracle: the same events and changes, counted by Spark alone.
    base = pipeline.events(spark, 0, ROWS)
    kept = base.where(f"NOT ({pipeline.DELETE_CONDITION})")
    source = pipeline.upsert_source(spark, ROWS)
    replaced = kept.join(source, "event_id", "left_semi").count()
    final = kept.join(source, "event_id", "left_anti").count() + source.count()
    assert report["rows_ingested"] == report["time_travel_rows"] == ROWS
    assert report["rows_deleted"] == ROWS - kept.count()
    assert report["merge_rows_replaced"] == replaced > 0
    assert report["merge_rows_written"] == source.count()
    assert report["rows"] == report["rows_after_maintenance"] == final
    assert report["amount"] == pytest.approx(report["amount_after_maintenance"])


def test_user_joins_never_broadcast_an_icefloe_read(user_spark: Any, tmp_path: Path) -> None:
    """A read's size is unknown to Spark, as for a source without statistics: a small
    dimension is broadcast, never the read; two reads join by shuffle."""
    spark = user_spark
    catalog = SqlCatalog("joins", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=tmp_path.as_uri())
    catalog.create_namespace("events")
    table = catalog.create_table(
        "events.clicks", pipeline.SCHEMA, partition_spec=pipeline.SPEC, format_version=3
    )
    ispark.write(pipeline.events(spark, 0, 20_000), table)
    dim = spark.range(0, 10_000).withColumnRenamed("id", "user_id")
    reads = {
        "dimension": ispark.read(spark, table).join(dim, "user_id"),
        "self": ispark.read(spark, table).join(
            ispark.read(spark, table, selected_fields=["event_id"]), "event_id"
        ),
    }
    for name, df in reads.items():
        plan = df._jdf.queryExecution().executedPlan().toString()  # before running
        assert_no_broadcast_of_icefloe_reads([plan])
        if name == "self":
            assert "SortMergeJoin" in plan, plan
        else:
            assert "BroadcastHashJoin" in plan and "BroadcastExchange" in plan, plan
    with RanPlans(spark) as ran:
        joined = reads["dimension"].count()
    assert_no_broadcast_of_icefloe_reads(ran.plans)
    assert joined == pipeline.events(spark, 0, 20_000).where("user_id < 10000").count()
