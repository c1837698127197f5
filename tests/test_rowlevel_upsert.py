"""upsert (merge-on-read, copy-on-write, equality) and delete_by_keys, checked against the
expected rows and the peers; updated rows keep their _row_id on v3."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.types import (
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    UnknownType,
)
from icefloe.write.input import missing_nested_fields
from support.rowlevel_util import live_deletes, ours
from support.s3 import Warehouse, versions_and_stores
from support.write_util import (
    SCHEMA,
    SPEC,
    catalog,
    checksum,
    duckdb_checksum,
    pyiceberg_read,
    rows,
)


def _table(
    tmp_path: Path, version: int, props: dict[str, str], warehouse: Warehouse | None = None
) -> Any:
    cat = catalog(tmp_path, warehouse)
    t = cat.create_table(
        "ns.t", SCHEMA, partition_spec=SPEC, properties={"format-version": str(version), **props}
    )
    t.append(rows(0, 100))
    return t


def _source() -> pa.Table:
    """Keys 90..109: 90..99 update existing rows (new s and x), 100..109 are new."""
    src = rows(90, 20)
    return src.set_column(1, "s", pc.binary_join_element_wise("u", src["s"], ""))


def _expected() -> pa.Table:
    old = rows(0, 90)
    return pa.concat_tables([old, _source()]).sort_by("id")


def _same(a: pa.Table, b: pa.Table) -> None:
    cols = ["id", "s", "ts"]
    assert a.select(cols).sort_by("id").to_pylist() == b.select(cols).sort_by("id").to_pylist()


MODES = {
    "mor": {"write.merge.mode": "merge-on-read"},
    "cow": {},
}


@pytest.mark.parametrize(
    ("version", "warehouse"), versions_and_stores(2, 3), indirect=["warehouse"]
)
@pytest.mark.parametrize("mode", sorted(MODES))
def test_upsert(
    tmp_path: Path, version: int, mode: str, warehouse: Warehouse, duckdb_con: Any
) -> None:
    t = _table(tmp_path, version, MODES[mode], warehouse)
    before = ours(t, "_row_id") if version >= 3 else None
    result = t.upsert(_source(), ["id"])
    assert (result.rows_updated, result.rows_inserted) == (10, 10)
    snap = t.current_snapshot()
    assert snap.summary.operation == "overwrite"
    got = ours(t, *(("_row_id",) if version >= 3 else ()))
    _same(got, _expected())
    want = checksum(_expected())
    assert checksum(pyiceberg_read(t)) == want
    assert duckdb_checksum(duckdb_con, t) == want
    if mode == "mor":
        kinds = set(live_deletes(t).column("file_format").to_pylist())
        assert kinds == ({"PUFFIN"} if version >= 3 else {"PARQUET"})
    else:
        assert live_deletes(t).num_rows == 0
    if before is not None:
        # updated and untouched rows keep their ids; new rows get fresh, distinct ids
        old_ids = dict(zip(before["id"].to_pylist(), before["_row_id"].to_pylist(), strict=True))
        new_ids = dict(zip(got["id"].to_pylist(), got["_row_id"].to_pylist(), strict=True))
        for k in range(100):
            assert new_ids[k] == old_ids[k]
        fresh = [new_ids[k] for k in range(100, 110)]
        assert len(set(fresh)) == 10 and not set(fresh) & set(old_ids.values())
    # upserting the same data again changes nothing visible
    again = t.upsert(_source(), ["id"])
    assert (again.rows_updated, again.rows_inserted) == (20, 0)
    _same(ours(t), _expected())


def test_upsert_equality_mode(tmp_path: Path, duckdb_con: Any) -> None:
    t = _table(tmp_path, 2, {"write.upsert.mode": "equality"})
    t.upsert(_source(), ["id"])
    dels = live_deletes(t)
    assert set(dels.column("content").to_pylist()) == {2}
    _same(ours(t), _expected())
    assert duckdb_checksum(duckdb_con, t) == checksum(_expected())


def test_upsert_rejects_duplicates_and_bad_columns(tmp_path: Path) -> None:
    t = _table(tmp_path, 2, {})
    head = t.current_snapshot().snapshot_id
    dup = pa.concat_tables([rows(5, 2), rows(5, 1)])
    with pytest.raises(ValidationError, match="duplicate"):
        t.upsert(dup, ["id"])
    with pytest.raises(ValidationError, match="nope"):
        t.upsert(rows(5, 2), ["nope"])
    assert t.current_snapshot().snapshot_id == head
    assert t.upsert(rows(0, 0), ["id"]).rows_inserted == 0


@pytest.mark.parametrize("version", [2, 3])
def test_delete_by_keys(tmp_path: Path, version: int, duckdb_con: Any) -> None:
    t = _table(tmp_path, version, {})
    t.delete_by_keys(pa.table({"id": [3, 50, 77, 1000]}), ["id"])
    dels = live_deletes(t)
    assert set(dels.column("content").to_pylist()) == {2}
    want = rows(0, 100).filter(
        pc.invert(pc.is_in(rows(0, 100)["id"], value_set=pa.array([3, 50, 77])))
    )
    _same(ours(t), want)
    assert duckdb_checksum(duckdb_con, t) == checksum(want)
    # keys matching nothing in the table's partitions write nothing
    head = t.current_snapshot().snapshot_id
    t.delete_by_keys({"id": [10_000]}, ["id"])
    assert t.current_snapshot().snapshot_id == head


def test_equality_deletes_on_a_uuid_key(tmp_path: Path) -> None:
    """delete_by_keys and an equality-mode upsert keyed by a uuid column (an Arrow extension
    type, which Arrow's grouping and sorting kernels do not take): the delete file holds the
    keys once each, in Iceberg's uuid order, and the rows read back are the expected ones."""
    import uuid

    import pyarrow.parquet as pq

    schema = pa.schema([pa.field("k", pa.uuid(), nullable=False), ("v", pa.int64())])
    keys = [uuid.UUID(int=i).bytes for i in (0, 1, 2, 2**127, 2**128 - 1)]
    t = catalog(tmp_path).create_table(
        "ns.u", schema, properties={"format-version": "2", "write.upsert.mode": "equality"}
    )
    t.append(pa.table({"k": keys, "v": [0, 1, 2, 3, 4]}, schema=schema))
    t.upsert(pa.table({"k": [keys[1], keys[4]], "v": [10, 40]}, schema=schema), ["k"])
    t.delete_by_keys({"k": [uuid.UUID(int=2), uuid.UUID(int=2), uuid.UUID(int=2**127)]}, ["k"])
    got = {r["k"].int: r["v"] for r in t.scan().to_arrow().to_pylist()}
    assert got == {0: 0, 1: 10, 2**128 - 1: 40}
    files = live_deletes(t).column("file_path").to_pylist()
    stored = sorted(
        [u.int for u in pq.read_table(p.removeprefix("file://")).column("k").to_pylist()]
        for p in files
    )
    assert stored == [[1, 2**128 - 1], [2, 2**127]]  # unique, in uuid order


def test_delete_by_keys_needs_v2(tmp_path: Path) -> None:
    t = _table(tmp_path, 1, {})
    with pytest.raises(ValidationError, match="version 2"):
        t.delete_by_keys({"id": [1]}, ["id"])


_UUIDS = [bytes([0] * 15 + [i]) for i in range(7)]
#: Key columns: one long (matched in Rust), two columns and a uuid (matched by a join).
_KEYS = {
    "long": (pa.int64(), [1, 5, 5, 6]),
    "long+string": (pa.int64(), [1, 5, 5, 6]),
    "uuid": (pa.uuid(), [_UUIDS[1], _UUIDS[5], _UUIDS[5], _UUIDS[6]]),
}


@pytest.mark.parametrize("key", list(_KEYS))
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_upsert_counts_source_rows_when_target_keys_repeat(
    tmp_path: Path, mode: str, key: str
) -> None:
    """Two target rows share the key one source row carries: both are replaced by it, and
    nothing is inserted (the count is never negative); on v3 the source row carries the
    lower of their row ids, whatever the key's columns and type."""
    cat = catalog(tmp_path)
    kind, (one, five, five_again, six) = _KEYS[key][0], _KEYS[key][1]
    columns = ["id", "g"] if key == "long+string" else ["id"]
    schema = pa.schema([("id", kind), ("g", pa.string()), ("name", pa.string())])
    t = cat.create_table(
        "ns.dups", schema, properties={"format-version": "3", "write.upsert.mode": mode}
    )
    t.append(
        pa.table(
            {"id": [one, five, five_again], "g": ["x"] * 3, "name": ["a", "dup-1", "dup-2"]},
            schema=schema,
        )
    )
    ids = t.scan(selected_fields=("name", "_row_id")).to_arrow().to_pylist()
    source = pa.table({"id": [five, six], "g": ["x", "x"], "name": ["new", "six"]}, schema=schema)
    result = t.upsert(source, join_cols=columns)
    assert (result.rows_updated, result.rows_inserted) == (2, 1)
    got = t.scan(selected_fields=("name", "_row_id")).to_arrow().to_pylist()
    assert sorted(r["name"] for r in got) == ["a", "new", "six"]
    by_name = {r["name"]: r["_row_id"] for r in ids}
    assert {r["name"]: r["_row_id"] for r in got}["new"] == by_name["dup-1"]


def test_upsert_refuses_data_without_a_join_column(tmp_path: Path) -> None:
    """Filled with nulls, a missing key column would match (and replace) every null key."""
    cat = catalog(tmp_path)
    t = cat.create_table("ns.keys", pa.schema([("id", pa.int64()), ("name", pa.string())]))
    t.append(pa.table({"id": [1, None, None], "name": ["a", "legacy-1", "legacy-2"]}))
    before = t.current_snapshot()
    with pytest.raises(ValidationError, match="join column 'id' is not in the data"):
        t.upsert(pa.table({"name": ["oops"]}), join_cols=["id"])
    with pytest.raises(ValidationError, match="join column 'id' is not in the data"):
        t.upsert({"name": ["oops"]}, join_cols=["id"])
    assert t.refresh().current_snapshot() == before


@pytest.mark.parametrize("nulls", [False, True])
def test_upsert_reads_only_the_files_that_may_hold_its_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nulls: bool
) -> None:
    """A few keys far apart are matched against the files whose bounds hold one of them,
    not every file their range spans; the result is the same."""
    import icefloe.table.row_level as row_level

    t = catalog(tmp_path).create_table(
        "ns.sparse", pa.schema([("id", pa.int64()), ("v", pa.string())])
    )
    with t.transaction() as tx:
        for k in range(40):
            tx.append(pa.table({"id": pa.array([k * 10], pa.int64()), "v": [f"old{k}"]}))
        tx.append(pa.table({"id": pa.array([10**9], pa.int64()), "v": ["far"]}))
        if nulls:
            tx.append(pa.table({"id": pa.array([None], pa.int64()), "v": ["null key"]}))
    read: list[int] = []
    real = row_level.native_matching_key_positions

    def counting(io: Any, tasks: Any, *args: Any, **kwargs: Any) -> Any:
        read.append(len(tasks))
        return real(io, tasks, *args, **kwargs)

    monkeypatch.setattr(row_level, "native_matching_key_positions", counting)
    keys = [0, 10**9, *([None] if nulls else [])]
    source = pa.table(
        {"id": pa.array(keys, pa.int64()), "v": ["a", "b", *(["c"] if nulls else [])]}
    )
    result = t.upsert(source, join_cols=["id"])
    assert (result.rows_updated, result.rows_inserted) == (len(keys), 0)
    assert read == [len(keys)]  # the files holding 0, 10**9 and the null key
    got = {r["id"]: r["v"] for r in t.scan().to_arrow().to_pylist()}
    assert (got[0], got[10**9], got[10]) == ("a", "b", "old1") and len(got) == 41 + nulls


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_upsert_needs_whole_rows(tmp_path: Path, mode: str) -> None:
    """A source without a column of the table would wipe that column in the rows it updates
    (Spark's MERGE ... UPDATE SET * refuses it): refused, nothing committed."""
    t = catalog(tmp_path).create_table(
        "ns.whole",
        pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.int64())]),
        properties={"write.upsert.mode": mode},
    )
    t.append(pa.table({"id": [1, 1, 2], "name": ["a", "a2", "b"], "v": [10, 11, 20]}))
    before = t.current_snapshot()
    with pytest.raises(ValidationError, match=r"lacks the columns \['v'\]"):
        t.upsert(pa.table({"id": [1, 3], "name": ["A", "C"]}), join_cols=["id"])
    assert t.refresh().current_snapshot() == before
    result = t.upsert(
        pa.table({"id": [1, 3], "name": ["A", "C"], "v": [100, 30]}), join_cols=["id"]
    )
    assert (result.rows_updated, result.rows_inserted) == (2, 1)  # both rows of id 1
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"id": 1, "name": "A", "v": 100},
        {"id": 2, "name": "b", "v": 20},
        {"id": 3, "name": "C", "v": 30},
    ]


