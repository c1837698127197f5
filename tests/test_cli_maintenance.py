"""``icefloe expire``, ``compact``, ``orphans`` and ``rewrite-manifests``: dry runs change
nothing and announce what the real run then does, numbers match the table API, data is
unchanged, progress is drawn on standard error."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow.compute as pc
import pytest

from icefloe.cli.errors import EXIT_BAD_INPUT, EXIT_NOT_FOUND
from icefloe.cli.maintenance_cmds import parse_age
from icefloe.exceptions import ValidationError
from support.cli import check_schema, run, run_process
from support.cli_tables import CliWorld, build_world, moved_to_nowhere


@pytest.fixture
def world(tmp_path: Path) -> CliWorld:
    return build_world(tmp_path / "world")


def _rows(world: CliWorld, name: str = "db.events") -> list[tuple[object, ...]]:
    t = world.catalog().load_table(name)
    a = t.scan().to_arrow()
    a = a.sort_by(a.column_names[0])
    return list(zip(*(a.column(c).to_pylist() for c in a.column_names), strict=True))


def _files_on_disk(world: CliWorld) -> set[str]:
    return {str(p) for p in (world.root / "warehouse").rglob("*") if p.is_file()}


EXPIRE_SCHEMA = {
    "type": "object",
    "required": ["table", "dry_run", "snapshots", "refs", "manifest_lists", "data_files"],
    "properties": {
        "snapshots": {"type": "array", "items": {"type": "integer"}},
        "manifest_lists": {"type": ["integer", "null"], "minimum": 0},
        "dry_run": {"type": "boolean"},
    },
}


def test_expire_dry_run_then_real(world: CliWorld) -> None:
    table = world.catalog().load_table("db.events")
    oracle = table.expire_snapshots(dry_run=True)
    disk = _files_on_disk(world)
    r = run(world, "expire", "db.events", "--dry-run", "--json")
    assert r.exit_code == 0, r.stderr
    doc = r.json()
    check_schema(doc, EXPIRE_SCHEMA)
    assert sorted(doc["snapshots"]) == sorted(oracle.snapshot_ids) and len(doc["snapshots"]) == 3
    assert doc["manifest_lists"] == len(oracle.manifest_lists)
    assert _files_on_disk(world) == disk  # nothing deleted
    assert len(world.catalog().load_table("db.events").snapshots()) == 6

    rows = _rows(world)
    r = run(world, "expire", "db.events")
    assert r.exit_code == 0, r.stderr
    assert "expired 3 snapshots" in r.stdout
    assert "deleting files" not in r.stderr  # no progress bar into a file or pipe
    after = world.catalog().load_table("db.events")
    assert {s.snapshot_id for s in after.snapshots()}.isdisjoint(oracle.snapshot_ids)
    for path in oracle.manifest_lists:
        assert not os.path.exists(path.removeprefix("file://"))
    assert _rows(world) == rows


def test_expire_names_files_the_store_would_not_delete(
    world: CliWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The expiry is committed before its files go: the ones the store refuses are counted
    (and listed in --json), the command still succeeds."""
    from icefloe.exceptions import FileIOError
    from icefloe.io import FileIO

    real = FileIO.delete_if_exists

    def refusing(self: FileIO, location: str) -> bool:
        if "/snap-" in location:
            raise FileIOError(f"cannot delete {location}: refused")
        return real(self, location)

    monkeypatch.setattr(FileIO, "delete_if_exists", refusing)
    r = run(world, "expire", "db.events", "--json")
    assert r.exit_code == 0, r.stderr
    doc = r.json()
    assert len(doc["files_not_deleted"]) == doc["manifest_lists"] == 3
    assert len(world.catalog().load_table("db.events").snapshots()) == 3


def test_expire_keep_files_counts_nothing_it_did_not_look_for(world: CliWorld) -> None:
    """--keep-files reads no manifest: the counts of files are unknown (null in --json, and
    the summary says the files are left in place), never a misleading zero."""
    disk = _files_on_disk(world)
    rows = _rows(world)
    r = run(world, "expire", "db.events", "--keep-files")
    assert r.exit_code == 0, r.stderr
    assert "expired 3 snapshots" in r.stdout and "left in place" in r.stdout
    assert "deleted" not in r.stdout
    assert disk <= _files_on_disk(world)  # nothing deleted (a new metadata file added)
    assert len(world.catalog().load_table("db.events").snapshots()) == 3
    assert _rows(world) == rows
    r = run(world, "expire", "db.events", "--keep-files", "--dry-run", "--json")
    doc = r.json()
    check_schema(doc, EXPIRE_SCHEMA)
    assert doc["manifest_lists"] is None and doc["data_files"] is None


