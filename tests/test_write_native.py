"""The native writer of small data files (``icefloe.write.native_writer``) against pyarrow's:
the same rows read back, the same metrics, page checksums, field ids, and the cases it leaves
to pyarrow."""

from __future__ import annotations

import datetime as dt
import errno
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe import _native
from icefloe.arrow_schema import schema_to_arrow
from icefloe.exceptions import AlreadyExistsError, FileIOError, IcebergError
from icefloe.io import FileIO, OutputFile
from icefloe.io import fileio as icefloe_io
from icefloe.metadata import TableMetadata, new_table_metadata
from icefloe.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.sorting import UNSORTED_SORT_ORDER
from icefloe.transforms import parse_transform
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestamptzType,
    TimeType,
)
from icefloe.write import DataFile, native_writer, write_data_files

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "b", BinaryType()),
    NestedField(5, "d", DateType()),
    NestedField(6, "ts", TimestamptzType()),
    NestedField(7, "dec", DecimalType(7, 2)),
    NestedField(8, "dec18", DecimalType(18, 3)),
    NestedField(9, "dec30", DecimalType(30, 4)),
    NestedField(10, "flag", BooleanType()),
    NestedField(11, "f", FloatType()),
    NestedField(12, "x", DoubleType()),
    NestedField(13, "t", TimeType()),
    NestedField(14, "ns", TimestampNanoType()),
)

UTC = dt.timezone.utc


def _row(k: int) -> dict[str, Any]:
    return {
        "id": k,
        "i": None if k % 5 == 0 else k - 20,
        "s": ("long-prefix-value-\u00e9" * 2 + str(k)) if k % 3 else f"v{k:03d}",
        "b": bytes([k % 256, 255, 255]) * 8,
        "d": dt.date(2020, 1, 1) + dt.timedelta(days=k % 40),
        "ts": dt.datetime(2020, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=k),
        "dec": Decimal(k - 10) / 4,
        "dec18": Decimal(-k) / 8,
        "dec30": Decimal(10**20 + k) / 16,
        "flag": None if k % 7 == 0 else k % 2 == 0,
        "f": float("nan") if k % 4 == 0 else k * 0.5,
        "x": float("nan") if k == 1 else -0.0 if k == 2 else (k - 5) / 10,
        "t": dt.time(k % 24, k % 60),
        "ns": k * 1_000_000_007,
    }


def _metadata(
    tmp_path: Path, schema: Schema = SCHEMA, spec: PartitionSpec | None = None, **props: str
) -> TableMetadata:
    return new_table_metadata(
        schema,
        spec or UNPARTITIONED_PARTITION_SPEC,
        UNSORTED_SORT_ORDER,
        tmp_path.as_uri(),
        props,
        3,
    )


def _write(
    md: TableMetadata, data: pa.Table | list[dict[str, Any]], *, native: bool
) -> list[DataFile]:
    before = native_writer.ENABLED
    native_writer.ENABLED = native
    if isinstance(data, list):
        data = pa.Table.from_pylist(data, schema=schema_to_arrow(md.current_schema()))
    try:
        return write_data_files(md, FileIO(), data)
    finally:
        native_writer.ENABLED = before


def _metrics(f: DataFile) -> dict[str, Any]:
    return {
        "record_count": f.record_count,
        "partition": f.partition,
        "value_counts": f.value_counts,
        "null_value_counts": f.null_value_counts,
        "nan_value_counts": f.nan_value_counts,
        "lower_bounds": f.lower_bounds,
        "upper_bounds": f.upper_bounds,
        "column_sizes keys": sorted(f.column_sizes or {}),
        "split_offsets count": len(f.split_offsets or []),
    }


def _same(a: pa.Table, b: pa.Table) -> bool:
    """Equal tables, NaN equal to NaN and ``-0.0`` told apart from ``0.0``."""

    def norm(v: Any) -> Any:
        if isinstance(v, float):
            return "nan" if math.isnan(v) else (v, math.copysign(1.0, v))
        return v

    return a.schema.equals(b.schema) and [
        [norm(v) for v in col] for col in a.to_pydict().values()
    ] == [[norm(v) for v in col] for col in b.to_pydict().values()]


def _path(f: DataFile) -> str:
    return f.file_path.removeprefix("file://")


def _writer_of(f: DataFile) -> str:
    return str(pq.read_metadata(_path(f)).created_by)


def _check_file(f: DataFile) -> pa.Table:
    """The file's footer agrees with the DataFile; every page checksum verifies; the rows."""
    path = _path(f)
    md = pq.read_metadata(path)
    assert md.num_rows == f.record_count
    assert f.file_size_in_bytes == Path(path).stat().st_size
    return pq.read_table(path, page_checksum_verification=True)


