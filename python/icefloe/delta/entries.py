"""Manifest entries for the Delta files one Iceberg snapshot adds: data files with their metrics
and row lineage, and delete files for their deletion vectors."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from icefloe.delta.actions import check_file_actions
from icefloe.delta.deletes import dv_entries
from icefloe.delta.files import PartitionColumn, data_entries, partition_values
from icefloe.delta.schema import DeltaColumn
from icefloe.io import FileIO
from icefloe.metadata import TableMetadata
from icefloe.table.producer import SnapshotProducer
from icefloe.write.files import manifest_arrow_schema


@dataclass
class Prepared:
    """Manifest entries for one snapshot's added files, and the DV files written for them."""

    entries: pa.RecordBatch | None
    deletes: pa.RecordBatch | None
    written: list[str]

    def attach(self, producer: SnapshotProducer) -> None:
        producer.owns_files(self.written)
        if self.entries is not None:
            producer.add_entries(self.entries, content=0)
        if self.deletes is not None:
            producer.add_entries(self.deletes, content=1)


def prepare(
    io: FileIO,
    root: str,
    table_md: TableMetadata,
    files: pa.Table,
    columns: list[DeltaColumn],
    partitions: list[PartitionColumn],
    dv_mode: str,
    tag: str,
) -> Prepared:
    """Data and DV entries for ``files``, read before anything commits."""
    check_file_actions(files)
    schema = table_md.current_schema()
    spec = table_md.spec()
    entries = None
    if files.num_rows:
        entries = data_entries(io, root, files, columns, partitions, schema, spec)
        part = entries.column("partition")
    else:
        part = pa.array([], manifest_arrow_schema(3, schema, spec).field("partition").type)
    deletes, written = dv_entries(io, root, table_md, files, part, dv_mode, tag)
    return Prepared(entries, deletes, written)


def dv_partitions(
    files: pa.Table,
    partitions: list[PartitionColumn],
    table_md: TableMetadata,
) -> pa.Array:
    """Partition tuples of files whose data entry is not being written (DV-only updates)."""
    schema = table_md.current_schema()
    ptype = manifest_arrow_schema(3, schema, table_md.spec()).field("partition").type
    return partition_values(
        files.column("partition_values").combine_chunks(), partitions, schema, ptype
    )
