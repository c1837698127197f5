"""Whole-file proofs from column metrics: a delete or overwrite drops the files whose metrics
prove that every row matches its filter without reading them, and proves nothing it should
not (nulls, NaN, truncated string bounds, missing statistics)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.exceptions import IcebergError
from icefloe.expressions import And, BooleanExpression, Not, Or, bind, col, parse, rewrite_not
from icefloe.expressions.arrow import selection_mask
from icefloe.scan.manifests import manifest_entries
from icefloe.schema import Schema
from icefloe.types import DoubleType, LongType, NestedField, StringType
from icefloe.write.matching import proven_by_metrics
from support.rowlevel_util import ours
from support.write_util import catalog

SCHEMA = Schema(
    NestedField(1, "i", LongType()),
    NestedField(2, "d", DoubleType()),
    NestedField(3, "s", StringType()),
)
ARROW = pa.schema([("i", pa.int64()), ("d", pa.float64()), ("s", pa.string())])

_ints = st.one_of(st.none(), st.integers(-3, 3))
_doubles = st.one_of(
    st.none(), st.sampled_from([-1.5, -0.0, 0.0, 0.5, 2.0, math.inf, -math.inf, math.nan])
)
# strings longer than the 16-character bound truncation, sharing long prefixes
_strings = st.one_of(st.none(), st.text("ab", min_size=0, max_size=20))
_row = st.tuples(_ints, _doubles, _strings)
_file = st.lists(_row, min_size=1, max_size=6)


def _literal(name: str) -> st.SearchStrategy[Any]:
    if name == "i":
        return st.integers(-4, 4)
    if name == "d":
        return st.sampled_from([-1.5, -0.0, 0.0, 0.5, 1.0, 2.0, math.inf])
    return st.text("ab", min_size=0, max_size=18)


@st.composite
def _predicate(draw: st.DrawFn) -> BooleanExpression:
    name = draw(st.sampled_from(["i", "d", "s"]))
    c = col(name)
    op = draw(
        st.sampled_from(
            ["lt", "le", "gt", "ge", "eq", "ne", "in", "notin", "null", "notnull", "nan", "notnan"]
            + (["startswith", "notstartswith"] if name == "s" else [])
        )
    )
    if op == "null":
        return c.is_null()
    if op == "notnull":
        return c.not_null()
    if op in ("nan", "notnan"):
        if name != "d":
            return c.not_null()
        return c.is_nan() if op == "nan" else c.not_nan()
    if op in ("in", "notin"):
        values = draw(st.lists(_literal(name), min_size=1, max_size=3))
        if name == "d":
            values = [v for v in values if not math.isnan(v)] or [0.5]
        return c.isin(values) if op == "in" else c.not_in(values)
    v = draw(_literal(name))
    if op == "startswith":
        return c.starts_with(v)
    if op == "notstartswith":
        return c.not_starts_with(v)
    return {
        "lt": lambda: c < v,
        "le": lambda: c <= v,
        "gt": lambda: c > v,
        "ge": lambda: c >= v,
        "eq": lambda: c == v,
        "ne": lambda: c != v,
    }[op]()


_filters = st.recursive(
    _predicate(),
    lambda inner: st.one_of(
        st.builds(And, inner, inner), st.builds(Or, inner, inner), st.builds(Not, inner)
    ),
    max_leaves=3,
)


def _entries(table: Any) -> list[pa.RecordBatch]:
    snap = table.current_snapshot()
    return [b for mf, b in manifest_entries(table.io, snap) if mf.content == 0]


def _first_ids(table: Any) -> dict[str, int]:
    """Each live data file's path and the ``i`` of its first row."""
    out = {}
    for b in _entries(table):
        for p in b.column("file_path").to_pylist():
            out[p] = pq.read_table(p.removeprefix("file://")).column("i")[0].as_py()
    return out


