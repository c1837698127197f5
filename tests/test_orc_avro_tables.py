"""Tables of ORC and Avro data files, the same checks for both: every kind of delete (delete
files in the table's format, and deletion vectors), row positions and file names across
batches and blocks, and large writes that roll files, prune, take row-level changes and
compaction, read with a split size smaller than the files (only Parquet files are split).
Format-specific checks are in ``tests/test_{read,write}_{orc,avro}.py``."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import icefloe
from icefloe.catalog.sql import SqlCatalog
from icefloe.schema import Schema
from icefloe.types import LongType, NestedField, StringType
from icefloe.write.input import to_table_schema
from support.read_tables import build, checksum

pytestmark = pytest.mark.interop  # fastavro writes the Avro files of the hand-built tables

FORMATS = pytest.mark.parametrize("fmt", ["orc", "avro"])


@pytest.mark.parametrize(
    "kind",
    [
        {"version": 2, "pos": 0.3},
        {"version": 2, "pos": 0.3, "pos_one_file": True},
        {"version": 3, "dv": 0.3},
        {"version": 2, "eq_keys": [(1,), (7,), (None,)], "eq_columns": ("k",)},
        {"version": 2, "pos": 0.2, "eq_keys": [(3, "w1"), (4, None)], "eq_columns": ("k", "s")},
    ],
    ids=["pos", "pos-one-file", "dv", "eq", "pos+eq"],
)
@FORMATS
def test_every_kind_of_delete(tmp_path: Path, kind: dict[str, object], fmt: str) -> None:
    t = build(tmp_path, files=3, rows=150, seed=3, file_format=fmt, **kind)  # type: ignore[arg-type]
    assert all(p.endswith(f".{fmt}") for p in t.paths)
    expected = t.expected_rows()
    assert 0 < expected.num_rows < 450
    table = icefloe.StaticTable.from_metadata(t.metadata_path)
    assert checksum(table.scan().to_arrow()) == checksum(expected)
    assert table.scan().count() == expected.num_rows
    # A residual filter and a projection.
    got = table.scan(row_filter="id >= 100 and k < 30", selected_fields=("id",)).to_arrow()
    want = expected.filter(
        pc.and_(pc.greater_equal(expected["id"], 100), pc.less(expected["k"], 30))
    )
    assert sorted(got.column("id").to_pylist()) == sorted(want.column("id").to_pylist())


@FORMATS
def test_positions_and_file_names(tmp_path: Path, fmt: str) -> None:
    t = build(tmp_path, version=2, files=2, rows=150_000, seed=5, file_format=fmt, pos=0.1)
    table = icefloe.StaticTable.from_metadata(t.metadata_path)
    got = table.scan(selected_fields=("id", "_file", "_pos")).to_arrow()
    # Every row sits at its position in its file (ids were written in file order), also past
    # the first batch (Avro: block) of a file, and the deleted positions are gone.
    for f, path in enumerate(t.paths):
        mine = got.filter(pc.equal(got["_file"], path))
        positions = mine.column("_pos").to_pylist()
        ids = mine.column("id").to_pylist()
        first = t.data[f].column("id")[0].as_py()
        assert all(i - first == p for i, p in zip(ids, positions, strict=True))
        assert set(positions).isdisjoint(t.deleted_positions[f])
        assert len(positions) == t.data[f].num_rows - len(t.deleted_positions[f])


@FORMATS
def test_large_writes_roll_files_and_partitions_stay_apart(tmp_path: Path, fmt: str) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType()))
    n = 200_000
    rows = pa.table(
        {"id": pa.array(range(n), pa.int64()), "s": [f"value-{i % 977}" for i in range(n)]}
    )
    # Files roll at 32 KiB on disk; reads split files above 16 KiB: only Parquet files are
    # split (by row group), the others are read whole by one task (a byte range of them would
    # read every row again).
    props = {
        "write.format.default": fmt,
        "write.target-file-size-bytes": str(32 << 10),
        "read.split.target-size": str(16 << 10),
    }
    t = cat.create_table("db.t", schema, properties=props)
    t.append(to_table_schema(rows, schema, 2))
    files = [task.data_file for task in t.scan().plan_files()]
    assert t.scan().to_arrow().num_rows == n
    assert len(files) > 2 and all(f.file_format == fmt for f in files)
    got = t.scan(row_filter="id >= 150000").to_arrow()
    assert sorted(got.column("id").to_pylist()) == list(range(150_000, n))
    # Bounds prune: a point lookup plans one file.
    assert len(list(t.scan(row_filter="id = 12345").plan_files())) == 1
    # Row-level changes (deletes are Parquet or DVs; new rows in the table's format).
    t.delete("id < 1000")
    t.upsert(pa.table({"id": pa.array([5000], pa.int64()), "s": ["changed"]}), join_cols=["id"])
    after = t.scan().to_arrow()
    assert after.num_rows == n - 1000
    assert after.filter(pc.equal(after["id"], 5000)).column("s").to_pylist() == ["changed"]
    # Compaction reads and writes the table's format, the deletes applied.
    t.rewrite_data_files(target_file_size=64 << 20)
    compacted = [task.data_file for task in t.scan().plan_files()]
    assert len(compacted) == 1 and compacted[0].file_format == fmt
    assert not any(task.delete_files for task in t.scan().plan_files())
    again = t.scan().to_arrow()
    assert sorted(again.column("id").to_pylist()) == sorted(after.column("id").to_pylist())
    assert again.filter(pc.equal(again["id"], 5000)).column("s").to_pylist() == ["changed"]


@pytest.mark.parametrize("fmt", ["orc", "avro", "parquet"])
def test_columns_moved_after_the_files_were_written(tmp_path: Path, fmt: str) -> None:
    """Files keep their column order when the table's changes: reads give each column its own
    values and a delete matching two columns removes the right row (ORC stripes come back in
    the file's order, whatever order is asked for)."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table(
        "db.t",
        Schema(
            NestedField(1, "id", LongType()),
            NestedField(2, "a", StringType()),
            NestedField(3, "b", StringType()),
        ),
        properties={"write.format.default": fmt, "write.delete.mode": "copy-on-write"},
    )
    t.append(
        pa.table(
            {"id": [1, 2, 3], "a": ["x", "keep", "keep"], "b": ["keep", "x", "keep"]},
            schema=pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.string())]),
        )
    )
    with t.update_schema() as u:
        u.move_first("b")
    rows = [{"b": "keep", "id": 1, "a": "x"}, {"b": "x", "id": 2, "a": "keep"}]
    assert t.scan().to_arrow().sort_by("id").to_pylist()[:2] == rows
    assert t.scan(selected_fields=("a", "b")).to_arrow().to_pylist()[:2] == [
        {"b": "keep", "a": "x"},
        {"b": "x", "a": "keep"},
    ]
    t.delete("a = 'x' and b = 'keep'")
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [2, 3]
