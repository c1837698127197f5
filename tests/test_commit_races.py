"""Races between writers that the requirements of a commit do not show, and tables whose files
must not be deleted: each case lost or duplicated rows, or failed a commit that could be rebuilt.

- a file-system catalog writer whose base version file was deleted after commit
  (``write.metadata.delete-after-commit.enabled``) re-created that version and its commit was
  lost behind the newer ones;
- an append to a branch after another writer committed to ``main`` re-applied its snapshot with
  a stale sequence number (``ValidationError``) instead of rebuilding it;
- an expiration planned before another writer tagged an old snapshot removed the tag with it;
- two equality-mode upserts of a key new to the table both inserted it;
- an append rebuilt after another engine replaced the table, a column keeping its field id
  with another type, committed files the new schema cannot read;
- orphan removal through a table object loaded before other commits deleted their files;
- ``gc.enabled=false`` did not stop expiration or orphan removal from deleting files, and a
  ``write.data.path`` shared by two tables let one's orphan removal delete the other's files.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog import Catalog
from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import (
    CommitConflictError,
    CommitFailedError,
    FileIOError,
    ValidationError,
)
from icefloe.io import InputFile
from icefloe.metadata import RemoveSnapshots, SetSnapshotRef
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.properties import gc_enabled
from icefloe.table.static import StaticTable
from icefloe.transforms import IdentityTransform

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _rows(ids: list[int], v: str = "x") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [v] * len(ids)}, schema=SCHEMA)


def _ids(catalog: Catalog, name: str = "db.t", **scan: object) -> list[int]:
    return sorted(catalog.load_table(name).scan(**scan).to_arrow().column("id").to_pylist())


def _age_all(root: Path, days: float) -> None:
    t = time.time() - days * 86400
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, (t, t))


def _delete_after_commit_table(tmp_path: Path) -> HadoopCatalog:
    """A file-system catalog whose table ``db.t`` (v1) keeps one previous metadata file."""
    cat = HadoopCatalog("h", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    props = {
        "write.metadata.delete-after-commit.enabled": "true",
        "write.metadata.previous-versions-max": "1",
    }
    cat.create_table("db.t", SCHEMA, properties=props)
    return cat


def test_hadoop_commit_on_a_deleted_base_version_is_not_lost(tmp_path: Path) -> None:
    cat = _delete_after_commit_table(tmp_path)
    stale = cat.load_table("db.t")  # v1
    other = cat.load_table("db.t")
    for i in range(3):  # v2..v4; v1 and v2 are deleted
        other.append(_rows([i]))
    assert not (tmp_path / "wh/db/t/metadata/v2.metadata.json").exists()
    stale.append(_rows([99]))  # rebuilt on v4, committed as v5
    assert _ids(cat) == [0, 1, 2, 99]
    assert stale.metadata_location.endswith("/v5.metadata.json")


def test_hadoop_commits_landing_while_a_version_is_written_do_not_lose_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three commits by another writer between a commit's check of its base and its
    exclusive create of v<N+1>: that version and the base are deleted by then, the create
    succeeds, and the commit was lost behind the newer versions (the hint even went back).
    Now the stray version is removed and the commit rebuilt on the newest one."""
    cat = _delete_after_commit_table(tmp_path)
    cat.load_table("db.t").append(_rows([0]))  # v2
    stale, other = cat.load_table("db.t"), cat.load_table("db.t")
    write_version = HadoopCatalog._write_version
    fired: list[int] = []

    def late(self: HadoopCatalog, identifier: object, version: int, new: object) -> str:
        if not fired:
            fired.append(version)
            for i in range(3):  # v3..v5: v2 and v3 are deleted
                other.append(_rows([10 + i]))
        return write_version(self, identifier, version, new)  # type: ignore[arg-type]

    monkeypatch.setattr(HadoopCatalog, "_write_version", late)
    stale.append(_rows([99]))
    assert fired == [3]
    assert _ids(cat) == [0, 10, 11, 12, 99]
    assert stale.metadata_location.endswith("/v6.metadata.json")
    names = sorted(os.listdir(tmp_path / "wh/db/t/metadata"))
    assert [n for n in names if n.startswith("v") and n.endswith(".json")] == [
        "v5.metadata.json",
        "v6.metadata.json",
    ]
    assert (tmp_path / "wh/db/t/metadata/version-hint.text").read_text() == "6"


