"""Puffin reader and writer against the Java golden files, PyIceberg and corrupt inputs."""

from __future__ import annotations

import json
import os
import struct

import pytest

from icefloe.deletes import DeletionVector
from icefloe.exceptions import CorruptFileError, UnsupportedFeatureError, ValidationError
from icefloe.puffin import (
    DELETION_VECTOR_V1,
    ROW_POSITION_FIELD_ID,
    BlobMetadata,
    PuffinReader,
    PuffinWriter,
)
from support.testdata import TESTDATA

PUFFIN = TESTDATA / "iceberg-java" / "puffin"


BLOB2 = "some blob \u0000 binary data 🤯 that is not very very very very very very long, is it?"


def test_empty_golden_file() -> None:
    data = (PUFFIN / "empty-puffin-uncompressed.bin").read_bytes()
    r = PuffinReader(data)
    assert r.blobs == ()
    assert r.properties == {}
    assert r.footer_size == 28
    assert PuffinWriter().finish().data == data


@pytest.mark.parametrize(
    ("name", "codec", "lengths"),
    [
        ("sample-metric-data-uncompressed.bin", None, (9, 83)),
        ("sample-metric-data-compressed-zstd.bin", "zstd", (22, 77)),
    ],
)
def test_sample_golden_files(name: str, codec: str | None, lengths: tuple[int, int]) -> None:
    data = (PUFFIN / name).read_bytes()
    r = PuffinReader(data)
    assert r.properties == {"created-by": "Test 1234"}
    assert r.blobs == (
        BlobMetadata("some-blob", (1,), 2, 1, 4, lengths[0], codec, {}),
        BlobMetadata("some-other-blob", (2,), 2, 1, 4 + lengths[0], lengths[1], codec, {}),
    )
    assert r.read_blob(0) == b"abcdefghi"
    assert r.read_blob(r.blobs[1]) == BLOB2.encode()
    # Independent oracle: PyIceberg's reader sees the same blobs.
    pyi = pytest.importorskip("pyiceberg.table.puffin")
    theirs = pyi.PuffinFile(data)
    assert [(b.type, b.offset, b.length) for b in theirs.footer.blobs] == [
        (b.type, b.offset, b.length) for b in r.blobs
    ]
    assert [theirs.get_blob_payload(b) for b in theirs.footer.blobs] == [
        r.read_blob(0),
        r.read_blob(1),
    ]


def test_writer_reproduces_java_file_byte_for_byte() -> None:
    w = PuffinWriter()
    w.add_blob(b"abcdefghi", "some-blob", [1], 2, 1)
    w.add_blob(BLOB2.encode(), "some-other-blob", [2], 2, 1)
    out = w.finish({"created-by": "Test 1234"})
    assert out.data == (PUFFIN / "sample-metric-data-uncompressed.bin").read_bytes()


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
@pytest.mark.parametrize("compress_footer", [False, True])
def test_compressed_round_trip(codec: str, compress_footer: bool) -> None:
    payload = b"0123456789" * 1000
    w = PuffinWriter()
    meta = w.add_blob(payload, "t", [3, 4], 10, 11, codec, {"ndv": "10"})
    assert meta.compression_codec == codec and meta.length < len(payload)
    f = w.finish({"created-by": "icefloe"}, compress_footer=compress_footer)
    r = PuffinReader(f.data)
    assert r.blobs == f.blobs == (meta,)
    assert r.read_blob(0) == payload
    assert r.properties == {"created-by": "icefloe"}
    flags = struct.unpack_from("<I", f.data, len(f.data) - 8)[0]
    assert flags == (1 if compress_footer else 0)
    if codec == "zstd" and not compress_footer:
        pyi = pytest.importorskip("pyiceberg.table.puffin")
        theirs = pyi.PuffinFile(f.data)
        assert theirs.get_blob_payload(theirs.footer.blobs[0]) == payload


