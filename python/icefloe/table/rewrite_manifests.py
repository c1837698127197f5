"""Rewriting a snapshot's manifests, regrouped by partition (as the reference's
``RewriteManifests`` action does).

Many small manifests (one per append) make planning read many files; manifests whose entries
span every partition defeat pruning by partition summaries. :func:`rewrite_manifests` reads the
live entries of the branch head's data and delete manifests (optionally of one partition
spec), sorts them by partition value, and writes them into ``ceil(total manifest bytes /
target)`` manifests per content (data or deletes) and spec
(``commit.manifest.target-size-bytes``, default 8 MiB), so each new manifest covers a narrow,
contiguous range of partitions. Entries keep their snapshot id, data and file sequence numbers
and row ids (status ``EXISTING``); data and delete entries never share a manifest. The result is
one ``replace`` snapshot whose summary counts ``manifests-created``, ``manifests-replaced``,
``manifests-kept`` and ``entries-processed``; table data is unchanged.

Concurrent commits: each attempt reads the then-current branch head, so a retry after a lost
race regroups whatever the winner committed; the files of superseded attempts are deleted.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import CommitConflictError, CorruptFileError, ValidationError
from icefloe.manifest import ManifestFile, manifest_files
from icefloe.metadata import MAIN_BRANCH, Operation, Snapshot, TableMetadata
from icefloe.properties import TableProperties, int_property
from icefloe.scan.manifests import read_manifest_entries, written_manifest_list
from icefloe.table.branch_heads import existing_branch_head
from icefloe.table.manifest_partitions import cast_partition_type, spec_schema
from icefloe.table.producer import DELETED, EXISTING, SnapshotProducer

if TYPE_CHECKING:
    from icefloe.io import FileIO
    from icefloe.table.transaction import Transaction

__all__ = ["RewriteManifestsResult", "plan_rewrite_manifests", "rewrite_manifests"]


@dataclass(frozen=True)
class RewriteManifestsResult:
    """What a manifest rewrite did (or, with ``dry_run``, would do)."""

    rewritten_manifests: int
    added_manifests: int
    entries: int
    kept_manifests: int
    dry_run: bool = False
    snapshot_id: int | None = None


@dataclass(frozen=True)
class _Plan:
    manifest_list: pa.RecordBatch  # of the head
    rows: list[dict[str, Any]]  # its rows
    chosen: list[int]  # indexes of the manifests to rewrite
    groups: dict[tuple[int, int], int]  # (content, spec id) -> manifests to write


def _target(metadata: TableMetadata, target: int | None) -> int:
    if target is not None:
        if not isinstance(target, int) or isinstance(target, bool):
            raise ValidationError(
                f"target_manifest_size must be a number of bytes (an int), got {target!r}"
            )
        if target <= 0:
            raise ValidationError(f"target_manifest_size must be positive, got {target}")
        return target
    return int_property(
        metadata.properties,
        TableProperties.MANIFEST_TARGET_SIZE_BYTES,
        TableProperties.MANIFEST_TARGET_SIZE_BYTES_DEFAULT,
    )


def _plan(
    io: FileIO,
    metadata: TableMetadata,
    head: Snapshot | None,
    spec_id: int | None,
    target: int,
) -> _Plan | None:
    """Which manifests to rewrite into how many, or None when there is nothing to gain."""
    if spec_id is not None and (isinstance(spec_id, bool) or not isinstance(spec_id, int)):
        raise ValidationError(f"spec_id must be a partition spec id (an int), got {spec_id!r}")
    if spec_id is not None and metadata.spec_by_id(spec_id) is None:
        raise ValidationError(f"no partition spec with id {spec_id}")
    lst = written_manifest_list(io, head)
    if lst is None:
        return None
    rows: list[dict[str, Any]] = lst.to_pylist()
    chosen = [
        i
        for i, r in enumerate(rows)
        if r["content"] in (0, 1) and (spec_id is None or r["partition_spec_id"] == spec_id)
    ]
    sizes: dict[tuple[int, int], int] = {}
    counts: dict[tuple[int, int], int] = {}
    entries: dict[tuple[int, int], int | None] = {}
    for i in chosen:
        key = (rows[i]["content"], rows[i]["partition_spec_id"])
        sizes[key] = sizes.get(key, 0) + rows[i]["manifest_length"]
        counts[key] = counts.get(key, 0) + 1
        added, existing = rows[i]["added_files_count"], rows[i]["existing_files_count"]
        known = entries.get(key, 0)
        # v1 manifest lists may leave the counts out: then the live entries are unknown
        entries[key] = (
            None
            if known is None or added is None or existing is None
            else (known + added + existing)
        )
    # one manifest per target size, never more than there are live entries (and none for
    # manifests that only hold deleted entries)
    groups = {}
    for key, size in sizes.items():
        want = max(1, math.ceil(size / target))
        live = entries[key]
        groups[key] = want if live is None else min(want, live)
    # a lone delete manifest that fits the target stays as it is
    idle = {k for k in groups if k[0] == 1 and counts[k] <= 1 and groups[k] == 1}
    chosen = [i for i in chosen if (rows[i]["content"], rows[i]["partition_spec_id"]) not in idle]
    groups = {k: n for k, n in groups.items() if k not in idle}
    if not chosen or all(counts[k] <= 1 and groups[k] == 1 for k in groups):
        return None
    return _Plan(lst, rows, chosen, groups)


def plan_rewrite_manifests(
    table: Any,
    *,
    spec_id: int | None = None,
    target_manifest_size: int | None = None,
    branch: str = MAIN_BRANCH,
) -> RewriteManifestsResult:
    """What :func:`rewrite_manifests` would do on ``table`` now, without writing anything."""
    metadata = table.metadata
    head = existing_branch_head(metadata, branch, "rewrite the manifests of")
    plan = _plan(table.io, metadata, head, spec_id, _target(metadata, target_manifest_size))
    if plan is None:
        return RewriteManifestsResult(0, 0, 0, 0, dry_run=True)
    entries = sum(
        (plan.rows[i]["added_files_count"] or 0) + (plan.rows[i]["existing_files_count"] or 0)
        for i in plan.chosen
    )
    return RewriteManifestsResult(
        len(plan.chosen),
        sum(plan.groups.values()),
        entries,
        len(plan.rows) - len(plan.chosen),
        dry_run=True,
    )


def _sorted_by_partition(batch: pa.Table) -> pa.Table:
    """Entries ordered by their partition tuple (nulls last), so chunks cover narrow ranges."""
    if "partition" not in batch.column_names or batch.num_rows < 2:
        return batch
    part = batch.column("partition").combine_chunks()
    if part.type.num_fields == 0:
        return batch
    keys = {}
    for i in range(part.type.num_fields):
        col = part.field(i)
        if isinstance(col.type, pa.BaseExtensionType):
            col = col.storage
        keys[f"__k{i}"] = col
    try:
        order = pc.sort_indices(pa.table(keys), sort_keys=[(k, "ascending") for k in keys])
    except pa.ArrowNotImplementedError:  # a key type Arrow cannot sort: keep file order
        return batch
    return batch.take(order)


def _concat(
    metadata: TableMetadata, parts: list[pa.RecordBatch], spec_id: int, content: int
) -> pa.Table:
    """The entries of one spec's manifests as one table, their partition tuples first cast to
    the spec's partition type (older manifests may hold a narrower type, or bytes where a
    dropped source was once typed ``unknown``). Tuples that cannot take the spec's type raise
    :class:`ValidationError`, entries that still disagree :class:`CorruptFileError`, both
    naming the spec."""
    spec = metadata.spec_by_id(spec_id)
    if spec is None:
        raise ValidationError(f"unknown partition spec id {spec_id}")
    schema = spec_schema(metadata, spec)
    version = metadata.format_version
    parts = [cast_partition_type(p, version, schema, spec) for p in parts]
    try:
        return pa.concat_tables([pa.Table.from_batches([p]) for p in parts])
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        kind = "delete" if content else "data"
        types = sorted(
            {str(p.schema.field("partition").type) for p in parts if "partition" in p.schema.names}
        )
        raise CorruptFileError(
            f"rewrite_manifests: the {kind} manifests of partition spec {spec_id} disagree on "
            f"the entry schema (partition types {types}): {str(e).splitlines()[0]}"
        ) from e


class _RewriteManifests(SnapshotProducer):
    """A producer whose snapshot keeps every file and replaces the chosen data manifests."""

    def __init__(
        self,
        tx: Transaction,
        *,
        spec_id: int | None,
        target: int | None,
        branch: str,
        snapshot_properties: Mapping[str, str] | None,
    ) -> None:
        super().__init__(
            tx, branch=branch, snapshot_properties=snapshot_properties, fast_append=True
        )
        self.set_operation(Operation.REPLACE)
        self.spec_id = spec_id
        self.target = target
        self.result = RewriteManifestsResult(0, 0, 0, 0)

    def _write_new_manifests(self, metadata: TableMetadata) -> list[dict[str, Any]]:
        return []

    def _filter(
        self, metadata: TableMetadata, parent: Snapshot | None, written: list[str]
    ) -> tuple[list[dict[str, Any]], list[str], list[pa.RecordBatch], int]:
        # every attempt: the branch may have been removed since the rewrite was planned
        existing_branch_head(metadata, self.branch, "rewrite the manifests of")
        plan = _plan(self.io, metadata, parent, self.spec_id, _target(metadata, self.target))
        if plan is None:
            raise NothingLeftToRewrite
        mfs: list[ManifestFile] = manifest_files(plan.manifest_list)
        batches = read_manifest_entries(self.io, [mfs[i] for i in plan.chosen])
        by_key: dict[tuple[int, int], list[pa.RecordBatch]] = {}
        for i, b in zip(plan.chosen, batches, strict=True):
            live = b.filter(pc.not_equal(b.column("status"), DELETED))
            key = (plan.rows[i]["content"], plan.rows[i]["partition_spec_id"])
            by_key.setdefault(key, []).append(live)
        new_rows: list[dict[str, Any]] = []
        entries = 0
        for (content, spec_id), parts in sorted(by_key.items()):
            table = _sorted_by_partition(_concat(metadata, parts, spec_id, content))
            table = table.set_column(
                table.schema.get_field_index("status"),
                "status",
                pa.array([EXISTING] * table.num_rows, pa.int32()),
            )
            entries += table.num_rows
            # every live entry is written, whatever the plan's counts said
            n = max(1, min(plan.groups[content, spec_id], table.num_rows)) if table.num_rows else 0
            # n chunks of (almost) equal entry counts, contiguous in partition order
            bounds = [round(i * table.num_rows / n) for i in range(n + 1)] if n else [0]
            for start, end in itertools.pairwise(bounds):
                chunk = table.slice(start, end - start).combine_chunks().to_batches()
                row = self._write(metadata, chunk[0], spec_id, content)
                ids = (
                    chunk[0].column("first_row_id")
                    if content == 0 and "first_row_id" in chunk[0].schema.names
                    else None
                )
                # Every entry keeps its explicit first_row_id; the manifest's own value only
                # has to be set so that no new id range is assigned to existing rows.
                explicit = ids is not None and ids.null_count == 0 and len(ids) > 0
                row["first_row_id"] = pc.min(ids).as_py() if explicit else None
                written.append(row["manifest_path"])
                new_rows.append(row)
        chosen = set(plan.chosen)
        kept = [r for i, r in enumerate(plan.rows) if i not in chosen]
        replaced = [plan.rows[i]["manifest_path"] for i in plan.chosen]
        self.result = RewriteManifestsResult(
            len(replaced), len(new_rows), entries, len(kept), snapshot_id=self.snapshot_id
        )
        return new_rows + kept, replaced, [], entries


class NothingLeftToRewrite(CommitConflictError):
    """The head has nothing to rewrite any more: a concurrent commit (another rewrite) already
    regrouped the manifests. Raised by the commit of a transaction holding the rewrite;
    :meth:`icefloe.table.Table.rewrite_manifests` returns zero counts instead."""

    def __init__(self) -> None:
        super().__init__("rewrite_manifests: nothing left to rewrite after a concurrent commit")


def rewrite_manifests(
    tx: Transaction,
    *,
    spec_id: int | None = None,
    target_manifest_size: int | None = None,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> RewriteManifestsResult:
    """Regroup the data and delete manifests of ``branch``'s head by partition in one
    ``replace`` snapshot of ``tx`` (see the module docstring). Returns what was rewritten; when
    there is nothing to gain (no manifests, or one per content and spec that fits the target)
    nothing is written or committed. A ``branch`` that does not exist raises
    :class:`NoSuchSnapshotError` (and commits nothing)."""
    existing_branch_head(tx.metadata, branch, "rewrite the manifests of")
    producer = _RewriteManifests(
        tx,
        spec_id=spec_id,
        target=target_manifest_size,
        branch=branch,
        snapshot_properties=snapshot_properties,
    )
    try:
        producer.commit()
    except NothingLeftToRewrite:
        producer.abort()
        return RewriteManifestsResult(0, 0, 0, 0)
    return producer.result