def test_hadoop_commits_that_went_on_from_a_version_keep_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The base is gone after the create because writers went on from the new version and
    deleted the base: the commit happened, and is not repeated."""
    cat = _delete_after_commit_table(tmp_path)
    cat.load_table("db.t").append(_rows([0]))  # v2
    t, other = cat.load_table("db.t"), cat.load_table("db.t")
    write_version = HadoopCatalog._write_version
    calls: list[int] = []

    def followed(self: HadoopCatalog, identifier: object, version: int, new: object) -> str:
        location = write_version(self, identifier, version, new)  # type: ignore[arg-type]
        calls.append(version)
        if len(calls) == 1:  # others commit v4 on this v3 and delete v2
            monkeypatch.setattr(HadoopCatalog, "_write_version", write_version)
            other.refresh().append(_rows([7]))
        return location

    monkeypatch.setattr(HadoopCatalog, "_write_version", followed)
    t.append(_rows([99]))
    assert calls == [3]
    assert _ids(cat) == [0, 7, 99]


def test_an_append_on_a_state_another_writer_expired_is_rebuilt(catalog: Catalog) -> None:
    """Another writer appended and expired the snapshots this table object last saw,
    deleting their manifest lists: the append failed with NotFoundError, though an append is
    never refused for a race."""
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA).append(_rows([0]))
    stale, other = catalog.load_table("db.t"), catalog.load_table("db.t")
    for i in (1, 2, 3):
        other.append(_rows([i]))
    other.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1, retain_last=1)
    stale.append(_rows([99]))
    assert _ids(catalog) == [0, 1, 2, 3, 99]


@pytest.mark.parametrize(
    "change",
    [
        "delete",
        "overwrite",
        "dynamic_partition_overwrite",
        "upsert",
        "delete_by_keys",
        "rewrite_data_files",
        "remove_dangling_deletes",
    ],
)
def test_a_change_planned_on_a_state_another_writer_expired_is_planned_again(
    tmp_path: Path, change: str
) -> None:
    """Changes that read the table to plan read the manifests of the state the table object
    holds: once another writer expired it, each failed with NotFoundError on every call.
    They are planned again on the newest state, as after a lost race (and conflict as after
    one)."""
    cat = HadoopCatalog("h", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    by_v = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "v"))
    cat.create_table("db.t", SCHEMA, partition_spec=by_v, properties={"format-version": "2"})
    cat.load_table("db.t").append(_rows([1, 2]))
    cat.load_table("db.t").append(_rows([3]))
    stale, other = cat.load_table("db.t"), cat.load_table("db.t")
    other.append(_rows([4]))
    other.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1, retain_last=1)
    kept = [1, 2, 3, 4]
    if change == "delete":
        stale.delete("id = 1")
        kept = [2, 3, 4]
    elif change == "overwrite":
        stale.overwrite(_rows([9]), "id = 1")
        kept = [2, 3, 4, 9]
    elif change == "dynamic_partition_overwrite":  # replaces partition v = 'x'
        # it reads nothing to plan: it was made on the stale state, where the other writer's
        # row 4 was not yet in the partition it replaces, a conflict as without the expiry
        with pytest.raises(CommitConflictError):
            stale.dynamic_partition_overwrite(_rows([9]))
    elif change == "upsert":
        stale.upsert(_rows([1, 9], "u"), join_cols=["id"])
        kept = [1, 2, 3, 4, 9]
    elif change == "delete_by_keys":
        stale.delete_by_keys(pa.table({"id": pa.array([1], pa.int64())}), ["id"])
        kept = [2, 3, 4]
    elif change == "rewrite_data_files":
        assert stale.rewrite_data_files().rewritten_data_files == 3
    else:
        stale.remove_dangling_deletes()
    assert _ids(cat) == kept


def _stream(t: pa.Table) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())


@pytest.mark.parametrize("change", ["overwrite", "upsert", "delete_by_keys"])
def test_a_stream_input_is_never_replanned_without_its_rows(tmp_path: Path, change: str) -> None:
    """The first attempt reads a stream before it finds the state expired: planned again, the
    change ran with an empty input (an overwrite deleted the rows it should have replaced and
    wrote nothing; an upsert changed nothing). Upserts and key deletes hold their rows anyway
    and read the stream once; an overwrite, which streams, is refused, committing nothing."""
    cat = HadoopCatalog("h", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    cat.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    cat.load_table("db.t").append(_rows([1, 2]))
    stale, other = cat.load_table("db.t"), cat.load_table("db.t")
    other.append(_rows([3]))
    other.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1, retain_last=1)
    if change == "upsert":
        stale.upsert(_stream(_rows([1, 9], "u")), join_cols=["id"])
        assert _ids(cat) == [1, 2, 3, 9]
        assert cat.load_table("db.t").scan(row_filter="v = 'u'").to_arrow().num_rows == 2
    elif change == "delete_by_keys":
        stale.delete_by_keys(_stream(pa.table({"id": pa.array([1], pa.int64())})), ["id"])
        assert _ids(cat) == [2, 3]
    else:
        with pytest.raises(CommitConflictError, match="input was a stream"):
            stale.overwrite(_stream(_rows([1], "new")), "id = 1")
        assert _ids(cat) == [1, 2, 3]
        assert cat.load_table("db.t").scan(row_filter="v = 'new'").to_arrow().num_rows == 0


def test_a_retry_whose_newer_state_is_expired_meanwhile_is_rebuilt_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state a retry refreshed to loses its files to an expiry before the change is
    rebuilt on it: rebuilt once more on the newest state."""
    from icefloe.table.transaction import Transaction

    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    cat.create_table("db.t", SCHEMA).append(_rows([0]))
    stale, other = cat.load_table("db.t"), cat.load_table("db.t")
    other.append(_rows([1]))  # the stale append loses its first race
    replay = Transaction._replay
    expired: list[bool] = []

    def expire_first(self: Transaction) -> None:
        if not expired:  # the retry has refreshed; another writer moves on and expires
            expired.append(True)
            other.refresh().append(_rows([2]))
            other.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1, retain_last=1)
        replay(self)

    monkeypatch.setattr(Transaction, "_replay", expire_first)
    stale.append(_rows([99]))
    assert expired
    assert _ids(cat) == [0, 1, 2, 99]