_ITEM = pa.struct([("p", pa.int32()), ("q", pa.string())])
_NESTED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
        pa.field("l", pa.list_(_ITEM)),
        pa.field("m", pa.map_(pa.string(), _ITEM)),
    ]
)
_P_ONLY = pa.struct([("p", pa.int32())])


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write", "equality"])
@pytest.mark.parametrize(
    ("column", "given", "missing"),
    [
        ("s", pa.struct([("a", pa.int32())]), "s.b"),
        ("l", pa.list_(_P_ONLY), "l.element.q"),
        ("m", pa.map_(pa.string(), _P_ONLY), "m.value.q"),
    ],
)
def test_upsert_needs_whole_structs(
    tmp_path: Path, version: int, mode: str, column: str, given: pa.DataType, missing: str
) -> None:
    """A source whose struct lacks a field of the table's (also in list elements and map
    values) would wipe that field in the rows it updates, as a missing column would: refused,
    nothing committed. An append fills the field with nulls, as it does a missing column."""
    t = catalog(tmp_path).create_table(
        "ns.nested", _NESTED, properties={"write.upsert.mode": mode}, format_version=version
    )
    old = {"id": 1, "s": {"a": 1, "b": "keep"}, "l": [{"p": 1, "q": "keep"}]}
    t.append(pa.Table.from_pylist([{**old, "m": [("k", {"p": 1, "q": "keep"})]}], _NESTED))
    before = t.current_snapshot()
    value = {"s": {"a": 2}, "l": [{"p": 2}], "m": [("k", {"p": 2})]}[column]
    src_schema = pa.schema([f if f.name != column else pa.field(column, given) for f in _NESTED])
    row = {**old, "m": [("k", {"p": 1, "q": "keep"})], column: value}
    src = pa.Table.from_pylist([row], src_schema)
    with pytest.raises(ValidationError, match=rf"lacks the nested fields \['{missing}'\]"):
        t.upsert(src, join_cols=["id"])
    assert t.refresh().current_snapshot() == before
    assert t.scan().to_arrow().to_pylist()[0]["s"] == {"a": 1, "b": "keep"}
    t.append(src.set_column(0, "id", pa.array([2], pa.int64())))
    added = next(r for r in t.refresh().scan().to_arrow().to_pylist() if r["id"] == 2)
    filled = {
        "s": {"a": 2, "b": None},
        "l": [{"p": 2, "q": None}],
        "m": [("k", {"p": 2, "q": None})],
    }
    assert added[column] == filled[column]


