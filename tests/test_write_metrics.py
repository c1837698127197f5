"""Column metrics of written files: PyIceberg's footer statistics as an oracle, and the spec's
rules for truncation, NaN and signed zeros checked directly."""

from __future__ import annotations

import datetime as dt
import json
import math
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.exceptions import ValidationError
from icefloe.io import FileIO
from icefloe.metadata import new_table_metadata
from icefloe.partitioning import UNPARTITIONED_PARTITION_SPEC
from icefloe.schema import Schema
from icefloe.sorting import UNSORTED_SORT_ORDER, SortField, SortOrder
from icefloe.transforms import parse_transform
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
)
from icefloe.values import from_bytes
from icefloe.write import DataFile, write_data_files
from icefloe.write.metrics import MetricsConfig, MetricsMode, truncate_upper, truncate_upper_str

SCHEMA = Schema(
    NestedField(1, "i", IntegerType()),
    NestedField(2, "l", LongType(), True),
    NestedField(3, "s", StringType()),
    NestedField(4, "b", BinaryType()),
    NestedField(5, "d", DateType()),
    NestedField(6, "ts", TimestampType()),
    NestedField(7, "dec", DecimalType(10, 2)),
    NestedField(8, "flag", BooleanType()),
    NestedField(9, "f", FloatType()),
    NestedField(10, "x", DoubleType()),
    NestedField(11, "st", StructType(NestedField(12, "inner", LongType()))),
    NestedField(13, "tags", ListType(14, StringType(), False)),
)


def _data() -> pa.Table:
    n = 50
    return pa.table(
        {
            "i": pa.array([None if k % 5 == 0 else k - 20 for k in range(n)], pa.int32()),
            "l": pa.array(range(n), pa.int64()),
            "s": [("long-prefix-value-" * 2 + str(k)) if k % 3 else f"v{k:03d}" for k in range(n)],
            "b": [bytes([k, 255, 255]) * 8 for k in range(n)],
            "d": [dt.date(2020, 1, 1) + dt.timedelta(days=k) for k in range(n)],
            "ts": [dt.datetime(2020, 1, 1, 0, 0, k % 60) for k in range(n)],
            "dec": [Decimal(k) / 4 for k in range(n)],
            "flag": [k % 2 == 0 for k in range(n)],
            "f": pa.array(
                [float("nan") if k % 4 == 0 else k * 0.5 for k in range(n)], pa.float32()
            ),
            "x": [float("nan") if k == 1 else -0.0 if k == 2 else k / 10 for k in range(n)],
            "st": [None if k == 3 else {"inner": k} for k in range(n)],
            "tags": [[f"t{k}", f"u{k}"] for k in range(n)],
        }
    )


def _write(
    tmp_path: Path, data: pa.Table, schema: Schema = SCHEMA, **props: str
) -> tuple[DataFile, Any]:
    md = new_table_metadata(
        schema,
        UNPARTITIONED_PARTITION_SPEC,
        UNSORTED_SORT_ORDER,
        tmp_path.as_uri(),
        props,
        2,
    )
    files = write_data_files(md, FileIO(), data)
    assert len(files) == 1
    return files[0], md


def _pyiceberg_stats(path: str, schema: Schema, props: dict[str, str]) -> Any:
    from pyiceberg.io.pyarrow import (
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )
    from pyiceberg.schema import Schema as PySchema

    py = PySchema.model_validate_json(json.dumps(schema.to_json()))
    md = pq.ParquetFile(path).metadata
    return data_file_statistics_from_parquet_metadata(
        md, compute_statistics_plan(py, props), parquet_path_to_id_mapping(py)
    )


def test_metrics_match_pyiceberg_footer_statistics(tmp_path: Path) -> None:
    f, md = _write(tmp_path, _data())
    schema = md.current_schema()
    path = f.file_path.removeprefix("file://")
    theirs = _pyiceberg_stats(path, schema, {})
    assert f.record_count == theirs.record_count == 50
    assert f.column_sizes == theirs.column_sizes
    assert f.value_counts == theirs.value_counts
    assert f.null_value_counts == theirs.null_value_counts
    assert f.split_offsets == theirs.split_offsets
    assert f.file_size_in_bytes == Path(path).stat().st_size
    # PyIceberg's bounds come from the footer; floats differ only by the signed-zero rule.
    ser = theirs.to_serialized_dict()
    lower, upper = ser["lower_bounds"], ser["upper_bounds"]
    assert f.lower_bounds is not None and f.upper_bounds is not None
    for fid in lower:
        if fid in (9, 10):
            continue
        assert f.lower_bounds[fid] == lower[fid], fid
        assert f.upper_bounds[fid] == upper[fid], fid
    assert set(lower) <= set(f.lower_bounds)