def test_an_expiry_racing_another_expiry_of_the_same_snapshots_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Another writer expired the same snapshots (and deleted their files) between this
    expiry's plan and its commit: the commit stands, and the files the other writer deleted
    first are not an error."""
    import icefloe.table.expire as expire

    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    for i in range(4):
        t.append(_rows([i]))
    first, second = cat.load_table("db.t"), cat.load_table("db.t")
    plan = expire._plan
    raced: list[int] = []
    started: list[bool] = []

    def racing(*args: object, **kwargs: object) -> object:
        planned = plan(*args, **kwargs)  # type: ignore[arg-type]
        if not started:
            started.append(True)
            now = int(time.time() * 1000) + 1
            raced.extend(first.expire_snapshots(older_than_ms=now, retain_last=1).snapshot_ids)
        return planned

    monkeypatch.setattr(expire, "_plan", racing)
    with caplog.at_level("WARNING", logger="icefloe.maintenance"):
        result = second.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1, retain_last=1)
    assert sorted(result.snapshot_ids) == sorted(raced) and len(raced) == 3
    assert result.files_deleted and not result.files_not_deleted
    assert "files not deleted" not in caplog.text
    assert len(cat.load_table("db.t").snapshots()) == 1
    assert _ids(cat) == [0, 1, 2, 3]


def test_branch_append_after_a_main_commit_is_rebuilt(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA, properties={"format-version": "3"})
    t.append(_rows([1]))
    with t.manage_snapshots() as ms:
        ms.create_branch("b")
    stale = catalog.load_table("db.t")
    catalog.load_table("db.t").append(_rows([2]))  # main moves, the branch does not
    stale.append(_rows([3]), branch="b")
    assert _ids(catalog) == [1, 2]
    assert _ids(catalog, ref="b") == [1, 3]
    # row ids stay distinct across the branches (the rebuilt snapshot took fresh ones)
    fresh = catalog.load_table("db.t")
    main_ids = fresh.scan(selected_fields=("_row_id",)).to_arrow().column(0).to_pylist()
    branch_ids = fresh.scan(selected_fields=("_row_id",), ref="b").to_arrow().column(0).to_pylist()
    assert len(set(main_ids) | set(branch_ids)) == 3


def test_without_retries_a_lost_race_fails_and_keeps_the_table(tmp_path: Path) -> None:
    # commit.retry.num-retries=0: the first lost race is final (as in Java), appends included
    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, properties={"commit.retry.num-retries": "0"})
    real = cat._swap_pointer

    def another_writer_first(*args: object) -> None:
        """Another writer commits between the read of the current state and the swap."""
        del cat._swap_pointer
        cat.load_table("db.t").append(_rows([1]))
        real(*args)  # type: ignore[arg-type]

    cat._swap_pointer = another_writer_first  # type: ignore[method-assign]
    with pytest.raises(CommitFailedError):
        t.append(_rows([2]))
    assert _ids(cat) == [1]
    t.append(_rows([2]))
    assert _ids(cat) == [1, 2]


def test_without_retries_a_stale_table_commits_unless_a_change_conflicts(
    tmp_path: Path,
) -> None:
    # Java's commits refresh the table before every attempt, the first included: with
    # commit.retry.num-retries=0 a table loaded before another writer's commit still commits
    # (it failed with CommitFailedError); a real conflict still fails
    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    other = cat.create_table("db.t", SCHEMA, properties={"commit.retry.num-retries": "0"})
    stale = cat.load_table("db.t")
    other.append(_rows([1, 2, 3]))
    stale.append(_rows([4]))
    for change in (
        lambda t: t.delete("id = 1"),
        lambda t: t.overwrite(_rows([22]), "id = 2"),
        lambda t: t.set_properties(k="v"),
    ):
        stale.refresh()
        other.append(_rows([10]))
        change(stale)
    assert _ids(cat) == [3, 4, 10, 10, 10, 22]
    assert cat.load_table("db.t").properties["k"] == "v"
    # several tables at once: the stale one's append is rebuilt too
    cat.create_table("db.u", SCHEMA, properties={"commit.retry.num-retries": "0"})
    with cat.transaction() as tx:
        tx.table("db.u").append(_rows([5]))
        tx.table("db.t").append(_rows([6]))
        other.append(_rows([11]))  # the transaction's db.t is stale now
    assert _ids(cat) == [3, 4, 6, 10, 10, 10, 11, 22]
    assert _ids(cat, "db.u") == [5]
    # a real conflict: another writer deleted the row (its file) this delete deletes
    stale.refresh()
    other.delete("id = 4")
    before = {p for p in (tmp_path / "wh").rglob("*") if p.is_file()}
    with pytest.raises(CommitConflictError):
        stale.delete("id = 4")
    assert {p for p in (tmp_path / "wh").rglob("*") if p.is_file()} == before
    assert _ids(cat) == [3, 6, 10, 10, 10, 11, 22]
    # a transaction whose own table object moved on before it commits (a commit through the
    # same object, as a thread sharing it makes) is rebuilt too
    t = cat.load_table("db.t")
    tx = t.transaction()
    tx.delete("id = 3")
    t.append(_rows([12]))
    tx.commit_transaction()
    assert _ids(cat) == [6, 10, 10, 10, 11, 12, 22]


def test_expire_keeps_a_tag_created_after_it_was_planned(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    for i in range(3):
        t.overwrite(_rows([i * 10 + j for j in range(5)]))
    first = t.snapshots()[0].snapshot_id
    expirer = catalog.load_table("db.t")
    with catalog.load_table("db.t").manage_snapshots() as ms:
        ms.create_tag("keep-me", first)
    result = expirer.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1, retain_last=1)
    assert first not in result.snapshot_ids
    fresh = catalog.load_table("db.t")
    assert fresh.refs()["keep-me"].snapshot_id == first
    assert _ids(catalog, snapshot_id=first) == [0, 1, 2, 3, 4]


def test_equality_upserts_of_a_new_key_do_not_both_insert_it(tmp_path: Path) -> None:
    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, properties={"write.upsert.mode": "equality"})
    t.append(_rows([1, 2]))
    first, second = cat.load_table("db.t"), cat.load_table("db.t")
    first.upsert(_rows([10], "first"), ["id"])
    # the second conflicts, runs again on the newer table and replaces the first's row
    second.upsert(_rows([10], "second"), ["id"])
    rows = cat.load_table("db.t").scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["v"]) for r in rows) == [(1, "x"), (2, "x"), (10, "second")]
    # upserts of other keys in the same range both land
    a, b = cat.load_table("db.t"), cat.load_table("db.t")
    a.upsert(_rows([1, 3, 5], "a"), ["id"])
    b.upsert(_rows([2, 4, 6], "b"), ["id"])
    assert _ids(cat) == [1, 2, 3, 4, 5, 6, 10]


def test_an_equality_upsert_run_again_on_a_new_schema_is_a_conflict(tmp_path: Path) -> None:
    """The run again after a lost race met a column another writer added: the data fitted
    the schema the caller held, so the failure is the other writer's, CommitConflictError
    (it was a ValidationError about the caller's data)."""
    from icefloe.types import StringType

    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, properties={"write.upsert.mode": "equality"})
    t.append(_rows([1, 2]))
    stale, other = cat.load_table("db.t"), cat.load_table("db.t")
    other.update_schema().add_column("extra", StringType()).commit()
    # a key new to the table: the stale upsert's deletes do not reach the other's row of it
    other.upsert(_rows([3], "other").append_column("extra", pa.array(["e"])), ["id"])
    with pytest.raises(CommitConflictError, match="schema changed while the change ran"):
        stale.upsert(_rows([3], "stale"), ["id"])
    rows = cat.load_table("db.t").scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["v"]) for r in rows) == [(1, "x"), (2, "x"), (3, "other")]


