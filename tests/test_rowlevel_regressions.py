"""Deterministic regressions for bugs the property tests found (each pinned as an ``@example``
of its property test too, where one covers it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe.exceptions import CommitConflictError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.scan.manifests import manifest_entries
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField
from support.rowlevel_util import live_deletes
from support.write_util import catalog, pyiceberg_read

SCHEMA = Schema(NestedField(1, "k", LongType(), True), NestedField(2, "v", LongType()))
SPEC = PartitionSpec(PartitionField(1, 1000, parse_transform("bucket[3]"), "kb"))


def _rows(keys: list[int]) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(keys, pa.int64())})


def test_spark_overwrite_plan_keeps_deletes_the_filter_cannot_match(tmp_path: Path) -> None:
    """The Spark writer's filtered overwrite rewrites the files it touches: an equality delete
    of a key outside the filter (its metrics cannot match ``k = 0``) must still be applied to
    the rewritten rows, or the deleted row comes back."""
    from icefloe.spark.writing import _overwrite_plan

    t = catalog(tmp_path).create_table(
        "ns.t", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"}
    )
    t.append(_rows([0, 12]))  # one file: bucket[3] puts both keys in partition 1
    t.delete_by_keys({"k": [12]}, ["k"])
    (eq_delete,) = live_deletes(t).column("file_path").to_pylist()
    drop, rewrite, _ = _overwrite_plan(t, "main", "k = 0")
    assert drop == [] and len(rewrite) == 1
    assert [d.file_path for d in rewrite[0].delete_files] == [eq_delete]


def _mor_v3(tmp_path: Path) -> Any:
    t = catalog(tmp_path).create_table(
        "ns.t",
        SCHEMA,
        partition_spec=SPEC,
        properties={"format-version": "3", "write.delete.mode": "merge-on-read"},
    )
    # bucket[3]: 0 and 12 -> 1, 1 and 5 -> 2, 2 and 4 -> 0: three files, none of whose metrics
    # prove the delete for every row, so each gets a DV
    t.append(_rows([0, 12, 1, 5, 2, 4]))
    t.delete("k = 12 or k = 1 or k = 2")  # one Puffin file holding three DVs
    (puffin,) = set(live_deletes(t).column("file_path").to_pylist())
    assert live_deletes(t).num_rows == 3
    return t, puffin


def test_overwrite_removes_only_the_dvs_of_the_files_it_removes(tmp_path: Path) -> None:
    """An overwrite that removes one data file must remove that file's DV entry only, not the
    whole Puffin file: the DVs of other data files in it keep their rows deleted."""
    t, puffin = _mor_v3(tmp_path)
    t.overwrite(_rows([50]), "k = 0")  # removes the file of partition 1 (0 and deleted 12)
    assert sorted(t.scan().to_arrow()["k"].to_pylist()) == [4, 5, 50]
    left = live_deletes(t)
    assert left.num_rows == 2 and set(left.column("file_path").to_pylist()) == {puffin}
    assert sorted(pyiceberg_read(t)["k"].to_pylist()) == [4, 5, 50]


def test_spark_overwrite_removes_dv_entries_not_puffin_files(tmp_path: Path) -> None:
    from icefloe.spark.writing import _dv_entries, _overwrite_plan

    t, puffin = _mor_v3(tmp_path)
    drop, rewrite, _ = _overwrite_plan(t, "main", "k = 0")
    assert drop == [] and len(rewrite) == 1  # partition 1's file: 0 matches, 12 is deleted
    target = rewrite[0].data_file.file_path
    (entry,) = [e for e in live_deletes(t).to_pylist() if e["referenced_data_file"] == target]
    assert _dv_entries(t, "main", {target}) == [(puffin, entry["content_offset"])]


def test_overwrite_conflicts_with_a_concurrent_delete_in_a_file_it_rewrites(
    tmp_path: Path,
) -> None:
    """A filtered overwrite rewrites the surviving rows of a file; if a concurrent commit
    deleted one of them (a DV) the retried overwrite must fail, not bring the row back."""
    t = catalog(tmp_path).create_table(
        "ns.t",
        SCHEMA,
        partition_spec=SPEC,
        properties={"format-version": "3", "write.delete.mode": "merge-on-read"},
    )
    t.append(_rows(list(range(30))))
    other = t.catalog.load_table("ns.t")
    tx = t.transaction()
    tx.overwrite(_rows([100]), "k = 3")  # rewrites partition 0's file without 3
    other.delete("k = 2")  # a DV for the same file (bucket[3] of 2 and 3 is 0)
    with pytest.raises(CommitConflictError, match="deletes"):
        tx.commit_transaction()
    t.refresh()
    assert sorted(t.scan().to_arrow()["k"].to_pylist()) == [k for k in range(30) if k != 2]
    # a concurrent delete in a file the overwrite does not rewrite does not conflict
    tx = t.transaction()
    tx.overwrite(_rows([100]), "k = 3")
    t.catalog.load_table("ns.t").delete("k = 6")  # bucket[3] of 6 is 2
    tx.commit_transaction()
    t.refresh()
    want = sorted([k for k in range(30) if k not in (2, 3, 6)] + [100])
    assert sorted(t.scan().to_arrow()["k"].to_pylist()) == want


def test_dynamic_overwrite_removes_the_deletes_of_replaced_partitions(tmp_path: Path) -> None:
    """A dynamic partition overwrite removes the data files of the partitions it replaces and
    the DVs of those files (no dangling DV), while the DVs of other partitions stay in force."""
    t, puffin = _mor_v3(tmp_path)  # DVs: 12 (partition 1), 1 (partition 2), 2 (partition 0)
    t.dynamic_partition_overwrite(_rows([3, 7]))  # bucket[3]: both in partition 0
    left = live_deletes(t)
    assert left.num_rows == 2 and set(left.column("file_path").to_pylist()) == {puffin}
    data = {e["file_path"] for e in _live(t, content=0)}
    assert set(left.column("referenced_data_file").to_pylist()) <= data
    want = [0, 3, 5, 7]  # partition 1 keeps 0 (12 deleted), partition 2's 1 stays deleted
    assert sorted(t.scan().to_arrow()["k"].to_pylist()) == want
    assert sorted(pyiceberg_read(t)["k"].to_pylist()) == want


def test_dynamic_overwrite_removes_partition_scoped_v2_deletes(
    tmp_path: Path, duckdb_con: Any
) -> None:
    """v2: equality and position delete files of a replaced partition go with its data files;
    deletes in other partitions still apply."""
    t = catalog(tmp_path).create_table(
        "ns.t",
        SCHEMA,
        partition_spec=SPEC,
        properties={"format-version": "2", "write.delete.mode": "merge-on-read"},
    )
    t.append(_rows([0, 12, 1, 5, 2, 3]))  # partitions: 1 -> {0, 12}, 2 -> {1, 5}, 0 -> {2, 3}
    t.delete_by_keys({"k": [12, 5]}, ["k"])  # equality deletes in partitions 1 and 2
    t.delete("k = 3")  # a position delete in partition 0
    before = live_deletes(t).num_rows
    t.dynamic_partition_overwrite(_rows([7]))  # replaces partition 0
    left = live_deletes(t)
    assert left.num_rows < before
    assert 0 not in {e["partition"]["kb"] for e in _live(t, content=1)}
    want = [0, 1, 7]
    assert sorted(t.scan().to_arrow()["k"].to_pylist()) == want
    got = duckdb_con.execute(f"select k from iceberg_scan('{t.metadata_location}') order by k")
    assert [r[0] for r in got.fetchall()] == want  # PyIceberg 0.12 reads no equality deletes


def _live(table: Any, content: int) -> list[dict[str, Any]]:
    """Live manifest entries (data: content 0, deletes: 1) as dicts."""
    out: list[dict[str, Any]] = []
    for _, b in manifest_entries(table.io, table.current_snapshot(), content=content):
        out += b.filter(pc.not_equal(b.column("status"), 2)).to_pylist()
    return out


UNPARTITIONED = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "v", LongType()))


def _id_rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(ids, pa.int64())})


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_concurrent_append_of_disjoint_ids_is_no_conflict(tmp_path: Path, mode: str) -> None:
    """Serializable isolation checks a concurrently added file's column bounds, as the
    reference does: on an unpartitioned table, an append of ids the delete's filter cannot
    match does not conflict; one that may hold matching ids does."""
    cat = catalog(tmp_path)
    props = {"format-version": "2", "write.delete.mode": mode, "write.upsert.mode": mode}
    t = cat.create_table("ns.t", UNPARTITIONED, properties=props)
    t.append(_id_rows(list(range(10))))
    stale = cat.load_table("ns.t")
    cat.load_table("ns.t").append(_id_rows(list(range(1000, 1010))))
    stale.delete("id >= 2 and id < 5")
    want = [0, 1, *range(5, 10), *range(1000, 1010)]
    got = cat.load_table("ns.t").scan().to_arrow()
    assert sorted(got["id"].to_pylist()) == want
    assert sorted(pyiceberg_read(cat.load_table("ns.t"))["id"].to_pylist()) == want

    stale = cat.load_table("ns.t")
    cat.load_table("ns.t").upsert(_id_rows([2000]), ["id"])  # a new key, outside the bounds
    stale.upsert(_id_rows([0, 1]), ["id"])
    # A concurrent file whose bounds cover the filter still conflicts (never missed).
    stale = cat.load_table("ns.t")
    cat.load_table("ns.t").append(_id_rows([6, 4000]))
    with pytest.raises(CommitConflictError, match="serializable"):
        stale.delete("id >= 5 and id < 7")
    assert cat.load_table("ns.t").scan().to_arrow()["id"].to_pylist().count(6) == 2


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_upsert_with_join_columns_out_of_schema_order(tmp_path: Path, mode: str) -> None:
    """Join columns listed in another order than the schema's: the rows found, the values
    written and the row ids carried to updated rows are those of the keys, not of the key
    columns swapped (two long keys, so a swap would not fail on types)."""
    from support.rowlevel_util import ours

    schema = Schema(
        NestedField(1, "a", LongType(), True),
        NestedField(2, "b", LongType(), True),
        NestedField(3, "v", LongType()),
    )
    t = catalog(tmp_path).create_table(
        "ns.t",
        schema,
        properties={"format-version": "3", "write.delete.mode": mode, "write.merge.mode": mode},
    )
    base = pa.table(
        {
            "a": pa.array([1, 2, 3], pa.int64()),
            "b": pa.array([10, 20, 30], pa.int64()),
            "v": pa.array([0, 0, 0], pa.int64()),
        }
    )
    t.append(base)
    before = ours(t, "_row_id")
    ids = dict(zip(before["a"].to_pylist(), before["_row_id"].to_pylist(), strict=True))
    # (2, 20) updates; (20, 2) and (4, 40) are new keys
    source = pa.table(
        {
            "b": pa.array([20, 2, 40], pa.int64()),
            "a": pa.array([2, 20, 4], pa.int64()),
            "v": pa.array([7, 8, 9], pa.int64()),
        }
    )
    result = t.upsert(source.select(["a", "b", "v"]), ["b", "a"])
    assert (result.rows_updated, result.rows_inserted) == (1, 2)
    got = ours(t, "_row_id")
    rows = zip(got["a"].to_pylist(), got["b"].to_pylist(), got["v"].to_pylist(), strict=True)
    assert list(rows) == [
        (1, 10, 0),
        (2, 20, 7),
        (3, 30, 0),
        (4, 40, 9),
        (20, 2, 8),
    ]
    row_ids = dict(zip(got["a"].to_pylist(), got["_row_id"].to_pylist(), strict=True))
    assert row_ids[2] == ids[2] and row_ids[1] == ids[1]
    assert len(set(row_ids.values())) == 5
    assert sorted(pyiceberg_read(t)["a"].to_pylist()) == [1, 2, 3, 4, 20]


@pytest.mark.parametrize("added", ["variant", "struct", "geometry"])
@pytest.mark.parametrize("change", ["delete", "overwrite", "compaction"])
def test_rewrites_after_adding_a_struct_column_with_required_fields(
    tmp_path: Path, added: str, change: str
) -> None:
    """Files written before a variant column (a struct of required binaries) or a struct with a
    required field was added read that column as null structs; rewriting their rows (copy-on-
    write delete or overwrite, compaction) of a v3 table, which keeps row lineage, writes them
    as nulls again."""
    from icefloe.types import GeometryType, IntegerType, StructType, VariantType

    t = catalog(tmp_path).create_table("ns.t", SCHEMA, properties={"format-version": "3"})
    t.append(_rows([1, 2, 3]))
    kind: Any = {
        "variant": VariantType(),
        "struct": StructType(NestedField(10, "x", IntegerType(), required=True)),
        "geometry": GeometryType(),
    }[added]
    with t.update_schema() as u:
        u.add_column("extra", kind)
    if change == "delete":
        t.delete("k = 1")
    elif change == "overwrite":
        t.overwrite(t.scan(row_filter="k = 2").to_arrow().drop(["extra"]), "k = 2")
    else:
        t.rewrite_data_files(min_input_files=1)
    got = t.scan(selected_fields=("k", "extra", "_row_id")).to_arrow().sort_by("k")
    assert got.column("extra").null_count == got.num_rows
    assert got.column("k").to_pylist() == ([2, 3] if change == "delete" else [1, 2, 3])
    assert got.column("_row_id").null_count == 0


def _hand_table(tmp_path: Path, version: int, props: dict[str, str], empty_first: bool) -> Any:
    """A hand-built table (``support.plan_tables.HandTable``) with one 20-row data file,
    ids 0..19 (after an empty snapshot when ``empty_first``, so the file's data sequence
    number is 2); returns the table and the file's path."""
    import pyarrow.parquet as pq

    from icefloe.arrow_schema import schema_to_arrow
    from support.plan_tables import HandTable, entry
    from support.read_tables import SCHEMA

    t = HandTable(tmp_path, SCHEMA, [PartitionSpec()], version, properties=props)
    if empty_first:
        t.commit([(0, 0, [])])
    data = tmp_path / "data-0.parquet"
    columns = [
        pa.array(range(20), pa.int64()),
        pa.array([1] * 20, pa.int32()),
        pa.array(["x"] * 20),
    ]
    pq.write_table(pa.table(columns, schema=schema_to_arrow(SCHEMA)), data)
    t.commit([(0, 0, [entry(str(data), record_count=20, file_size_in_bytes=data.stat().st_size)])])
    return t, data


