"""Row-level deletes when reading: deletion vectors, position and equality delete files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from icefloe.arrow_schema import schema_to_arrow
from icefloe.exceptions import CorruptFileError, FileIOError, ValidationError
from icefloe.io import FileIO
from icefloe.read import DeleteCache, read_task, read_tasks
from icefloe.scan import DataFileRef, DeleteContent, DeleteFileRef, FileScanTask, ReadOptions
from icefloe.schema import Schema
from icefloe.table.row_delta import RowDelta, commit_row_delta
from icefloe.types import IntegerType, LongType, NestedField, StringType, StructType
from icefloe.write.files import DataFile
from support.read_tables import write_file
from support.read_util import read, write_data, write_dv, write_eq_deletes, write_pos_deletes
from support.testdata import TESTDATA
from support.write_util import catalog

SCHEMA = Schema(
    NestedField(1, "id", IntegerType(), True),
    NestedField(2, "cat", StringType()),
    NestedField(3, "n", IntegerType()),
)
ROWS = [{"id": i, "cat": None if i % 5 == 0 else f"c{i % 3}", "n": i % 4} for i in range(100)]
OPTS = ReadOptions(SCHEMA, metadata_columns=("_pos",))


def _ids(task: FileScanTask, opts: ReadOptions = OPTS) -> list[int]:
    return read(task, opts).column("id").to_pylist()


def test_deletion_vector_by_offset(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", SCHEMA, ROWS, row_group_size=30)
    dv = write_dv(tmp_path / "dv.puffin", [0, 31, 99, 50], df.file_path)
    assert _ids(FileScanTask(df, (dv,))) == [i for i in range(100) if i not in (0, 31, 50, 99)]


def test_deletion_vector_cardinality_and_crc_checked(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", SCHEMA, ROWS)
    dv = write_dv(tmp_path / "dv.puffin", [1, 2], df.file_path)
    wrong = DeleteFileRef(
        DeleteContent.POSITION_DELETES,
        dv.file_path,
        "puffin",
        record_count=3,
        content_offset=dv.content_offset,
        content_size_in_bytes=dv.content_size_in_bytes,
    )
    with pytest.raises(CorruptFileError, match=r"dv\.puffin"):
        _ids(FileScanTask(df, (wrong,)))
    raw = bytearray((tmp_path / "dv.puffin").read_bytes())
    assert dv.content_offset is not None and dv.content_size_in_bytes is not None
    raw[dv.content_offset + dv.content_size_in_bytes - 1] ^= 0xFF  # last CRC byte
    (tmp_path / "dv.puffin").write_bytes(bytes(raw))
    with pytest.raises(CorruptFileError, match=r"dv\.puffin"):
        _ids(FileScanTask(df, (dv,)))


def test_missing_delete_file_fails_before_rows(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", SCHEMA, ROWS)
    gone = DeleteFileRef(DeleteContent.POSITION_DELETES, str(tmp_path / "gone.parquet"))
    it = read_task(FileIO(), FileScanTask(df, (gone,)), OPTS)
    with pytest.raises(FileIOError, match=r"gone\.parquet"):
        next(it)


def test_position_delete_file_for_many_data_files(tmp_path: Path) -> None:
    a = write_data(tmp_path / "a.parquet", SCHEMA, ROWS)
    b = write_data(tmp_path / "b.parquet", SCHEMA, ROWS)
    pos = write_pos_deletes(
        tmp_path / "pos.parquet",
        [(a.file_path, 3), (b.file_path, 4), (a.file_path, 7), ("other", 1)],
    )
    cache = DeleteCache()
    ta, tb = FileScanTask(a, (pos,)), FileScanTask(b, (pos,))
    got_a = [r["id"] for batch in read_task(FileIO(), ta, OPTS, cache) for r in batch.to_pylist()]
    got_b = [r["id"] for batch in read_task(FileIO(), tb, OPTS, cache) for r in batch.to_pylist()]
    assert got_a == [i for i in range(100) if i not in (3, 7)]
    assert got_b == [i for i in range(100) if i != 4]
    assert cache.loads == 1  # the shared delete file was decoded once
    total = sum(b.num_rows for b in read_tasks(FileIO(), [ta, tb], OPTS))
    assert total == 197


@pytest.mark.parametrize("row_group_size", [None, 2])
def test_position_delete_file_for_one_data_file_read_by_stats(
    tmp_path: Path, row_group_size: int | None
) -> None:
    """A delete file whose file_path statistics name one data file is read by positions alone;
    statistics that name several files (or none) fall back to reading file_path."""
    from icefloe.read.deletes import _single_data_file

    a = write_data(tmp_path / "a.parquet", SCHEMA, ROWS)
    one = write_pos_deletes(tmp_path / "one.parquet", [(a.file_path, p) for p in (9, 2, 50)])
    if row_group_size:
        t = pq.read_table(one.file_path)
        pq.write_table(t, one.file_path, row_group_size=row_group_size)
    assert _single_data_file(pq.ParquetFile(one.file_path), "file_path") == a.file_path
    assert _ids(FileScanTask(a, (one,))) == [i for i in range(100) if i not in (2, 9, 50)]
    # Two files, split so that each row group names exactly one of them: no shortcut.
    two = write_pos_deletes(tmp_path / "two.parquet", [(a.file_path, 1), ("z-other", 5)])
    pq.write_table(pq.read_table(two.file_path), two.file_path, row_group_size=1)
    assert _single_data_file(pq.ParquetFile(two.file_path), "file_path") is None
    assert _ids(FileScanTask(a, (two,))) == [i for i in range(100) if i != 1]
    # No statistics: no shortcut, same rows.
    nostats = write_pos_deletes(tmp_path / "nostats.parquet", [(a.file_path, 0)])
    pq.write_table(pq.read_table(nostats.file_path), nostats.file_path, write_statistics=False)
    assert _single_data_file(pq.ParquetFile(nostats.file_path), "file_path") is None
    assert _ids(FileScanTask(a, (nostats,))) == list(range(1, 100))
    # A delete file for another data file only deletes nothing here.
    other = write_pos_deletes(tmp_path / "other.parquet", [("elsewhere", 3)])
    assert _ids(FileScanTask(a, (other,))) == list(range(100))


def _referencing(d: DeleteFileRef, data_path: str) -> DeleteFileRef:
    return DeleteFileRef(
        d.content, d.file_path, d.file_format, d.record_count, referenced_data_file=data_path
    )


def test_position_delete_file_named_in_its_manifest_is_opened_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delete file whose entry names the data file (``referenced_data_file``) is checked and
    read in one open; when its statistics do not prove the name (none written, or rows of
    another file in it) the general path reads it, with the same rows."""
    from icefloe.read import deletes as rd

    a = write_data(tmp_path / "a.parquet", SCHEMA, ROWS)
    opens: list[str] = []
    real_open = rd.open_checked

    def counting(io: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        opens.append(path)
        return real_open(io, path, *args, **kwargs)

    monkeypatch.setattr(rd, "open_checked", counting)
    one = write_pos_deletes(tmp_path / "one.parquet", [(a.file_path, p) for p in (9, 2, 50)])
    want = [i for i in range(100) if i not in (2, 9, 50)]
    assert _ids(FileScanTask(a, (one,))) == want
    assert len(opens) == 1  # the footer names this task's data file: positions in the same open
    opens.clear()
    assert _ids(FileScanTask(a, (_referencing(one, a.file_path),))) == want
    assert len(opens) == 1
    nostats = write_pos_deletes(tmp_path / "nostats.parquet", [(a.file_path, 0)])
    pq.write_table(pq.read_table(nostats.file_path), nostats.file_path, write_statistics=False)
    assert _ids(FileScanTask(a, (_referencing(nostats, a.file_path),))) == list(range(1, 100))
    # an entry that names the file wrongly (rows of another file too): no shortcut
    mixed = write_pos_deletes(tmp_path / "mixed.parquet", [(a.file_path, 4), ("z-other", 5)])
    assert _ids(FileScanTask(a, (_referencing(mixed, a.file_path),))) == [
        i for i in range(100) if i != 4
    ]


def test_position_delete_files_of_other_data_files_are_not_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every task lists every position delete file (no referenced_data_file, as v2 writers
    leave it): a task decodes only the one whose statistics name its data file, and the
    result equals that of the full file_path index (the oracle)."""
    from icefloe.read import deletes as rd

    data = [write_data(tmp_path / f"d{i}.parquet", SCHEMA, ROWS) for i in range(4)]
    pos = tuple(
        write_pos_deletes(tmp_path / f"p{i}.parquet", [(df.file_path, i), (df.file_path, 90 + i)])
        for i, df in enumerate(data)
    )
    tasks = [FileScanTask(df, pos) for df in data]
    decoded: list[str] = []
    real = rd._positions

    def spy(pf: Any, pos_col: str, path: str) -> Any:
        decoded.append(Path(path).name)
        return real(pf, pos_col, path)

    monkeypatch.setattr(rd, "_positions", spy)
    cache = DeleteCache()
    got = [
        [r["id"] for b in read_task(FileIO(), t, OPTS, cache) for r in b.to_pylist()] for t in tasks
    ]
    assert got == [[j for j in range(100) if j not in (i, 90 + i)] for i in range(4)]
    assert decoded == ["p0.parquet", "p1.parquet", "p2.parquet", "p3.parquet"]
    assert cache.loads == 4  # footers are kept apart and evict nothing
    # Oracle: the same rows through the full (file_path, pos) index of every delete file.
    monkeypatch.setattr(rd, "_single_data_file", lambda pf, col: None)
    oracle = [_ids(t) for t in tasks]
    assert oracle == got


def test_equality_deletes_null_equals_null_and_mixed_id_sets(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", SCHEMA, ROWS)
    by_cat = write_eq_deletes(tmp_path / "e1.parquet", SCHEMA, (2,), [{"cat": None}])
    by_pair = write_eq_deletes(
        tmp_path / "e2.parquet", SCHEMA, (2, 3), [{"cat": "c1", "n": 1}, {"cat": "c2", "n": 0}]
    )
    got = _ids(FileScanTask(df, (by_cat, by_pair)))
    want = [
        r["id"]
        for r in ROWS
        if r["cat"] is not None
        and (r["cat"], r["n"]) != ("c1", 1)
        and (r["cat"], r["n"]) != ("c2", 0)
    ]
    assert got == want


def test_equality_delete_on_dropped_and_unprojected_column(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", SCHEMA, ROWS)
    eq = write_eq_deletes(tmp_path / "e.parquet", SCHEMA, (3,), [{"n": 2}])
    # Column 3 was later dropped from the table; the deletes still apply.
    dropped = Schema(NestedField(1, "id", IntegerType(), True), NestedField(2, "cat", StringType()))
    got = _ids(FileScanTask(df, (eq,)), ReadOptions(dropped))
    assert got == [r["id"] for r in ROWS if r["n"] != 2]
    # Still in the table but not projected.
    got = _ids(FileScanTask(df, (eq,)), ReadOptions(SCHEMA, projected_field_ids=(1,)))
    assert got == [r["id"] for r in ROWS if r["n"] != 2]


@pytest.mark.parametrize("file_format", ["parquet", "orc", "avro"])
def test_equality_deletes_on_fields_nested_in_structs(tmp_path: Path, file_format: str) -> None:
    """Equality delete files on fields of structs, at depth one and two (written as Iceberg
    Java writes them: the structs holding only the key field), delete the rows whose field
    equals a key; a null key deletes the rows whose field is null, also those whose struct is
    null (the spec: a null parent implies a null leaf). Such files made the whole table
    unreadable ("has no column for equality ids")."""
    inner = StructType(NestedField(6, "x", LongType()))
    struct = StructType(
        NestedField(3, "id", LongType()),
        NestedField(4, "tag", StringType()),
        NestedField(5, "inner", inner),
    )
    schema = Schema(NestedField(1, "k", LongType(), True), NestedField(2, "s", struct))
    t = catalog(tmp_path).create_table("ns.t", schema, properties={"format-version": "2"})
    rows: list[dict[str, Any]] = [
        {"k": 1, "s": {"id": 10, "tag": "a", "inner": {"x": 1}}},
        {"k": 2, "s": {"id": 20, "tag": "b", "inner": {"x": 2}}},
        {"k": 3, "s": None},
        {"k": 4, "s": {"id": None, "tag": "x", "inner": {"x": 3}}},
        {"k": 5, "s": {"id": 30, "tag": "c", "inner": None}},
        {"k": 6, "s": {"id": 40, "tag": "d", "inner": {"x": 7}}},
        {"k": 7, "s": {"id": 50, "tag": "e", "inner": {"x": None}}},
    ]
    t.append(pa.Table.from_pylist(rows, schema=schema_to_arrow(schema)))
    by_id = [20, None]  # keys of s.id
    by_x = [7]  # keys of s.inner.x
    id_only = StructType(NestedField(3, "id", LongType()))
    inner_only = StructType(NestedField(5, "inner", inner))
    deletes = [
        (3, id_only, [{"id": v} for v in by_id]),
        (6, inner_only, [{"inner": {"x": v}} for v in by_x]),
    ]
    files = []
    for fid, sub, keys in deletes:
        path = Path(t.metadata.location.removeprefix("file://")) / f"data/eq-{fid}.{file_format}"
        sub_arrow = schema_to_arrow(Schema(NestedField(2, "s", sub)))
        write_file(pa.Table.from_pylist([{"s": k} for k in keys], sub_arrow), path, file_format)
        files.append(
            DataFile(
                file_path=path.as_uri(),
                file_format=file_format.upper(),
                record_count=len(keys),
                file_size_in_bytes=path.stat().st_size,
                content=2,
                equality_ids=[fid],
            )
        )
    with t.transaction() as tx:
        commit_row_delta(tx, RowDelta(added_deletes=files), operation="delete")
    t = t.refresh()

    def leaf(row: dict[str, Any], *path: str) -> Any:
        value: Any = row
        for name in path:
            value = None if value is None else value[name]
        return value

    kept = [
        r
        for r in rows
        if leaf(r, "s", "id") not in by_id and leaf(r, "s", "inner", "x") not in by_x
    ]
    assert [r["k"] for r in kept] == [1, 5, 7]
    assert t.scan().to_arrow().sort_by("k").to_pylist() == kept
    assert t.scan(selected_fields=("k",)).to_arrow()["k"].to_pylist() == [1, 5, 7]
    got = t.scan(selected_fields=("k", "s.tag")).to_arrow().sort_by("k")
    assert got.to_pylist() == [{"k": r["k"], "s": {"tag": r["s"]["tag"]}} for r in kept]
    assert t.scan(row_filter="k > 1").to_arrow()["k"].to_pylist() == [5, 7]
    assert t.scan().count() == 3


def test_equality_deletes_on_a_nested_default_spare_null_structs(tmp_path: Path) -> None:
    """A field added to a struct with an initial default reads as that default in older
    rows, but as null where the struct itself is null; an equality delete of the default
    value deletes only the rows holding it. It also deleted the rows whose struct was null."""
    struct = StructType(NestedField(3, "tag", StringType()))
    schema = Schema(NestedField(1, "k", LongType(), True), NestedField(2, "s", struct))
    t = catalog(tmp_path).create_table("ns.t", schema, properties={"format-version": "3"})
    rows = [{"k": 1, "s": {"tag": "a"}}, {"k": 2, "s": None}]
    t.append(pa.Table.from_pylist(rows, schema=schema_to_arrow(schema)))
    with t.update_schema() as u:
        u.add_column(("s", "id"), LongType(), initial_default=5)
    t = t.refresh()
    fid = t.schema().find_field("s.id").field_id
    sub = Schema(NestedField(2, "s", StructType(NestedField(fid, "id", LongType()))))
    path = Path(t.metadata.location.removeprefix("file://")) / "data/eq.parquet"
    pq.write_table(pa.Table.from_pylist([{"s": {"id": 5}}], schema=schema_to_arrow(sub)), path)
    eq = DataFile(
        file_path=path.as_uri(),
        record_count=1,
        file_size_in_bytes=path.stat().st_size,
        content=2,
        equality_ids=[fid],
    )
    with t.transaction() as tx:
        commit_row_delta(tx, RowDelta(added_deletes=[eq]), operation="delete")
    assert t.refresh().scan().to_arrow().to_pylist() == [{"k": 2, "s": None}]


def test_equality_delete_compared_after_promotion(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", SCHEMA, ROWS)
    promoted = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "cat", StringType()),
        NestedField(3, "n", LongType()),
    )
    eq = write_eq_deletes(tmp_path / "e.parquet", promoted, (1,), [{"id": 10}, {"id": 11}])
    got = read(FileScanTask(df, (eq,)), ReadOptions(promoted)).column("id").to_pylist()
    assert got == [i for i in range(100) if i not in (10, 11)]


def test_all_three_kinds_and_deleted_marker(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", SCHEMA, ROWS, row_group_size=17)
    dv = write_dv(tmp_path / "dv.puffin", [1, 2], df.file_path)
    pos = write_pos_deletes(tmp_path / "p.parquet", [(df.file_path, 2), (df.file_path, 3)])
    eq = write_eq_deletes(tmp_path / "e.parquet", SCHEMA, (1,), [{"id": 4}, {"id": 99}])
    task = FileScanTask(df, (dv, pos, eq))
    assert _ids(task) == [i for i in range(100) if i not in (1, 2, 3, 4, 99)]
    marked = read(task, ReadOptions(SCHEMA, metadata_columns=("_deleted", "_pos")))
    assert marked.num_rows == 100
    assert [
        p
        for p, d in zip(
            marked.column("_pos").to_pylist(), marked.column("_deleted").to_pylist(), strict=True
        )
        if d
    ] == [1, 2, 3, 4, 99]


def test_row_lineage_inherited_and_stored(tmp_path: Path) -> None:
    lineage = Schema(
        NestedField(1, "id", IntegerType(), True),
        NestedField(2147483540, "_row_id", LongType()),
        NestedField(2147483539, "_last_updated_sequence_number", LongType()),
    )
    rows = [
        {"id": 0, "_row_id": None, "_last_updated_sequence_number": None},
        {"id": 1, "_row_id": 500, "_last_updated_sequence_number": 3},
        {"id": 2, "_row_id": None, "_last_updated_sequence_number": None},
    ]
    df = write_data(tmp_path / "d.parquet", lineage, rows)
    opts = ReadOptions(
        SCHEMA,
        projected_field_ids=(1,),
        metadata_columns=("_row_id", "_last_updated_sequence_number"),
        format_version=3,
    )
    with_ids = DataFileRef(df.file_path, record_count=3, first_row_id=100, data_sequence_number=7)
    out = read(FileScanTask(with_ids), opts)
    assert out.column("_row_id").to_pylist() == [100, 500, 102]
    assert out.column("_last_updated_sequence_number").to_pylist() == [7, 3, 7]
    # without a first row id (a file from before an upgrade to v3) both columns are null,
    # whatever the file stores (spec; Iceberg Java reads them so)
    without = DataFileRef(df.file_path, record_count=3, data_sequence_number=7)
    out = read(FileScanTask(without), opts)
    assert out.column("_row_id").to_pylist() == [None, None, None]
    assert out.column("_last_updated_sequence_number").to_pylist() == [None, None, None]
    plain = write_data(tmp_path / "p.parquet", SCHEMA, ROWS[:3])
    out = read(
        FileScanTask(DataFileRef(plain.file_path, first_row_id=10, data_sequence_number=2)), opts
    )
    assert out.column("_row_id").to_pylist() == [10, 11, 12]
    assert out.column("_last_updated_sequence_number").to_pylist() == [2, 2, 2]


def test_dv_for_another_file_rejected(tmp_path: Path) -> None:
    df = write_data(tmp_path / "d.parquet", SCHEMA, ROWS)
    dv = write_dv(tmp_path / "dv.puffin", [1], "s3://elsewhere/x.parquet")
    with pytest.raises(ValidationError, match=r"dv\.puffin"):
        _ids(FileScanTask(df, (dv,)))


def test_java_golden_dv_blob_applied_by_offset(tmp_path: Path) -> None:
    blob = (
        TESTDATA / "iceberg-java/deletes/small-alternating-values-position-index.bin"
    ).read_bytes()
    df = write_data(tmp_path / "d.parquet", SCHEMA, ROWS[:12])
    (tmp_path / "x.puffin").write_bytes(b"PFA1" + b"\x00" * 13 + blob)
    dv = DeleteFileRef(
        DeleteContent.POSITION_DELETES,
        str(tmp_path / "x.puffin"),
        "puffin",
        record_count=5,
        content_offset=17,
        content_size_in_bytes=len(blob),
    )
    assert _ids(FileScanTask(df, (dv,))) == [0, 2, 4, 6, 8, 10, 11]


def test_fully_deleted_row_groups_are_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    df = write_data(tmp_path / "d.parquet", SCHEMA, ROWS, row_group_size=20)
    gone = list(range(20, 40)) + list(range(80, 100))  # row groups 1 and 4 entirely
    dv = write_dv(tmp_path / "dv.puffin", [*gone, 5], df.file_path)
    asked: list[list[int]] = []
    real = pq.ParquetFile.iter_batches

    def spy(self: pq.ParquetFile, *args: Any, **kw: Any) -> Any:
        asked.append(list(kw["row_groups"]))
        return real(self, *args, **kw)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    t = read(FileScanTask(df, (dv,)), OPTS)
    keep = [i for i in range(100) if i not in gone and i != 5]
    assert t.column("id").to_pylist() == keep
    assert t.column("_pos").to_pylist() == keep
    assert asked == [[0], [2, 3]]
    # Asked for _deleted, every row is read and marked.
    asked.clear()
    opts = ReadOptions(SCHEMA, metadata_columns=("_pos", "_deleted"))
    t = read(FileScanTask(df, (dv,)), opts)
    assert t.column("_pos").to_pylist() == list(range(100))
    assert [i for i, d in enumerate(t.column("_deleted").to_pylist()) if d] == sorted([*gone, 5])
    assert asked == [[0, 1, 2, 3, 4]]


@pytest.mark.parametrize("row_group_size", [None, 16])
def test_positions_dropped_as_read_equal_the_marked_rows(
    tmp_path: Path, row_group_size: int | None
) -> None:
    """Deleted positions are dropped from each batch as read (before projection); with every
    kind of delete, a residual filter and _pos/_row_id/_file requested, the rows and their
    metadata equal those that the _deleted path (every row read, deletes only marked) keeps."""
    from icefloe.expressions.binding import bind
    from icefloe.expressions.builder import col

    rows = [{"id": i, "cat": None if i % 7 == 0 else f"c{i % 4}", "n": i % 5} for i in range(300)]
    kw = {} if row_group_size is None else {"row_group_size": row_group_size}
    df = write_data(tmp_path / "d.parquet", SCHEMA, rows, **kw)
    df = DataFileRef(df.file_path, "parquet", 300, df.file_size_in_bytes, first_row_id=1000)
    dv = write_dv(tmp_path / "dv.puffin", [*range(16, 32), 3, 99, 250, 299], df.file_path)
    pos = write_pos_deletes(tmp_path / "pos.parquet", [(df.file_path, p) for p in (5, 6, 100)])
    eq = write_eq_deletes(tmp_path / "eq.parquet", SCHEMA, (3,), [{"n": 4}])
    residual = bind(SCHEMA, col("id") < 280)
    task = FileScanTask(df, (dv, pos, eq), residual=residual)
    meta = ("_file", "_pos", "_row_id")
    got = read(task, ReadOptions(SCHEMA, metadata_columns=meta))
    marked = read(task, ReadOptions(SCHEMA, metadata_columns=(*meta, "_deleted")))
    oracle = marked.filter(pc.invert(marked.column("_deleted"))).drop_columns(["_deleted"])
    assert got.equals(oracle)
    deleted = {*range(16, 32), 3, 99, 250, 299, 5, 6, 100}
    want = [i for i in range(280) if i not in deleted and i % 5 != 4]
    assert got.column("_pos").to_pylist() == want
    assert got.column("_row_id").to_pylist() == [1000 + i for i in want]
    assert got.column("cat").to_pylist() == [rows[i]["cat"] for i in want]


def test_small_files_read_dictionary_columns_plain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below MIN_DICTIONARY_VALUES values of dictionary-encoded columns in the file (32,768 by
    default), they are read plain: opening the file again to read them as dictionaries costs
    more than the Rust decode saves. Counted over the file's rows and such columns."""
    from icefloe.io import FileIO
    from icefloe.read import reader as rr
    from icefloe.read.parquet_file import open_checked

    rows = [{"id": i, "cat": f"c{i % 6}", "n": i % 4} for i in range(500)]
    path = write_data(tmp_path / "dict.parquet", SCHEMA, rows, row_group_size=128).file_path
    checked = open_checked(FileIO(), path)
    layout = rr._FileLayout(checked.schema, checked.schema, SCHEMA)
    monkeypatch.setattr(rr, "MIN_DICTIONARY_VALUES", 32_768)
    assert rr._dictionary_columns(checked, layout, ["id", "cat"]) == []
    monkeypatch.setattr(rr, "MIN_DICTIONARY_VALUES", 500)
    assert rr._dictionary_columns(checked, layout, ["id", "cat"]) == ["cat"]
    monkeypatch.setattr(rr, "MIN_DICTIONARY_VALUES", 501)
    assert rr._dictionary_columns(checked, layout, ["id", "cat"]) == []


def test_dictionary_encoded_strings_read_as_dictionaries_give_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """String columns stored dictionary-encoded with a small dictionary are read as Arrow
    dictionaries and decoded after the delete filter; the batches equal a plain read (the
    oracle) exactly, types included. Plain-encoded columns and large dictionaries (which may
    have fallen back to plain pages) are read plain."""
    from icefloe.io import FileIO
    from icefloe.read import reader as rr
    from icefloe.read.parquet_file import open_checked

    rows = [{"id": i, "cat": None if i % 9 == 0 else f"c{i % 6}", "n": i % 4} for i in range(500)]
    dict_file = write_data(tmp_path / "dict.parquet", SCHEMA, rows, row_group_size=128)
    plain_file = write_data(tmp_path / "plain.parquet", SCHEMA, rows, use_dictionary=False)
    io = FileIO()

    def dictionary_columns(path: str, names: list[str]) -> list[str]:
        checked = open_checked(io, path)
        layout = rr._FileLayout(checked.schema, checked.schema, SCHEMA)
        return rr._dictionary_columns(checked, layout, names)

    assert dictionary_columns(dict_file.file_path, ["id", "cat"]) == ["cat"]
    assert dictionary_columns(plain_file.file_path, ["cat"]) == []
    monkeypatch.setattr(rr, "MAX_DICTIONARY_PAGE", 8)
    assert dictionary_columns(dict_file.file_path, ["cat"]) == []
    monkeypatch.undo()
    # Leaves of nested columns before a string column are counted (oracle: the footer's paths).
    nested = pa.table(
        {
            "st": pa.array([{"a": 1, "b": "x"}] * 50),
            "ls": pa.array([[{"k": 1, "v": 2.0}]] * 50),
            "mp": pa.array([[("k", 1)]] * 50, pa.map_(pa.string(), pa.int64())),
            "s": pa.array(["u", "v"] * 25),
            "p": pa.array([f"{i}" for i in range(50)]),
        }
    )
    nested_path = str(tmp_path / "nested.parquet")
    pq.write_table(nested, nested_path, use_dictionary=["s"])
    checked = open_checked(io, nested_path)
    layout = rr._FileLayout(checked.schema, checked.schema, SCHEMA)
    meta = checked.file.metadata
    paths = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    assert layout.string_leaves == {"s": paths["s"], "p": paths["p"]}
    assert rr._dictionary_columns(checked, layout, ["st", "s", "p"]) == ["s"]
    dv = write_dv(tmp_path / "dv.puffin", [0, 1, 2, 200, 499], dict_file.file_path)
    opts = ReadOptions(SCHEMA, metadata_columns=("_pos",))
    tasks = [FileScanTask(dict_file), FileScanTask(dict_file, (dv,)), FileScanTask(plain_file)]
    got = [read(t, opts) for t in tasks]
    monkeypatch.setattr(rr, "_dictionary_columns", lambda checked, layout, names: [])
    oracle = [read(t, opts) for t in tasks]
    for a, b in zip(got, oracle, strict=True):
        assert a.schema == b.schema
        assert a.equals(b)
    assert got[1].num_rows == 495
    assert pa.types.is_string(got[1].schema.field("cat").type)


def test_equality_delete_files_with_equal_keys_share_one_hash_set(tmp_path: Path) -> None:
    """Files holding the same keys (as a delete writes to every partition when its keys do
    not determine the partition) are hashed once per read; files whose keys merely look alike
    (same count, first and last key) are not taken for equal, and every read is right."""
    from icefloe.read.deletes import TaskDeletes

    keys = [{"id": i, "cat": f"c{i}"} for i in (1, 5, 9, 13)]
    alike = [{"id": i, "cat": f"c{i}"} for i in (1, 6, 9, 13)]  # same ends, another middle
    same = [write_eq_deletes(tmp_path / f"same{i}.parquet", SCHEMA, (1, 2), keys) for i in (0, 1)]
    other = write_eq_deletes(tmp_path / "alike.parquet", SCHEMA, (1, 2), alike)
    cache = DeleteCache()

    def load(d: DeleteFileRef, data: str) -> TaskDeletes:
        return TaskDeletes.load(FileIO(), data, (d,), cache, None)

    a, b, c = load(same[0], "a.parquet"), load(same[1], "b.parquet"), load(other, "c.parquet")
    assert a.equality is b.equality
    assert c.equality is not a.equality
    # One read, one cache: each file keeps exactly the rows its own delete file leaves.
    rows = [{"id": i, "cat": f"c{i}", "n": 0} for i in range(16)]
    files = [write_data(tmp_path / f"d{i}.parquet", SCHEMA, rows) for i in range(3)]
    tasks = [FileScanTask(f, (d,)) for f, d in zip(files, [*same, other], strict=True)]
    got = pa.Table.from_batches(read_tasks(FileIO(), tasks, ReadOptions(SCHEMA)))
    kept = [i for i in range(16) if i not in (1, 5, 9, 13)]
    want = kept * 2 + [i for i in range(16) if i not in (1, 6, 9, 13)]
    assert got.column("id").to_pylist() == want


@pytest.mark.parametrize(
    ("eq_ids", "keys"),
    [
        ((3,), [{"n": 4}]),
        ((2,), [{"cat": "c1"}, {"cat": None}]),
        ((2, 3), [{"cat": "c2", "n": 2}, {"cat": None, "n": 0}]),
    ],
)
def test_equality_deletes_matched_as_read_equal_the_marked_rows(
    tmp_path: Path, eq_ids: tuple[int, ...], keys: list[dict[str, Any]]
) -> None:
    """Equality deletes on columns stored as the table reads them drop rows from each batch as
    read, in the pass that decodes dictionary columns; with a residual filter and
    _pos/_row_id/_file requested, the rows equal those the _deleted path keeps (every row
    read, deletes only marked), and those of a table that promoted the column (matched after
    projection)."""
    from icefloe.expressions.binding import bind
    from icefloe.expressions.builder import col

    rows = [{"id": i, "cat": None if i % 7 == 0 else f"c{i % 4}", "n": i % 5} for i in range(300)]
    df = write_data(tmp_path / "d.parquet", SCHEMA, rows, row_group_size=64)
    df = DataFileRef(df.file_path, "parquet", 300, df.file_size_in_bytes, first_row_id=1000)
    eq = write_eq_deletes(tmp_path / "eq.parquet", SCHEMA, eq_ids, keys)
    residual = bind(SCHEMA, col("id") < 280)
    task = FileScanTask(df, (eq,), residual=residual)
    meta = ("_file", "_pos", "_row_id")
    got = read(task, ReadOptions(SCHEMA, metadata_columns=meta))
    marked = read(task, ReadOptions(SCHEMA, metadata_columns=(*meta, "_deleted")))
    oracle = marked.filter(pc.invert(marked.column("_deleted"))).drop_columns(["_deleted"])
    assert got.equals(oracle)
    gone = [
        i
        for i, r in enumerate(rows)
        if any(
            all(r[SCHEMA.find_field(f).name] == k[SCHEMA.find_field(f).name] for f in eq_ids)
            for k in keys
        )
    ]
    want = [i for i in range(280) if i not in gone]
    assert got.column("_pos").to_pylist() == want
    assert got.column("_row_id").to_pylist() == [1000 + i for i in want]
    assert got.column("cat").to_pylist() == [rows[i]["cat"] for i in want]
    assert pa.types.is_string(got.schema.field("cat").type)
    promoted = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "cat", StringType()),
        NestedField(3, "n", LongType()),
    )
    late = read(FileScanTask(df, (eq,)), ReadOptions(promoted, metadata_columns=("_pos",)))
    assert late.column("_pos").to_pylist() == [i for i in range(300) if i not in gone]


