"""Dangling delete files: found by the spec's scoping rules and removed in one ``replace``
snapshot that changes no row (Table.remove_dangling_deletes, the rewrite_data_files option, the
``compact --remove-dangling-deletes`` command and ``health``'s advice), checked against reads
before and after, the deletes the scan planner applies, and Iceberg Java's own action."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.exceptions import CommitConflictError, NoSuchSnapshotError, ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.table.dangling_deletes import dangling_delete_files, remove_dangling_deletes
from icefloe.table.maintenance import rewrite_data_files
from icefloe.table.producer import SnapshotProducer
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField, StringType
from support.write_util import catalog

pytestmark = [pytest.mark.spark, pytest.mark.interop]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "p", StringType(), required=False),
)
BY_P = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "p"))
BIG = 64 << 20  # compaction target: every test file is small


def _rows(ids: list[int], p: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array([p] * len(ids), pa.string())})


def _table(tmp_path: Path, version: int = 2, spec: PartitionSpec = BY_P, **props: str) -> Any:
    properties = {"format-version": str(version), "write.delete.mode": "merge-on-read", **props}
    return catalog(tmp_path).create_table(
        "ns.t", SCHEMA, partition_spec=spec, properties=properties
    )


def _read(t: Any) -> list[tuple[int, str]]:
    got = t.scan().to_arrow()
    return sorted(zip(got.column("id").to_pylist(), got.column("p").to_pylist(), strict=True))


def _deletes(t: Any) -> pa.Table:
    d = t.refresh().inspect.delete_files()
    return d.select(["content", "file_path", "record_count", "partition"])


def _applied(t: Any) -> set[tuple[str, int | None]]:
    """The delete entries the scan planner applies to some live data file."""
    return {
        (d.file_path, d.content_offset) for task in t.scan().plan_files() for d in task.delete_files
    }


def _live(t: Any) -> set[tuple[str, int | None]]:
    d = t.refresh().inspect.delete_files()
    offsets = d.column("content_offset").to_pylist() if "content_offset" in d.column_names else None
    paths = d.column("file_path").to_pylist()
    return set(zip(paths, offsets or [None] * len(paths), strict=True))


OFFSET = {"a": 0, "b": 100, "c": 200}


def _append(t: Any, k: int, parts: str = "abc") -> None:
    """One file per partition: ids ``offset + 10k .. offset + 10k + 3``."""
    t.append(
        pa.concat_tables([_rows([OFFSET[p] + k * 10 + i for i in range(4)], p) for p in parts])
    )


def _partitioned_history(t: Any) -> None:
    """Three appends over partitions a, b, c; partition-scoped position deletes spanning two
    files of a and two of c; equality deletes in a and c; then one more file in c, newer than
    the deletes."""
    for k in range(3):
        _append(t, k)
    t.set_properties({"write.delete.granularity": "partition"})
    t.delete("id in (1, 11, 201, 211)")
    t.delete_by_keys(pa.table({"id": pa.array([3, 203], pa.int64())}), ["id"])
    t.append(_rows([290, 291], "c"))


def test_compaction_leaves_dangling_deletes_that_removal_drops(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _partitioned_history(t)
    before = _read(t)
    # compacting a and b: their data files get a new sequence number, above every delete
    r = t.rewrite_data_files(target_file_size=BIG, row_filter="p in ('a', 'b')")
    assert r.rewritten_data_files == 6 and r.removed_delete_files == 0
    left = _deletes(t)
    parts = pc.struct_field(left.column("partition"), [0]).to_pylist()
    assert sorted(parts) == ["a", "a", "c", "c"]  # one position and one equality delete each
    assert t.plan_rewrite_data_files(target_file_size=BIG, row_filter="p = 'a'").data_files == 0
    applied = _applied(t)
    found = t.remove_dangling_deletes(dry_run=True)
    assert (found.removed_delete_files, found.position_delete_files) == (2, 1)
    assert (found.equality_delete_files, found.dvs, found.dry_run) == (1, 0, True)
    in_a = left.filter(pc.equal(pc.struct_field(left.column("partition"), [0]), "a"))
    assert found.removed_delete_records == pc.sum(in_a.column("record_count")).as_py()
    assert set(found.paths) == set(in_a.column("file_path").to_pylist())
    head = t.current_snapshot().snapshot_id
    assert t.refresh().current_snapshot().snapshot_id == head  # a dry run commits nothing

    result = t.remove_dangling_deletes()
    assert result.removed_delete_files == 2 and not result.dry_run
    snap = t.refresh().current_snapshot()
    assert snap.parent_snapshot_id == head
    assert snap.summary.operation == "replace"
    assert snap.summary.get_int("removed-delete-files") == 2
    assert snap.summary.get_int("added-data-files") is None
    assert snap.summary.get_int("total-records") == t.metadata.snapshot_by_id(head).summary.get_int(
        "total-records"
    )
    kept = _deletes(t)
    assert pc.struct_field(kept.column("partition"), [0]).to_pylist() == ["c", "c"]
    assert applied <= _live(t)  # nothing a read applied is gone
    assert _read(t) == before
    # nothing more: no snapshot
    assert t.remove_dangling_deletes().removed_delete_files == 0
    assert t.refresh().current_snapshot().snapshot_id == snap.snapshot_id


def test_rewrite_option_removes_them_in_the_same_commit(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _partitioned_history(t)
    before = _read(t)
    start = t.current_snapshot().snapshot_id
    with t.transaction() as tx:
        r = rewrite_data_files(tx, target_file_size=BIG, remove_dangling_deletes=True)
    # every file rewritten: each delete file is dangling now (none named its data file)
    assert r.rewritten_data_files == 10 and r.removed_delete_files == 4
    assert _deletes(t).num_rows == 0
    ops = [s.summary.operation for s in t.metadata.ancestors_of(t.current_snapshot().snapshot_id)]
    assert ops[:2] == ["replace", "replace"]
    assert t.current_snapshot().parent_snapshot_id != start  # two snapshots, one commit
    assert _read(t) == before
    # with nothing to compact the option still removes what is dangling (and nothing is)
    with t.transaction() as tx:
        again = rewrite_data_files(tx, target_file_size=BIG, remove_dangling_deletes=True)
    assert again == type(again)(0, 0, 0, 0)


def test_equality_delete_newer_than_a_data_file_is_kept(tmp_path: Path) -> None:
    t = _table(tmp_path, spec=PartitionSpec())
    t.append(_rows(list(range(10)), "x"))
    t.append(_rows(list(range(100, 110)), "y"))
    t.delete_by_keys(pa.table({"id": pa.array([5, 105], pa.int64())}), ["id"])  # global
    before = _read(t)
    # rewrite only the first file: the second (older than the delete) still needs it
    t.rewrite_data_files(target_file_size=BIG, min_input_files=1, row_filter="id < 50")
    assert len(t.inspect.data_files()) == 2
    assert t.remove_dangling_deletes(dry_run=True).removed_delete_files == 0
    assert _read(t) == before
    t.rewrite_data_files(target_file_size=BIG)
    assert t.remove_dangling_deletes().equality_delete_files == 1
    assert _deletes(t).num_rows == 0 and _read(t) == before


def test_global_equality_delete_needs_a_newer_file_everywhere(tmp_path: Path) -> None:
    """An equality delete of an unpartitioned spec applies to every partition of every spec:
    data of another spec with a lower sequence number keeps it (Java's action, which compares
    it with the data of its own spec only, would drop it)."""
    t = _table(tmp_path)
    t.append(pa.concat_tables([_rows([1, 2], "a"), _rows([3, 4], "b")]))
    with t.update_spec() as u:
        u.remove_field("p")
    t.append(_rows([9], "z"))  # spec 1, unpartitioned
    t.delete_by_keys(pa.table({"id": pa.array([2, 3, 9], pa.int64())}), ["id"])
    specs = pc.unique(t.inspect.delete_files().column("spec_id")).to_pylist()
    assert sorted(specs) == [0, 1] and t.metadata.spec_by_id(1).is_unpartitioned
    before = _read(t)
    assert before == [(1, "a"), (4, "b")]
    # the unpartitioned file is rewritten: only spec 0's older files are left for the global delete
    t.rewrite_data_files(target_file_size=BIG, min_input_files=1, row_filter="id = 9")
    assert pc.unique(t.inspect.data_files().column("spec_id")).to_pylist() == [0]
    assert t.remove_dangling_deletes(dry_run=True).removed_delete_files == 0
    t.rewrite_data_files(target_file_size=BIG)  # moves every row to spec 1, newer
    assert t.remove_dangling_deletes().equality_delete_files == 3
    assert _read(t) == before


def test_deletion_vector_of_a_removed_file_is_dangling(tmp_path: Path) -> None:
    t = _table(tmp_path, version=3)
    t.append(pa.concat_tables([_rows([1, 2, 3], "a"), _rows([4, 5, 6], "b")]))
    t.delete("id in (2, 5)")  # one Puffin file, a DV for each data file
    dvs = t.inspect.delete_files()
    assert dvs.num_rows == 2 and len(set(dvs.column("file_path").to_pylist())) == 1
    a_file = (
        t.inspect.data_files()
        .filter(pc.equal(pc.struct_field(t.inspect.data_files().column("partition"), [0]), "a"))
        .column("file_path")[0]
        .as_py()
    )
    assert t.remove_dangling_deletes(dry_run=True).removed_delete_files == 0
    # an older writer drops the data file but leaves its DV behind
    with t.transaction() as tx:
        SnapshotProducer(tx).remove_files([a_file]).commit()
    assert t.inspect.delete_files().num_rows == 2
    before = _read(t)
    r = t.remove_dangling_deletes()
    assert (r.removed_delete_files, r.dvs, r.removed_delete_records) == (1, 1, 1)
    left = t.inspect.delete_files()
    assert left.num_rows == 1 and left.column("referenced_data_file")[0].as_py() != a_file
    assert _read(t) == before == [(4, "b"), (6, "b")]


def test_branches_tags_and_bad_arguments(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _partitioned_history(t)
    with t.manage_snapshots() as ms:
        ms.create_branch("audit").create_tag("v1", t.current_snapshot().snapshot_id)
    t.rewrite_data_files(target_file_size=BIG, branch="audit")
    assert t.remove_dangling_deletes(dry_run=True).removed_delete_files == 0  # main untouched
    main = t.current_snapshot().snapshot_id
    assert t.remove_dangling_deletes(branch="audit").removed_delete_files == 4
    assert t.refresh().current_snapshot().snapshot_id == main
    with pytest.raises(NoSuchSnapshotError):
        t.remove_dangling_deletes(branch="nope")
    with pytest.raises(ValidationError, match="tag"):
        t.remove_dangling_deletes(branch="v1")
    with pytest.raises(ValidationError, match="dry_run"):
        t.remove_dangling_deletes(dry_run="yes")
    for branch in (5, ""):
        with pytest.raises(ValidationError, match="branch must be a non-empty string"):
            t.plan_rewrite_data_files(branch=branch)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="branch must be a non-empty string"):
            t.remove_dangling_deletes(branch=branch)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="remove_dangling_deletes"), t.transaction() as tx:
        rewrite_data_files(tx, remove_dangling_deletes="true")  # type: ignore[arg-type]
    for kwargs in (
        {"target_file_size": 0},
        {"target_file_size": "128MB"},
        {"target_file_size": -1},
        {"target_file_size": 1.5},
        {"min_input_files": "2"},
        {"min_input_files": 0},
        {"min_input_files": True},
    ):
        name, value = next(iter(kwargs.items()))
        for call in (t.plan_rewrite_data_files, t.rewrite_data_files):
            with pytest.raises(ValidationError, match=f"{name} must be an integer") as e:
                call(**kwargs)
            assert repr(value) in str(e.value)


def test_concurrent_commits(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _partitioned_history(t)
    t.rewrite_data_files(target_file_size=BIG, row_filter="p in ('a', 'b')")
    # an unrelated append commits first: the retry finds the same files still dangling
    tx = t.refresh().transaction()
    assert remove_dangling_deletes(tx).removed_delete_files == 2
    _reload(tmp_path).append(_rows([150], "b"))
    tx.commit_transaction()
    assert _deletes(t).num_rows == 2
    assert t.current_snapshot().summary.operation == "replace"
    # another removal commits first: the retry fails, the files are gone already
    t.rewrite_data_files(target_file_size=BIG, row_filter="p = 'c'")
    tx = t.refresh().transaction()
    assert remove_dangling_deletes(tx).removed_delete_files == 2
    assert _reload(tmp_path).remove_dangling_deletes().removed_delete_files == 2
    with pytest.raises(CommitConflictError, match="removed by a concurrent commit"):
        tx.commit_transaction()
    assert _deletes(t).num_rows == 0


def _reload(tmp_path: Path) -> Any:
    """The same table through a second catalog object (another writer)."""
    from icefloe.catalog.sql import SqlCatalog

    return SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db").load_table("ns.t")


def test_a_concurrent_older_data_file_keeps_the_delete(tmp_path: Path) -> None:
    """A commit adding a data file with a sequence number below a delete's (as a rewrite that
    keeps its starting sequence number does) makes the delete apply again: the retry fails."""
    from icefloe.table.row_delta import write_rows
    from icefloe.write.files import entries_batch

    t = _table(tmp_path)
    _partitioned_history(t)
    t.rewrite_data_files(target_file_size=BIG, row_filter="p = 'a'")
    tx = t.refresh().transaction()
    assert remove_dangling_deletes(tx).removed_delete_files == 2
    other = _reload(tmp_path)
    with other.transaction() as otx:
        files = write_rows(otx, _rows([3, 100], "a"), lineage=False)
        batch = entries_batch(files, version=2, schema=SCHEMA, spec=BY_P)
        seq = pa.array([1] * batch.num_rows, pa.int64())
        batch = batch.set_column(
            batch.schema.get_field_index("sequence_number"), "sequence_number", seq
        )
        SnapshotProducer(otx).add_entries(batch, content=0, spec_id=0).owns_files(
            f.file_path for f in files
        ).commit()
    assert (3, "a") not in _read(other.refresh())  # the equality delete applies to it
    with pytest.raises(CommitConflictError, match="applies to a data file"):
        tx.commit_transaction()
    assert (3, "a") not in _read(t.refresh())


def test_health_advises_the_removal_not_compaction(tmp_path: Path) -> None:
    from icefloe.cli.health import run_checks

    t = _table(tmp_path)
    _partitioned_history(t)
    debt = {c.name: c for c in run_checks(t)}["delete debt"]
    assert debt.fix == "icefloe compact ns.t" and debt.measured["dangling_delete_files"] == 0
    t.rewrite_data_files(target_file_size=BIG, row_filter="p in ('a', 'b')")
    debt = {c.name: c for c in run_checks(t.refresh())}["delete debt"]
    assert debt.fix == "icefloe compact ns.t --remove-dangling-deletes"
    assert debt.measured["dangling_delete_files"] == 2
    assert debt.measured["delete_files"] == 2  # the two in c still apply
    assert "2 more delete files no live data file can apply to" in debt.detail
    t.rewrite_data_files(target_file_size=BIG, row_filter="p = 'c'")
    debt = {c.name: c for c in run_checks(t.refresh())}["delete debt"]
    assert debt.measured["delete_files"] == 0 and debt.verdict == "info"
    # equality deletes hold keys, not rows: counted apart
    assert debt.value == (
        "4 dangling delete files (4 deleted rows, 4 equality-delete keys in 2 files) and no other"
    )
    assert debt.fix == "icefloe compact ns.t --remove-dangling-deletes"
    t.remove_dangling_deletes()
    debt = {c.name: c for c in run_checks(t.refresh())}["delete debt"]
    assert (debt.verdict, debt.fix, debt.detail) == ("ok", None, "no delete files")


def test_cli_compact_removes_them_and_health_stops_advising(tmp_path: Path) -> None:
    from support.cli import run
    from support.cli_tables import build_world

    world = build_world(tmp_path / "world")
    t = world.catalog().create_table(
        "db.dangling",
        SCHEMA,
        partition_spec=BY_P,
        properties={"format-version": "2", "write.delete.mode": "merge-on-read"},
    )
    _partitioned_history(t)
    t.rewrite_data_files(target_file_size=BIG, row_filter="p in ('a', 'b')")
    before, head = _read(t), t.current_snapshot().snapshot_id
    checks = run(world, "health", "db.dangling", "--json").json()["checks"]
    debt = {c["name"]: c for c in checks}["delete debt"]
    assert debt["fix"] == "icefloe compact db.dangling --remove-dangling-deletes"
    assert debt["value"].endswith(", and 2 dangling delete files")
    doc = run(
        world, "compact", "db.dangling", "--remove-dangling-deletes", "--dry-run", "--json"
    ).json()
    # with files to compact, which deletes it leaves dangling is known only after a real run
    assert doc["removed_dangling_delete_files"] is None and doc["snapshot_id"] is None
    assert doc["dangling_delete_files_now"] == 2
    assert t.refresh().current_snapshot().snapshot_id == head
    # nothing to merge in a: only the removal runs (of every dangling file: a's two)
    args = ("compact", "db.dangling", "--filter", "p = 'a'", "--remove-dangling-deletes")
    out = run(world, *args).stdout
    assert out == "db.dangling: removed 2 dangling delete files\n"
    assert t.refresh().current_snapshot().parent_snapshot_id == head
    assert _read(t) == before
    checks = run(world, "health", "db.dangling", "--json").json()["checks"]
    debt = {c["name"]: c for c in checks}["delete debt"]
    assert debt["fix"] == "icefloe compact db.dangling" and debt["measured"]["delete_files"] == 2
    # compacting c with the option: its deletes dangle after the rewrite and go too
    doc = run(world, "compact", "db.dangling", "--remove-dangling-deletes", "--json").json()
    assert doc["rewritten_data_files"] == 4 and doc["removed_dangling_delete_files"] == 2
    assert doc["snapshot_id"] == t.refresh().current_snapshot().snapshot_id
    assert _deletes(t).num_rows == 0 and _read(t) == before
    assert "nothing to compact" in run(world, "compact", "db.dangling").stdout


# ---------------------------------------------------------------------------------------------
# random histories


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.sampled_from("ab"), st.integers(2, 5)),
        st.tuples(st.just("delete"), st.sampled_from(["file", "partition"]), st.integers(0, 3)),
        st.tuples(st.just("eq"), st.just(""), st.integers(0, 7)),
        st.tuples(st.just("compact"), st.sampled_from(["a", "b", ""]), st.just(0)),
    ),
    min_size=3,
    max_size=10,
)


@settings(max_examples=15, deadline=None)
@given(ops=OPS, last=st.sampled_from(["a", "b", ""]), version=st.sampled_from([2, 3]))
def test_random_histories_read_the_same(
    tmp_path_factory: Any, ops: list[tuple[str, str, int]], last: str, version: int
) -> None:
    """Appends to two partitions, position deletes of either granularity, equality deletes and
    compactions of one partition or all, in any order: the removal changes no row, keeps
    every delete the planner applies, and leaves nothing dangling."""
    t = _table(tmp_path_factory.mktemp("h"), version=version)
    next_id = 0
    for op, arg, n in [("append", "a", 3), ("append", "b", 3), *ops, ("compact", last, 0)]:
        if op == "append":
            t.append(_rows(list(range(next_id, next_id + n)), arg))
            next_id += n
        elif op == "delete":
            t.set_properties({"write.delete.granularity": arg})
            doomed = ", ".join(str(i) for i in range(n, next_id, 4))
            if doomed:
                t.delete(f"id in ({doomed})")
        elif op == "eq":
            t.delete_by_keys(pa.table({"id": pa.array([n, n + 8, n + 16], pa.int64())}), ["id"])
        else:
            row_filter = f"p = '{arg}'" if arg else "true"
            t.rewrite_data_files(target_file_size=BIG, min_input_files=1, row_filter=row_filter)
    before, applied, live = _read(t), _applied(t), _live(t)
    found = t.remove_dangling_deletes()
    assert _read(t.refresh()) == before
    assert applied <= _live(t)  # nothing a read applied is gone
    assert found.removed_delete_files == len(live) - len(_live(t))
    assert dangling_delete_files(t.io, t.metadata).num_rows == 0


# ---------------------------------------------------------------------------------------------
# Iceberg Java


def _spark_rows(cat: Any, table: str) -> list[tuple[int, str]]:
    return sorted((r[0], r[1]) for r in cat.sql(f"SELECT id, p FROM {{c}}.db.{table}").collect())


def _java_remove_dangling(cat: Any, table: str) -> set[str]:
    """Runs Iceberg Java's RemoveDanglingDeleteFiles action; the locations it removed."""
    jvm = cat.spark._jvm
    session = cat.spark._jsparkSession
    jt = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(session, f"{cat.name}.db.{table}")
    result = jvm.org.apache.iceberg.spark.actions.SparkActions.get(session)
    removed = result.removeDanglingDeleteFiles(jt).execute().removedDeleteFiles().iterator()
    out = set()
    while removed.hasNext():
        out.add(str(removed.next().location()))
    return out