def _dv_entry(path: Path, data: Path, positions: list[int], **kw: Any) -> Any:
    """The manifest entry of a Puffin file at ``path`` holding a DV of ``positions``."""
    from icefloe.deletes import DeletionVector
    from icefloe.puffin import PuffinWriter
    from support.plan_tables import entry

    writer = PuffinWriter()
    blob = writer.add_deletion_vector(DeletionVector.from_positions(positions), str(data))
    done = writer.finish()
    path.write_bytes(done.data)
    return entry(
        str(path),
        content=1,
        file_format="PUFFIN",
        record_count=len(positions),
        file_size_in_bytes=len(done.data),
        referenced_data_file=str(data),
        content_offset=blob.offset,
        content_size_in_bytes=blob.length,
        **kw,
    )


def _registered(tmp_path: Path, t: Any) -> Any:
    from icefloe.catalog import load_catalog

    cat = load_catalog("c", type="sql", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path))
    cat.create_namespace("db")
    return cat.register_table("db.t", t.metadata_path)


def _table_with_foreign_deletes(tmp_path: Path, version: int, mode: str) -> Any:
    """A 20-row data file whose deletes (another writer's DV on v3, position delete file on
    v2) delete rows 0..9 and name positions 100..104, past the file's end, which every reader
    ignores: ids 10..19 are live."""
    import pyarrow.parquet as pq

    from support.plan_tables import entry

    props = {"write.delete.mode": mode, "write.update.mode": mode}
    t, data = _hand_table(tmp_path, version, props, empty_first=False)
    positions = [*range(10), *range(100, 105)]
    if version >= 3:
        deletes = _dv_entry(tmp_path / "dv.puffin", data, positions)
    else:
        ids = {b"PARQUET:field_id": b"2147483546"}, {b"PARQUET:field_id": b"2147483545"}
        schema = pa.schema(
            [
                pa.field("file_path", pa.string(), False, ids[0]),
                pa.field("pos", pa.int64(), False, ids[1]),
            ]
        )
        rows = [pa.array([str(data)] * len(positions)), pa.array(positions, pa.int64())]
        pq.write_table(pa.table(rows, schema=schema), tmp_path / "pos.parquet")
        size = (tmp_path / "pos.parquet").stat().st_size
        deletes = entry(
            str(tmp_path / "pos.parquet"), content=1, record_count=15, file_size_in_bytes=size
        )
    t.commit([(0, 1, [deletes])])
    return _registered(tmp_path, t)


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
@pytest.mark.parametrize("op", ["delete", "upsert", "overwrite"])
def test_deletes_past_a_files_end_do_not_make_its_live_rows_look_deleted(
    tmp_path: Path, version: int, mode: str, op: str
) -> None:
    """Live rows were counted as record count minus deleted positions, positions past the end
    included: a change matching the remaining live rows 10..14 dropped the whole file, losing
    rows 15..19 (copy-on-write), or was refused (merge-on-read)."""
    from icefloe.expressions import col

    t = _table_with_foreign_deletes(tmp_path, version, mode)
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == list(range(10, 20))
    match = col("id").isin([10, 11, 12, 13, 14])
    new = pa.table(
        {"id": pa.array([10, 500], pa.int64()), "k": pa.array([2, 2], pa.int32()), "s": ["u"] * 2}
    )
    if op == "delete":
        t.delete(match)
        expected = list(range(15, 20))
    elif op == "upsert":
        t.upsert(new.slice(0, 1), join_cols=["id"])
        expected = list(range(10, 20))
    else:
        t.overwrite(new.slice(1), overwrite_filter=match)
        expected = [*range(15, 20), 500]
    assert sorted(t.refresh().scan().to_arrow()["id"].to_pylist()) == expected
    assert sorted(pyiceberg_read(t)["id"].to_pylist()) == expected


