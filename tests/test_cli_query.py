"""``icefloe scan`` and ``icefloe sql``: rows match the table API in every output format, time
travel picks the same snapshot, and DuckDB reads the catalog's tables by name."""

from __future__ import annotations

import io
import json
import re
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from icefloe.cli.errors import EXIT_BAD_INPUT, EXIT_NOT_FOUND, EXIT_OTHER
from support.cli import run, run_process
from support.cli_tables import CLOCK_START, CliWorld, build_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliWorld]:
    yield build_world(tmp_path_factory.mktemp("cli-query") / "world")


def _lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def test_scan_json_lines_match_the_table(world: CliWorld) -> None:
    table = world.catalog().load_table("db.events")
    r = run(world, "scan", "db.events", "--json")
    assert r.exit_code == 0, r.stderr
    rows = _lines(r.stdout)
    expected = table.scan().to_arrow()
    assert sorted(int(x["id"]) for x in rows) == _ids(expected)  # type: ignore[call-overload]
    first = next(x for x in rows if x["id"] == 210)
    assert first == {
        "id": 210,
        "ts": "2026-01-09T18:00:00+00:00",
        "region": "us",
        "amount": 315.0,
        "note": "n210",
    }
    r = run(
        world,
        "scan",
        "db.events",
        "--filter",
        "region = 'ap' and id > 202",
        "--select",
        "id,region",
        "--json",
    )
    rows = _lines(r.stdout)
    assert {tuple(x) for x in rows} == {("id", "region")}
    assert sorted(x["id"] for x in rows) == _ids(  # type: ignore[type-var]
        table.scan(row_filter="region = 'ap' and id > 202").to_arrow()
    )
    assert len(_lines(run(world, "scan", "db.events", "--limit", "7", "--json").stdout)) == 7


def test_scan_time_travel(world: CliWorld) -> None:
    table = world.catalog().load_table("db.events")
    v1 = table.refs()["v1"].snapshot_id
    by_ref = _lines(run(world, "scan", "db.events", "--ref", "v1", "--json").stdout)
    assert sorted(x["id"] for x in by_ref) == _ids(table.scan(ref="v1").to_arrow())  # type: ignore[type-var]
    assert "note" not in by_ref[0]  # the tag reads with its snapshot's schema
    by_id = _lines(run(world, "scan", "db.events", "--snapshot", str(v1), "--json").stdout)
    assert sorted(x["id"] for x in by_id) == sorted(x["id"] for x in by_ref)  # type: ignore[type-var]
    audit = _lines(run(world, "scan", "db.events", "--ref", "audit", "--json").stdout)
    assert {x["id"] for x in audit} - {x["id"] for x in by_ref} == set(range(150, 155))
    # as of 10:30 on the day of the commits: after the second append, before the third
    when = CLOCK_START.replace(hour=10, minute=30).isoformat()
    r = run(world, "scan", "db.events", "--as-of", when, "--json")
    assert r.exit_code == 0, r.stderr
    assert sorted(x["id"] for x in _lines(r.stdout)) == list(range(100))  # type: ignore[type-var]
    r = run(world, "scan", "db.events", "--ref", "v1", "--snapshot", str(v1))
    assert r.exit_code == EXIT_BAD_INPUT
    assert r.stderr.strip() == "error: give at most one of --snapshot, --ref and --as-of"
    r = run(world, "scan", "db.events", "--ref", "nope")
    assert r.exit_code == EXIT_NOT_FOUND, r.stderr


def test_scan_since_reads_the_rows_appended_after_a_snapshot(world: CliWorld) -> None:
    table = world.catalog().load_table("db.events")
    v1 = table.refs()["v1"].snapshot_id
    since = _lines(run(world, "scan", "db.events", "--since", "v1", "--json").stdout)
    expected = table.incremental_append_scan(v1).to_arrow()
    assert sorted(x["id"] for x in since) == _ids(expected)  # type: ignore[type-var]
    assert _ids(expected) == list(range(200, 220))  # the audit branch's append is not on main
    chain = [s.snapshot_id for s in reversed(table.metadata.ancestors_of(v1))]
    r = run(world, "scan", "db.events", "--since", str(chain[0]), "--until", str(v1), "--json")
    assert sorted(x["id"] for x in _lines(r.stdout)) == list(range(80, 110))  # type: ignore[type-var]
    r = run(world, "scan", "db.events", "--until", str(v1))
    assert r.exit_code == EXIT_BAD_INPUT
    assert r.stderr.strip() == "error: --until needs --since or --changes"
    r = run(world, "scan", "db.events", "--since", "v1", "--ref", "v1")
    assert r.exit_code == EXIT_BAD_INPUT
    r = run(world, "scan", "db.events", "--since", str(v1), "--until", str(chain[0]))
    assert r.exit_code == EXIT_BAD_INPUT, r.stderr
    assert "not an ancestor" in r.stderr
    r = run(world, "scan", "db.events", "--since", "12345")
    assert r.exit_code == EXIT_NOT_FOUND, r.stderr
    assert "12345 is not in the table's metadata" in r.stderr