def test_equality_delete_files_with_equal_bytes_are_decoded_once(tmp_path: Path) -> None:
    """A small equality delete file whose bytes equal a file read before (for the same
    equality ids) gets that file's table without a decode; a copy with one byte changed in
    its data pages is decoded (and its damaged page refused), never taken for the first."""
    from icefloe.read import deletes as rd

    keys = [{"id": i} for i in range(0, 1000, 7)]
    table = pa.table({"id": pa.array([k["id"] for k in keys], pa.int32())})
    pq.write_table(
        table.cast(schema_to_arrow(Schema(SCHEMA.find_field(1)))),
        tmp_path / "a.parquet",
        compression="none",
        write_page_checksum=True,
    )
    raw = (tmp_path / "a.parquet").read_bytes()
    (tmp_path / "b.parquet").write_bytes(raw)
    flipped = bytearray(raw)
    flipped[len(raw) // 4] ^= 0x01  # inside the data page; size and footer unchanged
    (tmp_path / "c.parquet").write_bytes(bytes(flipped))

    def ref(name: str, ids: tuple[int, ...] = (1,)) -> DeleteFileRef:
        return DeleteFileRef(
            DeleteContent.EQUALITY_DELETES,
            str(tmp_path / name),
            record_count=len(keys),
            file_size_in_bytes=len(raw),
            equality_ids=ids,
        )

    cache = DeleteCache()
    a = rd._read_equality_deletes(FileIO(), ref("a.parquet"), None, cache)
    b = rd._read_equality_deletes(FileIO(), ref("b.parquet"), None, cache)
    assert b is a and a.column("1").to_pylist() == list(range(0, 1000, 7))
    with pytest.raises(CorruptFileError, match=r"c\.parquet"):
        rd._read_equality_deletes(FileIO(), ref("c.parquet"), None, cache)
    # The same bytes asked for other equality ids are decoded again (and lack column 2).
    with pytest.raises(ValidationError, match="equality ids"):
        rd._read_equality_deletes(FileIO(), ref("b.parquet", (1, 2)), None, cache)


def _add_eq_deletes(t: Any, name: str, keys: pa.Table, file_format: str, ids: list[int]) -> Any:
    """``keys`` (columns with ``PARQUET:field_id``) committed as an equality delete file of
    ``file_format`` on ``ids``; the table refreshed."""
    path = Path(t.metadata.location.removeprefix("file://")) / "data" / f"{name}.{file_format}"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(keys, path, file_format)
    eq = DataFile(
        file_path=path.as_uri(),
        file_format=file_format.upper(),
        record_count=keys.num_rows,
        file_size_in_bytes=path.stat().st_size,
        content=2,
        equality_ids=ids,
    )
    with t.transaction() as tx:
        commit_row_delta(tx, RowDelta(added_deletes=[eq]), operation="delete")
    return t.refresh()


@pytest.mark.parametrize("key", [5, None])
@pytest.mark.parametrize("default", [None, 5])
def test_equality_delete_on_a_dropped_column_older_files_lack(
    tmp_path: Path, default: int | None, key: int | None
) -> None:
    """A column added to the table, used by an equality delete, then dropped: the delete still
    applies (spec), and a data file written before the column existed reads it as null, or as
    its initial default, as before the drop. The read raised a ValidationError."""
    version = "2" if default is None else "3"
    t = catalog(tmp_path).create_table(
        "ns.t", pa.schema([("id", pa.int64())]), properties={"format-version": version}
    )
    t.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    with t.update_schema() as u:
        u.add_column("k", LongType(), initial_default=default)
    t = t.refresh()
    t.append(pa.table({"id": [3, 4, 6], "k": pa.array([None, 5, 7], pa.int64())}))
    t = t.refresh()
    t.delete_by_keys({"k": [key]}, ["k"])
    t = t.refresh()
    before = sorted(t.scan().to_arrow()["id"].to_pylist())
    k_of = {1: default, 2: default, 3: None, 4: 5, 6: 7}  # a null key deletes null values
    assert before == [i for i, k in k_of.items() if k != key]
    with t.update_schema() as u:
        u.delete_column("k")
    t = t.refresh()
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == before
    assert t.scan().count() == len(before)
    assert sorted(t.scan(row_filter="id > 1").to_arrow()["id"].to_pylist()) == [
        i for i in before if i > 1
    ]
    t.rewrite_data_files(min_input_files=1)
    assert sorted(t.refresh().scan().to_arrow()["id"].to_pylist()) == before


@pytest.mark.parametrize("file_format", ["parquet", "orc"])
@pytest.mark.parametrize("dropped", ["s.id", "s"])
def test_equality_delete_on_a_dropped_nested_field(
    tmp_path: Path, dropped: str, file_format: str
) -> None:
    """An equality delete on a field of a struct (as Iceberg Java writes them) still applies
    once that field, or its whole struct, is dropped: the data files still hold it. The read
    raised a ValidationError."""
    struct = StructType(NestedField(3, "id", LongType()), NestedField(4, "tag", StringType()))
    schema = Schema(NestedField(1, "k", LongType(), True), NestedField(2, "s", struct))
    t = catalog(tmp_path).create_table(
        "ns.t",
        schema,
        properties={"format-version": "2", "write.format.default": file_format},
    )
    rows: list[dict[str, Any]] = [
        {"k": 1, "s": {"id": 10, "tag": "a"}},
        {"k": 2, "s": {"id": 20, "tag": "b"}},
        {"k": 3, "s": None},
        {"k": 4, "s": {"id": None, "tag": "c"}},
        {"k": 5, "s": {"id": 30, "tag": "d"}},
    ]
    t.append(pa.Table.from_pylist(rows, schema=schema_to_arrow(schema)))
    sub = schema_to_arrow(Schema(NestedField(2, "s", StructType(NestedField(3, "id", LongType())))))
    keys = pa.Table.from_pylist([{"s": {"id": 20}}, {"s": {"id": None}}], schema=sub)
    t = _add_eq_deletes(t.refresh(), "eq", keys, "parquet", [3])
    before = sorted(t.scan().to_arrow()["k"].to_pylist())
    assert before == [1, 5]
    with t.update_schema() as u:
        u.delete_column(dropped)
    t = t.refresh()
    assert sorted(t.scan().to_arrow()["k"].to_pylist()) == before
    assert t.scan().count() == len(before)
    t.rewrite_data_files(min_input_files=1)
    assert sorted(t.refresh().scan().to_arrow()["k"].to_pylist()) == before


def _keys(name: str, field_id: int, values: pa.Array) -> pa.Table:
    field = pa.field(name, values.type, metadata={b"PARQUET:field_id": str(field_id).encode()})
    return pa.table([values], schema=pa.schema([field]))


_DAY_US = 86_400_000_000


@pytest.mark.parametrize("data_format", ["parquet", "orc"])
@pytest.mark.parametrize(
    ("table_type", "stored"),
    [
        (pa.timestamp("us"), pa.timestamp("ns")),
        (pa.timestamp("us", tz="UTC"), pa.timestamp("ns", tz="UTC")),
        (pa.timestamp("us"), pa.timestamp("ms")),
        (pa.time64("us"), pa.int64()),  # ORC: an Iceberg time as a long of microseconds
    ],
)
def test_equality_delete_keys_stored_as_another_unit(
    tmp_path: Path, data_format: str, table_type: pa.DataType, stored: pa.DataType
) -> None:
    """Equality delete files whose key column is stored as another physical type than the
    table's (ORC: timestamps in nanoseconds, times as longs; Parquet TIMESTAMP(MILLIS)) are
    converted as data files are, so they match, also mixed with files of the table's type.
    Such files made the table unreadable ("not comparable", "disagree on the types")."""
    step = 3_600_000_000 if pa.types.is_time(table_type) else _DAY_US
    micros = [i * step for i in range(4)]
    data = pa.table(
        {"id": pa.array(range(4), pa.int64()), "k": pa.array(micros, pa.int64()).cast(table_type)}
    )
    t = catalog(tmp_path).create_table(
        "ns.t", data.schema, properties={"format-version": "2", "write.format.default": data_format}
    )
    t.append(data)
    t = t.refresh()
    per_unit = {"ns": 1000, "ms": 1 / 1000}.get(getattr(stored, "unit", "us"), 1)
    other = pa.array([int(micros[1] * per_unit)], pa.int64()).cast(stored)
    delete_format = "parquet" if stored == pa.timestamp("ms") else "orc"
    t = _add_eq_deletes(t, "other", _keys("k", 2, other), delete_format, [2])
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [0, 2, 3]
    own = pa.array([micros[2]], pa.int64()).cast(table_type)
    t = _add_eq_deletes(t, "own", _keys("k", 2, own), "avro", [2])
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [0, 3]
    assert sorted(t.scan(selected_fields=("id", "_pos")).to_arrow()["id"].to_pylist()) == [0, 3]


def test_equality_delete_key_finer_than_the_table_is_refused(tmp_path: Path) -> None:
    """An ORC delete key in nanoseconds that is no whole microsecond is refused for a
    microsecond column, as a data file's value would be (never rounded into another key)."""
    data = pa.table({"id": [0, 1], "k": pa.array([0, 1000], pa.timestamp("us"))})
    t = catalog(tmp_path).create_table("ns.t", data.schema, properties={"format-version": "2"})
    t.append(data)
    keys = _keys("k", 2, pa.array([1_000_001], pa.timestamp("ns")))
    t = _add_eq_deletes(t.refresh(), "eq", keys, "orc", [2])
    with pytest.raises(ValidationError, match="would lose data"):
        t.scan().to_arrow()
