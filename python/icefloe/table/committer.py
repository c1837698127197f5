"""How a table reaches its catalog: the small protocol a catalog implements so that tables and
transactions commit through it without knowing which catalog it is (SQL, file system, REST).

A commit sends the table's requirements (what must still hold of the current metadata) and the
updates to apply; the catalog checks, applies, writes and swaps, or raises
:class:`~icefloe.exceptions.CommitConflictError` (a requirement failed),
:class:`~icefloe.exceptions.CommitFailedError` (retries ran out) or
:class:`~icefloe.exceptions.CommitStateUnknownError`. :class:`RetryPolicy` is the table's
``commit.retry.*`` settings, shared by the catalog's retries and the transaction's replays.
:func:`run_again_on_conflict` runs a whole change again on a newer table after a conflict (the
row-level changes that plan by key).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeVar

from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.metadata import TableMetadata, TableRequirement, TableUpdate
from icefloe.properties import TableProperties, int_property

if TYPE_CHECKING:
    from icefloe.table.table import Table

__all__ = ["CommitResult", "Committer", "Identifier", "RetryPolicy", "run_again_on_conflict"]

#: A table's identifier: its namespace levels, then its name.
Identifier: TypeAlias = tuple[str, ...]

_T = TableProperties
_R = TypeVar("_R")


@dataclass(frozen=True)
class CommitResult:
    """The committed metadata and the file it was written to."""

    metadata: TableMetadata
    metadata_location: str


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long a commit retries (defaults of the Java reference)."""

    num_retries: int = _T.COMMIT_NUM_RETRIES_DEFAULT
    min_wait_ms: int = _T.COMMIT_MIN_RETRY_WAIT_MS_DEFAULT
    max_wait_ms: int = _T.COMMIT_MAX_RETRY_WAIT_MS_DEFAULT
    total_timeout_ms: int = _T.COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> RetryPolicy:
        """The policy of a table's ``commit.retry.*`` properties.

        Read leniently: a malformed stored value (another engine may have written it) warns and
        falls back to its default, so it never blocks a commit, least of all the one fixing it.
        """
        return RetryPolicy(
            *(
                int_property(props, key, default, lenient=True)
                for key, default in (
                    (_T.COMMIT_NUM_RETRIES, _T.COMMIT_NUM_RETRIES_DEFAULT),
                    (_T.COMMIT_MIN_RETRY_WAIT_MS, _T.COMMIT_MIN_RETRY_WAIT_MS_DEFAULT),
                    (_T.COMMIT_MAX_RETRY_WAIT_MS, _T.COMMIT_MAX_RETRY_WAIT_MS_DEFAULT),
                    (_T.COMMIT_TOTAL_RETRY_TIME_MS, _T.COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT),
                )
            )
        )

    def wait_ms(self, attempt: int) -> float:
        """Backoff before retry ``attempt`` (1-based): doubling from min-wait, capped, jittered."""
        base = min(self.max_wait_ms, self.min_wait_ms * (2 ** (attempt - 1)))
        return float(base) * (0.5 + random.random() / 2)


def run_again_on_conflict(
    run: Callable[[], _R],
    reload: Callable[[], object],
    retries: int,
    *,
    runs_again: Callable[[], bool] | None = None,
    rerun_failed: Callable[[ValidationError], None] | None = None,
) -> _R:
    """``run()``; after a :class:`CommitConflictError`, ``reload()`` the table and ``run()`` the
    whole change again, at most ``retries`` times and only while ``runs_again()`` (when given)
    says so; the last conflict propagates. A :class:`ValidationError` of a run again is first
    passed to ``rerun_failed`` (when given), which may raise another error instead."""
    for attempt in range(retries + 1):
        try:
            return run()
        except CommitConflictError:
            if attempt == retries or (runs_again is not None and not runs_again()):
                raise
            reload()
        except ValidationError as exc:
            if attempt and rerun_failed is not None:
                rerun_failed(exc)
            raise
    raise AssertionError("unreachable")  # pragma: no cover


class Committer(Protocol):
    """What a table needs of its catalog."""

    def load_table(self, identifier: str | Iterable[str]) -> Table:
        """The table's current state."""
        ...

    def commit_table(
        self,
        table: Table,
        requirements: Iterable[TableRequirement],
        updates: Iterable[TableUpdate],
    ) -> CommitResult:
        """Commit ``updates`` on top of ``table`` if ``requirements`` hold of the current
        metadata; returns the committed metadata and its file."""
        ...

    def load_every_snapshot(self, table: Table) -> TableMetadata | None:
        """``table``'s metadata with the snapshots the catalog left out when loading it, or
        None when none were left out."""
        ...
