"""Every ``python`` code block of docs/guide.md runs, in order of appearance, on small data,
and each ``# -> result`` line matches what the expression above it gives.

Each block gets a namespace holding what its prose assumes (a catalog, a table, some Arrow
data); a few remote paths (``s3://...``) are swapped for local files. A new block in the guide
fails :func:`test_every_block_has_a_setup` until it is given one here.
"""

from __future__ import annotations

import datetime
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.transforms import parse_transform
from icefloe.types import (
    DoubleType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
)

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide.md"


def guide_blocks() -> list[tuple[int, str]]:
    """(first line number, code) of each ```python block."""
    text = GUIDE.read_text()
    out = []
    for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
        out.append((text.count("\n", 0, m.start()) + 2, m.group(1)))
    return out


def _catalog(tmp: Path) -> SqlCatalog:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp}/c.db", warehouse=(tmp / "wh").as_uri())
    cat.create_namespace("db")
    return cat


ID_S = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))


def _id_s(ids: list[int]) -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "s": [f"s{i}" for i in ids]},
        schema=pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string())]),
    )


def _types(tmp: Path) -> dict[str, Any]:
    return {}


def _filters(tmp: Path) -> dict[str, Any]:
    utc = datetime.timezone.utc
    ts = [datetime.datetime(2024, 1, d, tzinfo=utc) for d in (1, 2, 3)]
    return {
        "arrow_table": pa.table(
            {
                "id": [1, 6, 7],
                "ts": pa.array(ts, pa.timestamp("us", "UTC")),
                "name": ["x", "abc1", None],
            }
        )
    }


def _null_filters(tmp: Path) -> dict[str, Any]:
    return {}  # the block opens the default catalog itself


def _properties(tmp: Path) -> dict[str, Any]:
    return {}  # the block makes its own table in the default catalog


def _metadata(tmp: Path) -> dict[str, Any]:
    t = _catalog(tmp).create_table("db.t", ID_S, format_version=3)
    t.append(_id_s([1, 2, 3]))
    shutil.copy(t.metadata_location.removeprefix("file://"), tmp / "v3.metadata.json")
    snap = t.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    list_bytes = t.io.new_input(snap.manifest_list).read()
    from icefloe.manifest import manifest_files, read_manifest_list

    m = manifest_files(read_manifest_list(list_bytes))[0]
    return {"list_bytes": list_bytes, "manifest_bytes": t.io.new_input(m.manifest_path).read()}


def _catalogs(tmp: Path) -> dict[str, Any]:
    return {}


def _rest(tmp: Path) -> dict[str, Any]:
    pytest.importorskip("uvicorn")
    return {}


def _duckdb_extensions(tmp: Path) -> dict[str, Any]:
    for name in ("avro", "iceberg", "httpfs"):
        pytest.importorskip(f"duckdb_extension_{name}")
    return {}


def _writing(tmp: Path) -> dict[str, Any]:
    from icefloe.catalog import load_catalog

    x = tmp / "x.parquet"
    ids = pa.field("id", pa.int64(), nullable=False, metadata={"PARQUET:field_id": "1"})
    s = pa.field("s", pa.string(), metadata={"PARQUET:field_id": "2"})
    pq.write_table(pa.table({"id": [4], "s": ["x"]}, schema=pa.schema([ids, s])), x)
    catalog = load_catalog()
    catalog.create_namespace("db")  # as the previous section left it
    return {
        "catalog": catalog,
        "schema": ID_S,
        "more": _id_s([10]),
        "fresh": _id_s([11]),
        "everything": _id_s([1, 2, 3]),
        "day": _id_s([2, 20]),
        "a": _id_s([30]),
        "b": _id_s([31]),
        "s3://bucket/x.parquet": x.as_uri(),
    }


def _variant(tmp: Path) -> dict[str, Any]:
    return {"catalog": _catalog(tmp), "datetime": datetime}


def _evolution(tmp: Path) -> dict[str, Any]:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "s", StringType()),
        NestedField(3, "ts", TimestampType()),
        NestedField(4, "location", StructType(NestedField(5, "lat", DoubleType(), required=True))),
        NestedField(6, "old", StringType()),
        NestedField(7, "category", StringType()),
    )
    spec = PartitionSpec(PartitionField(7, 1000, parse_transform("identity"), "category"))
    table = _catalog(tmp).create_table("db.t", schema, partition_spec=spec, format_version=2)
    batch = pa.record_batch(
        [pa.array([1], pa.int64()), pa.array(["e"])],
        schema=pa.schema([pa.field("id", pa.int64(), nullable=False), ("extra", pa.string())]),
    )
    return {"table": table, "batch": batch}


def _snapshot_table(tmp: Path) -> tuple[Table, list[int]]:
    t = _catalog(tmp).create_table("db.t", ID_S)
    ids = []
    for i in range(3):
        t.append(_id_s([i]))
        snap = t.current_snapshot()
        assert snap is not None
        ids.append(snap.snapshot_id)
        time.sleep(0.002)  # distinct commit timestamps
    return t, ids


