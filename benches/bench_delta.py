"""Delta -> Iceberg conversion benchmarks on a generated Delta log (no data files needed).

The table has 200,000 files (2,000 in ``--quick``) in a classic checkpoint at version 1, each
with statistics for four columns and a row-tracking base row id, plus one-file JSON commits
after it. Cases:

* ``delta-convert-full``: a full conversion into a fresh path-only table (read the log, turn
  every file's stats into metrics, write the manifest, manifest list and metadata), against
  reading the checkpoint columns a converter needs with pyarrow (the floor: every ``add``
  field but the stats text, which ``stats_parsed`` makes redundant) and reading the whole
  checkpoint; the checkpoint carries ``stats_parsed`` as Delta writes it by default;
* ``delta-convert-full-json-stats``: the same from a checkpoint without ``stats_parsed``, so
  every file's stats JSON is parsed;
* ``delta-sync-commit``: an incremental sync of one more one-file commit.
"""

from __future__ import annotations

import json
import tempfile
from itertools import count
from pathlib import Path

import pyarrow as pa

from harness import Harness

SCHEMA = {
    "type": "struct",
    "fields": [
        {
            "name": name,
            "type": t,
            "nullable": True,
            "metadata": {
                "delta.columnMapping.id": i + 1,
                "delta.columnMapping.physicalName": f"col-{name}",
            },
        }
        for i, (name, t) in enumerate(
            [("id", "long"), ("name", "string"), ("ts", "timestamp"), ("amount", "double")]
        )
    ],
}
PROTOCOL = {
    "minReaderVersion": 3,
    "minWriterVersion": 7,
    "readerFeatures": ["columnMapping", "deletionVectors"],
    "writerFeatures": [
        "columnMapping",
        "deletionVectors",
        "rowTracking",
        "domainMetadata",
        "icebergCompatV3",
    ],
}
CONFIG = {
    "delta.enableIcebergCompatV3": "true",
    "delta.columnMapping.mode": "name",
    "delta.columnMapping.maxColumnId": "4",
    "delta.enableRowTracking": "true",
    "delta.rowTracking.materializedRowIdColumnName": "_row-id-col",
    "delta.rowTracking.materializedRowCommitVersionColumnName": "_row-commit-version-col",
}
ROWS = 1000


def _stats(i: int) -> str:
    lo, hi = i * ROWS, i * ROWS + ROWS - 1
    return json.dumps(
        {
            "numRecords": ROWS,
            "minValues": {
                "col-id": lo,
                "col-name": f"name-{lo:09d}",
                "col-ts": "2024-01-01T00:00:00.000Z",
                "col-amount": -1.5,
            },
            "maxValues": {
                "col-id": hi,
                "col-name": f"name-{hi:09d}",
                "col-ts": "2024-12-31T23:59:59.999Z",
                "col-amount": 1e6,
            },
            "nullCount": {"col-id": 0, "col-name": 0, "col-ts": 0, "col-amount": 3},
            "tightBounds": True,
        },
        separators=(",", ":"),
    )


