"""The REST catalog client against a real ``icefloe serve`` process (see tests/support/rest.py).

Config and endpoints, pagination, ETag caching, HEAD fallback, staged creates, commit retries
after 409, unknown outcomes (a proxy drops the server's answer or the request), Idempotency-Key
retries, multi-table commits and typed errors. The catalog test suite itself runs on the REST
backend through the ``catalog`` fixture (tests/support/catalogs.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest.wire import LoadTableResult
from icefloe.exceptions import (
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
    ForbiddenError,
    IcebergError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.types import LongType
from support.rest import FaultyProxy, RestServer, new_warehouse

pytestmark = pytest.mark.rest

ROWS = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())])
_JSON_BODY = {"Content-Type": "application/json"}


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "v": [f"r{i}" for i in ids]}, schema=ROWS)


def _requests(server: RestServer, warehouse: str, needle: str) -> list[str]:
    return [
        line
        for line in server.log_text().splitlines()
        if f"/v1/{warehouse}" in line and needle in line
    ]


@pytest.fixture
def warehouse() -> str:
    return new_warehouse()


@pytest.fixture
def cat(rest_server: RestServer, warehouse: str) -> Iterator[RestCatalog]:
    c = RestCatalog("rest", uri=rest_server.url, warehouse=warehouse)
    c.create_namespace("db")
    yield c
    c.close()


def test_load_catalog_config_and_endpoints(rest_server: RestServer, warehouse: str) -> None:
    c = load_catalog("r", type="rest", uri=rest_server.url, warehouse=warehouse, prefix="ignored")
    assert isinstance(c, RestCatalog)
    # overrides win over the user's properties: the server's prefix is the warehouse name
    assert c.properties["prefix"] == warehouse
    assert "POST /v1/{prefix}/transactions/commit" in c.endpoints
    assert c.idempotency_lifetime == "PT30M"
    # the uri alone selects the REST catalog
    c2 = load_catalog("r2", uri=rest_server.url, warehouse=warehouse)
    assert isinstance(c2, RestCatalog)
    c.create_namespace("x")
    assert c2.list_namespaces() == [("x",)]
    # an endpoint the server does not list is never called
    c2.endpoints = c2.endpoints - {"GET /v1/{prefix}/namespaces"}
    with pytest.raises(UnsupportedFeatureError, match="does not offer"):
        c2.list_namespaces()


def test_pagination_and_nested_namespaces(rest_server: RestServer, warehouse: str) -> None:
    c = RestCatalog("rest", uri=rest_server.url, warehouse=warehouse, **{"rest-page-size": "2"})
    names = [f"n{i}" for i in range(5)]
    for n in names:
        c.create_namespace(n)
    c.create_namespace(("n0", "inner", "deep"))  # parts joined by 0x1F in paths
    for i in range(5):
        c.create_table(("n0", f"t{i}"), ROWS)
    assert c.list_namespaces() == [(n,) for n in names]
    assert c.list_namespaces("n0") == [("n0", "inner")]
    assert c.list_namespaces("n0.inner") == [("n0", "inner", "deep")]
    assert c.load_namespace_properties(("n0", "inner", "deep")) == {}
    c.create_table("n0.inner.deep.t", ROWS)
    assert c.list_tables(("n0", "inner", "deep")) == [("n0", "inner", "deep", "t")]
    for bad in ("abc", "0", "-1", "2.5"):  # named, before any list request
        with pytest.raises(ValidationError, match="rest-page-size"):
            RestCatalog("rest", uri=rest_server.url, warehouse=warehouse, **{"rest-page-size": bad})
    assert c.list_tables("n0") == [("n0", f"t{i}") for i in range(5)]
    # 5 namespaces in pages of 2 is 3 requests; 5 tables likewise
    listing = [
        r
        for r in _requests(rest_server, warehouse, '"GET /v1/')
        if r.split('"')[1].endswith("/namespaces")
    ]
    assert len(listing) >= 3
    assert (
        len(_requests(rest_server, warehouse, '"GET /v1/' + warehouse + '/namespaces/n0/tables"'))
        == 3
    )


def test_etag_cache_and_head_fallback(
    cat: RestCatalog, rest_server: RestServer, warehouse: str
) -> None:
    t = cat.create_table("db.t", ROWS)
    other = RestCatalog("other", uri=rest_server.url, warehouse=warehouse)
    first = cat.load_table("db.t")
    again = cat.load_table("db.t")
    assert again.metadata == first.metadata
    assert any('tables/t" 304' in line for line in _requests(rest_server, warehouse, "GET"))
    other.load_table("db.t").append(_rows([1, 2]))
    fresh = cat.load_table("db.t")  # another client committed: the ETag no longer matches
    assert fresh.current_snapshot() is not None
    assert fresh.metadata_location != t.metadata_location
    assert cat.table_exists("db.t") and not cat.table_exists("db.nope")
    assert any('"HEAD /v1/' in line for line in _requests(rest_server, warehouse, "tables/nope"))
    # without HEAD in the endpoints the client asks with GET
    other.endpoints = other.endpoints - {"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}"}
    assert not other.table_exists("db.gone") and other.table_exists("db.t")
    assert any('"GET /v1/' in line for line in _requests(rest_server, warehouse, "tables/gone"))
    # snapshots=refs: only the snapshots refs point at
    fresh.append(_rows([3]))
    fresh.manage_snapshots().create_tag("old", fresh.snapshots()[0].snapshot_id).commit()
    fresh.append(_rows([4]))
    refs = RestCatalog(
        "refs", uri=rest_server.url, warehouse=warehouse, **{"snapshot-loading-mode": "refs"}
    )
    loaded = refs.load_table("db.t")
    full = cat.load_table("db.t")
    assert len(loaded.metadata.snapshots) == 2 and len(full.snapshots()) == 3
    # the snapshot log stays whole (Java's server keeps it: history, time travel by time), and
    # a snapshot no ref points at is loaded when a scan needs it
    assert loaded.metadata.snapshot_log == full.metadata.snapshot_log
    middle = full.snapshots()[1]
    assert middle.snapshot_id not in {x.snapshot_id for x in loaded.metadata.snapshots}
    assert loaded.snapshot_as_of(middle.timestamp_ms).snapshot_id == middle.snapshot_id
    again = refs.load_table("db.t")
    rows = again.scan(snapshot_id=middle.snapshot_id).to_arrow().num_rows
    assert rows == full.scan(snapshot_id=middle.snapshot_id).to_arrow().num_rows
    # snapshots() gives every snapshot in the server's order, fetched once
    whole = refs.load_table("db.t")
    assert whole.snapshots() == full.snapshots()
    assert not whole.load_every_snapshot()


def test_staged_create(cat: RestCatalog, rest_server: RestServer, warehouse: str) -> None:
    tx = cat.create_table_transaction("db.s", ROWS, properties={"format-version": "3"})
    assert not cat.table_exists("db.s")
    tx.append(_rows([1, 2, 3]))
    assert not cat.table_exists("db.s")
    table = tx.commit_transaction()
    loaded = cat.load_table("db.s")
    assert loaded.format_version == 3
    assert loaded.scan().to_arrow().sort_by("id")["id"].to_pylist() == [1, 2, 3]
    assert table.metadata_location == loaded.metadata_location
    # with no other change, the commit still creates the (empty) table
    bare = cat.create_table_transaction("db.bare", ROWS).commit_transaction()
    assert cat.load_table("db.bare").metadata_location == bare.metadata_location
    # a staged create whose name is taken before it commits fails and creates nothing twice
    tx2 = cat.create_table_transaction("db.race", ROWS)
    cat.create_table("db.race", ROWS)
    tx2.append(_rows([9]))
    with pytest.raises(TableAlreadyExistsError, match="exists"):
        tx2.commit_transaction()
    assert cat.load_table("db.race").current_snapshot() is None
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table_transaction("db.s", ROWS)
    # a staged create that also evolves its schema and spec before committing: the server
    # builds the table from the first schema and spec, then applies the later ones
    tx3 = cat.create_table_transaction("db.evolved", ROWS)
    tx3.update_schema().add_column("day", LongType()).commit()
    tx3.update_spec().add_field("day").commit()
    tx3.append(pa.table({"id": [1], "v": ["a"], "day": [7]}))
    tx3.commit_transaction()
    evolved = cat.load_table("db.evolved")
    assert len(evolved.metadata.schemas) == 2
    assert [f.name for f in evolved.schema().fields] == ["id", "v", "day"]
    assert [f.name for f in evolved.spec().fields] == ["day"]
    assert evolved.scan().to_arrow().to_pylist() == [{"id": 1, "v": "a", "day": 7}]


def test_concurrent_appends_retry_after_409(
    cat: RestCatalog, rest_server: RestServer, warehouse: str
) -> None:
    cat.create_table(
        "db.t",
        ROWS,
        properties={
            "commit.retry.num-retries": "20",
            "commit.retry.min-wait-ms": "5",
            "commit.retry.max-wait-ms": "50",
        },
    )
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        c = RestCatalog(f"w{k}", uri=rest_server.url, warehouse=warehouse)
        try:
            for j in range(5):
                c.load_table("db.t").append(_rows([k * 100 + j]))
        except BaseException as exc:
            errors.append(exc)
        finally:
            c.close()

    # every writer appends from a stale table object too: its first commit gets a 409
    stale = cat.load_table("db.t")
    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    stale.append(_rows([999]))
    assert not errors
    ids = sorted(cat.load_table("db.t").scan().to_arrow()["id"].to_pylist())
    assert ids == sorted([k * 100 + j for k in range(4) for j in range(5)] + [999])
    assert len(cat.load_table("db.t").snapshots()) == 21
    assert _requests(rest_server, warehouse, '/tables/t" 409')


def test_the_server_refuses_a_write_that_would_move_a_tag(cat: RestCatalog) -> None:
    """A client whose table object still saw a branch wrote to it after another writer had
    made it a tag at the same snapshot: the server applied the write, turning the tag back
    into a branch and moving it. It answers 409; the client rebuilds and refuses."""
    t = cat.create_table("db.t", ROWS)
    t.append(_rows([1]))
    with t.manage_snapshots() as ms:
        ms.create_branch("release")
    stale = cat.load_table("db.t")
    frozen = t.current_snapshot().snapshot_id
    with t.manage_snapshots() as ms:
        ms.remove_branch("release")
        ms.create_tag("release", frozen)
    with pytest.raises(ValidationError, match="it is a tag"):
        stale.append(_rows([2]), branch="release")
    ref = cat.load_table("db.t").refs()["release"]
    assert ref.ref_type == "tag" and ref.snapshot_id == frozen


def test_conflict_that_cannot_be_rebuilt(cat: RestCatalog) -> None:
    t = cat.create_table("db.t", ROWS)
    stale = cat.load_table("db.t")
    t.update_schema().add_column("extra", LongType()).commit()
    with pytest.raises(CommitConflictError):
        stale.update_schema().add_column("other", LongType()).commit()
    assert [f.name for f in cat.load_table("db.t").schema().fields] == ["id", "v", "extra"]


def test_a_server_whose_paging_never_ends_is_an_error(
    rest_server: RestServer, warehouse: str
) -> None:
    # a token handed out again asked the same page for ever
    proxy = FaultyProxy(rest_server.url)
    try:
        c = RestCatalog("p", uri=proxy.url, warehouse=warehouse, **{"rest-page-size": "1"})
        c.create_namespace("a")
        c.create_namespace("b")

        first: list[str] = []

        def same_token(path: str, body: bytes) -> bytes:
            if "/namespaces" not in path or not body:
                return body
            answer = json.loads(body)
            if "namespaces" in answer:
                first.extend([answer["next-page-token"]] if not first else [])
                answer["next-page-token"] = first[0]  # a valid token, handed out again
            return json.dumps(answer).encode()

        proxy.rewrite_get = same_token
        with pytest.raises(IcebergError, match=r"answered the page token .* again"):
            c.list_namespaces()
        proxy.rewrite_get = None
        assert c.list_namespaces() == [("a",), ("b",)]
    finally:
        proxy.close()


@pytest.mark.parametrize(
    ("path", "answer", "call"),
    [
        ("/v1/config", {"defaults": ["x"]}, None),
        ("/v1/config", {"overrides": 7}, None),
        ("/namespaces?", [1], "list_namespaces"),
        ("/namespaces?", {"namespaces": [1]}, "list_namespaces"),
        ("/namespaces?", {"namespaces": "a"}, "list_namespaces"),
        ("/namespaces?", {"namespaces": [["a"]], "next-page-token": 3}, "list_namespaces"),
        ("/tables?", "x", "list_tables"),
        ("/namespaces/db", {"namespace": ["db"], "properties": [1]}, "load_namespace"),
    ],
)
def test_answers_of_the_wrong_shape_are_validation_errors(
    rest_server: RestServer, warehouse: str, path: str, answer: object, call: str | None
) -> None:
    """Valid JSON of the wrong shape (a misbehaving server or proxy) raises a typed error,
    never a bare AttributeError or TypeError."""
    setup = RestCatalog("s", uri=rest_server.url, warehouse=warehouse)
    setup.create_namespace("db")
    proxy = FaultyProxy(rest_server.url)
    try:
        proxy.rewrite_get = lambda p, body: json.dumps(answer).encode() if path in p else body
        with pytest.raises(ValidationError):
            c = RestCatalog("p", uri=proxy.url, warehouse=warehouse)
            if call == "list_namespaces":
                c.list_namespaces()
            elif call == "list_tables":
                c.list_tables("db")
            elif call == "load_namespace":
                c.load_namespace_properties("db")
    finally:
        proxy.close()


def test_a_view_commit_without_an_answer_is_an_unknown_outcome(
    rest_server: RestServer, warehouse: str
) -> None:
    # as Iceberg Java's view commit error handler: 500/502/503/504 may have committed
    proxy = FaultyProxy(rest_server.url)
    try:
        c = RestCatalog("p", uri=proxy.url, warehouse=warehouse)
        c.create_namespace("db")
        v = c.create_view("db.v", "SELECT 1", ROWS, dialect="spark")
        for mode in ("status:503", "after:502", "drop-response"):
            proxy.fail(mode, times=1, target="/views/v")
            with pytest.raises(CommitStateUnknownError, match="outcome is unknown"):
                v.update_properties({"k": mode})
        proxy.fail("status:409", times=1, target="/views/v")
        with pytest.raises(CommitFailedError):
            v.update_properties({"k": "conflict"})
        assert c.load_view("db.v").metadata.properties["k"] == "drop-response"  # it committed
    finally:
        proxy.close()


def test_unknown_outcome_resolved_by_reload(
    rest_server: RestServer, warehouse: str, tmp_path: Path
) -> None:
    proxy = FaultyProxy(rest_server.url)
    try:
        # no Idempotency-Key: after a lost answer the client looks for its snapshot
        c = RestCatalog("p", uri=proxy.url, warehouse=warehouse)
        c.idempotency_lifetime = None
        c.create_namespace("db")
        t = c.create_table("db.t", ROWS)
        proxy.fail("drop-response", times=1)
        t.append(_rows([1]))  # the server committed; the client finds its snapshot
        assert proxy.failed == 1
        assert c.load_table("db.t").scan().to_arrow()["id"].to_pylist() == [1]
        # the request never arrived: unknown, and the written files are kept
        proxy.fail("drop-request", times=1)
        before = set((Path(t.location.removeprefix("file://")) / "data").rglob("*.parquet"))
        with pytest.raises(CommitStateUnknownError, match="unknown"):
            t.append(_rows([2]))
        after = set((Path(t.location.removeprefix("file://")) / "data").rglob("*.parquet"))
        assert len(after - before) == 1  # kept: the commit might have happened
        assert c.load_table("db.t").scan().to_arrow()["id"].to_pylist() == [1]
        proxy.fail("status:503", times=1)
        with pytest.raises(CommitStateUnknownError, match="503"):
            c.load_table("db.t").set_properties(k="v")
    finally:
        proxy.close()


@pytest.mark.parametrize("then", ["status:400", "status:422", "status:404"])
def test_an_error_after_an_unknown_outcome_never_deletes_committed_files(
    rest_server: RestServer, warehouse: str, then: str
) -> None:
    """The answer to a commit that landed is lost, and its retry gets an error (a gateway's
    400, say): that error proves nothing, so the client looks for its snapshot instead of
    deleting the files the committed snapshot references."""
    proxy = FaultyProxy(rest_server.url)
    try:
        c = RestCatalog("p", uri=proxy.url, warehouse=warehouse)
        c.create_namespace("db")
        t = c.create_table("db.t", ROWS)
        proxy.fail_sequence(["drop-response", then])
        t.append(_rows([1]))  # it committed: the client finds its snapshot
        assert c.load_table("db.t").scan().to_arrow()["id"].to_pylist() == [1]
        c.create_table("db.u", ROWS)
        proxy.fail_sequence(["drop-response", then], target="/transactions/commit")
        with c.transaction() as tx:
            tx.table("db.t").append(_rows([2]))
            tx.table("db.u").append(_rows([3]))
        assert sorted(c.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 2]
        assert c.load_table("db.u").scan().to_arrow()["id"].to_pylist() == [3]
        # the first request never arrived: the outcome stays unknown, the files are kept
        data = Path(t.location.removeprefix("file://")) / "data"
        before = set(data.rglob("*.parquet"))
        proxy.fail_sequence(["drop-request", then])
        with pytest.raises(CommitStateUnknownError, match="unknown"):
            c.load_table("db.t").append(_rows([4]))
        assert len(set(data.rglob("*.parquet")) - before) == 1
        assert sorted(c.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 2]
    finally:
        proxy.close()


def _readable(c: RestCatalog, name: str) -> list[int]:
    """The rows of ``name``; every snapshot of it is read (each file it references exists)."""
    t = c.load_table(name)
    for snap in t.snapshots():
        t.scan(snapshot_id=snap.snapshot_id).to_arrow()
    return sorted(t.scan().to_arrow()["id"].to_pylist())


@pytest.mark.parametrize("keys", [True, False], ids=["keys", "no-keys"])
@pytest.mark.parametrize("status", [400, 422, 404, 409])
def test_a_gateways_error_page_after_a_commit_keeps_its_files(
    rest_server: RestServer, warehouse: str, status: int, keys: bool
) -> None:
    """A gateway forwards the commit, the server commits, and the gateway answers with its own
    error page: that status proves nothing (it is not the catalog's error response), so the
    client resolves it as an unknown outcome instead of deleting the files of a snapshot that
    is now current. A catalog's own 400 stays a final ``ValidationError``."""
    proxy = FaultyProxy(rest_server.url)
    try:
        c = RestCatalog("p", uri=proxy.url, warehouse=warehouse)
        if not keys:
            c.idempotency_lifetime = None
        c.create_namespace("db")
        t = c.create_table("db.t", ROWS, properties={"commit.retry.min-wait-ms": "1"})
        t.append(_rows([1]))
        proxy.fail(f"page:{status}", times=1)
        t.append(_rows([2]))  # replayed by its key, or its snapshot found on the table
        assert proxy.failed == 1
        assert _readable(c, "db.t") == [1, 2]
        proxy.fail(f"page:{status}", times=1)
        if keys:
            t.set_properties(k="v")  # the replay tells
        else:
            with pytest.raises(CommitStateUnknownError, match="unknown"):
                t.set_properties(k="v")  # nothing on the table can tell
        assert c.load_table("db.t").properties["k"] == "v"
        c.create_table("db.u", ROWS)
        proxy.fail(f"page:{status}", times=1, target="/transactions/commit")
        with c.transaction() as tx:
            tx.table("db.t").append(_rows([3]))
            tx.table("db.u").append(_rows([4]))
        assert proxy.failed == 1
        assert _readable(c, "db.t") == [1, 2, 3]
        assert _readable(c, "db.u") == [4]
        # the catalog's own error response is final: nothing committed, the files deleted
        data = Path(t.location.removeprefix("file://")) / "data"
        before = set(data.rglob("*.parquet"))
        proxy.fail("status:400", times=1)
        with pytest.raises(ValidationError, match="400"):
            c.load_table("db.t").append(_rows([5]))
        assert set(data.rglob("*.parquet")) == before
        assert _readable(c, "db.t") == [1, 2, 3]
        # a gateway's refusal before forwarding (authentication, size, rate) stays final
        proxy.fail("refuse:403", times=1)
        with pytest.raises(ForbiddenError):
            c.load_table("db.t").append(_rows([6]))
        assert _readable(c, "db.t") == [1, 2, 3]
        # a catalog's conflict without the error wrapper is still a conflict: rebuilt, retried
        proxy.fail("bare:409", times=1)
        c.load_table("db.t").append(_rows([7]))
        assert proxy.failed == 1
        assert _readable(c, "db.t") == [1, 2, 3, 7]
    finally:
        proxy.close()


def test_an_unreadable_200_is_resent_with_its_key(rest_server: RestServer, warehouse: str) -> None:
    """A 200 whose body cannot be read (a proxy's page) is resent with the same key when the
    server advertises keys: the server replays its answer, so a change without a snapshot
    (properties, a new column) returns normally instead of an unknown outcome."""
    proxy = FaultyProxy(rest_server.url)
    try:
        c = RestCatalog("p", uri=proxy.url, warehouse=warehouse)
        assert c.idempotency_lifetime
        c.create_namespace("db")
        t = c.create_table("db.t", ROWS, properties={"commit.retry.min-wait-ms": "1"})
        proxy.fail("page:200", times=1)
        t.set_properties(a="1")
        assert proxy.failed == 1
        proxy.fail("page:200", times=1)
        t.update_schema().add_column("extra", LongType()).commit()
        assert proxy.failed == 1
        loaded = c.load_table("db.t")
        assert loaded.properties["a"] == "1"
        assert "extra" in [f.name for f in loaded.schema().fields]
        assert len(loaded.metadata_log()) == 2  # each change committed once
        c.idempotency_lifetime = None  # without keys only the table can tell: it cannot here
        proxy.fail("page:200", times=1)
        with pytest.raises(CommitStateUnknownError, match="unreadable"):
            t.set_properties(b="2")
    finally:
        proxy.close()


def test_retries_after_an_unknown_outcome_stop_at_the_total_timeout(
    rest_server: RestServer, warehouse: str
) -> None:
    """``commit.retry.total-timeout-ms`` ends the retries of a commit whose outcome is unknown
    (resent with its key) once one retry was made, single- and multi-table, as it ends those
    after a conflict: then the table is checked and the outcome stays unknown."""
    proxy = FaultyProxy(rest_server.url)
    props = {
        "commit.retry.num-retries": "10",
        "commit.retry.min-wait-ms": "400",
        "commit.retry.max-wait-ms": "400",
        "commit.retry.total-timeout-ms": "300",
    }
    try:
        c = RestCatalog("p", uri=proxy.url, warehouse=warehouse)
        assert c.idempotency_lifetime
        c.create_namespace("db")
        t = c.create_table("db.t", ROWS, properties=props)
        c.create_table("db.u", ROWS, properties=props)
        proxy.fail("status:503")
        with pytest.raises(CommitStateUnknownError, match="503"):
            t.set_properties(a="1")
        assert proxy.failed == 2  # the first attempt and one retry, not 11
        proxy.fail("status:503", target="/transactions/commit")
        with pytest.raises(CommitStateUnknownError, match="503"), c.transaction() as tx:
            tx.table("db.t").set_properties(b="1")
            tx.table("db.u").set_properties(b="1")
        assert proxy.failed == 2
    finally:
        proxy.close()


def test_a_resent_mutation_reports_the_first_failure_not_its_effect(
    rest_server: RestServer, warehouse: str
) -> None:
    """A drop the server acted on and then answered 500 (an answer it does not keep for its
    key) is sent again and meets its own effect: that is the first failure, not a missing
    table, nor a name taken for a create."""
    proxy = FaultyProxy(rest_server.url)
    try:
        c = RestCatalog("p", uri=proxy.url, warehouse=warehouse)
        c.create_namespace("db")
        c.create_table("db.a", ROWS)
        proxy.strip_keys = True  # the server keeps no answer: the resend runs the drop again
        proxy.fail("after:500", times=1, target="/tables/a", methods=("DELETE",))
        with pytest.raises(IcebergError, match="500") as info:
            c.drop_table("db.a")
        assert not isinstance(info.value, NoSuchTableError)
        proxy.fail("after:500", times=1, target="/namespaces/db/tables", methods=("POST",))
        with pytest.raises(IcebergError, match="500") as info:
            c.create_table("db.c", ROWS)
        assert not isinstance(info.value, TableAlreadyExistsError)
        proxy.fail("pass")
        assert not c.table_exists("db.a") and c.table_exists("db.c")
    finally:
        proxy.close()


@pytest.mark.parametrize("fault", ["dup", "drop-response", "after:502"])
def test_mutations_carry_an_idempotency_key(
    rest_server: RestServer, warehouse: str, fault: str
) -> None:
    """Creates, drops, renames and registers of tables, namespaces and views carry an
    Idempotency-Key when the server advertises keys: a gateway that repeats the request gets
    the first answer replayed, and a lost answer is sent again with the same key, so an
    operation that happened reports success (not a missing table or a name already taken)."""
    proxy = FaultyProxy(rest_server.url)
    try:
        c = RestCatalog("p", uri=proxy.url, warehouse=warehouse)
        assert c.idempotency_lifetime
        c.create_namespace("db")
        for name in ("a", "b", "p", "r"):
            c.create_table(f"db.{name}", ROWS)
        c.create_view("db.v", "SELECT 1", ROWS, dialect="spark")
        c.create_view("db.w", "SELECT 1", ROWS, dialect="spark")
        c.create_namespace("gone")
        registered = c.load_table("db.r").metadata_location
        c.drop_table("db.r")
        post, delete = ("POST",), ("DELETE",)
        cases: list[tuple[str, tuple[str, ...], Any]] = [
            ("/namespaces/db/tables", post, lambda: c.create_table("db.c", ROWS)),
            ("/tables/a", delete, lambda: c.drop_table("db.a")),
            ("/tables/p", delete, lambda: c.drop_table("db.p", purge=True)),
            ("/tables/rename", post, lambda: c.rename_table("db.b", "db.b2")),
            ("/namespaces/db/register", post, lambda: c.register_table("db.r2", registered)),
            (f"/{warehouse}/namespaces", post, lambda: c.create_namespace("ns")),
            ("/namespaces/gone", delete, lambda: c.drop_namespace("gone")),
            (
                "/namespaces/db/views",
                post,
                lambda: c.create_view("db.x", "SELECT 1", ROWS, dialect="spark"),
            ),
            ("/views/v", delete, lambda: c.drop_view("db.v")),
            ("/views/rename", post, lambda: c.rename_view("db.w", "db.w2")),
        ]
        for target, methods, op in cases:
            proxy.fail(fault, times=1, target=target, methods=methods)
            op()  # it happened: success, whatever the gateway did
            assert proxy.failed == 1, target
        proxy.fail("pass")
        assert [c.table_exists(f"db.{n}") for n in ("c", "a", "p", "b", "b2", "r2")] == [
            True, False, False, False, True, True,
        ]  # fmt: skip
        assert ("ns",) in c.list_namespaces() and ("gone",) not in c.list_namespaces()
        assert [c.view_exists(f"db.{n}") for n in ("x", "v", "w", "w2")] == [
            True, False, False, True,
        ]  # fmt: skip
    finally:
        proxy.close()


def test_idempotency_key_retries(rest_server: RestServer, warehouse: str) -> None:
    proxy = FaultyProxy(rest_server.url)
    try:
        c = RestCatalog("p", uri=proxy.url, warehouse=warehouse)
        assert c.idempotency_lifetime
        c.create_namespace("db")
        t = c.create_table("db.t", ROWS)
        proxy.fail("drop-response", times=1)
        t.set_properties(a="1")  # retried with the same key: the server replays its answer
        proxy.fail("status:502", times=2)
        t.set_properties(b="2")
        loaded = c.load_table("db.t")
        assert loaded.properties["a"] == "1" and loaded.properties["b"] == "2"
        assert len(loaded.metadata_log()) == 2  # exactly two commits happened
        # a multi-table commit whose answer was lost is retried with its key too
        c.create_table("db.u", ROWS)
        proxy.fail("drop-response", times=1, target="/transactions/commit")
        with c.transaction() as tx:
            tx.table("db.t").append(_rows([1]))
            tx.table("db.u").append(_rows([2]))
        assert proxy.failed == 1
        assert len(c.load_table("db.t").snapshots()) == 1
        assert len(c.load_table("db.u").snapshots()) == 1
    finally:
        proxy.close()


def test_idempotency_replay_on_the_wire(rest_server: RestServer, warehouse: str) -> None:
    import urllib.request

    c = RestCatalog("p", uri=rest_server.url, warehouse=warehouse)
    c.create_namespace("db")
    t = c.create_table("db.t", ROWS)
    body = json.dumps(
        {
            "requirements": [{"type": "assert-table-uuid", "uuid": t.metadata.table_uuid}],
            "updates": [{"action": "set-properties", "updates": {"x": "1"}}],
        }
    ).encode()

    def post(key: str) -> tuple[int, bytes]:
        req = urllib.request.Request(
            f"{rest_server.url}/v1/{warehouse}/namespaces/db/tables/t",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Idempotency-Key": key},
        )
        with urllib.request.urlopen(req) as resp:
            return resp.status, resp.read()

    first = post("0190b0e4-6f6e-7c3a-9b1e-2f1a3c4d5e6f")
    second = post("0190b0e4-6f6e-7c3a-9b1e-2f1a3c4d5e6f")
    assert first == second
    assert len(c.load_table("db.t").metadata_log()) == 1  # one commit, replayed once
    c.load_table("db.t").set_properties(x="2")  # a request run again would undo it
    assert post("0190b0e4-6f6e-7c3a-9b1e-2f1a3c4d5e6f") == first  # still replayed
    assert c.load_table("db.t").properties["x"] == "2"
    third = post("0190b0e4-6f6e-7c3a-9b1e-2f1a3c4d5e70")  # a new key runs
    assert json.loads(third[1])["metadata-location"] != json.loads(first[1])["metadata-location"]
    assert c.load_table("db.t").properties["x"] == "1"


def test_multi_table_commit_all_or_nothing(
    cat: RestCatalog, rest_server: RestServer, warehouse: str
) -> None:
    cat.create_table("db.a", ROWS)
    cat.create_table("db.b", ROWS)
    with cat.transaction() as tx:
        tx.table("db.a").append(_rows([1]))
        tx.table("db.b").append(_rows([2]))
        tx.table("db.b").set_properties(k="v")
    assert cat.load_table("db.a").scan().to_arrow()["id"].to_pylist() == [1]
    assert cat.load_table("db.b").properties["k"] == "v"
    # a schema change to b that another writer beat: nothing is committed to a either
    tx = cat.transaction()
    tx.table("db.a").append(_rows([3]))
    tx.table("db.b").update_schema().add_column("c1", LongType()).commit()
    other = RestCatalog("o", uri=rest_server.url, warehouse=warehouse)
    other.load_table("db.b").update_schema().add_column("c2", LongType()).commit()
    with pytest.raises(CommitFailedError):
        tx.commit()
    assert cat.load_table("db.a").scan().to_arrow()["id"].to_pylist() == [1]
    assert len(cat.load_table("db.a").snapshots()) == 1
    # appends racing another writer are rebuilt and committed together
    tx = cat.transaction()
    tx.table("db.a").append(_rows([4]))
    other.load_table("db.a").append(_rows([5]))
    tx.commit()
    assert sorted(cat.load_table("db.a").scan().to_arrow()["id"].to_pylist()) == [1, 4, 5]


def _files(root: Path) -> set[Path]:
    return {f for f in root.rglob("*") if f.is_file()}


def test_a_multi_table_commit_the_server_does_not_offer_leaves_nothing_behind(
    tmp_path: Path,
) -> None:
    """A server over a file-system catalog lists no ``POST /transactions/commit``: the client
    refuses the commit before sending anything, yet every data file, manifest and manifest list
    the transaction wrote was left behind and each table reported it may have committed."""
    pytest.importorskip("uvicorn")
    from icefloe import rest
    from icefloe.catalog.hadoop import HadoopCatalog
    from icefloe.catalog.rest.config import COMMIT_TRANSACTION

    backing = HadoopCatalog("h", warehouse=(tmp_path / "wh").as_uri())
    backing.create_namespace("db")
    for name in ("db.a", "db.b"):
        backing.create_table(name, ROWS).append(_rows([1]))
    with rest.start(backing) as server:
        c = RestCatalog("r", uri=server.url)
        assert COMMIT_TRANSACTION not in c.endpoints
        heads = {n: c.load_table(n).metadata_location for n in ("db.a", "db.b")}
        before = _files(tmp_path / "wh")
        tx = c.transaction()
        parts = [tx.table("db.a"), tx.table("db.b")]
        for p in parts:
            p.append(_rows([2]))
        with pytest.raises(UnsupportedFeatureError, match="does not offer"):
            tx.commit()
        assert [p.may_have_committed for p in parts] == [False, False]
        assert _files(tmp_path / "wh") == before
        for name, head in heads.items():
            assert c.load_table(name).metadata_location == head
            assert c.load_table(name).scan().to_arrow()["id"].to_pylist() == [1]
        c.close()


def test_a_table_commit_the_server_does_not_offer_leaves_nothing_behind(tmp_path: Path) -> None:
    """A commit to a server that lists no table-update endpoint is refused before any request:
    its data file, manifest and manifest list were left behind as if it might have landed."""
    pytest.importorskip("uvicorn")
    from icefloe import rest
    from icefloe.catalog.hadoop import HadoopCatalog
    from icefloe.catalog.rest.config import UPDATE_TABLE

    backing = HadoopCatalog("h", warehouse=(tmp_path / "wh").as_uri())
    backing.create_namespace("db")
    backing.create_table("db.t", ROWS).append(_rows([1]))
    with rest.start(backing) as server:
        c = RestCatalog("r", uri=server.url)
        c.endpoints = c.endpoints - {UPDATE_TABLE}
        before = _files(tmp_path / "wh")
        tx = c.load_table("db.t").transaction()
        tx.append(_rows([2]))
        with pytest.raises(UnsupportedFeatureError, match="does not offer"):
            tx.commit_transaction()
        assert not tx.may_have_committed
        assert _files(tmp_path / "wh") == before
        assert c.load_table("db.t").scan().to_arrow()["id"].to_pylist() == [1]
        c.close()


def test_errors_are_typed(cat: RestCatalog) -> None:
    with pytest.raises(NoSuchTableError, match=r"HTTP 404 NoSuchTableException"):
        cat.load_table("db.missing")
    with pytest.raises(NoSuchNamespaceError):
        cat.load_namespace_properties("nowhere")
    with pytest.raises(NoSuchNamespaceError):
        cat.create_table("nowhere.t", ROWS)
    with pytest.raises(NoSuchTableError):
        cat.drop_table("db.missing")
    with pytest.raises(NoSuchViewError):
        cat.load_view("db.missing")


def test_a_level_holding_the_namespace_separator_is_refused(cat: RestCatalog) -> None:
    """The server splits a level at the separator (0x1F): the level ``db<0x1F>sub`` and table
    ``t`` were the table ``db.sub.t`` there, and a purge of the one deleted the other."""
    cat.create_namespace(("db", "sub"))
    cat.create_table(("db", "sub", "t"), ROWS)
    wrong = ("db\x1fsub", "t")
    calls = [
        lambda: cat.table_exists(wrong),
        lambda: cat.load_table(wrong),
        lambda: cat.drop_table(wrong, purge=True),
        lambda: cat.list_tables(("db\x1fsub",)),
        lambda: cat.list_namespaces(("db\x1fsub",)),
    ]
    for call in calls:
        with pytest.raises(ValidationError, match="namespace separator"):
            call()
    assert cat.table_exists(("db", "sub", "t"))


def test_storage_credentials_longest_prefix() -> None:
    from icefloe.metadata import new_table_metadata
    from icefloe.partitioning import UNPARTITIONED_PARTITION_SPEC
    from icefloe.schema import Schema
    from icefloe.sorting import UNSORTED_SORT_ORDER
    from icefloe.types import NestedField

    meta = new_table_metadata(
        Schema(NestedField(1, "a", LongType())),
        UNPARTITIONED_PARTITION_SPEC,
        UNSORTED_SORT_ORDER,
        "s3://bucket/wh/db/t",
    )
    obj = {
        "metadata-location": "s3://bucket/wh/db/t/metadata/00000-x.metadata.json",
        "metadata": meta.to_json(),
        "config": {"s3.endpoint": "http://127.0.0.1:9000", "s3.access-key-id": "from-config"},
        "storage-credentials": [
            {"prefix": "s3://bucket/", "config": {"s3.access-key-id": "short"}},
            {"prefix": "s3://bucket/wh/db", "config": {"s3.access-key-id": "long"}},
            {"prefix": "s3://other/", "config": {"s3.access-key-id": "other"}},
        ],
    }
    props = LoadTableResult.from_json(obj).io_properties()
    assert props == {"s3.endpoint": "http://127.0.0.1:9000", "s3.access-key-id": "long"}


def test_sigv4_signatures_match_botocore(monkeypatch: pytest.MonkeyPatch) -> None:
    """icefloe's SigV4 signer against botocore's for the same requests (no AWS offline)."""
    import datetime

    pytest.importorskip("botocore")
    import botocore.auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    from icefloe.catalog.rest.sigv4 import SigV4Signer

    now = datetime.datetime(2026, 11, 25, 1, 2, 3, tzinfo=datetime.timezone.utc)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: now)
    cases = [
        (
            "GET",
            "https://glue.us-east-1.amazonaws.com/iceberg/v1/config?warehouse=123%3As3tables",
            None,
        ),
        (
            "GET",
            "http://127.0.0.1:8181/v1/ns%1Fa/tables?pageToken=a%2Fb%20c&pageSize=10&a-=1&a=2",
            None,
        ),
        (
            "POST",
            "https://example.com/v1/namespaces/db/tables/t",
            b'{"requirements":[],"updates":[]}',
        ),
        ("DELETE", "https://example.com:8443/v1/namespaces/db/tables/t?purgeRequested=true", None),
    ]
    for token in (None, "session-token"):
        ours = SigV4Signer("us-east-1", "execute-api", "AKIDEXAMPLE", "secret/key", token)
        for method, url, body in cases:
            headers = {"Content-Type": "application/json", "X-Client-Version": "icefloe"}
            signed = ours.sign(method, url, {**headers, "Authorization": "Bearer t"}, body, now)
            assert signed["Original-Authorization"] == "Bearer t"
            theirs = AWSRequest(
                method=method,
                url=url,
                data=body,
                headers={k: v for k, v in signed.items() if k != "Authorization"},
            )
            botocore.auth.SigV4Auth(
                Credentials("AKIDEXAMPLE", "secret/key", token), "execute-api", "us-east-1"
            ).add_auth(theirs)
            assert signed["Authorization"] == theirs.headers["Authorization"], (method, url)
    assert "secret" not in repr(ours)


