"""ORC data and delete files (Iceberg's ORC mapping: field ids in ``iceberg.id``): every kind of
delete, filters, metadata columns, name mapping and damage, against rows computed from the
generated data. Tables Iceberg Java writes in ORC are read in ``tests/test_spark_interop.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
import pytest

import icefloe
from icefloe.exceptions import CorruptFileError, ValidationError
from icefloe.partitioning import PartitionSpec
from support.plan_tables import HandTable, entry
from support.read_tables import SCHEMA, build, checksum


@pytest.mark.parametrize(
    "kind",
    [
        {"version": 2, "pos": 0.3},
        {"version": 2, "pos": 0.3, "pos_one_file": True},
        {"version": 3, "dv": 0.3},
        {"version": 2, "eq_keys": [(1,), (7,), (None,)], "eq_columns": ("k",)},
        {"version": 2, "pos": 0.2, "eq_keys": [(3, "w1"), (4, None)], "eq_columns": ("k", "s")},
    ],
    ids=["pos", "pos-one-file", "dv", "eq", "pos+eq"],
)
def test_every_kind_of_delete(tmp_path: Path, kind: dict[str, object]) -> None:
    t = build(tmp_path, files=3, rows=150, seed=3, file_format="orc", **kind)  # type: ignore[arg-type]
    assert all(p.endswith(".orc") for p in t.paths)
    expected = t.expected_rows()
    assert 0 < expected.num_rows < 450
    table = icefloe.StaticTable.from_metadata(t.metadata_path)
    assert checksum(table.scan().to_arrow()) == checksum(expected)
    assert table.scan().count() == expected.num_rows
    # A residual filter and a projection.
    got = table.scan(row_filter="id >= 100 and k < 30", selected_fields=("id",)).to_arrow()
    want = expected.filter(
        pc.and_(pc.greater_equal(expected["id"], 100), pc.less(expected["k"], 30))
    )
    assert sorted(got.column("id").to_pylist()) == sorted(want.column("id").to_pylist())


def test_positions_and_file_names(tmp_path: Path) -> None:
    t = build(tmp_path, version=2, files=2, rows=150_000, seed=5, file_format="orc", pos=0.1)
    table = icefloe.StaticTable.from_metadata(t.metadata_path)
    got = table.scan(selected_fields=("id", "_file", "_pos")).to_arrow()
    # Every row sits at its position in its file (ids were written in file order), also past
    # the first batch of a file, and the deleted positions are gone.
    for f, path in enumerate(t.paths):
        mine = got.filter(pc.equal(got["_file"], path))
        positions = mine.column("_pos").to_pylist()
        ids = mine.column("id").to_pylist()
        first = t.data[f].column("id")[0].as_py()
        assert all(i - first == p for i, p in zip(ids, positions, strict=True))
        assert set(positions).isdisjoint(t.deleted_positions[f])
        assert len(positions) == t.data[f].num_rows - len(t.deleted_positions[f])


def _hand_table(
    tmp_path: Path,
    path: Path,
    file_format: str,
    rows: int,
    properties: dict[str, str] | None = None,
) -> str:
    table = HandTable(tmp_path, SCHEMA, [PartitionSpec()], 2, properties)
    size = path.stat().st_size
    files = [entry(str(path), file_format=file_format, record_count=rows, file_size_in_bytes=size)]
    table.commit([(0, 0, files)])
    return table.metadata_path


def test_files_without_ids_read_through_the_name_mapping(tmp_path: Path) -> None:
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "k": pa.array([4, None, 6], pa.int32()),
            "s": ["a", "b", None],
        }
    )
    path = tmp_path / "plain.orc"
    orc.write_table(data, str(path))  # no iceberg.id attributes
    mapping = json.dumps(
        [{"field-id": i + 1, "names": [n]} for i, n in enumerate(data.schema.names)]
    )
    mapped = tmp_path / "mapped"
    mapped.mkdir()
    meta = _hand_table(mapped, path, "ORC", 3, {"schema.name-mapping.default": mapping})
    got = icefloe.StaticTable.from_metadata(meta).scan().to_arrow()
    assert got.to_pylist() == data.to_pylist()
    unmapped = tmp_path / "unmapped"
    unmapped.mkdir()
    meta = _hand_table(unmapped, path, "ORC", 3)
    with pytest.raises(ValidationError, match="no field ids"):
        icefloe.StaticTable.from_metadata(meta).scan().to_arrow()


def test_damage_and_other_formats_are_typed_errors(tmp_path: Path) -> None:
    t = build(tmp_path, version=2, files=1, rows=500, seed=1, file_format="orc")
    path = Path(t.paths[0])
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])  # the postscript and footer are gone
    with pytest.raises(CorruptFileError, match=path.name):
        icefloe.StaticTable.from_metadata(t.metadata_path).scan().to_arrow()
    path.write_bytes(good)
    # A row count that disagrees with the manifest.
    other = tmp_path / "other"
    other.mkdir()
    meta = _hand_table(other, path, "ORC", 499)
    with pytest.raises(CorruptFileError, match="499"):
        icefloe.StaticTable.from_metadata(meta).scan().to_arrow()
    # An ORC file the manifest calls Avro.
    avro = tmp_path / "avro"
    avro.mkdir()
    meta = _hand_table(avro, path, "AVRO", 500)
    with pytest.raises(CorruptFileError, match="not an Avro file"):
        icefloe.StaticTable.from_metadata(meta).scan().to_arrow()
