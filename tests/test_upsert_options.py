"""upsert's PyIceberg parameters: ``when_matched_update_all``, ``when_not_matched_insert_all``
and ``case_sensitive``, checked against PyIceberg's own upsert of the same rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe.exceptions import ValidationError
from support.rowlevel_util import live_deletes, ours
from support.write_util import SCHEMA, SPEC, catalog, checksum, pyiceberg_read, rows

MODES = {
    "mor": {"write.merge.mode": "merge-on-read"},
    "cow": {},
    "equality": {"write.upsert.mode": "equality"},
}
#: (when_matched_update_all, when_not_matched_insert_all)
FLAGS = {"insert-only": (False, True), "update-only": (True, False)}
COLS = ["id", "s", "ts"]


def _source() -> pa.Table:
    """Keys 90..109: 90..99 exist (new ``s``), 100..109 are new."""
    src = rows(90, 20)
    return src.set_column(1, "s", pc.binary_join_element_wise("u", src["s"], ""))


def _pyiceberg_upsert(tmp_path: Path, flags: tuple[bool, bool]) -> tuple[Any, pa.Table]:
    """PyIceberg's upsert of :func:`_source` into a copy of the starting table (created here,
    changed by PyIceberg): its result and the rows it leaves."""
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    cat = catalog(tmp_path / "oracle")
    cat.create_table("ns.t", SCHEMA, partition_spec=SPEC).append(rows(0, 100))
    cat.close()
    uri = f"sqlite:///{tmp_path}/oracle/c.db"
    py = PySqlCatalog("c", uri=uri, warehouse=(tmp_path / "oracle" / "wh").as_uri())
    try:
        t = py.load_table("ns.t")
        source = _source()
        # PyIceberg wants the key's Arrow field as required as the table's
        source = source.cast(source.schema.set(0, source.schema.field(0).with_nullable(False)))
        result = t.upsert(
            source, ["id"], when_matched_update_all=flags[0], when_not_matched_insert_all=flags[1]
        )
        return result, t.scan().to_arrow()
    finally:
        py.engine.dispose()


@pytest.mark.parametrize("flags", sorted(FLAGS))
@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("version", [2, 3])
def test_upsert_options_do_what_pyiceberg_does(
    tmp_path: Path, version: int, mode: str, flags: str
) -> None:
    cat = catalog(tmp_path / "ours")
    props = {"format-version": str(version), **MODES[mode]}
    t = cat.create_table("ns.t", SCHEMA, partition_spec=SPEC, properties=props)
    t.append(rows(0, 100))
    before = ours(t, "_row_id") if version >= 3 else None
    result = t.upsert(_source(), ["id"], *FLAGS[flags])
    want_result, want = _pyiceberg_upsert(tmp_path, FLAGS[flags])
    assert (result.rows_updated, result.rows_inserted) == (
        want_result.rows_updated,
        want_result.rows_inserted,
    )
    assert (result.rows_updated, result.rows_inserted) == (
        (0, 10) if flags == "insert-only" else (10, 0)
    )
    got = ours(t, *(("_row_id",) if before is not None else ()))
    assert got.select(COLS).to_pylist() == want.select(COLS).sort_by("id").to_pylist()
    assert checksum(pyiceberg_read(t)) == checksum(want)
    if flags == "insert-only":  # nothing deleted, in any mode
        assert live_deletes(t).num_rows == 0
        assert t.current_snapshot().summary.operation == "append"
    elif mode == "equality":  # the rows are found by reading: deleted by position
        assert 2 not in live_deletes(t).column("content").to_pylist()
    if before is not None:  # existing rows keep their ids; inserted rows get fresh ones
        old = dict(zip(before["id"].to_pylist(), before["_row_id"].to_pylist(), strict=True))
        new = dict(zip(got["id"].to_pylist(), got["_row_id"].to_pylist(), strict=True))
        assert all(new[k] == old[k] for k in range(100))
        fresh = {new[k] for k in new if k >= 100}
        assert len(fresh) == len(new) - 100 and not fresh & set(old.values())


def test_upsert_that_would_change_nothing(tmp_path: Path) -> None:
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, partition_spec=SPEC)
    t.append(rows(0, 100))
    head = t.current_snapshot().snapshot_id
    with pytest.raises(ValidationError, match="would change nothing"):
        t.upsert(
            _source(), ["id"], when_matched_update_all=False, when_not_matched_insert_all=False
        )
    # every key exists: an insert-only upsert commits nothing
    assert t.upsert(rows(10, 5), ["id"], when_matched_update_all=False).rows_inserted == 0
    # no key exists: nor does an update-only one
    result = t.upsert(rows(500, 5), ["id"], when_not_matched_insert_all=False)
    assert (result.rows_updated, result.rows_inserted) == (0, 0)
    assert t.current_snapshot().snapshot_id == head
    assert ours(t).num_rows == 100


def test_upsert_join_columns_ignoring_case(tmp_path: Path) -> None:
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, partition_spec=SPEC)
    t.append(rows(0, 100))
    with pytest.raises(ValidationError, match="ID"):
        t.upsert(_source(), ["ID"])
    result = t.upsert(_source(), ["ID"], case_sensitive=False)
    assert (result.rows_updated, result.rows_inserted) == (10, 10)
    assert ours(t).num_rows == 110


def test_upsert_options_inside_a_transaction(tmp_path: Path) -> None:
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, partition_spec=SPEC)
    t.append(rows(0, 100))
    with t.transaction() as tx:
        first = tx.upsert(_source(), ["id"], when_not_matched_insert_all=False)
        second = tx.upsert(_source(), ["id"], when_matched_update_all=False)
    assert (first.rows_updated, first.rows_inserted) == (10, 0)
    assert (second.rows_updated, second.rows_inserted) == (0, 10)
    got = ours(t)
    assert got.num_rows == 110
    assert got.filter(pc.greater_equal(got["id"], 90))["s"].to_pylist() == (
        _source()["s"].to_pylist()
    )
