"""Table metadata JSON v1-v3 against the Java and Rust reference golden files."""

from __future__ import annotations

import copy
import dataclasses
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.exceptions import (
    IcebergError,
    NoSuchSnapshotError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.metadata import (
    MAIN_BRANCH,
    EncryptedKey,
    MetadataLogEntry,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    Summary,
    SummaryKeys,
    TableMetadata,
    is_gzip_metadata_path,
    new_table_metadata,
    update_snapshot_totals,
)
from icefloe.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.sorting import UNSORTED_SORT_ORDER, SortDirection, SortField, SortOrder
from icefloe.transforms import parse_transform
from icefloe.types import (
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)
from support.testdata import TESTDATA

JAVA = TESTDATA / "iceberg-java" / "metadata"
RUST = TESTDATA / "iceberg-rust" / "table_metadata"

JAVA_VALID = [
    "TableMetadataV1Valid.json",
    "TableMetadataV2Valid.json",
    "TableMetadataV2ValidMinimal.json",
    "TableMetadataV3ValidMinimal.json",
    "TableMetadataStatisticsFiles.json",
    "TableMetadataPartitionStatisticsFiles.json",
    "TableMetadataV1MissingSchemaType.json",
]
RUST_VALID = [
    "TableMetadataV1Compat.json",
    "TableMetadataV1PartitionSpecsWithoutDefaultId.json",
    "TableMetadataV1SchemasWithoutCurrentId.json",
    "TableMetadataV3ValidEncryption.json",
]
VALID = [JAVA / f for f in JAVA_VALID] + [RUST / f for f in RUST_VALID]

# (file, expected error type, text the message must contain: the field the reference names)
MUST_FAIL = [
    (JAVA / "TableMetadataUnsupportedVersion.json", UnsupportedFeatureError, "unsupported version"),
    (
        JAVA / "TableMetadataV2MissingPartitionSpecs.json",
        ValidationError,
        "partition-specs must exist in format v2",
    ),
    (
        JAVA / "TableMetadataV2MissingLastPartitionId.json",
        ValidationError,
        "last-partition-id must exist in format v2",
    ),
    (
        JAVA / "TableMetadataV2MissingSortOrder.json",
        ValidationError,
        "sort-orders must exist in format v2",
    ),
    (
        JAVA / "TableMetadataV2CurrentSchemaNotFound.json",
        ValidationError,
        "Cannot find schema with current-schema-id=2 from schemas",
    ),
    (
        JAVA / "TableMetadataV2MissingSchemas.json",
        ValidationError,
        "schemas must exist in format v2",
    ),
    (RUST / "TableMetadataV1NoValidSchema.json", ValidationError, "current-schema-id"),
]


def load(path: Path) -> TableMetadata:
    return TableMetadata.parse(path.read_bytes())


def raw(path: Path) -> dict[str, Any]:
    obj = json.loads(path.read_text())
    assert isinstance(obj, dict)
    return obj


def test_every_golden_file_is_classified() -> None:
    known = {p.name for p in VALID} | {p.name for p, _, _ in MUST_FAIL}
    on_disk = {p.name for p in JAVA.glob("TableMetadata*.json")} | {
        p.name for p in RUST.glob("TableMetadata*.json")
    }
    assert on_disk == known


def compact_model(md: TableMetadata) -> str:
    """The oracle of ``dumps()``: the whole model encoded in one go."""
    return json.dumps(md.to_json(), separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_file_round_trips(path: Path) -> None:
    md = load(path)
    assert md.dumps() == compact_model(md)
    assert md.dumps() == compact_model(md)  # again, from the kept texts
    again = TableMetadata.parse(md.dumps())
    assert again == md
    assert again.to_json() == md.to_json()
    pretty = TableMetadata.parse(md.dumps(indent=2))
    assert pretty == md


@pytest.mark.parametrize("path,error,message", MUST_FAIL, ids=lambda p: getattr(p, "name", ""))
def test_must_fail_file(path: Path, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace("[", r"\[")):
        load(path)


# Files the Java writer produced (TableMetadataV3ValidMinimal.json was edited by hand: its
# `next-row-id` sits before `current-schema-id`, where no writer puts it).
JAVA_WRITTEN = [f for f in JAVA_VALID if f != "TableMetadataV3ValidMinimal.json"]


@pytest.mark.parametrize("name", JAVA_WRITTEN)
def test_key_order_matches_java_writer(name: str) -> None:
    golden = list(raw(JAVA / name).keys())
    ours = list(json.loads(load(JAVA / name).dumps()).keys())
    # Every key the reference wrote is written, in the same relative order; keys the golden
    # file leaves out (refs, statistics, ...) are ones the current Java writer adds.
    assert set(golden) <= set(ours)
    assert [k for k in ours if k in golden] == golden


def test_full_java_key_order_v1_v2_v3() -> None:
    v1 = list(load(JAVA / "TableMetadataV1Valid.json").to_json())
    assert v1 == [
        "format-version",
        "table-uuid",
        "location",
        "last-updated-ms",
        "last-column-id",
        "schema",
        "current-schema-id",
        "schemas",
        "partition-spec",
        "default-spec-id",
        "partition-specs",
        "last-partition-id",
        "default-sort-order-id",
        "sort-orders",
        "properties",
        "current-snapshot-id",
        "refs",
        "snapshots",
        "statistics",
        "partition-statistics",
        "snapshot-log",
        "metadata-log",
    ]
    v3 = list(load(RUST / "TableMetadataV3ValidEncryption.json").to_json())
    assert v3 == [
        "format-version",
        "table-uuid",
        "location",
        "last-sequence-number",
        "last-updated-ms",
        "last-column-id",
        "current-schema-id",
        "schemas",
        "default-spec-id",
        "partition-specs",
        "last-partition-id",
        "default-sort-order-id",
        "sort-orders",
        "properties",
        "current-snapshot-id",
        "next-row-id",
        "refs",
        "encryption-keys",
        "snapshots",
        "statistics",
        "partition-statistics",
        "snapshot-log",
        "metadata-log",
    ]


def test_v2_valid_facts() -> None:
    md = load(JAVA / "TableMetadataV2Valid.json")
    assert md.format_version == 2
    assert md.table_uuid == "9c12d441-03fe-4693-9a96-a0705ddf69c1"
    assert md.last_sequence_number == 34
    assert md.current_snapshot_id == 3055729675574597004
    cur = md.current_snapshot()
    assert cur is not None and cur.parent_snapshot_id == 3051729675574597004
    assert cur.sequence_number == 1 and cur.schema_id == 1
    assert cur.manifest_list == "s3://a/b/2.avro" and cur.operation == "append"
    first = md.snapshot_by_id(3051729675574597004)
    assert first is not None and first.sequence_number == 0 and first.parent_snapshot_id is None
    assert md.current_schema().identifier_field_ids == (1, 2)
    assert md.schema_by_id(0) is not None and md.schema_by_id(7) is None
    assert md.spec().fields[0].field_id == 1000 and md.last_partition_id == 1000
    assert md.sort_order().order_id == 3 and len(md.sort_order().fields) == 2
    # `refs` is absent: main is implied by current-snapshot-id
    assert md.refs == {MAIN_BRANCH: SnapshotRef(3055729675574597004, "branch")}
    assert md.snapshot_by_name("main") == cur
    assert md.snapshot_by_name("nope") is None
    assert [e.snapshot_id for e in md.snapshot_log] == [3051729675574597004, 3055729675574597004]
    with pytest.raises(NoSuchSnapshotError):
        md.snapshot(1)


def test_v1_valid_appendix_e_defaults() -> None:
    md = load(JAVA / "TableMetadataV1Valid.json")
    assert md.format_version == 1
    assert md.last_sequence_number == 0
    assert md.current_schema_id == 0 and len(md.schemas) == 1
    assert md.default_spec_id == 0
    assert md.spec().fields[0].field_id == 1000
    assert md.last_partition_id == 1000  # from the specs, as last-partition-id is absent
    assert md.sort_orders == (UNSORTED_SORT_ORDER,) and md.default_sort_order_id == 0
    assert md.current_snapshot_id is None and md.current_snapshot() is None
    assert md.refs == {}
    out = md.to_json()
    assert out["current-snapshot-id"] == -1
    assert out["schema"] == md.current_schema().to_json()
    assert out["partition-spec"] == md.spec().fields_json()
    assert "last-sequence-number" not in out


def test_v1_partition_spec_without_field_ids_counts_from_1000() -> None:
    obj = raw(JAVA / "TableMetadataV1Valid.json")
    obj["partition-spec"] = [
        {"name": "x", "transform": "identity", "source-id": 1},
        {"name": "y", "transform": "bucket[4]", "source-id": 2},
    ]
    md = TableMetadata.from_json(obj)
    assert [f.field_id for f in md.spec().fields] == [1000, 1001]
    assert md.last_partition_id == 1001


def test_v1_empty_partition_spec_last_partition_id_is_999() -> None:
    obj = raw(JAVA / "TableMetadataV1Valid.json")
    obj["partition-spec"] = []
    assert TableMetadata.from_json(obj).last_partition_id == 999


def test_v3_minimal_facts() -> None:
    md = load(JAVA / "TableMetadataV3ValidMinimal.json")
    assert md.format_version == 3 and md.next_row_id == 0
    assert md.last_sequence_number == 34 and md.last_column_id == 3
    x = md.current_schema().fields[0]
    assert x.initial_default == 1 and x.write_default == 1
    assert md.properties == {} and md.snapshots == ()
    out = md.to_json()
    assert out["current-snapshot-id"] is None  # v3 writes null, not -1
    keys = list(out)
    assert keys.index("next-row-id") == keys.index("current-snapshot-id") + 1


@pytest.mark.parametrize("value", [-1, None, "absent"])
def test_no_current_snapshot_spellings(value: Any) -> None:
    for name, version in (
        ("TableMetadataV2ValidMinimal.json", 2),
        ("TableMetadataV3ValidMinimal.json", 3),
    ):
        obj = raw(JAVA / name)
        if value == "absent":
            obj.pop("current-snapshot-id", None)
        else:
            obj["current-snapshot-id"] = value
        md = TableMetadata.from_json(obj)
        assert md.current_snapshot_id is None and md.refs == {}
        assert md.to_json()["current-snapshot-id"] == (-1 if version < 3 else None)


def test_statistics_files() -> None:
    md = load(JAVA / "TableMetadataStatisticsFiles.json")
    (st,) = md.statistics
    assert st.snapshot_id == 3055729675574597004
    assert st.statistics_path == "s3://a/b/stats.puffin"
    assert (st.file_size_in_bytes, st.file_footer_size_in_bytes) == (413, 42)
    (blob,) = st.blob_metadata
    assert (blob.type, blob.sequence_number, blob.fields) == ("ndv", 1, (1,))
    assert (
        md.to_json()["statistics"] == raw(JAVA / "TableMetadataStatisticsFiles.json")["statistics"]
    )


def test_partition_statistics_files() -> None:
    name = "TableMetadataPartitionStatisticsFiles.json"
    md = load(JAVA / name)
    (ps,) = md.partition_statistics
    assert (ps.snapshot_id, ps.file_size_in_bytes) == (3055729675574597004, 43)
    assert md.to_json()["partition-statistics"] == raw(JAVA / name)["partition-statistics"]


def test_v3_encryption_keys_and_key_id() -> None:
    name = "TableMetadataV3ValidEncryption.json"
    md = load(RUST / name)
    assert [k.key_id for k in md.encryption_keys] == [
        "5b29941b-b3b4-4d57-8758-a9d1bf340b39",
        "1fb95f04-7f98-4b1f-a08f-e810cfb907ff",
    ]
    assert md.encryption_keys[0].properties == {"KEY_TIMESTAMP": "1781172301703"}
    assert md.encryption_keys[1].encrypted_by_id == md.encryption_keys[0].key_id
    snap = md.current_snapshot()
    assert snap is not None and snap.key_id == "1fb95f04-7f98-4b1f-a08f-e810cfb907ff"
    assert md.encryption_key(snap.key_id) == md.encryption_keys[1]
    assert md.to_json()["encryption-keys"] == raw(RUST / name)["encryption-keys"]
    # the repr is a summary: no key material, no list of every snapshot
    shown = repr(md)
    assert md.encryption_keys[0].encrypted_key_metadata not in shown
    assert f"snapshots={len(md.snapshots)}" in shown and repr(md.location) in shown
    assert f"current_snapshot_id={md.current_snapshot_id}" in shown and len(shown) < 400
    # the spec table's spelling of the wrapping key id is read too
    alt = EncryptedKey.from_json(
        {"key-id": "k", "encrypted-key-metadata": "AA==", "encrypted-by-id-metadata": "m"}
    )
    assert alt.encrypted_by_id == "m"


def test_rust_v1_compat_variants() -> None:
    md = load(RUST / "TableMetadataV1Compat.json")
    assert md.format_version == 1 and md.current_snapshot_id == 917896971991367610
    assert md.last_partition_id == 999 and md.spec().fields == ()
    assert md.properties["write.metadata.previous-versions-max"] == "20"
    # v1: `partition-specs` without `default-spec-id` takes the highest spec id
    md = load(RUST / "TableMetadataV1PartitionSpecsWithoutDefaultId.json")
    assert md.default_spec_id == 2 and md.last_partition_id == 1001
    # v1: `schemas` without `current-schema-id` takes the id of `schema`
    md = load(RUST / "TableMetadataV1SchemasWithoutCurrentId.json")
    assert md.current_schema_id == 0


def test_v1_schema_without_type_is_accepted() -> None:
    md = load(JAVA / "TableMetadataV1MissingSchemaType.json")
    assert [f.name for f in md.current_schema().fields] == ["x", "y", "z"]


def test_v1_legacy_schema_without_an_id_names_the_current_schema_by_its_fields() -> None:
    """v1 `schemas` and a legacy `schema` without a schema-id (read as 0), no
    current-schema-id: schema 0 was taken as current though `schema` held schema 1's fields
    (a column vanished from reads, and a commit wrote the change into the metadata)."""

    def field(i: int, name: str, t: str) -> dict[str, Any]:
        return {"id": i, "name": name, "required": False, "type": t}

    s0 = {"type": "struct", "schema-id": 0, "fields": [field(1, "id", "long")]}
    both = [field(1, "id", "long"), field(2, "n", "int")]
    s1 = {"type": "struct", "schema-id": 1, "fields": both}
    doc = {
        "format-version": 1,
        "location": "/tmp/x",
        "last-updated-ms": 1,
        "last-column-id": 2,
        "schema": {"type": "struct", "fields": s1["fields"]},
        "schemas": [s0, s1],
        "partition-spec": [],
    }
    md = TableMetadata.parse(json.dumps(doc))
    assert md.current_schema_id == 1
    assert [f.name for f in md.current_schema().fields] == ["id", "n"]
    doc["schema"] = {"type": "struct", "fields": [field(3, "other", "int")]}
    with pytest.raises(ValidationError, match="'schema' is none of 'schemas'"):
        TableMetadata.parse(json.dumps(doc))


def test_gzip_metadata() -> None:
    data = (JAVA / "TableMetadataV2Valid.json").read_bytes()
    assert TableMetadata.parse(gzip.compress(data)) == TableMetadata.parse(data)
    md = load(JAVA / "TableMetadataV2Valid.json")
    assert TableMetadata.parse(md.to_bytes(compress=True)) == md
    assert md.to_bytes(compress=True)[:2] == b"\x1f\x8b"
    assert is_gzip_metadata_path("s3://b/t/metadata/00001-abc.gz.metadata.json")
    assert is_gzip_metadata_path("s3://b/t/metadata/00001-abc.metadata.json.gz")
    assert not is_gzip_metadata_path("s3://b/t/metadata/00001-abc.metadata.json")
    with pytest.raises(ValidationError, match="gzip"):
        TableMetadata.parse(b"\x1f\x8b\x08\x00garbage")


def test_unknown_fields_are_ignored() -> None:
    obj = raw(JAVA / "TableMetadataV2Valid.json")
    obj["some-future-field"] = {"x": [1, 2]}
    obj["snapshots"][0]["future-snapshot-field"] = 1
    assert TableMetadata.from_json(obj) == load(JAVA / "TableMetadataV2Valid.json")


def _mutated(name: str, **changes: Any) -> dict[str, Any]:
    obj = copy.deepcopy(raw(JAVA / name))
    for k, v in changes.items():
        key = k.replace("_", "-")
        if v is _DROP:
            obj.pop(key, None)
        else:
            obj[key] = v
    return obj


_DROP = object()


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"format_version": 4}, "unsupported version 4"),
        ({"format_version": 0}, "format-version"),
        ({"format_version": "2"}, "format-version"),
        ({"table_uuid": _DROP}, "table-uuid"),
        ({"location": _DROP}, "location"),
        ({"last_sequence_number": _DROP}, "last-sequence-number"),
        ({"last_updated_ms": _DROP}, "last-updated-ms"),
        ({"last_column_id": "3"}, "last-column-id"),
        ({"last_column_id": True}, "last-column-id"),
        ({"current_schema_id": _DROP}, "current-schema-id"),
        ({"default_spec_id": _DROP}, "default-spec-id"),
        ({"default_spec_id": 5}, "default-spec-id=5"),
        ({"default_sort_order_id": _DROP}, "default-sort-order-id"),
        ({"default_sort_order_id": 9}, "default-sort-order-id=9"),
        ({"properties": {"a": 1}}, "properties"),
        ({"current_snapshot_id": 12345}, "current-snapshot-id 12345"),
        ({"snapshots": {}}, "snapshots"),
        ({"refs": {"main": {"snapshot-id": 3051729675574597004, "type": "branch"}}}, "main branch"),
        ({"refs": {"b": {"snapshot-id": 99, "type": "branch"}}}, "ref 'b'"),
        (
            {
                "refs": {
                    "t": {
                        "snapshot-id": 3051729675574597004,
                        "type": "tag",
                        "min-snapshots-to-keep": 2,
                    }
                }
            },
            "min-snapshots-to-keep",
        ),
        ({"refs": {"b": {"snapshot-id": 3051729675574597004, "type": "leaf"}}}, "ref type"),
        ({"last_sequence_number": 0}, "last-sequence-number"),
        ({"snapshot_log": [{"snapshot-id": 1}]}, "timestamp-ms"),
        ({"metadata_log": [{"timestamp-ms": 1}]}, "metadata-file"),
        ({"last_updated_ms": 1555100955770 - 60_001}, "before the last snapshot-log entry"),
        (
            {
                "metadata_log": [
                    {"timestamp-ms": 5000000, "metadata-file": "b"},
                    {"timestamp-ms": 1, "metadata-file": "a"},
                ]
            },
            "metadata-log entries are not sorted",
        ),
    ],
)
def test_invalid_fields_name_the_field(changes: dict[str, Any], message: str) -> None:
    obj = _mutated("TableMetadataV2Valid.json", **changes)
    error = UnsupportedFeatureError if "unsupported" in message else ValidationError
    with pytest.raises(error, match=message):
        TableMetadata.from_json(obj)