def test_run_again_on_conflict_bounds_the_runs() -> None:
    """The loop shared by ``upsert`` and ``delete_by_keys``: a conflict reloads and runs again
    at most ``retries`` times, the last conflict propagating; ``runs_again`` stops it at once;
    a ValidationError goes to ``rerun_failed`` only on a run again."""
    from icefloe.table.committer import run_again_on_conflict

    log: list[str] = []

    def conflicting(times: int) -> object:
        def run() -> str:
            log.append("run")
            if log.count("run") <= times:
                raise CommitConflictError("lost")
            return "done"

        return run

    assert run_again_on_conflict(conflicting(4), lambda: log.append("reload"), 4) == "done"
    assert log == ["run", "reload"] * 4 + ["run"]
    log.clear()
    with pytest.raises(CommitConflictError, match="lost"):
        run_again_on_conflict(conflicting(5), lambda: log.append("reload"), 4)
    assert log == ["run", "reload"] * 4 + ["run"]
    log.clear()
    with pytest.raises(CommitConflictError):
        run_again_on_conflict(
            conflicting(1), lambda: log.append("reload"), 4, runs_again=lambda: False
        )
    assert log == ["run"]

    def moved(exc: ValidationError) -> None:
        raise CommitConflictError(f"moved: {exc}") from exc

    def bad() -> str:
        log.append("bad")
        if len(log) == 1:
            raise CommitConflictError("lost")
        raise ValidationError("bad input")

    log.clear()
    with pytest.raises(CommitConflictError, match="moved: bad input"):
        run_again_on_conflict(bad, lambda: None, 4, rerun_failed=moved)
    with pytest.raises(ValidationError, match="bad input"):  # a first run: not passed on
        run_again_on_conflict(bad, lambda: None, 4, rerun_failed=moved)


