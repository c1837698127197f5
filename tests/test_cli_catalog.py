"""The ``icefloe`` catalog and table-metadata commands, and how errors leave the command:
numbers and JSON checked against the table API, exit codes per kind of error."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from icefloe.cli.errors import EXIT_BAD_INPUT, EXIT_CONFLICT, EXIT_NOT_FOUND
from support.cli import check_schema, run, run_process
from support.cli_tables import CliWorld, build_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliWorld]:
    yield build_world(tmp_path_factory.mktemp("cli") / "world")


@pytest.fixture
def scratch(tmp_path: Path) -> CliWorld:
    """A world of its own for tests that change things."""
    return build_world(tmp_path / "world")


LIST_SCHEMA = {
    "type": "object",
    "required": ["namespaces", "tables", "views"],
    "additionalProperties": False,
    "properties": {
        "namespaces": {"type": "array", "items": {"type": "string"}},
        "tables": {"type": "array", "items": {"type": "string"}},
        "views": {"type": "array", "items": {"type": "string"}},
    },
}

SNAPSHOT_SCHEMA = {
    "type": ["object", "null"],
    "required": ["snapshot_id", "timestamp_ms", "operation", "summary", "sequence_number"],
    "properties": {
        "snapshot_id": {"type": "integer"},
        "parent_snapshot_id": {"type": ["integer", "null"]},
        "timestamp_ms": {"type": "integer"},
        "committed_at": {"type": "string"},
        "operation": {"enum": ["append", "overwrite", "delete", "replace"]},
        "summary": {"type": "object", "additionalProperties": {"type": "string"}},
        "sequence_number": {"type": "integer"},
        "first_row_id": {"type": ["integer", "null"]},
        "added_rows": {"type": ["integer", "null"]},
    },
}

DESCRIBE_SCHEMA = {
    "type": "object",
    "required": [
        "identifier",
        "format_version",
        "uuid",
        "location",
        "metadata_location",
        "schema",
        "partition_spec",
        "sort_order",
        "properties",
        "current_snapshot",
        "refs",
        "row_lineage",
    ],
    "properties": {
        "identifier": {"type": "string"},
        "format_version": {"enum": [1, 2, 3]},
        "uuid": {"type": "string", "format": "uuid"},
        "schema": {"type": "object", "required": ["type", "fields", "schema-id"]},
        "partition_spec": {"type": "object", "required": ["spec-id", "fields"]},
        "sort_order": {"type": "object", "required": ["order-id", "fields"]},
        "properties": {"type": "object", "additionalProperties": {"type": "string"}},
        "current_snapshot": SNAPSHOT_SCHEMA,
        "refs": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["snapshot-id", "type"],
                "properties": {"type": {"enum": ["branch", "tag"]}},
            },
        },
        "row_lineage": {
            "type": "object",
            "required": ["enabled", "next_row_id"],
            "properties": {
                "enabled": {"type": "boolean"},
                "next_row_id": {"type": ["integer", "null"]},
            },
        },
    },
}


def test_list_shows_namespaces_and_tables(world: CliWorld) -> None:
    r = run(world, "list", "--json")
    assert r.exit_code == 0, r.stderr
    doc = r.json()
    check_schema(doc, LIST_SCHEMA)
    assert doc == {"namespaces": ["db"], "tables": ["db.events", "db.plain"], "views": []}
    text = run(world, "list").stdout
    assert "events" in text and "plain" in text and "db" in text
    assert run(world, "list", "db", "--json").json()["tables"] == ["db.events", "db.plain"]


def test_describe_matches_the_table_api(world: CliWorld) -> None:
    table = world.catalog().load_table("db.events")
    r = run(world, "describe", "db.events", "--json")
    assert r.exit_code == 0, r.stderr
    doc = r.json()
    check_schema(doc, DESCRIBE_SCHEMA)
    snap = table.current_snapshot()
    assert doc["uuid"] == table.metadata.table_uuid
    assert doc["format_version"] == 3
    assert doc["current_snapshot"]["snapshot_id"] == snap.snapshot_id
    assert doc["current_snapshot"]["summary"] == snap.summary.to_json()
    assert doc["row_lineage"] == {"enabled": True, "next_row_id": table.metadata.next_row_id}
    assert doc["schema"] == table.schema().to_json()
    assert set(doc["refs"]) == {"main", "audit", "v1"}
    assert doc["refs"]["v1"]["type"] == "tag"

    text = run(world, "describe", "db.events").stdout
    for needle in (
        "format version  3",
        "region = identity(region)",
        "identity(id) asc nulls-first",
        f"next row id {table.metadata.next_row_id}",
        "1 id: long required  — event id",
        "5 note: string optional  — free text",
        f"current snapshot {snap.snapshot_id} · append",
        f"records           {snap.summary.get('total-records')}",
        # a new table stores zstd as its Parquet codec, as Java's create does
        "write.delete.mode                merge-on-read\n",
        "write.parquet.compression-codec  zstd\n",
    ):
        assert needle in text, needle


def test_schema_spec_location_uuid(world: CliWorld) -> None:
    table = world.catalog().load_table("db.events")
    assert run(world, "schema", "db.events", "--json").json() == table.schema().to_json()
    tree = run(world, "schema", "db.events").stdout
    assert tree.index("id: long") < tree.index("note: string")
    assert run(world, "spec", "db.events", "--json").json() == table.spec().to_json()
    assert "region = identity(region)" in run(world, "spec", "db.events").stdout
    assert "unpartitioned" in run(world, "spec", "db.plain").stdout
    assert run(world, "location", "db.events").stdout.strip() == table.location
    assert run(world, "uuid", "db.events").stdout.strip() == table.metadata.table_uuid
    assert run(world, "uuid", "db.events", "--json").json() == {"uuid": table.metadata.table_uuid}


def test_properties_get_set_remove(scratch: CliWorld) -> None:
    r = run(scratch, "properties", "set", "db.plain", "owner", "me")
    assert r.exit_code == 0, r.stderr
    r = run(scratch, "properties", "set", "db.plain", "a=1", "b=2")
    assert r.exit_code == 0, r.stderr
    zstd = {"write.parquet.compression-codec": "zstd"}  # stored by the create
    assert scratch.catalog().load_table("db.plain").properties == {
        **zstd,
        "owner": "me",
        "a": "1",
        "b": "2",
    }
    assert run(scratch, "properties", "get", "db.plain", "owner").stdout == "me\n"
    assert run(scratch, "properties", "get", "db.plain", "--json").json() == {
        "a": "1",
        "b": "2",
        "owner": "me",
        **zstd,
    }
    assert run(scratch, "properties", "set", "db.plain", "c", "3", "d", "4").exit_code == 0
    assert scratch.catalog().load_table("db.plain").properties["d"] == "4"
    r = run(scratch, "properties", "set", "db.plain", "c", "3", "d")
    assert r.exit_code == EXIT_BAD_INPUT
    assert r.stderr.strip() == "error: property 'd' has no value (KEY VALUE or KEY=VALUE)"
    assert run(scratch, "properties", "remove", "db.plain", "a", "b", "c", "d").exit_code == 0
    assert scratch.catalog().load_table("db.plain").properties == {**zstd, "owner": "me"}
    r = run(scratch, "properties", "get", "db.plain", "missing")
    assert r.exit_code == EXIT_NOT_FOUND
    assert r.stderr.strip() == "error: table db.plain has no property 'missing'"


#: Credential-bearing properties, and what each command shows of them.
SECRETS = {
    "s3.secret-access-key": "S3-SECRET-VALUE",
    "adls.sas-token": "SAS-SECRET-VALUE",
    "token": "TOKEN-SECRET-VALUE",
    "password": "PASSWORD-SECRET-VALUE",
    "rest.uri": "https://ann:URL-SECRET-VALUE@host/x",
}
SHOWN = {k: "***" for k in SECRETS} | {"rest.uri": "https://ann:***@host/x"}


def _no_secret(text: str) -> None:
    assert "SECRET-VALUE" not in text, text


def test_credential_properties_read_as_stars(scratch: CliWorld) -> None:
    import pyarrow as pa

    cat = scratch.catalog()
    cat.create_namespace("vault", dict(SECRETS))
    cat.load_table("db.plain").set_properties(SECRETS)
    schema = pa.schema([("x", pa.int64())])
    cat.create_view("db.v", "SELECT 1", schema, dialect="spark", properties=SECRETS)
    for args in (
        ["describe", "db.plain"],
        ["properties", "get", "db.plain"],
        ["describe", "vault"],
        ["view", "db.v"],
        *(["properties", "get", "db.plain", k] for k in SECRETS),
    ):
        r = run(scratch, *args)
        assert r.exit_code == 0, r.stderr
        _no_secret(r.stdout + r.stderr)
    text = run(scratch, "describe", "db.plain").stdout
    assert re.search(r"\ns3\.secret-access-key +\*\*\*\n", text)
    assert re.search(r"\nrest\.uri +https://ann:\*\*\*@host/x\n", text)
    assert "password=***" in run(scratch, "properties", "get", "db.plain").stdout
    assert run(scratch, "properties", "get", "db.plain", "token").stdout == "***\n"
    assert run(scratch, "properties", "get", "db.plain", "token", "--json").json() == {
        "token": "***"
    }
    assert re.search(r"\npassword +\*\*\*\n", run(scratch, "describe", "vault").stdout)
    assert "password = ***" in run(scratch, "view", "db.v").stdout
    for args in (
        ["describe", "db.plain", "--json"],
        ["properties", "get", "db.plain", "--json"],
        ["describe", "vault", "--json"],
        ["view", "db.v", "--json"],
    ):
        r = run(scratch, *args)
        assert r.exit_code == 0, r.stderr
        _no_secret(r.stdout)
        props = r.json().get("properties", r.json())
        assert {k: props[k] for k in SECRETS} == SHOWN
    r = run(scratch, "properties", "set", "db.plain", "s3.secret-access-key", "NEW-SECRET-VALUE")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "set s3.secret-access-key=***\n"
    r = run(scratch, "properties", "set", "db.plain", "rest.uri=https://a:NEW-SECRET-VALUE@h")
    assert r.stdout == "set rest.uri=https://a:***@h\n"
    # settings whose names only mention a key are shown: a column's, a key id, `keys`
    plain = {
        "write.parquet.bloom-filter-enabled.column.user_key": "true",
        "encryption.key-id": "kid-1",
        "write.upsert.keys": "id",
    }
    cat.load_table("db.plain").set_properties(plain)
    shown = run(scratch, "properties", "get", "db.plain", "--json").json()
    assert {k: shown[k] for k in plain} == plain
    # the table API returns the values themselves
    props = cat.load_table("db.plain").properties
    assert props["s3.secret-access-key"] == "NEW-SECRET-VALUE"
    assert props["rest.uri"] == "https://a:NEW-SECRET-VALUE@h"
    assert props["token"] == "TOKEN-SECRET-VALUE"


def test_describe_a_namespace(world: CliWorld) -> None:
    doc = run(world, "describe", "db", "--json").json()
    assert doc == {
        "namespace": "db",
        "properties": {"owner": "data-team"},
        "tables": ["db.events", "db.plain"],
    }
    text = run(world, "describe", "db").stdout
    assert "namespace db · 2 tables" in text and "owner  data-team" in text
    assert "  db.events\n  db.plain\n" in text  # the guide says it lists them


def test_create_rename_drop(scratch: CliWorld) -> None:
    assert run(scratch, "create", "namespace", "tmp", "-p", "k=v").exit_code == 0
    cat = scratch.catalog()
    assert cat.load_namespace_properties("tmp")["k"] == "v"
    assert run(scratch, "rename", "db.plain", "tmp.moved").exit_code == 0
    assert cat.table_exists("tmp.moved") and not cat.table_exists("db.plain")
    r = run(scratch, "drop", "namespace", "tmp")
    assert r.exit_code == EXIT_CONFLICT and r.stderr.startswith("error: ")
    location = cat.load_table("tmp.moved").location.removeprefix("file://")
    assert run(scratch, "drop", "table", "tmp.moved", "--purge").exit_code == 0
    assert not Path(location, "metadata").exists()
    assert run(scratch, "drop", "namespace", "tmp").exit_code == 0
    assert not cat.namespace_exists("tmp")


def test_views_are_listed_shown_and_dropped(scratch: CliWorld) -> None:
    import pyarrow as pa

    cat = scratch.catalog()
    query = "SELECT id\nFROM events\nWHERE id > 1"
    cat.create_view("db.recent", query, pa.schema([("id", pa.int64())]), dialect="spark")
    assert run(scratch, "list", "--json").json()["views"] == ["db.recent"]
    assert "recent (view)" in run(scratch, "list").stdout
    shown = run(scratch, "view", "db.recent")
    assert shown.exit_code == 0 and "  FROM events" in shown.stdout and "id long" in shown.stdout
    doc = run(scratch, "view", "db.recent", "--json").json()
    assert doc["queries"] == {"spark": query} and doc["schema"] == [["id", "long"]]
    assert doc["versions"][0]["summary"]["engine-name"] == "icefloe"
    assert doc["default_namespace"] == ["db"]
    assert run(scratch, "drop", "view", "db.recent").exit_code == 0
    assert not cat.view_exists("db.recent")
    r = run(scratch, "view", "db.recent")
    assert r.exit_code == EXIT_NOT_FOUND and r.stderr.startswith("error: view 'db.recent'")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["describe", "db.nope"], EXIT_NOT_FOUND, "error: table 'db.nope' does not exist"),
        (["list", "nope"], EXIT_NOT_FOUND, "error: namespace 'nope' does not exist"),
        (["create", "namespace", "db"], EXIT_CONFLICT, "error: namespace 'db' already exists"),
        (
            ["create", "namespace", "x", "-p", "novalue"],
            EXIT_BAD_INPUT,
            "error: a property must be KEY=VALUE, got 'novalue'",
        ),
        (["describe", "nope"], EXIT_NOT_FOUND, "error: no table or namespace 'nope'"),
        (
            ["files", "db.events", "--snapshot", "1"],
            EXIT_NOT_FOUND,
            "error: table db.events has no snapshot 1",
        ),
        (
            ["partitions", "db.events", "--snapshot", "1"],
            EXIT_NOT_FOUND,
            "error: table db.events has no snapshot 1",
        ),
        (
            ["scan", "db.events", "--filter", "nope = 1"],
            EXIT_BAD_INPUT,
            "error: cannot find column 'nope' in the schema",
        ),
        (
            ["compact", "db.events", "--target-file-size", "0"],
            EXIT_BAD_INPUT,
            "error: not a size: '0' (try 128MiB or 134217728)",
        ),
        (["describe"], EXIT_BAD_INPUT, None),
    ],
)
def test_errors_are_one_line_with_a_code_per_kind(
    world: CliWorld, args: list[str], code: int, message: str | None
) -> None:
    r = run(world, *args)
    assert r.exit_code == code, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    if message is not None:
        assert r.stderr.splitlines() == [message]


def test_a_real_process_reports_errors_and_tracebacks_only_with_debug(world: CliWorld) -> None:
    r = run_process(world, "describe", "db.nope")
    assert r.exit_code == EXIT_NOT_FOUND
    assert r.stderr.splitlines() == ["error: table 'db.nope' does not exist"]
    r = run_process(world, "--debug", "describe", "db.nope")
    assert r.exit_code == EXIT_NOT_FOUND
    assert "Traceback (most recent call last)" in r.stderr
    assert "NoSuchTableError" in r.stderr
    assert r.stderr.rstrip().endswith("error: table 'db.nope' does not exist")


def test_a_real_process_describes_the_table(world: CliWorld) -> None:
    table = world.catalog().load_table("db.events")
    r = run_process(world, "describe", "db.events", "--json")
    assert r.exit_code == 0, r.stderr
    check_schema(r.json(), DESCRIBE_SCHEMA)
    assert r.json()["current_snapshot"]["snapshot_id"] == table.current_snapshot().snapshot_id
    r = run_process(world, "list")
    assert r.exit_code == 0 and "events" in r.stdout
    # the package runs as the command too, as the CLI's own module does
    for module in ("icefloe", "icefloe.cli"):
        r = run_process(world, "list", command=[sys.executable, "-m", module])
        assert r.exit_code == 0 and "events" in r.stdout, (module, r.stderr)
