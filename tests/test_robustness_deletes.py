"""Damaged delete files and manifest fields: a typed error naming the file, never deleted rows
coming back, never an untyped exception (and the public deletion vector API refuses bad ints
with a ValidationError)."""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.deletes import DeletionVector, EqualityDeleteSet
from icefloe.exceptions import CorruptFileError, ValidationError
from icefloe.io import FileIO
from icefloe.puffin import PuffinReader, PuffinWriter
from icefloe.read import DeleteCache
from icefloe.read.deletes import TaskDeletes
from icefloe.scan import DeleteContent, DeleteFileRef, FileScanTask, ReadOptions
from icefloe.schema import Schema
from icefloe.types import IntegerType, NestedField
from support.read_util import read, write_data, write_dv, write_eq_deletes, write_pos_deletes
from support.write_util import catalog

ID_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])
SCHEMA = Schema(NestedField(1, "id", IntegerType(), True))
ROWS = [{"id": i} for i in range(10)]
OPTS = ReadOptions(SCHEMA)


def _ids(task: FileScanTask) -> list[int]:
    return sorted(read(task, OPTS).column("id").to_pylist())


def _table(tmp_path: Path, **properties: str) -> Any:
    props = {"format-version": "2", "write.manifest.compression-codec": "uncompressed"}
    t = catalog(tmp_path).create_table("ns.t", ID_SCHEMA, properties=props | properties)
    t.append(pa.table({"id": pa.array(range(10), pa.int64())}, schema=ID_SCHEMA))
    return t


def _damage_page_headers(path: str, column: int) -> None:
    """Turns the first data page of ``column`` in every row group into an index page (one
    byte: the page header's type): the file then decodes to no rows, without an error."""
    meta = pq.read_metadata(path)
    raw = bytearray(Path(path).read_bytes())
    for g in range(meta.num_row_groups):
        offset = meta.row_group(g).column(column).data_page_offset
        assert raw[offset : offset + 2] == b"\x15\x00"  # PageHeader.type = DATA_PAGE
        raw[offset + 1] = 0x02  # INDEX_PAGE
    Path(path).write_bytes(bytes(raw))
    assert pq.read_metadata(path).num_rows == meta.num_rows


def _delete_file_paths(t: Any) -> list[str]:
    return [p.removeprefix("file://") for p in t.inspect.delete_files()["file_path"].to_pylist()]


# 1. a delete file that decodes to fewer rows than its footer says is corrupt


def test_equality_delete_file_decoding_to_no_rows_is_corrupt(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.delete_by_keys(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), ["id"])
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [0, 4, 5, 6, 7, 8, 9]
    (path,) = _delete_file_paths(t)
    _damage_page_headers(path, 0)
    assert pq.read_table(path).num_rows == 0  # pyarrow says nothing
    with pytest.raises(CorruptFileError, match=path):
        t.refresh().scan().to_arrow()
    with pytest.raises(CorruptFileError, match=path):
        t.refresh().rewrite_data_files()  # compaction must not make the damage permanent


def test_partition_scoped_position_delete_file_decoding_to_no_rows_is_corrupt(
    tmp_path: Path,
) -> None:
    t = _table(
        tmp_path, **{"write.delete.mode": "merge-on-read", "write.delete.granularity": "partition"}
    )
    t.append(pa.table({"id": pa.array(range(10, 20), pa.int64())}, schema=ID_SCHEMA))
    t.delete("id in (1, 2, 3, 12)")
    assert t.scan().count() == 16
    (path,) = _delete_file_paths(t)
    assert pq.read_metadata(path).num_rows == 4  # one file naming both data files
    _damage_page_headers(path, 1)  # the pos column
    with pytest.raises(CorruptFileError, match=path):
        t.refresh().scan().to_arrow()
    with pytest.raises(CorruptFileError, match=path):
        t.refresh().rewrite_data_files()


def test_delete_file_rows_differing_from_the_manifest_record_count_are_corrupt(
    tmp_path: Path,
) -> None:
    df = write_data(tmp_path / "d.parquet", SCHEMA, ROWS)
    eq = write_eq_deletes(tmp_path / "eq.parquet", SCHEMA, (1,), [{"id": 1}, {"id": 2}])
    assert _ids(FileScanTask(df, (eq,))) == [0, 3, 4, 5, 6, 7, 8, 9]
    wrong = DeleteFileRef(
        DeleteContent.EQUALITY_DELETES, eq.file_path, "parquet", 3, equality_ids=(1,)
    )
    with pytest.raises(CorruptFileError, match=r"eq\.parquet.*record_count"):
        _ids(FileScanTask(df, (wrong,)))
    pos = write_pos_deletes(tmp_path / "pos.parquet", [(df.file_path, 1), (df.file_path, 2)])
    assert _ids(FileScanTask(df, (pos,))) == [0, 3, 4, 5, 6, 7, 8, 9]
    for referenced in (df.file_path, None):  # file-scoped, and read whole
        wrong = DeleteFileRef(
            DeleteContent.POSITION_DELETES,
            pos.file_path,
            "parquet",
            3,
            referenced_data_file=referenced,
        )
        with pytest.raises(CorruptFileError, match=r"pos\.parquet.*record_count"):
            _ids(FileScanTask(df, (wrong,)))