def test_an_upsert_planned_again_after_an_expiry_on_a_new_schema_is_a_conflict(
    tmp_path: Path,
) -> None:
    """The state a stale handle planned on was expired (its manifest list deleted) by a writer
    that also added a column: the upsert planned again on the newest state is refused as a
    conflict, not as bad input."""
    from icefloe.types import StringType

    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(_rows([1, 2]))
    stale, other = cat.load_table("db.t"), cat.load_table("db.t")
    other.update_schema().add_column("extra", StringType()).commit()
    other.append(_rows([3]).append_column("extra", pa.array(["e"])))
    other.expire_snapshots(older_than_ms=int(time.time() * 1000) + 1, retain_last=1)
    with pytest.raises(CommitConflictError, match="schema changed while the change ran"):
        stale.upsert(_rows([1], "stale"), ["id"])
    assert _ids(cat) == [1, 2, 3]


def _replace_schema(cat: Catalog, name: str, fields: list[dict[str, object]]) -> None:
    """Replace the table as Iceberg Java's REPLACE TABLE commits it: ``main`` removed, a new
    current schema (keeping the field ids of the columns it keeps), spec and sort order."""
    from icefloe.metadata.requirements import requirement_from_json
    from icefloe.metadata.updates import update_from_json

    t = cat.load_table(name)
    schema = {"type": "struct", "schema-id": 0, "fields": fields}
    updates = [
        {"action": "remove-snapshot-ref", "ref-name": "main"},
        {"action": "add-schema", "schema": schema},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
        {"action": "set-default-sort-order", "sort-order-id": -1},
    ]
    uuid = {"type": "assert-table-uuid", "uuid": t.metadata.table_uuid}
    cat.commit_table(t, [requirement_from_json(uuid)], [update_from_json(u) for u in updates])


def test_a_write_rebuilt_after_a_replace_that_retyped_its_columns_is_a_conflict(
    tmp_path: Path,
) -> None:
    """A table object loaded before another engine replaced the table (a column keeping its
    field id with another type) appends: rebuilt on the new state, the write's files carry the
    old type, which the new schema cannot read. The commit is refused, nothing is left; it
    committed and made the table unreadable. A type the spec promotes to commits."""
    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("n", pa.int32())])
    rows = pa.table({"id": pa.array([7], pa.int64()), "n": pa.array([7], pa.int32())})
    for name, new_type in [("db.t", "string"), ("db.u", "long")]:
        t = cat.create_table(name, schema)
        t.append(rows)
        files = sorted(f.location for f in t.io.list_prefix(t.location))
        stale = cat.load_table(name)
        _replace_schema(cat, name, [{"id": 2, "name": "n", "required": False, "type": new_type}])
        if new_type == "long":  # int -> long: files written as int read as long
            stale.append(rows)
            assert cat.load_table(name).scan().to_arrow().to_pylist() == [{"n": 7}]
            continue
        with pytest.raises(CommitConflictError, match=r"'n' \(id 2\), written as int, is string"):
            stale.append(rows)
        now = cat.load_table(name)
        assert now.current_snapshot() is None and len(now.snapshots()) == 1
        assert now.scan().to_arrow().num_rows == 0
        left = sorted(f.location for f in t.io.list_prefix(t.location))
        assert [f for f in left if f not in files] == [now.metadata_location]


