"""compute_statistics: theta-sketch Puffin statistics over a snapshot's live rows, checked
against an independent sketch built here from ``mmh3`` (DataSketches' hash) and Java's compact
layout, against the true distinct counts (pyarrow), and read back."""

from __future__ import annotations

import datetime as dt
import decimal
import struct
import uuid
from pathlib import Path
from typing import Any

import mmh3
import pyarrow as pa
import pytest

from icefloe._native import ThetaSketch, theta_sketch_estimate
from icefloe.exceptions import NoSuchSnapshotError, ValidationError
from icefloe.puffin import PuffinReader
from icefloe.table.statistics import statistics_file_for
from icefloe.types import LongType
from support.write_util import catalog

N = 300


def _hash(b: bytes) -> int:
    return (mmh3.hash128(b, 9001, x64arch=True, signed=False) & (2**64 - 1)) >> 1


def java_sketch(values: list[bytes]) -> bytes:
    """Java's compact theta sketch (exact mode) of already-serialised values."""
    hs = sorted({_hash(v) for v in values if v})
    if not hs:
        return bytes.fromhex("01030300001e0000")
    if len(hs) == 1:
        return bytes.fromhex("01030300003acc93") + struct.pack("<Q", hs[0])
    head = bytes.fromhex("02030300001acc93") + struct.pack("<I", len(hs)) + struct.pack("<f", 1.0)
    return head + b"".join(struct.pack("<Q", h) for h in hs)


def _dec_bytes(d: decimal.Decimal, scale: int) -> bytes:
    unscaled = int(d.scaleb(scale))
    return unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)


# (arrow type, python value of row i, Iceberg single-value bytes of that value)
COLUMNS: dict[str, tuple[pa.DataType, Any, Any]] = {
    "i": (pa.int32(), lambda i: i % 50 - 25, lambda v: struct.pack("<i", v)),
    "l": (pa.int64(), lambda i: i * 7919, lambda v: struct.pack("<q", v)),
    "s": (pa.string(), lambda i: ["", "a", "bé", f"s{i % 40}"][i % 4], lambda v: v.encode()),
    "d": (
        pa.date32(),
        lambda i: dt.date(2024, 1, 1) + dt.timedelta(days=i % 30),
        lambda v: struct.pack("<i", (v - dt.date(1970, 1, 1)).days),
    ),
    "dec": (
        pa.decimal128(20, 2),
        lambda i: decimal.Decimal(i % 60 - 30) / 4,
        lambda v: _dec_bytes(v, 2),
    ),
    "b": (pa.binary(), lambda i: bytes([i % 9]) * (i % 3), lambda v: v),
    "f": (
        pa.float64(),
        lambda i: [0.0, -0.0, 1.5, float(i % 20)][i % 4],
        lambda v: struct.pack("<d", v),
    ),
    "bo": (pa.bool_(), lambda i: i % 3 == 0, lambda v: b"\x01" if v else b"\x00"),
    "ts": (
        pa.timestamp("us"),
        lambda i: dt.datetime(2024, 1, 1) + dt.timedelta(hours=i % 70),
        lambda v: struct.pack("<q", (v - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)),
    ),
    "u": (
        pa.uuid(),
        lambda i: uuid.UUID(int=(i % 11) * 2**100 + 5).bytes,
        lambda v: v.bytes if isinstance(v, uuid.UUID) else v,  # 16 bytes, big-endian
    ),
    "one": (pa.string(), lambda i: "iceberg", lambda v: v.encode()),
    "nul": (pa.int64(), lambda i: None, lambda v: b""),
}


def _data(ids: range) -> pa.Table:
    cols = {"id": pa.array(list(ids), pa.int64())}
    for name, (typ, gen, _) in COLUMNS.items():
        vals = [None if (i % 13 == 5 and name != "one") else gen(i) for i in ids]
        cols[name] = pa.array(vals, typ)
    return pa.table(cols)


def _expected_sketch(live: pa.Table, name: str) -> bytes:
    _, _, ser = COLUMNS[name]
    col = live.column(name)
    if isinstance(col.type, pa.ExtensionType):
        col = pa.chunked_array([c.storage for c in col.chunks], col.type.storage_type)
    return java_sketch([ser(v) for v in col.to_pylist() if v is not None])


def _true_ndv(rows: pa.Table, name: str) -> int:
    """Distinct non-null values with non-empty serialisations (so 0.0 and -0.0 are two)."""
    _, _, ser = COLUMNS.get(name, (None, None, lambda v: struct.pack("<q", v)))
    col = rows.column(name)
    if isinstance(col.type, pa.ExtensionType):
        col = pa.chunked_array([c.storage for c in col.chunks], col.type.storage_type)
    return len({ser(v) for v in col.to_pylist() if v is not None} - {b""})


