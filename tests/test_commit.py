"""The commit protocol: lost races retry, real conflicts fail, failed attempts clean up,
ambiguous outcomes keep their files, backoff follows the commit.retry.* properties."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.commit import RetryPolicy, run_commit
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import (
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
)
from icefloe.metadata import (
    AddSchema,
    AssertTableUUID,
    SetCurrentSchema,
    SetProperties,
    TableMetadata,
)
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.types import IntegerType, LongType, NestedField, StringType


def _schema() -> Schema:
    return Schema(NestedField(1, "id", LongType(), required=True))


def _metadata_files(table: Table) -> list[str]:
    directory = Path(table.metadata_location.removeprefix("file://")).parent
    return sorted(p.name for p in directory.glob("*.metadata.json"))


FAST = {"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "5"}


def test_stale_writer_retries_and_cleans_up(sql_catalog: SqlCatalog) -> None:
    sql_catalog.create_namespace("db")
    t1 = sql_catalog.create_table("db.t", _schema(), properties=FAST)
    t2 = sql_catalog.load_table("db.t")
    t1.set_properties(a="1")
    t2.set_properties(b="2")  # loses the first race, refreshes, re-applies
    final = sql_catalog.load_table("db.t")
    assert final.properties["a"] == "1" and final.properties["b"] == "2"
    assert final.metadata_location == t2.metadata_location
    # the lost attempt's file was deleted: one file per committed version only
    assert len(_metadata_files(final)) == 3
    assert [e.metadata_file for e in final.metadata_log()] == [
        e.metadata_file for e in t1.metadata_log()
    ] + [t1.metadata_location]


def test_a_commit_that_changes_nothing_writes_no_version(
    sql_catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Updates that are all already true (none, a current schema set current again, a
    property set to its value) write no metadata file and leave the log as it was, as Java's
    catalogs do: a new version would push a real one out of the log for nothing."""
    sql_catalog.create_namespace("db")
    t = sql_catalog.create_table("db.t", _schema(), properties={"a": "1"})
    before = t.metadata_location
    t.transaction().apply([]).commit_transaction()
    t.transaction().apply([SetCurrentSchema(0), SetProperties({"a": "1"})]).commit_transaction()
    t.set_properties(a="1")
    again = sql_catalog.load_table("db.t")
    assert again.metadata_location == before == t.metadata_location
    assert _metadata_files(again) == [before.rsplit("/", 1)[1]] and again.metadata_log() == []
    later = time.time_ns() + 3_600 * 10**9  # changes an hour after the last one commit
    monkeypatch.setattr(time, "time_ns", lambda: later)
    monkeypatch.setattr(time, "time", lambda: later / 1e9)
    t.append(pa.table({"id": pa.array([7], pa.int64())}))
    t.set_properties(a="2")
    final = sql_catalog.load_table("db.t")
    assert final.properties["a"] == "2" and final.scan().to_arrow()["id"].to_pylist() == [7]
    assert len(_metadata_files(again)) == 3


def test_schema_race_is_a_conflict(sql_catalog: SqlCatalog) -> None:
    sql_catalog.create_namespace("db")
    t1 = sql_catalog.create_table("db.t", _schema(), properties=FAST)
    t2 = sql_catalog.load_table("db.t")
    wider = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "x", StringType())
    )
    other = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "y", IntegerType())
    )
    t1.transaction().apply([AddSchema(wider), SetCurrentSchema(-1)]).commit_transaction()
    before = _metadata_files(t1)
    with pytest.raises(CommitConflictError, match=r"last assigned field id|changed"):
        t2.transaction().apply([AddSchema(other), SetCurrentSchema(-1)]).commit_transaction()
    assert _metadata_files(t1) == before
    assert [f.name for f in sql_catalog.load_table("db.t").schema().fields] == ["id", "x"]


