"""Files kept open across pieces of rows (icefloe.write.rolling): their rows, their rolling by
rows and bytes, their metrics against a write of the same rows at once, and a failure leaving
no file behind."""

from __future__ import annotations

import math
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import (
    DoubleType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    UUIDType,
)
from icefloe.write.files import DataFile
from icefloe.write.input import to_table_schema
from icefloe.write.rolling import RollingWriter
from icefloe.write.writer import write_data_files
from support.write_util import catalog

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "x", DoubleType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "u", UUIDType()),
    NestedField(5, "tags", ListType(6, StringType())),
    NestedField(7, "attrs", MapType(8, StringType(), 9, LongType())),
    NestedField(
        10,
        "st",
        StructType(NestedField(11, "a", IntegerType()), NestedField(12, "b", DoubleType())),
    ),
    NestedField(13, "k", IntegerType()),
)


def _rows(n: int) -> pa.Table:
    """``n`` rows whose second fifth of ``x`` is all NaN and whose fourth fifth of ``s`` is all
    null (row groups the footer has no minimum and maximum for)."""
    fifth = n // 5
    xs = [
        math.nan if fifth <= i < 2 * fifth else (None if i % 7 == 0 else (i % 113) - 50.5)
        for i in range(n)
    ]
    ss = [
        None if 3 * fifth <= i < 4 * fifth else f"value {i:06d} with a long tail" for i in range(n)
    ]
    data = {
        "id": list(range(n)),
        "x": xs,
        "s": ss,
        "u": pa.array(
            [uuid.UUID(int=(i * 0x9E3779B97F4A7C15) % (1 << 128)).bytes for i in range(n)],
            pa.binary(16),
        ),
        "tags": [[f"t{i % 5}", f"z{i % 3}"] if i % 4 else None for i in range(n)],
        "attrs": pa.array([[(f"k{i % 4}", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
        "st": [{"a": i % 9, "b": -0.0 if i % 11 == 0 else float(i)} for i in range(n)],
        "k": [i % 3 for i in range(n)],
    }
    return to_table_schema(pa.table(data), SCHEMA, 2)


def _table(tmp_path: Path, spec: PartitionSpec | None = None, **props: str):  # type: ignore[no-untyped-def]
    cat = catalog(tmp_path)
    return cat.create_table(
        "ns.t", SCHEMA, partition_spec=spec or PartitionSpec(), properties=props
    )


def _metrics(f: DataFile) -> tuple[object, ...]:
    return (
        f.record_count,
        f.value_counts,
        f.null_value_counts,
        f.nan_value_counts,
        f.lower_bounds,
        f.upper_bounds,
    )


def _path(f: DataFile) -> str:
    return f.file_path.removeprefix("file://")


def _write(t, rows: pa.Table, piece: int, **kw: int | None) -> list[DataFile]:  # type: ignore[no-untyped-def]
    writer = RollingWriter(
        t.metadata, t.io, t.metadata.spec(), max_file_bytes=kw.pop("max_file_bytes", 1 << 30), **kw
    )
    with writer:
        for start in range(0, rows.num_rows, piece):
            writer.write(rows.slice(start, piece))
        return writer.finish()


def test_a_file_written_in_pieces_has_the_metrics_of_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row groups of 500 rows: the NaN-only and null-only ones leave the footer without
    bounds for them, and UUIDs have none in the footer; none of it is read back from the file
    (a read-back column held a whole output file's column in memory)."""
    import icefloe.write.rolling as rolling

    asked: list[tuple[int, ...]] = []
    real = rolling._read_back

    def counting(*args):  # type: ignore[no-untyped-def]
        get = real(*args)

        def values(path):  # type: ignore[no-untyped-def]
            asked.append(path)
            return get(path)

        return values

    monkeypatch.setattr(rolling, "_read_back", counting)
    t = _table(tmp_path, **{"write.parquet.row-group-limit": "500"})
    rows = _rows(2500)
    (rolled,) = _write(t, rows, piece=500)
    assert asked == []
    plain = _table(tmp_path / "plain")  # default row groups: the rows in one
    (once,) = write_data_files(plain.metadata, plain.io, rows)
    assert pq.read_metadata(_path(rolled)).num_row_groups == 5
    assert pq.read_metadata(_path(once)).num_row_groups == 1
    assert _metrics(rolled) == _metrics(once)
    assert rolled.nan_value_counts[2] == 500
    assert rolled.lower_bounds[4] == once.lower_bounds[4]  # UUIDs: read back, not in the footer
    assert pq.read_table(_path(rolled)).column("id").to_pylist() == list(range(2500))


def test_pieces_are_buffered_into_row_groups(tmp_path: Path) -> None:
    t = _table(tmp_path)
    rows = _rows(3000)
    (f,) = _write(t, rows, piece=100)
    md = pq.read_metadata(_path(f))
    assert md.num_row_groups == 1  # thirty pieces, one row group of the default size
    assert f.record_count == 3000
    assert f.split_offsets == [4]


def test_files_roll_at_the_rows_per_file_in_row_order(tmp_path: Path) -> None:
    t = _table(tmp_path)
    files = _write(t, _rows(3000), piece=400, rows_per_file=700)
    assert [f.record_count for f in files] == [700, 700, 700, 700, 200]
    ids = [i for f in files for i in pq.read_table(_path(f)).column("id").to_pylist()]
    assert ids == list(range(3000))
    # a file's rows start a row group of their own, not a slice left from the last file
    assert [pq.read_metadata(_path(f)).num_row_groups for f in files] == [1, 1, 1, 1, 1]


def test_files_roll_when_they_reach_the_size(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"write.parquet.row-group-size-bytes": "20000"})
    files = _write(t, _rows(4000), piece=250, max_file_bytes=15_000)
    assert len(files) > 2
    for f in files[:-1]:
        assert f.file_size_in_bytes >= 15_000
    assert sum(f.record_count for f in files) == 4000


def test_rows_go_to_their_partition_files(tmp_path: Path) -> None:
    spec = PartitionSpec(PartitionField(13, 1000, parse_transform("identity"), "k"))
    t = _table(tmp_path, spec)
    files = _write(t, _rows(3000), piece=250)  # every piece holds rows of all three
    assert sorted(f.partition["k"] for f in files) == [0, 1, 2]
    for f in files:
        got = pq.read_table(_path(f))
        assert set(got.column("k").to_pylist()) == {f.partition["k"]}
        assert got.column("id").to_pylist() == list(range(f.partition["k"], 3000, 3))
        assert f"/k={f.partition['k']}/" in f.file_path


def test_a_failure_leaves_no_file(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"write.parquet.row-group-size-bytes": "20000"})
    rows = _rows(2000)
    writer = RollingWriter(t.metadata, t.io, t.metadata.spec(), max_file_bytes=20_000)
    with pytest.raises(RuntimeError, match="stop"), writer:
        for start in range(0, 2000, 250):
            writer.write(rows.slice(start, 250))
        raise RuntimeError("stop")
    data = Path(t.metadata.location.removeprefix("file://")) / "data"
    assert not [p for p in data.rglob("*") if p.is_file()] if data.exists() else True
    assert writer.files == []


# ------------------------------------------------------------------ partitioned streams

_EVENTS = pa.schema([("id", pa.int64()), ("k", pa.int32()), ("s", pa.string())])


def _events(n: int, partitions: int, start: int = 0) -> pa.RecordBatch:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.record_batch(
        [
            ids,
            pa.array([i % partitions for i in range(start, start + n)], pa.int32()),
            pa.array([f"row {i}" for i in range(start, start + n)]),
        ],
        schema=_EVENTS,
    )


def _stream(batches: int, rows: int, partitions: int, fail_at: int | None = None):  # type: ignore[no-untyped-def]
    def gen():  # type: ignore[no-untyped-def]
        for b in range(batches):
            if b == fail_at:
                raise RuntimeError("the source broke")
            yield _events(rows, partitions, b * rows)

    return pa.RecordBatchReader.from_batches(_EVENTS, gen())


def _events_table(tmp_path: Path):  # type: ignore[no-untyped-def]
    t = catalog(tmp_path).create_table("ns.events", _EVENTS)
    t.update_spec().add_field("k", "identity").commit()
    return t


def _data_files(t) -> list[Path]:  # type: ignore[no-untyped-def]
    data = Path(t.location.removeprefix("file://")) / "data"
    return sorted(data.rglob("*.parquet")) if data.exists() else []


def test_a_partitioned_stream_keeps_one_file_per_partition_across_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, duckdb_con: object
) -> None:
    """Forty batches of a stream over five partitions make five files, not one per piece; PyIceberg
    and DuckDB read them."""
    import icefloe.write.input as input_mod
    import icefloe.write.rolling as rolling
    from support.write_util import checksum, duckdb_checksum, pyiceberg_read

    monkeypatch.setattr(input_mod, "STREAM_CHUNK_BYTES", 20_000)
    monkeypatch.setattr(rolling, "STREAM_BUFFER_BYTES", 40_000)
    t = _events_table(tmp_path)
    t.append(_stream(40, 1000, 5))
    files = t.inspect.files().to_pylist()
    assert len(files) == 5
    assert sorted(f["record_count"] for f in files) == [8000] * 5
    got = t.scan().to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == list(range(40_000))
    assert got.column("k").to_pylist() == [i % 5 for i in range(40_000)]
    assert checksum(pyiceberg_read(t)) == (40_000, sum(range(40_000)))
    assert duckdb_checksum(duckdb_con, t) == (40_000, sum(range(40_000)))
    # past the buffer's size, rows went into row groups of the open files
    assert max(pq.read_metadata(_path_of(f)).num_row_groups for f in files) > 1


def _path_of(f: dict) -> str:  # type: ignore[type-arg]
    return str(f["file_path"]).removeprefix("file://")


def test_a_partitioned_stream_rolls_its_files_at_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import icefloe.write.input as input_mod

    monkeypatch.setattr(input_mod, "STREAM_CHUNK_BYTES", 20_000)
    t = _events_table(tmp_path)
    t.set_properties({"write.target-file-size-bytes": "30000"})
    t.append(_stream(40, 1000, 2))
    files = t.inspect.files().to_pylist()
    assert len(files) > 2
    assert sum(f["record_count"] for f in files) == 40_000


def test_a_stream_of_more_partitions_than_open_files_writes_each_piece_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import icefloe.write.input as input_mod
    import icefloe.write.rolling as rolling

    monkeypatch.setattr(input_mod, "STREAM_CHUNK_BYTES", 20_000)
    monkeypatch.setattr(rolling, "STREAM_OPEN_FILES", 4)
    t = _events_table(tmp_path)
    t.append(_stream(8, 1000, 5))
    files = t.inspect.files().to_pylist()
    assert len(files) > 5  # a file per partition of each piece
    assert t.scan().to_arrow().num_rows == 8000


def test_open_files_are_capped_and_rows_kept(tmp_path: Path) -> None:
    """With two files open at most, rows of five partitions arriving interleaved go to files
    closed and reopened as new ones, every row once."""
    t = _events_table(tmp_path)
    t.set_properties({"write.parquet.row-group-size-bytes": "20000"})
    rows = to_table_schema(pa.Table.from_batches([_events(5000, 5)]), t.schema(), 2)
    writer = RollingWriter(t.metadata, t.io, t.metadata.spec(), max_file_bytes=1 << 30, max_open=2)
    opened: list[int] = []
    with writer:
        for start in range(0, 5000, 500):
            writer.write(rows.slice(start, 500))
            opened.append(sum(1 for p in writer._partitions.values() if p.file is not None))
        files = writer.finish()
    assert max(opened) <= 2
    ids = sorted(i for f in files for i in pq.read_table(_path(f)).column("id").to_pylist())
    assert ids == list(range(5000))
    for f in files:
        assert set(pq.read_table(_path(f)).column("k").to_pylist()) == {f.partition["k"]}


def test_a_partitioned_stream_failing_part_way_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import icefloe.write.input as input_mod

    monkeypatch.setattr(input_mod, "STREAM_CHUNK_BYTES", 20_000)
    t = _events_table(tmp_path)
    t.append(_stream(4, 1000, 3))
    before = _data_files(t)
    snapshot = t.current_snapshot().snapshot_id
    with pytest.raises(RuntimeError, match="broke"):
        t.append(_stream(40, 1000, 3, fail_at=25))
    assert _data_files(t) == before
    assert t.refresh().current_snapshot().snapshot_id == snapshot


def test_a_partitioned_stream_with_invalid_text_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import icefloe.write.input as input_mod
    from icefloe.exceptions import ValidationError

    monkeypatch.setattr(input_mod, "STREAM_CHUNK_BYTES", 20_000)
    t = _events_table(tmp_path)
    bad = pa.Array.from_buffers(
        pa.string(),
        1,
        [None, pa.py_buffer(b"\x00\x00\x00\x00\x02\x00\x00\x00"), pa.py_buffer(b"\xff\xfe")],
    )

    def gen():  # type: ignore[no-untyped-def]
        for b in range(30):
            yield _events(1000, 3, b * 1000)
        yield pa.record_batch(
            [pa.array([1], pa.int64()), pa.array([1], pa.int32()), bad], schema=_EVENTS
        )

    with pytest.raises(ValidationError, match="'s'"):
        t.append(pa.RecordBatchReader.from_batches(_EVENTS, gen()))
    assert _data_files(t) == []


def test_geometry_bounds_are_read_back_from_the_closed_file(tmp_path: Path) -> None:
    shapely = pytest.importorskip("shapely")
    from icefloe.types import GeometryType

    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "g", GeometryType()))
    t = catalog(tmp_path).create_table(
        "ns.g", schema, format_version=3, properties={"write.parquet.row-group-limit": "100"}
    )
    points = [shapely.Point(i % 17 - 3, -(i % 5)) for i in range(300)]
    rows = to_table_schema(
        pa.table(
            {
                "id": pa.array(range(300), pa.int64()),
                "g": pa.array(
                    [p.wkb for p in points[:100]] + [None] * 100 + [p.wkb for p in points[200:]],
                    pa.binary(),
                ),
            }
        ),
        schema,
        3,
    )
    (rolled,) = _write(t, rows, piece=100)
    plain = catalog(tmp_path / "plain").create_table("ns.g", schema, format_version=3)
    (once,) = write_data_files(plain.metadata, plain.io, rows)
    assert pq.read_metadata(_path(rolled)).num_row_groups == 3
    assert rolled.lower_bounds[2] == once.lower_bounds[2]
    assert rolled.upper_bounds[2] == once.upper_bounds[2]


