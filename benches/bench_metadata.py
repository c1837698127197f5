"""Table metadata JSON: parse and write a v2 table with many snapshots, against PyIceberg."""

from __future__ import annotations

from harness import Harness
from icefloe.metadata import (
    AddSnapshot,
    SetSnapshotRef,
    Snapshot,
    Summary,
    TableMetadata,
    apply_updates,
    new_table_metadata,
)
from icefloe.partitioning import UNPARTITIONED_PARTITION_SPEC
from icefloe.schema import Schema
from icefloe.sorting import UNSORTED_SORT_ORDER
from icefloe.types import LongType, NestedField, StringType


def _table(n: int) -> TableMetadata:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType())
    )
    md = new_table_metadata(
        schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "s3://b/t", {}, 2, now_ms=1
    )
    updates = []
    parent = None
    for i in range(1, n + 1):
        s = Snapshot(
            snapshot_id=i,
            timestamp_ms=1000 + i,
            manifest_list=f"s3://b/t/metadata/snap-{i}.avro",
            sequence_number=i,
            parent_snapshot_id=parent,
            summary=Summary("append", {"added-records": "10", "total-records": str(10 * i)}),
            schema_id=0,
        )
        updates += [AddSnapshot(s), SetSnapshotRef("main", i)]
        parent = i
    return apply_updates(md, updates, now_ms=10**9)


def run(h: Harness) -> None:
    from pyiceberg.table.metadata import TableMetadataUtil

    n = h.size(2000, 100)
    md = _table(n)
    text = md.dumps()
    theirs = TableMetadataUtil.parse_raw(text)
    h.compare(
        "parse_v2_snapshots",
        n,
        "snapshot",
        ours=lambda: TableMetadata.parse(text),
        peers={"pyiceberg": lambda: TableMetadataUtil.parse_raw(text)},
    )
    h.compare(
        "write_v2_snapshots",
        n,
        "snapshot",
        ours=md.dumps,
        peers={"pyiceberg": theirs.model_dump_json},
    )
