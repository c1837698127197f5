"""More Delta conversion checks: type changes Iceberg cannot promote, relative table paths,
absolute-path deletion vectors, unparseable statistics, malformed schemas and v2 checkpoints,
``files=True`` path decoding, in-commit timestamps at a checkpoint, renamed partition columns."""

from __future__ import annotations

import json
import os
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe import StaticTable
from icefloe.deletes import DeletionVector
from icefloe.delta import DeltaLog, check_iceberg_compat_v3, convert
from icefloe.exceptions import DeltaLogError, NotIcebergCompatibleError, UnsupportedFeatureError
from support.delta import (
    PROTOCOL,
    DeltaTableWriter,
    add,
    commit_info,
    field,
    metadata,
    remove,
    row_tracking,
)

_ARROW = {
    "integer": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", "UTC"),
    "string": pa.string(),
}


def _arrow(delta_type: str) -> pa.DataType:
    if delta_type.startswith("decimal("):
        p, s = delta_type[8:-1].split(",")
        return pa.decimal128(int(p), int(s))
    return _ARROW[delta_type]


def data_file(
    root: Path,
    schema: dict[str, Any],
    columns: dict[str, list[Any]],
    *,
    name: str | None = None,
    base_row_id: int = 0,
    version: int = 1,
    stats: dict[str, Any] | None = None,
    partition: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    """A Parquet file of ``columns`` (logical name -> values) under physical names and field
    ids, and its ``add`` action (path URL-encoded as Delta writes it)."""
    by_name = {f["name"]: f for f in schema["fields"]}
    arrays, fields = [], []
    for col, values in columns.items():
        f = by_name[col]
        t = _arrow(f["type"])
        meta = f["metadata"]
        arrays.append(pa.array(values, t))
        fid = str(meta["delta.columnMapping.id"]).encode()
        fields.append(
            pa.field(
                meta["delta.columnMapping.physicalName"], t, metadata={b"PARQUET:field_id": fid}
            )
        )
    name = name or f"part-{uuid.uuid4()}.parquet"
    pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), root / name)
    rows = len(next(iter(columns.values())))
    a = add(
        urllib.parse.quote(name),
        rows,
        base_row_id=base_row_id,
        version=version,
        stats=stats,
        partition=partition,
    )
    a["add"]["size"] = (root / name).stat().st_size
    return a


