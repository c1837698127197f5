"""Manifest decode and encode: 200 manifests x 1,000 data files, 10 columns with full stats.

The manifests are written in the Java reference's layout (v2 Avro schema with field ids, record
names ``manifest_entry``/``r2``/``r102``, deflate) by icefloe's writer; PyIceberg 0.12 and
fastavro decode the same bytes in the same run.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import random
import struct
import tempfile
from pathlib import Path

import fastavro
import pyarrow as pa

from harness import Harness
from icefloe.manifest import read_manifest, read_manifests, write_manifest

COLUMNS = 10
SCHEMA = json.dumps(
    {
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": i + 1, "name": f"c{i}", "required": False, "type": "long"}
            for i in range(COLUMNS - 1)
        ]
        + [{"id": COLUMNS, "name": "ts", "required": False, "type": "timestamp"}],
    }
)
SPEC = json.dumps(
    [
        {"name": "c0_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1000},
        {"name": "ts_day", "transform": "day", "source-id": COLUMNS, "field-id": 1001},
    ]
)


def _entries(n: int, schema: pa.Schema, seed: int = 0) -> pa.RecordBatch:
    rnd = random.Random(seed)
    rows = []
    ids = range(1, COLUMNS + 1)
    for i in range(n):
        rows.append(
            {
                "status": 1,
                "snapshot_id": 1234567890123,
                "sequence_number": None,
                "file_sequence_number": None,
                "content": 0,
                "file_path": f"s3://bucket/warehouse/db/tbl/data/ts_day=2024-01-{i % 28 + 1:02d}/"
                f"00000-{i}-3b2a1f0e-9c8d-4e5f-8a7b-6c5d4e3f2a1b-{i:05d}.parquet",
                "file_format": "PARQUET",
                "partition": {
                    "c0_bucket": i % 16,
                    "ts_day": dt.date(2024, 1, 1) + dt.timedelta(days=i % 28),
                },
                "record_count": rnd.randint(1000, 1_000_000),
                "file_size_in_bytes": rnd.randint(10**5, 10**9),
                "column_sizes": [(c, rnd.randint(100, 10**7)) for c in ids],
                "value_counts": [(c, rnd.randint(1000, 10**6)) for c in ids],
                "null_value_counts": [(c, rnd.randint(0, 100)) for c in ids],
                "nan_value_counts": [(c, 0) for c in ids],
                "lower_bounds": [(c, struct.pack("<q", rnd.randint(0, 10**9))) for c in ids],
                "upper_bounds": [(c, struct.pack("<q", rnd.randint(10**9, 10**12))) for c in ids],
                "split_offsets": [4],
                "sort_order_id": 0,
            }
        )
    return pa.RecordBatch.from_pylist(rows, schema=schema)


def _write(batch: pa.RecordBatch, path: str) -> bytes:
    data, _ = write_manifest(
        batch,
        format_version=2,
        schema_json=SCHEMA,
        spec_json=SPEC,
        spec_id=0,
        path=path,
        snapshot_id=1234567890123,
    )
    return data


def run(h: Harness) -> None:
    n_manifests = h.size(200, 10)
    per = 1000
    total = n_manifests * per
    empty = pa.RecordBatch.from_pylist([], schema=pa.schema([pa.field("status", pa.int32())]))
    schema = read_manifest(_write(empty, "x")).schema
    batch = _entries(per, schema)
    tmp = Path(tempfile.mkdtemp(prefix="icefloe-bench-"))
    blobs = []
    for i in range(n_manifests):
        data = _write(batch, f"m{i}.avro")
        (tmp / f"m{i}.avro").write_bytes(data)
        blobs.append(data)

    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import ManifestContent, ManifestFile

    fio = PyArrowFileIO()
    pi_files = [
        ManifestFile.from_args(
            manifest_path=str(tmp / f"m{i}.avro"),
            manifest_length=len(blobs[i]),
            partition_spec_id=0,
            content=ManifestContent.DATA,
            sequence_number=1,
            min_sequence_number=1,
            added_snapshot_id=1234567890123,
        )
        for i in range(n_manifests)
    ]

    def ours_1() -> object:
        return read_manifests(blobs, threads=1)

    def ours_all() -> object:
        return read_manifests(blobs)

    def pyiceberg() -> object:
        return [m.fetch_manifest_entry(fio, discard_deleted=False) for m in pi_files]

    def fast() -> object:
        return [list(fastavro.reader(io.BytesIO(b))) for b in blobs]

    h.compare(
        f"decode {n_manifests}x{per} entries, 1 thread",
        total,
        "entries",
        ours_1,
        {"pyiceberg 0.12": pyiceberg, "fastavro": fast},
        target=">= 1 M entries/s on one core",
    )
    h.compare(
        f"decode {n_manifests}x{per} entries, all cores",
        total,
        "entries",
        ours_all,
        {},
        target="scales with cores",
    )

    def ours_projected() -> object:
        # what a scan filtering on one column needs: paths, partitions, that column's stats
        return read_manifests(
            blobs,
            threads=1,
            columns=[
                "file_path",
                "file_format",
                "partition",
                "file_size_in_bytes",
                "null_value_counts",
                "nan_value_counts",
                "lower_bounds",
                "upper_bounds",
            ],
            stats_ids=[1],
        )

    h.compare(
        f"decode {n_manifests}x{per} entries, 1 thread, projected (1 column's stats)",
        total,
        "entries",
        ours_projected,
        {},
        target="cheaper than the full decode",
    )

    records = list(fastavro.reader(io.BytesIO(blobs[0])))
    avro_schema = fastavro.parse_schema(
        json.loads(fastavro.reader(io.BytesIO(blobs[0])).metadata["avro.schema"])
    )
    n_write = h.size(50, 5)

    def ours_write() -> object:
        return [_write(batch, f"m{i}") for i in range(n_write)]

    def fast_write() -> object:
        out = []
        for _ in range(n_write):
            buf = io.BytesIO()
            fastavro.writer(buf, avro_schema, records, codec="deflate")
            out.append(buf.getvalue())
        return out

    h.compare(
        f"write {n_write}x{per} entries (deflate)",
        n_write * per,
        "entries",
        ours_write,
        {"fastavro": fast_write},
        target=">= 300 k entries/s",
    )
