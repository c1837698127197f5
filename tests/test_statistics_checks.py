"""Statistics edge cases: a transaction that fails to commit deletes the statistics files it
wrote (and keeps them when the outcome is unknown), ``table.statistics()`` names counts by the
current schema, and the Puffin reader and writer refuse bad arguments with ValidationError."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.exceptions import (
    CommitConflictError,
    CommitStateUnknownError,
    ValidationError,
)
from icefloe.puffin import PuffinReader, PuffinWriter
from icefloe.table import Table
from icefloe.types import StringType
from support.write_util import catalog

SCHEMA = pa.schema([("a", pa.int64()), ("p", pa.string())])
FAST = {"commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "5"}


def _rows(a: list[int], p: list[str]) -> pa.Table:
    return pa.table({"a": a, "p": p}, schema=SCHEMA)


def _local(path: str) -> Path:
    return Path(path.removeprefix("file://"))


@pytest.fixture
def table(tmp_path: Path) -> Table:
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, properties=FAST)
    with t.update_spec() as s:
        s.add_field("p", "identity")
    t.append(_rows([1, 2], ["x", "y"]))
    return t


# ------------------------------------------------------------------ transaction cleanup


def test_conflicting_transaction_deletes_its_statistics_files(table: Table) -> None:
    stale = table.catalog.load_table("ns.t")
    paths = []
    with pytest.raises(CommitConflictError), stale.transaction() as tx:
        tx.append(_rows([3, 4], ["x", "z"]))
        paths.append(tx.compute_statistics().statistics_path)
        stats = tx.compute_partition_statistics()
        assert stats is not None
        paths.append(stats.statistics_path)
        assert all(_local(p).exists() for p in paths)
        table.append(_rows([9], ["x"]))  # another writer commits first
    assert [p for p in paths if _local(p).exists()] == []
    loaded = table.catalog.load_table("ns.t")
    assert loaded.metadata.statistics == () and loaded.metadata.partition_statistics == ()


def test_discarded_transaction_deletes_its_statistics_files(table: Table) -> None:
    paths = []
    with pytest.raises(RuntimeError, match="changed my mind"), table.transaction() as tx:
        paths.append(tx.compute_statistics().statistics_path)
        stats = tx.compute_partition_statistics()
        assert stats is not None
        paths.append(stats.statistics_path)
        raise RuntimeError("changed my mind")
    assert [p for p in paths if _local(p).exists()] == []


def test_unknown_commit_outcome_keeps_statistics_files(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unknown(*args: Any, **kwargs: Any) -> None:
        raise CommitStateUnknownError("the catalog did not answer")

    paths = []
    tx = table.transaction()
    tx.append(_rows([3], ["x"]))
    paths.append(tx.compute_statistics().statistics_path)
    stats = tx.compute_partition_statistics()
    assert stats is not None
    paths.append(stats.statistics_path)
    monkeypatch.setattr(table, "_do_commit", unknown)
    with pytest.raises(CommitStateUnknownError):
        tx.commit_transaction()
    assert tx.may_have_committed
    assert all(_local(p).exists() for p in paths)  # the new metadata may reference them


def test_failed_transaction_keeps_a_reused_partition_statistics_file(table: Table) -> None:
    """An incremental compute that finds the snapshot's file returns it: not the
    transaction's to delete."""
    existing = table.compute_partition_statistics()
    assert existing is not None
    stale = table.catalog.load_table("ns.t")
    with pytest.raises(CommitConflictError), stale.transaction() as tx:
        assert tx.compute_partition_statistics() == existing
        tx.append(_rows([3], ["x"]))
        tx.compute_statistics()  # set-statistics: the transaction cannot be replayed
        table.append(_rows([9], ["x"]))
    assert _local(existing.statistics_path).exists()


def test_catalog_transaction_conflict_deletes_statistics_files(table: Table) -> None:
    cat = table.catalog
    paths = []
    with pytest.raises(CommitConflictError), cat.transaction() as ctx:
        tx = ctx.table("ns.t")
        tx.append(_rows([3], ["x"]))
        paths.append(tx.compute_statistics().statistics_path)
        table.append(_rows([9], ["x"]))
    assert [p for p in paths if _local(p).exists()] == []


