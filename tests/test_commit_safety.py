"""A commit whose outcome is unknown never deletes a file: a ``KeyboardInterrupt``,
``SystemExit`` or any other exception arriving during or after the catalog's pointer swap keeps
every file the new metadata may reference, on every catalog. Files are deleted only after an
error that proves the pointer did not move (a lost race, a conflict, a refused update)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import Catalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import CommitFailedError
from icefloe.table.orphan_files import reachable_files

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def _ids(table: Any) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def _assert_intact(catalog: Catalog, ident: str) -> Any:
    """The table loads, every file its metadata references exists, and it accepts an append."""
    t = catalog.load_table(ident)
    referenced = set(reachable_files(t.io, t.metadata, t.metadata_location).to_pylist())
    missing = [p for p in referenced if not p.endswith("version-hint.text") and not t.io.exists(p)]
    assert missing == []
    before = _ids(t)
    t.append(pa.table({"id": pa.array([100], pa.int64())}))
    assert _ids(catalog.load_table(ident)) == sorted([*before, 100])
    return t


def _interrupt_after_swap(catalog: Catalog, exc: BaseException) -> None:
    """Raise ``exc`` right after the pointer moved: after the metadata write and swap of a
    SQL or file-system catalog, after the server's answer for a REST catalog."""
    name = "commit_table" if type(catalog).__name__ == "RestCatalog" else "_write_and_swap"
    real = getattr(catalog, name)

    def swap_then_raise(*args: Any) -> Any:
        real(*args)
        raise exc

    setattr(catalog, name, swap_then_raise)


def _restore(catalog: Catalog) -> None:
    for name in ("commit_table", "_write_and_swap"):
        catalog.__dict__.pop(name, None)  # back to the class's method


@pytest.mark.parametrize(
    "exc",
    [KeyboardInterrupt(), SystemExit(143), RuntimeError("connection reset")],
    ids=["KeyboardInterrupt", "SystemExit", "RuntimeError"],
)
def test_interrupt_after_the_swap_keeps_the_committed_files(
    catalog: Catalog, exc: BaseException
) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    _interrupt_after_swap(catalog, exc)
    with pytest.raises(type(exc)):
        t.append(pa.table({"id": pa.array([2], pa.int64())}))
    _restore(catalog)
    assert _ids(catalog.load_table("db.t")) == [1, 2]  # the commit happened
    _assert_intact(catalog, "db.t")


@pytest.mark.parametrize("op", ["delete", "overwrite", "transaction"])
def test_interrupt_after_the_swap_of_other_operations(catalog: Catalog, op: str) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table(
        "db.t", SCHEMA, properties={"write.delete.mode": "copy-on-write", "format-version": "2"}
    )
    t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    _interrupt_after_swap(catalog, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        if op == "delete":
            t.delete("id = 2")
        elif op == "overwrite":
            t.overwrite(pa.table({"id": pa.array([7], pa.int64())}), "id >= 2")
        else:
            with t.transaction() as tx:
                tx.append(pa.table({"id": pa.array([4], pa.int64())}))
                tx.delete("id = 1")
    _restore(catalog)
    expected = {"delete": [1, 3], "overwrite": [1, 7], "transaction": [2, 3, 4]}[op]
    assert _ids(catalog.load_table("db.t")) == expected
    _assert_intact(catalog, "db.t")


def test_sql_error_raised_out_of_a_swap_that_happened_keeps_the_metadata_file(
    tmp_path: Path,
) -> None:
    """An unexpected error after the UPDATE committed: the metastore keeps its new file."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    real = cat._swap_pointer

    def swap_then_fail(identifier: Any, expected: str, new: str) -> None:
        real(identifier, expected, new)
        raise MemoryError("after the UPDATE")

    cat._swap_pointer = swap_then_fail  # type: ignore[method-assign]
    with pytest.raises(MemoryError):
        t.append(pa.table({"id": pa.array([2], pa.int64())}))
    del cat._swap_pointer
    assert _ids(cat.load_table("db.t")) == [1, 2]
    _assert_intact(cat, "db.t")
    cat.close()


def test_interrupt_in_the_body_after_an_explicit_commit_keeps_the_files(
    catalog: Catalog,
) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", SCHEMA)
    with pytest.raises(KeyboardInterrupt), t.transaction() as tx:
        tx.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
        tx.commit_transaction()
        raise KeyboardInterrupt
    assert _ids(catalog.load_table("db.t")) == [1, 2]
    _assert_intact(catalog, "db.t")


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def test_a_refused_commit_still_removes_its_files(tmp_path: Path) -> None:
    """The other side of the rule: a lost race (known not committed) cleans up everything."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, properties={"commit.retry.num-retries": "0"})
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    before = _files(tmp_path / "wh")

    def lose(identifier: Any, expected: str, new: str) -> None:
        raise CommitFailedError("another writer won")

    cat._swap_pointer = lose  # type: ignore[method-assign]
    with pytest.raises(CommitFailedError):
        t.append(pa.table({"id": pa.array([2], pa.int64())}))
    assert _files(tmp_path / "wh") == before
    cat.close()


@pytest.mark.parametrize("outcome", ["interrupted-after-swap", "lost-race"])
def test_spark_writer_commit_deletes_its_files_only_when_not_committed(
    tmp_path: Path, outcome: str
) -> None:
    """The Spark writers' driver-side commit (no Spark session needed for this step)."""
    pytest.importorskip("pyspark")
    from icefloe.spark.writing import commit_files
    from icefloe.write.writer import write_data_files

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, properties={"commit.retry.num-retries": "0"})
    files = write_data_files(t.metadata, t.io, pa.table({"id": pa.array([1, 2], pa.int64())}))
    paths = [Path(f.file_path.removeprefix("file://")) for f in files]
    if outcome == "lost-race":

        def lose(identifier: Any, expected: str, new: str) -> None:
            raise CommitFailedError("another writer won")

        cat._swap_pointer = lose  # type: ignore[method-assign]
        with pytest.raises(CommitFailedError):
            commit_files(t, files)
        assert not any(p.exists() for p in paths)
    else:
        _interrupt_after_swap(cat, KeyboardInterrupt())
        with pytest.raises(KeyboardInterrupt):
            commit_files(t, files)
        _restore(cat)
        assert all(p.exists() for p in paths)
        assert _ids(cat.load_table("db.t")) == [1, 2]
        _assert_intact(cat, "db.t")
    cat.close()