def test_missing_nested_fields_are_named_by_their_full_names() -> None:
    table = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(
            2, "s", StructType(NestedField(3, "a", LongType()), NestedField(4, "B", UnknownType()))
        ),
        NestedField(
            5, "m", MapType(6, StructType(NestedField(7, "x", LongType(), True)), 8, StringType())
        ),
        NestedField(
            9, "ll", ListType(10, ListType(11, StructType(NestedField(12, "z", StringType()))))
        ),
    )
    empty = pa.struct([])
    given = pa.schema(
        [
            ("s", empty),  # an unknown field is always null: not missing
            ("m", pa.map_(empty, pa.string())),
            ("ll", pa.large_list(pa.list_(empty))),
        ]
    )
    assert missing_nested_fields(table, given) == ["s.a", "m.key.x", "ll.element.element.z"]
    # missing top-level columns are another check's; a null column or a type not shaped as
    # the table's is left to the type checks
    assert missing_nested_fields(table, pa.schema([("id", pa.int64())])) == []
    other = pa.schema([("s", pa.null()), ("m", pa.string()), ("ll", pa.list_(pa.int64()))])
    assert missing_nested_fields(table, other) == []
    upper = pa.schema([("S", pa.struct([("A", pa.int64())]))])
    assert missing_nested_fields(table, upper) == []
    assert missing_nested_fields(table, upper, case_sensitive=False) == []
    assert missing_nested_fields(table, pa.schema([("s", pa.struct([("A", pa.int64())]))])) == [
        "s.a"
    ]


