"""Branches, tags and moving a table's history: ``with table.manage_snapshots() as ms: ...``.

:class:`ManageSnapshots` offers what the Java reference's ``ManageSnapshots`` does: create,
replace, rename and remove branches and tags (with their retention settings, spec "Snapshot
References"), fast-forward a branch, roll ``main`` back to an ancestor (by id or by time), set the
current snapshot to any snapshot, and
cherry-pick a snapshot onto ``main`` (write-audit-publish: a snapshot staged with a ``wap.id``
is published once; picking it records ``published-wap-id``).

Each call is applied to the transaction at once, so later calls see earlier ones; the commit
asserts that every ref touched still points where it did when the change started (a concurrent
move of one of them is a :class:`~icefloe.exceptions.CommitConflictError`). A cherry-pick alone
is the exception: it is decided again on a newer ``main`` (:mod:`icefloe.table.cherry_pick`).

A table a REST catalog loaded with ``snapshot-loading-mode=refs`` holds only the snapshots refs
point at: a snapshot (or an ancestor) that is not there is looked for among every snapshot
(:meth:`Table.load_every_snapshot`) before it is called unknown.
"""

from __future__ import annotations

import datetime
from dataclasses import replace
from typing import TYPE_CHECKING

from icefloe.exceptions import ValidationError
from icefloe.metadata import (
    MAIN_BRANCH,
    AssertRefSnapshotId,
    RemoveSnapshotRef,
    RemoveSnapshots,
    SetSnapshotRef,
    Snapshot,
    SnapshotRef,
    TableMetadata,
)
from icefloe.table.cherry_pick import SOURCE_SNAPSHOT_ID, CherryPick
from icefloe.table.pending import PendingUpdate
from icefloe.types import integer_arg
from icefloe.values import epoch_ms

if TYPE_CHECKING:
    from icefloe.table.table import Transaction

__all__ = ["SOURCE_SNAPSHOT_ID", "ManageSnapshots", "check_snapshot_id", "with_every_snapshot"]

_BRANCH = "branch"
_TAG = "tag"


def check_snapshot_id(snapshot_id: object) -> int:
    """``snapshot_id`` when it is an integer (not a bool); a :class:`ValidationError` naming
    the type otherwise."""
    out = integer_arg(snapshot_id)
    if out is None:
        raise ValidationError(f"a snapshot id is an integer, got {snapshot_id!r}")
    return out


def _check_ref_name(name: object) -> None:
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(f"a ref name is a non-empty string, got {name!r}")


