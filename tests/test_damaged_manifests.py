"""Manifests and manifest lists whose values are well-formed Avro but impossible for Iceberg
(a byte flipped in a block still decodes): a value that would change which rows a scan returns
is a :class:`CorruptFileError`, or, for statistics that contradict themselves, no grounds to
prune; never a silent wrong answer."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pytest

from icefloe import StaticTable, _native
from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.exceptions import CorruptFileError, FileIOError
from icefloe.manifest import write_manifest_list
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.types import LongType, NestedField, StringType


def _path(location: str) -> Path:
    return Path(urlparse(location).path if location.startswith("file:") else location)


def _with_deletes(tmp_path: Path) -> Table:
    """A v3 table of ids 0-9 whose ids 1-3 an equality delete file removes (7 rows)."""
    cat = HadoopCatalog("h", warehouse=str(tmp_path))
    cat.create_namespace("ns")
    t = cat.create_table(
        "ns.t", Schema(NestedField(1, "id", LongType(), required=True)), format_version=3
    )
    t.append(pa.table({"id": pa.array(range(10), pa.int64())}))
    t.delete_by_keys({"id": [1, 2, 3]}, ["id"])
    t = cat.load_table("ns.t")
    assert t.scan().to_arrow().num_rows == 7
    return t


@pytest.mark.parametrize("bad", [-5, 1000], ids=["negative", "after-the-snapshot"])
def test_a_manifest_sequence_number_out_of_range_is_corrupt(tmp_path: Path, bad: int) -> None:
    """The delete manifest's sequence number made negative dropped its deletes (deleted rows
    came back); made later than its snapshot's, it would apply them to newer data."""
    t = _with_deletes(tmp_path)
    snap = t.current_snapshot()
    assert snap is not None
    path = _path(snap.manifest_list)
    listed = _native.read_manifest_list(path.read_bytes())
    content = listed.column("content").to_pylist()
    seqs = listed.column("sequence_number").to_pylist()
    seqs[content.index(1)] = bad
    listed = listed.set_column(
        listed.schema.get_field_index("sequence_number"),
        "sequence_number",
        pa.array(seqs, pa.int64()),
    )
    data, _ = write_manifest_list(
        listed,
        format_version=3,
        snapshot_id=snap.snapshot_id,
        sequence_number=snap.sequence_number,
        parent_snapshot_id=snap.parent_snapshot_id,
        first_row_id=snap.first_row_id,
    )
    path.write_bytes(data)
    with pytest.raises(CorruptFileError, match="sequence number"):
        StaticTable.from_metadata(t.metadata_location).scan().to_arrow()


@pytest.mark.parametrize("bad", [-1, 99], ids=["negative", "after-the-manifest"])
def test_an_entry_sequence_number_out_of_range_is_corrupt(tmp_path: Path, bad: int) -> None:
    """A data file's own sequence number decides which deletes reach it: one after its
    manifest's, or negative, cannot be true."""
    cat = HadoopCatalog("h", warehouse=str(tmp_path))
    cat.create_namespace("ns")
    t = cat.create_table(
        "ns.t", Schema(NestedField(1, "id", LongType(), required=True)), format_version=2
    )
    t.append(pa.table({"id": pa.array(range(4), pa.int64())}))
    t.append(pa.table({"id": pa.array(range(4, 8), pa.int64())}))
    t.rewrite_manifests()  # entries with explicit sequence numbers 1 and 2, in a manifest of 3
    t = cat.load_table("ns.t")
    manifests = t.inspect.manifests().to_pylist()
    assert len(manifests) == 1
    path = _path(manifests[0]["path"])
    batch = _native.read_manifest(path.read_bytes())
    seqs = batch.column("sequence_number").to_pylist()
    assert sorted(seqs) == [1, 2]
    seqs = pa.array([bad if s == 2 else s for s in seqs], pa.int64())
    _rewrite_manifest(t, path, "sequence_number", seqs)
    with pytest.raises(CorruptFileError, match="sequence number"):
        StaticTable.from_metadata(t.metadata_location).scan().to_arrow()


