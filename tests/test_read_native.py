"""Scans decoded natively (whole local files, many per Rust call): the same batches as the
general reader, on every type the path takes, and every file it cannot read handed to the
general reader, which applies schema evolution or raises the typed error."""

from __future__ import annotations

import datetime
import decimal
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe import _native
from icefloe.exceptions import CorruptFileError, FileIOError
from icefloe.name_mapping import create_mapping
from icefloe.read import native_files
from icefloe.scan import DataFileRef, FileScanTask
from icefloe.scan.tasks import DeleteContent, DeleteFileRef
from icefloe.schema import Schema
from icefloe.types import LongType, MapType, NestedField, StringType, StructType
from support.write_util import catalog

TYPES: dict[str, pa.DataType] = {
    "b": pa.bool_(),
    "i": pa.int32(),
    "l": pa.int64(),
    "f": pa.float32(),
    "d": pa.float64(),
    "dec9": pa.decimal128(9, 2),
    "dec38": pa.decimal128(38, 10),
    "day": pa.date32(),
    "t": pa.time64("us"),
    "ts": pa.timestamp("us"),
    "tstz": pa.timestamp("us", tz="UTC"),
    "s": pa.string(),
    "bin": pa.binary(),
    "fix": pa.binary(4),
}


def _value(name: str, i: int) -> Any:
    base = datetime.datetime(2024, 1, 1) + datetime.timedelta(hours=i)
    return {
        "b": i % 3 == 0,
        "i": i - 50,
        "l": i * 1_000_003,
        "f": i / 4,
        "d": i / 3,
        "dec9": decimal.Decimal(i) / 100,
        "dec38": decimal.Decimal(i) / 10**10,
        "day": base.date(),
        "t": base.time(),
        "ts": base,
        "tstz": base.replace(tzinfo=datetime.timezone.utc),
        "s": f"s{i % 7}" * (i % 4),
        "bin": bytes([i % 256]) * (i % 3),
        "fix": i.to_bytes(4, "little"),
    }[name]


def _table(names: list[str], rows: int, nulls: int = 5) -> pa.Table:
    cols = {
        n: pa.array(
            [None if nulls and i % nulls == 1 else _value(n, i) for i in range(rows)], TYPES[n]
        )
        for n in names
    }
    cols["part"] = pa.array([i % 6 for i in range(rows)], pa.int32())
    return pa.table(cols)