def schema_of(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


def widen(f: dict[str, Any], before: str, after: str, record: bool = True) -> dict[str, Any]:
    """Field ``f`` after Delta type widening from ``before`` to ``after`` (``record``: with the
    change in ``delta.typeChanges``, as Delta writes it)."""
    g = json.loads(json.dumps(f))
    g["type"] = after
    if record:
        g["metadata"]["delta.typeChanges"] = [{"fromType": before, "toType": after}]
    return g


WIDENING = dict(
    PROTOCOL,
    readerFeatures=[*PROTOCOL["readerFeatures"], "typeWidening"],
    writerFeatures=[*PROTOCOL["writerFeatures"], "typeWidening"],
)


def widened_table(
    root: Path, before: str, after: str, old: list[Any], new: list[Any], record: bool = True
) -> Path:
    """v0 create, v1 a file with column x of type ``before``, v2 x widened to ``after`` (the
    type change recorded as Delta does), v3 a file written with the new type."""
    x = field("x", before, 2)
    s0 = schema_of(field("id", "long", 1), x)
    w = DeltaTableWriter(root)
    w.commit(0, commit_info(op="CREATE TABLE"), {"protocol": PROTOCOL}, {"metaData": metadata(s0)})
    f1 = data_file(root, s0, {"id": [1, 2], "x": old}, base_row_id=0, version=1)
    w.commit(1, commit_info(), f1, row_tracking(1))
    s1 = schema_of(field("id", "long", 1), widen(x, before, after, record))
    w.commit(
        2,
        commit_info(op="CHANGE COLUMN"),
        {"protocol": WIDENING},
        {"metaData": metadata(s1, **{"delta.enableTypeWidening": "true"})},
    )
    f2 = data_file(root, s1, {"id": [3], "x": new}, base_row_id=2, version=3)
    w.commit(3, commit_info(), f2, row_tracking(2))
    return root


ILLEGAL = [
    ("integer", "double", [1, -5], [0.5]),
    ("decimal(5,2)", "decimal(10,4)", ["1.50", "-2.25"], ["123456.7890"]),
    ("integer", "decimal(12,2)", [1, -5], ["0.50"]),
]


def _values(t: str, vs: list[Any]) -> list[Any]:
    import decimal

    return [decimal.Decimal(v) for v in vs] if t.startswith("decimal") else vs


@pytest.mark.parametrize(("before", "after", "old", "new"), ILLEGAL)
def test_type_changes_iceberg_cannot_promote_fail_the_check(
    tmp_path: Path, before: str, after: str, old: list[Any], new: list[Any]
) -> None:
    root = widened_table(tmp_path / "t", before, after, _values(before, old), _values(after, new))
    report = check_iceberg_compat_v3(str(root))
    assert [f.requirement for f in report.failures] == ["type-widening"]
    assert f"{before} -> {after}" in report.failures[0].message
    with pytest.raises(NotIcebergCompatibleError, match="type-widening"):
        convert(str(root))
    # the version before the change is fine
    assert check_iceberg_compat_v3(str(root), version=1).ok


def test_iceberg_promotions_pass_the_check_beside_an_illegal_one(tmp_path: Path) -> None:
    """int -> long, short -> int, decimal precision at the same scale and date ->
    timestamp_ntz pass; int -> double fails, named alone."""
    fields = [
        field("id", "long", 1),
        widen(field("a", "integer", 2), "integer", "long"),
        widen(field("b", "decimal(5,2)", 3), "decimal(5,2)", "decimal(10,2)"),
        widen(field("c", "date", 4), "date", "timestamp_ntz"),
        widen(field("d", "short", 5), "short", "integer"),
        widen(field("x", "integer", 6), "integer", "double"),
    ]
    w = DeltaTableWriter(tmp_path)
    w.commit(
        0,
        commit_info(op="CREATE TABLE"),
        {"protocol": WIDENING},
        {"metaData": metadata(schema_of(*fields), **{"delta.columnMapping.maxColumnId": "6"})},
    )
    failures = check_iceberg_compat_v3(str(tmp_path)).failures
    assert [(f.requirement, f.message.split(":")[0]) for f in failures] == [("type-widening", "x")]


@pytest.mark.parametrize(("before", "after", "old", "new"), ILLEGAL)
def test_an_illegal_type_change_is_refused_unchecked_before_anything_is_written(
    tmp_path: Path, before: str, after: str, old: list[Any], new: list[Any]
) -> None:
    root = widened_table(tmp_path / "t", before, after, _values(before, old), _values(after, new))
    with pytest.raises(NotIcebergCompatibleError, match=r"type-widening|no Iceberg"):
        convert(str(root), check=False)
    assert not (root / "_icefloe").exists()


@pytest.mark.parametrize(("before", "after", "old", "new"), ILLEGAL)
def test_an_illegal_type_change_stops_an_unchecked_incremental_sync(
    tmp_path: Path, before: str, after: str, old: list[Any], new: list[Any]
) -> None:
    root = widened_table(tmp_path / "t", before, after, _values(before, old), _values(after, new))
    first = convert(str(root), up_to_version=1)
    with pytest.raises(NotIcebergCompatibleError):
        convert(str(root), check=False)
    table = StaticTable.from_metadata(first.table.metadata_location)
    assert table.properties["delta-version"] == "1"
    fresh = convert(str(root), up_to_version=1)  # still at version 1: nothing to do
    assert fresh.mode == "unchanged"
    assert str(fresh.table.schema().find_field("x").field_type) == str(
        first.table.schema().find_field("x").field_type
    )


def test_a_type_change_without_its_record_is_refused_by_the_sync(tmp_path: Path) -> None:
    """The schema's type changed from int to double with no ``delta.typeChanges``: the sync
    compares the schemas by Iceberg's evolution rules."""
    root = widened_table(tmp_path / "t", "integer", "double", [1, -5], [0.5], record=False)
    assert "typeChanges" not in (root / "_delta_log" / f"{2:020d}.json").read_text()
    convert(str(root), up_to_version=1)
    with pytest.raises(NotIcebergCompatibleError, match="int to double"):
        convert(str(root), check=False)


def test_bounds_of_a_column_widened_from_float_hold_the_stored_floats(tmp_path: Path) -> None:
    """A float column widened to double: the statistics of files written before hold float32
    values in their shortest text (0.1 for the stored 0.1f, which reads as
    0.10000000149011612). A full conversion used them as exact doubles, so ``x > 0.1`` or
    ``x = 0.10000000149011612`` skipped the file holding the matching row."""
    x = field("x", "float", 2)
    s0 = schema_of(field("id", "long", 1), x)
    w = DeltaTableWriter(tmp_path)
    # what Delta writes for a float column: Jackson prints 0.1f as 0.1
    old = {"numRecords": 2, "minValues": {"col-x": -0.3}, "maxValues": {"col-x": 0.1}}
    f1 = data_file(tmp_path, s0, {"id": [1, 2], "x": [0.1, -0.3]}, version=0, stats=old)
    create = {"metaData": metadata(s0)}
    w.commit(0, commit_info(op="CREATE TABLE"), {"protocol": WIDENING}, create, f1, row_tracking(1))
    s1 = schema_of(field("id", "long", 1), widen(x, "float", "double"))
    w.commit(1, commit_info(op="CHANGE COLUMN"), {"metaData": metadata(s1)})
    new = {"numRecords": 1, "minValues": {"col-x": 0.1}, "maxValues": {"col-x": 0.1}}
    f2 = data_file(tmp_path, s1, {"id": [3], "x": [0.1]}, base_row_id=2, version=2, stats=new)
    w.commit(2, commit_info(), f2, row_tracking(2))
    result = convert(str(tmp_path))
    assert result.mode == "full"
    table = result.table
    stored = {r["id"]: r["x"] for r in table.scan().to_arrow().to_pylist()}
    assert stored == {1: 0.10000000149011612, 2: -0.30000001192092896, 3: 0.1}
    for flt, want in [
        ("x > 0.1", [1]),
        ("x = 0.10000000149011612", [1]),
        ("x >= 0.10000000149011612", [1]),
        ("x < -0.3", [2]),
        ("x = -0.30000001192092896", [2]),
        ("x = 0.1", [3]),
    ]:
        got = table.scan(row_filter=flt).to_arrow().column("id").to_pylist()
        assert sorted(got) == want, flt


@pytest.mark.parametrize("before_restore", ["not synced", "synced", "synced, state unset"])
def test_a_file_restored_after_widening_from_float_keeps_float32_bounds(
    tmp_path: Path, before_restore: str
) -> None:
    """A file written while ``x`` was a float, removed after ``x`` became a double and re-added
    by RESTORE: the incremental sync took its statistics (0.1 for the stored 0.1f) as exact
    doubles, so ``x > 0.1`` skipped the file and lost its row; it now widens them to the
    float32 bounds, as a full conversion does (also for a table converted before the sync
    recorded the widened columns)."""
    x = field("x", "float", 2)
    s0 = schema_of(field("id", "long", 1), x)
    w = DeltaTableWriter(tmp_path)
    stats = {"numRecords": 1, "minValues": {"col-x": 0.1}, "maxValues": {"col-x": 0.1}}
    f1 = data_file(tmp_path, s0, {"id": [1], "x": [0.1]}, version=0, stats=stats)
    create = {"metaData": metadata(s0)}
    w.commit(0, commit_info(op="CREATE TABLE"), {"protocol": WIDENING}, create, f1, row_tracking(0))
    assert convert(str(tmp_path)).mode == "full"
    s1 = schema_of(field("id", "long", 1), widen(x, "float", "double"))
    w.commit(1, commit_info(op="CHANGE COLUMN"), {"metaData": metadata(s1)})
    gone = remove(f1["add"]["path"])
    w.commit(2, commit_info(op="DELETE"), gone)
    if before_restore != "not synced":  # the sync of the RESTORE then sees no metaData action
        synced = convert(str(tmp_path))
        assert synced.mode == "incremental"
        assert synced.table.properties["delta-float-widened"] == "2"
        if before_restore == "synced, state unset":
            synced.table.remove_properties("delta-float-widened")
    w.commit(3, commit_info(op="RESTORE"), f1)
    result = convert(str(tmp_path))
    assert result.mode == "incremental"
    table = result.table
    assert table.scan().to_arrow().to_pylist() == [{"id": 1, "x": float(np.float32(0.1))}]
    for flt in ("x > 0.1", "x = 0.10000000149011612", "x >= 0.10000000149011612"):
        assert table.scan(row_filter=flt).to_arrow().column("id").to_pylist() == [1], flt
    assert table.scan(row_filter="x = 0.1").to_arrow().num_rows == 0


# -- relative table paths ------------------------------------------------------------------------


def test_a_relative_delta_path_gives_absolute_locations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    s = schema_of(field("id", "long", 1))
    w = DeltaTableWriter(root)
    f = data_file(root, s, {"id": [1, 2]}, version=0)
    w.commit(
        0,
        commit_info(op="CREATE TABLE"),
        {"protocol": PROTOCOL},
        {"metaData": metadata(s, **{"delta.columnMapping.maxColumnId": "1"})},
        f,
        row_tracking(1),
    )
    monkeypatch.chdir(tmp_path)
    assert DeltaLog("t").location == str(root)
    assert DeltaLog("./t/").location == str(root)
    result = convert("t")
    assert result.metadata_location.startswith(str(root / "_icefloe" / "metadata"))
    assert not (root / "t").exists()
    meta = json.loads(Path(result.metadata_location).read_text())
    assert meta["location"] == str(root)
    assert meta["properties"]["write.metadata.path"] == str(root / "_icefloe" / "metadata")
    assert all(os.path.isabs(s["manifest-list"]) for s in meta["snapshots"])
    monkeypatch.chdir("/")
    table = StaticTable.from_metadata(result.metadata_location)
    paths = table.inspect.data_files().column("file_path").to_pylist()
    assert paths and all(p.startswith(str(root)) for p in paths)
    assert table.scan().to_arrow().column("id").to_pylist() == [1, 2]


# -- deletion vectors stored by absolute path ----------------------------------------------------


@pytest.mark.parametrize("dv_mode", ["puffin", "reference"])
def test_an_absolute_path_dv_is_uri_decoded(tmp_path: Path, dv_mode: str) -> None:
    root = tmp_path / "dir with space"
    root.mkdir()
    s = schema_of(field("id", "long", 1))
    w = DeltaTableWriter(root)
    f = data_file(root, s, {"id": [1, 2, 3]}, version=0)
    w.commit(
        0,
        commit_info(op="CREATE TABLE"),
        {"protocol": PROTOCOL},
        {"metaData": metadata(s, **{"delta.columnMapping.maxColumnId": "1"})},
        f,
        row_tracking(2),
    )
    blob = DeletionVector.from_positions([1]).to_blob()
    dv_file = root / f"deletion_vector_{uuid.uuid4()}.bin"
    dv_file.write_bytes(b"\x01" + blob)
    dv = {
        "storageType": "p",
        "pathOrInlineDv": "file://" + urllib.parse.quote(str(dv_file)),
        "offset": 1,
        "sizeInBytes": len(blob) - 8,
        "cardinality": 1,
    }
    assert "%20" in dv["pathOrInlineDv"]
    body = dict(f["add"], deletionVector=dv, dataChange=True)
    w.commit(1, commit_info(op="DELETE"), remove(body["path"]), {"add": body})
    result = convert(str(root), dv_mode=dv_mode)
    assert sorted(result.table.scan().to_arrow().column("id").to_pylist()) == [1, 3]
    if dv_mode == "reference":
        deletes = result.table.inspect.delete_files().column("file_path").to_pylist()
        assert deletes == [f"file://{dv_file}"]


def test_dvs_sharing_a_delta_dv_file_record_its_whole_size(tmp_path: Path) -> None:
    """``dv_mode="reference"`` with two DVs in one Delta DV file: each delete-file entry gave
    the end of its own DV as ``file_size_in_bytes`` (the first less than the file); the
    field is the whole file's size, the same for both."""
    s = schema_of(field("id", "long", 1))
    w = DeltaTableWriter(tmp_path)
    files = [data_file(tmp_path, s, {"id": [i * 3, i * 3 + 1, i * 3 + 2]}) for i in range(2)]
    meta = {"metaData": metadata(s, **{"delta.columnMapping.maxColumnId": "1"})}
    w.commit(0, commit_info(op="CREATE TABLE"), {"protocol": PROTOCOL}, meta, *files)
    blobs = [DeletionVector.from_positions(p).to_blob() for p in ([0], [1, 2])]
    dv_file = tmp_path / f"deletion_vector_{uuid.uuid4()}.bin"
    dv_file.write_bytes(b"\x01" + b"".join(blobs))
    actions, offset = [], 1
    for f, blob, n in zip(files, blobs, (1, 2), strict=True):
        dv = {
            "storageType": "p",
            "pathOrInlineDv": dv_file.as_uri(),
            "offset": offset,
            "sizeInBytes": len(blob) - 8,
            "cardinality": n,
        }
        offset += len(blob)
        actions += [remove(f["add"]["path"]), {"add": dict(f["add"], deletionVector=dv)}]
    w.commit(1, commit_info(op="DELETE"), *actions)
    table = convert(str(tmp_path), dv_mode="reference").table
    deletes = table.inspect.delete_files().to_pylist()
    assert [d["content_offset"] for d in sorted(deletes, key=lambda d: d["content_offset"])] == [
        1,
        1 + len(blobs[0]),
    ]
    size = dv_file.stat().st_size
    assert [d["file_size_in_bytes"] for d in deletes] == [size, size]
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]


