"""Spec-model benchmarks: schema JSON parsing and Arrow schema conversion on a wide, nested
schema, against PyIceberg's equivalents."""

from __future__ import annotations

from pyiceberg.io.pyarrow import pyarrow_to_schema, schema_to_pyarrow
from pyiceberg.schema import Schema as PySchema

from harness import Harness
from icefloe.arrow_schema import arrow_to_schema, schema_to_arrow
from icefloe.schema import Schema
from icefloe.types import (
    DecimalType,
    DoubleType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)


def wide_schema(columns: int) -> Schema:
    """``columns`` top-level columns cycling through primitives, structs, lists and maps."""
    fields: list[NestedField] = []
    next_id = 1
    for i in range(columns):
        fid = next_id
        kind = i % 6
        if kind == 0:
            t: object = LongType()
            next_id += 1
        elif kind == 1:
            t = StringType()
            next_id += 1
        elif kind == 2:
            t = StructType(
                NestedField(fid + 1, "a", IntegerType()),
                NestedField(fid + 2, "b", DecimalType(18, 4)),
            )
            next_id += 3
        elif kind == 3:
            t = ListType(fid + 1, DoubleType())
            next_id += 2
        elif kind == 4:
            t = MapType(fid + 1, StringType(), fid + 2, TimestamptzType())
            next_id += 3
        else:
            t = TimestamptzType()
            next_id += 1
        fields.append(NestedField(fid, f"c{i}", t, required=i % 2 == 0))  # type: ignore[arg-type]
    return Schema(*fields)


def run(h: Harness) -> None:
    columns = h.size(2000, 200)
    schema = wide_schema(columns)
    obj = schema.to_json()
    py_schema = PySchema.model_validate(obj)
    h.compare(
        "schema from JSON",
        columns,
        "columns",
        ours=lambda: Schema.from_json(obj),
        peers={"pyiceberg": lambda: PySchema.model_validate(obj)},
        target="on par or faster than PyIceberg",
    )
    h.compare(
        "schema to Arrow",
        columns,
        "columns",
        ours=lambda: schema_to_arrow(schema),
        peers={"pyiceberg": lambda: schema_to_pyarrow(py_schema)},
        target="on par or faster than PyIceberg",
    )
    arrow = schema_to_arrow(schema)
    h.compare(
        "Arrow to schema",
        columns,
        "columns",
        ours=lambda: arrow_to_schema(arrow),
        peers={"pyiceberg": lambda: pyarrow_to_schema(arrow)},
        target="on par or faster than PyIceberg",
    )
    names = [f"c{i}" for i in range(columns)]

    def ours_lookup() -> None:
        s = Schema(*schema.fields)
        for n in names:
            s.find_field(n)

    def peer_lookup() -> None:
        s = PySchema(*py_schema.fields)
        for n in names:
            s.find_field(n)

    h.compare(
        "build schema + find_field by name",
        columns,
        "lookups",
        ours=ours_lookup,
        peers={"pyiceberg": peer_lookup},
        target="on par or faster than PyIceberg",
    )
