"""icefloe.spark.read: distributed reads equal to icefloe's single-process read."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from icefloe.exceptions import CorruptFileError, NoSuchSnapshotError, ValidationError
from support.spark_util import (
    SPEC,
    all_types_rows,
    all_types_schema,
    arrow_rows,
    icefloe_catalog,
    single_process,
    spark_rows,
)

pytest.importorskip("pyspark")

from icefloe.spark import read
from icefloe.spark.errors import icefloe_errors
from icefloe.spark.schema import FIELD_ID

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cat = icefloe_catalog(tmp_path_factory.mktemp("read") / "wh")
    cat.create_namespace("db")
    schema = all_types_schema()
    out: dict[str, Any] = {}
    for version in (2, 3):
        t = cat.create_table(f"db.p{version}", schema, partition_spec=SPEC, format_version=version)
        t.append(all_types_rows(0, 150, schema))
        t.append(all_types_rows(150, 90, schema))
        out[f"p{version}"] = t
    u = cat.create_table("db.unpartitioned", schema, format_version=2)
    u.append(all_types_rows(0, 40, schema))
    u.append(all_types_rows(40, 20, schema))
    out["unpartitioned"] = u
    out["catalog"] = cat
    return out


@pytest.mark.parametrize("name", ["p2", "p3", "unpartitioned"])
def test_read_equals_single_process(spark: Any, tables: dict[str, Any], name: str) -> None:
    t = tables[name]
    df = read(spark, t)
    got = spark_rows(df)
    want = arrow_rows(single_process(t))
    assert len(got) == len(want) == (240 if name != "unpartitioned" else 60)
    assert got == want
    # The Spark schema carries the field ids.
    assert [f.metadata[FIELD_ID] for f in df.schema.fields] == [
        f.field_id for f in t.schema().fields
    ]
    # More than one task ran: the rows came from several files.
    assert len(t.scan().plan_files()) > 1


def test_filter_projection_and_identifier(spark: Any, tables: dict[str, Any]) -> None:
    t = tables["p3"]
    df = read(
        spark,
        "db.p3",
        catalog=tables["catalog"],
        row_filter="id >= 100 and id < 130 and s is not null",
        selected_fields=["id", "s", "st.a"],
    )
    assert df.columns == ["id", "s", "st"]
    got = spark_rows(df)
    want = arrow_rows(
        single_process(
            t,
            row_filter="id >= 100 and id < 130 and s is not null",
            selected_fields=("id", "s", "st.a"),
        )
    )
    assert got == want
    assert [r["id"] for r in got] == [i for i in range(100, 130) if i % 9 != 4]
    assert all(set(r["st"]) == {"a"} for r in got)


def test_time_travel_and_metadata_columns(spark: Any, tables: dict[str, Any]) -> None:
    t = tables["p2"]
    first = t.snapshots()[0]
    df = read(spark, t, snapshot_id=first.snapshot_id, metadata_columns=["_file", "_pos"])
    rows = df.collect()
    assert sorted(r["id"] for r in rows) == list(range(150))
    by_file: dict[str, list[int]] = {}
    for r in rows:
        by_file.setdefault(r["_file"], []).append(r["_pos"])
    for positions in by_file.values():
        assert sorted(positions) == list(range(len(positions)))
    as_of = dt.datetime.fromtimestamp(first.timestamp_ms / 1000, dt.timezone.utc)
    assert read(spark, t, as_of=as_of).count() == 150
    assert read(spark, t, ref="main").count() == 240
    with pytest.raises(NoSuchSnapshotError):
        read(spark, t, snapshot_id=12345)
    with pytest.raises(ValidationError, match="metadata column"):
        read(spark, t, metadata_columns=["_nope"])


def test_empty_result_keeps_schema(spark: Any, tables: dict[str, Any]) -> None:
    df = read(spark, tables["p2"], row_filter="id < 0")
    assert df.count() == 0
    assert df.columns[:3] == ["id", "b", "i"]


def test_executor_error_surfaces_with_icefloe_type(
    spark: Any, tmp_path: Path, tables: dict[str, Any]
) -> None:
    cat = icefloe_catalog(tmp_path / "wh")
    cat.create_namespace("db")
    schema = all_types_schema()
    t = cat.create_table("db.broken", schema, format_version=2)
    t.append(all_types_rows(0, 20, schema))
    path = t.scan().plan_files()[0].data_file.file_path
    with open(path.removeprefix("file://"), "r+b") as f:
        f.seek(-12, 2)
        f.write(b"\x00" * 12)  # clobber the footer length and magic
    df = read(spark, t)
    with pytest.raises(CorruptFileError) as info, icefloe_errors():
        df.collect()
    assert "ICEFLOE-ERROR" not in str(info.value)
    assert path.rsplit("/", 1)[-1] in str(info.value)


def test_partition_column_after_its_source_column_is_dropped(spark: Any, tmp_path: Path) -> None:
    """``_partition`` of a table whose old spec partitions by a column that was dropped since:
    Spark reads the rows icefloe reads, with the same partition values."""
    import pyarrow as pa

    from icefloe.partitioning import PartitionField, PartitionSpec
    from icefloe.schema import Schema
    from icefloe.transforms import parse_transform
    from icefloe.types import LongType, NestedField, StringType

    cat = icefloe_catalog(tmp_path / "wh")
    cat.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "region", StringType()),
        NestedField(3, "v", LongType()),
    )
    spec = PartitionSpec(
        PartitionField(2, 1000, parse_transform("identity"), "region"),
        PartitionField(1, 1001, parse_transform("bucket[2]"), "id_bucket"),
    )
    t = cat.create_table("db.dropped", schema, partition_spec=spec, format_version=2)
    ids = pa.array([1, 2, 3], pa.int64())
    t.append(pa.table({"id": ids, "region": ["a", "b", "a"], "v": pa.array([10, 20, 30])}))
    before = t.current_snapshot().snapshot_id
    with t.update_spec() as s:
        s.remove_field("region")
    with t.update_schema() as u:
        u.delete_column("region")
    t.append(pa.table({"id": pa.array([4], pa.int64()), "v": pa.array([40], pa.int64())}))

    for snapshot_id, ids in ((None, [1, 2, 3, 4]), (before, [1, 2, 3])):
        got = spark_rows(read(spark, t, snapshot_id=snapshot_id, metadata_columns=["_partition"]))
        scan = t.scan(snapshot_id=snapshot_id, selected_fields=("*", "_partition"))
        want = sorted(scan.to_arrow().to_pylist(), key=lambda r: r["id"])
        assert [r["id"] for r in got] == ids
        assert [r["_partition"] for r in got] == [r["_partition"] for r in want]
    # before the drop, the partition values of the dropped column are still there
    assert {r["_partition"]["region"] for r in want} == {"a", "b"}
