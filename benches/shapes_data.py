"""Table shapes of the shapes suite: deterministic generators and what each operation touches.

Every shape has a unique key (``id``, or ``l_orderkey, l_linenumber`` for TPC-H ``lineitem``), a
time column the ``day`` layouts partition by, a filter that deletes about 10% of the rows spread
over every file, an overwrite filter selecting about 10% by time, a value column an upsert
changes, and the two columns a projected read selects. Generated tables are cached per
``(shape, rows)`` within a run.
"""

from __future__ import annotations

import datetime
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

START_US = 1_700_006_400_000_000  # 2023-11-15T00:00:00Z, a day boundary
DAYS = 30
DAY_US = 86_400_000_000
TPCH_SF1_ROWS = 6_001_215


@dataclass(frozen=True)
class Shape:
    """A table shape and the columns and filters each operation uses."""

    name: str
    make: Callable[[int], pa.Table]
    id_col: str  # bucket[16] source
    time_col: str  # day / month source
    time_transform: str  # "day" or "month"
    keys: tuple[str, ...]  # upsert join columns (unique)
    delete_filter: str  # about 10% of rows, spread over every file
    delete_col: str
    overwrite_filter: str  # about 10% of rows by time
    value_col: str  # changed by the upsert
    projection: tuple[str, str]  # the projected read
    note: str = ""

    def table(self, rows: int) -> pa.Table:
        return _cached(self.name, rows)


def _strings(rng: np.random.Generator, n: int, width: int) -> pa.Array:
    """``n`` random lowercase ASCII strings of ``width`` characters, built without Python loops."""
    data = rng.integers(97, 123, size=(n, width), dtype=np.uint8).tobytes()
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data))


def _choice(rng: np.random.Generator, n: int, values: list[str]) -> pa.Array:
    idx = pa.array(rng.integers(0, len(values), n).astype(np.int32))
    return pa.DictionaryArray.from_arrays(idx, pa.array(values)).cast(pa.string())


def _base(rng: np.random.Generator, n: int) -> dict[str, pa.Array]:
    """Unique shuffled ``id`` and a ``ts`` spread over ``DAYS`` days (microseconds, UTC-less)."""
    ids = rng.permutation(n).astype(np.int64)
    ts = rng.integers(START_US, START_US + DAYS * DAY_US, size=n)
    return {
        "id": pa.array(ids),
        "ts": pa.array(ts, pa.int64()).view(pa.timestamp("us")),
    }


def _narrow(n: int) -> pa.Table:
    rng = np.random.default_rng(1)
    cols = _base(rng, n)
    cols["i"] = pa.array(rng.integers(-(2**31), 2**31 - 1, n).astype(np.int32))
    cols["x"] = pa.array(rng.random(n))
    cols["y"] = pa.array(rng.integers(0, 2**40, n))
    return pa.table(cols)


def _event(n: int) -> pa.Table:
    rng = np.random.default_rng(2)
    cols = _base(rng, n)
    cols["category"] = _choice(rng, n, [f"category-{i:02d}" for i in range(40)])
    cols["value"] = pa.array(rng.random(n))
    cols["tag"] = _strings(rng, n, 16)
    return pa.table(cols)


def _wide(n: int) -> pa.Table:
    """60 columns: id, ts, 20 strings, 13 longs, 13 doubles, 6 ints, 6 booleans."""
    rng = np.random.default_rng(3)
    cols = _base(rng, n)
    words = [f"w{i:03d}" for i in range(200)]
    for i in range(20):
        cols[f"s{i:02d}"] = _strings(rng, n, 8) if i % 4 == 0 else _choice(rng, n, words)
    for i in range(13):
        cols[f"l{i:02d}"] = pa.array(rng.integers(0, 10 ** (3 + i % 10), n))
    for i in range(13):
        cols[f"d{i:02d}"] = pa.array(rng.random(n))
    for i in range(6):
        cols[f"i{i:02d}"] = pa.array(rng.integers(0, 1000, n).astype(np.int32))
    for i in range(6):
        cols[f"b{i:02d}"] = pa.array(rng.random(n) < 0.5)
    return pa.table(cols)


def _nested(n: int) -> pa.Table:
    """id, ts, x, st struct<a long, b string>, items list<struct<k int, v double>>,
    attrs map<string, long> (0-4 items and 0-3 entries a row)."""
    rng = np.random.default_rng(4)
    cols = _base(rng, n)
    cols["x"] = pa.array(rng.random(n))
    cols["st"] = pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 2**40, n)), _strings(rng, n, 8)], names=["a", "b"]
    )
    lens = rng.integers(0, 5, n)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    m = int(offsets[-1])
    item = pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 1000, m).astype(np.int32)), pa.array(rng.random(m))],
        names=["k", "v"],
    )
    cols["items"] = pa.ListArray.from_arrays(pa.array(offsets), item)
    lens = rng.integers(0, 4, n)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    m = int(offsets[-1])
    keys = _choice(rng, m, [f"k{i}" for i in range(50)])
    cols["attrs"] = pa.MapArray.from_arrays(
        pa.array(offsets), keys, pa.array(rng.integers(0, 2**40, m))
    )
    return pa.table(cols)


