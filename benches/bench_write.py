"""Writes: a partitioned append (day + bucket[16]) against PyIceberg 0.12's append of the same
data to an identical table, and the metadata-only commit overhead on the SQLite catalog."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from harness import Harness
from icefloe.catalog.sql import SqlCatalog
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.table.producer import SnapshotProducer
from icefloe.transforms import parse_transform
from icefloe.types import DoubleType, LongType, NestedField, StringType, TimestampType
from icefloe.write import DataFile

SCHEMA = Schema(
    NestedField(1, "id", LongType()),
    NestedField(2, "ts", TimestampType()),
    NestedField(3, "value", DoubleType()),
    NestedField(4, "name", StringType()),
)
SPEC = PartitionSpec(
    PartitionField(2, 1000, parse_transform("day"), "ts_day"),
    PartitionField(1, 1001, parse_transform("bucket[16]"), "id_bucket"),
)


def make_data(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    start = 1_700_000_000_000_000
    ts = rng.integers(start, start + 30 * 86_400_000_000, size=n)  # 30 days
    names = np.array([f"name-{i}" for i in range(1000)], dtype=object)
    return pa.table(
        {
            "id": pa.array(rng.integers(0, 2**40, size=n), pa.int64()),
            "ts": pa.array(ts, pa.int64()).view(pa.timestamp("us")),
            "value": pa.array(rng.random(n), pa.float64()),
            "name": pa.array(names[rng.integers(0, 1000, size=n)], pa.string()),
        }
    )


class _Ours:
    def __init__(self, root: Path) -> None:
        self.cat = SqlCatalog(
            "bench", uri=f"sqlite:///{root}/ours.db", warehouse=(root / "ours").as_uri()
        )
        self.cat.create_namespace("b")

    def append(self, data: pa.Table) -> None:
        t = self.cat.create_table(
            f"b.t{uuid.uuid4().hex[:8]}", SCHEMA, partition_spec=SPEC, format_version=2
        )
        t.append(data)


class _Theirs:
    def __init__(self, root: Path) -> None:
        from pyiceberg.catalog.sql import SqlCatalog as PySql

        self.cat = PySql(
            "bench", uri=f"sqlite:///{root}/theirs.db", warehouse=(root / "theirs").as_uri()
        )
        self.cat.create_namespace("b")

    def append(self, data: pa.Table) -> None:
        from pyiceberg.partitioning import PartitionField as PF
        from pyiceberg.partitioning import PartitionSpec as PS
        from pyiceberg.schema import Schema as PySchema
        from pyiceberg.transforms import BucketTransform, DayTransform

        schema = PySchema.model_validate(SCHEMA.to_json())
        spec = PS(
            PF(source_id=2, field_id=1000, transform=DayTransform(), name="ts_day"),
            PF(source_id=1, field_id=1001, transform=BucketTransform(16), name="id_bucket"),
        )
        t = self.cat.create_table(
            f"b.t{uuid.uuid4().hex[:8]}",
            schema,
            partition_spec=spec,
            properties={"format-version": "2"},
        )
        t.append(data)


def _commit_overhead(root: Path, commits: int) -> tuple[Any, Any, Any]:
    cat = SqlCatalog("c", uri=f"sqlite:///{root}/commit.db", warehouse=(root / "c").as_uri())
    cat.create_namespace("b")
    table = cat.create_table("b.t", SCHEMA, format_version=2)
    table.append(make_data(10))
    one = DataFile(f"{table.location}/data/shared.parquet", 10, 1000)

    def run() -> None:
        for _ in range(commits):
            with table.transaction() as tx:
                SnapshotProducer(tx, fast_append=True).add_data_files([one]).commit()

    def build_only() -> None:
        # The producer's share: manifest + manifest list written (fsync'd), no catalog commit.
        for _ in range(commits):
            tx = table.transaction()
            p = SnapshotProducer(tx, fast_append=True).add_data_files([one])
            p.commit()
            p.abort()

    from pyiceberg.catalog.sql import SqlCatalog as PySql

    pcat = PySql("p", uri=f"sqlite:///{root}/pcommit.db", warehouse=(root / "p").as_uri())
    pcat.create_namespace("b")
    pt = pcat.create_table("b.t", schema=make_data(1).schema)
    small = make_data(1)

    def peer() -> None:
        for _ in range(commits):
            pt.append(small)

    return run, peer, build_only


def run(h: Harness) -> None:
    n = h.size(10_000_000, 200_000)
    data = make_data(n)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ours, theirs = _Ours(root), _Theirs(root)
        h.compare(
            "partitioned append (day + bucket[16], 480 partitions)",
            n,
            "rows",
            ours=lambda: ours.append(data),
            peers={"pyiceberg 0.12": lambda: theirs.append(data)},
            target="3x pyiceberg",
        )
    with tempfile.TemporaryDirectory() as tmp:
        commits = h.size(50, 10)
        mine, peer, build_only = _commit_overhead(Path(tmp), commits)
        h.compare(
            f"commit overhead on SQLite ({commits} metadata-only commits)",
            commits,
            "commits",
            ours=mine,
            peers={"pyiceberg 0.12 (append of 1 row)": peer},
            target="< 30 ms per commit",
        )
        h.compare(
            f"snapshot producer alone ({commits} builds: manifest + list, no catalog)",
            commits,
            "commits",
            ours=build_only,
            peers={},
            target="(share of the commit overhead)",
        )
