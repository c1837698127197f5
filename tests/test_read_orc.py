"""ORC data and delete files (Iceberg's ORC mapping: field ids in ``iceberg.id``): name mapping
and damage (every kind of delete and metadata columns: ``tests/test_orc_avro_tables.py``).
Tables Iceberg Java writes in ORC are read in ``tests/test_spark_interop.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pytest

import icefloe
from icefloe.exceptions import CorruptFileError, ValidationError
from icefloe.partitioning import PartitionSpec
from support.plan_tables import HandTable, entry
from support.read_tables import SCHEMA, build


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


def test_every_byte_flip_of_an_orc_file_is_read_or_a_typed_error(tmp_path: Path) -> None:
    """ORC streams carry no checksum, so a flip can change values unnoticed (as in any ORC
    reader); it must never surface as an untyped error. A damaged column name in the footer
    was a ``UnicodeDecodeError``. The flips cover the file's last 256 bytes (stripe footer,
    file footer with the types and their names, postscript)."""
    from icefloe.exceptions import IcebergError

    t = build(tmp_path, version=2, files=1, rows=60, seed=3, file_format="orc")
    path = Path(t.paths[0])
    good = path.read_bytes()
    untyped = []
    try:
        for offset in range(max(0, len(good) - 256), len(good)):
            for mask in (0x01, 0x80):
                damaged = bytearray(good)
                damaged[offset] ^= mask
                path.write_bytes(bytes(damaged))
                try:
                    icefloe.StaticTable.from_metadata(t.metadata_path).scan().to_arrow()
                except IcebergError:
                    pass
                except Exception as e:  # every other error is the finding
                    untyped.append((offset, mask, f"{type(e).__name__}: {e}"))
    finally:
        path.write_bytes(good)
    assert untyped == []