def _stats_parsed(files: int) -> pa.Array:
    """The checkpoint's typed copy of the statistics (Delta writes it by default)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    lo = np.arange(files, dtype=np.int64) * ROWS
    hi = lo + ROWS - 1

    def names(v: np.ndarray) -> pa.Array:
        digits = pc.utf8_lpad(pa.array(v).cast(pa.string()), 9, "0")
        return pc.binary_join_element_wise("name-", digits, "")

    def ts(text: str) -> pa.Array:
        return pa.repeat(pa.scalar(text).cast(pa.timestamp("us", "UTC")), files)

    def bounds(ids: np.ndarray, t: str, amount: float) -> pa.Array:
        return pa.StructArray.from_arrays(
            [pa.array(ids), names(ids), ts(t), pa.repeat(pa.scalar(amount), files)],
            names=["col-id", "col-name", "col-ts", "col-amount"],
        )

    zero = pa.repeat(pa.scalar(0, pa.int64()), files)
    counts = pa.StructArray.from_arrays(
        [zero, zero, zero, pa.repeat(pa.scalar(3, pa.int64()), files)],
        names=["col-id", "col-name", "col-ts", "col-amount"],
    )
    return pa.StructArray.from_arrays(
        [
            pa.repeat(pa.scalar(ROWS, pa.int64()), files),
            bounds(lo, "2024-01-01T00:00:00.000Z", -1.5),
            bounds(hi, "2024-12-31T23:59:59.999Z", 1e6),
            counts,
            pa.repeat(pa.scalar(True), files),
        ],
        names=["numRecords", "minValues", "maxValues", "nullCount", "tightBounds"],
    )


def generate(root: Path, files: int, commits: int, stats_parsed: bool = True) -> Path:
    """A Delta table with ``files`` files in a checkpoint at version 1 (with ``stats_parsed``
    unless told otherwise), then ``commits`` one-file commits."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    log = root / "_delta_log"
    log.mkdir(parents=True)
    meta = {
        "id": "bench",
        "schemaString": json.dumps(SCHEMA),
        "partitionColumns": [],
        "configuration": list(CONFIG.items()),
        "createdTime": 0,
    }
    hwm = files * ROWS - 1
    domain = json.dumps({"rowIdHighWaterMark": hwm})
    adds = pa.table(
        {
            "path": [f"part-{i:07d}.parquet" for i in range(files)],
            "partitionValues": pa.array([[]] * files, pa.map_(pa.string(), pa.string())),
            "size": pa.array([4096] * files, pa.int64()),
            "modificationTime": pa.array([0] * files, pa.int64()),
            "dataChange": pa.array([True] * files),
            "stats": [_stats(i) for i in range(files)],
            "baseRowId": pa.array([i * ROWS for i in range(files)], pa.int64()),
            "defaultRowCommitVersion": pa.array([1] * files, pa.int64()),
        }
    )
    arrays = [c.combine_chunks() for c in adds.columns]
    names = list(adds.column_names)
    if stats_parsed:
        arrays.append(_stats_parsed(files))
        names.append("stats_parsed")
    add_col = pa.StructArray.from_arrays(arrays, names=names)
    n = files + 3
    nulls = [None] * 3
    table = pa.table(
        {
            "add": pa.concat_arrays([pa.nulls(3, add_col.type), add_col]),
            "protocol": pa.array([PROTOCOL, None, None] + [None] * files),
            "metaData": pa.array(
                [None, meta, None] + [None] * files,
                pa.struct(
                    [
                        ("id", pa.string()),
                        ("schemaString", pa.string()),
                        ("partitionColumns", pa.list_(pa.string())),
                        ("configuration", pa.map_(pa.string(), pa.string())),
                        ("createdTime", pa.int64()),
                    ]
                ),
            ),
            "domainMetadata": pa.array(
                [
                    *nulls[:2],
                    {"domain": "delta.rowTracking", "configuration": domain, "removed": False},
                ]
                + [None] * files
            ),
        }
    )
    assert table.num_rows == n
    pq.write_table(table, log / f"{1:020d}.checkpoint.parquet")
    for v in range(2, 2 + commits):
        base = hwm + 1 + (v - 2) * ROWS
        add = {
            "path": f"new-{v}.parquet",
            "partitionValues": {},
            "size": 4096,
            "modificationTime": 0,
            "dataChange": True,
            "stats": _stats(base // ROWS),
            "baseRowId": base,
            "defaultRowCommitVersion": v,
        }
        dom = {"rowIdHighWaterMark": base + ROWS - 1}
        lines = [
            {"commitInfo": {"timestamp": v, "operation": "WRITE"}},
            {"add": add},
            {
                "domainMetadata": {
                    "domain": "delta.rowTracking",
                    "configuration": json.dumps(dom),
                    "removed": False,
                }
            },
        ]
        (log / f"{v:020d}.json").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return log / f"{1:020d}.checkpoint.parquet"


def run(h: Harness) -> None:
    import pyarrow.parquet as pq

    from icefloe.delta import convert

    files = h.size(200_000, 2_000)
    syncs = h.repeat + 2
    tmp = Path(tempfile.mkdtemp(prefix="icefloe-bench-delta-"))
    runs = count()
    for name, parsed in (("delta-convert-full", True), ("delta-convert-full-json-stats", False)):
        root = tmp / name
        checkpoint = generate(root, files, syncs, stats_parsed=parsed)

        def full(root: Path = root) -> None:
            out = str(tmp / f"full-{next(runs)}")
            convert(str(root), metadata_location=out, up_to_version=1)

        def whole(checkpoint: Path = checkpoint) -> None:
            pq.read_table(checkpoint, columns=["add", "metaData", "protocol", "domainMetadata"])

        def floor(checkpoint: Path = checkpoint, parsed: bool = parsed) -> None:
            pf = pq.ParquetFile(checkpoint)
            add = pf.schema_arrow.field("add").type
            skip = {"stats"} if parsed else set()  # the text is not needed beside stats_parsed
            cols = [f"add.{f.name}" for f in add if f.name not in skip]
            pf.read(columns=[*cols, "metaData", "protocol", "domainMetadata"])

        h.compare(
            name,
            files,
            "file",
            ours=full,
            peers={"checkpoint read (floor)": floor, "whole checkpoint read": whole},
            target=f"{files:,} files < 2 s",
        )
    root = tmp / "delta-convert-full"
    sync_dir = str(tmp / "sync")
    convert(str(root), metadata_location=sync_dir, up_to_version=1)
    version = count(2)

    def sync() -> None:
        convert(str(root), metadata_location=sync_dir, up_to_version=next(version))

    h.compare("delta-sync-commit", 1, "commit", ours=sync, peers={}, target="< 100 ms", warmup=1)