def test_v3_requires_next_row_id() -> None:
    obj = _mutated("TableMetadataV3ValidMinimal.json", next_row_id=_DROP)
    with pytest.raises(ValidationError, match="next-row-id"):
        TableMetadata.from_json(obj)


def test_next_row_id_must_be_above_every_assigned_row_id() -> None:
    """The spec's ``next-row-id`` is higher than every assigned row id: metadata whose
    snapshot assigned ids at or past it would make the next writer hand them out again."""
    obj = _mutated("TableMetadataV2Valid.json", format_version=3, next_row_id=15)
    for snap in obj["snapshots"]:
        snap.update({"first-row-id": 0, "added-rows": 0})
    snap = obj["snapshots"][-1]
    snap.update({"first-row-id": 10, "added-rows": 5})
    assert TableMetadata.from_json(obj).next_row_id == 15
    obj["next-row-id"] = 14
    with pytest.raises(
        ValidationError, match=r"assigns row ids up to 14, at or beyond next-row-id 14"
    ):
        TableMetadata.from_json(obj)


def test_v2_snapshot_requires_manifest_list() -> None:
    obj = raw(JAVA / "TableMetadataV2Valid.json")
    del obj["snapshots"][0]["manifest-list"]
    with pytest.raises(ValidationError, match="manifest-list"):
        TableMetadata.from_json(obj)