def test_scan_changes_prints_the_changelog(world: CliWorld) -> None:
    """The world's table deletes with deletion vectors, which a changelog cannot express:
    refused; up to the snapshot before the delete, every change equals the API's."""
    table = world.catalog().load_table("db.events")
    v1 = table.refs()["v1"].snapshot_id
    r = run(world, "scan", "db.events", "--changes", "--json")
    assert r.exit_code == EXIT_BAD_INPUT, r.stderr
    assert "delete files" in r.stderr
    before = table.metadata.snapshot(v1).parent_snapshot_id
    expected = table.changelog_scan(to_snapshot_id=before).to_arrow().to_pylist()
    r = run(world, "scan", "db.events", "--changes", "--until", str(before), "--json")
    assert r.exit_code == 0, r.stderr
    rows = _lines(r.stdout)
    key = ("id", "_change_type", "_change_ordinal", "_commit_snapshot_id")
    assert sorted(tuple(x[k] for k in key) for x in rows) == sorted(
        tuple(x[k] for k in key) for x in expected
    )
    assert {x["_change_type"] for x in rows} == {"INSERT"}
    r = run(world, "scan", "db.events", "--changes", "--until", str(before), "--limit", "3")
    assert r.exit_code == 0 and r.stdout.count("INSERT") == 3, r.stdout


def test_scan_formats(world: CliWorld, tmp_path: Path) -> None:
    table = world.catalog().load_table("db.events")
    expected = table.scan(row_filter="region = 'us'").to_arrow().sort_by("id")
    r = run(world, "scan", "db.events", "--filter", "region = 'us'", "--format", "csv")
    got = pcsv.read_csv(io.BytesIO(r.stdout.encode())).sort_by("id")
    assert got.column("id").to_pylist() == expected.column("id").to_pylist()
    assert got.column("amount").to_pylist() == expected.column("amount").to_pylist()
    out = tmp_path / "us.parquet"
    r = run(
        world,
        "scan",
        "db.events",
        "--filter",
        "region = 'us'",
        "--format",
        "parquet",
        "-o",
        str(out),
    )
    assert r.exit_code == 0, r.stderr
    assert pq.read_table(out).sort_by("id").equals(expected)
    r = run(world, "scan", "db.events", "--max-rows", "3", width=100)
    assert r.exit_code == 0
    body = [line for line in r.stdout.splitlines()[2:] if line.strip()]
    assert len(body) == 3
    assert "first 3 drawn" in r.stderr