# ------------------------------------------------------------------ names of the counts


def test_statistics_are_named_by_the_current_schema(tmp_path: Path) -> None:
    """After a rename and a drop + re-add (no new snapshot), a count is found under its
    column's current name; a dropped column's count is left out, and the re-added column of
    the same name (another field id) has none."""
    sch = pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.int32())])
    t = catalog(tmp_path).create_table("ns.t", sch)
    t.append(
        pa.table(
            {
                "a": list(range(10)),
                "b": [str(i % 3) for i in range(10)],
                "c": [i % 5 for i in range(10)],
            },
            schema=sch,
        )
    )
    first = t.current_snapshot()
    assert first is not None
    t.compute_statistics()
    assert t.statistics() == {"a": 10, "b": 3, "c": 5}
    with t.update_schema() as u:
        u.rename_column("b", "bb")
        u.delete_column("c")
        u.add_column("c", StringType())
    for loaded in (t, t.catalog.load_table("ns.t")):
        assert loaded.statistics() == {"a": 10, "bb": 3}
        assert loaded.statistics(first.snapshot_id) == {"a": 10, "bb": 3}
    # a later snapshot with a statistics file of its own: the same names
    t.append(pa.table({"a": [10], "bb": ["z"], "c": ["q"]}))
    t.compute_statistics()
    assert t.statistics() == {"a": 11, "bb": 4, "c": 1}
    assert t.statistics(first.snapshot_id) == {"a": 10, "bb": 3}


# ------------------------------------------------------------------ puffin arguments


def _add(**kwargs: Any) -> Any:
    args: dict[str, Any] = {"data": b"x", "type": "t", "fields": [1], **kwargs}
    return PuffinWriter().add_blob(**args)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"fields": [2**31]}, "2147483648"),
        ({"fields": [-1]}, "-1"),
        ({"fields": [True]}, "True"),
        ({"fields": [1.0]}, "1.0"),
        ({"fields": ["1"]}, "'1'"),
        ({"fields": "12"}, "'12'"),
        ({"fields": 1}, "1"),
        ({"fields": None}, "None"),
        ({"snapshot_id": 2**63}, "9223372036854775808"),
        ({"snapshot_id": -(2**63) - 1}, "-9223372036854775809"),
        ({"snapshot_id": None}, "None"),
        ({"snapshot_id": 1.5}, "1.5"),
        ({"sequence_number": 2**63}, "9223372036854775808"),
        ({"sequence_number": "1"}, "'1'"),
        ({"type": 1}, "1"),
        ({"type": None}, "None"),
        ({"type": ""}, "''"),
        ({"data": "abc"}, "str"),
        ({"data": 3}, "int"),
        ({"data": None}, "NoneType"),
        ({"compression_codec": 1}, "1"),
        ({"properties": {"ndv": 1}}, "'ndv'"),
        ({"properties": {1: "a"}}, "1"),
        ({"properties": {"a": None}}, "None"),
        ({"properties": [("a", "b")]}, "list"),
    ],
)
def test_add_blob_refuses_bad_arguments(kwargs: dict[str, Any], named: str) -> None:
    with pytest.raises(ValidationError) as info:
        _add(**kwargs)
    assert named in str(info.value)


def test_add_blob_accepts_the_ranges_and_buffers() -> None:
    w = PuffinWriter()
    w.add_blob(bytearray(b"ab"), "t", (0, 2**31 - 1), snapshot_id=2**63 - 1)
    w.add_blob(memoryview(b"cd"), "t", [], snapshot_id=-(2**63), sequence_number=-1)
    r = PuffinReader(w.finish({"k": "v"}).data)
    assert [r.read_blob(i) for i in range(2)] == [b"ab", b"cd"]
    assert r.blobs[0].fields == (0, 2**31 - 1)
    assert r.read_blob(-1) == b"cd"


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"properties": {"a": 1}}, "'a'"),
        ({"properties": [("a", "b")]}, "list"),
        ({"compress_footer": "yes"}, "'yes'"),
    ],
)
def test_finish_refuses_bad_arguments(kwargs: dict[str, Any], named: str) -> None:
    with pytest.raises(ValidationError) as info:
        PuffinWriter().finish(**kwargs)
    assert named in str(info.value)