def test_stream_files_and_row_groups_keep_to_their_sizes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A partition's buffered rows were written as one row group however many bytes they
    held: row groups of 18 times the configured size, files of 3.4 times the target."""
    import icefloe.write.input as input_mod

    monkeypatch.setattr(input_mod, "STREAM_CHUNK_BYTES", 400_000)
    t = _events_table(tmp_path)
    t.set_properties(
        {"write.target-file-size-bytes": "100000", "write.parquet.row-group-size-bytes": "50000"}
    )
    t.append(_stream(60, 2000, 2))
    files = t.inspect.files().to_pylist()
    assert sum(f["record_count"] for f in files) == 120_000
    assert max(f["file_size_in_bytes"] for f in files) < 2 * 100_000
    for f in files:
        md = pq.read_metadata(_path_of(f))
        for g in range(md.num_row_groups):
            assert md.row_group(g).total_byte_size < 2 * 50_000


def test_a_stream_gives_the_same_files_in_the_same_order_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files closed by threads were listed as they closed, so a v3 table's row ids went to
    partitions in a different order from run to run."""
    import icefloe.write.input as input_mod
    import icefloe.write.rolling as rolling

    monkeypatch.setattr(input_mod, "STREAM_CHUNK_BYTES", 20_000)
    monkeypatch.setattr(rolling, "STREAM_BUFFER_BYTES", 30_000)
    seen = []
    for run in range(4):
        t = catalog(tmp_path / str(run)).create_table("ns.events", _EVENTS, format_version=3)
        t.update_spec().add_field("k", "identity").commit()
        t.append(_stream(30, 1000, 7))
        files = t.inspect.data_files().to_pylist()
        seen.append([(f["partition"], f["first_row_id"], f["record_count"]) for f in files])
    assert all(s == seen[0] for s in seen)
    assert [p["k"] for p, _, _ in sorted(seen[0], key=lambda f: f[1])][:7] == list(range(7))


def test_a_file_failing_to_close_gives_its_descriptor_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc
    import os

    import icefloe.write.input as input_mod
    import icefloe.write.rolling as rolling

    monkeypatch.setattr(input_mod, "STREAM_CHUNK_BYTES", 20_000)
    t = _events_table(tmp_path)

    def failing(self, *args):  # type: ignore[no-untyped-def]
        raise OSError("no space left while writing the footer")

    monkeypatch.setattr(rolling._OpenFile, "close", failing)

    def open_here() -> list[str]:
        """Descriptors of files under ``tmp_path`` (other threads of the test process, such as
        a previous test's executors, open and close descriptors of their own meanwhile)."""
        targets = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                targets.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                continue
        return [p for p in targets if p.startswith(str(tmp_path))]

    gc.disable()
    try:
        before = open_here()
        with pytest.raises(OSError, match="no space"):
            t.append(_stream(10, 1000, 3))
        after = open_here()
    finally:
        gc.enable()
    assert sorted(after) == sorted(before)
    assert _data_files(t) == []