def test_v1_snapshot_with_manifests_list() -> None:
    obj = raw(JAVA / "TableMetadataV1Valid.json")
    obj["snapshots"] = [{"snapshot-id": 5, "timestamp-ms": 10, "manifests": ["a.avro", "b.avro"]}]
    obj["current-snapshot-id"] = 5
    md = TableMetadata.from_json(obj)
    snap = md.current_snapshot()
    assert (
        snap is not None and snap.manifests == ("a.avro", "b.avro") and snap.manifest_list is None
    )
    assert snap.sequence_number == 0 and snap.summary is None
    assert "sequence-number" not in md.to_json()["snapshots"][0]
    assert TableMetadata.parse(md.dumps()) == md


def test_non_object_and_bad_json() -> None:
    with pytest.raises(ValidationError, match="non-object"):
        TableMetadata.from_json([1, 2])
    with pytest.raises(ValidationError, match="not valid JSON"):
        TableMetadata.parse("{")


def test_snapshot_json_fields_v3() -> None:
    s = Snapshot(
        snapshot_id=7,
        timestamp_ms=100,
        manifest_list="m.avro",
        sequence_number=3,
        parent_snapshot_id=6,
        summary=Summary("append", {"added-records": "5"}),
        schema_id=1,
        first_row_id=10,
        added_rows=5,
        key_id="k1",
    )
    out = s.to_json(3)
    assert list(out) == [
        "sequence-number",
        "snapshot-id",
        "parent-snapshot-id",
        "timestamp-ms",
        "summary",
        "manifest-list",
        "schema-id",
        "first-row-id",
        "added-rows",
        "key-id",
    ]
    assert out["summary"] == {"operation": "append", "added-records": "5"}
    assert Snapshot.from_json(out, 3) == s