@pytest.fixture
def table(tmp_path: Path) -> Any:
    cat = catalog(tmp_path)
    t = cat.create_table(
        "ns.t",
        _data(range(0)).schema,
        properties={"format-version": "3", "write.delete.mode": "merge-on-read"},
    )
    t.append(_data(range(0, N // 2)))
    t.append(_data(range(N // 2, N)))
    # deletion vectors: the sketch sees only live rows
    t.delete(f"id in ({', '.join(str(i) for i in range(3, N, 10))}) or id >= 290")
    return t


def test_sketches_equal_java_layout_over_live_rows(table: Any) -> None:
    stats = table.compute_statistics()
    snap = table.current_snapshot()
    assert statistics_file_for(table.metadata, snap.snapshot_id) == stats
    live = table.scan().to_arrow()
    assert live.num_rows == N - 30 - 10 + 1  # id 293 is in both predicates
    reader = PuffinReader(table.io.new_input(stats.statistics_path).read())
    assert reader.properties["created-by"].startswith("icefloe ")
    schema = table.schema()
    by_field = {b.fields: b for b in reader.blobs}
    assert set(by_field) == {(f.field_id,) for f in schema.fields}
    for name in COLUMNS:
        blob = by_field[(schema.find_field(name).field_id,)]
        assert blob.type == "apache-datasketches-theta-v1"
        assert blob.compression_codec == "zstd"
        assert (blob.snapshot_id, blob.sequence_number) == (
            snap.snapshot_id,
            snap.sequence_number,
        )
        got = reader.read_blob(blob)
        assert got == _expected_sketch(live, name), name
        true_ndv = _true_ndv(live, name)
        assert blob.properties == {"ndv": str(true_ndv)}, name
        assert theta_sketch_estimate(got) == true_ndv
    ndv = table.statistics()
    assert (
        ndv["one"] == 1 and ndv["nul"] == 0 and ndv["bo"] == 2 and ndv["f"] == 7
    )  # 0.0 and -0.0 apart; 3.0 deleted
    assert ndv["id"] == live.num_rows
    # the metadata entry matches the file
    data = table.io.new_input(stats.statistics_path).read()
    assert stats.file_size_in_bytes == len(data)
    assert stats.file_footer_size_in_bytes == reader.footer_size


def test_older_snapshot_columns_and_replacement(table: Any) -> None:
    first = table.snapshots()[0]
    rows = table.scan(snapshot_id=first.snapshot_id).to_arrow()
    want = {n: _true_ndv(rows, n) for n in ("l", "s", "i")}
    assert want["l"] < N // 2  # nulls are not counted
    old = table.compute_statistics(["l", "s"], snapshot_id=first.snapshot_id)
    assert table.statistics(first.snapshot_id) == {"l": want["l"], "s": want["s"]}
    assert table.statistics() == {}  # the current snapshot has none yet
    again = table.compute_statistics(["i"], snapshot_id=first.snapshot_id, compression_codec=None)
    assert [s.statistics_path for s in table.metadata.statistics] == [again.statistics_path]
    assert again.statistics_path != old.statistics_path
    assert table.statistics(first.snapshot_id) == {"i": want["i"]}
    reader = PuffinReader(table.io.new_input(again.statistics_path).read())
    assert reader.blobs[0].compression_codec is None
    # reloaded from the catalog, the entry is there
    loaded = table.catalog.load_table("ns.t")
    assert loaded.statistics(first.snapshot_id) == {"i": want["i"]}


def test_transaction_form_and_ndv_without_property(table: Any) -> None:
    with table.transaction() as tx:
        stats = tx.compute_statistics(["l"])
    want = {"l": _true_ndv(table.scan().to_arrow(), "l")}
    assert table.statistics() == want
    # another writer's file without the ndv property: the sketch itself is estimated
    from icefloe.metadata import SetStatistics, StatisticsFile

    bare = StatisticsFile(
        stats.snapshot_id,
        stats.statistics_path,
        stats.file_size_in_bytes,
        stats.file_footer_size_in_bytes,
        tuple(
            type(b)(b.type, b.snapshot_id, b.sequence_number, b.fields) for b in stats.blob_metadata
        ),
    )
    with table.transaction() as tx:
        tx.apply([SetStatistics(bare)])
    assert table.metadata.statistics[0].blob_metadata[0].properties == {}
    assert table.statistics() == want


def test_bad_requests_are_refused(tmp_path: Path, table: Any) -> None:
    with pytest.raises(ValidationError, match="zstd"):
        table.compute_statistics(compression_codec="lz4")
    with pytest.raises(NoSuchSnapshotError):
        table.compute_statistics(snapshot_id=12345)
    with pytest.raises(ValidationError):
        table.compute_statistics(["no_such_column"])
    cat = catalog(tmp_path / "other")
    empty = cat.create_table("ns.e", pa.schema([("xs", pa.list_(pa.int32()))]))
    with pytest.raises(ValidationError, match="no snapshot"):
        empty.compute_statistics()
    empty.append(pa.table({"xs": pa.array([[1]], pa.list_(pa.int32()))}))
    with pytest.raises(ValidationError, match="no theta sketch"):
        empty.compute_statistics(["xs"])
    with pytest.raises(ValidationError, match="no columns"):
        empty.compute_statistics()
    assert table.metadata.statistics == ()
    files = list((Path(table.location.removeprefix("file://")) / "metadata").glob("*.stats"))
    assert files == []  # nothing is left behind by refused requests


def test_above_4096_estimate_is_close_and_independent_of_split() -> None:
    n = 20_000
    whole = ThetaSketch()
    whole.update(pa.array(range(n), pa.int64()))
    parts = ThetaSketch()
    for start in range(n - 1000, -1, -1000):
        s = ThetaSketch()
        s.update(pa.array(range(start, start + 1000), pa.int64()))
        parts.merge(s)
    assert not whole.is_exact()
    assert whole.to_bytes() == parts.to_bytes()
    hs = sorted(_hash(struct.pack("<q", v)) for v in range(n))
    data = whole.to_bytes()
    assert data[:16] == bytes.fromhex("03030300001acc93") + struct.pack("<I", 4096) + struct.pack(
        "<f", 1.0
    )
    assert struct.unpack("<Q", data[16:24])[0] == hs[4096]
    assert data[24:] == b"".join(struct.pack("<Q", h) for h in hs[:4096])
    # RSE of lgK 12 is about 1.6%: 3 sigma
    assert abs(whole.estimate() - n) < 0.048 * n


def test_statistics_of_columns_whose_names_hold_dots(tmp_path: Path) -> None:
    """Top-level ``a.b`` and ``s`` (a struct) with child ``x.y``: paths follow the fields, not
    the dots of their names."""
    t = catalog(tmp_path).create_table(
        "ns.dots",
        pa.schema(
            [
                ("id", pa.int64()),
                ("a.b", pa.int32()),
                ("s", pa.struct([("x.y", pa.string())])),
            ]
        ),
    )
    t.append(
        pa.table(
            {
                "id": [1, 2, 3, 4],
                "a.b": pa.array([1, 1, 2, None], pa.int32()),
                "s": [{"x.y": "p"}, {"x.y": "q"}, {"x.y": "q"}, None],
            }
        )
    )
    schema = t.schema()
    for columns in (None, ["a.b", "s.x.y"]):
        stats = t.compute_statistics(columns)
        reader = PuffinReader(t.io.new_input(stats.statistics_path).read())
        ndv = {b.fields: b.properties["ndv"] for b in reader.blobs}
        assert ndv[(schema.find_field("a.b").field_id,)] == "2"
        if columns:
            assert ndv[(schema.find_field("s.x.y").field_id,)] == "2"


def test_column_statistics_keep_the_field_ids_they_were_computed_for(tmp_path: Path) -> None:
    """A renamed column keeps its count under its new name; a column dropped and added again
    under the same name is another field: the dropped one's count is left out (its name is
    another column's now), and the new column has none."""
    t = catalog(tmp_path).create_table(
        "ns.t", pa.schema([pa.field("id", pa.int64(), nullable=False), ("x", pa.int64())])
    )
    t.append(pa.table({"id": list(range(10)), "x": [i % 3 for i in range(10)]}))
    t.compute_statistics()
    with t.update_schema() as u:
        u.rename_column("id", "key")
    with t.update_schema() as u:
        u.delete_column("x")
    with t.update_schema() as u:
        u.add_column("x", LongType())
    rows = t.inspect.column_statistics().to_pylist()
    got = {(r["column"], r["field_id"]): r["ndv"] for r in rows}
    assert got == {("key", 1): 10}
    assert t.statistics() == {"key": 10}
    assert t.schema().find_field_id("x") == 3
