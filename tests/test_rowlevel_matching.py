"""Per-task building blocks: positions matching a filter, surviving rows with lineage, key
matching (null equals null), duplicate-key checks, row id carry-over, whole-file proof."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe import _native
from icefloe.exceptions import ValidationError
from icefloe.expressions import AlwaysFalse, AlwaysTrue, col
from icefloe.io import FileIO
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.scan import DataFileRef, FileScanTask
from icefloe.schema import Schema
from icefloe.transforms import BucketTransform, IdentityTransform
from icefloe.types import LongType, NestedField, StringType
from icefloe.write.matching import (
    KeySet,
    all_rows_match,
    bind_filter,
    carry_row_ids,
    check_unique_keys,
    first_match,
    key_match_mask,
    matched_source_rows,
    matching_key_positions,
    matching_positions,
    surviving_rows,
)
from support.read_util import write_data, write_dv

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "v", LongType(), required=False),
)


def _rows(n: int) -> list[dict[str, object]]:
    return [{"id": i, "name": None if i % 5 == 0 else f"n{i % 3}", "v": i * 10} for i in range(n)]


def _task(tmp_path: Path, n: int, deleted: list[int] | None = None, **kw: object) -> FileScanTask:
    df = write_data(tmp_path / "d.parquet", SCHEMA, _rows(n), row_group_size=7)
    df = DataFileRef(df.file_path, record_count=n, file_size_in_bytes=df.file_size_in_bytes, **kw)  # type: ignore[arg-type]
    deletes = (write_dv(tmp_path / "dv.bin", deleted, df.file_path),) if deleted else ()
    return FileScanTask(df, deletes)


def test_matching_positions_respects_existing_deletes(tmp_path: Path) -> None:
    task = _task(tmp_path, 40, deleted=[3, 4, 30])
    f = bind_filter(SCHEMA, "id < 10 or name = 'n1'")
    got = matching_positions(FileIO(), task, SCHEMA, f).to_pylist()
    rows = _rows(40)
    want = [i for i in range(40) if i not in (3, 4, 30) and (i < 10 or rows[i]["name"] == "n1")]
    assert got == want
    # Iceberg semantics: a null is "not equal" to 'n1', so null names match
    f2 = bind_filter(SCHEMA, "name != 'n1'")
    got2 = matching_positions(FileIO(), task, SCHEMA, f2).to_pylist()
    assert got2 == [i for i in range(40) if i not in (3, 4, 30) and rows[i]["name"] != "n1"]
    assert (
        matching_positions(FileIO(), task, SCHEMA, bind_filter(SCHEMA, "id > 100")).to_pylist()
        == []
    )


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 60), st.integers(-5, 65), st.lists(st.integers(0, 59), max_size=10))
def test_matching_and_surviving_partition_live_rows(
    tmp_path_factory: pytest.TempPathFactory, n: int, cut: int, deleted: list[int]
) -> None:
    tmp = tmp_path_factory.mktemp("m")
    deleted = [d for d in deleted if d < n]
    task = _task(tmp, n, deleted=deleted or None, first_row_id=1000, data_sequence_number=4)
    f = bind_filter(SCHEMA, col("id") >= cut)
    hit = matching_positions(FileIO(), task, SCHEMA, f).to_pylist()
    batches = list(surviving_rows(FileIO(), task, SCHEMA, f))
    live = [i for i in range(n) if i not in set(deleted)]
    assert hit == [i for i in live if i >= cut]
    rest = [i for i in live if i < cut]
    if not rest:
        assert batches == []
        return
    kept = pa.Table.from_batches(batches)
    assert kept.column("id").to_pylist() == rest
    # row lineage is inherited from first_row_id + position and the data sequence number
    assert kept.column("_row_id").to_pylist() == [1000 + i for i in rest]
    assert kept.column("_last_updated_sequence_number").to_pylist() == [4] * len(rest)


def test_key_matching_null_equals_null() -> None:
    data = pa.table({"a": [1, 2, None, 4], "b": ["x", None, "z", "w"], "c": [0, 0, 0, 0]})
    keys = pa.table({"a": [2, None, 9], "b": [None, "z", "x"]})
    assert key_match_mask(data, keys, ["a", "b"]).to_pylist() == [False, True, True, False]
    assert KeySet(keys, ["a"]).match_mask(data).to_pylist() == [False, True, True, False]
    with pytest.raises(ValidationError, match="zz"):
        key_match_mask(data, keys, ["zz"])


def test_check_unique_keys() -> None:
    check_unique_keys(pa.table({"a": [1, 2, 3]}), ["a"])
    with pytest.raises(ValidationError, match="duplicate"):
        check_unique_keys(pa.table({"a": [1, 2, 1], "b": [1, 1, 1]}), ["a", "b"])
    check_unique_keys(pa.table({"a": [1, 1], "b": [1, 2]}), ["a", "b"])
    with pytest.raises(ValidationError):
        check_unique_keys(pa.table({"a": [1]}), [])


def test_matching_key_positions_and_row_id_carry(tmp_path: Path) -> None:
    task = _task(tmp_path, 20, deleted=[2], first_row_id=500)
    keys = KeySet(pa.table({"id": [2, 3, 7, 99]}), ["id"])
    got = matching_key_positions(FileIO(), task, SCHEMA, keys)
    assert got.column("_pos").to_pylist() == [3, 7]
    full = matching_key_positions(FileIO(), task, SCHEMA, keys, with_row_ids=True)
    assert full.column("_row_id").to_pylist() == [503, 507]
    source = pa.table({"id": [99, 7, 3], "v": [1, 2, 3]})
    assert carry_row_ids(source, full, ["id"]).to_pylist() == [None, 507, 503]
    assert got.column_names == ["id", "_pos"]
    none = matching_key_positions(FileIO(), task, SCHEMA, KeySet(pa.table({"id": [77]}), ["id"]))
    assert none.num_rows == 0


_KEYS = st.lists(st.one_of(st.none(), st.integers(-5, 5)), max_size=12)


@settings(max_examples=60, deadline=None)
@given(source=_KEYS, matched=_KEYS)
def test_row_id_carry_agrees_with_a_dict(
    source: list[int | None], matched: list[int | None]
) -> None:
    """One key column: each source key takes the id of its first row in ``matched``; null keys
    and keys not matched carry nothing. Two key columns (the hash join) give the same ids."""
    ids = [1000 + i for i in range(len(matched))]
    first: dict[int, int] = {}
    for k, i in zip(matched, ids, strict=True):
        if k is not None:
            first.setdefault(k, i)
    want = [None if k is None else first.get(k) for k in source]
    hits = pa.table({"id": pa.array(matched, pa.int64()), "_row_id": pa.array(ids, pa.int64())})
    got = carry_row_ids(pa.table({"id": pa.array(source, pa.int64())}), hits, ["id"])
    assert got.type == pa.int64() and got.to_pylist() == want
    if len(set(matched)) == len(matched):  # the join repeats a source row per duplicate
        two = carry_row_ids(
            pa.table(
                {"id": pa.array(source, pa.int64()), "z": pa.array([0] * len(source), pa.int64())}
            ),
            hits.append_column("z", pa.array([0] * len(matched), pa.int64())),
            ["id", "z"],
        )
        assert two.to_pylist() == want


@settings(max_examples=80, deadline=None)
@given(source=_KEYS, matched=_KEYS, type_=st.sampled_from([pa.int64(), pa.string()]))
def test_matched_source_rows_counts_source_keys_found(
    source: list[int | None], matched: list[int | None], type_: pa.DataType
) -> None:
    """The source rows (unique keys) an upsert replaces, null matching null, however often a
    key repeats in ``matched`` (the target rows holding a source key): by the lookup and by the
    fallback, one or two key columns."""
    source = list(dict.fromkeys(source))  # an upsert's keys are unique
    matched = [k for k in matched if k in source]
    want = sum(1 for k in source if k in set(matched))

    def keys(values: list[int | None]) -> pa.Array:
        return pa.array(values, pa.int64()).cast(type_)

    one_source, one_matched = pa.table({"id": keys(source)}), pa.table({"id": keys(matched)})
    at = first_match(one_source, one_matched, ["id"])
    assert at is not None
    assert matched_source_rows(one_source, one_matched, ["id"], at) == want
    assert matched_source_rows(one_source, one_matched, ["id"], None) == want
    zeros = pa.array([0] * len(source), pa.int64())
    two_source = one_source.append_column("z", zeros)
    two_matched = one_matched.append_column("z", pa.array([0] * len(matched), pa.int64()))
    assert first_match(two_source, two_matched, ["id", "z"]) is None
    assert matched_source_rows(two_source, two_matched, ["id", "z"], None) == want


@pytest.mark.parametrize(
    "values",
    [
        pa.array(["a", None, "b", "c"]),
        pa.array([b"a", None, b"b", b"c"], pa.binary()),
        pa.array([b"aaaa", None, b"bbbb", b"cccc"], pa.binary(4)),
        pa.array([1, None, 2, 3], pa.date32()),
        pa.array([1, None, 2, 3], pa.timestamp("us", "UTC")),
        pa.array([1, None, 2, 3], pa.timestamp("ns")),
        pa.array([1, None, 2, 3], pa.int32()),
        pa.array([1, None, 2, 3], pa.decimal128(10, 2)),
        pa.array([True, None, False, True]),
    ],
)
def test_row_id_carry_of_one_key_column_of_each_type(values: pa.Array) -> None:
    """Source keys [v0, null, v2, v3] against matched [v3, v0, null]: ids of v0 and v3 only
    (the boolean's repeated value takes its first match)."""
    source = pa.table({"k": values})
    hits = pa.table(
        {"k": values.take(pa.array([3, 0, 1])), "_row_id": pa.array([30, 10, 99], pa.int64())}
    )
    got = carry_row_ids(source, hits, ["k"]).to_pylist()
    assert got == ([30, None, None, 30] if values.type == pa.bool_() else [10, None, None, 30])


_LOOKUP_TYPES = [
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint32(),
    pa.date32(),
    pa.time64("us"),
    pa.timestamp("us"),
    pa.timestamp("ns", "UTC"),
]


@settings(max_examples=80, deadline=None)
@given(
    values=_KEYS,
    value_set=_KEYS,
    type_=st.sampled_from(_LOOKUP_TYPES),
    cut=st.integers(0, 3),
)
def test_native_key_lookup_agrees_with_arrow(
    values: list[int | None], value_set: list[int | None], type_: pa.DataType, cut: int
) -> None:
    """The Rust lookup behind the row-id carry gives Arrow's ``index_in`` (first occurrence,
    nulls match nothing), on sliced arrays too."""
    if pa.types.is_unsigned_integer(type_):
        values = [None if v is None else abs(v) for v in values]
        value_set = [None if v is None else abs(v) for v in value_set]

    def typed(ints: list[int | None]) -> pa.Array:
        arr = pa.array(ints, pa.int64())
        return arr.cast(pa.int32()).cast(type_) if type_ == pa.date32() else arr.cast(type_)

    mine = typed([0] * cut + values).slice(cut)
    theirs = typed(value_set + [0] * cut).slice(0, len(value_set))
    got = _native.index_in(mine, theirs)
    want = pc.index_in(mine, value_set=theirs, skip_nulls=True)
    assert got is not None and got.to_pylist() == want.to_pylist()


def test_native_key_lookup_declines_other_types_and_refuses_mixed_ones() -> None:
    strings = pa.array(["a", "b"])
    assert _native.index_in(strings, strings) is None
    with pytest.raises(ValidationError, match="cannot look up"):
        _native.index_in(pa.array([1], pa.int64()), pa.array([1], pa.int32()))


@settings(max_examples=60, deadline=None)
@given(keys=_KEYS, floats=st.booleans())
def test_unique_check_with_the_hashed_keys_agrees_without(
    keys: list[int | None], floats: bool
) -> None:
    data = pa.table({"k": pa.array(keys, pa.float64() if floats else pa.int64())})
    unique = len(set(keys)) == len(keys)
    for key_set in (None, KeySet(data, ["k"])):
        if unique:
            check_unique_keys(data, ["k"], key_set)
        else:
            with pytest.raises(ValidationError, match="duplicate rows"):
                check_unique_keys(data, ["k"], key_set)


def test_all_rows_match_by_partition() -> None:
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "name"), spec_id=1)
    bspec = PartitionSpec(PartitionField(1, 1000, BucketTransform(4), "b"), spec_id=2)
    specs = {1: spec, 2: bspec, 0: PartitionSpec()}

    def task(spec_id: int, partition: tuple[object, ...]) -> FileScanTask:
        return FileScanTask(DataFileRef("x", spec_id=spec_id, partition=partition))

    eq = bind_filter(SCHEMA, "name = 'n1'")
    assert all_rows_match(task(1, ("n1",)), SCHEMA, eq, specs)
    assert not all_rows_match(task(1, ("n2",)), SCHEMA, eq, specs)
    assert not all_rows_match(task(0, ()), SCHEMA, eq, specs)
    both = bind_filter(SCHEMA, "name = 'n1' and id > 3")
    assert not all_rows_match(task(1, ("n1",)), SCHEMA, both, specs)
    assert not all_rows_match(task(2, (1,)), SCHEMA, bind_filter(SCHEMA, "id = 5"), specs)
    assert all_rows_match(task(0, ()), SCHEMA, AlwaysTrue(), specs)
    assert not all_rows_match(task(1, ("n1",)), SCHEMA, AlwaysFalse(), specs)