def test_native_files_match_pyarrow_files(tmp_path: Path) -> None:
    md = _metadata(tmp_path)
    rows = [_row(k) for k in range(60)]
    ours = _write(md, rows, native=True)
    theirs = _write(md, rows, native=False)
    assert len(ours) == len(theirs) == 1
    assert "parquet-rs" in _writer_of(ours[0])
    assert "parquet-cpp" in _writer_of(theirs[0])
    assert _metrics(ours[0]) == _metrics(theirs[0])
    a, b = _check_file(ours[0]), _check_file(theirs[0])
    assert _same(a, b)
    assert _same(a, pa.Table.from_pylist(rows, schema=a.schema))
    # field ids and the digest the reader checks are the same
    sa, sb = pq.read_schema(_path(ours[0])), pq.read_schema(_path(theirs[0]))
    assert [f.metadata for f in sa] == [f.metadata for f in sb]
    ka = pq.read_metadata(_path(ours[0])).metadata
    kb = pq.read_metadata(_path(theirs[0])).metadata
    assert ka[b"icefloe.field-ids.crc32"] == kb[b"icefloe.field-ids.crc32"]


def test_column_sizes_are_the_footer_chunk_sizes(tmp_path: Path) -> None:
    md = _metadata(tmp_path, **{"write.parquet.row-group-limit": "7"})
    (f,) = _write(md, [_row(k) for k in range(30)], native=True)
    meta = pq.read_metadata(_path(f))
    assert meta.num_row_groups == 5
    by_id = {
        SCHEMA.find_field(meta.schema.column(c).name).field_id: sum(
            meta.row_group(rg).column(c).total_compressed_size for rg in range(meta.num_row_groups)
        )
        for c in range(meta.num_columns)
    }
    assert f.column_sizes == by_id
    starts = [meta.row_group(rg).column(0) for rg in range(meta.num_row_groups)]
    assert f.split_offsets == sorted(
        c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset for c in starts
    )


def test_a_damaged_page_is_caught_by_its_checksum(tmp_path: Path) -> None:
    md = _metadata(tmp_path, **{"write.parquet.compression-codec": "uncompressed"})
    (f,) = _write(md, [_row(k) for k in range(200)], native=True)
    path = _path(f)
    col = pq.read_metadata(path).row_group(0).column(0)
    data = bytearray(Path(path).read_bytes())
    data[col.data_page_offset + col.total_compressed_size - 3] ^= 0x40
    Path(path).write_bytes(bytes(data))
    with pytest.raises(OSError, match=r"(?i)crc|checksum"):
        pq.read_table(path, page_checksum_verification=True)


@pytest.mark.parametrize(
    "props",
    [
        {"write.metadata.metrics.default": "none"},
        {"write.metadata.metrics.default": "counts"},
        {"write.metadata.metrics.default": "truncate(3)"},
        {"write.metadata.metrics.default": "full"},
        {
            "write.metadata.metrics.column.s": "full",
            "write.metadata.metrics.column.b": "truncate(2)",
            "write.metadata.metrics.column.x": "counts",
            "write.metadata.metrics.max-inferred-column-defaults": "4",
        },
        {"write.parquet.compression-codec": "snappy"},
        {"write.parquet.compression-codec": "zstd", "write.parquet.compression-level": "9"},
    ],
)
def test_metrics_modes_and_codecs_match(tmp_path: Path, props: dict[str, str]) -> None:
    md = _metadata(tmp_path, **props)
    rows = [_row(k) for k in range(40)]
    ours = _write(md, rows, native=True)
    theirs = _write(md, rows, native=False)
    assert "parquet-rs" in _writer_of(ours[0])
    assert _metrics(ours[0]) == _metrics(theirs[0])
    assert _same(_check_file(ours[0]), _check_file(theirs[0]))


def test_partitioned_writes_keep_partition_order_and_split_by_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = PartitionSpec(PartitionField(2, 1000, parse_transform("bucket[8]"), "i_bucket"))
    md = _metadata(tmp_path, spec=spec)
    small = [_row(k) for k in range(300)]
    ours = _write(md, small, native=True)
    theirs = _write(md, small, native=False)
    assert [_metrics(f) for f in ours] == [_metrics(f) for f in theirs]
    assert all("parquet-rs" in _writer_of(f) for f in ours)
    # one partition above the native limit: that one is pyarrow's, in its place
    skewed = small + [dict(_row(k), i=1) for k in range(2000)]
    monkeypatch.setattr(native_writer, "NATIVE_MAX_BYTES", 64 << 10)
    mixed = _write(md, skewed, native=True)
    plain = _write(md, skewed, native=False)
    assert [f.partition for f in mixed] == [f.partition for f in plain]
    writers = [_writer_of(f) for f in mixed]
    assert sum("parquet-cpp" in w for w in writers) == 1
    assert sum("parquet-rs" in w for w in writers) == len(mixed) - 1
    assert [_metrics(f) for f in mixed] == [_metrics(f) for f in plain]


