"""Schema evolution rules: each rule has a case that passes and one that must fail."""

from __future__ import annotations

import pytest

from icefloe.evolution import can_promote, check_schema_evolution
from icefloe.exceptions import ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)
from icefloe.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    UnknownType,
)


@pytest.mark.parametrize(
    ("old", "new", "v1v2", "v3"),
    [
        (IntegerType(), LongType(), True, True),
        (LongType(), IntegerType(), False, False),
        (IntegerType(), StringType(), False, False),
        (FloatType(), DoubleType(), True, True),
        (DoubleType(), FloatType(), False, False),
        (DecimalType(9, 2), DecimalType(18, 2), True, True),
        (DecimalType(9, 2), DecimalType(9, 2), True, True),
        (DecimalType(18, 2), DecimalType(9, 2), False, False),
        (DecimalType(9, 2), DecimalType(18, 3), False, False),
        (DateType(), TimestampType(), False, True),
        (DateType(), TimestampNanoType(), False, True),
        (DateType(), TimestamptzType(), False, False),
        (DateType(), TimestamptzNanoType(), False, False),
        (TimestampType(), TimestampNanoType(), False, False),
        (UnknownType(), StringType(), False, True),
        (UnknownType(), DecimalType(3, 1), False, True),
        (StringType(), BinaryType(), False, False),
    ],
)
def test_can_promote(old: IcebergType, new: IcebergType, v1v2: bool, v3: bool) -> None:
    assert can_promote(old, new, 1) is v1v2
    assert can_promote(old, new, 2) is v1v2
    assert can_promote(old, new, 3) is v3


def s(*fields: NestedField) -> Schema:
    return Schema(*fields)


def opt(fid: int, name: str, t: IcebergType) -> NestedField:
    return NestedField(fid, name, t)


def req(fid: int, name: str, t: IcebergType, default: object = None) -> NestedField:
    return NestedField(fid, name, t, True, None, default, default)


BASE = s(
    req(1, "id", LongType()),
    opt(2, "n", IntegerType()),
    opt(3, "loc", StructType(opt(4, "lat", DoubleType()), opt(5, "lon", DoubleType()))),
    opt(6, "m", MapType(7, IntegerType(), 8, IntegerType())),
    opt(9, "d", DateType()),
)


def test_rename_reorder_drop_and_promote_allowed() -> None:
    new = s(
        opt(9, "day", DateType()),
        opt(2, "n", LongType()),
        opt(3, "where", StructType(opt(5, "lon", DoubleType()))),
        req(1, "id", LongType()),
    )
    for v in (1, 2, 3):
        check_schema_evolution(BASE, new, v)


def test_required_to_optional_allowed_but_not_back() -> None:
    loosened = s(opt(1, "id", LongType()))
    check_schema_evolution(s(req(1, "id", LongType())), loosened, 2)
    with pytest.raises(ValidationError, match="optional column 'id' to required"):
        check_schema_evolution(loosened, s(req(1, "id", LongType())), 2)


def test_forbidden_promotion() -> None:
    with pytest.raises(ValidationError, match="cannot change column 'n' from int to string"):
        check_schema_evolution(BASE, s(opt(2, "n", StringType())), 2)
    with pytest.raises(ValidationError, match="from date to timestamp in a v2 table"):
        check_schema_evolution(BASE, s(opt(9, "d", TimestampType())), 2)
    check_schema_evolution(BASE, s(opt(9, "d", TimestampType())), 3)


def test_a_narrowing_names_no_format_version() -> None:
    """Iceberg never narrows a type: the message must not suggest another format version
    allows it, while one a later version allows still names the table's version."""
    old = s(opt(1, "n", LongType()))
    for version in (2, 3):
        with pytest.raises(ValidationError) as info:
            check_schema_evolution(old, s(opt(1, "n", IntegerType())), version)
        message = str(info.value)
        assert message.startswith("cannot change column 'n' from long to int: Iceberg only")
        assert "widens" in message and f"v{version} table" not in message
    with pytest.raises(ValidationError, match=r"in a v2 table \(format version 3 allows it\)"):
        check_schema_evolution(BASE, s(opt(9, "d", TimestampType())), 2)


