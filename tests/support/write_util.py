"""Helpers of the write tests: a SQLite catalog, generated data and peer read-backs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.catalog.sql import SqlCatalog
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.transforms import parse_transform
from icefloe.types import DoubleType, LongType, NestedField, StringType, TimestampType

if TYPE_CHECKING:
    from support.s3 import Warehouse

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "s", StringType()),
    NestedField(3, "ts", TimestampType()),
    NestedField(4, "x", DoubleType()),
)
SPEC = PartitionSpec(
    PartitionField(3, 1000, parse_transform("day"), "ts_day"),
    PartitionField(1, 1001, parse_transform("bucket[4]"), "id_bucket"),
)


def catalog(tmp_path: Path, warehouse: Warehouse | None = None) -> SqlCatalog:
    """A SQLite catalog with namespace ``ns``; its tables go to ``warehouse`` (default: local)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{tmp_path}/c.db"
    if warehouse is None:
        cat = SqlCatalog("c", uri=uri, warehouse=(tmp_path / "wh").as_uri())
    else:
        cat = SqlCatalog("c", uri=uri, warehouse=warehouse.location, **warehouse.properties)
    cat.create_namespace("ns")
    return cat


def set_properties_elsewhere(tmp_path: Path, identifier: str, props: dict[str, str]) -> None:
    """Sets table properties through PyIceberg on :func:`catalog`'s database, as another engine
    would: icefloe's own validation does not run."""
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    uri = f"sqlite:///{tmp_path}/c.db"
    other = PySqlCatalog("c", uri=uri, warehouse=(tmp_path / "wh").as_uri())
    with other.load_table(identifier).transaction() as tx:
        tx.set_properties(props)
    other.engine.dispose()


def rows(start: int, n: int) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    base = pa.scalar(dt.datetime(2024, 1, 1), pa.timestamp("us"))
    hours = pc.multiply(ids, 3_600_000_000)
    ts = pc.add(base.cast(pa.int64()), hours).cast(pa.timestamp("us"))
    x = pc.divide(ids.cast(pa.float64()), 3.0)
    x = pc.if_else(pc.equal(pc.bit_wise_and(ids, 7), 0), float("nan"), x)
    s = pc.binary_join_element_wise("s", ids.cast(pa.string()), "")
    return pa.table({"id": ids, "s": s, "ts": ts, "x": x})


def checksum(t: pa.Table) -> tuple[int, int]:
    return t.num_rows, int(pc.sum(t["id"]).as_py() or 0)


def pyiceberg_read(table: Table, **scan: Any) -> pa.Table:
    from pyiceberg.table import StaticTable

    st = StaticTable.from_metadata(table.metadata_location, properties=table.io.properties)
    return st.scan(**scan).to_arrow()


def duckdb_checksum(con: Any, table: Table) -> tuple[int, int]:
    n, s = con.execute(
        f"select count(*), coalesce(sum(id), 0) from iceberg_scan('{table.metadata_location}')"
    ).fetchone()
    return int(n), int(s)
