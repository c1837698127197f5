"""Snapshot expiry and orphan removal on local disk, moto and s3proxy; on S3 the deletes go out
as batched ``DeleteObjects`` requests (counted on moto)."""

from __future__ import annotations

import math
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from icefloe.io import FileIO
from icefloe.table import Table
from support.s3 import S3Server, Warehouse
from support.write_util import SCHEMA, catalog, checksum, duckdb_checksum, pyiceberg_read, rows


def _table(tmp_path: Path, warehouse: Warehouse) -> Table:
    t = catalog(tmp_path, warehouse).create_table(
        "ns.t", SCHEMA, properties={"format-version": "2", "write.delete.mode": "merge-on-read"}
    )
    for i in range(4):
        t.append(rows(i * 10, 10))
    t.delete("id < 5")
    t.overwrite(rows(100, 3), "id >= 30")
    return t


def _all_files(t: Table) -> set[str]:
    return {f.location for f in t.io.list_prefix(t.location)}


def _check_reads(t: Table, duckdb_con: Any) -> None:
    data = pc.sort_indices(pyiceberg_read(t), sort_keys=[("id", "ascending")])
    assert len(data) == 28  # ids 5..29 and 100..102
    want = checksum(t.scan().to_arrow())
    assert checksum(pyiceberg_read(t)) == want
    assert duckdb_checksum(duckdb_con, t) == want


def test_expire_deletes_unreachable_files(
    tmp_path: Path, warehouse: Warehouse, duckdb_con: Any
) -> None:
    t = _table(tmp_path, warehouse)
    before = _all_files(t)
    counter = warehouse.server.requests if warehouse.server else None
    seen = counter.snapshot() if counter else None
    steps: list[tuple[int, int]] = []
    result = t.expire_snapshots(
        older_than_ms=int(time.time() * 1000) + 1000,
        progress=lambda done, total: steps.append((done, total)),
    )
    assert len(result.snapshot_ids) == 5 and len(t.snapshots()) == 1
    deleted = set(result.all_files)
    assert deleted and steps[-1] == (len(deleted), len(deleted))
    after = _all_files(t)
    assert before - after == deleted  # exactly the files expiry named are gone
    live = set(t.inspect.files().column("file_path").to_pylist())
    assert live and live <= after  # nothing the table needs was deleted
    _check_reads(t, duckdb_con)
    if counter is not None and seen is not None:
        made = counter.since(seen)
        assert made["DELETE"] == 0  # no single-object deletes
        assert made["POST"] == math.ceil(len(deleted) / 1000)


def test_orphans_are_removed_in_batches(
    tmp_path: Path, warehouse: Warehouse, duckdb_con: Any
) -> None:
    t = _table(tmp_path, warehouse)
    strays = [f"{t.location}/data/stray-{i}.parquet" for i in range(5)]
    strays.append(f"{t.location}/metadata/stray.avro")
    for location in strays:
        t.io.new_output(location).write(b"orphan")
    before = _all_files(t)
    assert t.remove_orphan_files(timedelta(days=-1), dry_run=True) == sorted(strays)
    assert _all_files(t) == before
    counter = warehouse.server.requests if warehouse.server else None
    seen = counter.snapshot() if counter else None
    steps: list[tuple[int, int]] = []
    removed = t.remove_orphan_files(
        timedelta(days=-1), progress=lambda done, total: steps.append((done, total))
    )
    assert removed == sorted(strays) and steps[-1] == (6, 6)
    assert _all_files(t) == before - set(strays)
    _check_reads(t, duckdb_con)
    if counter is not None and seen is not None:
        made = counter.since(seen)
        assert made["DELETE"] == 0 and made["POST"] == 1


def _keys(server: S3Server, location: str) -> list[str]:
    bucket, _, prefix = location.removeprefix("s3://").partition("/")
    listing = server.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return [f"s3://{bucket}/{o['Key']}" for o in listing.get("Contents", [])]


def test_keys_with_an_empty_segment_are_removed_by_their_exact_key(
    tmp_path: Path, moto_s3: S3Server
) -> None:
    """An object another tool wrote right below a directory with an empty segment
    (``data//x.parquet``) is listed, removed as an orphan and deleted with its prefix by that
    key; it used to be listed as ``data/x.parquet``, reported removed and left stored."""
    wh = Warehouse("moto", moto_s3.fresh_location(), moto_s3.properties(), moto_s3)
    t = catalog(tmp_path, wh).create_table("ns.t", SCHEMA)
    t.append(rows(0, 3))
    client, bucket = moto_s3.client(), moto_s3.bucket()
    key = f"{t.location}/data//stray.parquet".removeprefix(f"s3://{bucket}/")
    client.put_object(Bucket=bucket, Key=key, Body=b"orphan")
    assert f"s3://{bucket}/{key}" in _all_files(t)
    assert t.remove_orphan_files(timedelta(days=-1)) == [f"s3://{bucket}/{key}"]
    assert _keys(moto_s3, f"s3://{bucket}/{key}") == []
    assert t.scan().to_arrow().num_rows == 3

    prefix = moto_s3.fresh_location()
    written = [f"{prefix}//lead.bin", f"{prefix}/a//b.bin", f"{prefix}/plain.bin"]
    for location in written:
        client.put_object(Bucket=bucket, Key=location.removeprefix(f"s3://{bucket}/"), Body=b"x")
    io = FileIO(moto_s3.properties())
    assert sorted(f.location for f in io.list_prefix(prefix)) == sorted(written)
    io.delete_prefix(prefix)
    assert _keys(moto_s3, prefix) == []


def test_orphans_with_a_control_character_in_their_name_are_removed(
    tmp_path: Path, warehouse: Warehouse
) -> None:
    """Files another tool wrote with a tab in their name are removed as orphans with the
    others; one such file used to fail the whole removal with a ValidationError, leaving
    every orphan in place."""
    t = catalog(tmp_path, warehouse).create_table("ns.t", SCHEMA)
    t.append(rows(0, 3))
    strays = [f"{t.location}/data/stray\tcopy.parquet", f"{t.location}/data/plain.parquet"]
    if warehouse.server is None:
        for location in strays:
            Path(location.removeprefix("file://")).write_bytes(b"orphan")
    else:
        bucket = strays[0].removeprefix("s3://").split("/", 1)[0]
        for location in strays:
            key = location.removeprefix(f"s3://{bucket}/")
            warehouse.server.client().put_object(Bucket=bucket, Key=key, Body=b"orphan")
    before = _all_files(t)
    assert set(strays) <= before
    assert t.remove_orphan_files(timedelta(days=-1)) == sorted(strays)
    assert _all_files(t) == before - set(strays)
    if warehouse.server is None:
        assert not any(Path(s.removeprefix("file://")).exists() for s in strays)
    else:
        assert all(_keys(warehouse.server, s) == [] for s in strays)
    assert t.scan().to_arrow().num_rows == 3