class _Spy:
    """Records what the native reader returned per file."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read: list[bool] = []
        real = _native.parquet_read_files

        def spy(*args: Any, **kwargs: Any) -> list[list[pa.RecordBatch] | None]:
            out = real(*args, **kwargs)
            self.read.extend(f is not None for f in out)
            return out

        monkeypatch.setattr(native_files._native, "parquet_read_files", spy)


def _general(monkeypatch: pytest.MonkeyPatch, read: Any) -> Any:
    with monkeypatch.context() as m:
        m.setattr(native_files, "ENABLED", False)
        return read()


def _partitioned(tmp_path: Path, data: pa.Table, version: int = 2, **props: str) -> Any:
    t = catalog(tmp_path).create_table(
        "ns.t", data.schema, properties=props, format_version=version
    )
    with t.update_spec() as u:
        u.add_field("part")
    t = t.refresh()
    t.append(data)
    return t.refresh()


def test_every_plain_type_reads_as_the_general_reader_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = _Spy(monkeypatch)
    t = _partitioned(tmp_path, _table(list(TYPES), 300))
    for fields in [("*",), ("s", "l"), ("tstz", "dec38", "fix"), ("part",)]:
        spy.read.clear()
        got = t.scan(selected_fields=fields).to_arrow()
        assert spy.read and all(spy.read), fields  # six files, each read natively
        want = _general(monkeypatch, lambda f=fields: t.scan(selected_fields=f).to_arrow())
        assert got.schema.equals(want.schema, check_metadata=True)
        assert got.equals(want)
        assert got.num_rows == 300


@pytest.mark.parametrize("version", [2, 3])
def test_position_deletes_and_deletion_vectors_are_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    """v2 position delete files and v3 deletion vectors: the rows they name are dropped in
    Rust, across batches and files; equality deletes still take the general reader."""
    monkeypatch.setattr(native_files, "BATCH_SIZE", 64)
    data = _table(["l", "s", "d"], 3000, nulls=7)
    t = _partitioned(tmp_path, data, version, **{"write.delete.mode": "merge-on-read"})
    t.delete("l < 200000000 or d > 900")
    t = t.refresh()
    assert any(task.delete_files for task in t.scan().plan_files())
    spy = _Spy(monkeypatch)
    got = t.scan().to_arrow()
    assert spy.read and all(spy.read)
    want = _general(monkeypatch, lambda: t.scan().to_arrow())
    assert got.equals(want)
    assert 0 < got.num_rows < data.num_rows
    spy.read.clear()
    assert t.scan().count() == got.num_rows  # no columns, the deletes applied in Rust
    assert spy.read and all(spy.read)
    assert pa.compute.min(got["l"]).as_py() >= 200000000


def test_position_delete_files_are_decoded_natively(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """v2 position delete files naming one data file are decoded in Rust before the chunk is
    read; a damaged one is left to the general reader, which names it."""
    data = _table(["l", "s"], 900, nulls=0)
    t = _partitioned(tmp_path, data, 2, **{"write.delete.mode": "merge-on-read"})
    t.delete("l < 200000000")
    t = t.refresh()
    delete_files = {d.file_path for task in t.scan().plan_files() for d in task.delete_files}
    assert len(delete_files) == 6
    decoded: list[bool] = []
    real = _native.parquet_read_position_deletes

    def spy(*args: Any, **kwargs: Any) -> list[Any]:
        out = real(*args, **kwargs)
        decoded.extend(b is not None for b in out)
        return out

    monkeypatch.setattr(_native, "parquet_read_position_deletes", spy)
    got = t.scan().to_arrow()
    assert decoded == [True] * 6
    want = _general(monkeypatch, lambda: t.scan().to_arrow())
    assert got.equals(want)
    assert got.num_rows == sum(1 for v in data["l"].to_pylist() if v >= 200000000)
    # a truncated position delete file: the general reader raises, naming it
    victim = sorted(delete_files)[0].removeprefix("file://")
    raw = Path(victim).read_bytes()
    Path(victim).write_bytes(raw[: len(raw) // 2])
    decoded.clear()
    with pytest.raises(CorruptFileError, match=Path(victim).name):
        t.scan().to_arrow()
    assert False in decoded
    # a valid file holding fewer rows than its manifest entry counts: the native reader
    # decoded it and no reader checked the count (the rows it lost came back)
    Path(victim).write_bytes(raw)
    pq.write_table(pq.read_table(victim).slice(0, 1), victim)
    decoded.clear()
    with pytest.raises(CorruptFileError, match="its manifest entry's record_count says"):
        t.scan().to_arrow()
    assert False in decoded


@pytest.mark.parametrize("version", [2, 3])
def test_equality_deletes_are_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    """Equality deletes (on one column and on two, projected or not, nulls equal to nulls)
    mixed with position deletes: the same rows as the general reader, every file native."""
    monkeypatch.setattr(native_files, "BATCH_SIZE", 64)
    data = _table(["l", "s", "d", "day"], 600, nulls=7)
    t = _partitioned(tmp_path, data, version, **{"write.delete.mode": "merge-on-read"})
    t.delete("d > 150")
    t.refresh().delete_by_keys(pa.table({"l": pa.array([0, 1_000_003 * 7], pa.int64())}), ["l"])
    keys = data.select(["s", "day"]).slice(20, 40)
    t.refresh().delete_by_keys(keys, ["s", "day"])
    t = t.refresh()
    assert any(
        d.content.value == "equality-deletes"
        for task in t.scan().plan_files()
        for d in task.delete_files
    )
    spy = _Spy(monkeypatch)
    for fields in [("*",), ("l",), ("part", "s")]:
        spy.read.clear()
        got = t.scan(selected_fields=fields).to_arrow()
        assert spy.read and all(spy.read), fields
        want = _general(monkeypatch, lambda f=fields: t.scan(selected_fields=f).to_arrow())
        assert got.schema.equals(want.schema, check_metadata=True)
        assert got.equals(want)
    everything = t.scan().to_arrow()
    assert 0 < everything.num_rows < 600 - 40
    assert not set(everything["l"].to_pylist()) & {0, 1_000_003 * 7}
    assert t.scan().count() == everything.num_rows


def test_equality_deletes_on_nested_columns_take_the_general_reader(tmp_path: Path) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "st", StructType(NestedField(3, "a", LongType()))),
        NestedField(4, "m", MapType(5, StringType(), 6, LongType())),
    )

    def task(*ids: int) -> FileScanTask:
        eq = DeleteFileRef(DeleteContent.EQUALITY_DELETES, "e.parquet", equality_ids=ids)
        return FileScanTask(DataFileRef("d.parquet", record_count=1), (eq,))

    fields = native_files._equality_fields([task(1), FileScanTask(DataFileRef("x"))], schema)
    assert fields is not None and [f.field_id for f in fields] == [1]
    assert native_files._equality_fields([task(1), task(3)], schema) is None
    assert native_files._equality_fields([task(4)], schema) is None
    assert native_files._equality_fields([task(99)], schema) is None  # dropped since


def test_limits_workers_and_file_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_files, "CHUNK_FILES", 2)  # several calls, one decoded ahead
    t = _partitioned(tmp_path, _table(["l", "s"], 600, nulls=0))
    want = _general(monkeypatch, lambda: t.scan().to_arrow())
    assert t.scan().to_arrow().equals(want)
    assert t.scan(options={"scan.threads": "1"}).to_arrow().equals(want)
    assert t.scan(limit=250).to_arrow().num_rows == 250
    reader = t.scan().to_batches()
    first = reader.read_next_batch()
    reader.close()  # closing early leaves no decode behind
    assert first.num_rows > 0


def test_schema_evolution_hands_older_files_to_the_general_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = pa.schema([("id", pa.int32()), ("s", pa.string())])
    t = catalog(tmp_path).create_table("ns.t", schema)
    t.append(pa.table({"id": pa.array([1, 2], pa.int32()), "s": ["a", "b"]}))
    with t.update_schema() as u:
        u.update_column("id", LongType())
        u.add_column("extra", LongType())
        u.rename_column("s", "name")
    t = t.refresh()
    t.append(pa.table({"id": pa.array([3], pa.int64()), "name": ["c"], "extra": [30]}))
    spy = _Spy(monkeypatch)
    got = t.refresh().scan().to_arrow().sort_by("id")
    assert got.to_pydict() == {"id": [1, 2, 3], "name": ["a", "b", "c"], "extra": [None, None, 30]}
    assert False in spy.read  # the file of int ids needed the general reader
    want = _general(monkeypatch, lambda: t.refresh().scan().to_arrow().sort_by("id"))
    assert got.equals(want)


def test_files_without_field_ids_use_the_name_mapping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    t = catalog(tmp_path).create_table("ns.t", schema)
    mapping = create_mapping(t.schema()).to_json_string()
    t.set_properties({"schema.name-mapping.default": mapping})
    outside = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"id": [7, 8], "s": ["x", "y"]}, schema=schema), outside)
    t.add_files([outside.as_uri()])
    spy = _Spy(monkeypatch)
    assert t.refresh().scan().to_arrow().to_pydict() == {"id": [7, 8], "s": ["x", "y"]}
    assert spy.read == [False]


def test_timestamps_written_without_an_arrow_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other writers store no Arrow schema: UTC timestamps decode with another spelling of the
    zone and are relabelled, not sent back to the general reader."""
    field = pa.field("ts", pa.timestamp("us", tz="UTC"), metadata={"PARQUET:field_id": "1"})
    t = catalog(tmp_path).create_table("ns.t", pa.schema([("ts", pa.timestamp("us", tz="UTC"))]))
    outside = tmp_path / "outside.parquet"
    when = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)
    pq.write_table(
        pa.table({"ts": [when, None]}, schema=pa.schema([field])), outside, store_schema=False
    )
    t.add_files([outside.as_uri()])
    spy = _Spy(monkeypatch)
    got = t.refresh().scan().to_arrow()
    assert spy.read == [True]
    assert got.schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert got["ts"].to_pylist() == [when, None]


