"""The floor of any Python data source on Spark 4.1: sources that do no Iceberg work at all.

``floor_read`` reads a list of Parquet files with ``pyarrow.parquet`` alone (one Spark
partition per file, batches straight from the file, no planning, no deletes) and yields them
to Spark; ``floor_write`` takes Spark's Arrow batches and drops them (no Parquet, no commit).
Whatever a Python source does, it costs at least as much as these: Spark's hand-off of Arrow
batches from and to Python workers is in both, so their times against Iceberg Java's
vectorized JVM paths show how much of a gap the Python Data Source API itself leaves.

Given a ``directory``, ``floor_write`` also writes each task's rows as one Parquet file there
with pyarrow alone, the least a Python sink that writes Iceberg's files must do: the codec
Iceberg writes by default (zstd), no dictionaries, pyarrow's default statistics, no page
checksums, no Iceberg metrics, no manifests, no commit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pyspark import cloudpickle
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

READ_FORMAT = "icefloe_floor_read"
WRITE_FORMAT = "icefloe_floor_write"


class _FloorRead(DataSource):
    @classmethod
    def name(cls) -> str:
        return READ_FORMAT

    def schema(self) -> str:
        return self.options["schema"]

    def reader(self, schema: Any) -> DataSourceReader:
        return _FloorReader(json.loads(self.options["files"]))


class _FloorReader(DataSourceReader):
    def __init__(self, files: list[str]) -> None:
        self.files = files

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(f) for f in self.files]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import pyarrow.parquet as pq

        path = partition.value
        yield from pq.ParquetFile(path).iter_batches(batch_size=100_000)


class _FloorWrite(DataSource):
    @classmethod
    def name(cls) -> str:
        return WRITE_FORMAT

    def schema(self) -> str:
        return self.options.get("schema", "id bigint")

    def writer(self, schema: Any, overwrite: bool) -> DataSourceArrowWriter:
        return _FloorWriter(self.options.get("directory"))


class _FloorWriter(DataSourceArrowWriter):
    def __init__(self, directory: str | None) -> None:
        self.directory = directory

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        if self.directory is None:
            rows = 0
            for batch in iterator:
                rows += batch.num_rows
            return WriterCommitMessage()
        import uuid

        import pyarrow as pa
        import pyarrow.parquet as pq

        batches = list(iterator)
        if batches:
            path = f"{self.directory}/{uuid.uuid4()}.parquet"
            table = pa.Table.from_batches(batches)
            pq.write_table(
                table, path, row_group_size=table.num_rows, compression="zstd", use_dictionary=False
            )
        return WriterCommitMessage()

    def commit(self, messages: list[WriterCommitMessage]) -> None:
        return None


def register(spark: Any) -> None:
    """Registers both formats (pickled by value: Spark's workers cannot import this file)."""
    import sys

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark.dataSource.register(_FloorRead)
    spark.dataSource.register(_FloorWrite)


def read(spark: Any, files: list[str], schema: str) -> Any:
    """A DataFrame of ``files`` read by the floor source."""
    return (
        spark.read.format(READ_FORMAT)
        .option("files", json.dumps(files))
        .option("schema", schema)
        .load()
    )


def write(df: Any, directory: str | None = None) -> None:
    """``df`` written to the floor sink (as Parquet files in ``directory`` when given)."""
    out = df.write.format(WRITE_FORMAT).mode("append")
    if directory is not None:
        out = out.option("directory", directory)
    out.save()