def test_expire_arguments(world: CliWorld) -> None:
    table = world.catalog().load_table("db.events")
    r = run(
        world, "expire", "db.events", "--older-than", "2026-03-01T10:30:00", "--dry-run", "--json"
    )
    expected = table.expire_snapshots(older_than_ms=parse_age("2026-03-01T10:30:00"), dry_run=True)
    assert sorted(r.json()["snapshots"]) == sorted(expected.snapshot_ids)
    assert len(expected.snapshot_ids) == 2  # the appends at 09:00 and 10:00
    main = table.refs()["main"].snapshot_id
    r = run(world, "expire", "db.events", "--snapshot-id", str(main))
    assert r.exit_code == 2
    assert r.stderr.strip() == f"error: cannot expire snapshot {main}: still referenced by main"
    r = run(world, "expire", "db.events", "--older-than", "yesterday")
    assert r.exit_code == 2 and "not an age or a time: 'yesterday'" in r.stderr


def test_expire_honours_the_retention_properties(world: CliWorld) -> None:
    r = run(
        world,
        "properties",
        "set",
        "db.events",
        "history.expire.max-snapshot-age-ms",
        str(3650 * 86_400_000),
    )
    assert r.exit_code == 0, r.stderr
    assert run(world, "expire", "db.events", "--dry-run", "--json").json()["snapshots"] == []
    r = run(
        world,
        "properties",
        "set",
        "db.events",
        "history.expire.max-snapshot-age-ms=1000",
        "history.expire.min-snapshots-to-keep=4",
    )
    assert r.exit_code == 0, r.stderr
    # main keeps its newest four (22:00, 17:00, 11:00, 10:00): only the first append goes
    table = world.catalog().load_table("db.events")
    first = min(table.snapshots(), key=lambda s: s.timestamp_ms).snapshot_id
    doc = run(world, "expire", "db.events", "--dry-run", "--json").json()
    assert doc["snapshots"] == [first]


def test_parse_age() -> None:
    now = 10_000_000_000
    assert parse_age("7d", now) == now - 7 * 86_400_000
    assert parse_age("1.5h", now) == now - 5_400_000
    assert parse_age("30min", now) == now - 1_800_000
    assert parse_age("2026-01-01T00:00:00Z") == 1767225600000
    # exact: through float seconds this was ...410 (an --as-of at a snapshot's exact time read
    # the snapshot before it)
    assert parse_age("2039-03-08T19:46:13.411Z") == 2183226373411
    assert parse_age("1969-12-31T23:59:59.9995Z") == -1
    with pytest.raises(ValidationError):
        parse_age("soon", now)


COMPACT_SCHEMA = {
    "type": "object",
    "required": [
        "table",
        "dry_run",
        "groups",
        "rewritten_data_files",
        "rewritten_bytes",
        "removed_delete_files",
        "added_data_files",
        "snapshot_id",
        "target_file_size",
    ],
}


def test_compact_dry_run_then_real(world: CliWorld) -> None:
    rows = _rows(world)
    before = world.catalog().load_table("db.events")
    n_snapshots = len(before.snapshots())
    plan = run(world, "compact", "db.events", "--dry-run", "--json").json()
    check_schema(plan, COMPACT_SCHEMA)
    assert plan["added_data_files"] is None and plan["snapshot_id"] is None
    assert len(world.catalog().load_table("db.events").snapshots()) == n_snapshots
    # eu has 3 small files and a DV, us 2 small files and a DV, ap 1 file: two groups
    assert (plan["groups"], plan["rewritten_data_files"], plan["removed_delete_files"]) == (
        2,
        5,
        2,
    )
    r = run(world, "compact", "db.events", "--json")
    assert r.exit_code == 0, r.stderr
    done = r.json()
    for key in ("groups", "rewritten_data_files", "rewritten_bytes", "removed_delete_files"):
        assert done[key] == plan[key], key
    after = world.catalog().load_table("db.events")
    assert done["snapshot_id"] == after.current_snapshot().snapshot_id
    assert after.current_snapshot().operation == "replace"
    assert after.inspect.delete_files().num_rows == 0
    assert after.inspect.data_files().num_rows == 3
    assert _rows(world) == rows