# 2. manifest list counts: each tested on its own, as Java's hasAddedFiles/hasExistingFiles


def _rewrite_manifest_list(t: Any, **fields: Any) -> None:
    path = t.metadata.current_snapshot().manifest_list.removeprefix("file://")
    reader = fastavro.reader(io.BytesIO(Path(path).read_bytes()))
    records = list(reader)
    for r in records:
        r.update(fields)
    meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
    buf = io.BytesIO()
    fastavro.writer(buf, reader.writer_schema, records, codec="null", metadata=meta)
    Path(path).write_bytes(buf.getvalue())


@pytest.mark.parametrize(
    ("added", "existing", "rows"),
    [
        (1, 2**31 - 1, 10),  # the sum overflows int32: the manifest must not vanish
        (2**31 - 1, 2**31 - 1, 10),
        (0, 2**31 - 1, 10),
        (-1, 5, 10),
        (0, 0, 0),  # no live entries: nothing to plan
    ],
)
def test_manifest_file_counts_are_tested_one_by_one(
    tmp_path: Path, added: int | None, existing: int | None, rows: int
) -> None:
    t = _table(tmp_path)
    _rewrite_manifest_list(t, added_files_count=added, existing_files_count=existing)
    t = t.refresh()
    assert t.scan().to_arrow().num_rows == rows
    assert t.scan().count() == rows
    assert len(list(t.scan().plan_files())) == (1 if rows else 0)


def test_manifest_file_count_missing_keeps_the_manifest(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"format-version": "1"})
    _rewrite_manifest_list(t, added_files_count=None, existing_files_count=None)
    assert t.refresh().scan().to_arrow().num_rows == 10


# 3. deletion vector entries locating no blob


@pytest.mark.parametrize(
    "field",
    [
        {"content_offset": -1},
        {"content_size_in_bytes": -1},
        {"content_size_in_bytes": 0},
        {"content_size_in_bytes": 2**63 - 1},
        {"content_size_in_bytes": 3 << 30},
        {"record_count": -1},
        {"file_size_in_bytes": 20},  # the blob ends past the file's known size
    ],
)
def test_deletion_vector_entry_out_of_range_is_corrupt(
    tmp_path: Path, field: dict[str, int]
) -> None:
    df = write_data(tmp_path / "d.parquet", SCHEMA, ROWS)
    dv = write_dv(tmp_path / "dv.puffin", [1, 2], df.file_path)
    assert _ids(FileScanTask(df, (dv,))) == [0, 3, 4, 5, 6, 7, 8, 9]
    entry = {
        "record_count": dv.record_count,
        "referenced_data_file": dv.referenced_data_file,
        "content_offset": dv.content_offset,
        "content_size_in_bytes": dv.content_size_in_bytes,
    } | field
    bad = DeleteFileRef(DeleteContent.POSITION_DELETES, dv.file_path, "puffin", **entry)
    with pytest.raises(CorruptFileError, match=r"dv\.puffin"):
        _ids(FileScanTask(df, (bad,)))


# 4. an equality delete file whose stored Arrow schema metadata is not UTF-8


def test_equality_delete_file_with_non_utf8_schema_metadata_applies(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.delete_by_keys(pa.table({"id": pa.array([1, 2], pa.int64())}), ["id"])
    (path,) = _delete_file_paths(t)
    field = pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1", b"PA\x92QUET:x": b"1"})
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}, pa.schema([field])), path)
    assert sorted(t.refresh().scan().to_arrow()["id"].to_pylist()) == [0, 3, 4, 5, 6, 7, 8, 9]


def test_equality_delete_set_failure_is_corrupt_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eq = write_eq_deletes(tmp_path / "eq.parquet", SCHEMA, (1,), [{"id": 1}])

    def refuse(self: EqualityDeleteSet, data: Any) -> None:
        raise pa.ArrowInvalid("Parser error: invalid utf-8 sequence")

    monkeypatch.setattr(EqualityDeleteSet, "add", refuse)
    with pytest.raises(CorruptFileError, match=r"eq\.parquet"):
        TaskDeletes.load(FileIO(), "d.parquet", [eq], DeleteCache(), None)


# 5. equality ids listed twice: Java projects them as a set