def test_deletion_vector_blobs_and_pyiceberg_interop() -> None:
    dvs = {
        "s3://bucket/data/a.parquet": DeletionVector.from_positions([0, 5, 7, 1 << 32]),
        "s3://bucket/data/b.parquet": DeletionVector.from_positions(range(0, 100_000, 3)),
    }
    w = PuffinWriter()
    metas = {path: w.add_deletion_vector(dv, path) for path, dv in dvs.items()}
    f = w.finish({"created-by": "icefloe test"})
    for path, meta in metas.items():
        assert meta.type == DELETION_VECTOR_V1
        assert meta.fields == (ROW_POSITION_FIELD_ID,)
        assert (meta.snapshot_id, meta.sequence_number) == (-1, -1)
        assert meta.compression_codec is None
        assert meta.properties == {
            "referenced-data-file": path,
            "cardinality": str(dvs[path].cardinality),
        }
        # A DV is readable from content_offset / content_size_in_bytes alone.
        blob = f.data[meta.offset : meta.offset + meta.length]
        assert DeletionVector.from_blob(blob, dvs[path].cardinality) == dvs[path]
    r = PuffinReader(f.data)
    assert r.blobs == f.blobs
    assert [r.read_deletion_vector(i) for i in range(2)] == list(dvs.values())
    footer = json.loads(f.data[-(f.footer_size - 4) : -12])
    assert "compression-codec" not in footer["blobs"][0]
    assert f.footer_size == len(f.data) - (
        metas["s3://bucket/data/b.parquet"].offset + metas["s3://bucket/data/b.parquet"].length
    )
    pytest.importorskip("pyroaring")
    from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
    from pyiceberg.table.puffin import PuffinFile

    theirs = deletion_vectors_from_puffin_file(PuffinFile(f.data))
    assert {d.referenced_data_file: d.to_vector().to_pylist() for d in theirs} == {
        p: dv.positions().to_pylist() for p, dv in dvs.items()
    }


def test_dv_blobs_cannot_be_compressed() -> None:
    with pytest.raises(ValidationError):
        PuffinWriter().add_blob(b"x", DELETION_VECTOR_V1, [ROW_POSITION_FIELD_ID], -1, -1, "zstd")


def _file() -> bytes:
    w = PuffinWriter()
    w.add_blob(b"hello world", "t", [1], 1, 1)
    return w.finish({"created-by": "x"}).data


@pytest.mark.parametrize("where", ["head-magic", "tail-magic", "footer-magic", "size", "json"])
def test_corrupt_files_raise(where: str) -> None:
    data = bytearray(_file())
    n = len(data)
    size = struct.unpack_from("<i", data, n - 12)[0]
    idx = {
        "head-magic": 0,
        "tail-magic": n - 1,
        "footer-magic": n - 12 - size - 4,
        "size": n - 10,
        "json": n - 12 - size,
    }[where]
    data[idx] ^= 0xFF
    with pytest.raises(CorruptFileError):
        PuffinReader(bytes(data))


def test_truncated_files_and_bad_blob_ranges() -> None:
    data = _file()
    for cut in range(1, len(data)):
        # A cut that happens to end on the footer's opening magic reads blob bytes as flags.
        with pytest.raises((CorruptFileError, UnsupportedFeatureError)):
            PuffinReader(data[:-cut])
    w = PuffinWriter()
    w.add_blob(b"x", "t", [1], 1, 1)
    f = w.finish()
    r = PuffinReader(f.data)
    bad = BlobMetadata("t", (1,), 1, 1, 4, 10_000)
    with pytest.raises(CorruptFileError):
        r.read_blob(bad)


def test_unknown_flags_and_codecs() -> None:
    data = bytearray(_file())
    data[-7] = 1  # a reserved flag bit
    with pytest.raises(UnsupportedFeatureError):
        PuffinReader(bytes(data))
    with pytest.raises(UnsupportedFeatureError):
        PuffinWriter().add_blob(b"x", "t", [1], 1, 1, "snappy")


def test_text_utf8_cannot_hold_is_a_validation_error() -> None:
    """A lone surrogate (``os.fsdecode`` of a file name in another encoding) in any text the
    footer holds raised a bare ``UnicodeEncodeError`` from the native writer."""
    from icefloe.deletes import DeletionVector, PositionDeleteIndex
    from icefloe.exceptions import ValidationError

    path = os.fsdecode(b"/data/caf\xe9.parquet")
    dv = DeletionVector.from_positions([1])
    for call in (
        lambda: PuffinWriter().add_deletion_vector(dv, path),
        lambda: PuffinWriter().add_blob(b"x", "t\udc80", [1]),
        lambda: PuffinWriter().add_blob(b"x", "t", [1], properties={"a": "\udc80"}),
        lambda: PuffinWriter().finish({"created-by": "\ud800"}),
    ):
        with pytest.raises(ValidationError, match="lone surrogate"):
            call()
    assert PositionDeleteIndex().get(path) is None
