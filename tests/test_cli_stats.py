"""``icefloe stats`` / ``compute-stats``, statistics in ``describe`` and the health check that
finds missing and stale statistics: numbers checked against the table API and the true
distinct counts."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from support.cli import run
from support.cli_tables import build_world, empty_world


def test_compute_stats_then_stale_after_a_commit(tmp_path: Path) -> None:
    world = build_world(tmp_path / "world")
    before = run(world, "health", "db.events", "--json").json()
    check = {c["name"]: c for c in before["checks"]}["statistics"]
    assert check["verdict"] == "info" and check["fix"] == "icefloe compute-stats db.events"

    r = run(world, "compute-stats", "db.events", "--json")
    assert r.exit_code == 0, r.stderr
    doc = r.json()
    assert doc.pop("table") == "db.events"  # as every command's JSON names its table
    t = world.catalog().load_table("db.events")
    sid = t.current_snapshot().snapshot_id
    assert doc["table_statistics"] == {"snapshot_id": sid, "snapshots_behind": 0}
    assert doc["partition_statistics"] == {"snapshot_id": sid, "snapshots_behind": 0}
    rows = t.scan().to_arrow()
    for name, ndv in doc["ndv"].items():
        col = rows.column(name)
        if pa.types.is_string(col.type):
            col = pc.filter(col, pc.not_equal(col, ""))
        assert ndv == pc.count_distinct(col).as_py(), name
    assert doc["ndv"] == t.statistics()
    inspected = t.inspect.column_statistics().to_pylist()
    assert {r["column"]: r["ndv"] for r in inspected} == doc["ndv"]
    assert {r["snapshots_behind"] for r in inspected} == {0}
    assert run(world, "describe", "db.events", "--json").json()["statistics"] == doc
    text = run(world, "describe", "db.events").stdout
    assert f"table statistics: current (snapshot {sid})" in text
    health = {c["name"]: c for c in run(world, "health", "db.events", "--json").json()["checks"]}
    assert health["statistics"]["verdict"] == "ok" and health["statistics"]["fix"] is None

    t.append(rows.slice(0, 3))  # a new snapshot: the statistics are one behind
    stale = run(world, "stats", "db.events", "--json").json()
    assert stale["table"] == "db.events"
    assert stale["table_statistics"] == {"snapshot_id": sid, "snapshots_behind": 1}
    assert stale["ndv"] == doc["ndv"]
    assert "stale: computed for snapshot" in run(world, "stats", "db.events").stdout
    health = {c["name"]: c for c in run(world, "health", "db.events", "--json").json()["checks"]}
    assert health["statistics"]["verdict"] == "warn"
    assert health["statistics"]["fix"] == "icefloe compute-stats db.events"
    assert "1 snapshot behind" in health["statistics"]["value"]


def test_a_missing_statistics_file_is_reported_not_fatal(tmp_path: Path) -> None:
    """A registered statistics file gone from storage, whose blobs carry no ``ndv`` property
    (optional in Puffin: the counts come from the sketches): ``describe`` and ``stats`` still
    answer and say the file cannot be read (they failed with the exit code of a missing
    table), and ``health`` flags the missing file (it called the statistics current)."""
    import dataclasses
    import os

    from icefloe.metadata import SetStatistics

    world = build_world(tmp_path / "world")
    t = world.catalog().load_table("db.events")
    st = t.compute_statistics()
    bare = tuple(dataclasses.replace(b, properties={}) for b in st.blob_metadata)
    with world.catalog().load_table("db.events").transaction() as tx:
        tx.apply([SetStatistics(dataclasses.replace(st, blob_metadata=bare))])
    os.remove(st.statistics_path.removeprefix("file://"))

    for cmd in ("stats", "describe"):
        r = run(world, cmd, "db.events", "--json")
        assert r.exit_code == 0, r.stderr
        doc = r.json() if cmd == "stats" else r.json()["statistics"]
        assert "file not found" in doc["unreadable"] and doc["ndv"] == {}
    assert "the statistics file cannot be read" in run(world, "stats", "db.events").stdout
    health = {c["name"]: c for c in run(world, "health", "db.events", "--json").json()["checks"]}
    check = health["statistics"]
    assert check["verdict"] == "warn" and "table statistics file missing" in check["value"]
    assert check["fix"] == "icefloe compute-stats db.events"


def test_a_missing_statistics_file_is_flagged_when_its_counts_are_in_the_metadata(
    tmp_path: Path,
) -> None:
    """Blobs with an ``ndv`` property answer without reading the file, so its absence went
    unnoticed; ``stats`` and ``describe`` now name the missing file beside the counts."""
    import os

    world = build_world(tmp_path / "world")
    t = world.catalog().load_table("db.events")
    st = t.compute_statistics()
    path = st.statistics_path
    os.remove(path.removeprefix("file://"))
    doc = run(world, "stats", "db.events", "--json").json()
    assert doc.pop("table") == "db.events"
    assert doc["ndv"] and "unreadable" not in doc  # the counts still come from the metadata
    assert doc["missing_files"] == [{"kind": "table", "path": path}]
    assert run(world, "describe", "db.events", "--json").json()["statistics"] == doc
    text = run(world, "stats", "db.events").stdout
    assert "the table statistics file is missing" in text and "compute-stats" in text


def test_statistics_paths_are_shown_as_written(tmp_path: Path) -> None:
    """A table whose location holds ``[/]`` or ``[bold]``: ``stats`` and ``describe`` read the
    path of a missing statistics file (and the error naming an unreadable one) as rich markup,
    so ``[bold]`` vanished and ``[/]`` stopped the command with MarkupError."""
    import dataclasses
    import os

    import pyarrow as pa

    from icefloe.catalog import load_catalog
    from icefloe.metadata import SetStatistics

    world = empty_world(tmp_path / "world")
    warehouse = tmp_path / "wh[/]x[bold]y"
    cat = load_catalog("h", type="hadoop", warehouse=str(warehouse))
    cat.create_namespace("db")
    for name, with_ndv in (("kept", True), ("bare", False)):
        t = cat.create_table(f"db.{name}", pa.schema([("a", pa.int64())]))
        t.append(pa.table({"a": [1, 2, 3]}))
        st = t.compute_statistics()
        if not with_ndv:  # the counts are only in the file: it cannot be read
            bare = tuple(dataclasses.replace(b, properties={}) for b in st.blob_metadata)
            with cat.load_table(f"db.{name}").transaction() as tx:
                tx.apply([SetStatistics(dataclasses.replace(st, blob_metadata=bare))])
        path = st.statistics_path.removeprefix("file://")
        os.remove(path)
        assert "[/]x[bold]y" in path
        for cmd in ("stats", "describe"):
            r = run(world, cmd, str(warehouse / "db" / name), width=1000)
            assert r.exit_code == 0, (cmd, r.stderr)
            line = next(
                line for line in r.stdout.splitlines() if "statistics file is missing" in line
            )
            assert path in line, line
            if not with_ndv:
                line = next(line for line in r.stdout.splitlines() if "cannot be read" in line)
                assert path in line, line
