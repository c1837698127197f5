"""Hypothesis strategies for random Iceberg schemas (shared by schema tests)."""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from icefloe.schema import Schema
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

PRIMITIVES: list[PrimitiveType] = [
    BooleanType(),
    IntegerType(),
    LongType(),
    FloatType(),
    DoubleType(),
    DateType(),
    TimeType(),
    TimestampType(),
    TimestamptzType(),
    TimestampNanoType(),
    TimestamptzNanoType(),
    StringType(),
    UUIDType(),
    BinaryType(),
    FixedType(7),
    DecimalType(9, 2),
    DecimalType(38, 10),
    UnknownType(),
]

NAMES = st.text(alphabet="abcdefgXYZ_0123", min_size=1, max_size=6)


@st.composite
def schemas(draw: st.DrawFn, primitives: list[PrimitiveType] = PRIMITIVES) -> Schema:
    """A random schema with structs, lists and maps nested up to three levels."""
    counter = itertools.count(1)
    prims = st.sampled_from(primitives)

    def draw_type(depth: int) -> IcebergType:
        kind = draw(st.sampled_from(["p", "p", "p", "s", "l", "m"] if depth < 3 else ["p"]))
        if kind == "p":
            return draw(prims)
        if kind == "s":
            return StructType(*draw_fields(depth + 1, min_size=1))
        if kind == "l":
            eid = next(counter)
            et = draw_type(depth + 1)
            required = draw(st.booleans()) and not isinstance(et, UnknownType)
            return ListType(eid, et, required)
        kid, vid = next(counter), next(counter)
        kt = draw(prims.filter(lambda t: not isinstance(t, UnknownType)))
        vt = draw_type(depth + 1)
        required = draw(st.booleans()) and not isinstance(vt, UnknownType)
        return MapType(kid, kt, vid, vt, required)

    def draw_fields(depth: int, min_size: int = 0) -> list[NestedField]:
        names = draw(st.lists(NAMES, min_size=min_size, max_size=4, unique_by=str.lower))
        out = []
        for name in names:
            fid = next(counter)
            t = draw_type(depth)
            required = draw(st.booleans()) and not isinstance(t, UnknownType)
            doc = draw(st.none() | st.just("a doc"))
            out.append(NestedField(fid, name, t, required, doc))
        return out

    return Schema(*draw_fields(0, min_size=1), schema_id=draw(st.integers(0, 5)))