def test_one_key_column_given_as_a_string(tmp_path: Path) -> None:
    """``join_cols="id"`` is the column ``id``, not the columns ``i`` and ``d``."""
    t = catalog(tmp_path).create_table(
        "ns.strkey",
        pa.schema([("kv", pa.int64()), ("k", pa.int64()), ("v", pa.int64())]),
        properties={"format-version": "2"},
    )
    t.append(pa.table({"kv": [1, 2], "k": [1, 1], "v": [10, 20]}))
    result = t.upsert(pa.table({"kv": [1], "k": [5], "v": [5]}), join_cols="kv")
    assert (result.rows_updated, result.rows_inserted) == (1, 0)
    t.delete_by_keys({"kv": [2]}, "kv")
    assert t.scan().to_arrow().to_pylist() == [{"kv": 1, "k": 5, "v": 5}]


def test_commit_inside_a_with_block(tmp_path: Path) -> None:
    """``tx.commit_transaction()`` inside ``with table.transaction() as tx`` commits once, and
    leaving the block adds nothing (it raised after the commit had happened)."""
    t = catalog(tmp_path).create_table("ns.txwith", pa.schema([("id", pa.int64())]))
    with t.transaction() as tx:
        tx.append(pa.table({"id": [1]}))
        tx.commit_transaction()
    assert t.refresh().scan().to_arrow()["id"].to_pylist() == [1]
    assert len(t.snapshots()) == 1