def test_a_ref_moved_and_its_old_head_removed_in_one_commit(catalog: Catalog) -> None:
    # the writer knew the ref: rolling main back and expiring the bad snapshot, or moving a
    # tag and expiring its old target, in one transaction commits (through REST too)
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    for i in range(3):
        t.append(_rows([i]))
    s1, s2, s3 = (s.snapshot_id for s in t.snapshots())
    with t.manage_snapshots() as ms:
        ms.create_tag("rel", s1)
    tx = t.transaction()
    tx.apply([SetSnapshotRef("main", s2, "branch"), RemoveSnapshots((s3,))])
    tx.commit_transaction()
    fresh = catalog.load_table("db.t")
    assert fresh.current_snapshot().snapshot_id == s2  # type: ignore[union-attr]
    assert s3 not in {s.snapshot_id for s in fresh.snapshots()}
    tx = fresh.transaction()
    tx.apply([SetSnapshotRef("rel", s2, "tag"), RemoveSnapshots((s1,))])
    tx.commit_transaction()
    fresh = catalog.load_table("db.t")
    assert fresh.refs()["rel"].snapshot_id == s2
    assert s1 not in {s.snapshot_id for s in fresh.snapshots()}


def test_orphan_removal_through_a_stale_table_keeps_newer_commits(tmp_path: Path) -> None:
    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(_rows([1]))
    stale = cat.load_table("db.t")
    other = cat.load_table("db.t")
    other.append(_rows([2]))
    other.append(_rows([3]))
    root = Path(t.location.removeprefix("file://"))
    _age_all(root, 4)  # as if the maintenance job had held its table object for days
    stray = root / "data" / "stray.parquet"
    stray.write_bytes(b"x")
    _age_all(root, 4)
    removed = stale.remove_orphan_files()
    assert [r.removeprefix("file://") for r in removed] == [str(stray)]
    assert _ids(cat) == [1, 2, 3]


def test_gc_disabled_stops_expiration_and_orphan_removal(tmp_path: Path) -> None:
    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, properties={"gc.enabled": "false"})
    t.overwrite(_rows([1]))
    t.overwrite(_rows([2]))
    files = {p for p in Path(t.location.removeprefix("file://")).rglob("*.parquet")}
    later = int(time.time() * 1000) + 1
    with pytest.raises(ValidationError, match=r"gc\.enabled"):
        t.expire_snapshots(older_than_ms=later, retain_last=1)
    with pytest.raises(ValidationError, match=r"gc\.enabled"):
        t.remove_orphan_files(older_than=0)
    # dry runs list; only the snapshots go; every file stays
    assert t.remove_orphan_files(older_than=0, dry_run=True) == []
    assert t.expire_snapshots(older_than_ms=later, retain_last=1, dry_run=True).snapshot_ids
    result = t.expire_snapshots(older_than_ms=later, retain_last=1, delete_files=False)
    assert len(result.snapshot_ids) == 1
    assert {p for p in Path(t.location.removeprefix("file://")).rglob("*.parquet")} == files
    with pytest.raises(ValidationError):
        t.set_properties(**{"gc.enabled": "nope"})


@pytest.mark.parametrize(
    ("value", "enabled"),
    [(None, True), ("true", True), ("TRUE", True), ("false", False), ("no", False), ("0", False)],
)
def test_gc_enabled_reads_values_as_java_does(value: str | None, enabled: bool) -> None:
    props = {} if value is None else {"gc.enabled": value}
    assert gc_enabled(props) is enabled


