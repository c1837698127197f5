"""Tables for the command-line tests: a catalog configured through environment variables (as a
user's shell would) holding ``db.events``, a partitioned v3 table with deletion vectors, a
branch, a tag and an evolved schema, and ``db.plain``, an unpartitioned v2 table.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from icefloe.catalog.sql import SqlCatalog
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import DoubleType, LongType, NestedField, StringType, TimestamptzType

CATALOG = "clitest"


@dataclass
class CliWorld:
    """A catalog on disk and the environment that names it for the ``icefloe`` command."""

    root: Path
    env: dict[str, str]

    def catalog(self) -> SqlCatalog:
        return SqlCatalog(
            CATALOG,
            uri=self.env[f"ICEFLOE_CATALOG__{CATALOG.upper()}__URI"],
            warehouse=self.env[f"ICEFLOE_CATALOG__{CATALOG.upper()}__WAREHOUSE"],
        )


def _rows(start: int, n: int, regions: list[str], note: bool = False) -> pa.Table:
    base = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    cols = {
        "id": pa.array(range(start, start + n), pa.int64()),
        "ts": pa.array(
            [base + dt.timedelta(hours=i) for i in range(start, start + n)],
            pa.timestamp("us", "UTC"),
        ),
        "region": pa.array([regions[i % len(regions)] for i in range(n)], pa.string()),
        "amount": pa.array([float(i) * 1.5 for i in range(start, start + n)], pa.float64()),
    }
    if note:
        cols["note"] = pa.array([f"n{i}" for i in range(start, start + n)], pa.string())
    return pa.table(cols)


def build_world(root: Path) -> CliWorld:
    """Create the catalog and its tables under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{root / 'catalog.db'}"
    warehouse = (root / "warehouse").as_uri()
    config = root / "icefloe.yaml"
    config.write_text(f"default-catalog: {CATALOG}\ncatalog:\n  {CATALOG}:\n    type: sql\n")
    env = {
        f"ICEFLOE_CATALOG__{CATALOG.upper()}__URI": uri,
        f"ICEFLOE_CATALOG__{CATALOG.upper()}__WAREHOUSE": warehouse,
        "ICEFLOE_CONFIG": str(config),
    }
    world = CliWorld(root, env)
    cat = world.catalog()
    cat.create_namespace("db", {"owner": "data-team"})
    schema = Schema(
        NestedField(1, "id", LongType(), required=True, doc="event id"),
        NestedField(2, "ts", TimestamptzType()),
        NestedField(3, "region", StringType()),
        NestedField(4, "amount", DoubleType()),
    )
    spec = PartitionSpec(PartitionField(3, 1000, parse_transform("identity"), "region"))
    t = cat.create_table(
        "db.events",
        schema,
        partition_spec=spec,
        format_version=3,
        properties={"write.delete.mode": "merge-on-read"},
    )
    # Skewed: eu gets most rows; several small appends make small files.
    t.append(_rows(0, 60, ["eu", "eu", "eu", "us", "ap"]))
    t.append(_rows(60, 30, ["eu", "us"]))
    t.append(_rows(90, 10, ["eu"]))
    t.delete("id < 5 or id = 61")  # deletion vectors
    with t.manage_snapshots() as ms:
        ms.create_tag("v1", t.current_snapshot().snapshot_id)
        ms.create_branch("audit")
    t.append(_rows(100, 5, ["ap"]), branch="audit")
    with t.update_schema() as u:
        u.add_column("note", StringType(), doc="free text")
    t.append(_rows(200, 20, ["us", "ap"], note=True))
    with t.replace_sort_order() as o:
        o.asc("id")

    plain = cat.create_table(
        "db.plain",
        Schema(NestedField(1, "k", LongType(), required=True), NestedField(2, "v", StringType())),
        format_version=2,
    )
    plain.append(pa.table({"k": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]}))
    cat.close()
    return world
