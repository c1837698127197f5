"""The engines of the shapes suite: icefloe, PyIceberg 0.12, pyarrow alone (the floor) and DuckDB.

Each engine creates tables of a shape in one of three layouts (``none``, ``day`` on the time
column, ``day+bucket`` adding ``bucket[16]`` on the id column), appends, reads (all columns or a
projection) and runs the row-level operations. PyIceberg and DuckDB read the tables icefloe
wrote (the same files through the same metadata file); the floor writes its own files with
``pyarrow.dataset.write_dataset`` (zstd, icefloe's row-group limit, the same hive-style
partition layout; partition values computed by pyarrow's kernels and icefloe's bucket kernel)
and reads them back with ``pyarrow.dataset``.
"""

from __future__ import annotations

import sys
import uuid
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from icefloe import StaticTable
from icefloe.arrow_schema import to_schema
from icefloe.catalog.sql import SqlCatalog
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.properties import TableProperties
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.transforms import parse_transform
from shapes_data import Shape

LAYOUTS = ("none", "day", "day+bucket")
ROW_GROUP_ROWS = TableProperties.PARQUET_ROW_GROUP_LIMIT_DEFAULT
MOR = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}


def _layout_fields(shape: Shape, layout: str) -> list[tuple[str, str, str]]:
    """(source column, transform, partition field name) of a layout."""
    fields = []
    if layout in ("day", "day+bucket"):
        t = shape.time_transform
        fields.append((shape.time_col, t, f"{shape.time_col}_{t}"))
    if layout == "day+bucket":
        fields.append((shape.id_col, "bucket[16]", f"{shape.id_col}_bucket"))
    return fields


def _name() -> str:
    return f"b.t{uuid.uuid4().hex[:10]}"


class Icefloe:
    """icefloe on a SQLite catalog."""

    def __init__(self, root: Path) -> None:
        self.cat = SqlCatalog(
            "ours", uri=f"sqlite:///{root}/ours.db", warehouse=(root / "ours").as_uri()
        )
        self.cat.create_namespace("b")

    def create(
        self, shape: Shape, layout: str, version: int = 2, props: dict[str, str] | None = None
    ) -> Table:
        schema = to_schema(shape.table(1).schema)
        spec = PartitionSpec(
            *(
                PartitionField(schema.find_field(src).field_id, 1000 + i, parse_transform(t), n)
                for i, (src, t, n) in enumerate(_layout_fields(shape, layout))
            )
        )
        return self.cat.create_table(
            _name(), schema, partition_spec=spec, format_version=version, properties=props
        )

    @staticmethod
    def reset(table: Table, snapshot_id: int) -> None:
        current = table.refresh().current_snapshot()
        if current is None or current.snapshot_id != snapshot_id:
            table.manage_snapshots().set_current_snapshot(snapshot_id).commit()

    @staticmethod
    def read(metadata_location: str, columns: tuple[str, ...] = ("*",)) -> int:
        scan = StaticTable.from_metadata(metadata_location).scan(selected_fields=columns)
        return int(scan.to_arrow().num_rows)


class PyIceberg:
    """PyIceberg 0.12 on its SQLite catalog: appends, row-level changes (copy-on-write), reads
    of icefloe's metadata files."""

    def __init__(self, root: Path) -> None:
        from pyiceberg.catalog.sql import SqlCatalog as PySql

        self.cat = PySql(
            "theirs", uri=f"sqlite:///{root}/theirs.db", warehouse=(root / "theirs").as_uri()
        )
        self.cat.create_namespace("b")

    def create(self, shape: Shape, layout: str) -> Any:
        from pyiceberg.partitioning import PartitionField as PF
        from pyiceberg.partitioning import PartitionSpec as PS
        from pyiceberg.schema import Schema as PySchema
        from pyiceberg.transforms import parse_transform as py_transform

        ours: Schema = to_schema(shape.table(1).schema)
        schema = PySchema.model_validate(ours.to_json())
        spec = PS(
            *(
                PF(
                    source_id=ours.find_field(src).field_id,
                    field_id=1000 + i,
                    transform=py_transform(t),
                    name=n,
                )
                for i, (src, t, n) in enumerate(_layout_fields(shape, layout))
            )
        )
        return self.cat.create_table(
            _name(), schema, partition_spec=spec, properties={"format-version": "2"}
        )

    @staticmethod
    def reset(table: Any, snapshot_id: int) -> None:
        table.refresh()
        if table.current_snapshot().snapshot_id != snapshot_id:
            table.manage_snapshots().set_current_snapshot(snapshot_id).commit()

    @staticmethod
    def read(metadata_location: str, columns: tuple[str, ...] = ("*",)) -> int:
        from pyiceberg.table import StaticTable as PyStatic

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scan = PyStatic.from_metadata(metadata_location).scan(selected_fields=columns)
            return int(scan.to_arrow().num_rows)


class Floor:
    """pyarrow alone: the same rows, codec, row-group limit and partition layout."""

    def __init__(self, root: Path) -> None:
        self.root = root / "floor"
        self.root.mkdir()

    @staticmethod
    def _partition_values(shape: Shape, layout: str, data: pa.Table) -> tuple[pa.Table, Any]:
        names = []
        for src, t, name in _layout_fields(shape, layout):
            col = data.column(src)
            if t == "day":
                values = pc.cast(col, pa.date32()) if col.type != pa.date32() else col
                values = pc.cast(values, pa.int32())
            elif t == "month":
                values = pc.add(
                    pc.multiply(pc.subtract(pc.year(col), 1970), 12), pc.subtract(pc.month(col), 1)
                )
            else:
                values = parse_transform(t).apply(col)
            data = data.append_column(name, values)
            names.append(name)
        if not names:
            return data, None
        schema = pa.schema([data.schema.field(n) for n in names])
        return data, ds.partitioning(schema, flavor="hive")

    def append(self, shape: Shape, layout: str, data: pa.Table) -> Path:
        out = self.root / uuid.uuid4().hex[:10]
        table, partitioning = self._partition_values(shape, layout, data)
        fmt = ds.ParquetFileFormat()
        ds.write_dataset(
            table,
            out,
            format=fmt,
            partitioning=partitioning,
            file_options=fmt.make_write_options(compression="zstd"),
            max_rows_per_group=ROW_GROUP_ROWS,
            max_partitions=100_000,
            existing_data_behavior="error",
        )
        return out

    @staticmethod
    def read(path: Path, columns: tuple[str, ...] = ("*",)) -> int:
        dataset = ds.dataset(path, format="parquet", partitioning="hive")
        cols = None if columns == ("*",) else list(columns)
        return int(dataset.to_table(columns=cols).num_rows)


class DuckDB:
    """DuckDB 1.5.5's ``iceberg_scan`` of icefloe's metadata files, fetched as Arrow."""

    def __init__(self) -> None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from support.peers import duckdb_connect

        self.con = duckdb_connect()

    def read(self, metadata_location: str, columns: tuple[str, ...] = ("*",)) -> int:
        cols = ", ".join(columns)
        query = f"select {cols} from iceberg_scan('{metadata_location}')"
        return int(self.con.execute(query).to_arrow_table().num_rows)
