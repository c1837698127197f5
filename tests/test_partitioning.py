"""Partition specs: Appendix C JSON, v1 field-id convention, partition type, equivalence."""

from __future__ import annotations

import json
from typing import Any

import pytest

from icefloe.exceptions import ValidationError
from icefloe.partitioning import (
    PARTITION_FIELD_ID_START,
    UNPARTITIONED_PARTITION_SPEC,
    PartitionField,
    PartitionSpec,
    assign_partition_field_ids,
)
from icefloe.schema import Schema
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    IdentityTransform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
)
from icefloe.types import (
    BooleanType,
    DateType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
    UnknownType,
)
from support.testdata import TESTDATA

GOLDEN = sorted(
    [
        *(TESTDATA / "iceberg-java" / "metadata").glob("*.json"),
        *(TESTDATA / "iceberg-rust" / "table_metadata").glob("*.json"),
    ]
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "data", StringType()),
    NestedField(3, "ts", TimestamptzType()),
    NestedField(4, "s", StructType(NestedField(5, "n", IntegerType()))),
    NestedField(6, "l", ListType(7, IntegerType())),
    NestedField(8, "flag", BooleanType()),
)


def golden_specs() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in GOLDEN:
        meta = json.loads(path.read_text())
        for s in meta.get("partition-specs") or []:
            out.append((f"{path.name}:{s.get('spec-id')}", s))
    return out


def golden_bare_specs() -> list[tuple[str, list[Any]]]:
    out = []
    for path in GOLDEN:
        meta = json.loads(path.read_text())
        if isinstance(meta.get("partition-spec"), list):
            out.append((path.name, meta["partition-spec"]))
    return out


