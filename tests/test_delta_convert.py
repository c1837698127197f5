"""The Delta -> Iceberg v3 converter on tables written by Delta Lake 4.4.0 (committed copies,
see ``tests/gen_delta_fixtures.py``): every version of every scenario reads back, through
icefloe, exactly as Delta read it, row ids and row commit versions included."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import icefloe.delta
from icefloe.catalog.sql import SqlCatalog
from icefloe.delta import DeltaLog, convert
from icefloe.delta.dv import dv_file_path
from icefloe.exceptions import (
    CommitConflictError,
    DeltaLogError,
    NotIcebergCompatibleError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.table import Table
from icefloe.table.static import StaticTable
from icefloe.values import from_bytes
from support.delta import (
    CONVERTIBLE,
    UNCHECKED,
    DeltaTableWriter,
    add,
    commit_info,
    fixture,
    row_tracking,
)

SCENARIOS = CONVERTIBLE
LINEAGE = ("_row_id", "_last_updated_sequence_number")


def expected(table_dir: Path, version: int) -> pa.Table:
    return pq.read_table(table_dir.parent / "expected" / f"v{version}.parquet")


def read(table: Table, snapshot_id: int | None = None) -> pa.Table:
    return table.scan(selected_fields=("*", *LINEAGE), snapshot_id=snapshot_id).to_arrow()


def rows(t: pa.Table, lineage: tuple[str, str] = LINEAGE) -> list[tuple[Any, ...]]:
    """Rows as sortable tuples: data columns (ints widened), then row id and version."""
    data = [c for c in t.column_names if not c.startswith("_")]
    cols = [t.column(c).to_pylist() for c in data] + [t.column(c).to_pylist() for c in lineage]
    return sorted(zip(*cols, strict=True), key=repr)


def delta_rows(t: pa.Table) -> list[tuple[Any, ...]]:
    return rows(t, ("_row_id", "_row_commit_version"))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_full_conversion_reads_as_delta(scenario: str, tmp_path: Path) -> None:
    root = fixture(scenario, tmp_path)
    latest = DeltaLog(str(root)).latest_version()
    result = convert(str(root), check=scenario not in UNCHECKED)
    assert result.mode == "full" and result.delta_version == latest
    table = result.table
    assert rows(read(table)) == delta_rows(expected(root, latest))
    md = table.metadata
    assert md.format_version == 3
    assert md.properties["delta-version"] == str(latest)
    snap = md.current_snapshot()
    assert snap is not None and snap.sequence_number == latest
    assert snap.summary.properties["delta-version"] == str(latest)
    hwm = DeltaLog(str(root)).snapshot().row_id_high_water_mark
    assert hwm is not None and md.next_row_id == hwm + 1
    # The same files: every live Delta file is a live Iceberg data file.
    files = table.inspect.data_files()
    delta_files = DeltaLog(str(root)).snapshot().files
    assert sorted(files.column("file_path").to_pylist()) == sorted(
        f"{root}/{p}" for p in delta_files.column("path").to_pylist()
    )
    # A path-only table opens by its metadata directory.
    static = StaticTable.from_metadata(f"{root}/_icefloe/metadata")
    assert rows(read(static)) == rows(read(table))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_incremental_sync_keeps_every_version(
    scenario: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = fixture(scenario, tmp_path)
    log = DeltaLog(str(root))
    latest = log.latest_version()
    check = scenario not in UNCHECKED
    first = convert(str(root), up_to_version=0, check=check)
    assert first.mode == "full"

    def no_replay(self: DeltaLog, version: int) -> None:
        raise AssertionError("the synced commit's timestamp should prove the table unchanged")

    # the table id check of every sync below takes its one-file path
    monkeypatch.setattr(DeltaLog, "metadata_at", no_replay)
    for v in range(1, latest + 1):
        result = convert(str(root), up_to_version=v, check=check)
        assert result.mode == "incremental" and result.previous_version == v - 1
        assert rows(read(result.table)) == delta_rows(expected(root, v)), f"version {v}"
    table = result.table
    # Time travel: each snapshot reads as Delta's version of the same number.
    snaps = table.snapshots()
    assert snaps, "no snapshot"
    for s in snaps:
        v = int(s.summary.properties["delta-version"])
        assert s.sequence_number == v
        assert rows(read(table, s.snapshot_id)) == delta_rows(expected(root, v)), f"snapshot {v}"
    # A re-run has nothing to do and writes nothing.
    location = table.metadata_location
    again = convert(str(root), check=check)
    assert again.mode == "unchanged" and again.table.metadata_location == location


@pytest.mark.parametrize(
    ("other", "keep"),
    [("dml", None), ("partitioned", 2), ("partitioned", 0)],
    ids=["longer-log", "same-length-log", "shorter-log"],
)
def test_a_table_created_again_at_the_path_is_refused(
    other: str, keep: int | None, tmp_path: Path
) -> None:
    # a synced Delta table dropped and created again at its path: its versions restart at 0,
    # so the old sync state must not read as "unchanged" nor take the new commits incrementally
    root = tmp_path / "delta"
    shutil.copytree(fixture("basic", tmp_path / "a"), root)
    meta = str(tmp_path / "iceberg")
    convert(str(root), metadata_location=meta)
    before = StaticTable.from_metadata(meta).metadata_location
    shutil.rmtree(root)
    shutil.copytree(fixture(other, tmp_path / "b"), root)
    if keep is not None:
        for f in (root / "_delta_log").iterdir():
            if f.name[:20].isdigit() and int(f.name[:20]) > keep:
                f.unlink()
    with pytest.raises(ValidationError, match="created again"):
        convert(str(root), metadata_location=meta)
    assert StaticTable.from_metadata(meta).metadata_location == before  # nothing committed


def test_a_log_with_new_file_times_still_syncs(tmp_path: Path) -> None:
    # restored from a backup that kept no modification times, the synced commit's timestamp
    # no longer matches: the table id in effect at that version decides, and it is the same
    root = fixture("checkpoints", tmp_path)
    meta = str(tmp_path / "iceberg")
    convert(str(root), metadata_location=meta, up_to_version=3)
    for f in (root / "_delta_log").iterdir():
        os.utime(f, (1_800_000_000, 1_800_000_000))
    result = convert(str(root), metadata_location=meta)
    assert result.mode == "incremental" and result.previous_version == 3
    assert rows(read(result.table)) == delta_rows(expected(root, 5))


def test_dv_blobs_are_delta_bytes_in_puffin_files(tmp_path: Path) -> None:
    root = fixture("dml", tmp_path)
    table = convert(str(root)).table
    deletes = table.inspect.delete_files()
    assert deletes.num_rows > 0
    assert set(deletes.column("file_format").to_pylist()) == {"PUFFIN"}
    snap = DeltaLog(str(root)).snapshot()
    dvs = {
        f"{root}/{p}": d
        for p, d in zip(
            snap.files.column("path").to_pylist(), snap.files.column("dv").to_pylist(), strict=True
        )
        if d is not None
    }
    assert sorted(deletes.column("referenced_data_file").to_pylist()) == sorted(dvs)
    for row in deletes.to_pylist():
        dv = dvs[row["referenced_data_file"]]
        assert row["record_count"] == dv["cardinality"]
        assert "/_icefloe/metadata/" in row["file_path"]
        blob = Path(row["file_path"]).read_bytes()[
            row["content_offset"] : row["content_offset"] + row["content_size_in_bytes"]
        ]
        src = Path(dv_file_path(str(root), dv["storageType"], dv["pathOrInlineDv"])).read_bytes()
        assert blob == src[dv["offset"] : dv["offset"] + dv["sizeInBytes"] + 8]


def test_reference_mode_points_at_delta_dv_files(tmp_path: Path) -> None:
    root = fixture("dml", tmp_path)
    table = convert(str(root), dv_mode="reference").table
    deletes = table.inspect.delete_files().to_pylist()
    assert deletes and all(d["file_path"].endswith(".bin") for d in deletes)
    assert all("deletion_vector_" in d["file_path"] for d in deletes)
    assert rows(read(table)) == delta_rows(expected(root, DeltaLog(str(root)).latest_version()))


def test_bounds_hold_every_value_and_timestamps_round_up(tmp_path: Path) -> None:
    root = fixture("basic", tmp_path)
    table = convert(str(root)).table
    schema = table.schema()
    for f in table.inspect.data_files().to_pylist():
        data = pq.read_table(f["file_path"])
        by_id = {
            int((data.schema.field(i).metadata or {}).get(b"PARQUET:field_id", -1)): data.column(i)
            for i in range(data.num_columns)
        }
        for fid, low in dict(f["lower_bounds"] or []).items():
            t = schema.find_field(fid).field_type
            col = by_id[fid]
            lo, hi = from_bytes(t, low), from_bytes(t, dict(f["upper_bounds"])[fid])
            assert lo <= pc.min(col).as_py() and pc.max(col).as_py() <= hi, (fid, lo, hi)
    # Delta stores ...59.999 for ...59.999999: the row must still be found with pruning.
    hit = table.scan(row_filter="ts = '2024-06-30T23:59:59.999999+00:00'").to_arrow()
    assert hit.column("id").to_pylist() == [3]
    hit = table.scan(row_filter="ntz = '2024-06-30T23:59:59.999999'").to_arrow()
    assert hit.column("id").to_pylist() == [3]


def test_schema_ids_and_name_mapping_come_from_column_mapping(tmp_path: Path) -> None:
    root = fixture("basic", tmp_path)
    table = convert(str(root)).table
    delta_schema = DeltaLog(str(root)).snapshot().metadata.schema
    mapping = json.loads(table.properties["schema.name-mapping.default"])
    columns = mapping[: len(delta_schema["fields"])]  # then Delta's own columns (reserved ids)
    assert all(m["field-id"] >= 2147483447 for m in mapping[len(columns) :])
    for f, m in zip(delta_schema["fields"], columns, strict=True):
        meta = f["metadata"]
        assert table.schema().find_field(f["name"]).field_id == meta["delta.columnMapping.id"]
        assert m["names"] == [f["name"], meta["delta.columnMapping.physicalName"]]
    assert table.metadata.last_column_id >= int(
        DeltaLog(str(root)).snapshot().metadata.configuration["delta.columnMapping.maxColumnId"]
    )


def test_sql_catalog_target(tmp_path: Path) -> None:
    root = fixture("partitioned", tmp_path)
    cat = SqlCatalog(
        "c", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    cat.create_namespace("db")
    result = convert(str(root), catalog=cat, identifier="db.events", up_to_version=1)
    assert result.mode == "full"
    result = convert(str(root), catalog=cat, identifier="db.events")
    assert result.mode == "incremental"
    loaded = cat.load_table("db.events")
    latest = DeltaLog(str(root)).latest_version()
    assert rows(read(loaded)) == delta_rows(expected(root, latest))
    assert [f.name for f in loaded.spec().fields] == ["p_int", "p_str", "p_date", "p_ts"]
    assert not (root / "_icefloe").exists()  # the catalog's warehouse holds the metadata
    cat.close()


def test_corrupt_dv_is_a_typed_error_and_nothing_is_written(tmp_path: Path) -> None:
    root = fixture("dml", tmp_path)
    bins = sorted(root.glob("deletion_vector_*.bin"))
    assert bins
    data = bytearray(bins[0].read_bytes())
    data[-1] ^= 0xFF  # the CRC of the last DV in the file
    bins[0].write_bytes(bytes(data))
    with pytest.raises(DeltaLogError, match="corrupt deletion vector") as e:
        convert(str(root))
    assert e.value.path == str(bins[0])
    assert not list(root.rglob("*.metadata.json")) and not list(root.rglob("*.puffin"))
    assert not list(root.rglob("*.avro"))
    # An incremental sync stops at the commit with the bad DV: the commits before it are
    # converted, no file of the failed one is left, and a re-run after the repair resumes.
    good = bytes(data[:-1]) + bytes([data[-1] ^ 0xFF])
    bins[0].write_bytes(good)
    convert(str(root), up_to_version=1)
    bins[0].write_bytes(bytes(data))
    with pytest.raises(DeltaLogError, match="corrupt deletion vector"):
        convert(str(root))
    table = StaticTable.from_metadata(f"{root}/_icefloe/metadata")
    stopped = int(table.properties["delta-version"])
    assert 1 <= stopped < DeltaLog(str(root)).latest_version()
    referenced = {
        path
        for snap in table.snapshots()
        for path in table.inspect.delete_files(snap.snapshot_id).column("file_path").to_pylist()
    }
    assert {str(p) for p in root.rglob("*.puffin")} == referenced
    bins[0].write_bytes(good)
    assert convert(str(root)).previous_version == stopped


def test_not_compatible_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    root = fixture("basic", tmp_path)
    log = root / "_delta_log"
    first = log / "00000000000000000000.json"
    lines = [json.loads(x) for x in first.read_text().splitlines()]
    for a in lines:
        if "metaData" in a:
            a["metaData"]["configuration"]["delta.enableIcebergCompatV3"] = "false"
    first.write_text("".join(json.dumps(a) + "\n" for a in lines))
    with pytest.raises(NotIcebergCompatibleError, match="feature-enabled"):
        convert(str(root))
    assert not (root / "_icefloe").exists()


def test_cleaned_up_log_falls_back_to_full_conversion_keeping_history(tmp_path: Path) -> None:
    root = fixture("dml", tmp_path)
    latest = DeltaLog(str(root)).latest_version()
    convert(str(root), up_to_version=1)
    # Delta's log cleanup: a checkpoint at the latest version, older commits deleted.
    snap = DeltaLog(str(root)).snapshot()
    from support.delta import checkpoint_table

    actions = [
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": sorted(snap.protocol.reader_features),
                "writerFeatures": sorted(snap.protocol.writer_features),
            }
        },
        {
            "metaData": {
                "id": snap.metadata.id,
                "schemaString": snap.metadata.schema_string,
                "partitionColumns": [],
                "configuration": snap.metadata.configuration,
                "createdTime": 0,
            }
        },
        *({"domainMetadata": d} for d in snap.domains.values()),
    ]
    for f in snap.files.to_pylist():
        a = {
            "path": f["path"],
            "partitionValues": {},
            "size": f["size"],
            "modificationTime": 0,
            "dataChange": True,
            "stats": f["stats"],
            "deletionVector": f["dv"],
            "baseRowId": f["base_row_id"],
            "defaultRowCommitVersion": f["default_row_commit_version"],
        }
        actions.append({"add": a})
    pq.write_table(
        checkpoint_table(actions), root / "_delta_log" / f"{latest:020d}.checkpoint.parquet"
    )
    for v in range(0, latest):
        (root / "_delta_log" / f"{v:020d}.json").unlink()
    result = convert(str(root))
    assert result.mode == "full" and result.previous_version == 1
    table = result.table
    assert rows(read(table)) == delta_rows(expected(root, latest))
    assert len(table.snapshots()) == 2  # the first conversion's snapshot is kept
    old = table.snapshots()[0]
    assert rows(read(table, old.snapshot_id)) == delta_rows(expected(root, 1))


def test_inline_dv_is_materialised_and_refused_in_reference_mode(tmp_path: Path) -> None:
    from icefloe.delta.dv import _Z85

    root = fixture("dml", tmp_path)
    # Rewrite the last DELETE's first DV as an inline one (Spark does not write inline DVs).
    latest = DeltaLog(str(root)).latest_version()
    path = root / "_delta_log" / f"{latest:020d}.json"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    target = next(a["add"] for a in lines if "add" in a and a["add"].get("deletionVector"))
    dv = target["deletionVector"]
    raw = Path(dv_file_path(str(root), dv["storageType"], dv["pathOrInlineDv"])).read_bytes()
    bitmap = raw[dv["offset"] + 4 : dv["offset"] + 4 + dv["sizeInBytes"]]
    padded = bitmap + b"\0" * (-len(bitmap) % 4)

    def z85(data: bytes) -> str:
        out = []
        for i in range(0, len(data), 4):
            v = int.from_bytes(data[i : i + 4], "big")
            chunk = []
            for _ in range(5):
                v, r = divmod(v, 85)
                chunk.append(_Z85[r])
            out.append("".join(reversed(chunk)))
        return "".join(out)

    target["deletionVector"] = {
        "storageType": "i",
        "pathOrInlineDv": z85(padded),
        "sizeInBytes": dv["sizeInBytes"],
        "cardinality": dv["cardinality"],
    }
    path.write_text("".join(json.dumps(a) + "\n" for a in lines))
    with pytest.raises(UnsupportedFeatureError, match="inline deletion vector"):
        convert(str(root), dv_mode="reference")
    shutil.rmtree(root / "_icefloe", ignore_errors=True)
    table = convert(str(root)).table
    assert rows(read(table)) == delta_rows(expected(root, latest))


def test_concurrent_converters_do_not_both_commit(tmp_path: Path) -> None:
    root = fixture("partitioned", tmp_path)
    convert(str(root), up_to_version=1)
    stale = StaticTable.from_metadata(f"{root}/_icefloe/metadata")
    convert(str(root), up_to_version=2)
    # A converter that loaded the table before the other one committed loses cleanly.
    from icefloe.delta.incremental import apply_commit
    from icefloe.delta.target import DirectoryCatalog

    cat = DirectoryCatalog(f"{root}/_icefloe/metadata", stale.io)
    table = Table(cat.identifier, stale.metadata, stale.metadata_location, stale.io, cat)
    with pytest.raises(CommitConflictError):
        apply_commit(DeltaLog(str(root)), table, DeltaLog(str(root)).commit(2), "puffin")


def test_public_names() -> None:
    assert callable(icefloe.delta.convert)
    assert callable(icefloe.delta.check_iceberg_compat_v3)


def test_synthetic_log_without_row_tracking_is_refused(tmp_path: Path) -> None:
    w = DeltaTableWriter(tmp_path)
    w.create(add("a.parquet", version=0), row_tracking(9), **{"delta.enableRowTracking": "false"})
    w.commit(1, commit_info())
    with pytest.raises(NotIcebergCompatibleError, match="row-tracking"):
        convert(str(tmp_path))


def test_a_commit_that_breaks_compatibility_stops_the_sync(tmp_path: Path) -> None:
    root = fixture("partitioned", tmp_path)
    latest = DeltaLog(str(root)).latest_version()
    convert(str(root), up_to_version=1)
    path = root / "_delta_log" / f"{latest:020d}.json"
    meta = DeltaLog(str(root)).snapshot().metadata
    config = dict(meta.configuration, **{"delta.enableIcebergCompatV3": "false"})
    action = {
        "metaData": {
            "id": meta.id,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": meta.schema_string,
            "partitionColumns": list(meta.partition_columns),
            "configuration": config,
        }
    }
    path.write_text(path.read_text() + json.dumps(action) + "\n")
    with pytest.raises(NotIcebergCompatibleError, match="feature-enabled"):
        convert(str(root))
    table = StaticTable.from_metadata(f"{root}/_icefloe")
    assert table.properties["delta-version"] == str(latest - 1)  # the commits before it synced
    assert convert(str(root), check=False).mode == "incremental"


def test_fallback_full_conversion_follows_schema_changes(tmp_path: Path) -> None:
    """The commits after the first conversion are gone and the schema changed meanwhile."""
    root = fixture("evolution", tmp_path)
    latest = DeltaLog(str(root)).latest_version()
    convert(str(root), up_to_version=1)
    for v in range(2, latest):
        (root / "_delta_log" / f"{v:020d}.json").unlink()
    snap_path = root / "_delta_log" / f"{latest:020d}.json"
    lines = snap_path.read_text()
    # Rebuild the latest state from the fixture copy that still has every commit.
    full = fixture("evolution", tmp_path / "full")
    state = DeltaLog(str(full)).snapshot()
    from support.delta import checkpoint_table

    actions: list[dict[str, Any]] = [
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": sorted(state.protocol.reader_features),
                "writerFeatures": sorted(state.protocol.writer_features),
            }
        },
        {
            "metaData": {
                "id": state.metadata.id,
                "schemaString": state.metadata.schema_string,
                "partitionColumns": [],
                "configuration": state.metadata.configuration,
                "createdTime": 0,
            }
        },
        *({"domainMetadata": d} for d in state.domains.values()),
    ]
    for f in state.files.to_pylist():
        actions.append(
            {
                "add": {
                    "path": f["path"],
                    "partitionValues": {},
                    "size": f["size"],
                    "modificationTime": 0,
                    "dataChange": True,
                    "stats": f["stats"],
                    "deletionVector": f["dv"],
                    "baseRowId": f["base_row_id"],
                    "defaultRowCommitVersion": f["default_row_commit_version"],
                }
            }
        )
    pq.write_table(
        checkpoint_table(actions), root / "_delta_log" / f"{latest - 1:020d}.checkpoint.parquet"
    )
    snap_path.write_text(lines)
    result = convert(str(root))
    assert result.mode == "full"
    table = result.table
    assert [f.name for f in table.schema().fields] == [f.name for f in convert_schema_of(state)]
    assert rows(read(table)) == delta_rows(expected(root, latest))
    assert rows(read(table, table.snapshots()[0].snapshot_id)) == delta_rows(expected(root, 1))


def test_fallback_full_conversion_types_partition_values_with_the_new_schema(
    tmp_path: Path,
) -> None:
    """A partition column Delta widened from int to long takes a value beyond int32, and Delta's
    log cleanup removed the commits since the last sync: the full conversion on top of the
    converted table read the partition values with the table's schema from before the widening
    and refused the table (``DeltaLogError``: not an int value), although an incremental sync
    and a fresh conversion convert it."""
    from support.delta import PROTOCOL, field, metadata

    widening = dict(
        PROTOCOL,
        readerFeatures=[*PROTOCOL["readerFeatures"], "typeWidening"],
        writerFeatures=[*PROTOCOL["writerFeatures"], "typeWidening"],
    )

    def data_file(row: int, part: int, part_type: pa.DataType, version: int) -> Any:
        """A one-row file (row id ``row - 1``) in partition ``part``."""
        name = f"p={part}/v{version}.parquet"
        (tmp_path / name).parent.mkdir()
        t = pa.table({"col-id": pa.array([row], pa.int64()), "col-p": pa.array([part], part_type)})
        pq.write_table(t, tmp_path / name)
        size = (tmp_path / name).stat().st_size
        pv = {"col-p": str(part)}
        return add(name, 1, base_row_id=row - 1, version=version, partition=pv, size=size)

    p = field("p", "integer", 2)
    s0 = {"type": "struct", "fields": [field("id", "long", 1), p]}
    widened = dict(
        p,
        type="long",
        metadata={
            **p["metadata"],
            "delta.typeChanges": [{"fromType": "integer", "toType": "long"}],
        },
    )
    s1 = {"type": "struct", "fields": [field("id", "long", 1), widened]}
    w = DeltaTableWriter(tmp_path)
    a = data_file(1, 5, pa.int32(), 0)
    m0 = metadata(s0, ("p",))
    w.commit(
        0,
        commit_info(op="CREATE TABLE"),
        {"protocol": widening},
        {"metaData": m0},
        a,
        row_tracking(0),
    )
    assert convert(str(tmp_path)).mode == "full"
    m1 = metadata(s1, ("p",))
    w.commit(1, commit_info(op="CHANGE COLUMN"), {"metaData": m1})
    b = data_file(2, 2**40, pa.int64(), 2)
    w.commit(2, commit_info(), b, row_tracking(1))
    actions = [{"protocol": widening}, {"metaData": m1}, row_tracking(1), a, b]
    w.checkpoint(2, actions)
    for v in (0, 1):
        (tmp_path / "_delta_log" / f"{v:020d}.json").unlink()
    result = convert(str(tmp_path))
    assert result.mode == "full" and result.previous_version == 0
    got = result.table.scan().to_arrow().sort_by("id")
    assert got.select(["id", "p"]).to_pylist() == [{"id": 1, "p": 5}, {"id": 2, "p": 2**40}]
    assert result.table.scan(row_filter=f"p = {2**40}").to_arrow()["id"].to_pylist() == [2]


def convert_schema_of(snap: Any) -> Any:
    from icefloe.delta.schema import convert_schema

    return convert_schema(snap.metadata.schema).fields


def test_a_table_whose_first_commit_has_data(tmp_path: Path) -> None:
    """``df.write.format("delta").save(path)`` puts the first files in version 0: the Iceberg
    snapshot takes sequence number 0 (it has no parent), so the rows read as row commit
    version 0, and version 1 follows incrementally."""
    w = DeltaTableWriter(tmp_path)
    w.create(add("a.parquet", 10, base_row_id=0, version=0), row_tracking(9))
    w.commit(1, commit_info(), add("b.parquet", 5, base_row_id=10, version=1), row_tracking(14))
    first = convert(str(tmp_path), up_to_version=0)
    snap = first.table.metadata.current_snapshot()
    assert snap is not None and snap.sequence_number == 0
    assert first.table.metadata.next_row_id == 10
    files = first.table.inspect.data_files()
    assert files.column("file_path").to_pylist() == [f"{tmp_path}/a.parquet"]
    entries = first.table.inspect.entries()
    assert entries.column("sequence_number").to_pylist() == [0]
    second = convert(str(tmp_path))
    assert (second.mode, second.snapshots) == ("incremental", 1)
    md = second.table.metadata
    assert md.last_sequence_number == 1 and md.next_row_id == 15


def test_column_defaults_become_write_defaults(tmp_path: Path) -> None:
    """Delta's literal defaults (``DEFAULT 'unknown'``, then ``SET DEFAULT 8``) are the Iceberg
    fields' write-defaults at each version; PyIceberg reads them from the metadata too."""
    from pyiceberg.table import StaticTable as PyIcebergStatic

    root = fixture("defaults", tmp_path)
    first = convert(str(root), up_to_version=2)
    want = {"label": "unknown", "qty": 7, "big": 5000000000, "ok": True, "ratio": 0.5}
    fields = {f.name: f for f in first.table.schema().fields}
    assert {k: fields[k].write_default for k in want} == want
    assert all(f.initial_default is None for f in fields.values())
    assert fields["id"].write_default is None
    later = convert(str(root))  # version 3 sets qty's default to 8, version 4 uses it
    assert later.mode == "incremental"
    fields = {f.name: f for f in later.table.schema().fields}
    assert fields["qty"].write_default == 8
    assert rows(read(later.table)) == delta_rows(expected(root, later.delta_version))
    theirs = PyIcebergStatic.from_metadata(later.table.metadata_location).schema()
    assert theirs.find_field("qty").write_default == 8
    assert theirs.find_field("label").write_default == "unknown"