def test_duplicate_equality_ids_delete_as_a_set(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", SCHEMA, ROWS)
    eq = write_eq_deletes(tmp_path / "eq.parquet", SCHEMA, (1,), [{"id": 1}, {"id": 2}])
    twice = DeleteFileRef(
        DeleteContent.EQUALITY_DELETES, eq.file_path, "parquet", 2, equality_ids=(1, 1)
    )
    assert _ids(FileScanTask(df, (twice,))) == [0, 3, 4, 5, 6, 7, 8, 9]


def test_duplicate_equality_ids_in_a_manifest_entry(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.delete_by_keys(pa.table({"id": pa.array([1, 2], pa.int64())}), ["id"])
    for p in t.inspect.manifests()["path"].to_pylist():
        p = p.removeprefix("file://")
        reader = fastavro.reader(io.BytesIO(Path(p).read_bytes()))
        if reader.metadata.get("content") != "deletes":
            continue
        records = list(reader)
        records[0]["data_file"]["equality_ids"] = [1, 1]
        meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
        buf = io.BytesIO()
        fastavro.writer(buf, reader.writer_schema, records, codec="null", metadata=meta)
        Path(p).write_bytes(buf.getvalue())
    assert sorted(t.refresh().scan().to_arrow()["id"].to_pylist()) == [0, 3, 4, 5, 6, 7, 8, 9]


# 6. a Puffin DV blob's cardinality property, parsed as Java's Long.parseLong


def _puffin_with_cardinality(card: bytes) -> bytes:
    w = PuffinWriter()
    w.add_deletion_vector(DeletionVector.from_positions([1, 2, 3]), "file:///x.parquet")
    data = w.finish().data
    footer_len = struct.unpack("<i", data[-12:-8])[0]
    bad = data.replace(b'"cardinality":"3"', b'"cardinality":"' + card + b'"')
    return bad[:-12] + struct.pack("<i", footer_len + len(bad) - len(data)) + bad[-8:]


@pytest.mark.parametrize(
    "card",
    [
        b"x",
        b"-1",
        b"99999999999999999999999",
        b"3_0",
        b"0_3",
        b" 3",
        b"3 ",
        b"",
        b"\xd9\xa3",
        b"9" * 5000,
    ],
)
def test_puffin_dv_cardinality_not_a_count_is_corrupt(card: bytes) -> None:
    reader = PuffinReader(_puffin_with_cardinality(card))
    with pytest.raises(CorruptFileError, match="cardinality"):
        reader.read_deletion_vector(0)


@pytest.mark.parametrize("card", [b"3", b"03", b"+3"])
def test_puffin_dv_cardinality_decimal_is_read(card: bytes) -> None:
    assert PuffinReader(_puffin_with_cardinality(card)).read_deletion_vector(0).cardinality == 3


# 7. the public DeletionVector API: bad ints are ValidationErrors


DV = DeletionVector.from_positions([1, 2])


@pytest.mark.parametrize(
    "call",
    [
        lambda: DV.keep_mask(-5, 10),
        lambda: DV.keep_mask(0, -1),
        lambda: DV.keep_mask(2**64, 1),
        lambda: DV.keep_mask(0, 2**64),
        lambda: DV.keep_mask(1.0, 3),
        lambda: DV.filter_rows(pa.record_batch({"a": [1, 2, 3]}), -3),
        lambda: DeletionVector.from_blob(DV.to_blob(), expected_cardinality=-1),
        lambda: DeletionVector.from_blob(DV.to_blob(), expected_cardinality=2**64),
        lambda: DeletionVector.from_positions(["a"]),
        lambda: DeletionVector.from_positions([2**63]),
        lambda: DeletionVector.from_positions([1.5]),  # never truncated to 1
    ],
)
def test_deletion_vector_api_refuses_bad_ints(call: Any) -> None:
    with pytest.raises(ValidationError):
        call()


def test_deletion_vector_api_accepts_good_ints() -> None:
    import numpy as np

    assert DV.keep_mask(np.int64(0), np.int64(4)).to_pylist() == [True, False, False, True]
    assert DV.filter_rows(pa.record_batch({"a": [1, 2, 3]}), 1).num_rows == 1
    assert DeletionVector.from_blob(DV.to_blob(), expected_cardinality=2) == DV
    assert DeletionVector.from_positions([1.0, 2.0]) == DV


def test_deletion_vector_membership_of_any_int_is_a_plain_answer() -> None:
    assert 1 in DV
    assert 2**70 not in DV
    assert -1 not in DV
    assert "1" not in DV
    # the native bitmap answers the same for any value (it raised OverflowError)
    assert 1 in DV.bitmap
    assert 2**70 not in DV.bitmap and -1 not in DV.bitmap and "1" not in DV.bitmap
