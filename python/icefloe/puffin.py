"""Puffin files (``PFA1``): blobs plus a JSON footer, as Iceberg uses them for statistics and
deletion vectors.

Bytes in, bytes out: reading and writing files is the caller's job (``icefloe.io``). The codec
runs in Rust; this module gives it a typed API, refusing bad arguments with
:class:`~icefloe.exceptions.ValidationError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from icefloe import _native
from icefloe.exceptions import CorruptFileError, ValidationError

if TYPE_CHECKING:
    from icefloe.deletes import DeletionVector

__all__ = [
    "DELETION_VECTOR_V1",
    "ROW_POSITION_FIELD_ID",
    "BlobMetadata",
    "PuffinFile",
    "PuffinReader",
    "PuffinWriter",
]

DELETION_VECTOR_V1 = "deletion-vector-v1"
"""Blob type of a deletion vector."""
ROW_POSITION_FIELD_ID = 2147483645
"""Field id of ``_pos``, which a deletion vector's blob metadata lists in ``fields``."""

_BlobTuple = tuple[str, list[int], int, int, int, int, str | None, list[tuple[str, str]]]

_INT32_MAX = 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _int(value: object, what: str, lo: int, hi: int) -> int:
    """``value`` when it is an integer (not a bool) from ``lo`` to ``hi``."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValidationError(f"{what} must be an integer from {lo} to {hi}, got {value!r}")
    return value


#: A decimal integer as Java's ``Long.parseLong`` reads one: an optional sign and ASCII
#: digits, nothing else (no spaces, no ``_`` separators, no other scripts' digits).
_DECIMAL = re.compile(r"[+-]?[0-9]+")


def _cardinality(value: str | None, meta: BlobMetadata) -> int | None:
    """The ``cardinality`` property of a DV blob as a count (None when absent); any other
    text, a negative number or one beyond int64 is a :class:`CorruptFileError`."""
    if value is None:
        return None
    count = None
    # at most 19 significant digits (int64): a longer string is out of range, unconverted
    if (
        isinstance(value, str)
        and _DECIMAL.fullmatch(value)
        and len(value.lstrip("+-").lstrip("0")) <= 19
    ):
        count = int(value)
    if count is None or not 0 <= count <= _INT64_MAX:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise CorruptFileError(
            f"deletion vector blob at offset {meta.offset} has cardinality {shown}, "
            f"not a count from 0 to {_INT64_MAX}"
        )
    return count


def _bytes(value: object, what: str) -> bytes:
    """The bytes of a bytes-like ``value`` (bytes, bytearray, memoryview, any buffer)."""
    if isinstance(value, bytes):
        return value
    try:
        return bytes(memoryview(value))  # type: ignore[arg-type]
    except TypeError:
        raise ValidationError(f"{what} must be bytes, got {type(value).__name__}") from None


def _str_pairs(value: object, what: str) -> list[tuple[str, str]]:
    """The items of a str -> str mapping (None: empty)."""
    if value is None:
        return []
    if not isinstance(value, Mapping):
        raise ValidationError(
            f"{what} must be a mapping of strings to strings, got {type(value).__name__}"
        )
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ValidationError(
                f"{what} must map strings to strings, got {k!r}: {v!r} ({type(v).__name__})"
            )
        _utf8(k, what)
        _utf8(v, what)
    return list(value.items())


def _utf8(text: str, what: str) -> str:
    """``text`` if UTF-8 can hold it (the footer is UTF-8 JSON): a lone surrogate, as
    ``os.fsdecode`` makes of a file name in another encoding, is a :class:`ValidationError`."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{what}: {text!r} is not valid Unicode (a lone surrogate)") from None
    return text


def _field_ids(fields: object) -> list[int]:
    if isinstance(fields, str | bytes) or not isinstance(fields, Iterable):
        raise ValidationError(f"blob fields must be a sequence of field ids, got {fields!r}")
    return [_int(f, "a blob field id", 0, _INT32_MAX) for f in fields]


def _codec(codec: object) -> str | None:
    if codec is not None and not isinstance(codec, str):
        raise ValidationError(f"compression codec must be a string or None, got {codec!r}")
    return codec


@dataclass(frozen=True)
class BlobMetadata:
    """One blob's footer entry; ``offset``/``length`` locate its (possibly compressed) bytes.

    For a deletion vector these are the manifest entry's ``content_offset`` and
    ``content_size_in_bytes``.
    """

    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    compression_codec: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def _from_native(cls, t: _BlobTuple) -> BlobMetadata:
        return cls(t[0], tuple(t[1]), t[2], t[3], t[4], t[5], t[6], dict(t[7]))


@dataclass(frozen=True)
class PuffinFile:
    """A finished Puffin file: its bytes, its blobs' metadata and its footer size."""

    data: bytes
    blobs: tuple[BlobMetadata, ...]
    footer_size: int


