"""Deletion vectors: the 64-bit Roaring portable format and the deletion-vector-v1 blob."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.deletes import MAX_POSITION, DeletionVector
from icefloe.exceptions import CorruptFileError, ValidationError
from support.testdata import TESTDATA

GOLDEN = TESTDATA / "iceberg-java"
DELETES = GOLDEN / "deletes"


K1 = 1 << 32
M = (1 << 31) - 1
ALL_CONTAINERS = sorted(
    [5, 7, *range(65537, 66536), *range(131073, 196607)]
    + [K1 + 10, K1 + 20]
    + [K1 + 65536 + p for p in range(10, 500)]
    + [K1 + 131072 + p for p in range(1, 65535)]
)

# spec-facts.md §1.4: every DV golden file and the positions the Java test wrote into it.
DV_GOLDEN = {
    "empty-position-index.bin": [],
    "small-alternating-values-position-index.bin": [1, 3, 5, 7, 9],
    "small-and-large-values-position-index.bin": [100, 101, M + 100, M + 101],
    "all-container-types-position-index.bin": ALL_CONTAINERS,
}


@pytest.mark.parametrize("name", sorted(DV_GOLDEN))
def test_golden_dv_blobs_decode_and_reencode_byte_for_byte(name: str) -> None:
    blob = (DELETES / name).read_bytes()
    expected = DV_GOLDEN[name]
    dv = DeletionVector.from_blob(blob, expected_cardinality=len(expected))
    assert dv.positions().to_pylist() == expected
    assert dv.cardinality == len(expected)
    assert DeletionVector.from_positions(expected).to_blob() == blob


def test_golden_roaring_examples() -> None:
    assert DeletionVector.from_roaring((DELETES / "64mapempty.bin").read_bytes()).cardinality == 0
    vals = DeletionVector.from_roaring((DELETES / "64map32bitvals.bin").read_bytes())
    assert vals.positions().to_pylist() == list(range(10))
    spread = (DELETES / "64mapspreadvals.bin").read_bytes()
    positions = DeletionVector.from_roaring(spread).positions().to_pylist()
    # Independent oracle: walk the file's keys and 32-bit bitmaps with pyroaring.
    pyroaring = pytest.importorskip("pyroaring")
    (count,) = struct.unpack_from("<Q", spread, 0)
    off, expected = 8, []
    for _ in range(count):
        (key,) = struct.unpack_from("<I", spread, off)
        bm = pyroaring.BitMap.deserialize(spread[off + 4 :])
        off += 4 + len(bm.serialize())
        expected.extend((key << 32) | v for v in bm)
    assert off == len(spread)
    assert positions == expected and len(expected) > 0


def _roaring(keys_and_values: list[tuple[int, list[int]]]) -> bytes:
    pyroaring = pytest.importorskip("pyroaring")
    out = struct.pack("<Q", len(keys_and_values))
    for key, values in keys_and_values:
        out += struct.pack("<I", key) + pyroaring.BitMap(values).serialize()
    return out


def test_rejects_keys_beyond_supported_range() -> None:
    # Like Java's rejection of Roaring's 64maphighvals.bin: key > Integer.MAX_VALUE - 1.
    assert DeletionVector.from_roaring(_roaring([(2**31 - 2, [1])])).positions().to_pylist() == [
        ((2**31 - 2) << 32) | 1
    ]
    for key in (2**31 - 1, 2**31, 2**32 - 1):
        with pytest.raises(CorruptFileError, match="Invalid unsigned key"):
            DeletionVector.from_roaring(_roaring([(0, [1]), (key, [1])]))


def test_rejects_unordered_keys_and_accepts_empty_bitmaps() -> None:
    with pytest.raises(CorruptFileError, match="ascending"):
        DeletionVector.from_roaring(_roaring([(3, [1]), (2, [1])]))
    with pytest.raises(CorruptFileError, match="ascending"):
        DeletionVector.from_roaring(_roaring([(3, [1]), (3, [2])]))
    dv = DeletionVector.from_roaring(_roaring([(0, []), (1, [4]), (2, [])]))
    assert dv.positions().to_pylist() == [K1 + 4]


def test_position_range_checks() -> None:
    assert DeletionVector.from_positions([MAX_POSITION]).positions().to_pylist() == [MAX_POSITION]
    with pytest.raises(ValidationError, match="out of range"):
        DeletionVector.from_positions([MAX_POSITION + 1])
    with pytest.raises(ValidationError, match="negative"):
        DeletionVector.from_positions([-1])
    with pytest.raises(ValidationError):
        DeletionVector.from_positions(pa.array([1, None], pa.int64()))


def _crc_fix(blob: bytearray) -> bytes:
    blob[-4:] = struct.pack(">I", zlib.crc32(bytes(blob[4:-4])))
    return bytes(blob)


@pytest.mark.parametrize("kind", ["crc", "magic", "length", "truncate", "bitmap", "cardinality"])
def test_corrupt_blobs_raise_corrupt_file_error(kind: str) -> None:
    blob = bytearray(DeletionVector.from_positions([1, 2, 70000, K1 + 3]).to_blob())
    expected_cardinality = None
    if kind == "crc":
        blob[-1] ^= 1
    elif kind == "magic":
        blob[5] ^= 0xFF
        blob = bytearray(_crc_fix(blob))
    elif kind == "length":
        blob[3] += 1
    elif kind == "truncate":
        blob = blob[:-5]
    elif kind == "bitmap":
        blob[20] ^= 0x55  # inside the first 32-bit bitmap's header; CRC recomputed
        blob = bytearray(_crc_fix(blob))
    else:
        expected_cardinality = 5
    with pytest.raises(CorruptFileError):
        DeletionVector.from_blob(bytes(blob), expected_cardinality=expected_cardinality)


def test_invalid_crc_message_matches_java_vector() -> None:
    blob = bytearray(DeletionVector.from_positions([1, 2]).to_blob())
    assert blob[-4:] == bytes.fromhex("712fa6e8")
    blob[-1] ^= 1
    with pytest.raises(CorruptFileError, match="0x712fa6e8, expected 0x712fa6e9"):
        DeletionVector.from_blob(bytes(blob))


def test_every_flipped_byte_is_detected() -> None:
    blob = DeletionVector.from_positions([0, 9, 4000, 70000, K1 + 1]).to_blob()
    for i in range(len(blob)):
        bad = bytearray(blob)
        bad[i] ^= 0x10
        with pytest.raises(CorruptFileError):
            DeletionVector.from_blob(bytes(bad))
    for n in range(len(blob)):
        with pytest.raises(CorruptFileError):
            DeletionVector.from_blob(blob[:n])


def test_inputs_numpy_unsorted_duplicates_and_union() -> None:
    arr = np.array([9, 3, 3, K1 * 5, 0], dtype=np.int64)
    dv = DeletionVector.from_positions(arr)
    assert dv.positions().to_pylist() == [0, 3, 9, K1 * 5]
    assert 3 in dv and 4 not in dv and len(dv) == 4
    merged = dv.union(DeletionVector.from_positions([4, K1 * 7]))
    assert merged.positions().to_pylist() == [0, 3, 4, 9, K1 * 5, K1 * 7]
    assert dv.cardinality == 4  # union does not mutate
    assert dv.union([1]) == DeletionVector.from_positions([0, 1, 3, 9, K1 * 5])


# Positions spread over many high keys and all container kinds: sparse arrays, dense ranges
# (bitmap containers and runs), and values near the top of the supported range.
_key = st.one_of(st.integers(0, 3), st.integers(0, 2**31 - 2))
_chunk = st.tuples(
    _key,
    st.integers(0, 15),  # 16-bit container key within the 32-bit bitmap
    st.one_of(
        st.lists(st.integers(0, 65535), max_size=50),  # array container
        st.tuples(st.integers(0, 60000), st.integers(1, 5000)).map(
            lambda t: list(range(t[0], t[0] + t[1]))  # run container
        ),
        st.integers(0, 2**32 - 1).map(
            lambda seed: np.random.default_rng(seed).choice(65536, 6000, replace=False).tolist()
        ),  # bitmap container
    ),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_chunk, max_size=8))
def test_round_trip_random_position_sets(chunks: list[tuple[int, int, list[int]]]) -> None:
    positions = {
        (key << 32) | (hi << 16) | lo
        for key, hi, los in chunks
        for lo in los
        if ((key << 32) | (hi << 16) | lo) <= MAX_POSITION
    }
    expected = sorted(positions)
    dv = DeletionVector.from_positions(np.array(list(positions), dtype=np.int64))
    assert dv.positions().to_pylist() == expected
    assert dv.last == (expected[-1] if expected else None)
    back = DeletionVector.from_blob(dv.to_blob(), expected_cardinality=len(expected))
    assert back == dv
    assert back.positions().to_pylist() == expected
    assert DeletionVector.from_roaring(dv.to_roaring()) == dv


@pytest.fixture(scope="module")
def pyiceberg_dv() -> object:
    return pytest.importorskip("pyiceberg.table.deletion_vector")


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2**32 - 1)), max_size=300))
def test_pyiceberg_decodes_icefloe_blobs(
    pyiceberg_dv: object, pairs: list[tuple[int, int]]
) -> None:
    mod = pyiceberg_dv
    positions = sorted({(k << 32) | lo for k, lo in pairs} | {5, 6, 7, 8, 9, 10, 11, 12, 13, 14})
    blob = DeletionVector.from_positions(positions).to_blob()
    payload = mod._extract_vector_payload(blob)  # type: ignore[attr-defined]
    bitmaps = mod.DeletionVector._deserialize_bitmap(payload)  # type: ignore[attr-defined]
    theirs = mod.DeletionVector("f", bitmaps).to_vector().to_pylist()  # type: ignore[attr-defined]
    assert theirs == positions


def test_read_at_content_offset_and_size() -> None:
    dv = DeletionVector.from_positions([3, 4, K1])
    blob = dv.to_blob()
    data = b"x" * 17 + blob + b"tail"
    assert DeletionVector.read_at(data, 17, len(blob), 3) == dv
    with pytest.raises(CorruptFileError):
        DeletionVector.read_at(data, 17, len(blob), 2)
    with pytest.raises(CorruptFileError):
        DeletionVector.read_at(data, 16, len(blob))
    with pytest.raises(CorruptFileError, match="outside"):
        DeletionVector.read_at(data, 17, len(data))


def test_key_gaps_are_written_as_empty_bitmaps_as_java_writes_them() -> None:
    """Java's RoaringPositionBitmap writes every key from 0 to the largest, an empty bitmap
    for a key without positions: the guide's example blob is byte-identical to Java's."""
    blob = DeletionVector.from_positions([1, 5, 1 << 33]).to_blob()
    assert len(blob) == 78
    (length,) = struct.unpack(">I", blob[:4])
    bitmap = blob[8 : 4 + length]
    assert struct.unpack("<Q", bitmap[:8]) == (3,)  # keys 0, 1 (empty) and 2
    one = DeletionVector.from_positions([1, 5]).to_blob()
    first = one[20 : 4 + struct.unpack(">I", one[:4])[0]]  # key 0's bitmap, after its key
    empty = b"\x3a\x30\x00\x00\x00\x00\x00\x00"  # cookie and no containers
    rest = bitmap[12 + len(first) :]
    assert rest[:12] == struct.pack("<I", 1) + empty
    assert zlib.crc32(blob[4:-4]) == struct.unpack(">I", blob[-4:])[0]
    assert DeletionVector.from_blob(blob).positions().to_pylist() == [1, 5, 1 << 33]
