"""Keep-masks from deletion vectors, position delete files and equality deletes, checked
against expected sets computed independently in plain Python."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe import _native
from icefloe.deletes import (
    DeletionVector,
    EqualityDeleteSet,
    PositionDeleteIndex,
    keep_mask_from_positions,
)
from icefloe.exceptions import CorruptFileError, UnsupportedFeatureError, ValidationError


def _expected_mask(deleted: set[int], start: int, length: int) -> list[bool]:
    return [(start + i) not in deleted for i in range(length)]


@settings(max_examples=80, deadline=None)
@given(
    st.sets(st.integers(0, 3000), max_size=400),
    st.integers(0, 3100),
    st.integers(0, 1000),
    st.sampled_from([0, 1 << 32, (1 << 32) - 1500]),
)
def test_keep_mask_matches_expected(deleted: set[int], start: int, length: int, base: int) -> None:
    shifted = {base + p for p in deleted}
    dv = DeletionVector.from_positions(sorted(shifted))
    want = _expected_mask(shifted, base + start, length)
    got = dv.keep_mask(base + start, length)
    assert isinstance(got, pa.BooleanArray)
    assert got.null_count == 0
    assert got.to_pylist() == want
    assert (
        keep_mask_from_positions(np.array(sorted(shifted)), base + start, length).to_pylist()
        == want
    )


def test_keep_mask_filters_a_batch() -> None:
    batch = pa.record_batch({"x": list(range(10))})
    dv = DeletionVector.from_positions([1, 4, 5, 12])
    assert batch.filter(dv.keep_mask(0, 10)).column(0).to_pylist() == [0, 2, 3, 6, 7, 8, 9]
    assert dv.keep_mask(10, 5).to_pylist() == [True, True, False, True, True]
    with pytest.raises(ValidationError, match="sorted"):
        keep_mask_from_positions([5, 1], 0, 10)
    with pytest.raises(ValidationError, match="length"):
        dv.keep_mask(0, 1 << 40)
    with pytest.raises(ValidationError, match="length"):
        keep_mask_from_positions([1], 0, 1 << 40)
    with pytest.raises(ValidationError, match="length"):
        PositionDeleteIndex().keep_mask("f", 0, 1 << 40)


@settings(max_examples=60, deadline=None)
@given(
    st.sets(st.integers(0, 2000), max_size=300),
    st.integers(0, 2100),
    st.integers(0, 700),
    st.sampled_from([0, (1 << 32) - 300]),
)
def test_filter_rows_drops_deleted_positions(
    deleted: set[int], start: int, length: int, base: int
) -> None:
    """``DeletionVector.filter_rows`` keeps exactly the rows whose file position (``start`` +
    row) is not deleted, returns the batch itself when none is, and an empty batch when all are."""
    dv = DeletionVector.from_positions(sorted(base + p for p in deleted))
    first = base + start
    values = [None if i % 7 == 3 else first + i for i in range(length)]
    batch = pa.record_batch(
        {
            "pos": pa.array(values, pa.int64()),
            "k": pa.array([None if v is None else v % 11 for v in values], pa.int32()),
            "s": pa.array(
                [None if v is None else f"s{v % 5}" for v in values], pa.string()
            ).dictionary_encode(),
            "t": pa.array([None if v is None else str(v) for v in values], pa.string()),
        }
    )
    got = dv.filter_rows(batch, first)
    keep = [(first + i - base) not in deleted for i in range(length)]
    assert got.schema == batch.schema
    assert got.equals(batch.filter(pa.array(keep, pa.bool_())))
    if all(keep):
        assert got is batch
    for col in got.columns:
        col.validate(full=True)
    # with the dictionary column decoded in the same call
    decoded = dv.filter_rows(batch, first, ["s", "t"])
    want = got.set_column(2, "s", got.column(2).dictionary_decode())
    assert decoded.equals(want)
    for col in decoded.columns:
        col.validate(full=True)


_KEY_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32()]
_VALUE_TYPES = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()]


@st.composite
def _dictionary_columns(draw: st.DrawFn) -> pa.DictionaryArray:
    """Dictionary arrays with any key and string/binary value type, values of 0-40 characters
    (so both the short-copy and the memcpy paths run), nulls in keys and in values, sliced."""
    value_type = draw(st.sampled_from(_VALUE_TYPES))
    words = draw(st.lists(st.one_of(st.none(), st.text(max_size=40)), min_size=1, max_size=30))
    if value_type in (pa.binary(), pa.large_binary()):
        words = [None if w is None else w.encode() for w in words]
    keys = draw(st.lists(st.one_of(st.none(), st.integers(0, len(words) - 1)), max_size=300))
    arr = pa.DictionaryArray.from_arrays(
        pa.array(keys, draw(st.sampled_from(_KEY_TYPES))), pa.array(words, value_type)
    )
    lo = draw(st.integers(0, len(arr)))
    return arr.slice(lo, draw(st.integers(0, len(arr) - lo)))


@settings(max_examples=80, deadline=None)
@given(_dictionary_columns(), st.data())
def test_decode_dictionaries_matches_pyarrow(col: pa.DictionaryArray, data: st.DataObject) -> None:
    """``decode_dictionaries`` and ``filter_batch(..., decode)`` give what pyarrow's
    ``dictionary_decode`` (then ``filter``) gives, for every key and value type."""
    batch = pa.record_batch({"d": col, "n": pa.array(range(len(col)), pa.int64())})
    out = _native.decode_dictionaries(batch, ["d", "missing"])
    assert out.column(0).equals(col.dictionary_decode())
    assert out.column(1) is not None and out.column(1).equals(batch.column(1))
    out.column(0).validate(full=True)
    keep = pa.array(
        data.draw(st.lists(st.booleans(), min_size=len(col), max_size=len(col))), pa.bool_()
    )
    filtered = _native.filter_batch(batch, keep, ["d"])
    assert filtered.column(0).equals(col.dictionary_decode().filter(keep))
    assert filtered.column(1).equals(batch.column(1).filter(keep))
    filtered.column(0).validate(full=True)


def test_decode_dictionaries_rejects_keys_outside_the_dictionary() -> None:
    """A key past the dictionary is a typed error (the file's pages are damaged), not a read out
    of bounds; a bad key under a null or deleted row is never read."""
    words = pa.array(["a", "b"])
    bad = pa.DictionaryArray.from_arrays(pa.array([0, 5, 1], pa.int32()), words, safe=False)
    with pytest.raises(CorruptFileError, match="outside the dictionary"):
        _native.decode_dictionaries(pa.record_batch({"d": bad}), ["d"])
    negative = pa.DictionaryArray.from_arrays(pa.array([-1], pa.int32()), words, safe=False)
    with pytest.raises(CorruptFileError, match="outside the dictionary"):
        _native.decode_dictionaries(pa.record_batch({"d": negative}), ["d"])
    keep = pa.array([True, False, True])
    out = _native.filter_batch(pa.record_batch({"d": bad}), keep, ["d"])
    assert out.column(0).to_pylist() == ["a", "b"]


def _pos_table(rows: list[tuple[str, int]]) -> pa.Table:
    return pa.table(
        {
            "file_path": pa.array([r[0] for r in rows], pa.string()),
            "pos": pa.array([r[1] for r in rows], pa.int64()),
        }
    )


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["s3://b/a.parquet", "s3://b/b.parquet", "c"]), st.integers(0, 500)
        ),
        max_size=300,
    ),
    st.integers(1, 50),
)
def test_position_delete_index(rows: list[tuple[str, int]], chunk: int) -> None:
    rows = sorted(rows)
    table = _pos_table(rows)
    # Several batches, split at arbitrary points (a file's rows may span batches).
    batches = table.to_batches(max_chunksize=chunk)
    index = PositionDeleteIndex.from_batches(batches)
    expected: dict[str, set[int]] = {}
    for path, pos in rows:
        expected.setdefault(path, set()).add(pos)
    assert index.paths() == sorted(expected)
    assert index.cardinality == sum(len(v) for v in expected.values())
    for path, positions in expected.items():
        dv = index.get(path)
        assert dv is not None and dv.positions().to_pylist() == sorted(positions)
        assert index.keep_mask(path, 100, 300).to_pylist() == _expected_mask(positions, 100, 300)
    assert index.get("missing") is None
    assert index.keep_mask("missing", 0, 3).to_pylist() == [True] * 3


def test_position_delete_index_extra_columns_large_strings_and_errors() -> None:
    t = pa.table(
        {
            "file_path": pa.array(["f", "f", "g"], pa.large_string()),
            "pos": pa.array([3, 1, 2], pa.int64()),
            "row": pa.array([{"a": 1}, {"a": 2}, {"a": 3}]),
        }
    )
    index = PositionDeleteIndex.from_batches(t)
    index.add_deletion_vector("g", DeletionVector.from_positions([7]))
    assert index.get("f").positions().to_pylist() == [1, 3]  # type: ignore[union-attr]
    assert index.get("g").positions().to_pylist() == [2, 7]  # type: ignore[union-attr]
    with pytest.raises(ValidationError, match="pos"):
        PositionDeleteIndex.from_batches(pa.table({"file_path": ["f"]}))
    with pytest.raises(ValidationError, match="negative"):
        PositionDeleteIndex.from_batches(_pos_table([("f", -1)]))
    with pytest.raises(ValidationError, match="null"):
        PositionDeleteIndex.from_batches(
            pa.table({"file_path": pa.array([None], pa.string()), "pos": pa.array([1], pa.int64())})
        )


def _tuples(table: pa.Table, cols: list[str]) -> list[tuple[object, ...]]:
    """Rows of ``cols`` as Python tuples, with NaN made comparable."""
    data = [table.column(c).to_pylist() for c in cols]

    def norm(v: object) -> object:
        return "NaN" if isinstance(v, float) and v != v else v

    return [tuple(norm(v) for v in row) for row in zip(*data, strict=True)]


def _check(deletes: list[pa.Table], data: pa.Table) -> None:
    eq = EqualityDeleteSet(*deletes)
    got = eq.keep_mask(data).to_pylist()
    want = [True] * data.num_rows
    for d in deletes:
        cols = d.column_names
        keys = set(_tuples(d, cols))
        for i, row in enumerate(_tuples(data, cols)):
            if row in keys:
                want[i] = False
    assert got == want


_small_int = st.one_of(st.none(), st.integers(-3, 3))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(_small_int, st.sampled_from([None, "a", "b", ""])), max_size=20),
    st.lists(_small_int, max_size=10),
    st.lists(
        st.tuples(_small_int, st.sampled_from([None, "a", "b", ""]), st.integers(-3, 3)),
        max_size=200,
    ),
)
def test_equality_masks_random(
    multi: list[tuple[int | None, str | None]],
    single: list[int | None],
    rows: list[tuple[int | None, str | None, int]],
) -> None:
    # Deletes written before int -> long promotion; data read as long.
    d1 = pa.table(
        {"id": pa.array([m[0] for m in multi], pa.int32()), "name": [m[1] for m in multi]}
    )
    d2 = pa.table({"id": pa.array(single, pa.int32())})
    d3 = pa.table({"other": pa.array([r[2] for r in rows[:5]], pa.int64())})
    data = pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "name": pa.array([r[1] for r in rows], pa.string()),
            "other": pa.array([r[2] for r in rows], pa.int64()),
        }
    )
    _check([d1.cast(d1.schema.set(1, pa.field("name", pa.string()))), d2, d3], data)


def test_equality_all_types() -> None:
    values: dict[str, tuple[pa.DataType, list[object]]] = {
        "i": (pa.int32(), [1, 2, None]),
        "l": (pa.int64(), [10**12, -1, None]),
        "f": (pa.float32(), [1.5, float("nan"), None]),
        "d": (pa.float64(), [2.25, -0.0, None]),
        "dec": (pa.decimal128(9, 2), [decimal.Decimal("1.25"), decimal.Decimal("-3.10"), None]),
        "date": (pa.date32(), [dt.date(2024, 1, 1), dt.date(1969, 12, 31), None]),
        "time": (pa.time64("us"), [dt.time(1, 2, 3), dt.time(0, 0), None]),
        "ts": (pa.timestamp("us"), [dt.datetime(2024, 1, 1, 1), dt.datetime(1970, 1, 1), None]),
        "tstz": (
            pa.timestamp("us", "UTC"),
            [
                dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
                dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc),
                None,
            ],
        ),
        # v3 nanosecond timestamps
        "ts_ns": (pa.timestamp("ns"), [1_700_000_000_000_000_001, 0, None]),
        "tstz_ns": (pa.timestamp("ns", "UTC"), [-1, 1_700_000_000_000_000_000, None]),
        "s": (pa.string(), ["x", "", None]),
        "b": (pa.binary(), [b"\x00", b"", None]),
        "fx": (pa.binary(3), [b"abc", b"\x00\x00\x00", None]),
        "u": (pa.binary(16), [uuid.UUID(int=1).bytes, uuid.UUID(int=2).bytes, None]),
        "bool": (pa.bool_(), [True, False, None]),
    }
    for name, (typ, vals) in values.items():
        deletes = pa.table({name: pa.array([vals[0], vals[2]], typ)})
        data_vals = [vals[0], vals[1], vals[2], vals[1], vals[0]]
        data = pa.table({name: pa.array(data_vals, typ)})
        mask = EqualityDeleteSet(deletes).keep_mask(data).to_pylist()
        assert mask == [False, True, False, True, False], name
        if typ == pa.float32():
            # float -> double promotion: the float delete still matches the double data.
            promoted = pa.table({name: pa.array(data_vals, pa.float64())})
            assert EqualityDeleteSet(deletes).keep_mask(promoted).to_pylist() == mask
    # All columns at once, as one multi-column delete file.
    cols = {n: pa.array([v[0], v[2]], t) for n, (t, v) in values.items()}
    data_cols = {n: pa.array([v[0], v[1], v[2]], t) for n, (t, v) in values.items()}
    assert EqualityDeleteSet(pa.table(cols)).keep_mask(pa.table(data_cols)).to_pylist() == [
        False,
        True,
        False,
    ]


def test_float_semantics_follow_java_equals() -> None:
    deletes = pa.table({"f": pa.array([0.0, float("nan")], pa.float64())})
    data = pa.table({"f": pa.array([-0.0, 0.0, float("nan"), 1.0], pa.float64())})
    assert EqualityDeleteSet(deletes).keep_mask(data).to_pylist() == [True, False, False, True]


def test_decimal_precision_widening_matches() -> None:
    deletes = pa.table({"d": pa.array([decimal.Decimal("1.50")], pa.decimal128(5, 2))})
    data = pa.table(
        {"d": pa.array([decimal.Decimal("1.50"), decimal.Decimal("1.51")], pa.decimal128(22, 2))}
    )
    assert EqualityDeleteSet(deletes).keep_mask(data).to_pylist() == [False, True]


def test_equality_errors() -> None:
    eq = EqualityDeleteSet(pa.table({"id": pa.array([1], pa.int64())}))
    with pytest.raises(ValidationError, match="id"):
        eq.keep_mask(pa.table({"x": [1]}))
    with pytest.raises(ValidationError, match="id"):
        eq.keep_mask(pa.table({"id": ["1"]}))
    with pytest.raises(UnsupportedFeatureError):
        EqualityDeleteSet(pa.table({"l": pa.array([[1]])}))
    assert len(eq) == 1 and eq.column_sets == [["id"]]
    empty = pa.table({"id": pa.array([], pa.int64())})
    assert eq.keep_mask(empty).to_pylist() == []


def test_large_set_mask_against_numpy() -> None:
    rng = np.random.default_rng(7)
    keys = rng.choice(1_000_000, 50_000, replace=False)
    data = rng.integers(0, 1_000_000, 200_000)
    eq = EqualityDeleteSet(pa.table({"k": pa.array(keys, pa.int64())}))
    got = np.asarray(eq.keep_mask(pa.record_batch({"k": pa.array(data)})))
    assert (got == ~np.isin(data, keys)).all()


def test_dictionary_encoded_columns() -> None:
    deletes = pa.table({"s": pa.array(["a", "c"]).dictionary_encode()})
    data = pa.table({"s": pa.array(["a", "b", "c", None]).dictionary_encode()})
    assert EqualityDeleteSet(deletes).keep_mask(data).to_pylist() == [False, True, False, True]
    paths = pa.array(["f", "f", "g"]).dictionary_encode()
    pos = pa.table({"file_path": paths, "pos": pa.array([1, 2, 3], pa.int64())})
    assert PositionDeleteIndex.from_batches(pos.to_batches()).paths() == ["f", "g"]


_ints64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.one_of(st.integers(-300, 300), _ints64, st.none()), max_size=60),
    st.lists(st.one_of(st.integers(-310, 310), _ints64, st.none()), max_size=200),
    st.integers(1, 3),
)
def test_single_int_keys_dense_or_sparse(
    keys: list[int | None], data: list[int | None], parts: int
) -> None:
    """Single long keys (narrow ranges use a bitmap, wide ones a hash set) match a Python set,
    also when added in several batches and when null keys delete null rows."""
    s = EqualityDeleteSet()
    step = max(1, len(keys) // parts)
    for i in range(0, max(len(keys), 1), step):
        s.add(pa.table({"id": pa.array(keys[i : i + step], pa.int64())}))
    want = set(keys)
    assert len(s) == len(want)
    got = s.keep_mask(pa.record_batch({"id": pa.array(data, pa.int64())})).to_pylist()
    assert got == [v not in want for v in data]


def _filter_batch_data(rows: list[tuple[int | None, str | None, bool]]) -> pa.RecordBatch:
    ints = [r[0] for r in rows]
    return pa.record_batch(
        {
            "i": pa.array(ints, pa.int64()),
            "s": pa.array([r[1] for r in rows], pa.string()),
            "ls": pa.array([r[1] for r in rows], pa.large_string()),
            "st": pa.array(
                [None if r[0] is None else {"a": r[0], "b": r[1]} for r in rows],
                pa.struct([("a", pa.int64()), ("b", pa.string())]),
            ),
            "l": pa.array([None if r[1] is None else [r[0], r[0]] for r in rows]),
            "m": pa.array([[("k", r[0])] for r in rows], pa.map_(pa.string(), pa.int64())),
            # Imported with a layout-only check (no key re-validation): keys copied by position.
            "d": pa.array([r[1] for r in rows], pa.string()).dictionary_encode(),
            "i32": pa.array(ints, pa.int32()),
            "ts": pa.array(ints, pa.timestamp("us")),
            "b": pa.array([None if r[0] is None else r[0] > 0 for r in rows], pa.bool_()),
        }
    )


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-5, 5)),
            st.one_of(st.none(), st.text(max_size=5)),
            st.booleans(),
        ),
        max_size=300,
    ),
    st.integers(0, 40),
)
def test_filter_batch_matches_pyarrow(
    rows: list[tuple[int | None, str | None, bool]], offset: int
) -> None:
    """The Rust one-pass filter equals pyarrow's, over nested, nullable and sliced columns."""
    from icefloe import _native

    batch = _filter_batch_data(rows + [(1, "x", True)] * offset).slice(offset)
    keep = pa.array([r[2] for r in rows], pa.bool_())
    got = _native.filter_batch(batch, keep)
    assert got.schema == batch.schema
    assert got.equals(batch.filter(keep))


def test_filter_batch_errors_and_empty_schema() -> None:
    from icefloe import _native

    batch = pa.record_batch({"x": [1, 2, 3]})
    with pytest.raises(ValidationError, match="3 rows"):
        _native.filter_batch(batch, pa.array([True]))
    with pytest.raises(ValidationError, match="boolean"):
        _native.filter_batch(batch, pa.array([1, 2, 3]))
    no_cols = batch.select([])
    assert _native.filter_batch(no_cols, pa.array([True, False, True])).num_rows == 2

    # String offsets are checked on import (in bounds, in order); the bytes are copied as
    # whole values, never read as text, so they come back as they were, UTF-8 or not.
    def strings(offsets: list[int], data: bytes, t: pa.DataType | None = None) -> pa.Array:
        t = t or pa.string()
        width = pa.int64() if t in (pa.large_string(), pa.large_binary()) else pa.int32()
        buf = pa.array(offsets, width).buffers()[1]
        return pa.Array.from_buffers(t, 2, [None, buf, pa.py_buffer(data)])

    raw = strings([0, 1, 2], b"\xff\xfe")
    got = _native.filter_batch(pa.record_batch({"s": raw}), pa.array([False, True]))
    assert got.column(0).buffers()[2].to_pybytes() == b"\xfe"
    for t in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
        bad = strings([0, 2, 1], b"ab", t)  # the second value ends before it starts
        for call in (
            lambda b: _native.filter_batch(b, pa.array([True, False])),
            lambda b: _native.decode_dictionaries(b, []),
        ):
            with pytest.raises(ValidationError, match=r"(?i)offset"):
                call(pa.record_batch({"s": bad}))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.integers(-100, 100)), max_size=400),
    st.lists(st.integers(0, 9), max_size=400),
    st.integers(0, 70),
    st.integers(0, 70),
)
def test_filter_batch_mostly_kept_matches_pyarrow(
    values: list[int | None], drops: list[int], offset: int, mask_offset: int
) -> None:
    """Masks keeping most rows take the word-by-word compaction of fixed-width columns
    (primitives of every width, booleans, dictionary keys); it equals pyarrow's filter, also
    for sliced columns and sliced masks, and leaves other columns to the general filter."""
    from icefloe import _native

    n = len(values)
    keep_list = [(drops[i] if i < len(drops) else 1) != 0 for i in range(n)]
    padded = [7] * offset + values
    batch = pa.record_batch(
        {
            "i8": pa.array(padded, pa.int8()),
            "i16": pa.array(padded, pa.int16()),
            "i32": pa.array(padded, pa.int32()),
            "i64": pa.array(padded, pa.int64()),
            "u64": pa.array([None if v is None else v + 100 for v in padded], pa.uint64()),
            "f32": pa.array(padded, pa.float32()),
            "date": pa.array(padded, pa.int32()).cast(pa.date32()),
            "dec": pa.array(padded, pa.int64()).cast(pa.decimal128(22, 2)),
            "dec256": pa.array(padded, pa.int64()).cast(pa.decimal256(40, 1)),
            "b": pa.array([None if v is None else v % 3 == 0 for v in padded], pa.bool_()),
            "d": pa.array([None if v is None else str(v % 5) for v in padded]).dictionary_encode(),
            "s": pa.array([None if v is None else str(v) for v in padded], pa.string()),
            "dense": pa.array([0 if v is None else v for v in padded], pa.int64()),
        }
    ).slice(offset)
    keep = pa.array([True] * mask_offset + keep_list, pa.bool_()).slice(mask_offset)
    got = _native.filter_batch(batch, keep)
    assert got.schema == batch.schema
    want = batch.filter(keep)
    assert got.equals(want)
    for col in got.columns:
        col.validate(full=True)
    # Null entries in the mask drop the row (the general path).
    if n:
        with_null = pa.array([None, *keep_list[1:]], pa.bool_())
        assert _native.filter_batch(batch, with_null).equals(batch.filter(with_null))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 5000)), max_size=300),
    st.sampled_from([pa.string(), pa.large_string()]),
    st.integers(0, 5),
)
def test_position_index_of_dictionary_paths_equals_plain(
    rows: list[tuple[str, int]], value_type: pa.DataType, cut: int
) -> None:
    """``file_path`` read as a dictionary (as position delete files are read) indexes the
    same positions per data file as the plain strings, sliced or not."""
    paths = pa.array([f"s3://b/{p}.parquet" for p, _ in rows], value_type)
    pos = pa.array([p for _, p in rows], pa.int64())
    plain = pa.record_batch({"file_path": paths, "pos": pos}).slice(cut)
    encoded = pa.record_batch({"file_path": paths.dictionary_encode(), "pos": pos}).slice(cut)
    want, got = PositionDeleteIndex.from_batches(plain), PositionDeleteIndex.from_batches(encoded)
    assert got.paths() == want.paths()
    for path in want.paths():
        assert got.get(path) == want.get(path)
    assert got.cardinality == want.cardinality


def test_position_index_refuses_null_dictionary_paths() -> None:
    paths = pa.DictionaryArray.from_arrays(pa.array([0, None], pa.int32()), pa.array(["a"]))
    batch = pa.record_batch({"file_path": paths, "pos": pa.array([1, 2], pa.int64())})
    with pytest.raises(ValidationError, match="row 1 has a null file_path"):
        PositionDeleteIndex.from_batches(batch)
