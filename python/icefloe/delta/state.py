"""The sync state a converted table carries: the Delta version, timestamp, row-id high-water
mark and table id it was brought to, as table properties (and per snapshot, in its summary)."""

from __future__ import annotations

import json

from icefloe.delta.log import DeltaCommit
from icefloe.delta.protocol import DeltaMetadata
from icefloe.delta.schema import leaf_columns, widened_from_float
from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.metadata import Snapshot, TableMetadata
from icefloe.table.concurrent_commits import Since
from icefloe.table.producer import Validator

DELTA_VERSION = "delta-version"
DELTA_TIMESTAMP = "delta-timestamp"
DELTA_HWM = "delta-high-water-mark"
DELTA_TABLE_ID = "delta-table-id"
DELTA_OPERATION = "delta-operation"
#: Field ids (comma-separated) of the double columns Delta's type widening made of floats.
DELTA_FLOAT_WIDENED = "delta-float-widened"
#: Delta's byte and short columns (Iceberg int), as ``id:type`` pairs (comma-separated).
DELTA_NARROW_INTS = "delta-narrow-ints"
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
    props.update(float_widened_property(delta_meta))
    props.update(narrow_ints_property(delta_meta))
    return props


def float_widened_property(delta_meta: DeltaMetadata) -> dict[str, str]:
    """The table property naming the columns of ``delta_meta`` widened from float (whose
    older files hold float32 statistics): with it a sync reads such a file's statistics right
    when the file comes back after the widening (RESTORE) without reading Delta's schema."""
    ids = sorted(widened_from_float(delta_meta.schema))
    return {DELTA_FLOAT_WIDENED: ",".join(map(str, ids))}


def float_widened(raw: str | None) -> frozenset[int] | None:
    """The field ids of :data:`DELTA_FLOAT_WIDENED`'s value, None when it is not set."""
    if raw is None:
        return None
    return frozenset(int(x) for x in raw.split(",") if x.strip().isdigit())


def narrow_ints_property(delta_meta: DeltaMetadata) -> dict[str, str]:
    """The table property naming the columns of ``delta_meta`` of Delta's byte and short
    types (Iceberg int): a sync checks their partition values against those ranges without
    reading Delta's schema."""
    pairs = [
        f"{c.field_id}:{c.delta_type}"
        for c in leaf_columns(delta_meta.schema)
        if c.delta_type in ("byte", "short")
    ]
    return {DELTA_NARROW_INTS: ",".join(pairs)}


def narrow_ints(raw: str | None) -> dict[int, str] | None:
    """The field ids and Delta types of :data:`DELTA_NARROW_INTS`'s value, None when it is
    not set."""
    if raw is None:
        return None
    out = {}
    for pair in raw.split(","):
        fid, _, kind = pair.partition(":")
        if fid.strip().isdigit():
            out[int(fid)] = kind.strip()
    return out


def expect_version(
    expected: str | None,
) -> Validator:
    """A snapshot validation: the table is still at Delta version ``expected``."""

    def check(metadata: TableMetadata, parent: Snapshot | None, since: Since) -> None:
        got = metadata.properties.get(DELTA_VERSION)
        if got != expected:
            raise CommitConflictError(
                f"the table's {DELTA_VERSION} moved from {expected} to {got} during the sync: "
                "another converter is running"
            )

    return check


def sequence_number_taken(version: int, metadata: TableMetadata) -> ValidationError | None:
    """The error for Delta ``version`` when the Iceberg table's sequence numbers reached it
    (they equal Delta versions, so another writer committed to the converted table), else
    None."""
    if not metadata.snapshots or version > metadata.last_sequence_number:
        return None
    foreign = [
        s for s in metadata.snapshots if s.summary is None or s.summary.get(DELTA_VERSION) is None
    ]
    why = (
        f" because of snapshot {foreign[-1].snapshot_id} ({_operation(foreign[-1])}), "
        "which the converter did not make: a converted table mirrors its Delta table and takes "
        "no other writes (its sequence numbers are Delta versions); convert into a new "
        "Iceberg table"
        if foreign
        else ""
    )
    return ValidationError(
        f"Delta version {version} is not after the Iceberg table's last sequence number "
        f"{metadata.last_sequence_number}{why}"
    )


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


def _operation(snapshot: Snapshot) -> str:
    return (snapshot.summary.operation if snapshot.summary else None) or "no operation"