def test_sql_over_catalog_tables(world: CliWorld) -> None:
    table = world.catalog().load_table("db.events")
    data = table.scan().to_arrow()
    r = run(
        world,
        "sql",
        "select region, count(*) as n, sum(amount) as total from db.events "
        "group by region order by region",
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    got = {x["region"]: (x["n"], x["total"]) for x in _lines(r.stdout)}
    grouped = data.group_by("region").aggregate([("id", "count"), ("amount", "sum")])
    expected = {
        reg: (n, s)
        for reg, n, s in zip(
            grouped.column("region").to_pylist(),
            grouped.column("id_count").to_pylist(),
            grouped.column("amount_sum").to_pylist(),
            strict=True,
        )
    }
    assert got == expected
    # a self-join and a second table: each reference reads the table again
    r = run(
        world,
        "sql",
        "select count(*) as n from db.events a join db.events b on a.id = b.id "
        "where a.id not in (select k from db.plain)",
        "--json",
    )
    assert _lines(r.stdout) == [{"n": data.num_rows}]
    r = run(world, "sql", "select * from db.missing")
    assert r.exit_code == EXIT_NOT_FOUND
    assert r.stderr.strip() == "error: sql: no table or view db.missing in catalog"
    r = run(world, "sql", "select * from missing")  # a one-part name: DuckDB's words
    assert r.exit_code == EXIT_NOT_FOUND and r.stderr.startswith("error: sql: Catalog Error")
    r = run(world, "sql", "selec 1")
    assert r.exit_code == EXIT_BAD_INPUT and r.stderr.startswith("error: sql: Parser Error")


def test_sql_days_and_times_are_utc_whatever_the_machines_zone(world: CliWorld) -> None:
    """DuckDB took the machine's zone: under St. John's (UTC-3:30) ``ts::date`` grouped by
    local days and printed times at -02:30/-03:30, while every other command (and Iceberg's
    day partitions) is UTC."""
    query = (
        "select strftime(ts, '%Y-%m-%d %H:%M:%S') as t, ts::date as d from db.events "
        "where ts is not null order by id"
    )
    utc = run_process(replace(world, env={**world.env, "TZ": "UTC"}), "sql", query, "--json")
    local = run_process(
        replace(world, env={**world.env, "TZ": "America/St_Johns"}), "sql", query, "--json"
    )
    assert utc.exit_code == 0 and local.exit_code == 0, (utc.stderr, local.stderr)
    assert _lines(local.stdout) == _lines(utc.stdout)
    data = world.catalog().load_table("db.events").scan().to_arrow().sort_by("id")
    first = next(v for v in data.column("ts").to_pylist() if v is not None)
    assert _lines(utc.stdout)[0]["t"] == first.strftime("%Y-%m-%d %H:%M:%S")


def test_sql_refuses_a_query_holding_a_byte_that_is_not_text(world: CliWorld) -> None:
    """A Latin-1 byte in a UTF-8 locale reaches Python as a lone surrogate: DuckDB's name
    lookup failed with an untyped TypeError (exit 1); it is bad input, as in ``scan``."""
    r = run(world, "sql", "select * from db.events where region = '\udce4'")
    assert r.exit_code == EXIT_BAD_INPUT, r.stderr
    assert "not text in this locale's encoding (at character 41)" in r.stderr


def test_sql_joins_using_columns(world: CliWorld) -> None:
    """DuckDB's table-name lookup binds the query against stand-in tables and failed on
    ``USING`` and ``NATURAL`` joins; the parsed query names the tables instead."""
    import duckdb

    con = duckdb.connect()
    con.register("events", world.catalog().load_table("db.events").scan().to_arrow())
    for join in ("join {} b using (id)", "natural join {} b"):
        want = con.sql(f"select count(*) from events a {join.format('events')}").fetchone()
        r = run(
            world,
            "sql",
            f"select count(*) as n from db.events a {join.format('db.events')}",
            "--json",
        )
        assert r.exit_code == 0, r.stderr
        assert want is not None and _lines(r.stdout) == [{"n": want[0]}]


def test_sql_with_a_limit_leaves_no_reader_running(world: CliWorld) -> None:
    """A scan DuckDB stops reading part way (a LIMIT) is closed before the command returns:
    left to the interpreter's shutdown, its reader threads and DuckDB's hung or aborted the
    process (some runs in five)."""
    import threading

    t = world.catalog().create_table("db.many", pa.schema([("id", pa.int64())]))
    with t.transaction() as tx:
        for i in range(40):
            tx.append(pa.table({"id": pa.array(range(i * 50_000, (i + 1) * 50_000), pa.int64())}))
    r = run(world, "sql", "select id from db.many limit 2", "--json")
    assert r.exit_code == 0, r.stderr
    assert len(_lines(r.stdout)) == 2
    assert not [t.name for t in threading.enumerate() if t.name.startswith("icefloe-read")]
    for _ in range(3):
        r = run_process(world, "sql", "select id from db.many limit 2", timeout=60)
        assert r.exit_code == 0, r.stderr


def test_sql_over_a_nested_namespace(tmp_path: Path) -> None:
    world = build_world(tmp_path / "world")
    cat = world.catalog()
    cat.create_namespace("lake")
    cat.create_namespace("lake.raw")
    t = cat.create_table("lake.raw.kv", pa.schema([("k", pa.int64()), ("v", pa.string())]))
    t.append(pa.table({"k": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]}))
    r = run(
        world,
        "sql",
        "select count(*) as n, max(a.v) as v from lake.raw.kv a join db.plain b on a.k = b.k",
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    assert _lines(r.stdout) == [{"n": 3, "v": "c"}]


def test_sql_over_geometry_and_geography_tables(tmp_path: Path) -> None:
    """DuckDB refuses to import geography (spherical-edge ``geoarrow.wkb``) columns, which
    failed every query of a table holding one: they reach DuckDB as their WKB bytes, while
    geometry columns stay DuckDB geometries."""
    from icefloe.schema import Schema
    from icefloe.types import GeographyType, GeometryType, LongType, NestedField, StringType

    world = build_world(tmp_path / "world")
    cat = world.catalog()
    point = bytes.fromhex("0101000000000000000000f03f0000000000000040")  # POINT (1 2)
    for name, gtype in (("geom", GeometryType()), ("geog", GeographyType())):
        schema = Schema(
            NestedField(1, "id", LongType(), required=True),
            NestedField(2, "s", StringType()),
            NestedField(3, "g", gtype),
        )
        t = cat.create_table(f"db.{name}", schema, format_version=3)
        t.append(
            pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"], "g": [point, None]})
        )
    for name in ("geom", "geog"):
        r = run(world, "sql", f"select count(*) as n, min(s) as s from db.{name}", "--json")
        assert r.exit_code == 0, r.stderr
        assert _lines(r.stdout) == [{"n": 2, "s": "a"}]
    r = run(world, "sql", "select id, g from db.geog where g is not null", "--json")
    assert r.exit_code == 0, r.stderr
    assert _lines(r.stdout) == [{"id": 1, "g": point.hex()}]


def test_sql_without_duckdb(world: CliWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)
    r = run(world, "sql", "select 1")
    assert r.exit_code == EXIT_OTHER  # not bad input: the command cannot run here
    line = r.stderr.strip()
    assert line.startswith("error: icefloe sql needs DuckDB (")
    assert line.endswith(": pip install 'icefloe[duckdb]'")


def test_scan_and_sql_in_a_real_process(world: CliWorld, tmp_path: Path) -> None:
    out = tmp_path / "eu.parquet"
    r = run_process(
        world,
        "scan",
        "db.events",
        "--filter",
        "region = 'eu'",
        "--format",
        "parquet",
        "-o",
        str(out),
    )
    assert r.exit_code == 0, r.stderr
    table = world.catalog().load_table("db.events")
    assert (
        pc.sum(pq.read_table(out).column("amount")).as_py()
        == pc.sum(table.scan(row_filter="region = 'eu'").to_arrow().column("amount")).as_py()
    )
    r = run_process(world, "sql", "select count(*) as n from db.plain", "--format", "csv")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == ['"n"', "3"]


def test_json_lines_stay_json_and_csv_refuses_nested_columns(world: CliWorld) -> None:
    """NaN and infinities are JSON strings (as Spark's JSON writes them), so strict parsers
    read every line; CSV cannot hold a struct column and says so, as bad input."""
    cat = world.catalog()
    cat.create_namespace("edges")
    t = cat.create_table(
        "edges.floats",
        pa.schema(
            [("id", pa.int64()), ("x", pa.float64()), ("st", pa.struct([("a", pa.int32())]))]
        ),
    )
    t.append(
        pa.table(
            {
                "id": [1, 2, 3, 4],
                "x": [float("nan"), float("inf"), float("-inf"), 1.5],
                "st": [{"a": 1}, None, {"a": 3}, {"a": 4}],
            }
        )
    )

    def strict(c: str) -> object:
        raise AssertionError(f"not JSON: {c}")

    r = run(world, "scan", "edges.floats", "--format", "json")
    assert r.exit_code == 0, r.stderr
    got = sorted(
        (json.loads(line, parse_constant=strict) for line in r.stdout.splitlines()),
        key=lambda row: row["id"],
    )
    assert [row["x"] for row in got] == ["NaN", "Infinity", "-Infinity", 1.5]
    assert [row["st"] for row in got] == [{"a": 1}, None, {"a": 3}, {"a": 4}]
    r = run(world, "scan", "edges.floats", "--format", "csv")
    assert r.exit_code == EXIT_BAD_INPUT
    assert "CSV cannot hold the nested columns st" in r.stderr
    r = run(world, "scan", "edges.floats", "--select", "id,x", "--format", "csv")
    assert r.exit_code == 0, r.stderr
    assert pcsv.read_csv(io.BytesIO(r.stdout.encode())).num_rows == 4
    r = run(world, "scan", "edges.floats", "--json", "--format", "csv")
    assert r.exit_code == EXIT_BAD_INPUT


def test_an_unconfigured_catalog_name_is_refused(world: CliWorld) -> None:
    r = run(world, "--catalog", "no-such-catalog", "list")
    assert r.exit_code == EXIT_BAD_INPUT
    assert "no catalog named 'no-such-catalog' is configured" in r.stderr


def _bytes_table(world: CliWorld) -> None:
    from icefloe.schema import Schema
    from icefloe.types import BinaryType, FixedType, LongType, NestedField, UUIDType

    cat = world.catalog()
    cat.create_namespace("raw")
    t = cat.create_table(
        "raw.bytes",
        Schema(
            NestedField(1, "id", LongType()),
            NestedField(2, "u", UUIDType()),
            NestedField(3, "b", BinaryType()),
            NestedField(4, "fx", FixedType(2)),
        ),
    )
    ids = uuid.UUID(int=1).bytes, uuid.UUID("12345678-9abc-def0-1234-56789abcdef0").bytes
    t.append(
        pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int64()),
                "u": pa.array([ids[0], ids[1], None], pa.binary(16)),
                "b": pa.array([b"ok", b"\x00\xff", None], pa.binary()),
                "fx": pa.array([b"\x00\x01", b"ab", None], pa.binary(2)),
            }
        )
    )


