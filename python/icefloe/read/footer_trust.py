"""Whether a Parquet footer's statistics may prune row groups: they must be consistent with
themselves and with the file's manifest entry.

Parquet does not checksum its footer, so a damaged statistic can make a filtered read skip a
row group that holds matching rows. Before row-group statistics prune anything, for the columns
the filter uses:

- the row groups' row counts add up to the record count of the file's manifest entry;
- each group's null count is between 0 and its row count;
- each group's min is at most its max.

(The Rust footer check, run before any of this, also refuses a footer whose deprecated
``min``/``max`` disagree with ``min_value``/``max_value`` where a writer stored both.) When a
check fails, the file is read without row-group pruning: its pages are checksummed, so the read
is right or raises ``CorruptFileError``. The work is per row group and column, once per file,
and only when a group would be skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.types import PrimitiveType

__all__ = ["statistics_consistent"]

log = logging.getLogger("icefloe.read")


def statistics_consistent(
    metadata: pq.FileMetaData,
    columns: Mapping[int, tuple[int, pa.DataType, PrimitiveType]],
    data_file: Any,
    convert: Callable[[Any, pa.DataType, PrimitiveType], Any],
) -> bool:
    """Whether the footer's row-group statistics of ``columns`` (field id -> Parquet leaf
    index, file Arrow type, table type) are consistent (see the module docstring);
    ``data_file`` is the task's manifest entry (its ``record_count``); ``convert`` turns a
    statistic into a value of the table type (``None`` if it cannot)."""
    groups = [metadata.row_group(g) for g in range(metadata.num_row_groups)]
    rows = [rg.num_rows for rg in groups]
    record_count = getattr(data_file, "record_count", None)
    if record_count is not None and sum(rows) != record_count:
        return _disagree(
            data_file, f"row groups hold {sum(rows)} rows, the manifest {record_count}"
        )
    for field_id, (index, file_type, table_type) in columns.items():
        why = _column_disagrees(groups, rows, index, file_type, table_type, convert)
        if why:
            return _disagree(data_file, f"column {field_id}: {why}")
    return True


def _disagree(data_file: Any, why: str) -> bool:
    log.warning(
        "footer statistics of %s are inconsistent (%s): read without row-group pruning",
        getattr(data_file, "file_path", "?"),
        why,
    )
    return False


def _column_disagrees(
    groups: list[Any],
    rows: list[int],
    index: int,
    file_type: pa.DataType,
    t: PrimitiveType,
    convert: Callable[[Any, pa.DataType, PrimitiveType], Any],
) -> str | None:
    """Why the column's statistics are inconsistent, or None."""
    for g, (rg, r) in enumerate(zip(groups, rows, strict=True)):
        s = rg.column(index).statistics
        if s is None:
            continue  # a group without statistics is never pruned by them
        if s.has_null_count and not 0 <= s.null_count <= r:
            return f"row group {g} has {s.null_count} nulls in {r} rows"
        if not s.has_min_max:
            continue
        lo, hi = convert(s.min, file_type, t), convert(s.max, file_type, t)
        if lo is None or hi is None or lo != lo or hi != hi:  # unconvertible or NaN
            continue
        try:
            if lo > hi:
                return f"row group {g} has its min above its max"
        except TypeError:
            continue
    return None
