"""The decoder's fast paths against fastavro as an independent oracle.

The metric maps are read through one-window key/value reads (one-byte keys, values of up to
eight varint bytes, bounds of up to 14 bytes) with a general fallback; manifests of several
blocks are sized once from the block headers; the writer schema is parsed once per thread.
Random maps with keys and values of every width, and manifests of many blocks, must decode to
exactly what fastavro decodes from the same bytes.
"""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pyarrow as pa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from icefloe.manifest import read_manifest, read_manifests, write_manifest

SCHEMA = json.dumps(
    {
        "type": "struct",
        "schema-id": 0,
        "fields": [{"id": 1, "name": "c", "required": False, "type": "long"}],
    }
)
SPEC = json.dumps([{"name": "c_b", "transform": "bucket[8]", "source-id": 1, "field-id": 1000}])
MAPS = ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts")
BOUNDS = ("lower_bounds", "upper_bounds")

# Keys of one and several varint bytes (and negative ones), values of every varint width.
KEYS = st.one_of(st.integers(0, 63), st.integers(-(2**31), 2**31 - 1))
VALUES = st.one_of(st.integers(-64, 63), st.integers(-(2**63), 2**63 - 1))


def _schema() -> pa.Schema:
    empty = pa.RecordBatch.from_pylist([], schema=pa.schema([pa.field("status", pa.int32())]))
    blank, _ = write_manifest(
        empty, format_version=2, schema_json=SCHEMA, spec_json=SPEC, spec_id=0, path="m"
    )
    return read_manifest(blank).schema


def _row(i: int, maps: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "status": 1,
        "snapshot_id": 7,
        "sequence_number": None,
        "file_sequence_number": None,
        "content": 0,
        "file_path": f"s3://b/t/data/{i:06d}.parquet",
        "file_format": "PARQUET",
        "partition": {"c_b": i % 8},
        "record_count": i,
        "file_size_in_bytes": 1000 + i,
        "split_offsets": [4],
        "sort_order_id": 0,
    }
    row.update(maps)
    return row


def _write(rows: list[dict[str, Any]]) -> bytes:
    batch = pa.RecordBatch.from_pylist(rows, schema=_schema())
    data, _ = write_manifest(
        batch, format_version=2, schema_json=SCHEMA, spec_json=SPEC, spec_id=0, path="m"
    )
    return data


def _oracle(data: bytes) -> list[dict[str, Any]]:
    """Every entry's metric maps as fastavro decodes them, as {key: value} dicts."""
    out = []
    for rec in fastavro.reader(io.BytesIO(data)):
        df = rec["data_file"]
        out.append(
            {
                k: None if df[k] is None else {p["key"]: p["value"] for p in df[k]}
                for k in MAPS + BOUNDS
            }
        )
    return out


def _ours(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    rows = batch.select(list(MAPS + BOUNDS)).to_pylist()
    return [{k: None if r[k] is None else dict(r[k]) for k in r} for r in rows]


def _pairs(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # distinct keys: fastavro's dicts and ours keep one value per key
    return st.one_of(
        st.none(), st.lists(st.tuples(KEYS, values), max_size=5, unique_by=lambda p: p[0])
    )


@st.composite
def _maps(draw: st.DrawFn) -> dict[str, Any]:
    maps = {k: draw(_pairs(VALUES)) for k in MAPS}
    maps.update({k: draw(_pairs(st.binary(max_size=20))) for k in BOUNDS})
    return maps


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_maps(), min_size=1, max_size=8))
@example(
    [
        {
            "column_sizes": [(63, 2**63 - 1), (64, -(2**63))],
            "value_counts": [(0, 0), (-1, -1)],
            "null_value_counts": [(1, 2**55), (2, 2**56)],
            "nan_value_counts": [],
            "lower_bounds": [(1, b"x" * 14), (2, b"y" * 15), (64, b"")],
            "upper_bounds": None,
        }
    ]
)
def test_metric_maps_of_every_width_match_fastavro(maps: list[dict[str, Any]]) -> None:
    data = _write([_row(i, m) for i, m in enumerate(maps)])
    assert _ours(read_manifest(data)) == _oracle(data)


def test_many_blocks_decode_like_fastavro_and_like_one_at_a_time() -> None:
    # ~3,000 entries with full stats: dozens of 64 KB blocks, sized once from the headers.
    ids = range(1, 11)
    rows = [
        _row(
            i,
            {
                "column_sizes": [(c, i * 7919 % 10**7) for c in ids],
                "value_counts": [(c, i) for c in ids],
                "null_value_counts": [(c, i % 100) for c in ids],
                "nan_value_counts": [(c, 0) for c in ids],
                "lower_bounds": [(c, (i * c).to_bytes(8, "little")) for c in ids],
                "upper_bounds": [(c, (i * c + 1).to_bytes(8, "little")) for c in ids],
            },
        )
        for i in range(3000)
    ]
    data = _write(rows)
    blocks = list(fastavro.block_reader(io.BytesIO(data)))
    assert len(blocks) > 10
    ours = read_manifest(data)
    assert ours.num_rows == 3000
    assert _ours(ours) == _oracle(data)
    assert ours.column("file_path").to_pylist() == [r["file_path"] for r in rows]
    # the same bytes through the parallel reader, twice (the second parse of the schema comes
    # from the per-thread cache), are the same batch
    again = read_manifests([data, data])
    assert all(b.equals(ours) for b in again)