@pytest.mark.parametrize("op", ["delete", "overwrite"])
def test_a_deletion_vector_older_than_its_file_goes_when_a_new_one_is_written(
    tmp_path: Path, op: str
) -> None:
    """A DV whose data sequence number is below its data file's does not apply; writing the
    file's new DV left both live, and readers (icefloe, DuckDB, Java) refuse two DVs for one
    file."""
    from icefloe.expressions import col

    props = {"write.delete.mode": "merge-on-read"}
    t, data = _hand_table(tmp_path, 3, props, empty_first=True)  # the file's sequence: 2
    stale = _dv_entry(
        tmp_path / "old.puffin", data, [1, 2], sequence_number=1, file_sequence_number=3
    )
    t.commit([(0, 1, [stale])])
    table = _registered(tmp_path, t)
    assert len(table.scan().to_arrow()) == 20  # the stale DV does not apply
    if op == "delete":
        table.delete(col("id") == 5)
    else:
        new = {"id": pa.array([100], pa.int64()), "k": pa.array([9], pa.int32()), "s": ["y"]}
        table.overwrite(pa.table(new), overwrite_filter=col("id") == 5)
    table = table.refresh()
    dvs = [r for r in table.inspect.files().to_pylist() if r["content"] == 1]
    assert len(dvs) == 1 and not dvs[0]["file_path"].endswith("old.puffin")
    ids = sorted(table.scan().to_arrow()["id"].to_pylist())
    assert ids == sorted({*range(20), *([100] if op == "overwrite" else [])} - {5})
    assert sorted(pyiceberg_read(table)["id"].to_pylist()) == ids
