"""Row-level deletes: deletion vectors, position delete indexes and equality delete sets.

Every structure produces *keep-masks*: a ``pyarrow.BooleanArray`` that is ``True`` for the rows
of a batch that survive, ready for ``RecordBatch.filter``. The work runs in Rust with the GIL
released; bytes and Arrow data go in and out, IO stays with the caller.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa

from icefloe import _native
from icefloe._concurrency import parallel_map
from icefloe.exceptions import CorruptFileError, ValidationError

__all__ = [
    "DeletionVector",
    "EqualityDeleteSet",
    "PositionDeleteIndex",
    "keep_mask_from_positions",
]

MAX_POSITION = 0x7FFFFFFE_80000000
"""The largest row position a deletion vector can hold (as in the Java reference)."""


_INT64_MAX = 2**63 - 1
#: The most rows one keep-mask covers (the native limit).
MAX_MASK_LENGTH = 1 << 31


def _int(value: object, what: str, hi: int) -> int:
    """``value`` as an int from 0 to ``hi`` (any integer type but bool; numpy ints too), else
    a :class:`ValidationError` naming ``what``."""
    if not isinstance(value, bool):
        try:
            n = operator.index(value)  # type: ignore[arg-type]
        except TypeError:
            pass
        else:
            if 0 <= n <= hi:
                return n
    raise ValidationError(f"{what} must be an integer from 0 to {hi}, got {value!r}")


def _range(start: object, length: object) -> tuple[int, int]:
    """The row range ``[start, start + length)`` of a keep-mask, checked."""
    return _int(start, "start", _INT64_MAX), _int(length, "length", MAX_MASK_LENGTH)


def _int64_array(positions: Any) -> pa.Array:
    """An int64 Arrow array from a pyarrow array/chunked array, numpy array or sequence.
    Anything else, or values that are not integers within int64, is a ValidationError."""
    if isinstance(positions, pa.ChunkedArray):
        positions = positions.combine_chunks()
    if not isinstance(positions, pa.Array):
        try:
            # inferred, then cast: a float with a fraction is refused instead of truncated
            positions = pa.array(positions)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
            raise ValidationError(f"positions must be integers: {e}") from e
        t = positions.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t)):
            raise ValidationError(f"positions must be integers, got values of type {t}")
    if positions.type != pa.int64():
        try:
            positions = positions.cast(pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise ValidationError(
                f"positions of type {positions.type} are not integers within int64: {e}"
            ) from e
    return positions


class DeletionVector:
    """The deleted row positions of one data file, as stored in a ``deletion-vector-v1`` blob.

    Immutable: :meth:`union` returns a new vector.
    """

    __slots__ = ("_bitmap",)

    def __init__(self, bitmap: _native.PositionBitmap | None = None) -> None:
        self._bitmap = (
            bitmap
            if bitmap is not None
            else _native.PositionBitmap.from_positions(pa.array([], pa.int64()))
        )

    @classmethod
    def from_positions(cls, positions: Any) -> DeletionVector:
        """From positions (pyarrow int array, numpy array or sequence; any order)."""
        return cls(_native.PositionBitmap.from_positions(_int64_array(positions)))

    @classmethod
    def from_blob(cls, blob: bytes, expected_cardinality: int | None = None) -> DeletionVector:
        """Decodes a ``deletion-vector-v1`` blob (the ``content_size_in_bytes`` bytes at
        ``content_offset`` of the Puffin file). Length, magic and CRC are checked, and the
        cardinality against ``expected_cardinality`` (the entry's ``record_count``) when given;
        any mismatch raises :class:`icefloe.exceptions.CorruptFileError`."""
        if expected_cardinality is not None:
            expected_cardinality = _int(expected_cardinality, "expected_cardinality", _INT64_MAX)
        return cls(_native.PositionBitmap.from_blob(bytes(blob), expected_cardinality))

    @classmethod
    def read_at(
        cls,
        data: bytes,
        content_offset: int,
        content_size_in_bytes: int,
        expected_cardinality: int | None = None,
    ) -> DeletionVector:
        """Decodes the DV at ``content_offset`` / ``content_size_in_bytes`` of a file's bytes,
        as a manifest entry locates it; no Puffin footer is needed (Delta UniForm DVs live in
        Delta's own files). A range outside ``data`` raises ``CorruptFileError``."""
        if (
            content_offset < 0
            or content_size_in_bytes < 0
            or (content_offset + content_size_in_bytes > len(data))
        ):
            raise CorruptFileError(
                f"deletion vector at offset {content_offset} length {content_size_in_bytes} "
                f"lies outside the file ({len(data)} bytes)"
            )
        view = memoryview(data)[content_offset : content_offset + content_size_in_bytes]
        return cls.from_blob(bytes(view), expected_cardinality)

    @classmethod
    def from_roaring(cls, data: bytes) -> DeletionVector:
        """Reads the bare 64-bit Roaring portable serialisation (no blob framing)."""
        return cls(_native.PositionBitmap.deserialize(bytes(data)))

    def to_blob(self) -> bytes:
        """The ``deletion-vector-v1`` blob."""
        return self._bitmap.to_blob()

    def to_roaring(self) -> bytes:
        """The bare 64-bit Roaring portable serialisation."""
        return self._bitmap.serialize()

    def positions(self) -> pa.Array:
        """The deleted positions, ascending, as an int64 array."""
        return self._bitmap.positions()

    @property
    def bitmap(self) -> _native.PositionBitmap:
        """The positions as the native bitmap the Rust readers take."""
        return self._bitmap

    @property
    def cardinality(self) -> int:
        """The number of deleted positions (the DV's ``record_count``)."""
        return self._bitmap.cardinality()

    @property
    def last(self) -> int | None:
        """The largest deleted position, None when there is none."""
        return self._bitmap.max()

    def __len__(self) -> int:
        return self._bitmap.cardinality()

    def __contains__(self, position: object) -> bool:
        # as a set of ints answers: anything but a position in range is simply not in it
        return (
            isinstance(position, int) and 0 <= position <= MAX_POSITION and position in self._bitmap
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeletionVector) and self._bitmap == other._bitmap

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"DeletionVector(cardinality={self.cardinality})"

    def union(self, other: DeletionVector | Any) -> DeletionVector:
        """A vector holding the positions of both (``other`` may also be positions)."""
        if not isinstance(other, DeletionVector):
            other = DeletionVector.from_positions(other)
        return DeletionVector(self._bitmap.union(other._bitmap))

    def keep_mask(self, start: int, length: int) -> pa.BooleanArray:
        """The keep-mask of rows ``[start, start + length)`` of the data file."""
        return self._bitmap.keep_mask(*_range(start, length))

    def filter_rows(
        self, batch: pa.RecordBatch, start: int, decode: Sequence[str] = ()
    ) -> pa.RecordBatch:
        """The rows of ``batch`` (rows ``[start, start + batch.num_rows)`` of the data file)
        that this vector does not delete: ``batch`` itself when it deletes none of them and
        ``decode`` is empty. The dictionary columns named in ``decode`` come back decoded to
        plain string or binary arrays (deleted rows are skipped while decoding)."""
        return self._bitmap.filter_rows(batch, _int(start, "start", _INT64_MAX), list(decode))


def keep_mask_from_positions(positions: Any, start: int, length: int) -> pa.BooleanArray:
    """The keep-mask of rows ``[start, start + length)`` from deleted positions sorted ascending."""
    start, length = _range(start, length)
    return _native.keep_mask_from_positions(_int64_array(positions), start, length)


def _decode_dictionaries(batch: pa.RecordBatch, keep: str | None = None) -> pa.RecordBatch:
    """The batch with dictionary-encoded columns (``read_dictionary``) decoded to plain ones,
    but for the column named ``keep``."""
    if not any(pa.types.is_dictionary(f.type) and f.name != keep for f in batch.schema):
        return batch
    cols = [
        c.dictionary_decode() if pa.types.is_dictionary(c.type) and name != keep else c
        for name, c in zip(batch.schema.names, batch.columns, strict=True)
    ]
    return pa.RecordBatch.from_arrays(cols, names=batch.schema.names)


def _batches(
    data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch], keep: str | None = None
) -> Iterable[pa.RecordBatch]:
    if isinstance(data, pa.RecordBatch):
        return [_decode_dictionaries(data, keep)]
    if isinstance(data, pa.Table):
        return [_decode_dictionaries(b, keep) for b in data.to_batches()]
    return (_decode_dictionaries(b, keep) for b in data)


class PositionDeleteIndex:
    """Deleted positions per data file, from position delete files (``file_path``, ``pos``)."""

    __slots__ = ("_index",)

    def __init__(self) -> None:
        self._index = _native.PositionDeleteIndex()

    @classmethod
    def from_batches(
        cls, data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]
    ) -> PositionDeleteIndex:
        """Builds the index from position delete rows (tables, batches or an iterable)."""
        index = cls()
        index.add(data)
        return index

    def add(self, data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]) -> None:
        """Adds position delete rows; extra columns (such as ``row``) are ignored. A
        dictionary-encoded ``file_path`` is indexed as it is, each path decoded once."""
        for batch in _batches(data, keep="file_path"):
            self._index.add_batch(batch)

    def add_deletion_vector(self, path: str, dv: DeletionVector) -> None:
        """Merges a DV's positions into those of ``path``."""
        self._index.merge(path, dv._bitmap)

    def paths(self) -> list[str]:
        """The data files with deletes, sorted."""
        return self._index.paths()

    def get(self, path: str) -> DeletionVector | None:
        """The deleted positions of ``path`` as a deletion vector, or None."""
        if not isinstance(path, str):
            raise ValidationError(f"a data file path is a string, got {path!r}")
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            return None  # no delete names a path UTF-8 cannot hold
        bitmap = self._index.get(path)
        return DeletionVector(bitmap) if bitmap is not None else None

    @property
    def cardinality(self) -> int:
        """The total number of deleted positions."""
        return self._index.cardinality()

    def keep_mask(self, path: str, start: int, length: int) -> pa.BooleanArray:
        """The keep-mask of rows ``[start, start + length)`` of data file ``path``."""
        return self._index.keep_mask(path, *_range(start, length))


