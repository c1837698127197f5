"""Hostile Delta commit lines: integers beyond their column's range, reader features that are
not strings, malformed deletion-vector descriptors and absurdly nested lines are a
:class:`DeltaLogError` naming the commit file, never an untyped ``OverflowError``,
``TypeError`` or ``RecursionError`` (found by fuzzing every leaf of the ``dml`` fixture)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import icefloe.delta
from icefloe.delta.actions import file_actions_from_dicts
from icefloe.delta.deletes import dv_descriptors
from icefloe.delta.protocol import DeltaProtocol
from icefloe.exceptions import DeltaLogError
from support.delta import (
    PROTOCOL,
    DeltaTableWriter,
    add,
    commit_info,
    fixture,
    metadata,
    row_tracking,
)
from support.delta import field as delta_field


def _edit(root: Path, version: int, kind: str, path: list[str], value: Any) -> str:
    """Sets ``path`` in the first ``kind`` action of commit ``version`` that has the field's
    parent object to ``value``; returns the commit file's path."""
    file = root / "_delta_log" / f"{version:020d}.json"
    lines = file.read_text().splitlines()
    for i, line in enumerate(lines):
        action = json.loads(line)
        target = action.get(kind)
        for key in path[:-1]:
            target = target.get(key) if isinstance(target, dict) else None
        if isinstance(target, dict):
            target[path[-1]] = value
            lines[i] = json.dumps(action)
            break
    else:
        raise AssertionError(f"no {kind} action with {path[:-1]} in {file}")
    file.write_text("\n".join(lines) + "\n")
    return str(file)


def _snapshot(root: Path) -> object:
    return icefloe.delta.DeltaLog(str(root)).snapshot().files.num_rows


def _check(root: Path) -> object:
    return icefloe.delta.check_iceberg_compat_v3(str(root), files=True).failures


def _convert(root: Path) -> object:
    return icefloe.delta.convert(str(root)).table.scan().to_arrow().num_rows


READERS = [_snapshot, _check, _convert]


# (commit version, action, field path, value): one of each class the fuzzer found.
INTEGER_CASES = [
    (1, "add", ["size"], 10**30),
    (2, "add", ["size"], 2**63),
    (1, "add", ["modificationTime"], 2**63),
    (1, "add", ["baseRowId"], 2**63),
    (3, "add", ["baseRowId"], -(2**63) - 1),
    (1, "add", ["defaultRowCommitVersion"], 10**30),
    (2, "remove", ["defaultRowCommitVersion"], 10**30),
    (3, "remove", ["size"], 10**30),
    (2, "add", ["deletionVector", "cardinality"], 2**63),
    (3, "add", ["deletionVector", "offset"], 10**30),
    (3, "add", ["deletionVector", "offset"], 2**63),
    (2, "add", ["deletionVector", "sizeInBytes"], 2**63),
    (3, "remove", ["deletionVector", "sizeInBytes"], 10**30),
    (3, "remove", ["deletionVector", "cardinality"], 2**63),
]


