"""Planning's projected manifest decoding and entry selection (Rust) against the full decoder,
and ``limit`` stopping planning early."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe import _native
from icefloe.exceptions import CorruptFileError, ValidationError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.scan.manifests import DATA_COLUMNS, METRICS_COLUMNS
from icefloe.schema import Schema
from icefloe.table.scan import TableScan
from icefloe.transforms import IdentityTransform
from icefloe.types import LongType, NestedField, StringType
from support.plan_tables import HandTable, entry

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "s", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "s"), spec_id=0)


def _le(v: int) -> bytes:
    return v.to_bytes(8, "little", signed=True)


def _files(n: int, status: int = 1) -> list[dict[str, Any]]:
    return [
        entry(
            f"f{i}-{status}",
            {"s": "a" if i % 2 else None},
            status=status,
            record_count=10 + i,
            value_counts=[(1, 10 + i), (2, 10 + i)],
            null_value_counts=[(1, 0), (2, 1)],
            lower_bounds=[(1, _le(i * 10)), (2, b"a")],
            upper_bounds=[(1, _le(i * 10 + 9)), (2, b"z")],
            column_sizes=[(1, 5), (2, 6)],
            split_offsets=[4],
        )
        for i in range(n)
    ]


def _table(tmp_path: Path, version: int) -> HandTable:
    t = HandTable(tmp_path, SCHEMA, [SPEC], version)
    t.commit([(0, 0, _files(5))])
    t.commit([(0, 0, _files(3, status=2) + _files(4, status=0))])
    return t


def _manifests(t: HandTable) -> list[dict[str, Any]]:
    return [m for m in t.manifests if m["content"] == 0]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_projected_decode_equals_the_full_decoder(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version)
    ms = _manifests(t)
    data = [Path(m["manifest_path"]).read_bytes() for m in ms]
    kw: dict[str, Any] = {
        "snapshot_ids": [m["added_snapshot_id"] for m in ms],
        "sequence_numbers": [m["sequence_number"] for m in ms],
        "first_row_ids": [m.get("first_row_id") for m in ms],
    }
    full = _native.read_manifests(data, **kw)
    base = _native.plan_read_manifests(data, **kw)
    metrics = _native.plan_read_manifests(data, **kw, columns=list(METRICS_COLUMNS))
    trimmed = _native.plan_read_manifests(data, **kw, columns=list(METRICS_COLUMNS), metric_ids=[2])
    for f, b, m, tr in zip(full, base, metrics, trimmed, strict=True):
        expected_base = ["status", "sequence_number", "file_sequence_number", *DATA_COLUMNS]
        assert set(b.schema.names) == set(expected_base)
        for name in b.schema.names:
            assert b.column(name).equals(f.column(name)), name
            assert b.schema.field(name).metadata == f.schema.field(name).metadata
        for name in METRICS_COLUMNS:
            assert m.column(name).equals(f.column(name)), name
            # trimmed maps keep field 2 only, row for row
            got = tr.column(name).to_pylist()
            want = [
                None if r is None else [kv for kv in r if kv[0] == 2]
                for r in f.column(name).to_pylist()
            ]
            assert got == want, name
        assert "column_sizes" not in b.schema.names and "column_sizes" not in m.schema.names
    if version >= 3:  # row ids inherited in entry order, DELETED entries skipped
        ids = pa.concat_arrays([b.column("first_row_id") for b in base])
        assert ids.null_count < len(ids)


def test_projected_decode_names_a_corrupt_manifest() -> None:
    with pytest.raises(CorruptFileError, match=r"bad\.avro"):
        _native.plan_read_manifests([b"Obj\x01garbage"], names=["bad.avro"])


def test_keep_entries_matches_masks_and_filter(tmp_path: Path) -> None:
    t = _table(tmp_path, 2)
    data = [Path(m["manifest_path"]).read_bytes() for m in _manifests(t)]
    batches = _native.plan_read_manifests(data, columns=list(METRICS_COLUMNS))
    scan = TableScan(t, row_filter="id >= 20 and s = 'a'")
    from icefloe.scan.filters import SpecFilters, expr_json

    f = SpecFilters(SCHEMA, SPEC, scan.bound_filter())
    assert f.partition_json is not None
    metrics = expr_json(scan.bound_filter())
    kept = _native.plan_keep_entries(
        batches, [0] * len(batches), [f.partition_json], metrics, list(DATA_COLUMNS)
    )
    masks = _native.plan_entry_masks(batches, [0] * len(batches), [f.partition_json], metrics)
    for b, k, m in zip(batches, kept, masks, strict=True):
        assert k.schema.names == list(DATA_COLUMNS)
        assert k.equals(b.select(list(DATA_COLUMNS)).filter(m))
        # DELETED entries never kept; the filter kept only odd files with id range >= 20
        assert all(p.endswith(("-1", "-0")) for p in k.column("file_path").to_pylist())
        assert pc.all(pc.equal(k.column("partition").field("s"), "a")).as_py() in (True, None)


def test_limit_stops_planning_once_whole_files_hold_enough_rows(tmp_path: Path) -> None:
    t = HandTable(tmp_path, SCHEMA, [PartitionSpec(spec_id=0)], 2)
    for k in range(6):
        t.commit([(0, 0, [entry(f"f{k}", record_count=100)])])
    full = TableScan(t).plan_files()
    assert len(full) == 6
    limited = TableScan(t, limit=150).plan_files()
    # manifests are decoded two at a time: the first two hold 200 >= 150 rows
    assert [x.data_file.file_path for x in limited] == [
        x.data_file.file_path for x in full[: len(limited)]
    ]
    assert 2 <= len(limited) < 6
    assert TableScan(t, limit=150).count() == 150
    # a filter leaves residuals that are not `true`: every file is planned
    assert len(TableScan(t, limit=150, row_filter="id > 3").plan_files()) == 6
    # more rows than the table holds: everything
    assert len(TableScan(t, limit=10_000).plan_files()) == 6


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize(
    "row_filter", ["true", "id >= 20 and s = 'a'", "id < 15 or s is null", "s = 'a'"]
)
def test_fused_decode_and_selection_equal_the_two_steps(
    tmp_path: Path, version: int, row_filter: str
) -> None:
    """``plan_read_keep_manifests`` (decode and select in one step, decoded manifests kept in
    Rust) against ``plan_read_manifests`` then ``plan_keep_entries``, and the cached handles
    selected again by ``plan_keep_decoded`` against the same oracle."""
    from icefloe.scan.filters import SpecFilters, expr_json, referenced_field_ids

    t = _table(tmp_path, version)
    ms = _manifests(t)
    data = [Path(m["manifest_path"]).read_bytes() for m in ms]
    snaps = [m["added_snapshot_id"] for m in ms]
    seqs = [m["sequence_number"] for m in ms]
    firsts = [m.get("first_row_id") for m in ms]
    names = [m["manifest_path"] for m in ms]
    bound = TableScan(t, row_filter=row_filter).bound_filter()
    f = SpecFilters(SCHEMA, SPEC, bound)
    metrics = None if row_filter == "true" else expr_json(bound)
    ids = None if metrics is None else referenced_field_ids(bound)
    n = len(data)
    kw: dict[str, Any] = {
        "snapshot_ids": snaps,
        "sequence_numbers": seqs,
        "first_row_ids": firsts,
        "names": names,
    }
    cols = list(METRICS_COLUMNS) if ids is not None else []
    decoded = _native.plan_read_manifests(data, **kw, columns=cols, metric_ids=ids)
    want = _native.plan_keep_entries(
        decoded, [0] * n, [f.partition_json], metrics, list(DATA_COLUMNS)
    )
    for full in (True, False):
        got = _native.plan_read_keep_manifests(
            data,
            snaps,
            seqs,
            firsts,
            names,
            ids,
            [0] * n,
            [f.partition_json],
            metrics,
            list(DATA_COLUMNS),
            full,
            1,
        )
        assert len(got) == n
        for (k, base, extra), w, d in zip(got, want, decoded, strict=True):
            assert k.equals(w)
            if not full:
                assert base is None and extra is None
                continue
            assert base is not None and base.num_rows == d.num_rows and base.nbytes > 0
            assert (extra is None) == (ids is None)
            # the handles hold the decoded columns: planning columns and metrics maps apart
            whole = base.to_arrow()
            assert set(whole.schema.names) == set(d.schema.names) - set(METRICS_COLUMNS)
            for name in whole.schema.names:
                assert whole.column(name).equals(d.column(name)), name
            if extra is not None:
                assert extra.to_arrow().schema.names == list(METRICS_COLUMNS)
        if full:
            again = _native.plan_keep_decoded(
                [b for _, b, _ in got if b is not None],
                [e for _, _, e in got],
                [0] * n,
                [f.partition_json],
                metrics,
                list(DATA_COLUMNS),
            )
            for a, w in zip(again, want, strict=True):
                assert a.equals(w)


def test_fused_decode_names_a_corrupt_manifest() -> None:
    with pytest.raises(CorruptFileError, match=r"bad\.avro"):
        _native.plan_read_keep_manifests(
            [b"Obj\x01garbage"],
            [None],
            [None],
            [None],
            ["bad.avro"],
            None,
            [0],
            [None],
            None,
            list(DATA_COLUMNS),
            True,
        )
    with pytest.raises(ValidationError, match="spec index"):
        _native.plan_read_keep_manifests(
            [b""], [None], [None], [None], ["x"], None, [1], [None], None, [], False
        )


def test_warm_plans_from_cached_handles_equal_cold_plans(tmp_path: Path) -> None:
    """A second scan of the same table object plans from the cached decoded manifests (the
    cache's hits grow) and gives the same tasks as a cold plan through a fresh object."""
    from icefloe.scan.cache import manifest_cache

    t = _table(tmp_path, 2)
    for row_filter in ("true", "id >= 20 and s = 'a'", "id < 15"):
        cold = TableScan(t, row_filter=row_filter).plan_files()
        cache = manifest_cache(t, 1 << 30)
        assert cache is not None
        hits = cache.hits
        warm = TableScan(t, row_filter=row_filter).plan_files()
        assert cache.hits > hits
        assert [x.data_file.file_path for x in warm] == [x.data_file.file_path for x in cold]
        assert [str(x.residual) for x in warm] == [str(x.residual) for x in cold]