# -- statistics that cannot be parsed ------------------------------------------------------------


def test_unparseable_bounds_are_dropped_for_that_file_and_column(tmp_path: Path) -> None:
    s = schema_of(
        field("id", "long", 1),
        field("ts", "timestamp", 2),
        field("ntz", "timestamp_ntz", 3),
        field("d", "date", 4),
        field("i", "integer", 5),
    )
    good = {
        "numRecords": 1,
        "minValues": {
            "col-id": 1,
            "col-ts": "2024-01-01T00:00:00.000Z",
            "col-ntz": "2024-01-01T00:00:00.000",
            "col-d": "2024-01-01",
            "col-i": 5,
        },
        "nullCount": {"col-id": 0, "col-ts": 0, "col-ntz": 0, "col-d": 0, "col-i": 0},
    }
    good["maxValues"] = dict(good["minValues"])
    bad = json.loads(json.dumps(good))
    bad["maxValues"].update(
        {
            "col-ts": "2024-01-01 00:00:00.000",  # no zone for a timestamp with time zone
            "col-ntz": "2024-01-01T00:00:00.000Z",  # a zone for one without
            "col-d": "2024-13-45",
            "col-i": 99999999999,  # beyond int
        }
    )
    w = DeltaTableWriter(tmp_path)
    w.commit(
        0,
        commit_info(op="CREATE TABLE"),
        {"protocol": PROTOCOL},
        {"metaData": metadata(s, **{"delta.columnMapping.maxColumnId": "5"})},
        add("bad.parquet", 1, base_row_id=0, version=0, stats=bad),
        add("good.parquet", 1, base_row_id=1, version=0, stats=good),
        row_tracking(1),
    )
    table = convert(str(tmp_path)).table
    files = {
        r["file_path"].rsplit("/", 1)[-1]: r
        for r in table.inspect.data_files()
        .select(["file_path", "lower_bounds", "upper_bounds"])
        .to_pylist()
    }
    assert sorted(k for k, _ in files["good.parquet"]["upper_bounds"]) == [1, 2, 3, 4, 5]
    assert sorted(k for k, _ in files["bad.parquet"]["upper_bounds"]) == [1]
    assert files["bad.parquet"]["lower_bounds"] == files["good.parquet"]["lower_bounds"]
    assert sorted(k for k, _ in files["bad.parquet"]["lower_bounds"]) == [1, 2, 3, 4, 5]