def test_nan_and_signed_zero_rules(tmp_path: Path) -> None:
    f, _md = _write(tmp_path, _data())
    assert f.nan_value_counts == {9: 13, 10: 1}
    assert f.lower_bounds is not None and f.upper_bounds is not None
    lo = struct.unpack("<d", f.lower_bounds[10])[0]
    assert lo == 0.0 and math.copysign(1.0, lo) == -1.0  # -0.0 precedes +0.0
    assert struct.unpack("<d", f.upper_bounds[10])[0] == 4.9
    assert struct.unpack("<f", f.upper_bounds[9])[0] == 24.5
    # A column of only NaN and nulls has counts but no bounds.
    data = _data().set_column(9, "x", pa.array([float("nan")] * 25 + [None] * 25))
    g, _ = _write(tmp_path / "nan", data)
    assert g.nan_value_counts is not None and g.nan_value_counts[10] == 25
    assert g.null_value_counts is not None and g.null_value_counts[10] == 25
    assert g.lower_bounds is not None and 10 not in g.lower_bounds
    # Only zeros: -0.0 lower, +0.0 upper, whatever their order in the data.
    zeros = _data().set_column(9, "x", pa.array([0.0, -0.0] * 25))
    h, _ = _write(tmp_path / "z", zeros)
    assert h.lower_bounds is not None and h.upper_bounds is not None
    assert h.lower_bounds[10] == struct.pack("<d", -0.0)
    assert h.upper_bounds[10] == struct.pack("<d", 0.0)


def test_default_truncation_of_strings_and_binary(tmp_path: Path) -> None:
    f, _ = _write(tmp_path, _data())
    assert f.lower_bounds is not None and f.upper_bounds is not None
    values = _data()["s"].to_pylist()
    lo, hi = f.lower_bounds[3].decode(), f.upper_bounds[3].decode()
    assert len(lo) <= 16 and len(hi) <= 16
    assert all(lo <= v[:16] for v in values) and all(v < hi for v in values if len(v) > 16)
    assert hi == "v048"  # short enough: exact
    blo, bhi = f.lower_bounds[4], f.upper_bounds[4]
    assert blo == (bytes([0, 255, 255]) * 8)[:16]
    # The max is 49,255,255,...: its 16-byte prefix rounds up at the last non-0xFF byte.
    assert bhi == bytes([49, 255, 255, 49, 255, 255, 49, 255, 255, 49, 255, 255, 49, 255, 255, 50])


def test_metrics_modes(tmp_path: Path) -> None:
    f, md = _write(
        tmp_path,
        _data(),
        **{
            "write.metadata.metrics.default": "counts",
            "write.metadata.metrics.column.s": "truncate(4)",
            "write.metadata.metrics.column.l": "full",
            "write.metadata.metrics.column.i": "none",
            "write.metadata.metrics.column.st.inner": "full",
        },
    )
    assert f.lower_bounds is not None and f.upper_bounds is not None and f.value_counts
    inner = md.current_schema().find_field("st.inner").field_id
    assert set(f.lower_bounds) == {2, 3, inner}
    assert f.lower_bounds[3] == b"long" and f.upper_bounds[3] == b"v048"
    assert from_bytes(LongType(), f.upper_bounds[2]) == 49
    assert 1 not in f.value_counts and f.column_sizes is not None and 1 not in f.column_sizes
    assert f.value_counts[10] == 50 and 10 not in f.lower_bounds
    # Sort-order columns get at least truncate(16).
    order = SortOrder(SortField(10, parse_transform("identity")), order_id=1)
    md2 = new_table_metadata(
        SCHEMA,
        UNPARTITIONED_PARTITION_SPEC,
        order,
        (tmp_path / "sorted").as_uri(),
        {"write.metadata.metrics.default": "none"},
        2,
    )
    (g,) = write_data_files(md2, FileIO(), _data())
    assert g.lower_bounds is not None and set(g.lower_bounds) == {10}
    with pytest.raises(ValidationError, match="metrics mode"):
        _write(tmp_path / "bad", _data(), **{"write.metadata.metrics.default": "sometimes"})


