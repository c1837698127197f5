"""Oracle: tables written by PyIceberg (SqlCatalog on sqlite), planned by PyIceberg, read by
icefloe task by task, compared with PyIceberg's own ``to_arrow()``."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.io import FileIO
from icefloe.name_mapping import NameMapping
from icefloe.partitioning import PartitionSpec
from icefloe.read import output_schema, read_tasks
from icefloe.scan import DataFileRef, DeleteContent, DeleteFileRef, FileScanTask, ReadOptions
from icefloe.schema import Schema

pyiceberg = pytest.importorskip("pyiceberg")
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.manifest import DataFileContent  # noqa: E402
from pyiceberg.table import Table  # noqa: E402
from pyiceberg.types import IntegerType, LongType, StringType  # noqa: E402

pytestmark = pytest.mark.interop


def _partition(record: Any) -> tuple[Any, ...]:
    return tuple(record[i] for i in range(len(record))) if record is not None else ()


def _convert(task: Any) -> FileScanTask:
    f = task.file
    deletes = []
    for d in task.delete_files:
        content = (
            DeleteContent.EQUALITY_DELETES
            if d.content == DataFileContent.EQUALITY_DELETES
            else DeleteContent.POSITION_DELETES
        )
        deletes.append(
            DeleteFileRef(
                content,
                d.file_path,
                str(d.file_format.value).lower(),
                d.record_count,
                d.file_size_in_bytes,
                equality_ids=tuple(d.equality_ids or ()),
            )
        )
    ref = DataFileRef(
        f.file_path,
        str(f.file_format.value).lower(),
        f.record_count,
        f.file_size_in_bytes,
        f.spec_id or 0,
        _partition(f.partition),
    )
    return FileScanTask(ref, tuple(deletes))


def _options(table: Table) -> ReadOptions:
    schema = Schema.from_json(json.loads(table.schema().model_dump_json()))
    specs = {
        sid: PartitionSpec.from_json(json.loads(spec.model_dump_json()))
        for sid, spec in table.specs().items()
    }
    raw = table.properties.get("schema.name-mapping.default")
    mapping = NameMapping.from_json(json.loads(raw)) if raw else None
    return ReadOptions(schema, specs=specs, name_mapping=mapping)


def _checksum(t: pa.Table) -> tuple[int, int]:
    total = 0
    for row in t.to_pylist():
        digest = hashlib.sha256(repr(sorted(row.items())).encode()).digest()
        total = (total + int.from_bytes(digest[:8], "little")) % 2**64
    return t.num_rows, total


def _compare(table: Table) -> pa.Table:
    tasks = [_convert(t) for t in table.scan().plan_files()]
    options = _options(table)
    ours = pa.Table.from_batches(
        list(read_tasks(FileIO(), tasks, options)), schema=output_schema(options)
    )
    theirs = table.scan().to_arrow()
    assert ours.column_names == theirs.column_names
    assert _checksum(ours) == _checksum(theirs.cast(ours.schema))
    return ours


@pytest.fixture()
def catalog(tmp_path: Path) -> SqlCatalog:
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/cat.db", warehouse=f"file://{warehouse}")
    cat.create_namespace("db")
    return cat


def _batch(ids: range, cat: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int32()),
            "name": pa.array([f"n{i}" for i in ids]),
            "cat": pa.array([cat] * len(ids)),
        }
    )


@pytest.mark.parametrize("version", ["1", "2"])
def test_evolved_partitioned_table_matches_pyiceberg(catalog: SqlCatalog, version: str) -> None:
    from pyiceberg.partitioning import PartitionField
    from pyiceberg.partitioning import PartitionSpec as PySpec
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import NestedField

    schema = PySchema(
        NestedField(1, "id", IntegerType(), required=False),
        NestedField(2, "name", StringType(), required=False),
        NestedField(3, "cat", StringType(), required=False),
    )
    spec = PySpec(PartitionField(3, 1000, IdentityTransform(), "cat"))
    table = catalog.create_table(
        "db.t", schema, partition_spec=spec, properties={"format-version": version}
    )
    table.append(_batch(range(0, 50), "a"))
    table.append(_batch(range(50, 80), "b"))
    with table.update_schema() as u:
        u.rename_column("name", "label")
        u.update_column("id", LongType())
        u.add_column("extra", StringType())
    table = catalog.load_table("db.t")
    table.append(
        pa.table(
            {
                "id": pa.array(range(80, 90), pa.int64()),
                "label": pa.array([f"m{i}" for i in range(80, 90)]),
                "cat": pa.array(["a"] * 10),
                "extra": pa.array(["e"] * 10),
            }
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table.delete("id >= 40 and id < 45")
    table = catalog.load_table("db.t")
    with table.update_schema() as u:
        u.delete_column("label")
    table = catalog.load_table("db.t")
    ours = _compare(table)
    assert ours.num_rows == 85
    assert ours.column_names == ["id", "cat", "extra"]


def test_hand_built_position_deletes_match_pyiceberg_arrow_scan(
    catalog: SqlCatalog, tmp_path: Path
) -> None:
    """PyIceberg 0.12 writes no position deletes (merge-on-read falls back to copy-on-write),
    so a hand-built position delete file is attached to PyIceberg's own scan tasks and read by
    both PyIceberg's ArrowScan and icefloe."""
    import pyarrow.parquet as pq
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.manifest import DataFile, FileFormat
    from pyiceberg.table import FileScanTask as PyTask

    from support.read_util import write_pos_deletes

    table = catalog.create_table(
        "db.m", _batch(range(0, 1), "a").schema, properties={"format-version": "2"}
    )
    table.append(_batch(range(0, 100), "a"))
    table.append(_batch(range(100, 150), "b"))
    table = catalog.load_table("db.m")
    py_tasks = list(table.scan().plan_files())
    paths = [t.file.file_path for t in py_tasks]
    counts = [t.file.record_count for t in py_tasks]
    entries = [(paths[0], p) for p in range(0, counts[0], 7)]
    entries += [(paths[1], 3), (paths[1], counts[1] - 1)]
    ref = write_pos_deletes(tmp_path / "pos.parquet", entries)
    delete_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=ref.file_path,
        file_format=FileFormat.PARQUET,
        partition=py_tasks[0].file.partition,
        record_count=len(entries),
        file_size_in_bytes=(tmp_path / "pos.parquet").stat().st_size,
    )
    with_deletes = [PyTask(t.file, {delete_file}) for t in py_tasks]
    theirs = ArrowScan(table.metadata, table.io, table.schema(), AlwaysTrue()).to_table(
        with_deletes
    )
    options = _options(table)
    ours = pa.Table.from_batches(
        list(read_tasks(FileIO(), [_convert(t) for t in with_deletes], options)),
        schema=output_schema(options),
    )
    assert pq.read_table(ref.file_path).num_rows == len(entries)
    assert ours.num_rows == 150 - len(entries)
    assert _checksum(ours) == _checksum(theirs.cast(ours.schema))


