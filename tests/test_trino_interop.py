"""Trino 476's Iceberg connector against ``icefloe serve`` (see tests/support/trino.py).

Trino reads what icefloe wrote (v2 with position and equality deletes, partitioned by
``day(ts)``; v3 without deletion vectors), icefloe reads what Trino wrote (INSERT, DELETE,
UPDATE, MERGE, ADD COLUMN), and Trino's ``$snapshots`` / ``$files`` agree with icefloe's
inspect tables. Trino 476 does not read deletion vectors and makes no row-level changes to v3
tables, and creates tables only in schemas with a location: the tests show what it refuses.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField, StringType, TimestampType
from support.rest import RestServer
from support.trino import WAREHOUSE, TrinoError, TrinoServer

pytestmark = [pytest.mark.trino, pytest.mark.rest, pytest.mark.interop]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "s", StringType()),
    NestedField(3, "ts", TimestampType()),
    identifier_field_ids=[1],
)
DAY = PartitionSpec(PartitionField(3, 1000, parse_transform("day"), "ts_day"))
START = dt.datetime(2024, 1, 1)
#: how Trino renders a timestamp(6) cast to varchar
_TS = "%Y-%m-%d %H:%M:%S.%f"
#: the columns Trino selects so rows compare with icefloe's
_COLS = "id, s, CAST(ts AS varchar)"


def _catalog(rest_server: RestServer) -> RestCatalog:
    return RestCatalog("ours", uri=rest_server.url, warehouse=WAREHOUSE)


def _namespace() -> str:
    return f"ns_{uuid.uuid4().hex[:10]}"


def _trino_schema(trino: TrinoServer, rest_server: RestServer) -> str:
    """A new namespace created by Trino, with a location: Trino creates tables only under
    one (see docs/guide.md)."""
    ns = _namespace()
    location = (rest_server.base / "warehouse" / WAREHOUSE / ns).as_uri()
    trino.query(f"CREATE SCHEMA iceberg.{ns} WITH (location = '{location}')")
    return ns


def _data(ids: range) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "s": [f"r{i}" for i in ids],
            "ts": pa.array([START + dt.timedelta(hours=6 * i) for i in ids], pa.timestamp("us")),
        }
    )


def _ours(t: Table) -> list[list[Any]]:
    """The table's rows as Trino's ``_COLS`` give them, sorted."""
    rows = t.scan().to_arrow().to_pylist()
    return sorted([r["id"], r["s"], r["ts"].strftime(_TS)] for r in rows)


def _icefloe_table(rest_server: RestServer, version: int) -> tuple[str, Table]:
    """A ``day(ts)``-partitioned merge-on-read table of 20 rows over five days, written by
    icefloe, in a namespace of its own; returns (namespace, table)."""
    cat = _catalog(rest_server)
    ns = _namespace()
    cat.create_namespace(ns)
    props = {"format-version": str(version), "write.delete.mode": "merge-on-read"}
    t = cat.create_table(f"{ns}.t", SCHEMA, partition_spec=DAY, properties=props)
    t.append(_data(range(20)))
    return ns, t


def test_trino_reads_icefloe_v2_with_position_and_equality_deletes(
    trino: TrinoServer, rest_server: RestServer
) -> None:
    ns, t = _icefloe_table(rest_server, 2)
    t.delete("id < 3")  # position deletes (merge-on-read)
    t.delete_by_keys(pa.table({"id": pa.array([10, 11], pa.int64())}), ["id"])  # equality
    t.append(_data(range(20, 24)))
    assert sorted(t.inspect.delete_files()["content"].to_pylist()) == [1, 2]
    want = _ours(t)
    assert [r[0] for r in want] == [*range(3, 10), *range(12, 24)]
    assert sorted(trino.query(f"SELECT {_COLS} FROM iceberg.{ns}.t")) == want
    assert trino.query(f"SELECT count(*), sum(id), min(ts) = max(ts) FROM iceberg.{ns}.t") == [
        [len(want), sum(r[0] for r in want), False]
    ]
    # a filter on the partition source column: partition pruning, the deletes still apply
    day3 = f"SELECT id FROM iceberg.{ns}.t WHERE ts >= TIMESTAMP '2024-01-03' ORDER BY id"
    assert [r[0] for r in trino.query(day3)] == [r[0] for r in want if r[0] >= 8]
    # Trino's partition of each data file is the day icefloe wrote
    parts = trino.query(f'SELECT CAST(partition.ts_day AS varchar) FROM iceberg.{ns}."t$files"')
    assert {p[0] for p in parts} == {f"2024-01-0{d}" for d in range(1, 7)}


def test_trino_metadata_tables_match_icefloe_inspect(
    trino: TrinoServer, rest_server: RestServer
) -> None:
    ns, t = _icefloe_table(rest_server, 2)
    t.delete("id = 5")
    t.delete_by_keys(pa.table({"id": pa.array([7], pa.int64())}), ["id"])
    snaps = trino.query(f'SELECT snapshot_id, parent_id, operation FROM iceberg.{ns}."t$snapshots"')
    ours = t.inspect.snapshots().select(["snapshot_id", "parent_id", "operation"]).to_pylist()
    assert sorted(snaps, key=str) == sorted(([list(s.values()) for s in ours]), key=str)
    assert len(snaps) == 3
    files = trino.query(f'SELECT content, file_path, record_count FROM iceberg.{ns}."t$files"')
    mine = t.inspect.files().select(["content", "file_path", "record_count"]).to_pylist()
    assert sorted(files) == sorted([list(f.values()) for f in mine])
    assert Counter(f[0] for f in files) == {0: 5, 1: 1, 2: 1}


def test_trino_reads_icefloe_v3_but_not_its_deletion_vectors(
    trino: TrinoServer, rest_server: RestServer
) -> None:
    ns, t = _icefloe_table(rest_server, 3)
    assert sorted(trino.query(f"SELECT {_COLS} FROM iceberg.{ns}.t")) == _ours(t)
    # Trino appends to a v3 table; icefloe reads its rows
    trino.query(f"INSERT INTO iceberg.{ns}.t VALUES (20, 'r20', TIMESTAMP '2024-01-06 00:00:00')")
    t = _catalog(rest_server).load_table(f"{ns}.t")
    assert [r[0] for r in _ours(t)] == list(range(21))
    # Trino 476 writes no deletion vectors, so no row-level change to v3: refused, table intact
    merge = (
        f"MERGE INTO iceberg.{ns}.t t USING (VALUES 1) AS v(id) ON t.id = v.id "
        "WHEN MATCHED THEN DELETE"
    )
    for sql in (
        f"DELETE FROM iceberg.{ns}.t WHERE id = 1",
        f"UPDATE iceberg.{ns}.t SET s = 'x' WHERE id = 1",
        merge,
    ):
        with pytest.raises(TrinoError, match="Must use DVs for position deletes in V3"):
            trino.query(sql)
    before = len(t.snapshots())
    t = _catalog(rest_server).load_table(f"{ns}.t")
    assert len(t.snapshots()) == before and [r[0] for r in _ours(t)] == list(range(21))
    # nor read icefloe's deletion vectors (Puffin files): the query fails, it returns no rows
    t.delete("id < 3")
    assert set(t.inspect.delete_files()["file_format"].to_pylist()) == {"PUFFIN"}
    with pytest.raises(TrinoError, match="Unexpected PUFFIN file format"):
        trino.query(f"SELECT count(*) FROM iceberg.{ns}.t")


def test_trino_creates_tables_only_in_schemas_with_a_location(
    trino: TrinoServer, rest_server: RestServer
) -> None:
    """Without a schema location Trino 476 has the server create the table (its metadata file
    written under the table's location), then refuses that location as not empty."""
    cat = _catalog(rest_server)
    ns = _namespace()
    cat.create_namespace(ns)
    with pytest.raises(TrinoError, match="Cannot create a table on a non-empty location"):
        trino.query(f"CREATE TABLE iceberg.{ns}.t (id bigint)")
    assert cat.table_exists(f"{ns}.t")  # left behind by Trino, empty
    assert cat.load_table(f"{ns}.t").current_snapshot() is None
    # with a location on the namespace (set by icefloe here), the create works
    location = (rest_server.base / "warehouse" / WAREHOUSE / f"{ns}_2").as_uri()
    cat.create_namespace(f"{ns}_2", {"location": location})
    trino.query(f"CREATE TABLE iceberg.{ns}_2.t (id bigint)")
    trino.query(f"INSERT INTO iceberg.{ns}_2.t VALUES 1")
    t = cat.load_table(f"{ns}_2.t")
    assert t.location.startswith(f"{location}/t-")  # Trino's unique table location
    assert t.scan().to_arrow()["id"].to_pylist() == [1]


def test_icefloe_reads_what_trino_wrote(trino: TrinoServer, rest_server: RestServer) -> None:
    ns = _trino_schema(trino, rest_server)
    name = f"iceberg.{ns}.t"
    trino.query(
        f"CREATE TABLE {name} (id bigint, s varchar, ts timestamp(6)) "
        "WITH (format_version = 2, partitioning = ARRAY['day(ts)'])"
    )
    values = ", ".join(
        f"({i}, 'r{i}', TIMESTAMP '{(START + dt.timedelta(hours=6 * i)).strftime(_TS)}')"
        for i in range(12)
    )
    trino.query(f"INSERT INTO {name} VALUES {values}")
    trino.query(f"DELETE FROM {name} WHERE id IN (1, 2)")  # position deletes
    trino.query(f"UPDATE {name} SET s = 'updated' WHERE id = 3")
    trino.query(
        f"MERGE INTO {name} t USING (VALUES (4, 'merged'), (40, 'new')) AS v(id, s) "
        "ON t.id = v.id "
        "WHEN MATCHED THEN UPDATE SET s = v.s "
        "WHEN NOT MATCHED THEN INSERT (id, s, ts) VALUES (v.id, v.s, TIMESTAMP '2024-01-09')"
    )
    trino.query(f"ALTER TABLE {name} ADD COLUMN extra integer")
    trino.query(f"INSERT INTO {name} VALUES (50, 'r50', TIMESTAMP '2024-01-02 00:00:00', 7)")
    theirs = sorted(
        trino.query(f"SELECT id, s, CAST(ts AS varchar), extra FROM {name}"), key=lambda r: r[0]
    )
    t = _catalog(rest_server).load_table(f"{ns}.t")
    assert t.metadata.format_version == 2
    assert [f.name for f in t.schema().fields] == ["id", "s", "ts", "extra"]
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [[r["id"], r["s"], r["ts"].strftime(_TS), r["extra"]] for r in rows] == theirs
    ids = [r["id"] for r in rows]
    assert ids == [0, *range(3, 12), 40, 50]
    by_id = {r["id"]: r for r in rows}
    assert (by_id[3]["s"], by_id[4]["s"], by_id[40]["s"], by_id[50]["extra"]) == (
        "updated",
        "merged",
        "new",
        7,
    )
    # Trino's DELETE, UPDATE and MERGE wrote position delete files, which icefloe applied
    assert set(t.inspect.delete_files()["content"].to_pylist()) == {1}
    # icefloe appends; Trino reads it (the new column filled by icefloe)
    t.append(
        pa.table(
            {
                "id": pa.array([60], pa.int64()),
                "s": ["ours"],
                "ts": pa.array([START], pa.timestamp("us")),
                "extra": pa.array([8], pa.int32()),
            }
        )
    )
    assert trino.query(f"SELECT s, extra FROM {name} WHERE id = 60") == [["ours", 8]]


def test_icefloe_filters_uuid_partitions_trino_summarised_as_signed(
    trino: TrinoServer, rest_server: RestServer
) -> None:
    """Trino 476 (Iceberg Java 1.9) orders uuids as signed numbers in a manifest's partition
    summary: with values on both sides of ``80000000-...`` its lower bound is above its upper
    one as bytes. icefloe keeps such a manifest for a filter either order lets match (as Java
    now does); pruning it by the unsigned order alone read no rows and deleted none."""
    ns = _trino_schema(trino, rest_server)
    name = f"iceberg.{ns}.u"
    trino.query(
        f"CREATE TABLE {name} (id bigint, u uuid) "
        "WITH (format_version = 2, partitioning = ARRAY['u'])"
    )
    uuids = [
        "00000000-0000-0000-0000-000000000001",
        "7fffffff-ffff-ffff-ffff-ffffffffffff",
        "80000000-0000-0000-0000-000000000000",
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
    ]
    values = ", ".join(f"({i}, UUID '{u}')" for i, u in enumerate(uuids))
    trino.query(f"INSERT INTO {name} VALUES {values}")
    t = _catalog(rest_server).load_table(f"{ns}.u")
    for i, u in enumerate(uuids):
        assert t.scan(row_filter=f"u = '{u}'").to_arrow()["id"].to_pylist() == [i]
    got = t.scan(row_filter=f"u > '{uuids[1]}'").to_arrow()["id"].to_pylist()
    assert sorted(got) == [2, 3]
    t.delete(f"u = '{uuids[0]}'")
    assert sorted(r[0] for r in trino.query(f"SELECT id FROM {name}")) == [1, 2, 3]