# -- malformed schemas and v2 checkpoint actions -------------------------------------------------


@pytest.mark.parametrize(
    ("schema_string", "match"),
    [
        (json.dumps(schema_of({"name": "a", "nullable": True, "metadata": {}})), "no type"),
        ("[]", "struct object"),
        (json.dumps({"type": "struct", "fields": {"a": 1}}), "must be a list"),
        (json.dumps(schema_of({"type": "long"})), "without a name"),
        (json.dumps(schema_of(field("a", {"type": "array"}, 1))), "elementType"),
        (
            json.dumps(
                schema_of(
                    {"name": "id", "type": "long", "metadata": {"delta.columnMapping.id": "abc"}}
                )
            ),
            "not an integer",
        ),
    ],
)
def test_a_malformed_schema_is_a_delta_log_error(
    tmp_path: Path, schema_string: str, match: str
) -> None:
    meta = metadata()
    meta["schemaString"] = schema_string
    w = DeltaTableWriter(tmp_path)
    w.commit(0, commit_info(op="CREATE TABLE"), {"protocol": PROTOCOL}, {"metaData": meta})
    with pytest.raises(DeltaLogError, match=match):
        convert(str(tmp_path))


def _v2_checkpoint(root: Path, extra: list[Any], sidecar: dict[str, Any] | None = None) -> None:
    w = DeltaTableWriter(root)
    proto = dict(
        PROTOCOL,
        readerFeatures=[*PROTOCOL["readerFeatures"], "v2Checkpoint"],
        writerFeatures=[*PROTOCOL["writerFeatures"], "v2Checkpoint"],
    )
    w.commit(0, commit_info(op="CREATE TABLE"), {"protocol": proto}, {"metaData": metadata()})
    w.commit(1, commit_info(), add("a.parquet", 2, version=1), row_tracking(1))
    lines: list[Any] = [
        {"checkpointMetadata": {"version": 1}},
        {"protocol": proto},
        {"metaData": metadata()},
        add("a.parquet", 2, version=1),
        *extra,
    ]
    if sidecar is not None:
        lines.append({"sidecar": sidecar})
    name = f"{1:020d}.checkpoint.{uuid.uuid4()}.json"
    (w.log / name).write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.mark.parametrize(
    ("extra", "sidecar", "match"),
    [
        ([], {"sizeInBytes": 1}, "sidecar without a path"),
        ([{"domainMetadata": {"configuration": "{}"}}], None, "without a domain"),
        ([5], None, "not an object"),
        ([{"add": [1]}], None, "add action that is not an object"),
    ],
)
def test_malformed_v2_checkpoint_actions_are_delta_log_errors(
    tmp_path: Path, extra: list[Any], sidecar: dict[str, Any] | None, match: str
) -> None:
    _v2_checkpoint(tmp_path, extra, sidecar)
    with pytest.raises(DeltaLogError, match=match) as e:
        DeltaLog(str(tmp_path)).snapshot()
    assert e.value.path is not None and ".checkpoint." in e.value.path