@pytest.mark.parametrize(
    ("name", "obj"), golden_specs(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_golden_specs_round_trip(name: str, obj: dict[str, Any]) -> None:
    spec = PartitionSpec.from_json(obj)
    out = spec.to_json()
    assert json.dumps(out) == json.dumps(obj) or out == obj | {"spec-id": obj["spec-id"]}
    assert out["fields"] == obj["fields"]
    assert PartitionSpec.from_json(out) == spec


@pytest.mark.parametrize(
    ("name", "obj"), golden_bare_specs(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_golden_bare_field_lists_round_trip(name: str, obj: list[Any]) -> None:
    spec = PartitionSpec.fields_from_json(obj)
    assert spec.fields_json() == obj
    assert spec.spec_id == 0


def test_reference_json_example() -> None:
    text = (
        '{"spec-id":0,"fields":[{"name":"data_bucket","transform":"bucket[16]",'
        '"source-id":2,"field-id":1000}]}'
    )
    spec = PartitionSpec.from_json(json.loads(text))
    assert spec.fields == (PartitionField(2, 1000, BucketTransform(16), "data_bucket"),)
    assert json.dumps(spec.to_json(), separators=(",", ":")) == text


def test_v1_field_ids_assigned_from_1000() -> None:
    spec = PartitionSpec.fields_from_json(
        [
            {"name": "a", "transform": "identity", "source-id": 1},
            {"name": "b", "transform": "bucket[4]", "source-id": 2},
            {"name": "c", "transform": "day", "source-id": 3},
        ]
    )
    assert [f.field_id for f in spec.fields] == [1000, 1001, 1002]
    assert spec.last_assigned_field_id == 1002
    # Mixed: explicit ids move the counter on.
    mixed = PartitionSpec.fields_from_json(
        [
            {"name": "a", "transform": "identity", "source-id": 1, "field-id": 1005},
            {"name": "b", "transform": "identity", "source-id": 2},
        ]
    )
    assert [f.field_id for f in mixed.fields] == [1005, 1006]


def test_multi_arg_source_ids() -> None:
    obj = {
        "spec-id": 3,
        "fields": [{"name": "z", "transform": "zorder", "source-ids": [1, 2], "field-id": 1000}],
    }
    spec = PartitionSpec.from_json(obj)
    f = spec.fields[0]
    assert f.source_id == 1 and f.source_ids == (1, 2) and f.all_source_ids == (1, 2)
    assert f.transform == UnknownTransform("zorder")
    assert spec.to_json() == obj
    assert list(spec.to_json()["fields"][0]) == ["name", "transform", "source-ids", "field-id"]
    # A one-element source-ids is written back as source-id, as the reference does.
    single = PartitionSpec.from_json(
        {
            "spec-id": 0,
            "fields": [{"name": "x", "transform": "identity", "source-ids": [1], "field-id": 1000}],
        }
    )
    assert single.to_json()["fields"][0] == {
        "name": "x",
        "transform": "identity",
        "source-id": 1,
        "field-id": 1000,
    }
    assert spec.fields_by_source_id(2) == [f]
    assert spec.source_ids == frozenset({1, 2})
    with pytest.raises(ValidationError, match="first of source-ids"):
        PartitionField(2, 1000, IdentityTransform(), "x", (1, 2))


def test_unknown_transform_kept() -> None:
    obj = {
        "spec-id": 1,
        "fields": [{"name": "u", "transform": "magic[3]", "source-id": 2, "field-id": 1001}],
    }
    spec = PartitionSpec.from_json(obj)
    assert spec.fields[0].transform.is_unknown
    assert spec.to_json() == obj
    ptype = spec.partition_type(SCHEMA)
    assert ptype.fields[0].field_id == 1001 and ptype.fields[0].name == "u"
    spec.validate(SCHEMA)  # unknown transforms are tolerated


def test_widths_are_read_as_iceberg_java_reads_them() -> None:
    """`bucket[ 4 ]` and widths in non-ASCII digits (`bucket[４]`) were read as bucket[4] and
    written back so, used for pruning; Iceberg Java's pattern takes ASCII digits without
    spaces: they are unknown transforms, kept as written. Decimal and fixed types take ASCII
    digits too (spaces allowed, as in Java)."""
    from icefloe.transforms import parse_transform
    from icefloe.types import DecimalType, FixedType, type_from_json

    for text in ("bucket[ 4 ]", "bucket[４]", "truncate[٣]"):
        t = parse_transform(text)
        assert t.is_unknown and str(t) == text
    assert parse_transform("bucket[4]") == BucketTransform(4)
    assert type_from_json("decimal( 9 , 2 )") == DecimalType(9, 2)
    assert type_from_json("fixed[ 3 ]") == FixedType(3)
    for text in ("decimal(９, 2)", "fixed[٣]"):
        with pytest.raises(ValidationError):
            type_from_json(text)


def test_partition_type() -> None:
    spec = PartitionSpec(
        PartitionField(1, 1000, BucketTransform(16), "id_bucket"),
        PartitionField(2, 1001, TruncateTransform(3), "data_trunc"),
        PartitionField(3, 1002, DayTransform(), "ts_day"),
        PartitionField(3, 1003, YearTransform(), "ts_year"),
        PartitionField(5, 1004, IdentityTransform(), "s_n"),
        PartitionField(8, 1005, VoidTransform(), "flag_void"),
        PartitionField(99, 1006, VoidTransform(), "dropped"),
        spec_id=2,
    )
    assert spec.partition_type(SCHEMA) == StructType(
        NestedField(1000, "id_bucket", IntegerType()),
        NestedField(1001, "data_trunc", StringType()),
        NestedField(1002, "ts_day", DateType()),
        NestedField(1003, "ts_year", IntegerType()),
        NestedField(1004, "s_n", IntegerType()),
        NestedField(1005, "flag_void", BooleanType()),
        NestedField(1006, "dropped", UnknownType()),
    )


def test_validate_against_schema() -> None:
    ok = PartitionSpec(PartitionField(5, 1000, IdentityTransform(), "n"))
    ok.validate(SCHEMA)
    cases = [
        (PartitionField(9, 1000, IdentityTransform(), "x"), "cannot find source column 9"),
        (PartitionField(4, 1000, IdentityTransform(), "x"), "non-primitive"),
        (PartitionField(7, 1000, IdentityTransform(), "x"), "nested in a list"),
        (PartitionField(8, 1000, BucketTransform(2), "x"), "invalid source type boolean"),
        (PartitionField(2, 1000, DayTransform(), "x"), "invalid source type string"),
    ]
    for field, message in cases:
        with pytest.raises(ValidationError, match=message):
            PartitionSpec(field).validate(SCHEMA)


def test_duplicates_rejected() -> None:
    with pytest.raises(ValidationError, match="field id 1000"):
        PartitionSpec(
            PartitionField(1, 1000, IdentityTransform(), "a"),
            PartitionField(2, 1000, IdentityTransform(), "b"),
        )
    with pytest.raises(ValidationError, match="'a'"):
        PartitionSpec(
            PartitionField(1, 1000, IdentityTransform(), "a"),
            PartitionField(2, 1001, IdentityTransform(), "a"),
        )


def test_unpartitioned() -> None:
    assert UNPARTITIONED_PARTITION_SPEC.is_unpartitioned
    assert UNPARTITIONED_PARTITION_SPEC.spec_id == 0
    assert UNPARTITIONED_PARTITION_SPEC.to_json() == {"spec-id": 0, "fields": []}
    assert UNPARTITIONED_PARTITION_SPEC.last_assigned_field_id == PARTITION_FIELD_ID_START - 1
    assert PartitionSpec(PartitionField(1, 1000, VoidTransform(), "v")).is_unpartitioned
    assert PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "v")).is_partitioned
    assert UNPARTITIONED_PARTITION_SPEC.partition_type(SCHEMA) == StructType()


def test_equivalence() -> None:
    a = PartitionSpec(PartitionField(1, 1000, BucketTransform(16), "b"), spec_id=0)
    assert a.equivalent(PartitionSpec(PartitionField(1, 1005, BucketTransform(16), "b"), spec_id=4))
    assert not a.equivalent(PartitionSpec(PartitionField(1, 1000, BucketTransform(8), "b")))
    assert not a.equivalent(PartitionSpec(PartitionField(2, 1000, BucketTransform(16), "b")))
    assert not a.equivalent(PartitionSpec(PartitionField(1, 1000, BucketTransform(16), "c")))
    assert not a.equivalent(UNPARTITIONED_PARTITION_SPEC)
    assert a != PartitionSpec(PartitionField(1, 1005, BucketTransform(16), "b"))
    assert a == PartitionSpec.from_json(a.to_json()) and hash(a) == hash(
        PartitionSpec.from_json(a.to_json())
    )
    assert "bucket[16](1)" in str(a) and "PartitionSpec(" in repr(a)


def test_field_id_reuse() -> None:
    existing = PartitionSpec(
        PartitionField(1, 1000, BucketTransform(16), "id_bucket"),
        PartitionField(3, 1001, DayTransform(), "ts_day"),
    )
    spec = assign_partition_field_ids(
        [((3,), DayTransform(), "day_of_ts"), ((2,), IdentityTransform(), "data")],
        [existing],
        last_partition_id=1001,
        spec_id=1,
    )
    assert [f.field_id for f in spec.fields] == [1001, 1002]
    assert spec.spec_id == 1
    fresh = assign_partition_field_ids([((1,), IdentityTransform(), "id")], [], last_partition_id=0)
    assert fresh.fields[0].field_id == 1000


@pytest.mark.parametrize(
    "obj",
    [
        {"fields": []},
        {"spec-id": 0},
        {"spec-id": 0, "fields": [{"transform": "identity", "source-id": 1, "field-id": 1000}]},
        {"spec-id": 0, "fields": [{"name": "a", "source-id": 1, "field-id": 1000}]},
        {"spec-id": 0, "fields": [{"name": "a", "transform": "identity", "field-id": 1000}]},
        {"spec-id": 0, "fields": [{"name": "a", "transform": "identity", "source-id": "1"}]},
        {"spec-id": 0, "fields": [{"name": "a", "transform": "bucket[0]", "source-id": 1}]},
        {"spec-id": 0, "fields": [{"name": "a", "transform": 3, "source-id": 1}]},
        {"spec-id": 0, "fields": {}},
        [],
    ],
)
def test_invalid_json(obj: Any) -> None:
    with pytest.raises(ValidationError):
        PartitionSpec.from_json(obj)
