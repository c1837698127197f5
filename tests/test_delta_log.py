"""The Delta log reader: listing, commits, checkpoints of every kind, replay, protocol gate,
time travel and the typed errors for broken logs."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from icefloe.delta import DeltaLog
from icefloe.exceptions import (
    DeltaLogError,
    NoSuchSnapshotError,
    NoSuchTableError,
    UnsupportedDeltaFeatureError,
)
from support.delta import (
    PROTOCOL,
    DeltaTableWriter,
    add,
    checkpoint_table,
    commit_info,
    metadata,
    remove,
    row_tracking,
)

DV1 = {
    "storageType": "u",
    "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
    "offset": 1,
    "sizeInBytes": 36,
    "cardinality": 2,
}
DV2 = {
    "storageType": "u",
    "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
    "offset": 45,
    "sizeInBytes": 36,
    "cardinality": 3,
}


def live(log: DeltaLog, version: int | None = None) -> list[tuple[str, int | None]]:
    files = log.snapshot(version).files
    dvs = [d["offset"] if d else None for d in files.column("dv").to_pylist()]
    return sorted(zip(files.column("path").to_pylist(), dvs, strict=True), key=repr)


def test_replay_adds_removes_and_dv_replacement(tmp_path: Path) -> None:
    w = DeltaTableWriter(tmp_path)
    w.create(
        add("a.parquet", base_row_id=0, version=0),
        add("b.parquet", base_row_id=10, version=0),
        row_tracking(19),
    )
    w.commit(1, commit_info(), add("c%20d.parquet", base_row_id=20, version=1), row_tracking(29))
    # A DELETE with DVs: the same path comes back with a DV, the old (no DV) entry goes.
    w.commit(
        2,
        commit_info(op="DELETE"),
        add("a.parquet", base_row_id=0, version=0, dv=DV1),
        remove("a.parquet"),
    )
    w.commit(
        3,
        commit_info(op="DELETE"),
        add("a.parquet", base_row_id=0, version=0, dv=DV2),
        remove("a.parquet", dv=DV1),
        remove("b.parquet"),
    )
    log = DeltaLog(str(tmp_path))
    assert log.latest_version() == 3
    assert live(log, 0) == [("a.parquet", None), ("b.parquet", None)]
    assert live(log, 1) == [("a.parquet", None), ("b.parquet", None), ("c d.parquet", None)]
    assert live(log, 2) == [("a.parquet", 1), ("b.parquet", None), ("c d.parquet", None)]
    assert live(log) == [("a.parquet", 45), ("c d.parquet", None)]
    snap = log.snapshot()
    assert snap.row_id_high_water_mark == 29
    files = snap.files.sort_by("path")
    assert files.column("base_row_id").to_pylist() == [0, 20]
    assert files.column("default_row_commit_version").to_pylist() == [0, 1]
    assert snap.metadata.column_mapping_mode == "name"
    assert "icebergCompatV3" in snap.protocol.writer_features


def test_classic_checkpoint_is_used_and_commits_before_it_may_be_gone(tmp_path: Path) -> None:
    w = DeltaTableWriter(tmp_path)
    actions = [
        {"protocol": PROTOCOL},
        {"metaData": metadata()},
        add("x.parquet", base_row_id=0, version=0),
        add("y.parquet", base_row_id=10, version=1),
        row_tracking(19),
    ]
    w.checkpoint(1, actions)
    w.commit(2, commit_info(), remove("x.parquet"))
    (tmp_path / "_delta_log" / "_last_checkpoint").write_text(json.dumps({"version": 1, "size": 5}))
    log = DeltaLog(str(tmp_path))
    snap = log.snapshot()
    assert snap.checkpoint is not None and snap.checkpoint.kind == "classic"
    assert live(log) == [("y.parquet", None)]
    assert snap.row_id_high_water_mark == 19
    assert log.earliest_version() == 1
    assert log.last_checkpoint_hint() == {"version": 1, "size": 5}
    with pytest.raises(DeltaLogError, match=r"00000000000000000000\.json is missing") as e:
        log.snapshot(0)
    assert e.value.path is not None and e.value.path.endswith("00000000000000000000.json")


def test_multi_part_checkpoint_needs_every_part(tmp_path: Path) -> None:
    w = DeltaTableWriter(tmp_path)
    w.create(add("a.parquet", version=0))
    w.commit(1, commit_info(), add("b.parquet", base_row_id=10))
    part1 = [{"protocol": PROTOCOL}, {"metaData": metadata()}, add("a.parquet", version=0)]
    part2 = [add("b.parquet", base_row_id=10)]
    name = "00000000000000000001.checkpoint.{:010d}.0000000002.parquet"
    w.checkpoint(1, part1, name.format(1))
    log = DeltaLog(str(tmp_path))
    # An incomplete multi-part checkpoint is ignored: the commits are replayed instead.
    assert log.snapshot().checkpoint is None
    w.checkpoint(1, part2, name.format(2))
    log = DeltaLog(str(tmp_path))
    snap = log.snapshot()
    assert snap.checkpoint is not None and snap.checkpoint.kind == "multi-part"
    assert live(log) == [("a.parquet", None), ("b.parquet", None)]


def test_v2_checkpoints_with_sidecars_json_and_parquet(tmp_path: Path) -> None:
    (tmp_path / "_delta_log").mkdir()
    sidecars = tmp_path / "_delta_log" / "_sidecars"
    sidecars.mkdir()
    pq.write_table(
        checkpoint_table([add("s1.parquet", base_row_id=0, version=0)]), sidecars / "one.parquet"
    )
    pq.write_table(
        checkpoint_table([add("s2.parquet", base_row_id=10, version=0)]), sidecars / "two.parquet"
    )
    lines = [
        {"checkpointMetadata": {"version": 3}},
        {"protocol": PROTOCOL},
        {"metaData": metadata()},
        {"sidecar": {"path": "one.parquet", "sizeInBytes": 1, "modificationTime": 1}},
        add("inline.parquet", base_row_id=20, version=2),
        row_tracking(29),
    ]
    cp = (
        tmp_path
        / "_delta_log"
        / "00000000000000000003.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json"
    )
    cp.write_text("".join(json.dumps(x) + "\n" for x in lines))
    log = DeltaLog(str(tmp_path))
    snap = log.snapshot()
    assert snap.checkpoint is not None and snap.checkpoint.kind == "v2"
    assert live(log) == [("inline.parquet", None), ("s1.parquet", None)]
    assert snap.row_id_high_water_mark == 29
    # The Parquet form: sidecar actions in a column of the checkpoint file.
    cp.unlink()
    table = checkpoint_table(
        [
            {"protocol": PROTOCOL},
            {"metaData": metadata()},
            {"sidecar": {"path": "one.parquet", "sizeInBytes": 1}},
            {"sidecar": {"path": "two.parquet", "sizeInBytes": 1}},
        ]
    )
    pq.write_table(
        table,
        tmp_path
        / "_delta_log"
        / "00000000000000000003.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.parquet",
    )
    assert live(DeltaLog(str(tmp_path))) == [("s1.parquet", None), ("s2.parquet", None)]
    # A sidecar that is gone is an error naming it.
    (sidecars / "two.parquet").unlink()
    with pytest.raises(DeltaLogError, match=r"two\.parquet"):
        DeltaLog(str(tmp_path)).snapshot()


def test_corrupt_checkpoint_and_commit_are_typed_errors_naming_the_file(tmp_path: Path) -> None:
    w = DeltaTableWriter(tmp_path)
    w.create(add("a.parquet", version=0))
    cp = tmp_path / "_delta_log" / "00000000000000000000.checkpoint.parquet"
    cp.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(DeltaLogError, match="corrupt Delta checkpoint") as e:
        DeltaLog(str(tmp_path)).snapshot()
    assert e.value.path == str(cp)
    cp.unlink()
    w.commit(1, commit_info())
    (tmp_path / "_delta_log" / "00000000000000000001.json").write_text('{"add": {"path": "x"\n')
    with pytest.raises(DeltaLogError, match=r"corrupt Delta commit file .*00001\.json"):
        DeltaLog(str(tmp_path)).snapshot()
    # A gap in the commits names the missing file.
    (tmp_path / "_delta_log" / "00000000000000000001.json").unlink()
    w.commit(2, commit_info())
    with pytest.raises(DeltaLogError, match=r"00000000000000000001\.json is missing"):
        DeltaLog(str(tmp_path)).snapshot()


def test_unknown_reader_features_are_refused(tmp_path: Path) -> None:
    w = DeltaTableWriter(tmp_path)
    w.create(add("a.parquet", version=0))
    proto = dict(
        PROTOCOL,
        readerFeatures=["columnMapping", "deletionVectors", "catalogManaged", "futureThing"],
    )
    w.commit(1, commit_info(), {"protocol": proto})
    log = DeltaLog(str(tmp_path))
    log.snapshot(0)  # the old version is still readable
    with pytest.raises(UnsupportedDeltaFeatureError, match="catalogManaged, futureThing") as e:
        log.snapshot()
    assert e.value.features == ("catalogManaged", "futureThing")
    w.commit(2, commit_info(), {"protocol": dict(PROTOCOL, minReaderVersion=4)})
    with pytest.raises(UnsupportedDeltaFeatureError, match="reader version 4"):
        DeltaLog(str(tmp_path)).snapshot()


def test_time_travel_by_version_and_in_commit_timestamp(tmp_path: Path) -> None:
    w = DeltaTableWriter(tmp_path)
    w.commit(0, commit_info(1000, "CREATE TABLE"), {"protocol": PROTOCOL}, {"metaData": metadata()})
    w.commit(1, commit_info(2000), add("a.parquet"))
    w.commit(2, commit_info(3000), add("b.parquet", base_row_id=10))
    log = DeltaLog(str(tmp_path))
    assert log.version_at(2500) == 1
    assert log.snapshot(timestamp_ms=3000).version == 2
    assert log.snapshot(timestamp_ms=2999).timestamp_ms == 2000
    assert [c.version for c in log.commits(1)] == [1, 2]
    with pytest.raises(NoSuchSnapshotError):
        log.snapshot(timestamp_ms=999)
    with pytest.raises(NoSuchSnapshotError):
        log.snapshot(7)


def test_not_a_delta_table(tmp_path: Path) -> None:
    with pytest.raises(NoSuchTableError):
        DeltaLog(str(tmp_path)).snapshot()


@pytest.mark.parametrize(
    ("scenario", "kind"),
    [("checkpoints", "classic"), ("multipart", "multi-part"), ("v2checkpoint", "v2")],
)
def test_checkpoints_written_by_delta_equal_replaying_every_commit(
    scenario: str, kind: str, tmp_path: Path
) -> None:
    from support.delta import fixture

    root = fixture(scenario, tmp_path)
    snap = DeltaLog(str(root)).snapshot()
    assert snap.checkpoint is not None and snap.checkpoint.kind == kind
    for f in (root / "_delta_log").glob("*.checkpoint*"):
        f.unlink()
    replayed = DeltaLog(str(root)).snapshot()
    assert replayed.checkpoint is None
    cols = ["path", "size", "base_row_id", "default_row_commit_version", "dv", "stats"]
    assert (
        snap.files.select(cols).sort_by("path").equals(replayed.files.select(cols).sort_by("path"))
    )
    assert snap.row_id_high_water_mark == replayed.row_id_high_water_mark
    assert snap.metadata == replayed.metadata and snap.protocol == replayed.protocol