def test_add_deletion_vector_refuses_a_non_vector() -> None:
    with pytest.raises(ValidationError, match="NoneType"):
        PuffinWriter().add_deletion_vector(None, "s3://b/f.parquet")  # type: ignore[arg-type]


@pytest.mark.parametrize("data", ["abc", None, 5])
def test_reader_refuses_non_bytes(data: Any) -> None:
    with pytest.raises(ValidationError, match=type(data).__name__):
        PuffinReader(data)


@pytest.mark.parametrize(("blobs", "index"), [(0, 0), (1, 1), (1, -2), (1, True), (1, "0")])
def test_read_blob_refuses_a_bad_index(blobs: int, index: Any) -> None:
    w = PuffinWriter()
    for _ in range(blobs):
        w.add_blob(b"abc", "t", [1])
    r = PuffinReader(w.finish().data)
    with pytest.raises(ValidationError, match=repr(index).replace("'", ".")):
        r.read_blob(index)
    with pytest.raises(ValidationError):
        r.read_deletion_vector(index)


@pytest.mark.parametrize(("field", "value"), [("offset", -1), ("length", -1), ("offset", 2**64)])
def test_read_blob_refuses_bad_metadata(field: str, value: int) -> None:
    w = PuffinWriter()
    w.add_blob(b"abc", "t", [1])
    r = PuffinReader(w.finish().data)
    bad = dataclasses.replace(r.blobs[0], **{field: value})
    with pytest.raises(ValidationError, match=str(value)):
        r.read_blob(bad)


@pytest.mark.parametrize("ndv", ["1e3", "abc", "-5", ""])
def test_an_ndv_property_that_is_not_a_count_gives_way_to_the_sketch(
    tmp_path: Path, ndv: str
) -> None:
    """Other engines write the ``ndv`` property too: one that is not a count is ignored and
    the sketch estimated, so statistics, inspect and the CLI keep working."""
    from icefloe.metadata import SetStatistics

    t = catalog(tmp_path).create_table("ns.n", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": pa.array(range(10), pa.int64())}))
    good = t.compute_statistics()
    props = {"ndv": ndv}
    bad = dataclasses.replace(
        good,
        blob_metadata=tuple(dataclasses.replace(b, properties=props) for b in good.blob_metadata),
    )
    tx = t.transaction()
    tx.apply([SetStatistics(bad)])
    tx.commit_transaction()
    t = t.refresh()
    assert t.statistics()["id"] == 10
    assert t.inspect.column_statistics().num_rows >= 1


# ------------------------------------------------------------------ API edges


def test_set_statistics_sends_the_snapshot_id_older_servers_require(table: Table) -> None:
    """Servers before Iceberg Java 1.8 parse ``snapshot-id`` of ``set-statistics`` as required;
    Java's client still sends it, and so does icefloe (from the file's snapshot)."""
    from icefloe.metadata.updates import SetStatistics, update_from_json

    stats = table.compute_statistics()
    body = SetStatistics(stats).to_json()
    assert body["snapshot-id"] == stats.snapshot_id == table.current_snapshot().snapshot_id
    assert update_from_json(body) == SetStatistics(stats, stats.snapshot_id)


def test_a_table_without_snapshots_has_no_statistics(tmp_path: Path) -> None:
    t = catalog(tmp_path).create_table("ns.empty", SCHEMA)
    with t.update_spec() as s:
        s.add_field("p", "identity")
    assert t.statistics() == {}
    assert t.partition_statistics() is None


@pytest.mark.parametrize("columns", [5, b"a", [b"a"], [1]])
def test_columns_that_are_not_names_are_refused(table: Table, columns: Any) -> None:
    with pytest.raises(ValidationError, match="columns must be"):
        table.compute_statistics(columns)


def test_a_partition_statistics_file_in_avro_is_unsupported_not_invalid(table: Table) -> None:
    from icefloe.exceptions import UnsupportedFeatureError
    from icefloe.read.partition_statistics import read_partition_statistics

    with pytest.raises(UnsupportedFeatureError, match="only Parquet"):
        read_partition_statistics(table.io, "/nowhere/stats.avro", table.schema())
