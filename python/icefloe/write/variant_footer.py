"""The Parquet ``VARIANT`` annotation on the variant columns of files icefloe writes.

pyarrow writes a variant column as a plain group (and crashes when given an extension type for
it), but readers such as DuckDB need the ``VARIANT`` logical type to read the group as a
variant. Files with variant columns are written through :class:`TailHoldingSink`, which passes
bytes on to the real stream but holds back the most recent ones; when pyarrow has finished,
the held tail (which contains the footer) is rewritten in Rust with the annotation set on
every variant group, and only then written out. Data pages never move.
"""

from __future__ import annotations

from typing import IO, Any

import pyarrow as pa

from icefloe import _native
from icefloe.schema import Schema
from icefloe.types import IcebergType, ListType, MapType, NestedField, StructType, VariantType

__all__ = ["TailHoldingSink", "variant_field_ids"]

#: Bytes held back: far more than any footer icefloe writes (a footer is a few KiB per column
#: and row group).
HOLD_BYTES = 64 << 20


def variant_field_ids(schema: Schema) -> list[int]:
    """The field ids of every variant field of ``schema``, nested ones included."""
    out: list[int] = []

    def walk(f: NestedField) -> None:
        t: IcebergType = f.field_type
        if isinstance(t, VariantType):
            out.append(f.field_id)
        elif isinstance(t, StructType):
            for c in t.fields:
                walk(c)
        elif isinstance(t, ListType):
            walk(t.element_field)
        elif isinstance(t, MapType):
            walk(t.key_field)
            walk(t.value_field)

    for f in schema.fields:
        walk(f)
    return out


class TailHoldingSink:
    """A write-only file object for pyarrow that passes bytes on to ``inner`` while holding
    back the last ``hold`` bytes, so the footer can be rewritten before it is written."""

    def __init__(self, inner: pa.NativeFile | IO[bytes], hold: int = HOLD_BYTES) -> None:
        self._inner = inner
        self._hold = hold
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._written = 0  # bytes passed on to inner
        self.closed = False

    def write(self, data: Any) -> int:
        b = bytes(data)
        self._pending.append(b)
        self._pending_size += len(b)
        if self._pending_size > 2 * self._hold:
            self._release(self._pending_size - self._hold)
        return len(b)

    def _release(self, n: int) -> None:
        """Passes the oldest ``n`` held bytes on."""
        joined = b"".join(self._pending)
        self._inner.write(joined[:n])
        self._written += n
        self._pending = [joined[n:]]
        self._pending_size = len(joined) - n

    def tell(self) -> int:
        return self._written + self._pending_size

    def flush(self) -> None:
        """Nothing to do: held bytes are written by :meth:`finish`."""

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True

    def finish(self, field_ids: list[int]) -> int:
        """Annotates the held footer, writes the rest out and returns the file's size."""
        tail = _native.variant_annotate_tail(b"".join(self._pending), field_ids)
        self._inner.write(tail)
        self._pending = []
        self._pending_size = 0
        self._written += len(tail)
        return self._written