def test_max_inferred_column_defaults(tmp_path: Path) -> None:
    f, _ = _write(tmp_path, _data(), **{"write.metadata.metrics.max-inferred-column-defaults": "2"})
    assert f.value_counts is not None and set(f.value_counts) == {1, 2}


def test_inferred_defaults_keep_the_columns_java_keeps() -> None:
    """With no default mode, the first ``max-inferred-column-defaults`` columns keep metrics
    in the order of Iceberg Java's ``MetricsConfig.limitFieldIds``: a struct's own primitive
    fields before the fields of the structs, lists and maps it holds (a top-level ``id``
    declared after a wide struct keeps its bounds); a map's key and value, a list's element,
    before what they hold."""
    wide = StructType(*(NestedField(10 + i, f"c{i}", IntegerType()) for i in range(5)))
    schema = Schema(
        NestedField(1, "wide", wide),
        NestedField(2, "m", MapType(20, StringType(), 21, LongType())),
        NestedField(3, "l", ListType(30, IntegerType())),
        NestedField(4, "id", LongType()),
    )
    kept = {
        limit: {
            fid
            for fid, mode in MetricsConfig(
                schema, {"write.metadata.metrics.max-inferred-column-defaults": str(limit)}
            ).modes.items()
            if mode.kind != "none"
        }
        for limit in (1, 3, 6, 9, 100)
    }
    assert kept[1] == {4}
    assert kept[3] == {4, 10, 11}
    assert kept[6] == {4, 10, 11, 12, 13, 14}
    assert kept[9] == {4, 10, 11, 12, 13, 14, 20, 21, 30}
    assert kept[100] == kept[9]


def test_only_order_preserving_sort_columns_gain_bounds() -> None:
    """Columns sorted by a transform that keeps their order (identity, truncate, time
    units) get bounds under a default of ``none``; a bucket's source does not (as Java)."""
    schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "s", StringType()),
        NestedField(3, "t", TimestampType()),
    )
    order = SortOrder(
        SortField(1, parse_transform("bucket[4]")),
        SortField(2, parse_transform("truncate[2]")),
        SortField(3, parse_transform("day")),
        order_id=1,
    )
    modes = MetricsConfig(schema, {"write.metadata.metrics.default": "none"}, order).modes
    assert {fid: str(m) for fid, m in modes.items()} == {
        1: "none",
        2: "truncate(16)",
        3: "truncate(16)",
    }


def test_parse_modes() -> None:
    assert MetricsMode.parse("Truncate(8)") == MetricsMode("truncate", 8)
    assert str(MetricsMode.parse("FULL")) == "full"
    for bad in ("truncate(0)", " full "):  # Java takes a mode with blanks for no mode
        with pytest.raises(ValidationError):
            MetricsMode.parse(bad)


def test_truncate_upper_edge_cases() -> None:
    assert truncate_upper(b"\x01\xff\xff\x00", 3) == b"\x02"
    assert truncate_upper(b"\xff\xff\xff\x00", 3) is None
    assert truncate_upper(b"ab", 3) == b"ab"
    assert truncate_upper_str("ab\U0010ffffz", 3) == "ac"
    assert truncate_upper_str("\U0010ffff\U0010ffffz", 2) is None
    assert truncate_upper_str("a\ud7ffz", 2) == "a\ue000"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=30), min_size=1, max_size=20), st.integers(1, 8))
def test_truncated_string_bounds_bound_every_value(values: list[str], n: int) -> None:
    hi = max(values)
    up = truncate_upper_str(hi, n)
    if up is not None:
        assert len(up) <= n
        assert all(v.encode() <= up.encode() for v in values)
    lo = min(values)[:n]
    assert all(lo.encode() <= v.encode() for v in values)


