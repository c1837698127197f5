"""Which snapshots count as concurrent commits for a change's retry checks.

A change is planned on a branch head. When its commit loses a race it is rebuilt on the new
head, and its validators look at the snapshots committed in between: those are what other
writers did without the change seeing it. :class:`Since` names where that history starts and
which snapshots on the way are the change's own transaction's (an earlier append of the same
transaction is not a concurrent commit, but the commits of others below it are).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icefloe.exceptions import CommitConflictError
from icefloe.metadata import Snapshot, TableMetadata

__all__ = ["Since"]


@dataclass(frozen=True)
class Since:
    """The start of a change's concurrent-commit checks.

    ``start`` is the branch head the change was planned on, below any snapshot of its own
    transaction (None: the branch had no snapshot). ``own`` holds the ids of the snapshots the
    change's transaction added before it, which the checks skip.
    """

    start: int | None
    own: frozenset[int] = field(default_factory=frozenset)

    @classmethod
    def planned_on(
        cls, metadata: TableMetadata, parent: Snapshot | None, own: frozenset[int]
    ) -> Since:
        """Where the checks of a change first built on ``parent`` start: ``parent``, or its
        first ancestor that its transaction did not add."""
        below = cls.own_below(metadata, parent, own)
        if not below:
            return cls(parent.snapshot_id if parent is not None else None, own)
        snap = metadata.snapshot_by_id(below[-1])
        pid = snap.parent_snapshot_id if snap is not None else None
        return cls(pid, own)

    @staticmethod
    def own_below(
        metadata: TableMetadata, parent: Snapshot | None, own: frozenset[int]
    ) -> list[int]:
        """The ids of ``own`` snapshots from ``parent`` down to the first other one."""
        out: list[int] = []
        snap = parent
        while snap is not None and snap.snapshot_id in own:
            out.append(snap.snapshot_id)
            pid = snap.parent_snapshot_id
            snap = metadata.snapshot_by_id(pid) if pid is not None else None
        return out

    def snapshots(self, metadata: TableMetadata, parent: Snapshot | None) -> list[Snapshot]:
        """The snapshots committed by others after :attr:`start` up to ``parent`` (the head
        the change is now built on), newest first.

        Raises :class:`CommitConflictError` when that history cannot be followed: a snapshot
        on the way was expired, or :attr:`start` is no longer an ancestor of ``parent``.
        """
        out: list[Snapshot] = []
        snap = parent
        last = parent
        while snap is not None and snap.snapshot_id != self.start:
            if snap.snapshot_id not in self.own:
                out.append(snap)
            last = snap
            pid = snap.parent_snapshot_id
            snap = metadata.snapshot_by_id(pid) if pid is not None else None
        if self.start is not None and snap is None:
            if last is not None and (
                metadata.snapshot_by_id(self.start) is None or last.parent_snapshot_id is not None
            ):
                raise CommitConflictError(
                    "cannot validate against concurrent commits: the history between snapshot "
                    f"{self.start} (where this change started) and snapshot {last.snapshot_id} "
                    "is no longer in the table (expired while the change was made): make the "
                    "change again"
                )
            raise CommitConflictError(
                f"cannot validate against concurrent commits: snapshot {self.start} is no "
                "longer an ancestor of the branch head (the branch was rolled back or replaced)"
            )
        return out
