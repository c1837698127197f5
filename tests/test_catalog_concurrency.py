"""Several processes committing to one table: every commit lands, none is lost.

Each of 4 processes sets its own property keys one commit at a time through a stale-prone
Table object, on a SQLite file catalog and on PostgreSQL (and the file-system catalog). At the
end every key is present, the metadata log holds every version and every file in it parses.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.schema import Schema
from icefloe.types import LongType, NestedField

WRITERS = 4
COMMITS = 8
RETRY = {
    "commit.retry.num-retries": "200",
    "commit.retry.min-wait-ms": "2",
    "commit.retry.max-wait-ms": "50",
    "write.metadata.previous-versions-max": "1000",
}


def _open(kind: str, uri: str, warehouse: str, name: str) -> SqlCatalog | HadoopCatalog:
    if kind == "hadoop":
        return HadoopCatalog(name, warehouse=warehouse)
    return SqlCatalog(name, uri=uri, warehouse=warehouse)


def _writer(kind: str, uri: str, warehouse: str, name: str, writer: int) -> None:
    catalog = _open(kind, uri, warehouse, name)
    table = catalog.load_table("db.t")
    for j in range(COMMITS):
        table.set_properties({f"w{writer}-{j}": str(j)})


@pytest.mark.parametrize(
    "kind", ["sqlite-file", pytest.param("postgres", marks=pytest.mark.postgres), "hadoop"]
)
def test_concurrent_property_commits(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    uri = ""
    if kind == "sqlite-file":
        uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    elif kind == "postgres":
        uri = request.getfixturevalue("postgres_uri")
    warehouse = (tmp_path / "warehouse").as_uri()
    name = f"conc_{tmp_path.name[-20:]}".replace("-", "_")
    catalog = _open(kind, uri, warehouse, name)
    catalog.create_namespace("db")
    catalog.create_table("db.t", Schema(NestedField(1, "id", LongType())), properties=RETRY)
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_writer, args=(kind, uri, warehouse, name, w)) for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    table = catalog.load_table("db.t")
    for w in range(WRITERS):
        for j in range(COMMITS):
            assert table.properties[f"w{w}-{j}"] == str(j)
    log = [e.metadata_file for e in table.metadata_log()]
    assert len(log) == WRITERS * COMMITS  # every committed version, no more, no less
    assert len(set(log)) == len(log)
    for location in [*log, table.metadata_location]:
        catalog.read_metadata(location)  # every intermediate file is readable
    # the lost attempts cleaned up after themselves
    meta_dir = Path(table.metadata_location.removeprefix("file://")).parent
    files = [p for p in meta_dir.glob("*.metadata.json")]
    assert len(files) == WRITERS * COMMITS + 1


def test_threads_sharing_an_in_memory_catalog_lose_no_commit() -> None:
    """Eight threads append through one table of a ``sqlite:///:memory:`` catalog: its one
    connection is lent to one thread at a time (shared at once, transactions interleaved and
    commits that returned were lost, or the catalog named deleted files)."""
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa

    with tempfile.TemporaryDirectory() as root:
        cat = SqlCatalog("mem", uri="sqlite:///:memory:", warehouse=root)
        cat.create_namespace("db")
        t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))

        def work(worker: int) -> None:
            for i in range(10):
                t.append(pa.table({"id": pa.array([worker * 100 + i], pa.int64())}))
                t.scan().to_arrow()

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(work, range(8)))
        ids = sorted(cat.load_table("db.t").scan().to_arrow()["id"].to_pylist())
        assert ids == sorted(w * 100 + i for w in range(8) for i in range(10))
        cat.close()


def _namespace_writer(uri: str, warehouse: str, name: str, writer: int) -> None:
    catalog = SqlCatalog(name, uri=uri, warehouse=warehouse)
    for j in range(40):  # every writer sets the same new keys: inserts that race
        catalog.update_namespace_properties("ns", updates={f"k{j}": f"w{writer}"})


@pytest.mark.parametrize(
    "kind", ["sqlite-file", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_concurrent_namespace_property_updates(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Writers adding the same new namespace property at once: the one that loses the insert
    race updates instead, rather than failing as if the database were down."""
    uri = (
        f"sqlite:///{tmp_path / 'catalog.db'}"
        if kind == "sqlite-file"
        else request.getfixturevalue("postgres_uri")
    )
    warehouse = (tmp_path / "warehouse").as_uri()
    name = f"nsconc_{tmp_path.name[-20:]}".replace("-", "_")
    catalog = SqlCatalog(name, uri=uri, warehouse=warehouse)
    catalog.create_namespace("ns", {"owner": "a"})
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_namespace_writer, args=(uri, warehouse, name, w))
        for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    props = catalog.load_namespace_properties("ns")
    assert set(props) == {"owner", *(f"k{j}" for j in range(40))}
    assert {props[f"k{j}"] for j in range(40)} <= {f"w{w}" for w in range(WRITERS)}


def _new_database(kind: str, tmp_path: Path, request: pytest.FixtureRequest, trial: int) -> str:
    """The URL of an empty catalog database (a new SQLite file or PostgreSQL database)."""
    if kind == "sqlite-file":
        return f"sqlite:///{tmp_path / f'new{trial}.db'}"
    import uuid

    import sqlalchemy
    from sqlalchemy.engine import make_url

    server = request.getfixturevalue("postgres_uri")
    name = f"new_{uuid.uuid4().hex[:12]}"
    admin = sqlalchemy.create_engine(server, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sqlalchemy.text(f"CREATE DATABASE {name}"))
    finally:
        admin.dispose()
    return make_url(server).set(database=name).render_as_string(hide_password=False)


def _open_at_once(uri: str, warehouse: str) -> tuple[list[SqlCatalog], list[BaseException]]:
    """Open the catalog at ``uri`` from :data:`WRITERS` threads released together."""
    import threading

    start = threading.Barrier(WRITERS)
    opened: list[SqlCatalog] = []
    failed: list[BaseException] = []

    def open_catalog() -> None:
        start.wait()
        try:
            opened.append(SqlCatalog("c", uri=uri, warehouse=warehouse))
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=open_catalog) for _ in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return opened, failed


@pytest.mark.parametrize(
    "kind", ["sqlite-file", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_threads_opening_a_new_database_at_once_all_succeed(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Several threads opening one new catalog database at once all get a working catalog:
    the ones whose table creation lost the race to another thread's used the tables it made,
    rather than failing as if the database were down."""
    warehouse = (tmp_path / "warehouse").as_uri()
    for trial in range(4):
        opened, failed = _open_at_once(_new_database(kind, tmp_path, request, trial), warehouse)
        assert failed == []
        assert len(opened) == WRITERS
        opened[0].create_namespace("db")
        for catalog in opened:
            assert catalog.list_namespaces() == [("db",)]
            catalog.close()