def test_map_keys_cannot_change() -> None:
    new = s(opt(6, "m", MapType(7, LongType(), 8, LongType())))
    with pytest.raises(ValidationError, match=r"map key 'm\.key'"):
        check_schema_evolution(BASE, new, 2)
    check_schema_evolution(BASE, s(opt(6, "m", MapType(7, IntegerType(), 8, LongType()))), 2)


def test_primitive_nested_moves_forbidden() -> None:
    with pytest.raises(ValidationError, match="a primitive cannot become a struct"):
        check_schema_evolution(BASE, s(opt(2, "n", StructType(opt(10, "x", IntegerType())))), 3)
    with pytest.raises(ValidationError, match="a struct cannot become a primitive"):
        check_schema_evolution(BASE, s(opt(3, "loc", StringType())), 3)
    with pytest.raises(ValidationError, match="a map cannot become a list"):
        check_schema_evolution(BASE, s(opt(6, "m", ListType(7, IntegerType()))), 3)
    # map<int, int> -> map<int, struct<int>>: the value id 8 changes kind.
    with pytest.raises(ValidationError, match="a primitive cannot become a struct"):
        check_schema_evolution(
            BASE,
            s(opt(6, "m", MapType(7, IntegerType(), 8, StructType(opt(10, "v", IntegerType()))))),
            3,
        )


def test_struct_regrouping_forbidden() -> None:
    # struct<a, b, c> -> struct<a, struct<b, c>>
    flat = s(opt(1, "a", LongType()), opt(2, "b", LongType()), opt(3, "c", LongType()))
    grouped = s(
        opt(1, "a", LongType()),
        opt(4, "g", StructType(opt(2, "b", LongType()), opt(3, "c", LongType()))),
    )
    with pytest.raises(ValidationError, match=r"'g\.b' \(id 2\) moved from '<top level>' to 'g'"):
        check_schema_evolution(flat, grouped, 3)
    with pytest.raises(ValidationError, match="moved from 'g' to '<top level>'"):
        check_schema_evolution(grouped, flat, 3)


def test_reusing_a_dropped_nested_id_is_a_move() -> None:
    # Dropping loc (3, 4, 5) and adding a top-level field with id 4 reads as moving loc.lat.
    new = s(req(1, "id", LongType()), opt(4, "x", DoubleType()))
    with pytest.raises(ValidationError, match="moved from 'loc'"):
        check_schema_evolution(BASE, new, 3)


def test_new_fields_need_fresh_ids_above_last_column_id() -> None:
    new = s(*BASE.fields, opt(10, "x", StringType()))
    check_schema_evolution(BASE, new, 2)
    with pytest.raises(ValidationError, match="fresh id above 12"):
        check_schema_evolution(BASE, new, 2, last_column_id=12)


def test_adding_required_fields() -> None:
    with_required = s(*BASE.fields, req(10, "r", LongType()))
    with pytest.raises(ValidationError, match="v2 tables have no defaults"):
        check_schema_evolution(BASE, with_required, 2)
    with pytest.raises(ValidationError, match="non-null initial-default"):
        check_schema_evolution(BASE, with_required, 3)
    check_schema_evolution(BASE, s(*BASE.fields, req(10, "r", LongType(), 0)), 3)
    only_initial = NestedField(10, "r", LongType(), True, None, 0, None)
    with pytest.raises(ValidationError, match="write-default"):
        check_schema_evolution(BASE, s(*BASE.fields, only_initial), 3)
    # Optional fields need no default.
    check_schema_evolution(BASE, s(*BASE.fields, opt(10, "o", LongType())), 2)


def test_adding_required_field_inside_existing_struct() -> None:
    loc = StructType(
        opt(4, "lat", DoubleType()), opt(5, "lon", DoubleType()), req(10, "alt", DoubleType())
    )
    with pytest.raises(ValidationError, match=r"'loc\.alt'"):
        check_schema_evolution(BASE, s(opt(3, "loc", loc)), 3)