def test_summary_totals() -> None:
    prev = Summary("append", {"total-records": "10", "total-data-files": "2"})
    new = Summary(
        "overwrite", {"added-records": "5", "deleted-records": "3", "added-data-files": "1"}
    )
    out = update_snapshot_totals(new, prev)
    assert out.get_int(SummaryKeys.TOTAL_RECORDS) == 12
    assert out.get_int(SummaryKeys.TOTAL_DATA_FILES) == 3
    assert out.get(SummaryKeys.TOTAL_FILES_SIZE) is None  # unknown before, stays unknown
    first = update_snapshot_totals(Summary("append", {"added-records": "4"}), None)
    assert first.get_int(SummaryKeys.TOTAL_RECORDS) == 4
    assert first.get_int(SummaryKeys.TOTAL_DELETE_FILES) == 0
    with pytest.raises(ValidationError, match="added-records"):
        Summary("append", {"added-records": "x"}).get_int("added-records")


def test_snapshot_ref_rules() -> None:
    assert SnapshotRef.from_json({"snapshot-id": 1, "type": "bRaNch"}).ref_type == "branch"
    r = SnapshotRef(1, "branch", 2, 3, 4)
    assert r.to_json() == {
        "snapshot-id": 1,
        "type": "branch",
        "min-snapshots-to-keep": 2,
        "max-snapshot-age-ms": 3,
        "max-ref-age-ms": 4,
    }
    assert SnapshotRef.from_json(r.to_json()) == r
    with pytest.raises(ValidationError, match="min-snapshots-to-keep"):
        SnapshotRef(1, "branch", min_snapshots_to_keep=0)
    with pytest.raises(ValidationError, match="max-snapshot-age-ms"):
        SnapshotRef(1, "tag", max_snapshot_age_ms=5)
    assert SnapshotRef.tag(1, max_ref_age_ms=5).max_ref_age_ms == 5