def test_sigv4_signed_requests_reach_the_server(rest_server: RestServer, warehouse: str) -> None:
    c = RestCatalog(
        "signed",
        uri=rest_server.url,
        warehouse=warehouse,
        **{
            "rest.sigv4-enabled": "true",
            "rest.signing-region": "eu-west-1",
            "rest.access-key-id": "AKIDEXAMPLE",
            "rest.secret-access-key": "sigv4-secret-value",
        },
    )
    c.create_namespace("db")
    t = c.create_table("db.t", ROWS)
    t.append(_rows([1]))
    assert c.load_table("db.t").scan().to_arrow()["id"].to_pylist() == [1]
    assert "sigv4-secret-value" not in repr(c) + repr(c._signer) + repr(t.io.properties)


def test_commit_metrics_reports(rest_server: RestServer, warehouse: str) -> None:
    proxy = FaultyProxy(rest_server.url)
    try:
        c = RestCatalog("m", uri=proxy.url, warehouse=warehouse)
        c.create_namespace("db")
        t = c.create_table("db.t", ROWS)
        t.append(_rows([1]))
        t.set_properties(k="v")  # adds no snapshot: no report
        c.flush_reports()
        assert (c.metrics_reports_sent, c.metrics_reports_failed) == (1, 0)
        assert len(_requests(rest_server, warehouse, '/tables/t/metrics" 204')) == 1
        proxy.fail("status:500", target="/metrics")
        t.append(_rows([2]))  # the report fails; the commit does not
        c.flush_reports()
        assert (c.metrics_reports_sent, c.metrics_reports_failed) == (1, 1)
        assert sorted(c.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 2]
        off = RestCatalog(
            "off",
            uri=rest_server.url,
            warehouse=warehouse,
            **{"rest-metrics-reporting-enabled": "false"},
        )
        off.load_table("db.t").append(_rows([3]))
        off.flush_reports()
        assert off.metrics_reports_sent == 0
        assert len(_requests(rest_server, warehouse, '/tables/t/metrics" 204')) == 1
    finally:
        proxy.close()


