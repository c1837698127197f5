"""The transform object model: names, parsing, result types, order relations."""

from __future__ import annotations

import pytest

from icefloe.exceptions import ValidationError
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
    parse_transform,
)
from icefloe.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestamptzType,
    VariantType,
)


@pytest.mark.parametrize(
    ("text", "t"),
    [
        ("identity", IdentityTransform()),
        ("bucket[16]", BucketTransform(16)),
        ("truncate[3]", TruncateTransform(3)),
        ("year", YearTransform()),
        ("month", MonthTransform()),
        ("day", DayTransform()),
        ("hour", HourTransform()),
        ("void", VoidTransform()),
    ],
)
def test_parse_and_format(text: str, t: object) -> None:
    assert parse_transform(text) == t
    assert str(t) == text


def test_unknown_transforms_round_trip_and_report_unknown() -> None:
    t = parse_transform("zorder[a,b]")
    assert t == UnknownTransform("zorder[a,b]")
    assert str(t) == "zorder[a,b]" and t.is_unknown
    assert not t.can_transform(LongType())
    assert not BucketTransform(2).is_unknown


@pytest.mark.parametrize("bad", ["bucket[0]", "truncate[-1]"])
def test_invalid_parameters(bad: str) -> None:
    with pytest.raises(ValidationError):
        parse_transform(bad)


def test_result_types() -> None:
    assert BucketTransform(4).result_type(StringType()) == IntegerType()
    assert TruncateTransform(4).result_type(DecimalType(9, 2)) == DecimalType(9, 2)
    assert DayTransform().result_type(TimestamptzType()) == DateType()
    assert HourTransform().result_type(TimestampNanoType()) == IntegerType()
    assert YearTransform().result_type(DateType()) == IntegerType()
    assert VoidTransform().result_type(DoubleType()) == DoubleType()


def test_source_type_rules() -> None:
    assert not BucketTransform(4).can_transform(DoubleType())
    assert not BucketTransform(4).can_transform(BooleanType())
    assert not TruncateTransform(4).can_transform(DateType())
    assert not HourTransform().can_transform(DateType())
    assert not IdentityTransform().can_transform(VariantType())
    with pytest.raises(ValidationError, match=r"bucket\[4\].*double"):
        BucketTransform(4).result_type(DoubleType())


def test_order_relations() -> None:
    assert HourTransform().satisfies_order_of(DayTransform())
    assert DayTransform().satisfies_order_of(YearTransform())
    assert not YearTransform().satisfies_order_of(MonthTransform())
    assert IdentityTransform().satisfies_order_of(TruncateTransform(2))
    assert TruncateTransform(4).satisfies_order_of(TruncateTransform(4))
    # Ints 7, 5 are in truncate[4] order (4, 4) but not in truncate[2] order (6, 4); strings
    # "abz", "aba" are in truncate[2] order ("ab", "ab") but not in truncate[4] order.
    assert not TruncateTransform(4).satisfies_order_of(TruncateTransform(2))
    assert not TruncateTransform(2).satisfies_order_of(TruncateTransform(4))
    assert not BucketTransform(2).preserves_order