def test_nested_columns_of_files_without_field_ids_read_by_name_mapping(tmp_path: Path) -> None:
    """Struct children, list elements and map entries of a file written without field ids are
    found by the table's name mapping, as PyIceberg finds them."""
    import pyarrow.parquet as pq

    from icefloe.catalog.sql import SqlCatalog as IcefloeSql
    from icefloe.name_mapping import create_mapping
    from support.write_util import pyiceberg_read

    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
            ("l", pa.list_(pa.struct([("a", pa.int32())]))),
            ("m", pa.map_(pa.string(), pa.int64())),
        ]
    )
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "st": [{"x": 10, "y": "p"}, None, {"x": None, "y": "r"}],
            "l": [[{"a": 1}], [{"a": 2}, {"a": 3}], None],
            "m": [[("k", 1)], [], None],
        },
        schema=schema,
    )
    pq.write_table(data, tmp_path / "plain.parquet")
    cat = IcefloeSql("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("ns")
    t = cat.create_table("ns.t", schema)
    t.set_properties({"schema.name-mapping.default": create_mapping(t.schema()).to_json_string()})
    t.add_files([str(tmp_path / "plain.parquet")])
    got = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == data.to_pylist()
    # PyIceberg 0.12 reads a null list as an empty one: the other columns are compared
    theirs = pyiceberg_read(t).drop_columns(["l"]).to_pylist()
    assert sorted(theirs, key=lambda r: r["id"]) == [
        {k: v for k, v in r.items() if k != "l"} for r in got
    ]
