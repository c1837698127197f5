"""Deterministic regressions for bugs the property tests found (each pinned as an ``@example``
of its property test too, where one covers it)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField
from rowlevel_util import live_deletes
from write_util import catalog

SCHEMA = Schema(NestedField(1, "k", LongType(), True), NestedField(2, "v", LongType()))
SPEC = PartitionSpec(PartitionField(1, 1000, parse_transform("bucket[3]"), "kb"))


def _rows(keys: list[int]) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(keys, pa.int64())})


def test_spark_overwrite_plan_keeps_deletes_the_filter_cannot_match(tmp_path: Path) -> None:
    """The Spark writer's filtered overwrite rewrites the files it touches: an equality delete
    of a key outside the filter (its metrics cannot match ``k = 0``) must still be applied to
    the rewritten rows, or the deleted row comes back."""
    from icefloe.spark.writing import _overwrite_plan

    t = catalog(tmp_path).create_table(
        "ns.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"}
    )
    t.append(_rows([0, 12]))  # one file: bucket[3] puts both keys in partition 1
    t.delete_by_keys({"k": [12]}, ["k"])
    (eq_delete,) = live_deletes(t).column("file_path").to_pylist()
    drop, rewrite, _ = _overwrite_plan(t, "main", "k = 0")
    assert drop == [] and len(rewrite) == 1
    assert [d.file_path for d in rewrite[0].delete_files] == [eq_delete]
