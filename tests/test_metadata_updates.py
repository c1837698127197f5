"""Table updates and requirements: each rule, the REST wire form, and random update sequences."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from icefloe.exceptions import CommitFailedError, UnsupportedFeatureError, ValidationError
from icefloe.metadata import (
    AddEncryptionKey,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    AssignUUID,
    BlobMetadata,
    EncryptedKey,
    PartitionStatisticsFile,
    RemoveEncryptionKey,
    RemovePartitionSpecs,
    RemovePartitionStatistics,
    RemoveProperties,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    RemoveStatistics,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetPartitionStatistics,
    SetProperties,
    SetSnapshotRef,
    SetStatistics,
    Snapshot,
    SnapshotLogEntry,
    StatisticsFile,
    Summary,
    TableMetadata,
    TableUpdate,
    UpgradeFormatVersion,
    apply_updates,
    new_table_metadata,
    requirement_from_json,
    requirements_for,
    update_from_json,
    validate_requirements,
)
from icefloe.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.sorting import UNSORTED_SORT_ORDER, SortField, SortOrder
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField, StringType, TimestampNanoType

UUID = "9c12d441-03fe-4693-9a96-a0705ddf69c1"
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True), NestedField(2, "data", StringType())
)


#: the properties a new table stores without being asked (as Iceberg Java's create)
CREATED = {"write.parquet.compression-codec": "zstd"}


def base(version: int = 2) -> TableMetadata:
    return new_table_metadata(
        SCHEMA,
        UNPARTITIONED_PARTITION_SPEC,
        UNSORTED_SORT_ORDER,
        "s3://b/t",
        {},
        version,
        table_uuid=UUID,
        now_ms=1000,
    )


def apply(md: TableMetadata, *updates: TableUpdate, **kw: Any) -> TableMetadata:
    kw.setdefault("now_ms", 5000)
    return apply_updates(md, list(updates), **kw)


def snap(
    sid: int,
    seq: int,
    parent: int | None = None,
    ts: int = 2000,
    first_row_id: int | None = None,
    added_rows: int | None = None,
) -> Snapshot:
    return Snapshot(
        snapshot_id=sid,
        timestamp_ms=ts,
        manifest_list=f"s3://b/t/metadata/snap-{sid}.avro",
        sequence_number=seq,
        parent_snapshot_id=parent,
        summary=Summary("append"),
        schema_id=0,
        first_row_id=first_row_id,
        added_rows=added_rows,
    )


def identity(source: int, field_id: int, name: str) -> PartitionField:
    return PartitionField(source, field_id, parse_transform("identity"), name)


def with_snapshots(md: TableMetadata, *ids: int) -> TableMetadata:
    """Adds a chain of snapshots, moving main to each."""
    parent = md.current_snapshot_id
    for i, sid in enumerate(ids):
        seq = md.last_sequence_number + 1 if md.format_version >= 2 else 0
        if md.format_version >= 3:
            s = snap(sid, seq, parent, ts=2000 + i, first_row_id=md.next_row_id, added_rows=10)
        else:
            s = snap(sid, seq, parent, ts=2000 + i)
        md = apply(md, AddSnapshot(s), SetSnapshotRef("main", sid))
        parent = sid
    return md


# ----------------------------------------------------------------------------- wire form

ALL_UPDATES: list[TableUpdate] = [
    AssignUUID(UUID),
    UpgradeFormatVersion(3),
    AddSchema(SCHEMA, 2),
    AddSchema(SCHEMA),
    SetCurrentSchema(-1),
    AddPartitionSpec(PartitionSpec(identity(1, 1000, "id"), spec_id=1)),
    SetDefaultSpec(1),
    AddSortOrder(SortOrder(SortField(1))),
    SetDefaultSortOrder(-1),
    AddSnapshot(snap(5, 1, first_row_id=0, added_rows=3)),
    SetSnapshotRef("b", 5, "branch", 2, 3, 4),
    SetSnapshotRef("t", 5, "tag", max_ref_age_ms=9),
    RemoveSnapshots((5, 6)),
    RemoveSnapshotRef("b"),
    SetLocation("s3://x"),
    SetProperties({"a": "1"}),
    RemoveProperties(("a", "b")),
    SetStatistics(
        StatisticsFile(5, "s.puffin", 10, 2, (BlobMetadata("ndv", 5, 1, (1,), {"k": "v"}),))
    ),
    SetStatistics(StatisticsFile(5, "s.puffin", 10, 2, (), key_metadata="AA=="), snapshot_id=5),
    RemoveStatistics(5),
    SetPartitionStatistics(PartitionStatisticsFile(5, "p.parquet", 7)),
    RemovePartitionStatistics(5),
    AddEncryptionKey(EncryptedKey("k", "AAAA", "master", {"p": "q"})),
    RemoveEncryptionKey("k"),
    RemovePartitionSpecs((1, 2)),
    RemoveSchemas((3,)),
]


@pytest.mark.parametrize("update", ALL_UPDATES, ids=lambda u: u.action)
def test_update_wire_round_trip(update: TableUpdate) -> None:
    obj = update.to_json()
    assert obj["action"] == update.action
    assert update_from_json(obj) == update


def test_update_wire_examples() -> None:
    u = update_from_json(
        {"action": "set-snapshot-ref", "ref-name": "x", "snapshot-id": 1, "type": "bRaNch"}
    )
    assert isinstance(u, SetSnapshotRef) and u.type == "branch"
    assert update_from_json({"action": "set-current-schema", "schema-id": -1}) == SetCurrentSchema(
        -1
    )
    assert update_from_json({"action": "remove-properties", "removals": ["a"]}) == RemoveProperties(
        ("a",)
    )
    with pytest.raises(ValidationError, match="unknown action"):
        update_from_json({"action": "do-magic"})
    with pytest.raises(ValidationError, match="schema-id"):
        update_from_json({"action": "set-current-schema"})
    with pytest.raises(ValidationError, match="updates"):
        update_from_json({"action": "set-properties", "updates": {"a": 1}})


ALL_REQUIREMENTS = [
    AssertCreate(),
    AssertTableUUID(UUID),
    AssertRefSnapshotId("main", 5),
    AssertRefSnapshotId("main", None),
    AssertLastAssignedFieldId(2),
    AssertCurrentSchemaId(0),
    AssertLastAssignedPartitionId(999),
    AssertDefaultSpecId(0),
    AssertDefaultSortOrderId(0),
]


@pytest.mark.parametrize("req", ALL_REQUIREMENTS, ids=lambda r: r.type)
def test_requirement_wire_round_trip(req: Any) -> None:
    obj = req.to_json()
    assert obj["type"] == req.type
    assert requirement_from_json(obj) == req


def test_requirement_wire_examples() -> None:
    assert requirement_from_json(
        {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}
    ) == AssertRefSnapshotId("main", None)
    assert AssertRefSnapshotId("main", None).to_json() == {
        "type": "assert-ref-snapshot-id",
        "ref": "main",
        "snapshot-id": None,
    }
    with pytest.raises(ValidationError, match="snapshot-id"):
        requirement_from_json({"type": "assert-ref-snapshot-id", "ref": "main"})
    with pytest.raises(ValidationError, match="unknown type"):
        requirement_from_json({"type": "assert-nothing"})


# ----------------------------------------------------------------------------- requirements


def test_requirements_pass_on_matching_base() -> None:
    md = with_snapshots(base(), 11)
    validate_requirements(
        [
            AssertTableUUID(UUID.upper()),
            AssertRefSnapshotId("main", 11),
            AssertRefSnapshotId("other", None),
            AssertLastAssignedFieldId(2),
            AssertCurrentSchemaId(0),
            AssertLastAssignedPartitionId(999),
            AssertDefaultSpecId(0),
            AssertDefaultSortOrderId(0),
        ],
        md,
    )
    AssertCreate().validate(None)


@pytest.mark.parametrize(
    "req,message",
    [
        (AssertCreate(), "already exists"),
        (AssertTableUUID("00000000-0000-0000-0000-000000000000"), "UUID does not match"),
        (AssertRefSnapshotId("main", 12), "has changed"),
        (AssertRefSnapshotId("main", None), "created concurrently"),
        (AssertRefSnapshotId("dev", 11), "missing"),
        (AssertLastAssignedFieldId(3), "last assigned field id"),
        (AssertCurrentSchemaId(1), "current schema"),
        (AssertLastAssignedPartitionId(1000), "last assigned partition id"),
        (AssertDefaultSpecId(1), "default partition spec"),
        (AssertDefaultSortOrderId(1), "default sort order"),
    ],
)
def test_requirement_failures_are_commit_failed(req: Any, message: str) -> None:
    md = with_snapshots(base(), 11)
    with pytest.raises(CommitFailedError, match=message):
        req.validate(md)


def test_requirements_on_missing_table() -> None:
    with pytest.raises(CommitFailedError, match="does not exist"):
        AssertTableUUID(UUID).validate(None)


def test_requirements_for_matches_java_client() -> None:
    md = with_snapshots(base(), 11)
    assert requirements_for(None, [AddSchema(SCHEMA)]) == [AssertCreate()]
    reqs = requirements_for(
        md,
        [
            AddSchema(SCHEMA),
            SetCurrentSchema(-1),
            AddPartitionSpec(PartitionSpec(identity(1, 1000, "id"))),
            SetDefaultSpec(-1),
            AddSortOrder(SortOrder(SortField(1))),
            SetDefaultSortOrder(-1),
            SetSnapshotRef("main", 11),
            SetSnapshotRef("dev", 11),
            SetSnapshotRef("main", 11),
            SetProperties({"a": "b"}),
        ],
    )
    assert reqs == [
        AssertTableUUID(UUID),
        AssertLastAssignedFieldId(2),
        AssertCurrentSchemaId(0),
        AssertLastAssignedPartitionId(999),
        AssertDefaultSpecId(0),
        AssertDefaultSortOrderId(0),
        AssertRefSnapshotId("main", 11),
        AssertRefSnapshotId("dev", None),
    ]


# ----------------------------------------------------------------------------- update rules


def test_no_updates_returns_base() -> None:
    md = base()
    assert apply(md) is md
    assert apply(md, SetProperties({}), RemoveProperties(("missing",))) is md


def test_assign_uuid() -> None:
    md = apply(base(), AssignUUID("11111111-1111-1111-1111-111111111111"))
    assert md.table_uuid == "11111111-1111-1111-1111-111111111111"
    assert md.last_updated_ms == 5000


def test_upgrade_format_version_only_upward() -> None:
    v1 = base(1)
    v2 = apply(v1, UpgradeFormatVersion(2))
    assert v2.format_version == 2 and v2.next_row_id is None
    v3 = apply(v2, UpgradeFormatVersion(3))
    assert v3.format_version == 3 and v3.next_row_id == 0
    assert apply(v3, UpgradeFormatVersion(3)) is v3
    with pytest.raises(ValidationError, match="downgrade"):
        apply(v3, UpgradeFormatVersion(2))
    with pytest.raises(ValidationError, match="unsupported format version"):
        apply(v3, UpgradeFormatVersion(4))  # a bad argument, as in Java (REST: 400)


def test_add_schema_assigns_id_and_raises_last_column_id() -> None:
    md = base()
    wider = Schema(*SCHEMA.fields, NestedField(7, "extra", LongType()), schema_id=42)
    md2 = apply(md, AddSchema(wider), SetCurrentSchema(-1))
    assert [s.schema_id for s in md2.schemas] == [0, 1]
    assert md2.current_schema_id == 1 and md2.last_column_id == 7
    # an identical schema reuses the existing id and adds nothing
    md3 = apply(md2, AddSchema(Schema(*wider.fields, schema_id=9)))
    assert [s.schema_id for s in md3.schemas] == [0, 1]
    # last-column-id never goes down, even for a schema with lower ids
    md4 = apply(md3, AddSchema(Schema(NestedField(1, "only", LongType()))))
    assert md4.last_column_id == 7 and md4.schemas[-1].schema_id == 2
    # the deprecated last-column-id may only raise it; a lower one (what Java clients send
    # after dropping a column) leaves it as it is, as Java 1.11 does
    assert apply(md, AddSchema(wider, 9)).last_column_id == 9
    assert apply(md, AddSchema(wider, 1)).last_column_id == 7


def test_add_schema_checks_format_version() -> None:
    ns = Schema(NestedField(1, "ts", TimestampNanoType()))
    with pytest.raises(ValidationError, match="v2"):
        apply(base(2), AddSchema(ns))
    assert apply(base(3), AddSchema(ns)).schemas[-1].fields[0].name == "ts"
    with_default = Schema(NestedField(3, "d", LongType(), initial_default=5))
    with pytest.raises(ValidationError, match="default value"):
        apply(base(2), AddSchema(with_default))
    assert apply(base(3), AddSchema(with_default)).last_column_id == 3


def test_set_current_schema_rules() -> None:
    with pytest.raises(ValidationError, match="no schema has been added"):
        apply(base(), SetCurrentSchema(-1))
    with pytest.raises(ValidationError, match="unknown schema: 5"):
        apply(base(), SetCurrentSchema(5))
    assert apply(base(), SetCurrentSchema(0)) is not None


def test_remove_schemas() -> None:
    md = apply(base(), AddSchema(Schema(NestedField(3, "z", LongType()))))
    with pytest.raises(ValidationError, match="current schema"):
        apply(md, RemoveSchemas((0,)))
    assert [s.schema_id for s in apply(md, RemoveSchemas((1, 77))).schemas] == [0]


def test_add_spec_and_set_default() -> None:
    md = base()
    spec = PartitionSpec(identity(1, 1000, "id"), spec_id=9)
    md2 = apply(md, AddPartitionSpec(spec), SetDefaultSpec(-1))
    assert [s.spec_id for s in md2.partition_specs] == [0, 1]
    assert md2.default_spec_id == 1 and md2.last_partition_id == 1000
    # the same fields again reuse spec 1
    md3 = apply(md2, AddPartitionSpec(PartitionSpec(identity(1, 1000, "id"))))
    assert len(md3.partition_specs) == 2
    md4 = apply(md3, AddPartitionSpec(PartitionSpec(identity(2, 1001, "data"))))
    assert md4.last_partition_id == 1001 and md4.partition_specs[-1].spec_id == 2
    # last-partition-id never goes down
    md5 = apply(md4, AddPartitionSpec(PartitionSpec(identity(2, 1000, "d2"))))
    assert md5.last_partition_id == 1001
    with pytest.raises(ValidationError, match="no spec has been added"):
        apply(md, SetDefaultSpec(-1))
    with pytest.raises(ValidationError, match="unknown spec: 4"):
        apply(md, SetDefaultSpec(4))
    with pytest.raises(ValidationError, match="source column 9"):
        apply(md, AddPartitionSpec(PartitionSpec(identity(9, 1000, "x"))))


def test_add_spec_v1_requires_sequential_ids() -> None:
    with pytest.raises(ValidationError, match="sequential"):
        apply(base(1), AddPartitionSpec(PartitionSpec(identity(1, 1005, "id"))))
    assert (
        apply(base(1), AddPartitionSpec(PartitionSpec(identity(1, 1000, "id")))).last_partition_id
        == 1000
    )


def test_remove_partition_specs() -> None:
    md = apply(base(), AddPartitionSpec(PartitionSpec(identity(1, 1000, "id"))))
    with pytest.raises(ValidationError, match="default partition spec"):
        apply(md, RemovePartitionSpecs((0,)))
    assert [s.spec_id for s in apply(md, RemovePartitionSpecs((1,))).partition_specs] == [0]


def test_sort_orders() -> None:
    md = base()
    order = SortOrder(SortField(1), order_id=17)
    md2 = apply(md, AddSortOrder(order), SetDefaultSortOrder(-1))
    assert [o.order_id for o in md2.sort_orders] == [0, 1] and md2.default_sort_order_id == 1
    assert len(apply(md2, AddSortOrder(SortOrder(SortField(1), order_id=4))).sort_orders) == 2
    md3 = apply(md2, AddSortOrder(SortOrder(SortField(2))), SetDefaultSortOrder(-1))
    assert md3.default_sort_order_id == 2
    md4 = apply(md3, AddSortOrder(UNSORTED_SORT_ORDER), SetDefaultSortOrder(-1))
    assert md4.default_sort_order_id == 0 and len(md4.sort_orders) == 3
    with pytest.raises(ValidationError, match="no order has been added"):
        apply(md, SetDefaultSortOrder(-1))
    with pytest.raises(ValidationError, match="unknown order: 8"):
        apply(md, SetDefaultSortOrder(8))
    with pytest.raises(ValidationError, match="source column 9"):
        apply(md, AddSortOrder(SortOrder(SortField(9))))


def test_default_spec_and_order_must_fit_the_current_schema() -> None:
    """A commit may not drop the column the default partition spec or default sort order reads
    (Iceberg Java's builder refuses it too): the table was left with a spec no writer could
    use, so every later append failed. Older specs and orders may keep dropped columns, a void
    partition field needs none, and metadata already in that state still loads and can be
    repaired."""
    only_data = Schema(NestedField(2, "data", StringType()))
    drop_id = (AddSchema(only_data), SetCurrentSchema(-1))
    by_id = PartitionSpec(identity(1, 1000, "id"))
    parted = apply(base(), AddPartitionSpec(by_id), SetDefaultSpec(-1))
    with pytest.raises(ValidationError, match=r"default partition spec 1 .*source column 1"):
        apply(parted, *drop_id)
    ordered = apply(base(), AddSortOrder(SortOrder(SortField(1))), SetDefaultSortOrder(-1))
    with pytest.raises(ValidationError, match=r"default sort order 1 .*source column 1"):
        apply(ordered, *drop_id)

    # no longer the defaults, the spec and order may outlive their column, but not come back
    both = apply(parted, AddSortOrder(SortOrder(SortField(1))), SetDefaultSortOrder(-1))
    dropped = apply(both, SetDefaultSpec(0), SetDefaultSortOrder(0), *drop_id)
    assert dropped.current_schema().field_ids == {2}
    assert {s.spec_id for s in dropped.partition_specs} == {0, 1}
    assert {o.order_id for o in dropped.sort_orders} == {0, 1}
    assert apply(dropped, SetProperties({"k": "v"})).properties == {**CREATED, "k": "v"}
    with pytest.raises(ValidationError, match="default partition spec 1"):
        apply(dropped, SetDefaultSpec(1))
    with pytest.raises(ValidationError, match="default sort order 1"):
        apply(dropped, SetDefaultSortOrder(1))

    # a void field (v1's stand-in for a removed partition field) reads no column
    void = PartitionSpec(PartitionField(1, 1000, parse_transform("void"), "id"))
    v1 = apply(base(1), AddPartitionSpec(void), SetDefaultSpec(-1))
    assert apply(v1, *drop_id).current_schema().field_ids == {2}

    # metadata written in that state loads, refuses commits keeping it, accepts a repair
    schemas = (*parted.schemas, Schema(*only_data.fields, schema_id=1))
    broken = TableMetadata.parse(replace(parted, schemas=schemas, current_schema_id=1).dumps())
    with pytest.raises(ValidationError, match="default partition spec 1"):
        apply(broken, SetProperties({"k": "v"}))
    assert apply(broken, SetDefaultSpec(0)).default_spec_id == 0


def test_add_snapshot_rules_v2() -> None:
    md = apply(base(), AddSnapshot(snap(1, 1, ts=3000)))
    # the commit's time is the committer's clock, not the snapshot's (as Java)
    assert md.last_sequence_number == 1 and md.last_updated_ms == 5000
    assert md.current_snapshot_id is None  # adding does not make it current
    with pytest.raises(ValidationError, match="already exists"):
        apply(md, AddSnapshot(snap(1, 2)))
    with pytest.raises(ValidationError, match="older than last sequence number 1"):
        apply(md, AddSnapshot(snap(2, 1, parent=1)))
    # a snapshot without parent may reuse an older sequence number (as the reference allows)
    assert apply(md, AddSnapshot(snap(3, 1))).last_sequence_number == 1
    with pytest.raises(ValidationError, match="must be 0 in v1"):
        apply(base(1), AddSnapshot(snap(1, 1)))


def test_add_snapshot_needs_an_operation_from_v2() -> None:
    """A new v2+ snapshot without (or with an unknown) ``operation`` is refused: PyIceberg
    cannot load a table holding one. v1 summaries are optional."""
    for summary in (None, Summary(None), Summary("truncate")):
        bad = replace(snap(1, 1), summary=summary)
        with pytest.raises(ValidationError, match="needs an 'operation'"):
            apply(base(), AddSnapshot(bad))
        v1 = apply(base(1), AddSnapshot(replace(bad, sequence_number=0)))
        assert v1.snapshots[0].summary == summary


def test_add_snapshot_row_lineage_v3() -> None:
    md = base(3)
    md2 = apply(md, AddSnapshot(snap(1, 1, first_row_id=0, added_rows=25)))
    assert md2.next_row_id == 25
    with pytest.raises(CommitFailedError, match="behind table next-row-id"):
        apply(md2, AddSnapshot(snap(2, 2, parent=1, first_row_id=10, added_rows=5)))
    with pytest.raises(ValidationError, match="first-row-id is null"):
        apply(md2, AddSnapshot(snap(2, 2, parent=1)))
    with pytest.raises(ValidationError, match="added-rows is null"):
        apply(md2, AddSnapshot(snap(2, 2, parent=1, first_row_id=25)))
    # a gap: next-row-id still ends above every assigned id
    assert (
        apply(md2, AddSnapshot(snap(2, 2, parent=1, first_row_id=30, added_rows=5))).next_row_id
        == 35
    )


def test_a_snapshot_from_a_clock_running_ahead_is_refused_not_the_next_commits() -> None:
    """A snapshot timed ten minutes after the committer's clock: refused as Java refuses it
    (its log entry would follow the commit's time). It became the table's time before, and
    every commit by writers with correct clocks was refused until real time caught up."""
    with pytest.raises(ValidationError, match="snapshot-log"):
        apply(base(), AddSnapshot(snap(1, 1, ts=605_000)), SetSnapshotRef("main", 1))
    # a snapshot no branch points at does not move the table's time either
    ahead = apply(base(), AddSnapshot(snap(1, 1, ts=10**12)))
    assert ahead.last_updated_ms == 5000
    later = apply(ahead, SetProperties({"k": "v"}), now_ms=6000)
    assert later.last_updated_ms == 6000 and later.properties == {**CREATED, "k": "v"}


def test_set_snapshot_ref_main_moves_current_and_logs() -> None:
    md = apply(base(), AddSnapshot(snap(1, 1, ts=3000)), SetSnapshotRef("main", 1))
    assert md.current_snapshot_id == 1 and md.refs["main"].snapshot_id == 1
    assert md.snapshot_log == (SnapshotLogEntry(3000, 1),)
    assert md.last_updated_ms == 5000
    # moving main to an existing snapshot logs the commit time
    md2 = apply(md, AddSnapshot(snap(2, 2, parent=1, ts=4000)))
    md3 = apply(md2, SetSnapshotRef("main", 1))
    assert md3 is md2  # unchanged ref: nothing to do
    md4 = apply(md2, SetSnapshotRef("main", 2), now_ms=9000)
    assert md4.snapshot_log[-1] == SnapshotLogEntry(9000, 2)
    # other branches and tags do not touch the current snapshot or the log
    md5 = apply(md4, SetSnapshotRef("dev", 1), SetSnapshotRef("v1", 1, "tag"))
    assert md5.current_snapshot_id == 2 and md5.snapshot_log == md4.snapshot_log
    assert md5.refs["v1"].ref_type == "tag"
    with pytest.raises(ValidationError, match="unknown snapshot: 99"):
        apply(md, SetSnapshotRef("dev", 99))
    with pytest.raises(ValidationError, match="branch"):
        apply(md, SetSnapshotRef("main", 1, "tag"))


def test_intermediate_snapshots_are_not_logged() -> None:
    md = apply(
        base(),
        AddSnapshot(snap(1, 1, ts=3000)),
        SetSnapshotRef("main", 1),
        AddSnapshot(snap(2, 2, parent=1, ts=3100)),
        SetSnapshotRef("main", 2),
    )
    assert md.snapshot_log == (SnapshotLogEntry(3100, 2),)
    assert md.current_snapshot_id == 2


def test_remove_snapshots_drops_refs_stats_and_old_log() -> None:
    md = with_snapshots(base(), 1, 2, 3)
    md = apply(
        md,
        SetSnapshotRef("old", 1, "tag"),
        SetStatistics(StatisticsFile(1, "s1", 1, 1)),
        SetStatistics(StatisticsFile(3, "s3", 1, 1)),
        SetPartitionStatistics(PartitionStatisticsFile(1, "p1", 1)),
    )
    out = apply(md, RemoveSnapshots((2,)))
    assert [s.snapshot_id for s in out.snapshots] == [1, 3]
    # history up to the removed snapshot's entry is dropped
    assert [e.snapshot_id for e in out.snapshot_log] == [3]
    out = apply(md, RemoveSnapshots((1,)))
    assert "old" not in out.refs
    assert [s.snapshot_id for s in out.statistics] == [3]
    assert out.partition_statistics == ()
    out = apply(md, RemoveSnapshots((3,)))
    assert out.current_snapshot_id is None and "main" not in out.refs
    assert apply(md, RemoveSnapshots((77,))) is md


def test_remove_snapshot_ref() -> None:
    md = apply(with_snapshots(base(), 1), SetSnapshotRef("dev", 1))
    out = apply(md, RemoveSnapshotRef("dev"))
    assert "dev" not in out.refs and out.current_snapshot_id == 1
    out = apply(md, RemoveSnapshotRef("main"))
    assert out.current_snapshot_id is None and out.to_json()["current-snapshot-id"] == -1
    assert apply(md, RemoveSnapshotRef("nope")) is md


def test_location_and_properties() -> None:
    md = apply(
        base(),
        SetLocation("s3://new"),
        SetProperties({"a": "1", "b": "2"}),
        RemoveProperties(("a",)),
    )
    assert md.location == "s3://new" and md.properties == {**CREATED, "b": "2"}
    assert md.last_updated_ms == 5000


def test_statistics_updates() -> None:
    md = with_snapshots(base(), 1)
    first = StatisticsFile(1, "a.puffin", 10, 2)
    second = StatisticsFile(1, "b.puffin", 11, 3)
    out = apply(md, SetStatistics(first), SetStatistics(second))
    assert out.statistics == (second,)  # one statistics file per snapshot
    assert apply(out, RemoveStatistics(1)).statistics == ()
    assert apply(out, RemoveStatistics(5)) is out
    with pytest.raises(ValidationError, match="does not match"):
        apply(md, SetStatistics(first, snapshot_id=2))
    with pytest.raises(ValidationError, match="unknown snapshot: 8"):
        apply(md, SetStatistics(StatisticsFile(8, "c.puffin", 1, 1)))
    with pytest.raises(ValidationError, match="unknown snapshot: 8"):
        apply(md, SetPartitionStatistics(PartitionStatisticsFile(8, "p", 1)))
    p1, p2 = PartitionStatisticsFile(1, "p", 1), PartitionStatisticsFile(1, "q", 2)
    out = apply(md, SetPartitionStatistics(p1), SetPartitionStatistics(p2))
    assert out.partition_statistics == (p2,)
    assert apply(out, RemovePartitionStatistics(1)).partition_statistics == ()


def test_encryption_keys() -> None:
    k1, k2 = EncryptedKey("k1", "AA=="), EncryptedKey("k2", "BB==", "k1")
    md = apply(base(3), AddEncryptionKey(k1), AddEncryptionKey(k2))
    assert md.encryption_keys == (k1, k2)
    k1b = EncryptedKey("k1", "CC==")
    assert apply(md, AddEncryptionKey(k1b)).encryption_keys == (k2, k1b)
    assert apply(md, RemoveEncryptionKey("k1")).encryption_keys == (k2,)
    assert TableMetadata.parse(md.dumps()) == md


def test_metadata_log_append_and_trim() -> None:
    md = base()
    md = apply(
        md,
        SetProperties({"write.metadata.previous-versions-max": "2"}),
        metadata_location="m0.json",
    )
    assert [e.metadata_file for e in md.metadata_log] == ["m0.json"]
    assert md.metadata_log[0].timestamp_ms == 1000  # the base's last-updated-ms
    md = apply(md, SetProperties({"x": "1"}), metadata_location="m1.json", now_ms=6000)
    md = apply(md, SetProperties({"x": "2"}), metadata_location="m2.json", now_ms=7000)
    assert [e.metadata_file for e in md.metadata_log] == ["m1.json", "m2.json"]
    assert [e.timestamp_ms for e in md.metadata_log] == [5000, 6000]
    md = apply(
        md,
        SetProperties({"write.metadata.previous-versions-max": "0"}),
        metadata_location="m3.json",
    )
    assert [e.metadata_file for e in md.metadata_log] == ["m3.json"]  # at least one is kept


def test_metadata_log_default_keeps_100() -> None:
    md = base()
    for i in range(105):
        md = apply(md, SetProperties({"i": str(i)}), metadata_location=f"m{i}.json")
    assert len(md.metadata_log) == 100
    assert md.metadata_log[-1].metadata_file == "m104.json"
    assert md.metadata_log[0].metadata_file == "m5.json"


def test_updates_apply_from_wire_form() -> None:
    md = base()
    wire = [
        u.to_json()
        for u in (AddSchema(Schema(NestedField(3, "z", LongType()))), SetCurrentSchema(-1))
    ]
    out = apply_updates(md, [update_from_json(w) for w in wire], now_ms=1)
    assert out.current_schema_id == 1 and out.last_column_id == 3


# ----------------------------------------------------------------------------- random sequences

_ids = st.integers(min_value=1, max_value=6)


@st.composite
def _update(draw: st.DrawFn) -> Any:
    kind = draw(st.integers(0, 12))
    if kind == 0:
        n = draw(st.integers(1, 3))
        start = draw(st.integers(1, 12))
        fields = [NestedField(start + i, f"c{start + i}", LongType()) for i in range(n)]
        return AddSchema(Schema(*fields))
    if kind == 1:
        return SetCurrentSchema(draw(st.sampled_from([-1, 0, 1, 2])))
    if kind == 2:
        return ("spec", draw(st.integers(1000, 1010)))
    if kind == 3:
        return SetDefaultSpec(draw(st.sampled_from([-1, 0, 1, 2])))
    if kind == 4:
        return ("snapshot", draw(_ids), draw(st.booleans()))
    if kind == 5:
        return ("ref", draw(st.sampled_from(["main", "dev", "tag"])), draw(_ids))
    if kind == 6:
        return RemoveSnapshots(tuple(draw(st.lists(_ids, max_size=2))))
    if kind == 7:
        return RemoveSnapshotRef(draw(st.sampled_from(["main", "dev", "tag"])))
    if kind == 8:
        return SetProperties({"write.metadata.previous-versions-max": str(draw(st.integers(1, 4)))})
    if kind == 9:
        return AddSortOrder(SortOrder(SortField(1)))
    if kind == 10:
        return UpgradeFormatVersion(draw(st.integers(2, 3)))
    if kind == 11:
        return RemoveSchemas((draw(st.integers(0, 2)),))
    return ("stats", draw(_ids))


def _concrete(md: TableMetadata, item: Any) -> list[TableUpdate]:
    """Turns a drawn item into updates that depend on the current metadata."""
    if isinstance(item, TableUpdate):
        return [item]
    if item[0] == "snapshot":
        add = _add_snapshot(md, item[1])
        return [add, SetSnapshotRef("main", add.snapshot.snapshot_id)] if item[2] else [add]
    return [_one(md, item)]


def _add_snapshot(md: TableMetadata, n: int) -> AddSnapshot:
    parent = md.current_snapshot_id
    seq = md.last_sequence_number + 1 if md.format_version >= 2 else 0
    sid = n * 1000 + len(md.snapshots) + len(md.metadata_log)
    ts = md.last_updated_ms + 1
    if md.format_version >= 3:
        return AddSnapshot(snap(sid, seq, parent, ts=ts, first_row_id=md.next_row_id, added_rows=n))
    return AddSnapshot(snap(sid, seq, parent, ts=ts))


def _one(md: TableMetadata, item: Any) -> TableUpdate:
    if item[0] == "spec":
        return AddPartitionSpec(PartitionSpec(identity(1, item[1], f"p{item[1]}")))
    if item[0] == "ref":
        ids = [s.snapshot_id for s in md.snapshots]
        sid = ids[item[2] % len(ids)] if ids else item[2]
        return SetSnapshotRef(item[1], sid, "tag" if item[1] == "tag" else "branch")
    ids = [s.snapshot_id for s in md.snapshots]
    sid = ids[item[1] % len(ids)] if ids else item[1]
    return SetStatistics(StatisticsFile(sid, f"s{sid}.puffin", 10, 2))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, 3),
    st.lists(st.lists(_update(), min_size=1, max_size=3), min_size=1, max_size=8),
)
def test_random_update_sequences_keep_invariants(version: int, batches: list[list[Any]]) -> None:
    md = base(version)
    now = 10_000
    for n, batch in enumerate(batches):
        prev = md
        updates: list[TableUpdate] = []
        try:
            for item in batch:
                updates.extend(_concrete(md, item))
            now += 1000
            md = apply_updates(md, updates, f"m{n}.json", now_ms=now)
        except (ValidationError, UnsupportedFeatureError, CommitFailedError) as e:
            event(f"rejected: {type(e).__name__}")
            md = prev
            continue
        event("applied")
        if md.current_snapshot_id is not None:
            event("has current snapshot")
        if md.format_version == 3 and md.snapshots:
            event("v3 with snapshots")
        # ids only grow
        assert md.last_column_id >= prev.last_column_id
        assert md.last_column_id >= max(s.highest_field_id for s in md.schemas)
        assert md.last_partition_id >= prev.last_partition_id
        assert md.last_partition_id >= max(s.last_assigned_field_id for s in md.partition_specs)
        assert md.last_sequence_number >= prev.last_sequence_number
        assert md.format_version >= prev.format_version
        if md.format_version >= 3:
            assert md.next_row_id is not None
            assert md.next_row_id >= (prev.next_row_id or 0)
            for s in md.snapshots:
                if s.first_row_id is not None and s.added_rows is not None:
                    assert s.first_row_id + s.added_rows <= md.next_row_id
        # references and the current snapshot agree
        live = {s.snapshot_id for s in md.snapshots}
        assert all(r.snapshot_id in live for r in md.refs.values())
        if md.current_snapshot_id is None:
            assert "main" not in md.refs
        else:
            assert md.refs["main"].snapshot_id == md.current_snapshot_id
        assert all(st_.snapshot_id in live for st_ in md.statistics)
        # logs stay consistent
        assert all(e.snapshot_id in live for e in md.snapshot_log)
        if md.snapshot_log and md.current_snapshot_id is not None:
            assert md.snapshot_log[-1].snapshot_id in live
        limit = max(1, int(md.properties.get("write.metadata.previous-versions-max", "100")))
        assert 1 <= len(md.metadata_log) <= limit
        assert md.metadata_log[-1].metadata_file == f"m{n}.json"
        # the written form reads back identically
        assert TableMetadata.parse(md.dumps()) == md


# ----------------------------------------------------------------------------- PyIceberg oracle


def _pyiceberg_apply(md: TableMetadata, updates: list[TableUpdate], location: str) -> TableMetadata:
    """The same updates applied by PyIceberg 0.12 (from their REST wire form), read back."""
    import json

    from pydantic import TypeAdapter
    from pyiceberg.table.metadata import TableMetadataUtil
    from pyiceberg.table.update import TableUpdate as PyTableUpdate
    from pyiceberg.table.update import update_table_metadata

    adapter: Any = TypeAdapter(PyTableUpdate)
    theirs = update_table_metadata(
        TableMetadataUtil.parse_raw(md.dumps()),
        tuple(adapter.validate_python(u.to_json()) for u in updates),
        metadata_location=location,
    )
    return TableMetadata.parse(json.dumps(json.loads(theirs.model_dump_json(by_alias=True))))


def _dangling_parents_cleared(md: TableMetadata) -> TableMetadata:
    """PyIceberg clears the parent id of a snapshot whose parent was removed; Java (and icefloe)
    keep snapshots unchanged. Compare with such parent ids cleared on both sides."""
    from dataclasses import replace

    live = {s.snapshot_id for s in md.snapshots}
    return replace(
        md,
        snapshots=tuple(
            s if s.parent_snapshot_id in live else replace(s, parent_snapshot_id=None)
            for s in md.snapshots
        ),
    )


def test_apply_updates_agrees_with_pyiceberg() -> None:
    """Ids already assigned by the client (PyIceberg does not reassign them) and no intermediate
    snapshots (Java, and so icefloe, leaves those out of the snapshot log; PyIceberg logs them)."""
    from dataclasses import replace

    md = base(2)
    wider = Schema(*SCHEMA.fields, NestedField(3, "z", LongType()), schema_id=1)
    batches: list[list[TableUpdate]] = [
        [
            AddSchema(wider),
            SetCurrentSchema(-1),
            AddPartitionSpec(PartitionSpec(identity(1, 1000, "id"), spec_id=1)),
            SetDefaultSpec(-1),
            AddSortOrder(SortOrder(SortField(3))),
            SetDefaultSortOrder(-1),
            AddSnapshot(snap(1, 1, ts=3000)),
            SetSnapshotRef("main", 1),
            SetSnapshotRef("dev", 1, max_ref_age_ms=10),
            SetProperties({"write.metadata.previous-versions-max": "2", "a": "b"}),
        ],
        [
            AddSnapshot(snap(2, 2, parent=1, ts=3100)),
            SetSnapshotRef("main", 2),
            SetStatistics(StatisticsFile(2, "s.puffin", 10, 2)),
            SetPartitionStatistics(PartitionStatisticsFile(2, "p.parquet", 5)),
            RemoveProperties(("a",)),
            SetLocation("s3://b/moved"),
        ],
        [
            RemoveSnapshotRef("dev"),
            AddSnapshot(snap(3, 3, parent=2, ts=3200)),
            SetSnapshotRef("main", 3),
        ],
        [RemoveStatistics(2), RemovePartitionStatistics(2)],
        [RemoveSnapshots((1,))],
        [SetProperties({"b": "c"})],
    ]
    for i, updates in enumerate(batches):
        location = f"s3://b/t/metadata/{i:05d}.metadata.json"
        ours = apply_updates(md, updates, location, now_ms=md.last_updated_ms + 1)
        theirs = _pyiceberg_apply(md, updates, location)
        # last-updated-ms falls back to the wall clock in PyIceberg, and PyIceberg clears the
        # parent id of a snapshot whose parent was removed (Java keeps snapshots unchanged)
        # last-updated-ms falls back to the wall clock in PyIceberg
        assert _dangling_parents_cleared(
            replace(theirs, last_updated_ms=ours.last_updated_ms)
        ) == _dangling_parents_cleared(ours), i
        md = ours
    assert [e.metadata_file[-19:] for e in md.metadata_log] == [
        "00004.metadata.json",
        "00005.metadata.json",
    ]  # trimmed to write.metadata.previous-versions-max = 2


# The body key of each one-field update, as the REST catalog's OpenAPI spec names it.
REST_KEYS = {
    "assign-uuid": "uuid",
    "upgrade-format-version": "format-version",
    "set-current-schema": "schema-id",
    "add-spec": "spec",
    "set-default-spec": "spec-id",
    "add-sort-order": "sort-order",
    "set-default-sort-order": "sort-order-id",
    "add-snapshot": "snapshot",
    "remove-snapshot-ref": "ref-name",
    "set-location": "location",
    "remove-statistics": "snapshot-id",
    "set-partition-statistics": "partition-statistics",
    "remove-partition-statistics": "snapshot-id",
    "add-encryption-key": "encryption-key",
    "remove-encryption-key": "key-id",
}


@pytest.mark.parametrize(
    "update", [u for u in ALL_UPDATES if u.action in REST_KEYS], ids=lambda u: u.action
)
def test_one_field_updates_use_the_rest_key(update: TableUpdate) -> None:
    assert set(update.to_json()) == {"action", REST_KEYS[update.action]}
    assert {u.action for u in ALL_UPDATES} >= set(REST_KEYS)