class EqualityDeleteSet:
    """Rows of equality delete files, hashed once and probed per data batch.

    Each added table holds exactly the equality columns of its delete file (matched to the
    data by column name). Null equals null; values compare after Iceberg's type promotions.
    Delete files with different column sets may be mixed; a row is deleted if any matches.
    """

    __slots__ = ("_set",)

    def __init__(self, *deletes: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]) -> None:
        self._set = _native.EqualityDeleteSet()
        for d in deletes:
            self.add(d)

    @property
    def native(self) -> _native.EqualityDeleteSet:
        """The Rust set (what the native reader matches files against)."""
        return self._set

    def add(self, data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]) -> None:
        """Adds the rows of one delete file (all of its columns are equality columns)."""
        for batch in _batches(data):
            self._set.add_batch(batch)

    def __len__(self) -> int:
        return len(self._set)

    @property
    def column_sets(self) -> list[list[str]]:
        """The distinct equality column sets (sorted names)."""
        return self._set.column_sets()

    def keep_mask(self, batch: pa.RecordBatch | pa.Table) -> pa.BooleanArray:
        """The keep-mask of ``batch``: ``True`` where no delete row matches."""
        if isinstance(batch, pa.Table):
            # the Rust probe releases the GIL: a table's batches are matched on every core
            masks = parallel_map(self._set.keep_mask, _batches(batch), kind="work")
            if not masks:
                return pa.array([], pa.bool_())
            return pa.concat_arrays(masks)
        return self._set.keep_mask(_decode_dictionaries(batch))