# -- check-delta --files and encoded paths -------------------------------------------------------


def test_file_checks_decode_paths_once(tmp_path: Path) -> None:
    s = schema_of(field("id", "long", 1))
    w = DeltaTableWriter(tmp_path)
    f = data_file(tmp_path, s, {"id": [1]}, name="data%41.parquet", version=0)
    assert f["add"]["path"] == "data%2541.parquet"
    w.commit(
        0,
        commit_info(op="CREATE TABLE"),
        {"protocol": PROTOCOL},
        {"metaData": metadata(s, **{"delta.columnMapping.maxColumnId": "1"})},
        f,
        row_tracking(0),
    )
    report = check_iceberg_compat_v3(str(tmp_path), files=True)
    assert report.ok, report.failures


# -- in-commit timestamps at a checkpoint's version ----------------------------------------------


def test_the_in_commit_timestamp_of_a_checkpoint_version_is_used(tmp_path: Path) -> None:
    t0 = 1_750_000_000_000
    w = DeltaTableWriter(tmp_path)
    meta = metadata(**{"delta.enableInCommitTimestamps": "true"})
    w.commit(0, commit_info(t0, "CREATE TABLE"), {"protocol": PROTOCOL}, {"metaData": meta})
    a = add("a.parquet", 2, version=1)
    w.commit(1, commit_info(t0 + 1000), a, row_tracking(1))
    w.checkpoint(1, [{"protocol": PROTOCOL}, {"metaData": meta}, a, row_tracking(1)])
    for p in w.log.glob("*.json"):
        os.utime(p, (946684800, 946684800))  # copied: the files' times say nothing
    log = DeltaLog(str(tmp_path))
    assert log.snapshot(1).checkpoint is not None
    assert log.snapshot(1).timestamp_ms == t0 + 1000
    assert log.snapshot(0).timestamp_ms == t0
    assert convert(str(tmp_path)).table.properties["delta-timestamp"] == str(t0 + 1000)


