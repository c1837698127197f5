"""Projected manifest decoding: a subset of columns and of metric-map keys, checked against the
full decode of the same bytes (itself checked against PyIceberg and fastavro elsewhere)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.exceptions import CorruptFileError, UnsupportedFeatureError, ValidationError
from icefloe.manifest import read_manifest, read_manifest_list, read_manifests, write_manifest
from support.manifest_tables import make_table, read_bytes

MAPS = [
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
]
ALWAYS = {
    "status",
    "snapshot_id",
    "sequence_number",
    "file_sequence_number",
    "content",
    "record_count",
    "first_row_id",
}


def _manifests(tmp_path: Path, version: int) -> list[bytes]:
    """PyIceberg's manifests of a partitioned table; v3 ones (which PyIceberg cannot write)
    are its v2 manifests rewritten by icefloe, so that v3 row-id inheritance applies."""
    table = make_table(tmp_path, min(version, 2), "multi", appends=2)
    snap = table.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    lst = read_manifest_list(read_bytes(table, snap.manifest_list))
    blobs = [read_bytes(table, p) for p in lst.column("manifest_path").to_pylist()]
    if version < 3:
        return blobs
    out = []
    for b in blobs:
        batch = read_manifest(b)
        md = batch.schema.metadata
        data, _ = write_manifest(
            batch,
            format_version=3,
            schema_json=md[b"schema"].decode(),
            spec_json=md[b"partition-spec"].decode(),
            spec_id=0,
            path="m",
        )
        out.append(data)
    return out


def _kept_pairs(value: Any, ids: set[int]) -> Any:
    if value is None:
        return None
    return [(k, v) for k, v in value if k in ids]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_projection_equals_the_full_decode_restricted(tmp_path: Path, version: int) -> None:
    blobs = _manifests(tmp_path, version)
    full = [read_manifest(b, snapshot_id=7, sequence_number=3, first_row_id=100) for b in blobs]
    assert sum(b.num_rows for b in full) > 0
    columns = ["file_path", "partition", "lower_bounds", "upper_bounds", "null_value_counts"]
    for ids in [{1}, {3, 4}, set(), {1, 2, 3, 4, 999}]:
        got = [
            read_manifest(
                b,
                snapshot_id=7,
                sequence_number=3,
                first_row_id=100,
                columns=columns,
                stats_ids=sorted(ids),
            )
            for b in blobs
        ]
        for f, g in zip(full, got, strict=True):
            assert g.schema == f.schema
            for name in f.schema.names:
                want = f.column(name).to_pylist()
                have = g.column(name).to_pylist()
                if name in MAPS and name in columns:
                    assert have == [_kept_pairs(v, ids) for v in want], name
                elif name in columns or name in ALWAYS:
                    assert have == want, name
                else:
                    assert have == [None] * f.num_rows, name
    # the parallel reader projects alike
    plain = read_manifests(blobs)
    many = read_manifests(blobs, columns=["file_path"], stats_ids=[1], threads=2)
    for f, g in zip(plain, many, strict=True):
        assert g.column("file_path").equals(f.column("file_path"))
        assert g.column("upper_bounds").null_count == g.num_rows
    # a projection of everything is the full decode
    everything = read_manifest(
        blobs[0],
        snapshot_id=7,
        sequence_number=3,
        first_row_id=100,
        columns=full[0].schema.names,
    )
    assert everything.equals(full[0])


def test_stats_only_projection_and_unknown_names(tmp_path: Path) -> None:
    blob = _manifests(tmp_path, 2)[0]
    full = read_manifest(blob)
    only = read_manifest(blob, stats_ids=[2])
    for name in full.schema.names:
        want = full.column(name).to_pylist()
        if name in MAPS:
            assert only.column(name).to_pylist() == [_kept_pairs(v, {2}) for v in want]
        else:
            assert only.column(name).to_pylist() == want
    with pytest.raises(ValidationError, match="no_such_column"):
        read_manifest(blob, columns=["file_path", "no_such_column"])
    reserved = read_manifest(blob, stats_ids=[2, 2147483546])
    for name in MAPS:
        assert reserved.column(name).to_pylist() == only.column(name).to_pylist()


_RESERVED_STATS = """
import resource, sys
from pathlib import Path
from icefloe.manifest import read_manifest
size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
            if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (size + (1 << 30), resource.RLIM_INFINITY))
got = read_manifest(Path(sys.argv[1]).read_bytes(), stats_ids=[2147483546])
print(sorted(k for row in got.column("lower_bounds").to_pylist() for k, _ in row))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_stats_of_reserved_ids_are_read_in_bounded_memory(tmp_path: Path) -> None:
    """A position-delete manifest's ``file_path`` bounds (field id 2147483546) are projected
    within 1 GiB of address space (a flag per id up to the largest took 2 GB)."""
    import subprocess
    import sys

    from icefloe.catalog.sql import SqlCatalog

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table(
        "db.t",
        pa.schema([pa.field("id", pa.int64())]),
        properties={"format-version": "2", "write.delete.mode": "merge-on-read"},
    )
    t.append(pa.table({"id": pa.array(range(10), pa.int64())}))
    t.delete("id = 3")
    manifests = t.inspect.manifests().to_pylist()
    (deletes,) = [m["path"] for m in manifests if m["content"] == 1]
    path = tmp_path / "deletes.avro"
    path.write_bytes(t.io.new_input(deletes).read())
    out = subprocess.run(
        [sys.executable, "-c", _RESERVED_STATS, str(path)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[2147483546]"


def test_projected_decode_of_corrupt_input_raises_corrupt_file_error(tmp_path: Path) -> None:
    blob = _manifests(tmp_path, 2)[0]
    batch = read_manifest(blob)
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
    rnd = random.Random(4)
    corrupt = 0
    for i in range(400):
        if i % 2:
            bad = plain[: rnd.randrange(len(plain))]
        else:
            b = bytearray(plain)
            for _ in range(rnd.randint(1, 3)):
                b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
            bad = bytes(b)
        try:
            read_manifest(bad, name="p.avro", columns=["file_path"], stats_ids=[1])
        except CorruptFileError as e:
            assert "p.avro" in str(e)
            corrupt += 1
        except UnsupportedFeatureError as e:
            assert "codec" in str(e) or "format-version" in str(e) or "union" in str(e)
    assert corrupt > 150


def test_projection_of_an_empty_manifest() -> None:
    empty = pa.RecordBatch.from_pylist([], schema=pa.schema([pa.field("status", pa.int32())]))
    data, _ = write_manifest(
        empty,
        format_version=2,
        schema_json='{"type": "struct", "fields": []}',
        spec_json="[]",
        spec_id=0,
        path="m",
    )
    back = read_manifest(data, columns=["file_path"], stats_ids=[])
    assert back.num_rows == 0 and back.schema == read_manifest(data).schema
