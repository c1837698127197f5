"""``readable_metrics`` of the file-level metadata tables: each primitive column's metrics by
name, bounds decoded to the column's type, as Java's ``MetricsUtil`` and PyIceberg 0.12 give
them; checked against PyIceberg and against the raw bounds (promoted columns included)."""

from __future__ import annotations

import datetime
import decimal
import math
import struct
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.schema import Schema
from icefloe.types import DoubleType, LongType, TimestampType
from icefloe.values import from_bytes
from icefloe.write.files import DataFile
from support.evolution import SIMPLE_SCHEMA, append_rows, shared_catalogs

_METRICS = [
    "column_size",
    "value_count",
    "null_value_count",
    "nan_value_count",
    "lower_bound",
    "upper_bound",
]

_SCHEMA = pa.schema(
    [
        pa.field("i", pa.int32()),
        pa.field("l", pa.int64()),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64()),
        pa.field("dec", pa.decimal128(10, 2)),
        pa.field("dt", pa.date32()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("tstz", pa.timestamp("us", tz="UTC")),
        pa.field("s", pa.string()),
        pa.field("b", pa.binary()),
        pa.field("u", pa.uuid()),
        pa.field("bo", pa.bool_()),
        pa.field("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
        pa.field("lst", pa.list_(pa.int32())),
        pa.field("m", pa.map_(pa.string(), pa.int32())),
        pa.field("p", pa.int32()),  # promoted to long
        pa.field("pf", pa.float32()),  # promoted to double
        pa.field("pd", pa.date32()),  # promoted to timestamp
    ]
)

_LEAVES = [
    "b",
    "bo",
    "d",
    "dec",
    "dt",
    "f",
    "i",
    "l",
    "lst.element",
    "m.key",
    "m.value",
    "p",
    "pd",
    "pf",
    "s",
    "st.x",
    "st.y",
    "ts",
    "tstz",
    "u",
]


def _rows(k: int) -> pa.Table:
    utc = datetime.timezone.utc
    return pa.table(
        {
            "i": pa.array([1 + k, -5, None], pa.int32()),
            "l": [10**12 + k, -3, None],
            "f": pa.array([1.5, float("nan"), None], pa.float32()),
            "d": [2.5 + k, -1e300, None],
            "dec": [decimal.Decimal("12.34"), decimal.Decimal(f"-9999999{k}.99"), None],
            "dt": [datetime.date(2024, 1, 2 + k), datetime.date(1969, 12, 31), None],
            "ts": [
                datetime.datetime(2024, 1, 2, 3, 4, 5, 6 + k),
                None,
                datetime.datetime(1960, 1, 1),
            ],
            "tstz": [datetime.datetime(2024, 1, 2, k, tzinfo=utc), None, None],
            "s": ["héllo", "a" * 40, None],  # a bound of 16 characters: truncated
            "b": [b"\x00\xff", b"zz" + bytes([k]), None],
            "u": pa.array(
                [uuid.UUID(int=5 + k).bytes, uuid.UUID(int=2**127).bytes, None], pa.uuid()
            ),
            "bo": [True, True, None] if k else [True, False, None],
            "st": [{"x": 1, "y": "q"}, {"x": 7 + k, "y": None}, None],
            "lst": [[1, 2], [], None],
            "m": [[("k", 1)], [], None],
            "p": [3 + k, -7, None],
            "pf": [0.25, -2.0 - k, None],
            "pd": [datetime.date(2020, 5, 6), datetime.date(1970, 1, 2 + k), None],
        },
        schema=_SCHEMA,
    )


def _by_file(files: pa.Table) -> dict[str, dict[str, Any]]:
    return {
        r["file_path"]: r["readable_metrics"]
        for r in files.select(["file_path", "readable_metrics"]).to_pylist()
    }


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _check_raw(t: Any, files: pa.Table) -> None:
    """Each readable metric is the file's raw metric for the column's field id, each bound
    decoded as the type it was written with (the type at write time, by the spec)."""
    schema = t.schema()
    old = {"p": "int", "pf": "float", "pd": "date"}
    for row in files.to_pylist():
        rm = row["readable_metrics"]
        assert list(rm) == _LEAVES
        for name, metrics in rm.items():
            fid = schema.find_field(name).field_id
            ftype = schema.find_type(name)
            for metric, raw_col in zip(
                _METRICS[:4],
                ["column_sizes", "value_counts", "null_value_counts", "nan_value_counts"],
                strict=True,
            ):
                assert metrics[metric] == dict(row[raw_col] or []).get(fid), (name, metric)
            for metric, raw_col in (
                ("lower_bound", "lower_bounds"),
                ("upper_bound", "upper_bounds"),
            ):
                raw = dict(row[raw_col] or []).get(fid)
                if raw is None:
                    assert metrics[metric] is None, (name, metric)
                    continue
                if name in old and len(raw) == 4 and str(ftype) != old[name]:
                    from icefloe.types import DateType, FloatType, IntegerType

                    was = {"p": IntegerType(), "pf": FloatType(), "pd": DateType()}[name]
                    want = from_bytes(was, raw)
                    if name == "pd":  # a date under a timestamp: its first instant
                        want = datetime.datetime.combine(want, datetime.time())
                else:
                    want = from_bytes(ftype, raw)
                assert _same(metrics[metric], want), (name, metric, metrics[metric], want)


def test_readable_metrics_match_pyiceberg_and_the_raw_bounds(tmp_path: Path) -> None:
    c = shared_catalogs(tmp_path)
    t = c.ours.create_table("db.t", _SCHEMA, properties={"format-version": "3"})
    t.append(_rows(0))
    t.refresh()
    ours = t.inspect.files()
    assert ours.column_names[-1] == "readable_metrics"
    assert ours.schema.field("readable_metrics").type.names == _LEAVES
    # bounds have the column's own type
    rtype = ours.schema.field("readable_metrics").type
    for name, arrow_type in [
        ("dec", pa.decimal128(10, 2)),
        ("tstz", pa.timestamp("us", tz="UTC")),
        ("u", pa.uuid()),
        ("st.x", pa.int32()),
        ("m.key", pa.string()),
    ]:
        assert rtype.field(name).type.field("lower_bound").type == arrow_type
    # PyIceberg shows the top-level columns (primitive ones compared; it cannot build the
    # column for a uuid one: compared on a table without it)
    no_uuid = _SCHEMA.remove(_SCHEMA.get_field_index("u"))
    c.ours.create_table("db.p", no_uuid, properties={"format-version": "3"}).append(
        _rows(0).drop_columns(["u"])
    )
    theirs = c.theirs.load_table("db.p").inspect.files()
    their = _by_file(theirs)
    top = [n for n in _LEAVES if "." not in n and n != "u"]
    for path, rm in _by_file(c.ours.load_table("db.p").inspect.files()).items():
        for name in top:
            for metric in _METRICS:
                assert _same(rm[name][metric], their[path][name][metric]), (name, metric)
    mine = _by_file(ours)
    (rm,) = mine.values()
    assert rm["f"]["nan_value_count"] == 1 and rm["f"]["lower_bound"] == 1.5
    assert rm["s"]["lower_bound"] == "a" * 16 and rm["s"]["upper_bound"] == "héllo"
    assert rm["dec"]["lower_bound"] == decimal.Decimal("-99999990.99")
    assert rm["st.x"]["upper_bound"] == 7 and rm["st.y"]["null_value_count"] == 2
    _check_raw(t, ours)

    # promoted columns: the old files' bounds are 4 bytes, decoded as the type they were
    # written with; a new file has 8-byte bounds
    with t.update_schema() as u:
        u.update_column("p", LongType()).update_column("pf", DoubleType())
        u.update_column("pd", TimestampType())
    t.refresh()
    promoted = _rows(1).cast(
        _SCHEMA.set(_SCHEMA.get_field_index("p"), pa.field("p", pa.int64()))
        .set(_SCHEMA.get_field_index("pf"), pa.field("pf", pa.float64()))
        .set(_SCHEMA.get_field_index("pd"), pa.field("pd", pa.timestamp("us")))
    )
    t.append(promoted)
    t.refresh()
    files = t.inspect.files()
    rtype = files.schema.field("readable_metrics").type
    assert rtype.field("p").type.field("lower_bound").type == pa.int64()
    assert rtype.field("pd").type.field("upper_bound").type == pa.timestamp("us")
    _check_raw(t, files)
    got = sorted(
        (r["p"]["lower_bound"], r["pf"]["lower_bound"], r["pd"]["lower_bound"])
        for r in files.column("readable_metrics").to_pylist()
    )
    assert got == [
        (-7, -3.0, datetime.datetime(1970, 1, 3)),  # 8-byte bounds
        (-7, -2.0, datetime.datetime(1970, 1, 2)),  # 4-byte bounds
    ]

    # entries(): a top-level readable_metrics, the files' for the live entries
    entries = t.inspect.entries()
    assert entries.column_names == [
        "status",
        "snapshot_id",
        "sequence_number",
        "file_sequence_number",
        "data_file",
        "readable_metrics",
    ]
    by_path = {
        r["data_file"]["file_path"]: r["readable_metrics"]
        for r in entries.select(["data_file", "readable_metrics"]).to_pylist()
    }
    assert repr(by_path) == repr(_by_file(files))
    for table in (
        t.inspect.data_files(),
        t.inspect.all_files(),
        t.inspect.all_data_files(),
        t.inspect.all_entries(),
    ):
        assert table.schema.field("readable_metrics").type == rtype
    assert t.inspect.delete_files().num_rows == 0


def test_readable_metrics_of_an_empty_and_an_unpartitioned_table(tmp_path: Path) -> None:
    c = shared_catalogs(tmp_path)
    t = c.ours.create_table("db.u", Schema.from_json(SIMPLE_SCHEMA))
    for name in ("files", "entries", "data_files", "delete_files", "all_files", "all_entries"):
        table = getattr(t.inspect, name)()
        assert table.num_rows == 0
        assert table.schema.field("readable_metrics").type.names == ["data", "id"]
    append_rows(c, "u", [3, 1, 2])
    t.refresh()
    ours = t.inspect.files()
    (rm,) = ours.column("readable_metrics").to_pylist()
    assert rm["id"]["lower_bound"] == 1 and rm["id"]["upper_bound"] == 3
    assert rm["data"]["lower_bound"] == "r1" and rm["data"]["value_count"] == 3
    (theirs,) = c.theirs.load_table("db.u").inspect.files().column("readable_metrics").to_pylist()
    assert rm == theirs


def test_readable_metrics_can_be_left_out(tmp_path: Path) -> None:
    """``with_readable_metrics=False`` gives the same rows without the column; the data and
    delete file tables select their rows the same way either way."""
    c = shared_catalogs(tmp_path)
    t = c.ours.create_table("db.o", Schema.from_json(SIMPLE_SCHEMA))
    append_rows(c, "o", [1, 2, 3])
    append_rows(c, "o", [4])
    t.refresh()
    t.delete("id = 2")
    for name in ("files", "data_files", "delete_files", "entries"):
        full = getattr(t.inspect, name)()
        bare = getattr(t.inspect, name)(with_readable_metrics=False)
        assert "readable_metrics" not in bare.column_names
        assert bare.equals(full.drop_columns(["readable_metrics"])), name
    assert t.inspect.data_files(with_readable_metrics=False).num_rows >= 2
    assert t.inspect.data_files().num_rows + t.inspect.delete_files().num_rows == (
        t.inspect.files().num_rows
    )


def test_readable_metrics_of_damaged_or_odd_bounds(tmp_path: Path) -> None:
    """A bound no type of the column has (a 3-byte long, a 5-byte uuid) is null; decimals of
    every length decode; a 4-byte bound under a ``timestamp_ns`` is a date."""
    from icefloe.table.producer import SnapshotProducer

    c = shared_catalogs(tmp_path)
    schema = pa.schema(
        [
            pa.field("l", pa.int64()),
            pa.field("dec", pa.decimal128(38, 3)),
            pa.field("u", pa.uuid()),
            pa.field("tn", pa.timestamp("ns")),
        ]
    )
    t = c.ours.create_table("db.o", schema, properties={"format-version": "3"})
    decs = [-(10**38 - 1), -1, 0, 1, 255, 10**38 - 1, -129, -128, 128]
    files = []
    for k, unscaled in enumerate(decs):
        raw = unscaled.to_bytes(16, "big", signed=True).lstrip(b"\xff" if unscaled < 0 else b"\x00")
        if not raw or (raw[0] >= 0x80) != (unscaled < 0):
            raw = (b"\xff" if unscaled < 0 else b"\x00") + raw
        files.append(
            DataFile(
                f"{t.location}/data/f{k}.parquet",
                1,
                10,
                value_counts={1: 5},
                lower_bounds={
                    1: b"\x01\x02\x03" if k == 1 else struct.pack("<q", k),
                    2: raw,
                    3: bytes(5) if k == 1 else uuid.UUID(int=k).bytes,
                    4: struct.pack("<i", -1),  # a date under timestamp_ns
                },
            )
        )
    with t.transaction() as tx:
        p = SnapshotProducer(tx)
        p.add_data_files(files)
        p.commit()
    t.refresh()
    rows = {
        r["file_path"].rsplit("/", 1)[1]: r["readable_metrics"]
        for r in t.inspect.files().select(["file_path", "readable_metrics"]).to_pylist()
    }
    for k, unscaled in enumerate(decs):
        rm = rows[f"f{k}.parquet"]
        want = None if k == 1 else k
        assert rm["l"]["lower_bound"] == want
        assert rm["dec"]["lower_bound"] == decimal.Decimal(unscaled).scaleb(
            -3, decimal.Context(prec=40)
        )
        assert rm["u"]["lower_bound"] == (None if k == 1 else uuid.UUID(int=k))
        assert rm["tn"]["lower_bound"] == pa.scalar(-86_400 * 10**9, pa.timestamp("ns")).as_py()
        assert rm["l"]["value_count"] == 5 and rm["l"]["upper_bound"] is None


def test_a_metrics_map_giving_a_field_id_twice_shows_no_value() -> None:
    from icefloe.table.readable_metrics import readable_metrics

    schema = Schema.from_json(SIMPLE_SCHEMA)
    maps = pa.array(
        [[(1, 5), (1, 6), (2, 7)], None, [(2, 8)]], pa.map_(pa.int32(), pa.int64())
    ).slice(0)
    files = pa.table({"value_counts": maps})
    got = readable_metrics(schema, files).to_pylist()
    assert [(r["id"]["value_count"], r["data"]["value_count"]) for r in got] == [
        (None, 7),
        (None, None),
        (None, 8),
    ]
    sliced = readable_metrics(schema, pa.table({"value_counts": maps.slice(2)})).to_pylist()
    assert [(r["id"]["value_count"], r["data"]["value_count"]) for r in sliced] == [(None, 8)]


def test_readable_metrics_of_the_largest_field_ids() -> None:
    """Field ids up to 2**31 - 1 are valid: the lookup must not size anything by them (it
    allocated 8 bytes per possible id, 16 GiB for this schema)."""
    from icefloe.table.readable_metrics import readable_metrics

    big = 2**31 - 1
    schema = Schema.from_json(
        {
            "type": "struct",
            "schema-id": 0,
            "fields": [
                {"id": big, "name": "a", "required": False, "type": "long"},
                {"id": 3, "name": "b", "required": False, "type": "long"},
            ],
        }
    )
    maps = pa.array([[(big, 5), (3, 6), (7, 9)], [(3, 1)]], pa.map_(pa.int32(), pa.int64()))
    tracemalloc.start()
    try:
        got = readable_metrics(schema, pa.table({"value_counts": maps})).to_pylist()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(r["a"]["value_count"], r["b"]["value_count"]) for r in got] == [(5, 6), (None, 1)]
    assert peak < 16 << 20  # numpy's buffers are traced


@pytest.mark.parametrize("n", [0, 1])
def test_readable_metrics_without_metric_columns(n: int) -> None:
    from icefloe.table.readable_metrics import readable_metrics

    schema = Schema.from_json(SIMPLE_SCHEMA)
    got = readable_metrics(schema, pa.table({"x": pa.array([1] * n)}))
    assert len(got) == n
    assert all(v is None for r in got.to_pylist() for m in r.values() for v in m.values())
