"""A hook into the SQL catalog's transactions that change table, view and namespace entries.

Each transaction of :class:`~icefloe.catalog.sql.SqlCatalog` that creates, registers, commits
(swaps the pointer of), drops or renames an entry, the one transaction of a multi-table
commit, and each one that creates or drops a namespace or changes its properties, calls the
hook set in :data:`before_commit` (for the calling thread or task, a
:class:`~contextvars.ContextVar`) once its change is made and just before its COMMIT, on the
transaction's own connection, with a :class:`PointerChange` saying what changed. What the hook
writes through that connection therefore commits if and only if the change commits. Nothing is
called when no hook is set, nor for a change that did not happen (a compare-and-swap that found
another pointer, a drop of a missing entry or namespace).

An exception the hook raises rolls the transaction back and is raised out of the catalog call
as it is; a hook that refuses the change should raise
:class:`~icefloe.exceptions.CommitFailedError` with ``retryable`` false and
``nothing_committed`` true, which every caller takes for a change that did not happen and is
not to be retried. A database error of the
hook's own statements counts as one of the transaction (nothing committed).

The REST server uses it to record, inside the change's transaction, that a request with an
``Idempotency-Key`` committed (see :mod:`icefloe.rest.idempotency`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from icefloe.catalog.base import Identifier

__all__ = [
    "ACTIONS",
    "KINDS",
    "BeforeCommit",
    "PointerChange",
    "announce",
    "before_commit",
    "hooked",
]

#: The actions a :class:`PointerChange` names.
ACTIONS = ("create", "register", "commit", "drop", "rename", "commit-tables", "update-properties")
#: The kinds of entries a :class:`PointerChange` names.
KINDS = ("TABLE", "VIEW", "NAMESPACE")


@dataclass(frozen=True)
class PointerChange:
    """One change of catalog entries: ``action`` (one of :data:`ACTIONS`), ``kind`` (one of
    :data:`KINDS`), the ``identifiers`` changed (a rename: source and target; a multi-table
    commit: each table; a namespace change: the namespace) and the ``metadata_locations`` they
    now point at (one per identifier for a create, register, commit or multi-table commit of
    tables and views; none otherwise).

    A namespace's ``"update-properties"`` also says what it did, as the state it found decided
    it: the property keys set (``updated``), the ones removed (``removed``) and the ones asked
    to be removed that it did not hold (``missing``), each sorted."""

    action: str
    kind: str
    identifiers: tuple[Identifier, ...]
    metadata_locations: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "action": self.action,
            "kind": self.kind,
            "identifiers": [list(i) for i in self.identifiers],
            "metadata-locations": list(self.metadata_locations),
        }
        if self.action == "update-properties":
            out |= {
                "updated": list(self.updated),
                "removed": list(self.removed),
                "missing": list(self.missing),
            }
        return out

    @classmethod
    def from_json(cls, obj: Any) -> PointerChange:
        """The change :meth:`to_json` wrote; :class:`ValueError` for anything else."""
        try:
            action, kind = obj["action"], obj["kind"]
            idents = tuple(tuple(str(p) for p in i) for i in obj["identifiers"])
            locations = tuple(str(loc) for loc in obj["metadata-locations"])
            # (absent from the changes of tables and views)
            updated, removed, missing = (
                tuple(str(k) for k in obj.get(f, ())) for f in ("updated", "removed", "missing")
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a recorded catalog change: {exc}") from exc
        if action not in ACTIONS or kind not in KINDS:
            raise ValueError(f"not a recorded catalog change: {action!r} of {kind!r}")
        return cls(str(action), str(kind), idents, locations, updated, removed, missing)


#: ``hook(connection, change)``, called before the COMMIT of a change (see the module).
BeforeCommit = Callable[["Connection", PointerChange], None]

#: The hook of the current thread or task (None: no hook).
before_commit: ContextVar[BeforeCommit | None] = ContextVar(
    "icefloe_sql_before_commit", default=None
)


@contextmanager
def hooked(hook: BeforeCommit) -> Iterator[None]:
    """``hook`` set in :data:`before_commit` for the block (the earlier one restored after)."""
    token = before_commit.set(hook)
    try:
        yield
    finally:
        before_commit.reset(token)


def announce(conn: Connection, change: PointerChange) -> None:
    """Call the hook set, if any, with ``change`` made on ``conn`` (not yet committed)."""
    hook = before_commit.get()
    if hook is not None:
        hook(conn, change)