def test_failed_requirement_is_a_conflict(sql_catalog: SqlCatalog) -> None:
    sql_catalog.create_namespace("db")
    t = sql_catalog.create_table("db.t", _schema())
    with pytest.raises(CommitConflictError, match="UUID"):
        t.transaction().apply(
            [SetProperties({"a": "1"})], requirements=[AssertTableUUID("0" * 32)]
        ).commit_transaction()
    assert "a" not in sql_catalog.load_table("db.t").properties


def test_without_retries_a_stale_table_commits(sql_catalog: SqlCatalog) -> None:
    # commit.retry.num-retries=0 gives up after a lost race, not on a table loaded before
    # another commit: as Java's commits, the only attempt starts from the current state
    sql_catalog.create_namespace("db")
    t1 = sql_catalog.create_table(
        "db.t", _schema(), properties={**FAST, "commit.retry.num-retries": "0"}
    )
    t2 = sql_catalog.load_table("db.t")
    t1.set_properties(a="1")
    t2.set_properties(b="2")
    final = sql_catalog.load_table("db.t")
    assert final.properties["a"] == "1" and final.properties["b"] == "2"
    assert len(_metadata_files(final)) == 3  # no attempt was lost
    # a requirement the other writer's change broke still fails
    t1.update_schema().add_column("x", StringType()).commit()
    with pytest.raises(CommitConflictError):
        t2.update_schema().add_column("y", IntegerType()).commit()
    assert [f.name for f in sql_catalog.load_table("db.t").schema().fields] == ["id", "x"]


def test_retries_exhausted(sql_catalog: SqlCatalog) -> None:
    sql_catalog.create_namespace("db")
    t1 = sql_catalog.create_table(
        "db.t", _schema(), properties={**FAST, "commit.retry.num-retries": "0"}
    )
    t2 = sql_catalog.load_table("db.t")
    real = sql_catalog._swap_pointer

    def another_writer_first(*args: Any) -> None:
        """Another writer commits between the read of the current state and the swap."""
        del sql_catalog._swap_pointer
        t1.set_properties(a="1")
        real(*args)

    sql_catalog._swap_pointer = another_writer_first  # type: ignore[method-assign]
    with pytest.raises(CommitFailedError, match="another writer"):
        t2.set_properties(b="2")
    assert len(_metadata_files(t1)) == 2  # the failed attempt left nothing behind
    assert "b" not in sql_catalog.load_table("db.t").properties