def test_a_key_inside_a_struct_is_refused_by_name(tmp_path: Path) -> None:
    """An identifier field inside a struct cannot key an upsert or a ``delete_by_keys``: the
    error names the field (it said the column was missing from the data, or named the id of
    another column)."""
    from icefloe.arrow_schema import schema_to_arrow
    from icefloe.catalog.hadoop import HadoopCatalog
    from icefloe.schema import Schema
    from icefloe.types import LongType, NestedField, StringType, StructType

    cat = HadoopCatalog("h", warehouse=str(tmp_path))
    cat.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "s", StructType(NestedField(3, "k", LongType(), required=True)), True),
        NestedField(4, "v", StringType()),
        identifier_field_ids=[3],
    )
    t = cat.create_table("db.t", schema, format_version=2)
    arrow = schema_to_arrow(t.schema())
    rows = pa.Table.from_pylist([{"id": 1, "s": {"k": 1}, "v": "a"}], schema=arrow)
    t.append(rows)
    attempts = [
        lambda: t.upsert(rows),
        lambda: t.upsert(rows, join_cols=["s.k"]),
        lambda: t.delete_by_keys(pa.table({"s.k": [1]})),
    ]
    for attempt in attempts:
        with pytest.raises(ValidationError, match=r"'s\.k' is a field inside a struct"):
            attempt()
    t.upsert(rows.set_column(2, "v", pa.array(["b"])), join_cols=["id"])  # top-level: fine
    assert t.scan().to_arrow().column("v").to_pylist() == ["b"]


#: NaNs of other bits than Python's ``float("nan")``: a negative one (what ``inf - inf`` gives
#: on x86) and one with a payload, per Arrow float type.
_NAN_BITS = {
    "double": (pa.float64(), np.uint64, np.float64, 0xFFF8000000000000, 0x7FF8000000000001),
    "float": (pa.float32(), np.uint32, np.float32, 0xFFC00000, 0x7FC00001),
}


def _nans(kind: str) -> tuple[pa.DataType, float, float]:
    """The Arrow type of ``kind`` and two NaNs of different bits (neither Python's own)."""
    arrow, bits, floats, negative, payload = _NAN_BITS[kind]
    a, b = np.array([negative, payload], dtype=bits).view(floats)
    return arrow, a, b