# ------------------------------------------------------------------------- new table metadata


def test_new_table_metadata_assigns_fresh_ids() -> None:
    schema = Schema(
        NestedField(10, "id", LongType(), required=True),
        NestedField(20, "tags", ListType(21, StringType(), True)),
        NestedField(
            30,
            "attrs",
            MapType(31, StringType(), 32, StructType(NestedField(33, "v", IntegerType()))),
        ),
        NestedField(40, "data", StringType()),
        schema_id=5,
        identifier_field_ids=[10],
    )
    spec = PartitionSpec(
        PartitionField(40, 1005, parse_transform("truncate[4]"), "data_trunc"), spec_id=3
    )
    order = SortOrder(SortField(10, direction=SortDirection.DESC), order_id=7)
    md = new_table_metadata(
        schema, spec, order, "s3://b/t/", {"format-version": "3", "owner": "me"}, now_ms=5
    )
    s = md.current_schema()
    # top-level fields first (1-4), then children in order: list element, map key and value,
    # then the value struct's field
    assert [f.field_id for f in s.fields] == [1, 2, 3, 4]
    tags, attrs = s.fields[1].field_type, s.fields[2].field_type
    assert isinstance(tags, ListType) and tags.element_id == 5
    assert isinstance(attrs, MapType) and (attrs.key_id, attrs.value_id) == (6, 7)
    assert attrs.value_type.fields[0].field_id == 8  # type: ignore[attr-defined]
    assert s.schema_id == 0 and s.identifier_field_ids == (1,)
    assert md.last_column_id == 8
    (pf,) = md.spec().fields
    assert (md.spec().spec_id, pf.source_id, pf.field_id) == (0, 4, 1000)
    assert md.last_partition_id == 1000
    assert md.sort_order().order_id == 1 and md.sort_order().fields[0].source_id == 1
    assert md.format_version == 3 and md.next_row_id == 0
    # format-version is reserved (not stored); zstd is stored for every new table, as Java does
    assert md.properties == {"write.parquet.compression-codec": "zstd", "owner": "me"}
    assert md.location == "s3://b/t" and md.last_updated_ms == 5
    assert md.to_json()["current-snapshot-id"] is None
    assert TableMetadata.parse(md.dumps()) == md


