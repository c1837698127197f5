"""Maintenance against tables other writers left as Iceberg Java 1.12 leaves them: running
totals a Java ``add_files`` left too low (a compaction must not write a negative total), a
misspelled branch given to ``rewrite_manifests`` (refused, never created), and v2 file-scoped
position deletes that name their data file only by equal ``file_path`` bounds (dropped by the
compaction that rewrites that file, as icefloe's own)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import NoSuchSnapshotError, ValidationError
from icefloe.metadata import Summary, TableMetadata, update_snapshot_totals
from icefloe.metadata.updates import AddSnapshot, TableUpdate
from icefloe.scan.tasks import DELETE_FILE_PATH_ID
from icefloe.schema import Schema
from icefloe.table.producer import SnapshotProducer
from icefloe.table.row_delta import write_rows
from icefloe.types import LongType, NestedField
from icefloe.write.delete_files import write_position_deletes
from support.write_util import catalog

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def _table(tmp_path: Path, **props: str) -> Any:
    properties = {"format-version": "2", **props}
    return catalog(tmp_path).create_table("ns.t", SCHEMA, properties=properties)


def _ids(ids: range | list[int]) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64())})


def _read(t: Any) -> list[int]:
    return sorted(t.refresh().scan().to_arrow().column("id").to_pylist())


def _summaries(t: Any) -> list[dict[str, str]]:
    return [dict(s.summary.properties) for s in t.refresh().metadata.snapshots]


# -- D1: running totals ------------------------------------------------------------------------


def _totals(previous: dict[str, str] | None, **counts: str) -> dict[str, str]:
    prev = None if previous is None else Summary("append", previous)
    return dict(update_snapshot_totals(Summary("replace", counts), prev).properties)


def test_a_total_that_would_go_negative_is_left_out() -> None:
    prev = {
        "total-data-files": "2",
        "total-files-size": "0",
        "total-records": "200",
        "total-delete-files": "0",
    }
    got = _totals(
        prev,
        **{
            "added-data-files": "1",
            "deleted-data-files": "2",
            "added-files-size": "900",
            "removed-files-size": "1500",
            "added-records": "200",
            "deleted-records": "200",
        },
    )
    assert "total-files-size" not in got  # 0 + 900 - 1500 < 0
    assert got["total-data-files"] == "1"
    assert got["total-records"] == "200"
    assert got["total-delete-files"] == "0"
    # a total only the previous summary lacks is left out (not restarted at 0)
    assert "total-position-deletes" not in got
    # exactly 0 is kept
    assert _totals({"total-files-size": "10"}, **{"removed-files-size": "10"}) == {
        "removed-files-size": "10",
        "total-files-size": "0",
    }


@pytest.mark.parametrize(
    ("previous", "added", "removed", "expected"),
    [
        ("5", "3", "2", "6"),
        ("5", None, None, "5"),
        ("-1", None, None, None),  # a negative previous total is not carried on
        ("-5", "10", None, None),  # nor repaired by what is added (Java stops at < 0)
        ("2", "-5", "-10", None),  # once negative, Java applies no more counts
        ("x", "1", None, None),  # not a number: Java's NumberFormatException
        ("5", "1.0", None, None),
        ("5", None, " 1", None),
        ("1_0", None, None, None),  # Python's int() would take these, Long.parseLong not
        ("+5", "+1", None, "6"),  # Long.parseLong takes a leading '+'
        (str(2**63), None, None, None),  # out of the long range
        (str(2**63 - 1), "1", None, None),  # Java's long wraps to a negative total
        (None, "1", None, None),
    ],
)
def test_totals_follow_java_update_total(
    previous: str | None, added: str | None, removed: str | None, expected: str | None
) -> None:
    prev = {} if previous is None else {"total-records": previous}
    counts = {k: v for k, v in (("added-records", added), ("deleted-records", removed)) if v}
    assert _totals(prev, **counts).get("total-records") == expected


def test_first_snapshot_starts_the_totals_at_zero() -> None:
    got = _totals(None, **{"added-data-files": "1", "added-files-size": "10"})
    assert got["total-data-files"] == "1" and got["total-files-size"] == "10"
    assert got["total-equality-deletes"] == "0"


class _JavaAddFiles(SnapshotProducer):
    """Java 1.12's ``add_files`` procedure: its summary has no ``added-files-size``, so its
    ``total-files-size`` stays at the previous total (0)."""

    def build(self, metadata: TableMetadata) -> list[TableUpdate]:
        out: list[TableUpdate] = []
        for u in super().build(metadata):
            if isinstance(u, AddSnapshot) and u.snapshot.summary is not None:
                props = dict(u.snapshot.summary.properties)
                del props["added-files-size"]
                props["total-files-size"] = "0"
                summary = Summary(u.snapshot.summary.operation, props)
                u = AddSnapshot(snapshot=replace(u.snapshot, summary=summary))
            out.append(u)
        return out


def test_compaction_after_java_add_files_writes_no_negative_total(tmp_path: Path) -> None:
    t = _table(tmp_path)
    with t.transaction() as tx:
        files = [
            f
            for i in range(2)
            for f in write_rows(tx, _ids(range(i * 100, i * 100 + 100)), lineage=False)
        ]
        _JavaAddFiles(tx).add_data_files(files).commit()
    assert len(files) == 2
    assert _summaries(t)[-1]["total-files-size"] == "0"
    r = t.rewrite_data_files()
    assert (r.rewritten_data_files, r.added_data_files) == (2, 1)
    last = _summaries(t)[-1]
    assert int(last["removed-files-size"]) > int(last["added-files-size"]) > 0
    assert "total-files-size" not in last  # 0 + added - removed < 0: left out, as Java does
    assert (last["total-data-files"], last["total-records"]) == ("1", "200")
    assert (last["total-delete-files"], last["total-position-deletes"]) == ("0", "0")
    # the next commit cannot restart the total either
    t.append(_ids([1000]))
    assert "total-files-size" not in _summaries(t)[-1]
    assert _summaries(t)[-1]["total-records"] == "201"
    assert _read(t) == [*range(200), 1000]


# -- D2: a branch that does not exist ----------------------------------------------------------


def test_rewrite_manifests_refuses_a_missing_branch(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"commit.manifest-merge.enabled": "false"})
    for i in range(3):
        t.append(_ids([i]))
    before = t.refresh().metadata
    with pytest.raises(NoSuchSnapshotError, match="no branch named 'mian'") as e:
        t.rewrite_manifests(branch="mian")
    assert "rewrite the manifests" in str(e.value)
    for call in (
        lambda: t.rewrite_manifests(branch="mian", dry_run=True),
        lambda: t.rewrite_data_files(branch="mian"),
        lambda: t.plan_rewrite_data_files(branch="mian"),
        lambda: t.remove_dangling_deletes(branch="mian"),
    ):
        with pytest.raises(NoSuchSnapshotError, match="no branch named 'mian'"):
            call()
    after = t.refresh().metadata
    assert set(after.refs) == {"main"}
    assert [s.snapshot_id for s in after.snapshots] == [s.snapshot_id for s in before.snapshots]
    # a tag or a bad name is refused, an existing branch is rewritten
    with t.manage_snapshots() as ms:
        ms.create_tag("v1", t.current_snapshot().snapshot_id).create_branch("audit")
    for kwargs in ({}, {"dry_run": True}):
        with pytest.raises(ValidationError, match="tag"):
            t.rewrite_manifests(branch="v1", **kwargs)
        with pytest.raises(ValidationError, match="branch must be a non-empty string"):
            t.rewrite_manifests(branch="", **kwargs)
    main = t.refresh().current_snapshot().snapshot_id
    r = t.rewrite_manifests(branch="audit")
    assert r.rewritten_manifests == 3 and r.added_manifests == 1
    md = t.refresh().metadata
    assert md.current_snapshot().snapshot_id == main
    assert md.snapshot_by_name("audit").operation == "replace"
    assert set(md.refs) == {"main", "audit", "v1"}


def test_rewrite_manifests_on_an_empty_table_does_nothing(tmp_path: Path) -> None:
    t = _table(tmp_path)
    assert t.rewrite_manifests().rewritten_manifests == 0
    assert t.rewrite_manifests(dry_run=True).rewritten_manifests == 0
    assert not t.refresh().metadata.snapshots


def test_a_branch_removed_before_the_commit_is_refused(tmp_path: Path) -> None:
    from icefloe.table.rewrite_manifests import rewrite_manifests

    t = _table(tmp_path, **{"commit.manifest-merge.enabled": "false"})
    for i in range(3):
        t.append(_ids([i]))
    with t.manage_snapshots() as ms:
        ms.create_branch("audit")
    with pytest.raises(NoSuchSnapshotError, match="no branch named 'audit'"), t.transaction() as tx:
        tx.manage_snapshots().remove_branch("audit").commit()
        rewrite_manifests(tx, branch="audit")
    md = t.refresh().metadata
    assert "audit" in md.refs
    # removed by another writer after the rewrite was built: its retry refuses to fork it
    snapshots = len(md.snapshots)
    other = catalog_table(tmp_path)
    with pytest.raises(NoSuchSnapshotError, match="no branch named 'audit'"), t.transaction() as tx:
        rewrite_manifests(tx, branch="audit")
        with other.manage_snapshots() as ms:
            ms.remove_branch("audit")
    md = t.refresh().metadata
    assert set(md.refs) == {"main"} and len(md.snapshots) == snapshots


def catalog_table(tmp_path: Path) -> Any:
    """Another handle on the table, as another writer has it."""
    uri = f"sqlite:///{tmp_path}/c.db"
    return SqlCatalog("c", uri=uri, warehouse=(tmp_path / "wh").as_uri()).load_table("ns.t")


# -- D3: Java's v2 file-scoped position deletes ------------------------------------------------


def _java_position_delete(t: Any, data_path: str, positions: list[int]) -> str:
    """Commits a position delete file for ``data_path`` as Iceberg Java and Spark write a v2
    file-scoped one: ``referenced_data_file`` unset, equal ``file_path`` bounds."""
    location = f"{t.location}/data/java-pos-deletes-{len(positions)}.parquet"
    df = write_position_deletes(t.io, location, {data_path: positions}, 0, {})
    df.referenced_data_file = None
    assert df.lower_bounds[DELETE_FILE_PATH_ID] == df.upper_bounds[DELETE_FILE_PATH_ID]
    with t.transaction() as tx:
        SnapshotProducer(tx).add_delete_files([df]).commit()
    return location


def test_compaction_drops_java_file_scoped_position_deletes(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"write.delete.mode": "merge-on-read"})
    t.append(_ids([1, 2, 3]))
    t.append(_ids([4, 5]))
    data = t.inspect.data_files()
    first = data.filter(pc.equal(data.column("record_count"), 3)).column("file_path")[0].as_py()
    java = _java_position_delete(t, first, [1])  # id 2
    deletes = t.refresh().inspect.delete_files()
    assert deletes.num_rows == 1 and deletes.column("referenced_data_file")[0].as_py() is None
    assert _read(t) == [1, 3, 4, 5]
    plan = t.plan_rewrite_data_files()
    assert (plan.data_files, plan.delete_files) == (2, 1)
    r = t.rewrite_data_files()
    assert (r.rewritten_data_files, r.added_data_files, r.removed_delete_files) == (2, 1, 1)
    assert t.refresh().inspect.delete_files().num_rows == 0
    last = _summaries(t)[-1]
    assert (last["removed-delete-files"], last["total-delete-files"]) == ("1", "0")
    assert last["total-position-deletes"] == "0"
    assert _read(t) == [1, 3, 4, 5]
    assert t.remove_dangling_deletes(dry_run=True).removed_delete_files == 0
    assert java not in {
        p for p in t.refresh().inspect.delete_files().column("file_path").to_pylist()
    }


def test_partition_scoped_position_deletes_stay(tmp_path: Path) -> None:
    """A v2 position delete file naming two data files (unequal bounds) is not file-scoped:
    compaction applies it but keeps it, as before."""
    t = _table(tmp_path, **{"write.delete.mode": "merge-on-read"})
    t.append(_ids([1, 2, 3]))
    t.append(_ids([4, 5]))
    paths = sorted(t.inspect.data_files().column("file_path").to_pylist())
    location = f"{t.location}/data/java-pos-deletes-two.parquet"
    df = write_position_deletes(t.io, location, {paths[0]: [0], paths[1]: [0]}, 0, {})
    assert df.referenced_data_file is None
    with t.transaction() as tx:
        SnapshotProducer(tx).add_delete_files([df]).commit()
    before = _read(t)
    assert len(before) == 3
    assert t.plan_rewrite_data_files().delete_files == 0
    r = t.rewrite_data_files()
    assert (r.rewritten_data_files, r.removed_delete_files) == (2, 0)
    assert t.refresh().inspect.delete_files().num_rows == 1
    assert _read(t) == before


@pytest.mark.parametrize("version", [2, 3])
def test_new_deletes_replace_java_file_scoped_position_deletes(
    tmp_path: Path, version: int
) -> None:
    """A deletion vector (v3, after an upgrade) or a file-scoped delete file (v2) for a data
    file that has Java's bounds-scoped delete file replaces it, as Java's own deletes do: it
    stayed live beside the new one, and the summary counted its rows again."""
    t = _table(tmp_path, **{"write.delete.mode": "merge-on-read"})
    t.append(_ids(range(10)))
    data = t.inspect.data_files().column("file_path")[0].as_py()
    java = _java_position_delete(t, data, [1, 2, 3])
    if version == 3:
        t.upgrade_format_version(3)
    t.refresh().delete("id = 5")
    assert _read(t) == [0, 4, 6, 7, 8, 9]
    live = t.refresh().inspect.delete_files()
    assert live.num_rows == 1 and java not in live.column("file_path").to_pylist()
    assert live.column("record_count").to_pylist() == [4]
    last = _summaries(t)[-1]
    assert last["removed-position-deletes"] == "3" and last["total-position-deletes"] == "4"


def test_a_rewritten_data_file_takes_java_file_scoped_deletes_along(tmp_path: Path) -> None:
    """A copy-on-write delete rewriting a data file removes the bounds-scoped delete file of
    it (applied to the rewritten rows); it was left dangling."""
    t = _table(tmp_path)
    t.append(_ids(range(10)))
    data = t.inspect.data_files().column("file_path")[0].as_py()
    _java_position_delete(t, data, [1, 2])
    t.refresh().delete("id = 5")
    assert _read(t) == [0, 3, 4, 6, 7, 8, 9]
    assert t.refresh().inspect.delete_files().num_rows == 0
    assert _summaries(t)[-1]["total-delete-files"] == "0"


def test_dangling_deletes_of_a_table_without_delete_files_read_no_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no delete manifest in the snapshot nothing can dangle: the check (also run by
    ``icefloe health``) decoded every manifest anyway, seconds on a table of thousands of
    appends. A table with a delete file still has its manifests read."""
    import icefloe.table.dangling_deletes as dangling

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "w").as_uri())
    cat.create_namespace("db")
    t = cat.create_table(
        "db.t",
        pa.schema([pa.field("id", pa.int64())]),
        properties={"format-version": "2", "write.delete.mode": "merge-on-read"},
    )
    for i in range(5):
        t.append(pa.table({"id": pa.array([i, i + 10], pa.int64())}))
    decoded: list[int] = []
    real = dangling.read_manifests
    monkeypatch.setattr(
        dangling, "read_manifests", lambda *a, **k: decoded.append(1) or real(*a, **k)
    )
    found = t.remove_dangling_deletes(dry_run=True)
    assert found.removed_delete_files == 0 and decoded == []
    t.delete("id = 3")
    assert t.remove_dangling_deletes(dry_run=True).removed_delete_files == 0
    assert decoded