# -- renamed partition columns -------------------------------------------------------------------


def test_renaming_a_partition_column_keeps_the_sync_going(tmp_path: Path) -> None:
    s0 = schema_of(field("id", "long", 1), field("p", "string", 2))
    w = DeltaTableWriter(tmp_path)
    f1 = data_file(tmp_path, s0, {"id": [1], "p": ["a"]}, version=0, partition={"col-p": "a"})
    conf = {"delta.columnMapping.maxColumnId": "2"}
    w.commit(
        0,
        commit_info(op="CREATE TABLE"),
        {"protocol": PROTOCOL},
        {"metaData": metadata(s0, ("p",), **conf)},
        f1,
        row_tracking(0),
    )
    first = convert(str(tmp_path))
    renamed = json.loads(json.dumps(s0))
    renamed["fields"][1]["name"] = "region"  # the physical name and id stay
    w.commit(
        1, commit_info(op="RENAME COLUMN"), {"metaData": metadata(renamed, ("region",), **conf)}
    )
    f2 = data_file(
        tmp_path,
        renamed,
        {"id": [2], "region": ["b"]},
        base_row_id=1,
        version=2,
        partition={"col-p": "b"},
    )
    w.commit(2, commit_info(), f2, row_tracking(1))
    result = convert(str(tmp_path))
    assert result.mode == "incremental" and result.delta_version == 2
    table = result.table
    assert [f.source_id for f in table.spec().fields] == [2]
    assert table.schema().find_field(2).name == "region"
    got = sorted(table.scan().to_arrow().select(["id", "region"]).to_pylist(), key=str)
    assert got == [{"id": 1, "region": "a"}, {"id": 2, "region": "b"}]
    assert first.table.metadata_location != table.metadata_location
    # a different column as the partition column is still refused
    s3 = schema_of(*renamed["fields"], field("q", "string", 3))
    w.commit(
        3,
        commit_info(op="REPLACE"),
        {"metaData": metadata(s3, ("q",), **{"delta.columnMapping.maxColumnId": "3"})},
    )
    with pytest.raises(UnsupportedFeatureError, match="partition columns changed"):
        convert(str(tmp_path))


