"""Which columns a written data file dictionary-encodes, and that the choice never changes the
rows: mostly-distinct columns are written plain, the others with a dictionary."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.write.encoding import SAMPLE_ROWS, dictionary_columns
from support.write_util import catalog


def _dictionary_encoded(path: str) -> dict[str, bool]:
    md = pq.ParquetFile(path).metadata
    out: dict[str, bool] = {}
    for i in range(md.num_columns):
        col = md.row_group(0).column(i)
        out[col.path_in_schema] = col.has_dictionary_page
    return out


def test_mostly_distinct_columns_are_plain() -> None:
    n = 20_000
    t = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "kind": pa.array([f"k{i % 40}" for i in range(n)]),
            "half": pa.array([i // 2 for i in range(n)], pa.int32()),  # exactly half distinct
            "nulls": pa.nulls(n, pa.string()),
        }
    )
    assert dictionary_columns(t) == ["kind", "half", "nulls"]
    assert dictionary_columns(t.select(["kind"])) is True
    assert dictionary_columns(t.select(["id"])) is False
    # only the first SAMPLE_ROWS rows are looked at
    late = pa.table({"x": pa.array([0] * SAMPLE_ROWS + list(range(n)), pa.int64())})
    assert dictionary_columns(late) is True


def test_nested_leaves_are_sampled_and_empty_tables_keep_every_dictionary() -> None:
    """A nested column's leaves are decided one by one, named by their Parquet paths; a leaf
    inside a list or map is sampled from the values of the sampled rows."""
    n = 100
    nested = pa.table(
        {
            "id": pa.array(range(n)),
            "st": pa.array([{"a": i, "b": f"b{i % 3}"} for i in range(n)]),
            "ls": pa.array([[{"k": i % 2, "v": i * 1.5}] for i in range(n)]),
            "mp": pa.array([[("key", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
        }
    )
    assert dictionary_columns(nested) == [
        "st.b",
        "ls.list.element.k",
        "mp.key_value.key",
    ]
    # sampled rows of a slice: the map's entries follow the slice's offsets
    assert dictionary_columns(nested.slice(50)) == dictionary_columns(nested)
    assert dictionary_columns(nested.select(["st"]).slice(0, 1)) is True
    assert dictionary_columns(pa.table({"id": pa.array([], pa.int64())})) is True


def test_append_writes_plain_and_dictionary_columns(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    n = 50_000
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "kind": pa.array([f"kind-{i % 40}" for i in range(n)]),
            "x": pa.array([i / 7 for i in range(n)], pa.float64()),
        }
    )
    t = cat.create_table("ns.t", data.schema)
    t.append(data)
    (task,) = t.scan().plan_files()
    encoded = _dictionary_encoded(task.data_file.file_path.removeprefix("file://"))
    assert encoded == {"id": False, "kind": True, "x": False}
    assert t.scan().to_arrow().sort_by("id").equals(data)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 3 * SAMPLE_ROWS),
    cardinality=st.integers(1, 5 * SAMPLE_ROWS),
    null_every=st.integers(0, 5),
)
def test_round_trip_whatever_the_encoding(
    tmp_path_factory: pytest.TempPathFactory, n: int, cardinality: int, null_every: int
) -> None:
    ids = list(range(n))
    values = [
        None if null_every and i % (null_every + 1) == 0 else f"v{(i * 7919) % cardinality}"
        for i in ids
    ]
    data = pa.table({"id": pa.array(ids, pa.int64()), "s": pa.array(values, pa.string())})
    cat = catalog(tmp_path_factory.mktemp("enc"))
    t = cat.create_table("ns.t", data.schema)
    t.append(data)
    assert t.scan().to_arrow().sort_by("id").equals(data)


@st.composite
def _nested_tables(draw: st.DrawFn) -> pa.Table:
    n = draw(st.integers(1, 300))
    card = draw(st.integers(1, 400))
    nulls = draw(st.booleans())

    def v(i: int) -> int | None:
        return None if nulls and i % 7 == 3 else (i * 7919) % card

    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "st": pa.array(
                [None if v(i) is None else {"a": v(i), "b": f"s{v(i)}"} for i in range(n)]
            ),
            "ls": pa.array(
                [[{"k": v(i + j), "v": float(i)} for j in range(i % 3)] for i in range(n)],
                pa.list_(pa.struct([("k", pa.int64()), ("v", pa.float64())])),
            ),
            "mp": pa.array(
                [[(f"k{v(i) or 0}", i)] if i % 4 else None for i in range(n)],
                pa.map_(pa.string(), pa.int64()),
            ),
        }
    )


@settings(max_examples=25, deadline=None)
@given(data=_nested_tables())
def test_nested_round_trip_with_the_chosen_leaves(
    tmp_path_factory: pytest.TempPathFactory, data: pa.Table
) -> None:
    """The chosen leaves are the file's columns by their Parquet paths: exactly they have a
    dictionary page; the rows read back equal the rows written."""
    choice = dictionary_columns(data)
    cat = catalog(tmp_path_factory.mktemp("enc"))
    t = cat.create_table("ns.t", data.schema)
    t.append(data)
    (task,) = t.scan().plan_files()
    encoded = _dictionary_encoded(task.data_file.file_path.removeprefix("file://"))
    if choice is True or choice is False:
        assert all(v is choice for v in encoded.values())
    else:
        assert set(choice) <= set(encoded)
        assert {p for p, has in encoded.items() if has} == set(choice)
    assert t.scan().to_arrow().sort_by("id").equals(data)
