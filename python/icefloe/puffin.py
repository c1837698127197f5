"""Puffin files (``PFA1``): blobs plus a JSON footer, as Iceberg uses them for statistics and
deletion vectors.

Bytes in, bytes out: reading and writing files is the caller's job (``icefloe.io``). The codec
runs in Rust; this module gives it a typed API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from icefloe import _native

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
        self._data = bytes(data)
        blobs, props, footer_size = _native.puffin_read_footer(self._data)
        self.blobs: tuple[BlobMetadata, ...] = tuple(BlobMetadata._from_native(b) for b in blobs)
        self.properties: dict[str, str] = dict(props)
        self.footer_size: int = footer_size
        """Size of the whole footer (magic + payload + trailer), as table statistics record."""

    def read_blob(self, blob: BlobMetadata | int) -> bytes:
        """The decompressed bytes of ``blob`` (metadata or index into :attr:`blobs`)."""
        meta = self.blobs[blob] if isinstance(blob, int) else blob
        return _native.puffin_read_blob(
            self._data, meta.offset, meta.length, meta.compression_codec
        )

    def read_deletion_vector(self, blob: BlobMetadata | int) -> DeletionVector:
        """Decodes a ``deletion-vector-v1`` blob, checking it against its ``cardinality``."""
        from icefloe.deletes import DeletionVector

        meta = self.blobs[blob] if isinstance(blob, int) else blob
        if meta.type != DELETION_VECTOR_V1:
            from icefloe.exceptions import ValidationError

            raise ValidationError(f"blob at offset {meta.offset} is {meta.type!r}, not a DV")
        card = meta.properties.get("cardinality")
        return DeletionVector.from_blob(
            self.read_blob(meta), expected_cardinality=int(card) if card is not None else None
        )


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
        """Appends a blob (compressed with ``"zstd"`` or ``"lz4"`` when asked)."""
        meta = BlobMetadata._from_native(
            self._w.add_blob(
                bytes(data),
                type,
                list(fields),
                snapshot_id,
                sequence_number,
                compression_codec,
                list((properties or {}).items()),
            )
        )
        self._blobs.append(meta)
        return meta

    def add_deletion_vector(self, dv: DeletionVector, referenced_data_file: str) -> BlobMetadata:
        """Appends a ``deletion-vector-v1`` blob with the metadata the spec requires."""
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
        data = self._w.finish(list((properties or {}).items()), compress_footer)
        footer_size = _native.puffin_read_footer(data)[2]
        return PuffinFile(data, tuple(self._blobs), footer_size)
