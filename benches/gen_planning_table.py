"""Generates the scan-planning benchmark table: ``python benches/gen_planning_table.py DIR [N]``.

A v2 table of ``N`` data files (default 200,000) in manifests of 1,000 entries, partitioned by
``day(ts)`` (100 days) and ``bucket[16](id)``, with full column statistics (value and null
counts, lower and upper bounds) for its 10 columns. Only metadata is written: manifests, one
manifest list, one snapshot and ``metadata/v1.metadata.json`` (the data files do not exist, which
planning never needs). Entries are built column-wise with numpy and written with icefloe's
manifest writer in the Java reference's layout, so PyIceberg and DuckDB read the same files.

Value layout, for file ``i`` of day ``d``: ``id`` in ``[i * 100, i * 100 + 99]`` (the partition
holds the bucket of ``i * 100``), ``ts`` within day ``d``, ``v1`` in
``[i * 10, i * 10 + 9]`` (so a range on ``v1`` is pruned by metrics only), the other columns with
overlapping random ranges.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa

from icefloe.manifest import read_manifest, write_manifest, write_manifest_list
from icefloe.transforms import BucketTransform

PER_MANIFEST = 1000
DAYS = 100
BUCKETS = 16
SNAPSHOT_ID = 3_051_729_675_574_597_004
DAY0 = dt.date(2024, 1, 1)
DAY_US = 86_400_000_000
EPOCH_DAY0 = (DAY0 - dt.date(1970, 1, 1)).days

FIELDS = [
    (1, "id", "long"),
    (2, "ts", "timestamp"),
    (3, "v1", "long"),
    (4, "v2", "long"),
    (5, "v3", "long"),
    (6, "d1", "double"),
    (7, "d2", "double"),
    (8, "s1", "string"),
    (9, "s2", "string"),
    (10, "n1", "int"),
]
SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": i, "name": n, "required": False, "type": t} for i, n, t in FIELDS],
}
SPEC = [
    {"name": "ts_day", "transform": "day", "source-id": 2, "field-id": 1000},
    {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1001},
]


def _bin(values: np.ndarray) -> pa.Array:
    """Little-endian single-value bytes of a numeric numpy array, as a binary array."""
    width = values.dtype.itemsize
    raw = np.ascontiguousarray(values.astype(values.dtype.newbyteorder("<"))).view(np.uint8)
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), len(values), [None, pa.py_buffer(raw.tobytes())]
    ).cast(pa.binary())


def _strings(prefix: str, values: np.ndarray) -> pa.Array:
    return pa.array([f"{prefix}{v:08d}".encode() for v in values.tolist()], pa.binary())


def _map(keys: list[int], columns: list[pa.Array], n: int, item: pa.DataType) -> pa.MapArray:
    """A map<int32, item> column with the same keys in every row, from one column per key."""
    k = len(keys)
    offsets = pa.array(np.arange(0, n * k + 1, k, dtype=np.int32))
    key_arr = pa.array(np.tile(np.array(keys, dtype=np.int32), n))
    order = np.arange(n * k).reshape(k, n).T.reshape(-1)  # row-major interleave
    items = pa.concat_arrays([c.cast(item) for c in columns]).take(pa.array(order))
    return pa.MapArray.from_arrays(offsets, key_arr, items)


def entries(
    m: int, n_manifests: int, schema: pa.Schema, rng: np.random.Generator
) -> pa.RecordBatch:
    """The entries of manifest ``m`` (1,000 files of one day, all buckets)."""
    n = PER_MANIFEST
    i = m * n + np.arange(n, dtype=np.int64)  # global file index
    day = (m * DAYS) // n_manifests
    # the bucket of the file's lowest id, so `id == i * 100` finds file i through its partition
    bucket = np.asarray(BucketTransform(BUCKETS).apply(pa.array(i * 100)), dtype=np.int32)
    ts_lo = (EPOCH_DAY0 + day) * DAY_US + rng.integers(0, DAY_US // 2, n)
    ts_hi = ts_lo + rng.integers(0, DAY_US // 2, n)
    r = lambda lo, hi: rng.integers(lo, hi, n)  # noqa: E731
    lows = {
        1: _bin(i * 100),
        2: _bin(ts_lo),
        3: _bin(i * 10),
        4: _bin(r(0, 1000)),
        5: _bin(r(0, 10**6)),
        6: _bin(rng.uniform(-100, 0, n)),
        7: _bin(rng.uniform(0, 1, n)),
        8: _strings("a", r(0, 10**6)),
        9: _strings("k", r(0, 10**3)),
        10: _bin(r(0, 100).astype(np.int32)),
    }
    highs = {
        1: _bin(i * 100 + 99),
        2: _bin(ts_hi),
        3: _bin(i * 10 + 9),
        4: _bin(r(1000, 2000)),
        5: _bin(r(10**6, 2 * 10**6)),
        6: _bin(rng.uniform(0, 100, n)),
        7: _bin(rng.uniform(1, 2, n)),
        8: _strings("z", r(0, 10**6)),
        9: _strings("q", r(0, 10**3)),
        10: _bin(r(100, 200).astype(np.int32)),
    }
    keys = [f[0] for f in FIELDS]
    records = rng.integers(10_000, 1_000_000, n)
    counts = [pa.array(records) for _ in keys]
    nulls = [pa.array(rng.integers(0, 10, n)) for _ in keys]
    cols = {
        "status": pa.array(np.ones(n, dtype=np.int32)),
        "snapshot_id": pa.nulls(n, pa.int64()),
        "sequence_number": pa.nulls(n, pa.int64()),
        "file_sequence_number": pa.nulls(n, pa.int64()),
        "content": pa.array(np.zeros(n, dtype=np.int32)),
        "file_path": pa.array(
            [
                f"s3://bucket/warehouse/db/bench/data/ts_day={DAY0 + dt.timedelta(days=day)}/"
                f"id_bucket={b}/00000-{k}-7f1c2d3e-4b5a-6978-8a9b-0c1d2e3f4a5b-{k:07d}.parquet"
                for k, b in zip(i.tolist(), bucket.tolist(), strict=True)
            ]
        ),
        "file_format": pa.array(["PARQUET"] * n),
        "partition": pa.StructArray.from_arrays(
            [pa.array(np.full(n, EPOCH_DAY0 + day, dtype=np.int32)).cast(pa.date32()), bucket],
            fields=list(schema.field("partition").type),
        ),
        "record_count": pa.array(records),
        "file_size_in_bytes": pa.array(rng.integers(10**6, 5 * 10**8, n)),
        "column_sizes": _map(
            keys, [pa.array(rng.integers(10**4, 10**7, n)) for _ in keys], n, pa.int64()
        ),
        "value_counts": _map(keys, counts, n, pa.int64()),
        "null_value_counts": _map(keys, nulls, n, pa.int64()),
        "lower_bounds": _map(keys, [lows[k] for k in keys], n, pa.binary()),
        "upper_bounds": _map(keys, [highs[k] for k in keys], n, pa.binary()),
        "split_offsets": pa.array([[4]] * n, pa.list_(pa.int64())),
        "sort_order_id": pa.array(np.zeros(n, dtype=np.int32)),
    }
    arrays = []
    for f in schema:
        c = cols.get(f.name)
        arrays.append(c.cast(f.type) if c is not None else pa.nulls(n, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _write(batch: pa.RecordBatch, path: str) -> tuple[bytes, pa.RecordBatch]:
    return write_manifest(
        batch,
        format_version=2,
        schema_json=json.dumps(SCHEMA),
        spec_json=json.dumps(SPEC),
        spec_id=0,
        path=path,
        snapshot_id=SNAPSHOT_ID,
    )


def generate(root: Path, n_files: int = 200_000, seed: int = 42) -> str:
    """Writes the table under ``root``; returns the metadata file's path."""
    meta = root / "metadata"
    meta.mkdir(parents=True, exist_ok=True)
    empty = pa.RecordBatch.from_pylist([], schema=pa.schema([pa.field("status", pa.int32())]))
    schema = read_manifest(_write(empty, "x")[0]).schema
    rng = np.random.default_rng(seed)
    n_manifests = max(1, n_files // PER_MANIFEST)
    rows = []
    for m in range(n_manifests):
        path = meta / f"manifest-{m:05d}.avro"
        data, row = _write(entries(m, n_manifests, schema, rng), str(path))
        path.write_bytes(data)
        rows.append(row)
    list_path = meta / f"snap-{SNAPSHOT_ID}-1.avro"
    lst, _ = write_manifest_list(
        pa.Table.from_batches(rows),
        format_version=2,
        snapshot_id=SNAPSHOT_ID,
        sequence_number=1,
    )
    list_path.write_bytes(lst)
    ts = 1_732_000_000_000
    metadata = {
        "format-version": 2,
        "table-uuid": str(uuid.UUID(int=seed)),
        "location": str(root),
        "last-sequence-number": 1,
        "last-updated-ms": ts,
        "last-column-id": len(FIELDS),
        "current-schema-id": 0,
        "schemas": [SCHEMA],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": SPEC}],
        "last-partition-id": 1001,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {},
        "current-snapshot-id": SNAPSHOT_ID,
        "refs": {"main": {"snapshot-id": SNAPSHOT_ID, "type": "branch"}},
        "snapshots": [
            {
                "sequence-number": 1,
                "snapshot-id": SNAPSHOT_ID,
                "timestamp-ms": ts,
                "summary": {"operation": "append"},
                "manifest-list": str(list_path),
                "schema-id": 0,
            }
        ],
        "snapshot-log": [{"timestamp-ms": ts, "snapshot-id": SNAPSHOT_ID}],
        "metadata-log": [],
    }
    out = meta / "v1.metadata.json"
    out.write_text(json.dumps(metadata))
    return str(out)


if __name__ == "__main__":
    target = Path(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
    print(generate(target, count))