class PuffinReader:
    """Reads a Puffin file held in memory. The footer is parsed and checked on construction.

    Raises :class:`icefloe.exceptions.CorruptFileError` for bad magic, sizes or JSON and
    :class:`icefloe.exceptions.UnsupportedFeatureError` for unknown flags or codecs.
    """

    def __init__(self, data: bytes) -> None:
        self._data = _bytes(data, "puffin file data")
        blobs, props, footer_size = _native.puffin_read_footer(self._data)
        self.blobs: tuple[BlobMetadata, ...] = tuple(BlobMetadata._from_native(b) for b in blobs)
        self.properties: dict[str, str] = dict(props)
        self.footer_size: int = footer_size
        """Size of the whole footer (magic + payload + trailer), as table statistics record."""

    def _blob(self, blob: object) -> BlobMetadata:
        """``blob`` itself, or the blob at that index (negative ones from the end)."""
        if isinstance(blob, BlobMetadata):
            _int(blob.offset, "blob offset", 0, _INT64_MAX)
            _int(blob.length, "blob length", 0, _INT64_MAX)
            _codec(blob.compression_codec)
            return blob
        n = len(self.blobs)
        if isinstance(blob, bool) or not isinstance(blob, int):
            raise ValidationError(f"a blob is a BlobMetadata or an index, got {blob!r}")
        if not -n <= blob < n:
            raise ValidationError(f"blob index {blob!r} is out of range: the file has {n} blobs")
        return self.blobs[blob]

    def read_blob(self, blob: BlobMetadata | int) -> bytes:
        """The decompressed bytes of ``blob`` (metadata or index into :attr:`blobs`)."""
        meta = self._blob(blob)
        return _native.puffin_read_blob(
            self._data, meta.offset, meta.length, meta.compression_codec
        )

    def read_deletion_vector(self, blob: BlobMetadata | int) -> DeletionVector:
        """Decodes a ``deletion-vector-v1`` blob, checking it against its ``cardinality``."""
        from icefloe.deletes import DeletionVector

        meta = self._blob(blob)
        if meta.type != DELETION_VECTOR_V1:
            raise ValidationError(f"blob at offset {meta.offset} is {meta.type!r}, not a DV")
        card = _cardinality(meta.properties.get("cardinality"), meta)
        return DeletionVector.from_blob(self.read_blob(meta), expected_cardinality=card)


class PuffinWriter:
    """Builds a Puffin file in memory; :meth:`finish` returns its bytes and blob metadata."""

    def __init__(self) -> None:
        self._w = _native.PuffinWriter()
        self._blobs: list[BlobMetadata] = []

    def add_blob(
        self,
        data: bytes,
        type: str,
        fields: Sequence[int],
        snapshot_id: int = -1,
        sequence_number: int = -1,
        compression_codec: str | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> BlobMetadata:
        """Appends a blob (compressed with ``"zstd"`` or ``"lz4"`` when asked). Field ids are
        32-bit and not negative, snapshot id and sequence number 64-bit (-1: none)."""
        payload = _bytes(data, "blob data")
        if not isinstance(type, str) or not type:
            raise ValidationError(f"blob type must be a non-empty string, got {type!r}")
        _utf8(type, "blob type")
        meta = BlobMetadata._from_native(
            self._w.add_blob(
                payload,
                type,
                _field_ids(fields),
                _int(snapshot_id, "blob snapshot id", _INT64_MIN, _INT64_MAX),
                _int(sequence_number, "blob sequence number", _INT64_MIN, _INT64_MAX),
                _codec(compression_codec),
                _str_pairs(properties, "blob properties"),
            )
        )
        self._blobs.append(meta)
        return meta

    def add_deletion_vector(self, dv: DeletionVector, referenced_data_file: str) -> BlobMetadata:
        """Appends a ``deletion-vector-v1`` blob with the metadata the spec requires."""
        from icefloe.deletes import DeletionVector

        if not isinstance(dv, DeletionVector):
            raise ValidationError(f"expected a DeletionVector, got {type(dv).__name__}")
        if not isinstance(referenced_data_file, str) or not referenced_data_file:
            raise ValidationError(
                f"referenced data file must be a non-empty string, got {referenced_data_file!r}"
            )
        _utf8(referenced_data_file, "referenced data file")
        meta = BlobMetadata._from_native(
            self._w.add_deletion_vector(dv._bitmap, referenced_data_file)
        )
        self._blobs.append(meta)
        return meta

    def finish(
        self, properties: Mapping[str, str] | None = None, compress_footer: bool = False
    ) -> PuffinFile:
        """Writes the footer. A compressed (LZ4) footer is valid Puffin, but Java and
        PyIceberg cannot read it, so it is off by default."""
        if not isinstance(compress_footer, bool):
            raise ValidationError(f"compress_footer must be a bool, got {compress_footer!r}")
        data = self._w.finish(_str_pairs(properties, "file properties"), compress_footer)
        footer_size = _native.puffin_read_footer(data)[2]
        return PuffinFile(data, tuple(self._blobs), footer_size)
