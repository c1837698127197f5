"""How the ``icefloe`` format cuts a read into Spark partitions: Iceberg Java's adaptive split
size (at least one partition per core when the data allows) and order-keeping bin packing.
Planned in this process, as Spark's planner worker does; no Spark session needed."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.scan import columnar
from icefloe.scan.columnar import MIN_SPLIT_SIZE, OPEN_FILE_COST
from icefloe.spark import source
from icefloe.spark.source import (
    IcefloeReader,
    TasksPartition,
    adaptive_split_size,
    bin_pack,
)

MB = 1024 * 1024


def test_adaptive_split_size_follows_iceberg_java() -> None:
    # enough splits already: the configured size
    assert adaptive_split_size(1000 * MB, 2, 128 * MB) == 128 * MB
    assert adaptive_split_size(256 * MB, 2, 128 * MB) == 128 * MB
    # too few: the scan divided by the parallelism, at least 16 MiB
    assert adaptive_split_size(88 * MB, 2, 128 * MB) == 44 * MB
    assert adaptive_split_size(18 * MB, 2, 128 * MB) == MIN_SPLIT_SIZE
    assert adaptive_split_size(100 * MB, 8, 128 * MB) == MIN_SPLIT_SIZE
    # never above a configured size smaller than the minimum
    assert adaptive_split_size(3 * MB, 4, 1 * MB) == 1 * MB


def _tasks(*sizes: int) -> list[Any]:
    return [
        SimpleNamespace(length=s, data_file=SimpleNamespace(file_size_in_bytes=s)) for s in sizes
    ]


def test_bin_pack_groups_by_the_last_byte_and_keeps_order() -> None:
    four = _tasks(*[22 * MB] * 4)
    assert [len(g) for g in bin_pack(four, 44 * MB)] == [2, 2]
    assert [len(g) for g in bin_pack(four, 88 * MB)] == [4]
    assert [len(g) for g in bin_pack(four, 1)] == [1, 1, 1, 1]
    # small files weigh the open cost: 4 of them fill 16 MiB
    small = _tasks(*[1000] * 5)
    assert [len(g) for g in bin_pack(small, 4 * OPEN_FILE_COST)] == [4, 1]
    mixed = _tasks(100 * MB, 5 * MB, 5 * MB, 30 * MB)
    groups = bin_pack(mixed, 64 * MB)
    assert [t for g in groups for t in g] == mixed
    assert [len(g) for g in groups] == [3, 1]  # 105 and 110 MiB end in the second 64 MiB
    assert bin_pack([], 10) == []


@pytest.fixture
def four_files(tmp_path: Path) -> dict[str, str]:
    cat = HadoopCatalog("c", warehouse=str(tmp_path))
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("s", pa.string())]))
    for k in range(4):
        ids = pa.array(range(k * 1000, (k + 1) * 1000), pa.int64())
        t.append(pa.table({"id": ids, "s": pa.compute.cast(ids, pa.string())}))
    return {
        "catalog": "c",
        "catalog.type": "hadoop",
        "catalog.warehouse": str(tmp_path),
        "path": "db.t",
    }


def _rows(partitions: list[TasksPartition], options: dict[str, str]) -> list[int]:
    reader = IcefloeReader(options)
    out: list[int] = []
    for p in partitions:
        for batch in reader.read(p):
            out.extend(batch.column("id").to_pylist())
    return sorted(out)


def test_reads_use_every_core_when_the_data_allows(
    four_files: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # 16 MiB is the smallest adapted split; lowered here so that four small files show it
    monkeypatch.setattr(columnar, "MIN_SPLIT_SIZE", 1)
    one = IcefloeReader(four_files, parallelism=1).partitions()
    two = IcefloeReader(four_files, parallelism=2).partitions()
    assert len(one) == 1
    assert len(two) == 2
    assert _rows(one, four_files) == _rows(two, four_files) == list(range(4000))
    # an explicit split size is taken as given
    fixed = IcefloeReader({**four_files, "split-size": str(1 << 30)}, parallelism=2)
    assert len(fixed.partitions()) == 1


def test_register_ships_the_session_parallelism() -> None:
    class FakeContext:
        defaultParallelism = 3
        pythonExec = "python3"

        def getConf(self) -> Any:
            return {}

    registered: list[Any] = []
    spark = SimpleNamespace(
        sparkContext=FakeContext(),
        conf=SimpleNamespace(set=lambda k, v: None, get=lambda k, default=None: default),
        dataSource=SimpleNamespace(register=registered.append),
    )
    source.register(spark)
    (cls,) = registered
    assert issubclass(cls, source.IcefloeDataSource) and cls.name() == "icefloe"
    assert cls.parallelism == 3
    assert cls.case_sensitive is False  # Spark's default spark.sql.caseSensitive
    from pyspark import cloudpickle  # Spark pickles the class with it for its planner workers

    assert cloudpickle.loads(cloudpickle.dumps(cls)).parallelism == 3  # type: ignore[no-untyped-call]


def test_planner_workers_import_only_what_planning_needs() -> None:
    # Spark forks a fresh worker for each planning step of a format query; importing the
    # format must not pull in the commit path or pandas (half a second of CPU each time)
    import subprocess
    import sys

    code = (
        "import sys, icefloe.spark.source; "
        "print(sorted(m for m in ('pandas', 'pyarrow.dataset', 'icefloe.table.producer', "
        "'icefloe.spark.rowlevel') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"
