"""Delta deletion vectors as Iceberg ``deletion-vector-v1`` blobs.

A Delta DV stored in a file (``u``: a Z85-encoded UUID under the table root, ``p``: an absolute
path) sits at ``offset`` as ``[u32 BE size][magic + portable 64-bit Roaring][u32 BE CRC-32]``:
byte for byte an Iceberg ``deletion-vector-v1`` blob. An inline DV (``i``) holds the middle part
Z85-encoded in the log and is framed here. Every blob is checked (length, magic, CRC,
cardinality) before it is used: a bad one is a :class:`~icefloe.exceptions.DeltaLogError`
naming the DV file.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from dataclasses import dataclass
from urllib.parse import unquote

from icefloe.deletes import DeletionVector
from icefloe.exceptions import (
    CorruptFileError,
    DeltaLogError,
    NotFoundError,
    UnsupportedFeatureError,
)
from icefloe.io import FileIO

__all__ = ["DeltaDV", "dv_file_path", "read_dv_blobs", "z85_decode"]

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(_Z85)}


def z85_decode(text: str) -> bytes:
    """Z85 (ZeroMQ RFC 32) decoding; ``text`` length must be a multiple of 5."""
    if len(text) % 5:
        raise ValueError(f"Z85 text length {len(text)} is not a multiple of 5")
    out = bytearray()
    for i in range(0, len(text), 5):
        v = 0
        for c in text[i : i + 5]:
            if c not in _Z85_INDEX:
                raise ValueError(f"{c!r} is not a Z85 character")
            v = v * 85 + _Z85_INDEX[c]
        if v > 0xFFFFFFFF:
            raise ValueError(f"Z85 group {text[i : i + 5]!r} overflows 32 bits")
        out += v.to_bytes(4, "big")
    return bytes(out)


@dataclass(frozen=True)
class DeltaDV:
    """One DV descriptor of a live file."""

    data_file: str  # absolute path of the data file it deletes from
    storage_type: str
    path_or_inline: str
    offset: int | None
    size_in_bytes: int
    cardinality: int

    @property
    def inline(self) -> bool:
        return self.storage_type == "i"


def dv_file_path(table_root: str, storage_type: str, path_or_inline: str) -> str:
    """Where a stored DV lives (``u``: ``<root>/<prefix>/deletion_vector_<uuid>.bin``; ``p``: the
    absolute path, URI-decoded as the protocol says of add and remove paths)."""
    if storage_type == "p":
        return unquote(path_or_inline)
    if storage_type != "u":
        raise UnsupportedFeatureError(f"Delta DV storage type {storage_type!r} has no file")
    prefix, encoded = path_or_inline[:-20], path_or_inline[-20:]
    try:
        u = uuid.UUID(bytes=z85_decode(encoded))
    except ValueError as e:
        raise DeltaLogError(f"malformed Delta DV path {path_or_inline!r}: {e}") from e
    base = f"{table_root.rstrip('/')}/{prefix}" if prefix else table_root.rstrip("/")
    return f"{base}/deletion_vector_{u}.bin"


def _frame(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))


def read_dv_blobs(
    io: FileIO, table_root: str, dvs: list[DeltaDV], file_sizes: dict[str, int] | None = None
) -> list[bytes]:
    """The checked ``deletion-vector-v1`` blob of each DV (each DV file read once); the length
    of each DV file read goes into ``file_sizes`` when given."""
    files: dict[str, bytes] = {}
    out: list[bytes] = []
    for dv in dvs:
        if dv.inline:
            try:
                blob = _frame(z85_decode(dv.path_or_inline)[: dv.size_in_bytes])
            except ValueError as e:
                raise DeltaLogError(f"malformed inline DV of {dv.data_file}: {e}") from e
            where = f"inline DV of {dv.data_file}"
        else:
            where = dv_file_path(table_root, dv.storage_type, dv.path_or_inline)
            if where not in files:
                try:
                    files[where] = io.new_input(where).read()
                except NotFoundError as e:
                    raise DeltaLogError(f"deletion vector file {where} is missing", where) from e
            data = files[where]
            start = dv.offset or 0
            blob = data[start : start + dv.size_in_bytes + 8]
            if len(blob) != dv.size_in_bytes + 8:
                raise DeltaLogError(
                    f"deletion vector file {where}: DV at offset {start} ({dv.size_in_bytes} "
                    f"bytes) lies outside the file ({len(data)} bytes)",
                    where,
                )
        try:
            DeletionVector.from_blob(blob, expected_cardinality=dv.cardinality)
        except CorruptFileError as e:
            raise DeltaLogError(
                f"corrupt deletion vector in {where} (for {dv.data_file}): {e}", where
            ) from e
        out.append(blob)
    if file_sizes is not None:
        file_sizes.update((where, len(data)) for where, data in files.items())
    return out