def test_nested_or_unsupported_columns_take_pyarrow(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "st", StructType(NestedField(3, "v", LongType()))),
    )
    md = _metadata(tmp_path, schema=schema)
    (f,) = _write(md, [{"id": 1, "st": {"v": 2}}], native=True)
    assert "parquet-cpp" in _writer_of(f)
    md = _metadata(tmp_path, **{"write.parquet.compression-codec": "gzip"})
    (f,) = _write(md, [_row(1)], native=True)
    assert "parquet-cpp" in _writer_of(f)


@pytest.mark.parametrize("batched", [True, False])
def test_a_failed_write_leaves_no_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batched: bool
) -> None:
    """Local files are created in one native call (batched) or one at a time (object stores,
    Windows); a failure part way removes every file of the write, partial ones included."""
    spec = PartitionSpec(PartitionField(1, 1000, parse_transform("bucket[16]"), "id_bucket"))
    md = _metadata(tmp_path, spec=spec)
    calls: list[str] = []
    if batched:
        real_batch = _native.write_new_files_local

        def flaky_batch(paths: list[str], data: list[bytes], threads: int) -> list[Any]:
            out = real_batch(paths, data, threads)  # every file written, the 5th then "fails"
            calls.extend(paths)
            out[4] = (True, OSError(errno.ENOSPC, "No space left on device", paths[4]))
            return out

        monkeypatch.setattr(_native, "write_new_files_local", flaky_batch)
    else:
        monkeypatch.setattr(icefloe_io, "_NATIVE_LOCAL_WRITES", False)
        real = OutputFile.write_new

        def flaky(self: OutputFile, data: bytes) -> None:
            calls.append(self.location)
            if len(calls) == 5:
                raise FileIOError(f"No space left on device writing {self.location}")
            real(self, data)

        monkeypatch.setattr(OutputFile, "write_new", flaky)
    with pytest.raises(IcebergError, match="No space left on device"):
        _write(md, [_row(k) for k in range(200)], native=True)
    assert len(calls) >= 5
    assert not list(tmp_path.rglob("*.parquet"))


_VALUE = st.one_of(
    st.none(), st.floats(allow_nan=True, width=64), st.sampled_from([0.0, -0.0, math.inf])
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
            st.one_of(st.none(), st.text(max_size=24)),
            st.one_of(st.none(), st.binary(max_size=24)),
            _VALUE,
            st.one_of(st.none(), st.decimals(-(10**6), 10**6, places=2, allow_nan=False)),
        ),
        min_size=1,
        max_size=50,
    ),
    st.sampled_from(["truncate(4)", "full", "truncate(1)"]),
    st.integers(1, 20),
)
def test_native_metrics_equal_pyarrow_metrics(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[tuple[Any, ...]],
    mode: str,
    row_group_limit: int,
) -> None:
    schema = Schema(
        NestedField(1, "l", LongType()),
        NestedField(2, "s", StringType()),
        NestedField(3, "b", BinaryType()),
        NestedField(4, "x", DoubleType()),
        NestedField(5, "dec", DecimalType(9, 2)),
    )
    tmp = tmp_path_factory.mktemp("native")
    md = _metadata(
        tmp,
        schema=schema,
        **{
            "write.metadata.metrics.default": mode,
            "write.parquet.row-group-limit": str(row_group_limit),
        },
    )
    data = [dict(zip(["l", "s", "b", "x", "dec"], r, strict=True)) for r in rows]
    ours = _write(md, data, native=True)
    theirs = _write(md, data, native=False)
    assert "parquet-rs" in _writer_of(ours[0])
    assert [_metrics(f) for f in ours] == [_metrics(f) for f in theirs]
    assert _same(_check_file(ours[0]), _check_file(theirs[0]))


@pytest.mark.parametrize("batched", [True, False])
def test_a_file_already_at_a_path_is_refused_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batched: bool
) -> None:
    spec = PartitionSpec(PartitionField(1, 1000, parse_transform("bucket[16]"), "id_bucket"))
    md = _metadata(tmp_path, spec=spec)
    taken: list[Path] = []

    def appear(location: str) -> None:
        if location.endswith("-00001.parquet"):  # someone else's file appears there
            path = Path(location.removeprefix("file://"))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"theirs")
            taken.append(path)

    if batched:
        real_batch = _native.write_new_files_local

        def racing_batch(paths: list[str], data: list[bytes], threads: int) -> list[Any]:
            for p in paths:
                appear(p)
            return real_batch(paths, data, threads)

        monkeypatch.setattr(_native, "write_new_files_local", racing_batch)
    else:
        monkeypatch.setattr(icefloe_io, "_NATIVE_LOCAL_WRITES", False)
        real = OutputFile.write_new

        def racing(self: OutputFile, data: bytes) -> None:
            appear(self.location)
            real(self, data)

        monkeypatch.setattr(OutputFile, "write_new", racing)
    with pytest.raises(AlreadyExistsError):
        _write(md, [_row(k) for k in range(200)], native=True)
    assert taken[0].read_bytes() == b"theirs"
    assert list(tmp_path.rglob("*.parquet")) == taken