def test_upgraded_table_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    """Delta 4.4.0's in-place upgrade (``ALTER TABLE … SET TBLPROPERTIES`` with column mapping
    and IcebergCompatV3) turns row tracking on without giving the older files a ``baseRowId``:
    Delta itself cannot read their row ids, and Iceberg ids for them would clash with the ones
    Delta gives later. Before the upgrade the table is not IcebergCompatV3 at all."""
    root = fixture("upgrade", tmp_path)
    log = DeltaLog(str(root))
    upgraded = next(
        v
        for v in range(log.latest_version() + 1)
        if log.snapshot(v).metadata.configuration.get("delta.enableIcebergCompatV3") == "true"
    )
    assert upgraded > 0
    for v in range(log.latest_version() + 1):
        with pytest.raises(NotIcebergCompatibleError) as info:
            convert(str(root), up_to_version=v)
        if v < upgraded:
            assert "feature-enabled" in info.value.failures
        else:
            assert info.value.failures == ("row-ids-assigned",)
            snap = log.snapshot(v)
            assert pc.any(pc.is_null(snap.files.column("base_row_id"))).as_py()
            # Even unchecked: the row ids would clash with the ones Delta assigned.
            with pytest.raises(UnsupportedFeatureError, match="no baseRowId"):
                convert(str(root), up_to_version=v, check=False)
        assert not (root / "_icefloe").exists() or not any((root / "_icefloe").rglob("*.json"))
    # Delta's own read of the rows (no row ids: Delta fails to give them) is what delta-rs reads.
    assert "_row_id" not in expected(root, log.latest_version()).column_names