def test_a_renamed_partition_column_renames_the_partition_field(tmp_path: Path) -> None:
    """After a Delta partition column is renamed, the synced table's partition field carries the
    new name (as a full conversion names it) instead of keeping the old one; a column that then
    takes the old name is refused with advice, since earlier specs keep that name."""
    s0 = schema_of(field("id", "long", 1), field("p", "integer", 2))
    w = DeltaTableWriter(tmp_path)
    conf = {"delta.columnMapping.maxColumnId": "2"}
    f1 = data_file(tmp_path, s0, {"id": [1], "p": [7]}, version=0, partition={"col-p": "7"})
    meta0 = {"metaData": metadata(s0, ("p",), **conf)}
    w.commit(0, commit_info(op="CREATE TABLE"), {"protocol": PROTOCOL}, meta0, f1, row_tracking(0))
    convert(str(tmp_path))
    renamed = json.loads(json.dumps(s0))
    renamed["fields"][1]["name"] = "q"  # the physical name and id stay
    w.commit(1, commit_info(op="RENAME COLUMN"), {"metaData": metadata(renamed, ("q",), **conf)})
    synced = convert(str(tmp_path)).table
    full = convert(str(tmp_path), metadata_location=str(tmp_path / "full")).table

    def fields(spec: Any) -> list[tuple[int, int, str, str]]:
        return [(f.source_id, f.field_id, str(f.transform), f.name) for f in spec.fields]

    assert fields(synced.spec()) == fields(full.spec()) == [(2, 1000, "identity", "q")]
    assert synced.scan(row_filter="q = 7").to_arrow().column("id").to_pylist() == [1]
    added = field("p", "string", 3)
    added["metadata"]["delta.columnMapping.physicalName"] = "col-p2"
    s2 = schema_of(*renamed["fields"], added)
    conf2 = {"delta.columnMapping.maxColumnId": "3"}
    w.commit(2, commit_info(op="ADD COLUMNS"), {"metaData": metadata(s2, ("q",), **conf2)})
    with pytest.raises(UnsupportedFeatureError, match="convert into a new table"):
        convert(str(tmp_path))
    fresh = convert(str(tmp_path), metadata_location=str(tmp_path / "fresh")).table
    assert fresh.scan().to_arrow().to_pylist() == [{"id": 1, "q": 7, "p": None}]


