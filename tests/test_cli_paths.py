"""The ``icefloe`` command on a table given by path: a metadata file or a file-system table
directory opens read-only, without a catalog; the read commands give what they give for the
catalog's table, and every command that would change the table or delete files is refused
with nothing deleted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.cli.errors import EXIT_BAD_INPUT, EXIT_NOT_FOUND
from support.cli import run
from support.cli_tables import CliWorld, build_world
from support.testdata import TESTDATA


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliWorld]:
    yield build_world(tmp_path_factory.mktemp("cli-paths") / "world")


@pytest.fixture
def scratch(tmp_path: Path) -> CliWorld:
    return build_world(tmp_path / "world")


def _local(location: str) -> str:
    return location.removeprefix("file://")


def _json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line]


def _files(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_read_commands_take_a_metadata_file(world: CliWorld) -> None:
    table = world.catalog().load_table("db.events")
    uri = table.metadata_location
    by_name = run(world, "describe", "db.events", "--json").json()
    for where in (uri, _local(uri)):
        r = run(world, "describe", where, "--json")
        assert r.exit_code == 0, r.stderr
        doc = r.json()
        assert doc["identifier"] == where
        assert doc["metadata_location"] == where
        for key in ("uuid", "schema", "current_snapshot", "refs", "row_lineage", "properties"):
            assert doc[key] == by_name[key], key
        for command in ("snapshots", "files", "partitions", "schema", "spec"):
            ours = run(world, command, where, "--json")
            assert ours.exit_code == 0, (command, ours.stderr)
            theirs = run(world, command, "db.events", "--json").json()
            if isinstance(theirs, dict) and "table" in theirs:
                theirs["table"] = where
            assert ours.json() == theirs, command
    rows = _json_lines(run(world, "scan", _local(uri), "--json").stdout)
    assert sorted(r["id"] for r in rows) == sorted(table.scan().to_arrow().column("id").to_pylist())
    health = run(world, "health", _local(uri))
    assert health.exit_code == 0, health.stderr
    assert "small files" in health.stdout


def test_read_commands_take_a_metadata_file_under_any_name(tmp_path: Path) -> None:
    """Iceberg Java's golden metadata files are named ``*.json``: they were refused as
    neither a metadata file nor a table directory (exit 3)."""
    minimal = TESTDATA / "iceberg-java" / "metadata" / "TableMetadataV2ValidMinimal.json"
    world = build_world(tmp_path / "world")
    r = run(world, "describe", str(minimal), "--json")
    assert r.exit_code == 0, r.stderr
    assert r.json()["metadata_location"] == str(minimal)
    assert r.json()["uuid"] == "9c12d441-03fe-4693-9a96-a0705ddf69c1"
    (tmp_path / "notes.json").write_text('{"hello": "world"}')
    r = run(world, "schema", str(tmp_path / "notes.json"))
    assert r.exit_code == EXIT_BAD_INPUT
    assert "notes.json is not a table metadata file" in r.stderr


def test_a_table_directory_needs_no_catalog(tmp_path: Path) -> None:
    cat = HadoopCatalog("h", warehouse=str(tmp_path / "wh"))
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
    t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    t.append(pa.table({"id": pa.array([4], pa.int64())}))
    # No configuration at all: a path never opens a catalog.
    nowhere = CliWorld(tmp_path, {"ICEFLOE_CONFIG": str(tmp_path / "absent.yaml")})
    r = run(nowhere, "describe", str(tmp_path / "wh" / "db" / "t"), "--json")
    assert r.exit_code == 0, r.stderr
    assert r.json()["metadata_location"].endswith("v3.metadata.json")
    assert r.json()["current_snapshot"]["snapshot_id"] == t.current_snapshot().snapshot_id
    scanned = _json_lines(run(nowhere, "scan", str(tmp_path / "wh" / "db" / "t"), "--json").stdout)
    assert sorted(row["id"] for row in scanned) == [1, 2, 3, 4]
    missing = run(nowhere, "describe", str(tmp_path / "wh" / "db" / "nope"))
    assert missing.exit_code == EXIT_NOT_FOUND
    assert "neither a metadata file nor a table directory" in missing.stderr


def test_changes_through_a_path_are_refused_and_delete_nothing(scratch: CliWorld) -> None:
    table = scratch.catalog().load_table("db.events")
    # An older metadata file: a newer version's files are what it does not reference.
    older = _local(table.metadata.metadata_log[-1].metadata_file)
    before = _files(scratch.root)
    for args in (
        ("orphans", older, "--older-than", "0s", "--allow-recent"),
        ("compact", older),
        ("expire", older, "--older-than", "0s", "--retain-last", "1"),
        ("properties", "set", older, "k=v"),
    ):
        r = run(scratch, *args)
        assert r.exit_code == EXIT_BAD_INPUT, (args, r.stdout, r.stderr)
        assert "read-only" in r.stderr, args
        assert "Traceback" not in r.stderr
    assert _files(scratch.root) == before
    listed = run(scratch, "orphans", older, "--older-than", "0s", "--dry-run", "--json")
    assert listed.exit_code == 0, listed.stderr
    # Deleting what it lists would have removed the table's current metadata file.
    assert table.metadata_location in listed.json()["orphan_files"]
    assert _files(scratch.root) == before
    assert scratch.catalog().load_table("db.events").scan().to_arrow().num_rows > 0


def test_health_of_a_path_suggests_only_what_works_on_it(world: CliWorld) -> None:
    """Changes through a path are refused, so health suggests none: it says the table must be
    opened through its catalog for them, and keeps the read-only orphan scan."""
    path = _local(world.catalog().load_table("db.events").metadata_location)
    by_name = {c["name"]: c for c in run(world, "health", "db.events", "--json").json()["checks"]}
    r = run(world, "health", path, "--json")
    assert r.exit_code == 0, r.stderr
    checks = {c["name"]: c for c in r.json()["checks"]}
    assert [c["verdict"] for c in checks.values()] == [c["verdict"] for c in by_name.values()]
    changes = [n for n, c in by_name.items() if c["fix"] and " health " not in c["fix"]]
    assert {"small files", "manifests", "snapshots", "statistics"} <= set(changes)
    for name in changes:
        assert checks[name]["fix"] is None, name
        assert "open the table through its catalog" in checks[name]["detail"], name
    assert checks["small files"]["detail"].endswith(": icefloe compact TABLE")
    rescan = checks["unreferenced files"]["fix"]
    assert rescan == f"icefloe health {path} --orphans"
    again = run(world, *rescan.split()[1:], "--json")
    assert again.exit_code == 0, again.stderr
    assert all(c["fix"] is None for c in again.json()["checks"])
    text = run(world, "health", path, width=200).stdout
    fixes = [line.split("fix: ", 1)[1] for line in text.splitlines() if "fix: " in line]
    assert fixes == [rescan]