def _positive(value: int | None, what: str) -> None:
    """A ref's retention setting must be a positive integer (:class:`SnapshotRef` checks that
    its metadata field holds it)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise ValidationError(f"{what} must be a positive integer, got {value!r}")


class ManageSnapshots(PendingUpdate):
    """Changes to a table's refs and current snapshot (see the module docstring)."""

    def __init__(self, transaction: Transaction, *, autocommit: bool = False) -> None:
        self._tx = transaction
        self._autocommit = autocommit
        self._asserted: set[str] = set()
        self._committed = False

    # ------------------------------------------------------------------ helpers

    def _snapshot(self, snapshot_id: int) -> Snapshot:
        s = self._tx.metadata.snapshot_by_id(check_snapshot_id(snapshot_id))
        if s is None and self._load_every_snapshot():
            s = self._tx.metadata.snapshot_by_id(snapshot_id)
        if s is None:
            name = getattr(self._tx.table, "name", None)
            where = f" in table {name}" if isinstance(name, str) else ""
            raise ValidationError(f"cannot find snapshot {snapshot_id}{where}")
        return s

    def _load_every_snapshot(self) -> bool:
        """Add the snapshots the catalog left out of the table to the transaction's metadata;
        True when there were some."""
        meta = with_every_snapshot(self._tx, self._tx.metadata)
        if meta is self._tx.metadata:
            return False
        self._tx.metadata = meta
        return True

    def _ancestors(self, snapshot_id: int) -> list[Snapshot]:
        """``snapshot_id``'s snapshot and its ancestors, newest first (see :func:`_history`)."""
        self._tx.metadata, chain = _history(self._tx, self._tx.metadata, snapshot_id)
        return chain

    def _ref(self, name: str) -> SnapshotRef | None:
        if not isinstance(name, str):
            raise ValidationError(f"a ref name is a string, got {name!r}")
        return self._tx.metadata.refs.get(name)

    def _assert_ref(self, name: str) -> None:
        """Require, at commit time, that ``name`` is where the table's base had it."""
        _check_ref_name(name)
        if name in self._asserted:
            return
        self._asserted.add(name)
        base = self._tx.table.metadata.refs.get(name)
        self._tx.apply([], [AssertRefSnapshotId(name, base.snapshot_id if base else None)])

    def _set(self, name: str, ref: SnapshotRef) -> None:
        self._assert_ref(name)
        self._tx.apply(
            [
                SetSnapshotRef(
                    name,
                    ref.snapshot_id,
                    ref.ref_type,
                    ref.min_snapshots_to_keep,
                    ref.max_snapshot_age_ms,
                    ref.max_ref_age_ms,
                )
            ]
        )

    def _existing(self, name: str, kind: str) -> SnapshotRef:
        ref = self._ref(name)
        if ref is None:
            raise ValidationError(f"{kind} {name!r} does not exist")
        if ref.ref_type != kind:
            raise ValidationError(f"ref {name!r} is a {ref.ref_type}, not a {kind}")
        return ref

    # ------------------------------------------------------------------ branches and tags

    def create_branch(
        self,
        name: str,
        snapshot_id: int | None = None,
        *,
        min_snapshots_to_keep: int | None = None,
        max_snapshot_age_ms: int | None = None,
        max_ref_age_ms: int | None = None,
    ) -> ManageSnapshots:
        """Create a branch at ``snapshot_id`` (default: the current snapshot; a table without
        one gets an empty ``append`` snapshot for the branch, as in Java)."""
        if self._ref(name) is not None:
            raise ValidationError(f"cannot create branch {name!r}: a ref with that name exists")
        _positive(min_snapshots_to_keep, "min-snapshots-to-keep")
        _positive(max_snapshot_age_ms, "max-snapshot-age-ms")
        _positive(max_ref_age_ms, "max-ref-age-ms")
        if snapshot_id is None:
            current = self._tx.metadata.current_snapshot()
            if current is None:
                # as Java: a table without a snapshot gets an empty one for the branch
                from icefloe.table.producer import SnapshotProducer

                producer = SnapshotProducer(self._tx, branch=name, fast_append=True)
                producer.set_operation("append").commit()
                snapshot_id = producer.snapshot_id
            else:
                snapshot_id = current.snapshot_id
        snapshot_id = self._snapshot(snapshot_id).snapshot_id  # an int, whatever was given
        self._set(
            name,
            SnapshotRef(
                snapshot_id, _BRANCH, min_snapshots_to_keep, max_snapshot_age_ms, max_ref_age_ms
            ),
        )
        return self

    def create_tag(
        self, name: str, snapshot_id: int, *, max_ref_age_ms: int | None = None
    ) -> ManageSnapshots:
        """Tag a snapshot."""
        if self._ref(name) is not None:
            raise ValidationError(f"cannot create tag {name!r}: a ref with that name exists")
        snapshot_id = self._snapshot(snapshot_id).snapshot_id  # an int, whatever was given
        _positive(max_ref_age_ms, "max-ref-age-ms")
        self._set(name, SnapshotRef(snapshot_id, _TAG, None, None, max_ref_age_ms))
        return self

    def remove_branch(self, name: str) -> ManageSnapshots:
        """Remove a branch (not ``main``)."""
        if name == MAIN_BRANCH:
            raise ValidationError("cannot remove the main branch")
        self._existing(name, _BRANCH)
        self._assert_ref(name)
        self._tx.apply([RemoveSnapshotRef(name)])
        return self

    def remove_tag(self, name: str) -> ManageSnapshots:
        """Remove a tag."""
        self._existing(name, _TAG)
        self._assert_ref(name)
        self._tx.apply([RemoveSnapshotRef(name)])
        return self

    def rename_branch(self, name: str, new_name: str) -> ManageSnapshots:
        """Rename a branch (not ``main``), keeping its snapshot and retention."""
        if name == MAIN_BRANCH:
            raise ValidationError("cannot rename the main branch")
        ref = self._existing(name, _BRANCH)
        if self._ref(new_name) is not None:
            raise ValidationError(f"cannot rename branch {name!r}: ref {new_name!r} exists")
        self._set(new_name, ref)
        self._assert_ref(name)
        self._tx.apply([RemoveSnapshotRef(name)])
        return self

    def replace_branch(self, name: str, snapshot_id: int) -> ManageSnapshots:
        """Point an existing branch at any snapshot (retention settings are kept)."""
        ref = self._existing(name, _BRANCH)
        snapshot_id = self._snapshot(snapshot_id).snapshot_id  # an int, whatever was given
        self._set(name, _with_snapshot(ref, snapshot_id))
        return self

    def replace_tag(self, name: str, snapshot_id: int) -> ManageSnapshots:
        """Point an existing tag at another snapshot."""
        ref = self._existing(name, _TAG)
        snapshot_id = self._snapshot(snapshot_id).snapshot_id  # an int, whatever was given
        self._set(name, _with_snapshot(ref, snapshot_id))
        return self

    def fast_forward(self, branch: str, to: str) -> ManageSnapshots:
        """Move ``branch`` to the snapshot of ref ``to``; ``branch`` must be its ancestor.
        A branch that does not exist yet (``main`` of a table whose first rows were written
        to another branch) is created there, as Java does."""
        target = self._ref(to)
        if target is None:
            raise ValidationError(f"cannot fast-forward {branch!r}: ref {to!r} does not exist")
        if self._ref(branch) is None:
            self._set(branch, SnapshotRef(target.snapshot_id, _BRANCH))
            return self
        ref = self._existing(branch, _BRANCH)
        ancestors = {s.snapshot_id for s in self._ancestors(target.snapshot_id)}
        if ref.snapshot_id not in ancestors:
            raise ValidationError(
                f"cannot fast-forward {branch!r} to {to!r}: snapshot {ref.snapshot_id} is not an "
                f"ancestor of {target.snapshot_id}"
            )
        if ref.snapshot_id != target.snapshot_id:
            self._set(branch, _with_snapshot(ref, target.snapshot_id))
        return self

    def set_branch_retention(
        self,
        name: str,
        *,
        min_snapshots_to_keep: int | None = None,
        max_snapshot_age_ms: int | None = None,
        max_ref_age_ms: int | None = None,
    ) -> ManageSnapshots:
        """Change a branch's retention settings (``None`` keeps a setting)."""
        ref = self._existing(name, _BRANCH)
        for v, what in (
            (min_snapshots_to_keep, "min-snapshots-to-keep"),
            (max_snapshot_age_ms, "max-snapshot-age-ms"),
            (max_ref_age_ms, "max-ref-age-ms"),
        ):
            _positive(v, what)
        if max_ref_age_ms is not None and name == MAIN_BRANCH:
            raise ValidationError("the main branch never expires: it takes no max-ref-age-ms")
        self._set(
            name,
            SnapshotRef(
                ref.snapshot_id,
                _BRANCH,
                min_snapshots_to_keep
                if min_snapshots_to_keep is not None
                else ref.min_snapshots_to_keep,
                max_snapshot_age_ms if max_snapshot_age_ms is not None else ref.max_snapshot_age_ms,
                max_ref_age_ms if max_ref_age_ms is not None else ref.max_ref_age_ms,
            ),
        )
        return self

    def set_tag_retention(self, name: str, max_ref_age_ms: int) -> ManageSnapshots:
        """Change a tag's ``max-ref-age-ms``."""
        ref = self._existing(name, _TAG)
        _positive(max_ref_age_ms, "max-ref-age-ms")
        self._set(name, SnapshotRef(ref.snapshot_id, _TAG, None, None, max_ref_age_ms))
        return self

    # ------------------------------------------------------------------ main's history

    def _set_main(self, snapshot_id: int) -> None:
        ref = self._ref(MAIN_BRANCH)
        new = _with_snapshot(ref, snapshot_id) if ref else SnapshotRef(snapshot_id, _BRANCH)
        self._set(MAIN_BRANCH, new)

    def set_current_snapshot(self, snapshot_id: int) -> ManageSnapshots:
        """Make any kept snapshot the current one (``main`` moves to it)."""
        snapshot_id = self._snapshot(snapshot_id).snapshot_id  # an int, whatever was given
        self._set_main(snapshot_id)
        return self

    def rollback_to(self, snapshot_id: int) -> ManageSnapshots:
        """Roll ``main`` back to one of its ancestors."""
        snapshot_id = self._snapshot(snapshot_id).snapshot_id  # an int, whatever was given
        current = self._tx.metadata.current_snapshot()
        ancestors = (
            {s.snapshot_id for s in self._ancestors(current.snapshot_id)}
            if current is not None
            else set()
        )
        if snapshot_id not in ancestors:
            raise ValidationError(
                f"cannot roll back to snapshot {snapshot_id}: not an ancestor of the current "
                f"snapshot {current.snapshot_id if current else None}"
            )
        self._set_main(snapshot_id)
        return self

    def rollback_to_time(self, timestamp_ms: int | datetime.datetime) -> ManageSnapshots:
        """Roll ``main`` back to its latest ancestor made strictly before ``timestamp_ms``
        (epoch ms or a datetime, naive ones being UTC)."""
        timestamp_ms = epoch_ms(timestamp_ms, "timestamp_ms")
        current = self._tx.metadata.current_snapshot()
        chain = self._ancestors(current.snapshot_id) if current else []
        older = [s for s in chain if s.timestamp_ms < timestamp_ms]
        if not older:
            raise ValidationError(
                f"cannot roll back: no snapshot of main is older than {timestamp_ms} ms"
            )
        self._set_main(max(older, key=lambda s: s.timestamp_ms).snapshot_id)
        return self

    def cherry_pick(self, snapshot_id: int) -> ManageSnapshots:
        """Apply the changes of a snapshot (e.g. one staged on a branch, or left unreferenced
        by a write-audit-publish job) to ``main``.

        When the snapshot's parent is ``main``'s head, ``main`` simply moves to it (any
        operation); otherwise an ``append`` is picked as a new ``append`` snapshot adding the
        same data files, and a dynamic partition overwrite (``replace-partitions=true``) as a
        new ``overwrite`` snapshot replacing the partitions its files cover (refused when
        ``main`` added data to one of them after the snapshot's parent). A new snapshot's
        summary records ``source-snapshot-id``, and ``published-wap-id`` when the picked one
        has a ``wap.id``; in v3 its rows get new row ids. Picking a snapshot that is already in
        ``main``'s history, was picked before, or whose ``wap.id`` ``main`` already has, is
        refused. When the commit is retried on a newer ``main`` (another writer committed),
        all of this is decided again: a planned fast-forward becomes a new snapshot.
        """
        s = self._snapshot(snapshot_id)
        tx = self._tx

        def main_history(meta: TableMetadata) -> tuple[TableMetadata, list[Snapshot]]:
            head = meta.current_snapshot()
            return _history(tx, meta, head.snapshot_id) if head else (meta, [])

        def every_snapshot(meta: TableMetadata) -> TableMetadata:
            return with_every_snapshot(tx, meta)

        pick = CherryPick(tx, s, main_history, every_snapshot)
        try:
            pick.commit()
        except BaseException:
            pick.abort()  # a refused pick leaves no manifest behind
            raise
        return self

    def publish_changes(self, wap_id: str) -> ManageSnapshots:
        """Publish the snapshot a write-audit-publish job staged under ``wap_id`` (its
        ``wap.id``) to ``main``: :meth:`cherry_pick` of it, as Iceberg Java's
        ``publish_changes`` procedure. :class:`ValidationError` when no snapshot has that id."""
        from icefloe.table.producer import WAP_ID

        if not isinstance(wap_id, str) or not wap_id:
            raise ValidationError(f"a wap.id is a non-empty string, got {wap_id!r}")

        def staged() -> Snapshot | None:
            for s in self._tx.metadata.snapshots:
                if s.summary is not None and s.summary.get(WAP_ID) == wap_id:
                    return s
            return None

        # a staged snapshot no ref points at may be missing from a table loaded with
        # snapshot-loading-mode=refs
        found = staged()
        if found is None and self._load_every_snapshot():
            found = staged()
        if found is None:
            raise ValidationError(f"cannot publish: no snapshot was staged with wap.id {wap_id!r}")
        return self.cherry_pick(found.snapshot_id)

    # ------------------------------------------------------------------ commit

    def commit(self) -> None:
        """Commit (unless part of a larger transaction, which commits it)."""
        if self._committed:
            raise ValidationError("this snapshot change was already committed")
        self._committed = True
        if self._autocommit:
            self._tx.commit_transaction()

    def discard(self) -> None:
        """Drop the change; on its own (not in a larger transaction) the snapshots a
        cherry-pick or a first branch wrote are deleted, as a discarded transaction's are."""
        if self._autocommit and not self._committed:
            self._committed = True
            self._tx.discard()


