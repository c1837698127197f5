"""Random sequences of append / delete / upsert / delete_by_keys / compaction against an
in-memory model of the expected rows (hypothesis), on v2 and v3 in both delete modes; row ids
must survive compaction and copy-on-write unchanged. Concurrent writers: conflicts are detected
on retry and compatible changes both land."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from icefloe.exceptions import CommitConflictError
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField
from support.rowlevel_util import live_deletes, ours
from support.write_util import catalog

SCHEMA = Schema(NestedField(1, "k", LongType(), True), NestedField(2, "v", LongType()))
SPEC = PartitionSpec(PartitionField(1, 1000, parse_transform("bucket[3]"), "kb"))
KEYS = st.integers(0, 40)

OPS = st.one_of(
    st.tuples(st.just("append"), st.lists(KEYS, min_size=1, max_size=8)),
    st.tuples(st.just("delete"), KEYS, KEYS),
    st.tuples(st.just("upsert"), st.lists(KEYS, min_size=1, max_size=8, unique=True)),
    st.tuples(st.just("delete_by_keys"), st.lists(KEYS, min_size=1, max_size=3, unique=True)),
    st.tuples(st.just("compact")),
)

_counter = itertools.count()


def _rows(keys: list[int], tag: int) -> pa.Table:
    return pa.table(
        {"k": pa.array(keys, pa.int64()), "v": pa.array([tag * 1000 + k for k in keys], pa.int64())}
    )


def _apply(model: list[tuple[int, int]], op: tuple[Any, ...], tag: int) -> list[tuple[int, int]]:
    kind = op[0]
    if kind == "append":
        return model + [(k, tag * 1000 + k) for k in op[1]]
    if kind == "delete":
        lo, hi = sorted(op[1:])
        return [r for r in model if not lo <= r[0] <= hi]
    if kind == "upsert":
        keys = set(op[1])
        return [r for r in model if r[0] not in keys] + [(k, tag * 1000 + k) for k in op[1]]
    if kind == "delete_by_keys":
        return [r for r in model if r[0] not in set(op[1])]
    return model


@pytest.mark.parametrize(
    ("version", "mode", "granularity"),
    [
        (2, "merge-on-read", "file"),
        (2, "merge-on-read", "partition"),
        (3, "merge-on-read", "file"),
        (3, "copy-on-write", "file"),
    ],
)
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(OPS, min_size=1, max_size=7))
# found by CI: a copy-on-write rewrite dropped an equality delete pruned by the filter
@example(ops=[("append", [0, 12]), ("delete_by_keys", [12]), ("delete", 0, 0)])
def test_random_sequences_match_model(
    tmp_path_factory: pytest.TempPathFactory,
    version: int,
    mode: str,
    granularity: str,
    ops: list[Any],
) -> None:
    tmp: Path = tmp_path_factory.mktemp("model")
    t = catalog(tmp).create_table(
        "ns.t",
        SCHEMA,
        partition_spec=SPEC,
        properties={
            "format-version": str(version),
            "write.delete.mode": mode,
            "write.merge.mode": mode,
            "write.delete.granularity": granularity,
        },
    )
    model: list[tuple[int, int]] = []
    ids: dict[tuple[int, int], int] = {}  # row -> _row_id, for rows not rewritten by upsert
    for op in ops:
        tag = next(_counter)
        kind = op[0]
        if kind == "append":
            t.append(_rows(op[1], tag))
        elif kind == "delete":
            lo, hi = sorted(op[1:])
            t.delete(f"k >= {lo} and k <= {hi}")
        elif kind == "upsert":
            # upsert needs unique keys in the table as well to be well defined
            present = [r[0] for r in model]
            if len(present) != len(set(present)):
                continue
            t.upsert(_rows(op[1], tag), ["k"])
        elif kind == "delete_by_keys":
            t.delete_by_keys({"k": op[1]}, ["k"])
        else:
            t.rewrite_data_files(target_file_size=1 << 20)
        model = _apply(model, op, tag)
        got = ours(t, *(("_row_id",) if version >= 3 else ()))
        pairs = list(zip(got["k"].to_pylist(), got["v"].to_pylist(), strict=True))
        assert sorted(pairs) == sorted(model), op
        dels = live_deletes(t)
        refs = [r for r in dels.column("referenced_data_file").to_pylist() if r]
        if version == 2 and granularity == "file":
            # one position delete file per data file, each superseding the one before
            positional = dels.filter(pc.equal(dels["content"], 1))
            scoped = positional.column("referenced_data_file").to_pylist()
            assert None not in scoped and len(scoped) == len(set(scoped))
        if version >= 3:
            assert len(refs) == len(set(refs)), "more than one DV for a data file"
            row_ids = got["_row_id"].to_pylist()
            assert len(set(row_ids)) == len(row_ids) and None not in row_ids
            now = dict(zip(pairs, row_ids, strict=True))
            for row, rid in now.items():
                if row in ids and kind != "upsert":
                    assert ids[row] == rid, (op, row)
            ids = now


def _mor_table(tmp_path: Path, version: int = 3) -> Any:
    t = catalog(tmp_path).create_table(
        "ns.t",
        SCHEMA,
        partition_spec=SPEC,
        properties={"format-version": str(version), "write.delete.mode": "merge-on-read"},
    )
    t.append(_rows(list(range(30)), 0))
    return t


@pytest.mark.parametrize("version", [2, 3])
def test_concurrent_deletes_of_one_file_conflict(tmp_path: Path, version: int) -> None:
    t = _mor_table(tmp_path, version)
    other = t.catalog.load_table("ns.t")
    tx = t.transaction()
    tx.delete("k = 3")
    # another writer adds a DV for the same data file first: two DVs must never coexist
    other.delete("k = 3 or k = 4")
    with pytest.raises(CommitConflictError, match="deletes"):
        tx.commit_transaction()
    t.refresh()
    got = sorted(ours(t)["k"].to_pylist())
    assert got == [k for k in range(30) if k not in (3, 4)]
    refs = [r for r in live_deletes(t).column("referenced_data_file").to_pylist() if r]
    assert len(refs) == len(set(refs))


def test_concurrent_append_elsewhere_does_not_conflict(tmp_path: Path) -> None:
    t = _mor_table(tmp_path)
    other = t.catalog.load_table("ns.t")
    tx = t.transaction()
    tx.delete("k = 3")
    other.append(_rows([100], 9))  # new data the filter cannot match
    tx.commit_transaction()
    t.refresh()
    assert sorted(ours(t)["k"].to_pylist()) == [k for k in range(30) if k != 3] + [100]


def test_concurrent_append_matching_filter_conflicts_when_serializable(tmp_path: Path) -> None:
    t = _mor_table(tmp_path)
    other = t.catalog.load_table("ns.t")
    tx = t.transaction()
    tx.delete("k >= 0")
    other.append(_rows([5], 9))  # may match the filter: serializable isolation refuses
    with pytest.raises(CommitConflictError, match="serializable"):
        tx.commit_transaction()
    # with snapshot isolation the delete lands and the new row stays
    t.refresh()
    t.set_properties({"write.delete.isolation-level": "snapshot"})
    other = t.catalog.load_table("ns.t")
    tx = t.transaction()
    tx.delete("k >= 0")
    other.append(_rows([7], 10))
    tx.commit_transaction()
    t.refresh()
    assert ours(t)["k"].to_pylist() == [7]
    assert pc.sum(ours(t)["v"]).as_py() == 10007


@pytest.mark.parametrize("version", [2, 3])
def test_concurrent_compaction_of_other_files_does_not_conflict(
    tmp_path: Path, version: int
) -> None:
    """A compaction adds no rows: a file it writes may span the change's filter (its bounds
    cover those of the files it merged) without being a concurrent append, as Java validates
    only appends and overwrites for new data under serializable isolation."""
    t = catalog(tmp_path).create_table(
        "ns.c",
        SCHEMA,
        properties={"format-version": str(version), "write.delete.mode": "merge-on-read"},
    )
    t.append(_rows([5], 0))  # the file the delete reads
    t.append(_rows([0, 1, 2, 3, 4], 0))  # two files whose merge spans k = 5
    t.append(_rows([6, 7, 8, 9], 0))
    other = t.catalog.load_table("ns.c")
    tx = t.transaction()
    tx.delete("k = 5")
    assert other.rewrite_data_files(row_filter="k <= 4 or k >= 6").rewritten_data_files == 2
    assert other.current_snapshot().operation == "replace"
    tx.commit_transaction()
    t.refresh()
    assert sorted(ours(t)["k"].to_pylist()) == [0, 1, 2, 3, 4, 6, 7, 8, 9]
    # a compaction that rewrote the file the change read still conflicts
    t.append(_rows([10], 0))
    tx = t.transaction()
    tx.delete("k = 9")
    other.refresh()
    assert other.rewrite_data_files().rewritten_data_files == 2
    with pytest.raises(CommitConflictError, match="removed by a concurrent commit"):
        tx.commit_transaction()


# ---------------------------------------------------------------- evolution and overwrites
# The model above extended with overwrite-by-filter, dynamic partition overwrite, upsert in
# equality mode, partition spec evolution and adding a column with a default mid-sequence.
# Rows are (k, v, c); c is None until the column is added.

# (source column, transform) of the specs a sequence can switch to; None: unpartitioned
SPECS: list[tuple[str, str] | None] = [
    ("k", "bucket[3]"),
    ("k", "bucket[5]"),
    ("k", "truncate[10]"),
    ("k", "identity"),
    ("v", "bucket[2]"),
    None,
]

EVO_OPS = st.one_of(
    st.tuples(st.just("append"), st.lists(KEYS, min_size=1, max_size=8)),
    st.tuples(st.just("delete"), KEYS, KEYS),
    st.tuples(st.just("upsert"), st.lists(KEYS, min_size=1, max_size=8, unique=True)),
    st.tuples(st.just("delete_by_keys"), st.lists(KEYS, min_size=1, max_size=3, unique=True)),
    st.tuples(st.just("compact")),
    st.tuples(st.just("overwrite"), KEYS, KEYS, st.lists(KEYS, max_size=6)),
    st.tuples(st.just("dynamic"), st.lists(KEYS, min_size=1, max_size=6)),
    st.tuples(st.just("spec"), st.integers(0, len(SPECS) - 1)),
    st.tuples(st.just("add_column")),
)

Row = tuple[int, int, "int | None"]


def _oracle_transform(column: str, transform: str) -> Any:
    """PyIceberg's implementation of a partition transform on longs (an independent oracle)."""
    from pyiceberg.transforms import parse_transform as pyiceberg_transform
    from pyiceberg.types import LongType as PyIcebergLong

    fn = pyiceberg_transform(transform).transform(PyIcebergLong())
    index = 0 if column == "k" else 1
    return lambda row: fn(row[index])