def test_compact_filter_and_target(world: CliWorld) -> None:
    r = run(world, "compact", "db.events", "--filter", "region = 'us'", "--dry-run", "--json")
    assert (r.json()["rewritten_data_files"], r.json()["groups"]) == (2, 1)
    r = run(world, "compact", "db.events", "--target-file-size", "1KiB", "--dry-run", "--json")
    doc = r.json()
    assert doc["target_file_size"] == 1024
    # with a 1 KiB target, only files with deletes (alone in their bins) are rewritten
    table = world.catalog().load_table("db.events")
    assert doc == {**doc, **_plan(table, 1024)}
    r = run(world, "--color", "compact", "db.events", "--filter", "region = 'us'")
    assert r.exit_code == 0 and "rewrote 2 data files" in r.stdout
    assert "rewriting files" in r.stderr  # the progress bar, drawn as on a terminal


def _plan(table: object, target: int) -> dict[str, int]:
    p = table.plan_rewrite_data_files(target_file_size=target)  # type: ignore[attr-defined]
    return {"groups": p.groups, "rewritten_data_files": p.data_files}


ORPHANS_SCHEMA = {
    "type": "object",
    "required": ["table", "dry_run", "orphan_files"],
    "additionalProperties": False,
    "properties": {
        "table": {"type": "string"},
        "dry_run": {"type": "boolean"},
        "orphan_files": {"type": "array", "items": {"type": "string"}},
    },
}

REWRITE_MANIFESTS_SCHEMA = {
    "type": "object",
    "required": [
        "table",
        "dry_run",
        "rewritten_manifests",
        "added_manifests",
        "kept_manifests",
        "entries",
        "snapshot_id",
        "parent_snapshot_id",
    ],
    "additionalProperties": False,
    "properties": {
        "table": {"type": "string"},
        "dry_run": {"type": "boolean"},
        "rewritten_manifests": {"type": "integer", "minimum": 0},
        "added_manifests": {"type": "integer", "minimum": 0},
        "kept_manifests": {"type": "integer", "minimum": 0},
        "entries": {"type": "integer", "minimum": 0},
        "snapshot_id": {"type": ["integer", "null"]},
        "parent_snapshot_id": {"type": ["integer", "null"]},
    },
}


def test_orphans(world: CliWorld) -> None:
    table = world.catalog().load_table("db.plain")
    data_dir = Path(table.location.removeprefix("file://"), "data")
    old, new = data_dir / "old-orphan.parquet", data_dir / "new-orphan.parquet"
    old.write_bytes(b"o" * 10)
    new.write_bytes(b"n" * 10)
    week_ago = time.time() - 7 * 86400
    os.utime(old, (week_ago, week_ago))
    r = run(world, "orphans", "db.plain", "--dry-run", "--json")
    assert r.exit_code == 0, r.stderr
    check_schema(r.json(), ORPHANS_SCHEMA)
    assert r.json()["orphan_files"] == [old.as_uri()]
    assert old.exists()
    r = run(world, "orphans", "db.plain", "--older-than", "0s", "--dry-run")
    assert "found 2 orphan files" in r.stdout
    r = run(world, "orphans", "db.plain")
    assert r.exit_code == 0 and "deleted 1 orphan file" in r.stdout
    assert not old.exists() and new.exists()
    # a cutoff of less than a day could delete a write in progress: refused unless allowed
    r = run(world, "orphans", "db.plain", "--older-than", "1h")
    assert r.exit_code == EXIT_BAD_INPUT and "--allow-recent" in r.stderr
    assert new.exists()
    r = run(world, "orphans", "db.plain", "--older-than", "0s", "--allow-recent")
    assert r.exit_code == 0 and "deleted 1 orphan file" in r.stdout
    assert not new.exists()
    assert _rows(world, "db.plain") == [(1, "a"), (2, "b"), (3, "c")]


