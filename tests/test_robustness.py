"""Damaged tables fail loudly through the public API: corrupt metadata JSON, a truncated or
garbled Parquet data file, a missing data or delete file and a deletion vector whose
cardinality disagrees with its manifest entry each raise a typed ``icefloe.exceptions`` error
that names the file, from scans, row-level writes and compaction alike."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.exceptions import CorruptFileError, IcebergError, NotFoundError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.table.producer import SnapshotProducer
from icefloe.table.static import StaticTable
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField
from icefloe.write.files import DataFile
from support.rowlevel_util import live_data_files, live_deletes
from support.write_util import catalog

SCHEMA = Schema(NestedField(1, "k", LongType(), True), NestedField(2, "v", LongType()))
SPEC = PartitionSpec(PartitionField(1, 1000, parse_transform("bucket[2]"), "kb"))


ALL = pa.array(range(200), pa.int64())


def _table(tmp_path: Path, version: int = 3) -> Any:
    t = catalog(tmp_path).create_table(
        "ns.t",
        SCHEMA,
        partition_spec=SPEC,
        properties={"format-version": str(version), "write.delete.mode": "merge-on-read"},
    )
    t.append(pa.table({"k": ALL, "v": ALL}))
    return t


def _local(uri: str) -> str:
    return uri.removeprefix("file://")


def _operations(t: Any) -> list[tuple[str, Callable[[], Any]]]:
    return [
        ("scan", lambda: t.scan().to_arrow()),
        # every operation touches every file: the damaged one cannot be pruned, and neither
        # a file's partition nor its metrics prove the delete for every row (4 and 5 lie in
        # both buckets' bounds, bucket[2] puts them in different buckets)
        ("delete", lambda: t.delete("k != 4 and k != 5")),
        ("upsert", lambda: t.upsert(pa.table({"k": ALL, "v": ALL}), ["k"])),
        ("compact", lambda: t.rewrite_data_files(min_input_files=1)),
    ]


def _fails_naming(t: Any, error: type[IcebergError], name: str) -> None:
    for what, op in _operations(t):
        try:
            op()
        except error as e:
            assert os.path.basename(name) in str(e), (what, e)
        else:
            pytest.fail(f"{what} did not raise {error.__name__}")


@pytest.mark.parametrize(
    "damage",
    [b"", b"[1, 2]", b'{"format-version": 2}', b"\xff\xfe{", "truncate"],
    ids=["empty", "not-an-object", "incomplete", "not-utf8", "truncated"],
)
def test_corrupt_metadata_json_names_the_file(tmp_path: Path, damage: Any) -> None:
    t = _table(tmp_path)
    path = _local(t.metadata_location)
    raw = Path(path).read_bytes()
    Path(path).write_bytes(raw[: len(raw) // 2] if damage == "truncate" else damage)
    name = os.path.basename(path)
    with pytest.raises(CorruptFileError, match=name):
        t.catalog.load_table("ns.t")
    with pytest.raises(CorruptFileError, match=name):
        StaticTable.from_metadata(t.metadata_location)


@pytest.mark.parametrize("cut", ["footer", "most", "all"])
def test_truncated_parquet_data_file(tmp_path: Path, cut: str) -> None:
    t = _table(tmp_path)
    t.delete("k = 3")
    path = _local(live_data_files(t)[0])
    raw = Path(path).read_bytes()
    keep = {"footer": len(raw) - 9, "most": len(raw) // 3, "all": 0}[cut]
    Path(path).write_bytes(raw[:keep])
    _fails_naming(t, CorruptFileError, path)


def test_garbled_parquet_pages_never_escape_as_untyped_errors(tmp_path: Path) -> None:
    """Bytes flipped anywhere past the magic: rows come back or a CorruptFileError names the
    file (a flip in padding or statistics can go unnoticed, as in any Parquet reader)."""
    t = _table(tmp_path)
    path = _local(live_data_files(t)[0])
    raw = Path(path).read_bytes()
    failures = 0
    for i in range(4, len(raw) - 8, max(1, len(raw) // 40)):
        bad = bytearray(raw)
        bad[i] ^= 0x5A
        Path(path).write_bytes(bytes(bad))
        try:
            t.scan().to_arrow()
        except CorruptFileError as e:
            assert os.path.basename(path) in str(e)
            failures += 1
    assert failures > 0


def test_missing_data_file(tmp_path: Path) -> None:
    t = _table(tmp_path)
    path = _local(live_data_files(t)[0])
    os.remove(path)
    _fails_naming(t, NotFoundError, path)


@pytest.mark.parametrize("version", [2, 3])
def test_missing_delete_file(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version)
    t.delete("k = 3 or k = 4")
    paths = live_deletes(t).column("file_path").to_pylist()
    assert paths
    for p in set(paths):
        os.remove(_local(p))
    _fails_naming(t, NotFoundError, paths[0])


@pytest.mark.parametrize("version", [2, 3])
def test_missing_equality_delete_file(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version)
    t.delete_by_keys({"k": [3, 4]}, ["k"])
    paths = live_deletes(t).column("file_path").to_pylist()
    for p in set(paths):
        os.remove(_local(p))
    with pytest.raises(NotFoundError, match=os.path.basename(paths[0])):
        t.scan().to_arrow()
    with pytest.raises(NotFoundError, match=os.path.basename(paths[0])):
        t.rewrite_data_files(min_input_files=1)


def test_dv_cardinality_disagreeing_with_manifest(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.delete("k = 3")
    (entry,) = live_deletes(t).to_pylist()
    # commit a copy of the DV whose manifest entry claims one more deleted row
    copy = entry["file_path"].replace("-deletes.puffin", "-copy.puffin")
    shutil.copy(_local(entry["file_path"]), _local(copy))
    (data_file,) = [f for f in t.inspect.delete_files().to_pylist()]
    wrong = DataFile(
        file_path=copy,
        record_count=entry["record_count"] + 1,
        file_size_in_bytes=os.path.getsize(_local(copy)),
        spec_id=data_file["spec_id"],
        partition=dict(data_file["partition"]),
        content=1,
        file_format="PUFFIN",
        referenced_data_file=entry["referenced_data_file"],
        content_offset=entry["content_offset"],
        content_size_in_bytes=data_file["content_size_in_bytes"],
    )
    tx = t.transaction()
    producer = SnapshotProducer(tx)
    producer.remove_files([entry["file_path"]]).add_delete_files([wrong])
    producer.set_operation("overwrite").commit()
    tx.commit_transaction()
    t.refresh()
    with pytest.raises(CorruptFileError, match=os.path.basename(copy)):
        t.scan().to_arrow()
    with pytest.raises(CorruptFileError, match=os.path.basename(copy)):
        t.delete("k = 9")
    with pytest.raises(CorruptFileError, match=os.path.basename(copy)):
        t.rewrite_data_files(min_input_files=1)


def test_a_snapshot_naming_a_missing_schema_is_corrupt(tmp_path: Path) -> None:
    """Time travel to a snapshot whose schema-id names no schema of the metadata read with the
    current schema, silently; Iceberg Java's ``SnapshotUtil.schemaFor`` refuses it."""
    import json

    t = _table(tmp_path)
    first = t.current_snapshot().snapshot_id
    t.update_schema().add_column("n", LongType()).commit()
    doc = json.loads(Path(_local(t.metadata_location)).read_text())
    doc["snapshots"][0]["schema-id"] = 99
    path = tmp_path / "damaged.metadata.json"
    path.write_text(json.dumps(doc))
    static = StaticTable.from_metadata(str(path))
    assert static.scan().to_arrow().column_names == ["k", "v", "n"]  # the current snapshot
    with pytest.raises(CorruptFileError, match=f"snapshot {first} names schema 99"):
        static.scan(snapshot_id=first).to_arrow()
