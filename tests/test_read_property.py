"""Property test: random data and random deletes of every kind; the reader's surviving rows
equal the set computed here independently (plain Python over the generated rows)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.scan import FileScanTask, ReadOptions
from icefloe.schema import Schema
from icefloe.types import IntegerType, LongType, NestedField, StringType
from support.read_util import read, write_data, write_dv, write_eq_deletes, write_pos_deletes

SCHEMA = Schema(
    NestedField(1, "k", IntegerType()),
    NestedField(2, "s", StringType()),
    NestedField(3, "v", LongType(), True),
)

rows_st = st.lists(
    st.fixed_dictionaries(
        {
            "k": st.one_of(st.none(), st.integers(-3, 3)),
            "s": st.one_of(st.none(), st.sampled_from(["a", "b", "c"])),
        }
    ),
    min_size=1,
    max_size=300,
)


@settings(max_examples=40, deadline=None)
@given(
    rows=rows_st,
    data=st.data(),
    batch_rows=st.integers(1, 64),
)
def test_random_deletes_match_independent_expectation(
    rows: list[dict[str, object]], data: st.DataObject, batch_rows: int
) -> None:
    n = len(rows)
    full = [{**r, "v": i} for i, r in enumerate(rows)]
    dv_pos = data.draw(st.sets(st.integers(0, n - 1)), label="dv")
    file_pos = data.draw(st.sets(st.integers(0, n - 1)), label="pos")
    eq_k = data.draw(st.lists(st.one_of(st.none(), st.integers(-3, 3)), max_size=3), label="k")
    eq_ks = data.draw(
        st.lists(
            st.tuples(
                st.one_of(st.none(), st.integers(-3, 3)),
                st.one_of(st.none(), st.sampled_from(["a", "b", "c"])),
            ),
            max_size=4,
        ),
        label="ks",
    )
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        df = write_data(tmp / "d.parquet", SCHEMA, full, row_group_size=batch_rows)
        deletes = []
        if dv_pos:
            deletes.append(write_dv(tmp / "dv.puffin", sorted(dv_pos), df.file_path))
        if file_pos:
            entries = [(df.file_path, p) for p in file_pos] + [("x://other", 0)]
            deletes.append(write_pos_deletes(tmp / "p.parquet", entries))
        if eq_k:
            rows_k = [{"k": k} for k in eq_k]
            deletes.append(write_eq_deletes(tmp / "e1.parquet", SCHEMA, (1,), rows_k))
        if eq_ks:
            rows_ks = [{"k": k, "s": s} for k, s in eq_ks]
            deletes.append(write_eq_deletes(tmp / "e2.parquet", SCHEMA, (1, 2), rows_ks))
        out = read(FileScanTask(df, tuple(deletes)), ReadOptions(SCHEMA))
    expected = [
        r["v"]
        for i, r in enumerate(full)
        if i not in dv_pos
        and i not in file_pos
        and r["k"] not in eq_k
        and (r["k"], r["s"]) not in set(eq_ks)
    ]
    assert out.column("v").to_pylist() == expected
