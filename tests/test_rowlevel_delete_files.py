"""Delete-file writers: DV Puffin files (merged with existing deletes), position and equality
delete files, checked with icefloe's reader, PyIceberg's Puffin/DV reader and pyarrow."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
from pyiceberg.table.puffin import PuffinFile as PyIcebergPuffin

from icefloe.deletes import DeletionVector
from icefloe.exceptions import ValidationError
from icefloe.io import FileIO
from icefloe.puffin import DELETION_VECTOR_V1, ROW_POSITION_FIELD_ID, PuffinReader
from icefloe.scan import DataFileRef, FileScanTask, ReadOptions
from icefloe.schema import Schema
from icefloe.types import LongType, NestedField, StringType
from icefloe.values import from_bytes
from icefloe.write.delete_files import (
    FileDeletes,
    delete_ref,
    write_deletion_vectors,
    write_equality_deletes,
    write_position_deletes,
)
from support.read_util import read, write_data, write_dv, write_eq_deletes, write_pos_deletes

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType(), required=False),
)


def _data(tmp_path: Path, name: str, n: int) -> DataFileRef:
    rows = [{"id": i, "name": f"n{i % 7}"} for i in range(n)]
    return write_data(tmp_path / name, SCHEMA, rows)


def _pyiceberg_vectors(data: bytes) -> dict[str, pa.ChunkedArray]:
    """PyIceberg 0.12's decoding of every DV in a Puffin file, by referenced data file."""
    return {
        dv.referenced_data_file: dv.to_vector()
        for dv in deletion_vectors_from_puffin_file(PyIcebergPuffin(data))
    }


def _ids(task: FileScanTask) -> list[int]:
    return read(task, ReadOptions(SCHEMA)).column("id").to_pylist()


def test_dv_puffin_layout_and_readers(tmp_path: Path) -> None:
    a, b = _data(tmp_path, "a.parquet", 50), _data(tmp_path, "b.parquet", 30)
    loc = str(tmp_path / "dv.puffin")
    out, removed = write_deletion_vectors(
        FileIO(),
        loc,
        [FileDeletes(a, [3, 1, 3, 49]), FileDeletes(b, pa.array([0, 29], pa.int64()))],
    )
    assert removed == []
    assert [d.referenced_data_file for d in out] == sorted([a.file_path, b.file_path])
    data = Path(loc).read_bytes()
    reader = PuffinReader(data)
    assert reader.properties["created-by"].startswith("icefloe")
    for d, blob in zip(out, reader.blobs, strict=True):
        assert d.file_path == loc and d.file_format == "PUFFIN" and d.content == 1
        assert d.file_size_in_bytes == len(data)
        assert (d.content_offset, d.content_size_in_bytes) == (blob.offset, blob.length)
        assert blob.type == DELETION_VECTOR_V1
        assert blob.fields == (ROW_POSITION_FIELD_ID,)
        assert (blob.snapshot_id, blob.sequence_number) == (-1, -1)
        assert blob.compression_codec is None
        assert blob.properties["referenced-data-file"] == d.referenced_data_file
        assert int(blob.properties["cardinality"]) == d.record_count
    # footer JSON is plain (uncompressed) and carries no compression-codec key
    assert b'"compression-codec"' not in data
    # PyIceberg 0.12's DV reader agrees
    vectors = _pyiceberg_vectors(data)
    assert vectors[a.file_path].to_pylist() == [1, 3, 49]
    assert vectors[b.file_path].to_pylist() == [0, 29]
    # icefloe's reader applies them
    ta = FileScanTask(a, (delete_ref(out[0]),))
    assert _ids(ta) == [i for i in range(50) if i not in (1, 3, 49)]


def test_dv_merges_existing_dv_and_position_deletes(tmp_path: Path) -> None:
    a, b = _data(tmp_path, "a.parquet", 40), _data(tmp_path, "b.parquet", 40)
    old_dv = write_dv(tmp_path / "old.puffin", [0, 1, 2], a.file_path)
    scoped = write_pos_deletes(tmp_path / "scoped.parquet", [(a.file_path, 5)])
    scoped = type(scoped)(
        scoped.content, scoped.file_path, "parquet", 1, referenced_data_file=a.file_path
    )
    shared = write_pos_deletes(tmp_path / "shared.parquet", [(a.file_path, 7), (b.file_path, 8)])
    existing = (old_dv, scoped, shared)
    assert _ids(FileScanTask(a, existing)) == [i for i in range(40) if i not in (0, 1, 2, 5, 7)]
    out, removed = write_deletion_vectors(
        FileIO(), str(tmp_path / "new.puffin"), [FileDeletes(a, [10, 2], existing)]
    )
    assert len(out) == 1 and out[0].record_count == 6
    # the old DV and the file-scoped position file are superseded, the shared file stays
    assert set(removed) == {old_dv, scoped}
    merged = DeletionVector.from_blob(
        Path(out[0].file_path).read_bytes()[
            out[0].content_offset : out[0].content_offset + out[0].content_size_in_bytes
        ]
    )
    assert merged.positions().to_pylist() == [0, 1, 2, 5, 7, 10]
    # reading with the new DV alone gives the same rows as old deletes plus the new ones
    assert _ids(FileScanTask(a, (delete_ref(out[0]), shared))) == [
        i for i in range(40) if i not in (0, 1, 2, 5, 7, 10)
    ]


