"""A spec whose source column was dropped keeps its partition type: ``identity(cat)`` on a string
column, the field removed from the spec and then ``cat`` dropped. Manifests written afterwards
for the old spec (delete files of merge-on-read deletes and ``delete_by_keys``, the data
manifests a copy-on-write delete, compaction or ``rewrite_manifests`` rewrites) type the tuple
from the newest schema that still has ``cat`` (a string), not ``unknown`` (Avro bytes), so
PyIceberg 0.12 matches the deletes to their data files' partitions."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from icefloe.exceptions import CorruptFileError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.table import producer as producer_module
from icefloe.table import rewrite_manifests as rewrite_manifests_module
from icefloe.table.table import Table
from icefloe.transforms import parse_transform
from icefloe.types import IntegerType, LongType, NestedField, StringType, UnknownType
from support.write_util import catalog, pyiceberg_read

pytestmark = pytest.mark.interop

SPEC_ID = 1  # the spec partitioned by identity(cat)


def _table(tmp_path: Path, version: int, props: dict[str, str]) -> Table:
    """A table partitioned by ``identity(cat)`` holding ids 1..4 (cat 'a', 'a', 'b', 'b'; one
    append per partition), then unpartitioned with ``cat`` dropped."""
    cat = catalog(tmp_path)
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("cat", pa.string())])
    t = cat.create_table("ns.t", schema, format_version=version, properties=props)
    with t.update_spec() as s:
        s.add_field("cat", "identity")
    data = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "cat": ["a", "a", "b", "b"]})
    t.append(data.slice(0, 2))  # two manifests of spec 1, for rewrite_manifests to merge
    t.append(data.slice(2, 2))
    with t.update_spec() as s:
        s.remove_field("cat")
    with t.update_schema() as u:
        u.delete_column("cat")
    return t.refresh()


def _spec_manifests(t: Table) -> list[tuple[int, Any, list[Any]]]:
    """(content, Avro type of the ``cat`` partition field, its values) of each manifest of the
    current snapshot written for the ``identity(cat)`` spec."""
    snap = t.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    out = []
    with open(snap.manifest_list.removeprefix("file://"), "rb") as f:
        listed: list[Any] = list(fastavro.reader(f))
    for m in listed:
        if m["partition_spec_id"] != SPEC_ID:
            continue
        with open(m["manifest_path"].removeprefix("file://"), "rb") as f:
            r = fastavro.reader(f)
            avro = json.loads(r.metadata["avro.schema"])
            entries: list[Any] = list(r)
        df = next(x for x in avro["fields"] if x["name"] == "data_file")["type"]
        part = next(x for x in df["fields"] if x["name"] == "partition")["type"]["fields"]
        ptype = next(x["type"] for x in part if x["name"] == "cat")
        out.append((m["content"], ptype, [e["data_file"]["partition"]["cat"] for e in entries]))
    return out


def _check(t: Table, expected: list[int], contents: set[int], peer: bool = True) -> None:
    """Every spec-1 manifest types ``cat`` as a string and holds strings; icefloe and (with
    ``peer``; PyIceberg 0.12 reads no equality deletes) PyIceberg read ``expected``."""
    t = t.refresh()
    manifests = _spec_manifests(t)
    assert {c for c, _, _ in manifests} >= contents
    for content, ptype, values in manifests:
        assert ptype == ["null", "string"], (content, ptype)
        assert values and all(v in ("a", "b") for v in values), (content, values)
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == expected
    assert sorted(t.scan(row_filter="id > 1").to_arrow().column("id").to_pylist()) == [
        i for i in expected if i > 1
    ]
    if peer:
        assert sorted(pyiceberg_read(t).column("id").to_pylist()) == expected


def _maintain(t: Table, expected: list[int], peer: bool = True) -> None:
    """rewrite_manifests (merging the two spec-1 data manifests, unless a commit's manifest
    merge already did: an older spec's manifests are merged whatever their number) and then
    compaction (removing the deletes it applied) keep the spec-1 types and the rows."""
    t.rewrite_manifests()
    assert [c for c, _, _ in _spec_manifests(t.refresh())].count(0) == 1  # merged
    _check(t, expected, {0}, peer)
    t.rewrite_data_files(min_input_files=1, remove_dangling_deletes=True)
    t = t.refresh()
    for _, ptype, _ in _spec_manifests(t):
        assert ptype == ["null", "string"]
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == expected
    assert sorted(pyiceberg_read(t).column("id").to_pylist()) == expected


@pytest.mark.parametrize(("version", "granularity"), [(2, "partition"), (2, "file"), (3, "file")])
def test_merge_on_read_delete_keeps_partition_type(
    tmp_path: Path, version: int, granularity: str
) -> None:
    props = {"write.delete.mode": "merge-on-read", "write.delete.granularity": granularity}
    t = _table(tmp_path, version, props)
    t.delete("id = 1")  # a position delete file (v2) or a DV (v3) of a spec-1 data file
    _check(t, [2, 3, 4], {0, 1})
    _maintain(t, [2, 3, 4])


@pytest.mark.parametrize("version", [2, 3])
def test_equality_delete_keeps_partition_type(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version, {})
    t.delete_by_keys({"id": [1, 3]}, ["id"])
    _check(t, [2, 4], {0, 1}, peer=False)
    _maintain(t, [2, 4], peer=False)  # PyIceberg reads the compacted table


@pytest.mark.parametrize("version", [2, 3])
def test_copy_on_write_delete_keeps_partition_type(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version, {"write.delete.mode": "copy-on-write"})
    t.delete("id = 1")  # rewrites the manifest of the cat='a' file with a DELETED entry
    _check(t, [2, 3, 4], {0})
    _maintain(t, [2, 3, 4])


def test_new_column_with_the_dropped_name(tmp_path: Path) -> None:
    """A column added later under the dropped column's name (a new id, another type) does not
    type the old spec's tuples."""
    t = _table(tmp_path, 3, {"write.delete.mode": "merge-on-read"})
    with t.update_schema() as u:
        u.add_column("cat", IntegerType())
    t = t.refresh()
    t.delete("id = 4")
    _check(t, [1, 2, 3], {0, 1})
    _maintain(t, [1, 2, 3])


def _deleted_with_bytes_tuples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The copy-on-write table after a delete whose spec-1 manifest holds bytes tuples (typed
    from the current schema alone, as older versions wrote them)."""
    # unmerged, as those versions left the two spec-1 manifests after a delete
    props = {"write.delete.mode": "copy-on-write", "commit.manifest-merge.enabled": "false"}
    t = _table(tmp_path, 2, props)
    with monkeypatch.context() as m:
        old = lambda md, spec: md.current_schema()  # noqa: E731
        m.setattr(producer_module, "spec_schema", old, raising=False)
        t.delete("id = 1")
    return t.refresh()


def test_rewrite_manifests_repairs_bytes_tuples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spec-1 manifest written with bytes tuples (as older versions wrote them: typed from
    the current schema alone) is cast back to the spec's string type by rewrite_manifests."""
    t = _deleted_with_bytes_tuples(tmp_path, monkeypatch)
    assert ["null", "bytes"] in [p for _, p, _ in _spec_manifests(t)]
    t.rewrite_manifests()
    _check(t, [2, 3, 4], {0})


def test_rewrite_manifests_mismatch_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Manifests of one spec whose entries still disagree after the cast raise CorruptFileError
    naming the spec, not a bare ArrowInvalid."""
    t = _deleted_with_bytes_tuples(tmp_path, monkeypatch)
    keep: Callable[..., Any] = lambda batch, *_: batch  # noqa: E731
    monkeypatch.setattr(rewrite_manifests_module, "cast_partition_type", keep, raising=False)
    with pytest.raises(CorruptFileError, match="partition spec 1"):
        t.rewrite_manifests()


def test_partition_type_from_history() -> None:
    from icefloe.partitioning import partition_source_schema

    old = Schema(NestedField(1, "id", LongType()), NestedField(2, "cat", StringType()), schema_id=0)
    current = Schema(
        NestedField(1, "id", LongType()), NestedField(3, "cat", IntegerType()), schema_id=1
    )
    spec = PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "cat"), spec_id=1)
    assert spec.partition_type(current).fields[0].field_type == UnknownType()
    assert spec.partition_type(current, (old, current)).fields[0].field_type == StringType()
    bound = partition_source_schema(spec, current, (old, current))
    assert bound.schema_id == 1
    assert [(f.field_id, f.name) for f in bound.fields] == [(1, "id"), (3, "cat"), (2, "cat_2")]
    assert bound.find_type(2) == StringType()
    assert partition_source_schema(spec, old, (old,)) is old
    assert partition_source_schema(spec, current, (current,)) is current
