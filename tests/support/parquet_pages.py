"""The page headers of a Parquet column chunk, read from the file's bytes (Thrift compact
protocol), independent of the Parquet libraries under test."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3


@dataclass(frozen=True)
class PageHeader:
    type: int
    uncompressed_size: int
    compressed_size: int


class _Compact:
    """Just enough of a Thrift compact reader to walk a PageHeader struct."""

    def __init__(self, data: bytes, pos: int) -> None:
        self.data, self.pos = data, pos

    def byte(self) -> int:
        self.pos += 1
        return self.data[self.pos - 1]

    def varint(self) -> int:
        out = shift = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return out

    def zigzag(self) -> int:
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def skip(self, kind: int, in_collection: bool = False) -> None:
        if kind in (1, 2):  # booleans: in the field header, but a byte in a collection
            self.pos += in_collection
        elif kind == 3:
            self.pos += 1
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.pos += 8
        elif kind == 8:
            length = self.varint()  # read before pos, which it moves
            self.pos += length
        elif kind in (9, 10):
            head = self.byte()
            n = head >> 4 if head >> 4 != 15 else self.varint()
            for _ in range(n):
                self.skip(head & 0x0F, True)
        elif kind == 11:
            n = self.varint()
            kinds = self.byte() if n else 0
            for _ in range(n):
                self.skip(kinds >> 4, True)
                self.skip(kinds & 0x0F, True)
        elif kind == 12:
            self.struct()
        else:
            raise ValueError(f"thrift compact type {kind}")

    def struct(self) -> dict[int, int]:
        """The struct's integer fields by id (others are skipped)."""
        ints: dict[int, int] = {}
        field = 0
        while (head := self.byte()) != 0:
            kind, delta = head & 0x0F, head >> 4
            field = field + delta if delta else self.zigzag()
            if kind in (5, 6):
                ints[field] = self.zigzag()
            else:
                self.skip(kind)
        return ints


def column_pages(path: str | Path, column: int, row_group: int = 0) -> list[PageHeader]:
    """The headers of the pages of ``column`` in ``row_group``, in file order."""
    chunk = pq.ParquetFile(path).metadata.row_group(row_group).column(column)
    start = chunk.data_page_offset
    if chunk.has_dictionary_page and chunk.dictionary_page_offset is not None:
        start = min(start, chunk.dictionary_page_offset)
    data = Path(path).read_bytes()
    end = start + chunk.total_compressed_size
    reader = _Compact(data, start)
    out = []
    while reader.pos < end:
        fields = reader.struct()
        header = PageHeader(fields[1], fields[2], fields[3])
        out.append(header)
        reader.pos += header.compressed_size
    assert reader.pos == end, "the pages do not end where the column chunk does"
    return out
