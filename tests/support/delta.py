"""Hand-written Delta logs for tests of icefloe.delta (no JVM): JSON commits and checkpoints of
each kind, with IcebergCompatV3 metadata, written byte for byte as the Delta protocol says."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "delta"
#: Fixtures converted with ``check=False``: Delta 4.4.0 fails every write to a variant column
#: of an IcebergCompatV3 table, so this one has column mapping and row tracking but not the flag.
UNCHECKED = {"variant"}
#: Fixtures the converter refuses: Delta 4.4.0's in-place upgrade leaves the older files
#: without ``baseRowId`` (``row-ids-assigned``); tested on their own.
REFUSED = {"upgrade"}
#: Every fixture the converter converts.
CONVERTIBLE = sorted(
    p.name for p in FIXTURES.iterdir() if (p / "table").is_dir() and p.name not in REFUSED
)

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


def field(
    name: str, type_: Any, fid: int, nested: dict[str, int] | None = None, nullable: bool = True
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "delta.columnMapping.id": fid,
        "delta.columnMapping.physicalName": f"col-{name}",
    }
    if nested:
        meta["delta.columnMapping.nested.ids"] = nested
    return {"name": name, "type": type_, "nullable": nullable, "metadata": meta}


SCHEMA = {
    "type": "struct",
    "fields": [field("id", "long", 1), field("name", "string", 2), field("part", "integer", 3)],
}


def metadata(
    schema: dict[str, Any] | None = None,
    partitions: tuple[str, ...] = (),
    **config: str,
) -> dict[str, Any]:
    conf = {
        "delta.enableIcebergCompatV3": "true",
        "delta.columnMapping.mode": "name",
        "delta.columnMapping.maxColumnId": "3",
        "delta.enableRowTracking": "true",
        "delta.enableDeletionVectors": "true",
        "delta.rowTracking.materializedRowIdColumnName": "_row-id-col-x",
        "delta.rowTracking.materializedRowCommitVersionColumnName": "_row-commit-version-col-x",
    }
    conf.update(config)
    return {
        "id": "00000000-0000-0000-0000-000000000001",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(schema or SCHEMA),
        "partitionColumns": list(partitions),
        "configuration": conf,
        "createdTime": 1700000000000,
    }


def add(
    path: str,
    rows: int = 10,
    *,
    base_row_id: int | None = 0,
    version: int | None = 1,
    dv: dict[str, Any] | None = None,
    partition: dict[str, str | None] | None = None,
    stats: dict[str, Any] | None = None,
    data_change: bool = True,
    size: int | None = None,
) -> dict[str, Any]:
    """An add action; ``size`` of a file the test wrote (a made-up one otherwise, which a
    read refuses: it checks the length of the file it opens)."""
    s = stats if stats is not None else {"numRecords": rows}
    a: dict[str, Any] = {
        "path": path,
        "partitionValues": partition or {},
        "size": 100 + rows if size is None else size,
        "modificationTime": 1700000000000,
        "dataChange": data_change,
        "stats": json.dumps(s),
    }
    if dv is not None:
        a["deletionVector"] = dv
    if base_row_id is not None:
        a["baseRowId"] = base_row_id
        a["defaultRowCommitVersion"] = version
    return {"add": a}


def remove(path: str, dv: dict[str, Any] | None = None, data_change: bool = True) -> dict[str, Any]:
    r: dict[str, Any] = {
        "path": path,
        "deletionTimestamp": 1700000000000,
        "dataChange": data_change,
    }
    if dv is not None:
        r["deletionVector"] = dv
    return {"remove": r}


def row_tracking(hwm: int) -> dict[str, Any]:
    conf = json.dumps({"rowIdHighWaterMark": hwm, "domainName": "delta.rowTracking"})
    return {
        "domainMetadata": {"domain": "delta.rowTracking", "configuration": conf, "removed": False}
    }


def commit_info(ts: int | None = None, op: str = "WRITE") -> dict[str, Any]:
    info: dict[str, Any] = {"timestamp": ts or 1700000000000, "operation": op}
    if ts is not None:
        info["inCommitTimestamp"] = ts
    return {"commitInfo": info}


class DeltaTableWriter:
    """Writes a Delta table's log under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.log = root / "_delta_log"
        self.log.mkdir(parents=True, exist_ok=True)

    def commit(self, version: int, *actions: dict[str, Any]) -> Path:
        path = self.log / f"{version:020d}.json"
        path.write_text("".join(json.dumps(a) + "\n" for a in actions))
        return path

    def create(self, *actions: dict[str, Any], **config: str) -> None:
        self.commit(
            0,
            commit_info(op="CREATE TABLE"),
            {"protocol": PROTOCOL},
            {"metaData": metadata(**config)},
            *actions,
        )

    def checkpoint(
        self, version: int, actions: list[dict[str, Any]], name: str | None = None
    ) -> Path:
        """A classic (or, with ``name``, differently named) Parquet checkpoint of ``actions``."""
        path = self.log / (name or f"{version:020d}.checkpoint.parquet")
        pq.write_table(checkpoint_table(actions), path)
        return path


_ADD_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", pa.map_(pa.string(), pa.string())),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        (
            "deletionVector",
            pa.struct(
                [
                    ("storageType", pa.string()),
                    ("pathOrInlineDv", pa.string()),
                    ("offset", pa.int32()),
                    ("sizeInBytes", pa.int32()),
                    ("cardinality", pa.int64()),
                ]
            ),
        ),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
)
_REMOVE_TYPE = pa.struct(
    [("path", pa.string()), ("deletionTimestamp", pa.int64()), ("dataChange", pa.bool_())]
)
_PROTOCOL_TYPE = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", pa.list_(pa.string())),
        ("writerFeatures", pa.list_(pa.string())),
    ]
)
_META_TYPE = pa.struct(
    [
        ("id", pa.string()),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", pa.map_(pa.string(), pa.string())),
        ("createdTime", pa.int64()),
    ]
)
_DOMAIN_TYPE = pa.struct(
    [("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())]
)
_SIDECAR_TYPE = pa.struct([("path", pa.string()), ("sizeInBytes", pa.int64())])


def checkpoint_table(actions: list[dict[str, Any]]) -> pa.Table:
    """Actions as a checkpoint's Parquet table (one action per row)."""
    cols: dict[str, list[Any]] = {
        k: [] for k in ("add", "remove", "protocol", "metaData", "domainMetadata", "sidecar")
    }
    for a in actions:
        for k in cols:
            v = a.get(k)
            if v is not None and k in ("add", "metaData"):
                v = dict(v)
                key = "partitionValues" if k == "add" else "configuration"
                v[key] = list((v.get(key) or {}).items())
            cols[k].append(v)
    types = {
        "add": _ADD_TYPE,
        "remove": _REMOVE_TYPE,
        "protocol": _PROTOCOL_TYPE,
        "metaData": _META_TYPE,
        "domainMetadata": _DOMAIN_TYPE,
        "sidecar": _SIDECAR_TYPE,
    }
    return pa.table({k: pa.array(v, types[k]) for k, v in cols.items()})


def fixture(name: str, dest: Path) -> Path:
    """A private copy of the committed Delta fixture ``name``; returns its table directory."""
    shutil.copytree(FIXTURES / name, dest / name)
    return dest / name / "table"