@pytest.fixture(scope="module")
def proof_catalog(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return catalog(tmp_path_factory.mktemp("proofs"))


_COUNTER = iter(range(10**9))


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(files=st.lists(_file, min_size=1, max_size=4), expr=_filters)
def test_every_proven_file_matches_on_every_row(
    proof_catalog: Any, files: list[list[tuple[Any, Any, Any]]], expr: BooleanExpression
) -> None:
    """Soundness: each file the metrics prove holds only rows the filter selects, under the
    evaluation a delete uses; and a file whose every row matches with plain numbers and no
    nulls is proven for a plain comparison (the proof is not vacuous)."""
    t = proof_catalog.create_table(f"ns.p{next(_COUNTER)}", SCHEMA)
    for rows in files:
        t.append(pa.Table.from_pylist([dict(zip("ids", r, strict=True)) for r in rows], ARROW))
    try:
        bound = rewrite_not(bind(t.schema(), expr, case_sensitive=True))
    except IcebergError:
        return  # a literal the column cannot hold
    proven = proven_by_metrics(_entries(t), bound)
    for path in proven:
        data = pq.read_table(path.removeprefix("file://"), schema=ARROW)
        mask = selection_mask(bound, data)
        assert pc.all(mask).as_py() is not False, (path, data.to_pylist(), expr)
    proof_catalog.drop_table(t.name, purge=True)


def test_comparisons_are_proven_where_the_bounds_allow(tmp_path: Path) -> None:
    t = catalog(tmp_path).create_table("ns.t", SCHEMA)
    t.append(pa.table({"i": [1, 2, 3], "d": [0.1, 0.2, 0.3], "s": ["a", "ab", "b"]}, ARROW))
    t.append(pa.table({"i": [5, None], "d": [0.5, math.nan], "s": ["c", "d"]}, ARROW))
    t.append(pa.table({"i": [7, 8], "d": [0.7, 0.8], "s": ["x" * 40, "x" * 40 + "y"]}, ARROW))
    ids = _first_ids(t)
    first, _, third = sorted(ids, key=lambda p: ids[p])

    def proven(f: str) -> set[str]:
        return set(proven_by_metrics(_entries(t), bind(t.schema(), parse(f))))

    assert proven("i < 4") == {first}
    # a null is never a match for a comparison, a NaN never for an ordering on doubles
    assert proven("i < 6") == {first}
    assert proven("d < 0.6") == {first}
    assert proven("d > 0.05") == {first, third}
    assert proven("i is not null") == {first, third}
    assert proven("d is not nan") == {first, third}
    # truncated bounds (16 characters) still prove an ordering, never a longer prefix
    assert proven("s > 'w'") == {third}
    assert proven("s like 'x%'") == {third}
    assert proven("s like 'xxxxxxxxxxxxxxxxxxxxxxxxx%'") == set()
    assert proven("i >= 1 and i <= 3 or i >= 7") == {first, third}
    assert proven("not (i > 3)") == {first}
    assert proven("i in (7, 8)") == set()  # the bounds differ: 7 or 8 is not one value
    assert proven("i not in (4, 6)") == {first, third}


@pytest.mark.parametrize(
    ("version", "props"),
    [
        (2, {"write.delete.mode": "merge-on-read"}),
        (3, {"write.delete.mode": "merge-on-read"}),
        (2, {"write.delete.mode": "copy-on-write"}),
        (1, {}),
    ],
)
def test_delete_drops_proven_files_without_reading_them(
    tmp_path: Path, version: int, props: dict[str, str]
) -> None:
    """A retention delete (``i < 100``) on an unpartitioned table: the files of old rows are
    dropped from their metrics alone (their data files are gone from storage here, so a read
    would fail), the file that straddles the bound is read and gets deletes or a rewrite."""
    t = catalog(tmp_path).create_table(
        "ns.t", SCHEMA, properties={"format-version": str(version), **props}
    )
    batches = [range(0, 50), range(50, 100), range(90, 140)]
    for r in batches:
        t.append(pa.table({"i": list(r), "d": [0.5] * len(r), "s": ["v"] * len(r)}, ARROW))
    old = [p for p, first in _first_ids(t).items() if first < 90]
    assert len(old) == 2
    for p in old:
        Path(p.removeprefix("file://")).unlink()
    t.delete("i < 100")
    assert sorted(ours(t).column("i").to_pylist()) == list(range(100, 140))
    summary = t.current_snapshot().summary
    rewrites = props.get("write.delete.mode") != "merge-on-read"
    assert summary.get_int("deleted-data-files") == (3 if rewrites else 2)


def test_overwrite_drops_proven_files_without_reading_them(tmp_path: Path) -> None:
    t = catalog(tmp_path).create_table("ns.t", SCHEMA)
    t.append(pa.table({"i": [1, 2], "d": [0.1, 0.2], "s": ["a", "b"]}, ARROW))
    t.append(pa.table({"i": [3, 40], "d": [0.3, 0.4], "s": ["c", "d"]}, ARROW))
    (gone,) = [p for p, first in _first_ids(t).items() if first == 1]
    Path(gone.removeprefix("file://")).unlink()
    t.overwrite(pa.table({"i": [9], "d": [0.9], "s": ["z"]}, ARROW), "i < 10")
    assert sorted(ours(t).column("i").to_pylist()) == [9, 40]


def test_nulls_and_nans_are_kept_by_a_delete(tmp_path: Path) -> None:
    """Files whose bounds fit the filter but which hold nulls or NaN are read: those rows stay."""
    t = catalog(tmp_path).create_table(
        "ns.t", SCHEMA, properties={"format-version": "3", "write.delete.mode": "merge-on-read"}
    )
    t.append(pa.table({"i": [1, None], "d": [0.5, math.nan], "s": ["a", None]}, ARROW))
    t.delete("i < 5")
    t.delete("d < 1.0")
    (row,) = ours(t).to_pylist()
    assert row["i"] is None and math.isnan(row["d"]) and row["s"] is None


def test_spark_overwrite_plan_drops_proven_files(tmp_path: Path) -> None:
    """The Spark writer's overwrite by filter drops files the metrics prove instead of
    rewriting them on the executors."""
    from icefloe.spark.writing import _overwrite_plan

    t = catalog(tmp_path).create_table("ns.t", SCHEMA)
    t.append(pa.table({"i": [1, 2], "d": [0.1, 0.2], "s": ["a", "b"]}, ARROW))
    t.append(pa.table({"i": [3, 40], "d": [0.3, 0.4], "s": ["c", "d"]}, ARROW))
    ids = _first_ids(t)
    drop, rewrite, _ = _overwrite_plan(t, "main", "i < 10")
    assert [ids[p] for p in drop] == [1]
    assert [ids[task.data_file.file_path] for task in rewrite] == [3]