def test_adding_struct_fields() -> None:
    point = StructType(req(11, "x", LongType(), 0), req(12, "y", LongType(), 0))
    # A new optional struct with a null default: its required children need no defaults.
    bare = StructType(req(11, "x", LongType()), req(12, "y", LongType()))
    check_schema_evolution(BASE, s(*BASE.fields, opt(10, "p", bare)), 3)
    # A new required struct needs the {} default, and then its required children need defaults.
    check_schema_evolution(BASE, s(*BASE.fields, req(10, "p", point, {})), 3)
    with pytest.raises(ValidationError, match=r"'p\.x'"):
        check_schema_evolution(BASE, s(*BASE.fields, req(10, "p", bare, {})), 3)
    with pytest.raises(ValidationError, match="empty struct"):
        check_schema_evolution(BASE, s(*BASE.fields, req(10, "p", point, {"11": 1})), 3)
    # New list of structs: element fields are covered by the list's (null) default.
    lst = ListType(11, StructType(req(12, "x", LongType())))
    check_schema_evolution(BASE, s(*BASE.fields, opt(10, "l", lst)), 3)


def test_initial_default_cannot_change_write_default_can() -> None:
    old = s(NestedField(1, "a", LongType(), False, None, 1, 1))
    check_schema_evolution(old, s(NestedField(1, "a", LongType(), False, None, 1, 5)), 3)
    with pytest.raises(ValidationError, match="initial-default of column 'a'"):
        check_schema_evolution(old, s(NestedField(1, "a", LongType(), False, None, 2, 1)), 3)


def test_new_schema_must_be_valid_for_the_version() -> None:
    with pytest.raises(ValidationError, match="format version 3"):
        check_schema_evolution(BASE, s(*BASE.fields, opt(10, "u", UnknownType())), 2)
    with pytest.raises(ValidationError, match="reserved"):
        check_schema_evolution(BASE, s(*BASE.fields, opt(2147483540, "r", LongType())), 3)


def spec(source: int, transform: Transform) -> PartitionSpec:
    return PartitionSpec(PartitionField(source, 1000, transform, "p"), spec_id=3)


@pytest.mark.parametrize(
    ("transform", "allowed"),
    [
        (IdentityTransform(), False),
        (BucketTransform(16), False),
        (YearTransform(), True),
        (MonthTransform(), True),
        (DayTransform(), True),
        (VoidTransform(), True),
    ],
)
def test_date_promotion_blocked_by_partition_transform(transform: Transform, allowed: bool) -> None:
    for target in (TimestampType(), TimestampNanoType()):
        new = s(*BASE.fields[:-1], opt(9, "d", target))
        if allowed:
            check_schema_evolution(BASE, new, 3, specs=[spec(9, transform)])
        else:
            with pytest.raises(ValidationError, match="source of partition field 'p'"):
                check_schema_evolution(BASE, new, 3, specs=[spec(9, transform)])


@pytest.mark.parametrize(
    "transform", [IdentityTransform(), BucketTransform(16), TruncateTransform(10)]
)
def test_int_to_long_allowed_under_partition_transforms(transform: Transform) -> None:
    new = s(*[f if f.field_id != 2 else opt(2, "n", LongType()) for f in BASE.fields])
    check_schema_evolution(BASE, new, 2, specs=[spec(2, transform)])


def test_promotion_checked_against_every_spec() -> None:
    new = s(*BASE.fields[:-1], opt(9, "d", TimestampType()))
    old_spec = PartitionSpec(PartitionField(9, 1000, IdentityTransform(), "d"), spec_id=0)
    current = PartitionSpec(PartitionField(9, 1001, DayTransform(), "d_day"), spec_id=1)
    check_schema_evolution(BASE, new, 3, specs=[current])
    with pytest.raises(ValidationError, match="in spec 0"):
        check_schema_evolution(BASE, new, 3, specs=[current, old_spec])


def test_dropping_partition_source_of_default_spec() -> None:
    new = s(*BASE.fields[:-1])
    current = spec(9, HourTransform())
    with pytest.raises(ValidationError, match="cannot drop column 'd'"):
        check_schema_evolution(BASE, new, 3, default_spec=current)
    check_schema_evolution(BASE, new, 3, specs=[current])  # an old spec may lose its source


def test_unknown_promotes_to_nested_types_in_v3() -> None:
    old = s(opt(1, "u", UnknownType()))
    new = s(opt(1, "u", StructType(opt(2, "x", LongType()))))
    check_schema_evolution(old, new, 3)
    check_schema_evolution(old, s(opt(1, "u", ListType(2, LongType()))), 3)
    with pytest.raises(ValidationError, match="fresh id above 5"):
        check_schema_evolution(old, new, 3, last_column_id=5)
