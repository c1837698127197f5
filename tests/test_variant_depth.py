"""Variant values nested deeper than 128 levels: the Variant spec sets no depth limit (Spark 4.1
and Iceberg Java write and read them), so they encode, decode, append and scan at any depth;
adversarial depths (100,000 levels) decode without recursion, and malformed bytes stay typed
errors at any depth."""

from __future__ import annotations

import json
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe import variant
from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.types import LongType, NestedField, VariantType
from support.write_util import catalog

EMPTY_METADATA = b"\x01\x00\x00"  # version 1, empty dictionary


@contextmanager
def _recursion(limit: int) -> Iterator[None]:
    """Python's json module and == recurse per level: room for the deep documents here."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _doc(depth: int, kind: str) -> str:
    """A JSON document `depth` containers deep: arrays, objects, or both alternating (with
    siblings at every level, so offsets and field ids are not all trivial)."""
    text = '{"leaf": [1, -2.5, "s", null, true]}'
    for level in range(depth - 2):
        if kind == "array" or (kind == "mixed" and level % 2):
            text = f"[{level}, {text}, false]"
        else:
            text = f'{{"a{level % 3}": {text}, "z": {level}}}'
    return text


def _depth(x: Any) -> int:
    d = 0
    while isinstance(x, list | dict):
        d += 1
        items = x if isinstance(x, list) else list(x.values())
        x = next((i for i in items if isinstance(i, list | dict)), None)
    return d


def _nested_arrays(depth: int, leaf: bytes = b"\x0c\x01") -> bytes:
    """`depth` one-element arrays (4-byte offsets) around `leaf`, built in linear time."""
    out = bytearray()
    for level in range(depth):
        child = (depth - level - 1) * 10 + len(leaf)
        out += b"\x0f\x01" + struct.pack("<II", 0, child)
    return bytes(out + leaf)


def _pair(value: bytes, metadata: bytes = EMPTY_METADATA) -> pa.StructArray:
    return pa.StructArray.from_arrays(
        [pa.array([metadata], pa.binary()), pa.array([value], pa.binary())],
        names=["metadata", "value"],
    )


@pytest.mark.parametrize("depth", [129, 300, 1000])
@pytest.mark.parametrize("kind", ["array", "object", "mixed"])
def test_deep_values_round_trip(depth: int, kind: str) -> None:
    text = _doc(depth, kind)
    with _recursion(10 * depth + 1000):
        expected = json.loads(text)
        assert _depth(expected) == depth
        v = variant.from_json(text)
        assert json.loads(v.to_json()) == expected
        assert v.to_python() == expected
        assert variant.to_python(v.metadata, v.value) == expected
        # a column, and the encoded struct validated again (the append path)
        col = variant.from_json(pa.array([text, None, "[]"]))
        assert variant.to_pylist(col) == [expected, None, []]
        again = variant.normalize(col)
        assert [
            None if t is None else json.loads(t) for t in variant.to_json(again).to_pylist()
        ] == [
            expected,
            None,
            [],
        ]
        if depth <= 500:  # Python values encode too (a recursion per level there)
            assert variant.from_python(expected).to_python() == expected
        else:
            with pytest.raises(ValidationError, match="deeper than 500"):
                variant.from_python(expected)


def test_spark_shaped_value_decodes() -> None:
    """What Spark writes for parse_json(repeat('[',300) || '1' || repeat(']',300))."""
    for depth in (128, 129, 300):
        col = _pair(_nested_arrays(depth))
        x = variant.to_pylist(col)[0]
        assert _depth(x) == depth
        assert variant.to_json(col).to_pylist() == ["[" * depth + "1" + "]" * depth]


@pytest.mark.parametrize("depth", [129, 300, 1000])
def test_deep_values_append_and_scan(tmp_path: Path, depth: int) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "v", VariantType())
    )
    t = catalog(tmp_path).create_table("ns.t", schema, format_version=3)
    docs = [_doc(depth, kind) for kind in ("array", "object", "mixed")]
    with _recursion(10 * depth + 1000):
        expected = [json.loads(d) for d in docs]
        # JSON strings, an encoded struct, and the encoded bytes Spark writes
        t.append(pa.table({"id": pa.array([0, 1, 2], pa.int64()), "v": docs}))
        enc = variant.from_json(pa.array(docs))
        t.append(pa.table({"id": pa.array([10, 11, 12], pa.int64()), "v": enc}))
        t.append(pa.table({"id": pa.array([20], pa.int64()), "v": _pair(_nested_arrays(depth))}))
        out = t.scan().to_arrow().sort_by("id")
        got = variant.to_pylist(out.column("v"))
        spark = json.loads("[" * depth + "1" + "]" * depth)
        assert got == [*expected, *expected, spark]
        texts = variant.to_json(out.column("v")).to_pylist()
        assert [json.loads(s) for s in texts] == got
        # scanned rows append again as they are
        t.append(out.select(["id", "v"]))
        assert variant.to_pylist(t.scan().to_arrow().sort_by("id").column("v")) == [
            g for g in got for _ in range(2)
        ]


def test_adversarial_depth_is_handled_without_recursion() -> None:
    depth = 100_000
    col = _pair(_nested_arrays(depth))
    try:
        text = variant.to_json(col).to_pylist()[0]
    except ValidationError:
        pass  # a typed error is acceptable; a crash is not
    else:
        assert text == "[" * depth + "1" + "]" * depth
    try:
        x = variant.to_pylist(col)[0]
    except ValidationError:
        pass
    else:
        assert _depth(x) == depth
        del x
    variant.normalize(col)  # validation has no depth limit
    # JSON text that deep parses too (or is refused with a typed error)
    text = "[" * depth + "]" * depth
    try:
        v = variant.from_json(text)
    except ValidationError:
        pass
    else:
        assert v.to_json() == text


def test_deep_malformed_values_are_typed_errors() -> None:
    good = _nested_arrays(1000)
    truncated = good[:-1]
    inner = 500 * 10 + 6  # the end offset of the array 500 levels down
    bad_offset = good[:inner] + b"\xff\xff\xff\x7f" + good[inner + 4 :]
    not_first_zero = good[:2] + b"\x01" + good[3:]
    for bad in (truncated, bad_offset, not_first_zero, good[:5]):
        for fn in (variant.to_pylist, variant.to_json, variant.normalize):
            with pytest.raises(ValidationError, match="malformed"):
                fn(_pair(bad))
    # an object field id outside the dictionary, deep inside arrays
    obj = b"\x02\x01\x05\x00\x02" + b"\x0c\x01"  # {id 5: 1} with an empty dictionary
    with pytest.raises(ValidationError, match="malformed"):
        variant.to_pylist(_pair(_nested_arrays(300, obj)))
    with pytest.raises(ValidationError, match="JSON"):
        variant.from_json("[" * 300 + "1" + "]" * 299)
    with pytest.raises(ValidationError, match="JSON"):
        variant.from_json("[" * 300 + "{1: 2}" + "]" * 300)