def test_metrics_holding_a_field_twice_do_not_prune(tmp_path: Path) -> None:
    """A flipped byte left a null_value_counts map with field 1 twice (0 and 4 nulls, 4 being
    every row): the scan took the 4, decided the file held only nulls of ``id`` and dropped
    its rows from ``id > 100``. A field given twice has no statistics."""
    cat = HadoopCatalog("h", warehouse=str(tmp_path))
    cat.create_namespace("ns")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType())
    )
    t = cat.create_table("ns.t", schema, format_version=2)
    t.append(pa.table({"id": pa.array([200, 201, 202, 203], pa.int64()), "s": list("abcd")}))
    t = cat.load_table("ns.t")
    path = _path(t.inspect.manifests().to_pylist()[0]["path"])
    kind = _native.read_manifest(path.read_bytes()).schema.field("null_value_counts").type
    twice = pa.array([[(1, 0), (2, 0), (1, 4)]], kind)
    _rewrite_manifest(t, path, "null_value_counts", twice)
    damaged = StaticTable.from_metadata(t.metadata_location)
    assert damaged.scan(row_filter="id > 100").to_arrow().num_rows == 4


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_manifest_list_that_is_a_pipe_is_refused_at_once(tmp_path: Path) -> None:
    """Metadata naming a FIFO (or a device such as ``/dev/zero``) as a manifest list blocked
    the scan until a writer came (or read until memory ran out); it is refused at once."""
    t = _with_deletes(tmp_path / "wh")
    fifo = tmp_path / "list.avro"
    os.mkfifo(fifo)
    meta = json.loads(_path(t.metadata_location).read_text())
    for snap in meta["snapshots"]:
        snap["manifest-list"] = str(fifo)
    damaged = tmp_path / "v9.metadata.json"
    damaged.write_text(json.dumps(meta))
    _refused_without_blocking(str(damaged), fifo)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_data_file_that_is_a_pipe_is_refused_at_once(tmp_path: Path) -> None:
    """The native Parquet reader opened a data file replaced by a FIFO and waited for a
    writer forever; it is refused with the error a device gets."""
    t = _with_deletes(tmp_path / "wh")
    data_file = _path(next(iter(t.scan().plan_files())).data_file.file_path)
    data_file.unlink()
    os.mkfifo(data_file)
    _refused_without_blocking(t.metadata_location, data_file)


def _refused_without_blocking(metadata_location: str, fifo: Path) -> None:
    """Scanning the table at ``metadata_location`` fails at once with the error for a file
    that is not a regular file (``fifo``), instead of waiting for the pipe's writer."""
    outcome: list[BaseException | None] = []

    def scan() -> None:
        try:
            StaticTable.from_metadata(metadata_location).scan().to_arrow()
            outcome.append(None)
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=scan, daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():  # release the blocked open before failing
        with open(fifo, "wb"):
            pass
        worker.join(30)
        pytest.fail("the scan blocked on the pipe")
    assert isinstance(outcome[0], FileIOError), outcome
    assert "not a regular file" in str(outcome[0])


def _rewrite_manifest(t: Table, path: Path, column: str, values: pa.Array) -> None:
    """The unpartitioned v2 manifest at ``path`` written again with ``column`` replaced by
    ``values`` (as a flipped byte would leave it, in valid Avro)."""
    batch = _native.read_manifest(path.read_bytes())
    meta = batch.schema.metadata
    field = batch.schema.field(column)
    batch = batch.set_column(batch.schema.get_field_index(column), field, values)
    snapshot = t.current_snapshot()
    assert snapshot is not None
    out, _ = _native.write_manifest(
        batch,
        format_version=2,
        schema_json=meta[b"schema"].decode(),
        spec_json=json.dumps({"spec-id": 0, "fields": json.loads(meta[b"partition-spec"])}),
        spec_id=0,
        path=str(path),
        snapshot_id=snapshot.snapshot_id,
    )
    path.write_bytes(out)
