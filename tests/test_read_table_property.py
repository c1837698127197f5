"""Property test through the whole read path: random tables (random data, random deletes of each
kind, committed through manifests and a metadata file; Parquet, ORC or Avro files) read by
``scan().to_arrow()`` equal the rows computed independently from the generated data and deletes
(``_read_tables``)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import icefloe
from support.read_tables import build, checksum


@st.composite
def _tables(draw: st.DrawFn) -> dict[str, Any]:
    version = draw(st.sampled_from([2, 3]))
    kw: dict[str, Any] = {
        "version": version,
        "files": draw(st.integers(1, 4)),
        "rows": draw(st.integers(1, 150)),
        "seed": draw(st.integers(0, 2**16)),
        "row_group_size": draw(st.sampled_from([None, 7, 64])),
        "file_format": draw(st.sampled_from(["parquet", "parquet", "orc", "avro"])),
    }
    if version == 3:
        kw["dv"] = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    else:
        kw["pos"] = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
        kw["pos_one_file"] = draw(st.booleans())
    columns = draw(st.sampled_from([("k",), ("k", "s"), ("id",)]))
    key = {
        "k": st.one_of(st.none(), st.integers(0, 60)),
        "s": st.one_of(st.none(), st.sampled_from([f"w{i}" for i in range(22)])),
        "id": st.integers(0, 700),
    }
    keys = draw(st.lists(st.tuples(*[key[c] for c in columns]), max_size=6))
    if keys:
        kw["eq_keys"] = keys
        kw["eq_columns"] = columns
    return kw


@settings(max_examples=25, deadline=None)
@given(spec=_tables(), limit=st.one_of(st.none(), st.integers(0, 50)))
def test_random_tables_with_random_deletes(spec: dict[str, Any], limit: int | None) -> None:
    with tempfile.TemporaryDirectory() as d:
        t = build(Path(d), **spec)
        expected = t.expected_rows()
        scan = icefloe.StaticTable.from_metadata(t.metadata_path).scan()
        got = scan.to_arrow()
        assert checksum(got) == checksum(expected)
        assert scan.count() == expected.num_rows
        if limit is not None:
            limited = icefloe.StaticTable.from_metadata(t.metadata_path).scan(limit=limit)
            assert limited.to_arrow().num_rows == min(limit, expected.num_rows)
