"""Maintenance and history changes given values the metadata cannot hold, or files named two
ways: refused with a typed error before anything is written, never a table that no longer
loads or a file deleted that a kept snapshot reads."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import ValidationError


def _catalog(tmp_path: Path) -> SqlCatalog:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    return cat


def _ids(table: Any) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def _files(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("kind", "setting"),
    [
        ("tag", {"max_ref_age_ms": 2**63}),
        ("branch", {"max_ref_age_ms": 2**63}),
        ("branch", {"min_snapshots_to_keep": 2**31}),
        ("branch", {"max_snapshot_age_ms": 2**63}),
    ],
)
def test_ref_retention_the_metadata_cannot_hold_is_refused(
    tmp_path: Path, kind: str, setting: dict[str, int]
) -> None:
    """Committed, such a value made every later load of the table (a purge too) fail: Iceberg
    reads min-snapshots-to-keep as a 32-bit int and the ages as 64-bit longs."""
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1]}))
    snap = t.current_snapshot()
    assert snap is not None
    before = t.metadata_location
    with pytest.raises(ValidationError, match="must be at most"):
        ms = t.manage_snapshots()
        (ms.create_tag if kind == "tag" else ms.create_branch)("r", snap.snapshot_id, **setting)
        ms.commit()
    assert cat.load_table("db.t").metadata_location == before
    # at the limit it is kept, and the table loads
    limit = 2**31 - 1 if "min_snapshots_to_keep" in setting else 2**63 - 1
    ms = t.manage_snapshots()
    fit = {k: limit for k in setting}
    (ms.create_tag if kind == "tag" else ms.create_branch)("r", snap.snapshot_id, **fit)
    ms.commit()
    assert _ids(cat.load_table("db.t")) == [1]


def test_expiry_keeps_a_file_added_again_under_another_spelling(tmp_path: Path) -> None:
    """``/x`` and ``file:///x`` name one file: added, dropped, added again under the other
    spelling, the file is still read, and expiring the snapshots that dropped it must not
    delete it (before the fix it did, and the table could not be read)."""
    cat = _catalog(tmp_path)
    mapping = json.dumps([{"field-id": 1, "names": ["id"]}])
    t = cat.create_table(
        "db.t",
        pa.schema([("id", pa.int64())]),
        properties={"format-version": "2", "schema.name-mapping.default": mapping},
    )
    external = tmp_path / "ext" / "a.parquet"
    external.parent.mkdir()
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), external)
    t.append(pa.table({"id": pa.array([10], pa.int64())}))
    t.add_files([str(external)])
    t.delete("id <= 3")  # the whole file leaves the table
    t.add_files([external.as_uri()])
    assert _ids(t) == [1, 2, 3, 10]
    time.sleep(0.01)
    result = t.expire_snapshots(older_than_ms=int(time.time() * 1000), retain_last=1)
    assert result.snapshot_ids  # the snapshots that reached the file as /x are gone
    assert os.path.exists(external)
    assert str(external) not in result.data_files
    assert _ids(cat.load_table("db.t")) == [1, 2, 3, 10]


def test_strings_the_metadata_cannot_hold_are_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    """A lone UTF-16 surrogate can never be written as UTF-8: a ref name, a property, a
    snapshot property or an orphan-removal location holding one is a ValidationError (it was
    a bare UnicodeEncodeError, and a compaction left its files behind)."""
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1]}))
    t.append(pa.table({"id": [2]}))
    snap = t.current_snapshot()
    assert snap is not None
    before = t.metadata_location
    files = _files(tmp_path / "wh")
    bad = "a\ud800"
    changes = [
        lambda: t.manage_snapshots().create_tag(bad, snap.snapshot_id).commit(),
        lambda: t.set_properties(**{"k": bad}),
        lambda: t.rewrite_data_files(snapshot_properties={"k": bad}),
        lambda: t.append(pa.table({"id": [3]}), snapshot_properties={bad: "v"}),
        lambda: t.remove_orphan_files(location=f"{t.location}/data/{bad}", dry_run=True),
    ]
    for change in changes:
        with pytest.raises(ValidationError, match="surrogate"):
            change()
        assert cat.load_table("db.t").metadata_location == before
    assert _files(tmp_path / "wh") == files
    assert _ids(t.refresh()) == [1, 2]


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**70])
def test_an_age_beyond_epoch_milliseconds_is_refused(tmp_path: Path, value: int) -> None:
    t = _catalog(tmp_path).create_table("db.t", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1]}))
    with pytest.raises(ValidationError, match="64-bit"):
        t.remove_orphan_files(older_than=value, dry_run=True)
    with pytest.raises(ValidationError, match="64-bit"):
        t.expire_snapshots(older_than_ms=value, dry_run=True)
    assert _ids(t) == [1]


def test_pandas_not_a_time_is_no_cutoff(tmp_path: Path) -> None:
    """``older_than_ms=df.cutoff.max()`` of an empty column is pandas' ``NaT``, a datetime that
    is no time: it became NaN, every comparison with it was false, and expiry removed every
    snapshot but the current one with its files. It is refused, as NaN is."""
    pd = pytest.importorskip("pandas")
    t = _catalog(tmp_path).create_table("db.t", pa.schema([("id", pa.int64())]))
    for i in range(3):
        t.append(pa.table({"id": [i]}))
    before = _files(tmp_path / "wh")
    with pytest.raises(ValidationError, match="point in time"):
        t.expire_snapshots(older_than_ms=pd.NaT)
    with pytest.raises(ValidationError, match="point in time"):
        t.snapshot_as_of(pd.NaT)
    with pytest.raises(ValidationError, match="point in time"):
        t.remove_orphan_files(older_than=pd.NaT)
    assert len(t.refresh().snapshots()) == 3
    assert _files(tmp_path / "wh") == before
