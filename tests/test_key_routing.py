"""Deleting by keys writes each partition's equality delete file with only the keys that can be
in it (identity, bucket and truncate of a key column), and the rows read afterwards are the
same as deleting every key everywhere: checked against a model, by hypothesis, and by Spark
with Iceberg Java reading the table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.catalog.sql import SqlCatalog
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.scan.tasks import DeleteContent
from icefloe.schema import Schema
from icefloe.table.key_routing import KeyRouter
from icefloe.transforms import parse_transform
from icefloe.types import DateType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "d", DateType(), required=False),
    NestedField(3, "s", StringType(), required=False),
)


def _catalog(tmp: Path) -> SqlCatalog:
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp}/c.db", warehouse=(tmp / "wh").as_uri())
    cat.create_namespace("db")
    return cat


def _spec(*fields: tuple[int, str]) -> PartitionSpec:
    return PartitionSpec(
        *(
            PartitionField(src, 1000 + i, parse_transform(t), f"p{i}")
            for i, (src, t) in enumerate(fields)
        )
    )


def _rows(ids: list[int | None]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "d": pa.array([None if i is None else i % 5 for i in ids], pa.int32()).cast(
                pa.date32()
            ),
            "s": [None if i is None else f"s{i % 7:02d}" for i in ids],
        }
    )


def _eq_files(t: Any) -> dict[str, Any]:
    return {
        d.file_path: d
        for task in t.scan().plan_files()
        for d in task.delete_files
        if d.content is DeleteContent.EQUALITY_DELETES
    }


def test_bucketed_table_files_hold_only_their_buckets_keys(tmp_path: Path) -> None:
    t = _catalog(tmp_path).create_table(
        "db.t", SCHEMA, partition_spec=_spec((2, "day"), (1, "bucket[4]"))
    )
    t.set_properties({"write.delete.mode": "merge-on-read"})
    t.append(_rows(list(range(400))))
    keys = list(range(0, 400, 3))
    t.delete_by_keys(pa.table({"id": pa.array(keys, pa.int32())}), ["id"])  # int keys, long column
    files = _eq_files(t)
    assert files
    bucket = parse_transform("bucket[4]")
    total = 0
    for path, d in files.items():
        got = pq.read_table(path.removeprefix("file://")).column(0)
        assert set(bucket.apply(got).to_pylist()) == {d.partition[1]}, path
        total += len(got)
    days = len({i % 5 for i in range(400)})
    assert total == len(keys) * days  # each key once per day partition, not once per file
    remaining = sorted(t.scan().to_arrow().column("id").to_pylist())
    assert remaining == [i for i in range(400) if i % 3]


def test_identity_and_truncate_route_strings_and_nulls(tmp_path: Path) -> None:
    t = _catalog(tmp_path).create_table(
        "db.t", SCHEMA, partition_spec=_spec((3, "identity"), (3, "truncate[2]"))
    )
    t.append(
        _rows([*range(50), None]).set_column(
            2, "s", pa.array([*(f"s{i % 7:02d}" for i in range(50)), None])
        )
    )
    keys = pa.table({"s": ["s03", "s05", None, "zz"]})
    t.delete_by_keys(keys, ["s"])
    files = _eq_files(t)
    by_partition = {
        d.partition: pq.read_table(p.removeprefix("file://")).column(0).to_pylist()
        for p, d in files.items()
    }
    assert by_partition == {("s03", "s0"): ["s03"], ("s05", "s0"): ["s05"], (None, None): [None]}
    left = t.scan().to_arrow().column("s").to_pylist()
    assert None not in left and "s03" not in left and "s05" not in left
    assert len(left) == 50 - sum(1 for i in range(50) if i % 7 in (3, 5))


def test_router_keeps_every_key_when_no_field_is_routable() -> None:
    keys = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    spec = _spec((2, "day"))
    router = KeyRouter(SCHEMA, {spec.spec_id: spec}, keys, ["id"])
    assert router.keys_for(spec.spec_id, (19000,)) is keys
    unpartitioned = PartitionSpec(spec_id=1)
    router = KeyRouter(SCHEMA, {1: unpartitioned}, keys, ["id"])
    assert router.keys_for(1, ()) is keys


@settings(max_examples=25, deadline=None)
@given(
    data_ids=st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=1, max_size=40),
    keys=st.lists(st.one_of(st.none(), st.integers(-60, 60)), min_size=1, max_size=12),
    transform=st.sampled_from(["bucket[3]", "bucket[7]", "identity", "truncate[10]"]),
)
def test_routed_deletes_match_a_model(
    tmp_path_factory: pytest.TempPathFactory,
    data_ids: list[int | None],
    keys: list[int | None],
    transform: str,
) -> None:
    tmp = tmp_path_factory.mktemp("route")
    t = _catalog(tmp).create_table("db.t", SCHEMA, partition_spec=_spec((1, transform)))
    t.append(_rows(data_ids))
    t.delete_by_keys(pa.table({"id": pa.array(sorted(set(keys), key=str), pa.int64())}), ["id"])
    gone = set(keys)
    want = sorted((i for i in data_ids if i not in gone), key=str)
    assert sorted(t.scan().to_arrow().column("id").to_pylist(), key=str) == want


@pytest.mark.spark
@pytest.mark.interop
def test_java_reads_routed_equality_deletes(iceberg_spark: Any) -> None:
    from support.spark_util import spark_rows

    cat = iceberg_spark.icefloe()
    cat.create_namespace("route")
    t = cat.create_table("route.t", SCHEMA, partition_spec=_spec((2, "day"), (1, "bucket[4]")))
    t.append(_rows(list(range(300))))
    t.delete_by_keys(pa.table({"id": pa.array(range(0, 300, 4), pa.int64())}), ["id"])
    java = spark_rows(iceberg_spark.sql("SELECT id FROM {c}.route.t ORDER BY id"))
    assert [r["id"] for r in java] == [i for i in range(300) if i % 4]