def test_new_table_metadata_unpartitioned_unsorted_v2() -> None:
    schema = Schema(NestedField(1, "a", LongType()))
    md = new_table_metadata(schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "mem://t")
    assert md.format_version == 2 and md.last_partition_id == 999
    assert md.default_sort_order_id == 0 and md.next_row_id is None
    assert md.to_json()["current-snapshot-id"] == -1
    with pytest.raises(ValidationError, match="v4"):
        new_table_metadata(schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "m", None, 4)
    bad_spec = PartitionSpec(PartitionField(9, 1000, parse_transform("identity"), "x"))
    with pytest.raises(ValidationError, match="9"):
        new_table_metadata(schema, bad_spec, UNSORTED_SORT_ORDER, "m")


def test_pyiceberg_reads_what_we_write() -> None:
    """PyIceberg (an independent implementation) parses our output to the same facts."""
    from pyiceberg.table.metadata import TableMetadataUtil

    for path in VALID:
        if path.name == "TableMetadataStatisticsFiles.json":
            continue  # PyIceberg only accepts two blob types; this file's blob type is "ndv"
        md = load(path)
        theirs = TableMetadataUtil.parse_raw(md.dumps())
        assert theirs.format_version == md.format_version, path.name
        assert theirs.current_snapshot_id == md.current_snapshot_id, path.name
        assert theirs.last_column_id == md.last_column_id, path.name
        assert theirs.last_partition_id == md.last_partition_id, path.name
        assert theirs.current_schema_id == md.current_schema_id, path.name
        assert theirs.default_spec_id == md.default_spec_id, path.name
        assert [s.snapshot_id for s in theirs.snapshots] == [s.snapshot_id for s in md.snapshots]
        assert set(theirs.refs) == set(md.refs), path.name


