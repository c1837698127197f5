"""Property and fuzz tests: random entries round-trip through the writer and reader for every
format version and partition type; truncated or flipped bytes only raise CorruptFileError."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.exceptions import CorruptFileError, UnsupportedFeatureError
from icefloe.manifest import read_manifest, read_manifest_list, write_manifest
from support.manifest_tables import make_table, read_bytes

I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
# (iceberg source type, transform, strategy of partition values)
PARTITION_TYPES: list[tuple[str, str, st.SearchStrategy[Any]]] = [
    ("int", "identity", I32),
    ("long", "identity", I64),
    ("long", "bucket[16]", st.integers(0, 15)),
    ("string", "identity", st.text(max_size=8)),
    ("string", "truncate[3]", st.text(max_size=3)),
    ("boolean", "identity", st.booleans()),
    ("float", "identity", st.floats(width=32, allow_nan=False)),
    ("double", "identity", st.floats(allow_nan=False)),
    ("date", "identity", st.dates()),
    ("timestamp", "day", st.dates()),
    ("timestamp", "hour", I32),
    ("timestamptz", "identity", st.datetimes(timezones=st.just(dt.timezone.utc))),
    # At most 9 digits: |v| < 10**7.
    ("decimal(9, 2)", "identity", st.decimals(-(10**7) + 1, 10**7 - 1, places=2, allow_nan=False)),
    ("uuid", "identity", st.uuids().map(lambda u: u.bytes)),
    ("fixed[3]", "identity", st.binary(min_size=3, max_size=3)),
    ("binary", "identity", st.binary(max_size=6)),
    ("time", "identity", st.times()),
]


def _spec(kinds: list[int]) -> tuple[str, str]:
    fields = [
        {"id": i + 1, "name": f"c{i}", "required": False, "type": PARTITION_TYPES[k][0]}
        for i, k in enumerate(kinds)
    ]
    schema = {"type": "struct", "schema-id": 0, "fields": fields}
    spec = [
        {
            "name": f"p{i}",
            "transform": PARTITION_TYPES[k][1],
            "source-id": i + 1,
            "field-id": 1000 + i,
        }
        for i, k in enumerate(kinds)
    ]
    return json.dumps(schema), json.dumps(spec)


def _maybe(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), s)


@st.composite
def _case(draw: st.DrawFn) -> tuple[int, int, list[int], list[dict[str, Any]]]:
    version = draw(st.sampled_from([1, 2, 3]))
    # data manifests hold data files (content 0), delete manifests delete files (1, 2);
    # v1 has no delete files
    content = 0 if version == 1 else draw(st.sampled_from([0, 1]))
    file_content = st.just(0) if content == 0 else st.integers(1, 2)
    kinds = draw(st.lists(st.integers(0, len(PARTITION_TYPES) - 1), max_size=3))
    counts = st.lists(st.tuples(st.integers(1, 50), st.integers(0, 2**40)), max_size=4)
    bounds = st.lists(st.tuples(st.integers(1, 50), st.binary(max_size=9)), max_size=3)
    n = draw(st.integers(0, 6))
    rows = []
    for _ in range(n):
        rows.append(
            {
                "status": draw(st.integers(0, 2)),
                "snapshot_id": draw(_maybe(I64)),
                "sequence_number": draw(_maybe(st.integers(0, 2**40))),
                "file_sequence_number": draw(_maybe(st.integers(0, 2**40))),
                "content": draw(file_content),
                "file_path": draw(st.text(min_size=1, max_size=20)),
                "file_format": draw(st.sampled_from(["PARQUET", "AVRO", "ORC"])),
                "partition": {
                    f"p{i}": draw(_maybe(PARTITION_TYPES[k][2])) for i, k in enumerate(kinds)
                },
                "record_count": draw(st.integers(0, 2**40)),
                "file_size_in_bytes": draw(st.integers(0, 2**40)),
                "column_sizes": draw(_maybe(counts)),
                "value_counts": draw(_maybe(counts)),
                "null_value_counts": draw(_maybe(counts)),
                "nan_value_counts": draw(_maybe(counts)),
                "lower_bounds": draw(_maybe(bounds)),
                "upper_bounds": draw(_maybe(bounds)),
                "key_metadata": draw(_maybe(st.binary(max_size=5))),
                "split_offsets": draw(_maybe(st.lists(I64, max_size=3))),
                "equality_ids": draw(_maybe(st.lists(I32, max_size=3))),
                "sort_order_id": draw(_maybe(I32)),
                "first_row_id": draw(_maybe(st.integers(0, 2**40))),
                "referenced_data_file": draw(_maybe(st.text(max_size=10))),
                "content_offset": draw(_maybe(st.integers(0, 2**40))),
                "content_size_in_bytes": draw(_maybe(st.integers(0, 2**40))),
            }
        )
    return version, content, kinds, rows


def _expected(version: int, row: dict[str, Any]) -> dict[str, Any]:
    e = dict(row)
    for k in ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts"):
        e[k] = None if e[k] is None else dict(e[k])
    for k in ("lower_bounds", "upper_bounds"):
        e[k] = None if e[k] is None else dict(e[k])
    if version == 1:
        e.update(content=0, sequence_number=0, file_sequence_number=0, equality_ids=None)
    if version == 1:
        e["referenced_data_file"] = None
    if version < 3:
        for k in ("first_row_id", "content_offset", "content_size_in_bytes"):
            e[k] = None
    return e


def _canon(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for k in ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts"):
        if isinstance(out[k], list):
            out[k] = dict(out[k])
    for k in ("lower_bounds", "upper_bounds"):
        if isinstance(out[k], list):
            out[k] = dict(out[k])
    p = {}
    for name, v in out["partition"].items():
        if isinstance(v, decimal.Decimal):
            v = v.normalize()
        if isinstance(v, uuid.UUID):
            v = v.bytes
        p[name] = v
    out["partition"] = p
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case(), st.sampled_from(["deflate", "null", "zstandard", "snappy"]))
def test_random_entries_round_trip(
    case: tuple[int, int, list[int], list[dict[str, Any]]], codec: str
) -> None:
    version, content, kinds, rows = case
    schema_json, spec_json = _spec(kinds)
    empty = pa.RecordBatch.from_pylist([], schema=pa.schema([pa.field("status", pa.int32())]))
    blank, _ = write_manifest(
        empty,
        format_version=version,
        schema_json=schema_json,
        spec_json=spec_json,
        spec_id=3,
        path="m",
    )
    schema = read_manifest(blank).schema
    batch = pa.RecordBatch.from_pylist(rows, schema=schema)
    data, summary = write_manifest(
        batch,
        format_version=version,
        schema_json=schema_json,
        spec_json=spec_json,
        spec_id=3,
        path="m",
        content=content,
        codec=codec,
    )
    back = read_manifest(data)
    assert back.schema.metadata[b"partition-spec-id"] == b"3"
    got = [_canon(r) for r in back.to_pylist()]
    want = [_canon(_expected(version, r)) for r in rows]
    assert got == want
    s = summary.to_pylist()[0]
    assert s["added_files_count"] == sum(r["status"] == 1 for r in rows)
    assert s["deleted_rows_count"] == sum(r["record_count"] for r in rows if r["status"] == 2)
    assert len(s["partitions"]) == len(kinds)
    for i, p in enumerate(s["partitions"]):
        vals = [r["partition"][f"p{i}"] for r in rows]
        assert p["contains_null"] == any(v is None for v in vals)
        assert (p["lower_bound"] is None) == all(v is None for v in vals)


def _mutations(data: bytes, seed: int, n: int) -> list[bytes]:
    rnd = random.Random(seed)
    out = [data[:cut] for cut in sorted(rnd.sample(range(len(data)), min(n, len(data))))]
    for _ in range(n):
        b = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
        out.append(bytes(b))
    return out


def test_corrupt_manifests_raise_only_corrupt_file_error(tmp_path: Path) -> None:
    table = make_table(tmp_path, 2, "multi", appends=1)
    snap = table.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    lst = read_bytes(table, snap.manifest_list)
    mpath = read_manifest_list(lst).to_pylist()[0]["manifest_path"]
    manifest = read_bytes(table, mpath)
    batch = read_manifest(manifest)
    md = batch.schema.metadata
    plain, _ = write_manifest(
        batch,
        format_version=2,
        schema_json=md[b"schema"].decode(),
        spec_json=md[b"partition-spec"].decode(),
        spec_id=0,
        path="m",
        codec="null",
    )
    outcomes = {"ok": 0, "corrupt": 0}
    for seed, (blob, reader) in enumerate(
        [(manifest, read_manifest), (plain, read_manifest), (lst, read_manifest_list)]
    ):
        for bad in _mutations(blob, seed, 300):
            try:
                reader(bad, name="fuzz.avro")
                outcomes["ok"] += 1
            except CorruptFileError as e:
                assert "fuzz.avro" in str(e)
                outcomes["corrupt"] += 1
            except UnsupportedFeatureError as e:
                # A flipped codec name or format version is valid input we do not support.
                assert "codec" in str(e) or "format-version" in str(e) or "union" in str(e)
    assert outcomes["corrupt"] > 500


@pytest.mark.parametrize("version", [1, 2, 3])
def test_empty_manifest_and_empty_partition(version: int) -> None:
    empty = pa.RecordBatch.from_pylist([], schema=pa.schema([pa.field("status", pa.int32())]))
    data, row = write_manifest(
        empty,
        format_version=version,
        schema_json=json.dumps({"type": "struct", "fields": []}),
        spec_json="[]",
        spec_id=0,
        path="m",
    )
    back = read_manifest(data)
    assert back.num_rows == 0 and back.schema.field("partition").type.num_fields == 0
    assert row.to_pylist()[0]["partitions"] == []