def _history(tmp: Path) -> dict[str, Any]:
    t, (s1, s2, s3) = _snapshot_table(tmp)
    with t.manage_snapshots() as ms:
        ms.create_branch("stage", s1)
    t.append(_id_s([9]), branch="stage")
    s2_ms = t.snapshot_by_id(s2).timestamp_ms  # type: ignore[union-attr]
    return {
        "table": t,
        "snapshot_id": s3,
        "older_id": s1,
        "ts_ms": s2_ms,  # the latest main ancestor before it, after rolling back, is s1
        "any_id": s2,
        "staged_append_id": t.refs()["stage"].snapshot_id,
    }


def _wap(tmp: Path) -> dict[str, Any]:
    t, _ = _snapshot_table(tmp)
    return {"table": t, "batch": _id_s([42])}


def _expire(tmp: Path) -> dict[str, Any]:
    t, (s1, _, _) = _snapshot_table(tmp)
    return {"table": t, "cutoff": int(time.time() * 1000) + 1, "sid": s1}


def _orders(tmp: Path) -> dict[str, Any]:
    """What the guide's own setup of the orders table defines (``table``, ``orders_table``,
    ``new_rows``, ...): the printed results below it hold for that table."""
    ns: dict[str, Any] = {}
    (code,) = [code for _, code in guide_blocks() if "def orders_table" in code]
    exec(code, ns)
    return {k: v for k, v in ns.items() if not k.startswith("__")}


def _geo(tmp: Path) -> dict[str, Any]:
    import struct

    return {"catalog": _catalog(tmp), "struct": struct, "pa": pa}


def _reading(tmp: Path) -> dict[str, Any]:
    pytest.importorskip("duckdb")
    from icefloe.catalog import load_catalog

    cat = load_catalog()
    cat.create_namespace("db")
    t = cat.create_table("db.logs", ID_S)
    t.append(_id_s([99, 101, 102]))
    hadoop = HadoopCatalog("h", warehouse=(tmp / "lake").as_uri())
    hadoop.create_namespace("db")
    hadoop.create_table("db.events", ID_S).append(_id_s([1]))
    return {
        "s3://lake/db/events/metadata/00007-....metadata.json": t.metadata_location,
        "/data/lake/db/events": str(tmp / "lake" / "db" / "events"),
    }


def _incremental(tmp: Path) -> dict[str, Any]:
    from icefloe.catalog import load_catalog

    cat = load_catalog()
    cat.create_namespace("db")
    cat.create_table("db.logs", ID_S).append(_id_s([1, 2]))
    return {"new_rows": _id_s([3, 4])}


def _delta(tmp: Path) -> dict[str, Any]:
    src = Path(__file__).resolve().parent / "data" / "delta" / "dml"
    shutil.copytree(src / "table", tmp / "events")
    return {"/data/events": str(tmp / "events")}


def _views(tmp: Path) -> dict[str, Any]:
    return {}  # the block makes its own namespace and table in the default catalog


SKIP = object()

# One entry per block, in the guide's order: what the block's prose takes for granted.
SETUPS: list[Callable[[Path], dict[str, Any]] | object] = [
    _types,
    _filters,
    _null_filters,
    _metadata,
    _catalogs,
    _properties,
    _views,
    _rest,
    _duckdb_extensions,
    _writing,
    _variant,
    SKIP,  # Spark: needs a Spark session; tests/test_spark_*.py run these calls
    _evolution,
    _history,
    _wap,
    _expire,
    _types,  # the orders table: the block makes it in the default catalog
    _orders,
    _orders,  # table statistics
    _orders,  # partition statistics
    _geo,
    _reading,
    _incremental,
    _delta,
    SKIP,  # Delta sync from Spark: tests/test_delta_spark.py runs these calls
]


def test_every_block_has_a_setup() -> None:
    assert len(guide_blocks()) == len(SETUPS)


# The Spark block is not run here (it needs a Spark session); tests/test_spark_*.py run its calls.
@pytest.mark.parametrize("index", [i for i, s in enumerate(SETUPS) if s is not SKIP])
def test_guide_block_runs(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    setup = SETUPS[index]
    assert callable(setup)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.icefloe.yaml: load_catalog()'s defaults
    monkeypatch.delenv("ICEFLOE_CONFIG", raising=False)
    for key in [k for k in os.environ if k.startswith("ICEFLOE_CATALOG__")]:
        monkeypatch.delenv(key)
    line, code = guide_blocks()[index]
    ns: dict[str, Any] = {"__name__": f"guide_block_{index}"}
    for key, value in setup(tmp_path).items():
        if "/" in key or ":" in key:
            code = code.replace(key, value)  # a remote path swapped for a local one
        else:
            ns[key] = value
    exec(compile("\n" * (line - 1) + code, str(GUIDE), "exec"), ns)
    # A line ``# -> text`` states what the expression on the line before prints as.
    lines = code.splitlines()
    for i, text in enumerate(lines):
        if text.startswith("# -> "):
            assert str(eval(lines[i - 1], ns)) == text.removeprefix("# -> ")


def test_delta_packages_are_the_jars_the_tests_use() -> None:
    """The Maven coordinates the Delta sync section gives are those of tests/support/spark.py."""
    from support.spark import DELTA_JARS

    (code,) = [code for _, code in guide_blocks() if "DELTA_PACKAGES = " in code]
    given = re.findall(r'"([\w.-]+:[\w.-]+:[\w.-]+)"', code)
    assert given == [":".join(jar) for jar in DELTA_JARS]