def _with_snapshot(ref: SnapshotRef, snapshot_id: int) -> SnapshotRef:
    return SnapshotRef(
        snapshot_id,
        ref.ref_type,
        ref.min_snapshots_to_keep,
        ref.max_snapshot_age_ms,
        ref.max_ref_age_ms,
    )


def with_every_snapshot(tx: Transaction, meta: TableMetadata) -> TableMetadata:
    """``meta`` with the snapshots the catalog left out when it loaded ``tx``'s table (a REST
    catalog with ``snapshot-loading-mode=refs`` loads only those refs point at), but those
    ``tx`` removes; ``meta`` itself when there are none."""
    load = getattr(tx.table, "load_every_snapshot", None)
    if load is None or not load():
        return meta
    removed = {i for u in tx.updates if isinstance(u, RemoveSnapshots) for i in u.snapshot_ids}
    have = {s.snapshot_id for s in meta.snapshots} | removed
    extra = tuple(s for s in tx.table.metadata.snapshots if s.snapshot_id not in have)
    return replace(meta, snapshots=(*meta.snapshots, *extra)) if extra else meta


def _history(
    tx: Transaction, meta: TableMetadata, snapshot_id: int
) -> tuple[TableMetadata, list[Snapshot]]:
    """``snapshot_id``'s snapshot and its ancestors, newest first, and the metadata they come
    from: ``meta``, or ``meta`` with every snapshot when the chain stops at a missing parent
    (one the catalog left out, or an expired one)."""
    chain = meta.ancestors_of(snapshot_id)
    if chain and chain[-1].parent_snapshot_id is not None:
        fuller = with_every_snapshot(tx, meta)
        if fuller is not meta:
            return fuller, fuller.ancestors_of(snapshot_id)
    return meta, chain