def test_retry_after_unknown_outcome_never_applies_a_change_twice(
    rest_server: RestServer, warehouse: str
) -> None:
    """The first attempt committed but the client saw a 503; the retry (a server that does not
    replay keys) conflicts with that very commit. The client must find its snapshot instead of
    rebuilding the append on top of it."""
    proxy = FaultyProxy(rest_server.url)
    try:
        c = RestCatalog("u", uri=proxy.url, warehouse=warehouse)
        c.create_namespace("db")
        t = c.create_table("db.t", ROWS)
        proxy.strip_keys = True
        proxy.fail("after:503", times=1)
        t.append(_rows([1]))
        assert proxy.failed == 1
        loaded = c.load_table("db.t")
        assert loaded.scan().to_arrow()["id"].to_pylist() == [1]  # once, not twice
        assert len(loaded.snapshots()) == 1
        c.create_table("db.u", ROWS)
        proxy.fail("after:503", times=1, target="/transactions/commit")
        with c.transaction() as tx:
            tx.table("db.t").append(_rows([2]))
            tx.table("db.u").append(_rows([3]))
        assert sorted(c.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 2]
        assert c.load_table("db.u").scan().to_arrow()["id"].to_pylist() == [3]
    finally:
        proxy.close()


def test_a_table_renamed_after_an_unknown_outcome_keeps_its_files(
    rest_server: RestServer, warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first attempt committed, its answer was lost (the server did not keep the key's
    reply), and another client renamed the table: the retry's 404 proves nothing, so the
    files of the commit, now the renamed table's, are kept."""
    from icefloe.catalog.rest.http import TransportError

    other = RestCatalog("o", uri=rest_server.url, warehouse=warehouse)
    other.create_namespace("db")
    other.create_table("db.t", ROWS).append(_rows([1]))
    c = RestCatalog("c", uri=rest_server.url, warehouse=warehouse)
    t = c.load_table("db.t")
    real = c._send
    posts: list[str] = []

    def send(method: str, path: str, **kwargs: Any) -> Any:
        if method == "POST" and path.endswith("/tables/t"):
            posts.append(path)
            if len(posts) == 1:
                headers = dict(kwargs.get("headers") or {})
                headers.pop("Idempotency-Key", None)  # the server keeps no reply for it
                assert real(method, path, **{**kwargs, "headers": headers}).status == 200
                other.rename_table("db.t", "db.t2")
                raise TransportError("connection reset", maybe_sent=True)
        return real(method, path, **kwargs)

    monkeypatch.setattr(c, "_send", send)
    with pytest.raises(CommitStateUnknownError, match=r"does not exist|NoSuchTable"):
        t.append(_rows([2]))
    renamed = other.load_table("db.t2")
    assert sorted(renamed.scan().to_arrow()["id"].to_pylist()) == [1, 2]


def test_vended_storage_credentials_reach_the_table_io(tmp_path: Path) -> None:
    """The server vends credentials (longest prefix wins) only when asked through
    X-Iceberg-Access-Delegation; its table config always reaches the table's FileIO."""
    pytest.importorskip("uvicorn")
    from icefloe import rest
    from icefloe.catalog.sql import SqlCatalog

    backing = SqlCatalog(
        "b", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri()
    )
    wh = (tmp_path / "wh").as_uri()
    creds = [
        ("file:///", {"s3.access-key-id": "short", "s3.session-token": "t1"}),
        (f"{wh}/db", {"s3.access-key-id": "long"}),
        ("s3://elsewhere/", {"s3.access-key-id": "other"}),
    ]
    with rest.start(
        backing, storage_credentials=creds, table_config={"s3.endpoint": "http://127.0.0.1:1"}
    ) as server:
        c = RestCatalog("v", uri=server.url)
        c.create_namespace("db")
        c.create_table("db.t", ROWS)
        io = c.load_table("db.t").io.properties
        assert io["s3.endpoint"] == "http://127.0.0.1:1"
        assert io["s3.access-key-id"] == "long" and "s3.session-token" not in io
        t_io = c.load_table("db.t").io  # the table's files: its (longest) prefix, not file:///
        assert t_io.for_location(f"{wh}/db/t/metadata/m.avro").properties == io
        assert c.load_credentials("db.t") == creds[:2]  # the prefixes covering the table
        # and those covering where its data files go
        props = {"write.data.path": "s3://elsewhere/data"}
        e = c.create_table("db.e", ROWS, properties=props)
        assert c.load_credentials("db.e") == creds
        assert e.io.properties["s3.access-key-id"] == "long"
        routed = e.io.for_location("s3://elsewhere/data/x.parquet").properties
        assert routed["s3.access-key-id"] == "other" and "s3.session-token" not in routed
        plain = RestCatalog("p", uri=server.url, **{"rest.access-delegation": ""})
        io = plain.load_table("db.t").io.properties
        assert io["s3.endpoint"] == "http://127.0.0.1:1" and "s3.access-key-id" not in io
    backing.close()


def _reports(server: RestServer, warehouse: str, kind: str = "scan-report") -> list[dict]:
    """The metrics reports the server logged for tables of ``warehouse``, oldest first."""
    out = []
    for line in server.log_text().splitlines():
        marker = f"icefloe.rest.metrics: {kind} {warehouse}/"
        if marker in line:
            out.append(json.loads(line.split(marker, 1)[1].split(" ", 1)[1]))
    return out


def test_scan_reports_carry_the_plans_counts(rest_server: RestServer, warehouse: str) -> None:
    """Each scan plan is reported with Java's ScanReport fields; the counts equal the plan's
    (and PyIceberg's plan of the same scan), the filter's values never reach the server."""
    from pyiceberg.catalog.rest import RestCatalog as PyRestCatalog

    c = RestCatalog("s", uri=rest_server.url, warehouse=warehouse)
    c.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.int64()), ("v", pa.string())])
    t = c.create_table(
        "db.t", schema, properties={"format-version": "3", "write.delete.mode": "merge-on-read"}
    )
    with t.update_spec() as s:
        s.add_field("p")
    for p in (1, 2, 3):  # one data manifest per append, one partition value each
        ids = [p * 10 + i for i in range(3)]
        t.append(pa.table({"id": ids, "p": [p] * 3, "v": [f"v{i}" for i in ids]}, schema=schema))
    t.delete("id = 11")  # a deletion vector for the p=1 file, in a delete manifest
    t = c.load_table("db.t")
    c.flush_reports()
    sent = c.metrics_reports_sent
    scan = t.scan(row_filter="p = 1 and v != 'zz-hidden-value'", selected_fields=("id", "v"))
    tasks = scan.plan_files()
    assert sorted(scan.to_arrow()["id"].to_pylist()) == [10, 12]
    c.flush_reports()
    assert c.metrics_reports_sent == sent + 1 and c.metrics_reports_failed == 0
    report = _reports(rest_server, warehouse)[-1]
    assert report["table-name"] == "db.t"
    assert report["snapshot-id"] == t.current_snapshot().snapshot_id
    assert report["schema-id"] == t.schema().schema_id
    assert report["projected-field-ids"] == [1, 3]
    assert report["projected-field-names"] == ["id", "v"]
    assert report["filter"] == {
        "type": "and",
        "left": {"type": "eq", "term": "p", "value": "(1-digit-int)"},
        "right": {"type": "not-eq", "term": "v", "value": report["filter"]["right"]["value"]},
    }
    assert report["filter"]["right"]["value"].startswith("(hash-")
    assert "zz-hidden-value" not in rest_server.log_text()
    m = {k: v["value"] for k, v in report["metrics"].items() if "value" in v}
    assert report["metrics"]["total-planning-duration"]["total-duration"] > 0
    deletes = [d for task in tasks for d in task.delete_files]
    assert m["result-data-files"] == len(tasks) == 1
    assert m["result-delete-files"] == len(deletes) == 1
    assert m["total-file-size-in-bytes"] == sum(x.data_file.file_size_in_bytes for x in tasks)
    assert m["total-delete-file-size-in-bytes"] == sum(d.content_size_in_bytes for d in deletes)
    assert (m["total-data-manifests"], m["scanned-data-manifests"]) == (3, 1)
    assert m["skipped-data-manifests"] == 2
    assert (m["total-delete-manifests"], m["scanned-delete-manifests"]) == (1, 1)
    assert (m["indexed-delete-files"], m["dvs"], m["positional-delete-files"]) == (1, 1, 0)
    assert m["equality-delete-files"] == 0 and m["skipped-data-files"] == 0
    # the whole table: counts equal PyIceberg's plan of the same snapshot
    c.load_table("db.t").scan().to_arrow()
    c.flush_reports()
    whole = {
        k: v["value"]
        for k, v in _reports(rest_server, warehouse)[-1]["metrics"].items()
        if "value" in v
    }
    py = PyRestCatalog("py", uri=rest_server.url, warehouse=warehouse).load_table("db.t")
    theirs = list(py.scan().plan_files())
    assert whole["result-data-files"] == len(theirs) == 3
    assert whole["result-delete-files"] == sum(len(x.delete_files) for x in theirs) == 1
    assert whole["total-file-size-in-bytes"] == sum(x.file.file_size_in_bytes for x in theirs)
    assert whole["scanned-data-manifests"] == 3 and whole["skipped-data-manifests"] == 0
    assert report["snapshot-id"] == py.current_snapshot().snapshot_id