def test_dv_items_for_one_file_are_merged_and_empty_items_skipped(tmp_path: Path) -> None:
    a, b = _data(tmp_path, "a.parquet", 10), _data(tmp_path, "b.parquet", 10)
    loc = tmp_path / "x.puffin"
    out, _ = write_deletion_vectors(
        FileIO(), str(loc), [FileDeletes(a, [1]), FileDeletes(a, [2]), FileDeletes(b, [])]
    )
    assert [(d.referenced_data_file, d.record_count) for d in out] == [(a.file_path, 2)]
    out, _ = write_deletion_vectors(FileIO(), str(tmp_path / "none.puffin"), [FileDeletes(b, [])])
    assert out == [] and not (tmp_path / "none.puffin").exists()


def test_dv_position_past_end_is_rejected(tmp_path: Path) -> None:
    a = _data(tmp_path, "a.parquet", 10)
    loc = tmp_path / "bad.puffin"
    with pytest.raises(ValidationError, match=r"position 10 .*a\.parquet"):
        write_deletion_vectors(FileIO(), str(loc), [FileDeletes(a, [10])])
    assert not loc.exists()


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(0, 199), max_size=60),
    st.lists(st.integers(0, 199), max_size=60),
    st.lists(st.integers(0, 199), max_size=20),
)
def test_dv_merge_property(
    tmp_path_factory: pytest.TempPathFactory, old: list[int], pos: list[int], new: list[int]
) -> None:
    tmp = tmp_path_factory.mktemp("merge")
    a = _data(tmp, "a.parquet", 200)
    existing = []
    if old:
        existing.append(write_dv(tmp / "old.puffin", old, a.file_path))
    if pos:
        existing.append(write_pos_deletes(tmp / "pos.parquet", [(a.file_path, p) for p in pos]))
    out, _ = write_deletion_vectors(
        FileIO(), str(tmp / "new.puffin"), [FileDeletes(a, new, existing)]
    )
    expected = set(old) | set(pos) | set(new)
    if not new:
        assert out == []
        return
    vec = _pyiceberg_vectors(Path(out[0].file_path).read_bytes())[a.file_path]
    assert vec.to_pylist() == sorted(expected)
    assert _ids(FileScanTask(a, (delete_ref(out[0]),))) == [
        i for i in range(200) if i not in expected
    ]


def test_position_delete_file(tmp_path: Path) -> None:
    a, b = _data(tmp_path, "a.parquet", 20), _data(tmp_path, "b.parquet", 20)
    loc = tmp_path / "pos.parquet"
    d = write_position_deletes(
        FileIO(), str(loc), {b.file_path: [4, 2], a.file_path: pa.array([9, 0])}, 0, {}
    )
    assert d.content == 1 and d.file_format == "PARQUET" and d.record_count == 4
    assert d.referenced_data_file is None
    assert d.file_size_in_bytes == loc.stat().st_size
    t = pq.read_table(loc)
    assert t.schema.field("file_path").metadata[b"PARQUET:field_id"] == b"2147483546"
    assert t.schema.field("pos").metadata[b"PARQUET:field_id"] == b"2147483545"
    assert not t.schema.field("pos").nullable
    rows = list(zip(t.column("file_path").to_pylist(), t.column("pos").to_pylist(), strict=True))
    assert rows == sorted(rows) and len(rows) == 4
    assert from_bytes(StringType(), d.lower_bounds[2147483546]) == a.file_path
    assert from_bytes(StringType(), d.upper_bounds[2147483546]) == b.file_path
    assert from_bytes(LongType(), d.lower_bounds[2147483545]) == 0
    assert from_bytes(LongType(), d.upper_bounds[2147483545]) == 9
    assert d.value_counts == {2147483546: 4, 2147483545: 4}
    assert d.null_value_counts == {2147483546: 0, 2147483545: 0}
    # the reader applies it
    assert _ids(FileScanTask(a, (delete_ref(d),))) == [i for i in range(20) if i not in (0, 9)]
    single = write_position_deletes(
        FileIO(), str(tmp_path / "one.parquet"), {a.file_path: [1]}, 0, {}
    )
    assert single.referenced_data_file == a.file_path
    with pytest.raises(ValidationError):
        write_position_deletes(FileIO(), str(tmp_path / "none.parquet"), {}, 0, {})


