"""Random sequences of appends and overwrites against an in-memory model of the rows.

After every operation PyIceberg 0.12 reads the table and must see exactly the model's rows;
at the end DuckDB must agree too, and on v3 every row id is unique.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.scan.manifests import manifest_entries
from icefloe.schema import Schema
from icefloe.transforms import parse_transform
from icefloe.types import LongType, NestedField, StringType
from support.peers import duckdb_connect
from support.write_util import catalog, pyiceberg_read

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "cat", StringType()),
    NestedField(3, "v", LongType(), True),
)
SPECS = {
    "identity": PartitionSpec(PartitionField(2, 1000, parse_transform("identity"), "cat")),
    "bucket": PartitionSpec(PartitionField(1, 1000, parse_transform("bucket[3]"), "id_b")),
    "none": PartitionSpec(),
}
CATS = ["a", "b", "c", None]

rows_st = st.lists(st.tuples(st.sampled_from(CATS), st.integers(0, 20)), min_size=1, max_size=12)
op_st = st.one_of(
    st.tuples(st.just("append"), rows_st),
    st.tuples(st.just("overwrite_v"), rows_st, st.integers(0, 20)),
    st.tuples(st.just("overwrite_cat"), rows_st, st.sampled_from(["a", "b"])),
    st.tuples(st.just("dynamic"), rows_st),
)


def _table(start: int, rows: list[tuple[str | None, int]]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + len(rows)), pa.int64()),
            "cat": pa.array([c for c, _ in rows], pa.string()),
            "v": pa.array([v for _, v in rows], pa.int64()),
        }
    )


def _partition_of(spec: str, row: tuple[int, str | None, int]) -> Any:
    if spec == "identity":
        return row[1]
    return None


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    version=st.sampled_from([1, 2, 3]),
    spec=st.sampled_from(sorted(SPECS)),
    ops=st.lists(op_st, min_size=1, max_size=5),
)
def test_random_writes_match_model(version: int, spec: str, ops: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t = catalog(Path(tmp)).create_table(
            "ns.t", SCHEMA, partition_spec=SPECS[spec], format_version=version
        )
        model: dict[int, tuple[str | None, int]] = {}
        next_id = 0
        for op in ops:
            kind, rows = op[0], op[1]
            data = _table(next_id, rows)
            new = {next_id + i: r for i, r in enumerate(rows)}
            next_id += len(rows)
            if kind == "append":
                t.append(data)
            elif kind == "overwrite_v":
                t.overwrite(data, f"v < {op[2]}")
                model = {k: r for k, r in model.items() if not r[1] < op[2]}
            elif kind == "overwrite_cat":
                t.overwrite(data, f"cat = '{op[2]}'")
                model = {k: r for k, r in model.items() if r[0] != op[2]}
            else:
                if spec == "none":
                    continue
                if spec == "identity":
                    cats = {c for c, _ in rows}
                    model = {k: r for k, r in model.items() if r[0] not in cats}
                else:
                    hit = set(pc.unique(parse_transform("bucket[3]").apply(data["id"])).to_pylist())
                    ids = pa.array(list(model), pa.int64())
                    buckets = parse_transform("bucket[3]").apply(ids).to_pylist()
                    model = {
                        k: r
                        for (k, r), b in zip(model.items(), buckets, strict=True)
                        if b not in hit
                    }
                t.dynamic_partition_overwrite(data)
            model.update(new)
            got = pyiceberg_read(t)
            assert sorted(
                zip(
                    got["id"].to_pylist(), got["cat"].to_pylist(), got["v"].to_pylist(), strict=True
                )
            ) == sorted((k, c, v) for k, (c, v) in model.items())
        con = duckdb_connect()
        try:
            n = con.execute(
                f"select count(*) from iceberg_scan('{t.metadata_location}')"
            ).fetchone()
        finally:
            con.close()
        assert n[0] == len(model)
        if version == 3:
            _unique_row_ids(t)


def _unique_row_ids(t: Any) -> None:
    seen: list[int] = []
    for _, batch in manifest_entries(t.io, t.current_snapshot(), 0):
        live = batch.filter(pc.not_equal(batch["status"], 2))
        for path, first, n in zip(
            live["file_path"].to_pylist(),
            live["first_row_id"].to_pylist(),
            live["record_count"].to_pylist(),
            strict=True,
        ):
            data = pq.read_table(path.removeprefix("file://"))
            if "_row_id" in data.column_names:
                stored = data["_row_id"].to_pylist()
                seen += [s if s is not None else first + i for i, s in enumerate(stored)]
            else:
                seen += list(range(first, first + n))
    assert len(seen) == len(set(seen))
    assert t.metadata.next_row_id is not None and all(s < t.metadata.next_row_id for s in seen)
