"""Damaged Parquet data files: every read equals the original or raises ``CorruptFileError``
naming the file; never a different answer, never an abort. The one exception is Parquet's:
footer statistics carry no checksum. Statistics that contradict themselves or the manifest's
record count never prune; a damaged one that stays plausible can still make a filtered read
skip a row group (the sweep checks that the same read without pruning is right)."""

from __future__ import annotations

import collections
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.exceptions import CorruptFileError
from icefloe.read import read_task
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


def test_page_header_flips_never_shift_values_to_other_rows(tmp_path: Path) -> None:
    """Page headers carry no checksum: a damaged value count made the decoders (the native
    reader's and pyarrow's) take a value too many from a page and move every later value of
    the column to the next row. Every bit of the first 32 bytes of each data page header of
    the first row group: the read is right or the file is corrupt."""
    config = byteflip.build(tmp_path)
    meta = pq.ParquetFile(config["path"]).metadata
    group = meta.row_group(0)
    starts = [group.column(c).data_page_offset for c in range(meta.num_columns)]
    flips = [(o, 1 << b) for start in starts for o in range(start, start + 32) for b in range(8)]
    outcomes = byteflip.sweep(config, flips)
    findings = {k: v for k, v in outcomes.items() if v not in ("same", "corrupt", "stats")}
    worst = sorted(findings.items())[:20]
    assert not findings, f"{len(findings)} of {len(outcomes)} flips: {worst}"


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
    # the rewritten file's length is not the manifest's: refused before anything else
    with pytest.raises(CorruptFileError, match="bytes, its manifest entry says"):
        t.scan().to_arrow()
    # with the length not known (0), the missing column itself is named
    (task,) = t.scan().plan_files()
    task = task.__replace__(data_file=task.data_file.__replace__(file_size_in_bytes=0))
    options = t.scan().read_options()
    with pytest.raises(CorruptFileError, match=r"required column 'id' \(id 1\) is missing"):
        list(read_task(t.io, task, options))
    projected = t.scan(selected_fields=("id",)).read_options()
    with pytest.raises(CorruptFileError, match=path):
        list(read_task(t.io, task, projected))
    # An optional column missing from a file still reads as nulls (schema evolution).
    optional = t.scan(selected_fields=("s",)).read_options()
    rows = pa.Table.from_batches(list(read_task(t.io, task, optional)))
    assert rows["s"].to_pylist() == ["a", "b", "c"]


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


def _flipped_footer(tmp_path: Path, needle: bytes, occurrence: int, mask: int) -> dict[str, str]:
    """The sweep's table with one byte of the ``occurrence``-th copy of ``needle`` in its data
    file's footer XOR-ed with ``mask``; returns the table's config."""
    config = byteflip.build(tmp_path)
    path = Path(config["path"])
    data = bytearray(path.read_bytes())
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    at = footer - 1
    for _ in range(occurrence + 1):
        at = data.index(needle, at + 1)
    data[at] ^= mask
    path.write_bytes(bytes(data))
    return config


def _table(config: dict[str, str]) -> Any:
    from icefloe.catalog.sql import SqlCatalog

    return SqlCatalog("flip", uri=config["uri"], warehouse=config["warehouse"]).load_table("db.t")


def test_footer_statistics_that_contradict_themselves_never_prune(tmp_path: Path) -> None:
    """The second row group's ``s`` min damaged from 'v0' to 'w0' (above its max 'v9'): the
    filtered read does not trust the footer and reads the rows (before: 0 rows from it)."""
    config = byteflip.build(tmp_path / "ok")
    want = _table(config).scan(row_filter=byteflip.FILTERS[1]).to_arrow()
    assert want.num_rows > 0
    bad = _flipped_footer(tmp_path / "bad", b"v0", 1, 0x01)
    assert _table(bad).scan(row_filter=byteflip.FILTERS[1]).to_arrow().equals(want)


def test_footer_max_and_max_value_that_differ_are_corrupt(tmp_path: Path) -> None:
    """Writers store a signed column's bound twice (deprecated ``max`` and ``max_value``): the
    second row group's ``id`` max_value damaged from 199 to 135 made ``id >= 150`` skip it."""
    config = _flipped_footer(tmp_path, (199).to_bytes(8, "little"), 1, 0x40)
    t = _table(config)
    with pytest.raises(CorruptFileError, match=config["path"]):
        t.scan(row_filter="id >= 150").to_arrow()


def test_footer_metadata_that_is_not_utf8_is_corrupt(tmp_path: Path) -> None:
    config = _flipped_footer(tmp_path, b"icefloe.field-ids", 0, 0x80)
    t = _table(config)
    for row_filter in byteflip.FILTERS:
        with pytest.raises(CorruptFileError, match=config["path"]):
            t.scan(row_filter=row_filter).to_arrow()


