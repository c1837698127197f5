"""Distributed table statistics: theta sketches built on the executors.

:func:`compute_statistics` plans the snapshot's scan on the driver, ships the tasks as
:func:`icefloe.spark.reading.read` does, and each executor reads its files with icefloe's reader
(deletes applied) and sketches every column in Rust, returning one serialised sketch per column
and Spark partition. The driver decodes and merges them in Rust
(:meth:`icefloe._native.ThetaSketch.from_bytes`; merging serialised parts gives exactly the
sketch of the whole column), then writes and commits the same Puffin file as
:meth:`icefloe.table.Table.compute_statistics`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from icefloe._native import ThetaSketch
from icefloe.exceptions import CommitStateUnknownError
from icefloe.io import FileIO
from icefloe.metadata import StatisticsFile, TableMetadata
from icefloe.scan.tasks import ReadOptions
from icefloe.schema import Schema
from icefloe.spark.errors import executor_errors
from icefloe.spark.reading import iter_tasks, pickled_tasks, resolve_table, task_frame
from icefloe.spark.worker import prepare_worker
from icefloe.table import Table
from icefloe.table.statistics import (
    Sketcher,
    column_paths,
    leaf_values,
    sketch_scan,
)
from icefloe.table.statistics import (
    compute_statistics as _compute_statistics,
)

__all__ = ["compute_statistics"]

_OUTPUT = "field_id INT, sketch BINARY"
_OUTPUT_ARROW = pa.schema([pa.field("field_id", pa.int32()), pa.field("sketch", pa.binary())])


def _sketch_partition(
    file_io: FileIO,
    options: ReadOptions,
    paths: dict[int, list[str]],
    payloads: list[bytes],
) -> Any:
    """The function ``mapInArrow`` runs: task indexes in, one serialised sketch per column
    out (none for a Spark partition without tasks)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from icefloe.read import DeleteCache, read_task

        prepare_worker()
        with executor_errors():
            io = file_io
            cache = DeleteCache()
            sketches: dict[int, ThetaSketch] | None = None
            for task in iter_tasks(batches, payloads):
                if sketches is None:
                    sketches = {fid: ThetaSketch() for fid in paths}
                for rb in read_task(io, task, options, cache):
                    for fid, sketch in sketches.items():
                        sketch.update(leaf_values(rb, paths[fid]))
            if sketches:
                yield pa.RecordBatch.from_arrays(
                    [
                        pa.array(list(sketches), pa.int32()),
                        pa.array([s.to_bytes() for s in sketches.values()], pa.binary()),
                    ],
                    schema=_OUTPUT_ARROW,
                )

    return run


def distributed_sketcher(spark: Any, max_partitions: int | None = None) -> Sketcher:
    """A sketch builder that reads and sketches on ``spark``'s executors."""

    def sketch(
        io: FileIO, metadata: TableMetadata, snapshot_id: int, schema: Schema, names: dict[str, int]
    ) -> dict[int, ThetaSketch]:
        scan = sketch_scan(io, metadata, snapshot_id, schema, names)
        sketches = {fid: ThetaSketch() for fid in names.values()}
        tasks = scan.plan_files()
        if not tasks:
            return sketches
        fn = _sketch_partition(
            io,
            scan.read_options(),
            column_paths(schema, names),
            pickled_tasks(tasks),
        )
        frame = task_frame(spark, tasks, max_partitions)
        for row in frame.mapInArrow(fn, _OUTPUT).toArrow().to_pylist():
            sketches[row["field_id"]].merge(ThetaSketch.from_bytes(row["sketch"]))
        return sketches

    return sketch


def compute_statistics(
    spark: Any,
    table_or_identifier: Table | str | Sequence[str],
    columns: Sequence[str] | None = None,
    snapshot_id: int | None = None,
    *,
    compression_codec: str | None = "zstd",
    catalog: Any = None,
    max_partitions: int | None = None,
) -> StatisticsFile:
    """:meth:`Table.compute_statistics` with the sketches built on ``spark``'s executors: the
    same columns, rules, Puffin file and ``set-statistics`` commit (the blobs are the bytes the
    single-process computation writes)."""
    table = resolve_table(table_or_identifier, catalog)
    tx = table.transaction()
    stats = _compute_statistics(
        tx,
        columns,
        snapshot_id,
        compression_codec,
        sketcher=distributed_sketcher(spark, max_partitions),
    )
    try:
        tx.commit_transaction()
    except CommitStateUnknownError:
        raise
    except BaseException:
        table.io.delete_quietly(stats.statistics_path)
        raise
    return stats