def test_ancestors_and_time_travel() -> None:
    md = load(JAVA / "TableMetadataV2Valid.json")
    first, second = 3051729675574597004, 3055729675574597004
    assert [s.snapshot_id for s in md.ancestors_of(second)] == [second, first]
    assert [s.snapshot_id for s in md.ancestors_of(first)] == [first]
    assert md.ancestors_of(42) == []
    # snapshot-log: first current at 1515100955770, second at 1555100955770
    assert md.snapshot_as_of(1515100955770).snapshot_id == first
    assert md.snapshot_as_of(1555100955769).snapshot_id == first
    assert md.snapshot_as_of(1555100955770).snapshot_id == second
    with pytest.raises(NoSuchSnapshotError, match="starts later"):
        md.snapshot_as_of(1515100955769)
    with pytest.raises(NoSuchSnapshotError, match="is empty"):
        load(JAVA / "TableMetadataV1Valid.json").snapshot_as_of(0)


def test_time_travel_to_an_expired_snapshot() -> None:
    obj = raw(JAVA / "TableMetadataV2Valid.json")
    obj["snapshots"] = obj["snapshots"][1:]  # the first snapshot expired, its log entry kept
    md = TableMetadata.from_json(obj)
    with pytest.raises(NoSuchSnapshotError, match="expired"):
        md.snapshot_as_of(1515100955770)
    assert [s.snapshot_id for s in md.ancestors_of(3055729675574597004)] == [3055729675574597004]


_JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.text(max_size=3),
    st.just([]),
    st.just({}),
    st.just([1]),
    st.just({"a": 1}),
)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(VALID),
    st.data(),
)
def test_corrupted_metadata_raises_only_typed_errors(path: Path, data: st.DataObject) -> None:
    """Any value replaced or removed anywhere gives a parsed model or a typed icefloe error,
    never a TypeError, KeyError or AttributeError."""
    obj = raw(path)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(obj)
        target = data.draw(st.sampled_from(paths))
        parent: Any = obj
        for key in target[:-1]:
            parent = parent[key]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[target[-1]]
        else:
            parent[target[-1]] = copy.deepcopy(data.draw(_JUNK))
    try:
        md = TableMetadata.from_json(obj)
    except IcebergError:
        return
    assert md.dumps() == compact_model(md)
    assert TableMetadata.parse(md.dumps()) == md


def test_kept_snapshot_texts_follow_the_format_version() -> None:
    """The same snapshot objects written by a v2 and then a v3 table: each version's text
    (``sequence-number`` from v2 on) is kept apart, and a new log entry is written."""
    v2 = load(JAVA / "TableMetadataV2Valid.json")
    assert v2.snapshots and v2.snapshot_log
    text_v2 = v2.dumps()
    for s in v2.snapshots:
        assert "sequence-number" not in json.loads(s.json_text(1))
        assert "sequence-number" in json.loads(s.json_text(2))
    v3 = dataclasses.replace(v2, format_version=3, next_row_id=0)
    assert v3.snapshots[0] is v2.snapshots[0]
    assert v3.dumps() == compact_model(v3)
    assert v2.dumps() == text_v2 == compact_model(v2)
    log = SnapshotLogEntry(v2.last_updated_ms, v2.snapshots[0].snapshot_id)
    longer = dataclasses.replace(
        v3, snapshot_log=(*v3.snapshot_log, log), metadata_log=(MetadataLogEntry(1, "m.json"),)
    )
    assert longer.dumps() == compact_model(longer)
    assert json.loads(longer.dumps())["snapshot-log"][-1] == log.to_json()


def test_deeply_nested_json_is_a_validation_error() -> None:
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    with pytest.raises(ValidationError, match="nested too deeply"):
        TableMetadata.parse(deep)


def test_the_uuid_of_a_metadata_file_from_its_first_bytes() -> None:
    """``parse_uuid(..., whole=False)`` answers from the keys before a file's first bytes end
    (plain or gzip), says when they do not settle it (cut inside a value, or before the key),
    and agrees with parsing the whole file."""
    from icefloe.metadata import TableMetadata

    doc = {"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1"}
    doc["snapshots"] = [{"snapshot-id": i} for i in range(2000)]  # type: ignore[assignment]
    raw = json.dumps(doc, indent=2).encode()
    uuid = doc["table-uuid"]
    assert TableMetadata.parse_uuid(raw) == (True, uuid)
    for data in (raw[:200], gzip.compress(raw)[:4000], raw):
        assert TableMetadata.parse_uuid(data, whole=False) == (True, uuid)
    cut = raw.index(b"9c12") + 4
    assert TableMetadata.parse_uuid(raw[:cut], whole=False) == (False, None)
    late = json.dumps({"snapshots": doc["snapshots"], "table-uuid": uuid}).encode()
    assert TableMetadata.parse_uuid(late[:16384], whole=False) == (False, None)
    assert TableMetadata.parse_uuid(late) == (True, uuid)
    assert TableMetadata.parse_uuid(b'{"format-version": 1}', whole=False) == (True, None)
    assert TableMetadata.parse_uuid(b"[1, 2]", whole=False) == (False, None)