def test_equality_delete_file(tmp_path: Path) -> None:
    a = _data(tmp_path, "a.parquet", 21)
    loc = tmp_path / "eq.parquet"
    keys = pa.table({"name": ["n1", "n3", "n1", None], "other": [1, 2, 3, 4]})
    d = write_equality_deletes(FileIO(), str(loc), keys, SCHEMA, [2], 0, {})
    assert d.content == 2 and d.equality_ids == [2] and d.record_count == 3  # deduplicated
    t = pq.read_table(loc)
    assert t.column_names == ["name"]
    assert t.schema.field("name").metadata[b"PARQUET:field_id"] == b"2"
    assert sorted(t.column("name").to_pylist(), key=str) == ["None", "n1", "n3"] or sorted(
        t.column("name").to_pylist(), key=lambda v: (v is None, v)
    ) == ["n1", "n3", None]
    assert d.null_value_counts == {2: 1}
    assert _ids(FileScanTask(a, (delete_ref(d),))) == [i for i in range(21) if i % 7 not in (1, 3)]
    # agrees with a hand-written equality delete file read the same way
    ref = write_eq_deletes(tmp_path / "ref.parquet", SCHEMA, (2,), [{"name": "n1"}, {"name": "n3"}])
    assert _ids(FileScanTask(a, (ref,))) == _ids(FileScanTask(a, (delete_ref(d),)))


def test_equality_delete_rejects_bad_columns(tmp_path: Path) -> None:
    from icefloe.types import DoubleType

    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "x", DoubleType()))
    keys = pa.table({"id": [1], "x": [1.0]})
    with pytest.raises(ValidationError, match="'x'"):
        write_equality_deletes(FileIO(), str(tmp_path / "e.parquet"), keys, schema, [2], 0, {})
    with pytest.raises(ValidationError, match="9"):
        write_equality_deletes(FileIO(), str(tmp_path / "e.parquet"), keys, schema, [9], 0, {})
    with pytest.raises(ValidationError, match="'id'"):
        write_equality_deletes(
            FileIO(), str(tmp_path / "e.parquet"), pa.table({"x": [1.0]}), schema, [1], 0, {}
        )


def test_entry_dict_shape(tmp_path: Path) -> None:
    a = _data(tmp_path, "a.parquet", 5)
    out, _ = write_deletion_vectors(FileIO(), str(tmp_path / "d.puffin"), [FileDeletes(a, [1])])
    entry = out[0].to_entry()
    assert entry["partition"] == {}
    assert entry["file_format"] == "PUFFIN" and entry["referenced_data_file"] == a.file_path
    assert entry["record_count"] == 1 and entry["content"] == 1
    json.dumps(entry)  # plain values only


def test_delete_files_delta_encode_sorted_integer_columns(tmp_path: Path) -> None:
    """Equality deletes are written sorted, with integer keys delta-encoded (reading unique
    keys from dictionary or plain zstd pages cost four times as much); position deletes
    delta-encode their sorted positions and dictionary-encode their few paths. DuckDB reads
    both back (an independent Parquet decoder)."""
    import duckdb

    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType(), required=False),
    )
    keys = pa.table({"id": pa.array([5, 3, 9, 3, 1] * 100 + list(range(1000, 6000)), pa.int64())})
    eq = tmp_path / "eq.parquet"
    write_equality_deletes(FileIO(), str(eq), keys, schema, [1], 0, {})
    col = pq.read_metadata(eq).row_group(0).column(0)
    assert "DELTA_BINARY_PACKED" in col.encodings and not col.has_dictionary_page
    got = pq.read_table(eq).column("id").to_pylist()
    assert got == sorted(set(keys.column("id").to_pylist()))
    a = _data(tmp_path, "a.parquet", 20)
    pos = tmp_path / "pos.parquet"
    write_position_deletes(FileIO(), str(pos), {a.file_path: list(range(0, 20, 3))}, 0, {})
    meta = pq.read_metadata(pos).row_group(0)
    assert meta.column(0).has_dictionary_page
    assert "DELTA_BINARY_PACKED" in meta.column(1).encodings
    con = duckdb.connect()
    assert [r[0] for r in con.execute(f"select id from '{eq}'").fetchall()] == got
    assert con.execute(f"select list(pos order by pos) from '{pos}'").fetchone()[0] == list(
        range(0, 20, 3)
    )
