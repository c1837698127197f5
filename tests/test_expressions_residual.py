"""Residual evaluation per partition and spec-level projection, with Schema and PartitionSpec."""

from __future__ import annotations

from icefloe.expressions import AlwaysFalse, AlwaysTrue, BoundPredicate, bind, col, parse
from icefloe.expressions.projection import inclusive_projection, project, strict_projection
from icefloe.expressions.residual import ResidualEvaluator
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import IdentityTransform, UnknownTransform, VoidTransform
from icefloe.types import LongType, NestedField, StringType, StructType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "region", StringType()),
    NestedField(3, "info", StructType(NestedField(4, "kind", StringType()))),
    NestedField(5, "other", LongType()),
)
SPEC = PartitionSpec(
    PartitionField(2, 1000, IdentityTransform(), "region"),
    PartitionField(4, 1001, IdentityTransform(), "kind"),
    PartitionField(5, 1002, VoidTransform(), "other_void"),
    PartitionField(1, 1003, UnknownTransform("zorder"), "id_z"),
)


def test_residuals_per_partition() -> None:
    ev = ResidualEvaluator(SCHEMA, SPEC, parse("region = 'eu' and id > 5"))
    id_gt_5 = bind(SCHEMA, col("id") > 5)
    assert ev.residual_for(("eu", "a", None, None)) == id_gt_5
    assert ev.residual_for(("us", "a", None, None)) is AlwaysFalse()
    assert ev.residual_for((None, "a", None, None)) is AlwaysFalse()

    ev = ResidualEvaluator(SCHEMA, SPEC, parse("region = 'eu' or info.kind in ('x', 'y')"))
    assert ev.residual_for(("eu", None, None, None)) is AlwaysTrue()
    assert ev.residual_for(("us", "y", None, None)) is AlwaysTrue()
    assert ev.residual_for(("us", "z", None, None)) is AlwaysFalse()

    ev = ResidualEvaluator(SCHEMA, SPEC, parse("not (region is null) and other < 3"))
    other = bind(SCHEMA, col("other") < 3)
    assert ev.residual_for(("eu", None, 1, None)) == other  # void: the predicate stays
    assert ev.residual_for((None, None, 1, None)) is AlwaysFalse()


def test_case_insensitive_residuals() -> None:
    ev = ResidualEvaluator(SCHEMA, SPEC, parse("REGION != 'eu'"), case_sensitive=False)
    assert ev.residual_for(("eu", None, None, None)) is AlwaysFalse()
    assert ev.residual_for(("us", None, None, None)) is AlwaysTrue()
    # Iceberg semantics: a null value is != 'eu'.
    assert ev.residual_for((None, None, None, None)) is AlwaysTrue()


def test_spec_level_projection() -> None:
    expr = parse("region = 'eu' and id > 5 and other = 1 or info.kind like 'a%'")
    incl = inclusive_projection(SCHEMA, SPEC, expr)
    # id (unknown transform) and other (void) drop out; region and kind project as themselves.
    assert str(incl) == "region = 'eu' or kind like 'a%'"
    assert isinstance(incl, type(incl))
    strict = strict_projection(SCHEMA, SPEC, expr)
    # Strict: the id and other conjuncts cannot be guaranteed by the partition.
    assert str(strict) == "kind like 'a%'"
    by_field = bind(SPEC.partition_type(SCHEMA), parse("region = 'eu'"))
    assert isinstance(by_field, BoundPredicate) and by_field.ref.field_id == 1000
    assert project(bind(SCHEMA, parse("not region = 'eu'")), SPEC) == parse("region != 'eu'")
