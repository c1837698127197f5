"""Log replay: the live file set from checkpoint and commit file actions, vectorised.

A file's identity is its decoded path plus its deletion vector's unique id; the last action
for an identity wins (PROTOCOL "Action Reconciliation"), so an add that a later remove names is
gone, and a file whose DV was replaced survives under its new (path, DV) identity.
"""

from __future__ import annotations

from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.delta.actions import dv_unique_ids

__all__ = ["decode_paths", "live_files"]


def decode_paths(paths: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Delta's URL-encoded paths decoded (only the few with ``%`` pass through Python)."""
    if isinstance(paths, pa.ChunkedArray):
        paths = paths.combine_chunks() if paths.num_chunks else pa.array([], pa.string())
    encoded = pc.fill_null(pc.match_substring(paths, "%"), False)
    if not pc.any(encoded).as_py():
        return paths
    idx = pc.indices_nonzero(encoded)
    decoded = pa.array([unquote(p) for p in paths.take(idx).to_pylist()], pa.string())
    out = paths.to_pylist()  # rare: only tables with encoded paths
    for i, d in zip(idx.to_pylist(), decoded.to_pylist(), strict=True):
        out[i] = d
    return pa.array(out, pa.string())


def _keys(actions: pa.Table) -> pa.Array:
    return pc.binary_join_element_wise(
        actions.column("path").combine_chunks(), dv_unique_ids(actions.column("dv")), "\x00"
    )


def live_files(checkpoint: pa.Table, commits: pa.Table) -> pa.Table:
    """The live ``add`` rows after replaying ``commits`` (:data:`FILE_ACTIONS` in log order by
    ``order``) on the adds of a checkpoint (all live by definition), paths decoded.

    Only the few checkpoint files a commit names are reconciled by key, so replaying a short
    tail of commits on a large checkpoint costs a membership test, not a group-by."""
    base = checkpoint
    if checkpoint.num_rows and not pc.all(checkpoint.column("is_add")).as_py():
        base = checkpoint.filter(checkpoint.column("is_add"))  # else no copy of every add
    base = base.set_column(0, "path", decode_paths(base.column("path")))
    if commits.num_rows == 0:
        return base
    commits = commits.combine_chunks()
    commits = commits.set_column(0, "path", decode_paths(commits.column("path")))
    keys = _keys(commits)
    keyed = pa.table({"key": keys, "order": commits.column("order")})
    last = keyed.group_by("key", use_threads=False).aggregate([("order", "max")])
    winners = pc.is_in(commits.column("order"), value_set=last.column("order_max"))
    added = commits.filter(pc.and_(winners, commits.column("is_add")))
    named = pc.is_in(base.column("path"), value_set=commits.column("path"))
    if pc.any(named).as_py():
        touched = base.filter(named)
        gone = pc.is_in(_keys(touched), value_set=keys)
        kept = [base.filter(pc.invert(named)), touched.filter(pc.invert(gone))]
        base = pa.concat_tables(kept)
    if not added.num_rows:
        return base
    return pa.concat_tables([base, added], promote_options="permissive")
