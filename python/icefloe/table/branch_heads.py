"""The heads of branches a change starts from: a write's parent (a new branch forks from
``main``) and a maintenance action's branch, which must exist."""

from __future__ import annotations

from icefloe.exceptions import NoSuchSnapshotError, ValidationError
from icefloe.metadata import MAIN_BRANCH, Snapshot, TableMetadata

__all__ = ["existing_branch_head", "parent_snapshot"]


def parent_snapshot(metadata: TableMetadata, branch: str) -> Snapshot | None:
    """The head of ``branch``; a branch that does not exist yet forks from ``main``."""
    ref = metadata.refs.get(branch)
    if ref is not None:
        return metadata.snapshot_by_id(ref.snapshot_id)
    return metadata.current_snapshot()


def existing_branch_head(metadata: TableMetadata, branch: str, action: str) -> Snapshot | None:
    """The head of ``branch``, which must exist (``main`` may have no snapshot yet), for a
    maintenance ``action`` ("compact", ...): unlike a write, a rewrite has nothing to fork a
    new branch from, so a misspelled name raises :class:`NoSuchSnapshotError` instead of
    creating a branch; a tag or a name that is not a string raises :class:`ValidationError`."""
    if not isinstance(branch, str) or not branch:
        raise ValidationError(f"branch must be a non-empty string, got {branch!r}")
    ref = metadata.refs.get(branch)
    if ref is None:
        if branch != MAIN_BRANCH:
            raise NoSuchSnapshotError(f"no branch named {branch!r} to {action}")
        return metadata.current_snapshot()
    if not ref.is_branch:
        raise ValidationError(f"cannot {action} {branch!r}: it is a tag, not a branch")
    return metadata.snapshot_by_id(ref.snapshot_id)
