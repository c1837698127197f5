"""What a table's metadata says, read without a commit: :class:`MetadataAccess` gives a
:class:`~icefloe.table.table.Table` (which inherits it) its location, format version, properties,
schemas, partition specs, sort order, snapshots (by id or as of a time), snapshot and metadata
logs and refs, and the rows of the statistics and partition statistics files the metadata names.
Snapshots a partly loaded table left out are fetched first where one is needed
(:meth:`Table.load_every_snapshot <icefloe.table.table.Table.load_every_snapshot>`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icefloe.exceptions import NoSuchSnapshotError
from icefloe.values import snapshot_id_arg

if TYPE_CHECKING:
    import datetime

    import pyarrow as pa

    from icefloe.io import FileIO
    from icefloe.metadata import (
        MetadataLogEntry,
        Snapshot,
        SnapshotLogEntry,
        SnapshotRef,
        TableMetadata,
    )
    from icefloe.partitioning import PartitionSpec
    from icefloe.schema import Schema
    from icefloe.sorting import SortOrder

__all__ = ["MetadataAccess"]


class MetadataAccess:
    """Read access to a table's metadata (see the module docstring). The table provides its
    file IO, its metadata and the loading of left-out snapshots declared here."""

    if TYPE_CHECKING:
        io: FileIO

        @property
        def metadata(self) -> TableMetadata: ...

        def load_every_snapshot(self) -> bool: ...

    @property
    def location(self) -> str:
        """The table's base location."""
        return self.metadata.location

    @property
    def format_version(self) -> int:
        """The table format version (1, 2 or 3)."""
        return self.metadata.format_version

    @property
    def properties(self) -> dict[str, str]:
        """The table properties."""
        return dict(self.metadata.properties)

    def schema(self) -> Schema:
        """The current schema."""
        return self.metadata.current_schema()

    def schemas(self) -> dict[int, Schema]:
        """Every schema by id."""
        return {s.schema_id: s for s in self.metadata.schemas}

    def spec(self) -> PartitionSpec:
        """The default partition spec."""
        return self.metadata.spec()

    def specs(self) -> dict[int, PartitionSpec]:
        """Every partition spec by id."""
        return {s.spec_id: s for s in self.metadata.partition_specs}

    def sort_order(self) -> SortOrder:
        """The default sort order."""
        return self.metadata.sort_order()

    def current_snapshot(self) -> Snapshot | None:
        """The current snapshot of ``main``, or None for an empty table."""
        return self.metadata.current_snapshot()

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot of the table (those a partly loaded table left out fetched first)."""
        self.load_every_snapshot()
        return list(self.metadata.snapshots)

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        """The snapshot with that id, if kept."""
        snapshot_id = snapshot_id_arg(snapshot_id)
        found = self.metadata.snapshot_by_id(snapshot_id)
        if found is None and self.load_every_snapshot():
            found = self.metadata.snapshot_by_id(snapshot_id)
        return found

    def history(self) -> list[SnapshotLogEntry]:
        """The snapshot log: when each snapshot became current."""
        return list(self.metadata.snapshot_log)

    def metadata_log(self) -> list[MetadataLogEntry]:
        """Previous metadata files."""
        return list(self.metadata.metadata_log)

    def refs(self) -> dict[str, SnapshotRef]:
        """Branches and tags by name."""
        return dict(self.metadata.refs)

    def snapshot_as_of(self, timestamp_ms: int | datetime.datetime) -> Snapshot:
        """The snapshot that was current at ``timestamp_ms`` (from the snapshot log; epoch ms
        or a datetime)."""
        try:
            return self.metadata.snapshot_as_of(timestamp_ms)
        except NoSuchSnapshotError:
            if not self.load_every_snapshot():
                raise
            return self.metadata.snapshot_as_of(timestamp_ms)

    def partition_statistics(self, snapshot_id: int | None = None) -> pa.Table | None:
        """The rows of the partition statistics file of ``snapshot_id`` (default: current), or
        None when that snapshot has none."""
        from icefloe.table.partition_statistics import read_current_partition_statistics

        return read_current_partition_statistics(self.io, self.metadata, snapshot_id)

    def statistics(self, snapshot_id: int | None = None) -> dict[str, int]:
        """Distinct-value counts per column name from the statistics file of ``snapshot_id``
        (default: current); empty when that snapshot has none."""
        from icefloe.table.statistics import ndvs

        return ndvs(self.io, self.metadata, snapshot_id)
