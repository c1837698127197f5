"""The write operations behind ``Transaction.append`` / ``overwrite`` /
``dynamic_partition_overwrite`` / ``add_files``: write or describe the files, then commit them
through one :class:`~icefloe.table.producer.SnapshotProducer`.

Files an operation wrote itself are deleted again when it fails; files given to ``add_files``
never are. Overwrites validate on every attempt (so on retries too) that no data matching what
they replace was added since they started (serializable isolation), and that the files they
remove are still live.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.expressions import AlwaysTrue, BooleanExpression, parse
from icefloe.io import FileIO, check_location
from icefloe.metadata import MAIN_BRANCH, Snapshot, TableMetadata
from icefloe.name_mapping import table_mapping
from icefloe.scan.manifests import manifest_entries, partition_keys
from icefloe.table.branch_heads import parent_snapshot
from icefloe.table.cherry_pick import REPLACE_PARTITIONS
from icefloe.table.concurrent_commits import Since
from icefloe.table.overwrite import plan_overwrite
from icefloe.table.producer import DELETED, SnapshotProducer
from icefloe.table.row_delta import (
    DELETE_MODE,
    MERGE_ON_READ,
    concurrent_data_validator,
    delete_entries_predicate,
    write_mode,
)
from icefloe.table_paths import absolute_location, same_file_locations
from icefloe.write.add_files import data_files_from_parquet
from icefloe.write.files import DataFile, entries_batch
from icefloe.write.matching import bind_filter
from icefloe.write.writer import write_data_files, write_parquet_files

if TYPE_CHECKING:
    from icefloe.table.table import Transaction

__all__ = ["add_files", "append", "dynamic_partition_overwrite", "overwrite"]


def _commit(producer: SnapshotProducer) -> Transaction:
    try:
        return producer.commit()
    except BaseException:
        producer.abort()
        raise


def append(
    tx: Transaction,
    data: Any,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
) -> Transaction:
    """Write ``data`` and add it in an ``append`` snapshot.

    Data without rows adds nothing: no file, no snapshot (so a transaction with nothing else
    commits nothing). It is still checked against the schema, as is the branch.
    """
    producer = SnapshotProducer(tx, branch=branch, snapshot_properties=snapshot_properties)
    files = write_data_files(tx.metadata, tx.table.io, data)
    if not files:
        return tx
    producer.owns_files(f.file_path for f in files)
    producer.add_data_files(files)
    return _commit(producer)


def added_data_since(
    io: FileIO, metadata: TableMetadata, parent: Snapshot | None, since: Since
) -> list[pa.RecordBatch]:
    """Entries of data files added by the concurrent commits ``since`` names up to ``parent``
    and still live at ``parent``: those snapshots' files whether their entries are still
    ``ADDED`` or were merged into a later snapshot's manifest as ``EXISTING``. A ``replace``
    (a compaction) adds no rows, so its files are not counted, as Java validates."""
    new_ids = {s.snapshot_id for s in since.snapshots(metadata, parent) if s.operation != "replace"}
    if parent is None or not new_ids:
        return []
    out = []
    for mf, batch in manifest_entries(io, parent, content=0):
        if mf.added_snapshot_id not in new_ids:
            continue
        mask = pc.and_(
            pc.not_equal(batch.column("status"), DELETED),
            pc.is_in(batch.column("snapshot_id"), value_set=pa.array(sorted(new_ids), pa.int64())),
        )
        added = batch.filter(mask)
        if added.num_rows:
            out.append(added)
    return out


def added_in_partitions(
    io: FileIO,
    metadata: TableMetadata,
    parent: Snapshot | None,
    since: Since,
    keys: pa.Array,
) -> str | None:
    """The first data file added by the commits ``since`` names up to ``parent`` (see
    :func:`added_data_since`) into one of the partitions ``keys`` (:func:`partition_keys`
    values), or None."""
    for batch in added_data_since(io, metadata, parent, since):
        hits = pc.is_in(partition_keys(batch), value_set=keys)
        if pc.any(hits).as_py():
            return str(batch.filter(hits).column("file_path")[0].as_py())
    return None


def _filter(expr: BooleanExpression | str | None) -> BooleanExpression:
    if expr is None:
        return AlwaysTrue()
    if isinstance(expr, str):
        return parse(expr)
    if not isinstance(expr, BooleanExpression):
        raise ValidationError(f"overwrite_filter must be an expression or a string: {expr!r}")
    return expr


def overwrite(
    tx: Transaction,
    data: Any,
    overwrite_filter: BooleanExpression | str | None = None,
    *,
    case_sensitive: bool = True,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    written: Sequence[DataFile] = (),
) -> Transaction:
    """Replace the rows matching ``overwrite_filter`` (default: all rows) by ``data`` and the
    already ``written`` data files (owned by the operation: deleted if it is abandoned).

    With ``write.delete.mode=merge-on-read`` (v2 and later) the replaced rows of files only
    partly matching get deletion vectors / position deletes instead of a rewrite
    (:func:`icefloe.table.row_level.replace_rows`)."""
    expr = _filter(overwrite_filter)
    if write_mode(tx.metadata.properties, DELETE_MODE, tx.metadata.format_version) == MERGE_ON_READ:
        from icefloe.table.row_level import replace_rows

        replace_rows(
            tx,
            data,
            expr,
            branch=branch,
            snapshot_properties=snapshot_properties,
            case_sensitive=case_sensitive,
            written=written,
        )
        return tx
    io = tx.table.io
    producer = SnapshotProducer(tx, branch=branch, snapshot_properties=snapshot_properties)
    producer.owns_files(f.file_path for f in written)
    try:
        files: list[DataFile] = list(written)
        if data is not None:
            new_files = write_data_files(tx.metadata, io, data)
            producer.owns_files(f.file_path for f in new_files)
            files += new_files
        parent = parent_snapshot(tx.metadata, branch)
        plan = plan_overwrite(
            io,
            tx.metadata,
            parent,
            expr,
            case_sensitive=case_sensitive,
            name_mapping=table_mapping(tx.metadata.properties, deferred=True),
        )
        kept: list[DataFile] = []
        schema = tx.metadata.current_schema()
        for rows in plan.rows:
            written = write_parquet_files(
                tx.metadata, io, rows, schema=schema, spec=tx.metadata.spec()
            )
            producer.owns_files(f.file_path for f in written)
            kept += written
    except BaseException:
        producer.abort()
        raise
    producer.add_data_files(files + kept).remove_files(plan.remove)
    if kept:  # v3: the kept rows keep the _row_id of the files they came from
        producer.copies_rows_of(t.data_file for t in plan.rewritten)
    if plan.remove_deletes:
        producer.remove_files_where(delete_entries_predicate(plan.remove_deletes))
    # rows kept by a rewrite must not lose deletes a concurrent commit added for them; under
    # serializable isolation a concurrent file that may hold rows the filter matches (by its
    # partition and its column metrics, as the merge-on-read path checks) is a conflict
    producer.validate(
        concurrent_data_validator(
            io,
            branch,
            plan.rewritten,
            bind_filter(schema, expr, case_sensitive),
            schema,
            tx.metadata.properties,
        )
    )
    producer.set_operation("overwrite")
    return _commit(producer)


def dynamic_partition_overwrite(
    tx: Transaction,
    data: Any,
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    written: Sequence[DataFile] = (),
) -> Transaction:
    """Replace every data file in the partitions ``data`` (and the already ``written`` files
    of the default spec) touch by the new files."""
    spec = tx.metadata.spec()
    if spec.is_unpartitioned:
        raise ValidationError("dynamic partition overwrite needs a partitioned table")
    io = tx.table.io
    # as Java's ReplacePartitions marks its snapshots (and its cherry-pick looks for)
    props = {**(snapshot_properties or {}), REPLACE_PARTITIONS: "true"}
    producer = SnapshotProducer(tx, branch=branch, snapshot_properties=props)
    producer.owns_files(f.file_path for f in written)
    files = list(written)
    if data is not None:
        files += write_data_files(tx.metadata, io, data)
    producer.owns_files(f.file_path for f in files)
    new = entries_batch(
        files, version=tx.metadata.format_version, schema=tx.metadata.current_schema(), spec=spec
    )
    keys = pc.unique(partition_keys(new, spec.spec_id))

    def replaced(batch: pa.RecordBatch) -> pa.Array:
        # Data files of the replaced partitions and the delete files of the same partitions and
        # spec: DVs and position deletes can only name removed files, equality deletes only
        # apply to older data (all removed); keeping them would leave dangling deletes (a v3
        # table must not keep a DV of a removed file). Global equality deletes (another,
        # unpartitioned spec) do not match the keys and stay.
        return pc.is_in(partition_keys(batch), value_set=keys)

    def no_concurrent_adds(md: TableMetadata, parent: Snapshot | None, since: Since) -> None:
        path = added_in_partitions(io, md, parent, since, keys)
        if path is not None:
            raise CommitConflictError(
                f"a concurrent commit added data to a replaced partition: {path}"
            )

    producer.add_data_files(files).remove_files_where(replaced)
    producer.validate(no_concurrent_adds).set_operation("overwrite")
    return _commit(producer)


def not_live(
    io: FileIO, targets: pa.Array, where: str
) -> Callable[[TableMetadata, Snapshot | None, Since], None]:
    """A commit check refusing (``ValidationError``) when a file of ``targets`` (as
    :func:`same_file_locations` gives them) is live in the snapshot the commit builds on: a
    file listed twice among the live entries is a corrupt table to every reader."""

    def check(md: TableMetadata, parent: Snapshot | None, since: Since) -> None:
        for _, batch in manifest_entries(io, parent):
            live = pc.not_equal(batch.column("status"), 2)
            paths = same_file_locations(batch.column("file_path"))
            hit = pc.and_(live, pc.is_in(paths, value_set=targets))
            if pc.any(hit).as_py():
                path = batch.filter(hit).column("file_path")[0].as_py()
                raise ValidationError(f"{path} is already a data file of {where}")

    return check


def add_files(
    tx: Transaction,
    paths: Iterable[str],
    *,
    branch: str = MAIN_BRANCH,
    snapshot_properties: Mapping[str, str] | None = None,
    check_duplicate_files: bool = True,
) -> Transaction:
    """Register existing Parquet files in an ``append`` snapshot (the files are not copied)."""
    # stored absolute and plain (a relative path resolves differently later), compared
    # without spelling differences (``file:///x`` and ``/x`` are one file)
    if isinstance(paths, str):
        paths = [paths]  # one file
    elif not isinstance(paths, Iterable):
        raise ValidationError(f"add_files takes a list of file paths, got {paths!r}")
    paths = list(paths)
    if not all(isinstance(p, str) for p in paths):
        raise ValidationError(f"add_files takes file paths (strings), got {paths!r}")
    wanted = [absolute_location(p) for p in paths]
    for location in wanted:
        check_location(location)  # a location later reads would resolve elsewhere
    comparable = same_file_locations(pa.array(wanted, pa.string()))
    if len(pc.unique(comparable)) != len(wanted):
        names = comparable.to_pylist()
        dup = next(w for w, c in zip(wanted, names, strict=True) if names.count(c) > 1)
        raise ValidationError(f"add_files got {dup} more than once")
    producer = SnapshotProducer(tx, branch=branch, snapshot_properties=snapshot_properties)
    files = data_files_from_parquet(tx.metadata, tx.table.io, wanted)
    if check_duplicate_files:
        producer.validate(not_live(tx.table.io, comparable, "the table"))
    producer.add_data_files(files)
    return _commit(producer)
