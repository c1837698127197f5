"""``icefloe snapshots``, ``files``, ``partitions`` and ``health``: numbers checked against the
table API, ``--json`` against schemas, and the terminal pictures against golden files at a
fixed width with colour off (volatile values masked)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.compute as pc
import pytest

from icefloe.cli import cli
from icefloe.cli.analysis import SKEW_RATIO
from support.cli import assert_golden, check_schema, run, run_process
from support.cli_tables import CliWorld, build_world, moved_to_nowhere


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliWorld]:
    yield build_world(tmp_path_factory.mktemp("cli-pictures") / "world")


TIMELINE_SCHEMA = {
    "type": "object",
    "required": ["table", "lanes", "branches", "tags", "snapshots"],
    "properties": {
        "lanes": {"type": "array", "items": {"type": "string"}},
        "branches": {"type": "object", "additionalProperties": {"type": "integer"}},
        "tags": {"type": "object", "additionalProperties": {"type": "integer"}},
        "snapshots": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "snapshot_id",
                    "parent_id",
                    "timestamp_ms",
                    "operation",
                    "lane",
                    "added_records",
                    "deleted_records",
                    "total_records",
                    "total_size",
                ],
                "properties": {
                    "snapshot_id": {"type": "integer"},
                    "operation": {"enum": ["append", "overwrite", "delete", "replace"]},
                    "added_records": {"type": ["integer", "null"], "minimum": 0},
                    "deleted_records": {"type": ["integer", "null"], "minimum": 0},
                    "total_size": {"type": ["integer", "null"]},
                },
            },
        },
    },
}

FILES_SCHEMA = {
    "type": "object",
    "required": [
        "table",
        "snapshot_id",
        "data_files",
        "delete_files",
        "small_files",
        "small_file_share",
        "small_file_threshold",
        "histogram",
        "files",
    ],
    "properties": {
        "histogram": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["min_size", "max_size", "files"],
                "properties": {
                    "min_size": {"type": "integer"},
                    "max_size": {"type": ["integer", "null"]},
                    "files": {"type": "integer", "minimum": 0},
                },
            },
        },
        "files": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["content", "file_path", "record_count", "file_size_in_bytes"],
                "properties": {"content": {"enum": ["data", "dv", "pos-deletes", "eq-deletes"]}},
            },
        },
    },
}

PARTITIONS_SCHEMA = {
    "type": "object",
    "required": ["table", "partitions", "median_records", "skew", "skewed"],
    "properties": {
        "partitions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "label",
                    "spec_id",
                    "records",
                    "files",
                    "size",
                    "delete_files",
                    "delete_records",
                ],
                "additionalProperties": False,
                "properties": {
                    "label": {"type": "string"},
                    "spec_id": {"type": "integer"},
                    "records": {"type": "integer", "minimum": 0},
                    "files": {"type": "integer", "minimum": 0},
                    "size": {"type": "integer", "minimum": 0},
                    "delete_files": {"type": "integer", "minimum": 0},
                    "delete_records": {"type": "integer", "minimum": 0},
                    "equality_delete_files": {"type": "integer", "minimum": 0},
                    "equality_delete_keys": {"type": "integer", "minimum": 0},
                    "partition": {"type": ["object", "null"]},
                },
            },
        },
        "median_records": {"type": "number"},
        "skew": {"type": ["number", "null"]},
        "skewed": {"type": "boolean"},
    },
}

HEALTH_SCHEMA = {
    "type": "object",
    "required": ["table", "checks"],
    "properties": {
        "checks": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "value", "verdict", "detail", "fix", "measured"],
                "properties": {
                    "verdict": {"enum": ["ok", "info", "warn", "skipped"]},
                    "fix": {"type": ["string", "null"]},
                    "measured": {"type": "object"},
                },
            },
        }
    },
}


def test_snapshots_json_matches_the_table(world: CliWorld) -> None:
    table = world.catalog().load_table("db.events")
    r = run(world, "snapshots", "db.events", "--json")
    assert r.exit_code == 0, r.stderr
    doc = r.json()
    check_schema(doc, TIMELINE_SCHEMA)
    assert [s["snapshot_id"] for s in doc["snapshots"]] == [
        s.snapshot_id for s in sorted(table.snapshots(), key=lambda s: s.timestamp_ms)
    ]
    refs = table.refs()
    assert doc["branches"] == {"main": refs["main"].snapshot_id, "audit": refs["audit"].snapshot_id}
    assert doc["tags"] == {"v1": refs["v1"].snapshot_id}
    assert doc["lanes"] == ["main", "audit"]
    by_id = {s["snapshot_id"]: s for s in doc["snapshots"]}
    assert by_id[refs["audit"].snapshot_id]["lane"] == "audit"
    assert by_id[refs["main"].snapshot_id]["lane"] == "main"
    ops = [s["operation"] for s in doc["snapshots"]]
    assert ops == ["append", "append", "append", "delete", "append", "append"]
    dv = by_id[refs["v1"].snapshot_id]
    assert dv["deleted_records"] == 6 and dv["added_records"] == 0
    for snap in table.snapshots():
        assert by_id[snap.snapshot_id]["total_records"] == snap.summary.get_int("total-records")


def test_snapshots_picture(world: CliWorld) -> None:
    r = run(world, "snapshots", "db.events", width=100)
    assert r.exit_code == 0, r.stderr
    assert "\x1b[" not in r.stdout  # colour off
    assert_golden("snapshots-100", r.stdout)
    narrow = run(world, "snapshots", "db.events", width=72).stdout
    assert all(len(line) <= 72 for line in narrow.splitlines())
    assert_golden("snapshots-72", narrow)


def test_narrow_snapshots_drop_bars_tags_and_size_before_the_time(world: CliWorld) -> None:
    ids = [str(s.snapshot_id) for s in world.catalog().load_table("db.events").snapshots()]
    for width in range(64, 132, 4):
        out = run(world, "snapshots", "db.events", width=width).stdout
        assert all(len(line) <= width for line in out.splitlines())
        header = next(line for line in out.splitlines() if line.startswith("snapshot "))
        columns = header.split()
        # what goes first: bars (headless), tags, size, lane; the time (--as-of) stays
        assert "time" in columns, (width, header)
        if "lane" in columns:
            assert "size" in columns or "tags" not in columns, (width, header)
        if "size" in columns or "tags" in columns:
            assert "lane" in columns, (width, header)
        if "tags" in columns:
            assert "size" in columns, (width, header)
        assert all(i in out for i in ids)  # ids are never cut
    at_80 = run(world, "snapshots", "db.events", width=80).stdout
    header = next(line for line in at_80.splitlines() if line.startswith("snapshot "))
    assert header.split()[:4] == ["snapshot", "time", "(UTC)", "operation"]


def test_colour_marks_operations(world: CliWorld) -> None:
    from click.testing import CliRunner

    r = CliRunner().invoke(
        cli, ["--color", "--width", "100", "snapshots", "db.events"], env=world.env
    )
    assert r.exit_code == 0
    assert "\x1b[1;32m●" in r.stdout  # append: green
    assert "\x1b[1;31m●" in r.stdout  # delete: red


def test_files_numbers_match_the_table(world: CliWorld) -> None:
    table = world.catalog().load_table("db.events")
    data = table.inspect.data_files()
    deletes = table.inspect.delete_files()
    doc = run(world, "files", "db.events", "--json").json()
    check_schema(doc, FILES_SCHEMA)
    assert doc["data_files"] == data.num_rows
    assert doc["delete_files"] == deletes.num_rows
    assert doc["data_records"] == pc.sum(data.column("record_count")).as_py()
    assert doc["delete_records"] == pc.sum(deletes.column("record_count")).as_py() == 6
    assert sum(b["files"] for b in doc["histogram"]) == data.num_rows
    sizes = data.column("file_size_in_bytes").to_pylist()
    assert doc["small_files"] == sum(1 for s in sizes if s < doc["small_file_threshold"])
    assert doc["small_file_threshold"] == 512 * 1024 * 1024 * 3 // 4
    assert len(doc["files"]) == data.num_rows + deletes.num_rows
    assert sorted({f["content"] for f in doc["files"]}) == ["data", "dv"]  # v3 deletes are DVs

    # a target of 1 KiB: files of 768 bytes and more are not small
    doc = run(world, "files", "db.events", "--target-file-size", "1KiB", "--json").json()
    assert doc["small_files"] == sum(1 for s in sizes if s < 768)

    # the filter keeps the files a scan of region 'ap' reads, and their deletes
    doc = run(world, "files", "db.events", "--filter", "region = 'ap'", "--json").json()
    assert {f["partition"]["region"] for f in doc["files"]} == {"ap"}
    assert doc["data_files"] == len(table.scan(row_filter="region = 'ap'").plan_files())

    # an older snapshot: the tag v1, before the last append
    v1 = table.refs()["v1"].snapshot_id
    doc = run(world, "files", "db.events", "--snapshot", str(v1), "--json").json()
    assert doc["snapshot_id"] == v1
    assert doc["data_files"] == table.inspect.data_files(v1).num_rows


def test_files_picture(world: CliWorld) -> None:
    r = run(world, "files", "db.events", width=100)
    assert r.exit_code == 0, r.stderr
    assert_golden("files-100", r.stdout)
    r = run(world, "files", "db.events", "--filter", "region = 'nope' and", width=100)
    assert r.exit_code == 2
    assert r.stderr.startswith("error: ") and len(r.stderr.splitlines()) == 1


def test_partitions_numbers_and_skew(world: CliWorld) -> None:
    table = world.catalog().load_table("db.events")
    parts = table.inspect.partitions().to_pylist()
    doc = run(world, "partitions", "db.events", "--json").json()
    check_schema(doc, PARTITIONS_SCHEMA)
    got = {p["label"]: p for p in doc["partitions"]}
    assert set(got) == {f"region={p['partition']['region']}" for p in parts}
    for p in parts:
        row = got[f"region={p['partition']['region']}"]
        assert row["records"] == p["record_count"]
        assert row["files"] == p["file_count"]
        assert row["size"] == p["total_data_file_size_in_bytes"]
    records = sorted(p["record_count"] for p in parts)
    assert doc["median_records"] == records[1]
    assert doc["skew"] == pytest.approx(records[-1] / records[1], abs=1e-3)
    assert doc["skewed"] is (records[-1] / records[1] >= SKEW_RATIO)
    assert doc["skewed"] is True  # eu holds most rows
    text = run(world, "partitions", "db.events", width=100).stdout
    assert "skewed: region=eu holds" in text
    assert_golden("partitions-100", text)
    # the largest partitions only, and how many more there are (the skew line still counts all)
    top = run(world, "partitions", "db.events", "--limit", "1", width=100).stdout
    assert "region=eu" in top and "region=us" not in top and "region=ap" not in top
    assert f"({len(parts) - 1} more partitions; --limit 0 draws all)" in top
    assert "skewed: region=eu holds" in top
    assert run(world, "partitions", "db.events", "--limit", "0", width=100).stdout == text


def test_health_checks(world: CliWorld) -> None:
    r = run(world, "health", "db.events", "--json")
    assert r.exit_code == 0, r.stderr
    doc = r.json()
    check_schema(doc, HEALTH_SCHEMA)
    checks = {c["name"]: c for c in doc["checks"]}
    assert list(checks) == [
        "small files",
        "delete debt",
        "manifests",
        "snapshots",
        "metadata log",
        "unreferenced files",
        "statistics",
    ]
    assert checks["small files"]["verdict"] == "warn"
    assert checks["small files"]["fix"] == "icefloe compact db.events"
    plan = world.catalog().load_table("db.events").plan_rewrite_data_files()
    assert checks["small files"]["measured"]["compaction_groups"] == plan.groups == 2
    assert checks["small files"]["measured"]["compaction_input_files"] == plan.data_files == 5
    assert checks["delete debt"]["measured"]["deleted_rows"] == 6
    assert checks["delete debt"]["measured"]["dvs"] == 2
    assert checks["delete debt"]["value"] == "6 deleted rows in 2 DVs (4.6% of 130 rows)"
    table = world.catalog().load_table("db.events")
    manifests = table.inspect.manifests()
    assert (
        checks["manifests"]["measured"]["data_manifests"]
        == pc.sum(pc.equal(manifests.column("content"), 0)).as_py()
    )
    # the world's commits are months old: all but the three referenced snapshots expire
    assert checks["snapshots"]["measured"]["expirable"] == 3
    assert checks["snapshots"]["fix"] == "icefloe expire db.events"
    assert checks["metadata log"]["measured"]["previous_metadata_files"] == len(
        table.metadata_log()
    )
    assert checks["unreferenced files"]["verdict"] == "skipped"
    assert checks["statistics"]["measured"] == {
        "table_statistics_snapshot_id": None,
        "table_statistics_behind": None,
        "partition_statistics_snapshot_id": None,
        "partition_statistics_behind": None,
    }
    assert checks["statistics"]["verdict"] == "info"
    assert checks["statistics"]["fix"] == "icefloe compute-stats db.events"
    r = run(world, "--catalog", "clitest", "health", "db.plain", "--json")
    plain = {c["name"]: c for c in r.json()["checks"]}
    assert plain["small files"]["verdict"] == "ok"
    assert plain["delete debt"]["verdict"] == "ok"
    assert plain["snapshots"]["verdict"] == "ok" and plain["snapshots"]["fix"] is None
    r = run(world, "--catalog", "clitest", "health", "db.events", "--json")
    named = {c["name"]: c for c in r.json()["checks"]}
    assert named["snapshots"]["fix"] == "icefloe --catalog clitest expire db.events"
    assert_golden("health-100", run(world, "health", "db.events", width=100).stdout)


def test_health_finds_orphans_and_metadata_log_pressure(tmp_path: Path) -> None:
    world = build_world(tmp_path / "world")
    table = world.catalog().load_table("db.plain")
    orphan = Path(table.location.removeprefix("file://"), "data", "lost.parquet")
    orphan.write_bytes(b"x" * 1000)
    old = time.time() - 10 * 86400
    os.utime(orphan, (old, old))
    table.set_properties({"write.metadata.previous-versions-max": "1"})
    doc = run(world, "health", "db.plain", "--orphans", "--json").json()
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["unreferenced files"]["verdict"] == "warn"
    assert checks["unreferenced files"]["measured"]["files"] == 1
    assert checks["unreferenced files"]["measured"]["bytes"] == 1000
    assert checks["unreferenced files"]["fix"] == "icefloe orphans db.plain"
    assert checks["metadata log"]["verdict"] == "warn"

    # v2 merge-on-read deletes are position delete files; a third of the rows: a warning
    table.refresh().set_properties({"write.delete.mode": "merge-on-read"})
    table.delete("k = 1")
    doc = run(world, "health", "db.plain", "--json").json()
    debt = {c["name"]: c for c in doc["checks"]}["delete debt"]
    assert debt["measured"]["position_delete_files"] == 1 and debt["measured"]["dvs"] == 0
    assert debt["verdict"] == "warn" and debt["fix"] == "icefloe compact db.plain"
    assert debt["value"] == "1 deleted row in 1 position delete file (33.3% of 3 rows)"
    files = run(world, "files", "db.plain", "--json").json()["files"]
    assert sorted(f["content"] for f in files) == ["data", "pos-deletes"]
    assert checks["metadata log"]["fix"] == (
        "icefloe properties set db.plain write.metadata.delete-after-commit.enabled true"
    )


def test_health_does_not_call_a_location_that_does_not_exist_free_of_orphans(
    tmp_path: Path,
) -> None:
    """A table whose ``location`` names a directory that does not exist has its files
    elsewhere: the orphan scan listed nothing there and reported "no orphan files" (OK)."""
    world = build_world(tmp_path / "world")
    moved = moved_to_nowhere(world, tmp_path)
    gone = (tmp_path / "nowhere").as_uri()
    r = run(world, "health", str(moved), "--orphans", "--json")
    assert r.exit_code == 0, r.stderr
    check_schema(r.json(), HEALTH_SCHEMA)
    check = {c["name"]: c for c in r.json()["checks"]}["unreferenced files"]
    assert check["verdict"] == "warn" and check["fix"] is None
    assert check["value"] == f"not checked: the table's location {gone} does not exist"
    assert check["measured"]["location_exists"] is False
    text = run(world, "health", str(moved), "--orphans", width=200).stdout
    assert "no orphan files" not in text
    # the table itself, at its own location, still has none
    doc = run(world, "health", "db.plain", "--orphans", "--json").json()
    check = {c["name"]: c for c in doc["checks"]}["unreferenced files"]
    assert check["verdict"] == "ok" and check["detail"] == "no orphan files"


def test_pictures_in_a_real_process(world: CliWorld) -> None:
    r = run_process(world, "snapshots", "db.events")
    assert r.exit_code == 0, r.stderr
    assert "main" in r.stdout and "audit" in r.stdout and "◆v1" in r.stdout
    assert "\x1b[" not in r.stdout
    r = run_process(world, "health", "db.events", "--json")
    assert r.exit_code == 0, r.stderr
    check_schema(r.json(), HEALTH_SCHEMA)


def test_partition_values_read_as_people_write_them(tmp_path: Path) -> None:
    """Transformed values are shown as dates (as in partition directories), nulls as null."""
    import datetime as dt

    import pyarrow as pa

    from icefloe.partitioning import PartitionField, PartitionSpec
    from icefloe.schema import Schema
    from icefloe.transforms import parse_transform
    from icefloe.types import DateType, NestedField, StringType

    world = build_world(tmp_path / "world")
    cat = world.catalog()
    spec = PartitionSpec(
        PartitionField(1, 1000, parse_transform("month"), "d_month"),
        PartitionField(2, 1001, parse_transform("identity"), "k"),
    )
    t = cat.create_table(
        "db.monthly",
        Schema(NestedField(1, "d", DateType()), NestedField(2, "k", StringType())),
        partition_spec=spec,
    )
    days = [dt.date(2024, 2, 3), dt.date(2024, 2, 9), dt.date(2025, 11, 1)]
    t.append(pa.table({"d": pa.array(days, pa.date32()), "k": ["a", "a", None]}))
    doc = run(world, "partitions", "db.monthly", "--json").json()
    assert {p["label"]: p["records"] for p in doc["partitions"]} == {
        "d_month=2024-02, k=a": 2,
        "d_month=2025-11, k=null": 1,
    }
    files = run(world, "files", "db.monthly", width=120).stdout
    assert "d_month=2024-02, k=a" in files


def test_json_documents_are_strict_with_nan_and_infinite_partition_values(
    tmp_path: Path,
) -> None:
    """Float partition values NaN and infinities are JSON strings (as scan --json writes
    them), so strict parsers read every command's document."""
    import json

    import pyarrow as pa

    world = build_world(tmp_path / "world")
    t = world.catalog().create_table(
        "db.floats", pa.schema([("id", pa.int64()), ("f", pa.float64())])
    )
    with t.update_spec() as spec:
        spec.add_field("f", "identity")
    values = [float("nan"), float("inf"), float("-inf"), 1.5]
    t.append(pa.table({"id": pa.array(range(4), pa.int64()), "f": values}))

    def strict(constant: str) -> object:
        raise AssertionError(f"not JSON: {constant}")

    for command in ("files", "partitions", "snapshots", "describe", "health"):
        r = run(world, command, "db.floats", "--json")
        assert r.exit_code == 0, (command, r.stderr)
        json.loads(r.stdout, parse_constant=strict)
    files = json.loads(run(world, "files", "db.floats", "--json").stdout)["files"]
    assert sorted(str(f["partition"]["f"]) for f in files) == [
        "-Infinity",
        "1.5",
        "Infinity",
        "NaN",
    ]


def test_without_colour_the_marks_name_their_operations(world: CliWorld) -> None:
    """Without colour every snapshot was the same ``●``, and a narrow terminal drops the
    table's operation column: nothing said which snapshot appended and which deleted. The
    marks are then the operations' first letters, and the legend is never cut."""
    ops = {s.operation for s in world.catalog().load_table("db.events").snapshots()}
    assert {"append", "delete"} <= ops
    for width in (40, 100):
        r = run(world, "snapshots", "db.events", width=width)
        assert r.exit_code == 0, r.stderr
        picture = r.stdout.split("\n\n")[1]
        assert "●" not in picture
        for op in ops:
            assert f"{op[0]} {op}" in picture, (width, picture)
        assert all(len(line) <= width for line in picture.splitlines()), picture
