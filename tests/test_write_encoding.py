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


def test_nested_and_empty_tables_keep_every_dictionary() -> None:
    nested = pa.table({"id": pa.array(range(100)), "st": pa.array([{"a": i} for i in range(100)])})
    assert dictionary_columns(nested) is True
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
