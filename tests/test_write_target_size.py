"""``write.target-file-size-bytes`` below the row-group size: files roll near the target.

The size of a Parquet file is only known once a row group is written, and a row group is cut by
``write.parquet.row-group-size-bytes`` (128 MiB of Arrow data by default): a target below that
used to make one file of the whole row group (a 256 KiB target gave a 2.9 MB file). Rows are now
cut into row groups sized from the bytes a row took on disk so far, so each file closes near the
target, as Iceberg Java's rolling writer does. ORC and Avro files are cut by their bytes on
disk too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.sorting import SortField, SortOrder
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField, StringType
from icefloe.write import writer as writer_module
from support.write_util import catalog, checksum, pyiceberg_read

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "s", StringType()),
    NestedField(3, "k", LongType()),
)


def _data(n: int, seed: int = 0) -> pa.Table:
    """``n`` rows with strings that compress little; ``k`` alternates 0 (a constant string,
    compressing very well) and 1 (random strings)."""
    rng = np.random.default_rng(seed)
    ids = np.arange(n, dtype=np.int64)
    k = ids % 2
    noise = [f"row-{x:016x}" for x in rng.integers(0, 2**62, n)]
    s = np.where(k == 0, "a" * 24, noise)
    return pa.table({"id": ids, "s": s.tolist(), "k": k})


def _sizes(table: Any) -> list[tuple[int, int, int]]:
    """(bytes, row groups, rows) of each data file of the table."""
    out = []
    for path in table.inspect.files().column("file_path").to_pylist():
        md = pq.ParquetFile(path.removeprefix("file://")).metadata
        out.append(
            (Path(path.removeprefix("file://")).stat().st_size, md.num_row_groups, md.num_rows)
        )
    return out


def _table(tmp_path: Path, target: int, **kw: Any) -> Any:
    """A table of :data:`SCHEMA` whose files aim at ``target`` bytes (``kw``: its spec or sort
    order)."""
    props = {"write.target-file-size-bytes": str(target)}
    return catalog(tmp_path).create_table("ns.t", SCHEMA, properties=props, **kw)


def _assert_near_target(files: list[tuple[int, int, int]], target: int) -> None:
    for size, groups, rows in files:
        # a file of the fewest rows a cut takes (as Java checks the size every 1,000 rows) is
        # the only excuse for a larger file
        least = writer_module._MIN_ROWS
        assert size <= 1.5 * target or (groups == 1 and rows <= least), (size, groups, rows)


def test_a_target_below_a_few_rows_is_not_a_file_per_row(tmp_path: Path) -> None:
    t = _table(tmp_path, 64)
    data = _data(5_000)
    t.append(data)
    files = _sizes(t)
    assert len(files) == 5 and all(rows == writer_module._MIN_ROWS for _, _, rows in files)
    assert t.scan().to_arrow().num_rows == 5_000


@pytest.mark.parametrize("target", [4096, 64 << 10, 256 << 10])
def test_small_target_rolls_files_near_target(tmp_path: Path, target: int) -> None:
    t = _table(tmp_path, target)
    data = _data(60_000)
    t.append(data)
    files = _sizes(t)
    total = sum(size for size, _, _ in files)
    assert len(files) > 1
    _assert_near_target(files, target)
    # and not needlessly small: about as many files as the bytes need
    assert len(files) <= 2 * total / target + 2
    assert checksum(pyiceberg_read(t)) == checksum(data)
    back = t.scan().to_arrow().sort_by("id")
    assert back.select(["id", "s", "k"]).equals(data.cast(back.schema))


def test_partitions_that_compress_differently(tmp_path: Path) -> None:
    """Each partition learns its own bytes per row: a partition of constant strings does not
    make the files of a partition of random strings many times the target."""
    spec = PartitionSpec(PartitionField(3, 1000, parse_transform("identity"), "k"))
    target = 32 << 10
    t = _table(tmp_path, target, partition_spec=spec)
    data = _data(80_000, seed=1)
    t.append(data)
    files = _sizes(t)
    assert len(files) > 4
    _assert_near_target(files, target)
    assert checksum(pyiceberg_read(t)) == checksum(data)


def test_small_partitions_and_large_ones_in_one_write(tmp_path: Path) -> None:
    """Partitions smaller than the target are encoded natively (one file each), larger ones
    are cut: every file is near or below the target."""
    spec = PartitionSpec(PartitionField(1, 1000, parse_transform("truncate[20000]"), "id_t"))
    target = 48 << 10
    t = _table(tmp_path, target, partition_spec=spec)
    big = _data(40_000, seed=2)
    small = (
        pa.table({"id": pa.array(range(100_000, 100_000 + 200 * 20_000, 20_000), pa.int64())})
        .append_column("s", pa.array(["x"] * 200))
        .append_column("k", pa.array([1] * 200, pa.int64()))
    )
    data = pa.concat_tables([big, small.cast(big.schema)])
    t.append(data)
    files = _sizes(t)
    assert len(files) > 200
    _assert_near_target(files, target)
    assert checksum(t.scan().to_arrow()) == checksum(data)


def test_sorted_rows_whose_compression_changes(tmp_path: Path) -> None:
    """Sorted by ``s``, a partition's rows go from constant strings (compressing to almost
    nothing) to random ones: the bytes per row are relearned from each row group."""
    target = 32 << 10
    t = _table(tmp_path, target, sort_order=SortOrder(SortField(2)))
    data = _data(60_000, seed=3)
    t.append(data)
    files = _sizes(t)
    assert len(files) > 4
    _assert_near_target(files, target)
    assert checksum(t.scan().to_arrow()) == checksum(data)


def test_target_at_or_above_the_row_group_size_writes_whole_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default write (512 MiB target, 128 MiB row groups) and any target at or above the
    row-group size keep writing whole row groups until a file reaches the target."""

    def refuse(*_: Any) -> None:
        raise AssertionError("the size model is only for targets below the row-group size")

    monkeypatch.setattr(writer_module, "_SizeModel", refuse)
    cat = catalog(tmp_path)
    t = cat.create_table(
        "ns.t",
        SCHEMA,
        properties={
            "write.parquet.row-group-size-bytes": str(64 << 10),
            "write.target-file-size-bytes": str(64 << 10),
        },
    )
    data = _data(60_000, seed=4)
    t.append(data)
    files = _sizes(t)
    assert len(files) > 1  # rolled once whole row groups (64 KiB of Arrow data) reach it
    u = cat.create_table("ns.u", SCHEMA)
    u.append(data)
    assert [groups for _, groups, _ in _sizes(u)] == [1]
    assert checksum(t.scan().to_arrow()) == checksum(u.scan().to_arrow()) == checksum(data)