def _evo_rows(keys: list[int], tag: int, with_c: bool) -> pa.Table:
    t = _rows(keys, tag)
    if with_c:
        t = t.append_column("c", pa.array([tag] * len(keys), pa.int64()))
    return t


def _evo_expected(keys: list[int], tag: int, with_c: bool, default: int | None) -> list[Row]:
    return [(k, tag * 1000 + k, tag if with_c else default) for k in keys]


def _evo_read(t: Any, *meta: str) -> pa.Table:
    return t.scan(selected_fields=("*", *meta)).to_arrow()


def _evo_pairs(got: pa.Table, has_c: bool) -> list[Row]:
    cs = got["c"].to_pylist() if has_c else [None] * got.num_rows
    return list(zip(got["k"].to_pylist(), got["v"].to_pylist(), cs, strict=True))


def _switch_spec(t: Any, choice: tuple[str, str] | None) -> None:
    with t.update_spec() as u:
        for f in t.spec().fields:
            u.remove_field(f.name)
        if choice is not None:
            u.add_field(choice[0], choice[1], f"p_{choice[0]}_{choice[1].replace('[', '_')[:-1]}")


@pytest.mark.parametrize(
    ("version", "mode", "upsert_mode"),
    [
        (2, "merge-on-read", "equality"),
        (3, "merge-on-read", None),
        (3, "copy-on-write", "equality"),
        (2, "copy-on-write", None),
    ],
)
@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(EVO_OPS, min_size=1, max_size=8))
# found by the soak: an overwrite removed a whole Puffin file with the DV of a file it removed,
# so rows deleted in other data files came back
@example(ops=[("append", [1, 18, 2]), ("delete", 1, 2), ("overwrite", 18, 18, [])])
# DuckDB 1.5.5 throws on equality deletes under two specs (see _check_peers)
@example(ops=[("append", [0]), ("spec", 2), ("append", [0]), ("delete_by_keys", [0])])
def test_random_sequences_with_evolution_match_model(
    tmp_path_factory: pytest.TempPathFactory,
    version: int,
    mode: str,
    upsert_mode: str | None,
    ops: list[Any],
) -> None:
    from icefloe.exceptions import ValidationError
    from icefloe.types import LongType as Long

    tmp: Path = tmp_path_factory.mktemp("evo")
    props = {"format-version": str(version), "write.delete.mode": mode, "write.merge.mode": mode}
    if upsert_mode is not None:
        props["write.upsert.mode"] = upsert_mode
    t = catalog(tmp).create_table("ns.t", SCHEMA, partition_spec=SPEC, properties=props)
    spec: tuple[str, str] | None = ("k", "bucket[3]")
    has_c = False
    default: int | None = None
    model: list[Row] = []
    for op in ops:
        tag = next(_counter)
        kind = op[0]
        with_c = has_c and tag % 2 == 0
        if kind == "append":
            t.append(_evo_rows(op[1], tag, with_c))
            model = model + _evo_expected(op[1], tag, with_c, default)
        elif kind == "delete":
            lo, hi = sorted(op[1:])
            t.delete(f"k >= {lo} and k <= {hi}")
            model = [r for r in model if not lo <= r[0] <= hi]
        elif kind == "upsert":
            present = [r[0] for r in model]
            if upsert_mode is None and len(present) != len(set(present)):
                continue  # needs unique keys in the table to be well defined
            if has_c and not with_c:
                # a source without a column of the table would wipe its values: refused
                with pytest.raises(ValidationError, match="lacks the columns"):
                    t.upsert(_evo_rows(op[1], tag, with_c), ["k"])
                continue
            t.upsert(_evo_rows(op[1], tag, with_c), ["k"])
            keys = set(op[1])
            model = [r for r in model if r[0] not in keys]
            model += _evo_expected(op[1], tag, with_c, default)
        elif kind == "delete_by_keys":
            t.delete_by_keys({"k": op[1]}, ["k"])
            model = [r for r in model if r[0] not in set(op[1])]
        elif kind == "compact":
            t.rewrite_data_files(target_file_size=1 << 20)
        elif kind == "overwrite":
            lo, hi = sorted(op[1:3])
            t.overwrite(_evo_rows(op[3], tag, with_c), f"k >= {lo} and k <= {hi}")
            model = [r for r in model if not lo <= r[0] <= hi]
            model += _evo_expected(op[3], tag, with_c, default)
        elif kind == "dynamic":
            if spec is None:
                with pytest.raises(ValidationError, match="partitioned"):
                    t.dynamic_partition_overwrite(_evo_rows(op[1], tag, with_c))
                continue
            # files of the current spec in the partitions the new rows touch are replaced
            key = _oracle_transform(*spec)
            new = _evo_expected(op[1], tag, with_c, default)
            touched = {key(r) for r in new}
            before = _evo_read(t, "_spec_id")
            current = t.spec().spec_id
            rows = _evo_pairs(before, has_c)
            specs = before["_spec_id"].to_pylist()
            assert sorted(rows) == sorted(model)
            t.dynamic_partition_overwrite(_evo_rows(op[1], tag, with_c))
            model = [
                r for r, s in zip(rows, specs, strict=True) if s != current or key(r) not in touched
            ] + new
        elif kind == "spec":
            choice = SPECS[op[1]]
            if choice == spec:
                continue
            _switch_spec(t, choice)
            spec = choice
        else:
            if has_c:
                continue
            with t.update_schema() as u:
                if version >= 3:
                    u.add_column("c", Long(), initial_default=7)
                    default = 7
                else:
                    u.add_column("c", Long())
            has_c = True
            model = [(k, v, default) for k, v, _ in model]
        got = _evo_read(t, *(("_row_id",) if version >= 3 else ()))
        assert sorted(_evo_pairs(got, has_c)) == sorted(model), op
        if version >= 3:
            refs = [r for r in live_deletes(t).column("referenced_data_file").to_pylist() if r]
            assert len(refs) == len(set(refs)), "more than one DV for a data file"
            row_ids = got["_row_id"].to_pylist()
            assert len(set(row_ids)) == len(row_ids) and None not in row_ids
    _check_peers(t, model, has_c)