@pytest.mark.parametrize(
    "props",
    [
        {},
        {"write.metadata.metrics.default": "full"},
        {"write.metadata.metrics.default": "truncate(3)"},
        {"write.metadata.metrics.default": "counts"},
        {"write.metadata.metrics.column.s": "none", "write.metadata.metrics.column.u": "full"},
        {"write.metadata.metrics.max-inferred-column-defaults": "2"},
    ],
)
def test_equality_delete_files_take_the_metrics_a_data_file_of_the_keys_takes(
    tmp_path: Path, props: dict[str, str]
) -> None:
    """An equality delete file's metrics are computed as a data file's: deleting every row by
    its (unique) keys gives the key columns the counts and bounds the data file has, for every
    key type (uuid, decimal, fixed, nanosecond timestamps, strings and binary past the
    truncation width) and metrics mode, the max-inferred-column limit counting the table's
    columns."""
    import uuid

    from icefloe.catalog.sql import SqlCatalog

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("s", pa.string()),
            ("b", pa.binary()),
            ("u", pa.uuid()),
            ("d", pa.decimal128(9, 2)),
            ("f", pa.binary(4)),
            ("ns", pa.timestamp("ns")),
            ("day", pa.date32()),
        ]
    )
    rows = pa.table(
        {
            "id": [3, 1, 2],
            "s": ["a long string past sixteen", "école", None],
            "b": [b"\x00" * 20, b"\xff" * 20, b"m"],
            "u": pa.array(
                [uuid.UUID(int=n).bytes for n in (5, 2**127 + 1, 2**64)], pa.binary(16)
            ).cast(pa.uuid()),
            "d": [Decimal("1.25"), Decimal("-3.50"), None],
            "f": [b"abcd", b"zzzz", b"\x00\x01\x02\x03"],
            "ns": [1, 1_700_000_000_123_456_789, -5],
            "day": [dt.date(2024, 1, 1), dt.date(1969, 12, 31), None],
        },
        schema=schema,
    )
    t = cat.create_table("db.t", schema, format_version=3, properties=props)
    t.append(rows)
    keys = ["id", "s", "b", "u", "d", "f", "ns", "day"]
    t.delete_by_keys(rows, keys)
    files = t.refresh().inspect.files().to_pylist()
    data = next(e for e in files if e["content"] == 0)
    eq = next(e for e in files if e["content"] == 2)
    for metric in ("value_counts", "null_value_counts", "lower_bounds", "upper_bounds"):
        assert dict(eq[metric] or []) == dict(data[metric] or []), metric
    assert set(dict(eq["column_sizes"] or [])) == set(dict(data["column_sizes"] or []))
    if not props:  # every key type has bounds
        assert len(dict(eq["lower_bounds"])) == len(keys)
    assert t.scan().to_arrow().num_rows == 0


@pytest.mark.parametrize(
    ("props", "name", "code"),
    [
        ({"write.metadata.metrics.default": "none"}, None, None),
        ({"write.metadata.metrics.column.name": "none"}, None, (b"1", b"1")),
        ({"write.metadata.metrics.default": "counts"}, (), ()),
        (
            {"write.metadata.metrics.column.name": "truncate(2)"},
            (b"zy", b"\xc3\xa9d"),
            (b"1", b"3"),
        ),
        ({"write.metadata.metrics.default": "full"}, (b"zy", b"\xc3\xa9cole"), (b"1", b"3")),
        ({}, (b"zy", b"\xc3\xa9cole"), (b"1", b"3")),
    ],
)
def test_equality_delete_files_keep_the_metrics_the_table_keeps(
    tmp_path: Path, props: dict[str, str], name: Any, code: Any
) -> None:
    """An equality delete file's metrics follow ``write.metadata.metrics.*`` as a data file's
    do (as Iceberg Java's writers do): with ``none`` its keys' values stayed in the manifest,
    which is what the setting keeps out (a column of personal data, say). ``None``: no
    metrics of the column; ``()``: counts only; else (lower, upper) bounds."""
    from icefloe.catalog.sql import SqlCatalog

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    schema = pa.schema([("code", pa.int64()), ("name", pa.string())])
    t = cat.create_table("db.t", schema, format_version=2, properties=props)
    t.append(pa.table({"code": [1, 2, 3, 4], "name": ["école", "x", "zy", "w"]}, schema=schema))
    t.delete_by_keys(
        pa.table({"code": [1, 3], "name": ["école", "zy"]}, schema=schema), ["code", "name"]
    )
    entry = next(e for e in t.refresh().inspect.delete_files().to_pylist() if e["content"] == 2)
    for fid, want in ((2, name), (1, code)):
        counts = dict(entry["value_counts"] or [])
        bounds = (dict(entry["lower_bounds"] or []), dict(entry["upper_bounds"] or []))
        if want is None:
            assert fid not in counts and fid not in bounds[0] and fid not in bounds[1]
            continue
        assert counts[fid] == 2
        if want == ():
            assert fid not in bounds[0] and fid not in bounds[1]
        elif fid == 1:
            assert (bounds[0][fid][:1], bounds[1][fid][:1]) == (b"\x01", b"\x03")
        else:
            assert (bounds[0][fid], bounds[1][fid]) == want
    assert sorted(t.scan().to_arrow().column("code").to_pylist()) == [2, 4]