def test_every_column_of_a_nested_table_reads_natively(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The field-id digest of nested schemas is computed in Rust as in Python (a mismatch
    would send every file to the general reader)."""
    data = pa.table(
        {
            "id": pa.array(range(40), pa.int64()),
            "st": pa.array([{"a": i, "b": str(i)} for i in range(40)]),
            "li": pa.array([[{"k": i, "v": i / 2}] * (i % 3) for i in range(40)]),
            "m": pa.array([[("k", i)] for i in range(40)], pa.map_(pa.string(), pa.int64())),
        }
    )
    t = catalog(tmp_path).create_table("ns.t", data.schema)
    t.append(data)
    spy = _Spy(monkeypatch)
    assert t.scan(selected_fields=("id",)).to_arrow()["id"].to_pylist() == list(range(40))
    assert spy.read == [True]
    spy.read.clear()
    whole = t.scan().to_arrow()  # nested columns too
    assert spy.read == [True] and whole.num_rows == 40
    assert whole.equals(_general(monkeypatch, lambda: t.scan().to_arrow()))


def _one_file(tmp_path: Path) -> tuple[Any, Path]:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    t = catalog(tmp_path).create_table(
        "ns.t", schema, properties={"write.parquet.compression-codec": "uncompressed"}
    )
    t.append(pa.table({"id": pa.array(range(1000), pa.int64()), "s": ["v"] * 1000}, schema))
    path = Path(t.inspect.files().column("file_path")[0].as_py().removeprefix("file://"))
    return t, path


def test_a_damaged_page_raises_the_general_readers_error(tmp_path: Path) -> None:
    t, path = _one_file(tmp_path)
    data = bytearray(path.read_bytes())
    at = data.index((777).to_bytes(8, "little"))
    data[at] ^= 1  # a plausible value: only the page checksum can tell
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match=str(path)):
        t.scan().to_arrow()


def test_a_damaged_field_id_raises_not_moves_a_column(tmp_path: Path) -> None:
    """Two columns of one type with their ids swapped would decode without a complaint: the
    field-id digest in the footer is what catches it."""
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64())])
    t = catalog(tmp_path).create_table("ns.t", schema)
    t.append(pa.table({"a": [1, 2], "b": [10, 20]}, schema=schema))
    path = Path(t.inspect.files().column("file_path")[0].as_py().removeprefix("file://"))
    table = pq.read_table(path)
    swapped = pa.schema(
        [
            table.schema.field("a").with_metadata({"PARQUET:field_id": "2"}),
            table.schema.field("b").with_metadata({"PARQUET:field_id": "1"}),
        ],
        metadata=table.schema.metadata,  # the digest of the original ids
    )
    pq.write_table(table.cast(swapped), path)
    with pytest.raises(CorruptFileError, match="field ids"):
        t.scan().to_arrow()


def test_a_missing_file_and_a_wrong_row_count_raise_typed_errors(tmp_path: Path) -> None:
    t, path = _one_file(tmp_path)
    data = pq.read_table(path)
    pq.write_table(data.slice(0, 999), path, compression="none")
    with pytest.raises(CorruptFileError, match="999 rows"):
        t.scan().to_arrow()
    path.unlink()
    with pytest.raises(FileIOError, match=str(path)):
        t.scan().to_arrow()


@st.composite
def _cases(draw: st.DrawFn) -> tuple[list[str], int, int, list[str]]:
    names = draw(st.lists(st.sampled_from(sorted(TYPES)), min_size=1, max_size=5, unique=True))
    rows = draw(st.integers(0, 400))
    nulls = draw(st.sampled_from([0, 2, 5]))
    picked = draw(st.lists(st.sampled_from([*names, "part"]), min_size=1, unique=True))
    return names, rows, nulls, picked


@settings(max_examples=15, deadline=None)
@given(case=_cases())
def test_random_tables_and_projections_match_the_general_reader(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[list[str], int, int, list[str]]
) -> None:
    names, rows, nulls, picked = case
    t = _partitioned(tmp_path_factory.mktemp("t"), _table(names, rows, nulls))
    got = t.scan(selected_fields=tuple(picked)).to_arrow()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(native_files, "ENABLED", False)
        want = t.scan(selected_fields=tuple(picked)).to_arrow()
    assert got.schema.equals(want.schema, check_metadata=True)
    assert got.equals(want)


def test_uuid_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from icefloe.schema import NestedField, Schema
    from icefloe.types import UUIDType

    schema = Schema(NestedField(1, "u", UUIDType(), required=False))
    t = catalog(tmp_path).create_table("ns.t", schema)
    values = [uuid.UUID(int=i * 7919) for i in range(5)]
    t.append(pa.table({"u": pa.array([v.bytes for v in values], pa.binary(16))}))
    want = _general(monkeypatch, lambda: t.scan().to_arrow())
    assert t.scan().to_arrow().equals(want)


def test_residual_filters_are_applied_to_natively_read_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter the partitions do not settle: small files are read natively and filtered after
    the decode (the filter's columns read and dropped when not projected); a large file with
    a residual is streamed and filtered too (its row groups pruned first: see
    ``test_read_native_stream.py``)."""
    data = _table(["l", "s", "d"], 900, nulls=7)
    t = _partitioned(tmp_path, data, 2, **{"write.delete.mode": "merge-on-read"})
    t.delete("l < 100000000")
    t = t.refresh()
    spy = _Spy(monkeypatch)
    cases = [
        ("d > 100 and s = 's2s2'", ("*",)),
        ("d > 100 or l is null", ("part",)),
        ("part = 3 and d < 50", ("s", "l")),
        ("s is null", ("d",)),
        ("not (d > 100 or s = 's2s2')", ("l",)),  # negated, on columns not projected
    ]
    for expr, fields in cases:
        spy.read.clear()
        got = t.scan(row_filter=expr, selected_fields=fields).to_arrow()
        assert spy.read and all(spy.read), expr
        want = _general(
            monkeypatch, lambda e=expr, f=fields: t.scan(row_filter=e, selected_fields=f).to_arrow()
        )
        assert got.schema.equals(want.schema, check_metadata=True)
        assert got.equals(want), expr
        assert got.num_rows == t.scan(row_filter=expr).count()
    assert 0 < t.scan(row_filter="d > 100 and s = 's2s2'").to_arrow().num_rows < 900
    # large files with a residual: streamed, filtered as read
    monkeypatch.setattr(native_files, "MAX_FILE_BYTES", 0)
    streams: list[Any] = []
    real = _native.parquet_open_stream

    def opened(*args: Any, **kwargs: Any) -> Any:
        streams.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(native_files._native, "parquet_open_stream", opened)
    got = t.scan(row_filter="d > 100").to_arrow()
    assert len(streams) == len(list(t.scan(row_filter="d > 100").plan_files()))
    assert got.equals(_general(monkeypatch, lambda: t.scan(row_filter="d > 100").to_arrow()))
    assert len(t.scan().to_arrow()) > len(got)


@settings(max_examples=12, deadline=None)
@given(
    parts=st.lists(st.integers(0, 5), max_size=3, unique=True),
    bound=st.integers(-1, 41),
    merge_rows=st.sampled_from([1, 7, 40, 1 << 16]),
    appends=st.integers(1, 3),
)
def test_files_sharing_a_residual_are_filtered_together(
    tmp_path_factory: pytest.TempPathFactory,
    parts: list[int],
    bound: int,
    merge_rows: int,
    appends: int,
) -> None:
    """Consecutive small files whose residual filter is the same are concatenated (up to
    ``MERGE_ROWS`` rows) and filtered once; files of partitions the filter settles keep every
    row. The rows equal the general reader's, in the same order."""
    data = _table(["l", "d"], 120, nulls=4)
    t = _partitioned(tmp_path_factory.mktemp("t"), data)
    for _ in range(appends - 1):
        t.append(data)
    t = t.refresh()
    expr = " or ".join([*(f"part = {p}" for p in parts), f"d > {bound}"])
    with pytest.MonkeyPatch.context() as m:
        m.setattr(native_files, "MERGE_ROWS", merge_rows)
        got = t.scan(row_filter=expr).to_arrow()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(native_files, "ENABLED", False)
        want = t.scan(row_filter=expr).to_arrow()
    assert got.equals(want), expr


def _in_parts(rows: int, per_part: int) -> pa.Table:
    """``rows`` rows of columns ``l`` and ``d``, ``per_part`` consecutive rows a partition."""
    data = _table(["l", "d"], rows, nulls=0)
    part = pa.array([i // per_part for i in range(rows)], pa.int32())
    return data.set_column(data.schema.get_field_index("part"), "part", part)


@pytest.mark.parametrize("concat", ["pyarrow", "before-pyarrow-19"])
def test_small_files_come_out_in_few_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, concat: str
) -> None:
    """Tiny files' rows are joined into larger batches (a table of thousands of ten-row chunks
    is slow in every later step), with or without a filter, in file order; also where pyarrow
    has no ``concat_batches``."""
    if concat != "pyarrow":
        monkeypatch.setattr(native_files, "_CONCAT_BATCHES", None)
    data = _in_parts(600, 10)
    t = _partitioned(tmp_path, data)
    assert len(t.scan().plan_files()) == 60
    whole = t.scan().to_arrow()
    assert whole.column("l").num_chunks < 5
    assert sorted(whole.column("l").to_pylist()) == sorted(data.column("l").to_pylist())
    filtered = t.scan(row_filter="d > 10").to_arrow()
    assert filtered.column("l").num_chunks < 5 and filtered.num_rows == 600 - 31


def test_files_of_thousands_of_rows_are_not_copied_without_a_filter(tmp_path: Path) -> None:
    """Without a filter only tiny files' batches are joined: larger ones come out as decoded
    (joining would copy them for nothing); with a filter they are joined and filtered once."""
    t = _partitioned(tmp_path, _in_parts(4000, 2000))
    assert len(t.scan().plan_files()) == 2
    assert t.scan().to_arrow().column("l").num_chunks == 2
    assert t.scan(row_filter="d >= 0").to_arrow().column("l").num_chunks == 1