def test_interrupt_after_a_multi_table_commit_keeps_the_files(catalog: Catalog) -> None:
    """``catalog.transaction()`` over two tables, interrupted after the catalog committed."""
    from icefloe.catalog.hadoop import HadoopCatalog

    if isinstance(catalog, HadoopCatalog):
        pytest.skip("the file-system catalog cannot commit several tables atomically")
    catalog.create_namespace("db")
    for name in ("db.a", "db.b"):
        catalog.create_table(name, SCHEMA).append(pa.table({"id": pa.array([1], pa.int64())}))
    real = catalog.commit_tables

    def commit_then_interrupt(changes: Any) -> Any:
        real(changes)
        raise KeyboardInterrupt

    catalog.commit_tables = commit_then_interrupt  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt), catalog.transaction() as tx:
        tx.table("db.a").append(pa.table({"id": pa.array([2], pa.int64())}))
        tx.table("db.b").delete("id = 1")
    catalog.__dict__.pop("commit_tables")
    assert _ids(catalog.load_table("db.a")) == [1, 2]
    assert _ids(catalog.load_table("db.b")) == []
    _assert_intact(catalog, "db.a")
    _assert_intact(catalog, "db.b")


def test_interrupt_after_the_sql_multi_table_swap_keeps_the_metadata_files(
    tmp_path: Path,
) -> None:
    """Inside the SQL catalog's multi-table commit: the swap committed, then an interrupt."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    for name in ("db.a", "db.b"):
        cat.create_table(name, SCHEMA).append(pa.table({"id": pa.array([1], pa.int64())}))
    real = cat._swap_all

    def swap_then_interrupt(staged: Any) -> None:
        real(staged)
        raise KeyboardInterrupt

    cat._swap_all = swap_then_interrupt  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt), cat.transaction() as tx:
        tx.table("db.a").append(pa.table({"id": pa.array([2], pa.int64())}))
        tx.table("db.b").append(pa.table({"id": pa.array([3], pa.int64())}))
    del cat._swap_all
    assert _ids(cat.load_table("db.a")) == [1, 2] and _ids(cat.load_table("db.b")) == [1, 3]
    _assert_intact(cat, "db.a")
    _assert_intact(cat, "db.b")
    cat.close()


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("retries", "message"),
    [
        ({"commit.retry.num-retries": "0"}, r"nothing was committed.*current state"),
        ({"commit.retry.min-wait-ms": "1"}, r"nothing was committed.*reloading"),
    ],
    ids=["no-retry", "retried"],
)
def test_an_unreachable_database_fails_the_commit_cleanly(
    postgres_uri: str, tmp_path: Path, retries: dict[str, str], message: str
) -> None:
    """The database cannot be reached when the commit is made: no UPDATE was sent, so the
    commit failed for certain (``CommitFailedError``) and its files go. Without retries the
    table's current state is read first (as Java's commits do), which fails so. Retried, the
    reload before the next attempt cannot reach it either: the swap reported that nothing
    was committed, so the append still fails with ``CommitFailedError`` and every file it
    wrote goes (its data file, manifest and manifest list were kept, as if the outcome were
    unknown)."""
    from sqlalchemy import create_engine

    cat = SqlCatalog("unreach", uri=postgres_uri, warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, properties=retries)
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    before = _files(tmp_path / "wh")
    live = cat.engine
    cat.engine = create_engine(  # a server that is down: nothing listens on port 1
        "postgresql+psycopg://icefloe@127.0.0.1:1/postgres", connect_args={"connect_timeout": 2}
    )
    try:
        with pytest.raises(CommitFailedError, match=message):
            t.append(pa.table({"id": pa.array([2], pa.int64())}))
    finally:
        cat.engine.dispose()
        cat.engine = live
    assert _files(tmp_path / "wh") == before
    assert _ids(cat.load_table("db.t")) == [1]
    cat.drop_table("db.t")
    cat.drop_namespace("db")
    cat.close()


def test_a_lost_race_a_store_may_have_misreported_keeps_the_files_when_reloading_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file-system catalog's lost race may be a write whose answer was lost: when the
    table cannot be reloaded to tell, the append keeps every file it wrote."""
    from icefloe.catalog.hadoop import HadoopCatalog
    from icefloe.exceptions import ServiceUnavailableError

    cat, t, calls, wrote_then_refused = _first_version_write_reported_lost(tmp_path)
    monkeypatch.setattr(HadoopCatalog, "_write_version", wrote_then_refused)

    def unreachable(self: Any, identifier: Any) -> str:
        raise ServiceUnavailableError("the store cannot be reached")

    monkeypatch.setattr(HadoopCatalog, "_current_location", unreachable)
    with pytest.raises(ServiceUnavailableError):
        t.append(pa.table({"id": pa.array([2], pa.int64())}))
    monkeypatch.undo()
    assert len(calls) == 1  # one attempt, reported lost, then the reload failed
    assert _ids(cat.load_table("db.t")) == [1, 2]  # the version reported lost is the table's
    _assert_intact(cat, "db.t")


