"""A process forked after icefloe has planned, read or committed (``multiprocessing`` with
``fork``, the default on Linux before Python 3.14) plans, reads and commits again instead of
waiting forever on thread pools whose threads stayed in the parent."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe import StaticTable, _native
from icefloe.catalog.sql import SqlCatalog
from support.read_tables import build
from support.write_util import catalog, rows

pytestmark = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs os.fork"
)

#: Seconds a forked child may take before it counts as hung.
TIMEOUT = 30


def _run_child(target: object, args: tuple[object, ...], what: str) -> None:
    child = multiprocessing.get_context("fork").Process(target=target, args=args)
    child.start()
    child.join(timeout=TIMEOUT)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail(f"the forked child hung {what}")
    assert child.exitcode == 0


def _read_in_child(metadata: str, expected: int) -> None:
    paths = [pa.array([f"p{i}" for i in range(50_000)]), pa.array(["q"])]
    _native.plan_check_unique_paths(paths)  # parallel work on the extension's thread pool
    scan = StaticTable.from_metadata(metadata).scan()
    rows = scan.to_arrow().num_rows
    os._exit(0 if rows == expected and len(list(scan.plan_files())) == 3 else 3)


def test_forked_child_plans_and_reads(tmp_path: Path) -> None:
    table = build(tmp_path, version=3, files=3, rows=2_000, dv=0.1, seed=5)
    parent = StaticTable.from_metadata(table.metadata_path).scan()
    expected = parent.to_arrow().num_rows
    assert expected == 3 * (2_000 - 200)
    # the parent's pools exist and have run work before the fork
    _native.plan_check_unique_paths([pa.array([f"p{i}" for i in range(50_000)])])
    assert len(list(parent.plan_files())) == 3
    _run_child(_read_in_child, (table.metadata_path, expected), "planning or reading")


def _write_in_child(warehouse: Path) -> None:
    try:
        table = SqlCatalog("c", uri=f"sqlite:///{warehouse}/c.db").load_table("ns.t")
        table.append(rows(1_000, 100))
        table.overwrite(rows(2_000, 50))
        table.append(rows(3_000, 25))
        got = sorted(table.scan().to_arrow().column("id").to_pylist())
        ok = got == [*range(2_000, 2_050), *range(3_000, 3_025)]
        os._exit(0 if ok and len(table.metadata.snapshots) == 7 else 3)
    except BaseException:  # a failure in the child must not run the parent's test teardown
        import traceback

        traceback.print_exc()
        os._exit(4)


def test_forked_child_appends_and_overwrites(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    table = cat.create_table("ns.t", rows(0, 1).schema)
    for i in range(3):
        table.append(rows(i * 100, 100))
    table.overwrite(rows(500, 10))  # the parent's commit threads have run work before the fork
    assert table.scan().to_arrow().num_rows == 10
    _run_child(_write_in_child, (tmp_path,), "appending or overwriting")
    table = cat.load_table("ns.t")
    assert table.scan().to_arrow().num_rows == 75


def _use_parent_catalog_in_child(cat: SqlCatalog, k: int, round_: int) -> None:
    try:
        table = cat.load_table(f"db.t{k}")
        right = f"/t{k}/" in table.metadata_location
        table.append(rows(1_000 * k + round_, 1))
        got = sorted(cat.load_table(f"db.t{k}").scan().to_arrow().column("id").to_pylist())
        os._exit(0 if right and got == [1_000 * k + r for r in range(round_ + 1)] else 3)
    except BaseException:  # a failure in the child must not run the parent's test teardown
        import traceback

        traceback.print_exc()
        os._exit(4)


def test_forked_children_use_the_parents_postgres_catalog(
    postgres_uri: str, tmp_path: Path
) -> None:
    """Children forked from a process that has used a PostgreSQL catalog load and append
    through that same catalog object, all at once, and the parent goes on using it. The
    children used to share the parent's pooled connection: calls failed as if the server were
    down, a table that exists was reported missing, and the parent's next call could wait for
    an answer a child had read."""
    import time

    name = f"fork_{tmp_path.name[-20:]}".replace("-", "_")
    cat = SqlCatalog(
        name, uri=postgres_uri, warehouse=(tmp_path / "wh").as_uri(), **{"request-timeout": "20"}
    )
    cat.create_namespace("db")
    for k in range(4):
        cat.create_table(f"db.t{k}", rows(0, 1).schema).append(rows(1_000 * k, 1))
    ctx = multiprocessing.get_context("fork")
    for round_ in range(1, 4):
        start = time.monotonic()
        # the parent's pooled connection was used just before the fork
        assert cat.list_tables("db") == [("db", f"t{k}") for k in range(4)]
        assert time.monotonic() - start < 10
        children = [
            ctx.Process(target=_use_parent_catalog_in_child, args=(cat, k, round_))
            for k in range(4)
        ]
        for child in children:
            child.start()
        for child in children:
            child.join(timeout=TIMEOUT)
            if child.is_alive():
                child.kill()
                child.join()
        assert [child.exitcode for child in children] == [0] * 4
    for k in range(4):
        got = cat.load_table(f"db.t{k}").scan().to_arrow().column("id").to_pylist()
        assert sorted(got) == [1_000 * k + r for r in range(4)]
    cat.close()


def _commit_through_parent_catalog(cat: SqlCatalog) -> None:
    try:
        cat.load_table("ns.t").set_properties({"child": str(os.getpid())})
        os._exit(0)
    except BaseException:  # a failure in the child must not run the parent's test teardown
        import traceback

        traceback.print_exc()
        os._exit(4)


def test_a_fork_waits_for_another_threads_sqlite_transaction(tmp_path: Path) -> None:
    """A fork while another thread is inside a SQLite catalog transaction copied that
    transaction's locks into the child, which then waited on them for the whole busy timeout
    and failed its commit. The fork now waits for the transaction to end."""
    import threading
    import time

    cat = catalog(tmp_path)
    cat.create_table("ns.t", rows(0, 1).schema).set_properties({"warm": "up"})
    inside = threading.Event()

    def hold_a_write_transaction() -> None:
        with cat.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE iceberg_tables SET table_name = table_name WHERE 0")
            inside.set()
            time.sleep(1.0)

    holder = threading.Thread(target=hold_a_write_transaction)
    holder.start()
    assert inside.wait(30)
    _run_child(_commit_through_parent_catalog, (cat,), "committing after the fork")
    holder.join()
    assert "child" in cat.load_table("ns.t").properties


def test_a_connection_back_from_another_thread_is_not_counted_in_use(tmp_path: Path) -> None:
    """A connection taken by one thread and returned by another (or by the garbage
    collector) leaves no count behind, or every later fork would wait for it."""
    import threading

    from icefloe.catalog import sqlite_fork

    cat = catalog(tmp_path)
    taken: list[object] = []
    thread = threading.Thread(target=lambda: taken.append(cat.engine.connect()))
    thread.start()
    thread.join()
    assert len(sqlite_fork._in_use) == 1
    taken.pop().close()  # type: ignore[attr-defined]
    assert sqlite_fork._in_use == {}