def test_csv_writes_uuids_and_bytes_as_json_does(world: CliWorld, tmp_path: Path) -> None:
    """A uuid in its canonical form, binary and fixed as hex, as --format json writes them;
    never raw bytes, and no refusal after part of the output was written."""
    _bytes_table(world)
    by_json = sorted(_lines(run(world, "scan", "raw.bytes", "--json").stdout), key=str)
    assert by_json[0]["u"] == "00000000-0000-0000-0000-000000000001"
    assert by_json[1]["b"] == "00ff"
    r = run(world, "scan", "raw.bytes", "--format", "csv")
    assert r.exit_code == 0, r.stderr
    assert "\x00" not in r.stdout
    text = pa.string()
    options = pcsv.ConvertOptions(
        column_types={"id": pa.int64(), "u": text, "b": text, "fx": text},
        strings_can_be_null=True,
    )
    got = pcsv.read_csv(io.BytesIO(r.stdout.encode()), convert_options=options)
    assert sorted(got.to_pylist(), key=str) == by_json
    out = tmp_path / "raw.csv"
    r = run(world, "scan", "raw.bytes", "--select", "id,b", "--format", "csv", "-o", str(out))
    assert r.exit_code == 0, r.stderr
    assert out.read_text().splitlines() == ['"id","b"', '1,"6f6b"', '2,"00ff"', "3,"]