def test_orphans_in_a_location_that_does_not_exist(world: CliWorld, tmp_path: Path) -> None:
    """``orphans`` where nothing could be listed (a table location, or a ``--location``, that
    does not exist) said "found 0 orphan files" and exited 0; it says the location does not
    exist and exits 3, as ``health --orphans`` calls the check not done."""
    table = world.catalog().load_table("db.plain")
    moved = moved_to_nowhere(world, tmp_path)
    gone = (tmp_path / "nowhere").as_uri()
    for args in (["--dry-run"], ["--dry-run", "--json"]):
        r = run(world, "orphans", str(moved), *args)
        assert r.exit_code == EXIT_NOT_FOUND, r.stdout
        assert r.stdout == ""
        assert r.stderr == (
            f"error: cannot look for orphan files: the table's location {gone} does not exist "
            "(its files live elsewhere, or the metadata's location is wrong)\n"
        )
    nope = f"{table.location}/data/nope"
    for args in (["--dry-run"], []):
        r = run(world, "orphans", "db.plain", "--location", nope, *args)
        assert r.exit_code == EXIT_NOT_FOUND, r.stdout
        assert r.stderr == f"error: cannot look for orphan files: location {nope} does not exist\n"
    # an existing directory with nothing orphaned in it is still 0 found
    r = run(world, "orphans", "db.plain", "--location", f"{table.location}/data", "--dry-run")
    assert r.exit_code == 0 and "found 0 orphan files" in r.stdout, r.stderr


def test_orphans_not_named_in_utf8(world: CliWorld) -> None:
    """An orphan whose name is not UTF-8 made ``orphans`` and ``health --orphans`` fail; its
    name is shown with the bytes that are not UTF-8 written out, in valid JSON too."""
    import json

    table = world.catalog().load_table("db.plain")
    data_dir = os.fsencode(Path(table.location.removeprefix("file://"), "data"))
    odd = data_dir + b"/junk\xff.parquet"
    with open(odd, "wb") as f:
        f.write(b"x")
    week_ago = time.time() - 7 * 86400
    os.utime(odd, (week_ago, week_ago))
    r = run(world, "orphans", "db.plain", "--dry-run", "--json")
    assert r.exit_code == 0, r.stderr
    shown = json.loads(r.stdout.encode("utf-8"))["orphan_files"]
    assert [p.rsplit("/", 1)[-1] for p in shown] == ["junk\\xff.parquet"]
    r = run(world, "health", "db.plain", "--orphans", "--json")
    assert r.exit_code == 0, r.stderr
    assert "junk\\\\xff.parquet" in r.stdout
    r = run(world, "orphans", "db.plain")
    assert r.exit_code == 0, r.stderr
    assert "deleted 1 orphan file" in r.stdout and "junk\\xff.parquet" in r.stdout
    assert not os.path.exists(odd)
    assert _rows(world, "db.plain") == [(1, "a"), (2, "b"), (3, "c")]


def test_rewrite_manifests(world: CliWorld) -> None:
    rows = _rows(world)
    table = world.catalog().load_table("db.events")
    data_manifests = pc.sum(pc.equal(table.inspect.manifests().column("content"), 0)).as_py()
    r = run(world, "rewrite-manifests", "db.events", "--dry-run", "--json")
    plan = r.json()
    check_schema(plan, REWRITE_MANIFESTS_SCHEMA)
    assert plan["rewritten_manifests"] == data_manifests == 4
    assert plan["added_manifests"] == 1 and plan["snapshot_id"] is None
    r = run(world, "rewrite-manifests", "db.events", "--json")
    done = r.json()
    check_schema(done, REWRITE_MANIFESTS_SCHEMA)
    after = world.catalog().load_table("db.events")
    assert done["snapshot_id"] == after.current_snapshot().snapshot_id
    assert done["parent_snapshot_id"] == table.current_snapshot().snapshot_id
    assert pc.sum(pc.equal(after.inspect.manifests().column("content"), 0)).as_py() == 1
    assert _rows(world) == rows
    r = run(world, "rewrite-manifests", "db.events")
    assert "already grouped" in r.stdout


def _heads(world: CliWorld) -> dict[str, int]:
    refs = world.catalog().load_table("db.events").refs()
    return {name: ref.snapshot_id for name, ref in refs.items()}


def _ids(world: CliWorld, ref: str) -> list[int]:
    t = world.catalog().load_table("db.events")
    return sorted(t.scan(ref=ref).to_arrow().column("id").to_pylist())


