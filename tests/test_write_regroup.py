"""The native gather of a partitioned write's rows (``icefloe.write.regroup``) against pyarrow's
``take``: the same values, types and nulls, for every type it takes and for the ones it leaves
to pyarrow."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe import _native
from icefloe.exceptions import IcebergError
from icefloe.write import regroup as regroup_module
from icefloe.write.regroup import native_takeable, regroup, take_rows


@pytest.fixture(autouse=True)
def _small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regroup_module, "MIN_NATIVE_ROWS", 1)  # the native path on small tables too


def _assert_same(got: pa.Table, want: pa.Table) -> None:
    assert got.schema == want.schema
    assert got.equals(want)
    for col in got.columns:
        for chunk in col.chunks:
            chunk.validate(full=True)


def _check(table: pa.Table, idx: pa.Array, threads: int = 2) -> pa.Table:
    got = take_rows(table, idx, threads)
    _assert_same(got, table.take(idx))
    return got


def _wide(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    ints = rng.integers(-(2**40), 2**40, n)
    words = [f"word-{i}" * (i % 5) for i in range(30)]
    mask = rng.random(n) < 0.2
    return pa.table(
        {
            "l": pa.array(ints, mask=mask),
            "i": pa.array(ints.astype(np.int32)),
            "x": pa.array(rng.random(n)),
            "b": pa.array(rng.random(n) < 0.5),
            "s": pa.array([words[k % 30] if k % 11 else None for k in range(n)]),
            "long_s": pa.array(["v" * (k % 70) for k in range(n)], pa.large_string()),
            "bin": pa.array([bytes([k % 256]) * (k % 19) for k in range(n)], pa.binary()),
            "fixed": pa.array([k.to_bytes(16, "little") for k in range(n)], pa.binary(16)),
            "dec": pa.array([Decimal(k) / 100 for k in range(n)], pa.decimal128(12, 2)),
            "ts": pa.array(ints, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            "d": pa.array([dt.date(2024, 1, 1 + k % 28) for k in range(n)]),
            "st": pa.array(
                [{"a": k, "b": None if k % 3 else str(k)} for k in range(n)],
                pa.struct([("a", pa.int64()), ("b", pa.string())]),
            ),
            "li": pa.array([[k, None, k + 1][: k % 4] for k in range(n)], pa.list_(pa.int32())),
            "m": pa.array(
                [[(str(k), k)] * (k % 3) for k in range(n)], pa.map_(pa.string(), pa.int64())
            ),
            "dict": pa.array([words[k % 30] for k in range(n)]).dictionary_encode(),
        }
    )


def test_every_type_matches_pyarrow_take() -> None:
    table = _wide(40_000)  # pieces of at least 16,384 rows: three of them
    idx = pa.array(np.random.default_rng(1).permutation(40_000))
    assert all(native_takeable(f.type) for f in table.schema)
    got = _check(table, idx, threads=3)
    assert got.column("s").num_chunks == 3  # one chunk per piece, nothing concatenated


def test_chunked_sliced_and_repeated_rows() -> None:
    table = _wide(3_000)
    chunked = pa.concat_tables([table.slice(0, 1_000), table.slice(1_000, 500), table.slice(1_500)])
    idx = pa.array([2_999, 0, 0, 1_499, 1_500, 2_999] * 100, pa.int64())
    _check(chunked, idx)
    _check(table.slice(100, 2_000), pa.array([1_999, 0, 1_000], pa.int32()))


def test_other_types_go_to_pyarrow() -> None:
    uuid = pa.uuid()
    table = pa.table(
        {
            "u": pa.ExtensionArray.from_storage(uuid, pa.array([bytes(16)] * 4, pa.binary(16))),
            "s": pa.array(["w", "x", "y", "z"]),
        }
    )
    assert not native_takeable(uuid)
    assert not native_takeable(pa.string_view())
    assert not native_takeable(pa.list_(uuid))
    _check(table, pa.array([3, 1, 1, 0]))


def test_bad_indices_are_typed_errors() -> None:
    arr = pa.array(["a", "b"])
    with pytest.raises(IcebergError, match="out of range"):
        _native.take_arrays([arr], pa.array([0, 2], pa.uint64()), 2)
    with pytest.raises(IcebergError, match="uint64"):
        _native.take_arrays([arr], pa.array([0, 1], pa.int32()), 2)
    with pytest.raises(IcebergError, match="nulls"):
        _native.take_arrays([arr], pa.array([0, None], pa.uint64()), 2)
    with pytest.raises(IcebergError, match="differ in length"):
        _native.take_arrays([arr, pa.array([1])], pa.array([0], pa.uint64()), 2)


_CELL: Any = st.one_of(st.none(), st.text(max_size=40))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(_CELL, st.one_of(st.none(), st.binary(max_size=20))), max_size=80),
    st.data(),
    st.integers(1, 5),
)
def test_strings_match_pyarrow_take(rows: list[tuple[Any, Any]], data: Any, threads: int) -> None:
    table = pa.table(
        {
            "s": pa.array([r[0] for r in rows], pa.string()),
            "b": pa.array([r[1] for r in rows], pa.large_binary()),
        }
    )
    n = len(rows)
    picks = data.draw(st.lists(st.integers(0, n - 1), max_size=120)) if n else []
    start = data.draw(st.integers(0, n))
    sliced = table.slice(start)
    picks = [p for p in picks if p < sliced.num_rows]
    _check(sliced, pa.array(picks, pa.int64()), threads)


def _check_regroup(table: pa.Table, key: pa.Array) -> None:
    got, bounds, firsts = regroup(table, key, 2)
    order = pc.sort_indices(key)  # stable
    _assert_same(got, table.take(order))
    sorted_keys = key.take(order).to_pylist()
    assert [sorted_keys[s] for s, _ in bounds] == sorted(set(key.to_pylist()))
    assert all(len(set(sorted_keys[s:e])) == 1 for s, e in bounds)
    assert bounds[-1][1] == table.num_rows if bounds else table.num_rows == 0
    keys = key.to_pylist()
    assert firsts.to_pylist() == [keys.index(sorted_keys[s]) for s, _ in bounds]


def test_regroup_matches_a_take_of_the_stable_sort() -> None:
    n = 6_000
    table = _wide(n)
    rng = np.random.default_rng(3)
    _check_regroup(table, pa.array(rng.integers(0, 30, n)))
    _check_regroup(table, pa.array(rng.integers(0, 480, n) * 7))  # gaps between keys
    _check_regroup(table.slice(1_000, 50), pa.array(rng.integers(0, 3, 50)))
    _check_regroup(table, pa.array(np.zeros(n, dtype=np.int64)))
    # keys far above the row count are made dense first; the order is kept
    _check_regroup(table.slice(0, 100), pa.array(rng.integers(0, 4, 100) * 2**40))


def test_regroup_leaves_other_types_to_pyarrow() -> None:
    uuid = pa.uuid()
    table = pa.table(
        {
            "u": pa.ExtensionArray.from_storage(
                uuid, pa.array([bytes([k]) * 16 for k in range(6)], pa.binary(16))
            ),
            "s": pa.array(["a", "b", None, "d", "e", "f"]),
        }
    )
    _check_regroup(table, pa.array([2, 0, 1, 0, 2, 1]))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 6),
            _CELL,
            st.one_of(st.none(), st.booleans()),
            st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
        ),
        min_size=1,
        max_size=80,
    ),
    st.integers(0, 5),
)
def test_regroup_property(rows: list[tuple[Any, ...]], start: int) -> None:
    table = pa.table(
        {
            "s": pa.array([r[1] for r in rows], pa.string()),
            "b": pa.array([r[2] for r in rows], pa.bool_()),
            "l": pa.array([r[3] for r in rows], pa.int64()),
        }
    )
    key = pa.array([r[0] for r in rows], pa.int64())
    start = min(start, len(rows) - 1)
    _check_regroup(table.slice(start), key.slice(start))