def test_a_refused_csv_writes_nothing(world: CliWorld, tmp_path: Path) -> None:
    cat = world.catalog()
    cat.create_namespace("nest")
    t = cat.create_table("nest.t", pa.schema([("id", pa.int64()), ("l", pa.list_(pa.int64()))]))
    t.append(pa.table({"id": pa.array([1], pa.int64()), "l": [[1, 2]]}))
    out = tmp_path / "nested.csv"
    r = run(world, "scan", "nest.t", "--format", "csv", "-o", str(out))
    assert r.exit_code == EXIT_BAD_INPUT
    assert not out.exists()
    r = run(world, "scan", "nest.t", "--format", "csv")
    assert r.exit_code == EXIT_BAD_INPUT and r.stdout == ""


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "parquet"])
def test_an_output_path_that_cannot_be_written_is_bad_input(
    world: CliWorld, tmp_path: Path, fmt: str
) -> None:
    for bad in (tmp_path / "no" / "such" / "dir" / "x.out", tmp_path):
        r = run(world, "scan", "db.plain", "--format", fmt, "-o", str(bad))
        assert r.exit_code == EXIT_BAD_INPUT, (bad, r.stderr)
        assert r.stderr.startswith(f"error: cannot write --output {bad}: "), r.stderr
        assert "Error:" not in r.stderr and "--debug" not in r.stderr


def test_a_table_goes_to_the_output_file(world: CliWorld, tmp_path: Path) -> None:
    out = tmp_path / "events.txt"
    args = ("scan", "db.events", "--select", "id,region", "--max-rows", "5")
    r = run(world, *args, "-o", str(out))
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "" and "first 5 drawn" in r.stderr
    drawn = run(world, *args).stdout
    assert out.read_text() == drawn and len(drawn.splitlines()) == 7


def test_scan_since_takes_tags_named_by_digits(world: CliWorld) -> None:
    """A tag whose name is all digits is the tag, not a snapshot id of that number."""
    table = world.catalog().load_table("db.events")
    v1 = table.refs()["v1"].snapshot_id
    with table.manage_snapshots() as ms:
        ms.create_tag("2024", v1)
    try:
        r = run(world, "scan", "db.events", "--since", "2024", "--json")
        assert r.exit_code == 0, r.stderr
        expected = table.incremental_append_scan(v1).to_arrow()
        assert sorted(x["id"] for x in _lines(r.stdout)) == _ids(expected)  # type: ignore[type-var]
    finally:
        with world.catalog().load_table("db.events").manage_snapshots() as ms:
            ms.remove_tag("2024")


def test_sql_runs_the_duckdb_query_of_views(tmp_path: Path) -> None:
    """A view runs its ``duckdb`` query, over the tables and views that query names (an
    unqualified name in the view's default namespace, its own when it has none); views without
    one are refused with the reason."""
    world = build_world(tmp_path / "world")
    cat = world.catalog()
    events = cat.load_table("db.events").scan().to_arrow()
    big = sorted(events.filter(pc.greater(events["amount"], 300))["id"].to_pylist())
    assert big
    ids = pa.schema([("id", pa.int64())])
    cat.create_view("db.big", "select id from events where amount > 300", ids, dialect="duckdb")
    cat.create_view("db.top", "select max(id) as id from db.big", ids, dialect="DuckDB")
    r = run(world, "sql", "select id from db.big order by id", "--json")
    assert r.exit_code == 0, r.stderr
    assert [x["id"] for x in _lines(r.stdout)] == big
    r = run(world, "sql", "select t.id, (select count(*) from db.big) as n from db.top t", "--json")
    assert r.exit_code == 0, r.stderr
    assert _lines(r.stdout) == [{"id": max(big), "n": len(big)}]

    cat.create_view("db.spark_only", "select id from db.events", ids, dialect="spark")
    r = run(world, "sql", "select * from db.spark_only")
    assert r.exit_code == EXIT_BAD_INPUT
    assert "no 'duckdb' query (it has ['spark'])" in r.stderr
    cat.create_namespace("other")
    cat.create_view(
        "other.elsewhere", "select id from events", ids, dialect="duckdb", default_namespace="db"
    )
    r = run(world, "sql", "select * from other.elsewhere order by id", "--json")
    assert r.exit_code == 0, r.stderr
    assert [x["id"] for x in _lines(r.stdout)] == sorted(events["id"].to_pylist())
    # a table of the view's own namespace does not stand in for one missing in its default
    cat.create_table("other.orders", ids).append(pa.table({"id": [1]}, schema=ids))
    cat.create_view(
        "other.lost", "select id from orders", ids, dialect="duckdb", default_namespace="db"
    )
    r = run(world, "sql", "select (select count(*) from other.lost), (select 1 from other.orders)")
    assert r.exit_code == EXIT_NOT_FOUND
    assert r.stderr.strip() == "error: sql: no table or view db.orders in catalog"
    cat.create_view("db.loop_a", "select id from db.loop_b", ids, dialect="duckdb")
    cat.create_view("db.loop_b", "select id from db.loop_a", ids, dialect="duckdb")
    r = run(world, "sql", "select * from db.loop_a")
    assert r.exit_code == EXIT_BAD_INPUT
    assert "refers to itself (db.loop_a -> db.loop_b -> db.loop_a)" in r.stderr