def test_unknown_state_keeps_the_file(
    sql_catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy.exc import OperationalError

    sql_catalog.create_namespace("db")
    t = sql_catalog.create_table("db.t", _schema())
    before = _metadata_files(t)

    real_connect = sql_catalog.engine.connect

    def connect_then_lose_the_update() -> Any:
        """The COMMIT's answer is lost (the swap rolled back here; the client cannot tell)."""
        conn = real_connect()
        real_begin = conn.begin

        def begin() -> Any:
            return _CommitFault(real_begin(), landed=False)

        conn.begin = begin  # type: ignore[method-assign]
        return conn

    def broken_get(identifiers: Any, kind: Any = None) -> list[str]:
        statement = "SELECT metadata_location FROM iceberg_tables WHERE table_name = %(n)s"
        raise OperationalError(statement, {"n": "secret-name"}, Exception("still down"))

    monkeypatch.setattr(sql_catalog.engine, "connect", connect_then_lose_the_update)
    monkeypatch.setattr(sql_catalog, "_settled_pointers", broken_get)
    with pytest.raises(CommitStateUnknownError, match="may or may not") as caught:
        t.set_properties(a="1")
    monkeypatch.undo()
    # the driver's words only: no SQL text or bound parameters
    assert "checking failed: still down" in str(caught.value)
    assert "SELECT" not in str(caught.value) and "secret-name" not in str(caught.value)
    after = _metadata_files(t)
    assert len(after) == len(before) + 1  # kept: it may be the table's current metadata
    assert "a" not in sql_catalog.load_table("db.t").properties


def test_database_error_after_swap_is_resolved(
    sql_catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The UPDATE reached the database but the client saw an error: the commit succeeded."""

    sql_catalog.create_namespace("db")
    t = sql_catalog.create_table("db.t", _schema())
    real_connect = sql_catalog.engine.connect

    def connect_then_lose_the_ack() -> Any:
        conn = real_connect()
        real_begin = conn.begin

        def begin() -> Any:
            return _CommitFault(real_begin(), landed=True)

        conn.begin = begin  # type: ignore[method-assign]
        return conn

    monkeypatch.setattr(sql_catalog.engine, "connect", connect_then_lose_the_ack)
    t.set_properties(a="1")
    monkeypatch.undo()
    loaded = sql_catalog.load_table("db.t")
    assert loaded.properties["a"] == "1" and loaded.metadata_location == t.metadata_location


def test_backoff_policy_and_retry_count(tmp_path: Path) -> None:
    from icefloe.metadata import new_table_metadata
    from icefloe.partitioning import UNPARTITIONED_PARTITION_SPEC
    from icefloe.sorting import UNSORTED_SORT_ORDER

    base = new_table_metadata(
        _schema(),
        UNPARTITIONED_PARTITION_SPEC,
        UNSORTED_SORT_ORDER,
        str(tmp_path),
        {
            "commit.retry.num-retries": "3",
            "commit.retry.min-wait-ms": "100",
            "commit.retry.max-wait-ms": "250",
        },
    )
    policy = RetryPolicy.from_properties(base.properties)
    assert (policy.num_retries, policy.min_wait_ms, policy.max_wait_ms) == (3, 100, 250)
    assert policy.total_timeout_ms == 1_800_000
    sleeps: list[float] = []
    attempts: list[TableMetadata] = []

    def always_lose(b: TableMetadata, loc: str, new: TableMetadata) -> str:
        attempts.append(new)
        raise CommitFailedError("lost")

    def commit_losing(meta: TableMetadata) -> None:
        with pytest.raises(CommitFailedError):
            run_commit(
                meta,
                "m0",
                [],
                [SetProperties({"k": "v"})],
                always_lose,
                lambda: (meta, "m0"),
                sleep=sleeps.append,
            )

    commit_losing(base)
    assert len(attempts) == 4  # first try + 3 retries
    assert len(sleeps) == 3
    # doubling from min-wait (100, 200, 250 capped), each jittered into [50%, 100%]
    for wait, cap in zip(sleeps, [0.1, 0.2, 0.25], strict=True):
        assert cap / 2 <= wait <= cap
    sleeps.clear()
    attempts.clear()
    timeout = TableMetadata.from_json(
        {**base.to_json(), "properties": {"commit.retry.total-timeout-ms": "0"}}
    )
    commit_losing(timeout)
    # as Java's Tasks: the total timeout ends the retries once one has happened
    assert len(attempts) == 2 and len(sleeps) == 1


def _crashing_commit(uri: str, warehouse: str, name: str, when: str) -> None:
    """Child process: commit a property change and die abruptly at ``when``."""
    import os

    catalog = SqlCatalog(name, uri=uri, warehouse=warehouse)
    real_swap = catalog._swap_pointer

    def swap(identifier: Any, expected: str, new: str) -> None:
        if when == "before-swap":
            os._exit(3)
        real_swap(identifier, expected, new)
        os._exit(4)  # after the swap, before anything else happens

    catalog._swap_pointer = swap  # type: ignore[method-assign]
    catalog.load_table("db.t").set_properties(crash=when)


@pytest.mark.parametrize("when", ["before-swap", "after-swap"])
def test_commit_interrupted_by_process_death(tmp_path: Path, when: str) -> None:
    import multiprocessing

    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    warehouse = (tmp_path / "warehouse").as_uri()
    catalog = SqlCatalog("crash", uri=uri, warehouse=warehouse)
    catalog.create_namespace("db")
    before = catalog.create_table("db.t", _schema(), properties={"a": "1"})
    proc = multiprocessing.get_context("spawn").Process(
        target=_crashing_commit, args=(uri, warehouse, "crash", when)
    )
    proc.start()
    proc.join(timeout=300)
    assert proc.exitcode == (3 if when == "before-swap" else 4)
    after = catalog.load_table("db.t")  # never broken
    files = _metadata_files(after)
    assert len(files) == 2  # the new file was written in both cases
    if when == "before-swap":
        assert after.metadata_location == before.metadata_location
        assert "crash" not in after.properties
    else:
        assert after.properties["crash"] == "after-swap"
        assert after.metadata_log()[-1].metadata_file == before.metadata_location
    after.set_properties(b="2")  # and the table keeps working
    assert catalog.load_table("db.t").properties["b"] == "2"
    catalog.close()


def test_a_commit_that_keeps_losing_stops_at_the_total_timeout(sql_catalog: SqlCatalog) -> None:
    """``commit.retry.total-timeout-ms`` ends the retries of every commit once it has retried
    (as Java's ``Tasks``), not only of appends: a delete losing every race to another writer
    stops after about the timeout, far before its 30 retries."""
    import time

    import pyarrow as pa

    sql_catalog.create_namespace("db")
    props = {
        "commit.retry.num-retries": "30",
        "commit.retry.min-wait-ms": "200",
        "commit.retry.max-wait-ms": "200",
        "commit.retry.total-timeout-ms": "1000",
    }
    schema = pa.schema([pa.field("id", pa.int64())])
    t = sql_catalog.create_table("db.t", schema, properties=props)
    t.append(pa.table({"id": pa.array(range(100), pa.int64())}))
    other = sql_catalog.load_table("db.t")
    real = t._do_commit
    attempts = []

    def losing(requirements: Any, updates: Any) -> Any:
        attempts.append(1)
        other.refresh().append(pa.table({"id": pa.array([1000 + len(attempts)], pa.int64())}))
        return real(requirements, updates)

    t._do_commit = losing  # type: ignore[method-assign]
    started = time.monotonic()
    with pytest.raises(CommitConflictError):
        t.delete("id < 10")
    assert 2 <= len(attempts) <= 8 and time.monotonic() - started < 5


class _CommitFault:
    """A transaction whose COMMIT answers with a lost connection: after the database
    committed it (``landed``) or after it rolled back."""

    def __init__(self, trans: Any, landed: bool) -> None:
        self.trans, self.landed = trans, landed

    def rollback(self) -> None:
        self.trans.rollback()

    def commit(self) -> None:
        from sqlalchemy.exc import OperationalError

        if self.landed:
            self.trans.commit()
        else:
            self.trans.rollback()
        raise OperationalError("COMMIT", {}, Exception("connection lost"))


@pytest.mark.parametrize("operation", ["set_properties", "append", "delete"])
def test_a_total_timeout_below_the_first_wait_still_retries_once(
    sql_catalog: SqlCatalog, operation: str
) -> None:
    """``commit.retry.total-timeout-ms`` shorter than the first back-off: a commit from a
    table object loaded before another writer's commit failed at once, without the retry
    Java's ``Tasks`` always makes (it stops on the timeout only after a retry)."""
    import pyarrow as pa

    sql_catalog.create_namespace("db")
    props = {"commit.retry.num-retries": "4", "commit.retry.total-timeout-ms": "1"}
    t = sql_catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64())]), properties=props)
    t.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    stale = sql_catalog.load_table("db.t")
    t.append(pa.table({"id": pa.array([3], pa.int64())}))
    if operation == "set_properties":
        stale.set_properties(a="1")
    elif operation == "append":
        stale.append(pa.table({"id": pa.array([4], pa.int64())}))
    else:
        stale.delete("id = 1")
    rows = sorted(sql_catalog.load_table("db.t").scan().to_arrow()["id"].to_pylist())
    expected = {"set_properties": [1, 2, 3], "append": [1, 2, 3, 4], "delete": [2, 3]}
    assert rows == expected[operation]
