"""Damaged Parquet data files: every read equals the original or raises ``CorruptFileError``
naming the file; never a different answer, never an abort. The one exception is Parquet's:
footer statistics carry no checksum, so a damaged one can make a filtered read skip a row group
(the sweep checks that the same read without pruning is right)."""

from __future__ import annotations

import collections
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.exceptions import CorruptFileError
from support import byteflip
from support.write_util import catalog

SOAK = bool(os.environ.get("ICEFLOE_SOAK_FACTOR"))
#: Soak runs flip every bit of every byte (and all bits at once); CI flips the low bit of every
#: footer byte and of every third byte before it (pages and their headers), about 20 s.
MASKS = [1 << b for b in range(8)] + [0xFF] if SOAK else [1]


def test_byte_flips_never_give_a_wrong_answer_or_abort(tmp_path: Path) -> None:
    config = byteflip.build(tmp_path)
    data = Path(config["path"]).read_bytes()
    size = len(data)
    footer = size - 8 - int.from_bytes(data[-8:-4], "little")
    offsets = [o for o in range(size) if SOAK or o >= footer or o % 3 == 0]
    outcomes = byteflip.sweep(config, [(o, m) for o in offsets for m in MASKS])
    counts = collections.Counter(o.split(":")[0] for o in outcomes.values())
    findings = {k: v for k, v in outcomes.items() if v not in ("same", "corrupt", "stats")}
    assert not findings, (
        f"{len(findings)} of {len(outcomes)} flips: {sorted(findings.items())[:20]}"
    )
    assert counts["corrupt"] > len(outcomes) // 2  # most flips are detected, not harmless
    # Parquet does not checksum footer statistics: a damaged one can only mislead row-group
    # pruning of a filtered read (the same read unpruned is right), and rarely.
    assert counts["stats"] <= len(outcomes) // 200


def _data_file(t: Any) -> str:
    path: str = t.inspect.files().column("file_path")[0].as_py()
    return path.removeprefix("file://")


def test_a_required_column_missing_from_a_file_is_corrupt_not_null(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    t = catalog(tmp_path).create_table("ns.t", schema)
    t.append(pa.table({"id": [1, 2, 3], "s": ["a", "b", "c"]}, schema=schema))
    path = _data_file(t)
    lost_id = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False, metadata={"PARQUET:field_id": "99"}),
            pa.field("s", pa.string(), metadata={"PARQUET:field_id": "2"}),
        ]
    )
    pq.write_table(pa.table({"id": [1, 2, 3], "s": ["a", "b", "c"]}, schema=lost_id), path)
    with pytest.raises(CorruptFileError, match=r"required column 'id' \(id 1\) is missing"):
        t.scan().to_arrow()
    with pytest.raises(CorruptFileError, match=path):
        t.scan(selected_fields=("id",)).to_arrow()
    # An optional column missing from a file still reads as nulls (schema evolution).
    assert t.scan(selected_fields=("s",)).to_arrow()["s"].to_pylist() == ["a", "b", "c"]


def test_written_files_carry_page_checksums(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    t = catalog(tmp_path).create_table(
        "ns.t", schema, properties={"write.parquet.compression-codec": "uncompressed"}
    )
    t.append(pa.table({"id": pa.array(range(1000), pa.int64())}, schema=schema))
    path = _data_file(t)
    data = bytearray(Path(path).read_bytes())
    value = (777).to_bytes(8, "little")
    at = data.index(value)  # a value inside the plain-encoded data page
    data[at] ^= 0x01
    Path(path).write_bytes(bytes(data))
    # pyarrow alone, verifying: the page's CRC no longer matches
    with pytest.raises(OSError, match="CRC"):
        pq.read_table(path, page_checksum_verification=True)
    assert pq.read_table(path)["id"][777].as_py() == 776  # without checksums: silently wrong
    with pytest.raises(CorruptFileError, match=path):
        t.scan().to_arrow()