def test_maintenance_on_a_branch_reports_the_branch_snapshot(world: CliWorld) -> None:
    """The snapshots reported are those committed on --branch; main does not move."""
    before = _heads(world)
    audit_rows = _ids(world, "audit")
    r = run(world, "rewrite-manifests", "db.events", "--branch", "audit", "--json")
    assert r.exit_code == 0, r.stderr
    doc = r.json()
    check_schema(doc, REWRITE_MANIFESTS_SCHEMA)
    heads = _heads(world)
    assert doc["snapshot_id"] == heads["audit"] != before["audit"]
    assert doc["parent_snapshot_id"] == before["audit"]
    r = run(world, "compact", "db.events", "--branch", "audit", "--json")
    assert r.exit_code == 0, r.stderr
    doc = r.json()
    assert doc["rewritten_data_files"] > 0
    after = _heads(world)
    assert doc["snapshot_id"] == after["audit"] != heads["audit"]
    assert after["main"] == before["main"]
    assert _ids(world, "audit") == audit_rows
    text = run(world, "compact", "db.events", "--branch", "audit", "--min-input-files", "1")
    assert text.exit_code == 0, text.stderr
    assert str(_heads(world)["audit"]) in text.stdout


def test_maintenance_refuses_a_branch_that_does_not_exist(world: CliWorld) -> None:
    """A --branch that names no branch is not found (as by the table API), and a
    tag is not a branch; nothing is committed."""
    before = _heads(world)
    for command in ("compact", "rewrite-manifests"):
        for extra in ((), ("--dry-run",)):
            r = run(world, command, "db.events", "--branch", "typo", *extra)
            assert r.exit_code == EXIT_NOT_FOUND, (command, extra, r.stderr)
            assert r.stderr.strip() == "error: table db.events has no branch 'typo'"
        r = run(world, command, "db.events", "--branch", "v1")
        assert r.exit_code == EXIT_BAD_INPUT, (command, r.stderr)
        assert "'v1' is a tag of table db.events, not a branch" in r.stderr
    assert _heads(world) == before


def test_maintenance_in_a_real_process(world: CliWorld) -> None:
    r = run_process(world, "compact", "db.events", "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert "would rewrite 5 data files" in r.stdout
    r = run_process(world, "rewrite-manifests", "db.events")
    assert r.exit_code == 0, r.stderr
    assert "rewrote 4 manifests" in r.stdout


def test_ctrl_c_says_whether_the_change_was_committed(
    world: CliWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not click's bare "Aborted!" (exit 1) when the expiry was already committed and only its
    file deletion was stopped: the command says which, and exits 130."""
    from icefloe.cli.maintenance_cmds import EXIT_INTERRUPTED
    from icefloe.table.table import Table

    rows = _rows(world)
    before = len(world.catalog().load_table("db.events").snapshots())
    real = Table.expire_snapshots

    def interrupted_deleting(self: Table, *args: object, **kwargs: object) -> object:
        def stop(done: int, total: int) -> None:
            raise KeyboardInterrupt

        return real(self, *args, **{**kwargs, "progress": stop})  # type: ignore[arg-type]

    monkeypatch.setattr(Table, "expire_snapshots", interrupted_deleting)
    r = run(world, "expire", "db.events")
    assert r.exit_code == EXIT_INTERRUPTED == 130, r.stderr
    assert "interrupted after the commit: db.events changed" in r.stderr
    assert "icefloe orphans db.events" in r.stderr and "Aborted" not in r.stderr
    assert len(world.catalog().load_table("db.events").snapshots()) == before - 3
    assert _rows(world) == rows

    def interrupted_reading(self: Table, *args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(Table, "rewrite_data_files", interrupted_reading)
    location = world.catalog().load_table("db.events").metadata_location
    r = run(world, "compact", "db.events")
    assert r.exit_code == EXIT_INTERRUPTED, r.stderr
    assert "interrupted before the commit: db.events is unchanged" in r.stderr
    assert world.catalog().load_table("db.events").metadata_location == location


def test_ctrl_c_in_orphans_and_in_reading_commands_exits_130(
    world: CliWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``orphans`` and the commands that only read ended a Ctrl-C with click's bare
    "Aborted!" and exit code 1; they exit 130, and orphans says how far it got."""
    from icefloe.table.table import Table

    def interrupted_deleting(self: Table, *args: object, **kwargs: object) -> object:
        progress = kwargs["progress"]
        assert callable(progress)
        progress(3, 10)
        raise KeyboardInterrupt

    monkeypatch.setattr(Table, "remove_orphan_files", interrupted_deleting)
    r = run(world, "orphans", "db.events")
    assert r.exit_code == 130, r.stderr
    assert "interrupted: db.events is unchanged" in r.stderr
    assert "at least 3 orphan files deleted" in r.stderr and "Aborted" not in r.stderr

    def interrupted_reading(self: Table, *args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(Table, "scan", interrupted_reading)
    r = run(world, "scan", "db.events")
    assert r.exit_code == 130 and r.stderr.strip() == "interrupted", r.stderr