@pytest.mark.parametrize("read", READERS, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize(
    ("version", "kind", "path", "value"),
    INTEGER_CASES,
    ids=[f"v{v}-{k}.{'.'.join(p)}={'big' if x > 2**64 else x}" for v, k, p, x in INTEGER_CASES],
)
def test_integers_beyond_their_column_name_the_commit_file(
    tmp_path: Path,
    read: Callable[[Path], object],
    version: int,
    kind: str,
    path: list[str],
    value: int,
) -> None:
    root = fixture("dml", tmp_path)
    commit = _edit(root, version, kind, path, value)
    with pytest.raises(DeltaLogError, match="out of range") as info:
        read(root)
    assert info.value.path == commit
    assert commit in str(info.value)


@pytest.mark.parametrize("read", READERS, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize(
    "features", [[1], [2**63], ["deletionVectors", -1], [None], "columnMapping"]
)
def test_reader_features_that_are_not_strings_are_a_malformed_protocol(
    tmp_path: Path, read: Callable[[Path], object], features: Any
) -> None:
    root = fixture("dml", tmp_path)
    commit = _edit(root, 0, "protocol", ["readerFeatures"], features)
    with pytest.raises(DeltaLogError, match="readerFeatures") as info:
        read(root)
    assert info.value.path == commit


@pytest.mark.parametrize("read", READERS, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("cardinality", -1),
        ("sizeInBytes", -1),
        ("offset", -5),
        ("pathOrInlineDv", None),
        ("pathOrInlineDv", 7),
        ("storageType", None),
        ("cardinality", None),
        ("cardinality", "3"),
    ],
)
def test_malformed_deletion_vector_descriptors_name_the_commit_file(
    tmp_path: Path, read: Callable[[Path], object], field: str, value: Any
) -> None:
    root = fixture("dml", tmp_path)
    commit = _edit(root, 3, "add", ["deletionVector", field], value)
    with pytest.raises(DeltaLogError, match="deletionVector") as info:
        read(root)
    assert info.value.path == commit


def test_deletion_vector_descriptors_from_checkpoints_are_checked_too(tmp_path: Path) -> None:
    """Parquet checkpoints bypass the JSON commit checks; the converter's descriptor reader
    refuses what the protocol forbids instead of failing on it untyped."""
    root = fixture("dml", tmp_path)
    files = icefloe.delta.DeltaLog(str(root)).snapshot().files
    rows = files.to_pylist()
    with_dv = next(r for r in rows if r["dv"] is not None)
    for field, value in [("cardinality", -1), ("pathOrInlineDv", None), ("sizeInBytes", -2)]:
        bad = dict(with_dv, dv=dict(with_dv["dv"], **{field: value}))
        table = files.from_pylist([bad], schema=files.schema)
        with pytest.raises(DeltaLogError, match=field):
            dv_descriptors(str(root), table)


@pytest.mark.parametrize("read", READERS, ids=lambda f: f.__name__.strip("_"))
def test_a_deeply_nested_commit_line_names_the_commit_file(
    tmp_path: Path, read: Callable[[Path], object]
) -> None:
    root = fixture("dml", tmp_path)
    path = root / "_delta_log" / f"{5:020d}.json"
    with open(path, "a") as f:
        f.write('{"commitInfo":' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(DeltaLogError, match="nested too deeply") as info:
        read(root)
    assert info.value.path == str(path)


def test_an_over_long_integer_literal_names_the_commit_file(tmp_path: Path) -> None:
    root = fixture("dml", tmp_path)
    path = root / "_delta_log" / f"{5:020d}.json"
    with open(path, "a") as f:
        f.write('{"commitInfo":{"x":' + "9" * 5000 + "}}\n")
    with pytest.raises(DeltaLogError) as info:
        _snapshot(root)
    assert info.value.path == str(path)


def test_boundary_values_are_still_read(tmp_path: Path) -> None:
    root = fixture("dml", tmp_path)
    _edit(root, 1, "add", ["modificationTime"], 2**63 - 1)
    _edit(root, 1, "add", ["size"], 2**63 - 1)
    log = icefloe.delta.DeltaLog(str(root))
    assert log.snapshot().files.num_rows > 0
    files = log.commit(1).files
    assert files.column("modification_time").to_pylist()[0] == 2**63 - 1
    assert files.column("size").to_pylist()[0] == 2**63 - 1


def test_file_actions_from_dicts_names_the_field() -> None:
    add = {"path": "a.parquet", "size": 10**30, "modificationTime": 0, "dataChange": True}
    with pytest.raises(ValueError, match=r"add\.size"):
        file_actions_from_dicts([(True, add)], 1, 0)
    dv = {"storageType": "u", "pathOrInlineDv": "x", "sizeInBytes": 3, "cardinality": -1}
    with pytest.raises(ValueError, match=r"remove\.deletionVector\.cardinality"):
        file_actions_from_dicts([(False, dict(add, size=1, deletionVector=dv))], 1, 0)
    ok = file_actions_from_dicts([(True, dict(add, size=2**63 - 1))], 1, 0)
    assert ok.column("size").to_pylist() == [2**63 - 1]


def test_protocol_features_must_be_a_list_of_strings() -> None:
    good = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"]}
    assert DeltaProtocol.from_action(good, "f").reader_features == {"deletionVectors"}
    assert DeltaProtocol.from_action(dict(good, readerFeatures=None), "f").reader_features == set()
    for bad in ([1], "deletionVectors", {"deletionVectors": 1}, [["x"]]):
        with pytest.raises(DeltaLogError, match="readerFeatures"):
            DeltaProtocol.from_action(dict(good, readerFeatures=bad), "f")
        with pytest.raises(DeltaLogError, match="writerFeatures"):
            DeltaProtocol.from_action(dict(good, writerFeatures=bad), "f")


P_INT = "col-843e43cc-9d86-4c22-97bc-a89aa50da26c"
P_DATE = "col-a34070a3-a592-4da2-aeda-3335269a2e82"
P_TS = "col-ad3c5299-7d2d-4fee-b819-d0b9b64425a7"


@pytest.mark.parametrize(
    ("column", "value"),
    [
        (P_INT, "abc"),
        (P_INT, "99999999999"),
        (P_DATE, "2020-13-45"),
        (P_DATE, "10000-01-01"),
        (P_TS, "yesterday"),
    ],
)
def test_partition_values_that_are_not_of_their_type_are_named(
    tmp_path: Path, column: str, value: str
) -> None:
    root = fixture("partitioned", tmp_path)
    _edit(root, 1, "add", ["partitionValues", column], value)
    with pytest.raises(DeltaLogError, match=f"holds '{value}', which is not a") as info:
        _convert(root)
    assert "Z'" not in str(info.value)  # the value as the log holds it
    assert not list(root.glob("metadata/*.json"))  # nothing committed


def _partitioned_by(root: Path, delta_type: str, value: str) -> None:
    """A Delta table partitioned by ``p`` of ``delta_type``: one file with ``p`` = ``value``."""
    fields = [delta_field("id", "long", 1), delta_field("p", delta_type, 2)]
    schema = {"type": "struct", "fields": fields}
    DeltaTableWriter(root).commit(
        0,
        commit_info(),
        {"protocol": PROTOCOL},
        {"metaData": metadata(schema, ("p",))},
        add("a.parquet", 1, version=0, partition={"col-p": value}),
        row_tracking(0),
    )


def _add_partition(root: Path, value: str) -> None:
    DeltaTableWriter(root).commit(
        1,
        commit_info(),
        add("b.parquet", 1, base_row_id=1, partition={"col-p": value}),
        row_tracking(1),
    )


@pytest.mark.parametrize(
    ("delta_type", "good", "bad"),
    [
        ("boolean", "TRUE", "maybe"),
        ("boolean", "false", "1"),
        ("byte", "-128", "128"),
        ("byte", "127", "300"),
        ("short", "-32768", "-32769"),
        ("short", "32767", "70000"),
    ],
)
def test_partition_values_outside_their_delta_type_are_refused(
    tmp_path: Path, delta_type: str, good: str, bad: str
) -> None:
    """A boolean partition value other than true or false read as false, and Delta's byte and
    short (Iceberg int) took any int; Delta's readers refuse them: so does a conversion, full
    or incremental."""
    full = tmp_path / "full"
    _partitioned_by(full, delta_type, bad)
    with pytest.raises(DeltaLogError, match=f"holds '{bad}', which is not a valid {delta_type}"):
        icefloe.delta.convert(str(full))
    assert not list(full.glob("_icefloe/metadata/*.json"))  # nothing committed

    synced = tmp_path / "synced"
    _partitioned_by(synced, delta_type, good)
    first = icefloe.delta.convert(str(synced))
    expected = good.lower() == "true" if delta_type == "boolean" else int(good)
    values = first.table.inspect.data_files().column("partition").to_pylist()
    assert values == [{"p": expected}]
    _add_partition(synced, bad)
    with pytest.raises(DeltaLogError, match=f"holds '{bad}', which is not a valid {delta_type}"):
        icefloe.delta.convert(str(synced))
    _add_partition(synced, good)  # the same commit, now valid: synced
    assert icefloe.delta.convert(str(synced)).mode == "incremental"


@pytest.mark.parametrize("delta_type", ["byte", "short"])
def test_a_sync_without_the_narrow_ints_property_reads_the_delta_schema(
    tmp_path: Path, delta_type: str
) -> None:
    """A table converted before the ``delta-narrow-ints`` property existed: the sync reads
    the Delta schema in effect, refuses the out-of-range value, and records the property."""
    root = tmp_path / "t"
    _partitioned_by(root, delta_type, "1")
    table = icefloe.delta.convert(str(root)).table
    assert table.properties["delta-narrow-ints"] == f"2:{delta_type}"
    table.remove_properties("delta-narrow-ints")
    _add_partition(root, "99999")
    with pytest.raises(DeltaLogError, match=f"which is not a valid {delta_type}"):
        icefloe.delta.convert(str(root))
    _add_partition(root, "2")
    synced = icefloe.delta.convert(str(root))
    assert synced.mode == "incremental"
    assert synced.table.properties["delta-narrow-ints"] == f"2:{delta_type}"


@pytest.mark.parametrize("stats", [{"numRecords": -5}, {"numRecords": 3, "nullCount": -1}])
def test_negative_counts_in_statistics_are_refused(tmp_path: Path, stats: dict[str, int]) -> None:
    root = fixture("basic", tmp_path)  # its files stay live
    file = root / "_delta_log" / f"{1:020d}.json"
    add = next(json.loads(line)["add"] for line in file.read_text().splitlines() if '"add"' in line)
    parsed = json.loads(add["stats"])
    if "nullCount" in stats:  # every column's null count
        parsed["nullCount"] = dict.fromkeys(parsed.get("nullCount", {}), stats["nullCount"])
        assert parsed["nullCount"], parsed
        parsed["tightBounds"] = True
    else:
        parsed["numRecords"] = stats["numRecords"]
    _edit(root, 1, "add", ["stats"], json.dumps(parsed))
    with pytest.raises(DeltaLogError, match="numRecords or a nullCount is negative"):
        _convert(root)
