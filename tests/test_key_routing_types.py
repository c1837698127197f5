"""Equality deletes (``delete_by_keys``, equality upserts) on tables partitioned by the identity,
a bucket or a truncation of a key column of every routable type write each partition's delete
file with only the keys of that partition, and only into the partitions the keys belong to;
the key filter that prunes planning keeps every row whose key matches (time zones, nanosecond
timestamps, decimal scales, key types other than the column's)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import ValidationError
from icefloe.expressions.base import AlwaysTrue
from icefloe.table.key_columns import keys_filter
from icefloe.transforms import parse_transform

UTC = dt.timezone.utc
NS0 = 1_700_000_000_000_000_000
N = 40  # distinct keys, two rows each

#: name -> (Arrow type of the key column, key of index i, format version)
KEY_TYPES: dict[str, tuple[pa.DataType, Callable[[int], Any], int]] = {
    "int": (pa.int64(), lambda i: 1000 + i, 2),
    "string": (pa.string(), lambda i: f"{i // 3:02d}-{i}", 2),
    "date": (pa.date32(), lambda i: dt.date(2024, 1, 1) + dt.timedelta(days=i), 2),
    "timestamp": (
        pa.timestamp("us"),
        lambda i: dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i, microseconds=7),
        2,
    ),
    "timestamptz": (
        pa.timestamp("us", tz="UTC"),
        lambda i: dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(minutes=i),
        2,
    ),
    # nanosecond digits a microsecond literal could not hold
    "timestamp_ns": (pa.timestamp("ns"), lambda i: NS0 + i * 1_000_001 + 123, 3),
    "timestamptz_ns": (pa.timestamp("ns", tz="UTC"), lambda i: NS0 - i * 999_999 - 1, 3),
    "decimal": (pa.decimal128(9, 2), lambda i: Decimal(i) / 4 - 3, 2),
    "binary": (pa.binary(), lambda i: f"{i // 3:02d}-{i}".encode(), 2),
    "fixed": (pa.binary(4), lambda i: (7 * i).to_bytes(4, "big"), 2),
    "uuid": (pa.uuid(), lambda i: uuid.UUID(int=(i * 0x9E3779B97F4A7C15) << 40).bytes, 2),
}

#: (key type, transform): truncate where it applies (width picked for several keys per
#: partition), bucket for every type.
CASES = [(name, "identity") for name in KEY_TYPES] + [(name, "bucket[16]") for name in KEY_TYPES]
CASES += [("int", "truncate[4]"), ("string", "truncate[2]"), ("binary", "truncate[2]")]
CASES += [("decimal", "truncate[100]")]


def _catalog(tmp: Path) -> SqlCatalog:
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp}/c.db", warehouse=(tmp / "wh").as_uri())
    cat.create_namespace("db")
    return cat


def _key_array(type_name: str, idx: list[int | None]) -> pa.Array:
    typ, mk, _ = KEY_TYPES[type_name]
    return pa.array([None if i is None else mk(i) for i in idx], typ)


def _table(tmp: Path, type_name: str, transform: str, idx: list[int | None]) -> Any:
    """A table keyed by ``k`` of ``type_name``, partitioned by ``transform(k)``, two rows per
    key index of ``idx``."""
    typ, _, version = KEY_TYPES[type_name]
    schema = pa.schema([("id", pa.int64()), ("k", typ)])
    cat = _catalog(tmp)
    t = cat.create_table("db.t", schema, properties={"format-version": str(version)})
    with t.update_spec() as s:
        s.add_field("k", transform, "p")
    t = cat.load_table("db.t")
    both = idx + idx
    t.append(pa.table({"id": list(range(len(both))), "k": _key_array(type_name, both)}))
    return cat.load_table("db.t")


def _storage(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    return a.storage if isinstance(a, pa.ExtensionArray) else a


def _partition_values(transform: str, keys: pa.Array | pa.ChunkedArray) -> list[Any]:
    return _storage(parse_transform(transform).apply(_storage(keys))).to_pylist()


def _check_delete_files(
    t: Any, transform: str, deleted: pa.Array, before: pa.Table
) -> list[dict[str, Any]]:
    """Asserts the equality delete files are one per partition of the table (``before`` the
    delete) that a deleted key belongs to, each holding exactly the deleted keys of its
    partition; returns them."""
    files = t.inspect.files().to_pylist()
    data = [f for f in files if f["content"] == 0]
    eq = [f for f in files if f["content"] == 2]
    table_parts = set(_partition_values(transform, before.column("k")))
    key_parts = _partition_values(transform, deleted)
    wanted = table_parts & set(key_parts)
    got = []
    for f in eq:
        rows = _storage(pq.read_table(f["file_path"].removeprefix("file://")).column("k"))
        parts = set(_partition_values(transform, rows))
        assert len(parts) == 1, f"delete file {f['file_path']} spans partitions {parts}"
        (part,) = parts
        same = [d for d in data if d["partition"] == f["partition"]]
        assert same, f"delete file partition {f['partition']} has no data file"
        for d in same:
            data_k = pq.read_table(d["file_path"].removeprefix("file://")).column("k")
            assert set(_partition_values(transform, data_k)) == {part}
        mine = [
            v for v, p in zip(_storage(deleted).to_pylist(), key_parts, strict=True) if p == part
        ]
        assert sorted(rows.to_pylist(), key=repr) == sorted(set(mine), key=repr)
        got.append(part)
    assert len(got) == len(set(got))
    assert set(got) == wanted
    return eq


def _expected_ids(before: pa.Table, deleted: pa.Array) -> list[int]:
    """Brute force: ids of the rows whose key is not a deleted key (null matches null)."""
    keys = _storage(deleted).to_pylist()
    gone = set(keys)
    return sorted(
        i
        for i, k in zip(before["id"].to_pylist(), _storage(before["k"]).to_pylist(), strict=True)
        if k not in gone
    )


@pytest.mark.parametrize(("type_name", "transform"), CASES)
def test_delete_by_keys_writes_only_the_keys_partitions(
    tmp_path: Path, type_name: str, transform: str
) -> None:
    t = _table(tmp_path, type_name, transform, list(range(N)))
    before = t.scan().to_arrow()
    deleted = _key_array(type_name, [3, 17, 18, 28])
    t.delete_by_keys({"k": deleted}, ["k"])
    eq = _check_delete_files(t, transform, deleted, before)
    if transform == "identity":
        assert len(eq) == 4
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == _expected_ids(before, deleted)


@pytest.mark.parametrize("transform", ["identity", "bucket[16]", "truncate[2]"])
@pytest.mark.parametrize(
    ("type_name", "view"), [("string", pa.string_view()), ("binary", pa.binary_view())]
)
def test_view_typed_keys_are_typed_as_the_table_before_routing(
    tmp_path: Path, type_name: str, view: pa.DataType, transform: str
) -> None:
    # pyarrow cannot filter view arrays: routing keys of their types raised a raw
    # ArrowNotImplementedError (an unpartitioned table, without routing, took them)
    t = _table(tmp_path, type_name, transform, list(range(N)))
    before = t.scan().to_arrow()
    deleted = _key_array(type_name, [3, 17, 18, 28])
    t.delete_by_keys({"k": deleted.cast(view)}, ["k"])
    _check_delete_files(t, transform, deleted, before)
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == _expected_ids(before, deleted)


@pytest.mark.parametrize(
    ("type_name", "transform"),
    [
        ("timestamptz", "identity"),
        ("decimal", "identity"),
        ("uuid", "identity"),
        ("fixed", "bucket[16]"),
        ("binary", "truncate[2]"),
    ],
)
def test_null_keys_go_to_the_null_partition_only(
    tmp_path: Path, type_name: str, transform: str
) -> None:
    t = _table(tmp_path, type_name, transform, [*range(N), None])
    before = t.scan().to_arrow()
    deleted = _key_array(type_name, [None, 5, 33])
    t.delete_by_keys({"k": deleted}, ["k"])
    eq = _check_delete_files(t, transform, deleted, before)
    null_files = [f for f in eq if f["partition"]["p"] is None]
    assert len(null_files) == 1 and null_files[0]["record_count"] == 1
    left = t.scan().to_arrow()
    assert left["k"].null_count == 0
    assert sorted(left["id"].to_pylist()) == _expected_ids(before, deleted)


@pytest.mark.parametrize(
    ("type_name", "transform"),
    [
        ("timestamp", "identity"),
        ("timestamptz_ns", "identity"),
        ("date", "identity"),
        ("decimal", "truncate[100]"),
        ("binary", "identity"),
        ("fixed", "identity"),
        ("uuid", "identity"),
    ],
)
def test_keys_of_absent_partitions_write_nothing(
    tmp_path: Path, type_name: str, transform: str
) -> None:
    t = _table(tmp_path, type_name, transform, list(range(0, N, 2)))  # even indices only
    before = t.scan().to_arrow()
    snapshot = t.current_snapshot().snapshot_id
    # odd indices (the decimal truncation of 4 keys per partition: a partition none is in)
    absent = [41, 42, 43] if transform.startswith("truncate") else [1, 7, 39]
    t.delete_by_keys({"k": _key_array(type_name, absent)}, ["k"])
    assert t.current_snapshot().snapshot_id == snapshot
    assert not [f for f in t.inspect.files().to_pylist() if f["content"] == 2]
    assert t.scan().to_arrow().num_rows == before.num_rows
    # mixed with one present key: one file, in its partition
    mixed = _key_array(type_name, [*absent, 8])
    t.delete_by_keys({"k": mixed}, ["k"])
    assert len(_check_delete_files(t, transform, mixed, before)) == 1
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == _expected_ids(before, mixed)


@pytest.mark.parametrize("type_name", ["timestamptz", "decimal", "uuid"])
def test_equality_upsert_routes_keys(tmp_path: Path, type_name: str) -> None:
    t = _table(tmp_path, type_name, "identity", list(range(N)))
    t.set_properties({"write.upsert.mode": "equality"})
    before = t.scan().to_arrow()
    idx = [4, 9, 30, N + 1, N + 2]  # three keys present, two new
    source = pa.table(
        {"id": pa.array([1000 + i for i in idx], pa.int64()), "k": _key_array(type_name, idx)}
    )
    t.upsert(source, ["k"])
    present = _key_array(type_name, idx[:3])
    eq = _check_delete_files(t, "identity", _key_array(type_name, idx), before)
    assert len(eq) == 3
    expected = sorted(_expected_ids(before, present) + source["id"].to_pylist())
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == expected


#: (table key type, keys of another Arrow type that cast to it, key indices)
OTHER_TYPED_KEYS = [
    # the same instants in another time zone and unit
    (
        "timestamptz",
        pa.array(
            [dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(minutes=i) for i in (2, 31)],
            pa.timestamp("us", tz="UTC"),
        ).cast(pa.timestamp("ms", tz="America/New_York")),
        [2, 31],
    ),
    ("date", _key_array("date", [5, 6]).cast(pa.date64()), [5, 6]),
    (
        "timestamp",
        pa.array([KEY_TYPES["timestamp"][1](i) for i in (1, 20)], pa.timestamp("us")).cast(
            pa.timestamp("ns")
        ),
        [1, 20],
    ),
    (
        "decimal",
        pa.array([Decimal(i) / 4 - 3 for i in (12, 8)], pa.decimal128(20, 5)),
        [12, 8],
    ),
    ("decimal", pa.array([-3, 0], pa.int8()), [0, 12]),  # 0/4 - 3 = -3, 12/4 - 3 = 0
    (
        "uuid",
        pa.array([KEY_TYPES["uuid"][1](i) for i in (3, 11)], pa.binary(16)),
        [3, 11],
    ),
    (
        "binary",
        pa.array([KEY_TYPES["binary"][1](i) for i in (3, 11, 3)]).dictionary_encode(),
        [3, 11],
    ),
    (
        "binary",
        pa.array([KEY_TYPES["binary"][1](i) for i in (3, 11)], pa.large_binary()),
        [3, 11],
    ),
]


@pytest.mark.parametrize(("type_name", "keys", "idx"), OTHER_TYPED_KEYS)
def test_keys_of_another_arrow_type(
    tmp_path: Path, type_name: str, keys: pa.Array, idx: list[int]
) -> None:
    t = _table(tmp_path, type_name, "identity", list(range(N)))
    before = t.scan().to_arrow()
    t.delete_by_keys({"k": keys}, ["k"])
    deleted = _key_array(type_name, idx)
    eq = _check_delete_files(t, "identity", deleted, before)
    assert len(eq) == len(idx)
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == _expected_ids(before, deleted)


@pytest.mark.parametrize(
    ("type_name", "keys"),
    [
        ("timestamptz", pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("us"))),  # naive
        ("fixed", pa.array([KEY_TYPES["fixed"][1](3)], pa.binary())),
    ],
)
def test_refused_keys_raise_and_write_nothing(
    tmp_path: Path, type_name: str, keys: pa.Array
) -> None:
    """Keys the writer refuses are not routed or filtered by another typing: the writer's
    error is raised and nothing is committed."""
    t = _table(tmp_path, type_name, "identity", list(range(N)))
    snapshot = t.current_snapshot().snapshot_id
    with pytest.raises(ValidationError, match="cannot be written as"):
        t.delete_by_keys({"k": keys}, ["k"])
    assert t.current_snapshot().snapshot_id == snapshot
    assert keys_filter(pa.table({"k": keys}), ["k"], t.schema()) == AlwaysTrue()


FILTER_CASES = [(n, False) for n in KEY_TYPES if n not in ("int", "string", "date")]
#: uuid keys are filtered by their values only (a range of random uuids prunes nothing)
FILTER_CASES += [(n, True) for n, _ in FILTER_CASES if n != "uuid"]


@pytest.mark.parametrize(("type_name", "many"), FILTER_CASES)
def test_key_filter_prunes_and_keeps_every_matching_row(
    tmp_path: Path, type_name: str, many: bool
) -> None:
    """Scanning with the key filter of some keys (their values, or their range when there are
    many) returns every row of those keys, from their partitions' files only."""
    t = _table(tmp_path, type_name, "identity", [*range(N), None])
    picked = [5, 6, 7, 8, 9, 10, None] if not many else [*range(5, 11), *range(N, 400), None]
    keys = pa.table({"k": _key_array(type_name, picked)})
    expr = keys_filter(keys, ["k"])
    assert expr != AlwaysTrue()
    got = t.scan(row_filter=expr)
    got_ids = set(got.to_arrow()["id"].to_pylist())
    all_rows = t.scan().to_arrow()
    wanted = set(_storage(_key_array(type_name, picked)).to_pylist())
    for i, k in zip(all_rows["id"].to_pylist(), _storage(all_rows["k"]).to_pylist(), strict=True):
        if k in wanted:
            assert i in got_ids
    files = {task.data_file.file_path for task in got.plan_files()}
    if many:  # the range of keys 5.. (and the null key): not the files of keys 0..4
        assert len(files) <= N + 1 - 5
    else:  # the files of the 6 picked keys and of the null key
        assert len(files) == 7