def test_level_histogram_of_another_element_type_is_corrupt_not_an_abort(
    tmp_path: Path,
) -> None:
    """A flipped field header turns a column's empty repetition-level histogram into a
    definition-level histogram of one list element: Arrow reads it as one integer and aborts
    the process on the size; the footer check refuses the element type (read in a worker)."""
    config = byteflip.build(tmp_path)
    data = Path(config["path"]).read_bytes()
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    # an optional column's size statistics: empty repetition histogram, definition [0, 100]
    at = data.index(bytes.fromhex("19 06 19 26 00 c8 01"), footer)
    outcome = byteflip.sweep(config, [(at, 0x10)])[(at, 0x10)]
    assert outcome == "corrupt", outcome


def test_field_ids_that_do_not_match_their_digest_are_corrupt_after_a_good_file(
    tmp_path: Path,
) -> None:
    """The digest check is skipped only for a schema equal (field ids included) to one that
    passed it: a file with another field id under the same stored digest is still refused."""
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
    t = catalog(tmp_path).create_table("ns.t", schema)
    t.append(pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=schema))
    assert t.scan().to_arrow()["id"].to_pylist() == [1, 2]  # the good schema is verified
    path = _data_file(t)
    good = pq.ParquetFile(path)
    digest_key = b"icefloe.field-ids.crc32"
    kv = {digest_key: good.metadata.metadata[digest_key]}
    swapped = pa.schema(
        [
            pa.field("id", pa.int64(), metadata={"PARQUET:field_id": "2"}),
            pa.field("s", pa.string(), metadata={"PARQUET:field_id": "1"}),
        ],
        metadata=kv,
    )
    table = good.read()
    pq.write_table(pa.table(table.columns, schema=swapped), path)
    assert pq.read_metadata(path).metadata[digest_key] == kv[digest_key]
    with pytest.raises(CorruptFileError, match="do not match their checksum"):
        t.scan().to_arrow()


@pytest.mark.parametrize("whole_file_bytes", [0, 1 << 20])
def test_small_and_large_files_are_checked_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whole_file_bytes: int
) -> None:
    """A file up to WHOLE_FILE_BYTES is read whole and pyarrow parses the checked footer from
    memory; a larger one has its footer read, checked and parsed on its own. Both read the
    same rows, and a damaged footer is a CorruptFileError naming the file on both paths."""
    from icefloe.read import parquet_file

    monkeypatch.setattr(parquet_file, "WHOLE_FILE_BYTES", whole_file_bytes)
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
    t = catalog(tmp_path).create_table("ns.t", schema)
    rows = pa.table({"id": list(range(500)), "s": [f"v{i % 7}" for i in range(500)]}, schema=schema)
    t.append(rows)
    assert t.scan().to_arrow().sort_by("id").equals(rows)
    path = _data_file(t)
    data = bytearray(Path(path).read_bytes())
    footer_len = int.from_bytes(data[-8:-4], "little")
    data[-8:-4] = (footer_len + 5).to_bytes(4, "little")  # the footer starts elsewhere
    Path(path).write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match=path):
        t.scan().to_arrow()


@pytest.mark.parametrize("version", [2, 3])
def test_a_damaged_position_delete_page_header_never_brings_rows_back(
    tmp_path: Path, version: int
) -> None:
    """The ``pos`` column of a position delete file read alone has nothing to check its length
    against: a damaged page header that decodes to no values must be corrupt, never a file
    whose deletes all vanish (and which compaction would then make permanent)."""
    from icefloe.exceptions import IcebergError

    t = catalog(tmp_path).create_table(
        "ns.t",
        pa.schema([pa.field("id", pa.int64(), nullable=False)]),
        properties={"format-version": "2", "write.delete.mode": "merge-on-read"},
    )
    t.append(pa.table({"id": pa.array(range(300), pa.int64())}))
    t.delete("id < 30")
    if version == 3:  # v2 position deletes kept through the upgrade
        t.upgrade_format_version(3)
    path = t.inspect.delete_files().column("file_path")[0].as_py().removeprefix("file://")
    start = pq.ParquetFile(path).metadata.row_group(0).column(1).data_page_offset
    original = Path(path).read_bytes()
    outcomes: collections.Counter[str] = collections.Counter()
    for offset in range(start, start + 24):  # the pos column's page header
        damaged = bytearray(original)
        damaged[offset] ^= 0xFF
        Path(path).write_bytes(bytes(damaged))
        try:
            rows = t.refresh().scan().count()
            assert t.refresh().scan().to_arrow().num_rows == rows
        except IcebergError:
            outcomes["error"] += 1
            continue
        outcomes["same" if rows == 270 else f"wrong: {rows} rows at {offset}"] += 1
    Path(path).write_bytes(original)
    assert set(outcomes) <= {"same", "error"}, outcomes
    assert t.refresh().scan().count() == 270