def test_sql_views_bind_names_as_the_catalog_does(tmp_path: Path) -> None:
    """A view's names mean what they mean in the catalog wherever the view lives: a two-part
    name inside a view of a nested namespace (DuckDB bound it in that namespace's database),
    a CTE of the view's query (taken for a catalog view of that name), and namespaces ``a``
    and ``a.b`` together (DuckDB found schema and database ``a`` ambiguous)."""
    world = build_world(tmp_path / "world")
    cat = world.catalog()
    ids = pa.schema([("id", pa.int64())])
    for ns in (("ns",), ("a",), ("a", "b"), ("a", "ns")):
        if not cat.namespace_exists(ns):
            cat.create_namespace(ns)
    for name, rows in ((("ns", "orders"), [1, 2, 3]), (("a", "top"), [42])):
        cat.create_table(name, ids).append(pa.table({"id": rows}, schema=ids))
    cat.create_table(("a", "b", "t"), ids).append(pa.table({"id": [7]}, schema=ids))
    cat.create_table(("a", "ns", "orders"), ids).append(pa.table({"id": [999]}, schema=ids))
    cat.create_view(("a", "b", "v"), "select id from ns.orders", ids, dialect="duckdb")
    cat.create_view(("a", "v"), "select id from a.b.t", ids, dialect="duckdb")
    cat.create_view("ns.helper", "select id from ns.nope", ids, dialect="spark")
    cte = "with helper as (select 5 as id) select h.id from helper h join ns.orders o using (id)"
    cat.create_view("ns.cte", cte.replace("5", "1"), ids, dialect="duckdb")
    for query, expected in (
        ("select id from a.b.v order by id", [1, 2, 3]),
        ("select * from a.b.v union all select * from a.ns.orders order by id", [1, 2, 3, 999]),
        ("select id from a.v", [7]),
        ("select * from a.top union all select * from a.b.t order by id", [7, 42]),
        ("select id from ns.cte", [1]),
    ):
        r = run(world, "sql", query, "--json")
        assert r.exit_code == 0, (query, r.stderr)
        assert [x["id"] for x in _lines(r.stdout)] == expected, query


def test_dates_python_cannot_hold_are_shown_as_text(tmp_path: Path) -> None:
    """Dates and timestamps after 9999 (or before year 1) are valid Iceberg values that Python's
    datetime cannot hold: scan and sql show them as ISO text instead of failing."""
    world = build_world(tmp_path / "world")
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("d", pa.date32()),
            ("ts", pa.timestamp("us")),
            ("s", pa.struct([("at", pa.timestamp("us", tz="UTC"))])),
        ]
    )
    t = world.catalog().create_table("db.far", schema)
    far = 253402300800000000  # 10000-01-01T00:00:00
    ts = pa.array([far, 0], pa.int64()).cast(pa.timestamp("us"))
    at = pa.array([0, -62167219200000000], pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    t.append(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "d": pa.array([2932897, -719893], pa.int32()).cast(pa.date32()),
                "ts": ts,
                "s": pa.StructArray.from_arrays([at], ["at"]),
            }
        )
    )
    r = run(world, "scan", "db.far", "--json")
    assert r.exit_code == 0, r.stderr
    rows = sorted(_lines(r.stdout), key=lambda x: x["id"])  # type: ignore[arg-type, return-value]
    assert rows[0]["d"] == "10000-01-01"
    assert rows[0]["ts"] == "10000-01-01T00:00:00.000000"
    assert rows[1]["d"] == "-0001-01-01"  # year 0 is 1 BC; -1 is 2 BC
    assert rows[1]["s"] == {"at": "0000-01-01 00:00:00.000000Z"}
    r = run(world, "sql", "select id, ts from db.far where id = 1", "--json")
    assert r.exit_code == 0, r.stderr
    assert _lines(r.stdout) == [{"id": 1, "ts": "10000-01-01T00:00:00.000000"}]
    r = run(world, "scan", "db.far")
    assert r.exit_code == 0, r.stderr
    assert "10000-01-01T00:00:00.000000" in r.stdout
    for command in ("stats", "files", "partitions", "describe", "health"):
        r = run(world, command, "db.far")
        assert r.exit_code == 0, (command, r.stderr)