def _first_version_write_reported_lost(
    tmp_path: Path,
) -> tuple[Any, Any, list[int], Callable[..., str]]:
    """A file-system table holding id 1, the versions its commits write, and a replacement for
    ``HadoopCatalog._write_version`` that writes each version but reports the first as lost
    to another writer (as a store that lost the answer to a write it did)."""
    from icefloe.catalog.hadoop import HadoopCatalog

    cat = HadoopCatalog("h", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    real = HadoopCatalog._write_version
    calls: list[int] = []

    def wrote_then_refused(self: Any, identifier: Any, version: int, new: Any) -> str:
        location = real(self, identifier, version, new)
        calls.append(version)
        if len(calls) == 1:
            raise CommitFailedError(f"another writer committed version {version}")
        return location

    return cat, t, calls, wrote_then_refused


def test_a_commit_reported_lost_that_landed_is_not_applied_twice(tmp_path: Path) -> None:
    """The catalog writes the new version, then reports a lost race (as a store that lost the
    answer to a write it did can make it): the refreshed table holds the transaction's
    snapshot, so the commit counts as done. Rebuilding it would append the rows a second time
    and delete the manifests of the snapshot already in the table."""
    from icefloe.catalog.hadoop import HadoopCatalog

    cat, t, calls, wrote_then_refused = _first_version_write_reported_lost(tmp_path)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(HadoopCatalog, "_write_version", wrote_then_refused)
        t.append(pa.table({"id": pa.array([2, 3], pa.int64())}))
    assert calls == [3]
    assert _ids(t) == [1, 2, 3] and len(t.snapshots()) == 2
    _assert_intact(cat, "db.t")


def test_a_replayed_commit_never_deletes_files_the_committed_table_names(
    tmp_path: Path,
) -> None:
    """As above with the transaction's check that its commit landed bypassed: the rebuild
    commits its data file a second time (a table the check exists to prevent), but the
    producer deletes no manifest list or manifest of the first attempt, which the committed
    table still names: every file it references exists and the first attempt's snapshot
    reads."""
    from icefloe.catalog.hadoop import HadoopCatalog
    from icefloe.table.transaction import Transaction

    cat, t, calls, wrote_then_refused = _first_version_write_reported_lost(tmp_path)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(HadoopCatalog, "_write_version", wrote_then_refused)
        mp.setattr(Transaction, "_landed", lambda self: False)
        t.append(pa.table({"id": pa.array([2], pa.int64())}))
    assert calls == [3, 4]
    t = cat.load_table("db.t")
    referenced = set(reachable_files(t.io, t.metadata, t.metadata_location).to_pylist())
    assert [p for p in referenced if not t.io.exists(p)] == []
    first = t.snapshots()[1].snapshot_id
    assert sorted(t.scan(snapshot_id=first).to_arrow().column("id").to_pylist()) == [1, 2]


def _lose_the_multi_table_commit(monkeypatch: pytest.MonkeyPatch, landed: bool) -> None:
    """The next swap's COMMIT raises a driver error: after the database committed it
    (``landed``) or after it rolled back, as a lost connection can."""
    from sqlalchemy.exc import OperationalError

    import icefloe.catalog.sql as sql

    real = sql.committed
    lost_once: list[int] = []

    def committed_then_lost(conn: Any, work: Any) -> Any:
        if lost_once:
            return real(conn, work)
        lost_once.append(1)
        if landed:
            real(conn, work)
        else:
            trans = conn.begin()
            work(conn)
            trans.rollback()
        raise OperationalError("COMMIT", {"n": "secret-name"}, Exception("connection lost"))

    monkeypatch.setattr(sql, "committed", committed_then_lost)


@pytest.mark.parametrize("outcome", ["landed", "rolled back", "check failed"])
def test_a_lost_sql_multi_table_commit_is_settled_by_its_pointers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outcome: str
) -> None:
    """The answer to the multi-table COMMIT is lost: the pointers say what happened. Moved:
    the commit stands. Unmoved: it failed for certain, its files go and it is tried again.
    Unreadable: the outcome is unknown, every file is kept and the error holds no SQL."""
    from icefloe.exceptions import CommitStateUnknownError

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    for name in ("db.a", "db.b"):
        cat.create_table(name, SCHEMA).append(pa.table({"id": pa.array([1], pa.int64())}))
    before = _files(tmp_path / "wh")
    _lose_the_multi_table_commit(monkeypatch, landed=outcome != "rolled back")
    if outcome == "check failed":

        def unreadable(identifiers: Any, kind: Any = None) -> list[str]:
            raise RuntimeError("still down")

        monkeypatch.setattr(cat, "_settled_pointers", unreadable)
    real_swap = cat._swap_all
    calls: list[int] = []

    def counted_swap(staged: Any) -> None:
        calls.append(1)
        real_swap(staged)

    monkeypatch.setattr(cat, "_swap_all", counted_swap)

    def write() -> None:
        with cat.transaction() as tx:
            tx.table("db.a").append(pa.table({"id": pa.array([2], pa.int64())}))
            tx.table("db.b").append(pa.table({"id": pa.array([3], pa.int64())}))

    if outcome == "check failed":
        with pytest.raises(CommitStateUnknownError, match="may or may not") as caught:
            write()
        text = str(caught.value)
        assert "checking failed: still down" in text
        assert "COMMIT" not in text and "secret-name" not in text
        monkeypatch.undo()
    else:
        write()
        # the rolled-back attempt is tried again (the retry swaps for real)
        assert len(calls) == (2 if outcome == "rolled back" else 1)
        monkeypatch.undo()
    # the database committed the swap unless it rolled back, and then the retry did
    assert (_ids(cat.load_table("db.a")), _ids(cat.load_table("db.b"))) == ([1, 2], [1, 3])
    # one new metadata file per table: kept when the outcome was unknown or the commit stood,
    # deleted with the rolled-back attempt
    new_metadata = [p for p in _files(tmp_path / "wh") - before if p.name.endswith(".json")]
    assert len(new_metadata) == 2
    # whatever happened, no file a table names is gone and both tables take more writes
    _assert_intact(cat, "db.a")
    _assert_intact(cat, "db.b")
    cat.close()


