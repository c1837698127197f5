"""The sync state a converted table carries: the Delta version, timestamp, row-id high-water
mark and table id it was brought to, as table properties (and per snapshot, in its summary)."""

from __future__ import annotations

import json
from collections.abc import Callable

from icefloe.delta.log import DeltaCommit
from icefloe.delta.protocol import DeltaMetadata
from icefloe.exceptions import CommitConflictError
from icefloe.metadata import Snapshot, TableMetadata

DELTA_VERSION = "delta-version"
DELTA_TIMESTAMP = "delta-timestamp"
DELTA_HWM = "delta-high-water-mark"
DELTA_TABLE_ID = "delta-table-id"
DELTA_OPERATION = "delta-operation"
SOURCE = "icefloe.source"


def state_properties(
    snap_version: int, timestamp_ms: int, hwm: int | None, delta_meta: DeltaMetadata
) -> dict[str, str]:
    """The table properties that record a sync up to Delta ``snap_version``."""
    props = {
        DELTA_VERSION: str(snap_version),
        DELTA_TIMESTAMP: str(timestamp_ms),
        DELTA_TABLE_ID: delta_meta.id,
        SOURCE: "delta",
    }
    if hwm is not None:
        props[DELTA_HWM] = str(hwm)
    return props


def expect_version(
    expected: str | None,
) -> Callable[[TableMetadata, Snapshot | None, int | None], None]:
    """A snapshot validation: the table is still at Delta version ``expected``."""

    def check(metadata: TableMetadata, parent: Snapshot | None, start: int | None) -> None:
        got = metadata.properties.get(DELTA_VERSION)
        if got != expected:
            raise CommitConflictError(
                f"the table's {DELTA_VERSION} moved from {expected} to {got} during the sync: "
                "another converter is running"
            )

    return check


def commit_high_water_mark(commit: DeltaCommit) -> int | None:
    """The row-id high-water mark a commit's ``delta.rowTracking`` domain sets, if any."""
    d = commit.domains.get("delta.rowTracking")
    if d is None or d.get("removed"):
        return None
    try:
        return int(json.loads(d["configuration"])["rowIdHighWaterMark"])
    except (KeyError, TypeError, ValueError):
        return None


def parse_int(v: str | None) -> int | None:
    """An integer property value, or None."""
    return int(v) if v is not None and v.lstrip("-").isdigit() else None