@pytest.mark.parametrize(
    ("f", "partitions", "match"),
    [
        (widen(field("c", "date", 2), "date", "timestamp_ntz"), ("c",), "partition column"),
        (
            field(
                "m",
                {"type": "map", "keyType": "long", "valueType": "string"},
                2,
                {"col-m.key": 3, "col-m.value": 4},
            )
            | {
                "metadata": {
                    "delta.columnMapping.id": 2,
                    "delta.columnMapping.physicalName": "col-m",
                    "delta.columnMapping.nested.ids": {"col-m.key": 3, "col-m.value": 4},
                    "delta.typeChanges": [
                        {"fromType": "integer", "toType": "long", "fieldPath": "key"}
                    ],
                }
            },
            (),
            "map key",
        ),
    ],
)
def test_promotions_iceberg_forbids_in_place_fail_the_check(
    tmp_path: Path, f: dict[str, Any], partitions: tuple[str, ...], match: str
) -> None:
    """date -> timestamp_ntz changes a partition column's identity values; a map key's type
    never changes in Iceberg."""
    w = DeltaTableWriter(tmp_path)
    s = schema_of(field("id", "long", 1), f)
    conf = {"delta.columnMapping.maxColumnId": "4"}
    w.commit(
        0, commit_info(), {"protocol": WIDENING}, {"metaData": metadata(s, partitions, **conf)}
    )
    failures = check_iceberg_compat_v3(str(tmp_path)).failures
    assert [x.requirement for x in failures] == ["type-widening"]
    assert match in failures[0].message
