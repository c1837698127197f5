"""A commit leaves no file its snapshot does not reference: neither the manifests of a
superseded attempt (a retried commit after a concurrent one) nor new manifests merged into
others. An append of zero rows commits nothing."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import FileIOError, ValidationError
from icefloe.io import FileIO, OutputFile
from icefloe.table import Table
from icefloe.table.orphan_files import reachable_files

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def _ids(values: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())}, schema=SCHEMA)


def _unreferenced(t: Table) -> list[str]:
    t = t.catalog.load_table(t.identifier)
    reach = {
        p.removeprefix("file://")
        for p in reachable_files(t.io, t.metadata, t.metadata_location).to_pylist()
    }
    root = Path(t.location.removeprefix("file://"))
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and str(p) not in reach
    )


@pytest.mark.parametrize("merge", ["2", "100"], ids=["merging", "not-merging"])
def test_no_manifest_leaks_from_merges_or_retried_commits(tmp_path: Path, merge: str) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    props = {
        "commit.manifest.min-count-to-merge": merge,
        "write.delete.isolation-level": "snapshot",
    }
    t = cat.create_table("db.t", SCHEMA, properties=props)
    t.append(_ids([1]))
    for i in range(3):
        stale = cat.load_table("db.t")
        cat.load_table("db.t").append(_ids([10 + i]))  # a concurrent commit wins the race
        stale.append(_ids([20 + i]))  # retried on the new state
        assert _unreferenced(t) == []
    stale = cat.load_table("db.t")
    cat.load_table("db.t").append(_ids([30]))
    stale.delete("id = 1")  # a retried commit that rewrites a manifest
    assert _unreferenced(t) == []
    rows = sorted(cat.load_table("db.t").scan().to_arrow().column("id").to_pylist())
    assert rows == [10, 11, 12, 20, 21, 22, 30]
    cat.close()


def test_empty_append_commits_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Zero rows (a table, an empty stream, a pandas frame): no snapshot, no file, no catalog
    request. PyIceberg 0.12 commits an empty ``append`` snapshot here; a transaction with other
    changes commits only those."""
    import pandas as pd

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(_ids([1]))
    before = t.metadata_location
    files = sorted(Path(t.location.removeprefix("file://")).rglob("*"))

    def no_commit(*args: object, **kwargs: object) -> None:
        raise AssertionError("an empty append reached the catalog")

    monkeypatch.setattr(SqlCatalog, "commit_table", no_commit)
    empty_stream = pa.RecordBatchReader.from_batches(SCHEMA, iter([]))
    for data in (_ids([]), empty_stream, pd.DataFrame({"id": pd.Series([], dtype="int64")})):
        t.append(data, snapshot_properties={"job": "nightly"})
        with t.transaction() as tx:
            tx.append(data)
    monkeypatch.undo()
    # still checked: an empty table with a column the schema lacks, or aimed at a tag, fails
    with pytest.raises(ValidationError, match="extra"):
        t.append(pa.table({"id": pa.array([], pa.int64()), "extra": pa.array([], pa.int64())}))
    t.manage_snapshots().create_tag("v1", t.current_snapshot().snapshot_id).commit()
    before = cat.load_table("db.t").metadata_location
    files = sorted(Path(t.location.removeprefix("file://")).rglob("*"))
    with pytest.raises(ValidationError, match="tag"):
        t.append(_ids([]), branch="v1")
    loaded = cat.load_table("db.t")
    assert loaded.metadata_location == before and len(loaded.snapshots()) == 1
    assert sorted(Path(t.location.removeprefix("file://")).rglob("*")) == files
    with loaded.transaction() as tx:  # only the other change commits
        tx.append(_ids([]))
        tx.set_properties({"k": "v"})
    loaded = cat.load_table("db.t")
    assert loaded.properties["k"] == "v" and len(loaded.snapshots()) == 1
    assert loaded.scan().to_arrow().column("id").to_pylist() == [1]
    cat.close()


def test_a_failed_cleanup_does_not_hide_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The store fails the manifest list's write and then every delete (an S3 server gone
    mid-commit): the write's error is raised, the files left are logged, the table unchanged."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(_ids([1]))
    before = t.current_snapshot().snapshot_id
    real_write = OutputFile.write

    def write(self: OutputFile, data: bytes, *args: object) -> None:
        if "/snap-" in self.location:
            raise FileIOError(f"cannot write {self.location}: the endpoint did not answer")
        real_write(self, data, *args)

    def delete(self: FileIO, location: str) -> None:
        raise FileIOError(f"cannot delete {location}: the endpoint did not answer")

    monkeypatch.setattr(OutputFile, "write", write)
    monkeypatch.setattr(FileIO, "delete", delete)
    with pytest.raises(FileIOError, match=r"cannot write .*snap-"):
        t.append(_ids([9]))
    assert "left for orphan removal" in caplog.text
    monkeypatch.undo()
    assert t.refresh().current_snapshot().snapshot_id == before
    assert t.scan().to_arrow().column("id").to_pylist() == [1]


@pytest.mark.parametrize("catalog", ["sql", "hadoop"])
def test_a_commit_to_a_dropped_table_leaves_no_files(tmp_path: Path, catalog: str) -> None:
    """A table dropped (files kept) while a writer held it: the append fails with
    NoSuchTableError, which proves nothing was committed, so the files it wrote go."""
    from icefloe.catalog import load_catalog
    from icefloe.exceptions import NoSuchTableError

    wh = (tmp_path / "wh").as_uri()
    props = {"uri": f"sqlite:///{tmp_path}/c.db"} if catalog == "sql" else {}
    cat = load_catalog("c", type=catalog, warehouse=wh, **props)
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    t.append(_ids([1]))
    root = Path(t.location.removeprefix("file://"))
    before = {p for p in root.rglob("*") if p.is_file()}
    if catalog == "sql":
        cat.drop_table("db.t")  # the entry goes, the files stay
    else:  # a file-system table is its version files: another process deleted them
        for p in (root / "metadata").glob("*"):
            if p.name.endswith(".metadata.json") or p.name == "version-hint.text":
                p.unlink()
        before = {p for p in root.rglob("*") if p.is_file()}
    with pytest.raises(NoSuchTableError):
        t.append(_ids([2, 3]))
    assert {p for p in root.rglob("*") if p.is_file()} == before