def test_a_failed_scan_report_never_fails_the_scan(rest_server: RestServer, warehouse: str) -> None:
    proxy = FaultyProxy(rest_server.url)
    try:
        c = RestCatalog("f", uri=proxy.url, warehouse=warehouse)
        c.create_namespace("db")
        c.create_table("db.t", ROWS).append(_rows([1, 2]))
        c.flush_reports()
        before = len(_reports(rest_server, warehouse))
        for mode in ("status:500", "drop-request", "drop-response"):
            proxy.fail(mode, target="/metrics")
            c.flush_reports()
            failed = c.metrics_reports_failed
            assert sorted(c.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 2]
            c.flush_reports()
            assert c.metrics_reports_failed == failed + 1, mode
        assert len(_reports(rest_server, warehouse)) == before + 1  # only drop-response arrived
        proxy.fail("pass")
        off = RestCatalog(
            "off", uri=proxy.url, warehouse=warehouse, **{"rest-metrics-reporting-enabled": "false"}
        )
        off.load_table("db.t").scan().plan_files()
        off.flush_reports()
        assert off.metrics_reports_sent == 0
        assert len(_reports(rest_server, warehouse)) == before + 1
    finally:
        proxy.close()


def test_server_refuses_incomplete_reports(
    cat: RestCatalog, rest_server: RestServer, warehouse: str
) -> None:
    import urllib.error
    import urllib.request

    cat.create_table("db.t", ROWS)
    url = f"{rest_server.url}/v1/{warehouse}/namespaces/db/tables/t/metrics"
    for body in (
        {"report-type": "scan-report", "table-name": "db.t"},
        {"report-type": "commit-report", "table-name": "db.t", "snapshot-id": 1},
        {"report-type": "other", "table-name": "db.t"},
    ):
        req = urllib.request.Request(
            url, data=json.dumps(body).encode(), method="POST", headers=_JSON_BODY
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(req)
        assert refused.value.code == 400, body


def test_new_rest_levels_may_hold_a_dot_that_other_catalogs_refuse() -> None:
    """REST sends levels as a list, so ``a.b`` stays one level there; SQL catalogs store the
    namespace dotted, where it would be two."""
    from icefloe.catalog.base import check_namespace, check_table_identifier

    assert check_namespace(("a.b",), dots=True) == ("a.b",)
    assert check_table_identifier(("a.b", "t"), dots=True) == ("a.b", "t")
    with pytest.raises(ValidationError, match=r"must not contain \['\.'\]"):
        check_table_identifier(("a.b", "t"))
    with pytest.raises(ValidationError, match="relative directory"):
        check_table_identifier(("a.b", ".."), dots=True)


def test_a_committed_multi_table_commit_whose_reload_fails_is_not_an_error(
    rest_server: RestServer, warehouse: str, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    """``POST /transactions/commit`` answers 204 without the new metadata, so the client
    reloads its tables: when that failed (the server going away just after committing) the
    transaction raised an ``IcebergError``, and a caller retrying on errors committed the
    rows twice. It now returns, warning that the tables are to be refreshed."""
    import logging

    from icefloe.exceptions import ServiceUnavailableError
    from icefloe.table import Table

    c = RestCatalog("p", uri=rest_server.url, warehouse=warehouse)
    c.create_namespace("db")
    c.create_table("db.t", ROWS)
    c.create_table("db.u", ROWS)

    def unreachable(self: Any) -> Any:
        raise ServiceUnavailableError("the catalog went away")

    with (
        caplog.at_level(logging.WARNING, logger="icefloe.catalog.multi"),
        c.transaction() as tx,
    ):
        tx.table("db.t").append(_rows([1]))
        tx.table("db.u").append(_rows([2]))
        monkeypatch.setattr(Table, "refresh", unreachable)
    monkeypatch.undo()
    assert "committed, but reloading its tables failed" in caplog.text
    assert "call refresh()" in caplog.text
    assert c.load_table("db.t").scan().to_arrow()["id"].to_pylist() == [1]
    assert c.load_table("db.u").scan().to_arrow()["id"].to_pylist() == [2]
