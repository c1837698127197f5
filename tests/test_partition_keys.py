"""Partition keys of manifest entries (:func:`icefloe.scan.manifests.partition_keys`, on Rust's
``plan_partition_keys``): two entries get the same key exactly when they have the same spec id and
equal partition tuples. The oracle is the former pure-pyarrow implementation (values cast to
strings, nulls marked), kept here."""

from __future__ import annotations

import datetime as dt
import decimal
import struct

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.scan.manifests import partition_keys

TYPES = {
    "int": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "long": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "bool": (pa.bool_(), st.booleans()),
    "double": (pa.float64(), st.floats(allow_nan=False, width=64)),
    "string": (pa.string(), st.text(max_size=4)),
    "binary": (pa.binary(), st.binary(max_size=4)),
    "date": (pa.date32(), st.dates(dt.date(1900, 1, 1), dt.date(2100, 1, 1))),
    "ts": (pa.timestamp("us"), st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1))),
    "decimal": (
        pa.decimal128(9, 2),
        st.decimals(-(10**6), 10**6, places=2, allow_nan=False, allow_infinity=False),
    ),
}


def _oracle(batch: pa.RecordBatch, spec_id: int) -> list[bytes]:
    pieces: list[pa.Array] = [pa.array([str(spec_id).encode()] * batch.num_rows, pa.binary())]
    part = batch.column("partition")
    for i in range(part.type.num_fields):
        col = pc.struct_field(part, [i])
        if not (pa.types.is_binary(col.type) or pa.types.is_fixed_size_binary(col.type)):
            col = pc.cast(col, pa.string())
        col = pc.cast(col, pa.binary())
        marked = pc.binary_join_element_wise(pa.scalar(b"v"), col, b"")
        pieces.append(pc.fill_null(marked, pa.scalar(b"n", pa.binary())))
    keys: list[bytes] = pc.binary_join_element_wise(*pieces, b"\x1f").to_pylist()
    return keys


@st.composite
def batches(draw: st.DrawFn) -> pa.RecordBatch:
    names = draw(st.lists(st.sampled_from(sorted(TYPES)), max_size=3))
    n = draw(st.integers(0, 12))
    columns = {}
    for i, name in enumerate(names):
        arrow_type, values = TYPES[name]
        # few distinct values, so that equal tuples occur
        pool = draw(st.lists(st.none() | values, min_size=1, max_size=3))
        picked = [draw(st.sampled_from(pool)) for _ in range(n)]
        if name == "decimal":
            picked = [None if v is None else decimal.Decimal(v) for v in picked]
        columns[f"p{i}"] = pa.array(picked, arrow_type)
    part = (
        pa.StructArray.from_arrays(list(columns.values()), names=list(columns))
        if columns
        else pa.array([{}] * n, pa.struct([]))
    )
    return pa.RecordBatch.from_arrays([part], names=["partition"])


@settings(max_examples=200, deadline=None)
@given(batches(), st.integers(0, 1000))
def test_equal_keys_exactly_for_equal_tuples(batch: pa.RecordBatch, spec_id: int) -> None:
    got = partition_keys(batch, spec_id).to_pylist()
    expected = _oracle(batch, spec_id)
    n = batch.num_rows
    for i in range(n):
        for j in range(n):
            assert (got[i] == got[j]) == (expected[i] == expected[j]), (i, j)


@given(batches())
def test_specs_never_share_keys(batch: pa.RecordBatch) -> None:
    a = set(partition_keys(batch, 1).to_pylist())
    b = set(partition_keys(batch, 257).to_pylist())
    assert not a & b


def test_the_spec_id_comes_from_the_batch_metadata() -> None:
    part = pa.StructArray.from_arrays([pa.array([1, 1])], names=["x"])
    batch = pa.RecordBatch.from_arrays([part], names=["partition"]).replace_schema_metadata(
        {b"partition-spec-id": b"7"}
    )
    assert partition_keys(batch).equals(partition_keys(batch, 7))
    assert not partition_keys(batch).equals(partition_keys(batch, 0))


def _double(bits: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", bits))[0])


def test_every_nan_is_one_partition_value_and_signed_zeros_two() -> None:
    """Java compares partition doubles by ``doubleToLongBits``: NaNs of any payload (numpy's
    ``inf - inf`` sets the sign bit) are equal, -0.0 and 0.0 are not."""
    nans = [float("nan"), _double(0xFFF8000000000000), _double(0x7FF0000000000001)]
    for t in (pa.float64(), pa.float32()):
        part = pa.StructArray.from_arrays([pa.array([*nans, 0.0, -0.0, 1.0], t)], names=["f"])
        keys = partition_keys(pa.RecordBatch.from_arrays([part], names=["partition"]), 0)
        got = keys.to_pylist()
        assert got[0] == got[1] == got[2], t
        assert len({got[0], got[3], got[4], got[5]}) == 4, t
