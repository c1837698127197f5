"""Out-of-range enum values in well-formed manifests and manifest lists are corrupt files.

Each case rewrites one file of a table icefloe wrote as valid Avro (fastavro, same schema and
metadata) with one value changed: a manifest list's ``content`` (0 data, 1 deletes), an entry's
``status`` (0 existing, 1 added, 2 deleted) or a ``data_file.content`` (0 data, 1 position, 2
equality deletes; only 0 in data manifests, only 1 or 2 in delete manifests). Scans raise
:class:`CorruptFileError` naming the file, as PyIceberg and Iceberg Java refuse such values,
instead of dropping rows or ignoring deletes. Also: a damaged manifest met by orphan removal is
named by its path.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from icefloe.exceptions import CorruptFileError
from icefloe.scan.manifests import manifest_entries
from icefloe.table import Table
from support.write_util import catalog

Record = dict[str, Any]


def _table(tmp_path: Path, version: int) -> Table:
    """100 rows, then a merge-on-read delete of 10 (v2: a position delete file, v3: a DV)."""
    cat = catalog(tmp_path)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    props = {"format-version": str(version), "write.delete.mode": "merge-on-read"}
    t = cat.create_table("ns.t", schema, properties=props)
    t.append(pa.table({"id": pa.array(range(100), pa.int64())}))
    t.delete("id < 10")
    t = cat.load_table("ns.t")
    assert t.scan().to_arrow().num_rows == 90
    return t


def _local(path: str) -> Path:
    return Path(path.removeprefix("file://"))


def _rewrite(path: Path, change: Callable[[list[Record]], None]) -> None:
    """Re-encodes the Avro file at ``path`` with ``change`` applied to its records."""
    with path.open("rb") as f:
        r = fastavro.reader(f)
        schema = r.writer_schema
        meta = {k: v for k, v in r.metadata.items() if not k.startswith("avro.")}
        records: list[Record] = [rec for rec in r if isinstance(rec, dict)]
    change(records)
    buf = io.BytesIO()
    fastavro.writer(buf, schema, records, metadata=meta, codec="deflate")
    path.write_bytes(buf.getvalue())


def _manifest(t: Table, content: int) -> Path:
    snapshot = t.current_snapshot()
    assert snapshot is not None
    paths = [m.manifest_path for m, _ in manifest_entries(t.io, snapshot) if m.content == content]
    assert len(paths) == 1
    return _local(paths[0])


def _scan_refused(t: Table, path: Path, *needles: str) -> None:
    fresh = t.catalog.load_table("ns.t")
    with pytest.raises(CorruptFileError) as e:
        fresh.scan().to_arrow()
    msg = str(e.value)
    assert str(path) in msg
    for n in needles:
        assert n in msg


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("bad", [2, -1, 5, 54, -23])
def test_manifest_list_content_out_of_range(tmp_path: Path, version: int, bad: int) -> None:
    t = _table(tmp_path, version)
    snapshot = t.current_snapshot()
    assert snapshot is not None and snapshot.manifest_list is not None
    lst = _local(snapshot.manifest_list)

    def change(records: list[Record]) -> None:
        data = [r for r in records if r["content"] == 0]
        assert data
        data[0]["content"] = bad

    _rewrite(lst, change)
    _scan_refused(t, lst, f"has content {bad};", "expected 0 (data) or 1 (deletes)")


def _set_entries(field: str | None, key: str, value: int) -> Callable[[list[Record]], None]:
    def change(records: list[Record]) -> None:
        rec = records[0] if field is None else records[0][field]
        rec[key] = value

    return change


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("manifest_content", [0, 1])
@pytest.mark.parametrize("bad", [3, -1])
def test_entry_status_out_of_range(
    tmp_path: Path, version: int, manifest_content: int, bad: int
) -> None:
    t = _table(tmp_path, version)
    path = _manifest(t, manifest_content)
    _rewrite(path, _set_entries(None, "status", bad))
    _scan_refused(t, path, f"has status {bad};")


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize(
    ("manifest_content", "bad", "needle"),
    [
        (0, 5, "has content 5;"),
        (0, -23, "has content -23;"),
        (1, 7, "has content 7;"),
        (0, 1, "has content 1 (position deletes) in a data manifest"),
        (0, 2, "has content 2 (equality deletes) in a data manifest"),
        (1, 0, "has content 0 (data) in a delete manifest"),
    ],
)
def test_data_file_content_out_of_range_or_wrong_manifest(
    tmp_path: Path, version: int, manifest_content: int, bad: int, needle: str
) -> None:
    t = _table(tmp_path, version)
    path = _manifest(t, manifest_content)
    _rewrite(path, _set_entries("data_file", "content", bad))
    _scan_refused(t, path, needle)


def test_valid_rewrite_still_reads(tmp_path: Path) -> None:
    """The re-encoding alone (no value changed) leaves a readable table."""
    t = _table(tmp_path, 2)
    snapshot = t.current_snapshot()
    assert snapshot is not None and snapshot.manifest_list is not None
    _rewrite(_local(snapshot.manifest_list), lambda records: None)
    for content in (0, 1):
        _rewrite(_manifest(t, content), lambda records: None)
    assert t.catalog.load_table("ns.t").scan().to_arrow().num_rows == 90


def test_orphan_removal_names_the_damaged_manifest(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    t = cat.create_table("ns.t", schema)
    for i in range(2):
        t.append(pa.table({"id": pa.array([i], pa.int64())}))
    t = cat.load_table("ns.t")
    snapshot = t.current_snapshot()
    assert snapshot is not None
    paths = [m.manifest_path for m, _ in manifest_entries(t.io, snapshot)]
    damaged = _local(paths[-1])
    data = damaged.read_bytes()
    damaged.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptFileError) as e:
        t.remove_orphan_files(dry_run=True)
    assert str(damaged) in str(e.value)
    assert "<manifest" not in str(e.value)


def test_v1_entries_name_their_snapshot(tmp_path: Path) -> None:
    """v1 has no inheritance and its spec makes an entry's ``snapshot_id`` required: added
    entries were written null (as v2 writes them), which a reader of v1 alone cannot take.
    They name the snapshot that added them, as Java's v1 writer fills them."""
    cat = catalog(tmp_path)
    t = cat.create_table("ns.v1", pa.schema([("id", pa.int64())]), format_version=1)
    t.append(pa.table({"id": [1]}))
    first = t.current_snapshot().snapshot_id
    t.append(pa.table({"id": [2]}))
    t.rewrite_manifests()  # entries carried into a new manifest keep their own snapshot
    snapshots = {s.snapshot_id for s in t.snapshots()}
    for snapshot in (first, t.current_snapshot().snapshot_id):
        with open(t.metadata.snapshot(snapshot).manifest_list.removeprefix("file://"), "rb") as f:
            manifests = [m["manifest_path"] for m in fastavro.reader(f)]
        for path in manifests:
            with open(path.removeprefix("file://"), "rb") as f:
                entries = list(fastavro.reader(f))
            for entry in entries:
                assert entry["snapshot_id"] in snapshots
                if snapshot == first:  # the first append's own manifest
                    assert (entry["status"], entry["snapshot_id"]) == (1, first)
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1, 2]