def test_ctrl_c_stops_a_long_sql_query(tmp_path: Path) -> None:
    """DuckDB computes in C++, where Python never sees Ctrl-C: the query ran on until killed."""
    import os
    import signal
    import subprocess
    import time

    from support.cli import PYTHON_DIR, subprocess_command

    env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR), "NO_COLOR": "1"}
    query = "select count(*) from range(100000000000) t(x) where x % 7 = 3"
    p = subprocess.Popen(
        [*subprocess_command(), "sql", query],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a test run started in the background of a shell without job control ignores SIGINT,
        # and the child would inherit that: it gets Ctrl-C as a terminal would give it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        time.sleep(4)  # started and computing
        assert p.poll() is None
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 130 and err.strip().endswith("interrupted"), err


def test_ctrl_c_before_the_query_begins_still_stops_it(request: pytest.FixtureRequest) -> None:
    """A Ctrl-C that came before DuckDB had begun the query on its worker thread was lost
    (DuckDB interrupts only a running query): the query ran to its end and the exit waited
    for it. The interrupt is repeated until the query returns."""
    import _thread
    import signal
    import threading
    import time

    # Python's own handler, also when the run was started ignoring SIGINT (in the background
    # of a shell without job control), where interrupt_main would do nothing
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))

    from icefloe.cli.sql_names import _interruptible

    class Con:
        running = False
        stopped = threading.Event()

        def interrupt(self) -> None:
            if self.running:
                self.stopped.set()

    con = Con()

    def start() -> None:
        time.sleep(0.5)  # the worker has not begun the query when Ctrl-C comes
        con.running = True
        if con.stopped.wait(8):
            raise RuntimeError("INTERRUPT Error: Interrupted!")

    threading.Timer(0.1, _thread.interrupt_main).start()
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        _interruptible(con, start)
    assert con.stopped.is_set() and time.monotonic() - began < 5


def test_sql_on_names_of_four_parts_says_duckdb_cannot_name_them(world: CliWorld) -> None:
    r = run(world, "sql", "select * from a.b.c.t")
    assert r.exit_code == EXIT_BAD_INPUT
    assert "at most three parts" in r.stderr and "icefloe scan" in r.stderr


def test_nested_values_in_the_table_format_read_as_json(world: CliWorld) -> None:
    """Structs, maps, lists and booleans were Python reprs ({'x': 1, 'y': None}, True) beside
    top-level nulls written as null."""
    query = (
        "select {'x': 1, 'y': null} as s, map(['k'], ['v']) as m, [1, null] as l, true as b, "
        "{'name': 'é'} as u"
    )
    r = run(world, "sql", query, width=160)
    assert r.exit_code == 0, r.stderr
    row = r.stdout.splitlines()[2]
    for cell in ('{"x": 1, "y": null}', '[["k", "v"]]', "[1, null]", "true", '{"name": "é"}'):
        assert cell in row, row


def test_sql_columns_of_the_same_name_keep_their_own_values(world: CliWorld) -> None:
    """A self-join selecting ``a.k, b.k`` showed the last ``k``'s value in both columns of the
    table, and its JSON kept one ``k`` only: columns are read by position, and JSON names
    repeated ones as DuckDB's clients do (``k``, ``k_1``)."""
    query = (
        "select a.k, b.k, b.k as k_1 from (select 1 as k union all select 2) a, "
        "(select 1 as k union all select 2) b order by a.k, b.k"
    )
    r = run(world, "sql", query)
    assert r.exit_code == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines()[2:] if line.strip()]
    assert rows == [["1", "1", "1"], ["1", "2", "2"], ["2", "1", "1"], ["2", "2", "2"]]
    r = run(world, "sql", query, "--json")
    assert r.exit_code == 0, r.stderr
    assert _lines(r.stdout)[1] == {"k": 1, "k_1": 2, "k_1_1": 2}


def test_sql_intervals_read_as_iso_durations(world: CliWorld, tmp_path: Path) -> None:
    """An interval result (``max(ts) - min(ts)``) failed half-way through CSV, left an empty
    Parquet file and showed a raw [months, days, nanoseconds] triple elsewhere."""
    query = (
        "select interval '1 year 2 months 3 days 04:05:06.5' as i, "
        "timestamp '2026-01-09 22:00' - timestamp '2026-01-01' as span, -interval 3 hours as neg"
    )
    r = run(world, "sql", query, "--json")
    assert r.exit_code == 0, r.stderr
    assert _lines(r.stdout) == [{"i": "P1Y2M3DT4H5M6.5S", "span": "P8DT22H", "neg": "PT-3H"}]
    r = run(world, "sql", query, "--format", "csv")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines()[1] == '"P1Y2M3DT4H5M6.5S","P8DT22H","PT-3H"'
    r = run(world, "sql", query)
    assert r.exit_code == 0 and "P8DT22H" in r.stdout, r.stderr
    out = tmp_path / "i.parquet"
    r = run(world, "sql", query, "--format", "parquet", "-o", str(out))
    assert r.exit_code == EXIT_BAD_INPUT and "Parquet cannot hold" in r.stderr
    assert not out.exists()


