"""Day-transform partition values across writers: icefloe, PyIceberg and the Java layout.

The ``day`` transform's result type is ``date`` (Java, PyIceberg and iceberg-rust agree); its
values are day counts from 1970-01-01. Manifests store them as Avro ``int`` with logical type
``date``; PyIceberg reads them as ints, icefloe as Arrow ``date32`` (the same counts).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe.expressions import col
from icefloe.manifest import manifest_files, read_manifest, read_manifest_list
from icefloe.transforms import DayTransform
from icefloe.types import DateType, TimestampType
from support.write_util import SCHEMA, SPEC, catalog, rows

pyiceberg_sql = pytest.importorskip("pyiceberg.catalog.sql")

pytestmark = pytest.mark.interop

EPOCH = dt.date(1970, 1, 1)


def _days(ts: pa.ChunkedArray) -> set[int]:
    return {(d - EPOCH).days for d in pc.unique(ts.cast(pa.date32())).to_pylist()}


def test_day_result_type_and_values_agree_with_pyiceberg() -> None:
    from pyiceberg.transforms import DayTransform as TheirDay
    from pyiceberg.types import TimestampType as TheirTimestamp

    assert DayTransform().result_type(TimestampType()) == DateType()
    assert str(TheirDay().result_type(TheirTimestamp())) == "date"
    ts = rows(0, 100)["ts"]
    ours = DayTransform().apply(ts)
    assert ours.type == pa.date32()
    theirs = TheirDay().pyarrow_transform(TheirTimestamp())(ts.combine_chunks())
    assert ours.cast(pa.int32()).combine_chunks().equals(theirs)  # PyIceberg's int32 view


def test_icefloe_day_partitions_read_by_pyiceberg(tmp_path: Path) -> None:
    from pyiceberg.expressions import GreaterThanOrEqual
    from pyiceberg.table import StaticTable

    t = catalog(tmp_path).create_table("ns.t", SCHEMA, partition_spec=SPEC)
    data = rows(0, 120)  # hourly from 2024-01-01: five days
    t.append(data)
    theirs = StaticTable.from_metadata(t.metadata_location)
    tasks = list(theirs.scan().plan_files())
    assert {task.file.partition[0] for task in tasks} == _days(data["ts"])
    for task in tasks:
        day = task.file.partition[0]
        assert isinstance(day, int)
        got = pa.parquet.read_table(task.file.file_path.removeprefix("file://"))
        assert _days(got["ts"]) == {day}
    # The Avro partition field is int with logical type date, as Java writes it.
    snap = t.current_snapshot()
    assert snap is not None
    manifests = manifest_files(read_manifest_list(t.io.new_input(snap.manifest_list).read()))
    with open(manifests[0].manifest_path.removeprefix("file://"), "rb") as f:
        schema = fastavro.reader(f).writer_schema
    assert schema is not None
    entry = {f["name"]: f for f in schema["fields"]}["data_file"]["type"]
    partition = {f["name"]: f for f in entry["fields"]}["partition"]["type"]
    ts_day = partition["fields"][0]
    assert ts_day["field-id"] == 1000
    assert [b for b in ts_day["type"] if b != "null"] == [{"type": "int", "logicalType": "date"}]
    # PyIceberg prunes by those values.
    cut = dt.datetime(2024, 1, 4)
    pruned = list(theirs.scan(row_filter=GreaterThanOrEqual("ts", cut.isoformat())).plan_files())
    assert {task.file.partition[0] for task in pruned} == {(cut.date() - EPOCH).days, 19727}


def test_pyiceberg_day_partitions_read_by_icefloe(tmp_path: Path) -> None:
    from pyiceberg import types as pt
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema as TheirSchema
    from pyiceberg.transforms import DayTransform as TheirDay

    from icefloe.catalog.sql import SqlCatalog

    uri, wh = f"sqlite:///{tmp_path / 'c.db'}", (tmp_path / "wh").as_uri()
    theirs = pyiceberg_sql.SqlCatalog("c", uri=uri, warehouse=wh)
    theirs.create_namespace("ns")
    data = rows(0, 72).select(["id", "ts"])
    ptable = theirs.create_table(
        "ns.p",
        schema=TheirSchema(
            pt.NestedField(1, "id", pt.LongType()), pt.NestedField(2, "ts", pt.TimestampType())
        ),
        partition_spec=PartitionSpec(PartitionField(2, 1000, TheirDay(), "ts_day")),
    )
    ptable.append(data)

    ours = SqlCatalog("c", uri=uri, warehouse=wh).load_table("ns.p")
    snap = ours.current_snapshot()
    assert snap is not None
    lst = read_manifest_list(ours.io.new_input(snap.manifest_list).read())
    entries = pa.Table.from_batches(
        [
            read_manifest(ours.io.new_input(m.manifest_path).read(), manifest=m)
            for m in manifest_files(lst)
        ]
    )
    days = pc.struct_field(entries["partition"], "ts_day")
    assert days.type == pa.date32()  # the date result type, from PyIceberg's Avro schema
    assert {(d - EPOCH).days for d in days.to_pylist()} == _days(data["ts"])
    # icefloe's own transform gives the same values, so pruning agrees with PyIceberg's writer.
    assert set(DayTransform().apply(data["ts"]).to_pylist()) == set(days.to_pylist())
    cut = dt.datetime(2024, 1, 3)
    planned = ours.scan(row_filter=col("ts") >= cut).plan_files()
    assert len(planned) == 1
    assert ours.scan(row_filter=col("ts") >= cut).to_arrow().num_rows == 24
