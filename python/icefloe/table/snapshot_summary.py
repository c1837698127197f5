"""A snapshot's summary: the Appendix F counts of the files it adds and removes, the changed
partitions (with the counts of each when ``write.summary.partition-limit`` allows), and the
operation derived from what it does."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote_plus

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.metadata import (
    Operation,
    Snapshot,
    Summary,
    SummaryKeys,
    TableMetadata,
    update_snapshot_totals,
)
from icefloe.partitioning import PartitionSpec
from icefloe.scan.manifests import partition_keys
from icefloe.write.partition_names import human_partition_value

__all__ = ["computed_summary_key", "snapshot_summary"]


def snapshot_summary(
    *,
    added: Sequence[pa.RecordBatch],
    removed: Sequence[pa.RecordBatch],
    adds_data: bool,
    adds_deletes: bool,
    created: int,
    replaced: Sequence[str],
    properties: Mapping[str, str],
    operation: str | None,
    parent: Snapshot | None,
    partition_limit: int = 0,
    metadata: TableMetadata | None = None,
) -> Summary:
    """The summary of a snapshot that adds the entries ``added`` and removes ``removed`` (its
    ``operation``, or the one derived from what it does), with the running totals of
    ``parent``'s summary.

    When at most ``partition_limit`` partitions change, each gets a ``partitions.<path>`` entry
    with its own counts (``added-data-files=1,added-records=3,...``) and
    ``partition-summaries-included`` is ``true``, as the Java reference writes them (uuid and
    float values as Java names them when the table's ``metadata`` is given)."""
    s: dict[str, int] = {}
    keys: list[pa.Array] = []
    for batch in added:
        _tally(batch, s, "added", "added", "added")
        keys.append(partition_keys(batch))
    for batch in removed:
        _tally(batch, s, "deleted", "removed", "removed")
        keys.append(partition_keys(batch))
    distinct = pc.unique(pa.concat_arrays(keys)) if keys else pa.array([], pa.binary())
    changed = len(distinct)
    props = {k: str(v) for k, v in s.items()}
    props["changed-partition-count"] = str(changed)
    if 0 < changed <= partition_limit:
        props.update(_partition_summaries(added, removed, keys, metadata))
    props["manifests-created"] = str(created)
    props["manifests-replaced"] = str(len(replaced))
    props.update(properties)
    op = operation or _derive_operation(adds_data, adds_deletes, bool(removed))
    summary = Summary(op, props)
    prev = parent.summary if parent is not None else None
    return update_snapshot_totals(summary, prev)


def computed_summary_key(key: str) -> bool:
    """Whether ``key`` is a summary key a commit computes (and a snapshot property given by
    the caller must not replace, as Java's summary builder refuses it): the operation, the
    counts of what it adds and removes, the running totals, the partition summaries; or the
    empty key."""
    return not key or key in _COMPUTED or key.startswith("partitions.")


#: The spec's summary keys (Appendix F) that count what a commit does (not those a writer
#: names itself: ``wap.id``, ``source-snapshot-id``, the engine's), with the operation and
#: the partition summaries' flag.
_COMPUTED = frozenset(
    {
        value
        for name, value in vars(SummaryKeys).items()
        if isinstance(value, str)
        and name.startswith(("ADDED_", "DELETED_", "REMOVED_", "TOTAL_", "MANIFESTS_"))
    }
    | {
        SummaryKeys.CHANGED_PARTITION_COUNT,
        SummaryKeys.ENTRIES_PROCESSED,
        "operation",
        "partition-summaries-included",
    }
)


#: The order of the counts in a ``partitions.<path>`` entry (the Java reference's).
_PARTITION_COUNTS = (
    "added-data-files",
    "deleted-data-files",
    "added-equality-delete-files",
    "removed-equality-delete-files",
    "added-position-delete-files",
    "removed-position-delete-files",
    "added-delete-files",
    "removed-delete-files",
    "added-dvs",
    "removed-dvs",
    "added-records",
    "deleted-records",
    "added-files-size",
    "removed-files-size",
    "added-position-deletes",
    "removed-position-deletes",
    "added-equality-deletes",
    "removed-equality-deletes",
)


def _partition_summaries(
    added: Sequence[pa.RecordBatch],
    removed: Sequence[pa.RecordBatch],
    keys: list[pa.Array],
    metadata: TableMetadata | None,
) -> dict[str, str]:
    """``partitions.<path>`` entries for the changed partitions (few: at most the limit), and
    ``partition-summaries-included``. Partitions of different specs with the same path share
    one entry, as in the reference; the unpartitioned path (empty) gets none."""
    counts: dict[str, dict[str, int]] = {}
    sides = [(b, "added") for b in added] + [(b, "removed") for b in removed]
    for (batch, side), batch_keys in zip(sides, keys, strict=True):
        spec = _batch_spec(batch)
        for key in pc.unique(batch_keys).to_pylist():
            rows = batch.filter(pc.equal(batch_keys, pa.scalar(key, pa.binary())))
            value = _partition_value(rows.column("partition")[0])
            path = _path(spec, value, metadata) if spec.fields else ""
            tally = counts.setdefault(path, {})
            if side == "added":
                _tally(rows, tally, "added", "added", "added")
            else:
                _tally(rows, tally, "deleted", "removed", "removed")
    out = {"partition-summaries-included": "true"}
    for path, tally in counts.items():
        if path:
            out[f"partitions.{path}"] = ",".join(
                f"{k}={tally[k]}" for k in _PARTITION_COUNTS if tally.get(k)
            )
    return out


def _batch_spec(batch: pa.RecordBatch) -> PartitionSpec:
    meta = batch.schema.metadata or {}
    fields = json.loads(meta.get(b"partition-spec", b"[]"))
    return PartitionSpec.fields_from_json(fields, int(meta.get(b"partition-spec-id", b"0")))


def _partition_value(scalar: pa.StructScalar) -> dict[str, Any] | None:
    """A partition as Python values; dates and timestamps past year 9999 (Java writes them,
    Python's types end there) as the integers they are stored as."""
    try:
        return scalar.as_py()  # type: ignore[no-any-return]
    except (OverflowError, ValueError):
        if not scalar.is_valid:
            return None
        values = {}
        for name, value in scalar.items():
            t = value.type
            if pa.types.is_date32(t) or pa.types.is_timestamp(t):
                value = value.cast(pa.int32() if pa.types.is_date32(t) else pa.int64())
            values[name] = value.as_py()
        return values


def _path(
    spec: PartitionSpec, partition: Mapping[str, object] | None, metadata: TableMetadata | None
) -> str:
    """The reference's partition path: ``name=value`` pairs of human-readable values, each
    form-encoded (``+`` for a space)."""

    def escape(text: str) -> str:
        return quote_plus(text, safe="*").replace("~", "%7E")

    types: list[object] = [None] * len(spec.fields)
    if metadata is not None:
        bound = spec.partition_type(metadata.current_schema(), metadata.schemas)
        types = [f.field_type for f in bound.fields]
    values = partition or {}
    return "/".join(
        f"{escape(pf.name)}={escape(human_partition_value(pf, values.get(pf.name), t))}"
        for pf, t in zip(spec.fields, types, strict=True)
    )


def _derive_operation(adds_data: bool, adds_deletes: bool, removes: bool) -> str:
    if adds_data and not adds_deletes and not removes:
        return Operation.APPEND
    if not adds_data and (removes or adds_deletes):
        return Operation.DELETE
    if not adds_data and not removes and not adds_deletes:
        return Operation.APPEND
    return Operation.OVERWRITE


def _tally(batch: pa.RecordBatch, s: dict[str, int], data: str, files: str, rows: str) -> None:
    """Add a batch of entries' Appendix F counts to ``s`` (``data``: added/deleted for data
    files, ``files``/``rows``: added/removed for delete files and deletes), vectorised."""

    def total(mask: pa.Array, column: pa.Array | pa.ChunkedArray) -> int:
        return int(pc.sum(pc.if_else(mask, column, 0)).as_py() or 0)

    def add(key: str, n: int) -> None:
        if n:
            s[key] = s.get(key, 0) + n

    content = batch.column("content")
    records = batch.column("record_count")
    is_dv = pc.equal(pc.utf8_upper(batch.column("file_format")), "PUFFIN")
    size = batch.column("file_size_in_bytes")
    if "content_size_in_bytes" in batch.schema.names:
        size = pc.if_else(is_dv, pc.fill_null(batch.column("content_size_in_bytes"), 0), size)
    is_data = pc.equal(content, 0)
    is_pos = pc.equal(content, 1)
    is_eq = pc.equal(content, 2)
    add(f"{data}-data-files", total(is_data, pa.array([1] * batch.num_rows, pa.int64())))
    add(f"{data}-records", total(is_data, records))
    add(f"{files}-files-size", int(pc.sum(size).as_py() or 0))
    ones = pa.array([1] * batch.num_rows, pa.int64())
    add(f"{files}-delete-files", total(pc.invert(is_data), ones))
    add(f"{files}-dvs", total(pc.and_(is_pos, is_dv), ones))
    add(f"{files}-position-delete-files", total(pc.and_(is_pos, pc.invert(is_dv)), ones))
    add(f"{files}-equality-delete-files", total(is_eq, ones))
    add(f"{rows}-position-deletes", total(is_pos, records))
    add(f"{rows}-equality-deletes", total(is_eq, records))
