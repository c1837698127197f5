"""Log replay: the live file set from checkpoint and commit file actions, vectorised.

A file's identity is its decoded path plus its deletion vector's unique id; the last action
for an identity wins (PROTOCOL "Action Reconciliation"), so an add that a later remove names is
gone, and a file whose DV was replaced survives under its new (path, DV) identity.
"""

from __future__ import annotations

from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.delta.actions import FILE_ACTIONS, dv_unique_ids

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


def live_files(actions: pa.Table) -> pa.Table:
    """The live ``add`` rows of ``actions`` (:data:`FILE_ACTIONS`, in replay order by
    ``order``), with ``path`` decoded, sorted by path."""
    if actions.num_rows == 0:
        return FILE_ACTIONS.empty_table()
    actions = actions.combine_chunks()
    paths = decode_paths(actions.column("path"))
    actions = actions.set_column(0, "path", paths)
    key = pc.binary_join_element_wise(paths, dv_unique_ids(actions.column("dv")), "\x00")
    keyed = pa.table({"key": key, "order": actions.column("order")})
    last = keyed.group_by("key").aggregate([("order", "max")]).column("order_max")
    winners = pc.is_in(actions.column("order"), value_set=last)
    live = actions.filter(pc.and_(winners, actions.column("is_add")))
    return live.sort_by("path")