def test_spark_position_deletes_and_java_action_agree(iceberg_spark: Any) -> None:
    """v2, partitioned: Spark's merge-on-read position deletes (one file per partition),
    icefloe's equality deletes; icefloe compacts two of three partitions. icefloe's removal
    keeps what still applies; Java's action, run on the same compacted snapshot, removes
    exactly the same files."""
    cat = iceberg_spark
    cat.sql(
        "CREATE TABLE {c}.db.t (id bigint, p string) USING iceberg PARTITIONED BY (p) "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
        "'write.delete.granularity'='partition')"
    )
    t = cat.icefloe().load_table(("db", "t"))
    for k in range(3):
        _append(t, k)
    cat.sql("DELETE FROM {c}.db.t WHERE id IN (1, 11, 201, 211)")
    t.refresh().delete_by_keys(pa.table({"id": pa.array([3, 203], pa.int64())}), ["id"])
    t.append(_rows([290, 291], "c"))
    before = _read(t)
    assert _spark_rows(cat, "t") == before
    # Spark's position delete files span two data files: none names one
    spark_pos = t.inspect.delete_files().filter(
        pc.equal(t.inspect.delete_files().column("content"), 1)
    )
    assert spark_pos.num_rows == 2 and spark_pos.column("referenced_data_file").null_count == 2
    t.rewrite_data_files(target_file_size=BIG, row_filter="p in ('a', 'b')")
    compacted = t.refresh().current_snapshot().snapshot_id
    ours = t.remove_dangling_deletes()
    assert ours.removed_delete_files == 2  # the position and equality deletes of a
    kept = _deletes(t)
    assert pc.struct_field(kept.column("partition"), [0]).to_pylist() == ["c", "c"]
    assert _read(t) == before
    assert _spark_rows(cat, "t") == before
    # Java's action on the same compacted snapshot
    with t.manage_snapshots() as ms:
        ms.set_current_snapshot(compacted)
    assert _java_remove_dangling(cat, "t") == set(ours.paths)
    assert _spark_rows(cat, "t") == before
    assert _read(t.refresh()) == before


