"""Other engines' REST clients against ``icefloe serve``: PyIceberg 0.12's ``RestCatalog`` and
DuckDB 1.5.5's iceberg extension write and read, and icefloe reads what they wrote (and the
other way round)."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from support.rest import RestServer, new_warehouse

pytestmark = [pytest.mark.rest, pytest.mark.interop]


def _pyiceberg(server: RestServer, warehouse: str):  # type: ignore[no-untyped-def]
    from pyiceberg.catalog.rest import RestCatalog as PyRestCatalog

    return PyRestCatalog("py", uri=server.url, warehouse=warehouse)


def test_pyiceberg_creates_appends_and_reads_through_icefloe_serve(rest_server: RestServer) -> None:
    warehouse = new_warehouse()
    py = _pyiceberg(rest_server, warehouse)
    py.create_namespace("db")
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"]})
    pt = py.create_table("db.t", schema=data.schema, properties={"format-version": "2"})
    pt.append(data)
    pt.append(pa.table({"id": pa.array([4], pa.int64()), "s": ["d"]}))
    assert sorted(pt.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4]
    # icefloe reads PyIceberg's writes through the same server
    ours = RestCatalog("ours", uri=rest_server.url, warehouse=warehouse)
    t = ours.load_table("db.t")
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4]
    assert len(t.snapshots()) == 2
    # icefloe writes, PyIceberg reads
    t.append(pa.table({"id": pa.array([5], pa.int64()), "s": ["e"]}))
    got = py.load_table("db.t").scan().to_arrow()
    assert sorted(got["id"].to_pylist()) == [1, 2, 3, 4, 5]
    # PyIceberg's staged create (a create-table transaction) goes through assert-create
    with py.create_table_transaction("db.staged", schema=data.schema) as tx:
        tx.append(data)
    assert sorted(ours.load_table("db.staged").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    assert [ns for ns in py.list_namespaces()] == [("db",)]
    assert sorted(py.list_tables("db")) == [("db", "staged"), ("db", "t")]
    py.drop_table("db.staged")
    assert not ours.table_exists("db.staged")


def test_duckdb_attaches_reads_inserts_creates_and_deletes(rest_server: RestServer) -> None:
    import duckdb

    from support.peers import duckdb_connect, duckdb_extension_path

    warehouse = new_warehouse()
    ours = RestCatalog("ours", uri=rest_server.url, warehouse=warehouse)
    ours.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
    t = ours.create_table("db.t", schema)
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}))
    con = duckdb_connect()
    con.execute(f"LOAD '{duckdb_extension_path('httpfs')}'")  # DuckDB's HTTP client
    con.execute(
        f"ATTACH '{warehouse}' AS ice "
        f"(TYPE iceberg, ENDPOINT '{rest_server.url}', AUTHORIZATION_TYPE 'none')"
    )
    assert con.execute("SELECT * FROM ice.db.t ORDER BY id").fetchall() == [(1, "a"), (2, "b")]
    con.execute("INSERT INTO ice.db.t VALUES (3, 'c')")  # through POST /transactions/commit
    rows = ours.load_table("db.t").scan().to_arrow().sort_by("id").to_pylist()
    assert rows == [{"id": 1, "s": "a"}, {"id": 2, "s": "b"}, {"id": 3, "s": "c"}]
    con.execute("DELETE FROM ice.db.t WHERE id = 2")  # DuckDB writes a position delete file
    rows = ours.load_table("db.t").scan().to_arrow().sort_by("id").to_pylist()
    assert rows == [{"id": 1, "s": "a"}, {"id": 3, "s": "c"}]
    # CREATE TABLE is a staged create committed with assert-create
    con.execute("CREATE TABLE ice.db.d (x INTEGER)")
    con.execute("INSERT INTO ice.db.d VALUES (7), (8)")
    assert sorted(ours.load_table("db.d").scan().to_arrow()["x"].to_pylist()) == [7, 8]
    # and DuckDB sees icefloe's later commit
    ours.load_table("db.d").append(pa.table({"x": pa.array([9], pa.int32())}))
    con.execute("DETACH ice")
    con.execute(
        f"ATTACH '{warehouse}' AS ice "
        f"(TYPE iceberg, ENDPOINT '{rest_server.url}', AUTHORIZATION_TYPE 'none')"
    )
    assert con.execute("SELECT x FROM ice.db.d ORDER BY x").fetchall() == [(7,), (8,), (9,)]
    # DuckDB's inserts into a v1 table send a v2 snapshot (sequence-number 1) and carry the
    # earlier manifests over with zero file counts, so readers that trust the counts (Java,
    # icefloe) would lose the earlier rows: the server refuses the commit, the table is intact
    v1 = ours.create_table("db.v1", schema, properties={"format-version": "1"})
    v1.append(pa.table({"id": pa.array([1], pa.int64()), "s": ["a"]}))
    with pytest.raises(duckdb.Error, match=r"must be 0 in v1.*upgrade the table"):
        con.execute("INSERT INTO ice.db.v1 VALUES (2, 'b')")
    v1 = ours.load_table("db.v1")
    assert len(v1.snapshots()) == 1 and v1.scan().to_arrow()["id"].to_pylist() == [1]
    assert con.execute("SELECT id FROM ice.db.v1").fetchall() == [(1,)]


def test_pyiceberg_and_duckdb_log_in_with_oauth2_client_credentials(
    rest_auth_server: RestServer,
) -> None:
    """Both get tokens from icefloe serve's token endpoint and work through them."""
    from pyiceberg.catalog.rest import RestCatalog as PyRestCatalog

    from support.peers import duckdb_connect, duckdb_extension_path
    from support.rest import CLIENT_ID, CLIENT_SECRET

    url = rest_auth_server.url
    py = PyRestCatalog(
        "py",
        uri=url,
        credential=f"{CLIENT_ID}:{CLIENT_SECRET}",
        **{"oauth2-server-uri": f"{url}/v1/oauth/tokens"},
    )
    py.create_namespace("oauth_db")
    data = pa.table({"id": pa.array([1, 2], pa.int64())})
    py.create_table("oauth_db.t", schema=data.schema).append(data)
    con = duckdb_connect()
    con.execute(f"LOAD '{duckdb_extension_path('httpfs')}'")
    con.execute(
        f"""CREATE SECRET auth (TYPE iceberg, CLIENT_ID '{CLIENT_ID}',
        CLIENT_SECRET '{CLIENT_SECRET}', OAUTH2_SERVER_URI '{url}/v1/oauth/tokens')"""
    )
    con.execute(f"ATTACH '' AS ice (TYPE iceberg, ENDPOINT '{url}', SECRET auth)")
    assert con.execute("SELECT id FROM ice.oauth_db.t ORDER BY id").fetchall() == [(1,), (2,)]
    con.execute("INSERT INTO ice.oauth_db.t VALUES (3)")
    assert sorted(py.load_table("oauth_db.t").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    # without credentials DuckDB gets nothing
    bare = duckdb_connect()
    bare.execute(f"LOAD '{duckdb_extension_path('httpfs')}'")
    with pytest.raises(Exception, match=r"401|nauthori"):
        bare.execute(
            f"ATTACH '' AS ice (TYPE iceberg, ENDPOINT '{url}', AUTHORIZATION_TYPE 'none')"
        )
        bare.execute("SELECT * FROM ice.oauth_db.t").fetchall()
    py.drop_table("oauth_db.t", purge_requested=True)
    py.drop_namespace("oauth_db")


def test_pyiceberg_plans_scans_on_icefloe_serve(rest_server: RestServer) -> None:
    """PyIceberg 0.12 with ``scan-planning-mode=server`` reads through the server's plans
    (partitioned v2 table, icefloe's position deletes, filters, time travel) the rows its own
    planning reads."""
    from pyiceberg.catalog.rest import RestCatalog as PyRestCatalog

    warehouse = new_warehouse()
    ours = RestCatalog("ours", uri=rest_server.url, warehouse=warehouse)
    ours.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("d", pa.date32()), ("s", pa.string())])
    props = {"format-version": "2", "write.delete.mode": "merge-on-read"}
    t = ours.create_table("db.t", schema, properties=props)
    t.update_spec().add_field("d", "day").add_field("id", "bucket[2]").commit()
    t = ours.load_table("db.t")
    days = [datetime.date(2024, 6, 1 + i % 4) for i in range(200)]
    t.append(
        pa.table({"id": list(range(200)), "d": days, "s": [f"v{i}" for i in range(200)]}, schema)
    )
    first = t.current_snapshot().snapshot_id
    t.delete("id in (3, 10, 17, 24, 101, 150, 199)")
    t.append(pa.table({"id": [500], "d": [datetime.date(2024, 7, 1)], "s": ["late"]}, schema))
    local = PyRestCatalog("local", uri=rest_server.url, warehouse=warehouse)
    remote = PyRestCatalog(
        "remote", uri=rest_server.url, warehouse=warehouse, **{"scan-planning-mode": "server"}
    )
    assert remote.supports_server_side_planning()
    before = rest_server.log_text().count(f"/v1/{warehouse}/namespaces/db/tables/t/plan")
    filters = ["id >= 0", "d = '2024-06-02'", "id < 40 and s != 'v10'", "s = 'late'"]
    for f in filters:
        want = sorted(local.load_table("db.t").scan(row_filter=f).to_arrow()["id"].to_pylist())
        got = sorted(remote.load_table("db.t").scan(row_filter=f).to_arrow()["id"].to_pylist())
        assert got == want and want, f
    old = remote.load_table("db.t").scan(snapshot_id=first).to_arrow()
    assert old.num_rows == 200
    planned = rest_server.log_text().count(f"/v1/{warehouse}/namespaces/db/tables/t/plan")
    assert planned - before == len(filters) + 1
