"""Tables for the command-line tests: a catalog configured through environment variables (as a
user's shell would) holding ``db.events``, a partitioned v3 table with deletion vectors, a
branch, a tag and an evolved schema, and ``db.plain``, an unpartitioned v2 table.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Iterator
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


#: Commits of the world happen at fixed times, an hour apart from this one, so the pictures of
#: its history are the same on every run.
CLOCK_START = dt.datetime(2026, 3, 1, 8, 0, tzinfo=dt.timezone.utc)


class _Clock:
    def __init__(self) -> None:
        self.ms = int(CLOCK_START.timestamp() * 1000)

    def tick(self, minutes: int = 60) -> None:
        self.ms += minutes * 60_000


@contextlib.contextmanager
def _fixed_clock() -> Iterator[_Clock]:
    """``time.time``/``time.time_ns`` read a clock the caller advances (metadata timestamps)."""
    clock = _Clock()
    real_time, real_ns = time.time, time.time_ns
    time.time = lambda: clock.ms / 1000  # type: ignore[assignment]
    time.time_ns = lambda: clock.ms * 1_000_000  # type: ignore[assignment]
    try:
        yield clock
    finally:
        time.time, time.time_ns = real_time, real_ns  # type: ignore[assignment]


def build_world(root: Path) -> CliWorld:
    """Create the catalog and its tables under ``root``."""
    with _fixed_clock() as clock:
        return _build(root, clock)


def _build(root: Path, clock: _Clock) -> CliWorld:
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
    # Skewed (eu holds most rows); several small appends make small files.
    clock.tick(60)
    t.append(_rows(0, 80, ["eu"]))
    clock.tick(60)
    t.append(_rows(80, 20, ["eu", "us"]))
    clock.tick(60)
    t.append(_rows(100, 10, ["eu"]))
    clock.tick(360)
    t.delete("id < 5 or id = 81")  # deletion vectors
    clock.tick(60)
    with t.manage_snapshots() as ms:
        ms.create_tag("v1", t.current_snapshot().snapshot_id)
        ms.create_branch("audit")
    clock.tick(60)
    t.append(_rows(150, 5, ["ap"]), branch="audit")
    clock.tick(60)
    with t.update_schema() as u:
        u.add_column("note", StringType(), doc="free text")
    clock.tick(120)
    t.append(_rows(200, 20, ["us", "ap"], note=True))
    clock.tick(60)
    with t.replace_sort_order() as o:
        o.asc("id")

    plain = cat.create_table(
        "db.plain",
        Schema(NestedField(1, "k", LongType(), required=True), NestedField(2, "v", StringType())),
        format_version=2,
    )
    clock.tick(60)
    plain.append(pa.table({"k": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]}))
    cat.close()
    return world


def empty_world(root: Path, name: str = CATALOG) -> CliWorld:
    """A configured SQLite catalog ``name`` with no tables (the default catalog of its config
    file), its database and warehouse under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    config = root / "icefloe.yaml"
    config.write_text(f"default-catalog: {name}\ncatalog:\n  {name}:\n    type: sql\n")
    env = {
        f"ICEFLOE_CATALOG__{name.upper()}__URI": f"sqlite:///{root / 'catalog.db'}",
        f"ICEFLOE_CATALOG__{name.upper()}__WAREHOUSE": (root / "warehouse").as_uri(),
        "ICEFLOE_CONFIG": str(config),
    }
    return CliWorld(root, env)


def moved_to_nowhere(world: CliWorld, tmp_path: Path, name: str = "db.plain") -> Path:
    """A copy of ``name``'s current metadata file whose ``location`` is a directory that does
    not exist (the table's files stay where they are)."""
    import json

    table = world.catalog().load_table(name)
    doc = json.loads(Path(table.metadata_location.removeprefix("file://")).read_text())
    doc["location"] = (tmp_path / "nowhere").as_uri()
    moved = tmp_path / "moved.metadata.json"
    moved.write_text(json.dumps(doc))
    return moved