def _compressible(n: int) -> pa.Table:
    """``n`` rows of :data:`SCHEMA` that take several times less room on disk than in Arrow
    (ids counting up, fifty repeated strings, a small random number)."""
    rng = np.random.default_rng(5)
    return pa.table(
        {
            "id": np.arange(n, dtype=np.int64),
            "s": [f"event-{i % 50:02d}-payload" for i in range(n)],
            "k": rng.integers(0, 1 << 20, n),
        }
    )


@pytest.mark.parametrize("fmt", ["avro", "orc"])
def test_avro_and_orc_files_roll_near_the_target_on_disk(tmp_path: Path, fmt: str) -> None:
    """ORC and Avro files roll at the target's bytes on disk, as Parquet files do: rows that
    compress well used to be cut by their Arrow size, making many files of a small fraction of
    the target (ORC files of 1% of it)."""
    target = 64 << 10
    cat = catalog(tmp_path)
    props = {"write.format.default": fmt, "write.target-file-size-bytes": str(target)}
    t = cat.create_table("ns.t", SCHEMA, properties=props)
    data = _compressible(200_000)
    t.append(data)
    sizes = sorted(t.inspect.files().column("file_size_in_bytes").to_pylist())
    on_disk = [
        Path(p.removeprefix("file://")).stat().st_size
        for p in t.inspect.files().column("file_path").to_pylist()
    ]
    assert sorted(on_disk) == sizes
    assert sum(sizes) > 4 * target  # several files' worth
    assert all(size <= 1.5 * target for size in sizes), sizes
    # only the file of the rows left over may be well short of the target
    assert all(size >= target // 2 for size in sizes[1:]), sizes
    back = t.scan().to_arrow().sort_by("id")
    assert back.select(["id", "s", "k"]).equals(data.cast(back.schema))

    # rows larger than the target in Arrow but not on disk make one file
    u = cat.create_table("ns.u", SCHEMA, properties=props)
    small = data.slice(0, 5_000)
    assert small.nbytes > 2 * target
    u.append(small)
    assert len(u.inspect.files()) == 1
    assert (
        u.scan().to_arrow().sort_by("id").select(["id", "s", "k"]).equals(small.cast(back.schema))
    )