def _check_peers(t: Any, model: list[Row], has_c: bool) -> None:
    """PyIceberg (when no equality deletes are live: 0.12 cannot apply them) and DuckDB read
    the same rows."""
    from support.peers import duckdb_connect
    from support.write_util import pyiceberg_read

    contents = live_deletes(t).column("content").to_pylist()
    if 2 not in contents:
        assert sorted(_evo_pairs(pyiceberg_read(t), has_c)) == sorted(model)
    con = duckdb_connect()
    try:
        cols = "k, v, c" if has_c else "k, v, null"
        got = con.execute(f"select {cols} from iceberg_scan('{t.metadata_location}')").fetchall()
    except duckdb.InternalException as e:
        # DuckDB 1.5.5 pairs the partition values of data and delete files by position, not
        # by spec, and throws on a table with files under two specs and deletes against one
        # (fixed upstream in duckdb-iceberg pull request 1276); every other failure counts.
        if "Comparison on NULL values" not in str(e) or len(_live_specs(t)) < 2:
            raise
        return
    finally:
        con.close()
    assert sorted(tuple(r) for r in got) == sorted(model)


def _live_specs(t: Any) -> set[int]:
    """The specs of the current snapshot's live data and delete files."""
    return set(t.inspect.files()["spec_id"].to_pylist())
