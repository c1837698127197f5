"""Nested columns (structs, lists, maps of primitive types) read natively: the same batches as
the general reader, relabelled with the table's names, and every file whose nested fields no
longer match the table's by field id left to the general reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe import _native
from icefloe.read import native_files
from icefloe.types import LongType, StringType
from support.write_util import catalog

STRUCT = pa.struct([("a", pa.int64()), ("b", pa.string())])
ITEM = pa.struct([("k", pa.int32()), ("v", pa.float64())])
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("st", STRUCT),
        pa.field("li", pa.list_(ITEM)),
        pa.field("m", pa.map_(pa.string(), pa.int64())),
        pa.field("tags", pa.list_(pa.string())),
    ]
)


class _Spy:
    """Records, per file, whether the native reader read it (chunks and streams)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read: list[bool] = []
        files, stream = _native.parquet_read_files, _native.parquet_open_stream

        def read_files(*args: Any, **kwargs: Any) -> Any:
            out = files(*args, **kwargs)
            self.read.extend(f is not None for f in out)
            return out

        def open_stream(*args: Any, **kwargs: Any) -> Any:
            out = stream(*args, **kwargs)
            self.read.append(out is not None)
            return out

        monkeypatch.setattr(native_files._native, "parquet_read_files", read_files)
        monkeypatch.setattr(native_files._native, "parquet_open_stream", open_stream)


def _general(monkeypatch: pytest.MonkeyPatch, read: Any) -> Any:
    with monkeypatch.context() as m:
        m.setattr(native_files, "ENABLED", False)
        return read()


def _row(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "st": None if i % 9 == 4 else {"a": None if i % 5 == 0 else i, "b": f"b{i % 13}"},
        "li": None
        if i % 11 == 6
        else [None if (i + j) % 7 == 0 else {"k": j, "v": i / (j + 1)} for j in range(i % 4)],
        "m": None if i % 8 == 3 else [(f"k{j}", i * j) for j in range(i % 3)],
        "tags": [f"t{j}" if j % 3 else None for j in range(i % 5)],
    }


def _data(rows: int, start: int = 0) -> pa.Table:
    return pa.Table.from_pylist([_row(i) for i in range(start, start + rows)], SCHEMA)


def _table(tmp_path: Path, rows: int, version: int = 2, **props: str) -> Any:
    t = catalog(tmp_path).create_table("ns.t", SCHEMA, properties=props, format_version=version)
    t.append(_data(rows))
    return t.refresh()


@pytest.mark.parametrize("large", [False, True])
def test_nested_columns_read_as_the_general_reader_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, large: bool
) -> None:
    if large:  # streamed, in batches smaller than the file
        monkeypatch.setattr(native_files, "MAX_FILE_BYTES", 0)
        monkeypatch.setattr(native_files, "BATCH_SIZE", 128)
    t = _table(tmp_path, 700, **{"write.parquet.row-group-limit": "256"})
    spy = _Spy(monkeypatch)
    for fields in [("*",), ("li", "id"), ("m",), ("st", "tags")]:
        spy.read.clear()
        got = t.scan(selected_fields=fields).to_arrow()
        assert spy.read == [True], fields
        want = _general(monkeypatch, lambda f=fields: t.scan(selected_fields=f).to_arrow())
        assert got.schema.equals(want.schema, check_metadata=True)
        assert got.equals(want)
    assert t.scan().to_arrow().to_pylist() == _data(700).to_pylist()


@pytest.mark.parametrize("version", [2, 3])
def test_deletes_on_nested_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    t = _table(tmp_path, 600, version, **{"write.delete.mode": "merge-on-read"})
    t.delete("id < 50 or id > 590")
    t.refresh().delete_by_keys(pa.table({"id": pa.array([100, 200], pa.int64())}), ["id"])
    t = t.refresh()
    spy = _Spy(monkeypatch)
    got = t.scan().to_arrow()
    assert spy.read == [True]
    assert got.equals(_general(monkeypatch, lambda: t.scan().to_arrow()))
    assert got["id"].to_pylist() == [i for i in range(50, 591) if i not in (100, 200)]


def test_renamed_nested_fields_read_natively_under_their_new_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(tmp_path, 50)
    with t.update_schema() as u:
        u.rename_column("st.a", "alpha")
        u.rename_column("li.element.v", "value")
    t = t.refresh()
    spy = _Spy(monkeypatch)
    got = t.scan().to_arrow()
    assert spy.read == [True]
    want = _general(monkeypatch, lambda: t.scan().to_arrow())
    assert got.schema.equals(want.schema, check_metadata=True)
    assert got.equals(want)
    assert got.schema.field("st").type.field(0).name == "alpha"


def test_evolved_and_pruned_structs_take_the_general_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(tmp_path, 40)
    with t.update_schema() as u:
        u.add_column(("st", "c"), StringType())
        u.add_column(("li", "element", "w"), LongType())
    t = t.refresh()
    t.append(
        pa.Table.from_pylist(
            [{"id": 99, "st": {"a": 1, "b": "x", "c": "new"}, "li": [{"k": 1, "v": 2.0, "w": 3}]}],
            t.scan().to_arrow().schema,
        )
    )
    t = t.refresh()
    spy = _Spy(monkeypatch)
    got = t.scan().to_arrow()
    want = _general(monkeypatch, lambda: t.scan().to_arrow())
    assert got.equals(want)
    assert False in spy.read  # the older file lacks the new nested fields
    assert got.num_rows == 41 and got["st"].combine_chunks().field("c").null_count == 40
    # a struct pruned to some of its fields: the general reader
    spy.read.clear()
    pruned = t.scan(selected_fields=("st.b",)).to_arrow()
    assert spy.read == []
    want = _general(monkeypatch, lambda: t.scan(selected_fields=("st.b",)).to_arrow())
    assert pruned.equals(want)


@settings(max_examples=12, deadline=None)
@given(
    start=st.integers(0, 10_000),
    rows=st.integers(0, 300),
    group=st.sampled_from([7, 64, 1000]),
    batch=st.sampled_from([5, 100, 131_072]),
    stream=st.booleans(),
)
def test_random_nested_rows_match_the_general_reader(
    tmp_path_factory: pytest.TempPathFactory,
    start: int,
    rows: int,
    group: int,
    batch: int,
    stream: bool,
) -> None:
    tmp = tmp_path_factory.mktemp("t")
    t = catalog(tmp).create_table(
        "ns.t", SCHEMA, properties={"write.parquet.row-group-limit": str(group)}
    )
    t.append(_data(rows, start))
    t = t.refresh()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(native_files, "BATCH_SIZE", batch)
        if stream:
            m.setattr(native_files, "MAX_FILE_BYTES", 0)
        got = t.scan().to_arrow()
        m.setattr(native_files, "ENABLED", False)
        want = t.scan().to_arrow()
    assert got.schema.equals(want.schema, check_metadata=True)
    assert got.equals(want)