def test_orphan_removal_leaves_a_shared_data_path_alone(tmp_path: Path) -> None:
    cat = SqlCatalog("s", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    shared = (tmp_path / "shared").as_uri()
    a = cat.create_table("db.a", SCHEMA, properties={"write.data.path": shared})
    b = cat.create_table("db.b", SCHEMA, properties={"write.data.path": shared})
    a.append(_rows([1]))
    b.append(_rows([2]))
    _age_all(tmp_path, 4)
    assert a.remove_orphan_files() == []
    assert _ids(cat, "db.b") == [2]
    # named explicitly, the shared directory is listed (the caller's choice)
    found = a.remove_orphan_files(location=shared, dry_run=True)
    assert [Path(f.removeprefix("file://")).parent for f in found] == [tmp_path / "shared"]


def test_hadoop_hint_naming_a_missing_version_does_not_block_commits(tmp_path: Path) -> None:
    cat = HadoopCatalog("h", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    (tmp_path / "wh/db/t/metadata/version-hint.text").write_text("9")  # no v9 exists
    t.append(_rows([1]))
    t.append(_rows([2]))
    assert _ids(cat) == [1, 2]


def test_hadoop_hint_the_store_fails_to_serve_is_looked_past(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hint read failing (an object store's 503) neither fails a commit nor a load, and a
    stale base is still caught, from the listing, when its next version was deleted."""
    cat = _delete_after_commit_table(tmp_path)
    stale = cat.load_table("db.t")  # v1
    real_read = InputFile.read

    def read(self: InputFile) -> bytes:
        if self.location.endswith("/version-hint.text"):
            raise FileIOError(f"{self.location}: AWS Error SLOW_DOWN (HTTP status 503)")
        return real_read(self)

    monkeypatch.setattr(InputFile, "read", read)
    other = cat.load_table("db.t")
    for i in range(3):  # v2..v4; v1 and v2 are deleted
        other.append(_rows([i]))
    assert _ids(cat) == [0, 1, 2]
    stale.append(_rows([99]))  # rebuilt on v4, committed as v5
    assert _ids(cat) == [0, 1, 2, 99]
    assert stale.metadata_location.endswith("/v5.metadata.json")
    static = StaticTable.from_metadata(str(tmp_path / "wh/db/t"))
    assert static.metadata_location.endswith("/v5.metadata.json")


def test_hadoop_base_behind_newer_versions_is_stale_without_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A base still present while its next version is gone and newer ones exist (files
    removed out of order): with the hint unreadable, the listing shows the newer versions,
    so the commit is rebuilt on them rather than written as a version behind them."""
    cat = HadoopCatalog("h", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(_rows([1]))  # v2
    stale = cat.load_table("db.t")
    t.append(_rows([2]))  # v3
    t.append(_rows([3]))  # v4
    (tmp_path / "wh/db/t/metadata/v3.metadata.json").unlink()
    real_read = InputFile.read

    def read(self: InputFile) -> bytes:
        if self.location.endswith("/version-hint.text"):
            raise FileIOError(f"{self.location}: AWS Error SLOW_DOWN (HTTP status 503)")
        return real_read(self)

    monkeypatch.setattr(InputFile, "read", read)
    stale.append(_rows([99]))
    assert stale.metadata_location.endswith("/v5.metadata.json")
    assert _ids(cat) == [1, 2, 3, 99]


def test_a_shared_table_keeps_the_later_of_two_threads_commits(tmp_path: Path) -> None:
    """Two threads share one table object. B's commit lands, then B is held before it takes
    its result; A appends on top of B meanwhile. B's older result must not replace A's: the
    object went back, A no longer saw its rows, and A's delete of them found nothing and
    silently did nothing."""
    import threading

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    real_commit = cat.commit_table
    landed, release = threading.Event(), threading.Event()

    def held_commit(*args: object) -> object:
        result = real_commit(*args)  # type: ignore[arg-type]
        if threading.current_thread().name == "B":
            landed.set()
            release.wait(30)
        return result

    cat.commit_table = held_commit  # type: ignore[method-assign]
    b = threading.Thread(target=lambda: t.set_properties({"owner": "B"}), name="B")
    b.start()
    assert landed.wait(30)
    t.append(_rows(list(range(20))))  # conflicts with B's commit, retried on top of it
    release.set()
    b.join(30)
    assert t.scan().count() == 20 and t.properties["owner"] == "B"
    t.delete("id >= 2 and id < 8")
    assert _ids(cat) == [0, 1, *range(8, 20)]
    # a refresh whose read of the catalog ends after a later commit through the object keeps
    # that commit
    stale, real_load = cat.load_table("db.t"), cat.load_table

    def racing_load(*_: object) -> object:
        cat.load_table = real_load  # type: ignore[method-assign]
        t.append(_rows([100]))  # lands while the refresh reads
        return stale

    cat.load_table = racing_load  # type: ignore[assignment, method-assign]
    t.refresh()
    assert t.scan().count() == 15
    # the whole metadata of the version it held (a REST catalog loading refs only) does not
    # replace a version a commit gave the object meanwhile
    whole = t.metadata

    def every_snapshot_racing(table: object) -> object:
        t.append(_rows([200]))
        return whole

    cat.load_every_snapshot = every_snapshot_racing  # type: ignore[method-assign]
    assert t.load_every_snapshot()
    assert t.scan().count() == 16 and t.metadata_and_location()[0] is t.metadata
    # with no commit in between, a refresh takes what the catalog says, older or not (a
    # pointer moved back to an earlier file)
    cat.load_table = lambda *_: stale  # type: ignore[assignment, method-assign]
    t.refresh()
    assert t.scan().count() == 14


@pytest.mark.parametrize("kind", ["sql", "hadoop"])
@pytest.mark.parametrize("format_version", [1, 2])
def test_a_shared_table_keeps_the_later_of_commits_that_add_no_snapshot(
    tmp_path: Path, kind: str, format_version: int
) -> None:
    """With ``write.metadata.previous-versions-max=1`` the metadata log names only the file
    before, and property changes (every commit of a v1 table) leave the sequence number as it
    was: a commit result arriving after two later commits through the same object (a thread
    sharing it) is ordered by the number in its file name, and does not take the object back."""
    if kind == "sql":
        cat: Catalog = SqlCatalog(
            "c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh"
        )
    else:
        cat = HadoopCatalog("h", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    props = {"format-version": str(format_version), "write.metadata.previous-versions-max": "1"}
    t = cat.create_table("db.t", SCHEMA, properties=props)
    t.append(_rows([1]))
    real_commit = cat.commit_table

    def late_result(*args: object) -> object:
        result = real_commit(*args)  # type: ignore[arg-type]
        cat.commit_table = real_commit  # type: ignore[method-assign]
        # two commits through the same object land before this one's result is taken
        t.set_properties({"a": "1"})
        t.set_properties({"b": "2"})
        return result

    cat.commit_table = late_result  # type: ignore[method-assign]
    t.set_properties({"owner": "B"})
    latest = cat.load_table("db.t")
    assert t.metadata_location == latest.metadata_location
    assert {k: t.properties.get(k) for k in ("owner", "a", "b")} == {
        "owner": "B",
        "a": "1",
        "b": "2",
    }
    # a refresh with no commit in between still takes a pointer moved back to an earlier file
    earlier = cat.load_table("db.t")
    t.set_properties({"c": "3"})
    t.set_properties({"d": "4"})
    cat.load_table = lambda *_: earlier  # type: ignore[assignment, method-assign]
    t.refresh()
    assert t.metadata_location == earlier.metadata_location and "c" not in t.properties


def _keyed_by_id_partitioned_by_v(tmp_path: Path) -> SqlCatalog:
    """A table keyed on ``id`` and partitioned by ``v``: a key's rows may be in any partition."""
    cat = SqlCatalog("kp", uri=f"sqlite:///{tmp_path}/kp.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "v"))
    t = cat.create_table("db.t", SCHEMA, partition_spec=spec, format_version=2)
    t.append(_rows([1, 2], "a"))
    return cat


def test_delete_by_keys_reaches_rows_another_writer_added_to_a_new_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``delete_by_keys`` writes equality deletes only for the partitions whose files may hold
    its keys. Another writer's rows of a key added to a partition it did not reach, committed
    first, stayed (the same rows in a reached partition were deleted): the commit now
    conflicts under serializable isolation, and ``Table.delete_by_keys`` runs again on the
    newer table."""
    from icefloe.table import row_level

    cat = _keyed_by_id_partitioned_by_v(tmp_path)
    keys = pa.table({"id": pa.array([1], pa.int64())})
    stale = cat.load_table("db.t")
    with pytest.raises(CommitConflictError, match="may hold rows"), stale.transaction() as tx:
        tx.delete_by_keys(keys, ["id"])
        cat.load_table("db.t").append(_rows([1], "new"))  # committed first
    assert _ids(cat) == [1, 1, 2]  # nothing of the delete landed
    # in the same partition the later deletes apply: no conflict
    stale = cat.load_table("db.t")
    with stale.transaction() as tx:
        tx.delete_by_keys(pa.table({"id": pa.array([2], pa.int64())}), ["id"])
        cat.load_table("db.t").append(_rows([2], "a"))
    assert _ids(cat) == [1, 1]
    # the table method runs again, and the second run reaches the new partition
    plan = row_level._equality_files
    raced: list[bool] = []

    def racing(*args: object, **kwargs: object) -> object:
        out = plan(*args, **kwargs)  # type: ignore[arg-type]
        if not raced:
            raced.append(True)
            cat.load_table("db.t").append(_rows([1], "newer"))
        return out

    monkeypatch.setattr(row_level, "_equality_files", racing)
    cat.load_table("db.t").delete_by_keys(keys, ["id"])
    assert raced and _ids(cat) == []
    # under snapshot isolation the other writer's rows stay, as the setting says
    monkeypatch.setattr(row_level, "_equality_files", plan)
    t = cat.load_table("db.t")
    t.set_properties(**{"write.delete.isolation-level": "snapshot"})
    t.append(_rows([5], "a"))
    with t.refresh().transaction() as tx:
        tx.delete_by_keys(pa.table({"id": pa.array([5], pa.int64())}), ["id"])
        cat.load_table("db.t").append(_rows([5], "other"))
    assert _ids(cat) == [5]