def test_key_filter_skips_floats() -> None:
    keys = pa.table({"f": pa.array([1.5, 2.5]), "k": pa.array([1, 2], pa.int64())})
    assert keys_filter(keys, ["f"]) == AlwaysTrue()
    assert str(keys_filter(keys, ["f", "k"])) == str(keys_filter(keys, ["k"]))


def test_upsert_matches_pyarrow_join(tmp_path: Path) -> None:
    """An equality upsert keyed by a nanosecond timestamp leaves the table's rows minus the
    source keys plus the source rows (brute force)."""
    t = _table(tmp_path, "timestamp_ns", "identity", list(range(N)))
    t.set_properties({"write.upsert.mode": "equality"})
    before = t.scan().to_arrow()
    source = pa.table(
        {"id": pa.array([500, 501], pa.int64()), "k": _key_array("timestamp_ns", [2, 3])}
    )
    t.upsert(source, ["k"])
    mask = pc.is_in(before["k"], value_set=source["k"].combine_chunks())
    expected = sorted([*before.filter(pc.invert(mask))["id"].to_pylist(), 500, 501])
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == expected
    assert len(_check_delete_files(t, "identity", source["k"].combine_chunks(), before)) == 2


@pytest.mark.parametrize("key_type", [pa.float32(), pa.float64()])
def test_float_equality_keys_are_refused_before_any_file_is_read(
    tmp_path: Path, key_type: pa.DataType
) -> None:
    """The check sat in the equality delete writer, reached only when a file might hold the
    keys: an empty table took the first batch and refused every later one."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "w").as_uri())
    cat.create_namespace("db")
    schema = pa.schema([("k", key_type), ("v", pa.string())])
    t = cat.create_table("db.t", schema, properties={"write.upsert.mode": "equality"})
    rows = pa.table({"k": pa.array([1.5], key_type), "v": ["a"]})
    for attempt in range(2):
        with pytest.raises(ValidationError, match="cannot be an equality delete column"):
            t.upsert(rows, join_cols=["k"])
        with pytest.raises(ValidationError, match="cannot be an equality delete column"):
            t.delete_by_keys(rows.select(["k"]), ["k"])
        if attempt == 0:
            t.append(rows)
    assert t.refresh().scan().to_arrow().num_rows == 1  # only the append
