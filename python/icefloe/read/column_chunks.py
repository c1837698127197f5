"""The live rows of many local Parquet files in one Arrow table, for row-level operations.

:func:`column_chunks` reads the columns a filter or a join key needs, with each live row's
position in its file, a chunk of files at a time, through the native decode of
:mod:`icefloe.read.native_files`, so a delete or an upsert matches the rows of many files in
one vectorised step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from icefloe import _native
from icefloe.arrow_schema import schema_to_arrow
from icefloe.expressions.arrow import selection_mask
from icefloe.expressions.base import BooleanExpression
from icefloe.io import FileIO
from icefloe.name_mapping import NameMapping
from icefloe.read import native_files
from icefloe.read.deletes import DeleteCache
from icefloe.read.native_files import (
    POSITION_COLUMN,
    decode_chunks,
    drained_alongside,
    plain_field,
    row_file,
    streamed_task,
)
from icefloe.read.parquet_file import has_nanos
from icefloe.scan.filters import expr_json
from icefloe.scan.tasks import FileScanTask
from icefloe.schema import Schema
from icefloe.types import NestedField

__all__ = ["ColumnChunk", "column_chunks"]


class ColumnChunk:
    """The live rows of some tasks' data files in one table: the columns asked for, then
    :data:`POSITION_COLUMN` (each row's position in its file). ``tasks`` are the indexes of the
    tasks in the list given to :func:`column_chunks`; the rows of ``tasks[k]`` are
    ``table[offsets[k]:offsets[k + 1]]``."""

    __slots__ = ("offsets", "table", "tasks")

    def __init__(self, tasks: list[int], table: pa.Table, offsets: np.ndarray) -> None:
        self.tasks = tasks
        self.table = table
        self.offsets = offsets

    def parts(self) -> Iterator[tuple[int, pa.Table]]:
        """Each task's index and its rows."""
        for k, i in enumerate(self.tasks):
            first, end = int(self.offsets[k]), int(self.offsets[k + 1])
            yield i, self.table.slice(first, end - first)


_POSITIONS_ONLY = pa.schema([pa.field(POSITION_COLUMN, pa.int64(), nullable=False)])


def _positions_selected_by(
    expr: BooleanExpression,
) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    """A batch's positions column, only the rows bound ``expr`` selects (Arrow's kernels)."""

    def select(batch: pa.RecordBatch) -> pa.RecordBatch:
        # only the positions are kept: the filter's columns are not copied
        positions = pa.RecordBatch.from_arrays(
            [batch.column(POSITION_COLUMN)], schema=_POSITIONS_ONLY
        )
        # Rust's filter of one int64 column: several times Arrow's on a sparse selection
        return _native.filter_batch(positions, selection_mask(expr, batch))

    return select


def column_chunks(
    io: FileIO,
    tasks: Sequence[FileScanTask],
    fields: Sequence[NestedField],
    workers: int,
    cache: DeleteCache,
    name_mapping: NameMapping | None = None,
    optional: Sequence[NestedField] = (),
    select: BooleanExpression | None = None,
    keys: tuple[_native.EqualityDeleteSet, Sequence[str]] | None = None,
) -> Iterator[ColumnChunk]:
    """The live rows of the tasks the native path reads (local Parquet files, no equality
    deletes), with the top-level columns ``fields`` (plain types, see :func:`plain_field`) and
    the ``optional`` ones (nulls where a file lacks them), a chunk of files at a time; a large
    file, or a split of one, is streamed and given in a chunk of its own.

    With ``select`` (a bound filter over ``fields``) a chunk holds only the positions of the
    live rows it selects: evaluated in Rust as the columns are decoded when
    :func:`icefloe._native.row_selection` takes it, else with Arrow's kernels on each batch.
    With ``keys`` (a set of the key columns and their names in it; the keys are the first
    ``fields``), a chunk holds the live rows whose key is in the set, matched in Rust. A
    task not in any chunk (not local, a column missing or of another type, no field ids, any
    damage) is left to the caller's general path."""
    wanted = [*fields, *optional]
    if not native_files.ENABLED or not tasks or not all(plain_field(f) for f in wanted):
        return
    nanos = has_nanos(wanted)
    picked = [(i, row_file(io, t, nanos)) for i, t in enumerate(tasks)]
    local = [(i, p) for i, p in picked if p is not None]
    if not local:
        return
    index = [i for i, _ in local]
    chosen = [tasks[i] for i in index]
    arrow = schema_to_arrow(Schema(*wanted))
    if any(isinstance(f.type, pa.BaseExtensionType) for f in arrow):
        return
    schema = arrow.append(pa.field(POSITION_COLUMN, pa.int64(), nullable=False))
    flags = [False] * len(fields) + [True] * len(optional)
    ids = [f.field_id for f in wanted]
    native = None
    each: Callable[[pa.RecordBatch], pa.RecordBatch] | None = None
    kept: Sequence[str] | None = None
    if select is not None:
        kept = [POSITION_COLUMN]
        native = _native.row_selection(expr_json(select), ids, arrow)
        each = None if native is not None else _positions_selected_by(select)
    elif keys is not None:
        native = _native.key_selection(keys[0], list(keys[1]), arrow)
    decoded = decode_chunks(
        io,
        chosen,
        [p for _, p in local],
        ids,
        schema,
        workers,
        cache,
        name_mapping,
        optional=flags,
        positions=True,
        streamed=[streamed_task(t) for t in chosen],
        selection=native,
    )
    for a, got in drained_alongside(decoded, each, workers):
        read = [(index[a + k], b) for k, b in enumerate(got) if b is not None]
        if not read:
            continue
        counts = [sum(batch.num_rows for batch in b) for _, b in read]
        out = schema if kept is None else pa.schema([schema.field(n) for n in kept])
        table = pa.Table.from_batches([batch for _, b in read for batch in b], out)
        offsets = np.zeros(len(read) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        yield ColumnChunk([i for i, _ in read], table, offsets)