def test_incremental_sync_refuses_files_without_row_ids(tmp_path: Path) -> None:
    # a full conversion refuses a live file without baseRowId in a table where Delta assigns
    # row ids; syncing the commit that adds one refuses it the same way
    root = tmp_path / "t"
    w = DeltaTableWriter(root)
    w.create(add("a.parquet", 10, base_row_id=0, version=0), row_tracking(9))
    w.commit(1, commit_info(op="WRITE"), add("b.parquet", 5, base_row_id=None))
    with pytest.raises(NotIcebergCompatibleError, match="row-ids-assigned"):
        convert(str(root), metadata_location=str(tmp_path / "full"))
    convert(str(root), metadata_location=str(tmp_path / "inc"), up_to_version=0)
    with pytest.raises(NotIcebergCompatibleError, match="row-ids-assigned"):
        convert(str(root), metadata_location=str(tmp_path / "inc"))


def test_the_name_mapping_names_delta_only_columns() -> None:
    # readers that fall back to the mapping (a file column without a field id, as the change
    # data feed's columns in rewritten files) find every file column in it
    from icefloe.delta.protocol import DeltaMetadata
    from icefloe.delta.table_metadata import mapping_json

    column = {
        "name": "a",
        "type": "long",
        "nullable": True,
        "metadata": {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-a"},
    }
    schema = json.dumps({"type": "struct", "fields": [column]})
    config = {
        "delta.rowTracking.materializedRowIdColumnName": "_row-id-col-x",
        "delta.rowTracking.materializedRowCommitVersionColumnName": "_row-commit-version-col-x",
    }
    meta = DeltaMetadata(id="t", schema_string=schema, partition_columns=(), configuration=config)
    by_name = {n: e.get("field-id") for e in json.loads(mapping_json(meta)) for n in e["names"]}
    assert by_name["col-a"] == 1 and by_name["a"] == 1
    assert by_name["_row-id-col-x"] == 2147483540
    assert by_name["_row-commit-version-col-x"] == 2147483539
    assert by_name["_change_type"] == 2147483543 and by_name["__is_cdc"] == 2147483497
