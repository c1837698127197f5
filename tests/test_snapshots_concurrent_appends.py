"""Evidence for the commit protocol: 4 processes each append 50 times to one table, on a SQLite
file catalog and on PostgreSQL. Every append lands exactly once: 200 snapshots on ``main``'s
history, 200 distinct live data files holding exactly the 200 written rows, every intermediate
metadata file readable and each one adding exactly one snapshot to its predecessor, and no
file of a lost attempt left behind in the metadata directory."""

from __future__ import annotations

import itertools
import multiprocessing
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.schema import Schema
from icefloe.types import IntegerType, LongType, NestedField
from support.evolution import local_path

WRITERS = 4
COMMITS = 50
PROPS = {
    "commit.retry.num-retries": "1000",
    "commit.retry.min-wait-ms": "1",
    "commit.retry.max-wait-ms": "40",
    "write.metadata.previous-versions-max": "1000",
}


def _writer(uri: str, warehouse: str, name: str, writer: int) -> None:
    catalog = SqlCatalog(name, uri=uri, warehouse=warehouse)
    table = catalog.load_table("db.t")  # goes stale as the others commit
    for j in range(COMMITS):
        row = pa.table(
            {"id": pa.array([writer * 1000 + j], pa.int64()), "w": pa.array([writer], pa.int32())}
        )
        table.append(row)
    catalog.close()


@pytest.mark.parametrize(
    "backend", ["sqlite-file", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_four_processes_fifty_appends_each(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "sqlite-file":
        uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    else:
        uri = request.getfixturevalue("postgres_uri")
    warehouse = (tmp_path / "warehouse").as_uri()
    name = f"appends_{tmp_path.name[-16:]}".replace("-", "_")
    catalog = SqlCatalog(name, uri=uri, warehouse=warehouse)
    catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "w", IntegerType()))
    created = catalog.create_table("db.t", schema, properties=PROPS)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(uri, warehouse, name, w)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=1200)
    assert [p.exitcode for p in procs] == [0] * WRITERS

    table = catalog.load_table("db.t")
    total = WRITERS * COMMITS
    # all 200 snapshots present, in one line of history
    snaps = table.snapshots()
    assert len(snaps) == total
    head = table.current_snapshot()
    assert head is not None and len(table.metadata.ancestors_of(head.snapshot_id)) == total
    assert head.summary is not None and head.summary.get("total-records") == str(total)
    assert head.summary.get("total-data-files") == str(total)
    # no duplicate or lost files: 200 distinct live files with exactly the rows written
    files = table.inspect.files()
    paths = files.column("file_path").to_pylist()
    assert len(paths) == len(set(paths)) == total
    assert all(local_path(p).exists() for p in paths)
    ids = sorted(pq.read_table([str(local_path(p)) for p in paths]).column("id").to_pylist())
    assert ids == sorted(w * 1000 + j for w in range(WRITERS) for j in range(COMMITS))
    # every intermediate metadata file is readable and adds exactly one snapshot
    log = [e.metadata_file for e in table.metadata_log()]
    assert log[0] == created.metadata_location and len(log) == total
    versions = [catalog.read_metadata(loc) for loc in [*log, table.metadata_location]]
    counts = [len(m.snapshots) for m in versions]
    assert counts == list(range(total + 1))
    for older, newer in itertools.pairwise(versions):
        assert {s.snapshot_id for s in older.snapshots} < {s.snapshot_id for s in newer.snapshots}
    # lost attempts cleaned up: only committed metadata files, manifest lists and manifests
    meta_dir = local_path(table.metadata_location).parent
    on_disk = {p.name for p in meta_dir.glob("*.metadata.json")}
    assert len(on_disk) == total + 1
    lists = {local_path(s.manifest_list).name for s in snaps if s.manifest_list}
    avro = {p.name for p in meta_dir.glob("snap-*.avro")}
    assert avro == lists
    data_dir = local_path(table.location) / "data"
    assert {p.as_uri() for p in data_dir.rglob("*.parquet")} == {
        local_path(p).as_uri() for p in paths
    }
    catalog.close()