@pytest.mark.parametrize("kind", list(_NAN_BITS))
@pytest.mark.parametrize("columns", [["k"], ["k", "g"]])
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_upsert_nan_keys_match_whatever_their_bits(
    tmp_path: Path, mode: str, columns: list[str], kind: str
) -> None:
    """A source NaN key replaces the table's NaN row even when the two NaNs differ in their
    bits (NaN matches NaN): the result counts it as updated, not also as inserted, and on v3
    the row keeps its ``_row_id``. ``0.0`` stays a different key from the table's ``-0.0``."""
    arrow, table_nan, source_nan = _nans(kind)
    schema = pa.schema([("k", arrow), ("g", pa.string()), ("v", pa.string())])
    cat = catalog(tmp_path)
    t = cat.create_table(
        "ns.nan_keys", schema, properties={"format-version": "3", "write.upsert.mode": mode}
    )
    old = {"k": [table_nan, -0.0, 1.5], "g": ["x"] * 3, "v": ["nan", "minus zero", "one"]}
    t.append(pa.table(old, schema=schema))
    before = {
        r["v"]: r["_row_id"]
        for r in t.scan(selected_fields=("v", "_row_id")).to_arrow().to_pylist()
    }

    source = pa.table({"k": [source_nan, 0.0], "g": ["x", "x"], "v": ["new nan", "zero"]}, schema)
    result = t.upsert(source, join_cols=columns)

    assert (result.rows_updated, result.rows_inserted) == (1, 1)
    after = {
        r["v"]: r["_row_id"]
        for r in t.scan(selected_fields=("v", "_row_id")).to_arrow().to_pylist()
    }
    assert set(after) == {"new nan", "zero", "minus zero", "one"}
    assert after["new nan"] == before["nan"]
    assert after["minus zero"] == before["minus zero"]
    assert after["zero"] not in before.values()


