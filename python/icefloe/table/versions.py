"""Which of two versions of a table is the later one, when a table object holds one and a
commit result or a refresh brings another (see :meth:`icefloe.table.Table.refresh`)."""

from __future__ import annotations

from icefloe.metadata import TableMetadata
from icefloe.table_paths import metadata_file_order

__all__ = ["supersedes"]


def supersedes(
    current: TableMetadata, current_location: str, other: TableMetadata, other_location: str
) -> bool:
    """Whether ``current`` is a later version of the table than ``other``, in this order:

    1. ``current``'s metadata log names ``other``'s file;
    2. else (the log cut short: ``write.metadata.previous-versions-max`` keeps as little as
       the one file before) both have the table's UUID and ``current`` the higher sequence
       number; a lower one says it is not later;
    3. else, for equal sequence numbers (commits that add no snapshot: properties, schema,
       specs, refs; and every commit of a v1 table), both files are numbered by one naming
       scheme (``<V>-<uuid>.metadata.json`` or ``v<N>.metadata.json``, compressed or not) in
       one directory, both have the table's UUID, and ``current``'s number is higher: each
       commit writes its base's number plus one, as Java's catalogs do.

    Rules 2 and 3 assume the table's history only moves forward. A pointer moved back (the
    table dropped and an earlier file registered again: same UUID) breaks both alike: the
    commits made after it can have lower sequence numbers and file numbers than the version
    the pointer left. An object still holding that version then keeps it against a
    late commit result or a refresh that raced another commit through it (rule 2 when the
    dropped versions added snapshots, rule 3 also when they did not), until the object is
    refreshed with no commit through it in between, which takes the catalog's version
    whatever its order (see :meth:`Table._adopt`). Nothing is lost meanwhile: a commit from
    the stale version fails the catalog's check and is rebuilt on the catalog's version.
    Without rule 3, two racing commits that add no snapshot would let the earlier result
    replace the later one whenever the log is too short to name it."""
    if current_location == other_location:
        return False
    if any(e.metadata_file == other_location for e in current.metadata_log):
        return True
    if current.table_uuid is None or current.table_uuid != other.table_uuid:
        return False
    if current.last_sequence_number != other.last_sequence_number:
        return current.last_sequence_number > other.last_sequence_number
    mine, theirs = metadata_file_order(current_location), metadata_file_order(other_location)
    return (
        mine is not None and theirs is not None and mine[:2] == theirs[:2] and mine[2] > theirs[2]
    )
