"""How a table reaches its catalog: the small protocol a catalog implements so that tables and
transactions commit through it without knowing which catalog it is (SQL, file system, REST).

A commit sends the table's requirements (what must still hold of the current metadata) and the
updates to apply; the catalog checks, applies, writes and swaps, or raises
:class:`~icefloe.exceptions.CommitConflictError` (a requirement failed),
:class:`~icefloe.exceptions.CommitFailedError` (retries ran out) or
:class:`~icefloe.exceptions.CommitStateUnknownError`. :class:`RetryPolicy` is the table's
``commit.retry.*`` settings, shared by the catalog's retries and the transaction's replays.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeAlias

from icefloe.exceptions import ValidationError
from icefloe.metadata import TableMetadata, TableRequirement, TableUpdate

if TYPE_CHECKING:
    from icefloe.table.table import Table

__all__ = ["CommitResult", "Committer", "Identifier", "RetryPolicy"]

#: A table's identifier: its namespace levels, then its name.
Identifier: TypeAlias = tuple[str, ...]

NUM_RETRIES = "commit.retry.num-retries"
MIN_WAIT_MS = "commit.retry.min-wait-ms"
MAX_WAIT_MS = "commit.retry.max-wait-ms"
TOTAL_TIMEOUT_MS = "commit.retry.total-timeout-ms"


@dataclass(frozen=True)
class CommitResult:
    """The committed metadata and the file it was written to."""

    metadata: TableMetadata
    metadata_location: str


def _int(props: Mapping[str, str], key: str, default: int) -> int:
    raw = props.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"table property {key} is not an integer: {raw!r}") from None
    if value < 0:
        raise ValidationError(f"table property {key} must not be negative: {value}")
    return value


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long a commit retries (defaults of the Java reference)."""

    num_retries: int = 4
    min_wait_ms: int = 100
    max_wait_ms: int = 60_000
    total_timeout_ms: int = 1_800_000

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> RetryPolicy:
        """The policy of a table's ``commit.retry.*`` properties."""
        return RetryPolicy(
            _int(props, NUM_RETRIES, 4),
            _int(props, MIN_WAIT_MS, 100),
            _int(props, MAX_WAIT_MS, 60_000),
            _int(props, TOTAL_TIMEOUT_MS, 1_800_000),
        )

    def wait_ms(self, attempt: int) -> float:
        """Backoff before retry ``attempt`` (1-based): doubling from min-wait, capped, jittered."""
        base = min(self.max_wait_ms, self.min_wait_ms * (2 ** (attempt - 1)))
        return float(base) * (0.5 + random.random() / 2)


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