def test_dates_arrow_cannot_write_are_shown_as_iso_text(tmp_path: Path) -> None:
    """Timestamps and dates too far out for Arrow's text cast showed Arrow's placeholder,
    garbled to ``<valueTout of range: N>``; they are written by proleptic Gregorian
    arithmetic (numpy's datetime64 is the oracle)."""
    import numpy as np

    world = build_world(tmp_path / "world")
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("ts", pa.timestamp("us")),
            ("d", pa.date32()),
            ("l", pa.list_(pa.date32())),
        ]
    )
    t = world.catalog().create_table("db.far", schema)
    micros = [2**63 - 1, -(2**63) + 1]
    days = [2**31 - 1, -(2**31)]
    t.append(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "ts": pa.array(micros, pa.int64()).cast(pa.timestamp("us")),
                "d": pa.array(days, pa.int32()).cast(pa.date32()),
                "l": pa.array([[days[0]], [days[1]]], pa.list_(pa.int32())).cast(
                    pa.list_(pa.date32())
                ),
            }
        )
    )
    want_ts = [str(np.datetime64(m, "us")) for m in micros]
    want_d = [str(np.datetime64(d, "D")) for d in days]
    want_d = [w if w[0] == "-" else w.lstrip("+") for w in want_d]
    for command in (["scan", "db.far"], ["sql", "select * from db.far"]):
        r = run(world, *command, "--json")
        assert r.exit_code == 0, r.stderr
        rows = sorted(_lines(r.stdout), key=lambda x: x["id"])  # type: ignore[arg-type, return-value]
        assert [row["ts"] for row in rows] == want_ts
        assert [row["d"] for row in rows] == want_d
        assert [row["l"] for row in rows] == [[w] for w in want_d]
        r = run(world, *command, width=200)
        assert r.exit_code == 0 and want_ts[0] in r.stdout and "out of range" not in r.stdout


def test_a_nan_literal_in_a_filter_points_to_the_filter_syntax(tmp_path: Path) -> None:
    """``--filter "f = 'NaN'"`` advised ``is_nan/not_nan``, which the filter text does not
    parse; it names the syntax that works, which reads the NaN row."""
    world = build_world(tmp_path / "world")
    t = world.catalog().create_table("db.f", pa.schema([("f", pa.float64())]))
    t.append(pa.table({"f": [1.0, float("nan")]}))
    r = run(world, "scan", "db.f", "--filter", "f = 'NaN'")
    assert r.exit_code == EXIT_BAD_INPUT and "f is nan" not in r.stderr
    advice = re.search(r"in filter text: (x is nan), (x is not nan)", r.stderr)
    assert advice is not None, r.stderr
    for syntax, want in zip(advice.groups(), (["NaN"], [1.0]), strict=True):
        r = run(world, "scan", "db.f", "--filter", syntax.replace("x", "f"), "--json")
        assert r.exit_code == 0, r.stderr
        assert [row["f"] for row in _lines(r.stdout)] == want


def test_sql_over_a_table_missing_a_data_file_fails_as_scan_does(tmp_path: Path) -> None:
    """An error a scan raises while DuckDB reads it reached DuckDB as text, traceback and all,
    and came back as one long 'bad input' line: it is the scan's own error, as scan gives it."""
    world = build_world(tmp_path / "world")
    t = world.catalog().create_table("db.holes", pa.schema([("id", pa.int64())]))
    for start in (0, 10):
        t.append(pa.table({"id": pa.array(range(start, start + 3), pa.int64())}))
    path = sorted(task.data_file.file_path for task in t.scan().plan_files())[0]
    Path(path.removeprefix("file://")).unlink()
    scan = run(world, "scan", "db.holes", "--json")
    assert scan.exit_code == EXIT_NOT_FOUND
    assert scan.stderr.startswith("error: cannot open ") and "file not found" in scan.stderr
    for query, fmt in (
        ("select count(*) as n from db.holes", "json"),
        ("select * from db.holes", "csv"),
        ("select * from db.holes", "table"),
    ):
        r = run(world, "sql", query, "--format", fmt)
        assert r.exit_code == EXIT_NOT_FOUND, r.stderr
        assert r.stderr == scan.stderr
    # a query DuckDB itself refuses stays bad input, in DuckDB's words, without a traceback
    r = run(world, "sql", "select nope from db.holes")
    assert r.exit_code == EXIT_BAD_INPUT
    assert r.stderr.startswith("error: sql: Binder Error") and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