def _lineitem(n: int) -> pa.Table:
    """TPC-H ``lineitem`` from DuckDB's ``tpch`` extension (``dbgen``), loaded offline from the
    ``duckdb-extension-tpch`` package; the scale factor is chosen for about ``n`` rows."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from support.peers import duckdb_connect, duckdb_load

    con = duckdb_connect()
    duckdb_load(con, "tpch")
    sf = max(n / TPCH_SF1_ROWS, 0.0001)
    con.execute(f"call dbgen(sf={sf})")
    table = con.execute(
        f"select * from lineitem order by l_orderkey, l_linenumber limit {n}"
    ).to_arrow_table()
    con.close()
    return table


def _ts_literal(days: int) -> str:
    when = datetime.datetime(2023, 11, 15) + datetime.timedelta(days=days)
    return when.isoformat()


_COMMON = dict(
    id_col="id",
    time_col="ts",
    time_transform="day",
    keys=("id",),
    overwrite_filter=f"ts < '{_ts_literal(3)}'",
)

SHAPES: dict[str, Shape] = {
    "narrow": Shape(
        "narrow",
        _narrow,
        delete_filter="x < 0.1",
        delete_col="x",
        value_col="x",
        projection=("id", "x"),
        note="id long, ts, i int, x double, y long",
        **_COMMON,  # type: ignore[arg-type]
    ),
    "event": Shape(
        "event",
        _event,
        delete_filter="value < 0.1",
        delete_col="value",
        value_col="value",
        projection=("id", "value"),
        note="id long, ts, category (40 values), value double, tag (16 random chars)",
        **_COMMON,  # type: ignore[arg-type]
    ),
    "wide": Shape(
        "wide",
        _wide,
        delete_filter="d00 < 0.1",
        delete_col="d00",
        value_col="d01",
        projection=("id", "d00"),
        note="60 columns: 20 strings, 14 longs, 13 doubles, 6 ints, 6 booleans, ts",
        **_COMMON,  # type: ignore[arg-type]
    ),
    "nested": Shape(
        "nested",
        _nested,
        delete_filter="x < 0.1",
        delete_col="x",
        value_col="x",
        projection=("id", "x"),
        note="id, ts, x, struct<a long, b string>, list<struct<k int, v double>>, "
        "map<string, long>",
        **_COMMON,  # type: ignore[arg-type]
    ),
    "lineitem": Shape(
        "lineitem",
        _lineitem,
        id_col="l_orderkey",
        time_col="l_shipdate",
        time_transform="month",
        keys=("l_orderkey", "l_linenumber"),
        delete_filter="l_quantity <= 5",
        delete_col="l_quantity",
        overwrite_filter="l_shipdate < '1992-09-01'",
        value_col="l_partkey",
        projection=("l_orderkey", "l_extendedprice"),
        note="TPC-H lineitem (DuckDB tpch dbgen); month(l_shipdate): ~80 months",
    ),
}


@cache
def _cached(name: str, rows: int) -> pa.Table:
    return SHAPES[name].make(rows).combine_chunks()


def upsert_rows(shape: Shape, rows: int) -> pa.Table:
    """1% of the rows (a deterministic sample) with the value column changed."""
    table = shape.table(rows)
    count = max(1, table.num_rows // 100)
    idx = np.sort(np.random.default_rng(9).choice(table.num_rows, count, replace=False))
    part = table.take(pa.array(idx))
    col = part.column(shape.value_col)
    changed = pc.add(col, pa.scalar(1, col.type)).cast(col.type)
    return part.set_column(part.schema.get_field_index(shape.value_col), shape.value_col, changed)


def overwrite_rows(shape: Shape, rows: int) -> pa.Table:
    """The rows the overwrite filter selects (written back in place of themselves)."""
    table = shape.table(rows)
    col = table.column(shape.time_col)
    if shape.time_col == "ts":
        bound = pa.scalar(START_US + 3 * DAY_US, pa.int64()).cast(pa.timestamp("us"))
    else:
        bound = pa.scalar(datetime.date(1992, 9, 1), pa.date32())
    return table.filter(pc.less(col, bound))


def delete_keys(shape: Shape, rows: int) -> pa.Table:
    """10% of the keys (equality deletes)."""
    table = shape.table(rows).select(list(shape.keys))
    count = table.num_rows // 10
    idx = np.sort(np.random.default_rng(11).choice(table.num_rows, count, replace=False))
    return table.take(pa.array(idx))