@pytest.mark.parametrize("kind", list(_NAN_BITS))
@pytest.mark.parametrize("columns", [["k"], ["k", "g"]])
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_upsert_source_nan_keys_of_different_bits_are_one_key(
    tmp_path: Path, mode: str, columns: list[str], kind: str
) -> None:
    """Two source rows whose keys are NaNs of different bits name the same key: the upsert
    is refused as it is for two equal NaNs (it wrote both rows, two rows for one key).
    ``-0.0`` and ``0.0`` are two keys and pass."""
    arrow, a, b = _nans(kind)
    schema = pa.schema([("k", arrow), ("g", pa.string()), ("v", pa.string())])
    cat = catalog(tmp_path)
    t = cat.create_table(
        "ns.nan_dups", schema, properties={"format-version": "2", "write.upsert.mode": mode}
    )
    t.append(pa.table({"k": [1.0], "g": ["x"], "v": ["one"]}, schema=schema))
    head = t.current_snapshot().snapshot_id
    for keys in ([a, a], [a, b], [float("nan"), b]):
        source = pa.table({"k": keys, "g": ["x", "x"], "v": ["A", "B"]}, schema=schema)
        with pytest.raises(ValidationError, match="duplicate rows in the source"):
            t.upsert(source, join_cols=columns)
    assert t.current_snapshot().snapshot_id == head
    zeros = pa.table({"k": [-0.0, 0.0], "g": ["x", "x"], "v": ["-0", "+0"]}, schema=schema)
    assert t.upsert(zeros, join_cols=columns).rows_inserted == 2
    assert sorted(t.scan().to_arrow().column("v").to_pylist()) == ["+0", "-0", "one"]


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read", "equality"])
def test_keys_given_as_python_values_follow_the_time_zone_rules(tmp_path: Path, mode: str) -> None:
    """Keys given as a mapping of Python ``datetime`` lists follow the rules of Arrow keys: a
    naive time for a zoned key column is refused, never read as UTC (``delete_by_keys`` deleted
    the 12:00Z row for a naive 12:00, and an upsert replaced it), and a zoned time for a key
    column without a zone is refused too (it stood for its UTC wall time)."""
    import datetime as dt
    import zoneinfo

    noon = dt.datetime(2024, 1, 1, 12)
    paris = dt.datetime(2024, 1, 1, 13, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"))
    schema = pa.schema(
        [("ts", pa.timestamp("us", "UTC")), ("local", pa.timestamp("us")), ("v", pa.string())]
    )
    cat = catalog(tmp_path)
    t = cat.create_table(
        "ns.zoned_keys", schema, properties={"format-version": "2", "write.upsert.mode": mode}
    )
    t.append(pa.table({"ts": [noon.replace(tzinfo=dt.UTC)], "local": [noon], "v": ["a"]}, schema))
    head = t.current_snapshot().snapshot_id
    attempts = [
        (lambda: t.delete_by_keys({"ts": [noon]}, ["ts"]), "no time zone"),
        (lambda: t.upsert({"ts": [noon], "local": [noon], "v": ["b"]}, ["ts"]), "no time zone"),
        (lambda: t.delete_by_keys({"local": [paris]}, ["local"]), "holds times without a zone"),
        (
            lambda: t.upsert({"ts": [paris], "local": [paris], "v": ["b"]}, ["local"]),
            "holds times without a zone",
        ),
    ]
    for attempt, message in attempts:
        with pytest.raises(ValidationError, match=message):
            attempt()
    assert t.current_snapshot().snapshot_id == head
    # the same instants, each with the zone-ness of its column, match the row
    t.upsert({"ts": [paris], "local": [noon], "v": ["b"]}, ["ts"])
    assert t.scan().to_arrow().column("v").to_pylist() == ["b"]
    t.delete_by_keys({"local": [noon]}, ["local"])
    assert t.scan().to_arrow().num_rows == 0


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_v2_upsert_whose_matching_fails_leaves_no_files_of_its_overlapped_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """On v2 the new rows are written while the keys are matched; when the matching fails,
    the files already written are removed and the table is unchanged."""
    import threading

    import icefloe.table.row_level as row_level

    t = _table(tmp_path, 2, {"write.update.mode": mode})
    before = t.current_snapshot().snapshot_id
    data_dir = Path(t.location.removeprefix("file://")) / "data"
    files_before = {p for p in data_dir.rglob("*") if p.is_file()}
    written = threading.Event()
    real_write = row_level.write_rows

    def write(*args: Any, **kwargs: Any) -> Any:
        out = real_write(*args, **kwargs)
        written.set()
        return out

    def matching(*args: Any, **kwargs: Any) -> Any:
        assert written.wait(30)  # the overlapped write has finished its files
        raise OSError("disk gone")

    monkeypatch.setattr(row_level, "write_rows", write)
    monkeypatch.setattr(row_level, "native_matching_key_positions", matching)
    with pytest.raises(OSError, match="disk gone"):
        t.upsert(_source(), join_cols=["id"])
    assert t.refresh().current_snapshot().snapshot_id == before
    # the write's files are removed as it ends (nothing waits for it after the failure)
    deadline = time.monotonic() + 30
    while {p for p in data_dir.rglob("*") if p.is_file()} != files_before:
        assert time.monotonic() < deadline, "the overlapped write's files were left"
        time.sleep(0.01)
    assert checksum(t.scan().to_arrow()) == checksum(rows(0, 100))


def test_v2_upsert_whose_overlapped_write_fails_raises_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import icefloe.table.row_level as row_level

    t = _table(tmp_path, 2, {"write.update.mode": "merge-on-read"})
    before = t.current_snapshot().snapshot_id

    def write(*args: Any, **kwargs: Any) -> Any:
        raise ValidationError("no room for the new rows")

    monkeypatch.setattr(row_level, "write_rows", write)
    with pytest.raises(ValidationError, match="no room"):
        t.upsert(_source(), join_cols=["id"])
    assert t.refresh().current_snapshot().snapshot_id == before
    assert t.scan().to_arrow().num_rows == 100


def test_an_overlapped_write_no_worker_starts_runs_on_the_calling_thread() -> None:
    """Every worker busy (perhaps with the caller itself): the write runs inline, not never."""
    import threading

    from icefloe._concurrency import work_executor, work_threads
    from icefloe.table.row_level import _Overlapped

    release = threading.Event()
    pool = work_executor()
    busy = [pool.submit(release.wait, 30) for _ in range(work_threads())]
    try:
        ran_on: list[str] = []
        job = _Overlapped(lambda: ran_on.append(threading.current_thread().name) or [])
        assert job.result() == []
        assert ran_on == [threading.current_thread().name]
        never: list[str] = []
        abandoned = _Overlapped(lambda: never.append("ran") or [])
        abandoned.abandon(None)  # type: ignore[arg-type]  # cancelled before it started
    finally:
        release.set()
        for f in busy:
            f.result()
    work_executor().submit(lambda: None).result()  # the queue has drained
    assert never == []
