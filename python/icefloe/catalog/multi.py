"""Transactions over several tables of one catalog, committed all or nothing.

``with catalog.transaction() as tx:`` gives a :class:`CatalogTransaction`; ``tx.table(name)``
returns a :class:`~icefloe.table.Transaction` on that table to collect changes in (appends,
property changes, schema changes, ...). Leaving the block commits every table's changes in one
catalog operation (:meth:`Catalog.commit_tables`): the SQL catalog swaps every pointer in one
database transaction, the REST catalog sends ``POST /v1/{prefix}/transactions/commit``. When
another writer moved one of the tables first, changes that can be rebuilt (appends and other
snapshot producers, property changes) are rebuilt on the new state and committed again, as the
first table's ``commit.retry.*`` properties say; other changes fail with the catalog's error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from types import TracebackType
from typing import TYPE_CHECKING

from icefloe.exceptions import (
    CommitConflictError,
    CommitFailedError,
    OperationNotOfferedError,
    ValidationError,
    commit_did_not_happen,
)
from icefloe.metadata import RemoveProperties, SetProperties, requirements_for
from icefloe.table import Transaction

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from icefloe.catalog.base import Catalog, Identifier
    from icefloe.table import Table

__all__ = ["CatalogTransaction"]


class _TableChanges(Transaction):
    """One table's part of a :class:`CatalogTransaction` (it commits only with the others)."""

    def commit_transaction(self) -> Table:
        raise ValidationError(
            f"changes to {self.table.name!r} commit with their catalog transaction, not alone"
        )

    def _replayable(self) -> bool:
        """As a table transaction's, and a part of property changes only (nothing to rebuild
        but the properties, which need no requirement) is too: it must not stop the other
        parts from being rebuilt after a lost race."""
        if self._producers():
            return super()._replayable()
        return all(
            isinstance(op, tuple)
            and not op[1]
            and all(isinstance(u, SetProperties | RemoveProperties) for u in op[0])
            for op in self._ops
        )


class CatalogTransaction:
    """Changes to several tables committed together (see the module docstring)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._parts: dict[Identifier, _TableChanges] = {}
        self._done = False

    def table(self, identifier: str | Iterable[str]) -> Transaction:
        """The transaction collecting this table's changes (the same one on every call)."""
        if self._done:
            raise ValidationError("this catalog transaction was already committed or discarded")
        ident = self.catalog._table_identifier(identifier)
        part = self._parts.get(ident)
        if part is None:
            part = _TableChanges(self.catalog.load_table(ident))
            self._parts[ident] = part
        return part

    def __enter__(self) -> CatalogTransaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self._done = True
            self._abort(list(self._parts.values()))

    def commit(self) -> list[Table]:
        """Commit every table's changes at once; returns the committed tables.

        When the catalog does not answer the new metadata (REST) and reloading a table fails
        after the commit, :class:`IcebergError` says so: never an error that claims the commit
        did not happen.
        """
        from icefloe.table.committer import RetryPolicy

        if self._done:
            raise ValidationError("this catalog transaction was already committed or discarded")
        self._done = True
        discarded = [p.table.name for p in self._parts.values() if p._done]
        if discarded:
            # its files are gone: committing its updates would point the table at them
            self._abort(list(self._parts.values()))
            raise ValidationError(
                f"the changes to {discarded[0]!r} were discarded, so the catalog transaction "
                "cannot commit (nothing was committed)"
            )
        parts = [p for p in self._parts.values() if p._updates]
        for p in self._parts.values():
            if not p._updates:
                p._done = True  # nothing to commit: later changes to it are refused
        if not parts:
            return [p.table for p in self._parts.values()]
        policy = RetryPolicy.from_properties(parts[0]._base.properties)
        deadline = time.monotonic() + policy.total_timeout_ms / 1000.0
        if policy.num_retries <= 0:
            # no retry will absorb a stale table: rebuild the snapshots on the current state
            # first, as a table transaction does (the catalog checks the other changes against
            # the current state itself)
            try:
                for p in parts:
                    if p._producers():
                        p._rebuild_on_current()
            except BaseException:
                self._abort(parts)
                raise
        attempt = 0
        while True:
            changes = [
                (
                    p.table,
                    requirements_for(p._base, p._updates) + p._requirements,
                    list(p._updates),
                )
                for p in parts
            ]
            try:
                results = self.catalog.commit_tables(changes)
            except (CommitConflictError, CommitFailedError):
                attempt += 1
                wait = policy.wait_ms(attempt) / 1000.0
                replayable = all(p._replayable() for p in parts)
                if (
                    not replayable
                    or attempt > policy.num_retries
                    or (attempt > 1 and time.monotonic() + wait > deadline)
                ):
                    self._abort(parts)
                    raise
                time.sleep(wait)
                try:
                    for p in parts:
                        p.table.refresh()
                        # the checks walk the new commits back to the base: a REST catalog in
                        # refs mode leaves those no ref points at out of the refreshed metadata
                        p.table.load_every_snapshot()
                        p._replay()
                except BaseException:
                    self._abort(parts)
                    raise
                continue
            except BaseException as exc:
                # Only an error proving no pointer moved allows deleting the files (a catalog
                # or REST server that does not offer multi-table commits refuses before any
                # request); after CommitStateUnknownError, an interrupt or any other error the
                # new metadata may reference them (see commit_did_not_happen).
                if commit_did_not_happen(exc) or isinstance(exc, OperationNotOfferedError):
                    self._abort(parts)
                else:
                    for p in parts:
                        p._done = True
                        p._may_have_committed = True
                raise
            for p in parts:
                p._may_have_committed = True
                p._done = True
            reload_error: Exception | None = None
            for i, p in enumerate(parts):
                for producer in p._producers():
                    producer.committed(True, results[i].metadata if results is not None else None)
                if results is not None:
                    p.table._adopt(results[i].metadata, results[i].metadata_location)
                    continue
                try:
                    p.table.refresh()
                except Exception as exc:  # the commit happened: never report it as refused
                    reload_error = reload_error or exc
            if reload_error is not None:
                # the commit happened: an error would read as refused, and a retry would
                # commit the changes twice; the tables keep their state from before it
                _log.warning(
                    "the catalog transaction committed, but reloading its tables failed (%s); "
                    "call refresh() on them to see the commit",
                    reload_error,
                )
            return [p.table for p in parts]

    @staticmethod
    def _abort(parts: list[_TableChanges]) -> None:
        for p in parts:
            p._done = True
            p._abort_producers()