def test_a_database_locked_past_its_busy_timeout_is_not_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another connection holds the SQLite catalog's write lock: each attempt waits the whole
    busy timeout (60 s) and nothing is committed, so retrying at once waited five times as
    long before failing."""
    import sqlite3

    from sqlalchemy import create_engine

    db = tmp_path / "c.db"
    cat = SqlCatalog("s", uri=f"sqlite:///{db}", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
    t.set_properties(**{"commit.retry.num-retries": "4", "commit.retry.min-wait-ms": "1"})
    cat.engine.dispose()  # a short busy timeout, for the test
    cat.engine = create_engine(
        cat.engine.url, connect_args={"timeout": 0.2, "check_same_thread": False}
    )
    swaps = 0
    swap = cat._swap_pointer

    def counted(*args: Any, **kwargs: Any) -> None:
        nonlocal swaps
        swaps += 1
        swap(*args, **kwargs)

    monkeypatch.setattr(cat, "_swap_pointer", counted)
    other = sqlite3.connect(db, timeout=0, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # a writer holding the lock; readers go on
    try:
        with pytest.raises(CommitFailedError, match="database is locked"):
            t.set_properties(k="v")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert swaps == 1
    assert "k" not in cat.load_table("db.t").properties
    t.refresh().set_properties(k="v")  # lock gone: commits
    assert cat.load_table("db.t").properties["k"] == "v"
    cat.close()