def test_v3_deletion_vectors_and_java_twin(iceberg_spark: Any) -> None:
    """v3: Spark's deletion vectors and icefloe's equality deletes. After icefloe compacts
    partition a and an older writer drops a data file of b without its DV, icefloe and Java's
    action find the same dangling files on that snapshot. Compacting all with the
    rewrite_data_files option leaves no delete file, as Java's rewrite_data_files with
    ``remove-dangling-deletes`` does on an identical twin, and all read the same rows."""
    cat = iceberg_spark
    ice = cat.icefloe()
    for name in ("t", "j"):
        cat.sql(
            f"CREATE TABLE {{c}}.db.{name} (id bigint, p string) USING iceberg PARTITIONED BY (p) "
            "TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')"
        )
        t = ice.load_table(("db", name))
        for k in range(2):
            _append(t, k, "ab")
        cat.sql(f"DELETE FROM {{c}}.db.{name} WHERE id IN (1, 12, 101, 111)")
        t.refresh().delete_by_keys(pa.table({"id": pa.array([3, 113], pa.int64())}), ["id"])
    t = ice.load_table(("db", "t"))
    before = _read(t)
    assert before == _spark_rows(cat, "t")
    deletes = t.inspect.delete_files()
    formats = pc.utf8_upper(deletes.column("file_format"))
    assert pc.sum(pc.equal(formats, "PUFFIN")).as_py() == 4  # a DV per data file
    assert pc.sum(pc.equal(deletes.column("content"), 2)).as_py() == 2
    t.rewrite_data_files(target_file_size=BIG, row_filter="p = 'a'")
    data = t.inspect.data_files()
    b_file = data.filter(pc.equal(pc.struct_field(data.column("partition"), [0]), "b"))
    with t.transaction() as tx:
        SnapshotProducer(tx).remove_files([b_file.column("file_path")[0].as_py()]).commit()
    state = t.current_snapshot().snapshot_id
    rows = _read(t)
    found = t.remove_dangling_deletes(dry_run=True)
    assert (found.removed_delete_files, found.dvs, found.equality_delete_files) == (2, 1, 1)
    assert _java_remove_dangling(cat, "t") == set(found.paths)
    assert _read(t.refresh()) == rows == _spark_rows(cat, "t")
    with t.manage_snapshots() as ms:
        ms.set_current_snapshot(state)
    with t.transaction() as tx:
        r = rewrite_data_files(tx, target_file_size=BIG, remove_dangling_deletes=True)
    # b's last file and its DV; then the equality deletes of a and b and the orphaned DV
    assert (r.rewritten_data_files, r.removed_delete_files) == (1, 4)
    assert _deletes(t).num_rows == 0
    assert _read(t) == rows == _spark_rows(cat, "t")
    cat.sql(
        "CALL {c}.system.rewrite_data_files(table => 'db.j', "
        "options => map('remove-dangling-deletes', 'true', 'rewrite-all', 'true'))"
    )
    j = ice.load_table(("db", "j"))
    assert _deletes(j).num_rows == 0
    assert _read(j) == before == _spark_rows(cat, "j")
